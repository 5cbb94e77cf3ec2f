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

pub mod bounded;
mod doc;
mod read;
pub mod stream;

pub use doc::{ArrayRef, Doc, Items, JsonRef, ObjectRef, Tag};
pub use read::{PYTHON_INT_MAX_STR_DIGITS, REFERENCE_MAX_DEPTH, ReadError, ReadOptions, read};

use serde_json::Value;

/// JSON whitespace: space, tab, LF, CR (nothing else, as Python's reader).
pub(crate) fn is_ws_byte(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Parse as the reference walker reads a card (CPython 3.11 `json.loads` of the UTF-8 text):
/// last duplicate wins, Python's `NaN` / `Infinity` / `-Infinity` accepted (§8.3 item 18),
/// nesting to 993 levels (item 21), lone surrogate escapes kept as U+FFFD (item 23). A UTF-8
/// BOM is not JSON (Python's reader rejects it too).
pub fn parse_lenient(bytes: &[u8]) -> Result<Value, ReadError> {
    Ok(read(bytes, ReadOptions::LENIENT)?.root().to_value())
}

/// A `Value` tree copied from a stranger's document larger than this (by
/// [`Doc::estimated_value_bytes`]) waits for [`large_tree_permit`]: one such tree at a time in
/// the process. Only a signed card, a card listing the terms extension and a terms document are
/// copied into trees (the verifiers read `Value`s); every other read stays in its `Doc`.
pub const LARGE_TREE_BYTES: usize = 16 * 1024 * 1024;

static LARGE_TREES: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// Whether a document of `len` bytes of text could reach [`LARGE_TREE_BYTES`] as a tree: at
/// most one node per two bytes, each at most an object's 704 bytes, plus the text. Below this
/// no document needs reading first to decide.
pub fn may_be_large_tree(len: usize) -> bool {
    len.saturating_mul(353) > LARGE_TREE_BYTES
}

/// For a document whose `Value` tree would be large, the permit to build it (held as long as
/// the tree lives): many walks of hostile signed cards then cost one large tree at a time, not
/// one each. None (no wait) for an ordinary document.
pub async fn large_tree_permit(doc: &Doc) -> Option<tokio::sync::SemaphorePermit<'static>> {
    if doc.estimated_value_bytes() <= LARGE_TREE_BYTES {
        return None;
    }
    Some(
        LARGE_TREES
            .acquire()
            .await
            .expect("the large-tree semaphore is never closed"),
    )
}

/// Number text standing for Python's `NaN` in a `Value`; defined beside the writer that turns
/// it back into `NaN` (`crate::canonical` sits below this reader and must not import it).
pub use crate::canonical::NAN_MARKER;
/// The infinities are number texts that overflow to infinity.
pub(crate) const INFINITY_TEXT: &str = "1e7777777777777777777";
pub(crate) const NEG_INFINITY_TEXT: &str = "-1e7777777777777777777";

/// `value` as JSON text through `formatter`, one that escapes every character outside ASCII
/// (the ledger's and the task bindings' `ensure_ascii=True` forms).
pub fn ascii_text<T: serde::Serialize + ?Sized>(
    value: &T,
    formatter: impl serde_json::ser::Formatter,
) -> String {
    let mut out = Vec::with_capacity(256);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    value
        .serialize(&mut ser)
        .expect("the ledger's and the bindings' types always serialize");
    String::from_utf8(out).expect("ensure_ascii output is ASCII")
}

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
    /// Past a cap of [`bounded::Input::caps`] (the message names the input and the cap).
    #[error("{0}")]
    OverCap(String),
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

    fn doc(text: &str) -> Doc {
        read(text.as_bytes(), ReadOptions::LENIENT).unwrap()
    }

    #[test]
    fn views_read_as_a_python_dict_does() {
        let d = doc(r#"{"b":[1,{"z":null}],"a":1,"b":2.0,"c":"x"}"#);
        let root = d.root();
        // The last value of a repeated name wins, in sorted order once.
        assert_eq!(root.get("b").unwrap().number_text(), Some("2.0"));
        assert_eq!(root.as_object().unwrap().len(), 3);
        assert_eq!(root.canonical_string(), r#"{"a":1,"b":2.0,"c":"x"}"#);
        assert!(root.get("missing").is_none());
        assert!(d.root().get("c").unwrap().as_array().is_none());
        let arr = doc("[1, [2, 3], {}, 4]");
        let items: Vec<String> = arr
            .root()
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.canonical_string())
            .collect();
        assert_eq!(items, ["1", "[2,3]", "{}", "4"]);
        assert_eq!(arr.root().as_array().unwrap().len(), 4);
    }

    #[test]
    fn nesting_to_993_levels_is_read_and_994_is_not() {
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(read(nested(993).as_bytes(), ReadOptions::LENIENT).is_ok());
        assert_eq!(
            read(nested(994).as_bytes(), ReadOptions::LENIENT).unwrap_err(),
            ReadError::TooDeep(REFERENCE_MAX_DEPTH)
        );
        // A Value of that depth is built and dropped without exhausting the stack.
        let v = parse_lenient(nested(993).as_bytes()).unwrap();
        assert_eq!(crate::canonical::to_string(&v).len(), 2 * 993);
    }

    #[test]
    fn lone_surrogates_are_u_fffd_and_only_live_ones_count() {
        let d = doc(r#"{"a":"\ud800","a":"ok","b":["\udfff x"]}"#);
        assert!(d.has_lone_surrogates());
        assert!(!d.root().get("a").unwrap().holds_lone_surrogate());
        assert!(d.root().get("b").unwrap().holds_lone_surrogate());
        assert_eq!(
            d.root().canonical_string(),
            "{\"a\":\"ok\",\"b\":[\"\u{fffd} x\"]}"
        );
        let overridden = doc(r#"{"a":"\ud800","a":"ok"}"#);
        assert!(!overridden.root().holds_lone_surrogate());
        assert!(matches!(
            read(br#""\ud800""#, ReadOptions::STRICT),
            Err(ReadError::LoneSurrogate(0xd800, _))
        ));
    }

    #[test]
    fn integers_past_python_s_digit_limit_are_not_json() {
        let long = "9".repeat(PYTHON_INT_MAX_STR_DIGITS + 1);
        assert_eq!(
            read(long.as_bytes(), ReadOptions::LENIENT).unwrap_err(),
            ReadError::IntegerTooLong(PYTHON_INT_MAX_STR_DIGITS + 1)
        );
        // A float has no such limit, nor does an integer of exactly 4,300 digits.
        assert!(read(format!("{long}.5").as_bytes(), ReadOptions::LENIENT).is_ok());
        assert!(read(&long.as_bytes()[1..], ReadOptions::LENIENT).is_ok());
    }

    #[test]
    fn errors_say_where_in_python_s_words() {
        let e = read(b"[1,]", ReadOptions::LENIENT).unwrap_err().to_string();
        assert_eq!(e, "Expecting value: line 1 column 4 (char 3)");
        let e = read(b"\xef\xbb\xbf{}", ReadOptions::LENIENT)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "Expecting value: line 1 column 1 (char 0)");
        let e = read(b"{\"a\" 1}", ReadOptions::LENIENT)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "Expecting ':' delimiter: line 1 column 6 (char 5)");
    }

    #[test]
    fn the_length_bound_covers_the_costliest_shapes() {
        // Shapes with the most nodes per byte: empty objects, one-key objects, small numbers.
        for text in [
            format!("[{}]", vec!["{}"; 5_000].join(",")),
            format!("[{}]", vec![r#"{"":0}"#; 5_000].join(",")),
            format!("[{}]", vec!["0"; 5_000].join(",")),
        ] {
            let doc = read(text.as_bytes(), ReadOptions::LENIENT).unwrap();
            assert!(
                doc.estimated_value_bytes() <= text.len() * 353,
                "{}",
                &text[..20]
            );
        }
        assert!(!may_be_large_tree(40_000));
        assert!(may_be_large_tree(1024 * 1024));
    }
}
