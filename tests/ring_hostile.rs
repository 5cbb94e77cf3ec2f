//! Ring inputs are a stranger's until proven otherwise (issue 37, "Must hold"): a 100 MB
//! history, nesting 10,000 deep, witness files that are not JSON, huge numbers, lone
//! surrogates, a `--prev` that is not in ring form. Each gives the reference's result or a clear
//! refusal, never a panic, and the heap stays within the caps (measured with a counting
//! allocator: bytes actually allocated, not an estimate).

use conduct_walker::ring_files::{self, Inputs};
use conduct_walker::rings::{self, Limits, Request, RingError, WitnessFile};
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::path::{Path, PathBuf};
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

/// Measurements in one process must not overlap (tests run on threads).
static MEASURING: Mutex<()> = Mutex::new(());

const MIB: usize = 1024 * 1024;
const EP: &str = "https://target.example/mcp";

/// The most the heap grew above its level at the start while `f` ran.
fn peak_growth<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let _one = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn build_files(
    month: &str,
    history: &Path,
    witnesses: &[PathBuf],
    prev: Option<&Path>,
) -> Result<rings::Built, RingError> {
    ring_files::build(&Inputs {
        month,
        endpoint: Some(EP),
        history,
        witnesses,
        prev,
        limits: Limits::default(),
    })
}

/// Build from texts in memory.
fn build(history: &str, witnesses: &[&str]) -> Result<rings::Built, RingError> {
    let files = witnesses.iter().enumerate().map(|(i, w)| {
        Ok(WitnessFile {
            name: format!("w{i}"),
            bytes: w.as_bytes().to_vec(),
        })
    });
    rings::build(
        &Request {
            month: "2026-09",
            endpoint: Some(EP),
            limits: Limits::default(),
        },
        history.as_bytes(),
        files,
        None,
    )
}

fn text(b: &rings::Built) -> String {
    String::from_utf8(b.bytes.clone()).unwrap()
}

/// A gate entry like the register's (about 1.1 KB).
fn entry(i: usize, month: &str) -> String {
    format!(
        r#"{{"at":"{month}-{:02}T{:02}:{:02}:{:02}.000Z","status":"{}","reachable":{},"record_sha256":"{:064x}","consent_source":"none","conditions":{{"mcp_endpoint":{{"pass":true,"measured":true,"transport":false,"reason":"MCP endpoint responds to initialize and tools/list"}},"agent_card":{{"pass":true,"measured":true,"transport":false,"reason":"agent-card published and well-formed"}},"determinism":{{"pass":false,"measured":{},"transport":false,"reason":"not measured: measuring determinism requires calling one of your tools, and this gate does not call tools on a server without the owner's consent"}}}},"surface":{{"manifest_hash":"{:064x}"}},"coordinate_derivation":{{"derived":{}}},"fingerprint":"pending|agent_card=1,compensation_disclosure=1,determinism=0,mcp_endpoint=1"}}"#,
        1 + i % 28,
        i / 3600 % 24,
        i / 60 % 60,
        i % 60,
        ["pass", "pending", "fail"][i % 3],
        !i.is_multiple_of(5),
        i,
        i.is_multiple_of(2),
        i / 1000,
        i.is_multiple_of(3),
    )
}

#[test]
fn a_100_mb_history_is_read_one_entry_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.json");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    write!(
        f,
        r#"{{"endpoint":"{EP}","archive":{{"count":1}},"entries":["#
    )
    .unwrap();
    let mut written = 0usize;
    let mut n = 0usize;
    while written < 100 * 1_000_000 {
        // Half in the month, half in the month before.
        let e = entry(
            n,
            if n.is_multiple_of(2) {
                "2026-09"
            } else {
                "2026-08"
            },
        );
        if n > 0 {
            f.write_all(b",").unwrap();
        }
        f.write_all(e.as_bytes()).unwrap();
        written += e.len() + 1;
        n += 1;
    }
    f.write_all(b"]}").unwrap();
    drop(f);
    let (built, peak) = peak_growth(|| build_files("2026-09", &path, &[], None));
    let built = built.unwrap();
    eprintln!(
        "{n} entries, {written} bytes: peak heap growth {:.1} MiB",
        peak as f64 / MIB as f64
    );
    let kept = n.div_ceil(2) as u64;
    assert_eq!(built.ring.instants_sampled, kept);
    assert!(text(&built).contains(&format!("\"instants_sampled\": {kept}")));
    // ~45,000 instants kept (a few hundred bytes each) and one entry's document at a time:
    // far below the 100 MB of text.
    assert!(
        peak < 32 * MIB,
        "peak heap {} MiB for {n} entries",
        peak / MIB
    );
}

#[test]
fn nesting_10000_deep_is_refused_as_the_reference_refuses_it() {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let (r, peak) = peak_growth(|| build(&format!(r#"[{{"at":"2026-09-01","x":{deep}}}]"#), &[]));
    let e = r.unwrap_err().to_string();
    assert!(e.contains("nested deeper than 993"), "{e}");
    assert!(peak < 4 * MIB, "{peak}");
    let (r, peak) = peak_growth(|| build("[]", &[&deep]));
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("witness file w0: not JSON") && e.contains("nested deeper"),
        "{e}"
    );
    assert!(peak < 4 * MIB, "{peak}");
    // As deep as the reference reads: a witness identity that deep is read, but no ring that
    // deep can be written by the reference's indenting writer, so it is refused, clearly.
    let identity = format!(
        r#"{{"name":"x","d":{}1{}}}"#,
        "[".repeat(985),
        "]".repeat(985)
    );
    let w = format!(r#"{{"at":"2026-09-01","witness":{identity}}}"#);
    let e = build("[]", &[&w]).unwrap_err().to_string();
    assert!(
        e.contains("nests") && e.contains("cannot write a ring that deep"),
        "{e}"
    );
    // 900 levels is written, as the reference writes it.
    let identity = format!(
        r#"{{"name":"x","d":{}1{}}}"#,
        "[".repeat(900),
        "]".repeat(900)
    );
    let w = format!(r#"{{"at":"2026-09-01","witness":{identity}}}"#);
    let b = build("[]", &[&w]).unwrap();
    assert_eq!(b.ring.witnesses, 2);
}

#[test]
fn witness_files_that_are_not_json_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let history = write(dir.path(), "h.json", b"[]");
    for (name, bytes) in [
        ("empty.json", &b""[..]),
        ("text.json", b"hello"),
        ("bom.json", b"\xef\xbb\xbf{}"),
        ("latin1.json", b"{\"a\": \"\xe9\"}"),
        ("two.json", b"{} {}"),
        ("cut.json", b"{\"at\": \"2026-09"),
        ("binary.json", &[0u8, 159, 146, 150][..]),
    ] {
        let w = write(dir.path(), name, bytes);
        let e = build_files("2026-09", &history, &[w], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains(name) && e.contains("not JSON"), "{name}: {e}");
    }
    // Past a card's size: refused without being read whole.
    let big = write(dir.path(), "big.json", &vec![b' '; MIB + 1]);
    let (r, peak) = peak_growth(|| build_files("2026-09", &history, &[big], None));
    assert!(
        r.unwrap_err()
            .to_string()
            .contains("larger than 1048576 bytes")
    );
    assert!(peak < 3 * MIB, "{peak}");
    // A file that does not exist.
    let e = build_files("2026-09", &history, &[dir.path().join("nope.json")], None).unwrap_err();
    assert!(e.to_string().contains("nope.json") && e.to_string().contains("cannot open"));
}

#[test]
fn huge_numbers_give_the_reference_s_result_or_its_refusal() {
    // A status of 1e400 is Python's inf; str() of it is "inf". An identity holding it is
    // written as json.dumps writes inf: Infinity.
    let b = build(
        r#"[{"at":"2026-09-01","status":1e400,"record_sha256":12345678901234567890123456789}]"#,
        &[r#"{"at":"2026-09-01","witness":{"name":"n","big":1e999,"neg":-1E+400,"x":100000000000000000000000000000.0}}"#],
    )
    .unwrap();
    let t = text(&b);
    assert!(t.contains("\"inf\": 1"), "{t}");
    assert!(
        t.contains("\"record_sha256_first\": 12345678901234567890123456789"),
        "{t}"
    );
    assert!(
        t.contains("\"big\": Infinity") && t.contains("\"neg\": -Infinity"),
        "{t}"
    );
    assert!(t.contains("\"x\": 1e+29"), "{t}");
    // More digits than Python converts (4,300): not JSON to the reference, refused here.
    let long = "9".repeat(4301);
    let e = build(&format!(r#"[{{"at":"2026-09-01","status":{long}}}]"#), &[]).unwrap_err();
    assert!(e.to_string().contains("4300"), "{e}");
    let e = build(
        "[]",
        &[&format!(
            r#"{{"at":"2026-09-01","witness":{{"name":"n"}},"n":{long}}}"#
        )],
    )
    .unwrap_err();
    assert!(e.to_string().contains("w0"), "{e}");
}

#[test]
fn lone_surrogates_refused_where_the_reference_would_write_or_hash_them() {
    // In a field the ring writes or sorts by: refused.
    for (h, w) in [
        (r#"[{"at":"2026-09-01\ud800"}]"#, None),
        (r#"[{"at":"2026-09-01","status":"\udc00"}]"#, None),
        (
            "[]",
            Some(r#"{"at":"2026-09-01","witness":{"name":"\ud83d"}}"#),
        ),
        (
            "[]",
            Some(r#"{"at":"2026-09-01","witness":{"name":"n"},"discrepancy_sha256":"\ud800"}"#),
        ),
    ] {
        let ws: Vec<&str> = w.into_iter().collect();
        let e = build(h, &ws).unwrap_err().to_string();
        assert!(e.contains("lone surrogate"), "{h} {w:?}: {e}");
    }
    // Where the reference never reads or writes it: the reference's result.
    let b = build(
        r#"{"archive":"\ud800","entries":[{"at":"2026-08-01\ud800"},{"at":"2026-09-01","note":"\udfff"}]}"#,
        &[r#"{"at":"2026-09-01","witness":{"name":"n"},"note":"\ud800"}"#],
    )
    .unwrap();
    assert_eq!((b.ring.instants_sampled, b.ring.witnesses), (1, 2));
    // A pair is one character, written raw (ensure_ascii=False).
    let b = build(
        "[]",
        &[r#"{"at":"2026-09-01","witness":{"name":"\ud83e\udd16"}}"#],
    )
    .unwrap();
    assert!(text(&b).contains("\"name\": \"🤖\""));
}

#[test]
fn a_prev_that_is_not_in_ring_form_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let history = write(dir.path(), "h.json", b"[]");
    let july = build_files("2026-07", &history, &[], None).unwrap();
    let good = write(dir.path(), "july.json", &july.bytes);
    assert!(build_files("2026-08", &history, &[], Some(&good)).is_ok());
    let text = String::from_utf8(july.bytes.clone()).unwrap();
    let variants: Vec<(&str, Vec<u8>)> = vec![
        ("no final newline", text.trim_end().as_bytes().to_vec()),
        ("CRLF", text.replace('\n', "\r\n").into_bytes()),
        (
            "escaped",
            text.replace("gate.horizonshield.dev", "gate\\u002ehorizonshield.dev")
                .into_bytes(),
        ),
        (
            "compact",
            serde_json::to_vec(&serde_json::from_str::<serde_json::Value>(&text).unwrap()).unwrap(),
        ),
        ("four spaces", text.replace("\n  ", "\n    ").into_bytes()),
        (
            "surrogate",
            text.replace("\"2026-07\"", "\"2026-07\\ud800\"")
                .into_bytes(),
        ),
        (
            "duplicate key",
            text.replacen("{\n", "{\n  \"ring\": \"2026-07\",\n", 1)
                .into_bytes(),
        ),
    ];
    for (what, bytes) in variants {
        let p = write(dir.path(), "prev.json", &bytes);
        let e = build_files("2026-08", &history, &[], Some(&p)).unwrap_err();
        assert!(matches!(e, RingError::PrevNotCanonical(_)), "{what}: {e}");
    }
    for (what, bytes, says) in [
        ("not JSON", &b"{"[..], "not JSON"),
        ("an array", b"[]\n", "not a ring"),
        ("huge", &vec![b' '; 5 * MIB][..], "larger than"),
    ] {
        let p = write(dir.path(), "prev.json", bytes);
        let e = build_files("2026-08", &history, &[], Some(&p))
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{what}: {e}");
    }
}

#[test]
fn carried_text_is_capped_and_refused_clearly() {
    // 40 distinct identities of about 1 MiB each: past the 32 MiB a ring may carry.
    let dir = tempfile::tempdir().unwrap();
    let history = write(dir.path(), "h.json", b"[]");
    let files: Vec<PathBuf> = (0..40)
        .map(|i| {
            let w = format!(
                r#"{{"at":"2026-09-01","witness":{{"name":"n{i}","pad":"{}"}}}}"#,
                "x".repeat(MIB - 100)
            );
            write(dir.path(), &format!("w{i}.json"), w.as_bytes())
        })
        .collect();
    let (r, peak) = peak_growth(|| build_files("2026-09", &history, &files, None));
    eprintln!(
        "40 identities of 1 MiB: peak heap growth {:.1} MiB",
        peak as f64 / MIB as f64
    );
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("more than 33554432 bytes of witness text"),
        "{e}"
    );
    assert!(peak < 48 * MIB, "peak {} MiB", peak / MIB);
}

/// Mutated vectors: every byte string gives a ring or a refusal, never a panic.
#[test]
fn mutated_inputs_never_panic() {
    let dir = conduct_walker::sandbox::test_vectors("rings");
    let history = std::fs::read(dir.join("v11-columns/history.json")).unwrap();
    let witnesses: Vec<Vec<u8>> = (1..=14)
        .map(|i| std::fs::read(dir.join(format!("v11-columns/w{i:02}.json"))).unwrap())
        .collect();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let bytes: &[u8] = b"{}[]\",:0-1.5e9tnfu\\ \xff\xc3";
    let (mut rings, mut refusals) = (0, 0);
    for _ in 0..2000 {
        let which = (next() % 15) as usize;
        let mut h = history.clone();
        let mut ws = witnesses.clone();
        let target = if which == 14 { &mut h } else { &mut ws[which] };
        for _ in 0..1 + next() % 4 {
            let at = (next() as usize) % target.len();
            target[at] = bytes[(next() as usize) % bytes.len()];
        }
        let files = ws.into_iter().enumerate().map(|(i, b)| {
            Ok(WitnessFile {
                name: format!("w{i}"),
                bytes: b,
            })
        });
        let r = std::panic::catch_unwind(|| {
            rings::build(
                &Request {
                    month: "2026-09",
                    endpoint: Some(EP),
                    limits: Limits::default(),
                },
                &h[..],
                files,
                None,
            )
        });
        match r.expect("no panic") {
            Ok(b) => {
                assert!(b.bytes.ends_with(b"}\n"));
                rings += 1;
            }
            Err(e) => {
                assert!(!e.to_string().is_empty());
                refusals += 1;
            }
        }
    }
    assert!(
        rings > 100 && refusals > 100,
        "{rings} rings, {refusals} refusals"
    );
}
