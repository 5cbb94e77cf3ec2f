//! A store filled by the real pipeline (loopback sandbox agents, the intake emulator), daemon
//! fire rows beside it, and the status pages served over it on 127.0.0.1: shared by the page
//! tests.
#![allow(dead_code)]

use conduct_walker::daemon::db;
use conduct_walker::intake_emulator::{Emulator, EmulatorConfig, RunningEmulator};
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::pages::{Context, PagesState};
use conduct_walker::pipeline::{JobReport, Pipeline, PipelineConfig, WalkJob};
use conduct_walker::sandbox::agent::Metadata;
use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use conduct_walker::store::Store;
use conduct_walker::walk::{Mode, Wire};
use serde_json::json;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use crate::common;

pub const XSS_SCRIPT: &str = "<script>document.title='pwned-script'</script>";
pub const XSS_IMG: &str = "\"><img src=x onerror=\"document.title='pwned-img'\">";
pub const XSS_URL: &str = "javascript:document.title='pwned-url'";
pub const RTL: &str = "\u{202E}gnp.exe";

/// Behaviour of an agent whose every card string, and what the walker records of it, is hostile.
pub fn hostile_behaviour() -> Behaviour {
    Behaviour {
        card_extra: Some(json!({
            "name": format!("{XSS_SCRIPT}{RTL}"),
            "skills": [{"id": "x", "name": XSS_IMG, "description": XSS_URL, "tags": [RTL]}],
            "url": XSS_URL,
        })),
        metadata: Metadata::ServedBy(format!("{XSS_URL}{XSS_IMG}")),
        // Recorded verbatim in conduct_ext.witness_intake.
        witness_intake: Some(format!("{XSS_IMG}{XSS_SCRIPT}{XSS_URL}{RTL}")),
        ..Behaviour::default()
    }
}

pub struct World {
    pub ca: SandboxCa,
    pub honest: SandboxAgent,
    pub failing: SandboxAgent,
    pub hostile: SandboxAgent,
    pub emulator: RunningEmulator,
    pub dir: tempfile::TempDir,
    pub pipeline: Pipeline,
    pub clock: Arc<conduct_walker::clock::ManualClock>,
}

impl World {
    pub fn db(&self) -> PathBuf {
        self.dir.path().join("walker.db")
    }

    pub async fn start() -> World {
        let ca = SandboxCa::generate();
        let honest = SandboxAgent::start(&ca, Behaviour::default())
            .await
            .unwrap();
        let failing = SandboxAgent::start(
            &ca,
            Behaviour {
                metadata: Metadata::ServedBy("https://elsewhere.example/mcp".into()),
                ..Behaviour::default()
            },
        )
        .await
        .unwrap();
        let hostile = SandboxAgent::start(&ca, hostile_behaviour()).await.unwrap();
        let clock = Arc::new(common::fixed_clock());
        let dir = tempfile::tempdir().unwrap();
        let mut policy = NetPolicy::new(true);
        let mut cfg = TransportConfig::new(policy.clone());
        cfg.extra_roots = vec![ca.cert_der()];
        let emulator = Emulator::start(
            EmulatorConfig {
                state_path: dir.path().join("intake.db"),
                limits: Default::default(),
                clock: clock.clone() as Arc<dyn conduct_walker::clock::Clock>,
                transport: Transport::new(cfg).unwrap(),
                ledger_host: "ledger.horizonshield.dev".into(),
            },
            &ca,
            "127.0.0.1:0".parse().unwrap(),
        )
        .await
        .unwrap();
        for a in [&honest, &failing, &hostile] {
            policy.allow_url(&a.origin());
        }
        policy.allow_url(&emulator.url());
        let mut cfg = TransportConfig::new(policy);
        cfg.extra_roots = vec![ca.cert_der()];
        let pipeline = Pipeline::new(PipelineConfig {
            transport: Transport::new(cfg).unwrap(),
            store_path: dir.path().join("walker.db"),
            signing: Some((ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]), None)),
            clock: clock.clone() as Arc<dyn conduct_walker::clock::Clock>,
            intake_override: Some(emulator.url()),
            file_extra_walks: false,
        })
        .unwrap();
        World {
            ca,
            honest,
            failing,
            hostile,
            emulator,
            dir,
            pipeline,
            clock,
        }
    }

    /// Walk an agent through the pipeline and note it as a daemon fire of `target`.
    pub async fn fire(&self, target: &str, agent: &SandboxAgent, at: &str) -> JobReport {
        // Each walk a minute later: two walks with the same walked_at and duration would be
        // the same bytes, one record.
        self.clock.advance(chrono::Duration::seconds(60));
        let request = common::request(&agent.origin(), None, Mode::A2a, Wire::V1_0);
        let report = self
            .pipeline
            .run_job(&WalkJob {
                request: request.clone(),
                submit: true,
                bind_task: None,
            })
            .await
            .unwrap();
        let store = Store::open(&self.db()).unwrap();
        let start = db::WalkStart {
            target,
            origin: &request.origin,
            endpoint: None,
            scheduled_for: at,
            now: at,
        };
        let id = db::begin_walk(store.connection(), &start).unwrap();
        db::finish_walk(
            store.connection(),
            id,
            &db::WalkEnd {
                state: db::state::DONE,
                record_id: Some(report.record_id),
                record_sha256: Some(&report.outcome.sha256),
                submission: report.submission.as_ref().map(|s| s.state),
                detail: None,
            },
            at,
        )
        .unwrap();
        report
    }

    /// A fire that did not walk (declined, skipped, aborted).
    pub fn note(&self, target: &str, origin: &str, state: &str, at: &str, detail: &str) {
        let store = Store::open(&self.db()).unwrap();
        db::note_fire(
            store.connection(),
            &db::WalkStart {
                target,
                origin,
                endpoint: None,
                scheduled_for: at,
                now: at,
            },
            &db::WalkEnd {
                state,
                detail: Some(detail),
                ..Default::default()
            },
        )
        .unwrap();
    }
}

/// Serve the pages over `db` on 127.0.0.1 (an ephemeral port); returns the base URL.
pub async fn serve(db: PathBuf, ctx: Context) -> String {
    let state = PagesState::new(db, Arc::new(move || ctx.clone()), "the page tests");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, conduct_walker::pages::router(state))
            .await
            .unwrap();
    });
    format!("http://{addr}")
}

/// GET a page as a browser asks for it: `(status, headers, body)`.
pub async fn get_html(url: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let r = reqwest::Client::new()
        .get(url)
        .header("accept", "text/html,application/xhtml+xml")
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, headers, r.text().await.unwrap())
}

/// GET with no preference (as curl does): `(status, content-type, bytes)`.
pub async fn get_bytes(url: &str) -> (u16, String, Vec<u8>) {
    let r = reqwest::get(url).await.unwrap();
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    (status, ct, r.bytes().await.unwrap().to_vec())
}
