//! §11.5 `notify` on loopback, for the demo and `conduct-walker sandbox`: a receiver that keeps
//! every POST it is sent, and an agent whose consent file asks to be told (its `notify` is the
//! receiver's URL, named `localhost`: an IP literal is refused by guard 3).

use super::agent::{Behaviour, SandboxAgent};
use super::https::{HttpsServer, Resp, SandboxCa, handler};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// Where the receiver takes notifications.
pub const NOTIFY_PATH: &str = "/conduct/notify";

/// A notification receiver: answers 202 to every POST and keeps its body.
pub struct NotifyReceiver {
    pub server: HttpsServer,
    received: Arc<Mutex<Vec<Value>>>,
}

impl NotifyReceiver {
    pub async fn start(ca: &SandboxCa) -> std::io::Result<NotifyReceiver> {
        let received: Arc<Mutex<Vec<Value>>> = Arc::default();
        let keep = received.clone();
        let server = HttpsServer::start(
            ca,
            handler(move |req| {
                if req.method != "POST" || req.path != NOTIFY_PATH {
                    return Resp::json(404, &json!({"error": "not found"}));
                }
                let body = serde_json::from_slice(&req.body)
                    .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&req.body).into()));
                keep.lock().unwrap_or_else(|p| p.into_inner()).push(body);
                Resp::json(202, &json!({"received": true}))
            }),
        )
        .await?;
        Ok(NotifyReceiver { server, received })
    }

    /// `https://localhost:<port>/conduct/notify`.
    pub fn url(&self) -> String {
        format!(
            "https://localhost:{}{NOTIFY_PATH}",
            self.server.addr().port()
        )
    }

    /// Every body received so far, oldest first.
    pub fn received(&self) -> Vec<Value> {
        self.received
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// An honest agent (`behaviour`) whose consent file declares `notify` = `url`.
pub async fn asking_agent(
    ca: &SandboxCa,
    behaviour: Behaviour,
    url: &str,
) -> std::io::Result<SandboxAgent> {
    SandboxAgent::start(
        ca,
        Behaviour {
            consent: Some(json!({"notify": url})),
            ..behaviour
        },
    )
    .await
}

/// What [`scheduled_fire`] did.
pub struct Fired {
    pub report: crate::pipeline::JobReport,
    /// The walk's `notify_status` (`null`: nothing was due).
    pub notify_status: Value,
}

/// One scheduled fire of `target` as the daemon makes it, in one process (the demo): its
/// `daemon_walks` row, the walk (stored and filed), then §11.5: guards 1–7 decided and stored,
/// guard 8 and the POST, the status settled. `notify` is what the origin's consent file says.
pub async fn scheduled_fire(
    pipeline: &crate::pipeline::Pipeline,
    store_path: &std::path::Path,
    target: &str,
    request: crate::walk::WalkRequest,
    notify: Option<String>,
    notifier: &crate::notify::Notifier,
) -> Result<Fired, String> {
    use crate::store::daemon_walks::{self as walks, WalkEnd, WalkStart, state};
    let err = |e: crate::store::StoreError| e.to_string();
    let store = crate::store::Store::open(store_path).map_err(err)?;
    let at = chrono::Utc::now();
    let scheduled = walks::timestamp(at);
    let walk_id = walks::begin_walk(
        store.connection(),
        &WalkStart {
            target,
            origin: &request.origin,
            endpoint: request.endpoint.as_deref(),
            scheduled_for: &scheduled,
            now: &scheduled,
        },
    )
    .map_err(err)?;
    let job = crate::pipeline::WalkJob {
        request: request.clone(),
        submit: true,
        bind_task: None,
    };
    let report = pipeline
        .run_target_job(&job, target)
        .await
        .map_err(|e| e.to_string())?;
    walks::finish_walk(
        store.connection(),
        walk_id,
        &WalkEnd {
            state: state::DONE,
            record_id: Some(report.record_id),
            record_sha256: Some(&report.outcome.sha256),
            submission: report.submission.as_ref().map(|s| s.state),
            detail: None,
        },
        &walks::timestamp(chrono::Utc::now()),
    )
    .map_err(err)?;
    let after = crate::notify::AfterWalk {
        walk_id,
        record_id: report.record_id,
        kind: crate::notify::WalkKind::Scheduled,
        privacy: request.privacy,
        origin: request.base(),
        notify,
        wave: scheduled,
        submits: true,
    };
    let step = crate::notify::decide(&notifier.settings, &store, &after, chrono::Utc::now())
        .map_err(err)?;
    let notify_status = match step {
        crate::notify::Step::Null => Value::Null,
        crate::notify::Step::Settled(status) => status,
        crate::notify::Step::Send {
            id,
            url,
            host,
            body,
        } => {
            let status = notifier.send(&host, &url, body).await;
            crate::store::notifications::settle(store.connection(), id, &status).map_err(err)?;
            status
        }
    };
    Ok(Fired {
        report,
        notify_status,
    })
}
