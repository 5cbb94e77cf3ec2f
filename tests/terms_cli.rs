//! `conduct-walker terms verify` through the real binary against loopback HTTPS agents.

use conduct_walker::jcs::parse_i_json;
use conduct_walker::sandbox::{HttpsServer, Resp, SandboxCa, handler};
use conduct_walker::terms::{TERMS_EXTENSION_URI, sow};
use serde_json::{Value, json};
use std::path::Path;

fn standing_bytes() -> Vec<u8> {
    std::fs::read(conduct_walker::sandbox::test_vectors(
        "sow/standing-proposal.signed.json",
    ))
    .unwrap()
}

fn standing_digest() -> String {
    sow::terms_digest(&parse_i_json(&standing_bytes()).unwrap()).unwrap()
}

fn card(entries: Value) -> Value {
    json!({
        "name": "stonework",
        "description": "Statement reconciliation for XCR 2.5 per task.",
        "skills": [
            {"id": "reconcile-statement", "description": "Reconcile one statement"},
            {"id": "forecast", "description": "Cash forecast, only $40"}
        ],
        "capabilities": {"extensions": [{
            "uri": TERMS_EXTENSION_URI, "required": false,
            "params": {"sow_spec": "0.18.0-draft", "proposals": entries}
        }]}
    })
}

/// Serves `/card.json` (the card given) and the proposal documents.
async fn agent(ca: &SandboxCa, card: Value) -> HttpsServer {
    let card_bytes = serde_json::to_vec(&card).unwrap();
    HttpsServer::start(
        ca,
        handler(move |req| match req.path.as_str() {
            "/.well-known/agent-card.json" => {
                Resp::bytes(200, "application/json", card_bytes.clone())
            }
            "/terms/good.json" => Resp::bytes(200, "application/json", standing_bytes()),
            "/terms/moved.json" => Resp::empty(301).with_header("location", "/terms/good.json"),
            _ => Resp::bytes(404, "text/plain", "not found"),
        }),
    )
    .await
    .unwrap()
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn run(args: &[&str]) -> Run {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_conduct-walker"))
        .arg("terms")
        .arg("verify")
        .args(args)
        .output()
        .await
        .unwrap();
    Run {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn host_port(server: &HttpsServer) -> String {
    server.base().trim_start_matches("https://").to_string()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn file_card_with_a_verified_proposal_exits_zero_and_summarises_terms() {
    let ca = SandboxCa::generate();
    let tmp = tempfile::tempdir().unwrap();
    let ca_pem = write(tmp.path(), "ca.pem", ca.cert_pem().as_bytes());
    // The card names the server's own URL later, so start it with a placeholder card.
    let server = agent(&ca, json!({})).await;
    let card = card(json!([{
        "url": format!("{}/terms/good.json", server.base()),
        "digest": standing_digest(), "offering": "reconcile-statement"
    }]));
    let card_path = write(tmp.path(), "card.json", &serde_json::to_vec(&card).unwrap());
    let hp = host_port(&server);
    let r = run(&[
        "--file",
        &card_path,
        "--ca-cert",
        &ca_pem,
        "--allow-private-network",
        "--allow-host",
        &hp,
    ])
    .await;
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    for expected in [
        "outcome: verified",
        "price [grade: enforced]",
        "per_task=2500000",
        "smallest unit of XCR",
        "promises [grade: recorded]: no_training=true",
        "retention [grade: enforced]: max_days=30",
        "volume [grade: enforced]: per_day=20, per_hour=5",
        "out of scope [grade: enforced]: file the return",
        "qualification salesforce-licence [grade: evidence]",
        "skill \"forecast\" is no listed proposal's offering",
        "\"$40\", which no verified proposal backs",
        "1 of 1 proposals verified",
        "no evidence of its conduct",
    ] {
        assert!(
            r.stdout.contains(expected),
            "missing {expected:?} in:\n{}",
            r.stdout
        );
    }
    // `XCR 2.5` is backed by the verified 2500000 in the smallest unit.
    assert!(!r.stdout.contains("\"XCR 2.5\""), "{}", r.stdout);
    assert!(!r.stdout.to_lowercase().contains("certif"));

    // The same card without naming the proposal host: only the card names it, so refused.
    let r = run(&[
        "--file",
        &card_path,
        "--ca-cert",
        &ca_pem,
        "--allow-private-network",
    ])
    .await;
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("outcome: fetch_failed - no terms stated"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("refused"), "{}", r.stdout);
    assert!(r.stdout.contains("0 of 1 proposals verified"));
}

#[tokio::test(flavor = "multi_thread")]
async fn url_card_with_failing_proposals_exits_one_naming_each_outcome() {
    let ca = SandboxCa::generate();
    let tmp = tempfile::tempdir().unwrap();
    let ca_pem = write(tmp.path(), "ca.pem", ca.cert_pem().as_bytes());
    // Two servers: the port is only known after binding, so the card uses a second agent's
    // proposals and is served by the first.
    let proposals = agent(&ca, json!({})).await;
    let p = proposals.base();
    let card = card(json!([
        {"url": format!("{p}/terms/good.json"), "digest": standing_digest()},
        {"url": format!("{p}/terms/good.json"), "digest": format!("sha256:{}", "0".repeat(64))},
        {"url": format!("{p}/terms/gone.json"), "digest": standing_digest()},
        {"url": format!("{p}/terms/moved.json"), "digest": standing_digest()}
    ]));
    let card_server = agent(&ca, card).await;
    let url = format!("{}/.well-known/agent-card.json", card_server.base());
    let hp = host_port(&proposals);
    let r = run(&[
        "--url",
        &url,
        "--ca-cert",
        &ca_pem,
        "--allow-private-network",
        "--allow-host",
        &hp,
    ])
    .await;
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("proposal 1 of 4"));
    assert!(r.stdout.contains("outcome: verified"));
    assert!(
        r.stdout
            .contains("outcome: digest_mismatch - no terms stated"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("http 404"), "{}", r.stdout);
    assert!(
        r.stdout.contains("http 301") && r.stdout.contains("not followed"),
        "{}",
        r.stdout
    );
    assert_eq!(
        r.stdout.matches("outcome: fetch_failed").count(),
        2,
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("1 of 4 proposals verified"));

    // --json prints the record block and its lines.
    let r = run(&[
        "--url",
        &url,
        "--ca-cert",
        &ca_pem,
        "--allow-private-network",
        "--allow-host",
        &hp,
        "--json",
    ])
    .await;
    assert_eq!(r.code, 1);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let outcomes: Vec<&str> = v["terms"]["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        [
            "verified",
            "digest_mismatch",
            "fetch_failed",
            "fetch_failed"
        ]
    );
    assert!(!v["establishes"].as_array().unwrap().is_empty());
    assert!(!v["does_not_establish"].as_array().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn card_without_the_extension_states_nothing_and_exits_one() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(
        tmp.path(),
        "card.json",
        br#"{"name":"quiet","capabilities":{"extensions":[]}}"#,
    );
    let r = run(&["--file", &path]).await;
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("states nothing"), "{}", r.stdout);
    assert!(!r.stdout.contains("verified"));
}

#[tokio::test(flavor = "multi_thread")]
async fn usage_and_io_errors_exit_two() {
    let ca = SandboxCa::generate();
    let tmp = tempfile::tempdir().unwrap();
    let ca_pem = write(tmp.path(), "ca.pem", ca.cert_pem().as_bytes());
    let server = agent(&ca, card(json!([]))).await;
    let url = format!("{}/.well-known/agent-card.json", server.base());
    // Neither source, and both sources.
    assert_eq!(run(&[]).await.code, 2);
    assert_eq!(run(&["--url", &url, "--file", "x.json"]).await.code, 2);
    // Missing file, non-JSON file, malformed --allow-host, unreadable CA.
    assert_eq!(run(&["--file", "/nonexistent/card.json"]).await.code, 2);
    let junk = write(tmp.path(), "junk.json", b"not json");
    let r = run(&["--file", &junk]).await;
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("not JSON"), "{}", r.stderr);
    assert_eq!(
        run(&["--file", &junk, "--allow-host", "nohostport"])
            .await
            .code,
        2
    );
    assert_eq!(
        run(&["--file", &junk, "--ca-cert", "/nonexistent.pem"])
            .await
            .code,
        2
    );
    // The card host is loopback: without --allow-private-network the fetch is refused.
    let r = run(&["--url", &url, "--ca-cert", &ca_pem]).await;
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("--allow-private-network"), "{}", r.stderr);
    // The card declares the extension with no proposals: nothing verified, exit 1.
    let r = run(&[
        "--url",
        &url,
        "--ca-cert",
        &ca_pem,
        "--allow-private-network",
    ])
    .await;
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("params.proposals is empty"),
        "{}",
        r.stdout
    );
}
