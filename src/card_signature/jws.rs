//! One `AgentCardSignature` entry read as a detached JWS (RFC 7515 flattened, no `payload`).
//!
//! We parse the protected header ourselves (card-signature-and-terms.md §4.1): base64url without
//! padding, a JSON object without duplicate names. `alg` and `kid` must be non-empty strings
//! (A2A §8.4.2 MUST); a missing `typ` is reported, not refused (a2a-python accepts such entries,
//! a2a-js skips them). `none`, the HS* MACs and unknown algorithms are refused, as are `b64:false`
//! and any `crit` we do not understand (§1.6.4, §4.3). Signature bytes are checked against the
//! key in [`super::keys`]; the signing input is always `protected` exactly as the card has it +
//! `.` + base64url(payload), never a re-encoding.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

/// The algorithms a card signature may use: asymmetric only (§1.6.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JwsAlg {
    ES256,
    ES384,
    RS256,
    RS384,
    RS512,
    PS256,
    PS384,
    PS512,
    EdDSA,
}

/// Names accepted in `alg`, for messages.
pub const SUPPORTED_ALGS: &str = "ES256, ES384, RS256, RS384, RS512, PS256, PS384, PS512, EdDSA";

impl JwsAlg {
    /// Map a header `alg`. `Ed25519` (the fully specified name of RFC 9864) is EdDSA over Ed25519.
    pub fn parse(alg: &str) -> Result<JwsAlg, EntryError> {
        Ok(match alg {
            "ES256" => JwsAlg::ES256,
            "ES384" => JwsAlg::ES384,
            "RS256" => JwsAlg::RS256,
            "RS384" => JwsAlg::RS384,
            "RS512" => JwsAlg::RS512,
            "PS256" => JwsAlg::PS256,
            "PS384" => JwsAlg::PS384,
            "PS512" => JwsAlg::PS512,
            "EdDSA" | "Ed25519" => JwsAlg::EdDSA,
            "none" => return Err(EntryError::AlgNone),
            "HS256" | "HS384" | "HS512" => return Err(EntryError::AlgSymmetric(alg.into())),
            other => return Err(EntryError::AlgUnsupported(other.into())),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            JwsAlg::ES256 => "ES256",
            JwsAlg::ES384 => "ES384",
            JwsAlg::RS256 => "RS256",
            JwsAlg::RS384 => "RS384",
            JwsAlg::RS512 => "RS512",
            JwsAlg::PS256 => "PS256",
            JwsAlg::PS384 => "PS384",
            JwsAlg::PS512 => "PS512",
            JwsAlg::EdDSA => "EdDSA",
        }
    }

    pub(crate) fn jwt(self) -> jsonwebtoken::Algorithm {
        use jsonwebtoken::Algorithm as A;
        match self {
            JwsAlg::ES256 => A::ES256,
            JwsAlg::ES384 => A::ES384,
            JwsAlg::RS256 => A::RS256,
            JwsAlg::RS384 => A::RS384,
            JwsAlg::RS512 => A::RS512,
            JwsAlg::PS256 => A::PS256,
            JwsAlg::PS384 => A::PS384,
            JwsAlg::PS512 => A::PS512,
            JwsAlg::EdDSA => A::EdDSA,
        }
    }

    /// RSASSA (PKCS#1 v1.5 or PSS): one RSA key can serve each of them.
    pub fn is_rsa(self) -> bool {
        matches!(
            self,
            JwsAlg::RS256
                | JwsAlg::RS384
                | JwsAlg::RS512
                | JwsAlg::PS256
                | JwsAlg::PS384
                | JwsAlg::PS512
        )
    }
}

/// Why an entry was not checked against any key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    #[error("the signatures entry is {0}, not an object")]
    EntryNotObject(&'static str),
    #[error("the entry has no protected member holding a string")]
    NoProtected,
    #[error("the entry has no signature member holding a string")]
    NoSignature,
    #[error("protected is not unpadded base64url: {0}")]
    ProtectedNotBase64url(String),
    #[error("the protected header is not a JSON object: {0}")]
    ProtectedNotObject(String),
    #[error("the unprotected header member is not a JSON object")]
    HeaderNotObject,
    #[error(
        "{0} is in both the protected and the unprotected header (RFC 7515 section 7.2.1 forbids it)"
    )]
    HeaderOverlap(String),
    #[error("signature is not unpadded base64url: {0}")]
    SignatureNotBase64url(String),
    #[error(
        "the protected header has no alg holding a non-empty string (A2A section 8.4.2 requires it)"
    )]
    NoAlg,
    #[error(
        "the protected header has no kid holding a non-empty string (A2A section 8.4.2 requires it)"
    )]
    NoKid,
    #[error("alg none is refused: an unsigned entry proves nothing")]
    AlgNone,
    #[error("alg {0} is refused: a shared-secret MAC cannot show who signed")]
    AlgSymmetric(String),
    #[error("alg {0} is not supported (supported: {SUPPORTED_ALGS})")]
    AlgUnsupported(String),
    #[error("crit is malformed ({0}); RFC 7515 section 4.1.11 requires a non-empty array of names")]
    CritMalformed(String),
    #[error("crit lists {0}, which this verifier does not understand")]
    CritUnknown(String),
    #[error("b64 is not a boolean")]
    B64Malformed,
    #[error("b64 is false: an unencoded payload (RFC 7797) is not what A2A signs")]
    B64False,
    #[error("jku is neither a string nor null")]
    JkuMalformed,
}

impl EntryError {
    /// `refused` (a readable entry we will not check) versus `malformed` (an unreadable entry).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            EntryError::NoAlg
                | EntryError::NoKid
                | EntryError::AlgNone
                | EntryError::AlgSymmetric(_)
                | EntryError::AlgUnsupported(_)
                | EntryError::CritUnknown(_)
                | EntryError::B64False
        )
    }
}

/// Warning: `typ` missing.
pub const WARN_TYP_MISSING: &str = "typ missing: A2A section 8.4.2 lists typ among the members the protected header MUST include (a2a-js skips such an entry, a2a-python accepts it)";
/// Warning: `typ` present but not `JOSE`.
pub const WARN_TYP_NOT_JOSE: &str =
    "typ is not JOSE, the value A2A section 8.4.2 says it SHOULD be";
/// Warning: the entry carries its own key, which is never used.
pub const WARN_EMBEDDED_KEY: &str = "the header carries its own key material (jwk, x5c or x5u); it is ignored, since a key a card vouches for itself proves nothing";

/// What the header members of one entry say, once readable.
#[derive(Debug, Clone)]
pub struct ProtectedHeader {
    pub alg_text: String,
    pub kid: String,
    pub typ: Option<String>,
    /// `null` is read as absent (a2a-python writes `"jku":null`).
    pub jku: Option<String>,
}

/// A readable entry, ready for a key.
#[derive(Debug, Clone)]
pub(crate) struct ParsedEntry {
    pub header: ProtectedHeader,
    pub alg: JwsAlg,
    /// Verbatim from the card: the signing input starts with it.
    pub protected_b64: String,
    pub signature_b64: String,
    pub signature: Vec<u8>,
    pub warnings: Vec<&'static str>,
}

/// What we could read of an entry even when it is refused (for the per-signature report).
#[derive(Debug, Clone, Default)]
pub(crate) struct HeaderGlimpse {
    pub alg: Option<String>,
    pub kid: Option<String>,
    pub typ: Option<String>,
    pub jku: Option<String>,
}

fn decode_b64url(s: &str) -> Result<Vec<u8>, String> {
    URL_SAFE_NO_PAD.decode(s).map_err(|e| e.to_string())
}

fn text_member(header: &Map<String, Value>, name: &str) -> Option<String> {
    header.get(name).and_then(Value::as_str).map(str::to_owned)
}

/// Read one `signatures` entry. On error, also return what could be read of the header.
/// The error is boxed: refusals are the rare path and the pair is large.
pub(crate) fn parse_entry(entry: &Value) -> Result<ParsedEntry, Box<(EntryError, HeaderGlimpse)>> {
    let none = HeaderGlimpse::default;
    let Value::Object(obj) = entry else {
        return Err(Box::new((
            EntryError::EntryNotObject(super::profile::type_name(entry)),
            none(),
        )));
    };
    let Some(protected_b64) = obj.get("protected").and_then(Value::as_str) else {
        return Err(Box::new((EntryError::NoProtected, none())));
    };
    let bytes = decode_b64url(protected_b64)
        .map_err(|e| Box::new((EntryError::ProtectedNotBase64url(e), none())))?;
    let header = match crate::json::parse_strict(&bytes) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            let why = format!("it is {}", super::profile::type_name(&other));
            return Err(Box::new((EntryError::ProtectedNotObject(why), none())));
        }
        Err(e) => {
            return Err(Box::new((
                EntryError::ProtectedNotObject(e.to_string()),
                none(),
            )));
        }
    };
    let glimpse = HeaderGlimpse {
        alg: text_member(&header, "alg"),
        kid: text_member(&header, "kid"),
        typ: text_member(&header, "typ"),
        jku: text_member(&header, "jku"),
    };
    let fail = |e: EntryError| Err(Box::new((e, glimpse.clone())));

    match obj.get("header") {
        None | Some(Value::Null) => {}
        Some(Value::Object(unprotected)) => {
            if let Some(name) = unprotected.keys().find(|k| header.contains_key(*k)) {
                return fail(EntryError::HeaderOverlap(name.clone()));
            }
        }
        Some(_) => return fail(EntryError::HeaderNotObject),
    }
    let Some(signature_b64) = obj.get("signature").and_then(Value::as_str) else {
        return fail(EntryError::NoSignature);
    };
    let signature = match decode_b64url(signature_b64) {
        Ok(s) => s,
        Err(e) => return fail(EntryError::SignatureNotBase64url(e)),
    };

    let alg_text = match header.get("alg") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return fail(EntryError::NoAlg),
    };
    let alg = match JwsAlg::parse(&alg_text) {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    let kid = match header.get("kid") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return fail(EntryError::NoKid),
    };
    // b64 first: `b64:false` is refused whether or not crit names it.
    let b64 = match header.get("b64") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return fail(EntryError::B64Malformed),
    };
    if b64 == Some(false) {
        return fail(EntryError::B64False);
    }
    if let Some(crit) = header.get("crit") {
        let names: Vec<&str> = match crit {
            Value::Array(items) if !items.is_empty() => {
                match items.iter().map(Value::as_str).collect::<Option<Vec<_>>>() {
                    Some(names) => names,
                    None => {
                        return fail(EntryError::CritMalformed("a member is not a string".into()));
                    }
                }
            }
            Value::Array(_) => return fail(EntryError::CritMalformed("it is empty".into())),
            other => {
                let why = format!("it is {}", super::profile::type_name(other));
                return fail(EntryError::CritMalformed(why));
            }
        };
        // The one extension we understand is b64, and only in its default form (true), which
        // changes nothing. A name crit lists must also be present in the protected header.
        let unknown: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| *n != "b64" || b64.is_none())
            .collect();
        if !unknown.is_empty() {
            return fail(EntryError::CritUnknown(unknown.join(", ")));
        }
    }
    let jku = match header.get("jku") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return fail(EntryError::JkuMalformed),
    };
    let mut warnings = Vec::new();
    let typ = match header.get("typ") {
        None => {
            warnings.push(WARN_TYP_MISSING);
            None
        }
        Some(Value::String(t)) => {
            if !t.eq_ignore_ascii_case("JOSE") {
                warnings.push(WARN_TYP_NOT_JOSE);
            }
            Some(t.clone())
        }
        Some(_) => {
            warnings.push(WARN_TYP_NOT_JOSE);
            None
        }
    };
    if ["jwk", "x5c", "x5u"]
        .iter()
        .any(|k| header.contains_key(*k))
    {
        warnings.push(WARN_EMBEDDED_KEY);
    }
    Ok(ParsedEntry {
        header: ProtectedHeader {
            alg_text,
            kid,
            typ,
            jku,
        },
        alg,
        protected_b64: protected_b64.to_string(),
        signature_b64: signature_b64.to_string(),
        signature,
        warnings,
    })
}

/// `protected` + `.` + base64url(payload): the bytes the signature is over.
pub(crate) fn signing_input(protected_b64: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(protected_b64.len() + 1 + payload.len() * 4 / 3 + 4);
    out.extend_from_slice(protected_b64.as_bytes());
    out.push(b'.');
    out.extend_from_slice(URL_SAFE_NO_PAD.encode(payload).as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(header: &str) -> Value {
        json!({"protected": URL_SAFE_NO_PAD.encode(header), "signature": "AAAA"})
    }

    fn err(header: &str) -> EntryError {
        parse_entry(&entry(header)).unwrap_err().0
    }

    #[test]
    fn refuses_none_hmac_and_unknown_algorithms() {
        assert_eq!(err(r#"{"alg":"none","kid":"k"}"#), EntryError::AlgNone);
        for alg in ["HS256", "HS384", "HS512"] {
            let e = err(&format!(r#"{{"alg":"{alg}","kid":"k"}}"#));
            assert_eq!(e, EntryError::AlgSymmetric(alg.into()));
            assert!(e.is_refusal());
        }
        assert_eq!(
            err(r#"{"alg":"ES512","kid":"k"}"#),
            EntryError::AlgUnsupported("ES512".into())
        );
        assert_eq!(err(r#"{"kid":"k"}"#), EntryError::NoAlg);
        assert_eq!(err(r#"{"alg":"ES256","kid":""}"#), EntryError::NoKid);
    }

    #[test]
    fn crit_and_b64() {
        assert_eq!(
            err(r#"{"alg":"ES256","kid":"k","b64":false,"crit":["b64"]}"#),
            EntryError::B64False
        );
        assert_eq!(
            err(r#"{"alg":"ES256","kid":"k","b64":false}"#),
            EntryError::B64False
        );
        assert_eq!(
            err(r#"{"alg":"ES256","kid":"k","crit":["exp"],"exp":1}"#),
            EntryError::CritUnknown("exp".into())
        );
        assert!(matches!(
            err(r#"{"alg":"ES256","kid":"k","crit":[]}"#),
            EntryError::CritMalformed(_)
        ));
        // b64:true named in crit is the default encoding: understood.
        let ok = parse_entry(&entry(
            r#"{"alg":"ES256","kid":"k","typ":"JOSE","b64":true,"crit":["b64"]}"#,
        ));
        assert!(ok.is_ok());
    }

    #[test]
    fn strict_base64url_and_duplicate_names() {
        let padded = json!({"protected": "eyJhIjoxfQ==", "signature": "AAAA"});
        assert!(matches!(
            parse_entry(&padded).unwrap_err().0,
            EntryError::ProtectedNotBase64url(_)
        ));
        assert!(matches!(
            err(r#"{"alg":"ES256","alg":"none","kid":"k"}"#),
            EntryError::ProtectedNotObject(_)
        ));
    }

    #[test]
    fn typ_missing_is_a_warning_and_null_jku_is_absent() {
        let p = parse_entry(&entry(r#"{"alg":"EdDSA","kid":"k","jku":null}"#)).unwrap();
        assert_eq!(p.warnings, vec![WARN_TYP_MISSING]);
        assert_eq!(p.header.jku, None);
    }
}
