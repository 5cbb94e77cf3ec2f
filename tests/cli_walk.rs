//! The real binary: `walk` exit codes, refusals, `--json`, `--out`, and the demo.

use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa, scenario};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_conduct-walker"))
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A fresh sandbox CA, a temporary directory, and the CA's PEM written into it.
fn ca_in_temp_dir() -> (SandboxCa, tempfile::TempDir, std::path::PathBuf) {
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    let ca_path = dir.path().join("ca.pem");
    ca.write_pem(&ca_path).unwrap();
    (ca, dir, ca_path)
}

async fn run(cmd: Command) -> Output {
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.output().await.unwrap()
}

fn walk_args(cmd: &mut Command, origin: &str) {
    cmd.args([
        "walk",
        "--origin",
        origin,
        "--witness-name",
        "cli test",
        "--vantage",
        "loopback",
    ]);
}

#[tokio::test]
async fn http_origin_is_refused_with_exit_2() {
    let mut cmd = bin();
    walk_args(&mut cmd, "http://127.0.0.1:9");
    cmd.arg("--allow-private-network");
    let out = run(cmd).await;
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("only https://"), "{err}");
}

#[tokio::test]
async fn loopback_origin_without_the_flag_is_refused_with_exit_2() {
    let mut cmd = bin();
    walk_args(&mut cmd, "https://127.0.0.1:9");
    let out = run(cmd).await;
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("loopback") && err.contains("--allow-private-network"),
        "{err}"
    );
}

#[tokio::test]
async fn unreadable_ca_cert_is_exit_2_naming_the_file() {
    let mut cmd = bin();
    walk_args(&mut cmd, "https://127.0.0.1:9");
    cmd.args([
        "--allow-private-network",
        "--ca-cert",
        "/nonexistent/ca.pem",
    ]);
    let out = run(cmd).await;
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("/nonexistent/ca.pem"), "{err}");
}

#[tokio::test]
async fn pass_exits_0_and_writes_the_canonical_record() {
    let (ca, dir, ca_path) = ca_in_temp_dir();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let out_path = dir.path().join("rec.json");
    let mut cmd = bin();
    walk_args(&mut cmd, &agent.origin());
    cmd.args(["--mode", "a2a", "--allow-private-network", "--ca-cert"])
        .arg(&ca_path)
        .arg("--out")
        .arg(&out_path);
    let out = run(cmd).await;
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{err}");
    let bytes = std::fs::read(&out_path).unwrap();
    let sha = conduct_walker::digest::sha256_hex(&bytes);
    assert!(
        stdout.starts_with(&format!("PASS 7/7  sha256 {sha}")),
        "{stdout}"
    );
    assert!(stdout.contains("  pass  endpoint_bound"));
    assert!(stdout.contains("  n3 POST"));
}

#[tokio::test]
async fn fail_exits_1_and_json_names_transport_errors() {
    let (ca, dir, ca_path) = ca_in_temp_dir();
    let agent = SandboxAgent::start(&ca, scenario("huge-reply").unwrap().behaviour)
        .await
        .unwrap();
    let mut cmd = bin();
    walk_args(&mut cmd, &agent.origin());
    cmd.current_dir(dir.path());
    cmd.args([
        "--mode",
        "a2a",
        "--json",
        "--allow-private-network",
        "--ca-cert",
    ])
    .arg(&ca_path);
    let out = run(cmd).await;
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let sha = v["sha256"].as_str().unwrap();
    assert!(
        v["transport_errors"]["3"]
            .as_str()
            .unwrap()
            .contains("too large")
    );
    assert_eq!(v["record"]["verdict"]["outcome"], "FAIL");
    // Default file name: walk_<sha12>.json in the working directory, holding the canonical bytes.
    let written = std::fs::read(dir.path().join(format!("walk_{}.json", &sha[..12]))).unwrap();
    assert_eq!(conduct_walker::digest::sha256_hex(&written), sha);
}

#[tokio::test]
async fn demo_under_the_reference_profile_expects_the_sdk_default_mcp_server_to_fail() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = bin();
    cmd.args(["demo", "--request-profile", "reference", "--out-dir"])
        .arg(dir.path());
    let out = run(cmd).await;
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{err}");
    assert!(
        stdout.contains("request profile:     reference"),
        "{stdout}"
    );
    let streamable = stdout
        .split("\n== ")
        .find(|s| s.starts_with("honest-mcp-streamable "))
        .expect("the streamable MCP scenario was walked");
    assert!(streamable.contains("FAIL 3/4"), "{streamable}");
    assert!(streamable.contains("/mcp -> 406"), "{streamable}");
}

#[tokio::test]
async fn demo_runs_without_network_and_gets_every_expected_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = bin();
    cmd.arg("demo").arg("--out-dir").arg(dir.path());
    let out = run(cmd).await;
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{err}");
    assert!(stdout.contains("each verdict as expected"), "{stdout}");
    // One walk binds the A2A Task its agent returned to the emulator's task ledger, which
    // accepts it, and the answer is printed.
    let bound = stdout
        .split("\n== ")
        .find(|s| s.starts_with("task-reply "))
        .expect("the task binding walk");
    assert!(
        bound.contains("/witness/task: sent once, the ledger answered http 201"),
        "{bound}"
    );
    assert!(bound.contains(r#""status":"stored""#), "{bound}");
    let records = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name().into_string().unwrap();
            name.starts_with("walk_") && name.ends_with(".json")
        })
        .count();
    // Nine scenarios, the signed card, and the walk whose A2A Task is bound (spec §5.1).
    assert_eq!(records, 11);
    // Every record was signed, stored and filed with the emulator: those eleven, the caller
    // walked back (§11.6), whose card names the emulator as its intake, and the origin told of
    // its walk (§11.5).
    assert_eq!(
        stdout.matches("filed (answer accepted, http 201)").count(),
        13,
        "{stdout}"
    );
    let walked_back = stdout
        .split("\n== ")
        .find(|s| s.starts_with("reciprocal walk: "))
        .expect("the reciprocal walk");
    assert!(
        walked_back.contains("answered: reciprocal scheduled")
            && walked_back.contains("filed (answer accepted, http 201)"),
        "{walked_back}"
    );
    let told = stdout
        .split("\n== ")
        .find(|s| s.starts_with("notify: "))
        .expect("the notify walk");
    assert!(
        told.contains(r#"notify_status: {"sent":true,"status":202}"#)
            && told.contains(r#"received by the origin: event "measured", status "PASS""#),
        "{told}"
    );
    // The signed card verifies the way the reference 1.5.0 checks it (conduct-walk.md §4.3).
    let signed = stdout
        .split("\n== ")
        .find(|s| s.starts_with("signed-card "))
        .expect("the signed card was walked");
    assert!(
        signed.contains("card signature: verified: signature[0] verifies in served-rfc8785"),
        "{signed}"
    );
    let db = dir.path().join("walker.db");
    let list = bin()
        .args(["records", "list", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&list.stdout)
            .lines()
            .filter(|l| l.ends_with("signed"))
            .count(),
        13,
        "the eleven, the caller walked back and the origin told, every one signed"
    );
    let verify = bin()
        .args(["records", "verify", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(0));
    // The demo ends with the whole loop (issue 23): anchored by the operator batch, inclusion
    // verified by the follower, and `ledger status` says so from the store.
    assert!(
        stdout.contains("the intake's operator batch anchored 13 record(s) as ledger entry 1"),
        "{stdout}"
    );
    assert_eq!(
        stdout
            .matches("anchored at entry 1, inclusion verified")
            .count(),
        13,
        "{stdout}"
    );
    let status = bin()
        .args(["ledger", "status", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&status.stdout).contains(
        "13 filed, 0 pending, 13 anchored (13 inclusion verified), 0 overdue, 0 finding(s)"
    ));
}

#[test]
fn usage_errors_exit_2() {
    let out = bin().args(["walk", "--origin"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = bin()
        .args([
            "walk",
            "--origin",
            "https://a.example",
            "--witness-name",
            "x",
            "--vantage",
            "y",
            "--mode",
            "grpc",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test]
async fn walk_with_db_and_key_stores_a_signed_record_auditors_can_verify() {
    let (ca, dir, ca_path) = ca_in_temp_dir();
    let key = dir.path().join("witness.pem");
    assert!(
        bin()
            .arg("keygen")
            .arg("--out")
            .arg(&key)
            .output()
            .unwrap()
            .status
            .success()
    );
    let db = dir.path().join("walker.db");
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let mut cmd = bin();
    walk_args(&mut cmd, &agent.origin());
    cmd.current_dir(dir.path());
    cmd.args([
        "--mode",
        "a2a",
        "--json",
        "--allow-private-network",
        "--ca-cert",
    ])
    .arg(&ca_path);
    cmd.arg("--db").arg(&db).arg("--key").arg(&key);
    let out = run(cmd).await;
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let sha = v["sha256"].as_str().unwrap().to_string();
    let signature = v["signature_ed25519_b64"].as_str().unwrap().to_string();
    let public_key = v["public_key_ed25519_b64"].as_str().unwrap().to_string();

    // The store holds exactly those bytes, and the auditor commands agree.
    let raw = bin()
        .args(["records", "raw", &sha[..12], "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        raw.status.success(),
        "{}",
        String::from_utf8_lossy(&raw.stderr)
    );
    assert_eq!(conduct_walker::digest::sha256_hex(&raw.stdout), sha);
    let verify = bin()
        .args(["records", "verify", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(
        verify.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    let file = dir.path().join(format!("walk_{}.json", &sha[..12]));
    let vf = bin()
        .args(["records", "verify-file"])
        .arg(&file)
        .args(["--signature", &signature, "--public-key", &public_key])
        .output()
        .unwrap();
    assert_eq!(
        vf.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&vf.stderr)
    );
}

#[test]
fn key_url_without_a_key_is_refused() {
    let out = bin()
        .args([
            "walk",
            "--origin",
            "https://127.0.0.1:9",
            "--witness-name",
            "x",
            "--vantage",
            "y",
        ])
        .args([
            "--key-url",
            "https://w.example/k.json",
            "--allow-private-network",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--key-url needs a signing key"));
}

#[tokio::test]
async fn a_key_url_must_be_an_https_url_with_a_host() {
    // The same rule as the config file's key_url: a URL with no host is refused too.
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("k.pem");
    conduct_walker::witness::keys::generate_key_file(&key).unwrap();
    for (url, why) in [
        ("https://", "empty host"),
        ("http://w.example/k.json", "only https://"),
    ] {
        let mut cmd = bin();
        walk_args(&mut cmd, "https://agent.example");
        cmd.arg("--key").arg(&key).args(["--key-url", url]);
        let out = run(cmd).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {err}");
        assert!(
            err.contains("--key-url") && err.contains(why),
            "{url}: {err}"
        );
    }
}

#[tokio::test]
async fn a_bad_out_path_is_refused_before_anything_is_walked_stored_or_sent() {
    let (ca, dir, ca_path) = ca_in_temp_dir();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let db = dir.path().join("walker.db");
    for (bad, says) in [
        (
            dir.path().join("no-such-dir").join("rec.json"),
            "does not exist",
        ),
        (dir.path().to_path_buf(), "is a directory"),
    ] {
        let mut cmd = bin();
        walk_args(&mut cmd, &agent.origin());
        cmd.args(["--mode", "a2a", "--allow-private-network", "--ca-cert"])
            .arg(&ca_path)
            .arg("--db")
            .arg(&db)
            .arg("--out")
            .arg(&bad);
        let out = run(cmd).await;
        let (stdout, err) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{stdout}{err}");
        assert!(err.contains("--out") && err.contains(says), "{err}");
    }
    assert_eq!(agent.card_fetches(), 0, "nothing was walked");
    assert!(!db.exists(), "nothing was stored");
}

#[tokio::test]
async fn a_commitments_salt_and_kept_record_are_written_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let (ca, dir, ca_path) = ca_in_temp_dir();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let out_path = dir.path().join("rec.json");
    let mut cmd = bin();
    walk_args(&mut cmd, &agent.origin());
    cmd.args([
        "--mode",
        "a2a",
        "--privacy",
        "commitment",
        "--allow-private-network",
        "--ca-cert",
    ])
    .arg(&ca_path)
    .arg("--out")
    .arg(&out_path);
    let out = run(cmd).await;
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{err}");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let mut secrets = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("walk_") {
            assert_eq!(mode(&path), 0o600, "{name}");
            secrets += 1;
        }
    }
    assert_eq!(secrets, 2, "the kept full record and its salt");
    assert!(
        !std::fs::read_dir(dir.path()).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("probe")),
        "the output check leaves nothing behind"
    );
}

#[tokio::test]
async fn an_origin_with_a_path_is_walked_as_given_and_explained() {
    let (ca, dir, ca_path) = ca_in_temp_dir();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let mut cmd = bin();
    walk_args(&mut cmd, &format!("{}/agents/a/", agent.origin()));
    cmd.args(["--allow-private-network", "--ca-cert"])
        .arg(&ca_path)
        .arg("--out")
        .arg(dir.path().join("r.json"));
    let out = run(cmd).await;
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{err}");
    assert!(
        err.contains("--origin has a path (/agents/a)")
            && err.contains(&format!(
                "{}/agents/a/.well-known/agent-card.json",
                agent.origin()
            )),
        "{err}"
    );
    assert_eq!(
        agent.card_fetches(),
        0,
        "the host's own card was not what was asked"
    );
}

#[tokio::test]
async fn consent_is_read_at_the_origin_root_when_the_origin_has_a_path() {
    let (ca, dir, ca_path) = ca_in_temp_dir();
    let agent = SandboxAgent::start(
        &ca,
        Behaviour {
            consent: Some(serde_json::json!({"listing": "decline"})),
            ..Behaviour::default()
        },
    )
    .await
    .unwrap();
    let mut cmd = bin();
    walk_args(&mut cmd, &format!("{}/agent1", agent.origin()));
    cmd.current_dir(dir.path());
    cmd.args(["--mode", "a2a", "--allow-private-network", "--ca-cert"])
        .arg(&ca_path);
    let out = run(cmd).await;
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{err}");
    assert!(
        err.contains(&format!(
            "{}/.well-known/mcp-conduct.json says \"listing\": \"decline\"",
            agent.origin()
        )),
        "{err}"
    );
    assert_eq!(agent.card_fetches(), 0);
}

#[tokio::test]
async fn a_url_with_credentials_is_refused_before_anything_is_fetched() {
    let (ca, dir, ca_path) = ca_in_temp_dir();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let with_credentials = agent.origin().replace("https://", "https://user:pw@");
    for (flag, value) in [
        ("--origin", with_credentials.clone()),
        ("--endpoint", format!("{with_credentials}/mcp")),
        ("--intake", format!("{with_credentials}/witness")),
    ] {
        let mut cmd = bin();
        walk_args(&mut cmd, &agent.origin());
        cmd.current_dir(dir.path());
        cmd.args(["--mode", "a2a", "--allow-private-network", "--ca-cert"])
            .arg(&ca_path);
        if flag == "--origin" {
            cmd = bin();
            walk_args(&mut cmd, &value);
            cmd.current_dir(dir.path());
            cmd.args(["--mode", "a2a", "--allow-private-network", "--ca-cert"])
                .arg(&ca_path);
        } else {
            cmd.args([flag, &value]);
        }
        let out = run(cmd).await;
        let (stdout, err) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{flag}: {stdout}{err}");
        assert!(err.contains("user name or password"), "{flag}: {err}");
    }
    assert_eq!(agent.card_fetches(), 0, "nothing may be fetched");
    // Nothing was written either: no record file, no store.
    let written: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "ca.pem")
        .collect();
    assert!(written.is_empty(), "{written:?}");
}
