//! The daemon's witness face (issue 43) as the pool sees it: the real `conduct-walker run` with
//! a `[witness_face]`, loopback HTTPS targets, and a requester written here from the spec
//! ("witness-pool.md" §1.3, §2.1, §4.6, §5) alone: the envelope is built by hand, POSTed over a
//! plain socket, and every answer is checked independently (canonical bytes, SHA-256, Ed25519
//! with the key the face serves). Then what the face stored and counted.

mod daemon_support;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use conduct_walker::sandbox::{Handler, HttpsServer, Resp, SandboxCa, handler};
use conduct_walker::store::witness_requests::{self, WitnessRequest};
use daemon_support::{Daemon, free_port, http_get, metric, runtime};
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const ORIGIN: &str = "https://witness.example.org";
const KEY_URL: &str = "https://witness.example.org/keys/witness.json";
const SIGNED_DOMAIN: &str = "witness.example.org";
const VANTAGE: &str = "loopback test vantage";
const EXT: &str = "https://gate.horizonshield.dev/ext/conduct/v1";
const INSTRUCTION: &str = "Measure the listed public surfaces of endpoint from your own vantage. Reply with one nenrin-witness-observation-v1 record: observed is surface -> what you saw, request_sha256 is the sha256 of this request's canonical bytes, source is { kind: external_witness, signed_domain, key_url }, signed Ed25519 over the canonical bytes with the key served at your key_url. Expected values are deliberately not given. Nothing you send is executed; only observed is compared, by hash, with the operator's expected state.";
/// A key the target serves at `/keys/witness.json` (any text: its hash is observed).
const TARGET_KEY: &str = "dpUASrdBhojNzqiVw+FDTmGhHI61yzsDqsZKAMIyo04=";

fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The NENRIN canonical bytes (sorted keys, compact, UTF-8): the crate's writer, which its own
/// vectors pin.
fn canonical(value: &Value) -> Vec<u8> {
    conduct_walker::canonical::to_bytes(value)
}

// ---------------------------------------------------------------------------------------------
// The daemon with its face

fn face_config(listen: SocketAddr, face: SocketAddr) -> String {
    format!(
        r#"[witness]
name = "face test"
vantage = "{VANTAGE}"
key = "witness.pem"
key_url = "{KEY_URL}"

[witness_face]
listen = "{face}"
origin = "{ORIGIN}"
reciprocal = true
max_in_flight = 1

[network]
extra_ca = ["ca.pem"]
allow_private_network = true
request_deadline_secs = 10

[daemon]
database = "walker.db"
listen = "{listen}"
concurrency = 2
jitter_secs = 0
shutdown_grace_secs = 5
"#
    )
}

struct Face {
    daemon: Daemon,
    addr: SocketAddr,
    /// The face's key, as `keys generate` wrote it.
    public_key_b64: String,
}

fn start_face(ca: &SandboxCa) -> Face {
    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let key =
        conduct_walker::witness::keys::generate_key_file(&dir.path().join("witness.pem")).unwrap();
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    std::fs::write(dir.path().join("walker.toml"), face_config(listen, addr)).unwrap();
    let mut daemon = Daemon::start_in(dir, listen);
    daemon.wait_for("the witness face", Duration::from_secs(30), |_| {
        http_get(addr, "/.well-known/agent-card.json").is_some_and(|(s, _)| s == 200)
    });
    Face {
        daemon,
        addr,
        public_key_b64: B64.encode(key.verifying_key().as_bytes()),
    }
}

// ---------------------------------------------------------------------------------------------
// The requester, from the spec

/// One HTTP/1.1 exchange over a fresh connection. The body is written from another thread while
/// this one reads, so an answer sent before the body was read (413) is still read.
struct Exchange {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Exchange {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&self.body));
        })
    }

    fn text(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap()
    }

    /// Every face answer is JSON and never cached (§4.6).
    fn assert_json_no_store(&self) {
        assert_eq!(self.header("content-type"), Some("application/json"));
        assert_eq!(self.header("cache-control"), Some("no-store"));
    }
}

fn exchange(addr: SocketAddr, method: &str, path: &str, body: &[u8]) -> Exchange {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: nenrin-witness-request/0.1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut writer = stream.try_clone().unwrap();
    let body = body.to_vec();
    // The face may answer and close before taking the whole body (413): a failed write is fine.
    let wrote = std::thread::spawn(move || {
        let _ = writer.write_all(head.as_bytes());
        let _ = writer.write_all(&body);
    });
    let mut bytes = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
        }
    }
    wrote.join().unwrap();
    parse_response(&bytes)
}

fn parse_response(bytes: &[u8]) -> Exchange {
    let end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(bytes)));
    let head = String::from_utf8_lossy(&bytes[..end]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let rest = &bytes[end + 4..];
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .map(|(_, v)| v.parse::<usize>().unwrap());
    let body = match length {
        Some(n) => rest[..n].to_vec(),
        None => rest.to_vec(),
    };
    Exchange {
        status: status.parse().unwrap(),
        headers,
        body,
    }
}

/// §2.3: the request object as the reference requester writes it (no draw: zero pool, a beacon
/// of kind `none`).
fn request_object(endpoint: &str, surfaces: &[&str]) -> Value {
    json!({
        "schema": "nenrin-witness-request-v1",
        "endpoint": endpoint,
        "surfaces": surfaces,
        "subject_sha256": "ab".repeat(32),
        "pool_sha256": "0".repeat(64),
        "beacon": {"kind": "none", "height": "0", "hash": "0".repeat(64)},
        "requested_at": "2026-12-06T03:40:00Z",
        "reply_schema": "nenrin-witness-observation-v1",
        "instruction": INSTRUCTION,
    })
}

/// §2.1: the `message/send` envelope around `request`.
fn envelope(id: &str, request: &Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "message/send",
        "params": {"message": {
            "role": "user",
            "messageId": id,
            "parts": [{"kind": "data", "data": request}],
            "metadata": {format!("{EXT}/witness_request"): "nenrin-witness-request-v1"},
        }},
    })
}

fn ask(face: SocketAddr, id: &str, request: &Value) -> Exchange {
    let body = serde_json::to_vec(&envelope(id, request)).unwrap();
    exchange(face, "POST", "/a2a", &body)
}

// ---------------------------------------------------------------------------------------------
// Checking an answer, from the spec

/// §5.4 answered, §5.1 members, §5.2 hash and signature with the key the face serves.
fn check_answered(reply: &Exchange, id: &str, request: &Value, served_key: &str) -> Value {
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.assert_json_no_store();
    let body = reply.json();
    assert_eq!((&body["jsonrpc"], &body["id"]), (&json!("2.0"), &json!(id)));
    let result = &body["result"];
    assert_eq!(result["kind"], "message");
    assert_eq!(result["role"], "agent");
    assert_eq!(
        result["metadata"][format!("{EXT}/witness_reply")],
        "answered"
    );
    let observation = result["parts"][0]["data"].clone();
    assert_eq!(result["parts"][0]["kind"], "data");
    let record_sha256 = observation["record_sha256"].as_str().unwrap();
    assert_eq!(result["messageId"], format!("obs-{}", &record_sha256[..16]));

    let mut hashed = observation.clone();
    let members = hashed.as_object_mut().unwrap();
    for signed in [
        "record_sha256",
        "signature_ed25519_b64",
        "public_key_ed25519_b64",
    ] {
        members.remove(signed);
    }
    let bytes = canonical(&hashed);
    assert_eq!(sha256_hex(&bytes), record_sha256);
    assert_eq!(observation["public_key_ed25519_b64"], served_key);
    let key: [u8; 32] = B64.decode(served_key).unwrap().try_into().unwrap();
    let signature: [u8; 64] = B64
        .decode(observation["signature_ed25519_b64"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    VerifyingKey::from_bytes(&key)
        .unwrap()
        .verify(&bytes, &Signature::from_bytes(&signature))
        .expect("the observation verifies with the key the face serves");

    assert_eq!(observation["schema"], "nenrin-witness-observation-v1");
    assert_eq!(observation["prev"], Value::Null);
    assert_eq!(
        observation["request_sha256"],
        sha256_hex(&canonical(request))
    );
    assert_eq!(
        observation["source"],
        json!({"kind": "external_witness", "signed_domain": SIGNED_DOMAIN, "key_url": KEY_URL})
    );
    assert_eq!(
        observation["witness"],
        json!({"name": SIGNED_DOMAIN, "vantage": VANTAGE})
    );
    assert_eq!(
        observation["establishes"],
        json!([
            "at recorded_at this witness, from its own vantage, saw the observed state of the listed surfaces of endpoint",
            "the observation answers the request whose canonical sha256 is request_sha256",
        ])
    );
    observation
}

/// §5.4 declined: the reason in the metadata and the text part.
fn check_declined(reply: &Exchange, reason: &str, why: &str) {
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.assert_json_no_store();
    let result = &reply.json()["result"];
    assert_eq!(result["kind"], "message");
    assert_eq!(result["role"], "agent");
    assert!(
        result["messageId"]
            .as_str()
            .unwrap()
            .starts_with("declined-")
    );
    assert_eq!(
        result["parts"],
        json!([{"kind": "text", "text": format!("declined: {reason}: {why}")}])
    );
    assert_eq!(
        result["metadata"],
        json!({format!("{EXT}/witness_reply"): "declined", format!("{EXT}/witness_reply_reason"): reason})
    );
}

// ---------------------------------------------------------------------------------------------
// The targets

/// A target serving three of the nine surfaces; the others answer 404.
fn surfaces_target() -> Handler {
    handler(|req| match req.path.as_str() {
        "/health" => Resp::json(
            200,
            &json!({"gate_commit": "c0ffee", "gate_version": "0.4.18"}),
        ),
        "/keys/witness.json" => Resp::json(200, &json!({"public_key_ed25519_b64": TARGET_KEY})),
        _ => Resp::empty(404),
    })
}

/// A target whose every surface waits until the test lets it answer: a measurement of it holds
/// its slot as long as the test needs.
fn held_target(hits: Arc<AtomicUsize>, release: Arc<tokio::sync::Semaphore>) -> Handler {
    Arc::new(move |_req| {
        let (hits, release) = (hits.clone(), release.clone());
        Box::pin(async move {
            hits.fetch_add(1, Ordering::SeqCst);
            let _go = release.acquire().await;
            Resp::empty(404)
        })
    })
}

// ---------------------------------------------------------------------------------------------

#[test]
fn the_face_publishes_answers_verifiably_refuses_in_the_spec_order_and_counts() {
    let started = Instant::now();
    let rt = runtime();
    let ca = SandboxCa::generate();
    let target = rt
        .block_on(HttpsServer::start(&ca, surfaces_target()))
        .unwrap();
    let (hits, release) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(tokio::sync::Semaphore::new(0)),
    );
    let held = rt
        .block_on(HttpsServer::start(
            &ca,
            held_target(hits.clone(), release.clone()),
        ))
        .unwrap();
    let mut face = start_face(&ca);
    let addr = face.addr;

    let served_key = published_documents(&face);
    let answered_sha = answered_request(addr, &target.base(), &served_key);
    let reciprocal_sha = reciprocal_beside_a_request(addr, &target.base());
    json_rpc_errors(addr);
    let held_sha = busy_and_declines_while_busy(addr, &target, &held, &hits, &release, &served_key);
    stored_and_counted(&mut face.daemon, [answered_sha, held_sha, reciprocal_sha]);
    face.daemon.stop();
    eprintln!("witness face test: {:?}", started.elapsed());
}

/// §1.3: the card, the consent file, the key and the key history, each JSON, never cached.
fn published_documents(face: &Face) -> String {
    let get = |path: &str| {
        let reply = exchange(face.addr, "GET", path, b"");
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        reply.assert_json_no_store();
        reply.json()
    };
    let card = get("/.well-known/agent-card.json");
    assert_eq!(card["url"], format!("{ORIGIN}/a2a"));
    let extension = &card["capabilities"]["extensions"][0];
    assert_eq!(extension["uri"], EXT);
    assert_eq!(
        extension["params"]["witness_policy"],
        json!({"reciprocal": true})
    );
    assert_eq!(
        extension["params"]["witness_reply"],
        json!({
            "transport": "a2a",
            "answers": format!("{ORIGIN}/a2a"),
            "request_schema": "nenrin-witness-request-v1",
            "reply_schema": "nenrin-witness-observation-v1",
            "key_url": KEY_URL,
        })
    );
    let consent = get("/.well-known/mcp-conduct.json");
    assert_eq!(consent["witness_policy"], json!({"reciprocal": true}));
    assert_eq!(consent["witness_key_url"], KEY_URL);

    let key = get("/keys/witness.json");
    assert_eq!(key["public_key_ed25519_b64"], face.public_key_b64);
    assert_eq!(key["alg"], "ed25519");
    assert_eq!(key["domain"], SIGNED_DOMAIN);

    let history = get("/.well-known/key-history.json");
    key_history(&history, &face.public_key_b64);
    face.public_key_b64.clone()
}

/// §8.1, §8.2: the active key alone, every member present, the hash over the four members.
fn key_history(history: &Value, public_key_b64: &str) {
    assert_eq!(history["schema"], "key-history-v1");
    assert_eq!(history["subject"], ORIGIN);
    let keys = history["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 1);
    let entry = keys[0].as_object().unwrap();
    for member in [
        "use",
        "kid",
        "alg",
        "public_key_ed25519_b64",
        "served_at",
        "signs",
        "since",
        "since_commit",
        "status",
        "retired_at",
        "revoked_at",
        "compromised_from",
        "reason",
    ] {
        assert!(entry.contains_key(member), "keys[0] lacks {member}");
    }
    assert_eq!(entry["use"], "witness");
    assert_eq!(entry["alg"], "Ed25519");
    assert_eq!(entry["public_key_ed25519_b64"], public_key_b64);
    assert_eq!(entry["served_at"], json!([KEY_URL]));
    assert_eq!(entry["status"], "active");
    // The key file was written just now: it was first published today (UTC).
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(entry["since"], today);
    let rule = history["rule"].as_array().unwrap();
    assert_eq!(rule.len(), 5);
    assert_eq!(rule[0], "A key not listed here is not this domain's key.");
    let covered = json!({
        "schema": history["schema"],
        "subject": history["subject"],
        "keys": history["keys"],
        "rule": history["rule"],
    });
    assert_eq!(history["history_sha256"], sha256_hex(&canonical(&covered)));
    assert_eq!(history["anchors"]["covers_served_list"], false);
    assert_eq!(history["anchors"]["current"], json!([]));
    assert_eq!(history["does_not_establish"].as_array().unwrap().len(), 3);
}

/// A request answered: verified as a reader verifies it, the observed objects as §3.3 says.
fn answered_request(face: SocketAddr, endpoint: &str, served_key: &str) -> String {
    let surfaces = [
        "health.gate_commit",
        "keys.witness",
        "keys.operator",
        "dns.caa",
    ];
    let request = request_object(&format!("{endpoint}/"), &surfaces);
    let reply = ask(face, "hs-witness-abababababababab", &request);
    let observation = check_answered(&reply, "hs-witness-abababababababab", &request, served_key);
    assert_eq!(observation["endpoint"], endpoint);
    assert_eq!(
        observation["observed"],
        json!({
            "health.gate_commit": {"status": "200", "gate_commit": "c0ffee", "gate_version": "0.4.18"},
            "keys.witness": {"status": "200", "present": "true", "key_sha256": sha256_hex(TARGET_KEY.as_bytes())},
            "keys.operator": {"status": "404", "present": "false"},
        })
    );
    assert_eq!(
        observation["does_not_establish"][2],
        "anything about the requested surfaces this witness does not measure: dns.caa"
    );
    observation["record_sha256"].as_str().unwrap().to_string()
}

/// §6.2: a `caller_card` beside a request gets its decision in the same answer's metadata,
/// next to `witness_reply`; one alone gets a message of its own. Both declined here (ourselves,
/// not https), so nothing is walked.
fn reciprocal_beside_a_request(face: SocketAddr, endpoint: &str) -> String {
    let request = request_object(&format!("{endpoint}/"), &["keys.operator"]);
    let mut body = envelope("hs-witness-cdcdcdcdcdcdcdcd", &request);
    body["params"]["message"]["metadata"][format!("{EXT}/caller_card")] =
        json!(format!("{ORIGIN}/.well-known/agent-card.json"));
    let reply = exchange(face, "POST", "/a2a", &serde_json::to_vec(&body).unwrap());
    let result = reply.json()["result"].clone();
    let sha = result["parts"][0]["data"]["record_sha256"]
        .as_str()
        .unwrap()
        .to_string();
    let metadata = &result["metadata"];
    assert_eq!(
        metadata[format!("{EXT}/witness_reply")],
        "answered",
        "{metadata}"
    );
    assert_eq!(
        metadata[format!("{EXT}/reciprocal")],
        "declined",
        "{metadata}"
    );

    let alone = json!({
        "jsonrpc": "2.0", "id": 9, "method": "message/send",
        "params": {"message": {"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "hi"}],
            "metadata": {format!("{EXT}/caller_card"): "http://caller.example.com/.well-known/agent-card.json"}}},
    });
    let reply = exchange(face, "POST", "/a2a", &serde_json::to_vec(&alone).unwrap());
    assert_eq!(reply.status, 200, "{}", reply.text());
    let answer = reply.json();
    assert_eq!(answer["id"], 9);
    assert_eq!(
        answer["result"]["parts"][0]["text"],
        "reciprocal walk: declined: not_https"
    );
    assert_eq!(
        answer["result"]["metadata"][format!("{EXT}/reciprocal")],
        "declined"
    );
    sha
}

/// §4.6 steps 1–4 and the other methods and paths, with their exact bodies.
fn json_rpc_errors(face: SocketAddr) {
    let cap = 1_000_000;
    let too_large = exchange(face, "POST", "/a2a", &vec![b' '; cap + 1]);
    assert_eq!(
        (too_large.status, too_large.text()),
        (413, r#"{"error":"too large"}"#)
    );
    too_large.assert_json_no_store();
    // At the cap exactly the body is read: here, a message of another method.
    let mut at_cap = br#"{"jsonrpc":"2.0","id":0,"method":"tasks/get"}"#.to_vec();
    at_cap.resize(cap, b' ');
    let method = exchange(face, "POST", "/a2a", &at_cap);
    assert_eq!(
        (method.status, method.text()),
        (
            200,
            r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"only message/send is served here"}}"#
        )
    );
    let parse = exchange(face, "POST", "/a2a", b"{");
    assert_eq!(
        (parse.status, parse.text()),
        (
            400,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#
        )
    );
    parse.assert_json_no_store();
    let no_part = json!({"jsonrpc": "2.0", "id": "np", "method": "message/send",
        "params": {"message": {"role": "user", "messageId": "np", "parts": [{"kind": "text", "text": "please witness agent.example.org"}]}}});
    let no_part = exchange(face, "POST", "/a2a", no_part.to_string().as_bytes());
    assert_eq!(
        (no_part.status, no_part.text()),
        (
            200,
            r#"{"jsonrpc":"2.0","id":"np","error":{"code":-32602,"message":"no nenrin-witness-request-v1 data part in the message"}}"#
        )
    );
    let get = exchange(face, "GET", "/a2a", b"");
    assert_eq!(
        (get.status, get.text()),
        (
            405,
            r#"{"error":"POST a JSON-RPC message/send with a nenrin-witness-request-v1 data part"}"#
        )
    );
    get.assert_json_no_store();
    let elsewhere = exchange(face, "GET", "/.well-known/jwks.json", b"");
    assert_eq!(
        (elsewhere.status, elsewhere.text()),
        (404, r#"{"error":"not found"}"#)
    );
    elsewhere.assert_json_no_store();
    // The published documents are read, never written to.
    let posted = exchange(face, "POST", "/keys/witness.json", b"{}");
    assert_eq!(
        (posted.status, posted.text()),
        (405, r#"{"error":"only GET is served here"}"#)
    );
}

/// §4.6 step 5 with `max_in_flight = 1`: while a measurement of the held target runs, another
/// measurement is answered 429, and declines that need no measurement are answered at once.
fn busy_and_declines_while_busy(
    face: SocketAddr,
    target: &HttpsServer,
    held: &HttpsServer,
    hits: &AtomicUsize,
    release: &tokio::sync::Semaphore,
    served_key: &str,
) -> String {
    let held_request = request_object(&held.base(), &["health.gate_commit"]);
    let in_flight = {
        let request = held_request.clone();
        std::thread::spawn(move || ask(face, "held", &request))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while hits.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the held target was never asked");
        std::thread::sleep(Duration::from_millis(10));
    }
    let busy = ask(
        face,
        "b",
        &request_object(&target.base(), &["keys.witness"]),
    );
    assert_eq!(busy.status, 429, "{}", busy.text());
    assert_eq!(busy.header("retry-after"), Some("60"));
    busy.assert_json_no_store();
    assert_eq!(
        busy.text(),
        r#"{"jsonrpc":"2.0","id":"b","error":{"code":-32000,"message":"busy: 1 measurements in flight; retry later"}}"#
    );

    let mut bad = request_object(&target.base(), &["keys.witness"]);
    bad["subject_sha256"] = json!("xyz");
    bad.as_object_mut().unwrap().remove("beacon");
    check_declined(
        &ask(face, "bad", &bad),
        "bad_request",
        "subject_sha256 must be 64 hex; beacon.hash must be 64 hex",
    );
    check_declined(
        &ask(face, "self", &request_object(ORIGIN, &["keys.witness"])),
        "self_witness",
        "an agent cannot witness itself under a key it serves (11.4)",
    );

    release.add_permits(1);
    let answered = in_flight.join().unwrap();
    let observation = check_answered(&answered, "held", &held_request, served_key);
    assert_eq!(
        observation["observed"],
        json!({"health.gate_commit": {"status": "404", "gate_commit": "", "gate_version": ""}})
    );
    observation["record_sha256"].as_str().unwrap().to_string()
}

/// The rows of `witness_requests` (written off the request path, so waited for), the
/// `/metrics` counters, and the status pages' section.
fn stored_and_counted(daemon: &mut Daemon, answered: [String; 3]) {
    let rows = |d: &Daemon| -> Vec<WitnessRequest> {
        d.store()
            .map(|s| witness_requests::recent(s.connection(), 100).unwrap())
            .unwrap_or_default()
    };
    daemon.wait_for("five stored requests", Duration::from_secs(30), |d| {
        rows(d).len() >= 5
    });
    let rows = rows(daemon);
    assert_eq!(rows.len(), 5, "{rows:?}");
    let answered_rows: Vec<&WitnessRequest> =
        rows.iter().filter(|r| r.outcome == "answered").collect();
    let mut stored: Vec<String> = answered_rows
        .iter()
        .map(|r| r.record_sha256.clone().unwrap())
        .collect();
    stored.sort();
    let mut expected = answered.to_vec();
    expected.sort();
    assert_eq!(stored, expected);
    assert!(answered_rows.iter().all(|r| r.reason.is_none()));
    let declined = |reason: &str| {
        rows.iter()
            .find(|r| r.outcome == "declined" && r.reason.as_deref() == Some(reason))
            .unwrap_or_else(|| panic!("no {reason} row in {rows:?}"))
    };
    let bad = declined("bad_request");
    assert_eq!(
        bad.detail.as_deref(),
        Some("subject_sha256 must be 64 hex; beacon.hash must be 64 hex")
    );
    assert_eq!(bad.record_sha256, None);
    assert_eq!(declined("self_witness").endpoint.as_deref(), Some(ORIGIN));
    assert!(
        rows.iter()
            .all(|r| r.request_sha256.as_ref().is_some_and(|s| s.len() == 64))
    );

    let text = daemon.get_text("/metrics");
    let count = |outcome: &str, reason: &str| {
        let labels = format!("outcome=\"{outcome}\",reason=\"{reason}\"");
        metric(&text, "conduct_walker_witness_requests_total")
            .into_iter()
            .find(|(l, _)| *l == labels)
            .map(|(_, v)| v)
            .unwrap_or_else(|| panic!("no {labels} in\n{text}"))
    };
    for (outcome, reason, n) in [
        ("answered", "", 3.0),
        ("declined", "bad_request", 1.0),
        ("declined", "self_witness", 1.0),
        ("declined", "target_not_public", 0.0),
        ("busy", "", 1.0),
        ("too_large", "", 1.0),
        ("bad_jsonrpc", "parse_error", 1.0),
        ("bad_jsonrpc", "method_not_served", 1.0),
        ("bad_jsonrpc", "no_request_part", 1.0),
        ("internal", "", 0.0),
        ("reciprocal_only", "", 1.0),
    ] {
        assert_eq!(count(outcome, reason), n, "{outcome} {reason}");
    }

    let overview = daemon.get_text("/");
    assert!(overview.contains("Witness requests"));
    assert!(overview.contains("self_witness"));
    assert!(overview.contains(&answered[0][..16]));
}

/// A reload swaps what the face serves in place, moves it to a new `listen`, or turns it off;
/// the daemon goes on serving its own listener throughout.
#[test]
fn a_reload_swaps_moves_or_removes_the_face() {
    let ca = SandboxCa::generate();
    let mut face = start_face(&ca);
    let config = face.daemon.path("walker.toml");
    let first = std::fs::read_to_string(&config).unwrap();
    let reload = |d: &mut Daemon, text: &str, what: &str, done: &dyn Fn(&Daemon) -> bool| {
        std::fs::write(d.path("walker.toml"), text).unwrap();
        d.signal("HUP");
        d.wait_for(what, Duration::from_secs(30), |d| done(d));
    };
    let consent = |addr: SocketAddr| {
        http_get(addr, "/.well-known/mcp-conduct.json")
            .filter(|(s, _)| *s == 200)
            .map(|(_, body)| serde_json::from_slice::<Value>(&body).unwrap())
    };

    let old = face.addr;
    let not_reciprocal = first.replace("reciprocal = true", "reciprocal = false");
    reload(
        &mut face.daemon,
        &not_reciprocal,
        "the consent file to change",
        &|_| consent(old).is_some_and(|c| c["witness_policy"]["reciprocal"] == false),
    );

    let new: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let moved = not_reciprocal.replace(
        &format!("listen = \"{old}\""),
        &format!("listen = \"{new}\""),
    );
    reload(
        &mut face.daemon,
        &moved,
        "the face at its new address",
        &|_| consent(new).is_some() && consent(old).is_none(),
    );

    let without: String = moved.split("[witness_face]").next().unwrap().to_string()
        + &moved[moved.find("[network]").unwrap()..];
    reload(&mut face.daemon, &without, "the face to stop", &|_| {
        consent(new).is_none()
    });
    assert!(face.daemon.log().contains("witness face: off"));
    assert_eq!(
        face.daemon.get("/healthz").map(|(s, _)| s),
        Some(200),
        "the daemon's own listener is untouched"
    );
    face.daemon.stop();
}

/// A face that cannot bind its address refuses to start the daemon, with the address named.
#[test]
fn a_face_that_cannot_listen_refuses_to_start_the_daemon() {
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    conduct_walker::witness::keys::generate_key_file(&dir.path().join("witness.pem")).unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let face = taken.local_addr().unwrap();
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    std::fs::write(dir.path().join("walker.toml"), face_config(listen, face)).unwrap();
    let out = std::process::Command::new(daemon_support::BIN)
        .args(["run", "--config"])
        .arg(dir.path().join("walker.toml"))
        .env_remove("CREDENTIALS_DIRECTORY")
        .env_remove("NOTIFY_SOCKET")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot listen on {face}")),
        "{stderr}"
    );
    drop(taken);
}
