//! The `served-rfc8785` payload form (conduct-walk.md §4.3 C.6): RFC 8785 over the card as the
//! reference parsed it, with Python's values (§4.1's reader) written the way RFC 8785 writes
//! them. Not [`crate::jcs`]: that one refuses what I-JSON refuses (duplicate names, big
//! integers), while this form is defined over whatever Python read, and says why it cannot be
//! written in the reference's exact words.

use crate::json::{JsonRef, Tag};
use std::fmt::Write as _;

/// Why the served form cannot be reproduced. The texts are the record's, exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotReproduced {
    IntegerOutOfRange,
    NotFinite,
    LoneSurrogate,
}

impl NotReproduced {
    pub fn reason(self) -> &'static str {
        match self {
            NotReproduced::IntegerOutOfRange => "an integer outside the IEEE 754 range",
            NotReproduced::NotFinite => "NaN or an infinity, which JSON cannot carry",
            NotReproduced::LoneSurrogate => "a lone surrogate in a string",
        }
    }
}

/// Largest integer written as its own decimal text (2^53 − 1); larger ones become doubles.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The served form of an object without its `signatures` member (`bare`, §4.3 C.2).
pub fn served_rfc8785_without_signatures(card: JsonRef<'_>) -> Result<String, NotReproduced> {
    let mut out = String::with_capacity(1024);
    match card.as_object() {
        Some(object) => {
            let members: Vec<_> = object
                .entries_with_names()
                .into_iter()
                .filter(|(name, _)| name.as_str() != Some("signatures"))
                .collect();
            write_members(&mut out, members)?;
        }
        None => write_value(&mut out, card)?,
    }
    Ok(out)
}

/// RFC 8785 of any parsed value.
pub fn served_rfc8785(value: JsonRef<'_>) -> Result<String, NotReproduced> {
    let mut out = String::with_capacity(256);
    write_value(&mut out, value)?;
    Ok(out)
}

fn write_value(out: &mut String, value: JsonRef<'_>) -> Result<(), NotReproduced> {
    match value.tag() {
        Tag::Null => out.push_str("null"),
        Tag::True => out.push_str("true"),
        Tag::False => out.push_str("false"),
        Tag::Number => write_number(out, value)?,
        Tag::String => {
            if value.holds_lone_surrogate() {
                return Err(NotReproduced::LoneSurrogate);
            }
            write_string(out, value.as_str().unwrap_or_default());
        }
        Tag::Array => {
            out.push('[');
            for (i, item) in value
                .as_array()
                .into_iter()
                .flat_map(|a| a.iter())
                .enumerate()
            {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item)?;
            }
            out.push(']');
        }
        Tag::Object => {
            let members = value
                .as_object()
                .map(|o| o.entries_with_names())
                .unwrap_or_default();
            write_members(out, members)?;
        }
    }
    Ok(())
}

/// Members sorted by the UTF-16 code units of their names (RFC 8785 §3.2.3), duplicates already
/// resolved the way Python's dict holds them.
fn write_members(
    out: &mut String,
    members: Vec<(JsonRef<'_>, JsonRef<'_>)>,
) -> Result<(), NotReproduced> {
    let mut named = Vec::with_capacity(members.len());
    for (name, value) in members {
        // Python cannot encode a lone surrogate as UTF-16 to sort by it (the reference crashes
        // there); the record says the form was not reproduced, as for a string value.
        if name.holds_lone_surrogate() {
            return Err(NotReproduced::LoneSurrogate);
        }
        named.push((name.as_str().unwrap_or_default(), value));
    }
    named.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
    out.push('{');
    for (i, (name, value)) in named.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, name);
        out.push(':');
        write_value(out, value)?;
    }
    out.push('}');
    Ok(())
}

fn write_number(out: &mut String, value: JsonRef<'_>) -> Result<(), NotReproduced> {
    let text = value.number_text().unwrap_or_default();
    if matches!(text, "NaN" | "Infinity" | "-Infinity") {
        return Err(NotReproduced::NotFinite);
    }
    if !value.is_float() {
        let digits = text.trim_start_matches('-').trim_start_matches('0');
        let small = digits.len() <= 16 && digits.parse::<u64>().unwrap_or(0) <= MAX_SAFE_INTEGER;
        if small {
            out.push_str(&crate::canonical::python_int_repr(text));
            return Ok(());
        }
        // A larger Python int becomes the nearest double (correctly rounded, as float(int)).
        let double: f64 = text.parse().map_err(|_| NotReproduced::IntegerOutOfRange)?;
        if !double.is_finite() {
            return Err(NotReproduced::IntegerOutOfRange);
        }
        write_double(out, double);
        return Ok(());
    }
    // Python's float() of the literal: an overflowing one is an infinity.
    let double: f64 = text.parse().map_err(|_| NotReproduced::NotFinite)?;
    if !double.is_finite() {
        return Err(NotReproduced::NotFinite);
    }
    write_double(out, double);
    Ok(())
}

/// ECMAScript `Number::toString` (RFC 8785 §3.2.2.3); `-0` is `0`.
fn write_double(out: &mut String, double: f64) {
    if double == 0.0 {
        out.push('0');
        return;
    }
    let mut buffer = ryu_js::Buffer::new();
    out.push_str(buffer.format_finite(double));
}

/// A string as RFC 8785 writes it: only `"`, `\` and U+0000–U+001F escaped.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{ReadOptions, read};

    fn form(text: &str) -> Result<String, NotReproduced> {
        let doc = read(text.as_bytes(), ReadOptions::LENIENT).expect("test JSON");
        served_rfc8785_without_signatures(doc.root())
    }

    #[test]
    fn members_sort_by_utf16_and_signatures_leave() {
        // U+1F600 sorts after U+E000 in code points but before it in UTF-16 code units
        // (its high surrogate is U+D83D).
        assert_eq!(
            form(r#"{"\ud83d\ude00":1,"\ue000":2,"b":[true,null],"a":"x","signatures":[1]}"#)
                .unwrap(),
            "{\"a\":\"x\",\"b\":[true,null],\"\u{1f600}\":1,\"\u{e000}\":2}"
        );
    }

    #[test]
    fn numbers_are_ecmascript() {
        assert_eq!(
            form("[1.0,-0.0,1e21,1e20,1e-7,0.000001,123.456e2,-0]").unwrap(),
            "[1,0,1e+21,100000000000000000000,1e-7,0.000001,12345.6,0]"
        );
        assert_eq!(
            form("[9007199254740991,9007199254740993,-9007199254740992]").unwrap(),
            "[9007199254740991,9007199254740992,-9007199254740992]"
        );
        assert_eq!(form("[100000000000000000000000]").unwrap(), "[1e+23]");
    }

    #[test]
    fn strings_escape_only_controls_quote_and_backslash() {
        assert_eq!(
            form(r#"["\u0001\b\f\n\r\t\"\\/\u007f\u00e9\u2028"]"#).unwrap(),
            "[\"\\u0001\\b\\f\\n\\r\\t\\\"\\\\/\u{7f}\u{e9}\u{2028}\"]"
        );
    }

    #[test]
    fn the_three_reasons() {
        assert_eq!(form("[NaN]"), Err(NotReproduced::NotFinite));
        assert_eq!(form("[1e400]"), Err(NotReproduced::NotFinite));
        assert_eq!(form("[-Infinity]"), Err(NotReproduced::NotFinite));
        let huge = format!("[1{}]", "0".repeat(400));
        assert_eq!(form(&huge), Err(NotReproduced::IntegerOutOfRange));
        assert_eq!(form(r#"["\ud800"]"#), Err(NotReproduced::LoneSurrogate));
        assert_eq!(form(r#"{"\udc00":1}"#), Err(NotReproduced::LoneSurrogate));
        assert_eq!(
            NotReproduced::IntegerOutOfRange.reason(),
            "an integer outside the IEEE 754 range"
        );
    }

    #[test]
    fn duplicates_keep_the_last_value() {
        assert_eq!(form(r#"{"a":1,"a":2}"#).unwrap(), r#"{"a":2}"#);
    }
}
