//! The witness pool's answer (issue 43, "Performance"): what one `conduct-walker witness answer`
//! costs for a request of eight surfaces of a loopback target, and what the daemon's face holds
//! of refusals.
//!
//! Part 1 runs the release binary RUNS times, one after another, against a loopback HTTPS target
//! this bench serves (eight surfaces, one a signed card whose JWKS is fetched too), and reads
//! each child's CPU from `getrusage(RUSAGE_CHILDREN)` around its `wait`: the process start, the
//! request, nine guarded fetches on fresh TLS connections, signing and the reader's check of its
//! own answer. Target: median ≤ 1 s wall, ≤ 50 ms CPU.
//!
//! Part 2 starts `conduct-walker run` with a `[witness_face]` and no targets, POSTs requests
//! that are declined `bad_request` at REFUSALS_PER_SEC (default 100) for REFUSAL_SECS (default
//! 60), and samples the daemon's resident memory every 5 s: it must stay flat.
//!
//!     cargo bench --bench witness_answer
//!     WITNESS_BENCH_BIN=/path/to/conduct-walker REFUSAL_SECS=120 cargo bench --bench witness_answer

use conduct_walker::sandbox::{HttpsServer, Req, Resp, SandboxCa, handler};
use serde_json::{Value, json};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 20;
const TARGET_WALL_MS: f64 = 1000.0;
const TARGET_CPU_MS: f64 = 50.0;

fn children_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    assert_eq!(rc, 0);
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn median_ms(mut xs: Vec<Duration>) -> f64 {
    xs.sort();
    xs[xs.len() / 2].as_secs_f64() * 1000.0
}

fn binary() -> PathBuf {
    std::env::var_os("WITNESS_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_conduct-walker")))
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A target answering the first eight surfaces, its card signed (ES256) with a JWKS to fetch.
async fn target(ca: &SandboxCa) -> HttpsServer {
    HttpsServer::start(
        ca,
        handler(|req: Req| match req.path.as_str() {
            "/health" => Resp::json(
                200,
                &json!({"gate_commit": "abc123", "gate_version": "0.4.18"}),
            ),
            "/.well-known/agent-card.json" => Resp::json(200, &card(&req.base)),
            "/.well-known/jwks.json" => Resp::json(
                200,
                &json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1",
                    "x": "CytwnuXFtXi7PFCcF-TCbvW5OgOg4KuWRLeRvdfHWLs",
                    "y": "Zha3FI2QplMaGveXjrIg8PxrZ6dTjHmESoGs88uAIiA"}]}),
            ),
            "/.well-known/openai-apps-challenge" => {
                Resp::bytes(200, "text/plain", "challenge-token")
            }
            "/ext/conduct/v1" => Resp::json(200, &json!({"spec_markdown_sha256": "ab".repeat(32)})),
            "/keys/agreement.json" | "/keys/witness.json" | "/keys/operator.json" => Resp::json(
                200,
                &json!({"public_key_ed25519_b64": "dpUASrdBhojNzqiVw+FDTmGhHI61yzsDqsZKAMIyo04="}),
            ),
            _ => Resp::empty(404),
        }),
    )
    .await
    .unwrap()
}

/// A card with one ES256 signature entry naming a jku on the same server (it does not verify:
/// the cost measured is the fetch and the check, not the outcome).
fn card(base: &str) -> Value {
    use base64::Engine as _;
    let header = json!({"alg": "ES256", "typ": "JOSE", "kid": "k1",
        "jku": format!("{base}/.well-known/jwks.json")});
    let protected = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(header.to_string());
    json!({
        "name": "bench agent", "description": "d", "url": "https://agent.example/a2a",
        "version": "1.0", "capabilities": {}, "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"], "skills": [],
        "signatures": [{"protected": protected, "signature": "A".repeat(86)}],
    })
}

fn request(endpoint: &str) -> Value {
    let zeros = "0".repeat(64);
    json!({"schema": "nenrin-witness-request-v1", "endpoint": endpoint,
        "surfaces": ["health.gate_commit", "agent-card.signature", "well-known.jwks",
            "well-known.openai-apps-challenge", "ext.conduct-v1.spec", "keys.agreement",
            "keys.witness", "keys.operator"],
        "subject_sha256": "1".repeat(64), "pool_sha256": zeros,
        "beacon": {"kind": "none", "height": "0", "hash": zeros},
        "requested_at": "2026-12-06T00:00:00Z", "reply_schema": "nenrin-witness-observation-v1"})
}

fn keygen(dir: &Path, name: &str) -> PathBuf {
    let key = dir.join(name);
    let out = Command::new(binary())
        .args(["keygen", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(out.status.success());
    key
}

fn part1_answer(dir: &Path, ca_pem: &Path, endpoint: &str) {
    let key = keygen(dir, "answer.pem");
    let file = dir.join("request.json");
    std::fs::write(&file, serde_json::to_vec(&request(endpoint)).unwrap()).unwrap();
    let (mut cpu, mut wall) = (Vec::new(), Vec::new());
    for i in 0..=RUNS {
        let before = children_cpu();
        let started = Instant::now();
        let out = Command::new(binary())
            .args(["witness", "answer", "--request"])
            .arg(&file)
            .arg("--key")
            .arg(&key)
            .args([
                "--key-url",
                "https://witness.example.org/keys/witness.json",
                "--ca-cert",
            ])
            .arg(ca_pem)
            .args(["--allow-private-network", "--json"])
            .output()
            .unwrap();
        let (w, c) = (started.elapsed(), children_cpu() - before);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let message: Value = serde_json::from_slice(&out.stdout).unwrap();
        let observed = &message["parts"][0]["data"]["observed"];
        assert_eq!(observed.as_object().map(|o| o.len()), Some(8), "{observed}");
        if i > 0 {
            cpu.push(c);
            wall.push(w);
        }
    }
    let (wall_ms, cpu_ms) = (median_ms(wall.clone()), median_ms(cpu.clone()));
    println!(
        "witness answer, 8 surfaces of a loopback target, {RUNS} runs: median wall {wall_ms:.1} ms \
         (min {:.1}, max {:.1}; target <= {TARGET_WALL_MS}), median CPU {cpu_ms:.1} ms (min {:.1}, \
         max {:.1}; target <= {TARGET_CPU_MS}): {}",
        wall.iter().min().unwrap().as_secs_f64() * 1e3,
        wall.iter().max().unwrap().as_secs_f64() * 1e3,
        cpu.iter().min().unwrap().as_secs_f64() * 1e3,
        cpu.iter().max().unwrap().as_secs_f64() * 1e3,
        if wall_ms <= TARGET_WALL_MS && cpu_ms <= TARGET_CPU_MS {
            "met"
        } else {
            "NOT met"
        }
    );
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// One POST over a plain TCP connection (the face is plain HTTP behind the proxy); the status.
fn post(addr: &str, body: &[u8]) -> u16 {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let head = format!(
        "POST /a2a HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn part2_refusals(dir: &Path) {
    let key = keygen(dir, "face.pem");
    let port = free_port();
    let config = dir.join("walker.toml");
    std::fs::write(
        &config,
        format!(
            "[witness]\nname = \"bench\"\nvantage = \"loopback\"\nkey = \"{}\"\nkey_url = \"https://witness.example.org/keys/witness.json\"\n\n[daemon]\ndatabase = \"{}\"\nlisten = \"off\"\n\n[witness_face]\nlisten = \"127.0.0.1:{port}\"\norigin = \"https://witness.example.org\"\n",
            key.display(),
            dir.join("walker.db").display()
        ),
    )
    .unwrap();
    let mut daemon = Command::new(binary())
        .args(["run", "--config"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = format!("127.0.0.1:{port}");
    let up = Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            up.elapsed() < Duration::from_secs(20),
            "the face did not come up"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (rate, secs) = (
        env_u64("REFUSALS_PER_SEC", 100),
        env_u64("REFUSAL_SECS", 60),
    );
    let mut bad = request("http://not-https.example");
    bad["schema"] = json!("nope");
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "message/send",
        "params": {"message": {"parts": [{"kind": "data", "data": bad}]}}}))
    .unwrap();
    let started = Instant::now();
    let (mut sent, mut ok) = (0u64, 0u64);
    let mut samples = vec![(0u64, rss_kib(daemon.id()))];
    while started.elapsed() < Duration::from_secs(secs) {
        let due = started + Duration::from_secs_f64(sent as f64 / rate as f64);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        ok += u64::from(post(&addr, &body) == 200);
        sent += 1;
        if sent % (rate * 5) == 0 {
            samples.push((started.elapsed().as_secs(), rss_kib(daemon.id())));
        }
    }
    let held = sent as f64 / started.elapsed().as_secs_f64();
    let _ = daemon.kill();
    let _ = daemon.wait();
    let series: Vec<String> = samples
        .iter()
        .map(|(t, kib)| format!("{t}s {:.1}", *kib as f64 / 1024.0))
        .collect();
    println!(
        "face refusals: {sent} bad_request POSTs in {:.1} s ({held:.1}/s, asked {rate}/s), {ok} answered 200; daemon RSS MiB: {}",
        started.elapsed().as_secs_f64(),
        series.join(", ")
    );
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    let dir = tempfile::tempdir().unwrap();
    let ca = SandboxCa::generate();
    let ca_pem = dir.path().join("ca.pem");
    ca.write_pem(&ca_pem).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(target(&ca));
    println!(
        "machine: {} cores, load {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    part1_answer(dir.path(), &ca_pem, &server.base());
    part2_refusals(dir.path());
    drop(server);
}
