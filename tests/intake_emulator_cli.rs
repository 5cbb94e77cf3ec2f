//! `conduct-walker intake-emulator` as a process: it prints its URL, writes its CA for a
//! walker's `--ca-cert`, answers over HTTPS, and refuses a non-loopback listen address.

use conduct_walker::net::{HttpRequest, NetPolicy, Transport, TransportConfig, load_pem_certs};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

/// Kills the child it holds when the test ends, pass or fail.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `intake-emulator` on a loopback port with its CA written to `dir/ca.pem` and its state in
/// `dir/state.sqlite` (plus `extra` arguments); its URL from the first line it prints, and a
/// transport that trusts the written CA.
fn start_emulator(dir: &std::path::Path, extra: &[&std::ffi::OsStr]) -> (Child, String, Transport) {
    let ca_path = dir.join("ca.pem");
    let mut child = Child(
        Command::new(BIN)
            .args(["intake-emulator", "--listen", "127.0.0.1:0", "--tls-ca-out"])
            .arg(&ca_path)
            .arg("--state")
            .arg(dir.join("state.sqlite"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut first = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first
        .trim()
        .strip_prefix("intake emulator: ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();
    let mut policy = NetPolicy::new(true);
    policy.allow_url(&url);
    let mut config = TransportConfig::new(policy);
    config.extra_roots = load_pem_certs(&ca_path).unwrap();
    (child, url, Transport::new(config).unwrap())
}

#[tokio::test]
async fn serves_https_with_the_written_ca() {
    let dir = tempfile::TempDir::new().unwrap();
    let state = dir.path().join("state.sqlite");
    let (_child, url, transport) = start_emulator(dir.path(), &[]);
    assert!(
        url.starts_with("https://127.0.0.1:") && url.ends_with("/witness"),
        "{url}"
    );
    let ex = transport.fetch(&HttpRequest::get(url.clone(), &[])).await;
    assert_eq!(ex.status, 200, "{:?}", ex.transport_error);
    let description: serde_json::Value = serde_json::from_slice(&ex.body).unwrap();
    assert_eq!(description["limits_stated_not_hidden"]["daily_per_ip"], 5);
    assert_eq!(description["pool"], format!("{url}/pending"));
    assert!(state.exists(), "the state file is created at start");
}

#[test]
fn refuses_a_non_loopback_listen_address() {
    let out = Command::new(BIN)
        .args(["intake-emulator", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a loopback address"), "{stderr}");
}

/// The CLI-run emulator's operator routes (ledger.md §4.1 and the emulator-only
/// `/emulator/hooks`) take the key from `--ledger-key-file` (created 0600 when missing, read
/// when present), so a black-box test can anchor, run the schedule and inject a fault, and
/// `ledger verify` names it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_key_file_anchor_hooks_and_verify() {
    let dir = tempfile::TempDir::new().unwrap();
    let ca_path = dir.path().join("ca.pem");
    let key_path = dir.path().join("ledger.key");
    let (child, url, transport) = start_emulator(
        dir.path(),
        &["--ledger-key-file".as_ref(), key_path.as_os_str()],
    );
    let base = url.trim_end_matches("/witness").to_string();
    let key = std::fs::read_to_string(&key_path).unwrap();
    assert_eq!(key.len(), 64, "a fresh random key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let post = |path: &str, key: &str, body: &str| {
        HttpRequest::post(
            format!("{base}{path}"),
            &[("x-ledger-key", key), ("Content-Type", "application/json")],
            body.as_bytes().to_vec(),
        )
    };

    let record = serde_json::json!({
        "schema": "jidec-path-v1", "purpose": "a2a-conduct-walk-v1: https://agent.example/a2a",
        "walked_at": "2026-12-01T00:00:00Z", "walker": {"tool": "conduct-walker", "version": "t"},
        "base": "https://agent.example", "nodes": [{"n": 0}], "assertions": [{"claim": "c"}],
        "verdict": {"ok": true, "outcome": "PASS"}, "witness": {"name": "w", "vantage": "v"},
        "mode": "full", "establishes": ["something"],
        "does_not_establish": ["correctness or quality of any response"],
    });
    let text = String::from_utf8(conduct_walker::canonical::to_bytes(&record)).unwrap();
    let body = serde_json::json!({"record_canonical": text}).to_string();
    let ex = transport.fetch(&post("/witness", "", &body)).await;
    assert_eq!(ex.status, 201, "{}", String::from_utf8_lossy(&ex.body));

    assert_eq!(
        transport
            .fetch(&post("/witness/anchor", "wrong", ""))
            .await
            .status,
        401
    );
    assert_eq!(
        transport
            .fetch(&post("/witness/anchor", &key, ""))
            .await
            .status,
        201
    );
    let ex = transport
        .fetch(&post(
            "/emulator/hooks",
            &key,
            r#"{"hook": "scheduled_run"}"#,
        ))
        .await;
    assert_eq!(
        String::from_utf8_lossy(&ex.body),
        "{\n  \"batches\": [],\n  \"checkpoint\": 2\n}"
    );

    let verify = |extra: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.args([
            "ledger",
            "verify",
            "--intake",
            &url,
            "--allow-private-network",
            "--ca-cert",
        ])
        .arg(&ca_path)
        .args(extra);
        cmd.output().unwrap()
    };
    let out = verify(&[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let ex = transport
        .fetch(&post(
            "/emulator/hooks",
            &key,
            r#"{"hook": "drop_entry", "n": 1}"#,
        ))
        .await;
    assert_eq!(ex.status, 200);
    let ex = transport
        .fetch(&post(
            "/emulator/hooks",
            &key,
            r#"{"hook": "drop_entry", "n": 9}"#,
        ))
        .await;
    assert_eq!(ex.status, 409, "no such entry: refused, said why");
    let out = verify(&[]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("finding: chain_broken: "), "{stdout}");

    // A second start reads the same key file.
    drop(child);
    let child = Child(
        Command::new(BIN)
            .args(["intake-emulator", "--listen", "127.0.0.1:0", "--state"])
            .arg(dir.path().join("state.sqlite"))
            .arg("--ledger-key-file")
            .arg(&key_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    drop(child);
    assert_eq!(std::fs::read_to_string(&key_path).unwrap(), key);
}

/// Issue 34 through the binaries: `intake-emulator --drop-answers 1` stores the record and
/// closes the connection; `walk --submit` leaves the row waiting for a lookup, `outbox list`
/// says so and why, `outbox drain` finds the record at the intake instead of sending it again,
/// and `GET /emulator/posts` shows one POST.
// Multi-thread: the sandbox agent serves from this runtime while the test waits on the binaries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_answers_leaves_a_record_waiting_for_a_lookup_that_outbox_drain_settles() {
    use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
    let dir = tempfile::TempDir::new().unwrap();
    let (_child, url, transport) = start_emulator(
        dir.path(),
        &[
            "--drop-answers".as_ref(),
            "1".as_ref(),
            "--seed".as_ref(),
            "9".as_ref(),
        ],
    );
    let agent_ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&agent_ca, Behaviour::default())
        .await
        .unwrap();
    // One file with both roots: the agent's and the emulator's.
    let both = dir.path().join("both.pem");
    std::fs::write(
        &both,
        format!(
            "{}\n{}",
            agent_ca.cert_pem(),
            std::fs::read_to_string(dir.path().join("ca.pem")).unwrap()
        ),
    )
    .unwrap();
    let db = dir.path().join("walker.db");
    let net = |cmd: &mut Command| {
        cmd.arg("--allow-private-network")
            .arg("--ca-cert")
            .arg(&both)
            .env_remove("STATE_DIRECTORY");
    };
    let mut walk = Command::new(BIN);
    walk.args(["walk", "--origin", &agent.origin(), "--mode", "a2a"])
        .args(["--witness-name", "drop test", "--vantage", "loopback"])
        .args(["--submit", "--intake", &url, "--db"])
        .arg(&db)
        .arg("--out")
        .arg(dir.path().join("r.json"));
    net(&mut walk);
    let out = walk.output().unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("waiting for a lookup"), "{said}");

    let list = Command::new(BIN)
        .args(["outbox", "list", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&list.stdout).to_string();
    assert!(
        listed.contains("sending") && listed.contains("waiting for a lookup (no complete answer"),
        "{listed}"
    );
    assert!(listed.contains("1 waiting for a lookup"), "{listed}");
    let json = Command::new(BIN)
        .args(["outbox", "list", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let row: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&json.stdout)
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(row["outcome"], "awaiting_lookup", "{row}");
    assert!(
        row["summary"]
            .as_str()
            .unwrap()
            .contains("GET <intake>/<sha256>"),
        "{row}"
    );

    // Its backoff over (set due), a drain asks and finds it: filed, nothing POSTed again.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("UPDATE submissions SET next_attempt_at = NULL", [])
        .unwrap();
    let mut drain = Command::new(BIN);
    drain.args(["outbox", "drain", "--db"]).arg(&db);
    net(&mut drain);
    let host = url
        .strip_prefix("https://")
        .and_then(|u| u.split('/').next())
        .unwrap()
        .to_string();
    drain.args(["--allow-host", &host]);
    let drained = drain.output().unwrap();
    let said = String::from_utf8_lossy(&drained.stdout).to_string();
    assert!(
        said.contains("sent 0: 1 filed") && said.contains("looked up 1"),
        "{said}{}",
        String::from_utf8_lossy(&drained.stderr)
    );
    let state: (String, String) = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT state, last_answer FROM submissions", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(state, ("filed".to_string(), "found".to_string()));
    let base = url.trim_end_matches("/witness");
    let ex = transport
        .fetch(&HttpRequest::get(format!("{base}/emulator/posts"), &[]))
        .await;
    let posts: serde_json::Value = serde_json::from_slice(&ex.body).unwrap();
    assert_eq!(posts["dropped_answers"], 1, "{posts}");
    let counts: Vec<u64> = posts["posts"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(counts, [1], "{posts}");
}

#[test]
fn drop_answers_takes_a_share_from_0_to_1() {
    for bad in ["1.5", "-0.1", "ten"] {
        let out = Command::new(BIN)
            .args(["intake-emulator", "--listen", "127.0.0.1:0"])
            .arg(format!("--drop-answers={bad}"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("is not a share from 0 to 1"),
            "{bad}: {stderr}"
        );
    }
}
