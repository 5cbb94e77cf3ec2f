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
