//! What reading a stranger's document costs (issue 21, item 2). A card is read whatever its shape
//! (the reference reads every card under the 1 MiB cap, spec §8.3 items 21–22), into a compact
//! document (`json::Doc`) whose size follows the text: these tests measure the heap with a
//! counting global allocator, so they assert bytes actually allocated, not an estimate.
//! (Issue 14 had bounded memory by refusing costly shapes; that refusal wrote "not a JSON
//! object" about valid cards, and is gone.)

mod common;

use common::*;
use conduct_walker::json::{self, ReadOptions};
use conduct_walker::sandbox::{HttpsServer, Req, Resp, SandboxCa, handler};
use conduct_walker::walk::{Mode, Wire};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the counters only observe.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let now = CURRENT.fetch_add(new_size - layout.size(), Ordering::Relaxed)
                    + (new_size - layout.size());
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Measurements in one process must not overlap (`cargo test` runs tests on threads).
static MEASURING: Mutex<()> = Mutex::new(());

/// The most the heap grew above its level at the start while `f` ran.
fn peak_growth<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

const MIB: usize = 1024 * 1024;

/// `count` chains of `depth` nested one-key objects, as the members of `wrapper`'s array.
fn chains(wrapper: &str, count: usize, depth: usize) -> Vec<u8> {
    let chain = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
    let body = vec![chain; count].join(",");
    format!(r#"{{"name":"deep","{wrapper}":[{body}]}}"#).into_bytes()
}

/// About 1 MB of 100-deep chains, under every body cap of the walk.
fn hostile(wrapper: &str) -> Vec<u8> {
    chains(wrapper, 1_660, 100)
}

/// A large but ordinary card: many skills with a few short fields each.
fn ordinary_card(skills: usize) -> Vec<u8> {
    let skill = |i: usize| {
        format!(
            r#"{{"id":"skill-{i}","name":"Skill {i}","description":"Does thing {i} well","tags":["a","b","c"],"examples":["do {i}"]}}"#
        )
    };
    let list: Vec<String> = (0..skills).map(skill).collect();
    format!(
        r#"{{"name":"big","url":"https://agent.example/a2a","version":"1.0","skills":[{}]}}"#,
        list.join(",")
    )
    .into_bytes()
}

/// The shapes issue 21 names, each about 1 MB: what the reference reads in 25–66 MiB.
fn shapes() -> Vec<(&'static str, Vec<u8>)> {
    // 120,000 names of three characters: about 1 MB, as the issue measured.
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let many_keys: Vec<String> = (0..120_000)
        .map(|i| {
            let name: String = [i / 3844, (i / 62) % 62, i % 62]
                .iter()
                .map(|&d| ALPHABET[d] as char)
                .collect();
            format!(r#""{name}":0"#)
        })
        .collect();
    let one_key_objects = format!("[{}]", vec![r#"{"a":1}"#; 120_000].join(","));
    vec![
        (
            "many small keys",
            format!("{{{}}}", many_keys.join(",")).into_bytes(),
        ),
        ("nested one-key objects", hostile("skills")),
        (
            "992 nested arrays",
            format!(r#"{{"x":{}{}}}"#, "[".repeat(992), "]".repeat(992)).into_bytes(),
        ),
        (
            "one long array of small numbers",
            format!("[{}]", vec!["0"; 500_000].join(",")).into_bytes(),
        ),
        (
            "a 900 KiB string",
            format!(r#"{{"description":"{}"}}"#, "x".repeat(900 * 1024)).into_bytes(),
        ),
        ("one-key objects", one_key_objects.into_bytes()),
        ("an ordinary large card", ordinary_card(6_000)),
    ]
}

#[test]
fn every_card_shape_under_the_cap_is_read_in_memory_that_follows_its_text() {
    let _one = MEASURING.lock().unwrap();
    for (what, bytes) in shapes() {
        assert!(bytes.len() <= MIB, "{what}: {} bytes", bytes.len());
        let (doc, grew) = peak_growth(|| json::read(&bytes, ReadOptions::LENIENT).unwrap());
        eprintln!(
            "{what}: {} bytes of text, read in {grew} bytes of heap ({} held)",
            bytes.len(),
            doc.heap_bytes()
        );
        // 12 bytes a node, at most one node per two bytes of text, plus the arena: about
        // 7 times the text at worst, far below the Value tree (100+ MiB for nested objects).
        assert!(
            grew <= 8 * bytes.len() + 64 * 1024,
            "{what}: {} bytes of text took {grew} bytes",
            bytes.len()
        );
        assert!(doc.root().is_object() || doc.root().is_array(), "{what}");
    }
}

#[test]
fn the_compact_document_costs_a_fraction_of_a_value_tree() {
    let _one = MEASURING.lock().unwrap();
    let bytes = hostile("skills");
    let (tree, as_tree) =
        peak_growth(|| serde_json::from_slice::<serde_json::Value>(&bytes).unwrap_or_default());
    drop(tree);
    let (doc, as_doc) = peak_growth(|| json::read(&bytes, ReadOptions::LENIENT).unwrap());
    drop(doc);
    eprintln!(
        "{} bytes of deep chains: Value tree {as_tree} bytes, document {as_doc} bytes",
        bytes.len()
    );
    assert!(as_tree > 10 * as_doc, "{as_tree} vs {as_doc}");
}

#[test]
fn a_key_set_of_deep_chains_costs_bounded_memory() {
    let _one = MEASURING.lock().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A key set file is read under the network path's 64 KiB cap, so the worst it can hold is
    // about 100 chains.
    let jwks = dir.path().join("keys.json");
    let most = chains("keys", 106, 100);
    assert!(most.len() <= 64 * 1024, "{}", most.len());
    std::fs::write(&jwks, &most).unwrap();
    let mut trust = conduct_walker::card_signature::keys::TrustStore::default();
    let (pinned, grew) =
        peak_growth(|| trust.pin_jwks_file("https://agent.example", jwks.as_path()));
    // Chains hold no usable key; a set without one is the verifier's business, not a crash.
    drop(pinned);
    assert!(
        grew <= 16 * MIB,
        "pinning a hostile key set allocated {grew} bytes"
    );
}

#[test]
fn a_walk_of_an_agent_serving_deep_chains_reads_the_card_within_a_few_body_caps() {
    let _one = MEASURING.lock().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let card = hostile("skills");
    let served = card.clone();
    let (outcome, grew) = runtime.block_on(async move {
        let ca = SandboxCa::generate();
        let server = HttpsServer::start(
            &ca,
            handler(move |req: Req| {
                if req.method == "GET" {
                    Resp::bytes(200, "application/json", served.clone())
                } else {
                    Resp::json(200, &serde_json::json!({"jsonrpc": "2.0", "id": 1}))
                }
            }),
        )
        .await
        .unwrap();
        let origin = server.base();
        let t = transport(&ca, &[&origin], None);
        let req = request(&origin, None, Mode::A2a, Wire::V1_0);
        let base = CURRENT.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let outcome = walk_with(&t, &req).await;
        let grew = PEAK.load(Ordering::Relaxed).saturating_sub(base);
        (outcome, grew)
    });
    eprintln!("walk of a {} byte card: heap grew {grew} bytes", card.len());
    // The card is JSON: it is read, and found to declare nothing (it has no capabilities),
    // which is what the reference records; not "card is not a JSON object".
    assert_eq!(result(&outcome, "card_bytes_stable"), Some(true));
    assert_eq!(result(&outcome, "conduct_ext_declared"), Some(false));
    let record = outcome.record();
    assert_eq!(
        record["nodes"][2]["output_preview"],
        "not declared; capabilities.extensions is not an array"
    );
    // The server's copies of the card are in this figure too (two responses in flight at most).
    assert!(
        grew < 24 * MIB,
        "the walk's heap grew by {} MiB for a {} KB card",
        grew / MIB,
        card.len() / 1024
    );
}
