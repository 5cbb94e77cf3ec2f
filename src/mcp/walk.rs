//! `witness_walk`: check the input and the operator's rules, read the origin's consent, take a
//! place under the daily cap, then walk → sign → store → file through the shared pipeline,
//! with progress notifications and cancellation up to the store's commit.

use super::tools::{self, Args, quote};
use super::{State, answer_text};
use crate::consent::{self, Consent};
use crate::digest::sha256_hex;
use crate::filing::lanes::{self, Lane, Limits};
use crate::pipeline::{Stage, WalkJob};
use crate::store::outbox::Submission;
use crate::store::{Store, StoreError};
use crate::walk::{Mode, Privacy, RequestProfile, WalkOutcome, WalkRequest, Wire};
use crate::wire::Witness;
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, JsonObject, ProgressNotificationParam};
use rmcp::service::RequestContext;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The default daily cap: what the witness's lane at the intake takes in a UTC day, so a model
/// cannot start more walks than could ever be filed.
pub fn default_daily_cap(key_url: Option<&str>, signed: bool) -> u32 {
    Limits::default().lane_cap(&Lane::of(key_url, signed))
}

/// Who the record names, and whether the model chose it.
struct Identity {
    witness: Witness,
    from_model: bool,
    note: Option<String>,
}

fn identity(
    state: &State,
    name: Option<String>,
    vantage: Option<String>,
) -> Result<Identity, String> {
    let configured = state.config.witness.clone();
    if name.is_none() && vantage.is_none() {
        return Ok(Identity {
            witness: configured,
            from_model: false,
            note: None,
        });
    }
    if !state.config.file.mcp.allow_model_identity {
        return Ok(Identity {
            witness: configured,
            from_model: false,
            note: Some(
                "the operator's config fixes the witness identity (mcp.allow_model_identity = false): the witness_name/vantage given were not used".into(),
            ),
        });
    }
    let pick = |given: Option<String>, configured: &str, what: &str| match given {
        Some(s) if s.trim().is_empty() => Err(format!(
            "{what} must not be empty (the intake refuses a record without one)"
        )),
        Some(s) => Ok(s),
        None => Ok(configured.to_string()),
    };
    Ok(Identity {
        witness: Witness {
            name: pick(name, &configured.name, "witness_name")?,
            vantage: pick(vantage, &configured.vantage, "vantage")?,
            key_url: configured.key_url,
        },
        from_model: true,
        note: None,
    })
}

/// What the model asked for, checked: the request to walk and what to do with its record.
struct Asked {
    request: WalkRequest,
    who: Identity,
    submit_asked: bool,
    bind_asked: bool,
}

/// Read the tool's arguments into a walk request, checked once by [`WalkRequest::problems`].
fn asked(state: &State, args: Option<JsonObject>) -> Result<Asked, String> {
    let a = Args::new(args, tools::WITNESS_WALK)?;
    let origin = a.required("origin")?;
    let endpoint = a.string("endpoint")?;
    // URLs first: a bad origin is named before any other argument.
    if let Some(problem) = crate::walk::check::urls(&origin, endpoint.as_deref())
        .into_iter()
        .next()
    {
        return Err(problem_text(problem, &origin, endpoint.as_deref()));
    }
    let mode = Mode::parse(a.choice("mode", &["a2a", "mcp"], "a2a")?).expect("listed");
    let wire = Wire::parse(a.choice("wire", &["1.0", "0.3"], "1.0")?);
    let privacy =
        Privacy::parse(a.choice("privacy", &["full", "hash-only", "commitment"], "full")?)
            .expect("listed");
    let profile =
        RequestProfile::parse(a.choice("request_profile", &RequestProfile::NAMES, "spec")?)
            .expect("listed");
    let submit_asked = a.boolean("submit", true)?;
    let bind_asked = a.boolean("bind_task", false)?;
    let who = identity(state, a.string("witness_name")?, a.string("vantage")?)?;
    let request = WalkRequest {
        origin,
        endpoint,
        mode,
        wire,
        witness: who.witness.clone(),
        vantage_limitation: state.config.vantage_limitation.clone(),
        contract_sha256: None,
        privacy,
        profile,
        // An MCP walk is on demand: it never asks to be walked back (§6.4).
        caller_card: None,
    };
    if let Some(problem) = request.problems().into_iter().next() {
        return Err(problem_text(
            problem,
            &request.origin,
            request.endpoint.as_deref(),
        ));
    }
    Ok(Asked {
        request,
        who,
        submit_asked,
        bind_asked,
    })
}

/// A request problem as the tool's error, naming the argument.
fn problem_text(
    problem: crate::walk::check::Problem,
    origin: &str,
    endpoint: Option<&str>,
) -> String {
    use crate::walk::check::{Field, Problem};
    let arg = |field| match field {
        Field::Origin => "origin",
        Field::Endpoint => "endpoint",
        Field::WitnessName => "witness_name",
        Field::Vantage => "vantage",
    };
    let field = problem.field();
    match problem {
        // The URL is quoted beside the argument's name: a model sees what it sent.
        Problem::NotHttps { .. } => {
            let url = if field == Field::Endpoint {
                endpoint.unwrap_or("")
            } else {
                origin
            };
            problem.text(&format!("{} {}", arg(field), quote(url)))
        }
        _ => problem.text(arg(field)),
    }
}

/// Private addresses only where the operator's config names the host (never a model's pick);
/// and an origin that declines listing is not walked.
async fn may_walk(state: &State, request: &WalkRequest) -> Result<(), String> {
    for (name, url) in [
        ("origin", Some(&request.origin)),
        ("endpoint", request.endpoint.as_ref()),
    ] {
        if let Some(url) = url {
            state
                .transport
                .check_destination(url)
                .await
                .map_err(|why| format!("{name} {}: {why}", quote(url)))?;
        }
    }
    if let Consent::Declined { sha256 } = consent::fetch(&state.transport, &request.base()).await {
        return Err(format!(
            "not walked: {} says \"listing\": \"decline\" (sha256 {sha256}); the origin asks not to be walked, and conduct-walker honours that",
            consent::consent_url(&request.base())
        ));
    }
    Ok(())
}

/// A walk counted under its daily cap: the place taken, and the report.
struct Counted {
    report: crate::pipeline::JobReport,
    cap: Cap,
    used: u32,
    now: chrono::DateTime<chrono::Utc>,
}

/// Take a place under the cap, run the job, and note in `mcp_walks` how it ended.
async fn walk_counted(
    state: &State,
    job: &WalkJob,
    ctx: &RequestContext<RoleServer>,
) -> Result<Counted, String> {
    let now = state.clock.now();
    let ledger = Ledger {
        database: state.database.clone(),
        clock: state.clock.clone(),
    };
    let cap = if job.submit {
        Cap::filing(state.daily_cap)
    } else {
        Cap::store_only(state.store_only_cap)
    };
    let (walk_id, used) = ledger.begin(now, &job.request.origin, cap).await?;
    let report = match run_with_progress(state, job, ctx).await {
        Some(Ok(report)) => report,
        Some(Err(e)) => {
            ledger
                .finish(walk_id, "error", None, Some(e.to_string()))
                .await;
            return Err(format!("the walk could not be stored: {e}"));
        }
        None => {
            ledger
                .finish(
                    walk_id,
                    "cancelled",
                    None,
                    Some("cancelled by the client".into()),
                )
                .await;
            return Err(
                "cancelled by the client before the record was stored: nothing was stored or filed"
                    .into(),
            );
        }
    };
    ledger
        .finish(walk_id, "done", Some(report.outcome.sha256.clone()), None)
        .await;
    Ok(Counted {
        report,
        cap,
        used,
        now,
    })
}

pub(super) async fn witness_walk(
    state: &State,
    args: Option<JsonObject>,
    ctx: RequestContext<RoleServer>,
) -> Result<CallToolResult, String> {
    let asked = asked(state, args)?;
    may_walk(state, &asked.request).await?;
    let allow_submit = state.config.file.mcp.allow_submit;
    // Binding publishes like filing does: only where the operator lets a model file.
    let job = WalkJob {
        request: asked.request.clone(),
        submit: asked.submit_asked && allow_submit,
        bind_task: (asked.bind_asked && allow_submit).then(|| state.config.task_ledger.clone()),
    };
    let counted = walk_counted(state, &job, &ctx).await?;
    let filed = filed(state, &asked, &counted.report).await?;
    let value = walk_value(state, &asked, &counted, filed);
    let summary = walk_summary(state, &counted.report.outcome, &value);
    let details = walk_text(&value, counted.report.record_id);
    Ok(answer_text(vec![summary, details], value))
}

/// What became of the record beyond the store: the intake's answer (or why it was not
/// filed) and the task binding.
struct Filed {
    submission: Option<Value>,
    submit_note: Option<String>,
    task_binding: Option<Value>,
}

async fn filed(
    state: &State,
    asked: &Asked,
    report: &crate::pipeline::JobReport,
) -> Result<Filed, String> {
    let allow_submit = state.config.file.mcp.allow_submit;
    let submissions = state
        .pipeline
        .submissions_of(report.record_id)
        .await
        .map_err(|e| format!("the record is stored, but its filing state cannot be read: {e}"))?;
    let submission = submissions.last();
    let submit_note = if asked.submit_asked && !allow_submit {
        Some("not filed: the operator's config does not let a model file records (mcp.allow_submit = false); the record is stored".to_string())
    } else if !asked.submit_asked {
        Some("not filed: submit was false; the record is stored".to_string())
    } else if submission.is_none() {
        Some("not filed: the card names no params.witness_intake and the config names no witness.intake; the record is stored".to_string())
    } else {
        None
    };
    let task_binding = match report.task_binding.clone() {
        Some(b) if b.state == crate::filing::bind::BindState::Queued => Some(
            state
                .pipeline
                .send_task_binding(b.id)
                .await
                .unwrap_or(b)
                .to_json(),
        ),
        Some(b) => Some(b.to_json()),
        None if asked.bind_asked => Some(json!({
            "ledger_url": state.config.task_ledger,
            "state": "skipped",
            "summary": "not bound: the operator's config does not let a model file or bind (mcp.allow_submit = false)",
        })),
        None => None,
    };
    Ok(Filed {
        submission: submission.map(submission_json),
        submit_note,
        task_binding,
    })
}

/// The answer's one-line summary.
fn walk_summary(state: &State, outcome: &WalkOutcome, value: &Value) -> String {
    format!(
        "{} {}/{} sha256 {} stored in {}{}",
        outcome.verdict.outcome(),
        outcome.verdict.n_pass,
        outcome.verdict.n_total,
        outcome.sha256,
        state.database.display(),
        match (
            value["submission"]["summary"].as_str(),
            value["submit_note"].as_str()
        ) {
            (Some(s), _) => format!("; {s}"),
            (None, Some(note)) => format!("; {note}"),
            (None, None) => String::new(),
        }
    )
}

/// The answer's structured content.
fn walk_value(state: &State, asked: &Asked, counted: &Counted, filed: Filed) -> Value {
    let report = &counted.report;
    let outcome = &report.outcome;
    let record = outcome.record();
    let who = &asked.who;
    json!({
        "sha256": outcome.sha256,
        "verdict": {
            "ok": outcome.verdict.ok,
            "outcome": outcome.verdict.outcome(),
            "n_pass": outcome.verdict.n_pass,
            "n_total": outcome.verdict.n_total,
        },
        "assertions": outcome.assertions.iter().map(|a| json!({
            "name": a.name,
            "result": a.result,
            "claim": a.claim,
            "note": a.note,
        })).collect::<Vec<_>>(),
        "nodes": nodes_json(outcome),
        "card_signature": record.get("card_signature").cloned().unwrap_or(Value::Null),
        "card_verification": outcome.card_verification.clone().unwrap_or(Value::Null),
        "terms": outcome.terms.clone().unwrap_or(Value::Null),
        "record": record,
        "record_canonical": String::from_utf8_lossy(&outcome.canonical),
        "identity": {
            "witness_name": who.witness.name,
            "vantage": who.witness.vantage,
            "source": if who.from_model { "model" } else { "config" },
            "note": who.note,
        },
        "stored": {
            "database": state.database.display().to_string(),
            "record_id": report.record_id,
            "signed": state.signed,
        },
        "submission": filed.submission,
        "submit_note": filed.submit_note,
        "task_binding": filed.task_binding,
        // An on-demand walk never notifies (§7.2): anyone can cause one.
        "notify_status": Value::Null,
        "walks_today": {
            "used": counted.used,
            "cap": counted.cap.limit,
            "counted_as": counted.cap.name,
            "resets_at": crate::clock::walked_at(lanes::next_utc_midnight(counted.now)),
        },
    })
}

/// The longest note quoted per assertion in the text answer: the whole note is in
/// `structuredContent`.
const NOTE_CHARS: usize = 300;

/// What a model needs from a walk, in a few KB (the record itself is in `structuredContent`,
/// and `records_show` reads it again): each failed or not-applicable assertion with its note,
/// the identity used, where the record is, the filing answer, the cap.
fn walk_text(v: &Value, record_id: i64) -> String {
    let clip = |s: &str| -> String {
        if s.chars().count() <= NOTE_CHARS {
            s.to_string()
        } else {
            format!("{}…", s.chars().take(NOTE_CHARS).collect::<String>())
        }
    };
    let mut out = Vec::new();
    let assertions = v["assertions"].as_array().cloned().unwrap_or_default();
    let failed: Vec<&Value> = assertions
        .iter()
        .filter(|a| a["result"] != Value::Bool(true))
        .collect();
    if failed.is_empty() {
        out.push(format!("all {} assertions passed", assertions.len()));
    }
    for a in failed {
        let result = match &a["result"] {
            Value::Bool(false) => "FAIL",
            _ => "n/a",
        };
        // The note says why; the claim (what the assertion states) only when there is none.
        let name = a["name"].as_str().unwrap_or_default();
        let why = match a["note"].as_str() {
            Some(note) => note.to_string(),
            None => {
                let claim = a["claim"].as_str().unwrap_or_default();
                claim
                    .strip_prefix(&format!("{name}: "))
                    .unwrap_or(claim)
                    .to_string()
            }
        };
        let line = format!("{result} {name}: {}", clip(&why));
        out.push(line);
    }
    for n in v["nodes"].as_array().into_iter().flatten() {
        if let Some(e) = n["transport_error"].as_str() {
            out.push(format!(
                "n{} {} {}: {}",
                n["n"],
                n["method"].as_str().unwrap_or_default(),
                clip(n["url"].as_str().unwrap_or_default()),
                clip(e)
            ));
        }
    }
    let sha = v["sha256"].as_str().unwrap_or_default();
    let identity = &v["identity"];
    out.push(format!(
        "witness {:?} at {:?} (from the {})",
        identity["witness_name"].as_str().unwrap_or_default(),
        identity["vantage"].as_str().unwrap_or_default(),
        identity["source"].as_str().unwrap_or_default()
    ));
    if let Some(note) = identity["note"].as_str() {
        out.push(note.to_string());
    }
    out.push(format!(
        "record sha256 {sha}: row {record_id} of {} ({}); the whole record is in structuredContent, or call records_show with sha_prefix {:?}",
        v["stored"]["database"].as_str().unwrap_or_default(),
        if v["stored"]["signed"] == Value::Bool(true) { "signed" } else { "unsigned" },
        &sha[..sha.len().min(12)]
    ));
    match (
        v["submission"]["summary"].as_str(),
        v["submit_note"].as_str(),
    ) {
        (Some(s), _) => out.push(format!(
            "filing: {} ({})",
            s,
            v["submission"]["intake_url"].as_str().unwrap_or_default()
        )),
        (None, Some(note)) => out.push(note.to_string()),
        (None, None) => {}
    }
    if let Some(summary) = v["task_binding"]["summary"].as_str() {
        let b = &v["task_binding"];
        out.push(format!(
            "task binding ({}): {summary}{}",
            b["ledger_url"].as_str().unwrap_or_default(),
            b["evidence_id"]
                .as_str()
                .map(|e| format!("; evidence_id {e}"))
                .unwrap_or_default()
        ));
    }
    let w = &v["walks_today"];
    out.push(format!(
        "{} of {} {} walks today (UTC); the cap resets at {}",
        w["used"],
        w["cap"],
        if w["counted_as"] == "filing" {
            "filing"
        } else {
            "store-only"
        },
        w["resets_at"].as_str().unwrap_or_default()
    ));
    out.join("\n")
}

/// Which daily cap a walk counts against: filing walks share the lane's budget, store-only
/// walks (nothing reaches the intake) have their own, larger one.
#[derive(Debug, Clone, Copy)]
struct Cap {
    files: bool,
    limit: u32,
    name: &'static str,
}

impl Cap {
    fn filing(limit: u32) -> Cap {
        Cap {
            files: true,
            limit,
            name: "filing",
        }
    }

    fn store_only(limit: u32) -> Cap {
        Cap {
            files: false,
            limit,
            name: "store_only",
        }
    }

    /// The refusal: which cap, its setting, and when it resets.
    fn refusal(&self, used: u32, now: chrono::DateTime<chrono::Utc>) -> String {
        let resets = lanes::next_utc_midnight(now);
        let left = resets - now;
        let (what, key, other) = if self.files {
            (
                "walks that file with the intake",
                "mcp.daily_walk_cap, by default the witness's lane at the intake",
                "store-only walks (submit: false) have their own cap and may still run",
            )
        } else {
            (
                "store-only walks (submit: false)",
                "mcp.daily_store_only_cap",
                "walks that file have their own cap",
            )
        };
        format!(
            "not walked: the daily cap on {what} is reached ({used} of {} today, UTC; {key}). It resets at {} (in {} h {} min); {other}",
            self.limit,
            crate::clock::walked_at(resets),
            left.num_hours(),
            left.num_minutes() % 60
        )
    }
}

fn nodes_json(outcome: &WalkOutcome) -> Vec<Value> {
    outcome
        .nodes
        .iter()
        .map(|n| {
            let ex = &n.exchange;
            json!({
                "n": n.n,
                "method": ex.request.method,
                "url": ex.request.url,
                "status": ex.status,
                "body_sha256": sha256_hex(&ex.body),
                "transport_error": ex.transport_error,
            })
        })
        .collect()
}

/// The intake's answer, classified as a model should read it.
fn submission_json(s: &Submission) -> Value {
    let summary = s.summary();
    json!({
        "answer": summary.outcome,
        "state": s.state,
        "intake_url": s.intake_url,
        "http_status": s.last_status,
        "reason_code": s.reason_code,
        "error": s.last_error,
        "counted": s.counted,
        "count_reason": s.count_reason,
        "next_attempt_at": s.next_attempt_at,
        "summary": summary.text,
    })
}

/// How a job ended: `None` when the client cancelled it before the commit began.
type Walked = Option<Result<crate::pipeline::JobReport, crate::pipeline::PipelineError>>;

fn describe(stage: Stage) -> String {
    match stage {
        Stage::Node(0) => "n0: GET the agent card".into(),
        Stage::Node(1) => "n1: GET the agent card again".into(),
        Stage::Node(n) => format!("n{n}: POST the measured endpoint"),
        Stage::Signing => "signing the record".into(),
        Stage::Storing => "storing the record".into(),
        Stage::Filing => "filing the record with the intake".into(),
    }
}

/// Run the job; report each stage as an MCP progress notification when the client sent a
/// progress token; give up on cancellation until the record's commit begins. From then on the
/// job finishes (the commit is one transaction, and a record is never left half-filed), so a
/// cancelled walk leaves either nothing or a whole record.
async fn run_with_progress(
    state: &State,
    job: &WalkJob,
    ctx: &RequestContext<RoleServer>,
) -> Walked {
    let reached: Arc<Mutex<Option<Stage>>> = Arc::new(Mutex::new(None));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Stage>();
    // Notifications go out in order from one task; the answer waits for it to finish, so every
    // progress notification precedes the result.
    let forward = ctx.meta.get_progress_token().map(|token| {
        let peer = ctx.peer.clone();
        tokio::spawn(async move {
            let mut progress = 0.0;
            while let Some(stage) = rx.recv().await {
                progress += 1.0;
                let note = ProgressNotificationParam::new(token.clone(), progress)
                    .with_total(6.0)
                    .with_message(describe(stage));
                if let Err(e) = peer.notify_progress(note).await {
                    tracing::debug!("progress notification not sent: {e}");
                }
            }
        })
    });
    let seen = reached.clone();
    let on_stage = move |stage: Stage| {
        *seen.lock().unwrap_or_else(|p| p.into_inner()) = Some(stage);
        let _ = tx.send(stage);
    };
    let walked = {
        let fut = state.pipeline.run_job_with_stages(job, &on_stage);
        tokio::pin!(fut);
        tokio::select! {
            r = &mut fut => Some(r),
            _ = ctx.ct.cancelled() => {
                let at = *reached.lock().unwrap_or_else(|p| p.into_inner());
                if at >= Some(Stage::Storing) {
                    Some(fut.await)
                } else {
                    None
                }
            }
        }
    };
    drop(on_stage);
    if let Some(task) = forward {
        let _ = task.await;
    }
    walked
}

/// The `mcp_walks` table: the daily cap counts its rows, so it holds across restarts.
struct Ledger {
    database: PathBuf,
    clock: Arc<dyn crate::clock::Clock>,
}

impl Ledger {
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, String> {
        let path = self.database.clone();
        tokio::task::spawn_blocking(move || f(&Store::open(&path)?))
            .await
            .map_err(|e| format!("the store task failed: {e}"))?
            .map_err(|e| format!("the store: {e}"))
    }

    /// Take a place under the walk's cap (one transaction, so two calls cannot both take the
    /// last place): the new row's id and the walks of its kind started today including this one.
    async fn begin(
        &self,
        now: chrono::DateTime<chrono::Utc>,
        origin: &str,
        cap: Cap,
    ) -> Result<(i64, u32), String> {
        let day = lanes::utc_day(now);
        let started = crate::clock::walked_at(now);
        let origin = origin.to_string();
        let taken = self
            .blocking(move |store| {
                crate::store::mcp_walks::begin(
                    store.connection(),
                    &day,
                    &started,
                    &origin,
                    cap.files,
                    cap.limit,
                )
            })
            .await?;
        taken.map_err(|used| cap.refusal(used, now))
    }

    /// Note how a walk ended. Best effort: the walk's record (if any) is already stored.
    async fn finish(&self, id: i64, state: &str, sha256: Option<String>, detail: Option<String>) {
        let state = state.to_string();
        let now = crate::clock::walked_at(self.clock.now());
        let done = self
            .blocking(move |store| {
                crate::store::mcp_walks::finish(
                    store.connection(),
                    id,
                    &state,
                    &now,
                    sha256.as_deref(),
                    detail.as_deref(),
                )
            })
            .await;
        if let Err(e) = done {
            tracing::warn!("mcp_walks row {id} not updated: {e}");
        }
    }
}
