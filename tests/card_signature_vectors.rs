//! Shared vectors: `card-signature/canonical.json` (V1–V8 and the fallback-profile strings),
//! `card-signature/signed.json` (four signatures over V2, negative cases), the RFC 8785
//! Appendix B number table, and the §4.3 header block.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use conduct_walker::card_signature::{
    self, ATTRIBUTION_INVALID, ATTRIBUTION_UNSIGNED, ATTRIBUTION_VALID, CardInvalid, Profile,
    REASON_ABSENT, REASON_READ_NOT_VERIFIED, SignatureStatus, TrustStore, canonicalize_card,
};
use conduct_walker::{digest, jcs};
use serde_json::{Value, json};
use std::path::PathBuf;

const ORIGIN: &str = "https://stonework.example";
/// 2026-12-01, after the vectors were made; their keys carry no `exp`.
const NOW: i64 = 1_796_083_200;

fn shared(rel: &str) -> PathBuf {
    conduct_walker::sandbox::test_vectors("").join(rel)
}

fn load(rel: &str) -> Value {
    serde_json::from_slice(&std::fs::read(shared(rel)).unwrap()).unwrap()
}

fn canonical_vectors() -> Vec<Value> {
    load("card-signature/canonical.json")["vectors"]
        .as_array()
        .unwrap()
        .clone()
}

fn vector(id: &str) -> Value {
    canonical_vectors()
        .into_iter()
        .find(|v| v["id"] == id)
        .unwrap()
}

fn parse_card(text: &str) -> Value {
    jcs::parse_i_json(text.as_bytes()).unwrap()
}

#[test]
fn canonical_json_every_vector_byte_for_byte() {
    let mut passed = 0;
    for v in canonical_vectors() {
        let id = v["id"].as_str().unwrap();
        let card = parse_card(v["input_json"].as_str().unwrap());
        let got = canonicalize_card(&card, Profile::Sdk);
        match v["expected"].as_str().unwrap() {
            "canonical" => {
                let got = got.unwrap_or_else(|e| panic!("{id}: {e}"));
                assert_eq!(
                    String::from_utf8(got.bytes.clone()).unwrap(),
                    v["expected_canonical"].as_str().unwrap(),
                    "{id}"
                );
                assert_eq!(
                    digest::sha256_hex(&got.bytes),
                    v["expected_canonical_sha256"].as_str().unwrap(),
                    "{id}"
                );
            }
            expected => {
                assert_eq!(id, "V7");
                assert!(v["expected_canonical"].is_null());
                let err = got.expect_err("V7 must be refused");
                assert!(
                    err.to_string().starts_with(expected),
                    "{id}: {err} does not start with {expected:?}"
                );
                assert_eq!(
                    err,
                    CardInvalid::WrongType {
                        pointer: "/capabilities/streaming".into(),
                        message: "AgentCapabilities",
                        field: "streaming",
                        expected: "a boolean",
                        found: "a string",
                    }
                );
            }
        }
        passed += 1;
    }
    assert_eq!(passed, 8, "V1..V8");
}

#[test]
fn v7_is_invalid_under_every_typed_profile() {
    let card = parse_card(vector("V7")["input_json"].as_str().unwrap());
    for p in [Profile::Sdk, Profile::SpecLiteral, Profile::PythonLegacy] {
        assert!(canonicalize_card(&card, p).is_err(), "{p:?}");
    }
}

#[test]
fn spec_literal_profile_reproduces_v1_informational_string() {
    let v = vector("V1");
    let card = parse_card(v["input_json"].as_str().unwrap());
    let got = canonicalize_card(&card, Profile::SpecLiteral).unwrap();
    assert_eq!(
        String::from_utf8(got.bytes).unwrap(),
        v["informational"]["spec_literal_canonical"]
            .as_str()
            .unwrap()
    );
}

#[test]
fn python_legacy_profile_reproduces_v3_string() {
    let v = vector("V3");
    let card = parse_card(v["input_json"].as_str().unwrap());
    let got = canonicalize_card(&card, Profile::PythonLegacy).unwrap();
    assert_eq!(
        String::from_utf8(got.bytes.clone()).unwrap(),
        v["python_legacy_canonical"].as_str().unwrap()
    );
    assert_eq!(
        digest::sha256_hex(&got.bytes),
        v["python_legacy_canonical_sha256"].as_str().unwrap()
    );
}

#[test]
fn js_100_profile_keeps_what_the_sdk_profile_drops() {
    // No informational string exists for js-1.0.0; the rule (raw card minus signatures,
    // cleanEmpty, RFC 8785) gives this for V2: tenant "" and the empties go, required:false stays.
    let card = parse_card(vector("V2")["input_json"].as_str().unwrap());
    let got = canonicalize_card(&card, Profile::Js100).unwrap();
    let text = String::from_utf8(got.bytes).unwrap();
    assert!(text.contains(r#""required":false"#), "{text}");
    assert!(
        !text.contains("tenant") && !text.contains("signatures"),
        "{text}"
    );
    assert!(
        !text.contains("examples") && !text.contains("securitySchemes"),
        "{text}"
    );
    // And the V3 legacy top-level members are inside it.
    let v3 = parse_card(vector("V3")["input_json"].as_str().unwrap());
    let text = String::from_utf8(canonicalize_card(&v3, Profile::Js100).unwrap().bytes).unwrap();
    assert!(text.contains(r#""unknownTopLevel":{"a":1}"#), "{text}");
    assert!(text.contains(r#""url":"https://legacy.example""#), "{text}");
}

#[test]
fn uncovered_members_of_v2_and_v3() {
    let card = parse_card(vector("V2")["input_json"].as_str().unwrap());
    let got = canonicalize_card(&card, Profile::Sdk).unwrap();
    let pointers: Vec<(String, &str)> = got
        .uncovered
        .iter()
        .map(|u| (u.pointer.clone(), u.why.code()))
        .collect();
    for expected in [
        ("/supportedInterfaces/0/tenant", "implicit_default"),
        ("/capabilities/extensions/0/required", "implicit_default"),
        ("/skills/0/examples", "implicit_default"),
        ("/securitySchemes", "implicit_default"),
        ("/securityRequirements", "implicit_default"),
    ] {
        assert!(
            pointers.contains(&(expected.0.to_string(), expected.1)),
            "{expected:?} missing from {pointers:?}"
        );
    }
    assert!(
        !pointers.iter().any(|(p, _)| p == "/signatures"),
        "signatures is excluded by definition, not listed"
    );

    let v3 = parse_card(vector("V3")["input_json"].as_str().unwrap());
    let got = canonicalize_card(&v3, Profile::Sdk).unwrap();
    let pointers: Vec<&str> = got.uncovered.iter().map(|u| u.pointer.as_str()).collect();
    for p in [
        "/documentationUrl",
        "/url",
        "/protocolVersion",
        "/unknownTopLevel",
        "/capabilities/extensions/0/params/empty",
        "/capabilities/extensions/0/params/nested",
        "/capabilities/extensions/0/params/nul",
    ] {
        assert!(pointers.contains(&p), "{p} missing from {pointers:?}");
    }
}

// ---- signed.json ----

fn signed() -> Value {
    load("card-signature/signed.json")
}

fn pinned_store() -> TrustStore {
    let mut trust = TrustStore::default();
    trust.pin_jwks(ORIGIN, &signed()["jwks"]).unwrap();
    trust
}

fn status_word(s: SignatureStatus) -> &'static str {
    // The vectors speak of valid/invalid only; every other status is "invalid" to them, but a
    // pinned key is always found here, so anything but valid must be exactly `invalid`.
    match s {
        SignatureStatus::Valid => "valid",
        SignatureStatus::Invalid => "invalid",
        other => panic!("unexpected status {other:?}"),
    }
}

#[test]
fn signed_card_canonicalises_to_the_payload() {
    let s = signed();
    let got = canonicalize_card(&s["card"], Profile::Sdk).unwrap();
    assert_eq!(
        String::from_utf8(got.bytes.clone()).unwrap(),
        s["canonical_payload"].as_str().unwrap()
    );
    assert_eq!(
        digest::sha256_hex(&got.bytes),
        s["canonical_payload_sha256"].as_str().unwrap()
    );
    assert_eq!(
        URL_SAFE_NO_PAD.encode(&got.bytes),
        s["canonical_payload_b64url"].as_str().unwrap()
    );
    // And the unsigned V2 text gives the same payload.
    let unsigned = parse_card(s["card_text_V2_unsigned"].as_str().unwrap());
    assert_eq!(
        canonicalize_card(&unsigned, Profile::Sdk).unwrap().bytes,
        got.bytes
    );
}

#[tokio::test]
async fn the_four_v2_signatures_verify() {
    let s = signed();
    let result =
        card_signature::verify_card_at(&s["card"], ORIGIN, None, &pinned_store(), NOW).await;
    assert!(result.valid);
    assert_eq!(result.signatures.len(), 4);
    let listed = s["signatures"].as_array().unwrap();
    for (r, v) in result.signatures.iter().zip(listed) {
        assert_eq!(
            status_word(r.status),
            v["expected"].as_str().unwrap(),
            "{r:?}"
        );
        assert_eq!(r.profile, Some(Profile::Sdk));
        assert_eq!(r.kid.as_deref(), v["kid"].as_str());
        assert_eq!(r.alg.as_deref(), v["alg"].as_str());
        assert_eq!(r.key_source.unwrap().code(), "pinned");
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        // Signing input hash as listed.
        let input = format!(
            "{}.{}",
            v["protected"].as_str().unwrap(),
            s["canonical_payload_b64url"].as_str().unwrap()
        );
        assert_eq!(
            digest::sha256_hex(input.as_bytes()),
            v["signing_input_sha256"].as_str().unwrap()
        );
    }
    assert_eq!(result.profile, Some(Profile::Sdk));
    assert_eq!(result.chosen, Some(0));
    // python-signed entries carry "jku":null: read as absent.
    assert_eq!(result.signatures[2].jku, None);
    assert_eq!(
        result.signatures[0].jku.as_deref(),
        Some("https://stonework.example/.well-known/jwks.json")
    );
}

#[test]
fn eddsa_signatures_reproduce_from_the_private_jwk() {
    let s = signed();
    let private = s["test_only_private_jwk"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kty"] == "OKP")
        .unwrap()
        .clone();
    let d: [u8; 32] = URL_SAFE_NO_PAD
        .decode(private["d"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    let key = ed25519_dalek::SigningKey::from_bytes(&d);
    assert_eq!(
        URL_SAFE_NO_PAD.encode(key.verifying_key().to_bytes()),
        private["x"].as_str().unwrap()
    );
    let mut reproduced = 0;
    for v in s["signatures"].as_array().unwrap() {
        if v["alg"] != "EdDSA" {
            continue;
        }
        assert_eq!(v["deterministic"], true);
        // Through the library's own signer, from the protected header JSON as listed.
        let pkcs8 = {
            use ed25519_dalek::pkcs8::EncodePrivateKey;
            key.to_pkcs8_der().unwrap()
        };
        let entry = card_signature::signing::sign_entry(
            &s["card"],
            Profile::Sdk,
            v["protected_header_json"].as_str().unwrap(),
            &jsonwebtoken::EncodingKey::from_ed_der(pkcs8.as_bytes()),
            card_signature::JwsAlg::EdDSA,
        )
        .unwrap();
        assert_eq!(entry["protected"], v["protected"]);
        assert_eq!(entry["signature"], v["signature"]);
        reproduced += 1;
    }
    assert_eq!(reproduced, 2);
    // The negative case's fresh typ-less entry is deterministic too.
    let case = negative("protected_header_without_typ");
    let entry = &case["card"]["signatures"][0];
    let header = URL_SAFE_NO_PAD
        .decode(entry["protected"].as_str().unwrap())
        .unwrap();
    let input = format!(
        "{}.{}",
        entry["protected"].as_str().unwrap(),
        s["canonical_payload_b64url"].as_str().unwrap()
    );
    use ed25519_dalek::Signer;
    assert_eq!(
        URL_SAFE_NO_PAD.encode(key.sign(input.as_bytes()).to_bytes()),
        entry["signature"].as_str().unwrap(),
        "{}",
        String::from_utf8_lossy(&header)
    );
}

fn negative(id: &str) -> Value {
    signed()["negative_cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap()
        .clone()
}

#[tokio::test]
async fn every_negative_case() {
    let s = signed();
    let trust = pinned_store();
    let mut checked = 0;
    for case in s["negative_cases"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        let payload = canonicalize_card(&case["card"], Profile::Sdk).unwrap();
        assert_eq!(
            String::from_utf8(payload.bytes.clone()).unwrap(),
            case["expected_canonical_payload"].as_str().unwrap(),
            "{id}"
        );
        assert_eq!(
            payload.bytes == s["canonical_payload"].as_str().unwrap().as_bytes(),
            case["payload_equals_V2"].as_bool().unwrap(),
            "{id}"
        );
        let result = card_signature::verify_card_at(&case["card"], ORIGIN, None, &trust, NOW).await;
        let per_entry: Vec<&str> = result
            .signatures
            .iter()
            .map(|r| status_word(r.status))
            .collect();
        let expected: Vec<&str> = case["expected_per_entry"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        assert_eq!(per_entry, expected, "{id}");
        match case["expected_card_result"].as_str().unwrap() {
            "valid" => assert!(result.valid, "{id}"),
            "invalid" => {
                assert!(!result.valid, "{id}");
                assert_eq!(result.attribution_line(), ATTRIBUTION_INVALID, "{id}");
                for r in &result.signatures {
                    assert!(r.reason.contains("does not verify"), "{id}: {}", r.reason);
                }
            }
            other => {
                // protected_header_without_typ: valid, with the spec violation reported.
                assert_eq!(id, "protected_header_without_typ");
                assert!(other.starts_with("cryptographically valid"));
                assert!(result.valid, "{id}");
                let w = &result.signatures[0].warnings;
                assert_eq!(w, &vec![card_signature::jws::WARN_TYP_MISSING.to_string()]);
                let block = result.record_block(false);
                assert_eq!(block["signatures"][0]["warnings"][0], w[0].as_str());
            }
        }
        if id == "one_invalid_one_valid" {
            assert_eq!(result.chosen, Some(1));
            assert!(
                result
                    .verified_reason(false)
                    .starts_with("verified: signatures[1] of 2")
            );
        }
        if id == "top_level_url_added" {
            assert!(
                result
                    .uncovered
                    .iter()
                    .any(|u| u.pointer == "/url" && u.why.code() == "outside_schema"),
                "{:?}",
                result.uncovered
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 6);
}

#[tokio::test]
async fn without_a_key_nothing_verifies_and_no_fetch_is_made() {
    let s = signed();
    let result =
        card_signature::verify_card_at(&s["card"], ORIGIN, None, &TrustStore::default(), NOW).await;
    assert!(!result.valid);
    for r in &result.signatures {
        assert_eq!(r.status, SignatureStatus::NoKey, "{r:?}");
    }
    assert!(
        result.signatures[0].reason.contains("fetching jku is off"),
        "{}",
        result.signatures[0].reason
    );
    assert!(
        result.signatures[2].reason.contains("names no jku"),
        "{}",
        result.signatures[2].reason
    );
    assert_eq!(
        result.attribution_line(),
        card_signature::ATTRIBUTION_UNCHECKED
    );
}

#[tokio::test]
async fn revoked_and_expired_pinned_keys_are_refused() {
    let s = signed();
    let mut trust = pinned_store();
    trust.revoke_kid("test-ed25519-1");
    let p256 = s["jwks"]["keys"][1].clone();
    trust.revoke_thumbprint(&card_signature::jwk_thumbprint(&p256).unwrap());
    let result = card_signature::verify_card_at(&s["card"], ORIGIN, None, &trust, NOW).await;
    assert!(!result.valid);
    let codes: Vec<&str> = result.signatures.iter().map(|r| r.status.code()).collect();
    assert_eq!(codes, ["key_revoked"; 4]);
    assert!(
        result.signatures[1].reason.contains("thumbprint"),
        "{}",
        result.signatures[1].reason
    );

    let mut jwks = s["jwks"].clone();
    for k in jwks["keys"].as_array_mut().unwrap() {
        k["exp"] = json!(NOW - 1);
    }
    let mut trust = TrustStore::default();
    trust.pin_jwks(ORIGIN, &jwks).unwrap();
    let result = card_signature::verify_card_at(&s["card"], ORIGIN, None, &trust, NOW).await;
    let codes: Vec<&str> = result.signatures.iter().map(|r| r.status.code()).collect();
    assert_eq!(codes, ["key_expired"; 4]);
    // One second earlier the same keys are fine.
    let result = card_signature::verify_card_at(&s["card"], ORIGIN, None, &trust, NOW - 2).await;
    assert!(result.valid);
}

#[tokio::test]
async fn pins_belong_to_their_origin_only() {
    let s = signed();
    let result = card_signature::verify_card_at(
        &s["card"],
        "https://other.example",
        None,
        &pinned_store(),
        NOW,
    )
    .await;
    assert!(!result.valid);
}

#[tokio::test]
async fn a_key_of_the_wrong_type_is_unusable() {
    let s = signed();
    // Give the EdDSA kid the P-256 key material.
    let mut jwks = s["jwks"].clone();
    jwks["keys"][1]["kid"] = json!("test-ed25519-1");
    jwks["keys"][1].as_object_mut().unwrap().remove("alg");
    jwks["keys"].as_array_mut().unwrap().remove(0);
    let mut trust = TrustStore::default();
    trust.pin_jwks(ORIGIN, &jwks).unwrap();
    let result = card_signature::verify_card_at(&s["card"], ORIGIN, None, &trust, NOW).await;
    assert_eq!(result.signatures[0].status, SignatureStatus::KeyUnusable);
    assert!(
        result.signatures[0].reason.contains("not OKP Ed25519"),
        "{}",
        result.signatures[0].reason
    );
}

#[tokio::test]
async fn duplicate_member_names_leave_the_card_without_a_payload() {
    let s = signed();
    let mut text = serde_json::to_string(&s["card"]).unwrap();
    text.insert_str(1, r#""name":"Shadowed","#);
    let result = card_signature::verify_card_bytes(text.as_bytes(), ORIGIN, None, &pinned_store())
        .await
        .unwrap();
    assert!(!result.valid);
    assert!(matches!(
        result.card_invalid,
        Some(CardInvalid::NotIJson(_))
    ));
    assert_eq!(
        result.attribution_line(),
        card_signature::ATTRIBUTION_CARD_INVALID
    );
    assert!(
        card_signature::verify_card_bytes(b"{", ORIGIN, None, &pinned_store())
            .await
            .is_err()
    );
}

// ---- the record ----

#[test]
fn read_header_absent_form_has_exactly_four_keys() {
    let absent = json!({
        "present": false,
        "count": 0,
        "verified": null,
        "verified_reason": REASON_ABSENT,
    });
    for card in [
        None,
        Some(json!({})),
        Some(json!({"signatures": []})),
        Some(json!({"signatures": {}})),
        Some(json!({"signatures": "x"})),
    ] {
        let got = card_signature::read_header(card.as_ref(), ORIGIN);
        assert_eq!(got, absent, "{card:?}");
        assert_eq!(got.as_object().unwrap().len(), 4);
    }
}

#[test]
fn read_header_of_the_signed_card() {
    let s = signed();
    let got = card_signature::read_header(Some(&s["card"]), ORIGIN);
    assert_eq!(
        got,
        json!({
            "present": true,
            "count": 4,
            "alg": "EdDSA",
            "kid": "test-ed25519-1",
            "jku": "https://stonework.example/.well-known/jwks.json",
            "jku_same_host": true,
            "protected_readable": true,
            "verified": null,
            "verified_reason": REASON_READ_NOT_VERIFIED,
        })
    );
    // Authority compared exactly: another port, or upper case, is another host (ref).
    assert_eq!(
        card_signature::read_header(Some(&s["card"]), "https://stonework.example:8443")["jku_same_host"],
        false
    );
    assert_eq!(
        card_signature::read_header(Some(&s["card"]), "https://Stonework.example")["jku_same_host"],
        false
    );
    // The python entry (jku null) first: no jku, no comparison.
    let mut card = s["card"].clone();
    card["signatures"].as_array_mut().unwrap().swap(0, 2);
    let got = card_signature::read_header(Some(&card), ORIGIN);
    assert_eq!(got["jku"], Value::Null);
    assert_eq!(got["jku_same_host"], Value::Null);
    // An unreadable header: empty, not readable, nulls.
    let card = json!({"signatures": [{"protected": "!!!", "signature": "x"}, 5]});
    let got = card_signature::read_header(Some(&card), ORIGIN);
    assert_eq!(got["count"], 2);
    assert_eq!(got["protected_readable"], false);
    assert_eq!(got["alg"], Value::Null);
    // A header that is "{}" is an object but empty: not readable.
    let card = json!({"signatures": [{"protected": URL_SAFE_NO_PAD.encode("{}")}]});
    assert_eq!(
        card_signature::read_header(Some(&card), ORIGIN)["protected_readable"],
        false
    );
}

#[tokio::test]
async fn record_block_keeps_the_section_4_3_keys_and_says_more() {
    let s = signed();
    let result =
        card_signature::verify_card_at(&s["card"], ORIGIN, None, &pinned_store(), NOW).await;
    let header = card_signature::read_header(Some(&s["card"]), ORIGIN);
    let block = result.record_block(false);
    for key in [
        "present",
        "count",
        "alg",
        "kid",
        "jku",
        "jku_same_host",
        "protected_readable",
    ] {
        assert_eq!(block[key], header[key], "{key}");
    }
    assert_eq!(block["verified"], true);
    let reason = block["verified_reason"].as_str().unwrap();
    assert!(
        reason.starts_with("verified: signatures[0] of 4 (alg EdDSA, kid test-ed25519-1)"),
        "{reason}"
    );
    assert!(reason.contains(Profile::Sdk.description()), "{reason}");
    assert!(
        reason.contains(card_signature::keys::KEY_SOURCE_PINNED_TEXT),
        "{reason}"
    );
    assert!(
        reason.ends_with(card_signature::VERIFIED_REASON_VALID_TAIL),
        "{reason}"
    );
    assert_eq!(block["profile"], "sdk");
    assert_eq!(block["signatures"].as_array().unwrap().len(), 4);
    assert_eq!(block["signatures"][1]["result"], "valid");
    assert_eq!(block["signatures"][1]["key_source"], "pinned");
    assert_eq!(block["uncovered_count"], 5);
    assert_eq!(result.attribution_line(), ATTRIBUTION_VALID);
    assert!(ATTRIBUTION_VALID.contains("provider"));

    // Privacy: jku nulled everywhere, jku_same_host kept.
    let private = result.record_block(true);
    assert_eq!(private["jku"], Value::Null);
    assert_eq!(private["jku_same_host"], true);
    assert_eq!(private["signatures"][0]["jku"], Value::Null);

    // Unsigned: the absent form and the reference's line.
    let unsigned =
        card_signature::verify_card_at(&json!({"name": "x"}), ORIGIN, None, &pinned_store(), NOW)
            .await;
    assert_eq!(unsigned.record_block(false), card_signature::absent_block());
    assert_eq!(unsigned.attribution_line(), ATTRIBUTION_UNSIGNED);
    // The record block is NENRIN-canonicalisable (only strings, bools, ints, nulls).
    let bytes = conduct_walker::canonical::to_bytes(&block);
    assert!(!bytes.is_empty());
}

// ---- RFC 8785 Appendix B number table (card-signature-and-terms.md §3.2) ----

#[test]
fn rfc8785_appendix_b_numbers() {
    let table = [
        ("0000000000000000", "0"),
        ("8000000000000000", "0"),
        ("0000000000000001", "5e-324"),
        ("8000000000000001", "-5e-324"),
        ("7fefffffffffffff", "1.7976931348623157e+308"),
        ("ffefffffffffffff", "-1.7976931348623157e+308"),
        ("4340000000000000", "9007199254740992"),
        ("c340000000000000", "-9007199254740992"),
        ("4430000000000000", "295147905179352830000"),
        ("44b52d02c7e14af5", "9.999999999999997e+22"),
        ("44b52d02c7e14af6", "1e+23"),
        ("44b52d02c7e14af7", "1.0000000000000001e+23"),
        ("444b1ae4d6e2ef4e", "999999999999999700000"),
        ("444b1ae4d6e2ef4f", "999999999999999900000"),
        ("444b1ae4d6e2ef50", "1e+21"),
        ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
        ("3eb0c6f7a0b5ed8d", "0.000001"),
        ("41b3de4355555553", "333333333.3333332"),
        ("41b3de4355555554", "333333333.33333325"),
        ("41b3de4355555555", "333333333.3333333"),
        ("41b3de4355555556", "333333333.3333334"),
        ("41b3de4355555557", "333333333.33333343"),
        ("becbf647612f3696", "-0.0000033333333333333333"),
        ("43143ff3c1cb0959", "1424953923781206.2"),
        ("4340000000000001", "9007199254740994"),
        ("4340000000000002", "9007199254740996"),
    ];
    for (hex, expected) in table {
        let f = f64::from_bits(u64::from_str_radix(hex, 16).unwrap());
        // Through text, as a card delivers numbers: Rust's shortest round-trip form.
        let text = format!("[{f:e}]");
        let got = jcs::canonicalize_bytes(text.as_bytes()).unwrap();
        assert_eq!(
            String::from_utf8(got).unwrap(),
            format!("[{expected}]"),
            "{hex}"
        );
    }
    for hex in ["7fffffffffffffff", "7ff0000000000000"] {
        let f = f64::from_bits(u64::from_str_radix(hex, 16).unwrap());
        assert!(!f.is_finite());
        // NaN and Infinity have no JSON spelling; the nearest input, an overflowing literal,
        // is refused as not I-JSON.
        assert!(jcs::canonicalize_bytes(b"[1e400]").is_err());
    }
}
