//! Task binding (issue 33 item 2, conduct-walk.md §5.1) end to end: the observation's bytes and
//! signatures against CPython, `walk --bind-task` over real loopback HTTPS into the intake
//! emulator's `POST /witness/task`, the preconditions, ledgers that fail, SIGKILL between
//! queueing and sending and while sending, and the reference walker's own binding (a black box
//! from PyPI) accepted by the emulator.

mod common;
mod daemon_support;
mod provision_support;

use conduct_walker::filing::bind::BindState;
use conduct_walker::intake_emulator::{Emulator, EmulatorConfig, RunningEmulator};
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::pipeline::{Pipeline, PipelineConfig, WalkJob};
use conduct_walker::sandbox::{HttpsServer, Req, Resp, SandboxAgent, SandboxCa, scenario};
use conduct_walker::store::task_bindings::TaskBinding;
use conduct_walker::walk::{Mode, Wire};
use conduct_walker::witness::task_bind::{self, Observation};
use ed25519_dalek::SigningKey;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

/// A CA, a directory with its PEM and a witness key file, and an intake emulator.
struct World {
    ca: SandboxCa,
    dir: tempfile::TempDir,
    ca_path: PathBuf,
    key_path: PathBuf,
    key: SigningKey,
    emulator: RunningEmulator,
}

impl World {
    async fn new() -> World {
        let ca = SandboxCa::generate();
        let dir = tempfile::tempdir().unwrap();
        let ca_path = dir.path().join("ca.pem");
        ca.write_pem(&ca_path).unwrap();
        let key_path = dir.path().join("witness.pem");
        let key = SigningKey::from_bytes(&rand::random::<[u8; 32]>());
        write_pkcs8_v1(&key_path, &key);
        let transport = Transport::new(TransportConfig::new(NetPolicy::new(false))).unwrap();
        let emulator = Emulator::start(
            EmulatorConfig::new(dir.path().join("emulator.sqlite"), transport),
            &ca,
            "127.0.0.1:0".parse().unwrap(),
        )
        .await
        .unwrap();
        World {
            ca,
            dir,
            ca_path,
            key_path,
            key,
            emulator,
        }
    }

    async fn agent(&self, name: &str) -> SandboxAgent {
        let sc = scenario(name).unwrap();
        SandboxAgent::start(&self.ca, sc.behaviour).await.unwrap()
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("walker.db")
    }

    /// `conduct-walker walk --mode a2a` of `origin` with the key, the store and `extra` flags.
    fn walk(&self, origin: &str, extra: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(["walk", "--origin", origin, "--mode", "a2a"])
            .args(["--witness-name", "binding test", "--vantage", "loopback"])
            .arg("--key")
            .arg(&self.key_path)
            .arg("--db")
            .arg(self.db())
            .arg("--ca-cert")
            .arg(&self.ca_path)
            .arg("--allow-private-network")
            .arg("--out")
            .arg(self.dir.path().join("walk.json"))
            .args(extra)
            .env_remove("CREDENTIALS_DIRECTORY")
            .env_remove("STATE_DIRECTORY");
        cmd
    }

    /// An in-process pipeline over the store, trusting the CA and admitting `named`.
    fn pipeline(&self, named: &[&str], signing: bool) -> Pipeline {
        Pipeline::new(PipelineConfig {
            signing: signing.then(|| (self.key.clone(), None)),
            ..PipelineConfig::new(
                common::transport(&self.ca, named, Some(Duration::from_secs(5))),
                self.db(),
                Arc::new(conduct_walker::clock::SystemClock),
            )
        })
        .unwrap()
    }

    /// The bindings in the store, by record id.
    fn bindings(&self) -> Vec<TaskBinding> {
        let store = conduct_walker::store::Store::open_read_only(&self.db()).unwrap();
        let ids: Vec<i64> = store
            .connection()
            .prepare("SELECT record_id FROM task_bindings ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        ids.into_iter()
            .map(|id| {
                conduct_walker::store::task_bindings::for_record(store.connection(), id)
                    .unwrap()
                    .unwrap()
            })
            .collect()
    }
}

/// The key as `openssl genpkey -algorithm ed25519` writes it (PKCS#8 v1, RFC 8410: the seed
/// only), mode 0600: the form the reference walker reads (its `cryptography` refuses the v2
/// form with the public key that `conduct-walker keygen` writes).
fn write_pkcs8_v1(path: &Path, key: &SigningKey) {
    use base64::Engine;
    use std::os::unix::fs::OpenOptionsExt;
    let mut der = hex::decode("302e020100300506032b657004220420").unwrap();
    der.extend_from_slice(&key.to_bytes());
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        base64::engine::general_purpose::STANDARD.encode(der)
    );
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .unwrap()
        .write_all(pem.as_bytes())
        .unwrap();
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

async fn output(cmd: Command) -> Output {
    tokio::process::Command::from(cmd).output().await.unwrap()
}

/// Random task ids over the characters the two byte forms treat differently: quotes,
/// backslashes, every control, DEL, `/`, U+2028, non-ASCII and astral characters.
fn task_ids(n: usize) -> Vec<String> {
    let pool: Vec<char> = "aZ09-_ \"\\/\u{0}\u{1}\u{8}\u{9}\u{a}\u{c}\u{d}\u{1f}\u{7f}\u{80}\u{9b}é\u{2028}\u{2029}✓漢😀\u{10ffff}\u{feff}"
        .chars()
        .collect();
    (0..n)
        .map(|i| {
            let len = 1 + (rand::random::<u32>() % 24) as usize;
            let s: String = (0..len)
                .map(|_| pool[(rand::random::<u32>() as usize) % pool.len()])
                .collect();
            if i == 0 { "task-1".into() } else { s }
        })
        .collect()
}

/// CPython reads each body, writes it back with the default `json.dumps` (same text), and
/// recomputes the canonical preimage, `evidence_id` and (with `cryptography`) the three
/// signatures from the did:keys, with a base58 written from the alphabet.
const PYTHON_CHECK: &str = r#"
import sys, json, hashlib, base64
ALPH = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
def b58decode(s):
    n = 0
    for c in s: n = n * 58 + ALPH.index(c)
    raw = n.to_bytes((n.bit_length() + 7) // 8, 'big')
    return b'\0' * (len(s) - len(s.lstrip('1'))) + raw
def key(did):
    assert did.startswith('did:key:z'), did
    b = b58decode(did[len('did:key:z'):])
    assert b[:2] == b'\xed\x01' and len(b) == 34, did
    return b[2:]
def canon(x): return json.dumps(x, sort_keys=True, separators=(',', ':'), ensure_ascii=False).encode('utf-8')
try:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    def verify(did, sig, x): Ed25519PublicKey.from_public_bytes(key(did)).verify(base64.b64decode(sig), canon(x))
    crypto = True
except ImportError:
    crypto = False
n = 0
for line in sys.stdin:
    body = json.loads(line)['body']
    obs = json.loads(body)
    assert json.dumps(obs) == body, ('body is not json.dumps(observation)', body)
    pre = {k: obs[k] for k in ['task_id', 'hop', 'prev_evidence_id', 'conduct', 'witness_id', 'observed_at']}
    assert hashlib.sha256(canon(pre)).hexdigest() == obs['evidence_id'], body
    p = obs['hop']['from']
    key(obs['witness_id']); key(p)
    if crypto:
        verify(obs['witness_id'], obs['witness_sig'], pre)
        verify(p, obs['edge_sig'], {'task_id': obs['task_id'], 'hop': obs['hop']})
        consent = {'purpose': 'nenrin-task-publication-consent-v0', 'task_id': obs['task_id'], 'hop': obs['hop'], 'publication': 'public'}
        assert [c['party'] for c in obs['consent']] == [p]
        verify(p, obs['consent'][0]['sig'], consent)
    n += 1
print('ok', n, 'signatures' if crypto else 'no-cryptography')
"#;

#[test]
fn cpython_agrees_with_every_byte_and_signature_of_500_observations() {
    let origins = [
        "https://agent.example",
        "https://127.0.0.1:8443/",
        "https://bücher.example/a2a",
    ];
    let mut lines = String::new();
    let mut observations = Vec::new();
    for (i, id) in task_ids(500).iter().enumerate() {
        let witness = SigningKey::from_bytes(&rand::random::<[u8; 32]>());
        let requester = SigningKey::from_bytes(&rand::random::<[u8; 32]>());
        let obs = task_bind::bind(
            &task_bind::Inputs {
                task_id: id,
                origin: origins[i % origins.len()],
                verdict: if i % 2 == 0 { "PASS" } else { "FAIL" },
                observed_at: "2026-12-01T12:00:00Z",
            },
            &witness,
            &requester,
        )
        .unwrap();
        // Rust checks what it wrote, the way the emulator does.
        assert_eq!(task_bind::check(&obs), Ok(()), "{id:?}");
        lines.push_str(&json!({"body": obs.body()}).to_string());
        lines.push('\n');
        observations.push(obs);
    }
    let mut child = Command::new("python3")
        .args(["-c", PYTHON_CHECK])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 is the oracle of this test");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.starts_with("ok 500 "), "{said}");
    eprintln!("cpython: {said}");
    // The body reads back to the observation it was written from.
    for obs in &observations {
        let back: Observation = serde_json::from_str(&obs.body()).unwrap();
        assert_eq!(&back, obs);
    }
}

/// The observation as the emulator received it.
fn received(e: &RunningEmulator) -> Vec<Observation> {
    e.task_observations()
        .iter()
        .map(|b| serde_json::from_str(b).unwrap())
        .collect()
}

#[tokio::test]
async fn walk_bind_task_binds_the_task_the_agent_returned_and_keeps_the_answer() {
    let w = World::new().await;
    let agent = w.agent("task-reply").await;
    let origin = agent.origin();
    let ledger = w.emulator.task_url();
    let out = output(w.walk(&origin, &["--bind-task", "--task-ledger", &ledger])).await;
    let said = text(&out);
    // The walk's own verdict decides the exit code (PASS: 0).
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!(
            "task binding to {ledger}: sent once, the ledger answered http 201"
        )),
        "{said}"
    );
    // Exactly one observation reached the ledger, as stored.
    let got = received(&w.emulator);
    assert_eq!(got.len(), 1, "{said}");
    let obs = &got[0];
    assert_eq!(task_bind::check(obs), Ok(()));
    assert_eq!(obs.task_id, "task-1");
    assert_eq!(obs.hop.to, origin);
    assert_eq!(obs.hop.seq, 0);
    assert_eq!(obs.prev_evidence_id, None);
    assert_eq!(obs.conduct.verdict, "PASS");
    assert_eq!(obs.conduct.detail_ref, None);
    assert_eq!(
        obs.witness_id,
        task_bind::did_key(&w.key.verifying_key()),
        "W is the walk's own key"
    );
    assert_ne!(obs.hop.from, obs.witness_id, "P is never the record's key");
    let b = &w.bindings()[0];
    assert_eq!(b.state, BindState::Answered);
    assert_eq!(b.http_status, Some(201));
    assert_eq!(b.evidence_id.as_deref(), Some(obs.evidence_id.as_str()));
    assert_eq!(
        b.body.as_deref(),
        Some(w.emulator.task_observations()[0].as_str()),
        "the stored body is the body sent"
    );
    let answer = b.answer_json().unwrap();
    assert_eq!(answer["status"], "stored");
    assert_eq!(answer["evidence_id"], obs.evidence_id.as_str());
    // The record is the walk's record: nothing of the binding is in it.
    let record = std::fs::read_to_string(w.dir.path().join("walk.json")).unwrap();
    assert!(!record.contains(&obs.evidence_id) && !record.contains("did:key"));
    // `records show` shows the binding with the record.
    let sha = conduct_walker::digest::sha256_hex(record.as_bytes());
    let show = Command::new(BIN)
        .args(["records", "show", "--db"])
        .arg(w.db())
        .arg(&sha[..12])
        .output()
        .unwrap();
    let shown = text(&show);
    assert!(
        shown.contains("task_binding  sent once, the ledger answered http 201"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("  evidence_id {}", obs.evidence_id)),
        "{shown}"
    );
    assert!(shown.contains(r#""status":"stored""#), "{shown}");
    // The record page shows it too.
    let store = conduct_walker::store::Store::open_read_only(&w.db()).unwrap();
    let page = conduct_walker::pages::render::record(&store, &sha[..12], "test").unwrap();
    assert!(page.contains(r#"id="task-binding""#), "{page}");
    assert!(page.contains(&obs.evidence_id));
}

#[tokio::test]
async fn a_0_3_task_binds_too_and_the_json_output_carries_the_binding() {
    let w = World::new().await;
    let agent = w.agent("task-reply-0.3").await;
    let ledger = w.emulator.task_url();
    let out = output(w.walk(
        &agent.origin(),
        &[
            "--wire",
            "0.3",
            "--json",
            "--bind-task",
            "--task-ledger",
            &ledger,
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let b = &v["task_binding"];
    assert_eq!(b["state"], "answered", "{v}");
    assert_eq!(b["http_status"], 201);
    assert_eq!(b["task_id"], "task-1");
    assert_eq!(b["answer"]["status"], "stored");
    assert_eq!(received(&w.emulator).len(), 1);
}

#[tokio::test]
async fn without_a_task_an_a2a_mode_or_a_key_nothing_is_bound_and_the_reason_is_kept() {
    let w = World::new().await;
    let message = w.agent("honest-a2a").await;
    let mcp = w.agent("honest-mcp").await;
    let task = w.agent("task-reply").await;
    let ledger = w.emulator.task_url();
    let named = [
        message.origin(),
        mcp.origin(),
        task.origin(),
        w.emulator.base(),
    ];
    let named: Vec<&str> = named.iter().map(String::as_str).collect();
    let cases = [
        (
            &message,
            Mode::A2a,
            true,
            "a message-shaped answer binds nothing",
        ),
        (&mcp, Mode::Mcp, true, "not in a2a mode"),
        (&task, Mode::A2a, false, "no signing key"),
    ];
    for (agent, mode, signing, why) in cases {
        let pipeline = w.pipeline(&named, signing);
        let report = pipeline
            .run_job(&WalkJob {
                request: common::request(&agent.origin(), None, mode, Wire::V1_0),
                submit: false,
                bind_task: Some(ledger.clone()),
            })
            .await
            .unwrap();
        let b = report.task_binding.expect("a skipped binding is kept");
        assert_eq!(b.state, BindState::Skipped, "{why}");
        assert!(b.note.as_deref().unwrap().contains(why), "{b:?}");
        assert_eq!((b.body, b.evidence_id), (None, None));
        // Sending a skipped row does nothing.
        let after = pipeline.send_task_binding(b.id).await.unwrap();
        assert_eq!(after.state, BindState::Skipped);
    }
    assert!(w.emulator.task_observations().is_empty());
    // The CLI prints the one-line reason and exits with the walk's verdict.
    let out = output(w.walk(
        &message.origin(),
        &["--bind-task", "--task-ledger", &ledger],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("task binding skipped: n3's JSON-RPC result holds no task"),
        "{}",
        text(&out)
    );
    // Without --bind-task a walk binds nothing and stores no binding (another agent: a walk
    // of the same one in the same second would be the same record, already stored).
    let other = w.agent("task-reply").await;
    let pipeline = w.pipeline(&[&other.origin()], true);
    let report = pipeline
        .run_job(&WalkJob {
            request: common::request(&other.origin(), None, Mode::A2a, Wire::V1_0),
            submit: false,
            bind_task: None,
        })
        .await
        .unwrap();
    assert!(report.task_binding.is_none());
    assert!(
        pipeline
            .task_binding_of(report.record_id)
            .await
            .unwrap()
            .is_none()
    );
}

/// A server that counts POSTs and answers each with `answer` after `delay` (a GET, such as a
/// filing's limits probe, gets a 404 at once).
async fn ledger_server(
    ca: &SandboxCa,
    delay: Duration,
    answer: fn() -> Resp,
) -> (HttpsServer, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let handler: conduct_walker::sandbox::Handler = Arc::new(move |req: Req| {
        let post = req.method == "POST";
        if post {
            counted.fetch_add(1, Ordering::SeqCst);
        }
        Box::pin(async move {
            if !post {
                return Resp::empty(404);
            }
            tokio::time::sleep(delay).await;
            answer()
        })
    });
    (HttpsServer::start(ca, handler).await.unwrap(), hits)
}

#[tokio::test]
async fn a_failing_ledger_never_fails_the_walk_and_is_never_sent_twice() {
    let w = World::new().await;
    let (html, html_hits) = ledger_server(&w.ca, Duration::ZERO, || {
        Resp::bytes(500, "text/html", "<h1>".repeat(400))
    })
    .await;
    let (redirect, redirect_hits) = ledger_server(&w.ca, Duration::ZERO, || {
        Resp::empty(302).with_header("location", "/elsewhere")
    })
    .await;
    let (slow, slow_hits) =
        ledger_server(&w.ca, Duration::from_secs(30), || Resp::empty(201)).await;
    // A port nothing listens on (the server is gone).
    let closed = {
        let (s, _) = ledger_server(&w.ca, Duration::ZERO, || Resp::empty(201)).await;
        format!("{}/witness/task", s.base())
    };
    let cases: [(String, &[&str], &str); 4] = [
        (
            format!("{}/witness/task", html.base()),
            &[],
            "the ledger answered http 500",
        ),
        (
            format!("{}/witness/task", redirect.base()),
            &[],
            "the ledger answered http 302",
        ),
        (
            format!("{}/witness/task", slow.base()),
            &["--request-deadline-secs", "2"],
            "no answer, not resent: timed out",
        ),
        (closed, &[], "no answer, not resent"),
    ];
    for (ledger, extra, expected) in &cases {
        // An agent each: two walks of one agent in the same second are the same record.
        let agent = w.agent("task-reply").await;
        let origin = agent.origin();
        let intake = w.emulator.url();
        let mut args = vec![
            "--bind-task",
            "--task-ledger",
            ledger.as_str(),
            "--submit",
            "--intake",
            &intake,
            "--file-extra-walks",
        ];
        args.extend_from_slice(extra);
        let started = Instant::now();
        let out = output(w.walk(&origin, &args)).await;
        let said = text(&out);
        assert_eq!(out.status.code(), Some(0), "{ledger}: {said}");
        assert!(said.contains("PASS 7/7"), "{said}");
        assert!(said.contains("filed (answer accepted, http 201)"), "{said}");
        assert!(
            said.contains(expected),
            "{ledger}: expected {expected:?} in\n{said}"
        );
        assert!(started.elapsed() < Duration::from_secs(20), "{ledger}");
    }
    // A ledger that is not https is refused before anything is walked (exit 2), like any
    // operator URL.
    let agent = w.agent("task-reply").await;
    let out = output(w.walk(
        &agent.origin(),
        &[
            "--bind-task",
            "--task-ledger",
            "http://127.0.0.1:9/witness/task",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("--task-ledger http://127.0.0.1:9/witness/task: refused"),
        "{}",
        text(&out)
    );
    let bindings = w.bindings();
    assert_eq!(bindings.len(), 4);
    // 500 with a body that is not JSON: kept as its first 500 characters.
    assert_eq!(bindings[0].state, BindState::Answered);
    assert_eq!(bindings[0].http_status, Some(500));
    let raw = bindings[0].answer_json().unwrap();
    assert_eq!(raw["raw"].as_str().unwrap().chars().count(), 500);
    // A redirect is an answer, never followed.
    assert_eq!(bindings[1].http_status, Some(302));
    assert_eq!(bindings[2].state, BindState::Failed);
    assert_eq!(bindings[3].state, BindState::Failed);
    // Each ledger got one POST; a drain sends none of them again.
    let pipeline = w.pipeline(&[], true);
    assert_eq!(
        pipeline.send_due_task_bindings().await.unwrap(),
        Default::default()
    );
    for hits in [&html_hits, &redirect_hits, &slow_hits] {
        assert_eq!(hits.load(Ordering::SeqCst), 1);
    }
    // Every record was stored and filed whatever the ledger did.
    assert_eq!(w.emulator.stored_count(), 4);
}

/// Run `cmd` until `until` holds (checked every 20 ms, 30 s at most), then SIGKILL it. Async:
/// the servers it talks to run on this test's runtime.
async fn kill_when(cmd: Command, until: impl Fn() -> bool) -> Output {
    let mut cmd = tokio::process::Command::from(cmd);
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().unwrap() as i32;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut held = until();
    while !held && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        held = until();
    }
    // SIGKILL: no destructor, no flush, no shutdown path.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let out = child.wait_with_output().await.unwrap();
    assert!(held, "the condition never held: {}", text(&out));
    out
}

/// `outbox drain` of the world's store, with the hosts it may reach named.
async fn drain(w: &World, hosts: &[String]) -> String {
    let mut cmd = Command::new(BIN);
    cmd.args(["outbox", "drain", "--db"])
        .arg(w.db())
        .arg("--ca-cert")
        .arg(&w.ca_path)
        .args(["--allow-private-network", "--request-deadline-secs", "2"]);
    for h in hosts {
        cmd.args(["--allow-host", h.trim_start_matches("https://")]);
    }
    let out = output(cmd).await;
    text(&out)
}

#[tokio::test]
async fn a_sigkill_between_queueing_and_sending_sends_the_binding_once() {
    let w = World::new().await;
    let agent = w.agent("task-reply").await;
    // The walk files first and then sends the binding: an intake that never answers holds the
    // process after the record and its binding are committed, before the binding is sent.
    let (intake, intake_hits) =
        ledger_server(&w.ca, Duration::from_secs(120), || Resp::empty(201)).await;
    let intake_url = format!("{}/witness", intake.base());
    let ledger = w.emulator.task_url();
    let cmd = w.walk(
        &agent.origin(),
        &[
            "--submit",
            "--intake",
            &intake_url,
            "--bind-task",
            "--task-ledger",
            &ledger,
        ],
    );
    let hits = intake_hits.clone();
    // Its first request there is the limits probe (GET /witness); the second is the POST.
    kill_when(cmd, move || hits.load(Ordering::SeqCst) >= 1).await;
    let b = w.bindings();
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].state, BindState::Queued, "{b:?}");
    assert!(w.emulator.task_observations().is_empty());
    // The next drain sends it, once; the one after sends nothing.
    let said = drain(&w, &[w.emulator.base(), intake.base()]).await;
    assert!(said.contains("task bindings: 1 sent"), "{said}");
    let said = drain(&w, &[w.emulator.base(), intake.base()]).await;
    assert!(!said.contains("task bindings:"), "{said}");
    assert_eq!(w.emulator.task_observations().len(), 1);
    let b = &w.bindings()[0];
    assert_eq!((b.state, b.http_status), (BindState::Answered, Some(201)));
    assert_eq!(
        received(&w.emulator)[0].evidence_id,
        b.evidence_id.clone().unwrap()
    );
}

#[tokio::test]
async fn a_sigkill_while_sending_is_never_resent_and_settles_as_unknown() {
    let w = World::new().await;
    let agent = w.agent("task-reply").await;
    let (ledger, ledger_hits) =
        ledger_server(&w.ca, Duration::from_secs(120), || Resp::empty(201)).await;
    let ledger_url = format!("{}/witness/task", ledger.base());
    let hits = ledger_hits.clone();
    kill_when(
        w.walk(
            &agent.origin(),
            &["--bind-task", "--task-ledger", &ledger_url],
        ),
        move || hits.load(Ordering::SeqCst) >= 1,
    )
    .await;
    assert_eq!(w.bindings()[0].state, BindState::Sending);
    // A drain right after leaves it alone (a live send may still be answered) and sends
    // nothing.
    let said = drain(&w, &[ledger.base()]).await;
    assert!(!said.contains("task bindings:"), "{said}");
    assert_eq!(w.bindings()[0].state, BindState::Sending);
    // Later than any send could last: the drain settles it as unknown, still not resent.
    let conn = rusqlite::Connection::open(w.db()).unwrap();
    conn.execute(
        "UPDATE task_bindings SET sent_at = '2026-01-01T00:00:00Z'",
        [],
    )
    .unwrap();
    drop(conn);
    let said = drain(&w, &[ledger.base()]).await;
    assert!(
        said.contains("task bindings: 0 sent, 1 left sending by a stopped process settled as unknown (not resent)"),
        "{said}"
    );
    drain(&w, &[ledger.base()]).await;
    assert_eq!(ledger_hits.load(Ordering::SeqCst), 1, "sent exactly once");
    let b = &w.bindings()[0];
    assert_eq!(b.state, BindState::Unknown);
    // `records show` says so.
    let store = conduct_walker::store::Store::open_read_only(&w.db()).unwrap();
    let sha = store.get_by_id(b.record_id).unwrap().row.sha256;
    drop(store);
    let show = Command::new(BIN)
        .args(["records", "show", "--db"])
        .arg(w.db())
        .arg(&sha)
        .output()
        .unwrap();
    assert!(
        text(&show).contains("task_binding  unknown: the process stopped while sending"),
        "{}",
        text(&show)
    );
}

/// POST a body to the emulator's task route; status and JSON answer.
async fn post(w: &World, body: &[u8]) -> (u16, Value) {
    let t = common::transport(&w.ca, &[&w.emulator.base()], None);
    let ex = t
        .fetch(&conduct_walker::net::HttpRequest::post(
            w.emulator.task_url(),
            &[("content-type", "application/json")],
            body.to_vec(),
        ))
        .await;
    (
        ex.status,
        serde_json::from_slice(&ex.body).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn the_emulator_checks_what_the_ledger_relies_on() {
    let w = World::new().await;
    let witness = SigningKey::from_bytes(&[1; 32]);
    let requester = SigningKey::from_bytes(&[2; 32]);
    let good = task_bind::bind(
        &task_bind::Inputs {
            task_id: "task-1",
            origin: "https://agent.example",
            verdict: "FAIL",
            observed_at: "2026-12-01T12:00:00Z",
        },
        &witness,
        &requester,
    )
    .unwrap();
    let (status, answer) = post(&w, good.body().as_bytes()).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["evidence_id"], good.evidence_id.as_str());
    assert_eq!(answer["received"], 1);
    let tampered = |f: &dyn Fn(&mut Observation)| {
        let mut o = good.clone();
        f(&mut o);
        o.body()
    };
    let forged_witness = {
        let other = SigningKey::from_bytes(&[3; 32]);
        task_bind::bind(
            &task_bind::Inputs {
                task_id: "task-1",
                origin: "https://agent.example",
                verdict: "FAIL",
                observed_at: "2026-12-01T12:00:00Z",
            },
            &other,
            &requester,
        )
        .unwrap()
        .witness_sig
    };
    let cases: Vec<(Vec<u8>, u16, Option<&str>)> = vec![
        (b"not json".to_vec(), 400, None),
        (b"[1]".to_vec(), 400, None),
        (br#"{"task_id": "t"}"#.to_vec(), 422, Some("schema")),
        (
            tampered(&|o| o.conduct.verdict = "PASS".into()).into_bytes(),
            422,
            Some("evidence_id_mismatch"),
        ),
        (
            tampered(&|o| o.witness_sig = forged_witness.clone()).into_bytes(),
            422,
            Some("witness_sig_invalid"),
        ),
        (
            tampered(&|o| o.edge_sig = o.witness_sig.clone()).into_bytes(),
            422,
            Some("edge_sig_invalid"),
        ),
        (
            tampered(&|o| o.consent.clear()).into_bytes(),
            422,
            Some("consent_missing"),
        ),
        (
            tampered(&|o| o.hop.from = o.witness_id.clone()).into_bytes(),
            422,
            Some("r1_same_party"),
        ),
        (vec![b' '; 70 * 1024], 413, None),
    ];
    for (body, want, code) in cases {
        let (status, answer) = post(&w, &body).await;
        assert_eq!(status, want, "{answer}");
        if let Some(code) = code {
            assert_eq!(answer["error"], "invalid_task_observation");
            assert_eq!(answer["reason_code"], code, "{answer}");
        }
    }
    // Only the good one is kept; a repeat is stored again and counted (no dedupe is
    // specified for the real ledger, so the walker never relies on one).
    let (status, answer) = post(&w, good.body().as_bytes()).await;
    assert_eq!((status, answer["received"].clone()), (201, json!(2)));
    assert_eq!(w.emulator.task_observations().len(), 2);
}

/// The reference walker (PyPI a2a-conduct-walk 1.5.0, run as a black box) walks a sandbox agent
/// that answers with a Task, with `--bind-task --task-ledger <emulator>`: the emulator accepts
/// its observation, which passes the same checks as ours.
#[tokio::test]
async fn the_reference_walkers_binding_is_accepted_by_the_emulator() {
    let requirements =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/task_bind_reference/requirements.txt");
    let python = provision_support::python_venv("task-bind-reference-venv", &requirements, &[]);
    let walker = python.with_file_name("a2a-conduct-walk");
    let w = World::new().await;
    for (scenario, wire) in [("task-reply", "1.0"), ("task-reply-0.3", "0.3")] {
        let agent = w.agent(scenario).await;
        let before = w.emulator.task_observations().len();
        let out = output({
            let mut cmd = Command::new(&walker);
            cmd.args(["--origin", &agent.origin(), "--mode", "a2a", "--wire", wire])
                .args(["--witness-name", "reference", "--vantage", "loopback"])
                .arg("--key")
                .arg(&w.key_path)
                .args(["--bind-task", "--task-ledger", &w.emulator.task_url()])
                .arg("--out")
                .arg(w.dir.path().join(format!("ref-{wire}.json")))
                .env("SSL_CERT_FILE", &w.ca_path)
                .current_dir(w.dir.path());
            cmd
        })
        .await;
        let said = text(&out);
        eprintln!("reference walker ({scenario}):\n{said}");
        let got = received(&w.emulator);
        assert_eq!(got.len(), before + 1, "{said}");
        let obs = &got[before];
        assert_eq!(task_bind::check(obs), Ok(()));
        assert_eq!(obs.task_id, "task-1");
        assert_eq!(obs.hop.to, agent.origin());
        assert_eq!(obs.witness_id, task_bind::did_key(&w.key.verifying_key()));
        // Its body is what ours would write for the same observation: Python's json.dumps,
        // keys in the same order.
        assert_eq!(w.emulator.task_observations()[before], obs.body(), "{said}");
    }
}

const CONFIG_BASE: &str = "[witness]\nname = \"w\"\nvantage = \"v\"\n";

fn parse_config(
    text: &str,
) -> Result<conduct_walker::config::Config, conduct_walker::config::ConfigError> {
    conduct_walker::config::parse(Path::new("/etc/cw/walker.toml"), text)
}

#[test]
fn bind_task_is_a_per_target_option_with_the_ledger_in_witness_task_ledger() {
    let target = |extra: &str| {
        format!(
            "[[target]]\nname = \"t\"\norigin = \"https://agent.example\"\nmode = \"a2a\"\nschedule = \"@daily\"\n{extra}"
        )
    };
    // Off by default; on, it binds to the spec's ledger unless witness.task_ledger says.
    let c = parse_config(&format!("{CONFIG_BASE}{}", target(""))).unwrap();
    assert_eq!(c.targets[0].bind_task, None);
    let c = parse_config(&format!("{CONFIG_BASE}{}", target("bind_task = true\n"))).unwrap();
    assert_eq!(
        c.targets[0].bind_task.as_deref(),
        Some(task_bind::DEFAULT_TASK_LEDGER)
    );
    assert!(!c.named_urls().iter().any(|u| u.contains("witness/task")));
    let own = "https://ledger.example/witness/task";
    let c = parse_config(&format!(
        "{CONFIG_BASE}task_ledger = \"{own}\"\n{}",
        target("bind_task = true\n")
    ))
    .unwrap();
    assert_eq!(c.targets[0].bind_task.as_deref(), Some(own));
    assert_eq!(c.task_ledger, own);
    // A ledger the file names is a named host (private addresses admitted only at named hosts).
    assert!(c.named_urls().contains(&own.to_string()));
    // print-config spells both out.
    let shown = c.effective_toml();
    assert!(shown.contains("bind_task = true"), "{shown}");
    assert!(
        shown.contains(&format!("task_ledger = \"{own}\"")),
        "{shown}"
    );
    let c = parse_config(&format!("{CONFIG_BASE}{}", target(""))).unwrap();
    assert!(
        c.effective_toml().contains(&format!(
            "task_ledger = \"{}\"",
            task_bind::DEFAULT_TASK_LEDGER
        )),
        "the default is filled in"
    );
    // Refused, each with its line: an mcp target (no A2A Task to bind), a ledger not https.
    for (text, what) in [
        (
            format!(
                "{CONFIG_BASE}[[target]]\norigin = \"https://agent.example\"\nschedule = \"@daily\"\nbind_task = true\n"
            ),
            "bind_task needs mode = \"a2a\"",
        ),
        (
            format!(
                "{CONFIG_BASE}task_ledger = \"http://ledger.example/witness/task\"\n{}",
                target("bind_task = true\n")
            ),
            "https",
        ),
    ] {
        let Err(conduct_walker::config::ConfigError::Invalid { problems, .. }) =
            parse_config(&text)
        else {
            panic!("{text} was accepted");
        };
        let shown: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        assert!(
            shown.iter().any(|p| p.contains(what) && p.contains("line")),
            "{text}: {shown:?}"
        );
    }
    // `config check` says the same through the binary.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("walker.toml");
    std::fs::write(
        &path,
        format!(
            "{CONFIG_BASE}[[target]]\norigin = \"https://agent.example\"\nschedule = \"@daily\"\nbind_task = true\n"
        ),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["config", "check", "--config"])
        .arg(&path)
        .env_remove("CREDENTIALS_DIRECTORY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("bind_task needs mode = \"a2a\""),
        "{}",
        text(&out)
    );
}

#[tokio::test]
async fn the_mcp_walk_tool_binds_the_task_when_asked_and_allowed() {
    use conduct_walker::mcp::{Options, WitnessServer};
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    let w = World::new().await;
    let agent = w.agent("task-reply").await;
    let hosts: Vec<String> = [agent.origin(), w.emulator.base()]
        .iter()
        .map(|o| format!("{:?}", o.trim_start_matches("https://")))
        .collect();
    let config = |mcp: &str| {
        let text = format!(
            "[witness]\nname = \"mcp binding\"\nvantage = \"loopback\"\nkey = \"witness.pem\"\n\
             intake = \"{}\"\ntask_ledger = \"{}\"\n\n\
             [network]\nextra_ca = [\"ca.pem\"]\nallow_private_network = true\nallow_hosts = [{}]\n\n\
             [daemon]\ndatabase = \"walker.db\"\n\n[mcp]\n{mcp}\n",
            w.emulator.url(),
            w.emulator.task_url(),
            hosts.join(", ")
        );
        let path = w.dir.path().join("walker.toml");
        std::fs::write(&path, text).unwrap();
        conduct_walker::config::load(&path).unwrap()
    };
    let walk = |config: conduct_walker::config::Config, bind: bool| {
        let origin = agent.origin();
        async move {
            let server = WitnessServer::new(Options {
                config,
                clock: Arc::new(conduct_walker::clock::SystemClock),
            })
            .unwrap();
            let (server_side, client_side) = tokio::io::duplex(1 << 20);
            tokio::spawn(async move {
                let running = server.serve(server_side).await.unwrap();
                let _ = running.waiting().await;
            });
            let client = ().serve(client_side).await.unwrap();
            let args = json!({"origin": origin, "mode": "a2a", "bind_task": bind, "submit": false});
            let Value::Object(args) = args else {
                unreachable!()
            };
            let r = client
                .call_tool(CallToolRequestParams::new("witness_walk").with_arguments(args))
                .await
                .unwrap();
            assert_eq!(r.is_error, Some(false), "{r:?}");
            r.structured_content.unwrap()
        }
    };
    let v = walk(config(""), true).await;
    let b = &v["task_binding"];
    assert_eq!(b["state"], "answered", "{v}");
    assert_eq!(b["http_status"], 201);
    assert_eq!(b["ledger_url"], w.emulator.task_url().as_str());
    assert_eq!(b["answer"]["evidence_id"], b["evidence_id"]);
    assert_eq!(received(&w.emulator).len(), 1);
    // Not asked: nothing bound.
    let v = walk(config(""), false).await;
    assert_eq!(v["task_binding"], Value::Null);
    // Asked where the operator does not let a model file: not bound, and said so.
    let v = walk(config("allow_submit = false"), true).await;
    assert_eq!(v["task_binding"]["state"], "skipped", "{v}");
    assert!(
        v["task_binding"]["summary"]
            .as_str()
            .unwrap()
            .contains("mcp.allow_submit = false")
    );
    assert_eq!(received(&w.emulator).len(), 1);
}

/// The daemon binds each fire's task of a `bind_task` target, once per record, beside its
/// fires; the records stay the walks' records.
#[test]
fn the_daemon_binds_each_walk_of_a_bind_task_target_once() {
    use daemon_support::{Daemon, any_port, free_port, runtime, start_intake};
    let rt = runtime();
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    let emulator = start_intake(&rt, &ca, dir.path(), any_port(), None);
    let agent = rt
        .block_on(SandboxAgent::start(
            &ca,
            scenario("task-reply").unwrap().behaviour,
        ))
        .unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let key = SigningKey::from_bytes(&rand::random::<[u8; 32]>());
    write_pkcs8_v1(&dir.path().join("witness.pem"), &key);
    let listen: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    std::fs::write(
        dir.path().join("walker.toml"),
        format!(
            "[witness]\nname = \"daemon binding\"\nvantage = \"loopback\"\nkey = \"witness.pem\"\n\
             task_ledger = \"{}\"\n\n[network]\nextra_ca = [\"ca.pem\"]\nallow_private_network = true\n\n\
             [daemon]\ndatabase = \"walker.db\"\nlisten = \"{listen}\"\njitter_secs = 0\ndrain_interval_secs = 1\n\n\
             [[target]]\nname = \"tasks\"\norigin = \"{}\"\nmode = \"a2a\"\nsubmit = false\nbind_task = true\n\
             schedule = \"* * * * * *\"\n",
            emulator.task_url(),
            agent.origin()
        ),
    )
    .unwrap();
    let mut daemon = Daemon::start_in(dir, listen);
    daemon.wait_for("three answered bindings", Duration::from_secs(60), |d| {
        d.store().is_some_and(|s| {
            s.connection()
                .query_row(
                    "SELECT count(*) FROM task_bindings WHERE state = 'answered'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
                .unwrap_or(0)
                >= 3
        })
    });
    daemon.stop();
    let store = daemon.store().unwrap();
    let bindings: Vec<TaskBinding> = (1..=store.count().unwrap() as i64)
        .filter_map(|id| {
            conduct_walker::store::task_bindings::for_record(store.connection(), id).unwrap()
        })
        .collect();
    let got = received(&emulator);
    let mut ids: Vec<&str> = got.iter().map(|o| o.evidence_id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), got.len(), "no observation was sent twice");
    // Each observation the ledger got is a stored binding's; each binding answered was got (a
    // stop may cut a send after it left: that row stays sending, never resent).
    let stored: Vec<&str> = bindings
        .iter()
        .filter_map(|b| b.evidence_id.as_deref())
        .collect();
    assert!(ids.iter().all(|id| stored.contains(id)), "{}", daemon.log());
    let answered = bindings
        .iter()
        .filter(|b| b.state == BindState::Answered)
        .count();
    assert!(answered >= 3 && answered <= got.len(), "{bindings:?}");
    for o in &got {
        assert_eq!(task_bind::check(o), Ok(()));
        assert_eq!(o.witness_id, task_bind::did_key(&key.verifying_key()));
    }
    assert!(daemon.log().contains("task binding"), "{}", daemon.log());
}
