//! Status pages: what the walker saw, as read-only HTML for operators and auditors.
//!
//! `/` (overview), `/targets/<name>`, `/records/<sha>` (HTML for a browser, the exact bytes for
//! anything else, as before), `/records/<sha>/raw`, `/endpoints?url=...`. Rendered on the server
//! with maud (every string escaped by the template engine: record strings come from strangers'
//! servers), charts as inline SVG, one stylesheet served from the binary, no script at all.
//! Every response carries a strict Content-Security-Policy and `nosniff`.
//!
//! This module sits below the faces: the daemon's listener (`crate::daemon::http`) and
//! `conduct-walker records serve` (`crate::cli::records`) both mount [`router`]. Each request
//! opens the store read-only ([`Store::open_read_only`]), so no page can change anything.

pub mod alerts;
pub mod ledger;
pub mod links;
pub mod model;
pub mod render;
pub mod rings;
pub mod strips;
pub mod svg;
pub mod view;

use crate::filing::lanes::Limits;
use crate::store::{Store, StoreError};
use axum::Router;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;

pub use crate::store::verifier::{IncrementalVerifier as VerifyCache, VerifySummary};

/// No script, no frames, no plugins; styles and images only from this listener (the one
/// stylesheet). SVG charts are inline markup with presentation attributes, which CSP allows.
pub const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
     base-uri 'none'; frame-ancestors 'none'";

const STYLE: &str = include_str!("style.css");

/// Who the witness is, as the config or the newest record says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WitnessInfo {
    pub name: String,
    pub vantage: String,
    pub key_url: Option<String>,
    /// Standard base64 of the raw Ed25519 public key, when known.
    pub public_key_b64: Option<String>,
}

/// A configured target, as plain data: the face that read the configuration says when its
/// schedule fires (the pages parse no configuration).
#[derive(Debug, Clone)]
pub struct TargetInfo {
    pub name: String,
    pub origin: String,
    pub endpoint: Option<String>,
    /// The schedule's pattern (UTC), as configured.
    pub schedule: String,
    pub next_fire: NextFire,
}

/// When a schedule fires next after a given time.
#[derive(Clone)]
pub struct NextFire(pub Arc<dyn Fn(DateTime<Utc>) -> Option<DateTime<Utc>> + Send + Sync>);

impl NextFire {
    pub fn after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        (self.0)(t)
    }
}

impl std::fmt::Debug for NextFire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NextFire(..)")
    }
}

/// What the face serving the pages knows beyond the store.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// From the config; `None`: taken from the newest record.
    pub witness: Option<WitnessInfo>,
    /// Configured targets (their schedules); targets only the store knows are shown too.
    pub targets: Vec<TargetInfo>,
    /// Limits each intake stated (`GET /witness`); others show the spec's constants.
    pub limits: Vec<(String, Limits)>,
    /// A rings folder (the register's `rings/` layout): the endpoint page shows its rings.
    pub rings: Option<PathBuf>,
}

/// The verification job: runs what [`VerifyCache::claim_due`] says is due (the rows added
/// since the last run, at most once a minute; every row once a day) on a thread of its own at
/// the lowest CPU and I/O priority ([`crate::background`]), paced
/// ([`crate::store::verifier::VerifyPace::background`]): it takes what walks and page requests
/// leave. Cheap when nothing is due, so it may tick as often as wanted: the overview ticks it
/// on each visit, and a daemon may tick it on a timer.
pub fn verify_tick(verifier: &Arc<VerifyCache>, db: PathBuf) {
    let Some(claim) = verifier.claim_due(Utc::now().timestamp()) else {
        return;
    };
    // A plain thread: this may run outside a tokio runtime's blocking pool budget, and
    // verification's own workers are threads too (they inherit its low priority).
    std::thread::spawn(move || {
        crate::background::lower_this_thread();
        if let Err(e) = claim.run(&db, &crate::store::verifier::VerifyPace::background()) {
            tracing::warn!(error = %e, "status pages: verify failed to run");
        }
    });
}

/// A face's way to say what it knows now (the daemon's config changes on reload).
pub type ContextFn = Arc<dyn Fn() -> Context + Send + Sync>;

#[derive(Clone)]
pub struct PagesState {
    pub db_path: PathBuf,
    pub context: ContextFn,
    pub verify: Arc<VerifyCache>,
    /// The overview's strips, kept between requests.
    pub strips: Arc<strips::StripCache>,
    /// `daemon` or `records serve`: named in every page's footer.
    pub served_by: &'static str,
}

impl PagesState {
    pub fn new(db_path: PathBuf, context: ContextFn, served_by: &'static str) -> PagesState {
        PagesState {
            db_path,
            context,
            verify: Arc::new(VerifyCache::default()),
            strips: Arc::default(),
            served_by,
        }
    }
}

/// The pages' routes, with the security headers on every answer.
pub fn router(state: PagesState) -> Router {
    Router::new()
        .route("/", get(overview))
        .route("/assets/style.css", get(style))
        .route("/targets/{name}", get(target))
        .route("/records/{prefix}", get(record))
        .route("/records/{prefix}/raw", get(raw))
        .route("/endpoints", get(endpoints))
        .fallback(not_found)
        .with_state(state)
        .layer(axum::middleware::map_response(security_headers))
}

/// Any other path: a 404 that says so and links back, not an empty body.
async fn not_found(uri: axum::http::Uri) -> Response {
    let body = maud::html! {
        (maud::DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; title { "Not found" } link rel="stylesheet" href="/assets/style.css"; }
            body { main {
                h1 { "Not found" }
                p { "There is no page at " code { (uri.path()) } "." }
                p { a href="/" { "Overview" } " · " a href="/endpoints" { "Endpoints" } }
            } }
        }
    };
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body.into_string(),
    )
        .into_response()
}

async fn security_headers(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}

/// An error answer as a small page (or text for the raw route).
pub struct PageError(pub StatusCode, pub String);

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        (
            self.0,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            self.1,
        )
            .into_response()
    }
}

impl From<StoreError> for PageError {
    fn from(e: StoreError) -> PageError {
        let status = match &e {
            StoreError::BadPrefix(_) | StoreError::BadDate(_) => StatusCode::BAD_REQUEST,
            StoreError::UnknownPrefix(_) => StatusCode::NOT_FOUND,
            StoreError::AmbiguousPrefix { .. } => StatusCode::CONFLICT,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        PageError(status, format!("{e}\n"))
    }
}

/// Run a read on [`crate::readers`]; a thread that cannot start or panics is a 500.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, PageError> + Send + 'static,
) -> Result<T, PageError> {
    crate::readers::run(f).await.unwrap_or_else(|e| {
        Err(PageError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal error: {e}\n"),
        ))
    })
}

fn html(body: String) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

async fn style() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        STYLE,
    )
        .into_response()
}

#[derive(Debug, Deserialize)]
pub struct OverviewQuery {
    page: Option<usize>,
}

async fn overview(State(s): State<PagesState>, Query(q): Query<OverviewQuery>) -> Response {
    verify_tick(&s.verify, s.db_path.clone());
    let ctx = (s.context)();
    let verify = (s.verify.last(), s.verify.is_running());
    let path = s.db_path.clone();
    let by = s.served_by;
    let strips = s.strips.clone();
    let result = blocking(move || {
        let store = Store::open_read_only(&path)?;
        let page = q.page.unwrap_or(1).max(1);
        Ok(render::overview(
            store.connection(),
            &ctx,
            &verify,
            page,
            chrono::Utc::now(),
            by,
            &strips,
        )?)
    })
    .await;
    match result {
        Ok(body) => html(body),
        Err(e) => e.into_response(),
    }
}

#[derive(Debug, Deserialize)]
pub struct TargetQuery {
    day: Option<String>,
}

async fn target(
    State(s): State<PagesState>,
    UrlPath(name): UrlPath<String>,
    Query(q): Query<TargetQuery>,
) -> Response {
    let ctx = (s.context)();
    let path = s.db_path.clone();
    let by = s.served_by;
    let result = blocking(move || {
        let day = match q.day.as_deref().filter(|d| !d.is_empty()) {
            None => None,
            Some(d) => Some(
                chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d")
                    .map_err(|_| PageError::from(StoreError::BadDate(d.to_string())))?,
            ),
        };
        let store = Store::open_read_only(&path)?;
        render::target(store.connection(), &ctx, &name, day, chrono::Utc::now(), by)?.ok_or_else(
            || {
                PageError(
                    StatusCode::NOT_FOUND,
                    format!("no target named {name:?} is configured or has fired\n"),
                )
            },
        )
    })
    .await;
    match result {
        Ok(body) => html(body),
        Err(e) => e.into_response(),
    }
}

/// A browser (which asks for `text/html`) gets the page; anything else the exact bytes, as
/// `GET /records/<sha prefix>` always answered.
fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/html"))
}

async fn record(
    State(s): State<PagesState>,
    UrlPath(prefix): UrlPath<String>,
    headers: HeaderMap,
) -> Response {
    if !wants_html(&headers) {
        return raw(State(s), UrlPath(prefix)).await;
    }
    let path = s.db_path.clone();
    let by = s.served_by;
    let result = blocking(move || {
        let store = Store::open_read_only(&path)?;
        Ok(render::record(&store, &prefix, by)?)
    })
    .await;
    match result {
        Ok(body) => html(body),
        Err(e) => e.into_response(),
    }
}

async fn raw(State(s): State<PagesState>, UrlPath(prefix): UrlPath<String>) -> Response {
    let path = s.db_path.clone();
    let result = blocking(move || {
        let store = Store::open_read_only(&path)?;
        Ok(store.get_by_prefix(&prefix)?)
    })
    .await;
    match result {
        Ok(rec) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            rec.canonical,
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}

#[derive(Debug, Deserialize)]
pub struct EndpointQuery {
    url: Option<String>,
}

async fn endpoints(State(s): State<PagesState>, Query(q): Query<EndpointQuery>) -> Response {
    let path = s.db_path.clone();
    let by = s.served_by;
    let rings_dir = (s.context)().rings;
    let result = blocking(move || {
        let store = Store::open_read_only(&path)?;
        let url = q.url.as_deref().filter(|u| !u.is_empty());
        let rings = url.map(|u| rings::section(rings_dir.as_deref(), u));
        Ok(render::endpoints_with(
            store.connection(),
            url,
            by,
            rings.unwrap_or_default(),
        )?)
    })
    .await;
    match result {
        Ok(body) => html(body),
        Err(e) => e.into_response(),
    }
}
