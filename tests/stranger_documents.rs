//! Every document a stranger hands the walker goes through one bounded reader (issue 36, item 9:
//! `json::bounded`): a hostile one (deep nesting, arrays of nested copies near the size cap) is
//! refused with its input and cap named, loses nothing, and costs no more memory than a card
//! (48 MiB peak for a 1 MiB card of any shape, BENCHMARKS.md). Commands are measured as the
//! binary's own peak RSS (`ru_maxrss`, forked from python3 so the figure is the walker's);
//! answers from the network are fetched from loopback HTTPS and their reading is measured as
//! the growth of this process's peak RSS (`VmHWM`, reset through `/proc/self/clear_refs`; nextest
//! runs each test in a process of its own).

mod common;

use conduct_walker::json::bounded::{Input, Refused};
use conduct_walker::net::{Exchange, HttpRequest};
use conduct_walker::sandbox::{HttpsServer, Resp, SandboxCa, handler};

const MIB: usize = 1024 * 1024;

/// The bound on a whole command reading a hostile document: a card's.
const COMMAND_PEAK_MIB: usize = 48;
/// The bound on the growth of this process's peak while one answer is read (the 1 MiB body
/// itself is already held).
const ANSWER_GROWTH_MIB: usize = 16;

/// `count` chains of `depth` nested one-key objects, comma-separated.
fn copies(count: usize, depth: usize) -> String {
    let chain = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
    vec![chain; count].join(",")
}

/// An object `{"name": …, "bulk": [copies…]}` of about `bytes` bytes of `depth`-deep chains.
fn hostile_object(bytes: usize, depth: usize) -> Vec<u8> {
    let chain = 6 * depth + 1;
    let count = (bytes - 64) / (chain + 1);
    format!(r#"{{"name":"deep","bulk":[{}]}}"#, copies(count, depth)).into_bytes()
}

struct Measured {
    code: i32,
    peak_mib: f64,
    stdout: String,
    stderr: String,
}

/// `conduct-walker args…` with its own peak RSS (see `benches/support/rss.rs` for why python3).
fn measured(args: &[&str]) -> Measured {
    const LAUNCHER: &str = "import resource, subprocess, sys\n\
r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n\
sys.stderr.buffer.write(r.stdout + b'\\0' + r.stderr)\n\
print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n";
    let out = std::process::Command::new("python3")
        .args(["-c", LAUNCHER])
        .arg(env!("CARGO_BIN_EXE_conduct-walker"))
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut parts = text.split_whitespace();
    let code = parts.next().unwrap().parse().unwrap();
    let kib: f64 = parts.next().unwrap().parse().unwrap();
    let both = String::from_utf8_lossy(&out.stderr).into_owned();
    let (stdout, stderr) = both.split_once('\0').unwrap();
    let m = Measured {
        code,
        peak_mib: kib / 1024.0,
        stdout: stdout.to_string(),
        stderr: stderr.to_string(),
    };
    eprintln!(
        "{args:?}: exit {}, peak {:.1} MiB\n{}{}",
        m.code, m.peak_mib, m.stdout, m.stderr
    );
    m
}

fn status_kib(field: &str) -> usize {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

/// How far this process's peak RSS rose above its resident size while `f` ran, in MiB.
fn peak_growth_mib<T>(f: impl FnOnce() -> T) -> (T, f64) {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset VmHWM");
    let base = status_kib("VmRSS:");
    let out = f();
    let grew = status_kib("VmHWM:").saturating_sub(base);
    (out, grew as f64 / 1024.0)
}

/// A loopback HTTPS server answering every request with `status` and `body`, and the
/// exchange as fetched.
async fn fetched(ca: &SandboxCa, status: u16, body: Vec<u8>) -> (HttpsServer, Exchange) {
    let server = HttpsServer::start(
        ca,
        handler(move |_| Resp::bytes(status, "application/json", body.clone())),
    )
    .await
    .unwrap();
    let origin = server.base();
    let t = common::transport(ca, &[&origin], None);
    let ex = t
        .fetch(&HttpRequest::get(format!("{origin}/answer"), &[]))
        .await;
    assert_eq!(ex.status, status, "{:?}", ex.transport_error);
    (server, ex)
}

#[test]
fn records_import_of_a_line_of_nested_copies_is_refused_within_a_card_s_memory() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.db");
    // The issue's case: one 7 MB line, an array of 10,000 deeply nested copies (558 MiB before).
    let seven = format!("[{}]\n", copies(10_000, 115));
    assert!(seven.len() > 6 * MIB);
    // Just under the line cap: read, but its tree would be 128 MiB.
    let near_cap = hostile_object(MIB - 16, 100);
    for (what, bytes, says) in [
        ("7 MB", seven.into_bytes(), "over the cap of 1048576 bytes"),
        ("1 MiB", near_cap, "as a tree"),
    ] {
        let file = dir.path().join("import.jsonl");
        std::fs::write(&file, &bytes).unwrap();
        let r = measured(&[
            "records",
            "import",
            file.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 2, "{what}");
        assert!(
            r.stderr.contains("line 1: an import line") && r.stderr.contains(says),
            "{what}: {}",
            r.stderr
        );
        assert!(
            r.peak_mib <= COMMAND_PEAK_MIB as f64,
            "{what}: {}",
            r.peak_mib
        );
        // Nothing was imported, and no store was left behind.
        assert!(!db.exists(), "{what}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terms_verify_of_a_proposal_nested_deep_at_price_grade_is_unparseable_within_a_card_s_memory()
 {
    use conduct_walker::terms::TERMS_EXTENSION_URI;
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    let ca_pem = dir.path().join("ca.pem");
    ca.write_pem(&ca_pem).unwrap();
    // The standing proposal of the vectors with 1 MB of nested copies at /price/grade
    // (261 MiB before).
    let mut proposal: serde_json::Value = serde_json::from_slice(
        &std::fs::read(conduct_walker::sandbox::test_vectors(
            "sow/standing-proposal.signed.json",
        ))
        .unwrap(),
    )
    .unwrap();
    proposal["price"]["grade"] = serde_json::Value::String("GRADE".into());
    let text = serde_json::to_string(&proposal).unwrap();
    let bulk = format!("[{}]", copies(1_660, 100));
    let body = text.replace(r#""GRADE""#, &bulk).into_bytes();
    assert!(body.len() > 1_000_000 && body.len() < MIB, "{}", body.len());
    let server = HttpsServer::start(
        &ca,
        handler(move |_| Resp::bytes(200, "application/json", body.clone())),
    )
    .await
    .unwrap();
    let card = serde_json::json!({
        "name": "deep terms",
        "capabilities": {"extensions": [{
            "uri": TERMS_EXTENSION_URI, "required": false,
            "params": {"sow_spec": "0.18.0-draft", "proposals": [{
                "url": format!("{}/terms/deep.json", server.base()),
                "digest": format!("sha256:{}", "0".repeat(64)),
            }]}
        }]}
    });
    let card_path = dir.path().join("card.json");
    std::fs::write(&card_path, serde_json::to_vec(&card).unwrap()).unwrap();
    let host = server.base().trim_start_matches("https://").to_string();
    let r = tokio::task::spawn_blocking(move || {
        measured(&[
            "terms",
            "verify",
            "--file",
            card_path.to_str().unwrap(),
            "--ca-cert",
            ca_pem.to_str().unwrap(),
            "--allow-private-network",
            "--allow-host",
            &host,
        ])
    })
    .await
    .unwrap();
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.contains("outcome: unparseable"), "{}", r.stdout);
    assert!(
        r.stdout.contains("a terms document would take about")
            && r.stdout.contains("over the cap of 16 MiB"),
        "{}",
        r.stdout
    );
    assert!(r.peak_mib <= COMMAND_PEAK_MIB as f64, "{}", r.peak_mib);
}

#[test]
fn ring_verify_of_a_ring_file_of_nested_copies_stays_within_a_card_s_memory() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.json");
    std::fs::write(&history, b"{}").unwrap();
    let ring = dir.path().join("ring.json");
    let cap = Input::RingFile.caps().bytes;
    for (what, bytes, says) in [
        // Just under the cap: read as a document (its endpoint and month), never as a tree.
        (
            "under the cap",
            hostile_object(cap - 64, 100),
            "no string \"endpoint\"",
        ),
        (
            "over the cap",
            hostile_object(cap + 4096, 100),
            "larger than 4194304 bytes",
        ),
    ] {
        std::fs::write(&ring, &bytes).unwrap();
        let r = measured(&[
            "ring",
            "verify",
            ring.to_str().unwrap(),
            "--history",
            history.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 2, "{what}");
        assert!(r.stderr.contains(says), "{what}: {}", r.stderr);
        assert!(
            r.peak_mib <= COMMAND_PEAK_MIB as f64,
            "{what}: {}",
            r.peak_mib
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_intake_s_hostile_answer_is_unconfirmed_naming_the_cap_within_bounded_memory() {
    use conduct_walker::filing::answer::Answer;
    use conduct_walker::witness::intake::classify;
    let ca = SandboxCa::generate();
    let (_server, ex) = fetched(&ca, 201, hostile_object(MIB - 16, 100)).await;
    let (answer, grew) = peak_growth_mib(|| classify(&ex, &"a".repeat(64)));
    eprintln!("intake answer: peak grew {grew:.1} MiB: {answer:?}");
    let (_, before) = peak_growth_mib(|| conduct_walker::json::parse_lenient(&ex.body).is_ok());
    eprintln!("the same answer as an unbounded tree: peak grew {before:.1} MiB");
    match answer {
        Answer::Unknown { error, .. } => {
            assert!(
                error.contains("an intake's answer would take about"),
                "{error}"
            );
            assert!(error.contains("not counted as filed"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    assert!(grew <= ANSWER_GROWTH_MIB as f64, "{grew}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ledger_s_hostile_answer_is_refused_naming_the_cap_within_bounded_memory() {
    use conduct_walker::ledger::wire::{WireError, WitnessAnswer};
    let ca = SandboxCa::generate();
    // Chains within serde_json's 128 levels: the typed reader reads them.
    let (_server, ex) = fetched(&ca, 200, hostile_object(MIB - 16, 100)).await;
    let body = ex.body;
    let (parsed, grew) = peak_growth_mib(|| WitnessAnswer::parse(200, &body));
    eprintln!("ledger answer: peak grew {grew:.1} MiB: {parsed:?}");
    let (_, before) =
        peak_growth_mib(|| serde_json::from_slice::<serde_json::Value>(&body).is_ok());
    eprintln!("the same answer as an unbounded tree: peak grew {before:.1} MiB");
    match parsed {
        Err(e @ WireError::OverCap { .. }) => assert!(
            e.to_string()
                .starts_with("GET /witness/<sha>: a ledger's answer would take about"),
            "{e}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(grew <= ANSWER_GROWTH_MIB as f64, "{grew}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_ledger_s_hostile_answer_is_kept_as_its_text_within_bounded_memory() {
    let ca = SandboxCa::generate();
    let (_server, ex) = fetched(&ca, 200, hostile_object(MIB - 16, 100)).await;
    let body = ex.body;
    let (kept, grew) = peak_growth_mib(|| conduct_walker::witness::task_bind::kept_answer(&body));
    eprintln!("task ledger answer: peak grew {grew:.1} MiB");
    let (_, before) = peak_growth_mib(|| conduct_walker::json::parse_lenient(&body).is_ok());
    eprintln!("the same answer as an unbounded tree: peak grew {before:.1} MiB");
    // Nothing is lost: its first characters are kept as text, as for any answer not an object.
    assert_eq!(
        kept["raw"].as_str().unwrap(),
        &String::from_utf8_lossy(&body)[..500]
    );
    assert!(grew <= ANSWER_GROWTH_MIB as f64, "{grew}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_jwk_set_is_refused_naming_the_cap_within_bounded_memory() {
    use conduct_walker::card_signature::keys::TrustStore;
    let ca = SandboxCa::generate();
    let cap = Input::Jwks.caps().bytes;
    // At the JWKS cap, chains of empty arrays: the costliest nodes per byte.
    let count = (cap - 64) / 202;
    let chain = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let body = format!(r#"{{"keys":[{}]}}"#, vec![chain; count].join(",")).into_bytes();
    let (_server, ex) = fetched(&ca, 200, body).await;
    let body = ex.body;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jwks.json");
    std::fs::write(&file, &body).unwrap();
    let mut store = TrustStore::default();
    let (pinned, grew) = peak_growth_mib(|| store.pin_jwks_file("https://agent.example", &file));
    eprintln!("JWK Set: peak grew {grew:.1} MiB: {pinned:?}");
    assert!(pinned.is_err());
    assert!(grew <= ANSWER_GROWTH_MIB as f64, "{grew}");
    // One byte past the cap is refused before it is read.
    let long = [body.as_slice(), &vec![b' '; cap]].concat();
    assert!(matches!(
        conduct_walker::json::bounded::read(
            Input::Jwks,
            &long,
            conduct_walker::json::ReadOptions::STRICT
        ),
        Err(Refused::TooLong { .. })
    ));
}
