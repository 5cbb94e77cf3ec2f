//! The loopback listener: `/healthz`, `/metrics`, and the read-only `/records` API for auditors
//! (`GET /records?endpoint=&since=&outcome=` lists like `records list --json`). The status
//! pages (`crate::pages`: `/`, `/targets/..`, `/records/<sha prefix>` and its `/raw` bytes,
//! `/endpoints`) are merged in by the daemon beside these routes.
//!
//! Every request opens the store read-only: the listener can never write, whatever it is asked.

use super::metrics::{Snapshot, render};
use super::runner::JobRunner;
use super::store::WriteHealth;
// An error answer is the pages' (`text/plain`, the status, the store error's wording); reads
// run on `readers` (`/records` may list much of the store: it gives the freed heap back).
use crate::pages::{PageError as HttpError, blocking};
use crate::store::{ListFilter, Store};
use axum::Router;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

/// What the scheduling loop publishes for the listener.
pub struct Live {
    pub targets: AtomicUsize,
    pub in_flight: AtomicUsize,
    /// Unix seconds of the next fire; `i64::MIN` for none.
    pub next_fire: AtomicI64,
    /// Unix seconds of the loop's last turn (the health check's heartbeat).
    pub last_tick: AtomicI64,
    pub runner: RwLock<Arc<dyn JobRunner>>,
    /// Whether the store takes writes (a full disk makes the daemon degraded, not dead).
    pub store_health: Arc<WriteHealth>,
    /// The alert deliveries' counters (issue 24).
    pub alerts: Arc<crate::alerts::deliver::AlertMetrics>,
    /// The witness face's counters (issue 43).
    pub witness: Arc<super::metrics::WitnessMetrics>,
}

impl Live {
    pub fn new(runner: Arc<dyn JobRunner>, store_health: Arc<WriteHealth>) -> Live {
        Live {
            store_health,
            targets: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            next_fire: AtomicI64::new(i64::MIN),
            last_tick: AtomicI64::new(chrono::Utc::now().timestamp()),
            runner: RwLock::new(runner),
            alerts: Arc::default(),
            witness: Arc::default(),
        }
    }

    pub fn runner(&self) -> Arc<dyn JobRunner> {
        self.runner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// The loop wakes at least this often; a heartbeat older than twice that means it is stuck.
pub const HEARTBEAT_STALE_SECS: i64 = 150;

#[derive(Clone)]
pub struct AppState {
    pub db_path: PathBuf,
    pub live: Arc<Live>,
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/records", get(list))
        .with_state(state)
}

async fn healthz(State(s): State<AppState>) -> Response {
    let age = chrono::Utc::now().timestamp() - s.live.last_tick.load(Ordering::Relaxed);
    let fault = s.live.store_health.fault();
    // Stalled (the loop is stuck) outranks degraded (the loop runs but nothing can be stored).
    let status = if age > HEARTBEAT_STALE_SECS {
        "stalled"
    } else if fault.is_some() {
        "degraded"
    } else {
        "ok"
    };
    let mut body = serde_json::json!({
        "status": status,
        "scheduler_heartbeat_age_secs": age,
        "targets": s.live.targets.load(Ordering::Relaxed),
        "walks_in_flight": s.live.in_flight.load(Ordering::Relaxed),
        "store_writable": fault.is_none(),
    });
    body["alerting"] = alerting_health(&s.live.alerts);
    if let Some(f) = fault {
        body["store_fault"] = serde_json::json!({"reason": f.reason, "since": f.since});
    }
    // The ledger's findings are named, but a ledger that lies is not the daemon's fault: the
    // status stays what the daemon's own health says.
    let path = s.db_path.clone();
    body["ledger"] = blocking(move || {
        Ok(Store::open_read_only(&path)
            .map(|st| super::ledger_faces::health(st.connection()))
            .unwrap_or(serde_json::Value::Null))
    })
    .await
    .unwrap_or(serde_json::Value::Null);
    let code = if status == "ok" {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, axum::Json(body)).into_response()
}

/// The alerting part of `/healthz`: degraded when a channel keeps failing. It does not change
/// the daemon's own status: a receiver that is down does not make the walker unhealthy.
fn alerting_health(m: &crate::alerts::deliver::AlertMetrics) -> serde_json::Value {
    let failing = m.degraded_channels();
    serde_json::json!({
        "status": if failing.is_empty() { "ok" } else { "degraded" },
        "failing_channels": failing,
    })
}

async fn metrics(State(s): State<AppState>) -> Response {
    let runner = s.live.runner();
    let path = s.db_path.clone();
    let result = blocking(move || {
        let store = Store::open_read_only(&path).map_err(HttpError::from)?;
        let mut snap = Snapshot::read(store.connection()).map_err(HttpError::from)?;
        snap.runner = runner.status_on(store.connection()).ok();
        let ledger =
            super::ledger_faces::metrics_text(store.connection()).map_err(HttpError::from)?;
        Ok((snap, ledger))
    })
    .await;
    match result {
        Ok((mut snap, ledger)) => {
            snap.targets = s.live.targets.load(Ordering::Relaxed);
            snap.in_flight = s.live.in_flight.load(Ordering::Relaxed);
            let next = s.live.next_fire.load(Ordering::Relaxed);
            snap.next_fire_unix = (next != i64::MIN).then_some(next);
            (
                StatusCode::OK,
                [(
                    header::CONTENT_TYPE,
                    "text/plain; version=0.0.4; charset=utf-8",
                )],
                {
                    let mut text = render(&snap) + &ledger;
                    s.live.alerts.render(&mut text);
                    s.live.witness.render(&mut text);
                    text
                },
            )
                .into_response()
        }
        Err(e) => e.into_response(),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    endpoint: Option<String>,
    since: Option<String>,
    outcome: Option<String>,
}

async fn list(State(s): State<AppState>, Query(q): Query<ListQuery>) -> Response {
    let path = s.db_path.clone();
    let result = blocking(move || {
        let since = match &q.since {
            Some(t) => Some(crate::store::parse_since(t).map_err(HttpError::from)?),
            None => None,
        };
        if let Some(o) = &q.outcome
            && o != "PASS"
            && o != "FAIL"
        {
            return Err(HttpError(
                StatusCode::BAD_REQUEST,
                format!("outcome must be PASS or FAIL, not {o:?}\n"),
            ));
        }
        let store = Store::open_read_only(&path).map_err(HttpError::from)?;
        let rows = store
            .list(&ListFilter {
                endpoint: q.endpoint,
                since,
                outcome: q.outcome,
            })
            .map_err(HttpError::from)?;
        Ok(rows
            .iter()
            .map(crate::store::RecordRow::to_json)
            .collect::<Vec<_>>())
    })
    .await;
    match result {
        Ok(rows) => axum::Json(rows).into_response(),
        Err(e) => e.into_response(),
    }
}
