//! Parsing JSON the way the walk needs it.
//!
//! Every document is read by [`read`], a reader that accepts exactly what the reference's
//! Python reader accepts (CPython 3.11 `json.loads`; see `read.rs` for the rules) into a
//! compact [`Doc`] whose cost follows the text, not the shape. [`parse_lenient`] and
//! [`parse_strict`] turn a whole document into a `serde_json::Value` for the callers that read
//! our own or small documents; the walk reads a stranger's card as a [`Doc`] (`walk::Card`).
//!
//! Numbers keep the text they were written with, so integers of any size stay exact and
//! `100.0` stays a float (the NENRIN form depends on both). Duplicate member names:
//! [`parse_lenient`] keeps the last (Python's dict); [`parse_strict`] refuses them (I-JSON,
//! RFC 8785 inputs).

mod doc;
mod read;

pub use doc::{ArrayRef, Doc, Items, JsonRef, ObjectRef, Tag};
pub use read::{PYTHON_INT_MAX_STR_DIGITS, REFERENCE_MAX_DEPTH, ReadError, ReadOptions, read};

use serde_json::Value;

/// Parse as the reference walker reads a card (CPython 3.11 `json.loads` of the UTF-8 text):
/// last duplicate wins, Python's `NaN` / `Infinity` / `-Infinity` accepted (§8.3 item 18),
/// nesting to 993 levels (item 21), lone surrogate escapes kept as U+FFFD (item 23). A UTF-8
/// BOM is not JSON (Python's reader rejects it too).
pub fn parse_lenient(bytes: &[u8]) -> Result<Value, ReadError> {
    Ok(read(bytes, ReadOptions::LENIENT)?.root().to_value())
}

/// Number text standing for Python's `NaN` in a `Value` (it parses as a float;
/// [`crate::canonical`] writes it back as `NaN`). The infinities are number texts that
/// overflow to infinity.
pub const NAN_MARKER: &str = "-0.0e-7777777777777777777";
pub(crate) const INFINITY_TEXT: &str = "1e7777777777777777777";
pub(crate) const NEG_INFINITY_TEXT: &str = "-1e7777777777777777777";

/// A parsed number's value as a double, with [`NAN_MARKER`] read as NaN (Rust alone would read
/// the marker's text as -0.0, a finite number). Every check of a number's value goes through
/// here, so a card's `NaN` is never mistaken for zero.
pub fn number_f64(n: &serde_json::Number) -> f64 {
    let text = n.to_string();
    if text == NAN_MARKER {
        f64::NAN
    } else {
        text.parse().unwrap_or(f64::NAN)
    }
}

/// Why strict parsing refused a document.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StrictJsonError {
    #[error("not JSON: {0}")]
    Syntax(String),
    #[error("duplicate member name {0:?}")]
    DuplicateKey(String),
}

/// Parse refusing duplicate member names at any depth, lone surrogates and Python's
/// constants (I-JSON, RFC 7493).
pub fn parse_strict(bytes: &[u8]) -> Result<Value, StrictJsonError> {
    match read(bytes, ReadOptions::STRICT) {
        Ok(doc) => Ok(doc.root().to_value()),
        Err(ReadError::DuplicateKey(name)) => Err(StrictJsonError::DuplicateKey(name)),
        Err(e) => Err(StrictJsonError::Syntax(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_keeps_last_duplicate_and_number_text() {
        let v = parse_lenient(br#"{"a":1,"a":2.0,"b":12345678901234567890}"#).unwrap();
        assert_eq!(v["a"].to_string(), "2.0");
        assert_eq!(v["b"].to_string(), "12345678901234567890");
    }

    #[test]
    fn strict_refuses_duplicates_at_depth() {
        assert_eq!(
            parse_strict(br#"{"x":[{"k":1,"k":2}]}"#),
            Err(StrictJsonError::DuplicateKey("k".into()))
        );
        assert!(parse_strict(br#"{"x":[{"k":1,"j":1e400}]}"#).is_ok());
    }

    #[test]
    fn python_constants_outside_strings_only() {
        let v =
            parse_lenient(br#"{"x":NaN,"y":[Infinity,-Infinity],"s":"NaN \" Infinity"}"#).unwrap();
        assert_eq!(v["x"].to_string(), NAN_MARKER);
        assert_eq!(v["s"], "NaN \" Infinity");
        assert!(parse_strict(br#"[NaN]"#).is_err());
    }

    #[test]
    fn bom_is_not_json() {
        assert!(parse_lenient(b"\xef\xbb\xbf{}").is_err());
    }
}
