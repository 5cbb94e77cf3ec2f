//! Walk → sign → store (record and outbox row in one transaction) → file within the lanes →
//! classify and store the answer. Used by `walk --db/--submit`, `reveal`, `demo` and the daemon.
//!
//! Order matters: nothing is sent before the record and its outbox row are committed, and a row
//! is marked `sending` (committed) before its request leaves. A row left `sending` (a killed
//! process, or an attempt with no complete answer) is looked up at the intake before anything
//! is sent again: only a 404 leads to a second POST (issue 34).

use crate::clock::{Clock, walked_at as rfc3339_seconds};
use crate::filing::lanes::{self, Lane, Limits, Usage};
use crate::filing::{
    self, AfterLookup, AnswerKind, Facts, Step, SubmissionState, Summary, Transition,
};
use crate::net::Transport;
use crate::store::group::{GroupCommit, Then};
use crate::store::outbox::{self, AttemptResult, NewSubmission, Submission};
use crate::store::record_view::RecordView;
use crate::store::task_bindings::{self, NewBinding, TaskBinding};
use crate::store::{KeptFull, NewRecord, Store, StoreError};
use crate::walk::{WalkOutcome, WalkRequest};
use crate::wire::IntakeSubmission;
use crate::witness::intake::{self, IntakeProbe};
use crate::witness::{Signed, sign};
use ed25519_dalek::SigningKey;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

mod file;
mod walk;

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the store task failed: {0}")]
    Join(String),
    #[error("the kept full record is not JSON: {0}")]
    KeptNotJson(String),
    #[error("record {0} has no kept full record to reveal (it was not a commitment walk)")]
    NothingToReveal(String),
}

impl PipelineError {
    /// Why the store cannot write, when this error is that (see [`StoreError::unwritable_reason`]).
    pub fn unwritable_reason(&self) -> Option<String> {
        match self {
            PipelineError::Store(e) => e.unwritable_reason(),
            _ => None,
        }
    }
}

/// A write to run in the transaction of the pipeline's write that called for it (so it is
/// committed exactly when that is).
pub type HookWrite = Box<dyn FnOnce(&rusqlite::Connection) -> Result<(), StoreError> + Send>;

/// What the composition root hooks onto the pipeline's writes (the alert planner, when
/// `[alerts]` has channels): the pipeline tells it what happened and runs the write it returns
/// in the same transaction. Each method decides from data only, before the transaction starts,
/// so the records' writer does no more than the write itself.
pub trait RecordHook: Send + Sync {
    /// A daemon walk of the configured target `target` (at `origin`) came to `outcome`; the
    /// write runs only when its record is new (the same bytes stored twice are one walk).
    fn on_record(
        &self,
        target: &str,
        origin: &str,
        outcome: &WalkOutcome,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Option<HookWrite>;

    /// A filing attempt found a lane full today (by our own count or the intake's answer).
    fn on_lane_full(
        &self,
        full: &LaneFull<'_>,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Option<HookWrite>;

    /// A daemon fire of `target` was not walked: the origin's consent file (its sha256)
    /// declines listing. The write runs in the fire's own transaction.
    fn on_declined(
        &self,
        target: &str,
        origin: &str,
        endpoint: Option<&str>,
        consent_sha256: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Option<HookWrite>;
}

/// A lane found full by a filing attempt.
#[derive(Debug, Clone, Copy)]
pub enum LaneFull<'a> {
    /// Not sent: our own count (`usage` of `lane` today) leaves no room under the intake's
    /// `limits` (the lane's cap, or the intake's daily total).
    Counted {
        intake: &'a str,
        limits: &'a Limits,
        lane: &'a Lane,
        usage: Usage,
    },
    /// The intake answered that the lane (its stored key) is full: its own count, which may
    /// include other witnesses'.
    Said { intake: &'a str, lane: &'a str },
}

/// How the pipeline is set up.
pub struct PipelineConfig {
    pub transport: Transport,
    pub store_path: PathBuf,
    /// The signing key and the `key_url` serving its public key.
    pub signing: Option<(SigningKey, Option<String>)>,
    pub clock: Arc<dyn Clock>,
    /// File here instead of the card's `params.witness_intake`.
    pub intake_override: Option<String>,
    /// File every walk, not only the first per identity × endpoint × UTC day.
    pub file_extra_walks: bool,
}

impl PipelineConfig {
    /// Unsigned, filing with each card's own intake, once per identity × endpoint × UTC day:
    /// what the outbox drain runs with; `app::pipeline` and the walk's flags set the rest.
    pub fn new(transport: Transport, store_path: PathBuf, clock: Arc<dyn Clock>) -> Self {
        PipelineConfig {
            transport,
            store_path,
            signing: None,
            clock,
            intake_override: None,
            file_extra_walks: false,
        }
    }
}

/// Where a job stands, for a face that reports progress (the MCP server's notifications).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// About to send node n (0, 1 or 3) of the walk.
    Node(u8),
    Signing,
    /// About to commit the record (and its outbox row): from here on the job is not abandoned
    /// half-way, the commit is one transaction.
    Storing,
    /// The record is committed; about to send it to the intake.
    Filing,
}

/// Told each [`Stage`] as the job reaches it.
pub type OnStage<'a> = &'a (dyn Fn(Stage) + Send + Sync);

/// One walk to run.
#[derive(Debug, Clone)]
pub struct WalkJob {
    pub request: WalkRequest,
    pub submit: bool,
    /// Bind the walk's A2A Task to this task-delegation ledger (spec §5.1, `--bind-task`): the
    /// observation is queued in the record's transaction and sent by
    /// [`Pipeline::send_task_binding`] (or the next [`Pipeline::send_due_task_bindings`]).
    pub bind_task: Option<String>,
}

/// A walk a stranger asked for (a reciprocal walk, witness-pool.md §6.3): every fetch goes
/// through `transport` (the witness's guarded client, never the configured targets' private
/// allowances), and the record is filed where `intake` decides from the walked card's
/// `params.witness_intake`.
#[derive(Clone)]
pub struct StrangerWalk {
    pub transport: Transport,
    pub intake: IntakeChooser,
}

/// Given the walked card's `witness_intake`, where the record is filed.
pub type IntakeChooser =
    Arc<dyn Fn(Option<String>) -> futures_util::future::BoxFuture<'static, String> + Send + Sync>;

/// Where a record's submission stands after a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmissionReport {
    pub state: SubmissionState,
    pub intake_url: String,
    pub answer_kind: Option<AnswerKind>,
    pub status: Option<i64>,
    pub reason_code: Option<String>,
    pub error: Option<String>,
    pub counted: Option<bool>,
    pub count_reason: Option<String>,
    pub next_attempt_at: Option<String>,
}

impl SubmissionReport {
    /// Where the submission stands, as every face shows it.
    pub fn summary(&self) -> Summary {
        Facts {
            state: self.state,
            answer: self.answer_kind,
            counted: self.counted,
            count_reason: self.count_reason.as_deref(),
            reason_code: self.reason_code.as_deref(),
            error: self.error.as_deref(),
            next_attempt_at: self.next_attempt_at.as_deref(),
        }
        .summary()
    }
}

impl From<&Submission> for SubmissionReport {
    fn from(s: &Submission) -> Self {
        SubmissionReport {
            state: s.state,
            intake_url: s.intake_url.clone(),
            answer_kind: s.last_answer,
            status: s.last_status,
            reason_code: s.reason_code.clone(),
            error: s.last_error.clone(),
            counted: s.counted,
            count_reason: s.count_reason.clone(),
            next_attempt_at: s.next_attempt_at.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct JobReport {
    pub outcome: WalkOutcome,
    pub record_id: i64,
    pub signed: Option<Signed>,
    pub submission: Option<SubmissionReport>,
    /// The task binding as committed with the record (skipped, or queued and not sent yet).
    pub task_binding: Option<TaskBinding>,
}

/// What [`Pipeline::send_due_task_bindings`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BindingDrain {
    /// Queued rows sent (answered or not).
    pub sent: u32,
    /// Rows a stopped process left `sending`, settled as `unknown` (not resent).
    pub settled_unknown: u32,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DrainReport {
    /// POSTs sent.
    pub attempted: u32,
    /// Lookups (`GET <intake>/<sha256>`) made for rows whose earlier answer was lost.
    pub looked_up: u32,
    pub filed: u32,
    pub deferred: u32,
    pub refused: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PipelineStatus {
    pub outbox_depth: u64,
    /// (intake, lane, records filed today).
    pub lanes_used_today: Vec<(String, String, u32)>,
    /// (answer kind, count).
    pub submissions_by_answer: Vec<(String, u64)>,
    /// (where submissions stand, count): the outcome every face shows.
    pub submissions_by_outcome: Vec<(filing::Outcome, u64)>,
    /// Lookups (`GET <intake>/<sha256>`) by result: found, not_found, lookup_failed.
    pub lookups_by_result: Vec<(AnswerKind, u64)>,
}

/// The pipeline; cheap to clone.
#[derive(Clone)]
pub struct Pipeline {
    inner: Arc<Inner>,
}

struct Inner {
    transport: Transport,
    store: Arc<Mutex<Store>>,
    /// Every record goes through here: walks finishing together share one transaction.
    writer: GroupCommit<(Option<Submission>, Option<TaskBinding>)>,
    signing: Option<(SigningKey, Option<String>)>,
    clock: Arc<dyn Clock>,
    intake_override: Option<String>,
    file_extra_walks: bool,
    limits: Mutex<HashMap<String, Limits>>,
    trust: crate::card_signature::TrustStore,
    /// Outbox rows some task of this process is filing right now. A walk files its own row
    /// while the daemon's drain runs beside it; without this both could send the same row.
    in_flight: Mutex<HashSet<i64>>,
    /// What the composition root hooks onto the writes (alerts planned in the transaction of
    /// the record or filing attempt that caused them).
    hook: Option<Arc<dyn RecordHook>>,
}

/// What one [`Pipeline::attempt`] did with its row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Filing {
    /// Sent to the intake; its answer is recorded.
    Sent,
    /// Not sent: our own count says the lane is full today.
    DeferredLocally,
    /// Not touched: another task of this process is filing it.
    AlreadyInFlight,
    /// Not touched: the row is no longer due (settled, or waiting for its retry time) by the
    /// time it was claimed.
    NotDue,
    /// A row left `sending` (a stopped process, a lost answer): the intake already had the
    /// record, so it was recorded as filed without a second POST.
    FoundAtIntake,
    /// A row left `sending`: the lookup had no usable answer either, so it stays `sending`
    /// and is asked again after a backoff (never sent blind).
    LookupFailed,
}

/// Holds a row in [`Inner::in_flight`] until dropped.
struct InFlightClaim<'a> {
    set: &'a Mutex<HashSet<i64>>,
    id: i64,
}

impl<'a> InFlightClaim<'a> {
    fn take(set: &'a Mutex<HashSet<i64>>, id: i64) -> Option<Self> {
        let fresh = set.lock().unwrap_or_else(|p| p.into_inner()).insert(id);
        fresh.then_some(InFlightClaim { set, id })
    }
}

impl Drop for InFlightClaim<'_> {
    fn drop(&mut self) {
        self.set
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id);
    }
}

impl Pipeline {
    pub fn new(cfg: PipelineConfig) -> Result<Pipeline, PipelineError> {
        let store = Arc::new(Mutex::new(Store::open(&cfg.store_path)?));
        let writer = GroupCommit::start(store.clone())
            .map_err(|e| PipelineError::Join(format!("cannot start the store's writer: {e}")))?;
        Ok(Pipeline {
            inner: Arc::new(Inner {
                transport: cfg.transport,
                store,
                writer,
                signing: cfg.signing,
                clock: cfg.clock,
                intake_override: cfg.intake_override,
                file_extra_walks: cfg.file_extra_walks,
                limits: Mutex::new(HashMap::new()),
                in_flight: Mutex::new(HashSet::new()),
                trust: crate::card_signature::TrustStore::default(),
                hook: None,
            }),
        })
    }

    /// Use these pinned card-signature keys and revocations (one store: its JWKS cache is
    /// shared by every walk).
    pub fn with_trust(self, trust: crate::card_signature::TrustStore) -> Pipeline {
        let inner = Arc::try_unwrap(self.inner)
            .unwrap_or_else(|_| panic!("with_trust before cloning the pipeline"));
        Pipeline {
            inner: Arc::new(Inner { trust, ..inner }),
        }
    }

    /// Tell `hook` of the daemon's walks (`run_target_job`) and of full lanes, in the
    /// transactions that store them.
    pub fn with_hook(self, hook: Arc<dyn RecordHook>) -> Pipeline {
        let inner = Arc::try_unwrap(self.inner)
            .unwrap_or_else(|_| panic!("with_hook before cloning the pipeline"));
        Pipeline {
            inner: Arc::new(Inner {
                hook: Some(hook),
                ..inner
            }),
        }
    }

    /// The hook this pipeline tells of its writes, if any.
    pub fn hook(&self) -> Option<Arc<dyn RecordHook>> {
        self.inner.hook.clone()
    }

    /// Whether records are signed (and with which public key, standard base64).
    pub fn public_key_b64(&self) -> Option<String> {
        self.inner
            .signing
            .as_ref()
            .map(|(k, _)| crate::witness::keys::public_key_b64(k))
    }

    /// The card-signature trust store every walk of this pipeline uses.
    pub fn trust(&self) -> &crate::card_signature::TrustStore {
        &self.inner.trust
    }

    /// Move the store's write-ahead log into its main file ([`Store::checkpoint`]): called by the
    /// faces that end after their walks (demo, walk, reveal, outbox), so the store they leave is
    /// whole in one file.
    pub async fn checkpoint(&self) -> Result<(), PipelineError> {
        self.with_store(|s| s.checkpoint()).await
    }

    /// Run a store operation off the async threads (SQLite with synchronous=FULL fsyncs).
    async fn with_store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, PipelineError> {
        Ok(crate::store::shared::blocking(&self.inner.store, f).await?)
    }

    fn now(&self) -> String {
        rfc3339_seconds(self.inner.clock.now())
    }

    fn today(&self) -> String {
        lanes::utc_day(self.inner.clock.now())
    }

    /// Send a queued task binding once (spec §5.1) and keep the ledger's answer; the row as it
    /// stands afterwards. A row that is not queued (settled, or taken by another task or
    /// process) is returned untouched. Never fails because the ledger did: a refused
    /// destination or a transport error is stored on the row (`failed`, not resent).
    pub async fn send_task_binding(&self, id: i64) -> Result<TaskBinding, PipelineError> {
        use crate::filing::bind::BindState;
        use crate::witness::task_ledger::{self, Sent};
        let row = self
            .with_store(move |s| task_bindings::get(s.connection(), id))
            .await?;
        if row.state != BindState::Queued {
            return Ok(row);
        }
        // Refused by the destination rules: nothing can have left, say so.
        if let Err(why) = self
            .inner
            .transport
            .check_destination(&row.ledger_url)
            .await
        {
            let (now, why) = (self.now(), format!("not sent: {why}"));
            return self
                .with_store(move |s| {
                    task_bindings::not_sent(s.connection(), id, &now, &why)?;
                    task_bindings::get(s.connection(), id)
                })
                .await;
        }
        let now = self.now();
        let claimed = self
            .with_store(move |s| task_bindings::claim(s.connection(), id, &now))
            .await?;
        if !claimed {
            return self
                .with_store(move |s| task_bindings::get(s.connection(), id))
                .await;
        }
        let body = row.body.clone().unwrap_or_default();
        let sent = task_ledger::post(&self.inner.transport, &row.ledger_url, &body).await;
        let now = self.now();
        self.with_store(move |s| {
            match &sent {
                Sent::Answered { status, answer } => {
                    task_bindings::answered(s.connection(), id, &now, *status, answer)?
                }
                Sent::NoAnswer(error) => task_bindings::failed(s.connection(), id, &now, error)?,
            }
            task_bindings::get(s.connection(), id)
        })
        .await
    }

    /// Settle the bindings a stopped process left `sending` (as `unknown`, never resent), then
    /// send every queued one: what a drain does, after a kill between queueing and sending.
    pub async fn send_due_task_bindings(&self) -> Result<BindingDrain, PipelineError> {
        let cutoff = rfc3339_seconds(
            self.inner.clock.now()
                - chrono::Duration::from_std(crate::filing::bind::INTERRUPTED_AFTER)
                    .expect("a few minutes"),
        );
        let (settled, queued) = self
            .with_store(move |s| {
                let settled = task_bindings::settle_interrupted(s.connection(), &cutoff)?;
                Ok((settled, task_bindings::queued(s.connection())?))
            })
            .await?;
        let mut report = BindingDrain {
            settled_unknown: settled as u32,
            ..BindingDrain::default()
        };
        for id in queued {
            let after = self.send_task_binding(id).await?;
            if after.sent_at.is_some() {
                report.sent += 1;
            }
        }
        Ok(report)
    }

    /// A record's task binding, if its walk asked for one.
    pub async fn task_binding_of(
        &self,
        record_id: i64,
    ) -> Result<Option<TaskBinding>, PipelineError> {
        self.with_store(move |s| task_bindings::for_record(s.connection(), record_id))
            .await
    }

    /// File the full record kept by a commitment walk (reveal, §4.6).
    pub async fn reveal(
        &self,
        sha_prefix: &str,
        submit: bool,
        witness_name: &str,
    ) -> Result<JobReport, PipelineError> {
        let prefix = sha_prefix.to_string();
        let stored = self.with_store(move |s| s.get_by_prefix(&prefix)).await?;
        let kept = stored
            .kept_full
            .clone()
            .ok_or_else(|| PipelineError::NothingToReveal(stored.row.sha256.clone()))?;
        let full: serde_json::Value = crate::json::parse_lenient(&kept.canonical)
            .map_err(|e| PipelineError::KeptNotJson(e.to_string()))?;
        let intake = self.inner.intake_override.clone().or_else(|| {
            full["conduct_ext"]["witness_intake"]
                .as_str()
                .map(str::to_string)
        });
        let outcome = WalkOutcome {
            sha256: crate::digest::sha256_hex(&kept.canonical),
            canonical: kept.canonical.clone(),
            kept: None,
            verdict: crate::walk::assertions::Verdict {
                ok: full["verdict"]["ok"].as_bool().unwrap_or(false),
                n_pass: full["verdict"]["n_pass"].as_u64().unwrap_or(0) as u32,
                n_total: full["verdict"]["n_total"].as_u64().unwrap_or(0) as u32,
            },
            assertions: Vec::new(),
            nodes: Vec::new(),
            target: full["conduct_ext"]["target"].as_str().map(str::to_string),
            card: None,
            witness_intake: intake.clone(),
            card_verification: None,
            terms: None,
            reciprocal: None,
        };
        self.store_and_file(outcome, intake, submit, witness_name)
            .await
    }

    /// Outbox depth, lanes used today, submissions by answer.
    pub fn status(&self) -> Result<PipelineStatus, PipelineError> {
        let store = self.inner.store.lock().unwrap_or_else(|p| p.into_inner());
        self.status_on(store.connection())
    }

    /// The same figures read through `conn` (a scrape's read-only connection: it never waits
    /// for the pipeline's own connection, which walks hold during a wave; issue 27).
    pub fn status_on(&self, conn: &rusqlite::Connection) -> Result<PipelineStatus, PipelineError> {
        Ok(PipelineStatus {
            outbox_depth: outbox::depth(conn)?,
            lanes_used_today: outbox::lanes_used(conn, &self.today())?,
            submissions_by_answer: outbox::by_answer(conn)?,
            submissions_by_outcome: outbox::by_outcome(conn)?,
            lookups_by_result: crate::store::summary::lookups_by_result(conn)?,
        })
    }

    /// The limits each intake stated (`GET /witness`) during this run, by intake URL.
    pub fn stated_limits(&self) -> Vec<(String, Limits)> {
        let mut v: Vec<(String, Limits)> = self
            .inner
            .limits
            .lock()
            .expect("limits lock")
            .iter()
            .map(|(k, l)| (k.clone(), *l))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// The submissions of a stored record.
    pub async fn submissions_of(&self, record_id: i64) -> Result<Vec<Submission>, PipelineError> {
        self.with_store(move |s| outbox::for_record(s.connection(), record_id))
            .await
    }
}

/// What is committed in a record's transaction beside the record and its outbox row.
#[derive(Default)]
struct WithRecord {
    /// The configured target whose alerts the walk steps (daemon walks), and its origin.
    alert_target: Option<(String, String)>,
    /// The walk's task binding (spec §5.1), when asked.
    binding: Option<NewBinding>,
}

struct Plan {
    intake_url: String,
    lane: Lane,
    identity: String,
    endpoint: String,
    state: SubmissionState,
    note: Option<String>,
}

impl Plan {
    /// The intake counts one record per identity × endpoint × UTC day: when this witness
    /// already planned or filed one today, keep this one local. Run inside the insert's
    /// transaction, so two walks of the same endpoint cannot both take the place.
    fn keep_local_if_planned_today(
        &mut self,
        conn: &rusqlite::Connection,
        day: &str,
    ) -> Result<(), StoreError> {
        if self.state == SubmissionState::Queued
            && outbox::already_planned_today(
                conn,
                &self.intake_url,
                &self.identity,
                &self.endpoint,
                day,
            )?
        {
            self.state = SubmissionState::KeptLocal;
            self.note = Some("kept local: this witness already filed a record for this endpoint today (only the first is counted)".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::net::{NetPolicy, TransportConfig};
    use crate::walk::{Mode, Privacy, RequestProfile, Wire};
    use crate::wire::Witness;

    const NOW: &str = "2026-11-30T12:00:00Z";
    /// Refused by the policy before any connection: a transport error, status 0.
    const NOWHERE: &str = "https://127.0.0.1:9";

    struct World {
        _dir: tempfile::TempDir,
        clock: Arc<ManualClock>,
        pipeline: Pipeline,
    }

    fn world() -> World {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(NOW.parse().unwrap()));
        let transport =
            Transport::new(TransportConfig::new(NetPolicy::new(false))).expect("transport");
        let pipeline = Pipeline::new(PipelineConfig {
            transport,
            store_path: dir.path().join("walker.db"),
            signing: None,
            clock: clock.clone(),
            intake_override: Some(format!("{NOWHERE}/witness")),
            file_extra_walks: false,
        })
        .unwrap();
        World {
            _dir: dir,
            clock,
            pipeline,
        }
    }

    /// [`world`] whose pipeline plans alerts (one webhook channel, nothing ever sent in a test).
    fn alerting_world() -> World {
        let mut w = world();
        std::fs::write(
            w._dir.path().join("hook.secret"),
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        )
        .unwrap();
        let section: crate::alerts::config::AlertsSection = toml::from_str(
            "[[channel]]\nname = \"hook\"\nkind = \"webhook\"\nurl = \"https://hooks.example/x\"\nsecret_file = \"hook.secret\"\n",
        )
        .unwrap();
        let cfg = crate::alerts::config::validate(&section, w._dir.path(), &[]).unwrap();
        w.pipeline = w
            .pipeline
            .with_hook(Arc::new(crate::alerts::hook::AlertsHook::new(Arc::new(
                cfg,
            ))));
        w
    }

    /// The alert outbox's rows as (kind, alert id).
    async fn alerts_planned(w: &World) -> Vec<(String, String)> {
        w.pipeline
            .with_store(|s| {
                let mut stmt = s
                    .connection()
                    .prepare("SELECT kind, alert_id FROM alert_outbox ORDER BY id")?;
                let rows = stmt
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await
            .unwrap()
    }

    fn job(submit: bool) -> WalkJob {
        WalkJob {
            request: WalkRequest {
                origin: NOWHERE.into(),
                endpoint: None,
                mode: Mode::A2a,
                wire: Wire::V1_0,
                witness: Witness {
                    name: "unit".into(),
                    vantage: "nowhere".into(),
                    key_url: None,
                },
                vantage_limitation: None,
                contract_sha256: None,
                privacy: Privacy::Full,
                profile: RequestProfile::Spec,
                caller_card: None,
            },
            submit,
            bind_task: None,
        }
    }

    /// A stored record (walked at the clock's time, so each is distinct); its id.
    async fn record(w: &World) -> i64 {
        w.clock.advance(chrono::Duration::seconds(1));
        w.pipeline.run_job(&job(false)).await.unwrap().record_id
    }

    /// An outbox row for `record_id` at `intake`, as the pipeline would plan it.
    async fn row(w: &World, record_id: i64, intake: &str, state: SubmissionState) -> Submission {
        let (intake, now) = (intake.to_string(), rfc3339_seconds(w.clock.now()));
        w.pipeline
            .with_store(move |s| {
                outbox::insert(
                    s.connection(),
                    &NewSubmission {
                        record_id,
                        intake_url: &intake,
                        lane: "address",
                        identity: "name:unit",
                        endpoint: NOWHERE,
                        state,
                        next_attempt_at: (state == SubmissionState::Queued).then_some(now.as_str()),
                        last_error: None,
                        now: &now,
                    },
                )
            })
            .await
            .unwrap()
    }

    /// A fresh record's row, queued for an intake that never answers; its id.
    async fn queued_unanswered(w: &World) -> i64 {
        let id = record(w).await;
        let intake = format!("{NOWHERE}/witness");
        row(w, id, &intake, SubmissionState::Queued).await.id
    }

    async fn attempts_logged(w: &World, id: i64) -> Vec<(String, u16)> {
        w.pipeline
            .with_store(move |s| {
                let mut stmt = s.connection().prepare(
                    "SELECT answer, status FROM submission_attempts WHERE submission_id = ?1 ORDER BY id",
                )?;
                let rows = stmt
                    .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_walk_with_transport_errors_and_no_intake_is_kept_as_host_offline() {
        let w = world();
        let report = w.pipeline.run_job(&job(true)).await.unwrap();
        let sub = report.submission.expect("planned");
        assert_eq!(sub.state, SubmissionState::HostOffline);
        assert_eq!(sub.answer_kind, None, "nothing was sent");
        assert_eq!(sub.summary().outcome, filing::Outcome::HostOffline);
        // Settled: a drain leaves it alone.
        assert_eq!(
            w.pipeline.drain_outbox().await.unwrap(),
            DrainReport::default()
        );
    }

    #[tokio::test]
    async fn a_row_not_due_or_settled_is_left_as_it_is() {
        let w = world();
        let id = record(&w).await;
        let queued = row(&w, id, &format!("{NOWHERE}/a"), SubmissionState::Queued).await;
        let later = rfc3339_seconds(w.clock.now() + chrono::Duration::minutes(5));
        let sid = queued.id;
        w.pipeline
            .with_store(move |s| {
                Ok(s.connection().execute(
                    "UPDATE submissions SET next_attempt_at = ?2 WHERE id = ?1",
                    rusqlite::params![sid, later],
                )?)
            })
            .await
            .unwrap();
        let before = w.pipeline.submissions_of(id).await.unwrap();
        let (after, filing) = w.pipeline.attempt(sid).await.unwrap();
        assert_eq!(filing, Filing::NotDue);
        assert_eq!(vec![after], before, "untouched");
        for state in [SubmissionState::Filed, SubmissionState::KeptLocal] {
            let settled = row(&w, id, &format!("{NOWHERE}/{state}"), state).await;
            let (after, filing) = w.pipeline.attempt(settled.id).await.unwrap();
            assert_eq!(
                (filing, after.state, after.attempts),
                (Filing::NotDue, state, 0)
            );
        }
        assert!(attempts_logged(&w, sid).await.is_empty());
    }

    #[tokio::test]
    async fn a_full_lane_defers_to_the_next_utc_midnight_without_sending() {
        let w = alerting_world();
        let intake = &format!("{NOWHERE}/full");
        // Five records accepted today in the address lane: its cap (spec constant 5).
        for _ in 0..5 {
            let id = record(&w).await;
            let sid = row(&w, id, intake, SubmissionState::Queued).await.id;
            let now = rfc3339_seconds(w.clock.now());
            w.pipeline
                .with_store(move |s| {
                    outbox::record_attempt(
                        s.connection(),
                        sid,
                        &now,
                        &AttemptResult {
                            state: SubmissionState::Filed,
                            answer: AnswerKind::Accepted,
                            status: 201,
                            body: "{}",
                            error: None,
                            reason_code: None,
                            counted: Some(true),
                            count_reason: None,
                            filed_day: Some("2026-11-30"),
                            next_attempt_at: None,
                        },
                    )
                })
                .await
                .unwrap();
        }
        // record() walks a second later: the last second of the day.
        w.clock.set("2026-11-30T23:59:58Z".parse().unwrap());
        let id = record(&w).await;
        let sid = row(&w, id, intake, SubmissionState::Queued).await.id;
        let (after, filing) = w.pipeline.attempt(sid).await.unwrap();
        assert_eq!(filing, Filing::DeferredLocally);
        assert_eq!(after.state, SubmissionState::Queued);
        assert_eq!(after.last_answer, Some(AnswerKind::LaneFull));
        assert_eq!(after.attempts, 0, "never marked sending");
        assert_eq!(
            after.next_attempt_at.as_deref(),
            Some("2026-12-01T00:00:00Z")
        );
        assert_eq!(
            attempts_logged(&w, sid).await,
            [(AnswerKind::LaneFull.to_string(), 0)]
        );
        assert_eq!(after.summary().outcome, filing::Outcome::LaneFull);
        // /metrics counts by the same summary.
        let by_outcome = w.pipeline.status().unwrap().submissions_by_outcome;
        assert_eq!(
            by_outcome.len(),
            filing::Outcome::ALL.len(),
            "every outcome listed"
        );
        let n = |o| by_outcome.iter().find(|(k, _)| *k == o).unwrap().1;
        assert_eq!(
            (
                n(filing::Outcome::FiledCounted),
                n(filing::Outcome::LaneFull)
            ),
            (5, 1)
        );
        assert_eq!(by_outcome.iter().map(|(_, n)| n).sum::<u64>(), 6);
        // The operator is told, in the deferral's transaction: one alert for the lane and day,
        // however many records it holds back.
        let planned = alerts_planned(&w).await;
        assert_eq!(planned.len(), 1, "{planned:?}");
        assert_eq!(planned[0].0, "filing.lane_exhausted");
        // Another record held back the same UTC day (record() walks a second after the clock).
        w.clock.set("2026-11-30T23:59:57Z".parse().unwrap());
        let id = record(&w).await;
        let sid = row(&w, id, intake, SubmissionState::Queued).await.id;
        assert_eq!(
            w.pipeline.attempt(sid).await.unwrap().1,
            Filing::DeferredLocally
        );
        assert_eq!(
            alerts_planned(&w).await,
            planned,
            "the same lane and day: no second alert"
        );
    }

    #[tokio::test]
    async fn a_send_that_fails_is_classified_and_queued_with_its_backoff() {
        let w = world();
        let sid = queued_unanswered(&w).await;
        let sent_at = w.clock.now();
        let (after, filing) = w.pipeline.attempt(sid).await.unwrap();
        assert_eq!(filing, Filing::Sent);
        assert_eq!(
            (
                after.state,
                after.last_answer,
                after.attempts,
                after.last_status
            ),
            (SubmissionState::Queued, Some(AnswerKind::Retry), 1, Some(0))
        );
        // First attempt: 30 s ± 20 %.
        let next: chrono::DateTime<chrono::Utc> =
            after.next_attempt_at.as_deref().unwrap().parse().unwrap();
        let wait = (next - sent_at).num_seconds();
        assert!((24..=36).contains(&wait), "{wait}");
        assert_eq!(after.summary().outcome, filing::Outcome::QueuedForRetry);

        // Left `sending` by a stopped process: looked up first. The lookup gets no answer
        // either, so nothing is sent: the row stays `sending`, asked again after a backoff
        // that counts the attempts and lookups so far (2 + 0 + 1: 120 s ± 20 %).
        let sid2 = sid;
        w.pipeline
            .with_store(move |s| outbox::mark_sending(s.connection(), sid2, NOW))
            .await
            .unwrap();
        let looked_at = w.clock.now();
        let (after, filing) = w.pipeline.attempt(sid).await.unwrap();
        assert_eq!(filing, Filing::LookupFailed);
        assert_eq!(
            (after.state, after.last_answer, after.attempts),
            (SubmissionState::Sending, Some(AnswerKind::LookupFailed), 2)
        );
        assert!(
            after.last_error.as_deref().unwrap().starts_with("lookup: "),
            "{after:?}"
        );
        let next: chrono::DateTime<chrono::Utc> =
            after.next_attempt_at.as_deref().unwrap().parse().unwrap();
        assert!((96..=144).contains(&(next - looked_at).num_seconds()));
        assert_eq!(after.summary().outcome, filing::Outcome::AwaitingLookup);
        assert_eq!(
            attempts_logged(&w, sid).await,
            [("retry".to_string(), 0), ("lookup_failed".to_string(), 0)]
        );
        // Not due before its time: a drain leaves it alone.
        assert_eq!(
            w.pipeline.drain_outbox().await.unwrap(),
            DrainReport::default()
        );
        let lookups = w
            .pipeline
            .with_store(move |s| outbox::lookups(s.connection(), sid))
            .await
            .unwrap();
        assert_eq!(lookups, 1);
        // Due: looked up again (and again no answer), never sent blind.
        w.clock.set(next);
        let report = w.pipeline.drain_outbox().await.unwrap();
        assert_eq!(
            (report.attempted, report.looked_up, report.deferred),
            (0, 1, 1)
        );
        assert_eq!(attempts_logged(&w, sid).await.len(), 3);
    }

    /// Every face that files (the daemon's fires and drains, `walk --submit`, `reveal`, `demo`,
    /// `outbox drain`, the MCP walk tool) reaches the intake through [`Pipeline::attempt`]: the
    /// crate's only caller of the intake client's POST and lookup, and the only place that
    /// builds a submission body. A second path would skip the rule that an unknown outcome is
    /// looked up, never resent blind (issue 34).
    #[test]
    fn the_intake_client_is_called_from_one_place() {
        fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    sources(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        sources(&root.join("src"), &mut files);
        for needle in [
            concat!("intake::", "submit("),
            concat!("intake::", "lookup("),
            concat!("IntakeSubmission", " {"),
        ] {
            let mut callers: Vec<String> = files
                .iter()
                .filter(|f| std::fs::read_to_string(f).unwrap().contains(needle))
                .map(|f| f.strip_prefix(root).unwrap().display().to_string())
                // The definitions, and the emulated intake's own reading of a body.
                .filter(|f| f != "src/witness/intake.rs" && f != "src/wire.rs")
                .filter(|f| !f.starts_with("src/intake_emulator/"))
                .collect();
            callers.sort();
            assert_eq!(callers, ["src/pipeline/file.rs"], "{needle}");
        }
    }

    #[tokio::test]
    async fn a_row_another_task_is_filing_is_not_touched() {
        let w = world();
        let sid = queued_unanswered(&w).await;
        let claim = InFlightClaim::take(&w.pipeline.inner.in_flight, sid).unwrap();
        let (after, filing) = w.pipeline.attempt(sid).await.unwrap();
        assert_eq!((filing, after.attempts), (Filing::AlreadyInFlight, 0));
        drop(claim);
        assert_eq!(w.pipeline.attempt(sid).await.unwrap().1, Filing::Sent);
    }
}
