//! A faithful local witness intake (spec §6, conduct-walk.md): the same check order, refusal
//! codes, statuses, lanes, counting, dedupe and key_url rules as the real intake, served over
//! loopback HTTPS so the walker's client, the daemon and the demo can be exercised without the
//! internet.
//!
//! Layout: [`validate`] (§6.3 and §6.5, pure), [`signature`] (§6.2 step 5), `keys` (key_url
//! fetch and 24 h cache), `submit` (§6.2 in order), `reads` (§6.6 and the operator batch),
//! [`state`] (the SQLite file). Differences from the real intake that a client could notice are
//! listed in `reads` under the self-description's `what_this_is`.

pub mod constants;
mod keys;
mod reads;
pub mod signature;
pub mod state;
mod submit;
pub mod validate;

use crate::clock::{Clock, SystemClock};
use crate::net::Transport;
use crate::sandbox::{Body, HttpsServer, Req, Resp, SandboxCa};
use constants::*;
use serde_json::Value;
use state::State;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

pub use state::{AnchoredBatch, RecordStatus};

/// The intake's caps and timings (§6.1). `Limits::default()` is the spec; tests shrink the caps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest `record_canonical` in UTF-16 code units.
    pub max_record_len: usize,
    pub daily_global: u64,
    pub daily_per_ip: u64,
    pub daily_per_domain: u64,
    pub batch_max: usize,
    pub key_fetch_timeout: Duration,
    pub key_cache_ttl: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_record_len: MAX_RECORD_LEN,
            daily_global: DAILY_GLOBAL,
            daily_per_ip: DAILY_PER_IP,
            daily_per_domain: DAILY_PER_DOMAIN,
            batch_max: BATCH_MAX,
            key_fetch_timeout: Duration::from_secs(KEY_FETCH_TIMEOUT_SECS),
            key_cache_ttl: Duration::from_secs(KEY_CACHE_SECS as u64),
        }
    }
}

/// How to run an emulator.
#[derive(Clone)]
pub struct EmulatorConfig {
    /// The emulator's own SQLite file (created when missing; reused across restarts).
    pub state_path: PathBuf,
    pub limits: Limits,
    /// Decides the UTC day of lanes and counting and the key cache's age.
    pub clock: Arc<dyn Clock>,
    /// For key_url fetches: its policy decides which hosts may be reached; redirects are never
    /// followed (a 3xx comes back as its status, which §6.2 refuses).
    pub transport: Transport,
    /// The host treated as the ledger's own for the self_witness rule.
    pub ledger_host: String,
}

impl EmulatorConfig {
    /// Spec limits, the system clock and the real ledger's host.
    pub fn new(state_path: impl Into<PathBuf>, transport: Transport) -> Self {
        EmulatorConfig {
            state_path: state_path.into(),
            limits: Limits::default(),
            clock: Arc::new(SystemClock),
            transport,
            ledger_host: DEFAULT_LEDGER_HOST.to_string(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    #[error("cannot open the intake state database {path}: {source}")]
    StateOpen {
        path: String,
        source: rusqlite::Error,
    },
    #[error("intake state database error: {0}")]
    State(#[from] rusqlite::Error),
    #[error("intake state is corrupt: {0}")]
    Corrupt(String),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// Shared by every request of one running emulator.
struct Shared {
    state: Mutex<State>,
    limits: Limits,
    clock: Arc<dyn Clock>,
    transport: Transport,
    ledger_host: String,
}

impl Shared {
    /// The state lock. A panic while holding it cannot leave SQLite half-written (transactions
    /// roll back on drop), so a poisoned lock is still safe to use.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The server's UTC date: lanes and counting use it, never `walked_at` (§6.1).
    fn today(&self) -> String {
        self.clock.now().format("%Y-%m-%d").to_string()
    }

    /// ISO time as JavaScript's `toISOString` writes it (milliseconds, `Z`).
    fn now_iso(&self) -> String {
        self.clock
            .now()
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string()
    }
}

pub struct Emulator;

impl Emulator {
    /// Open (or create) the state file and serve the intake at `listen` with a certificate from
    /// `ca`. Port 0 picks a free port; [`RunningEmulator::url`] says which.
    pub async fn start(
        config: EmulatorConfig,
        ca: &SandboxCa,
        listen: SocketAddr,
    ) -> Result<RunningEmulator, EmulatorError> {
        let state = State::open(&config.state_path)?;
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            limits: config.limits,
            clock: config.clock,
            transport: config.transport,
            ledger_host: config.ledger_host.to_ascii_lowercase(),
        });
        let for_handler = shared.clone();
        let handler: crate::sandbox::Handler = Arc::new(move |req| {
            let shared = for_handler.clone();
            Box::pin(async move { route(&shared, req).await })
        });
        let server = HttpsServer::start_on(listen, ca, &[], handler)
            .await
            .map_err(|source| EmulatorError::Listen {
                addr: listen,
                source,
            })?;
        Ok(RunningEmulator { server, shared })
    }
}

/// A running emulator; dropping it stops the server (the state file stays).
pub struct RunningEmulator {
    server: HttpsServer,
    shared: Arc<Shared>,
}

impl RunningEmulator {
    /// `https://127.0.0.1:PORT/witness`: the intake URL a walker files with.
    pub fn url(&self) -> String {
        format!("{}/witness", self.server.base())
    }

    /// `https://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        self.server.base()
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// Records held (pending and anchored). A read API for tests: panics if the state file
    /// cannot be read.
    pub fn stored_count(&self) -> u64 {
        self.shared
            .state()
            .stored_count()
            .expect("read the intake state")
    }

    /// The stored object of §6.2 for a sha, pending or anchored. Panics if the state file
    /// cannot be read.
    pub fn stored(&self, sha: &str) -> Option<Value> {
        self.shared
            .state()
            .stored(sha)
            .expect("read the intake state")
            .map(|(stored, _)| stored)
    }

    /// Where a stored record stands.
    pub fn status(&self, sha: &str) -> Result<Option<RecordStatus>, EmulatorError> {
        self.shared.state().status(sha)
    }

    /// The operator batch (`POST /witness/anchor`): up to `batch_max` pending records, sorted by
    /// sha, into one `nenrin-witness-batch-v1` ledger entry. None when the pool is empty.
    pub fn anchor(&self) -> Result<Option<AnchoredBatch>, EmulatorError> {
        reads::anchor_pool(&self.shared)
    }
}

/// Routing: OPTIONS answers 200 for any path; trailing slashes are ignored.
async fn route(shared: &Shared, req: Req) -> Resp {
    let raw_path = req.path.split(['?', '#']).next().unwrap_or("");
    let path = raw_path.trim_end_matches('/');
    if req.method == "OPTIONS" {
        return with_cors(Resp::empty(200));
    }
    let answer = match (req.method.as_str(), path) {
        ("POST", "/witness") => submit::post_witness(shared, &req).await,
        ("GET", "/witness") => reads::describe(shared, &req.base),
        ("GET", "/witness/pending") => reads::pending(shared),
        ("POST", "/witness/anchor") => reads::anchor(shared, &req.base),
        ("GET", p) if p.strip_prefix("/witness/").is_some_and(is_sha) => {
            reads::one(shared, &req.base, &p["/witness/".len()..])
        }
        ("GET", p)
            if p.strip_prefix("/ledger/")
                .is_some_and(|n| n.parse::<i64>().is_ok()) =>
        {
            reads::ledger(shared, &p["/ledger/".len()..])
        }
        (_, "/witness" | "/witness/pending" | "/witness/anchor") => Ok((
            405,
            serde_json::json!({"error": "method not allowed", "allow": CORS_ALLOW_METHODS}),
        )),
        _ => Ok((
            404,
            serde_json::json!({"error": ERR_NOT_FOUND, "path": raw_path}),
        )),
    };
    match answer {
        Ok((status, body)) => json_resp(status, &body),
        Err(e) => {
            tracing::error!("intake emulator: {e}");
            json_resp(
                500,
                &serde_json::json!({"error": "internal", "why": e.to_string()}),
            )
        }
    }
}

/// `GET /witness/<sha>` takes exactly 64 lower-case hex characters.
fn is_sha(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Every answer: pretty JSON with 2-space indent (what `JSON.stringify(x, null, 2)` writes).
fn json_resp(status: u16, body: &Value) -> Resp {
    let text = serde_json::to_string_pretty(body).expect("a JSON value serialises");
    with_cors(Resp {
        status,
        headers: vec![("content-type".into(), CONTENT_TYPE_JSON.into())],
        body: Body::Bytes(text.into_bytes()),
    })
}

fn with_cors(resp: Resp) -> Resp {
    resp.with_header("access-control-allow-origin", CORS_ALLOW_ORIGIN)
        .with_header("access-control-allow-methods", CORS_ALLOW_METHODS)
}

/// The answer of one route: status and JSON body.
type Answer = Result<(u16, Value), EmulatorError>;
