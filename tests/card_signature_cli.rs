//! `conduct-walker card verify` through the real binary: --file with pinned keys, --url against a
//! sandbox agent with its JWKS at jku, and the exit codes (0 verified, 1 not, 2 usage/I-O).

use conduct_walker::card_signature::{
    JwsAlg, Profile, signing::sign_entry, signing::with_signature,
};
use conduct_walker::sandbox::{HttpsServer, Resp, SandboxCa, handler};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

fn signed_vectors() -> Value {
    let path = conduct_walker::sandbox::test_vectors("card-signature/signed.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn write(dir: &Path, name: &str, value: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
    path
}

async fn run(args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(BIN)
        .args(args)
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[tokio::test]
async fn file_with_pinned_keys_verifies_every_entry() {
    let s = signed_vectors();
    let dir = tempfile::tempdir().unwrap();
    let card = write(dir.path(), "card.json", &s["card"]);
    let jwks = write(dir.path(), "jwks.json", &s["jwks"]);
    let (code, out, err) = run(&[
        "card",
        "verify",
        "--file",
        card.to_str().unwrap(),
        "--jwks",
        jwks.to_str().unwrap(),
        "--origin",
        "https://stonework.example",
    ])
    .await;
    assert_eq!(code, 0, "{out}{err}");
    for i in 0..4 {
        assert!(
            out.contains(&format!("signature {i}: valid")),
            "entry {i}: {out}"
        );
    }
    assert!(out.contains("profile=sdk key=pinned"), "{out}");
    assert!(out.contains("\nverified\n"), "{out}");
    assert!(
        out.contains("not covered: /supportedInterfaces/0/tenant (implicit_default)"),
        "{out}"
    );
    assert!(
        out.contains("does not establish: that the key which signed"),
        "{out}"
    );

    // --json prints the verdict beside the record block.
    let (code, out, _) = run(&[
        "card",
        "verify",
        "--file",
        card.to_str().unwrap(),
        "--jwks",
        jwks.to_str().unwrap(),
        "--origin",
        "https://stonework.example",
        "--json",
    ])
    .await;
    assert_eq!(code, 0);
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["verdict"], "verified");
    assert_eq!(answer["card_signature"]["verified"], true);
    assert_eq!(answer["card_signature"]["count"], 4);
}

#[tokio::test]
async fn file_whose_signatures_fail_exits_1() {
    let s = signed_vectors();
    let dir = tempfile::tempdir().unwrap();
    let flipped = s["negative_cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "flip_signature_byte")
        .unwrap()["card"]
        .clone();
    let card = write(dir.path(), "card.json", &flipped);
    let jwks = write(dir.path(), "jwks.json", &s["jwks"]);
    let (code, out, err) = run(&[
        "card",
        "verify",
        "--file",
        card.to_str().unwrap(),
        "--jwks",
        jwks.to_str().unwrap(),
        "--origin",
        "https://stonework.example",
    ])
    .await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("signature 0: invalid"), "{out}");
    assert!(out.contains("\nnot verified\n"), "{out}");

    // An unsigned card is a finding too.
    let unsigned = write(dir.path(), "unsigned.json", &json!({"name": "x"}));
    let (code, out, _) = run(&["card", "verify", "--file", unsigned.to_str().unwrap()]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("unsigned"), "{out}");
}

#[tokio::test]
async fn usage_and_io_errors_exit_2() {
    let (code, _, err) = run(&["card", "verify"]).await;
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = run(&["card", "verify", "--file", "/nonexistent/card.json"]).await;
    assert_eq!(code, 2);
    assert!(err.contains("cannot read card file"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{not json").unwrap();
    // A file that is read but is not a card is a verdict (1), not an error, and --json says so.
    let (code, out, _) = run(&["card", "verify", "--file", bad.to_str().unwrap()]).await;
    assert_eq!(code, 1);
    assert!(out.contains("not JSON"), "{out}");
    let (code, out, _) = run(&["card", "verify", "--json", "--file", bad.to_str().unwrap()]).await;
    assert_eq!(code, 1);
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["verdict"], "refused");
    assert!(
        answer["reason"].as_str().unwrap().contains("not JSON"),
        "{out}"
    );
    // Usage errors stay 2: an unknown profile.
    let (code, _, err) = run(&["card", "verify", "--file", "x", "--profile", "nope"]).await;
    assert_eq!(code, 2);
    assert!(err.contains("sdk"), "{err}");
    let (code, _, err) = run(&["card", "verify", "--url", "http://agent.example"]).await;
    assert_eq!(code, 2);
    assert!(err.contains("https"), "{err}");
    let (code, _, _) = run(&[
        "card",
        "verify",
        "--url",
        "https://a.example",
        "--file",
        "x",
    ])
    .await;
    assert_eq!(code, 2);
}

fn sandbox_card() -> Value {
    json!({"name": "Sandbox Agent", "description": "d", "version": "1",
        "provider": {"organization": "Sandbox Org", "url": "https://sandbox.example"},
        "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "S", "description": "D", "tags": ["t"]}]})
}

#[tokio::test(flavor = "multi_thread")]
async fn url_against_a_sandbox_agent_with_jwks_at_jku() {
    use base64::Engine;
    use ed25519_dalek::pkcs8::EncodePrivateKey;
    let sk = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
    let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sk.verifying_key().as_bytes());
    let jwks = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": "agent-1"}]});
    let der = sk.to_pkcs8_der().unwrap();
    let ca = SandboxCa::generate();
    let server = HttpsServer::start(
        &ca,
        handler(move |req| match req.path.as_str() {
            "/.well-known/agent-card.json" => {
                let header = format!(
                    r#"{{"alg":"EdDSA","typ":"JOSE","kid":"agent-1","jku":"{}/.well-known/jwks.json"}}"#,
                    req.base
                );
                let key = jsonwebtoken::EncodingKey::from_ed_der(der.as_bytes());
                let card = sandbox_card();
                let entry = sign_entry(&card, Profile::Sdk, &header, &key, JwsAlg::EdDSA).unwrap();
                Resp::json(200, &with_signature(&card, entry))
            }
            "/.well-known/jwks.json" => Resp::json(200, &jwks),
            "/tampered.json" => {
                // Signed, then edited: the key is found at jku, the signature fails.
                let header = format!(
                    r#"{{"alg":"EdDSA","typ":"JOSE","kid":"agent-1","jku":"{}/.well-known/jwks.json"}}"#,
                    req.base
                );
                let key = jsonwebtoken::EncodingKey::from_ed_der(der.as_bytes());
                let entry =
                    sign_entry(&sandbox_card(), Profile::Sdk, &header, &key, JwsAlg::EdDSA).unwrap();
                let mut card = with_signature(&sandbox_card(), entry);
                card["name"] = json!("Someone Else");
                Resp::json(200, &card)
            }
            _ => Resp::empty(404),
        }),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca_path = dir.path().join("ca.pem");
    ca.write_pem(&ca_path).unwrap();
    let base = server.base();

    let (code, out, err) = run(&[
        "card",
        "verify",
        "--url",
        &base,
        "--ca-cert",
        ca_path.to_str().unwrap(),
        "--allow-private-network",
    ])
    .await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("signature 0: valid alg=EdDSA kid=agent-1 profile=sdk key=jku_same_host"),
        "{out}"
    );

    // Without --allow-private-network the loopback agent is refused: I/O error.
    let (code, _, err) = run(&[
        "card",
        "verify",
        "--url",
        &base,
        "--ca-cert",
        ca_path.to_str().unwrap(),
    ])
    .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("allow-private-network"), "{err}");

    // A card whose one entry cannot verify: exit 1.
    let (code, out, err) = run(&[
        "card",
        "verify",
        "--url",
        &format!("{base}/tampered.json"),
        "--ca-cert",
        ca_path.to_str().unwrap(),
        "--allow-private-network",
    ])
    .await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("signature 0: invalid alg=EdDSA kid=agent-1 key=jku_same_host"),
        "{out}"
    );
}

#[tokio::test]
async fn card_and_jwks_files_have_the_network_paths_caps() {
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("huge.json");
    // 2 MiB of valid JSON: more than the 1 MiB card cap (and the 64 KiB JWKS cap).
    std::fs::write(&huge, format!("[{}0]", "0,".repeat(1024 * 1024))).unwrap();
    let (code, _, err) = run(&["card", "verify", "--file", huge.to_str().unwrap()]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("more than 1048576 bytes"), "{err}");
    let card = write(dir.path(), "card.json", &signed_vectors());
    let (code, _, err) = run(&[
        "card",
        "verify",
        "--file",
        card.to_str().unwrap(),
        "--origin",
        "https://agent.example",
        "--jwks",
        huge.to_str().unwrap(),
    ])
    .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("more than 65536 bytes"), "{err}");
}

#[tokio::test]
async fn every_fetching_command_takes_the_same_network_flags() {
    // --ca-cert is repeatable for card verify as for walk, and each file is read.
    let dir = tempfile::tempdir().unwrap();
    let ca = SandboxCa::generate();
    let good = dir.path().join("ca.pem");
    ca.write_pem(&good).unwrap();
    let missing = dir.path().join("missing.pem");
    let (code, _, err) = run(&[
        "card",
        "verify",
        "--url",
        "https://127.0.0.1:9",
        "--ca-cert",
        good.to_str().unwrap(),
        "--ca-cert",
        missing.to_str().unwrap(),
    ])
    .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("missing.pem"), "{err}");
    // The deadline and body cap have the config keys' ranges, on every command.
    for command in [
        &["card", "verify", "--url", "https://a.example"][..],
        &["terms", "verify", "--url", "https://a.example"][..],
        &[
            "walk",
            "--origin",
            "https://a.example",
            "--witness-name",
            "w",
            "--vantage",
            "v",
        ][..],
    ] {
        let mut args = command.to_vec();
        args.extend(["--request-deadline-secs", "0"]);
        let (code, _, err) = run(&args).await;
        assert_eq!(code, 2, "{command:?}: {err}");
        assert!(
            err.contains("--request-deadline-secs") && err.contains("1..=300"),
            "{command:?}: {err}"
        );
        let mut args = command.to_vec();
        args.extend(["--body-cap-bytes", "10"]);
        let (code, _, err) = run(&args).await;
        assert_eq!(code, 2, "{command:?}: {err}");
        assert!(err.contains("--body-cap-bytes"), "{command:?}: {err}");
    }
}

/// A card signed under the SDK profile with a pinned Ed25519 key whose header names a jku on
/// `https://edited.example`, and the JWK Set to pin: `--file` without `--origin` is judged
/// against the jku's origin.
fn signed_then_edited(card: &Value, edit: impl FnOnce(&mut Value)) -> (Value, Value) {
    use base64::Engine;
    use ed25519_dalek::pkcs8::EncodePrivateKey;
    let sk = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
    let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sk.verifying_key().as_bytes());
    let jwks = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": "k1"}]});
    let der = sk.to_pkcs8_der().unwrap();
    let key = jsonwebtoken::EncodingKey::from_ed_der(der.as_bytes());
    let header =
        r#"{"alg":"EdDSA","typ":"JOSE","kid":"k1","jku":"https://edited.example/jwks.json"}"#;
    let entry = sign_entry(card, Profile::Sdk, header, &key, JwsAlg::EdDSA).unwrap();
    let mut signed = with_signature(card, entry);
    edit(&mut signed);
    (signed, jwks)
}

fn interface_card() -> Value {
    let mut card = sandbox_card();
    card["supportedInterfaces"] = json!([{"url": "https://edited.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]);
    card["url"] = json!("https://edited.example/a2a");
    card
}

#[tokio::test]
async fn cards_edited_after_signing_in_members_a_client_acts_on_do_not_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let verify = |card: &Path, jwks: &Path, extra: &[&str]| {
        let mut args = vec![
            "card".to_string(),
            "verify".into(),
            "--file".into(),
            card.to_str().unwrap().into(),
            "--jwks".into(),
            jwks.to_str().unwrap().into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run(&args).await
        }
    };

    // Unedited, with a top-level url equal to the signed interface's: verified, exit 0, the
    // origin taken from the jku.
    let (card, jwks) = signed_then_edited(&interface_card(), |_| {});
    let (card_path, jwks_path) = (
        write(dir.path(), "good.json", &card),
        write(dir.path(), "jwks.json", &jwks),
    );
    let (code, out, err) = verify(&card_path, &jwks_path, &[]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("origin: https://edited.example (from the first signature's jku"),
        "{out}"
    );
    assert!(out.contains("\nverified\n"), "{out}");

    // A snake_case twin with another value: exit 3, the twin named.
    let (card, _) = signed_then_edited(&interface_card(), |c| {
        c["default_input_modes"] = json!(["image/png"]);
    });
    let path = write(dir.path(), "twin.json", &card);
    let (code, out, err) = verify(&path, &jwks_path, &[]).await;
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains("acted on, not covered: /default_input_modes (name_shadowed)"),
        "{out}"
    );
    assert!(out.contains("verified, with uncovered members"), "{out}");
    // The same twin with the same value is harmless.
    let (card, _) = signed_then_edited(&interface_card(), |c| {
        c["default_input_modes"] = json!(["text/plain"]);
    });
    let path = write(dir.path(), "twin-same.json", &card);
    let (code, out, err) = verify(&path, &jwks_path, &[]).await;
    assert_eq!(code, 0, "{out}{err}");

    // The top-level url changed after signing: exit 3, and --json says why.
    let (card, _) = signed_then_edited(&interface_card(), |c| {
        c["url"] = json!("https://attacker.example/a2a");
    });
    let path = write(dir.path(), "url.json", &card);
    let (code, out, err) = verify(&path, &jwks_path, &[]).await;
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains("acted on, not covered: /url (outside_schema)"),
        "{out}"
    );
    let (code, out, _) = verify(&path, &jwks_path, &["--json"]).await;
    assert_eq!(code, 3);
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["verdict"], "verified_with_uncovered_members");
    assert_eq!(answer["acted_on_uncovered"][0]["member"], "/url");
    assert_eq!(answer["origin"]["origin"], "https://edited.example");
    // The record's own block is unchanged by the verdict: it says verified.
    assert_eq!(answer["card_signature"]["verified"], true);

    // --profile asks one reading: the SDK-signed card does not verify under js-1.0.0 alone.
    let (code, out, err) = verify(&card_path, &jwks_path, &["--profile", "js-1.0.0"]).await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("over the js-1.0.0 payload"), "{out}");
    let (code, out, err) = verify(&card_path, &jwks_path, &["--profile", "sdk"]).await;
    assert_eq!(code, 0, "{out}{err}");
}

#[tokio::test]
async fn help_lists_the_exit_codes() {
    let (code, out, _) = run(&["card", "verify", "--help"]).await;
    assert_eq!(code, 0);
    for line in [
        "0  verified",
        "1  not verified",
        "2  error",
        "3  verified, with uncovered",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
}
