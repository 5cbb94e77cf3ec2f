//! §5.5: the checks every reader of a `nenrin-witness-observation-v1` runs (`witness verify`,
//! a requester before it counts an answer, a responder on its own record before it sends it),
//! and their refusal codes. Pure: the key and the key document are arguments.
//!
//! Also the small text tests the request checks share (64 hex, the https prefix, the WHATWG
//! host, JavaScript's white space), kept here because this file sits below the other two.

use super::OBSERVATION_SCHEMA;
use super::observation;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use serde_json::Value;

/// A refusal code of §5.5, in the order the checks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    NotObject,
    NotObservation,
    BadSchema,
    BadRecordedAt,
    BadWitness,
    DisclaimerMissing,
    BadPrev,
    BadRecordSha256,
    NumberInRecord,
    BadEndpoint,
    BadObserved,
    BadRequestSha256,
    BadSource,
    HashMismatch,
    WitnessUnsigned,
    BadSignature,
    WitnessKeyMismatch,
    KeyUrlMismatch,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::NotObject => "not_object",
            Refusal::NotObservation => "not_observation",
            Refusal::BadSchema => "bad_schema",
            Refusal::BadRecordedAt => "bad_recorded_at",
            Refusal::BadWitness => "bad_witness",
            Refusal::DisclaimerMissing => "disclaimer_missing",
            Refusal::BadPrev => "bad_prev",
            Refusal::BadRecordSha256 => "bad_record_sha256",
            Refusal::NumberInRecord => "number_in_record",
            Refusal::BadEndpoint => "bad_endpoint",
            Refusal::BadObserved => "bad_observed",
            Refusal::BadRequestSha256 => "bad_request_sha256",
            Refusal::BadSource => "bad_source",
            Refusal::HashMismatch => "hash_mismatch",
            Refusal::WitnessUnsigned => "witness_unsigned",
            Refusal::BadSignature => "bad_signature",
            Refusal::WitnessKeyMismatch => "witness_key_mismatch",
            Refusal::KeyUrlMismatch => "key_url_mismatch",
        }
    }
}

/// The TSUGI chain schemas: records, not observations (the reference validator accepts them
/// under their own rules; `witness verify` does not).
pub const TSUGI_SCHEMAS: [&str; 5] = [
    "nenrin-drift-record-v1",
    "nenrin-repair-proposal-v1",
    "nenrin-authorization-v1",
    "nenrin-repair-execution-v1",
    "nenrin-verify-record-v1",
];

/// What the reader was told to expect (`--public-key`, `--key-doc`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Options<'a> {
    /// The expected key, B64, compared as a string with the embedded one.
    pub public_key: Option<&'a str>,
    /// The parsed key document served at the witness's `key_url`.
    pub key_doc: Option<&'a Value>,
}

/// Every refusal of `record`, in check order; empty = valid. Stage 3 (hash, signature, keys)
/// runs only on a record that passed stages 1 and 2, and stops at its first failure
/// (`observation-cases.json` `several-defects`, `number-in-observed`).
pub fn validate(record: &Value, options: &Options) -> Vec<Refusal> {
    let Some(fields) = record.as_object() else {
        return vec![Refusal::NotObject];
    };
    if let Some(refusal) = schema_refusal(fields.get("schema")) {
        return vec![refusal];
    }
    let shape = shape_refusals(record);
    if !shape.is_empty() {
        return shape;
    }
    proof_refusal(record, options).into_iter().collect()
}

/// Stage 1 beyond "an object": the schema.
fn schema_refusal(schema: Option<&Value>) -> Option<Refusal> {
    match schema.and_then(Value::as_str) {
        Some(OBSERVATION_SCHEMA) => None,
        Some(s) if TSUGI_SCHEMAS.contains(&s) => Some(Refusal::NotObservation),
        _ => Some(Refusal::BadSchema),
    }
}

/// Stage 2: every failing check, each code once, in the order of §5.5.
fn shape_refusals(record: &Value) -> Vec<Refusal> {
    let field = |name: &str| record.get(name);
    let checks: [(bool, Refusal); 12] = [
        (recorded_at_ok(field("recorded_at")), Refusal::BadRecordedAt),
        (witness_ok(field("witness")), Refusal::BadWitness),
        (
            disclaimer_ok(field("establishes")),
            Refusal::DisclaimerMissing,
        ),
        (
            disclaimer_ok(field("does_not_establish")),
            Refusal::DisclaimerMissing,
        ),
        (
            matches!(field("prev"), Some(Value::Null)) || is_hex64_value(field("prev")),
            Refusal::BadPrev,
        ),
        (
            field("record_sha256").is_none() || is_hex64_value(field("record_sha256")),
            Refusal::BadRecordSha256,
        ),
        (!holds_number(record), Refusal::NumberInRecord),
        (non_empty_str(field("endpoint")), Refusal::BadEndpoint),
        (observed_ok(field("observed")), Refusal::BadObserved),
        (
            is_hex64_value(field("request_sha256")),
            Refusal::BadRequestSha256,
        ),
        (source_ok(field("source")), Refusal::BadSource),
        // "An observation stands alone": present and null, no chaining.
        (matches!(field("prev"), Some(Value::Null)), Refusal::BadPrev),
    ];
    let mut refusals = Vec::new();
    for (passed, refusal) in checks {
        if !passed && !refusals.contains(&refusal) {
            refusals.push(refusal);
        }
    }
    refusals
}

/// Stage 3: hash, signature, then the keys the reader expects; the first failure only.
fn proof_refusal(record: &Value, options: &Options) -> Option<Refusal> {
    let canonical = observation::canonical_bytes(record);
    if let Some(claimed) = record.get("record_sha256").and_then(Value::as_str)
        && claimed != crate::digest::sha256_hex(&canonical)
    {
        return Some(Refusal::HashMismatch);
    }
    let signature = record.get("signature_ed25519_b64");
    let key = record.get("public_key_ed25519_b64");
    let (signature, key) = match (signature, key) {
        (None, None) => return Some(Refusal::WitnessUnsigned),
        (Some(Value::String(s)), Some(Value::String(k))) => (s.as_str(), k.as_str()),
        _ => return Some(Refusal::BadSignature),
    };
    if !signature_verifies(&canonical, signature, key) {
        return Some(Refusal::BadSignature);
    }
    if options.public_key.is_some_and(|expected| expected != key) {
        return Some(Refusal::WitnessKeyMismatch);
    }
    if options
        .key_doc
        .is_some_and(|doc| served_key(doc) != Some(key))
    {
        return Some(Refusal::KeyUrlMismatch);
    }
    None
}

/// The key a key document serves: its `public_key_ed25519_b64`, trimmed as JavaScript trims
/// (the pool builder trims it; the intake compares it character for character).
pub fn served_key(doc: &Value) -> Option<&str> {
    doc.get("public_key_ed25519_b64")
        .and_then(Value::as_str)
        .map(super::js::trim)
}

/// Ed25519 over `message`: both texts canonical padded standard base64 of 64 and 32 bytes, the
/// key not of small order, and RFC 8032 verification.
///
/// `verify`, not `verify_strict`: RFC 8032 (and OpenSSL, which the reference runs on) does
/// not refuse a small-order R, so neither do we; the one forgery that matters, a small-order
/// key, is refused explicitly first (§5.5, "ours"). Both reject a non-canonical S and compare
/// R as encoded. No honest signer's output differs between the two.
pub fn signature_verifies(message: &[u8], signature_b64: &str, key_b64: &str) -> bool {
    let (Some(signature), Some(key)) = (strict_b64::<64>(signature_b64), strict_b64::<32>(key_b64))
    else {
        return false;
    };
    let Ok(key) = VerifyingKey::from_bytes(&key) else {
        return false;
    };
    if key.is_weak() {
        return false;
    }
    key.verify(message, &Signature::from_bytes(&signature))
        .is_ok()
}

/// Exactly `N` bytes written as standard padded base64 in its one canonical spelling (the
/// reference's Node decoder also takes base64url, missing padding and stray bits; no honest
/// writer emits those).
fn strict_b64<const N: usize>(text: &str) -> Option<[u8; N]> {
    let bytes = STANDARD.decode(text).ok()?;
    if STANDARD.encode(&bytes) != text {
        return None;
    }
    bytes.try_into().ok()
}

/// `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$` (JavaScript: `\d` is ASCII, `$` is the end).
pub fn is_recorded_at(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| b[range].iter().all(u8::is_ascii_digit);
    if b.len() < 20 || b.last() != Some(&b'Z') {
        return false;
    }
    let fixed = digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    let fraction = &b[19..b.len() - 1];
    let fraction_ok = fraction.is_empty()
        || (fraction.len() >= 2
            && fraction[0] == b'.'
            && fraction[1..].iter().all(u8::is_ascii_digit));
    fixed && fraction_ok
}

fn recorded_at_ok(value: Option<&Value>) -> bool {
    value.and_then(Value::as_str).is_some_and(is_recorded_at)
}

fn witness_ok(value: Option<&Value>) -> bool {
    value.is_some_and(|w| {
        w.is_object() && non_empty_str(w.get("name")) && non_empty_str(w.get("vantage"))
    })
}

/// A non-empty array of non-empty strings.
fn disclaimer_ok(value: Option<&Value>) -> bool {
    value
        .and_then(Value::as_array)
        .is_some_and(|lines| !lines.is_empty() && lines.iter().all(|l| non_empty_str(Some(l))))
}

fn observed_ok(value: Option<&Value>) -> bool {
    value
        .and_then(Value::as_object)
        .is_some_and(|map| !map.is_empty() && map.values().all(Value::is_object))
}

/// `source`: kind `external_witness`, a non-empty `signed_domain`, an https `key_url` whose
/// host is the signed domain (compared lower-case).
fn source_ok(value: Option<&Value>) -> bool {
    let Some(source) = value.filter(|s| s.is_object()) else {
        return false;
    };
    let kind_ok = source.get("kind").and_then(Value::as_str) == Some(observation::EXTERNAL_WITNESS);
    let domain = source
        .get("signed_domain")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty());
    let key_url = source
        .get("key_url")
        .and_then(Value::as_str)
        .filter(|u| has_https_prefix(u));
    match (kind_ok, domain, key_url) {
        (true, Some(domain), Some(key_url)) => {
            url_host(key_url).is_some_and(|host| host == domain.to_lowercase())
        }
        _ => false,
    }
}

fn non_empty_str(value: Option<&Value>) -> bool {
    value.and_then(Value::as_str).is_some_and(|s| !s.is_empty())
}

/// Whether any JSON number sits anywhere in `value` (booleans are not numbers).
pub fn holds_number(value: &Value) -> bool {
    match value {
        Value::Number(_) => true,
        Value::Array(items) => items.iter().any(holds_number),
        Value::Object(map) => map.values().any(holds_number),
        _ => false,
    }
}

/// Exactly 64 characters of `[0-9a-f]`.
pub fn is_hex64(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// [`is_hex64`] of a JSON string; any other JSON value is not hex (ours: the reference tests
/// JavaScript's `String()` of the value, which lets a one-element array through).
pub fn is_hex64_value(value: Option<&Value>) -> bool {
    value.and_then(Value::as_str).is_some_and(is_hex64)
}

/// `^https://[^\s/]+` as a prefix test, case-sensitive, with JavaScript's `\s`.
pub fn has_https_prefix(text: &str) -> bool {
    text.strip_prefix("https://")
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| c != '/' && !super::js::is_space(c))
}

/// The WHATWG host of a URL: lower-case, IDNA names in ASCII form, a non-default port kept.
/// None when the text is not a URL or has no host.
pub fn url_host(text: &str) -> Option<String> {
    let url = url::Url::parse(text).ok()?;
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::witness_pool::observation;
    use ed25519_dalek::{Signer, SigningKey};

    fn vector(name: &str) -> Value {
        let path = crate::sandbox::test_vectors(&format!("witness-pool/{name}"));
        crate::json::parse_lenient(&std::fs::read(path).unwrap()).unwrap()
    }

    fn codes(record: &Value, options: &Options) -> Vec<&'static str> {
        validate(record, options)
            .into_iter()
            .map(Refusal::as_str)
            .collect()
    }

    /// The fixture's two embedded observations (spec §5.6), witness-b's then witness-d's.
    fn fixture_observations() -> Vec<Value> {
        let fixture = vector("fixture.json");
        let external = fixture["records"][6]["external"]
            .as_array()
            .unwrap()
            .clone();
        external[1..=2]
            .iter()
            .map(|e| e["record"].clone())
            .collect()
    }

    /// seed = sha256("tsugi fixture key " + label) (the vectors' README).
    fn fixture_key(label: &str) -> SigningKey {
        SigningKey::from_bytes(&crate::digest::sha256(format!("tsugi fixture key {label}")))
    }

    #[test]
    fn every_observation_case_gives_exactly_its_codes() {
        let cases = vector("observation-cases.json");
        let cases = cases["cases"].as_array().unwrap();
        assert_eq!(cases.len(), 40);
        for case in cases {
            let options = Options {
                public_key: case.get("public_key").and_then(Value::as_str),
                key_doc: case.get("key_doc"),
            };
            let expected: Vec<&str> = case["expected_codes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap())
                .collect();
            assert_eq!(
                codes(&case["record"], &options),
                expected,
                "case {}",
                case["id"]
            );
        }
    }

    #[test]
    fn fixture_observations_verify_rehash_and_resign_identically() {
        let expected = [
            (
                "witness-b.example",
                "7566a5a3dc4b9ed8d9c28a6354303d5234254dcc2b8ad9a9019328148402a8ed",
            ),
            (
                "witness-d.example",
                "1df67da7fa35b61ad4adda45f48f1d59f46c387261b60607bd91ee5ca5061b79",
            ),
        ];
        for (record, (label, sha)) in fixture_observations().iter().zip(expected) {
            assert_eq!(codes(record, &Options::default()), Vec::<&str>::new());
            let canonical = observation::canonical_bytes(record);
            assert_eq!(canonical.len(), 1252);
            assert_eq!(observation::record_sha256(record), sha);
            assert_eq!(record["record_sha256"], sha);
            let key = fixture_key(label);
            assert_eq!(
                crate::witness::keys::public_key_b64(&key),
                record["public_key_ed25519_b64"]
            );
            let resigned = STANDARD.encode(key.sign(&canonical).to_bytes());
            assert_eq!(resigned, record["signature_ed25519_b64"]);
        }
    }

    #[test]
    fn the_signature_covers_the_bytes_without_record_sha256() {
        let record = &fixture_observations()[0];
        let mut with_hash = record.clone();
        with_hash
            .as_object_mut()
            .unwrap()
            .remove("signature_ed25519_b64");
        with_hash
            .as_object_mut()
            .unwrap()
            .remove("public_key_ed25519_b64");
        let over_hash = crate::canonical::to_bytes(&with_hash);
        let sig = record["signature_ed25519_b64"].as_str().unwrap();
        let key = record["public_key_ed25519_b64"].as_str().unwrap();
        assert!(!signature_verifies(&over_hash, sig, key));
        assert!(signature_verifies(
            &observation::canonical_bytes(record),
            sig,
            key
        ));
    }

    #[test]
    fn base64_is_standard_padded_and_canonical_only() {
        let key = fixture_key("witness-b.example");
        let message = b"m";
        let sig = STANDARD.encode(key.sign(message).to_bytes());
        let pk = crate::witness::keys::public_key_b64(&key);
        assert!(signature_verifies(message, &sig, &pk));
        assert!(!signature_verifies(message, sig.trim_end_matches('='), &pk));
        assert!(!signature_verifies(message, &sig, pk.trim_end_matches('=')));
        assert!(!signature_verifies(message, &format!(" {sig}"), &pk));
        // The last character of a 32-byte key carries 2 spare bits: setting one is another
        // spelling of the same bytes, which a canonical reader refuses.
        let mut spare = pk.clone().into_bytes();
        let last = spare.len() - 2;
        spare[last] = match spare[last] {
            b'A' => b'B',
            other => other + 1,
        };
        assert!(!signature_verifies(
            message,
            &sig,
            std::str::from_utf8(&spare).unwrap()
        ));
    }

    #[test]
    fn key_document_is_trimmed_as_javascript_trims() {
        let key = "V0u0H4CgIniad7Co0W35+TxlV254w56K9ofelOpH0m4=";
        let doc =
            serde_json::json!({ "public_key_ed25519_b64": format!("\u{feff}\u{3000}{key}\n") });
        assert_eq!(served_key(&doc), Some(key));
        let record = &fixture_observations()[0];
        let options = Options {
            key_doc: Some(&doc),
            ..Options::default()
        };
        assert!(codes(record, &options).is_empty());
        let not_a_doc = serde_json::json!(["x"]);
        let options = Options {
            key_doc: Some(&not_a_doc),
            ..Options::default()
        };
        assert_eq!(codes(record, &options), ["key_url_mismatch"]);
    }

    #[test]
    fn text_tests_follow_the_javascript_patterns() {
        assert!(is_recorded_at("2026-09-20T08:04:00Z"));
        assert!(is_recorded_at("2026-09-20T08:04:00.5Z"));
        assert!(!is_recorded_at("2026-09-20T08:04:00.Z"));
        assert!(!is_recorded_at("2026-09-20T08:04:00Z\n"));
        assert!(!is_recorded_at("2026-09-20 08:04:00Z"));
        assert!(!is_recorded_at("2026-09-20T08:04:0٣Z"));
        assert!(has_https_prefix("https://x"));
        assert!(has_https_prefix("https://host name.org"));
        assert!(!has_https_prefix("https://"));
        assert!(!has_https_prefix("https:///x"));
        assert!(!has_https_prefix("https://\u{a0}x"));
        assert!(!has_https_prefix("HTTPS://x"));
        assert!(
            has_https_prefix("https://\u{85}x"),
            "U+0085 is not JS white space"
        );
        assert_eq!(
            url_host("https://Witness.Example.org:443/"),
            Some("witness.example.org".into())
        );
        assert_eq!(
            url_host("https://b\u{fc}cher.de:8443"),
            Some("xn--bcher-kva.de:8443".into())
        );
        assert_eq!(url_host("https://host name.org"), None);
        assert!(is_hex64(&"0".repeat(64)));
        assert!(!is_hex64(&"A".repeat(64)));
        assert!(!is_hex64(&"0".repeat(63)));
        assert!(!is_hex64_value(Some(&serde_json::json!(["0".repeat(64)]))));
    }
}
