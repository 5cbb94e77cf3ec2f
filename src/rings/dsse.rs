//! DSSE envelopes over ring Statements (rings.md §8.3): PAE, ES256 (raw `r‖s`) with a JWKS key
//! picked by `kid`, and the Statement's subject against the ring file.
//!
//! Each step is a named check with its reason, so a changed byte anywhere says which check it
//! broke. ECDSA signatures are randomised: they are verified, never reproduced.

use super::spec;
use crate::digest::sha256_hex;
use crate::json::{Doc, JsonRef, ReadOptions, read};
use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};

const ANY_PADDING: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, ANY_PADDING);
const STANDARD: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, ANY_PADDING);

/// base64url or standard base64, padded or not (the DSSE spec allows either alphabet). Unused
/// trailing bits must be zero, so one text decodes to one byte string only.
pub fn decode_b64(text: &str) -> Result<Vec<u8>, String> {
    let engine = if text.contains(['+', '/']) {
        &STANDARD
    } else {
        &URL_SAFE
    };
    engine.decode(text).map_err(|e| format!("not base64: {e}"))
}

/// base64url without padding (what the envelope writes).
pub fn encode_b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// DSSE's pre-authentication encoding: `DSSEv1 <len(type)> <type> <len(payload)> <payload>`.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// A signing key from a JWKS.
#[derive(Debug, Clone)]
pub struct Jwk {
    pub kid: Option<String>,
    pub key: VerifyingKey,
}

/// The ES256 (P-256) keys of a JWKS; the keys that are not are named in the second list.
pub fn parse_jwks(bytes: &[u8]) -> Result<(Vec<Jwk>, Vec<String>), String> {
    let doc =
        read(bytes, ReadOptions::LENIENT).map_err(|e| format!("the JWKS is not JSON: {e}"))?;
    let keys = doc
        .root()
        .get("keys")
        .and_then(|k| k.as_array())
        .ok_or("the JWKS has no \"keys\" array")?;
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let kid = k.get("kid").and_then(|v| v.as_str()).map(str::to_owned);
        match jwk_key(k) {
            Ok(key) => out.push(Jwk { kid, key }),
            Err(why) => skipped.push(format!(
                "key {i} ({}): {why}",
                kid.as_deref().unwrap_or("no kid")
            )),
        }
    }
    Ok((out, skipped))
}

fn jwk_key(k: JsonRef<'_>) -> Result<VerifyingKey, String> {
    let s = |name: &str| k.get(name).and_then(|v| v.as_str());
    if s("kty") != Some("EC") || s("crv") != Some("P-256") {
        return Err("not an EC P-256 key".into());
    }
    let coordinate = |name: &str| -> Result<Vec<u8>, String> {
        let bytes = decode_b64(s(name).ok_or(format!("no {name}"))?)?;
        if bytes.len() != 32 {
            return Err(format!("{name} is {} bytes, not 32", bytes.len()));
        }
        Ok(bytes)
    };
    let mut sec1 = vec![0x04];
    sec1.extend(coordinate("x")?);
    sec1.extend(coordinate("y")?);
    VerifyingKey::from_sec1_bytes(&sec1).map_err(|_| "x, y is not a point of P-256".into())
}

/// One check of §8.3 and how it went.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    pub detail: String,
}

/// What verifying an envelope found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    pub checks: Vec<Check>,
    /// The Statement (the decoded payload), when it decoded.
    #[serde(skip)]
    pub statement: Option<Vec<u8>>,
    pub subject_name: Option<String>,
    pub subject_sha256: Option<String>,
    pub keyid: Option<String>,
}

impl Report {
    /// Every check passed.
    pub fn verified(&self) -> bool {
        !self.checks.is_empty() && self.checks.iter().all(|c| c.ok)
    }

    /// The first failed check.
    pub fn failure(&self) -> Option<&Check> {
        self.checks.iter().find(|c| !c.ok)
    }

    fn pass(&mut self, name: &'static str, detail: impl Into<String>) {
        self.checks.push(Check {
            name,
            ok: true,
            detail: detail.into(),
        });
    }

    fn fail(mut self, name: &'static str, detail: impl Into<String>) -> Report {
        self.checks.push(Check {
            name,
            ok: false,
            detail: detail.into(),
        });
        self
    }
}

/// Verify an envelope with the keys of a JWKS and, when given, the ring it is about (its bytes
/// and its v1 keys). Stops at the first failed check, which carries the reason.
pub fn verify(envelope: &[u8], jwks: &[Jwk], ring: Option<&[u8]>) -> Report {
    let mut r = Report::default();
    let env = match read(envelope, ReadOptions::LENIENT) {
        Ok(d) if d.root().is_object() => d,
        Ok(_) => return r.fail("envelope", "not a JSON object"),
        Err(e) => return r.fail("envelope", format!("not JSON: {e}")),
    };
    let e = env.root();
    let text = |k: &str| e.get(k).and_then(|v| v.as_str());
    match text("payloadType") {
        Some(spec::PAYLOAD_TYPE) => r.pass("payload_type", spec::PAYLOAD_TYPE),
        Some(other) => {
            return r.fail(
                "payload_type",
                format!("{other:?}, not {}", spec::PAYLOAD_TYPE),
            );
        }
        None => return r.fail("payload_type", "no payloadType string"),
    }
    let payload = match text("payload").map(decode_b64) {
        Some(Ok(p)) => p,
        Some(Err(why)) => return r.fail("payload", why),
        None => return r.fail("payload", "no payload string"),
    };
    r.pass("payload", format!("{} bytes", payload.len()));
    if let Err(why) = signature(&mut r, e, jwks, &payload) {
        return r.fail("signature", why);
    }
    let statement = match read(&payload, ReadOptions::LENIENT) {
        Ok(d) if d.root().is_object() => d,
        _ => return r.fail("statement", "the payload is not a JSON object"),
    };
    r.statement = Some(payload);
    if let Err(why) = statement_checks(&mut r, &statement) {
        return r.fail("statement", why);
    }
    match ring {
        None => r,
        Some(ring) => ring_checks(r, &statement, ring),
    }
}

/// Any signature whose `keyid` names a key of the JWKS verifies over the PAE.
fn signature(r: &mut Report, e: JsonRef<'_>, jwks: &[Jwk], payload: &[u8]) -> Result<(), String> {
    let sigs = e
        .get("signatures")
        .and_then(|s| s.as_array())
        .filter(|s| !s.is_empty())
        .ok_or("no signatures")?;
    let signed = pae(spec::PAYLOAD_TYPE, payload);
    let mut why = Vec::new();
    for (i, s) in sigs.iter().enumerate() {
        let Some(keyid) = s.get("keyid").and_then(|k| k.as_str()) else {
            why.push(format!("signature {i}: no keyid"));
            continue;
        };
        let Some(key) = jwks.iter().find(|k| k.kid.as_deref() == Some(keyid)) else {
            why.push(format!(
                "signature {i}: no key with kid {keyid:?} in the JWKS"
            ));
            continue;
        };
        let raw = match s.get("sig").and_then(|v| v.as_str()).map(decode_b64) {
            Some(Ok(raw)) => raw,
            Some(Err(e)) => {
                why.push(format!("signature {i}: sig {e}"));
                continue;
            }
            None => {
                why.push(format!("signature {i}: no sig"));
                continue;
            }
        };
        if raw.len() != 64 {
            why.push(format!(
                "signature {i}: {} bytes, not the 64 of r‖s",
                raw.len()
            ));
            continue;
        }
        let ok = Signature::from_slice(&raw)
            .map(|sig| key.key.verify(&signed, &sig).is_ok())
            .unwrap_or(false);
        if ok {
            r.keyid = Some(keyid.to_string());
            r.pass(
                "signature",
                format!("ES256 with kid {keyid:?} over the PAE"),
            );
            return Ok(());
        }
        why.push(format!(
            "signature {i} (kid {keyid:?}) does not verify over the PAE"
        ));
    }
    Err(why.join("; "))
}

/// `_type`, `predicateType`, and the subject digest equal to `predicate.ring_sha256`.
fn statement_checks(r: &mut Report, statement: &Doc) -> Result<(), String> {
    let s = statement.root();
    let text = |v: Option<JsonRef<'_>>| v.and_then(|v| v.as_str()).map(str::to_owned);
    if text(s.get("_type")).as_deref() != Some(spec::STATEMENT_TYPE) {
        return Err(format!("_type is not {}", spec::STATEMENT_TYPE));
    }
    if text(s.get("predicateType")).as_deref() != Some(spec::PREDICATE_TYPE) {
        return Err(format!("predicateType is not {}", spec::PREDICATE_TYPE));
    }
    let subject = s
        .get("subject")
        .and_then(|v| v.as_array())
        .and_then(|a| a.first())
        .ok_or("no subject")?;
    let digest = text(subject.get("digest").and_then(|d| d.get("sha256")))
        .ok_or("the subject has no sha256 digest")?;
    let named = text(s.get("predicate").and_then(|p| p.get("ring_sha256")));
    if named.as_deref() != Some(digest.as_str()) {
        return Err(format!(
            "predicate.ring_sha256 {} is not the subject digest {digest}",
            named.as_deref().unwrap_or("(none)")
        ));
    }
    r.subject_name = text(subject.get("name"));
    r.subject_sha256 = Some(digest.clone());
    r.pass("statement", format!("in-toto Statement v1 about {digest}"));
    Ok(())
}

/// sha256(ring) = the subject digest, and the ring's v1 keys equal `ring_counts`.
fn ring_checks(mut r: Report, statement: &Doc, ring: &[u8]) -> Report {
    let sha = sha256_hex(ring);
    if r.subject_sha256.as_deref() != Some(sha.as_str()) {
        let named = r.subject_sha256.clone().unwrap_or_else(|| "(none)".into());
        return r.fail(
            "ring_digest",
            format!("the ring's sha256 is {sha}, the Statement names {named}"),
        );
    }
    r.pass("ring_digest", format!("sha256 {sha}"));
    let doc = match read(ring, ReadOptions::LENIENT) {
        Ok(d) if d.root().is_object() => d,
        _ => return r.fail("ring_counts", "the ring is not a JSON object"),
    };
    let counts = statement
        .root()
        .get("predicate")
        .and_then(|p| p.get("ring_counts"))
        .filter(|c| c.is_object());
    let Some(counts) = counts else {
        return r.fail("ring_counts", "the Statement has no ring_counts object");
    };
    let ours = doc.root();
    for key in spec::V1_KEYS {
        let (a, b) = (ours.get(key), counts.get(key));
        if a.map(|v| v.canonical_string()) != b.map(|v| v.canonical_string()) {
            return r.fail(
                "ring_counts",
                format!(
                    "{key} differs: the ring has {}, the Statement {}",
                    show(a),
                    show(b)
                ),
            );
        }
    }
    if let Some(extra) = counts
        .as_object()
        .and_then(|o| o.keys().find(|k| !spec::V1_KEYS.contains(k)))
    {
        return r.fail(
            "ring_counts",
            format!("the Statement copies {extra:?}, not a v1 key"),
        );
    }
    r.pass("ring_counts", "the ring's v1 keys equal ring_counts");
    r
}

fn show(v: Option<JsonRef<'_>>) -> String {
    v.map_or_else(
        || "nothing".into(),
        |v| super::compare::clip(&v.canonical_string()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_prefix_as_the_spec_writes_it() {
        assert_eq!(
            pae(spec::PAYLOAD_TYPE, b"{}"),
            b"DSSEv1 28 application/vnd.in-toto+json 2 {}".to_vec()
        );
    }

    #[test]
    fn either_alphabet_either_padding_but_one_text_per_bytes() {
        let bytes = [0xfbu8, 0xff, 0x01];
        assert_eq!(decode_b64("-_8B").unwrap(), bytes);
        assert_eq!(decode_b64("+/8B").unwrap(), bytes);
        assert_eq!(decode_b64("AQ").unwrap(), [1]);
        assert_eq!(decode_b64("AQ==").unwrap(), [1]);
        // Non-zero unused bits would let two texts stand for one payload.
        assert!(decode_b64("AR").is_err());
        assert!(decode_b64("-+8B").is_err());
    }
}
