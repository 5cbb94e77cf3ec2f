//! Agent SoW documents: the terms digest, the signed bytes, provider signatures and the
//! standing-proposal shape (spec §5.2–§5.5).
//!
//! Three byte strings exist over one document and they must never be confused (spec §5.3):
//! the id recipe (not used here), the signed bytes ([`signed_bytes`]: prefix + JCS without
//! `signatures`) and the terms digest ([`terms_digest`]: JCS of everything, no prefix).

use super::nkey::{self, NkeyError};
use crate::digest::sha256_hex;
use crate::jcs::{JcsError, canonicalize};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde_json::{Map, Value};

/// Prefix of the signed bytes (Agent SoW §6; `SOW_SIG_PREFIX` in both reference SDKs).
pub const SOW_SIG_PREFIX: &[u8] = b"agent-sow-v1\n";
/// The document format marker a v1 Agent SoW carries.
pub const SOW_FORMAT_V1: &str = "v1";
/// The role of the selling owner's signature.
pub const ROLE_PROVIDER: &str = "provider";
/// The role of the counterparty's signature.
pub const ROLE_CLIENT: &str = "client";

/// `"sha256:" + lower-case hex SHA-256(JCS(whole document))`: what a card's `digest` commits to
/// (terms extension §5). Nothing is removed, `id` and `signatures` included.
pub fn terms_digest(document: &Value) -> Result<String, JcsError> {
    Ok(format!("sha256:{}", sha256_hex(canonicalize(document)?)))
}

/// `"agent-sow-v1\n" + JCS(document without "signatures")` (Agent SoW §6).
pub fn signed_bytes(document: &Map<String, Value>) -> Result<Vec<u8>, JcsError> {
    let mut unsigned = document.clone();
    unsigned.remove("signatures");
    let mut out = SOW_SIG_PREFIX.to_vec();
    out.extend(canonicalize(&Value::Object(unsigned))?);
    Ok(out)
}

/// Why one signature record did not verify.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("signature record is not an object")]
    NotAnObject,
    #[error("signature record has no string {0:?}")]
    MissingField(&'static str),
    #[error("signature key: {0}")]
    Key(#[from] NkeyError),
    #[error("signature key {key:?} is not a usable Ed25519 public key (weak or not a curve point)")]
    UnusableKey { key: String },
    #[error("sig {sig:?} is not base64url without padding: {why}")]
    SigEncoding { sig: String, why: String },
    #[error("sig decodes to {0} bytes; an Ed25519 signature is 64")]
    SigLength(usize),
    #[error("Ed25519 signature by {key} does not verify over the document's signed bytes")]
    DoesNotVerify { key: String },
    #[error("the document cannot be canonicalised: {0}")]
    Canonical(#[from] JcsError),
}

/// Verify one `signatures[]` record over the document's signed bytes. Returns the signer key.
///
/// `verify_strict` is used: it additionally refuses small-order keys and non-canonical
/// signatures, for which a "valid" signature would prove nothing about who signed.
pub fn verify_signature_record(
    document: &Map<String, Value>,
    record: &Value,
) -> Result<String, SignatureError> {
    let record = record.as_object().ok_or(SignatureError::NotAnObject)?;
    let field = |name: &'static str| {
        record
            .get(name)
            .and_then(Value::as_str)
            .ok_or(SignatureError::MissingField(name))
    };
    let key = field("key")?;
    let sig = field("sig")?;
    let raw_key = nkey::decode_public(key)?;
    let verifying =
        VerifyingKey::from_bytes(&raw_key).map_err(|_| SignatureError::UnusableKey {
            key: key.to_string(),
        })?;
    if verifying.is_weak() {
        return Err(SignatureError::UnusableKey {
            key: key.to_string(),
        });
    }
    // URL_SAFE_NO_PAD refuses '=' padding and the '+' '/' alphabet: the reference SDK decodes
    // exactly this way, so anything else would verify here and fail there.
    let sig_bytes = URL_SAFE_NO_PAD
        .decode(sig)
        .map_err(|e| SignatureError::SigEncoding {
            sig: sig.to_string(),
            why: e.to_string(),
        })?;
    let sig_array: [u8; 64] = sig_bytes
        .as_slice()
        .try_into()
        .map_err(|_| SignatureError::SigLength(sig_bytes.len()))?;
    let signature = Signature::from_bytes(&sig_array);
    let message = signed_bytes(document)?;
    verifying
        .verify_strict(&message, &signature)
        .map_err(|_| SignatureError::DoesNotVerify {
            key: key.to_string(),
        })?;
    Ok(key.to_string())
}

/// Why a document is not a standing proposal that can be listed in a public card.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ShapeError {
    #[error("the document is not a JSON object")]
    NotAnObject,
    #[error("format marker \"sow\" is {found}, not \"v1\"")]
    WrongFormat { found: String },
    #[error("parties is missing or not an object")]
    NoParties,
    #[error(
        "parties.client is filled: a standing proposal leaves the client seat null (this is an agreed or directed document, not an open offer)"
    )]
    ClientSeatFilled,
    #[error(
        "a client signature is present: a standing proposal carries the selling owner's signature only"
    )]
    ClientSigned,
    #[error(
        "parties.offered_to names a counterparty: a directed standing proposal is an offer to one party and must not be listed in a public card"
    )]
    Directed,
    #[error("{0}")]
    Unsigned(&'static str),
}

/// Shape checks of spec §5.7 step 4, in order. Returns the document object and its provider
/// signature records when the document is an open standing proposal.
pub fn check_standing_shape(
    document: &Value,
) -> Result<(&Map<String, Value>, Vec<&Value>), ShapeError> {
    let doc = document.as_object().ok_or(ShapeError::NotAnObject)?;
    match doc.get("sow") {
        Some(Value::String(s)) if s == SOW_FORMAT_V1 => {}
        Some(other) => {
            return Err(ShapeError::WrongFormat {
                found: other.to_string(),
            });
        }
        None => {
            return Err(ShapeError::WrongFormat {
                found: "absent".into(),
            });
        }
    }
    let parties = doc
        .get("parties")
        .and_then(Value::as_object)
        .ok_or(ShapeError::NoParties)?;
    // Blank is `null` in the reference fixture; an absent seat is blank too (spec §5.7 step 4).
    if !matches!(parties.get("client"), None | Some(Value::Null)) {
        return Err(ShapeError::ClientSeatFilled);
    }
    let signatures: &[Value] = match doc.get("signatures") {
        Some(Value::Array(items)) => items,
        // Not an array: no readable signature at all, reported as unsigned after the checks
        // that say what kind of document this is.
        _ => &[],
    };
    let role = |v: &Value| v.get("role").and_then(Value::as_str).map(str::to_owned);
    if signatures
        .iter()
        .any(|s| role(s).as_deref() == Some(ROLE_CLIENT))
    {
        return Err(ShapeError::ClientSigned);
    }
    // Present at all (even null) counts as directed: the field only exists to name a party.
    if parties.contains_key("offered_to") {
        return Err(ShapeError::Directed);
    }
    let provider: Vec<&Value> = signatures
        .iter()
        .filter(|s| role(s).as_deref() == Some(ROLE_PROVIDER))
        .collect();
    if provider.is_empty() {
        return Err(ShapeError::Unsigned(
            if !matches!(
                doc.get("signatures"),
                None | Some(Value::Null) | Some(Value::Array(_))
            ) {
                "signatures is not an array: no signature can be read"
            } else if signatures.is_empty() {
                "no signatures: an unsigned document is a template, not terms"
            } else {
                "no signature has role \"provider\": the selling owner has not signed"
            },
        ));
    }
    Ok((doc, provider))
}

/// Sign a document as its provider: replaces any existing provider signature and appends the
/// new record, as the reference SDK's `sign_sow` does. For fixtures and sandbox agents.
pub fn sign_as_provider(
    document: &mut Value,
    key: &SigningKey,
    signed_at: &str,
) -> Result<(), JcsError> {
    let Some(doc) = document.as_object_mut() else {
        return Err(JcsError::Serialize("document is not an object".into()));
    };
    let message = signed_bytes(doc)?;
    let sig = URL_SAFE_NO_PAD.encode(key.sign(&message).to_bytes());
    let record = serde_json::json!({
        "role": ROLE_PROVIDER,
        "key": nkey::encode_user_public(&key.verifying_key().to_bytes()),
        "signed_at": signed_at,
        "sig": sig,
    });
    let signatures = doc
        .entry("signatures")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !signatures.is_array() {
        *signatures = Value::Array(Vec::new());
    }
    let list = signatures.as_array_mut().expect("just made an array");
    list.retain(|s| s.get("role").and_then(Value::as_str) != Some(ROLE_PROVIDER));
    list.push(record);
    Ok(())
}
