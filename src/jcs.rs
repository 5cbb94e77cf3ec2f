//! RFC 8785 (JSON Canonicalization Scheme) for card signature payloads and Agent SoW documents.
//!
//! Serialisation is `serde_jcs`'s (ECMAScript number forms, UTF-16 key order). What we add is the
//! input side RFC 8785 leaves to the caller: the document must be I-JSON (RFC 7493) — no
//! duplicate member names, and every number representable as a finite IEEE 754 double.
//! Never use this for witness records: those use the NENRIN form ([`crate::canonical`]).

use crate::json::{StrictJsonError, parse_strict};
use serde_json::Value;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JcsError {
    #[error("not I-JSON: {0}")]
    NotIJson(String),
    #[error("not JSON: {0}")]
    Syntax(String),
    #[error("canonicalisation failed: {0}")]
    Serialize(String),
    /// A stranger's document past its caps (`json::bounded`).
    #[error("{0}")]
    OverCap(String),
}

impl From<StrictJsonError> for JcsError {
    fn from(e: StrictJsonError) -> Self {
        match e {
            StrictJsonError::Syntax(s) => JcsError::Syntax(s),
            dup @ StrictJsonError::DuplicateKey(_) => JcsError::NotIJson(dup.to_string()),
            StrictJsonError::OverCap(s) => JcsError::OverCap(s),
        }
    }
}

/// Parse bytes as I-JSON: strict UTF-8 JSON, no duplicate names, finite numbers.
pub fn parse_i_json(bytes: &[u8]) -> Result<Value, JcsError> {
    let value = parse_strict(bytes)?;
    check_numbers(&value)?;
    Ok(value)
}

/// [`parse_i_json`] of a stranger's document, within its caps (`json::bounded`).
pub fn parse_i_json_bounded(
    input: crate::json::bounded::Input,
    bytes: &[u8],
) -> Result<Value, JcsError> {
    let value = crate::json::bounded::strict(input, bytes)?;
    check_numbers(&value)?;
    Ok(value)
}

/// RFC 8785 canonical bytes of a parsed value.
pub fn canonicalize(value: &Value) -> Result<Vec<u8>, JcsError> {
    check_numbers(value)?;
    serde_jcs::to_vec(value).map_err(|e| JcsError::Serialize(e.to_string()))
}

/// Parse as I-JSON and canonicalise.
pub fn canonicalize_bytes(bytes: &[u8]) -> Result<Vec<u8>, JcsError> {
    canonicalize(&parse_i_json(bytes)?)
}

/// The refusal text for a number RFC 8785 cannot write (NaN, the infinities, out of range).
pub fn not_finite(n: &serde_json::Number) -> String {
    let text = if n.to_string() == crate::json::NAN_MARKER {
        "NaN".to_string()
    } else {
        n.to_string()
    };
    format!("number {text} is not a finite IEEE 754 double")
}

fn check_numbers(value: &Value) -> Result<(), JcsError> {
    match value {
        Value::Number(n) if crate::json::number_f64(n).is_finite() => Ok(()),
        Value::Number(n) => Err(JcsError::NotIJson(not_finite(n))),
        Value::Array(items) => items.iter().try_for_each(check_numbers),
        Value::Object(map) => map.values().try_for_each(check_numbers),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A leniently parsed `NaN` (Python's reader accepts it) is not a number RFC 8785 can
    /// write: refused, and named as NaN, never written as the marker's -0.0.
    #[test]
    fn nan_and_infinity_are_refused() {
        for (text, named) in [
            ("[NaN]", "NaN"),
            ("[1, Infinity]", "1e+7777777777777777777"),
            ("[-Infinity]", "-1e+7777777777777777777"),
        ] {
            let v = crate::json::parse_lenient(text.as_bytes()).unwrap();
            match canonicalize(&v) {
                Err(JcsError::NotIJson(why)) => assert!(why.contains(named), "{why}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn number_forms_are_ecmascript() {
        let v = parse_i_json(br#"{"b":1e21,"a":100.0,"c":1e-7,"d":-0.0}"#).unwrap();
        assert_eq!(
            canonicalize(&v).unwrap(),
            br#"{"a":100,"b":1e+21,"c":1e-7,"d":0}"#
        );
    }

    #[test]
    fn refuses_duplicates_and_non_finite() {
        assert!(matches!(
            parse_i_json(br#"{"a":1,"a":1}"#),
            Err(JcsError::NotIJson(_))
        ));
        assert!(matches!(
            parse_i_json(br#"[1e400]"#),
            Err(JcsError::NotIJson(_))
        ));
        assert!(matches!(parse_i_json(b"{"), Err(JcsError::Syntax(_))));
    }
}
