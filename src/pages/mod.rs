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
pub mod render;
pub mod rings;
pub mod strips;
pub mod svg;

use crate::config::{Config, Schedule};
use crate::filing::lanes::Limits;
use crate::store::{Store, StoreError};
use axum::Router;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

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

/// A configured target.
#[derive(Debug, Clone)]
pub struct TargetInfo {
    pub name: String,
    pub origin: String,
    pub endpoint: Option<String>,
    pub schedule: Schedule,
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

impl Context {
    /// The witness and targets a config names (`public_key_b64` from its key, when readable).
    pub fn from_config(cfg: &Config, public_key_b64: Option<String>) -> Context {
        Context {
            witness: Some(WitnessInfo {
                name: cfg.witness.name.clone(),
                vantage: cfg.witness.vantage.clone(),
                key_url: cfg.witness.key_url.clone(),
                public_key_b64,
            }),
            targets: cfg
                .targets
                .iter()
                .map(|t| TargetInfo {
                    name: t.name.clone(),
                    origin: t.request.origin.clone(),
                    endpoint: t.request.endpoint.clone(),
                    schedule: t.schedule.clone(),
                })
                .collect(),
            limits: Vec::new(),
            rings: None,
        }
    }
}

/// The last `records verify` the pages ran over this store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifySummary {
    /// When the last run finished (a full one, or one over the rows added since).
    pub finished_at: String,
    /// When the last run over every row finished.
    pub full_at: String,
    /// Rows checked by the last full run and the runs over new rows since.
    pub rows: u64,
    pub signed: u64,
    pub problems: Vec<String>,
    pub head: Option<(i64, String)>,
}

impl VerifySummary {
    /// This summary followed by a run over the rows added after its head.
    fn then(self, newer: VerifySummary) -> VerifySummary {
        VerifySummary {
            finished_at: newer.finished_at,
            full_at: self.full_at,
            rows: self.rows + newer.rows,
            signed: self.signed + newer.signed,
            problems: self.problems.into_iter().chain(newer.problems).collect(),
            head: newer.head.or(self.head),
        }
    }
}

/// Verification runs in the background, started by a visit to the overview; the page shows the
/// last finished run. Its cost must not grow with the history (issue 27: a store of 10,000,000
/// records takes many minutes to verify), so a visit checks only the rows added since the last
/// run, linked to the chain value that run ended in, at most once a minute; every row is read
/// again once a day. Both run at the lowest CPU and I/O priority ([`crate::background`]), with
/// one worker, at most [`VERIFY_ROWS_PER_SEC`] rows a second: what walks and page requests leave. An edit to a row already checked shows at
/// the next daily run (and at any `records verify`).
#[derive(Default)]
pub struct VerifyCache {
    last: Mutex<Option<VerifySummary>>,
    running: AtomicBool,
}

/// How often every row is read again.
const VERIFY_ALL_EVERY_SECS: i64 = 24 * 3600;
/// How often a visit checks the rows added since the last run.
const VERIFY_NEW_EVERY_SECS: i64 = 60;
/// The background runs' pace: 10,000,000 rows in under 17 minutes once a day, while its reads
/// (unlike its CPU, which nice 19 yields) would otherwise sweep the page cache the pages and
/// the walks read from (the I/O scheduler may ignore the idle class).
const VERIFY_ROWS_PER_SEC: u32 = 10_000;
/// Rows per read transaction of a background run (about a second of it at that pace).
const VERIFY_CHUNK_ROWS: u64 = 10_000;

/// What a visit starts.
#[derive(Debug, PartialEq, Eq)]
enum VerifyRun {
    Nothing,
    All,
    Since(crate::store::verify::Resume),
}

/// The run due at `now` (seconds) after `last`.
fn run_due(last: Option<&VerifySummary>, now: i64) -> VerifyRun {
    let age = |t: &str| {
        chrono::DateTime::parse_from_rfc3339(t)
            .map(|t| now - t.timestamp())
            .unwrap_or(i64::MAX)
    };
    let Some(last) = last else {
        return VerifyRun::All;
    };
    if age(&last.full_at) > VERIFY_ALL_EVERY_SECS {
        return VerifyRun::All;
    }
    if age(&last.finished_at) <= VERIFY_NEW_EVERY_SECS {
        return VerifyRun::Nothing;
    }
    match crate::store::verify::Resume::from_head(&last.head) {
        Some(from) => VerifyRun::Since(from),
        // Nothing read yet (an empty store): reading everything costs nothing.
        None => VerifyRun::All,
    }
}

impl VerifyCache {
    pub fn last(&self) -> Option<VerifySummary> {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::SeqCst)
    }

    /// Start the run that is due, unless one is running.
    fn refresh_if_stale(self: &Arc<Self>, db: PathBuf) {
        let from = match run_due(self.last().as_ref(), chrono::Utc::now().timestamp()) {
            VerifyRun::Nothing => return,
            VerifyRun::All => None,
            VerifyRun::Since(from) => Some(from),
        };
        if self.running.swap(true, Ordering::SeqCst) {
            return;
        }
        let me = self.clone();
        // A plain thread: this may run outside a tokio runtime's blocking pool budget, and
        // verification's own workers are threads too (they inherit its low priority).
        std::thread::spawn(move || {
            crate::background::lower_this_thread();
            let paced = VerifyPace {
                workers: Some(1),
                rows_per_sec: Some(VERIFY_ROWS_PER_SEC),
                chunk: Some(VERIFY_CHUNK_ROWS),
            };
            if let Err(e) = me.run(&db, from, &paced) {
                tracing::warn!(error = %e, "status pages: verify failed to run");
            }
            me.running.store(false, Ordering::SeqCst);
        });
    }

    /// Run verification of every row now, in this thread (tests and `records serve
    /// --verify-now`).
    pub fn run_now(&self, db: &std::path::Path) -> Result<(), StoreError> {
        self.run(db, None, &VerifyPace::default())
    }

    /// Check the rows added since the last run now, in this thread (tests).
    pub fn run_new_rows_now(&self, db: &std::path::Path) -> Result<(), StoreError> {
        let from = self
            .last()
            .and_then(|l| crate::store::verify::Resume::from_head(&l.head));
        self.run(db, from, &VerifyPace::default())
    }

    /// Verify every row (`from` = None) or those after `from`, and remember the result: a
    /// resumed run adds to the last summary.
    fn run(
        &self,
        db: &std::path::Path,
        from: Option<crate::store::verify::Resume>,
        pace: &VerifyPace,
    ) -> Result<(), StoreError> {
        let resumed = from.is_some();
        let s = verify_summary(db, from, pace)?;
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        *last = Some(match last.take() {
            Some(prev) if resumed => prev.then(s),
            _ => s,
        });
        Ok(())
    }
}

/// How a verification runs: its workers, its pace, and the rows per read transaction (`None`:
/// the defaults, unpaced, one transaction).
#[derive(Default)]
struct VerifyPace {
    workers: Option<usize>,
    rows_per_sec: Option<u32>,
    chunk: Option<u64>,
}

/// `records verify` over the store at `db`, read-only, as the overview shows it: every row, or
/// those after `from`. With a chunk, in runs of at most that many rows, each in its own read
/// transaction and resumed from the last one's head: a paced scrub of millions of rows must not
/// hold one read transaction for many minutes (the write-ahead log could not be checkpointed
/// meanwhile, and every reader's page lookups would slow as it grew).
fn verify_summary(
    db: &std::path::Path,
    mut from: Option<crate::store::verify::Resume>,
    pace: &VerifyPace,
) -> Result<VerifySummary, StoreError> {
    let store = Store::open_read_only(db)?;
    let mut all = crate::store::VerifyReport::default();
    loop {
        let r = crate::store::verify::verify_with(
            &store,
            &crate::store::verify::VerifyOptions {
                archives: None,
                from: from.clone(),
                workers: pace.workers,
                rows_per_sec: pace.rows_per_sec,
                limit: pace.chunk,
            },
            |_, _| {},
        )?;
        let more = pace.chunk.is_some_and(|c| r.rows >= c);
        let next = crate::store::verify::Resume::from_head(&r.head);
        all.extend(r);
        match next {
            Some(next) if more => from = Some(next),
            _ => break,
        }
    }
    let finished_at = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    Ok(VerifySummary {
        full_at: finished_at.clone(),
        finished_at,
        rows: all.rows,
        signed: all.signed,
        problems: all
            .problems
            .iter()
            .map(|p| format!("row {}: {}: {}", p.row, p.kind, p.detail))
            .collect(),
        head: all.head,
    })
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

async fn blocking<T: Send + 'static>(
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
    s.verify.refresh_if_stale(s.db_path.clone());
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

#[cfg(test)]
mod verify_cadence_tests {
    use super::*;

    fn summary(finished: &str, full: &str, head: Option<(i64, String)>) -> VerifySummary {
        VerifySummary {
            finished_at: finished.into(),
            full_at: full.into(),
            rows: 1,
            signed: 1,
            problems: Vec::new(),
            head,
        }
    }

    fn at(t: &str) -> i64 {
        chrono::DateTime::parse_from_rfc3339(t).unwrap().timestamp()
    }

    #[test]
    fn every_row_first_then_new_rows_each_minute_then_every_row_daily() {
        let head = Some((7, "ab".repeat(32)));
        let resume = VerifyRun::Since(crate::store::verify::Resume {
            after_id: 7,
            chain: [0xab; 32],
        });
        assert_eq!(run_due(None, at("2026-12-01T10:00:00Z")), VerifyRun::All);
        let s = summary("2026-12-01T10:00:00Z", "2026-12-01T10:00:00Z", head.clone());
        assert_eq!(
            run_due(Some(&s), at("2026-12-01T10:01:00Z")),
            VerifyRun::Nothing
        );
        assert_eq!(run_due(Some(&s), at("2026-12-01T10:01:01Z")), resume);
        let s = summary("2026-12-02T09:58:00Z", "2026-12-01T10:00:00Z", head.clone());
        assert_eq!(run_due(Some(&s), at("2026-12-02T10:00:00Z")), resume);
        assert_eq!(
            run_due(Some(&s), at("2026-12-02T10:00:01Z")),
            VerifyRun::All
        );
        // An empty store has no head to resume from: reading "everything" costs nothing.
        let s = summary("2026-12-01T10:00:00Z", "2026-12-01T10:00:00Z", None);
        assert_eq!(
            run_due(Some(&s), at("2026-12-01T10:05:00Z")),
            VerifyRun::All
        );
        // A time that cannot be read is as old as can be.
        let s = summary("garbage", "garbage", head);
        assert_eq!(
            run_due(Some(&s), at("2026-12-01T10:05:00Z")),
            VerifyRun::All
        );
    }
}
