//! Making a card signature entry, for sandbox agents, demos and tests: the walker itself never
//! signs cards. The entry is what the SDKs write: the SDK-profile payload, a detached JWS with the
//! protected header encoded exactly as given (member order kept).

use super::jws::{JwsAlg, signing_input};
use super::profile::{CardInvalid, Profile, canonicalize_card};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

#[derive(Debug, thiserror::Error)]
pub enum SignError {
    #[error("cannot canonicalise the card: {0}")]
    Card(#[from] CardInvalid),
    #[error("signing failed: {0}")]
    Crypto(String),
}

/// A signatures entry `{"protected", "signature"}` over the card's `profile` payload.
/// `protected_header_json` is encoded byte for byte, so callers control member order.
pub fn sign_entry(
    card: &Value,
    profile: Profile,
    protected_header_json: &str,
    key: &jsonwebtoken::EncodingKey,
    alg: JwsAlg,
) -> Result<Value, SignError> {
    let payload = canonicalize_card(card, profile)?.bytes;
    let protected = URL_SAFE_NO_PAD.encode(protected_header_json);
    let input = signing_input(&protected, &payload);
    let signature = jsonwebtoken::crypto::sign(&input, key, alg.jwt())
        .map_err(|e| SignError::Crypto(e.to_string()))?;
    Ok(json!({"protected": protected, "signature": signature}))
}

/// The card with `entry` appended to its `signatures` (created when missing).
pub fn with_signature(card: &Value, entry: Value) -> Value {
    let mut card = card.clone();
    if let Value::Object(map) = &mut card {
        match map.get_mut("signatures") {
            Some(Value::Array(items)) => items.push(entry),
            _ => {
                map.insert("signatures".into(), Value::Array(vec![entry]));
            }
        }
    }
    card
}

/// The payload forms a walk record checks (conduct-walk.md §4.3 C.2), for signing test cards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkForm {
    /// RFC 8785 of the served card without `signatures` (how the reference signs).
    ServedRfc8785,
    /// The a2a-sdk 1.3.0 form (the SDK profile).
    SdkProto,
}

/// An ES256 signatures entry over `form` of `card` (its `signatures` member left out).
pub fn sign_es256_entry(
    card: &Value,
    form: WalkForm,
    protected_header_json: &str,
    key: &p256::ecdsa::SigningKey,
) -> Result<Value, SignError> {
    use p256::ecdsa::signature::Signer;
    let payload = match form {
        WalkForm::ServedRfc8785 => {
            let bytes = serde_json::to_vec(card).map_err(|e| SignError::Crypto(e.to_string()))?;
            let doc = crate::json::read(&bytes, crate::json::ReadOptions::LENIENT)
                .map_err(|e| SignError::Crypto(e.to_string()))?;
            super::served_form::served_rfc8785_without_signatures(doc.root())
                .map_err(|why| SignError::Crypto(why.reason().to_string()))?
                .into_bytes()
        }
        WalkForm::SdkProto => canonicalize_card(card, Profile::Sdk)?.bytes,
    };
    let protected = URL_SAFE_NO_PAD.encode(protected_header_json);
    let input = signing_input(&protected, &payload);
    let signature: p256::ecdsa::Signature = key.sign(&input);
    Ok(json!({"protected": protected, "signature": URL_SAFE_NO_PAD.encode(signature.to_bytes())}))
}

/// The public JWK of a P-256 key, as a JWKS serves it.
pub fn es256_public_jwk(key: &p256::ecdsa::SigningKey, kid: &str) -> Value {
    let point = key.verifying_key().to_sec1_point(false);
    json!({
        "kty": "EC",
        "crv": "P-256",
        "alg": "ES256",
        "use": "sig",
        "kid": kid,
        "x": URL_SAFE_NO_PAD.encode(point.x().expect("uncompressed point")),
        "y": URL_SAFE_NO_PAD.encode(point.y().expect("uncompressed point")),
    })
}
