//! `conduct-walker canonical` through the real binary: RFC 8785's published pairs
//! (`tests/vectors/jcs`), CPython's writer for the NENRIN form on generated documents, a card's
//! SDK payload from the signed vectors, and each form's refusals (exit 2, the reason on stderr).
//!
//! `CANONICAL_CLI_CASES` sets how many generated documents go to CPython (200 by default: each
//! is one run of the binary).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

fn canonical(args: &[&str]) -> (i32, Vec<u8>, String) {
    let out = Command::new(BIN)
        .arg("canonical")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        out.stdout,
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[test]
fn rfc8785_form_reproduces_every_published_pair() {
    let dir = conduct_walker::sandbox::test_vectors("jcs");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir.join("input")).unwrap() {
        let input = entry.unwrap().path();
        let expected = std::fs::read(dir.join("output").join(input.file_name().unwrap())).unwrap();
        let path = input.to_str().unwrap();
        let (code, out, err) = canonical(&["--form", "rfc8785", path]);
        assert_eq!(code, 0, "{path}: {err}");
        assert_eq!(out, expected, "{path}");
        let (code, out, _) = canonical(&["--form", "rfc8785", "--sha256", path]);
        assert_eq!(code, 0);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("{}\n", sha256_hex(&expected))
        );
        checked += 1;
    }
    assert_eq!(checked, 6);
}

#[test]
fn card_sdk_form_is_the_signed_vectors_payload() {
    let path = conduct_walker::sandbox::test_vectors("card-signature/signed.json");
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let card = dir.path().join("card.json");
    std::fs::write(&card, serde_json::to_vec_pretty(&s["card"]).unwrap()).unwrap();
    let (code, out, err) = canonical(&["--form", "card-sdk", card.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        String::from_utf8(out).unwrap(),
        s["canonical_payload"].as_str().unwrap()
    );
    assert!(
        err.contains("not covered: /supportedInterfaces/0/tenant (implicit_default)"),
        "{err}"
    );
    let (_, out, _) = canonical(&["--form", "card-sdk", "--sha256", card.to_str().unwrap()]);
    assert_eq!(
        String::from_utf8(out).unwrap().trim_end(),
        s["canonical_payload_sha256"].as_str().unwrap()
    );
}

#[test]
fn each_form_refuses_with_the_reason_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("nenrin", r#"{"a":"\ud800"}"#, "lone surrogate"),
        ("rfc8785", r#"{"a":"\udc00"}"#, "surrogate"),
        ("rfc8785", "[NaN]", "not JSON"),
        ("rfc8785", r#"{"k":1,"k":2}"#, "duplicate member name \"k\""),
        ("card-sdk", r#"{"k":1,"k":2}"#, "duplicate member name"),
        ("card-sdk", r#"{"name":7}"#, "wrong scalar type"),
        ("nenrin", "{", "not JSON"),
    ];
    for (i, (form, text, reason)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("{i}.json"));
        std::fs::write(&path, text).unwrap();
        let (code, out, err) = canonical(&["--form", form, path.to_str().unwrap()]);
        assert_eq!(code, 2, "{form} {text}: {err}");
        assert!(out.is_empty(), "{form} {text}");
        assert!(
            err.contains(reason) && err.contains(&format!("the {form} form refuses")),
            "{form} {text}: {err}"
        );
    }
    // What Python reads, the NENRIN form writes as Python does.
    let path = dir.path().join("python.json");
    std::fs::write(&path, r#"{"k":1,"k":[NaN,1e-7]}"#).unwrap();
    let (code, out, _) = canonical(&["--form", "nenrin", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(out, br#"{"k":[NaN,1e-07]}"#);
    let (code, _, err) = canonical(&["--form", "card-nope", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("card-served-rfc8785"), "{err}");
}

/// A random JSON text: Python's number forms, non-ASCII and astral keys, escapes, nesting.
fn document(rng: &mut StdRng, depth: u32) -> String {
    const STRINGS: &[&str] = &[
        "",
        "a",
        "é",
        "✓",
        "\u{1F600}",
        "\u{FFFF}",
        "z",
        "line\nbreak",
        "quote\"",
        "back\\slash",
        "\u{7F}",
        "\u{2028}",
        "tab\t",
        "\u{1}",
        "/",
        "B",
        "aa",
    ];
    const NUMBERS: &[&str] = &[
        "0",
        "-0",
        "0.0",
        "-0.0",
        "1.5",
        "1e21",
        "1E-7",
        "100.0",
        "12345678901234567890",
        "3.14159",
        "1e300",
        "2.5e-5",
        "-17",
        "1e400",
        "NaN",
        "Infinity",
        "-Infinity",
        "0.1",
        "123456789.0",
    ];
    let pick =
        |rng: &mut StdRng, items: &[&str]| items[rng.random_range(0..items.len())].to_string();
    let string = |rng: &mut StdRng| serde_json::to_string(&pick(rng, STRINGS)).unwrap();
    match if depth >= 4 {
        rng.random_range(0..4)
    } else {
        rng.random_range(0..6)
    } {
        0 => string(rng),
        1 => pick(rng, NUMBERS),
        2 => pick(rng, &["true", "false", "null"]),
        3 => format!("\"\\u00e9{}\"", rng.random_range(0..10)),
        4 => {
            let items: Vec<String> = (0..rng.random_range(0..4))
                .map(|_| document(rng, depth + 1))
                .collect();
            format!("[{}]", items.join(", "))
        }
        _ => {
            let items: Vec<String> = (0..rng.random_range(0..5))
                .map(|_| format!("{}: {}", string(rng), document(rng, depth + 1)))
                .collect();
            format!("{{ {} }}", items.join(",\n"))
        }
    }
}

const ORACLE: &str = r#"
import json, sys
for line in sys.stdin:
    text = open(line.strip(), encoding='utf-8').read()
    out = json.dumps(json.loads(text), sort_keys=True, separators=(',', ':'), ensure_ascii=False)
    print(out.encode('utf-8').hex(), flush=True)
"#;

#[test]
fn nenrin_form_agrees_with_cpython_on_generated_documents() {
    let cases: usize = std::env::var("CANONICAL_CLI_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let mut rng = StdRng::seed_from_u64(46);
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<std::path::PathBuf> = (0..cases)
        .map(|i| {
            let path = dir.path().join(format!("{i}.json"));
            std::fs::write(&path, document(&mut rng, 0)).unwrap();
            path
        })
        .collect();
    let mut python = Command::new("python3")
        .args(["-c", ORACLE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 is on every machine this project runs on (README prerequisites)");
    {
        let mut stdin = python.stdin.take().unwrap();
        for path in &paths {
            writeln!(stdin, "{}", path.display()).unwrap();
        }
    }
    let answers = python.wait_with_output().unwrap();
    assert!(answers.status.success());
    let expected: Vec<Vec<u8>> = String::from_utf8(answers.stdout)
        .unwrap()
        .lines()
        .map(|l| hex::decode(l).unwrap())
        .collect();
    assert_eq!(expected.len(), cases);
    for (path, want) in paths.iter().zip(&expected) {
        let (code, out, err) = canonical(&["--form", "nenrin", path.to_str().unwrap()]);
        assert_eq!(code, 0, "{}: {err}", show(path));
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(want),
            "{}",
            show(path)
        );
    }
}

fn show(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}
