//! A faithful local witness intake (spec §6, conduct-walk.md): the same check order, refusal
//! codes, statuses, lanes, counting, dedupe and key_url rules as the real intake, served over
//! loopback HTTPS so the walker's client, the daemon and the demo can be exercised without the
//! internet.
//!
//! Layout: [`validate`] (§6.3 and §6.5, pure), [`signature`] (§6.2 step 5), `keys` (key_url
//! fetch on every submission), `submit` (§6.2 in order), `reads` (§6.6 self-description and the
//! pool), `ledger` (the ledger's read side of ledger.md: `/witness/<sha>`, the operator batch,
//! the scheduled run, `/ledger/*`), [`hooks`] (test and fault hooks, ledger.md §8 item 7),
//! [`state`] (the SQLite file). Differences from the real intake that a client could notice are
//! listed in `reads` under the self-description's `what_this_is`.

pub mod constants;
pub mod hooks;
mod keys;
mod ledger;
mod reads;
pub mod signature;
pub mod state;
mod submit;
pub mod task_ledger;
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

pub use hooks::{Hook, HookError, Stamp};
pub use ledger::{BatchOrder, BatchOutcome, ScheduledRun};
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
        }
    }
}

/// How to run an emulator.
#[derive(Clone)]
pub struct EmulatorConfig {
    /// The emulator's own SQLite file (created when missing; reused across restarts).
    pub state_path: PathBuf,
    pub limits: Limits,
    /// Decides the UTC day of lanes and counting.
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
    ledger: Mutex<ledger::LedgerCtl>,
    posts: Mutex<PostLog>,
}

/// Every `POST /witness` by the sha256 of its `record_canonical`, and the answers dropped on
/// purpose ([`RunningEmulator::drop_answers`]): what a crash test compares a store with.
struct PostLog {
    by_sha: std::collections::BTreeMap<String, u64>,
    dropped: u64,
    drop_rate: f64,
    rng: rand::rngs::StdRng,
    /// How long a POST's answer waits after the request was handled.
    delay: Duration,
}

impl PostLog {
    fn new() -> PostLog {
        PostLog {
            by_sha: Default::default(),
            dropped: 0,
            drop_rate: 0.0,
            rng: rand::SeedableRng::seed_from_u64(0),
            delay: Duration::ZERO,
        }
    }
}

impl Shared {
    fn posts(&self) -> MutexGuard<'_, PostLog> {
        self.posts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The ledger's settings and fault state. Lock order: this one first, then `state`.
    fn ledger(&self) -> MutexGuard<'_, ledger::LedgerCtl> {
        self.ledger.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `x-ledger-key` against the operator's secret, in constant time (§4.1).
    fn operator_key_matches(&self, given: Option<&str>) -> bool {
        use subtle::ConstantTimeEq as _;
        let key = self.ledger().operator_key.clone();
        given.is_some_and(|g| bool::from(g.as_bytes().ct_eq(key.as_bytes())))
    }

    fn now_ms(&self) -> i64 {
        self.clock.now().timestamp_millis()
    }

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
        crate::clock::utc_millis(self.clock.now())
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
            // A fresh random operator key; tests and the CLI read or set it on the handle.
            ledger: Mutex::new(ledger::LedgerCtl::new(hex::encode(
                rand::random::<[u8; 32]>(),
            ))),
            posts: Mutex::new(PostLog::new()),
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

    /// `https://127.0.0.1:PORT/witness/task`: the task-delegation ledger a walk binds its A2A
    /// Task to (`--bind-task --task-ledger`).
    pub fn task_url(&self) -> String {
        format!("{}/witness/task", self.server.base())
    }

    /// Every task observation accepted (`POST /witness/task`), as POSTed, in arrival order.
    /// Panics if the state file cannot be read.
    pub fn task_observations(&self) -> Vec<String> {
        self.shared
            .state()
            .task_observations()
            .expect("read the intake state")
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

    /// The operator batch (`POST /witness/anchor`, ledger.md §4.1–§4.4): the 200 lowest shas
    /// of the pool (or the oldest, see [`RunningEmulator::set_batch_order`]), sorted by sha,
    /// into one `nenrin-witness-batch-v1` entry. None when nothing was appended (empty pool,
    /// only stale keys, or a text equal to an existing entry's).
    pub fn anchor(&self) -> Result<Option<AnchoredBatch>, EmulatorError> {
        Ok(match ledger::run_batch(&self.shared, "operator")? {
            BatchOutcome::Appended(batch) => Some(batch),
            _ => None,
        })
    }

    /// The scheduled run (ledger.md §4.1): the witness batch, then the head checkpoint rule
    /// of §4.5.
    pub fn scheduled_run(&self) -> Result<ScheduledRun, EmulatorError> {
        ledger::scheduled_run(&self.shared)
    }

    /// The operator secret `POST /witness/anchor` and `POST /emulator/hooks` require in
    /// `x-ledger-key` (random per start unless set).
    pub fn operator_key(&self) -> String {
        self.shared.ledger().operator_key.clone()
    }

    pub fn set_operator_key(&self, key: &str) {
        self.shared.ledger().operator_key = key.to_string();
    }

    /// §4.2: the observed lowest-sha selection (default) or the [newer] oldest-first one.
    pub fn set_batch_order(&self, order: BatchOrder) {
        self.shared.ledger().order = order;
    }

    /// Runs one test or fault hook (ledger.md §8 item 7; see [`Hook`]).
    pub fn hook(&self, hook: Hook) -> Result<serde_json::Value, HookError> {
        hooks::run(&self.shared, hook)
    }

    /// Attaches a reply element to a record's `responses` (§2.4).
    pub fn attach_response(
        &self,
        sha: &str,
        response_sha: &str,
        subject_origin: &str,
        responded_at: &str,
    ) -> Result<(), HookError> {
        self.hook(Hook::AttachResponse {
            sha: sha.into(),
            response_sha: response_sha.into(),
            subject_origin: subject_origin.into(),
            responded_at: responded_at.into(),
        })
        .map(drop)
    }

    /// Fault: replace entry n's bytes (see [`Hook::RewriteBytes`]).
    pub fn rewrite_entry_bytes(
        &self,
        n: u64,
        text: &str,
        update_claim: bool,
    ) -> Result<(), HookError> {
        self.hook(Hook::RewriteBytes {
            n,
            text: text.into(),
            update_claim,
        })
        .map(drop)
    }

    /// Fault: replace entry n's `created_at`.
    pub fn rewrite_created_at(
        &self,
        n: u64,
        created_at: serde_json::Value,
    ) -> Result<(), HookError> {
        self.hook(Hook::RewriteCreatedAt { n, created_at })
            .map(drop)
    }

    /// Fault: remove entry n (409 head, broken export line).
    pub fn drop_entry(&self, n: u64) -> Result<(), HookError> {
        self.hook(Hook::DropEntry { n }).map(drop)
    }

    /// Fault: serve the ledger as it stood at n (`None` stops).
    pub fn rewind_head(&self, n: Option<u64>) {
        self.shared.ledger().rewind_to = n;
    }

    /// Fault: rewrite entries n.. into a self-consistent other history.
    pub fn fork_from(&self, n: u64) -> Result<(), HookError> {
        self.hook(Hook::ForkFrom { n }).map(drop)
    }

    /// Fault: leave an anchored record's pending key (anchored must still win).
    pub fn stale_pending(&self, sha: &str) -> Result<(), HookError> {
        self.hook(Hook::StalePending { sha: sha.into() }).map(drop)
    }

    /// Sets entry n's stamp fields and proof (`/ledger/<n>/ots`).
    pub fn stamp(&self, n: u64, stamp: Stamp) -> Result<(), HookError> {
        hooks::stamp(&self.shared, n, stamp)
    }

    /// Fault: for this share (0 to 1) of `POST /witness`, process the request (store it, when
    /// it is valid), then close the connection without answering: the answer a flaky network
    /// or a proxy timeout loses. Which POSTs lose their answer follows from `seed`.
    pub fn drop_answers(&self, rate: f64, seed: u64) {
        let mut log = self.shared.posts();
        log.drop_rate = rate.clamp(0.0, 1.0);
        log.rng = rand::SeedableRng::seed_from_u64(seed);
    }

    /// Fault: answer each `POST /witness` only `delay` after it was handled (stored): a slow
    /// network back, which widens the moment a walker can be stopped between the intake's
    /// write and its answer.
    pub fn delay_answers(&self, delay: Duration) {
        self.shared.posts().delay = delay;
    }

    /// `POST /witness` requests received so far, by the sha256 of their `record_canonical`
    /// (whatever the answer, dropped or not).
    pub fn posts_per_sha(&self) -> std::collections::BTreeMap<String, u64> {
        self.shared.posts().by_sha.clone()
    }

    /// How many answers [`RunningEmulator::drop_answers`] dropped.
    pub fn dropped_answers(&self) -> u64 {
        self.shared.posts().dropped
    }

    /// Fault: `/witness/<sha>` reads lag writes by `lag` (zero stops).
    pub fn delay_visibility(&self, lag: Duration) {
        self.shared.ledger().lag_ms = lag.as_millis() as i64;
    }

    /// Test hook: stores a record object as given, pending (its `sha` taken as given), for
    /// records whose bytes a test does not have (the spec's observed batches).
    pub fn insert_stored(
        &self,
        record: &crate::ledger::wire::StoredRecord,
    ) -> Result<(), HookError> {
        hooks::insert_stored(&self.shared, record)
    }

    /// Test hook: appends an entry with this claim, `schema`, `created_at` and text as given
    /// (an observed ledger whose bytes the spec does not print). Returns its n.
    pub fn import_entry(
        &self,
        claim_sha256: &str,
        schema: serde_json::Value,
        created_at: serde_json::Value,
        text: &str,
    ) -> Result<u64, EmulatorError> {
        ledger::import_entry(&self.shared, claim_sha256, schema, created_at, text)
    }
}

/// Routing: OPTIONS answers 200 for any path; trailing slashes are ignored; query strings are
/// ignored except `format` on `/ledger/<n>` (ledger.md §1, §5.1).
async fn route(shared: &Shared, req: Req) -> Resp {
    let (raw_path, query) = req.path.split_once('?').unwrap_or((req.path.as_str(), ""));
    let raw_path = raw_path.split('#').next().unwrap_or("");
    let path = raw_path.trim_end_matches('/');
    if req.method == "OPTIONS" {
        return with_cors(Resp::empty(200));
    }
    let method = req.method.as_str();
    let direct = match (method, path) {
        ("GET", p) if p.strip_prefix("/witness/").is_some_and(is_sha) => {
            Some(ledger::witness(shared, &req.base, &p["/witness/".len()..]))
        }
        ("POST", "/witness/anchor") => Some(ledger::anchor_route(
            shared,
            &req.base,
            req.header("x-ledger-key"),
        )),
        ("POST", "/emulator/hooks") => {
            Some(hooks::route(shared, req.header("x-ledger-key"), &req.body))
        }
        ("GET", "/witness/pending") => Some(reads::pending(shared)),
        ("GET", "/ledger") => Some(ledger::list(shared, &req.base)),
        ("GET", "/ledger/head") => Some(ledger::head(shared, &req.base)),
        ("GET", "/ledger/export.jsonl") => Some(ledger::export(shared)),
        ("GET", p)
            if p.strip_prefix("/ledger/")
                .is_some_and(|r| r.strip_suffix("/ots").is_some_and(is_decimal)) =>
        {
            let n = &p["/ledger/".len()..p.len() - "/ots".len()];
            Some(ledger::ots(shared, n))
        }
        // Any method on /ledger/<n> reads.
        (_, p) if p.strip_prefix("/ledger/").is_some_and(is_decimal) => Some(ledger::entry(
            shared,
            &p["/ledger/".len()..],
            query,
            req.header("accept"),
        )),
        _ => None,
    };
    if let Some(answer) = direct {
        return answer.unwrap_or_else(|e| internal(&e));
    }
    if (method, path) == ("POST", "/witness") {
        let sha = posted_sha(&req.body);
        let answer = match submit::post_witness(shared, &req).await {
            Ok((status, body)) => json_resp(status, &in_order(body, POST_WITNESS_ORDER)),
            Err(e) => internal(&e),
        };
        // Counted once the request was handled, as the intake would log it.
        let (drop, delay) = {
            let mut log = shared.posts();
            if let Some(sha) = sha {
                *log.by_sha.entry(sha).or_default() += 1;
            }
            let draw: f64 = rand::Rng::random(&mut log.rng);
            let drop = log.drop_rate > 0.0 && draw < log.drop_rate;
            if drop {
                log.dropped += 1;
            }
            (drop, log.delay)
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        return if drop {
            Resp::close_without_answer()
        } else {
            answer
        };
    }
    if (method, path) == ("GET", "/emulator/posts") {
        let log = shared.posts();
        return json_resp(
            200,
            &serde_json::json!({"posts": log.by_sha, "dropped_answers": log.dropped}),
        );
    }
    let answer = match (method, path) {
        ("GET", "/witness") => reads::describe(shared, &req.base),
        ("POST", "/witness/task") => task_ledger::post(shared, &req),
        ("GET", "/witness/task") => task_ledger::describe(shared, &req.base),
        (m, "/witness" | "/witness/pending" | "/witness/task") if m != "GET" => Ok((
            405,
            serde_json::json!({"error": "method not allowed", "allow": CORS_ALLOW_METHODS}),
        )),
        _ => Ok((
            404,
            serde_json::json!({"error": ERR_NOT_FOUND, "routes": ledger::ROUTES}),
        )),
    };
    match answer {
        Ok((status, body)) => json_resp(status, &body),
        Err(e) => internal(&e),
    }
}

/// The keys of every `POST /witness` answer in the order conduct-walk.md §6.2 writes them
/// (the 201 body, the dedupe answer, the refusals); the crate's `Value` sorts keys.
const POST_WITNESS_ORDER: &[&str] = &[
    "sha",
    "status",
    "signed",
    "signed_domain",
    "mode",
    "counted",
    "count_reason",
    "dedup",
    "url",
    "anchor_policy",
    "error",
    "reason_code",
    "why",
    "max_bytes",
    "cap",
    "note",
    "help",
];

/// A JSON object with its keys in `order` (any other key after them, sorted).
fn in_order(body: Value, order: &[&str]) -> KeyOrdered {
    let Value::Object(mut map) = body else {
        return KeyOrdered(vec![(String::new(), body)], true);
    };
    let mut out: Vec<(String, Value)> = Vec::with_capacity(map.len());
    for key in order {
        if let Some(v) = map.remove(*key) {
            out.push((key.to_string(), v));
        }
    }
    out.extend(map);
    KeyOrdered(out, false)
}

/// An object in a given key order (or, flagged, one value that is not an object).
struct KeyOrdered(Vec<(String, Value)>, bool);

impl serde::Serialize for KeyOrdered {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        if self.1 {
            return self.0[0].1.serialize(s);
        }
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

fn internal(e: &EmulatorError) -> Resp {
    tracing::error!("intake emulator: {e}");
    json_resp(
        500,
        &serde_json::json!({"error": "internal", "why": e.to_string()}),
    )
}

/// The sha256 of a POST's `record_canonical`, when the body has one.
fn posted_sha(body: &[u8]) -> Option<String> {
    let v: Value = crate::json::parse_lenient(body).ok()?;
    let record = v.get("record_canonical")?.as_str()?;
    Some(crate::digest::sha256_hex(record.as_bytes()))
}

fn is_decimal(s: &str) -> bool {
    !s.is_empty() && s.len() <= 18 && s.bytes().all(|b| b.is_ascii_digit())
}

/// `GET /witness/<sha>` takes exactly 64 hex characters, either case (§2.1).
fn is_sha(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Every answer: pretty JSON with 2-space indent (what `JSON.stringify(x, null, 2)` writes).
fn json_resp<T: serde::Serialize + ?Sized>(status: u16, body: &T) -> Resp {
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
