//! The Agent SoW vectors (`tests/vectors/sow`) through the terms verifier: the
//! standing proposal verifies, the agreed document is refused, every tamper and encoding
//! negative breaks the signature, and NKeys decode with their checksum checked.

use conduct_walker::digest::sha256_hex;
use conduct_walker::jcs::{canonicalize, canonicalize_bytes, parse_i_json};
use conduct_walker::terms::nkey::{self, NkeyError};
use conduct_walker::terms::sow::{self, ShapeError, SignatureError};
use conduct_walker::terms::{
    Outcome, ProposalEntry, ProposalResult, TermsReport, VerifyError, locate, verify_document,
};
use ed25519_dalek::{Signature, SigningKey, VerifyingKey};
use serde_json::{Value, json};
use std::path::PathBuf;

fn dir() -> PathBuf {
    conduct_walker::sandbox::test_vectors("sow")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(name)).unwrap()
}

fn read_text(name: &str) -> String {
    String::from_utf8(read(name)).unwrap().trim().to_string()
}

fn vectors() -> Value {
    parse_i_json(&read("vectors.json")).unwrap()
}

fn document(label: &str) -> Value {
    let file = match label {
        "a" => "agreed-document.signed.json",
        "b" => "standing-proposal.signed.json",
        other => panic!("no document {other}"),
    };
    parse_i_json(&read(file)).unwrap()
}

fn digest_of(doc: &Value) -> String {
    sow::terms_digest(doc).unwrap()
}

fn outcome_of(doc: &Value) -> Outcome {
    let bytes = serde_json::to_vec(doc).unwrap();
    match verify_document(&bytes, Some(&digest_of(doc))) {
        Ok(_) => Outcome::Verified,
        Err(e) => e.outcome(),
    }
}

/// `price.schedule[0].per_unit` → `/price/schedule/0/per_unit`.
fn pointer(path: &str) -> String {
    let mut out = String::new();
    for part in path.split('.') {
        match part.split_once('[') {
            Some((name, rest)) => {
                out.push('/');
                out.push_str(name);
                for idx in rest.split('[') {
                    out.push('/');
                    out.push_str(idx.trim_end_matches(']'));
                }
            }
            None => {
                out.push('/');
                out.push_str(part);
            }
        }
    }
    out
}

fn test_signing_key() -> SigningKey {
    let raw = vectors()["nkey"]["test_only_seed_raw_hex"]
        .as_str()
        .unwrap()
        .to_string();
    let bytes: [u8; 32] = hex::decode(raw).unwrap().try_into().unwrap();
    SigningKey::from_bytes(&bytes)
}

#[test]
fn standing_proposal_verifies_with_its_own_digest() {
    let bytes = read("standing-proposal.signed.json");
    let listed = read_text("standing-proposal.digest");
    // The file is already JCS: re-canonicalising changes nothing.
    assert_eq!(canonicalize_bytes(&bytes).unwrap(), bytes);
    assert_eq!(format!("sha256:{}", sha256_hex(&bytes)), listed);
    let v = verify_document(&bytes, Some(&listed)).unwrap();
    assert_eq!(v.digest, listed);
    assert_eq!(v.id.as_deref(), Some("sow_q3n7v2k8r4m6t9p1"));
    assert_eq!(
        v.signer_keys,
        vec!["UBMBH4BK6EIHQFVMHLSABFSQXB3JXUFZOXVZQTIERO33AD4HHAI3D7QP".to_string()]
    );
}

#[test]
fn reformatted_standing_proposal_still_verifies() {
    // The digest is over canonical bytes, so pretty-printing in transit must not matter.
    let pretty = serde_json::to_vec_pretty(&document("b")).unwrap();
    assert_ne!(pretty, read("standing-proposal.signed.json"));
    let listed = read_text("standing-proposal.digest");
    assert!(verify_document(&pretty, Some(&listed)).is_ok());
}

#[test]
fn signed_bytes_match_both_documents() {
    let v = vectors();
    for entry in v["documents"].as_array().unwrap() {
        let doc = document(entry["label"].as_str().unwrap());
        let signed = sow::signed_bytes(doc.as_object().unwrap()).unwrap();
        assert_eq!(
            signed.len() as u64,
            entry["signed_bytes_length"].as_u64().unwrap()
        );
        assert_eq!(
            sha256_hex(&signed),
            entry["signed_bytes_sha256"].as_str().unwrap()
        );
        assert_eq!(
            digest_of(&doc),
            entry["terms_digest"].as_str().unwrap(),
            "terms digest includes id and signatures"
        );
        for record in entry["signature_records"].as_array().unwrap() {
            let mut clean = record.clone();
            clean.as_object_mut().unwrap().remove("expected");
            assert!(sow::verify_signature_record(doc.as_object().unwrap(), &clean).is_ok());
        }
    }
}

#[test]
fn agreed_document_is_not_a_standing_proposal() {
    let bytes = read("agreed-document.signed.json");
    let listed = read_text("agreed-document.digest");
    let err = verify_document(&bytes, Some(&listed)).unwrap_err();
    assert_eq!(err, VerifyError::Shape(ShapeError::ClientSeatFilled));
    assert_eq!(err.outcome(), Outcome::NotStandingProposal);
    assert!(err.to_string().contains("client seat"), "{err}");
}

#[test]
fn standing_proposal_at_the_agreed_digest_is_a_mismatch() {
    // vectors.json: (b) served at card V2's url gives digest_mismatch.
    let bytes = read("standing-proposal.signed.json");
    let listed = read_text("agreed-document.digest");
    let err = verify_document(&bytes, Some(&listed)).unwrap_err();
    assert_eq!(err.outcome(), Outcome::DigestMismatch);
    // An upper-case spelling of the right digest is a mismatch too: compared exactly.
    let upper = read_text("standing-proposal.digest").to_uppercase();
    let err = verify_document(&bytes, Some(&upper)).unwrap_err();
    assert_eq!(err.outcome(), Outcome::DigestMismatch);
    let err = verify_document(&bytes, None).unwrap_err();
    assert_eq!(err.outcome(), Outcome::DigestMismatch);
}

#[test]
fn every_tamper_breaks_the_signature_and_the_digest() {
    let v = vectors();
    let tampers = v["tamper"].as_array().unwrap();
    assert_eq!(tampers.len(), 9);
    for t in tampers {
        let label = t["document"].as_str().unwrap();
        let path = t["path"].as_str().unwrap();
        let mut doc = document(label);
        let original_digest = digest_of(&doc);
        let slot = doc
            .pointer_mut(&pointer(path))
            .unwrap_or_else(|| panic!("{path}"));
        assert_eq!(*slot, t["original"], "{path}");
        *slot = t["tampered"].clone();
        let after = digest_of(&doc);
        assert_eq!(after, t["terms_digest_after"].as_str().unwrap(), "{path}");
        // The card still lists the untampered digest: the served document is refused there.
        let bytes = serde_json::to_vec(&doc).unwrap();
        assert_eq!(
            verify_document(&bytes, Some(&original_digest))
                .unwrap_err()
                .outcome(),
            Outcome::DigestMismatch,
            "{path}"
        );
        // The signature itself no longer verifies.
        let obj = doc.as_object().unwrap();
        let record = &obj["signatures"][0];
        assert!(
            matches!(
                sow::verify_signature_record(obj, record),
                Err(SignatureError::DoesNotVerify { .. })
            ),
            "{path}"
        );
        // Even listed with its new digest, the document does not verify.
        let expected =
            if label == "a" || t.get("expected_standing_proposal_shape") == Some(&json!(false)) {
                Outcome::NotStandingProposal
            } else {
                Outcome::BadSignature
            };
        assert_eq!(outcome_of(&doc), expected, "{path}");
    }
}

#[test]
fn every_encoding_negative_is_bad_signature() {
    let v = vectors();
    let negatives = v["encoding_negatives"].as_array().unwrap();
    assert_eq!(negatives.len(), 5);
    for n in negatives {
        let case = n["case"].as_str().unwrap();
        assert_eq!(n["expected"], json!("bad_signature"), "{case}");
        let mut doc = document("b");
        let record = doc.pointer_mut("/signatures/0").unwrap();
        if let Some(sig) = n.get("sig") {
            record["sig"] = sig.clone();
        }
        if let Some(key) = n.get("key") {
            record["key"] = key.clone();
        }
        if case == "verify_without_prefix" {
            // The same signature over the canonical bytes without the prefix must fail.
            let obj = doc.as_object().unwrap();
            let mut unsigned = obj.clone();
            unsigned.remove("signatures");
            let bare = canonicalize(&Value::Object(unsigned)).unwrap();
            let key = nkey::decode_public(obj["signatures"][0]["key"].as_str().unwrap()).unwrap();
            let sig = obj["signatures"][0]["sig"].as_str().unwrap();
            use base64::Engine;
            let sig: [u8; 64] = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(sig)
                .unwrap()
                .try_into()
                .unwrap();
            let vk = VerifyingKey::from_bytes(&key).unwrap();
            assert!(
                vk.verify_strict(&bare, &Signature::from_bytes(&sig))
                    .is_err()
            );
            let mut prefixed = sow::SOW_SIG_PREFIX.to_vec();
            prefixed.extend(&bare);
            assert!(
                vk.verify_strict(&prefixed, &Signature::from_bytes(&sig))
                    .is_ok()
            );
            continue;
        }
        assert_eq!(outcome_of(&doc), Outcome::BadSignature, "{case}");
        let obj = doc.as_object().unwrap();
        let err = sow::verify_signature_record(obj, &obj["signatures"][0]).unwrap_err();
        let expected_kind = match case {
            "sig_with_padding" | "sig_standard_alphabet" => {
                matches!(err, SignatureError::SigEncoding { .. })
            }
            "sig_first_byte_flipped" => matches!(err, SignatureError::DoesNotVerify { .. }),
            "key_last_char_changed" => {
                matches!(err, SignatureError::Key(NkeyError::BadChecksum { .. }))
            }
            other => panic!("unknown case {other}"),
        };
        assert!(expected_kind, "{case}: {err:?}");
    }
}

#[test]
fn nkey_vector_decodes_and_bad_checksum_is_refused() {
    let v = vectors();
    let key = v["nkey"]["public"].as_str().unwrap();
    let raw = nkey::decode_public(key).unwrap();
    assert_eq!(
        hex::encode(raw),
        v["nkey"]["raw_public_key_hex"].as_str().unwrap()
    );
    assert_eq!(nkey::encode_user_public(&raw), key);
    let other = &v["other_keys"][0];
    assert_eq!(
        hex::encode(nkey::decode_public(other["public"].as_str().unwrap()).unwrap()),
        other["raw_public_key_hex"].as_str().unwrap()
    );
    let mut bytes = key.as_bytes().to_vec();
    bytes[10] = if bytes[10] == b'A' { b'B' } else { b'A' };
    let broken = String::from_utf8(bytes).unwrap();
    assert!(matches!(
        nkey::decode_public(&broken),
        Err(NkeyError::BadChecksum { .. })
    ));
    // The test seed's public half is the signer key.
    assert_eq!(
        nkey::encode_user_public(&test_signing_key().verifying_key().to_bytes()),
        key
    );
}

#[test]
fn signing_with_the_test_seed_reproduces_the_standing_proposal() {
    let mut doc = document("b");
    let signed_at = doc["signatures"][0]["signed_at"]
        .as_str()
        .unwrap()
        .to_string();
    doc.as_object_mut().unwrap().remove("signatures");
    sow::sign_as_provider(&mut doc, &test_signing_key(), &signed_at).unwrap();
    assert_eq!(
        canonicalize(&doc).unwrap(),
        read("standing-proposal.signed.json")
    );
}

#[test]
fn shape_outcomes_unsigned_directed_client_signed_wrong_format_unparseable() {
    let key = test_signing_key();
    let mut unsigned = document("b");
    unsigned.as_object_mut().unwrap().remove("signatures");
    assert_eq!(outcome_of(&unsigned), Outcome::Unsigned);
    let mut empty = document("b");
    empty["signatures"] = json!([]);
    assert_eq!(outcome_of(&empty), Outcome::Unsigned);

    let mut directed = unsigned.clone();
    directed["parties"]["offered_to"] = json!({
        "agent": "UAKQRYZBYFOC65OQZVJ3QPCIERDTRNNZPMOJUYXC3DGPRCDWSKD4HV5A",
        "owner": "Someone", "expires_at": "2026-12-01T00:00:00Z"
    });
    sow::sign_as_provider(&mut directed, &key, "2026-08-11T00:00:00Z").unwrap();
    assert_eq!(outcome_of(&directed), Outcome::DirectedInPublicCard);

    let mut client_signed = document("b");
    let mut client = client_signed["signatures"][0].clone();
    client["role"] = json!("client");
    client_signed["signatures"]
        .as_array_mut()
        .unwrap()
        .push(client);
    assert_eq!(outcome_of(&client_signed), Outcome::NotStandingProposal);

    let mut v2 = unsigned.clone();
    v2["sow"] = json!("v2");
    sow::sign_as_provider(&mut v2, &key, "2026-08-11T00:00:00Z").unwrap();
    assert_eq!(outcome_of(&v2), Outcome::NotStandingProposal);

    let dup = br#"{"sow":"v1","sow":"v1"}"#;
    let err = verify_document(dup, Some("sha256:00")).unwrap_err();
    assert_eq!(err.outcome(), Outcome::Unparseable);
    assert_eq!(
        verify_document(b"<html>", None).unwrap_err().outcome(),
        Outcome::Unparseable
    );
}

fn card_listing(entries: Value, skills: Value, description: &str) -> Value {
    json!({
        "name": "stonework", "description": description, "skills": skills,
        "capabilities": {"extensions": [{
            "uri": "https://agentsow.com/extensions/a2a-terms/v1",
            "required": false,
            "params": {"sow_spec": "0.11.0-draft", "proposals": entries}
        }]}
    })
}

#[test]
fn report_states_no_terms_for_failing_entries_and_never_overclaims() {
    let b = read("standing-proposal.signed.json");
    let digest_b = read_text("standing-proposal.digest");
    let card = card_listing(
        json!([
            {"url": "https://x.example/b.json", "digest": digest_b, "sow": "sow_q3n7v2k8r4m6t9p1", "offering": "reconcile-statement"},
            {"url": "https://x.example/a.json", "digest": read_text("agreed-document.digest"), "offering": "audit"}
        ]),
        json!([{"id": "reconcile-statement", "description": "Reconciles for XCR 2.5 a task"},
               {"id": "forecast", "description": "Forecasts for $40"}]),
        "Books agent.",
    );
    let declaration = locate(&card).unwrap();
    let ok = verify_document(&b, Some(&digest_b)).unwrap();
    let results = vec![
        ProposalResult {
            entry: declaration.entries[0].clone(),
            outcome: Outcome::Verified,
            reason: "ok".into(),
            fetch: None,
            verified: Some(ok),
        },
        ProposalResult::failed(
            declaration.entries[1].clone(),
            verify_document(
                &read("agreed-document.signed.json"),
                declaration.entries[1].digest.as_deref(),
            )
            .unwrap_err(),
            None,
        ),
    ];
    let report = TermsReport::build(&card, declaration, results);
    assert!(!report.all_verified());
    let block = report.record_block();
    let proposals = block["proposals"].as_array().unwrap();
    assert_eq!(proposals[0]["outcome"], json!("verified"));
    assert_eq!(proposals[0]["document_id"], json!("sow_q3n7v2k8r4m6t9p1"));
    assert_eq!(proposals[0]["terms_stated"], json!(true));
    assert_eq!(proposals[1]["outcome"], json!("not_standing_proposal"));
    assert_eq!(proposals[1]["terms_stated"], json!(false));
    assert_eq!(
        proposals[1]["document_id"],
        Value::Null,
        "a failing entry quotes nothing"
    );
    // Findings: `forecast` has no proposal, `$40` is backed by nothing; `XCR 2.5` is backed by
    // the verified 2500000 (smallest unit) and `audit` is not a skill so not a skill finding.
    let kinds: Vec<(String, String)> = block["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap().into(),
                f["detail"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(kinds.len(), 2, "{kinds:?}");
    assert!(kinds[0].0 == "skill_names_no_proposal_offering" && kinds[0].1.contains("forecast"));
    assert!(kinds[1].0 == "price_claim_not_backed_by_a_proposal" && kinds[1].1.contains("$40"));
    let establishes = report.establishes();
    assert_eq!(establishes.len(), 2);
    assert!(establishes[0].contains(&digest_b) && establishes[0].contains("UBMBH4"));
    assert!(establishes[1].contains("did not verify at this walk (not_standing_proposal)"));
    let dne = report.does_not_establish();
    assert!(
        dne.iter()
            .any(|l| l.contains("https://x.example/a.json") && l.contains("states no terms"))
    );
    assert!(dne.iter().any(|l| l.contains("graded enforced")));
    let everything = format!(
        "{block}{establishes:?}{dne:?}{}",
        conduct_walker::terms::summary::render(&report)
    )
    .to_lowercase();
    assert!(
        !everything.contains("certif"),
        "never presented as certification"
    );
}

#[test]
fn unbacked_price_when_nothing_verifies() {
    let card = card_listing(
        json!([{"url": "https://x.example/b.json", "digest": read_text("standing-proposal.digest"), "offering": "reconcile-statement"}]),
        json!([{"id": "reconcile-statement", "description": "XCR 2.5 a task"}]),
        "Books agent.",
    );
    let declaration = locate(&card).unwrap();
    let entry: ProposalEntry = declaration.entries[0].clone();
    let results = vec![ProposalResult::failed(
        entry,
        VerifyError::FetchFailed("fetch failed: gone".into()),
        None,
    )];
    let report = TermsReport::build(&card, declaration, results);
    // XCR is only recognised through a verified proposal; nothing verified, so no claim is
    // detected and no finding invented.
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(
        report.does_not_establish()[0],
        conduct_walker::terms::report::DNE_NO_TERMS
    );
}

#[test]
fn summary_escapes_control_characters_from_documents() {
    let mut doc = document("b");
    doc.as_object_mut().unwrap().remove("signatures");
    doc["parties"]["provider"]["owner"] = json!("Evil\nproposal 2 of 1: forged\u{1b}[2J");
    sow::sign_as_provider(&mut doc, &test_signing_key(), "2026-08-11T00:00:00Z").unwrap();
    let bytes = serde_json::to_vec(&doc).unwrap();
    let digest = digest_of(&doc);
    let card = card_listing(
        json!([{"url": "https://x.example/e.json", "digest": digest}]),
        json!([]),
        "x",
    );
    let declaration = locate(&card).unwrap();
    let results = vec![ProposalResult {
        entry: declaration.entries[0].clone(),
        outcome: Outcome::Verified,
        reason: "ok".into(),
        fetch: None,
        verified: Some(verify_document(&bytes, Some(&digest)).unwrap()),
    }];
    let text =
        conduct_walker::terms::summary::render(&TermsReport::build(&card, declaration, results));
    assert!(
        text.contains("Evil\\nproposal 2 of 1: forged\\u{1b}[2J"),
        "{text}"
    );
    assert!(!text.lines().any(|l| l.starts_with("proposal 2")));
    assert!(!text.contains('\u{1b}'));
}
