//! `conduct-walker inspect` through the real binary: a stranger's record (pretty, with its
//! signature given or inside an intake body line), an observation, a ring, a key history and a
//! gate verdict, each one command; and the exits (0 all hold, 1 a failure or an unknown file,
//! 2 usage).

use base64::Engine;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");
const RECORD_SHA: &str = "97b7e4883e8bba3d611314e0e6bee77d24cafce0626d08ff00e0ff498fc93e5d";

fn vector(path: &str) -> PathBuf {
    conduct_walker::sandbox::test_vectors(path)
}

fn inspect(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .arg("inspect")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn json_reports(out: &str) -> Vec<Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_strangers_record_is_checked_with_one_command() {
    use ed25519_dalek::Signer;
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(vector("walks/walk_97b7e4883e8b.json")).unwrap();
    let key = ed25519_dalek::SigningKey::from_bytes(&[46u8; 32]);
    let b64 = base64::engine::general_purpose::STANDARD;
    let signature = b64.encode(key.sign(&bytes).to_bytes());
    let public = key.verifying_key().to_bytes();
    let record: Value = serde_json::from_slice(&bytes).unwrap();
    let pretty = write(
        dir.path(),
        "pretty.json",
        &serde_json::to_vec_pretty(&record).unwrap(),
    );
    let key_doc = write(
        dir.path(),
        "key.json",
        json!({"public_key_ed25519_b64": b64.encode(public)})
            .to_string()
            .as_bytes(),
    );

    // Pretty-printed, key as the key_url document, signature given: identity and signature.
    let (code, out, err) = inspect(&[
        &pretty,
        "--public-key",
        &key_doc,
        "--signature",
        &signature,
        "--json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let r = &json_reports(&out)[0];
    assert_eq!(r["kind"], "walk_record");
    assert_eq!(r["sha256_canonical"], RECORD_SHA);
    assert_eq!(r["canonical_agrees"], false);
    assert_eq!(r["checks"][0]["holds"], true);
    assert!(!r["establishes"].as_array().unwrap().is_empty());
    // The key as hex or base64url works the same; a wrong signature fails (exit 1).
    let (code, out, _) = inspect(&[
        &pretty,
        "--public-key",
        &hex::encode(public),
        "--signature",
        &signature,
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("signature: holds"), "{out}");
    let other = b64.encode(key.sign(b"other").to_bytes());
    let url_key = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(public);
    let (code, out, _) = inspect(&[&pretty, "--public-key", &url_key, "--signature", &other]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("signature: FAILS"), "{out}");
    // No key: said, not failed.
    let (code, out, _) = inspect(&[&pretty]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("signature: not checked"), "{out}");

    // The intake body line carries record, signature and key.
    let body = json!({"record_canonical": String::from_utf8(bytes.clone()).unwrap(),
        "signature_ed25519_b64": signature, "public_key_ed25519_b64": b64.encode(public)});
    let line = write(dir.path(), "body.json", body.to_string().as_bytes());
    let (code, out, err) = inspect(&[&line, "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let r = &json_reports(&out)[0];
    assert_eq!(r["kind"], "intake_body");
    assert!(r["notes"][0].as_str().unwrap().contains(RECORD_SHA), "{r}");
    let mut tampered = body.clone();
    tampered["record_canonical"] = json!(String::from_utf8(bytes).unwrap().replace("PASS", "FAIL"));
    let line = write(dir.path(), "tampered.json", tampered.to_string().as_bytes());
    let (code, out, _) = inspect(&[&line]);
    assert_eq!(code, 1, "{out}");
}

#[test]
fn an_observation_a_ring_a_key_history_and_a_gate_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let answer: Value =
        serde_json::from_slice(&std::fs::read(vector("witness-pool/answer-example.json")).unwrap())
            .unwrap();
    let observation = write(
        dir.path(),
        "obs.json",
        &serde_json::to_vec_pretty(&answer["expected"]["observation"]).unwrap(),
    );
    let key = answer["inputs"]["public_key_ed25519_b64"].as_str().unwrap();
    let ring = vector("rings/real/rings/mcp-horizonshield-dev-mcp/2026-08.json");
    let history: Value = serde_json::from_slice(
        &std::fs::read(vector("rings/real/history/mcp-horizonshield-dev-mcp.json")).unwrap(),
    )
    .unwrap();
    let gate = write(
        dir.path(),
        "gate.json",
        history["entries"][0].to_string().as_bytes(),
    );
    let key_history = vector("witness-pool/key-history-example.json");
    let (code, out, err) = inspect(&[
        &observation,
        ring.to_str().unwrap(),
        key_history.to_str().unwrap(),
        &gate,
        "--public-key",
        key,
        "--json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let kinds: Vec<Value> = json_reports(&out)
        .iter()
        .map(|r| r["kind"].clone())
        .collect();
    assert_eq!(
        kinds,
        ["witness_observation", "ring", "key_history", "gate_verdict"]
    );
    let reports = json_reports(&out);
    assert_eq!(reports[0]["checks"][0]["holds"], true, "{}", reports[0]);
    assert_eq!(reports[1]["canonical_agrees"], true, "{}", reports[1]);
    assert_eq!(reports[2]["checks"][0]["holds"], true, "{}", reports[2]);

    // Another key: the observation is refused (witness_key_mismatch), exit 1.
    let other = base64::engine::general_purpose::STANDARD.encode([1u8; 32]);
    let (code, out, _) = inspect(&[&observation, "--public-key", &other]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("witness_key_mismatch"), "{out}");
    // A ring re-indented is not in ring form: its sha256 is not the chain's.
    let ring_value: Value = serde_json::from_slice(&std::fs::read(&ring).unwrap()).unwrap();
    let compact = write(dir.path(), "ring.json", ring_value.to_string().as_bytes());
    let (code, out, _) = inspect(&[&compact]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("ring_form: FAILS"), "{out}");
}

#[test]
fn unknown_files_exit_1_and_usage_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let unknown = write(dir.path(), "x.json", b"{\"hello\": 1}");
    let (code, out, _) = inspect(&[&unknown]);
    assert_eq!(code, 1);
    assert!(out.contains("expected one of: a walk record"), "{out}");
    let (code, _, err) = inspect(&[&unknown, "--public-key", "AAAA"]);
    assert_eq!(code, 2);
    assert!(err.contains("32"), "{err}");
    let (code, _, _) = inspect(&["/nonexistent/file.json"]);
    assert_eq!(code, 2);
    let (code, _, _) = inspect(&[]);
    assert_eq!(code, 2);
}

#[test]
fn fetch_key_checks_a_record_with_the_key_its_key_url_serves() {
    use conduct_walker::sandbox::{HttpsServer, Resp, SandboxCa, handler};
    use ed25519_dalek::Signer;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    let ca_pem = dir.path().join("ca.pem");
    ca.write_pem(&ca_pem).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let key = ed25519_dalek::SigningKey::from_bytes(&[47u8; 32]);
    let other = ed25519_dalek::SigningKey::from_bytes(&[48u8; 32]);
    // Two key servers: the witness's own key, and another.
    let serve = |k: &ed25519_dalek::SigningKey| {
        let doc = json!({"public_key_ed25519_b64": b64.encode(k.verifying_key().to_bytes())});
        rt.block_on(HttpsServer::start(
            &ca,
            handler(move |_| Resp::json(200, &doc)),
        ))
        .unwrap()
    };
    let (right, wrong) = (serve(&key), serve(&other));
    let body_naming = |server: &HttpsServer| {
        let mut record: Value =
            serde_json::from_slice(&std::fs::read(vector("walks/walk_97b7e4883e8b.json")).unwrap())
                .unwrap();
        let port = server.addr().port();
        record["witness"]["key_url"] = json!(format!("https://localhost:{port}/key"));
        let bytes = conduct_walker::canonical::to_bytes(&record);
        let body = json!({"record_canonical": String::from_utf8(bytes.clone()).unwrap(),
            "signature_ed25519_b64": b64.encode(key.sign(&bytes).to_bytes()),
            "public_key_ed25519_b64": b64.encode(key.verifying_key().to_bytes())});
        let name = format!("body-{port}.json");
        (
            write(dir.path(), &name, body.to_string().as_bytes()),
            format!("localhost:{port}"),
        )
    };
    let ca_arg = ca_pem.to_str().unwrap();
    let fetch = |file: &str, host: &str| {
        let args = [
            file,
            "--fetch-key",
            "--ca-cert",
            ca_arg,
            "--allow-private-network",
        ];
        inspect(&[&args[..], &["--allow-host", host, "--json"]].concat())
    };

    let (file, host) = body_naming(&right);
    let (code, out, err) = fetch(&file, &host);
    assert_eq!(code, 0, "{out}{err}");
    let r = &json_reports(&out)[0];
    let notes = r["notes"].to_string();
    assert!(notes.contains("key fetched from https://localhost:"), "{r}");
    let check = |name: &str| {
        r["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == name)
            .cloned()
    };
    assert_eq!(check("signature").unwrap()["holds"], true, "{r}");
    assert_eq!(check("expected_key").unwrap()["holds"], true, "{r}");

    // A key_url serving another key: the embedded key is not the served one (exit 1).
    let (file, host) = body_naming(&wrong);
    let (code, out, err) = fetch(&file, &host);
    assert_eq!(code, 1, "{out}{err}");
    // The file's own URL admits no private address: without --allow-host, nothing is fetched
    // and the run is an error (exit 2), not a verdict.
    let (code, _, err) = inspect(&[
        &file,
        "--fetch-key",
        "--ca-cert",
        ca_arg,
        "--allow-private-network",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--fetch-key: https://localhost:"), "{err}");
    // Without --fetch-key nothing is fetched: the embedded key alone, not tied to anyone.
    let (code, out, _) = inspect(&[&file, "--json"]);
    assert_eq!(code, 0);
    assert!(!out.contains("key fetched"), "{out}");
}
