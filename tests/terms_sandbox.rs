//! Sandbox agents over real loopback HTTPS serving standing proposals, verified through
//! `terms::verify_for_walk`: every outcome the network can produce, redirects not followed,
//! a proposal on another host admitted only when the operator names it.

use conduct_walker::jcs::parse_i_json;
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::{HttpsServer, Resp, SandboxCa, handler};
use conduct_walker::terms::{self, Outcome, TERMS_EXTENSION_URI, sow};
use ed25519_dalek::SigningKey;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

fn sow_dir() -> PathBuf {
    conduct_walker::sandbox::test_vectors("sow")
}

fn standing_bytes() -> Vec<u8> {
    std::fs::read(sow_dir().join("standing-proposal.signed.json")).unwrap()
}

fn agreed_bytes() -> Vec<u8> {
    std::fs::read(sow_dir().join("agreed-document.signed.json")).unwrap()
}

fn test_key() -> SigningKey {
    let v = parse_i_json(&std::fs::read(sow_dir().join("vectors.json")).unwrap()).unwrap();
    let raw = hex::decode(v["nkey"]["test_only_seed_raw_hex"].as_str().unwrap()).unwrap();
    SigningKey::from_bytes(&raw.try_into().unwrap())
}

fn digest(bytes: &[u8]) -> String {
    sow::terms_digest(&parse_i_json(bytes).unwrap()).unwrap()
}

/// The documents the sandbox serves, by path.
struct Docs {
    unsigned: Vec<u8>,
    directed: Vec<u8>,
    bad_sig: Vec<u8>,
}

fn docs() -> Docs {
    let mut unsigned = parse_i_json(&standing_bytes()).unwrap();
    unsigned.as_object_mut().unwrap().remove("signatures");
    let mut directed = unsigned.clone();
    directed["parties"]["offered_to"] = json!({
        "agent": "UAKQRYZBYFOC65OQZVJ3QPCIERDTRNNZPMOJUYXC3DGPRCDWSKD4HV5A",
        "owner": "Harbor & Line Outfitters",
        "expires_at": "2026-12-01T00:00:00Z"
    });
    sow::sign_as_provider(&mut directed, &test_key(), "2026-08-11T00:00:00Z").unwrap();
    let mut bad_sig = parse_i_json(&standing_bytes()).unwrap();
    bad_sig["signatures"][0]["sig"] = json!(
        "KKfPJKoPuIY7-MIExUlf7qAwSPtty2aMp5vefi7lLQfCE6yVnoGc1hXycUtcXk-H5ydeg96To50EHrmLA9QHDg"
    );
    Docs {
        unsigned: serde_json::to_vec_pretty(&unsigned).unwrap(),
        directed: serde_json::to_vec(&directed).unwrap(),
        bad_sig: serde_json::to_vec(&bad_sig).unwrap(),
    }
}

async fn agent(ca: &SandboxCa, seen: Arc<Mutex<Vec<String>>>) -> HttpsServer {
    let d = docs();
    HttpsServer::start(
        ca,
        handler(move |req| {
            seen.lock().unwrap().push(req.path.clone());
            let json = |b: &[u8]| Resp::bytes(200, "application/json", b.to_vec());
            match req.path.as_str() {
                "/terms/good.json" | "/terms/mismatch.json" => json(&standing_bytes()),
                "/terms/agreed.json" => json(&agreed_bytes()),
                "/terms/unsigned.json" => json(&d.unsigned),
                "/terms/directed.json" => json(&d.directed),
                "/terms/bad-sig.json" => json(&d.bad_sig),
                "/terms/garbage.json" => Resp::bytes(200, "application/json", "{\"sow\":"),
                "/terms/moved.json" => {
                    Resp::empty(302).with_header("location", "/terms/target.json")
                }
                "/terms/target.json" => json(&standing_bytes()),
                _ => Resp::bytes(404, "text/plain", "not found"),
            }
        }),
    )
    .await
    .unwrap()
}

fn entry(url: String, digest: &str) -> Value {
    json!({"url": url, "digest": digest, "offering": "reconcile-statement"})
}

fn card(entries: Vec<Value>) -> Value {
    json!({
        "name": "stonework",
        "description": "Statement reconciliation.",
        "skills": [{"id": "reconcile-statement", "description": "Reconcile one statement"}],
        "capabilities": {"extensions": [{
            "uri": TERMS_EXTENSION_URI,
            "params": {"sow_spec": "0.18.0-draft", "proposals": entries}
        }]}
    })
}

fn transport(ca: &SandboxCa, allowed: &[String]) -> Transport {
    let mut policy = NetPolicy::new(true);
    for host in allowed {
        policy.allow_host_port(host).unwrap();
    }
    let mut config = TransportConfig::new(policy);
    config.extra_roots = vec![ca.cert_der()];
    Transport::new(config).unwrap()
}

fn host_port(server: &HttpsServer) -> String {
    server.base().trim_start_matches("https://").to_string()
}

#[tokio::test]
async fn every_outcome_over_real_https() {
    let ca = SandboxCa::generate();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = agent(&ca, seen.clone()).await;
    let base = server.base();
    let d = docs();
    let standing = digest(&standing_bytes());
    let cases: Vec<(&str, String, Outcome)> = vec![
        ("good", standing.clone(), Outcome::Verified),
        ("mismatch", digest(&agreed_bytes()), Outcome::DigestMismatch),
        (
            "agreed",
            digest(&agreed_bytes()),
            Outcome::NotStandingProposal,
        ),
        ("unsigned", digest(&d.unsigned), Outcome::Unsigned),
        (
            "directed",
            digest(&d.directed),
            Outcome::DirectedInPublicCard,
        ),
        ("bad-sig", digest(&d.bad_sig), Outcome::BadSignature),
        ("garbage", standing.clone(), Outcome::Unparseable),
        ("missing", standing.clone(), Outcome::FetchFailed),
        ("moved", standing.clone(), Outcome::FetchFailed),
    ];
    let entries = cases
        .iter()
        .map(|(name, dg, _)| entry(format!("{base}/terms/{name}.json"), dg))
        .collect();
    let card = card(entries);
    let report = terms::verify_for_walk(&card, &transport(&ca, &[host_port(&server)]))
        .await
        .expect("the card lists the extension");
    assert_eq!(report.results.len(), cases.len());
    for ((name, _, expected), result) in cases.iter().zip(&report.results) {
        assert_eq!(result.outcome, *expected, "{name}: {}", result.reason);
        assert_eq!(
            result.verified.is_some(),
            *expected == Outcome::Verified,
            "{name}"
        );
    }
    let all: Vec<Outcome> = report.results.iter().map(|r| r.outcome).collect();
    for outcome in Outcome::ALL {
        assert!(all.contains(&outcome), "{outcome} not exercised");
    }
    assert!(!report.all_verified());

    let block = report.record_block();
    let by_url = |name: &str| {
        block["proposals"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| {
                p["url"]
                    .as_str()
                    .unwrap()
                    .ends_with(&format!("/{name}.json"))
            })
            .unwrap()
            .clone()
    };
    assert_eq!(by_url("missing")["http_status"], json!(404));
    let moved = by_url("moved");
    assert_eq!(moved["http_status"], json!(302));
    assert!(moved["reason"].as_str().unwrap().contains("not followed"));
    assert_eq!(by_url("good")["document_id"], json!("sow_q3n7v2k8r4m6t9p1"));
    assert_eq!(by_url("directed")["document_id"], Value::Null);
    assert!(
        !seen
            .lock()
            .unwrap()
            .iter()
            .any(|p| p == "/terms/target.json"),
        "the redirect was followed"
    );
    // No skill or price findings: the one skill is the listed offering.
    assert!(report.findings.is_empty(), "{:?}", report.findings);
}

#[tokio::test]
async fn proposal_on_another_host_needs_the_operator_to_name_it() {
    let ca = SandboxCa::generate();
    let card_host = agent(&ca, Arc::new(Mutex::new(Vec::new()))).await;
    let seen_other = Arc::new(Mutex::new(Vec::new()));
    let other = agent(&ca, seen_other.clone()).await;
    let card = card(vec![entry(
        format!("{}/terms/good.json", other.base()),
        &digest(&standing_bytes()),
    )]);
    // Named by the operator: admitted and verified.
    let named = transport(&ca, &[host_port(&card_host), host_port(&other)]);
    let report = terms::verify_for_walk(&card, &named).await.unwrap();
    assert_eq!(
        report.results[0].outcome,
        Outcome::Verified,
        "{}",
        report.results[0].reason
    );
    assert!(report.all_verified());
    assert_eq!(seen_other.lock().unwrap().len(), 1);
    // Only the card names it: a loopback address is refused before any request is sent.
    let unnamed = transport(&ca, &[host_port(&card_host)]);
    let report = terms::verify_for_walk(&card, &unnamed).await.unwrap();
    let r = &report.results[0];
    assert_eq!(r.outcome, Outcome::FetchFailed);
    assert!(
        r.reason.contains("refused") && r.reason.contains("loopback"),
        "{}",
        r.reason
    );
    assert_eq!(
        seen_other.lock().unwrap().len(),
        1,
        "no request reached the unnamed host"
    );
    assert!(!report.all_verified());
}

#[tokio::test]
async fn absence_states_nothing_and_misdeclaration_is_not_fatal() {
    let ca = SandboxCa::generate();
    let server = agent(&ca, Arc::new(Mutex::new(Vec::new()))).await;
    let t = transport(&ca, &[host_port(&server)]);
    let silent = json!({"name": "x", "capabilities": {"extensions": [
        {"uri": "https://agentsow.com/extensions/a2a-terms/v2"}
    ]}});
    assert!(terms::verify_for_walk(&silent, &t).await.is_none());

    let mut required = card(vec![entry(
        format!("{}/terms/good.json", server.base()),
        &digest(&standing_bytes()),
    )]);
    required["capabilities"]["extensions"][0]["required"] = json!(true);
    let report = terms::verify_for_walk(&required, &t).await.unwrap();
    assert!(report.declaration.required_misdeclared());
    assert_eq!(report.results[0].outcome, Outcome::Verified);
    assert_eq!(report.record_block()["required_misdeclared"], json!(true));
}
