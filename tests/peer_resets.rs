//! Issue 42 item 1, "a server can kill `walk`": the TLS stack writes its close_notify with
//! `writev` after a peer reset the connection, and with SIGPIPE at its default action that write
//! killed the process (signal 13, no record, a row left `sending`). Each client command runs here
//! as the real binary against loopback peers that reset mid-handshake, mid-headers and mid-body
//! (`peer_support`), once with standard output read and once into a pipe whose reader is gone:
//! every run ends by itself with its documented code (docs/reference/exit-codes.md), says which
//! peer failed and how, and keeps what it stores.
//!
//! The mid-handshake reset never reaches that `writev` (the client writes nothing after a failed
//! handshake read); the other two do, for every command below.

mod peer_support;
mod store_support;

use conduct_walker::card_signature::signing::{sign_entry, with_signature};
use conduct_walker::card_signature::{JwsAlg, Profile};
use conduct_walker::filing::{AnswerKind, Outcome, SubmissionState};
use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use conduct_walker::store::Store;
use conduct_walker::store::outbox::{self, NewSubmission, Submission};
use peer_support::{HostilePeer, Shape};
use serde_json::{Value, json};
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

/// Both ways standard output is met: read to the end, or already closed by its reader. Read
/// first, so a peer's reset is what fails first when it can kill the process.
const STDOUTS: [bool; 2] = [false, true];

/// A run of the binary.
struct Ran {
    what: String,
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

impl Ran {
    /// Not killed by a signal, no panic (101, or its message): the process ended by itself.
    fn ended_by_itself(&self) -> &Self {
        assert_eq!(
            self.status.signal(),
            None,
            "{}: killed by a signal\n{}",
            self.what,
            self.stderr
        );
        assert_ne!(
            self.status.code(),
            Some(101),
            "{}: {}",
            self.what,
            self.stderr
        );
        assert!(
            !self.stderr.contains("panicked"),
            "{}: {}",
            self.what,
            self.stderr
        );
        self
    }

    fn exits(&self, code: i32) -> &Self {
        self.ended_by_itself();
        assert_eq!(
            self.status.code(),
            Some(code),
            "{}\n{}{}",
            self.what,
            self.stdout,
            self.stderr
        );
        self
    }

    /// Every one of `words` is in what it printed (both streams).
    fn says(&self, words: &[&str]) -> &Self {
        let said = format!("{}{}", self.stdout, self.stderr);
        for w in words {
            assert!(said.contains(w), "{}: no {w:?} in:\n{said}", self.what);
        }
        self
    }
}

/// Run the binary in `dir`, its standard output read or `closed`. No ambient state directory,
/// credentials or config: each test names its store, key and config.
async fn run(dir: &Path, args: &[&str], closed: bool) -> Ran {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(args)
        .current_dir(dir)
        .env_remove("STATE_DIRECTORY")
        .env_remove("CREDENTIALS_DIRECTORY")
        .env_remove("CONFIGURATION_DIRECTORY")
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    if closed {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        cmd.stdout(writer);
    } else {
        cmd.stdout(Stdio::piped());
    }
    // Not `output()`: tokio's would pipe standard output again, over the closed one.
    let out = cmd.spawn().unwrap().wait_with_output().await.unwrap();
    Ran {
        what: format!(
            "{}{}",
            args.join(" "),
            if closed { " (stdout closed)" } else { "" }
        ),
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A CA whose PEM is in a fresh directory, for `--ca-cert`.
struct World {
    ca: SandboxCa,
    dir: tempfile::TempDir,
    ca_pem: String,
}

impl World {
    /// The network flags of a command whose peer is at `host_port` (loopback, this CA).
    fn net<'a>(&'a self, host_port: &'a str) -> [&'a str; 5] {
        [
            "--allow-private-network",
            "--allow-host",
            host_port,
            "--ca-cert",
            &self.ca_pem,
        ]
    }

    fn new() -> World {
        let ca = SandboxCa::generate();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        ca.write_pem(&path).unwrap();
        World {
            ca,
            dir,
            ca_pem: path.display().to_string(),
        }
    }

    /// A fresh directory of its own for one run (a store, a record, an output folder).
    fn run_dir(&self, shape: Shape, closed: bool) -> PathBuf {
        let d = self.dir.path().join(format!("{shape:?}-{closed}"));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}

/// The peer was reached: a test whose client never connected would prove nothing.
fn reached(peer: &HostilePeer, shape: Shape) {
    assert!(!peer.seen().is_empty(), "{}: never reached", shape.name());
}

/// The words of a connection reset, as the transport reports it.
const RESET: &str = "Connection reset by peer";

/// Does `v` hold, anywhere, a fetch node that got no answer (status 0) from `host_port`?
fn has_failed_node_at(v: &Value, host_port: &str) -> bool {
    match v {
        Value::Object(o) => {
            let here = v["response"]["status"] == 0
                && v["request"]["url"]
                    .as_str()
                    .is_some_and(|u| u.contains(host_port));
            here || o.values().any(|x| has_failed_node_at(x, host_port))
        }
        Value::Array(a) => a.iter().any(|x| has_failed_node_at(x, host_port)),
        _ => false,
    }
}

fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_server_that_resets_ends_walk_with_its_fail_code_and_a_stored_record() {
    let w = World::new();
    for closed in STDOUTS {
        for shape in Shape::ALL {
            let peer = HostilePeer::start(&w.ca, shape).await;
            let dir = w.run_dir(shape, closed);
            let (db, out) = (dir.join("walker.db"), dir.join("record.json"));
            let ran = run(
                &dir,
                &[
                    "walk",
                    "--origin",
                    &peer.base(),
                    "--witness-name",
                    "peer resets",
                    "--vantage",
                    "loopback",
                    "--allow-private-network",
                    "--ca-cert",
                    &w.ca_pem,
                    "--db",
                    db.to_str().unwrap(),
                    "--out",
                    out.to_str().unwrap(),
                ],
                closed,
            )
            .await;
            // The card failed, so the walk failed: a finding (1), not an error.
            ran.exits(1);
            reached(&peer, shape);
            if !closed {
                ran.says(&["FAIL", &peer.host_port(), "status 0", RESET]);
            }
            // Stored and written: the node that met the reset is in the record, status 0.
            let store = Store::open_read_only(&db).unwrap();
            assert_eq!(store.count().unwrap(), 1, "{}", ran.what);
            let bytes = std::fs::read(&out).unwrap();
            let sha = conduct_walker::digest::sha256_hex(&bytes);
            let stored = store.get_by_sha256(&sha).unwrap().expect("the record");
            let record: Value = serde_json::from_slice(&stored.canonical).unwrap();
            assert!(
                has_failed_node_at(&record, &peer.host_port()),
                "{}: {record}",
                ran.what
            );
        }
    }
}

/// What an outbox row must say after an intake's answer of `shape`: never `sending` with no
/// word of why, and each shape its own state.
fn row_says_why(row: &Submission, shape: Shape, intake: &str, what: &str) {
    assert_eq!(row.intake_url, intake, "{what}");
    let error = row.last_error.as_deref().unwrap_or_default();
    assert!(error.contains("reset by peer"), "{what}: {row:?}");
    assert!(row.next_attempt_at.is_some(), "{what}: {row:?}");
    match shape {
        // TLS never came up, so the request never left: a plain retry, no lookup needed.
        Shape::MidHandshake => {
            assert_eq!(row.state, SubmissionState::Queued, "{what}: {row:?}");
            assert_eq!(row.last_answer, Some(AnswerKind::Retry), "{what}: {row:?}");
            assert_eq!(row.summary().outcome, Outcome::QueuedForRetry, "{what}");
            assert!(error.contains(intake), "{what}: {row:?}");
        }
        // The request left and no whole answer came back: the intake may hold the record, so
        // it is looked up before any resend.
        Shape::MidHeaders | Shape::MidBody | Shape::CutAcceptance => {
            assert_eq!(row.state, SubmissionState::Sending, "{what}: {row:?}");
            assert_eq!(
                row.last_answer,
                Some(AnswerKind::Unknown),
                "{what}: {row:?}"
            );
            assert_eq!(row.summary().outcome, Outcome::AwaitingLookup, "{what}");
            assert!(error.contains("no complete answer"), "{what}: {row:?}");
        }
    }
    // A complete status line is the answer's: a cut-off 2xx is named as one, and its code is
    // the row's status (0 when no status line arrived).
    let status = match shape {
        Shape::MidBody => Some(200),
        Shape::CutAcceptance => Some(201),
        _ => None,
    };
    if let Some(status) = status {
        assert!(
            error.contains(&format!("http {status}")) && error.contains("cut off"),
            "{what}: {row:?}"
        );
    }
    assert_eq!(
        row.last_status,
        Some(status.unwrap_or(0)),
        "{what}: {row:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_intake_that_resets_or_cuts_its_201_leaves_walk_submit_its_code_a_record_and_a_row_saying_why()
 {
    let w = World::new();
    let agent = SandboxAgent::start(&w.ca, Behaviour::default())
        .await
        .unwrap();
    let shapes = [Shape::ALL.as_slice(), &[Shape::CutAcceptance]].concat();
    for closed in STDOUTS {
        for &shape in &shapes {
            let peer = HostilePeer::start(&w.ca, shape).await;
            let intake = format!("{}/witness", peer.base());
            let dir = w.run_dir(shape, closed);
            let db = dir.join("walker.db");
            let ran = run(
                &dir,
                &[
                    "walk",
                    "--origin",
                    &agent.origin(),
                    "--mode",
                    "a2a",
                    "--witness-name",
                    "peer resets",
                    "--vantage",
                    "loopback",
                    "--allow-private-network",
                    "--ca-cert",
                    &w.ca_pem,
                    "--db",
                    db.to_str().unwrap(),
                    "--out",
                    dir.join("record.json").to_str().unwrap(),
                    "--submit",
                    "--intake",
                    &intake,
                ],
                closed,
            )
            .await;
            // The honest agent passed: the verdict decides the code, not the intake.
            ran.exits(0);
            assert!(
                peer.seen().iter().any(|l| l.starts_with("POST /witness"))
                    || shape == Shape::MidHandshake && !peer.seen().is_empty(),
                "{}: {:?}",
                ran.what,
                peer.seen()
            );
            if !closed {
                ran.says(&["PASS", &format!("submission to {intake}"), RESET]);
            }
            let store = Store::open_read_only(&db).unwrap();
            assert_eq!(store.count().unwrap(), 1, "{}", ran.what);
            let rows = outbox::for_record(store.connection(), 1).unwrap();
            assert_eq!(rows.len(), 1, "{}: {rows:?}", ran.what);
            row_says_why(&rows[0], shape, &intake, &ran.what);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jwks_server_that_resets_ends_card_verify_with_1_naming_the_jku() {
    use ed25519_dalek::pkcs8::EncodePrivateKey as _;
    let w = World::new();
    let der = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32])
        .to_pkcs8_der()
        .unwrap();
    let key = jsonwebtoken::EncodingKey::from_ed_der(der.as_bytes());
    for closed in STDOUTS {
        for shape in Shape::ALL {
            let peer = HostilePeer::start(&w.ca, shape).await;
            // A card from a file, signed with its key at the hostile peer: the jku fetch is
            // the one request.
            let jku = format!("{}/.well-known/jwks.json", peer.base());
            let header = format!(r#"{{"alg":"EdDSA","typ":"JOSE","kid":"agent-1","jku":"{jku}"}}"#);
            let card = json!({"name": "Hostile", "description": "d", "version": "1"});
            let entry = sign_entry(&card, Profile::Sdk, &header, &key, JwsAlg::EdDSA).unwrap();
            let dir = w.run_dir(shape, closed);
            let card_path = dir.join("card.json");
            std::fs::write(
                &card_path,
                serde_json::to_vec(&with_signature(&card, entry)).unwrap(),
            )
            .unwrap();
            let ran = run(
                &dir,
                &[
                    &[
                        "card",
                        "verify",
                        "--file",
                        card_path.to_str().unwrap(),
                        "--origin",
                        &peer.base(),
                        "--json",
                    ][..],
                    &w.net(&peer.host_port()),
                ]
                .concat(),
                closed,
            )
            .await;
            // No key could be fetched, so no entry verifies: 1.
            ran.exits(1);
            reached(&peer, shape);
            if !closed {
                // The reason names the jku and what met the fetch, whichever part failed.
                let answer: Value = serde_json::from_str(&ran.stdout).unwrap();
                let block = &answer["card_signature"];
                let sig = &block["signatures"][0];
                assert_eq!(sig["jku"], jku.as_str(), "{block}");
                assert_eq!(sig["result"], "no_key", "{block}");
                let reason = sig["reason"].as_str().unwrap();
                assert!(
                    reason.contains("jku fetch failed")
                        && reason.contains(RESET)
                        && reason.contains(jku.as_str()),
                    "{block}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_server_that_resets_ends_terms_verify_with_1_naming_the_proposal() {
    let w = World::new();
    for closed in STDOUTS {
        for shape in Shape::ALL {
            let peer = HostilePeer::start(&w.ca, shape).await;
            let url = format!("{}/terms/standing.json", peer.base());
            let card = json!({
                "name": "hostile terms",
                "capabilities": {"extensions": [{
                    "uri": conduct_walker::terms::TERMS_EXTENSION_URI, "required": false,
                    "params": {"sow_spec": "0.18.0-draft", "proposals": [{
                        "url": url, "digest": format!("sha256:{}", "0".repeat(64)),
                        "offering": "reconcile-statement"
                    }]}
                }]}
            });
            let dir = w.run_dir(shape, closed);
            let card_path = dir.join("card.json");
            std::fs::write(&card_path, serde_json::to_vec(&card).unwrap()).unwrap();
            let ran = run(
                &dir,
                &[
                    &["terms", "verify", "--file", card_path.to_str().unwrap()][..],
                    &w.net(&peer.host_port()),
                ]
                .concat(),
                closed,
            )
            .await;
            // A listed proposal that did not verify: 1.
            ran.exits(1);
            reached(&peer, shape);
            if !closed {
                ran.says(&[&url, "fetch_failed", RESET, "0 of 1 proposals verified"]);
            }
        }
    }
}

/// A store holding one record the hostile intake accepted half an hour ago (so the follower
/// reads it) and `queued` more waiting to be sent to it.
fn store_filed_with(db: &Path, intake: &str, queued: u64) {
    let store = Store::open(db).unwrap();
    let then = rfc3339(chrono::Utc::now() - chrono::Duration::minutes(30));
    let first = store
        .insert_record(&store_support::unsigned(store_support::record_bytes(
            1, true,
        )))
        .unwrap();
    store_support::file_accepted(store.connection(), first.row.id, intake, "1.2.3.4", &then);
    for i in 0..queued {
        let rec = store
            .insert_record(&store_support::unsigned(store_support::record_bytes(
                i + 2,
                true,
            )))
            .unwrap();
        outbox::insert(
            store.connection(),
            &NewSubmission {
                record_id: rec.row.id,
                intake_url: intake,
                lane: "address",
                identity: "1.2.3.4",
                endpoint: "https://agent.example/a2a",
                state: SubmissionState::Queued,
                next_attempt_at: None,
                last_error: None,
                now: &then,
            },
        )
        .unwrap();
    }
    store.checkpoint().unwrap();
}

const ENDPOINT: &str = "https://agent.example/a2a";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ledger_that_resets_leaves_follow_pull_verify_and_ring_inputs_alive_and_the_store_whole()
{
    let w = World::new();
    for closed in STDOUTS {
        for shape in Shape::ALL {
            let peer = HostilePeer::start(&w.ca, shape).await;
            let intake = format!("{}/witness", peer.base());
            let dir = w.run_dir(shape, closed);
            let db = dir.join("walker.db");
            store_filed_with(&db, &intake, 0);
            let db_arg = db.to_str().unwrap();
            let hp = peer.host_port();
            let net = w.net(&hp);

            // A pass whose reads got no usable answer opens no finding (they are tried again
            // later): 0.
            let ran = run(
                &dir,
                &[&["ledger", "follow", "--db", db_arg][..], &net].concat(),
                closed,
            )
            .await;
            ran.exits(0);
            reached(&peer, shape);
            if !closed {
                ran.says(&[&intake, "without a usable answer", "the last: "]);
            }

            // Its own test names what it says (`ledger_pull_of_a_ledger_that_resets_every_read_
            // exits_2_naming_it`); here: it ends by itself with its code.
            let ran = run(
                &dir,
                &[
                    &["ledger", "pull", "--db", db_arg, "--endpoint", ENDPOINT][..],
                    &["--intake", &intake],
                    &net,
                ]
                .concat(),
                closed,
            )
            .await;
            ran.ended_by_itself();
            ran.exits(2);
            if !closed {
                ran.says(&[&intake]);
            }

            // Could not be checked: 2, the one line on stderr naming the read and the reset.
            let ran = run(
                &dir,
                &[&["ledger", "verify", "--intake", &intake][..], &net].concat(),
                closed,
            )
            .await;
            ran.exits(2).says(&[
                "conduct-walker: error: could not check",
                &format!("{}/ledger/head", peer.base()),
                RESET,
            ]);

            // `ring inputs` reads only the store (it has no peer): after a follower that
            // anchored nothing, no files, 0.
            let inputs = dir.join("inputs");
            let ran = run(
                &dir,
                &[
                    "ring",
                    "inputs",
                    "--db",
                    db_arg,
                    "--month",
                    "2026-09",
                    "--endpoint",
                    ENDPOINT,
                    "--out",
                    inputs.to_str().unwrap(),
                ],
                closed,
            )
            .await;
            ran.exits(0);
            if !closed {
                ran.says(&["0 witness files"]);
            }
            assert!(inputs.is_dir(), "{}", ran.what);

            // Nothing the ledger did touched our record or its filing.
            let store = Store::open_read_only(&db).unwrap();
            assert_eq!(store.count().unwrap(), 1);
            let row = outbox::get(store.connection(), 1).unwrap();
            assert_eq!(row.state, SubmissionState::Filed, "{row:?}");
            let report = conduct_walker::store::verify::verify_all(&store, |_, _| {}).unwrap();
            assert!(report.is_ok(), "{shape:?}");
        }
    }
}

/// docs/reference/exit-codes.md: `ledger pull` exits 2 for "a ledger that cannot be read". A
/// ledger that resets every connection is read by nothing; the pull used to exit 0 and print "0
/// batch entr(y/ies) read up to entry 0" without a word of the failure (the follower pass it
/// starts with kept the head's transport error to itself). It now says what the head read met.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledger_pull_of_a_ledger_that_resets_every_read_exits_2_naming_it() {
    let w = World::new();
    for shape in Shape::ALL {
        let peer = HostilePeer::start(&w.ca, shape).await;
        let intake = format!("{}/witness", peer.base());
        let dir = w.run_dir(shape, false);
        let db = dir.join("walker.db");
        store_filed_with(&db, &intake, 0);
        let ran = run(
            &dir,
            &[
                &[
                    "ledger",
                    "pull",
                    "--db",
                    db.to_str().unwrap(),
                    "--endpoint",
                    ENDPOINT,
                    "--intake",
                    &intake,
                ][..],
                &w.net(&peer.host_port()),
            ]
            .concat(),
            false,
        )
        .await;
        ran.exits(2).says(&[&peer.host_port(), RESET]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_receiver_that_resets_ends_alerts_test_with_1_naming_the_channel() {
    let w = World::new();
    std::fs::write(
        w.dir.path().join("hook.secret"),
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n",
    )
    .unwrap();
    for closed in STDOUTS {
        for shape in Shape::ALL {
            let peer = HostilePeer::start(&w.ca, shape).await;
            let config = w.dir.path().join(format!("walker-{shape:?}-{closed}.toml"));
            std::fs::write(
                &config,
                format!(
                    r#"[witness]
name = "peer resets"
vantage = "loopback"

[network]
extra_ca = ["ca.pem"]

[daemon]
database = "walker.db"
listen = "off"

[[target]]
name = "alpha"
origin = "https://alpha.example"
schedule = "@daily"

[alerts]
allow_hosts = ["{hp}"]

[[alerts.channel]]
name = "hook"
kind = "webhook"
url = "{base}/hook"
secret_file = "hook.secret"
"#,
                    hp = peer.host_port(),
                    base = peer.base()
                ),
            )
            .unwrap();
            let ran = run(
                w.dir.path(),
                &["alerts", "test", "--config", config.to_str().unwrap()],
                closed,
            )
            .await;
            // A channel did not take the test message: 1.
            ran.exits(1);
            reached(&peer, shape);
            if !closed {
                ran.says(&["hook (webhook): failed", RESET]);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_intake_that_resets_or_cuts_its_201_ends_outbox_drain_with_1_and_a_row_saying_why() {
    let w = World::new();
    let shapes = [Shape::ALL.as_slice(), &[Shape::CutAcceptance]].concat();
    for closed in STDOUTS {
        for &shape in &shapes {
            let peer = HostilePeer::start(&w.ca, shape).await;
            let intake = format!("{}/witness", peer.base());
            let dir = w.run_dir(shape, closed);
            let db = dir.join("walker.db");
            // Row 1 is the filed record; row 2 is due now.
            store_filed_with(&db, &intake, 1);
            let ran = run(
                &dir,
                &[
                    &["outbox", "drain", "--db", db.to_str().unwrap()][..],
                    &w.net(&peer.host_port()),
                ]
                .concat(),
                closed,
            )
            .await;
            // Not filed, kept for a retry or a lookup: 1. Drain prints counts; the row names
            // the intake and what happened.
            ran.exits(1);
            reached(&peer, shape);
            if !closed {
                // The count, then the row that waits: its intake and what met the request.
                ran.says(&[
                    "sent 1: 0 filed, 0 refused, 1 still queued",
                    &intake,
                    "reset by peer",
                ]);
            }
            let store = Store::open_read_only(&db).unwrap();
            assert_eq!(store.count().unwrap(), 2);
            let row = outbox::get(store.connection(), 2).unwrap();
            assert_eq!(row.attempts, 1, "{}: {row:?}", ran.what);
            row_says_why(&row, shape, &intake, &ran.what);
        }
    }
}

/// `demo` walks loopback agents of its own and has no flag that names a peer, so no hostile
/// peer can be put in its way; what it can meet is a reader that went away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_into_a_closed_stdout_still_walks_stores_and_files_every_record_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let ran = run(
        dir.path(),
        &["demo", "--out-dir", dir.path().to_str().unwrap()],
        true,
    )
    .await;
    // 0: every scenario got the verdict it should, though nobody read it.
    ran.exits(0);
    let written: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("walk_") && n.ends_with(".json"))
        .collect();
    // Nine scenarios, the signed card, the bound task (as tests/cli_walk.rs counts them).
    assert_eq!(written.len(), 11, "{written:?}\n{}", ran.stderr);
    let store = Store::open_read_only(&dir.path().join("walker.db")).unwrap();
    assert!(store.count().unwrap() >= 11);
    let filed = store
        .connection()
        .query_row(
            "SELECT count(*) FROM submissions WHERE state = 'filed'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap();
    // ... the caller walked back and the origin told (issue 44), filed but not written out.
    assert_eq!(filed, 13, "every record filed with the demo's intake");
}
