//! `conduct-walker walk` and `conduct-walker demo`.

use crate::cli::net::NetArgs;
use crate::clock::SystemClock;
use crate::net::{NetPolicy, Transport, TransportConfig};
use crate::pipeline::{Pipeline, SubmissionReport, WalkJob};
use crate::sandbox::{SandboxAgent, SandboxCa, scenarios};
use crate::walk::assertions::Assertion;
use crate::walk::{Mode, Privacy, RequestProfile, WalkOutcome, WalkRequest, Wire};
use crate::wire::Witness;
use anyhow::{Context, bail};
use clap::Args;
use serde_json::json;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Debug, Args)]
pub struct WalkArgs {
    /// The agent origin, e.g. https://agent.example (its card is at /.well-known/agent-card.json).
    #[arg(long)]
    pub origin: String,
    /// Walk this endpoint instead of the card's first measured endpoint.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// mcp (an MCP initialize) or a2a (an A2A message).
    #[arg(long, default_value = "mcp", value_parser = ["mcp", "a2a"])]
    pub mode: String,
    /// A2A wire version: 1.0 or 0.3.
    #[arg(long, default_value = "1.0", value_parser = ["1.0", "0.3"])]
    pub wire: String,
    #[command(flatten)]
    pub profile: ProfileArg,
    /// The witness name written into the record.
    #[arg(long)]
    pub witness_name: String,
    /// Where the walk is taken from (free text).
    #[arg(long)]
    pub vantage: String,
    /// What the vantage cannot see (free text, optional).
    #[arg(long)]
    pub vantage_limitation: Option<String>,
    /// Privacy of the filed record: full, hash-only or commitment.
    #[arg(long, default_value = "full", value_parser = ["full", "hash-only", "commitment"])]
    pub privacy: String,
    /// Where to write the canonical record (default walk_<sha12>.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub net: NetArgs,
    #[command(flatten)]
    pub witness: WitnessArgs,
    /// File the record with the intake (the card's params.witness_intake, or --intake).
    #[arg(long)]
    pub submit: bool,
    /// Print one JSON object (sha256, record, transport_errors) instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Walk even when the origin's /.well-known/mcp-conduct.json says "listing": "decline".
    #[arg(long)]
    pub ignore_consent: bool,
    /// a2a mode: also bind the A2A Task the agent returned to the task-delegation ledger
    /// (conduct-walk.md §5.1): an observation signed with --key and a fresh requester key,
    /// queued in the store with the record and sent once. The record does not change; a walk
    /// with no task, or without --key, says why it bound nothing.
    #[arg(long)]
    pub bind_task: bool,
    /// The task-delegation ledger --bind-task sends to (https).
    #[arg(long, value_name = "URL", default_value = crate::witness::task_bind::DEFAULT_TASK_LEDGER, requires = "bind_task")]
    pub task_ledger: String,
}

/// How n3 is asked in mcp mode (conduct-walk.md §2.6.1); shared by every command that walks.
#[derive(Debug, Clone, Args)]
pub struct ProfileArg {
    /// spec: MCP Streamable HTTP as the protocol says (Accept: application/json,
    /// text/event-stream; an SSE answer is read). reference: the reference walker's request,
    /// byte-identical records, but MCP servers that require SSE answer it 406. a2a mode is the
    /// same under both.
    #[arg(long = "request-profile", default_value = "spec", value_parser = RequestProfile::NAMES)]
    pub request_profile: String,
}

impl ProfileArg {
    pub fn profile(&self) -> RequestProfile {
        RequestProfile::parse(&self.request_profile).unwrap_or_default()
    }
}

/// Signing, storing and filing options shared by `walk` and `reveal`.
#[derive(Debug, Clone, Args)]
pub struct WitnessArgs {
    /// Record store (SQLite); default $STATE_DIRECTORY/walker.db. Records are committed here
    /// before anything is printed or sent.
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Ed25519 signing key (PKCS#8 PEM, mode 0600); default the systemd credential `signing-key`.
    #[arg(long)]
    pub key: Option<PathBuf>,
    /// The https URL serving this key's public half ({"public_key_ed25519_b64": ...}); written
    /// into the record as witness.key_url before signing.
    #[arg(long)]
    pub key_url: Option<String>,
    /// File with this intake instead of the card's params.witness_intake.
    #[arg(long)]
    pub intake: Option<String>,
    /// File every walk, not only the first per witness × endpoint × UTC day.
    #[arg(long)]
    pub file_extra_walks: bool,
}

impl WitnessArgs {
    /// The signing key and key_url, or None when not signing.
    pub fn signing(&self) -> anyhow::Result<Option<(ed25519_dalek::SigningKey, Option<String>)>> {
        use crate::witness::keys::{KeyError, load_signing_key, resolve_key_path, signing_pair};
        if let Some(url) = &self.key_url
            && let Err(why) = crate::net::https_url(url)
        {
            bail!("--key-url {url}: {why}; it must be an https URL under the witness's own domain");
        }
        // The same key a config-driven face would use: --key, else the `signing-key` credential.
        let key = resolve_key_path(self.key.as_deref())
            .map(|p| load_signing_key(&p))
            .transpose()?;
        signing_pair(key, self.key_url.clone()).map_err(|e| match e {
            KeyError::KeyUrlWithoutKey(_) => anyhow::anyhow!(
                "--key-url needs a signing key (--key FILE): the intake refuses key_url on an unsigned record"
            ),
            other => other.into(),
        })
    }
}

impl WitnessArgs {
    /// The pipeline these flags describe: the flags' counterpart of `app::pipeline`.
    pub fn pipeline(
        &self,
        transport: crate::net::Transport,
        store_path: PathBuf,
        signing: Option<(ed25519_dalek::SigningKey, Option<String>)>,
        file_extra_walks: bool,
    ) -> anyhow::Result<Pipeline> {
        let filing = crate::app::Filing {
            signing,
            intake_override: self.intake.clone(),
            file_extra_walks,
        };
        Ok(crate::app::filing_pipeline(
            filing,
            transport,
            store_path,
            Arc::new(SystemClock),
        )?)
    }
}

impl WalkArgs {
    fn request(&self) -> anyhow::Result<WalkRequest> {
        use crate::walk::check::Field;
        let flag = |field| match field {
            Field::WitnessName => "--witness-name",
            Field::Vantage => "--vantage",
            Field::Origin => "--origin",
            Field::Endpoint => "--endpoint",
        };
        let witness = Witness {
            name: self.witness_name.clone(),
            vantage: self.vantage.clone(),
            key_url: None,
        };
        // The URLs are checked with the transport's destination rules once it is built
        // ([`check_operator_urls`]); the identity here, before anything else.
        if let Some(problem) = crate::walk::check::witness(&witness).into_iter().next() {
            bail!("{}", problem.text(flag(problem.field())));
        }
        Ok(WalkRequest {
            origin: self.origin.clone(),
            endpoint: self.endpoint.clone(),
            mode: Mode::parse(&self.mode).context("--mode must be mcp or a2a")?,
            wire: Wire::parse(&self.wire),
            witness,
            vantage_limitation: self.vantage_limitation.clone(),
            contract_sha256: None,
            privacy: Privacy::parse(&self.privacy).context("--privacy")?,
            profile: self.profile.profile(),
            // An on-demand walk never asks to be walked back (witness-pool.md §6.4).
            caller_card: None,
        })
    }
}

/// Refuse operator input that could never be walked or filed, before sending anything.
async fn check_operator_urls(
    transport: &Transport,
    request: &WalkRequest,
    intake: Option<&str>,
    task_ledger: Option<&str>,
) -> anyhow::Result<()> {
    use crate::walk::check::{Field, Problem};
    for problem in crate::walk::check::urls(&request.origin, request.endpoint.as_deref()) {
        if let Problem::NotHttps { field, why } = problem {
            let (flag, url) = match field {
                Field::Endpoint => ("--endpoint", request.endpoint.as_deref().unwrap_or("")),
                _ => ("--origin", request.origin.as_str()),
            };
            bail!("{flag} {url}: refused: {why}");
        }
    }
    for (flag, url) in [
        ("--origin", Some(request.origin.as_str())),
        ("--endpoint", request.endpoint.as_deref()),
        ("--intake", intake),
        ("--task-ledger", task_ledger),
    ] {
        let Some(url) = url else { continue };
        if !url.starts_with("https://") {
            bail!("{flag} {url}: refused: only https:// URLs are used");
        }
        transport
            .check_destination(url)
            .await
            .map_err(|why| anyhow::anyhow!("{flag} {url}: {why}"))?;
    }
    Ok(())
}

/// An `--origin` with a path is walked as given (the card under that path, as the reference
/// walker reads it, §2.1); say so, since most people mean the bare origin.
fn origin_path_note(request: &WalkRequest) -> Option<String> {
    let url = url::Url::parse(&request.origin).ok()?;
    let path = url.path().trim_end_matches('/');
    if path.is_empty() {
        return None;
    }
    Some(format!(
        "--origin has a path ({path}): the card is read at {}, as the reference walker reads it; for the host's own card give the bare origin ({})",
        request.card_url(),
        url.origin().ascii_serialization()
    ))
}

/// The origin's consent file: a decline stops the walk unless `--ignore-consent` (spec §11.6).
async fn consent_allows(transport: &Transport, base: &str, ignore: bool) -> bool {
    use crate::consent;
    let consent::Consent::Declined { sha256 } = consent::fetch(transport, base).await else {
        return true;
    };
    let url = consent::consent_url(base);
    if ignore {
        crate::errln!(
            "conduct-walker: warning: {url} declines listing (sha256 {sha256}); walking anyway because of --ignore-consent"
        );
        true
    } else {
        crate::errln!(
            "conduct-walker: error: {url} says \"listing\": \"decline\" (sha256 {sha256}): the origin asks not to be walked; not walking it (pass --ignore-consent to walk anyway)"
        );
        false
    }
}

fn random_salt() -> [u8; 32] {
    rand::random()
}

/// Run one walk (no store, no signing).
pub async fn walk_once(transport: &Transport, request: &WalkRequest) -> WalkOutcome {
    let trust = crate::card_signature::TrustStore::default();
    crate::findings::walk(transport, &trust, request, &SystemClock, random_salt()).await
}

/// The directory the record (and a commitment's kept record and salt) will be written to.
fn output_dir(out: Option<&std::path::Path>) -> PathBuf {
    match out.and_then(|o| o.parent()) {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Check, before anything is walked, stored or filed, that the output files can be written:
/// a failure after filing would make the user walk (and file) again.
fn check_output_paths(out: Option<&std::path::Path>) -> anyhow::Result<()> {
    if let Some(out) = out
        && out.is_dir()
    {
        bail!("--out {}: is a directory; give a file name", out.display());
    }
    let dir = output_dir(out);
    let shown = || match out {
        Some(o) => format!("--out {}", o.display()),
        None => format!("the record's default place ({})", dir.display()),
    };
    if !dir.is_dir() {
        bail!("{}: directory {} does not exist", shown(), dir.display());
    }
    // Creating (and removing) a file is the one check that answers for permissions, ACLs,
    // read-only mounts and full quotas alike.
    let probe = dir.join(format!(".conduct-walker-probe-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&probe)
        .with_context(|| format!("{}: cannot write in {}", shown(), dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Write a file only its owner can read: a commitment's salt and kept record are secret
/// until `reveal`.
fn write_secret(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // An existing file keeps its old mode through open(): tighten it too.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(bytes)
}

pub async fn run(args: WalkArgs) -> anyhow::Result<ExitCode> {
    let mut request = args.request()?;
    check_output_paths(args.out.as_deref())?;
    let signing = args.witness.signing()?;
    let task_ledger = args.bind_task.then_some(args.task_ledger.as_str());
    let named: Vec<&str> = [
        Some(args.origin.as_str()),
        args.endpoint.as_deref(),
        args.witness.intake.as_deref(),
        task_ledger,
    ]
    .into_iter()
    .flatten()
    .collect();
    let transport = args.net.transport(&named)?;
    check_operator_urls(
        &transport,
        &request,
        args.witness.intake.as_deref(),
        task_ledger,
    )
    .await?;
    if let Some(note) = origin_path_note(&request) {
        crate::errln!("conduct-walker: note: {note}");
    }
    if !consent_allows(&transport, &request.base(), args.ignore_consent).await {
        return Ok(ExitCode::from(super::EXIT_ERROR));
    }
    // A binding is durable like filing: queued in the store with its record.
    let use_store = args.witness.db.is_some() || args.submit || args.bind_task;
    let store_path = use_store
        .then(|| crate::store::default_db_path(args.witness.db.as_deref()))
        .transpose()?;
    let mut binding = None;
    let (outcome, signed, submission) = if let Some(store_path) = &store_path {
        let pipeline = args.witness.pipeline(
            transport.clone(),
            store_path.clone(),
            signing,
            args.witness.file_extra_walks,
        )?;
        let report = pipeline
            .run_job(&WalkJob {
                request,
                submit: args.submit,
                bind_task: task_ledger.map(str::to_string),
            })
            .await?;
        pipeline.checkpoint().await?;
        if args.submit && report.submission.is_none() {
            crate::errln!(
                "conduct-walker: not filed: the card names no params.witness_intake and no --intake was given"
            );
        }
        if args.bind_task && report.task_binding.is_none() {
            crate::errln!(
                "conduct-walker: task binding: none: this walk's record was already stored (the same bytes, from an earlier walk that did not bind)"
            );
        }
        binding = report.task_binding.map(|b| (pipeline, b));
        (report.outcome, report.signed, report.submission)
    } else {
        if let Some((_, key_url)) = &signing {
            request.witness.key_url = key_url.clone();
        }
        let outcome = walk_once(&transport, &request).await;
        let signed = signing
            .as_ref()
            .map(|(key, _)| crate::witness::sign(&outcome.canonical, key));
        (outcome, signed, None)
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("walk_{}.json", &outcome.sha256[..12])));
    std::fs::write(&out, &outcome.canonical)
        .with_context(|| format!("cannot write the record to {}", out.display()))?;
    if let Some((kept, salt)) = &outcome.kept {
        let kept_sha = crate::digest::sha256_hex(kept);
        let dir = output_dir(Some(&out));
        let kept_path = dir.join(format!("walk_{}.json", &kept_sha[..12]));
        write_secret(&kept_path, kept).with_context(|| {
            format!(
                "cannot write the kept full record to {}",
                kept_path.display()
            )
        })?;
        let salt_path = dir.join(format!("walk_{}.salt", &kept_sha[..12]));
        write_secret(&salt_path, format!("{salt}\n").as_bytes())
            .with_context(|| format!("cannot write the salt to {}", salt_path.display()))?;
    }
    if args.json {
        let mut v = json_summary(&outcome);
        if let Some(sig) = &signed {
            v["signature_ed25519_b64"] = json!(sig.signature_b64);
            v["public_key_ed25519_b64"] = json!(sig.public_key_b64);
        }
        if let Some(sub) = &submission {
            v["submission"] = submission_json(sub);
        }
        if let Some((pipeline, b)) = binding.take() {
            v["task_binding"] = send_binding(&pipeline, b).await?.to_json();
        }
        crate::outln!("{v}");
    } else {
        crate::out!("{}", human_summary(&outcome, Some(&out)));
        if let Some(sig) = &signed {
            crate::outln!("signed: signature_ed25519_b64 {}", sig.signature_b64);
            crate::outln!("        public_key_ed25519_b64 {}", sig.public_key_b64);
        }
        if let Some(sub) = &submission {
            crate::outln!("{}", submission_line(sub));
            if let Some(hint) = store_path.as_deref().and_then(|db| queued_hint(sub, db)) {
                crate::outln!("{hint}");
            }
        }
        if let Some((pipeline, b)) = binding.take() {
            crate::out!("{}", binding_lines(&send_binding(&pipeline, b).await?));
        }
    }
    if let Some(sub) = &submission
        && sub.summary().outcome == crate::filing::Outcome::Refused
    {
        crate::errln!(
            "conduct-walker: the intake refused this record permanently: {}",
            submission_line(sub)
        );
    }
    Ok(super::exit_answer(outcome.verdict.ok))
}

/// Send a walk's queued task binding (a skipped one stays as it is), then leave the store whole.
/// The binding's fate never changes the walk's exit code: it is printed, and kept.
async fn send_binding(
    pipeline: &Pipeline,
    b: crate::store::task_bindings::TaskBinding,
) -> anyhow::Result<crate::store::task_bindings::TaskBinding> {
    if b.state != crate::filing::bind::BindState::Queued {
        return Ok(b);
    }
    let sent = pipeline.send_task_binding(b.id).await?;
    pipeline.checkpoint().await?;
    Ok(sent)
}

/// Where a task binding stands, with the ledger's answer when there is one.
pub fn binding_lines(b: &crate::store::task_bindings::TaskBinding) -> String {
    use crate::filing::bind::BindState;
    if b.state == BindState::Skipped {
        return format!(
            "task binding skipped: {}\n",
            b.note.as_deref().unwrap_or_default()
        );
    }
    let mut s = format!("task binding to {}: {}\n", b.ledger_url, b.describe());
    if let (Some(task), Some(eid)) = (&b.task_id, &b.evidence_id) {
        s.push_str(&format!(
            "  task_id {}  evidence_id {eid}\n",
            crate::witness::task_bind::for_terminal(task)
        ));
    }
    if let Some(answer) = b.answer_json() {
        s.push_str(&format!(
            "  answer {}\n",
            crate::witness::task_bind::for_terminal(&answer.to_string())
        ));
    }
    s
}

/// One line saying where a submission stands.
/// Where a submission stayed queued: how a witness without the daemon retries it.
/// A row whose answer was lost waits for a lookup instead (issue 34).
fn queued_hint(s: &SubmissionReport, db: &std::path::Path) -> Option<String> {
    use crate::filing::SubmissionState;
    match s.state {
        SubmissionState::Queued => Some(format!(
            "  queued in {0}: `conduct-walker outbox drain --db {0}` files it once it is due (the daemon does so by itself)",
            db.display()
        )),
        SubmissionState::Sending => Some(format!(
            "  waiting for a lookup in {0}: the intake may hold it; `conduct-walker outbox drain --db {0}` asks it (GET <intake>/<sha256>) once due and sends again only on a 404 (the daemon does so by itself)",
            db.display()
        )),
        _ => None,
    }
}

pub fn submission_line(s: &SubmissionReport) -> String {
    // The stored state names, read aloud; a note that already says it is not repeated.
    let state = s.state.words();
    let mut line = format!("submission to {}: {state}", s.intake_url);
    if let Some(kind) = &s.answer_kind {
        line.push_str(&format!(" (answer {kind}"));
        if let Some(status) = s.status {
            line.push_str(&format!(", http {status}"));
        }
        line.push(')');
    }
    if let Some(code) = &s.reason_code {
        line.push_str(&format!(", reason_code {code}"));
    }
    if let Some(counted) = s.counted {
        line.push_str(if counted {
            ", counted"
        } else {
            ", stored, not counted"
        });
    }
    if let Some(err) = &s.error {
        let err = err.strip_prefix(&format!("{state}: ")).unwrap_or(err);
        line.push_str(&format!(": {err}"));
    }
    line
}

fn submission_json(s: &SubmissionReport) -> serde_json::Value {
    json!({
        "intake_url": s.intake_url,
        "state": s.state,
        "answer": s.answer_kind,
        "status": s.status,
        "reason_code": s.reason_code,
        "error": s.error,
        "counted": s.counted,
        "count_reason": s.count_reason,
    })
}

/// `--json`: sha256, the record, and node number → exact transport error text.
pub fn json_summary(outcome: &WalkOutcome) -> serde_json::Value {
    let transport_errors: serde_json::Map<String, serde_json::Value> = outcome
        .nodes
        .iter()
        .filter_map(|n| {
            n.exchange
                .transport_error
                .as_ref()
                .map(|t| (n.n.to_string(), json!(t)))
        })
        .collect();
    json!({
        "sha256": outcome.sha256,
        "record": outcome.record(),
        "transport_errors": transport_errors,
    })
}

fn result_word(a: &Assertion) -> &'static str {
    match a.result {
        Some(true) => "pass",
        Some(false) => "FAIL",
        None => "n/a ",
    }
}

/// What an assertion's evidence nodes saw, for a line beside a claim that did not hold.
fn observed(outcome: &WalkOutcome, a: &Assertion) -> String {
    if a.evidence_nodes.is_empty() {
        return "no request was sent for it".into();
    }
    a.evidence_nodes
        .iter()
        .map(|n| match outcome.nodes.iter().find(|node| node.n == *n) {
            None => format!("n{n} was not sent"),
            Some(node) => match &node.exchange.transport_error {
                Some(e) => format!(
                    "n{n} {} {}: no answer, transport error: {e}",
                    node.exchange.request.method, node.exchange.request.url
                ),
                None => format!(
                    "n{n} {} {}: http {} ({} bytes)",
                    node.exchange.request.method,
                    node.exchange.request.url,
                    node.status(),
                    node.exchange.body.len()
                ),
            },
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The human summary: verdict, sha256, one line per assertion, one line per node.
/// What the record's `card_signature` block says of a signed card (§4.3), in one line.
fn card_signature_line(record: &serde_json::Value) -> Option<String> {
    let block = record.get("card_signature")?;
    if block.get("present") != Some(&serde_json::Value::Bool(true)) {
        return None;
    }
    let word = match block.get("verified").and_then(serde_json::Value::as_bool) {
        Some(true) => "verified",
        Some(false) => "does not verify",
        None => "not established",
    };
    let reason = block["verified_reason"].as_str().unwrap_or_default();
    Some(format!("  card signature: {word}: {reason}\n"))
}

pub fn human_summary(outcome: &WalkOutcome, written_to: Option<&std::path::Path>) -> String {
    let v = outcome.verdict;
    let mut s = format!(
        "{} {}/{}  sha256 {}\n",
        v.outcome(),
        v.n_pass,
        v.n_total,
        outcome.sha256
    );
    if let Some(path) = written_to {
        s.push_str(&format!("record written to {}\n", path.display()));
    }
    for a in &outcome.assertions {
        // A claim is what the spec expects; only a pass observed it. Anything else prints the
        // claim as expected and what the evidence nodes saw, transport errors included.
        if a.result == Some(true) {
            s.push_str(&format!("  {}  {}\n", result_word(a), a.claim));
        } else {
            s.push_str(&format!("  {}  expected {}\n", result_word(a), a.claim));
            s.push_str(&format!("        observed: {}\n", observed(outcome, a)));
        }
        if let Some(note) = &a.note {
            s.push_str(&format!("        note: {note}\n"));
        }
    }
    if let Some(line) = card_signature_line(&outcome.record()) {
        s.push_str(&line);
    }
    for n in &outcome.nodes {
        let req = &n.exchange.request;
        match &n.exchange.transport_error {
            Some(text) => s.push_str(&format!(
                "  n{} {} {} -> status 0, x-transport-error: {text}\n",
                n.n, req.method, req.url
            )),
            None => s.push_str(&format!(
                "  n{} {} {} -> {} ({} bytes, {} ms)\n",
                n.n,
                req.method,
                req.url,
                n.status(),
                n.exchange.body.len(),
                n.exchange.duration_ms
            )),
        }
    }
    s
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Directory for the demo's records, its intake emulator state and (unless --db) its store
    /// (default: a fresh temporary directory).
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// Keep the demo's records in this store (default: walker.db in the output directory), so
    /// every `records` command can be tried right after.
    #[arg(long)]
    pub db: Option<PathBuf>,
    #[command(flatten)]
    pub profile: ProfileArg,
}

/// Start the sandbox agent of the scenario called `name` (one of `all`).
pub(super) async fn start_scenario(
    all: &[crate::sandbox::Scenario],
    name: &str,
    ca: &SandboxCa,
) -> anyhow::Result<(crate::sandbox::Scenario, SandboxAgent)> {
    let sc = all
        .iter()
        .find(|s| s.name == name)
        .with_context(|| format!("sandbox scenario {name} missing"))?
        .clone();
    let agent = SandboxAgent::start(ca, sc.behaviour.clone()).await?;
    Ok((sc, agent))
}

/// The scenarios the demo walks, with the verdict each must get under the `spec` request
/// profile and under the `reference` one (§2.6.1: only an MCP server that answers as its SDK
/// does by default tells them apart).
pub(crate) const DEMO: &[(&str, bool, bool)] = &[
    ("honest-mcp", true, true),
    ("honest-mcp-streamable", true, false),
    ("honest-a2a", true, true),
    ("honest-a2a-0.3", true, true),
    ("paid-x402", true, true),
    ("paid-undeclared", false, false),
    ("metadata-missing", false, false),
    ("served-by-other-url", false, false),
    ("card-changes", false, false),
    ("signed-card", true, true),
];

/// The scenario whose walk the demo binds to the emulator's task ledger (spec §5.1): an agent
/// that answers with an A2A Task, walked after the others with `--bind-task`.
pub(crate) const DEMO_TASK_BINDING: &str = "task-reply";

/// Start loopback sandbox agents, a key server and an intake emulator; walk an honest agent and
/// a few misbehaving ones; sign each record with a throw-away key, store it and file it.
pub async fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let dir = match &args.out_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("conduct-walker-demo-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let db = args.db.clone().unwrap_or_else(|| dir.join("walker.db"));
    let ca = SandboxCa::generate();

    let (key, key_url, _key_server, emulator) = demo_witness_and_intake(&ca, &dir).await?;

    let all = scenarios();
    let mut agents = Vec::new();
    let profile = args.profile.profile();
    for (name, pass_under_spec, pass_under_reference) in DEMO {
        let expect_pass = match profile {
            RequestProfile::Spec => pass_under_spec,
            RequestProfile::Reference => pass_under_reference,
        };
        let (sc, agent) = start_scenario(&all, name, &ca).await?;
        agents.push((sc, agent, *expect_pass));
    }
    let task_scenario = all
        .iter()
        .find(|s| s.name == DEMO_TASK_BINDING)
        .context("demo scenario missing")?
        .clone();
    let task_agent = SandboxAgent::start(&ca, task_scenario.behaviour.clone()).await?;
    let receiver = crate::sandbox::notify::NotifyReceiver::start(&ca).await?;
    let honest = all
        .iter()
        .find(|s| s.name == "honest-a2a")
        .context("demo scenario missing")?
        .clone();
    let asking =
        crate::sandbox::notify::asking_agent(&ca, honest.behaviour.clone(), &receiver.url())
            .await?;
    let mut policy = NetPolicy::new(true);
    policy.allow_url(&asking.origin());
    policy.allow_url(&emulator.url());
    for (_, agent, _) in &agents {
        policy.allow_url(&agent.origin());
    }
    policy.allow_url(&task_agent.origin());
    let mut config = TransportConfig::new(policy);
    config.extra_roots = vec![ca.cert_der()];
    let filing = crate::app::Filing {
        signing: Some((key, Some(key_url.clone()))),
        intake_override: Some(emulator.url()),
        file_extra_walks: true,
    };
    let pipeline = crate::app::filing_pipeline(
        filing,
        Transport::new(config)?,
        db.clone(),
        Arc::new(SystemClock),
    )?;

    crate::outln!("conduct-walker demo: sandbox agents on 127.0.0.1 with a CA made for this run");
    crate::outln!("  records and files:   {}", dir.display());
    crate::outln!("  record store:        {}", db.display());
    crate::outln!("  intake emulator:     {}", emulator.url());
    crate::outln!("  witness key_url:     {key_url} (a throw-away key)");
    crate::outln!("  request profile:     {}\n", profile.as_str());
    let mut unexpected = 0;
    for (sc, agent, expect_pass) in &agents {
        let report = pipeline
            .run_job(&WalkJob {
                request: demo_request(sc, &agent.origin(), profile),
                submit: true,
                bind_task: None,
            })
            .await?;
        let outcome = &report.outcome;
        let path = dir.join(format!("walk_{}.json", &outcome.sha256[..12]));
        std::fs::write(&path, &outcome.canonical)
            .with_context(|| format!("cannot write {}", path.display()))?;
        let as_expected = outcome.verdict.ok == *expect_pass;
        if !as_expected {
            unexpected += 1;
        }
        let wire = if sc.mode == Mode::A2a {
            format!(", wire {}", sc.wire.as_str())
        } else {
            String::new()
        };
        let flag = if as_expected {
            ""
        } else {
            "  << UNEXPECTED VERDICT"
        };
        crate::outln!(
            "== {} ({}; {} mode{wire}){flag}",
            sc.name,
            sc.about,
            sc.mode.as_str()
        );
        crate::out!("{}", human_summary(outcome, Some(&path)));
        if let Some(sub) = &report.submission {
            crate::outln!("{}", submission_line(sub));
        }
        crate::outln!();
    }
    if unexpected > 0 {
        bail!("{unexpected} demo scenario(s) got an unexpected verdict");
    }
    demo_task_binding(
        &pipeline,
        &emulator,
        &task_scenario,
        &task_agent,
        &dir,
        profile,
    )
    .await?;
    demo_reciprocal(&ca, &pipeline, &db, &emulator, profile).await?;
    let notify = NotifyDemo {
        scenario: &honest,
        agent: &asking,
        receiver: &receiver,
        key_url: &key_url,
        intake: &emulator.url(),
    };
    demo_notify(&ca, &pipeline, &db, &notify, profile).await?;
    pipeline.checkpoint().await?;
    demo_ledger(&emulator, &ca, &db).await?;
    let measured = agents.first().map(|(_, agent, _)| agent.origin());
    demo_witness_pool(&ca, &measured.context("no demo agent")?).await?;
    crate::outln!(
        "demo finished: {} scenarios walked, each verdict as expected; records signed, stored, filed, anchored and their inclusion verified; one A2A Task bound to the task ledger; one witness request answered and verified; one caller walked back and filed to its intake; one origin told of its measurement (notify)",
        DEMO.len() + 1
    );
    crate::outln!("next: conduct-walker records list --db {}", db.display());
    crate::outln!("      conduct-walker records verify --db {}", db.display());
    crate::outln!("      conduct-walker ledger status --db {}", db.display());
    Ok(ExitCode::from(super::EXIT_OK))
}

/// The other direction (issue 43): a requester asks a loopback pool member to measure one of
/// the demo's agents, and judges the signed observation as any requester does.
async fn demo_witness_pool(ca: &SandboxCa, endpoint: &str) -> anyhow::Result<()> {
    use crate::sandbox::pool::{PoolMember, request_observation};
    let member = PoolMember::start(ca).await?;
    crate::outln!(
        "== witness pool: a requester asks the pool member {} to measure {endpoint}",
        member.a2a_url()
    );
    let seen = request_observation(ca, &member.a2a_url(), endpoint).await;
    let Some(observation) = &seen.observation else {
        bail!(
            "the pool member gave no observation: {}",
            seen.verdict.err().unwrap_or_default()
        );
    };
    if let Err(why) = &seen.verdict {
        bail!("the pool member's observation is not accepted: {why}");
    }
    crate::outln!(
        "   answered, signed by {} and verified (hash, Ed25519 signature, the key at its key_url): record_sha256 {}",
        observation["source"]["signed_domain"]
            .as_str()
            .unwrap_or_default(),
        observation["record_sha256"].as_str().unwrap_or_default()
    );
    let observed = observation["observed"].as_object();
    for (surface, seen) in observed.into_iter().flatten() {
        crate::outln!("   {surface}: {seen}");
    }
    crate::outln!();
    Ok(())
}

/// Reciprocal walks (issue 44, §11.6): a caller agent asks to be walked back; the walk is
/// checked, queued, made through the witness's guard and filed to the intake its card names.
async fn demo_reciprocal(
    ca: &SandboxCa,
    pipeline: &Pipeline,
    db: &std::path::Path,
    emulator: &crate::intake_emulator::RunningEmulator,
    profile: RequestProfile,
) -> anyhow::Result<()> {
    let caller = SandboxAgent::start(
        ca,
        crate::sandbox::Behaviour {
            witness_intake: Some(emulator.url()),
            ..Default::default()
        },
    )
    .await?;
    let card = format!("{}/.well-known/agent-card.json", caller.origin());
    crate::outln!("== reciprocal walk: the caller {card} asks to be walked back (caller_card)");
    let template = WalkRequest {
        mode: Mode::A2a,
        wire: Wire::V1_0,
        privacy: Privacy::Full,
        ..demo_request(&scenarios()[0], "", profile)
    };
    let walked =
        crate::sandbox::pool::walk_back(ca, pipeline, db, &card, template, &emulator.url())
            .await
            .map_err(|e| anyhow::anyhow!("reciprocal walk: {e}"))?;
    crate::outln!("   answered: reciprocal {}", walked.answer);
    let report = walked
        .record
        .context("the reciprocal walk was not walked")?;
    crate::out!("{}", human_summary(&report.outcome, None));
    match &report.submission {
        Some(sub) => crate::outln!("{}", submission_line(sub)),
        None => bail!("the reciprocal walk was not filed"),
    }
    crate::outln!();
    Ok(())
}

/// A throw-away witness key served at a key_url on a loopback "witness domain", and the intake
/// emulator that fetches it: (key, key_url, the key's server, the emulator).
async fn demo_witness_and_intake(
    ca: &SandboxCa,
    dir: &std::path::Path,
) -> anyhow::Result<(
    ed25519_dalek::SigningKey,
    String,
    crate::sandbox::HttpsServer,
    crate::intake_emulator::RunningEmulator,
)> {
    use crate::intake_emulator::{Emulator, EmulatorConfig};
    use crate::sandbox::{HttpsServer, Resp, handler};
    // A throw-away witness key, served at a key_url on a loopback "witness domain".
    let key = ed25519_dalek::SigningKey::from_bytes(&rand::random::<[u8; 32]>());
    let key_doc = crate::witness::keys::key_document(&key);
    // At a loopback address of its own (crate::sandbox::WITNESS_ADDRESS says why).
    let witness_ip = crate::sandbox::WITNESS_ADDRESS;
    let key_server = HttpsServer::start_on(
        std::net::SocketAddr::new(witness_ip.parse()?, 0),
        ca,
        &[witness_ip],
        handler(move |_| Resp::json(200, &key_doc)),
    )
    .await?;
    let key_url = format!("{}/.well-known/nenrin-witness-key.json", key_server.base());

    // The intake emulator may fetch that key_url (and nothing else private).
    let mut emulator_policy = NetPolicy::new(true);
    emulator_policy.allow_url(&key_url);
    let mut emulator_net = TransportConfig::new(emulator_policy);
    emulator_net.extra_roots = vec![ca.cert_der()];
    let mut emulator_config = EmulatorConfig::new(
        dir.join("intake-emulator.sqlite"),
        Transport::new(emulator_net)?,
    );
    emulator_config.clock = Arc::new(SystemClock);
    let emulator = Emulator::start(emulator_config, ca, "127.0.0.1:0".parse()?).await?;

    Ok((key, key_url, key_server, emulator))
}

/// What the demo's §11.5 step needs.
struct NotifyDemo<'a> {
    scenario: &'a crate::sandbox::Scenario,
    agent: &'a SandboxAgent,
    receiver: &'a crate::sandbox::notify::NotifyReceiver,
    key_url: &'a str,
    intake: &'a str,
}

/// §11.5 notify (issue 44): an agent whose consent file declares `notify` is walked as a
/// scheduled target is, and is told; the demo fails unless the POST arrived and was answered.
async fn demo_notify(
    ca: &SandboxCa,
    pipeline: &Pipeline,
    db: &std::path::Path,
    d: &NotifyDemo<'_>,
    profile: RequestProfile,
) -> anyhow::Result<()> {
    let mut settings = crate::notify::Settings {
        allow_private_network: true,
        ..Default::default()
    };
    // Our own hosts (guard 5), as the daemon counts them: the key_url's and the intake's.
    settings.add_own_host(d.key_url);
    settings.add_own_host(d.intake);
    let notifier = crate::notify::Notifier::new(settings, vec![ca.cert_der()])?;
    crate::outln!(
        "== notify: {} declares notify = {} in its consent file; walked as a scheduled target",
        d.agent.origin(),
        d.receiver.url()
    );
    let fired = crate::sandbox::notify::scheduled_fire(
        pipeline,
        db,
        "asks-notify",
        demo_request(d.scenario, &d.agent.origin(), profile),
        Some(d.receiver.url()),
        &notifier,
    )
    .await
    .map_err(|e| anyhow::anyhow!("notify: {e}"))?;
    crate::out!("{}", human_summary(&fired.report.outcome, None));
    if let Some(sub) = &fired.report.submission {
        crate::outln!("{}", submission_line(sub));
    }
    crate::outln!("   notify_status: {}", fired.notify_status);
    let received = d.receiver.received();
    let Some(body) = received.first() else {
        bail!("the notification did not arrive: {}", fired.notify_status);
    };
    crate::outln!(
        "   received by the origin: event {}, status {}, record_sha256 {}, changed {}",
        body["event"],
        body["status"],
        body["record_sha256"],
        body["changed"]
    );
    crate::outln!();
    Ok(())
}

/// A demo walk of a sandbox scenario.
fn demo_request(
    sc: &crate::sandbox::Scenario,
    origin: &str,
    profile: RequestProfile,
) -> WalkRequest {
    WalkRequest {
        origin: origin.to_string(),
        endpoint: sc.endpoint_path.map(|p| format!("{origin}{p}")),
        mode: sc.mode,
        wire: sc.wire,
        witness: Witness {
            name: "conduct-walker demo".into(),
            vantage: "loopback sandbox".into(),
            key_url: None,
        },
        vantage_limitation: Some("a sandbox agent on this machine; nothing left it".into()),
        contract_sha256: None,
        privacy: Privacy::Full,
        profile,
        caller_card: None,
    }
}

/// Walk the agent that answers with an A2A Task, bind that task to the emulator's task ledger
/// (spec §5.1) and print the ledger's answer; the demo fails unless the ledger accepted it.
async fn demo_task_binding(
    pipeline: &Pipeline,
    emulator: &crate::intake_emulator::RunningEmulator,
    sc: &crate::sandbox::Scenario,
    agent: &SandboxAgent,
    dir: &std::path::Path,
    profile: RequestProfile,
) -> anyhow::Result<()> {
    let report = pipeline
        .run_job(&WalkJob {
            request: demo_request(sc, &agent.origin(), profile),
            submit: true,
            bind_task: Some(emulator.task_url()),
        })
        .await?;
    let outcome = &report.outcome;
    let path = dir.join(format!("walk_{}.json", &outcome.sha256[..12]));
    std::fs::write(&path, &outcome.canonical)
        .with_context(|| format!("cannot write {}", path.display()))?;
    crate::outln!(
        "== {} ({}; {} mode, wire {}), its A2A Task bound to the task ledger (--bind-task)",
        sc.name,
        sc.about,
        sc.mode.as_str(),
        sc.wire.as_str()
    );
    crate::out!("{}", human_summary(outcome, Some(&path)));
    if let Some(sub) = &report.submission {
        crate::outln!("{}", submission_line(sub));
    }
    let binding = report
        .task_binding
        .context("the task binding walk stored no binding")?;
    let sent = send_binding(pipeline, binding).await?;
    crate::out!("{}", binding_lines(&sent));
    crate::outln!();
    if sent.http_status != Some(201) {
        bail!(
            "the task ledger did not accept the demo's binding: {}",
            sent.describe()
        );
    }
    Ok(())
}

/// The demo's last step (issue 23): the operator batch anchors the filed records on the
/// emulator, and one follower pass checks that each is in the batch, the batch in the chain.
async fn demo_ledger(
    emulator: &crate::intake_emulator::RunningEmulator,
    ca: &SandboxCa,
    db: &std::path::Path,
) -> anyhow::Result<()> {
    let batch = emulator
        .anchor()?
        .context("the operator batch anchored nothing: no record was pending")?;
    crate::outln!(
        "== ledger: the intake's operator batch anchored {} record(s) as ledger entry {}",
        batch.count,
        batch.ledger_entry
    );
    let mut policy = NetPolicy::new(true);
    policy.allow_url(&emulator.url());
    let mut net = TransportConfig::new(policy);
    net.extra_roots = vec![ca.cert_der()];
    let client = crate::ledger::client::LedgerClient::new(&emulator.url(), Transport::new(net)?)?;
    let mut store = crate::store::Store::open(db)?;
    let report = crate::ledger::follower::pass(
        &client,
        &mut store,
        &emulator.url(),
        &crate::ledger::follow::Policy::default(),
        chrono::Utc::now(),
    )
    .await?;
    for row in crate::store::ledger::all(store.connection())? {
        crate::outln!("   {}  {}", &row.sha256[..12], row.describe());
    }
    if let Some(h) = &report.head {
        crate::outln!(
            "   head held: n = {} {} (recomputed from the export and equal to /ledger/head)",
            h.n,
            &h.head[..16]
        );
    }
    store.checkpoint()?;
    if report.findings_opened > 0 || report.verified == 0 {
        bail!(
            "the ledger follower found {} finding(s) and verified {} record(s): see conduct-walker ledger status --db {}",
            report.findings_opened,
            report.verified,
            db.display()
        );
    }
    crate::outln!(
        "   {} record(s) anchored, inclusion verified (bytes ours, batch bytes hash to its claim, listed once)\n",
        report.verified
    );
    Ok(())
}

#[derive(Debug, Args)]
pub struct RevealArgs {
    /// The commitment record to reveal (a sha256 prefix of the filed commitment record).
    pub sha_prefix: String,
    #[command(flatten)]
    pub witness: WitnessArgs,
    #[command(flatten)]
    pub net: NetArgs,
}

/// File the full record a commitment walk kept (§4.6): it is stored as its own record and filed.
pub async fn reveal(args: RevealArgs) -> anyhow::Result<ExitCode> {
    if let Some(intake) = &args.witness.intake
        && let Err(why) = crate::net::https_url(intake)
    {
        bail!("--intake {intake}: refused: {why}");
    }
    let signing = args.witness.signing()?;
    let named: Vec<&str> = args.witness.intake.as_deref().into_iter().collect();
    let transport = args.net.transport(&named)?;
    let store_path = crate::store::default_db_path(args.witness.db.as_deref())?;
    let name = {
        let store = crate::store::Store::open_read_only(&store_path)?;
        let stored = store.get_by_prefix(&args.sha_prefix)?;
        let record = crate::json::parse_lenient(&stored.canonical)?;
        record["witness"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let pipeline = args
        .witness
        .pipeline(transport, store_path.clone(), signing, true)?;
    let report = pipeline.reveal(&args.sha_prefix, true, &name).await?;
    pipeline.checkpoint().await?;
    crate::outln!("revealed record sha256 {}", report.outcome.sha256);
    match &report.submission {
        Some(sub) => {
            crate::outln!("{}", submission_line(sub));
            if let Some(hint) = queued_hint(sub, &store_path) {
                crate::outln!("{hint}");
            }
        }
        None => crate::outln!(
            "not filed: the kept record names no params.witness_intake and no --intake was given"
        ),
    }
    let filed = report
        .submission
        .as_ref()
        .is_some_and(|s| s.state == crate::filing::SubmissionState::Filed);
    Ok(super::exit_answer(filed))
}
