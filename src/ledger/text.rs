//! The two byte forms of the ledger, neither of which is the record's canonical form
//! (conduct-walk.md §4.1, `crate::canonical`), so neither may reuse it:
//!
//! - **Batch and checkpoint text** (ledger.md §4.4, §4.5) is what the worker's `JSON.stringify`
//!   writes: keys in *insertion* order (not sorted), compact, non-ASCII raw as UTF-8, and only
//!   `"`, `\` and controls below U+0020 escaped (`\b \f \n \r \t`, else lower-case `\u00xx`);
//!   `/`, U+007F and U+2028/9 stay raw. `crate::canonical` sorts keys, so it would write other
//!   bytes, and the batch's `claim_sha256` would not match.
//! - **Chain text** (`jidec-chain-v1`, §6.2) is Python's `json.dumps(sort_keys=True,
//!   separators=(",", ":"), ensure_ascii=True)`: sorted and compact like §4.1, but every
//!   character outside U+0020…U+007E (non-ASCII, U+007F, U+2028/9) is a lower-case `\uXXXX`
//!   escape, astral characters as two surrogate escapes.
//!
//! Both are serde_json's compact writer over structs whose field order *is* the key order the
//! form needs (insertion order for the batch, code-point order for the chain). Its string
//! escaping is exactly `JSON.stringify`'s for Rust strings (which cannot hold the lone
//! surrogates `JSON.stringify` also escapes); the chain form only adds the ASCII escape of
//! [`AsciiFormatter`]. Numbers in both are integers only (the worker refuses anything else).

use serde::Serialize;
use serde_json::ser::Formatter;
use std::io;

/// Compact `JSON.stringify` text of a value whose fields are declared in insertion order.
pub fn js_stringify<T: Serialize + ?Sized>(value: &T) -> String {
    // Serializing our own plain structs (strings, bools, integers) cannot fail.
    serde_json::to_string(value).expect("ledger text types always serialize")
}

/// Compact `ensure_ascii=True` text of a value whose fields are declared in sorted order.
pub fn ascii_compact<T: Serialize + ?Sized>(value: &T) -> String {
    crate::json::ascii_text(value, AsciiFormatter)
}

/// serde_json's compact formatter with Python's `ensure_ascii=True` string escaping. serde_json
/// hands every run of characters that need no JSON escape to `write_string_fragment`; the
/// standard escapes (`"`, `\`, controls, with the short forms) stay serde_json's, which are
/// Python's too.
pub struct AsciiFormatter;

impl Formatter for AsciiFormatter {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut run_start = 0;
        for (i, c) in fragment.char_indices() {
            if matches!(c, ' '..='~') {
                continue;
            }
            writer.write_all(&fragment.as_bytes()[run_start..i])?;
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
            run_start = i + c.len_utf8();
        }
        writer.write_all(&fragment.as_bytes()[run_start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `JSON.stringify` escapes `"`, `\` and controls (short forms where they exist, else
    /// lower-case `\u00xx`), and leaves `/`, U+007F, U+2028/9 and non-ASCII raw.
    #[test]
    fn js_stringify_escapes_as_javascript_does() {
        let s = "a\"b\\c\u{8}\u{c}\n\r\t\u{1}\u{1f}/\u{7f}\u{2028}\u{2029}é🧪";
        assert_eq!(
            js_stringify(s),
            "\"a\\\"b\\\\c\\b\\f\\n\\r\\t\\u0001\\u001f/\u{7f}\u{2028}\u{2029}é🧪\""
        );
    }

    /// Python's `ensure_ascii=True`: U+007F, U+2028 and non-ASCII escaped lower-case, astral
    /// characters as a surrogate pair, the short escapes kept, printable ASCII raw.
    #[test]
    fn ascii_compact_escapes_as_python_ensure_ascii_does() {
        let s = "é\u{7f}\u{2028}😀\n\u{1}\"/~ ";
        assert_eq!(
            ascii_compact(s),
            "\"\\u00e9\\u007f\\u2028\\ud83d\\ude00\\n\\u0001\\\"/~ \""
        );
        assert_eq!(
            ascii_compact(&json!({"k": [1, true, null]})),
            r#"{"k":[1,true,null]}"#
        );
    }
}

/// Properties over generated strings, with a fixed seed so a failure reproduces.
#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

    fn runner() -> TestRunner {
        TestRunner::new_with_rng(
            Config {
                cases: 512,
                failure_persistence: None,
                ..Config::default()
            },
            TestRng::from_seed(RngAlgorithm::ChaCha, &[0x1e; 32]),
        )
    }

    /// The chain form is printable ASCII and reads back to the same string.
    #[test]
    fn ascii_compact_is_ascii_and_round_trips() {
        runner()
            .run(&any::<String>(), |s| {
                let text = ascii_compact(&s);
                prop_assert!(text.bytes().all(|b| (0x20..0x7f).contains(&b)), "{text}");
                prop_assert_eq!(serde_json::from_str::<String>(&text).unwrap(), s);
                Ok(())
            })
            .unwrap();
    }

    /// The batch form reads back to the same string, and a string with nothing JavaScript
    /// escapes is written raw between quotes, whatever its characters.
    #[test]
    fn js_stringify_round_trips_and_writes_the_rest_raw() {
        runner()
            .run(&any::<String>(), |s| {
                prop_assert_eq!(
                    serde_json::from_str::<String>(&js_stringify(&s)).unwrap(),
                    s.clone()
                );
                let plain: String = s
                    .chars()
                    .filter(|c| !matches!(c, '"' | '\\' | '\u{0}'..='\u{1f}'))
                    .collect();
                prop_assert_eq!(js_stringify(&plain), format!("\"{plain}\""));
                Ok(())
            })
            .unwrap();
    }
}
