//! Property-based fuzzing of every parser that reads a stranger's bytes (issue 14, section 2),
//! on the stable toolchain with `proptest`. CI runs a short fixed-seed pass (the default case
//! count below); a long run is `FUZZ_CASES=1000000 cargo test --release --test fuzz_parsers`,
//! measured outside CI. Seeds: the test vectors and shapes the sandbox's hostile cards use.
//! Each property says what must hold besides "no panic".

use conduct_walker::net::{Exchange, HttpRequest};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Map, Value, json};

/// Cases per target: small in CI, as many as asked for outside it.
fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512)
}

/// A fixed seed, so a CI failure reproduces; `FUZZ_SEED` varies it outside CI.
fn runner() -> TestRunner {
    let seed: u64 = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_c0de);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(
        Config {
            cases: cases(),
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

/// JSON text that is often valid and often almost valid: a structured value rendered, then
/// sometimes cut or spliced with hostile fragments (NaN, BOMs, deep nesting, surrogates).
fn json_ish() -> impl Strategy<Value = Vec<u8>> {
    let fragments = prop_oneof![
        Just("NaN".to_string()),
        Just("-Infinity".to_string()),
        Just("\u{feff}".to_string()),
        Just("\\ud800".to_string()),
        Just("[".repeat(200)),
        Just("{\"a\":".repeat(120)),
        Just("1e400".to_string()),
        Just("\"\\u0000\"".to_string()),
        "[ -~]{0,8}",
    ];
    (value(), 0usize..64, fragments, any::<bool>()).prop_map(|(v, cut, frag, splice)| {
        let mut text = serde_json::to_string(&v).unwrap();
        if splice {
            let at = cut.min(text.len());
            let at = (0..=at)
                .rev()
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(0);
            text.insert_str(at, &frag);
        }
        text.into_bytes()
    })
}

/// Random JSON values: strings with any scalar values, numbers of every form, nesting.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "\\PC{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("\\PC{0,6}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn exchange(status: u16, body: Vec<u8>, headers: Vec<(String, String)>) -> Exchange {
    Exchange {
        request: HttpRequest::get("https://intake.example/witness", &[]),
        status,
        response_headers: headers,
        body,
        duration_ms: 1,
        transport_error: None,
        cut_answer: None,
    }
}

#[test]
fn lenient_json_reader_never_panics_and_reads_back_what_it_writes() {
    runner()
        .run(&json_ish(), |bytes| {
            if let Ok(v) = conduct_walker::json::parse_lenient(&bytes) {
                // What the canonical writer makes of it reads back to the same bytes.
                let canonical = conduct_walker::canonical::to_bytes(&v);
                let again = conduct_walker::json::parse_lenient(&canonical).unwrap();
                prop_assert_eq!(conduct_walker::canonical::to_bytes(&again), canonical);
            }
            let _ = conduct_walker::json::parse_strict(&bytes);
            Ok(())
        })
        .unwrap();
}

#[test]
fn rfc8785_writer_agrees_with_serde_jcs() {
    runner()
        .run(&value(), |v| {
            let ours = conduct_walker::jcs::canonicalize(&v);
            if let Ok(ours) = ours {
                let theirs = serde_jcs::to_vec(&v).unwrap();
                prop_assert_eq!(ours, theirs);
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn card_signature_header_reading_never_panics_and_keeps_the_block_shape() {
    let protected = prop_oneof![
        "[A-Za-z0-9_-]{0,80}",
        "\\PC{0,40}",
        value().prop_map(|v| {
            use base64::Engine;
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
        }),
    ];
    let strategy = (value(), protected, value());
    runner()
        .run(&strategy, |(card, protected, extra)| {
            let mut card = card;
            if let Value::Object(o) = &mut card {
                o.insert(
                    "signatures".into(),
                    json!([{"protected": protected, "signature": "x", "header": extra}]),
                );
            }
            let block =
                conduct_walker::card_signature::read_header(Some(&card), "https://a.example");
            prop_assert!(block.get("present").is_some() && block.get("verified").is_some());
            for profile in conduct_walker::card_signature::Profile::ALL {
                let _ = conduct_walker::card_signature::canonicalize_card(&card, profile);
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn intake_answers_are_classified_with_bounded_text() {
    let headers = prop::collection::vec(
        (
            prop_oneof![
                Just("retry-after".to_string()),
                Just("location".to_string()),
                "[a-z-]{1,12}"
            ],
            "\\PC{0,40}",
        ),
        0..4,
    );
    let strategy = (0u16..600, json_ish(), headers);
    runner()
        .run(&strategy, |(status, body, headers)| {
            let answer =
                conduct_walker::witness::intake::classify(&exchange(status, body, headers), "ab");
            let text = format!("{answer:?}");
            prop_assert!(
                !text.contains('\u{1b}'),
                "an escape code survived: {}",
                text
            );
            if let conduct_walker::filing::answer::Answer::Retry {
                retry_after: Some(d),
                ..
            } = answer
            {
                let wait = conduct_walker::filing::retry_after_delay(d, chrono::Utc::now());
                prop_assert!(wait <= conduct_walker::filing::answer::MAX_RETRY_AFTER);
            }
            if let conduct_walker::filing::answer::Answer::Accepted { sha, .. } = answer {
                prop_assert_eq!(sha, "ab");
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn consent_files_and_intake_self_descriptions_never_panic() {
    runner()
        .run(&(0u16..600, json_ish()), |(status, body)| {
            let _ = conduct_walker::consent::classify(&exchange(status, body.clone(), vec![]));
            if let Ok(v) = conduct_walker::json::parse_lenient(&body) {
                let doc = json!({"limits_stated_not_hidden": v});
                if let Some(l) = conduct_walker::filing::lanes::Limits::from_self_description(&doc)
                {
                    prop_assert!(
                        u64::from(l.daily_per_ip)
                            <= conduct_walker::filing::lanes::MAX_SANE_DAILY_CAP
                    );
                }
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn config_text_never_panics() {
    let line = prop_oneof![
        Just("[witness]".to_string()),
        Just("[daemon]".to_string()),
        Just("[network]".to_string()),
        Just("[[target]]".to_string()),
        Just("name = \"w\"".to_string()),
        Just("vantage = \"v\"".to_string()),
        Just("origin = \"https://a.example\"".to_string()),
        (
            "[a-z_]{1,20}",
            prop_oneof![
                any::<i64>().prop_map(|n| n.to_string()),
                any::<u64>().prop_map(|n| n.to_string()),
                "\"[ -~]{0,20}\"",
                Just("\"0 0 31 2 *\"".to_string()),
            ]
        )
            .prop_map(|(k, v)| format!("{k} = {v}")),
        "\\PC{0,30}",
    ];
    runner()
        .run(&prop::collection::vec(line, 0..24), |lines| {
            let text = lines.join("\n");
            let _ = conduct_walker::config::parse(std::path::Path::new("/tmp/fuzz.toml"), &text);
            Ok(())
        })
        .unwrap();
}

#[test]
fn import_lines_and_event_streams_never_panic() {
    runner()
        .run(
            &(json_ish(), prop::collection::vec(any::<u8>(), 0..256)),
            |(line, raw)| {
                let _ = conduct_walker::store::transfer::parse_line(&line, 1);
                let _ = conduct_walker::store::transfer::parse_line(&raw, 2);
                let mut stream = b"data: ".to_vec();
                stream.extend_from_slice(&line);
                stream.extend_from_slice(b"\n\n");
                stream.extend_from_slice(&raw);
                for s in [&stream, &raw] {
                    if let Some(found) = conduct_walker::sse::find_response(s, 1) {
                        prop_assert!(found.end <= s.len());
                    }
                }
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn the_test_vectors_survive_the_parsers() {
    // Seed corpus: every JSON file of the test vectors goes through every reader.
    let root = conduct_walker::sandbox::test_vectors("");
    let mut seen = 0;
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let _ = conduct_walker::json::parse_lenient(&bytes);
            let _ = conduct_walker::json::parse_strict(&bytes);
            let _ = conduct_walker::store::transfer::parse_line(&bytes, 1);
            let _ = conduct_walker::witness::intake::classify(
                &exchange(201, bytes.clone(), vec![]),
                "ab",
            );
            seen += 1;
        }
    }
    assert!(seen >= 20, "{seen} vector files");
}

#[test]
fn terms_documents_declarations_and_nkeys_never_panic() {
    // A standing proposal's usual shape, with strangers' values in its places, or any bytes.
    let sow_document = (value(), value(), "\\PC{0,60}").prop_map(|(parties, terms, key)| {
        json!({
            "sow": "sow-v1",
            "parties": parties,
            "terms": terms,
            "signatures": [{"signer": key, "alg": "ed25519-nkey", "sig": "AAAA"}],
        })
        .to_string()
        .into_bytes()
    });
    let body = prop_oneof![json_ish(), sow_document];
    let nkey = prop_oneof!["U[A-Z2-7]{0,60}", "\\PC{0,70}"];
    let digest = prop_oneof!["sha256:[0-9a-f]{64}", "\\PC{0,80}"];
    runner()
        .run(
            &(body, nkey, digest, value()),
            |(body, nkey, digest, card)| {
                let verified = conduct_walker::terms::verify::verify_document(&body, Some(&digest));
                // A document only verifies under the digest of its own canonical form.
                if verified.is_ok() {
                    let doc = conduct_walker::jcs::parse_i_json(&body).unwrap();
                    prop_assert_eq!(
                        conduct_walker::terms::sow::terms_digest(&doc).unwrap(),
                        digest.clone()
                    );
                }
                if let Ok(doc) = conduct_walker::jcs::parse_i_json(&body) {
                    let _ = conduct_walker::terms::sow::check_standing_shape(&doc);
                }
                if let Ok(raw) = conduct_walker::terms::nkey::decode_public(&nkey)
                    && nkey.starts_with('U')
                {
                    // A user key that decodes encodes back to the same text.
                    prop_assert_eq!(conduct_walker::terms::nkey::encode_user_public(&raw), nkey);
                }
                let _ = conduct_walker::terms::declaration::locate(&card);
                if conduct_walker::terms::declaration::digest_well_formed(&digest) {
                    prop_assert_eq!(digest.len(), "sha256:".len() + 64);
                }
                Ok(())
            },
        )
        .unwrap();
}

/// The auditor's bench (issue 46): every canonical form, `inspect`'s kind reading and key
/// parsing, `records import`'s reader and the card verdict's acted-on reading take any bytes
/// without panicking; a form's
/// bytes are a fixed point of the form, and `inspect` hashes the bytes it was given.
#[test]
fn auditor_bench_readers_never_panic_and_forms_are_fixed_points() {
    use conduct_walker::audit::{forms, inspect};
    use conduct_walker::card_signature::{self, Profile};
    let mut all = vec![forms::Form::Nenrin, forms::Form::Rfc8785];
    all.extend(Profile::ALL.iter().map(|p| forms::Form::Card(*p)));
    // 10,000 cases per run (about 2 s in a dev build): the bench reads every stranger's file.
    let mut runner = runner();
    if std::env::var("FUZZ_CASES").is_err() {
        runner = TestRunner::new_with_rng(
            Config {
                cases: 10_000,
                failure_persistence: None,
                ..Config::default()
            },
            runner.new_rng(),
        );
    }
    runner
        .run(&json_ish(), |bytes| {
            for form in &all {
                if let Ok(c) = forms::canonicalise(*form, &bytes)
                    && matches!(form, forms::Form::Nenrin | forms::Form::Rfc8785)
                {
                    let again = forms::canonicalise(*form, &c.bytes).unwrap();
                    prop_assert_eq!(again.bytes, c.bytes);
                }
            }
            let report = inspect::inspect(&bytes, &inspect::Given::default());
            prop_assert_eq!(
                &report.sha256_given,
                &conduct_walker::digest::sha256_hex(&bytes)
            );
            let _ = report.to_json();
            if let Ok((key, _)) = inspect::parse_key(&String::from_utf8_lossy(&bytes)) {
                prop_assert_eq!(key.len(), 44);
            }
            if let Ok(read) = card_signature::read_card_bytes(&bytes)
                && let Ok(c) = read.canonical(Profile::Sdk)
            {
                let _ = card_signature::acted_on_gaps(&read.card, &c.uncovered);
            }
            // `records import`'s reader: a refusal names a line that exists in the input.
            if let Err(refusal) = conduct_walker::audit::import::read(&bytes)
                && let Some(line) = refusal.line
            {
                prop_assert!(line >= 1 && line <= bytes.split(|&b| b == b'\n').count());
            }
            Ok(())
        })
        .unwrap();
}
