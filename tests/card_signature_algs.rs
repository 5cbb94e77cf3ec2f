//! Every supported algorithm end to end (fresh keys: rcgen for ECDSA and RSA, ed25519-dalek for
//! EdDSA; signing through the library's `signing::sign_entry`), and the header refusals of
//! card-signature-and-terms.md §4.3 as whole-card results.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use conduct_walker::card_signature::{
    self, JwsAlg, Profile, SignatureStatus, TrustStore, signing::sign_entry,
    signing::with_signature,
};
use jsonwebtoken::EncodingKey;
use serde_json::{Value, json};

const ORIGIN: &str = "https://agent.example";
const NOW: i64 = 1_796_083_200;

fn card() -> Value {
    json!({"name": "Alg Agent", "description": "d", "version": "1",
        "supportedInterfaces": [{"url": "https://agent.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "provider": {"organization": "Example Org", "url": "https://agent.example"},
        "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "S", "description": "D", "tags": ["t"]}]})
}

/// One DER TLV: (tag, content, rest).
fn der(input: &[u8]) -> (u8, &[u8], &[u8]) {
    let tag = input[0];
    let (len, header) = match input[1] {
        l if l < 0x80 => (l as usize, 2),
        l => {
            let n = (l & 0x7f) as usize;
            let len = input[2..2 + n]
                .iter()
                .fold(0usize, |acc, b| (acc << 8) | *b as usize);
            (len, 2 + n)
        }
    };
    (tag, &input[header..header + len], &input[header + len..])
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A fresh key for `alg`: its public JWK (with `kid`) and a jsonwebtoken signing key.
fn keypair(alg: JwsAlg, kid: &str) -> (Value, EncodingKey) {
    match alg {
        JwsAlg::EdDSA => {
            use ed25519_dalek::pkcs8::EncodePrivateKey;
            let key = ed25519_dalek::SigningKey::from_bytes(&rand::random::<[u8; 32]>());
            let jwk = json!({"kty": "OKP", "crv": "Ed25519", "kid": kid,
                "x": b64(key.verifying_key().as_bytes())});
            let der = key.to_pkcs8_der().unwrap();
            (jwk, EncodingKey::from_ed_der(der.as_bytes()))
        }
        JwsAlg::ES256 | JwsAlg::ES384 => {
            let (rc_alg, crv, n) = if alg == JwsAlg::ES256 {
                (&rcgen::PKCS_ECDSA_P256_SHA256, "P-256", 32)
            } else {
                (&rcgen::PKCS_ECDSA_P384_SHA384, "P-384", 48)
            };
            let kp = rcgen::KeyPair::generate_for(rc_alg).unwrap();
            let point = kp.public_key_raw();
            assert_eq!(point[0], 4);
            let jwk = json!({"kty": "EC", "crv": crv, "kid": kid,
                "x": b64(&point[1..1 + n]), "y": b64(&point[1 + n..])});
            (jwk, EncodingKey::from_ec_der(&kp.serialize_der()))
        }
        _ => {
            let kp =
                rcgen::KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, rcgen::RsaKeySize::_2048)
                    .unwrap();
            // PKCS#1 RSAPublicKey: SEQUENCE { n INTEGER, e INTEGER }.
            let (_, seq, _) = der(kp.public_key_raw());
            let (_, n, rest) = der(seq);
            let (_, e, _) = der(rest);
            let n = &n[n.iter().take_while(|b| **b == 0).count()..];
            let jwk = json!({"kty": "RSA", "kid": kid, "n": b64(n), "e": b64(e)});
            // PKCS#8 PrivateKeyInfo: SEQUENCE { version, algorithm, OCTET STRING (PKCS#1) }.
            let pkcs8 = kp.serialize_der();
            let (_, info, _) = der(&pkcs8);
            let (_, _, rest) = der(info);
            let (_, _, rest) = der(rest);
            let (tag, pkcs1, _) = der(rest);
            assert_eq!(tag, 0x04);
            (jwk, EncodingKey::from_rsa_der(pkcs1))
        }
    }
}

fn header(alg: &str, kid: &str) -> String {
    format!(r#"{{"alg":"{alg}","typ":"JOSE","kid":"{kid}"}}"#)
}

#[tokio::test]
async fn every_supported_algorithm_verifies_and_detects_tampering() {
    let rsa = keypair(JwsAlg::RS256, "rsa-1");
    let algs = [
        JwsAlg::ES256,
        JwsAlg::ES384,
        JwsAlg::RS256,
        JwsAlg::RS384,
        JwsAlg::RS512,
        JwsAlg::PS256,
        JwsAlg::PS384,
        JwsAlg::PS512,
        JwsAlg::EdDSA,
    ];
    for alg in algs {
        let kid = format!("{}-1", alg.name());
        // One RSA key serves every RS/PS alg (RSA keygen is the slow part).
        let (mut jwk, key) = if alg.is_rsa() {
            (rsa.0.clone(), rsa.1.clone())
        } else {
            keypair(alg, &kid)
        };
        jwk["kid"] = json!(kid);
        let entry =
            sign_entry(&card(), Profile::Sdk, &header(alg.name(), &kid), &key, alg).unwrap();
        let signed = with_signature(&card(), entry);
        let mut trust = TrustStore::default();
        trust.pin_jwks(ORIGIN, &json!({"keys": [jwk]})).unwrap();
        let r = card_signature::verify_card_at(&signed, ORIGIN, None, &trust, NOW).await;
        assert!(r.valid, "{}: {:?}", alg.name(), r.signatures);
        assert_eq!(r.signatures[0].profile, Some(Profile::Sdk));
        assert!(r.signatures[0].key_thumbprint.is_some());

        let mut tampered = signed.clone();
        tampered["provider"]["organization"] = json!("Someone Else");
        let r = card_signature::verify_card_at(&tampered, ORIGIN, None, &trust, NOW).await;
        assert!(!r.valid, "{}", alg.name());
        assert_eq!(
            r.signatures[0].status,
            SignatureStatus::Invalid,
            "{}",
            alg.name()
        );
    }
}

#[tokio::test]
async fn ed25519_is_accepted_as_an_alg_name_for_eddsa() {
    let (jwk, key) = keypair(JwsAlg::EdDSA, "ed");
    let entry = sign_entry(
        &card(),
        Profile::Sdk,
        &header("Ed25519", "ed"),
        &key,
        JwsAlg::EdDSA,
    )
    .unwrap();
    let mut trust = TrustStore::default();
    trust.pin_jwks(ORIGIN, &json!({"keys": [jwk]})).unwrap();
    let r =
        card_signature::verify_card_at(&with_signature(&card(), entry), ORIGIN, None, &trust, NOW)
            .await;
    assert!(r.valid, "{:?}", r.signatures);
    assert_eq!(r.signatures[0].alg.as_deref(), Some("Ed25519"));
}

#[tokio::test]
async fn a_signature_over_a_fallback_payload_is_named_by_its_profile() {
    let (jwk, key) = keypair(JwsAlg::EdDSA, "ed");
    let mut c = card();
    // required:false and an unknown member: inside the js-1.0.0 payload, outside the SDK one.
    c["capabilities"]["extensions"] = json!([{"uri": "urn:x", "required": false}]);
    c["url"] = json!("https://legacy.example");
    let mut trust = TrustStore::default();
    trust.pin_jwks(ORIGIN, &json!({"keys": [jwk]})).unwrap();
    for profile in [Profile::SpecLiteral, Profile::PythonLegacy, Profile::Js100] {
        let mut c = c.clone();
        // Make the payloads differ from the SDK profile's for every fallback.
        c["documentationUrl"] = json!("");
        c["name"] = json!("Agent é");
        let entry = sign_entry(&c, profile, &header("EdDSA", "ed"), &key, JwsAlg::EdDSA).unwrap();
        let signed = with_signature(&c, entry);
        let r = card_signature::verify_card_at(&signed, ORIGIN, None, &trust, NOW).await;
        assert!(r.valid, "{profile:?}: {:?}", r.signatures);
        assert_eq!(r.profile, Some(profile));
        let block = r.record_block(false);
        assert_eq!(block["profile"], profile.name());
        assert!(
            block["verified_reason"]
                .as_str()
                .unwrap()
                .contains(profile.description())
        );
        if profile == Profile::Js100 {
            // js-1.0.0 covers the unknown member; nothing but empties is uncovered.
            assert!(
                r.uncovered.iter().all(|u| u.why.code() == "empty"),
                "{:?}",
                r.uncovered
            );
        }
    }
}

fn raw_entry(header: &str) -> Value {
    json!({"protected": URL_SAFE_NO_PAD.encode(header), "signature": URL_SAFE_NO_PAD.encode([7u8; 64])})
}

#[tokio::test]
async fn refused_and_malformed_entries() {
    let mut trust = TrustStore::default();
    let (jwk, _) = keypair(JwsAlg::EdDSA, "k");
    trust.pin_jwks(ORIGIN, &json!({"keys": [jwk]})).unwrap();
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            raw_entry(r#"{"alg":"none","typ":"JOSE","kid":"k"}"#),
            "refused",
            "alg none",
        ),
        (
            raw_entry(r#"{"alg":"HS256","typ":"JOSE","kid":"k"}"#),
            "refused",
            "shared-secret",
        ),
        (
            raw_entry(r#"{"alg":"HS512","typ":"JOSE","kid":"k"}"#),
            "refused",
            "shared-secret",
        ),
        (
            raw_entry(r#"{"alg":"ES512","typ":"JOSE","kid":"k"}"#),
            "refused",
            "not supported",
        ),
        (
            raw_entry(r#"{"alg":"EdDSA","typ":"JOSE"}"#),
            "refused",
            "no kid",
        ),
        (
            raw_entry(r#"{"typ":"JOSE","kid":"k"}"#),
            "refused",
            "no alg",
        ),
        (
            raw_entry(r#"{"alg":"EdDSA","typ":"JOSE","kid":"k","b64":false,"crit":["b64"]}"#),
            "refused",
            "b64 is false",
        ),
        (
            raw_entry(r#"{"alg":"EdDSA","typ":"JOSE","kid":"k","crit":["urn:x"],"urn:x":1}"#),
            "refused",
            "does not understand",
        ),
        (
            raw_entry(r#"{"alg":"EdDSA","typ":"JOSE","kid":"k","crit":"b64"}"#),
            "malformed",
            "crit is malformed",
        ),
        (json!("just a string"), "malformed", "not an object"),
        (json!({"signature": "AAAA"}), "malformed", "no protected"),
        (raw_entry("[1]"), "malformed", "not a JSON object"),
        (
            json!({"protected": URL_SAFE_NO_PAD.encode(r#"{"alg":"EdDSA","kid":"k"}"#),
                "signature": "AAAA", "header": {"kid": "other"}}),
            "malformed",
            "both the protected and the unprotected header",
        ),
        (
            json!({"protected": URL_SAFE_NO_PAD.encode(r#"{"alg":"EdDSA","kid":"k"}"#),
                "signature": "AA+/"}),
            "malformed",
            "signature is not unpadded base64url",
        ),
        // Readable and keyed, but 64 bytes of 7s is no Ed25519 signature of this card.
        (
            raw_entry(r#"{"alg":"EdDSA","typ":"JOSE","kid":"k"}"#),
            "invalid",
            "does not verify",
        ),
        // A 63-byte signature cannot be Ed25519.
        (
            json!({"protected": URL_SAFE_NO_PAD.encode(r#"{"alg":"EdDSA","typ":"JOSE","kid":"k"}"#),
                "signature": URL_SAFE_NO_PAD.encode([7u8; 63])}),
            "invalid",
            "63 bytes",
        ),
    ];
    for (entry, code, why) in cases {
        let signed = with_signature(&card(), entry.clone());
        let r = card_signature::verify_card_at(&signed, ORIGIN, None, &trust, NOW).await;
        assert!(!r.valid);
        let s = &r.signatures[0];
        assert_eq!(s.status.code(), code, "{entry}: {}", s.reason);
        assert!(
            s.reason.contains(why),
            "{entry}: {:?} lacks {why:?}",
            s.reason
        );
    }
}

#[tokio::test]
async fn only_the_first_sixteen_entries_are_checked() {
    let (jwk, key) = keypair(JwsAlg::EdDSA, "k");
    let good = sign_entry(
        &card(),
        Profile::Sdk,
        &header("EdDSA", "k"),
        &key,
        JwsAlg::EdDSA,
    )
    .unwrap();
    let mut c = card();
    let mut entries = vec![raw_entry(r#"{"alg":"none","kid":"k"}"#); 16];
    entries.push(good);
    c["signatures"] = Value::Array(entries);
    let mut trust = TrustStore::default();
    trust.pin_jwks(ORIGIN, &json!({"keys": [jwk]})).unwrap();
    let r = card_signature::verify_card_at(&c, ORIGIN, None, &trust, NOW).await;
    assert!(!r.valid);
    assert_eq!(r.signatures[16].status, SignatureStatus::NotChecked);
}

#[tokio::test]
async fn small_rsa_keys_and_key_metadata_are_refused() {
    let (rsa_jwk, rsa_key) = keypair(JwsAlg::RS256, "r");
    let entry = sign_entry(
        &card(),
        Profile::Sdk,
        &header("RS256", "r"),
        &rsa_key,
        JwsAlg::RS256,
    )
    .unwrap();
    let signed = with_signature(&card(), entry);
    let check = |jwk: Value| {
        let signed = signed.clone();
        async move {
            let mut trust = TrustStore::default();
            trust.pin_jwks(ORIGIN, &json!({"keys": [jwk]})).unwrap();
            card_signature::verify_card_at(&signed, ORIGIN, None, &trust, NOW)
                .await
                .signatures[0]
                .clone()
        }
    };
    assert_eq!(check(rsa_jwk.clone()).await.status, SignatureStatus::Valid);
    let mut small = rsa_jwk.clone();
    small["n"] = json!(b64(&[0xc5u8; 128]));
    let s = check(small).await;
    assert_eq!(s.status, SignatureStatus::KeyUnusable);
    assert!(s.reason.contains("1024 bits"), "{}", s.reason);
    let mut enc = rsa_jwk.clone();
    enc["use"] = json!("enc");
    assert_eq!(check(enc).await.status, SignatureStatus::KeyUnusable);
    let mut ops = rsa_jwk.clone();
    ops["key_ops"] = json!(["encrypt"]);
    assert_eq!(check(ops).await.status, SignatureStatus::KeyUnusable);
    let mut other_alg = rsa_jwk.clone();
    other_alg["alg"] = json!("PS256");
    let s = check(other_alg).await;
    assert_eq!(s.status, SignatureStatus::KeyUnusable);
    assert!(s.reason.contains("the key is for alg"), "{}", s.reason);
    let mut matching_alg = rsa_jwk;
    matching_alg["alg"] = json!("RS256");
    matching_alg["use"] = json!("sig");
    assert_eq!(check(matching_alg).await.status, SignatureStatus::Valid);
}
