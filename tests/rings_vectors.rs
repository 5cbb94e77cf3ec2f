//! Every case of `tests/vectors/rings/cases.json` (rings.md): each ring byte for byte, each
//! refusal refused with nothing written, each Statement byte for byte, both published DSSE
//! envelopes verified, and any changed byte of an envelope, its key or its ring failing with
//! the check it broke. Through the library and through the command line.

use conduct_walker::ring_files::{self, Inputs};
use conduct_walker::rings::{Limits, dsse, statement};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");
/// The published August ring (vectors README): `9ca61125…b953`.
const AUGUST_SHA256: &str = "9ca61125dcb3e566a34e4542641324987b1fa2a3f1f5f8c5086126f45aa4b953";

fn dir() -> PathBuf {
    conduct_walker::sandbox::test_vectors("rings")
}

fn cases() -> Vec<Value> {
    let text = std::fs::read(dir().join("cases.json")).unwrap();
    let v: Value = serde_json::from_slice(&text).unwrap();
    v["cases"].as_array().unwrap().clone()
}

fn path(rel: &Value) -> PathBuf {
    dir().join(rel.as_str().unwrap())
}

fn witnesses(case: &Value) -> Vec<PathBuf> {
    case["witnesses"]
        .as_array()
        .unwrap()
        .iter()
        .map(path)
        .collect()
}

fn build(case: &Value) -> Result<conduct_walker::rings::Built, conduct_walker::rings::RingError> {
    let prev = case["prev"].as_str().map(|p| dir().join(p));
    let ws = witnesses(case);
    ring_files::build(&Inputs {
        month: case["month"].as_str().unwrap(),
        endpoint: case["endpoint"].as_str(),
        history: &path(&case["history"]),
        witnesses: &ws,
        prev: prev.as_deref(),
        limits: Limits::default(),
    })
}

fn sha(bytes: &[u8]) -> String {
    conduct_walker::digest::sha256_hex(bytes)
}

#[test]
fn every_ring_case_byte_for_byte_and_its_statement() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rings = 0;
    let mut statements = 0;
    for case in cases().iter().filter(|c| c["expect"] == "ring") {
        let id = case["id"].as_str().unwrap();
        let built = build(case).unwrap_or_else(|e| panic!("{id}: {e}"));
        let expected = std::fs::read(path(&case["ring"])).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&built.bytes),
            String::from_utf8_lossy(&expected),
            "{id}"
        );
        assert_eq!(built.sha256, case["ring_sha256"].as_str().unwrap(), "{id}");
        assert_eq!(
            built.bytes.len() as u64,
            case["ring_bytes"].as_u64().unwrap(),
            "{id}"
        );
        let v11 = built.bytes.windows(16).any(|w| w == b"walked_as_witnes");
        assert_eq!(v11, case["columns"] == "v1.1", "{id}: columns");
        rings += 1;
        if let Some(st) = case["statement"].as_str() {
            // The emitter names the subject from a path ending rings/<slug>/<month>.json.
            let at = tmp
                .path()
                .join(id)
                .join("rings")
                .join(&built.slug)
                .join(format!("{}.json", case["month"].as_str().unwrap()));
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(&at, &built.bytes).unwrap();
            let s = statement::emit(&built.bytes, Some(&at.to_string_lossy())).unwrap();
            let want = std::fs::read(dir().join(st)).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&s.bytes),
                String::from_utf8_lossy(&want),
                "{id}"
            );
            assert_eq!(
                sha(&s.bytes),
                case["statement_sha256"].as_str().unwrap(),
                "{id}"
            );
            statements += 1;
        }
    }
    assert_eq!((rings, statements), (17, 15));
}

#[test]
fn the_published_august_ring_rebuilds_from_the_archive() {
    let case = cases()
        .into_iter()
        .find(|c| c["id"] == "real-mcp-2026-08")
        .unwrap();
    let built = build(&case).unwrap();
    assert_eq!(built.sha256, AUGUST_SHA256);
    assert_eq!(built.slug, "mcp-horizonshield-dev-mcp");
    assert_eq!(
        built.bytes,
        std::fs::read(dir().join("real/rings/mcp-horizonshield-dev-mcp/2026-08.json")).unwrap()
    );
}

#[test]
fn every_refusal_is_refused_with_a_clear_message_and_nothing_written() {
    let tmp = tempfile::tempdir().unwrap();
    let mut refused = 0;
    for case in cases().iter().filter(|c| c["expect"] == "refused") {
        let id = case["id"].as_str().unwrap();
        let e = build(case).expect_err(id).to_string();
        let said = case["reference_says"].as_str().unwrap();
        // The wording is free; the reason is the reference's.
        let key = said
            .split_whitespace()
            .rev()
            .find(|w| w.len() > 6)
            .unwrap_or(said);
        assert!(
            e.contains(key.trim_end_matches(':')) || e.contains("canonical ring form"),
            "{id}: {e} / {said}"
        );
        let out = tmp.path().join(id);
        let mut cmd = Command::new(BIN);
        cmd.args(["ring", "build", "--month", case["month"].as_str().unwrap()])
            .args(["--endpoint", case["endpoint"].as_str().unwrap()])
            .arg("--history")
            .arg(path(&case["history"]))
            .arg("--out")
            .arg(&out);
        if let Some(p) = case["prev"].as_str() {
            cmd.arg("--prev").arg(dir().join(p));
        }
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{id}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains("ring refused"), "{id}: {stderr}");
        assert!(o.stdout.is_empty(), "{id}");
        assert!(!out.exists(), "{id}: something was written");
        refused += 1;
    }
    assert_eq!(refused, 4);
}

#[test]
fn the_command_line_writes_the_same_bytes_and_prints_the_sha256() {
    let tmp = tempfile::tempdir().unwrap();
    for case in cases().iter().filter(|c| c["expect"] == "ring") {
        let id = case["id"].as_str().unwrap();
        let mut cmd = Command::new(BIN);
        cmd.args(["ring", "build", "--month", case["month"].as_str().unwrap()])
            .args(["--endpoint", case["endpoint"].as_str().unwrap()])
            .arg("--history")
            .arg(path(&case["history"]))
            .arg("--out")
            .arg(tmp.path().join(id));
        for w in witnesses(case) {
            cmd.arg("--witness").arg(w);
        }
        if let Some(p) = case["prev"].as_str() {
            cmd.arg("--prev").arg(dir().join(p));
        }
        let o = cmd.output().unwrap();
        assert!(
            o.status.success(),
            "{id}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let stdout = String::from_utf8(o.stdout).unwrap();
        let mut lines = stdout.lines();
        let written = PathBuf::from(lines.next().unwrap());
        assert!(
            written.ends_with(format!("{}.json", case["month"].as_str().unwrap())),
            "{id}"
        );
        assert_eq!(
            lines.next().unwrap(),
            format!("sha256 {}", case["ring_sha256"].as_str().unwrap())
        );
        assert_eq!(
            sha(&std::fs::read(&written).unwrap()),
            case["ring_sha256"].as_str().unwrap()
        );
        // A ring is written once.
        let again = cmd.output().unwrap();
        assert_eq!(again.status.code(), Some(2), "{id}");
        assert!(String::from_utf8_lossy(&again.stderr).contains("written once"));
        cmd.arg("--force");
        assert!(cmd.output().unwrap().status.success(), "{id}: --force");
    }
}

#[test]
fn out_names_a_file_or_a_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let case = cases()
        .into_iter()
        .find(|c| c["id"] == "v1-gate-only")
        .unwrap();
    let built = build(&case).unwrap();
    let file = tmp.path().join("my.json");
    assert_eq!(ring_files::out_path(&file, &built), file);
    assert_eq!(
        ring_files::out_path(tmp.path(), &built),
        tmp.path().join("target-example-mcp/2026-08.json")
    );
    assert_eq!(
        ring_files::out_path(Path::new("rings"), &built),
        Path::new("rings/target-example-mcp/2026-08.json")
    );
}

fn dsse_cases() -> Vec<Value> {
    cases()
        .into_iter()
        .filter(|c| c["expect"] == "dsse")
        .collect()
}

fn keys() -> Vec<dsse::Jwk> {
    let (keys, skipped) =
        dsse::parse_jwks(&std::fs::read(dir().join("real/rings/jwks.json")).unwrap()).unwrap();
    assert!(skipped.is_empty());
    keys
}

#[test]
fn both_published_envelopes_verify_and_carry_the_statement_the_ring_gives() {
    let keys = keys();
    for case in dsse_cases() {
        let id = case["id"].as_str().unwrap();
        let env = std::fs::read(path(&case["envelope"])).unwrap();
        let ring_path = path(&case["ring"]);
        let ring = std::fs::read(&ring_path).unwrap();
        assert_eq!(sha(&ring), case["ring_sha256"].as_str().unwrap());
        let r = dsse::verify(&env, &keys, Some(&ring));
        assert!(r.verified(), "{id}: {:?}", r.failure());
        assert_eq!(r.keyid.as_deref(), Some("hs-2026-09"));
        assert_eq!(r.subject_sha256.as_deref(), case["ring_sha256"].as_str());
        let payload = r.statement.unwrap();
        assert_eq!(
            payload,
            std::fs::read(path(&case["statement"])).unwrap(),
            "{id}"
        );
        assert_eq!(sha(&payload), case["statement_sha256"].as_str().unwrap());
        // The Statement re-emitted from the ring is the signed payload, byte for byte.
        let s = statement::emit(&ring, Some(&ring_path.to_string_lossy())).unwrap();
        assert_eq!(s.bytes, payload, "{id}");
        let o = Command::new(BIN)
            .args(["ring", "dsse-verify"])
            .arg(path(&case["envelope"]))
            .arg("--jwks")
            .arg(dir().join("real/rings/jwks.json"))
            .arg("--ring")
            .arg(&ring_path)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{id}");
        assert!(String::from_utf8_lossy(&o.stdout).ends_with("VERIFIED\n"));
    }
}

#[test]
fn a_changed_byte_anywhere_fails_with_the_check_it_broke() {
    let keys = keys();
    let case = &dsse_cases()[0];
    let env = std::fs::read(path(&case["envelope"])).unwrap();
    let ring = std::fs::read(path(&case["ring"])).unwrap();
    // Every byte of the envelope, changed to another that keeps it one line of ASCII.
    let mut broke = std::collections::BTreeMap::new();
    for i in 0..env.len() {
        let mut bad = env.clone();
        bad[i] = if bad[i] == b'A' { b'B' } else { b'A' };
        let r = dsse::verify(&bad, &keys, Some(&ring));
        let f = r
            .failure()
            .unwrap_or_else(|| panic!("byte {i} changed still verifies"));
        assert!(!f.detail.is_empty());
        *broke.entry(f.name).or_insert(0) += 1;
    }
    // The payload and signature bytes are most of it; each check names what broke.
    assert!(broke["signature"] > 2000, "{broke:?}");
    for name in ["envelope", "payload_type", "payload"] {
        assert!(broke.contains_key(name), "{name}: {broke:?}");
    }
    for i in (0..ring.len()).step_by(7) {
        let mut bad = ring.clone();
        bad[i] ^= 0x01;
        let r = dsse::verify(&env, &keys, Some(&bad));
        assert_eq!(
            r.failure().map(|f| f.name),
            Some("ring_digest"),
            "ring byte {i}"
        );
    }
    // Every byte of the key, but those of the members a verifier does not read.
    let jwks = std::fs::read(dir().join("real/rings/jwks.json")).unwrap();
    let text = String::from_utf8(jwks.clone()).unwrap();
    let unread: Vec<std::ops::Range<usize>> = ["\"alg\":\"ES256\"", "\"use\":\"sig\""]
        .iter()
        .map(|m| {
            let at = text.find(m).unwrap();
            at..at + m.len()
        })
        .collect();
    for i in (0..jwks.len()).filter(|i| !unread.iter().any(|r| r.contains(i))) {
        let mut bad = jwks.clone();
        bad[i] = if bad[i] == b'A' { b'B' } else { b'A' };
        let verified = match dsse::parse_jwks(&bad) {
            Ok((k, _)) => dsse::verify(&env, &k, Some(&ring)).verified(),
            Err(_) => false,
        };
        assert!(!verified, "JWKS byte {i} changed still verifies");
    }
}

#[test]
fn a_statement_or_ring_that_was_changed_is_reported() {
    let keys = keys();
    let case = &dsse_cases()[1];
    let env = std::fs::read(path(&case["envelope"])).unwrap();
    let ring = std::fs::read(path(&case["ring"])).unwrap();
    // The other endpoint's ring: its digest is not the subject.
    let other =
        std::fs::read(dir().join("real/rings/mcp-horizonshield-dev-mcp/2026-08.json")).unwrap();
    let r = dsse::verify(&env, &keys, Some(&other));
    assert_eq!(r.failure().unwrap().name, "ring_digest");
    assert!(dsse::verify(&env, &keys, Some(&ring)).verified());
    // No key of that kid.
    let r = dsse::verify(&env, &[], None);
    assert!(r.failure().unwrap().detail.contains("no key with kid"));
}

/// rings.md §7 items 2–3: the same witness files in another order give another ring, exactly
/// as the reference does (`v11-order-matters` is `v11-columns` reversed).
#[test]
fn order_matters_as_it_does_for_the_reference() {
    let all = cases();
    let columns = all.iter().find(|c| c["id"] == "v11-columns").unwrap();
    let reversed_case = all.iter().find(|c| c["id"] == "v11-order-matters").unwrap();
    let mut files = witnesses(columns);
    files.reverse();
    let build_with = |files: &[PathBuf]| {
        ring_files::build(&Inputs {
            month: "2026-09",
            endpoint: Some("https://target.example/mcp"),
            history: &path(&columns["history"]),
            witnesses: files,
            prev: None,
            limits: Limits::default(),
        })
        .unwrap()
    };
    let reversed = build_with(&files);
    assert_eq!(
        reversed.sha256,
        reversed_case["ring_sha256"].as_str().unwrap()
    );
    let forward = build_with(&witnesses(columns));
    assert_eq!(forward.sha256, columns["ring_sha256"].as_str().unwrap());
    assert_ne!(forward.sha256, reversed.sha256);
    let diff = conduct_walker::rings::compare::differing_keys(&forward.bytes, &reversed.bytes);
    let keys: Vec<&str> = diff.iter().map(|d| d.key.as_str()).collect();
    assert!(
        keys.iter().all(|k| [
            "discrepancies_signed",
            "discrepancies_unsigned",
            "witness_identities"
        ]
        .contains(k)),
        "{keys:?}"
    );
    assert!(keys.contains(&"discrepancies_signed") || keys.contains(&"discrepancies_unsigned"));
}

/// History repeats: the first in file order wins (§7 item 2), so reordering the history's
/// entries changes the ring too.
#[test]
fn history_order_decides_which_repeat_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let a =
        r#"{"at":"2026-09-01T00:00:00Z","record_sha256":"aa","status":"pass","reachable":true}"#;
    let b =
        r#"{"at":"2026-09-01T00:00:00Z","record_sha256":"aa","status":"fail","reachable":false}"#;
    let mut shas = Vec::new();
    for (name, entries) in [("ab", [a, b]), ("ba", [b, a])] {
        let h = tmp.path().join(format!("{name}.json"));
        std::fs::write(&h, format!("[{}]", entries.join(","))).unwrap();
        let built = ring_files::build(&Inputs {
            month: "2026-09",
            endpoint: Some("https://target.example/mcp"),
            history: &h,
            witnesses: &[],
            prev: None,
            limits: Limits::default(),
        })
        .unwrap();
        let text = String::from_utf8(built.bytes).unwrap();
        assert_eq!(text.contains("\"pass\": 1"), name == "ab", "{text}");
        shas.push(built.sha256);
    }
    assert_ne!(shas[0], shas[1]);
}

fn verify_cmd(ring: &Path, history: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(["ring", "verify"])
        .arg(ring)
        .arg("--history")
        .arg(history)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn verify_says_match_for_the_published_ring_and_mismatch_with_the_keys_and_both_values() {
    let ring = dir().join("real/rings/mcp-horizonshield-dev-mcp/2026-08.json");
    let history = dir().join("real/history/mcp-horizonshield-dev-mcp.json");
    let o = verify_cmd(&ring, &history, &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.contains(AUGUST_SHA256) && out.ends_with("MATCH\n"),
        "{out}"
    );

    // A claimed ring one count off, and a key it should not have.
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(&ring).unwrap();
    let forged = text.replacen("\"instants_reached\": 26", "\"instants_reached\": 27", 1);
    assert_ne!(
        forged, text,
        "the published ring reached 26 of its instants"
    );
    let forged_path = tmp.path().join("forged.json");
    std::fs::write(&forged_path, &forged).unwrap();
    let o = verify_cmd(&forged_path, &history, &[]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("MISMATCH"), "{out}");
    assert!(
        out.contains("instants_reached: rebuilt 26 | claimed 27"),
        "{out}"
    );
    let o = verify_cmd(&forged_path, &history, &["--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["result"], "MISMATCH");
    assert_eq!(v["rebuilt_sha256"], AUGUST_SHA256);
    assert_eq!(v["differing_keys"][0]["key"], "instants_reached");
    assert_eq!(v["differing_keys"][0]["rebuilt"], "26");
    assert_eq!(v["differing_keys"][0]["claimed"], "27");

    // Same values, other layout: a mismatch of bytes, named as such.
    let compact = tmp.path().join("compact.json");
    let doc: Value = serde_json::from_str(&text).unwrap();
    std::fs::write(&compact, serde_json::to_vec(&doc).unwrap()).unwrap();
    let o = verify_cmd(&compact, &history, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("not in ring form"));

    // A witness file that is not JSON: exit 2, the file named.
    let junk = tmp.path().join("junk.json");
    std::fs::write(&junk, "not json").unwrap();
    let o = verify_cmd(&ring, &history, &["--witness", junk.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("junk.json") && err.contains("not JSON"),
        "{err}"
    );
}

#[test]
fn statement_writes_exact_bytes_to_a_file_and_a_line_to_stdout() {
    let ring = dir().join("real/rings/p001-horizonshield-dev-mcp/2026-08.json");
    let want =
        std::fs::read(dir().join("real/rings/p001-horizonshield-dev-mcp/2026-08.statement.json"))
            .unwrap();
    let o = Command::new(BIN)
        .args(["ring", "statement"])
        .arg(&ring)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(o.stdout[..o.stdout.len() - 1], want[..]);
    assert_eq!(o.stdout.last(), Some(&b'\n'));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("s.json");
    let o = Command::new(BIN)
        .args(["ring", "statement"])
        .arg(&ring)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(std::fs::read(&out).unwrap(), want);
}
