//! What parsing a stranger's document may cost (issue 14, section 2). A 1 MB card made of
//! thousands of 100-deep one-key object chains cost ~270 MiB per walk as `Value` trees; the
//! parsers now refuse a document whose tree would exceed `json::PARSE_BUDGET_BYTES` before
//! building anything. The heap is measured with a counting global allocator, so these tests
//! assert bytes actually allocated, not an estimate of them.

mod common;

use common::*;
use conduct_walker::json::{parse_lenient, parse_strict};
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

#[test]
fn the_estimate_bounds_what_the_tree_really_allocates() {
    let _one = MEASURING.lock().unwrap();
    let shapes: Vec<(&str, Vec<u8>)> = vec![
        ("deep chains", chains("x", 40, 100)),
        ("ordinary card", ordinary_card(2_000)),
        (
            "small numbers",
            format!("[{}]", vec!["1"; 50_000].join(",")).into_bytes(),
        ),
        (
            "floats and strings",
            format!("[{}]", vec![r#"1.5,"s",{"k":null}"#; 5_000].join(",")).into_bytes(),
        ),
        (
            "empty containers",
            format!("[{}]", vec!["{},[]"; 5_000].join(",")).into_bytes(),
        ),
    ];
    for (what, bytes) in shapes {
        let estimate = estimated_tree_bytes(&bytes);
        assert!(
            estimate <= PARSE_BUDGET_BYTES,
            "{what}: the sample must fit the budget"
        );
        let (tree, lenient) = peak_growth(|| parse_lenient(&bytes).unwrap());
        drop(tree);
        let (tree, strict) = peak_growth(|| parse_strict(&bytes).unwrap());
        drop(tree);
        eprintln!(
            "{what}: {} bytes of text, tree {lenient} bytes (strict {strict}), estimate {estimate}",
            bytes.len()
        );
        assert!(
            lenient <= estimate && strict <= estimate,
            "{what}: {} bytes of text allocated {lenient} (lenient) and {strict} (strict), \
             over the estimate {estimate}",
            bytes.len()
        );
    }
}

#[test]
fn a_card_of_deep_chains_is_refused_before_anything_is_built() {
    let _one = MEASURING.lock().unwrap();
    for wrapper in ["skills", "keys", "terms"] {
        let bytes = hostile(wrapper);
        assert!(bytes.len() < MIB, "{} bytes", bytes.len());
        assert!(estimated_tree_bytes(&bytes) > 5 * PARSE_BUDGET_BYTES);
        if wrapper == "skills" {
            // What the same card cost before the budget: the tree serde_json builds.
            let (tree, unbudgeted) =
                peak_growth(|| serde_json::from_slice::<serde_json::Value>(&bytes).unwrap());
            drop(tree);
            eprintln!(
                "{} bytes of deep chains as a tree: {unbudgeted} bytes",
                bytes.len()
            );
            assert!(unbudgeted > 4 * PARSE_BUDGET_BYTES);
        }
        let (lenient, grew_lenient) = peak_growth(|| parse_lenient(&bytes));
        let err = lenient.unwrap_err().to_string();
        assert!(err.contains("too costly to parse"), "{err}");
        let (strict, grew_strict) = peak_growth(|| parse_strict(&bytes));
        let err = strict.unwrap_err().to_string();
        assert!(err.contains("too costly to parse"), "{err}");
        // The lenient reader retries with Python's constants rewritten only when the text has
        // them; neither path may build a tree.
        assert!(
            grew_lenient < 64 * 1024 && grew_strict < 64 * 1024,
            "{wrapper}: {grew_lenient} / {grew_strict} bytes allocated to refuse it"
        );
    }
}

#[test]
fn a_key_set_and_a_terms_document_of_deep_chains_cost_bounded_memory() {
    let _one = MEASURING.lock().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A key set file is read under the network path's 64 KiB cap, so the worst it can hold is
    // about 100 chains: whether the parser refuses it or not, what it costs stays bounded.
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
        grew <= PARSE_BUDGET_BYTES + 64 * 1024,
        "pinning a hostile key set allocated {grew} bytes"
    );

    let sow = hostile("terms");
    let (parsed, grew) = peak_growth(|| conduct_walker::jcs::parse_i_json(&sow));
    let err = parsed.unwrap_err().to_string();
    assert!(err.contains("too costly to parse"), "{err}");
    assert!(
        grew < 64 * 1024,
        "refusing a hostile terms document allocated {grew} bytes"
    );
}

#[test]
fn a_walk_of_an_agent_serving_deep_chains_stays_within_a_few_body_caps() {
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
    // The walk fetched the card twice and found it unusable, as any card that is not JSON.
    assert_eq!(result(&outcome, "card_bytes_stable"), Some(true));
    assert_eq!(result(&outcome, "conduct_ext_declared"), Some(false));
    // The server's copies of the card are in this figure too (two responses in flight at most).
    assert!(
        grew < 12 * MIB,
        "the walk's heap grew by {} MiB for a {} KB card",
        grew / MIB,
        card.len() / 1024
    );
}
