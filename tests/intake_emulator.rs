//! The intake emulator over real loopback HTTPS (spec §6): every refusal of §6.2 and §6.3
//! provoked on purpose, the 201/200 answers, counting, lanes and caps across a UTC midnight,
//! key_url fetched on every submission, restart, and the reads.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use chrono::{DateTime, Utc};
use conduct_walker::canonical;
use conduct_walker::clock::ManualClock;
use conduct_walker::digest::sha256_hex;
use conduct_walker::intake_emulator::constants::*;
use conduct_walker::intake_emulator::{Emulator, EmulatorConfig, Limits, RunningEmulator};
use conduct_walker::net::{Exchange, HttpRequest, NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::{HttpsServer, Resp, SandboxCa, handler};
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tempfile::TempDir;

const NOON: &str = "2026-11-30T12:00:00Z";
const WALKED_BASE: &str = "https://agent.example";
const WALKED_ENDPOINT: &str = "https://agent.example/a2a";

fn transport(ca: &SandboxCa, named: &[String]) -> Transport {
    let mut policy = NetPolicy::new(true);
    for url in named {
        policy.allow_url(url);
    }
    let mut config = TransportConfig::new(policy);
    config.extra_roots = vec![ca.cert_der()];
    Transport::new(config).unwrap()
}

/// A key_url server: `/key` serves whatever `served` holds (503 when it holds nothing); other
/// paths misbehave on purpose.
struct KeyServer {
    server: HttpsServer,
    served: Arc<Mutex<Option<String>>>,
}

impl KeyServer {
    async fn start(ca: &SandboxCa, initial: &str) -> Self {
        let served = Arc::new(Mutex::new(Some(initial.to_string())));
        let current = served.clone();
        let server = HttpsServer::start(
            ca,
            handler(move |req| match req.path.as_str() {
                "/key" => match current.lock().unwrap().clone() {
                    Some(key) => Resp::json(200, &json!({"public_key_ed25519_b64": key})),
                    None => Resp::json(503, &json!({"error": "down"})),
                },
                "/redirect" => Resp::empty(302).with_header("location", "/key"),
                "/missing" => Resp::json(404, &json!({"error": "no"})),
                "/not-json" => Resp::bytes(200, "text/plain", "hello"),
                "/no-field" => Resp::json(200, &json!({"public_key": "x"})),
                _ => Resp::empty(500),
            }),
        )
        .await
        .unwrap();
        KeyServer { server, served }
    }

    /// `https://<host>:PORT<path>`; the sandbox leaf covers both `127.0.0.1` and `localhost`,
    /// which gives two distinct witness domains on one server.
    fn url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.server.addr().port())
    }

    fn serve(&self, key: &str) {
        *self.served.lock().unwrap() = Some(key.to_string());
    }

    fn go_down(&self) {
        *self.served.lock().unwrap() = None;
    }
}

struct Env {
    ca: SandboxCa,
    dir: TempDir,
    clock: Arc<ManualClock>,
    keys: KeyServer,
    emu: RunningEmulator,
    client: Transport,
}

fn witness_key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

fn public_b64(key: &SigningKey) -> String {
    B64.encode(key.verifying_key().to_bytes())
}

impl Env {
    async fn start(limits: Limits) -> Env {
        let ca = SandboxCa::generate();
        let dir = TempDir::new().unwrap();
        let clock = Arc::new(ManualClock::new(NOON.parse().unwrap()));
        let keys = KeyServer::start(&ca, &public_b64(&witness_key(1))).await;
        let emu = start_emulator(&ca, &dir, &clock, &keys, limits).await;
        let client = transport(&ca, &[emu.url()]);
        Env {
            ca,
            dir,
            clock,
            keys,
            emu,
            client,
        }
    }

    async fn restart(&mut self, limits: Limits) {
        let placeholder =
            start_emulator(&self.ca, &self.dir, &self.clock, &self.keys, limits.clone()).await;
        let old = std::mem::replace(&mut self.emu, placeholder);
        drop(old);
        self.client = transport(&self.ca, &[self.emu.url()]);
    }

    async fn send(
        &self,
        method: &'static str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Exchange {
        let url = format!("{}{path}", self.emu.base());
        let mut request = HttpRequest::get(url, headers);
        request.method = method;
        request.body = body;
        let ex = self.client.fetch(&request).await;
        assert!(ex.transport_error.is_none(), "{:?}", ex.transport_error);
        ex
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let ex = self.send("GET", path, &[], None).await;
        (ex.status, serde_json::from_slice(&ex.body).unwrap())
    }

    async fn post_raw(&self, body: Vec<u8>, ip: Option<&str>) -> (u16, Value) {
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(ip) = ip {
            headers.push(("CF-Connecting-IP", ip));
        }
        let ex = self.send("POST", "/witness", &headers, Some(body)).await;
        let value = serde_json::from_slice(&ex.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&ex.body)));
        (ex.status, value)
    }

    async fn submit(&self, body: &Value) -> (u16, Value) {
        self.post_raw(body.to_string().into_bytes(), Some("198.51.100.7"))
            .await
    }

    async fn submit_from(&self, body: &Value, ip: &str) -> (u16, Value) {
        self.post_raw(body.to_string().into_bytes(), Some(ip)).await
    }

    fn set_clock(&self, at: &str) {
        self.clock.set(at.parse::<DateTime<Utc>>().unwrap());
    }
}

async fn start_emulator(
    ca: &SandboxCa,
    dir: &TempDir,
    clock: &Arc<ManualClock>,
    keys: &KeyServer,
    limits: Limits,
) -> RunningEmulator {
    let mut config = EmulatorConfig::new(
        dir.path().join("intake.sqlite"),
        transport(
            ca,
            &[keys.url("127.0.0.1", "/"), keys.url("localhost", "/")],
        ),
    );
    config.limits = limits;
    config.clock = clock.clone();
    config.ledger_host = "ledger.test".into();
    Emulator::start(config, ca, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

/// A v1.1 full-mode record; `name` and `endpoint` decide the counting marker.
fn record(name: &str, endpoint: &str, nonce: u32) -> Value {
    json!({
        "schema": "jidec-path-v1",
        "purpose": format!("a2a-conduct-walk-v1: {endpoint}"),
        "walked_at": "2026-11-30T11:59:00Z",
        "walker": {"tool": "conduct-walker", "version": "test"},
        "base": WALKED_BASE,
        "nodes": [{"n": 0, "nonce": nonce}],
        "assertions": [{"claim": "c"}],
        "verdict": {"ok": true, "outcome": "PASS"},
        "witness": {"name": name, "vantage": "loopback"},
        "mode": "full",
        "establishes": ["something"],
        "does_not_establish": ["correctness or quality of any response"],
    })
}

fn text(record: &Value) -> String {
    String::from_utf8(canonical::to_bytes(record)).unwrap()
}

fn unsigned(record: &Value) -> Value {
    json!({"record_canonical": text(record)})
}

fn signed(record: &Value, key: &SigningKey) -> Value {
    let t = text(record);
    json!({
        "record_canonical": t,
        "signature_ed25519_b64": B64.encode(key.sign(t.as_bytes()).to_bytes()),
        "public_key_ed25519_b64": public_b64(key),
    })
}

fn with_key_url(mut record: Value, key_url: &str) -> Value {
    record["witness"]["key_url"] = json!(key_url);
    record
}

fn small_limits() -> Limits {
    Limits {
        daily_global: 6,
        daily_per_ip: 2,
        daily_per_domain: 2,
        batch_max: 2,
        ..Limits::default()
    }
}

fn assert_invalid(answer: &(u16, Value), reason_code: &str, why: &str, env: &Env) {
    assert_eq!(answer.0, 422, "{}", answer.1);
    assert_eq!(
        answer.1,
        json!({"error": ERR_INVALID_RECORD, "reason_code": reason_code, "why": why, "help": env.emu.url()}),
    );
}

#[tokio::test]
async fn framing_self_description_and_options() {
    let env = Env::start(small_limits()).await;
    let ex = env.send("GET", "/witness/", &[], None).await;
    assert_eq!(ex.status, 200);
    assert_eq!(ex.header("content-type"), Some(CONTENT_TYPE_JSON));
    assert_eq!(ex.header("access-control-allow-origin"), Some("*"));
    assert_eq!(
        ex.header("access-control-allow-methods"),
        Some("GET,POST,OPTIONS")
    );
    let body = String::from_utf8(ex.body.clone()).unwrap();
    assert!(body.starts_with("{\n  \""), "2-space pretty JSON: {body}");
    let d: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(d["service"], SERVICE);
    assert_eq!(d["spec"], SPEC);
    let limits = &d["limits_stated_not_hidden"];
    assert_eq!(
        (
            limits["max_bytes"].clone(),
            limits["daily_global"].clone(),
            limits["daily_per_ip"].clone(),
            limits["daily_per_domain"].clone(),
            limits["batch_max"].clone()
        ),
        (json!(65536), json!(6), json!(2), json!(2), json!(2)),
        "the configured limits are the stated ones"
    );
    assert!(limits["note"].is_string());
    assert_eq!(d["conduct_v1_1"]["refusals"], json!(REFUSALS));
    assert_eq!(d["pool"], format!("{}/pending", env.emu.url()));

    let ex = env.send("OPTIONS", "/witness", &[], None).await;
    assert_eq!((ex.status, ex.body.len()), (200, 0));
    assert_eq!(
        ex.header("access-control-allow-methods"),
        Some("GET,POST,OPTIONS")
    );

    let (status, body) = env.get(&format!("/witness/{}", "0".repeat(64))).await;
    assert_eq!(
        (status, body),
        (404, json!({"error": "not found", "sha": "0".repeat(64)}))
    );
}

#[tokio::test]
async fn step1_body_and_step2_size_in_utf16_units() {
    let env = Env::start(Limits::default()).await;
    let bad_request = json!({"error": ERR_RECORD_REQUIRED, "help": env.emu.url()});
    for body in [
        &b"not json"[..],
        b"[1]",
        b"{}",
        br#"{"record_canonical": 5}"#,
        b"\"x\"",
    ] {
        assert_eq!(
            env.post_raw(body.to_vec(), None).await,
            (400, bad_request.clone()),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    let too_large = (413, json!({"error": ERR_TOO_LARGE, "max_bytes": 65536}));
    let ascii = "a".repeat(65_537);
    assert_eq!(
        env.submit(&json!({"record_canonical": ascii})).await,
        too_large
    );
    // 32,769 astral characters are 65,538 UTF-16 units: too large, although only 32,769 chars.
    let astral = "😀".repeat(32_769);
    assert_eq!(
        env.submit(&json!({"record_canonical": astral})).await,
        too_large
    );
    // 30,000 astral characters are 120,000 UTF-8 bytes but 60,000 units: past step 2, refused at 3.
    let (status, body) = env
        .submit(&json!({"record_canonical": "😀".repeat(30_000)}))
        .await;
    assert_eq!(
        (status, body["reason_code"].clone()),
        (422, json!("schema"))
    );
    // Exactly the limit passes step 2 too.
    let (status, _) = env
        .submit(&json!({"record_canonical": "a".repeat(65_536)}))
        .await;
    assert_eq!(status, 422);
}

#[tokio::test]
async fn step3_every_validation_refusal() {
    let env = Env::start(Limits::default()).await;
    let base = record("w", WALKED_ENDPOINT, 0);
    let case = |f: &dyn Fn(&mut Value)| {
        let mut r = base.clone();
        f(&mut r);
        unsigned(&r)
    };
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"record_canonical": "{not json"}),
            "schema",
            WHY_NOT_JSON,
        ),
        (json!({"record_canonical": "[]"}), "schema", WHY_NOT_OBJECT),
        (
            case(&|r| r["schema"] = json!("jidec-path-v2")),
            "schema",
            WHY_SCHEMA,
        ),
        (
            case(&|r| r["base"] = json!("")),
            "schema",
            "missing string field: base",
        ),
        (
            case(&|r| {
                r.as_object_mut().unwrap().remove("walked_at");
            }),
            "schema",
            "missing string field: walked_at",
        ),
        (
            case(&|r| r["witness"] = json!("w")),
            "schema",
            "witness must be an object",
        ),
        (
            case(&|r| r["witness"]["vantage"] = json!("")),
            "schema",
            "witness.vantage must be a non-empty string",
        ),
        (
            case(&|r| r["mode"] = json!("partial")),
            "bad_mode",
            "mode must be one of full, hash-only, commitment",
        ),
        (
            case(&|r| r["establishes"] = json!([])),
            "disclaimer_missing",
            "establishes must be a non-empty array of non-blank strings",
        ),
        (
            case(&|r| r["does_not_establish"] = json!(["  "])),
            "disclaimer_missing",
            "does_not_establish must be a non-empty array of non-blank strings",
        ),
        (
            case(&|r| {
                r["mode"] = json!("commitment");
                r["commitment"] = json!("xyz");
            }),
            "bad_commitment",
            "commitment must be 64 hex characters",
        ),
        (
            case(&|r| r["nodes"] = json!([])),
            "schema",
            "nodes must be a non-empty array",
        ),
        (
            case(&|r| r["verdict"] = json!(true)),
            "schema",
            "verdict must be an object",
        ),
        (
            case(&|r| {
                r["mode"] = json!("hash-only");
                r["nodes"] = json!([{"request": {"url": "https://agent.example/a2a", "method": "REDACTED"}}]);
            }),
            "path_leaks_tool",
            "hash-only node 0: request.url must be scheme://authority/ with no path, query or fragment",
        ),
        (
            case(&|r| {
                r["mode"] = json!("hash-only");
                r["nodes"] = json!([{"n": 0}, {"request": {"url": "https://agent.example/", "method": "POST"}}]);
            }),
            "path_leaks_tool",
            "hash-only node 1: request.method must be REDACTED",
        ),
        (
            case(&|r| r["witness"]["key_url"] = json!("http://w.example/key")),
            "bad_key_url",
            WHY_BAD_KEY_URL,
        ),
    ];
    for (body, code, why) in cases {
        assert_invalid(&env.submit(&body).await, code, why, &env);
    }
    assert_eq!(env.emu.stored_count(), 0);
}

#[tokio::test]
async fn steps_5_and_6_signature_and_binding_refusals() {
    let env = Env::start(Limits::default()).await;
    let key = witness_key(1);
    let r = record("w", WALKED_ENDPOINT, 1);
    let good = signed(&r, &key);

    let mut only_sig = good.clone();
    only_sig
        .as_object_mut()
        .unwrap()
        .remove("public_key_ed25519_b64");
    let mut only_key = good.clone();
    only_key["signature_ed25519_b64"] = json!("");
    for body in [only_sig, only_key] {
        assert_eq!(
            env.submit(&body).await,
            (422, json!({"error": ERR_SIG_TOGETHER})),
            "no reason_code"
        );
    }

    let invalid = (
        422,
        json!({"error": ERR_SIG_INVALID, "reason_code": ERR_SIG_INVALID, "note": NOTE_SIG_INVALID}),
    );
    let mut other_key = good.clone();
    other_key["public_key_ed25519_b64"] = json!(public_b64(&witness_key(2)));
    let mut garbage = good.clone();
    garbage["signature_ed25519_b64"] = json!("!!!!");
    let mut url_safe = good.clone();
    url_safe["public_key_ed25519_b64"] = json!("-_".repeat(22));
    let mut other_record = good.clone();
    other_record["record_canonical"] = json!(text(&record("w", WALKED_ENDPOINT, 2)));
    for body in [other_key, garbage, url_safe, other_record] {
        assert_eq!(env.submit(&body).await, invalid);
    }

    // Unpadded base64 with whitespace is what atob accepts: stored as address-signed.
    let mut unpadded = good.clone();
    let sig = good["signature_ed25519_b64"]
        .as_str()
        .unwrap()
        .trim_end_matches('=')
        .to_string();
    unpadded["signature_ed25519_b64"] = json!(format!(" {sig}\n"));
    let (status, body) = env.submit(&unpadded).await;
    assert_eq!(
        (
            status,
            body["signed"].clone(),
            body["signed_domain"].clone()
        ),
        (201, json!(true), Value::Null),
        "{body}"
    );

    let key_url = env.keys.url("127.0.0.1", "/key");
    let bound = with_key_url(record("w", WALKED_ENDPOINT, 3), &key_url);
    assert_eq!(
        env.submit(&unsigned(&bound)).await,
        (
            422,
            json!({"error": ERR_KEY_URL_WITHOUT_SIG, "reason_code": "bad_key_url", "note": NOTE_KEY_URL_WITHOUT_SIG})
        )
    );

    let self_agent = (
        422,
        json!({"error": "self_witness", "reason_code": "self_witness", "note": NOTE_SELF_WITNESS_AGENT}),
    );
    // key_url host = the https host of base (ports are not compared).
    let mut r = with_key_url(record("w", WALKED_ENDPOINT, 4), &key_url);
    r["base"] = json!("https://127.0.0.1:1");
    assert_eq!(env.submit(&signed(&r, &key)).await, self_agent);
    // ... or of the walked endpoint named by purpose.
    let r = with_key_url(record("w", "https://127.0.0.1:2/a2a", 5), &key_url);
    assert_eq!(env.submit(&signed(&r, &key)).await, self_agent);
    // Only https hosts count: an http base on the same host is not self-witnessing.
    let mut r = with_key_url(record("w", "http://127.0.0.1:2/a2a", 6), &key_url);
    r["base"] = json!("http://127.0.0.1:2");
    let (status, body) = env.submit(&signed(&r, &key)).await;
    assert_eq!(
        (status, body["signed_domain"].clone()),
        (201, json!("127.0.0.1")),
        "{body}"
    );

    let r = with_key_url(record("w", WALKED_ENDPOINT, 7), "https://LEDGER.test/key");
    assert_eq!(
        env.submit(&signed(&r, &key)).await,
        (
            422,
            json!({"error": "self_witness", "reason_code": "self_witness", "note": NOTE_SELF_WITNESS_LEDGER})
        )
    );
    assert_eq!(env.emu.stored_count(), 2);
}

#[tokio::test]
async fn key_url_served_mismatched_redirected_and_unreachable() {
    let env = Env::start(Limits::default()).await;
    let key = witness_key(1);
    let submit_with = |path: &str, nonce: u32| {
        let r = with_key_url(
            record("w", WALKED_ENDPOINT, nonce),
            &env.keys.url("127.0.0.1", path),
        );
        signed(&r, &key)
    };

    let (status, body) = env.submit(&submit_with("/key", 1)).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["signed"], true);
    assert_eq!(body["signed_domain"], "127.0.0.1");
    let stored = env.emu.stored(body["sha"].as_str().unwrap()).unwrap();
    assert_eq!(stored["key_url"], env.keys.url("127.0.0.1", "/key"));
    assert_eq!(stored["public_key_ed25519_b64"], public_b64(&key));

    for (path, why_part) in [
        ("/redirect", "302"),
        ("/missing", "404"),
        ("/not-json", "JSON"),
        ("/no-field", "public_key_ed25519_b64"),
    ] {
        let (status, body) = env.submit(&submit_with(path, 2)).await;
        assert_eq!(status, 503, "{path}: {body}");
        assert_eq!(body["error"], ERR_KEY_URL_UNREACHABLE);
        assert_eq!(body["reason_code"], ERR_KEY_URL_UNREACHABLE);
        assert_eq!(body["note"], NOTE_KEY_URL_UNREACHABLE);
        assert!(
            body["why"].as_str().unwrap().contains(why_part),
            "{path}: {body}"
        );
    }

    // Another key served under a fresh key_url: mismatch. The same key unpadded is a different
    // string, and strings are what is compared (`#u` makes a key_url of its own, not cached).
    let mismatch = (
        422,
        json!({"error": ERR_KEY_URL_MISMATCH, "reason_code": ERR_KEY_URL_MISMATCH, "note": NOTE_KEY_URL_MISMATCH}),
    );
    env.keys.serve(&public_b64(&witness_key(9)));
    let r = with_key_url(
        record("w", WALKED_ENDPOINT, 3),
        &env.keys.url("localhost", "/key"),
    );
    assert_eq!(env.submit(&signed(&r, &key)).await, mismatch);
    env.keys.serve(public_b64(&key).trim_end_matches('='));
    let r = with_key_url(
        record("w", WALKED_ENDPOINT, 4),
        &env.keys.url("localhost", "/key#u"),
    );
    assert_eq!(env.submit(&signed(&r, &key)).await, mismatch);
    assert_eq!(env.emu.stored_count(), 1);
}

#[tokio::test]
async fn served_key_is_fetched_on_every_submission() {
    let env = Env::start(Limits::default()).await;
    let (old, new) = (witness_key(1), witness_key(2));
    let key_url = env.keys.url("127.0.0.1", "/key");
    let bound = |nonce| with_key_url(record("w", WALKED_ENDPOINT, nonce), &key_url);

    // A failed fetch leaves nothing behind: once the server is back, the same key_url works.
    env.keys.go_down();
    let (status, body) = env.submit(&signed(&bound(1), &old)).await;
    assert_eq!(
        (status, body["why"].clone()),
        (503, json!("key_url answered http 503"))
    );
    env.keys.serve(&public_b64(&old));
    assert_eq!(env.submit(&signed(&bound(1), &old)).await.0, 201);

    // The domain rotates: the very next submission sees the new key, with no clock moved
    // (the real intake fetches key_url each time, witness-pool.md §8.5).
    env.keys.serve(&public_b64(&new));
    let (status, body) = env.submit(&signed(&bound(2), &old)).await;
    assert_eq!(
        (status, body["error"].clone()),
        (422, json!(ERR_KEY_URL_MISMATCH)),
        "a signature by the rotated-out key is refused at once"
    );
    let (status, body) = env.submit(&signed(&bound(3), &new)).await;
    assert_eq!(status, 201, "the new key is accepted at once: {body}");
}

#[tokio::test]
async fn counting_dedupe_and_the_201_body() {
    let env = Env::start(Limits {
        daily_per_ip: 5,
        ..Limits::default()
    })
    .await;
    let first = unsigned(&record("alice", WALKED_ENDPOINT, 1));
    let (status, body) = env.submit(&first).await;
    let sha = sha256_hex(first["record_canonical"].as_str().unwrap());
    assert_eq!(status, 201);
    assert_eq!(
        body,
        json!({
            "sha": sha, "status": "pending", "signed": false, "signed_domain": null,
            "mode": "full", "counted": true, "count_reason": null,
            "url": format!("{}/{sha}", env.emu.url()), "anchor_policy": ANCHOR_POLICY,
        })
    );

    // Same witness, same endpoint, same day: stored, not counted.
    let (status, body) = env
        .submit(&unsigned(&record("alice", WALKED_ENDPOINT, 2)))
        .await;
    assert_eq!(
        (
            status,
            body["counted"].clone(),
            body["count_reason"].clone()
        ),
        (201, json!(false), json!(COUNT_REASON_SAME_DAY))
    );
    // Another endpoint, or another witness: counted.
    let (_, body) = env
        .submit(&unsigned(&record(
            "alice",
            "https://agent.example/other",
            3,
        )))
        .await;
    assert_eq!(body["counted"], true);
    let (_, body) = env
        .submit(&unsigned(&record("bob", WALKED_ENDPOINT, 4)))
        .await;
    assert_eq!(body["counted"], true);

    // The same bytes again: 200 dedup, nothing stored, no counter moved.
    let dedup = (
        200,
        json!({"sha": sha, "status": "pending", "dedup": true, "url": format!("{}/{sha}", env.emu.url())}),
    );
    assert_eq!(env.submit(&first).await, dedup);
    assert_eq!(env.emu.stored_count(), 4);
    // The lane (5) still has one place: the dedup did not take it.
    let (status, _) = env
        .submit(&unsigned(&record("carol", WALKED_ENDPOINT, 5)))
        .await;
    assert_eq!(status, 201);
    // Now the lane is full, and dedupe comes after the caps: the stored record gets 429.
    let (status, body) = env.submit(&first).await;
    assert_eq!((status, body["error"].clone()), (429, json!(ERR_IP_CAP)));

    // The next UTC day counts the same witness and endpoint again.
    env.set_clock("2026-12-01T00:00:01Z");
    let (status, body) = env
        .submit(&unsigned(&record("alice", WALKED_ENDPOINT, 6)))
        .await;
    assert_eq!((status, body["counted"].clone()), (201, json!(true)));
    let stored = env.emu.stored(body["sha"].as_str().unwrap()).unwrap();
    assert_eq!(stored["submitted_at"], "2026-12-01T00:00:01.000Z");
    assert_eq!(stored["endpoint"], WALKED_ENDPOINT);
}

#[tokio::test]
async fn caps_by_address_and_global_with_next_day_rollover() {
    let env = Env::start(small_limits()).await;
    let mut n = 0;
    let mut next = |name: &str| {
        n += 1;
        unsigned(&record(name, WALKED_ENDPOINT, n))
    };
    let ip_full = (
        429,
        json!({"error": ERR_IP_CAP, "cap": 2, "note": NOTE_CAP}),
    );
    let global_full = (
        429,
        json!({"error": ERR_GLOBAL_CAP, "cap": 6, "note": NOTE_CAP}),
    );

    for _ in 0..2 {
        assert_eq!(env.submit_from(&next("a"), "203.0.113.1").await.0, 201);
    }
    assert_eq!(env.submit_from(&next("a"), "203.0.113.1").await, ip_full);
    // No header: the lane is "unknown", shared by every such client.
    for _ in 0..2 {
        assert_eq!(
            env.post_raw(next("u").to_string().into_bytes(), None)
                .await
                .0,
            201
        );
    }
    assert_eq!(
        env.post_raw(next("u").to_string().into_bytes(), None).await,
        ip_full
    );
    for _ in 0..2 {
        assert_eq!(env.submit_from(&next("b"), "203.0.113.2").await.0, 201);
    }
    // Six stored today: the global cap answers first, even for a fresh address ...
    assert_eq!(
        env.submit_from(&next("c"), "203.0.113.3").await,
        global_full
    );
    // ... and before the signature is looked at (step 4 precedes step 5).
    let mut bad_sig = next("c");
    bad_sig["signature_ed25519_b64"] = json!("AAAA");
    bad_sig["public_key_ed25519_b64"] = json!("AAAA");
    assert_eq!(env.submit_from(&bad_sig, "203.0.113.3").await, global_full);
    assert_eq!(env.emu.stored_count(), 6, "a 429 stores nothing");

    // Midnight UTC by the server's clock (walked_at is irrelevant): every lane is fresh.
    env.set_clock("2026-11-30T23:59:59Z");
    assert_eq!(
        env.submit_from(&next("c"), "203.0.113.3").await,
        global_full
    );
    env.set_clock("2026-12-01T00:00:00Z");
    assert_eq!(env.submit_from(&next("a"), "203.0.113.1").await.0, 201);
    assert_eq!(env.emu.stored_count(), 7);
}

#[tokio::test]
async fn domain_lane_is_per_domain_and_separate_from_the_address_lane() {
    let env = Env::start(small_limits()).await;
    let key = witness_key(1);
    let domain_full = (
        429,
        json!({"error": ERR_DOMAIN_CAP, "cap": 2, "note": NOTE_CAP}),
    );
    let ip = "203.0.113.9";
    let on = |host: &str, nonce| {
        signed(
            &with_key_url(
                record("w", WALKED_ENDPOINT, nonce),
                &env.keys.url(host, "/key"),
            ),
            &key,
        )
    };

    for nonce in 0..2 {
        let (status, body) = env.submit_from(&on("127.0.0.1", nonce), ip).await;
        assert_eq!(status, 201, "{body}");
    }
    assert_eq!(env.submit_from(&on("127.0.0.1", 2), ip).await, domain_full);
    let (status, body) = env.submit_from(&on("localhost", 3), ip).await;
    assert_eq!(
        (status, body["signed_domain"].clone()),
        (201, json!("localhost"))
    );
    // Identity is the domain: the localhost record was the first for domain:localhost, while
    // the second 127.0.0.1 record was not counted (same domain, same endpoint, same day).
    assert_eq!(body["counted"], true);
    // The address lane of the same client is untouched; an address-signed record uses it.
    let (status, body) = env
        .submit_from(&signed(&record("w", WALKED_ENDPOINT, 4), &key), ip)
        .await;
    assert_eq!(
        (
            status,
            body["signed"].clone(),
            body["signed_domain"].clone()
        ),
        (201, json!(true), Value::Null)
    );
}

#[tokio::test]
async fn privacy_modes_and_v1_records_are_accepted() {
    let env = Env::start(Limits::default()).await;
    let mut hash_only = record("w", WALKED_ENDPOINT, 1);
    hash_only["mode"] = json!("hash-only");
    hash_only["nodes"] =
        json!([{"request": {"url": "https://agent.example/", "method": "REDACTED"}}, {"n": 2}]);
    let commitment = json!({
        "schema": "jidec-path-v1",
        "purpose": format!("a2a-conduct-walk-v1: {WALKED_ENDPOINT}"),
        "walked_at": "2026-11-30T11:59:00Z",
        "base": WALKED_BASE,
        "witness": {"name": "w", "vantage": "loopback"},
        "mode": "commitment",
        "commitment": "A".repeat(64),
        "establishes": ["a record with the stated commitment existed at 2026-11-30T11:59:00Z"],
        "does_not_establish": ["anything about the walked agent until the committed record is revealed"],
    });
    let mut v1 = record("w", WALKED_ENDPOINT, 3);
    for k in ["mode", "establishes", "does_not_establish"] {
        v1.as_object_mut().unwrap().remove(k);
    }
    for (r, mode, v11) in [
        (record("w", WALKED_ENDPOINT, 0), "full", true),
        (hash_only, "hash-only", true),
        (commitment, "commitment", true),
        (v1, "full", false),
    ] {
        let (status, body) = env.submit(&unsigned(&r)).await;
        assert_eq!((status, body["mode"].clone()), (201, json!(mode)), "{body}");
        let stored = env.emu.stored(body["sha"].as_str().unwrap()).unwrap();
        assert_eq!(
            (stored["v11"].clone(), stored["disclaimer_present"].clone()),
            (json!(v11), json!(v11))
        );
        assert_eq!(stored["public_key_ed25519_b64"], Value::Null);
    }
}

#[tokio::test]
async fn reads_pending_one_and_operator_anchor() {
    let env = Env::start(small_limits()).await;
    let mut shas = Vec::new();
    for (i, ip) in ["203.0.113.1", "203.0.113.1", "203.0.113.2"]
        .iter()
        .enumerate()
    {
        let (_, body) = env
            .submit_from(&unsigned(&record("w", WALKED_ENDPOINT, i as u32)), ip)
            .await;
        shas.push(body["sha"].as_str().unwrap().to_string());
    }
    let (status, pending) = env.get("/witness/pending/").await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            pending["count"].clone(),
            pending["counted"].clone(),
            pending["stored_not_counted"].clone()
        ),
        (json!(3), json!(1), json!(2))
    );
    assert_eq!(
        pending["caps"],
        json!({"daily_global": 6, "daily_per_ip": 2, "daily_per_domain": 2})
    );
    // Ascending sha (KV key order, ledger.md §3).
    let listed: Vec<&str> = pending["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["sha"].as_str().unwrap())
        .collect();
    let mut in_sha_order = shas.iter().map(String::as_str).collect::<Vec<_>>();
    in_sha_order.sort();
    assert_eq!(listed, in_sha_order);
    assert_eq!(pending["pending"][0]["witness_name"], "w");

    let (status, one) = env.get(&format!("/witness/{}", shas[1])).await;
    assert_eq!(status, 200);
    assert_eq!(one["status"], "pending");
    assert_eq!(one["counted"], false);
    assert_eq!(
        one["record_canonical"],
        text(&record("w", WALKED_ENDPOINT, 1))
    );
    assert_eq!(one["responses"], json!([]));

    // The operator batch needs the operator key (ledger.md §4.1).
    let ex = env.send("POST", "/witness/anchor", &[], None).await;
    assert_eq!(ex.status, 401);
    let key = env.emu.operator_key();
    let ex = env
        .send(
            "POST",
            "/witness/anchor",
            &[("x-ledger-key", key.as_str())],
            None,
        )
        .await;
    // It takes batch_max (2) records, sorted by sha.
    let answer: Value = serde_json::from_slice(&ex.body).unwrap();
    assert_eq!((ex.status, answer["anchored"].clone()), (201, json!(2)));
    assert_eq!(answer["trigger"], "operator");
    let mut sorted = shas.clone();
    sorted.sort();
    let entry = answer["n"].as_i64().unwrap();
    assert_eq!(entry, 1);

    let ex = env
        .send("GET", &format!("/ledger/{entry}?format=raw"), &[], None)
        .await;
    let batch_text = String::from_utf8(ex.body).unwrap();
    let batch_text = batch_text.as_str();
    assert!(batch_text.starts_with(&format!(r#"{{"schema":"nenrin-witness-batch-v1","anchored_at":"2026-11-30T12:00:00.000Z","count":2,"ledger_head":{{"chain":"jidec-chain-v1","n":0,"entry_sha256":"{}"}},"records":[{{"sha":"#, "0".repeat(64))), "{batch_text}");
    let batch: Value = serde_json::from_str(batch_text).unwrap();
    for (item, sha) in batch["records"].as_array().unwrap().iter().zip(&sorted) {
        assert_eq!(item["sha"], sha.as_str());
        let counted = sha == &shas[0];
        assert_eq!(
            item.get("counted"),
            if counted { None } else { Some(&json!(false)) }
        );
        assert_eq!(item.get("mode"), None, "full mode is not written");
    }

    let (status, one) = env.get(&format!("/witness/{}", sorted[0])).await;
    assert_eq!(status, 200);
    assert_eq!(one["status"], "anchored");
    assert_eq!(one["ledger_entry"], entry);
    assert_eq!(one["url"], format!("{}/ledger/{entry}", env.emu.base()));
    assert_eq!(one["record"]["sha"], sorted[0].as_str());
    assert!(
        one["record"]["record_canonical"].is_string(),
        "the record stays retrievable"
    );

    let (_, pending) = env.get("/witness/pending").await;
    assert_eq!(pending["count"], 1);
    assert_eq!(pending["pending"][0]["sha"], sorted[2].as_str());
    // A duplicate of an anchored record says so.
    let anchored_one = shas.iter().position(|s| *s == sorted[0]).unwrap() as u32;
    let (status, body) = env
        .submit_from(
            &unsigned(&record("w", WALKED_ENDPOINT, anchored_one)),
            "203.0.113.4",
        )
        .await;
    assert_eq!(
        (status, body["status"].clone(), body["dedup"].clone()),
        (200, json!("anchored"), json!(true))
    );

    // The second batch carries the head after the first (ledger.md §4.4).
    let (_, head) = env.get("/ledger/head").await;
    let batch = env.emu.anchor().unwrap().unwrap();
    let second: Value = serde_json::from_str(&batch.record_canonical).unwrap();
    assert_eq!(
        second["ledger_head"],
        json!({"chain": "jidec-chain-v1", "n": 1, "entry_sha256": head["head"]})
    );
    assert!(env.emu.anchor().unwrap().is_none(), "the pool is empty");
}

#[tokio::test]
async fn state_survives_a_restart() {
    let mut env = Env::start(Limits {
        daily_per_ip: 1,
        ..Limits::default()
    })
    .await;
    let key = witness_key(1);
    let first = unsigned(&record("w", WALKED_ENDPOINT, 1));
    let (status, body) = env.submit(&first).await;
    assert_eq!(status, 201);
    let sha = body["sha"].as_str().unwrap().to_string();
    let bound = with_key_url(
        record("w", WALKED_ENDPOINT, 2),
        &env.keys.url("127.0.0.1", "/key"),
    );
    assert_eq!(env.submit(&signed(&bound, &key)).await.0, 201);
    let old_url = env.emu.url();

    env.restart(Limits {
        daily_per_ip: 1,
        ..Limits::default()
    })
    .await;
    assert_ne!(env.emu.url(), old_url, "a new port, the same state file");
    assert_eq!(env.emu.stored_count(), 2);
    let (status, one) = env.get(&format!("/witness/{sha}")).await;
    assert_eq!((status, one["status"].clone()), (200, json!("pending")));
    // The address-lane counter survived (cap 1 is used) ...
    let (status, body) = env
        .submit(&unsigned(&record("w", WALKED_ENDPOINT, 3)))
        .await;
    assert_eq!((status, body["error"].clone()), (429, json!(ERR_IP_CAP)));
    // ... and no key outlives a restart: a rotated key is accepted at once.
    env.keys.serve(&public_b64(&witness_key(2)));
    let bound = with_key_url(
        record("w", WALKED_ENDPOINT, 4),
        &env.keys.url("127.0.0.1", "/key"),
    );
    let (status, body) = env.submit(&signed(&bound, &witness_key(2))).await;
    assert_eq!(status, 201, "{body}");
    env.keys.serve(&public_b64(&key));
    // ... and the counting marker: another record for the same domain and endpoint is not counted.
    let bound = with_key_url(
        record("w", WALKED_ENDPOINT, 5),
        &env.keys.url("127.0.0.1", "/key"),
    );
    let (status, body) = env.submit(&signed(&bound, &key)).await;
    assert_eq!((status, body["counted"].clone()), (201, json!(false)));
}

/// The constants every assertion above compares against, checked once against the spec's text
/// (conduct-walk.md §6.2, §6.6), so a typo in a constant cannot hide behind the tests.
#[test]
fn spec_strings_are_word_for_word() {
    assert_eq!(ERR_RECORD_REQUIRED, "record_canonical (string) required");
    assert_eq!(NOTE_CAP, "stated at GET /witness; try tomorrow");
    assert_eq!(
        NOTE_SIG_INVALID,
        "a present signature must verify; omit it to submit unsigned"
    );
    assert_eq!(
        NOTE_KEY_URL_WITHOUT_SIG,
        "witness.key_url only means something on a signed record"
    );
    assert_eq!(
        NOTE_SELF_WITNESS_AGENT,
        "a key served from the walked agent's own domain cannot witness that agent"
    );
    assert_eq!(
        NOTE_SELF_WITNESS_LEDGER,
        "the ledger's own domain is not a witness domain"
    );
    assert_eq!(
        NOTE_KEY_URL_UNREACHABLE,
        "retry later, or omit key_url to file as an address-lane record"
    );
    assert_eq!(
        NOTE_KEY_URL_MISMATCH,
        "the key served at witness.key_url is not the key that signed this record"
    );
    assert_eq!(
        COUNT_REASON_SAME_DAY,
        "same witness, same endpoint, same day; stored, not counted"
    );
    assert_eq!(
        ANCHOR_POLICY,
        "pending submissions are bundled into a nenrin-witness-batch-v1 ledger entry daily at 00:30 UTC by the ledger's schedule when the pool is not empty; the batch anchor fixes the existence time of every record in it; the Bitcoin stamp follows on the operator's stamping run"
    );
    assert_eq!(
        WHY_BAD_KEY_URL,
        "witness.key_url must be an https URL under the witness's own domain"
    );
    assert_eq!(CONTENT_TYPE_JSON, "application/json; charset=utf-8");
    assert_eq!(
        (
            ERR_TOO_LARGE,
            ERR_INVALID_RECORD,
            ERR_GLOBAL_CAP,
            ERR_DOMAIN_CAP,
            ERR_IP_CAP
        ),
        (
            "too_large",
            "invalid_witness_record",
            "daily_global_cap_reached",
            "daily_per_domain_cap_reached",
            "daily_per_ip_cap_reached"
        )
    );
    assert_eq!(
        (
            ERR_SIG_TOGETHER,
            ERR_SIG_INVALID,
            ERR_KEY_URL_WITHOUT_SIG,
            ERR_SELF_WITNESS,
            ERR_KEY_URL_UNREACHABLE,
            ERR_KEY_URL_MISMATCH
        ),
        (
            "signature_and_public_key_must_come_together",
            "signature_invalid",
            "key_url_without_signature",
            "self_witness",
            "key_url_unreachable",
            "key_url_mismatch"
        )
    );
    assert_eq!(
        Limits::default(),
        Limits {
            max_record_len: 65_536,
            daily_global: 500,
            daily_per_ip: 5,
            daily_per_domain: 50,
            batch_max: 200,
            key_fetch_timeout: std::time::Duration::from_secs(5),
        }
    );
}
