//! Issue 43: `conduct-walker witness answer` and `witness verify` as processes. Every observation
//! case of the vectors through `witness verify` (exit 0 valid, 1 with the codes, 2 unreadable),
//! and `witness answer` measuring a loopback HTTPS target: the answer it prints verifies, by
//! `witness verify` and by hand from the spec (canonical bytes, SHA-256, Ed25519), and each
//! decline and unusable input ends with its code.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use conduct_walker::sandbox::{HttpsServer, Req, Resp, SandboxCa, handler};
use ed25519_dalek::Verifier as _;
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

fn vectors(name: &str) -> Value {
    let path = conduct_walker::sandbox::test_vectors(&format!("witness-pool/{name}"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn witness_verify_judges_every_observation_case_with_its_codes_and_exit() {
    let dir = tempfile::tempdir().unwrap();
    let cases = vectors("observation-cases.json");
    let cases = cases["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 40);
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let file = dir.path().join(format!("{id}.json"));
        std::fs::write(&file, serde_json::to_vec(&case["record"]).unwrap()).unwrap();
        let mut args = vec![
            "witness".to_string(),
            "verify".into(),
            file.display().to_string(),
        ];
        if let Some(key) = case["public_key"].as_str() {
            args.extend(["--public-key".into(), key.into()]);
        }
        if let Some(doc) = case.get("key_doc") {
            let doc_file = dir.path().join(format!("{id}.key.json"));
            std::fs::write(&doc_file, serde_json::to_vec(doc).unwrap()).unwrap();
            args.extend(["--key-doc".into(), doc_file.display().to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(dir.path(), &args);
        let codes: Vec<&str> = case["expected_codes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        let said = text(&out);
        if codes.is_empty() {
            assert_eq!(out.status.code(), Some(0), "{id}: {said}");
            assert!(said.starts_with("valid: "), "{id}: {said}");
        } else {
            assert_eq!(out.status.code(), Some(1), "{id}: {said}");
            assert_eq!(
                said.trim(),
                format!("invalid: {}", codes.join(", ")),
                "{id}"
            );
        }
    }
    // Not JSON: unreadable, 2.
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, b"{ not json").unwrap();
    let out = run(
        dir.path(),
        &["witness", "verify", garbage.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("is not JSON"));
}

/// A target that serves four of the nine surfaces; the rest answer 404.
async fn target(ca: &SandboxCa) -> HttpsServer {
    HttpsServer::start(
        ca,
        handler(|req: Req| match req.path.as_str() {
            "/health" => Resp::json(200, &json!({"gate_commit": "abc123", "gate_version": "0.4.18"})),
            "/.well-known/jwks.json" => Resp::json(
                200,
                &json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": "k1"}]}),
            ),
            "/keys/witness.json" => Resp::json(
                200,
                &json!({"public_key_ed25519_b64": "dpUASrdBhojNzqiVw+FDTmGhHI61yzsDqsZKAMIyo04="}),
            ),
            "/ext/conduct/v1" => Resp::json(200, &json!({"spec_markdown_sha256": "ab".repeat(32)})),
            _ => Resp::empty(404),
        }),
    )
    .await
    .unwrap()
}

struct Answering {
    dir: tempfile::TempDir,
    key: String,
    ca: String,
}

impl Answering {
    fn new(ca: &SandboxCa) -> Answering {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("witness.pem");
        let out = run(dir.path(), &["keygen", "--out", key.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out));
        let ca_path = dir.path().join("ca.pem");
        ca.write_pem(&ca_path).unwrap();
        Answering {
            key: key.display().to_string(),
            ca: ca_path.display().to_string(),
            dir,
        }
    }

    fn answer(&self, request: &Value, extra: &[&str]) -> Output {
        let file = self.dir.path().join("request.json");
        std::fs::write(&file, serde_json::to_vec(request).unwrap()).unwrap();
        let mut args = vec![
            "witness",
            "answer",
            "--request",
            file.to_str().unwrap(),
            "--key",
            &self.key,
            "--key-url",
            "https://witness.example.org/keys/witness.json",
            "--ca-cert",
            &self.ca,
            "--allow-private-network",
            "--json",
        ];
        args.extend_from_slice(extra);
        run(self.dir.path(), &args)
    }
}

fn request_for(endpoint: &str, surfaces: &[&str]) -> Value {
    let zeros = "0".repeat(64);
    json!({
        "schema": "nenrin-witness-request-v1",
        "endpoint": endpoint,
        "surfaces": surfaces,
        "subject_sha256": "5".repeat(64),
        "pool_sha256": zeros,
        "beacon": {"kind": "none", "height": "0", "hash": zeros},
        "requested_at": "2026-12-06T03:00:00Z",
        "reply_schema": "nenrin-witness-observation-v1",
        "extra_member": "kept in the hash",
    })
}

/// canonical(x) of the spec's conventions, written here from its text: keys sorted by code
/// point at every level, no white space, JSON escapes, UTF-8 (the records hold no numbers).
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let members: Vec<String> = keys
                .iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        serde_json::to_string(k).unwrap(),
                        canonical(&m[*k])
                    )
                })
                .collect();
            format!("{{{}}}", members.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => serde_json::to_string(other).unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn witness_answer_measures_signs_and_its_answer_verifies_by_hand_and_by_witness_verify() {
    let ca = SandboxCa::generate();
    let server = target(&ca).await;
    let a = tokio::task::block_in_place(|| Answering::new(&ca));
    let endpoint = format!("{}/", server.base());
    let surfaces = [
        "health.gate_commit",
        "well-known.jwks",
        "keys.witness",
        "keys.operator",
        "ext.conduct-v1.spec",
        "dns.caa",
    ];
    let request = request_for(&endpoint, &surfaces);
    let envelope = json!({"jsonrpc": "2.0", "id": 7, "method": "message/send", "params": {"message": {
        "role": "user", "messageId": "m1",
        "parts": [{"kind": "text", "text": "hello"}, {"kind": "data", "data": request}],
    }}});
    let out = tokio::task::block_in_place(|| {
        a.answer(
            &envelope,
            &[
                "--recorded-at",
                "2026-12-06T03:04:05Z",
                "--vantage",
                "a test vantage",
            ],
        )
    });
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let message: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        message["metadata"]["https://gate.horizonshield.dev/ext/conduct/v1/witness_reply"],
        "answered"
    );
    let obs = &message["parts"][0]["data"];
    assert_eq!(obs["schema"], "nenrin-witness-observation-v1");
    assert_eq!(obs["endpoint"], server.base(), "trailing / removed");
    assert_eq!(obs["recorded_at"], "2026-12-06T03:04:05Z");
    assert_eq!(obs["witness"]["vantage"], "a test vantage");
    assert_eq!(obs["source"]["signed_domain"], "witness.example.org");
    assert_eq!(
        obs["observed"]["health.gate_commit"]["gate_commit"],
        "abc123"
    );
    assert_eq!(obs["observed"]["keys.witness"]["present"], "true");
    assert_eq!(
        obs["observed"]["keys.operator"],
        json!({"status": "404", "present": "false"})
    );
    assert_eq!(
        obs["observed"].as_object().unwrap().len(),
        5,
        "dns.caa is not measured"
    );
    assert!(
        obs["does_not_establish"][2]
            .as_str()
            .unwrap()
            .ends_with(": dns.caa")
    );
    // By hand: the hash over the record without the three members, the signature over the
    // same bytes, the key the one keygen made.
    let mut body = obs.as_object().unwrap().clone();
    for m in [
        "record_sha256",
        "signature_ed25519_b64",
        "public_key_ed25519_b64",
    ] {
        body.remove(m);
    }
    let bytes = canonical(&Value::Object(body));
    assert_eq!(
        obs["record_sha256"],
        conduct_walker::digest::sha256_hex(bytes.as_bytes())
    );
    let key: [u8; 32] = STANDARD
        .decode(obs["public_key_ed25519_b64"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    let sig: [u8; 64] = STANDARD
        .decode(obs["signature_ed25519_b64"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    ed25519_dalek::VerifyingKey::from_bytes(&key)
        .unwrap()
        .verify(
            bytes.as_bytes(),
            &ed25519_dalek::Signature::from_bytes(&sig),
        )
        .expect("the signature covers the canonical bytes");
    assert_eq!(
        obs["request_sha256"],
        conduct_walker::digest::sha256_hex(canonical(&request).as_bytes())
    );
    // And by `witness verify`, with the key keygen printed.
    let file = a.dir.path().join("obs.json");
    std::fs::write(&file, serde_json::to_vec(obs).unwrap()).unwrap();
    let pubkey = run(a.dir.path(), &["pubkey", "--key", &a.key]);
    let doc = a.dir.path().join("key.json");
    std::fs::write(&doc, &pubkey.stdout).unwrap();
    let out = run(
        a.dir.path(),
        &[
            "witness",
            "verify",
            file.to_str().unwrap(),
            "--key-doc",
            doc.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn witness_answer_declines_with_1_and_refuses_unusable_input_with_2() {
    let ca = SandboxCa::generate();
    let a = tokio::task::block_in_place(|| Answering::new(&ca));
    let declined = |request: &Value| {
        let out = tokio::task::block_in_place(|| a.answer(request, &[]));
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let message: Value = serde_json::from_slice(&out.stdout).unwrap();
        let reason = message["metadata"]
            ["https://gate.horizonshield.dev/ext/conduct/v1/witness_reply_reason"]
            .as_str()
            .unwrap()
            .to_string();
        (
            reason,
            message["parts"][0]["text"].as_str().unwrap().to_string(),
        )
    };
    // Itself, under the key it serves.
    let (reason, says) = declined(&request_for(
        "https://Witness.Example.org/",
        &["keys.witness"],
    ));
    assert_eq!(reason, "self_witness");
    assert_eq!(
        says,
        "declined: self_witness: an agent cannot witness itself under a key it serves (11.4)"
    );
    // The checks, their texts joined in order.
    let mut bad = request_for("http://agent.example.org", &[]);
    bad["pool_sha256"] = json!("ABC");
    let (reason, says) = declined(&bad);
    assert_eq!(reason, "bad_request");
    assert_eq!(
        says,
        "declined: bad_request: endpoint must be an https origin; surfaces must be a non-empty array of names; pool_sha256 must be 64 hex"
    );
    let (reason, _) = declined(&request_for("https://agent.example.org", &["dns.caa"]));
    assert_eq!(reason, "no_known_surface");
    // Unusable input: not JSON, an envelope with no request part, another method.
    for (body, says) in [
        (b"{".to_vec(), "parse error"),
        (
            serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "message/send",
                "params": {"message": {"parts": [{"kind": "text", "text": "measure example.org"}]}}}))
            .unwrap(),
            "no nenrin-witness-request-v1 data part",
        ),
        (
            serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get"})).unwrap(),
            "only message/send",
        ),
    ] {
        let file = a.dir.path().join("unusable.json");
        std::fs::write(&file, &body).unwrap();
        let out = run(
            a.dir.path(),
            &["witness", "answer", "--request", file.to_str().unwrap(), "--key", &a.key,
              "--key-url", "https://witness.example.org/keys/witness.json"],
        );
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(says), "{}", text(&out));
    }
}

/// `witness ask` and `witness selfcheck` against the sandbox's pool member (the real responder
/// behind HTTPS on loopback): answered and valid; a decline; an unreachable key document; the
/// four conditions, one failing while the member does not declare reciprocal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn witness_ask_and_selfcheck_judge_a_pool_member() {
    use conduct_walker::sandbox::pool::PoolMember;
    let ca = SandboxCa::generate();
    let server = target(&ca).await;
    let dir = tempfile::tempdir().unwrap();
    let ca_pem = dir.path().join("ca.pem");
    ca.write_pem(&ca_pem).unwrap();
    let ca_pem = ca_pem.to_str().unwrap().to_string();
    let member = PoolMember::start_declaring(&ca, true).await.unwrap();
    let a2a = member.a2a_url();
    let cli = |args: Vec<String>| {
        let dir = dir.path().to_path_buf();
        async move {
            tokio::task::spawn_blocking(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                run(&dir, &args)
            })
            .await
            .unwrap()
        }
    };
    let net = |mut args: Vec<String>| {
        args.extend([
            "--ca-cert".into(),
            ca_pem.clone(),
            "--allow-private-network".into(),
        ]);
        args
    };
    let ask = |endpoint: &str, extra: &[&str]| {
        let mut args: Vec<String> = ["witness", "ask", "--endpoint", endpoint, "--to", &a2a]
            .map(String::from)
            .to_vec();
        args.extend(extra.iter().map(|s| s.to_string()));
        net(args)
    };

    let out = cli(ask(&server.base(), &[])).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).starts_with("answered and valid: 127.0.0.1:"),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("\"gate_commit\": \"abc123\""));

    let out = cli(ask(&member.origin, &[])).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).starts_with("declined: self_witness:"),
        "{}",
        text(&out)
    );

    let missing = format!("{}/keys/none.json", member.origin);
    let out = cli(ask(&server.base(), &["--key-doc", &missing])).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("key_url_unreachable"), "{}", text(&out));

    let selfcheck = |origin: &str| {
        net([
            "witness",
            "selfcheck",
            "--origin",
            origin,
            "--probe-target",
            &server.base(),
        ]
        .map(String::from)
        .to_vec())
    };
    let out = cli(selfcheck(&member.origin)).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for name in [
        "conduct_v1_declared",
        "witness_policy_reciprocal",
        "domain_bound_key",
        "answers_witness_request",
    ] {
        assert!(
            text(&out).contains(&format!("PASS {name}: ")),
            "{name}: {}",
            text(&out)
        );
    }

    let undeclared = PoolMember::start(&ca).await.unwrap();
    let out = cli(selfcheck(&undeclared.origin)).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("FAIL witness_policy_reciprocal: the card's params.witness_policy.reciprocal is not true"),
        "{}",
        text(&out)
    );
    assert!(
        text(&out).contains("PASS answers_witness_request"),
        "{}",
        text(&out)
    );
    // A target that is no pool member (it serves a key, nothing else): three conditions fail,
    // each saying what it saw, and nothing crashes.
    let out = cli(selfcheck(&server.base())).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(text(&out).matches("FAIL ").count(), 3, "{}", text(&out));
    assert!(
        text(&out).contains("agent-card.json answered 404"),
        "{}",
        text(&out)
    );
    assert!(
        text(&out).contains("PASS domain_bound_key"),
        "{}",
        text(&out)
    );
}
