//! Parsing JSON the way the walk needs it.
//!
//! serde_json is built with `arbitrary_precision`, so every number keeps the text it was written
//! with: integers of any size stay exact and `100.0` stays a float (the NENRIN form depends on
//! both). Duplicate member names: [`parse_lenient`] keeps the last (what the reference's Python
//! reader does); [`parse_strict`] refuses them (I-JSON, RFC 8785 inputs).

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::collections::HashSet;
use std::fmt;

/// Parse as the reference walker reads a card: UTF-8 JSON, last duplicate wins, and Python's
/// `NaN` / `Infinity` / `-Infinity` accepted (§8.3 item 18). A UTF-8 BOM is a parse failure
/// (Python's reader rejects it too).
pub fn parse_lenient(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    check_budget(bytes).map_err(<serde_json::Error as de::Error>::custom)?;
    match serde_json::from_slice(bytes) {
        Ok(v) => Ok(v),
        Err(first) => match replace_python_constants(bytes) {
            Some(rewritten) => serde_json::from_slice(&rewritten).map_err(|_| first),
            None => Err(first),
        },
    }
}

/// What the tree built from one document may cost in memory, in bytes. Every document a walk
/// parses comes from a stranger and is under a body cap of at most 1 MiB, but a tree costs far
/// more than its text: a one-key object (`{"a":`, five bytes) is a B-tree node of about 640
/// bytes, so a 1 MB card of deep one-key chains took 100 MiB per parse and ~270 MiB per walk
/// (issue 14). Ordinary JSON costs about 10 times its text (a 1 MB card of skills: ~9 MiB, an
/// estimate of ~18 MiB), real cards, terms documents and key sets are a few KB; a document whose
/// estimate is over the budget is refused as "not JSON" before anything is built.
pub const PARSE_BUDGET_BYTES: usize = 16 * 1024 * 1024;

/// Costs [`estimated_tree_bytes`] charges: an object's first B-tree node (11 slots of key and
/// value), every value or key (its slot, an array's doubling slack, a small heap block), and the
/// text of strings and numbers (with `arbitrary_precision` a number keeps its text).
const OBJECT_NODE_BYTES: usize = 640;
const ITEM_BYTES: usize = 96;

/// An upper estimate of the heap serde_json's `Value` tree for `bytes` would take, from one scan
/// of the text that allocates nothing.
pub fn estimated_tree_bytes(bytes: &[u8]) -> usize {
    let (mut cost, mut in_string, mut escaped) = (ITEM_BYTES, false, false);
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            cost += 1;
            continue;
        }
        cost += match b {
            b'"' => {
                in_string = true;
                0
            }
            b'{' => OBJECT_NODE_BYTES + ITEM_BYTES,
            b'[' | b',' | b':' => ITEM_BYTES,
            b' ' | b'\t' | b'\n' | b'\r' | b'}' | b']' => 0,
            _ => 1,
        };
    }
    cost
}

/// Refuse a document whose tree would exceed [`PARSE_BUDGET_BYTES`].
fn check_budget(bytes: &[u8]) -> Result<(), String> {
    let estimate = estimated_tree_bytes(bytes);
    if estimate > PARSE_BUDGET_BYTES {
        return Err(format!(
            "too costly to parse: its {} bytes would take about {} MiB as a tree, over the {} MiB \
             budget for a document from a stranger (deeply nested or very many small values)",
            bytes.len(),
            estimate / (1024 * 1024),
            PARSE_BUDGET_BYTES / (1024 * 1024)
        ));
    }
    Ok(())
}

/// Number text standing for Python's `NaN` (it parses as a float; [`crate::canonical`] writes it
/// back as `NaN`). Infinities need no marker: an overflowing literal parses to infinity.
pub const NAN_MARKER: &str = "-0.0e-7777777777777777777";
const INFINITY_TEXT: &str = "1e7777777777777777777";

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
const NEG_INFINITY_TEXT: &str = "-1e7777777777777777777";

/// Rewrite bare `NaN`, `Infinity` and `-Infinity` tokens (outside strings) as number texts.
/// None when there is nothing to rewrite.
fn replace_python_constants(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len() + 32);
    let (mut i, mut in_string, mut changed) = (0, false, false);
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            out.push(b);
            if b == b'\\' && i + 1 < bytes.len() {
                out.push(bytes[i + 1]);
                i += 2;
                continue;
            }
            in_string = b != b'"';
            i += 1;
            continue;
        }
        let rest = &bytes[i..];
        let replacement = [
            ("-Infinity", NEG_INFINITY_TEXT),
            ("Infinity", INFINITY_TEXT),
            ("NaN", NAN_MARKER),
        ]
        .into_iter()
        .find(|(token, _)| rest.starts_with(token.as_bytes()));
        if let Some((token, text)) = replacement {
            out.extend_from_slice(text.as_bytes());
            i += token.len();
            changed = true;
            continue;
        }
        in_string = b == b'"';
        out.push(b);
        i += 1;
    }
    changed.then_some(out)
}

/// Why strict parsing refused a document.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StrictJsonError {
    #[error("not JSON: {0}")]
    Syntax(String),
    #[error("duplicate member name {0:?}")]
    DuplicateKey(String),
}

/// Parse refusing duplicate member names at any depth.
pub fn parse_strict(bytes: &[u8]) -> Result<Value, StrictJsonError> {
    check_budget(bytes).map_err(StrictJsonError::Syntax)?;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match NoDuplicates::deserialize(&mut de).and_then(|_| de.end()) {
        Ok(()) => {}
        Err(e) => {
            let msg = e.to_string();
            if let Some(rest) = msg.strip_prefix(DUP_PREFIX) {
                let key = rest.split(" at line").next().unwrap_or(rest);
                return Err(StrictJsonError::DuplicateKey(key.to_string()));
            }
            return Err(StrictJsonError::Syntax(msg));
        }
    }
    serde_json::from_slice(bytes).map_err(|e| StrictJsonError::Syntax(e.to_string()))
}

const DUP_PREFIX: &str = "duplicate member name: ";

/// Walks a document checking each object's member names are distinct; builds nothing.
struct NoDuplicates;

impl<'de> Deserialize<'de> for NoDuplicates {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicatesVisitor)
    }
}

struct NoDuplicatesVisitor;

impl<'de> Visitor<'de> for NoDuplicatesVisitor {
    type Value = NoDuplicates;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }
    fn visit_i64<E>(self, _: i64) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }
    fn visit_u64<E>(self, _: u64) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }
    fn visit_f64<E>(self, _: f64) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }
    fn visit_str<E>(self, _: &str) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }
    fn visit_string<E>(self, _: String) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }
    fn visit_unit<E>(self) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }
    fn visit_none<E>(self) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NoDuplicates, A::Error> {
        while seq.next_element::<NoDuplicates>()?.is_some() {}
        Ok(NoDuplicates)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NoDuplicates, A::Error> {
        // With arbitrary_precision a number arrives as a one-entry map; it has no duplicates.
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!("{DUP_PREFIX}{key}")));
            }
            map.next_value::<NoDuplicates>()?;
        }
        Ok(NoDuplicates)
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
