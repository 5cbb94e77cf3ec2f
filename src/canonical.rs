//! NENRIN canonical JSON (conduct-walk.md §4.1): the byte form the reference walker writes with
//! Python's `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`.
//!
//! This is hand-written on purpose: no crate reproduces Python's float spelling and escaping, and
//! record identity (the sha256 of these bytes) depends on every byte. RFC 8785 lives elsewhere
//! (`crate::jcs`); the two forms differ on numbers and key order and must never be mixed.
//!
//! Also here: the Python-text renderings (`str()` of booleans, `None`, and of a 2-tuple of
//! optional strings) that a few `observed_sha256` inputs use (§3.0).

use serde_json::{Number, Value};
use std::fmt::Write as _;

mod ser;
pub use ser::{NotStreamable, to_bytes_of, try_stream};

/// Canonical bytes of a JSON value (UTF-8, no trailing newline).
pub fn to_bytes(value: &Value) -> Vec<u8> {
    let mut out = String::with_capacity(256);
    write_value(&mut out, value);
    out.into_bytes()
}

/// Canonical text of a JSON value.
pub fn to_string(value: &Value) -> String {
    let mut out = String::with_capacity(256);
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => write_list(out, ('[', ']'), items, write_value),
        Value::Object(map) => {
            // Sorting UTF-8 strings bytewise is sorting by code point, which is what Python does.
            // serde_json's default map already iterates in that order; we check rather than
            // trust it, so the bytes do not depend on serde_json's feature set, and only pay for
            // a sort when the order is not already right.
            let in_order = map
                .keys()
                .zip(map.keys().skip(1))
                .all(|(a, b)| a.as_bytes() < b.as_bytes());
            if in_order {
                write_entries(out, map.iter());
            } else {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                write_entries(out, entries);
            }
        }
    }
}

fn write_entries<'a>(out: &mut String, entries: impl IntoIterator<Item = (&'a String, &'a Value)>) {
    write_list(out, ('{', '}'), entries, |out, (k, v)| {
        write_string(out, k);
        out.push(':');
        write_value(out, v);
    });
}

/// `open`, the items (each written by `write`) with `,` between, `close`: a compact JSON array
/// or object, whichever writer's values the items are.
pub fn write_list<T>(
    out: &mut String,
    (open, close): (char, char),
    items: impl IntoIterator<Item = T>,
    mut write: impl FnMut(&mut String, T),
) {
    out.push(open);
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write(out, item);
    }
    out.push(close);
}

/// Number text standing for Python's `NaN` in a `serde_json::Value` (it parses as a float;
/// [`write_number_text`] writes it back as `NaN`, as Python's `json.dumps` does).
pub const NAN_MARKER: &str = "-0.0e-7777777777777777777";

/// Python's JSON string escaping with `ensure_ascii=False`.
pub fn write_string(out: &mut String, s: &str) {
    out.push('"');
    // Copy runs that need no escape in one go: a record is mostly such text, and pushing it
    // char by char was the largest single cost of canonicalising one (benches/core.rs).
    // Every byte that needs escaping is ASCII, so `i` always lands on a char boundary.
    let mut run_start = 0;
    for (i, b) in s.bytes().enumerate() {
        if !matches!(b, b'"' | b'\\' | 0x00..=0x1f) {
            continue;
        }
        out.push_str(&s[run_start..i]);
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => {
                let _ = write!(out, "\\u{b:04x}");
            }
        }
        run_start = i + 1;
    }
    out.push_str(&s[run_start..]);
    out.push('"');
}

/// Python's `json.dumps` string form with `ensure_ascii=True` (its default): everything outside space..`~` is a
/// lower-case `\uXXXX` escape (UTF-16 surrogate pairs for astral characters), except the five
/// short escapes.
pub fn write_ascii_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// Whether a JSON number's text denotes a Python float (it has a fraction or an exponent).
pub fn number_is_float(text: &str) -> bool {
    text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'))
}

fn write_number(out: &mut String, n: &Number) {
    // With serde_json's `arbitrary_precision`, `to_string` is the number exactly as parsed (or as
    // produced from a Rust integer), so the int/float distinction of the source text survives.
    write_number_text(out, &n.to_string());
}

/// A JSON number, given its exact source text, in Python's form.
pub(crate) fn write_number_text(out: &mut String, text: &str) {
    if text == NAN_MARKER {
        out.push_str("NaN");
    } else if number_is_float(text) {
        let value: f64 = text.parse().unwrap_or(f64::NAN);
        out.push_str(&python_float_repr(value));
    } else {
        out.push_str(&python_int_repr(text));
    }
}

/// Python `int.__repr__` of a JSON integer literal: exact at any size; `-0` is `0`.
pub fn python_int_repr(text: &str) -> String {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.bytes().all(|b| b == b'0') {
        return "0".to_string();
    }
    let trimmed = digits.trim_start_matches('0');
    if text.starts_with('-') {
        format!("-{trimmed}")
    } else {
        trimmed.to_string()
    }
}

/// Python `str()`/`repr()` of a float: [`python_float_repr`], but `nan`, `inf` and `-inf` as
/// Python prints them (not `json.dumps`'s `NaN`, `Infinity`).
pub fn python_float_str(value: f64) -> String {
    if value.is_nan() {
        "nan".into()
    } else if value.is_infinite() {
        if value > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        python_float_repr(value)
    }
}

/// Python `float.__repr__` (what `json.dumps` writes): shortest round-trip digits, fixed notation
/// when the decimal exponent is in -4..16, else `d.ddde+XX` with at least two exponent digits;
/// a whole number keeps `.0`. Non-finite values are written the way `json.dumps` writes them.
pub fn python_float_repr(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    if value == 0.0 {
        return if value.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        }
        .to_string();
    }
    // Rust's `{:e}` gives the shortest round-trip digits, e.g. `1.5e0`, `1e21`, `-1.2345e-7`.
    // When two strings of that length round-trip and the value lies exactly between them
    // (114149850690045.125), Rust's shortest form rounds the tie up where Python's rounds it to
    // even (`...045.12`); the correctly rounded form with that many digits, which breaks ties to
    // even, is Python's choice (found by the differential test, tests/json_differential.rs).
    let shortest = format!("{value:e}");
    let significant = shortest
        .split_once('e')
        .map_or(0, |(m, _)| m.bytes().filter(u8::is_ascii_digit).count());
    let sci = format!("{:.*e}", significant.saturating_sub(1), value);
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` always has an exponent");
    let exp: i32 = exp.parse().expect("`{:e}` exponent is an integer");
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    // Python's decpt: position of the decimal point relative to the first digit.
    let decpt = exp + 1;
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if (-3..=16).contains(&decpt) {
        if decpt <= 0 {
            out.push_str("0.");
            for _ in 0..(-decpt) {
                out.push('0');
            }
            out.push_str(&digits);
        } else {
            let decpt = decpt as usize;
            if digits.len() <= decpt {
                out.push_str(&digits);
                for _ in digits.len()..decpt {
                    out.push('0');
                }
                out.push_str(".0");
            } else {
                out.push_str(&digits[..decpt]);
                out.push('.');
                out.push_str(&digits[decpt..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        out.push('e');
        out.push(if e < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", e.abs()));
    }
    out
}

/// Python-text of a boolean (`True` / `False`).
pub fn python_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// Python `repr()` of an optional string: `None`, or the string in Python's quoting.
pub fn python_repr_opt_str(s: Option<&str>) -> String {
    match s {
        None => "None".to_string(),
        Some(s) => python_repr_str(s),
    }
}

/// Python-text of the 2-tuple of optional strings used by extension_echoed (§3.0, §3.6):
/// `('a', None)`.
pub fn python_pair_text(a: Option<&str>, b: Option<&str>) -> String {
    format!("({}, {})", python_repr_opt_str(a), python_repr_opt_str(b))
}

/// Python `str.__repr__`: single quotes unless the text has a `'` and no `"`; backslash, the
/// chosen quote, `\t` `\n` `\r` and non-printable characters escaped.
pub fn python_repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !python_is_printable(c) => {
                let cp = c as u32;
                if cp < 0x100 {
                    out.push_str(&format!("\\x{cp:02x}"));
                } else if cp < 0x10000 {
                    out.push_str(&format!("\\u{cp:04x}"));
                } else {
                    out.push_str(&format!("\\U{cp:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isprintable` for one character. Exact for Latin-1, which is every character an
/// HTTP header value can hold after Python's ISO-8859-1 decoding (the only place this is used);
/// above Latin-1 it knows the separators and the common format characters.
fn python_is_printable(c: char) -> bool {
    let cp = c as u32;
    match cp {
        0x00..=0x1f | 0x7f..=0xa0 | 0xad => false,
        0x20..=0xff => true,
        0x1680 | 0x2000..=0x200f | 0x2028..=0x202f | 0x205f..=0x2064 | 0x3000 | 0xfeff => false,
        0xe000..=0xf8ff | 0xf0000..=0x10ffff => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_float_forms() {
        let cases = [
            (1e21, "1e+21"),
            (1e-7, "1e-07"),
            (100.0, "100.0"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (1.5, "1.5"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123456789.125, "123456789.125"),
            (-2.5e-10, "-2.5e-10"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (0.1, "0.1"),
            (12345678901234567.0, "1.2345678901234568e+16"),
            // Exactly between two shortest forms: Python rounds the tie to even (the
            // differential test's first finding).
            (1.1414985069004513e14, "114149850690045.12"),
            (8.423467979530893e14, "842346797953089.2"),
            (5.997277621255993e14, "599727762125599.2"),
        ];
        for (value, expected) in cases {
            assert_eq!(python_float_repr(value), expected, "{value:e}");
        }
    }

    #[test]
    fn python_int_forms() {
        assert_eq!(python_int_repr("-0"), "0");
        assert_eq!(python_int_repr("0"), "0");
        assert_eq!(
            python_int_repr("12345678901234567890"),
            "12345678901234567890"
        );
        assert_eq!(python_int_repr("-17"), "-17");
    }

    #[test]
    fn python_repr_quotes_switch() {
        assert_eq!(python_repr_str("a"), "'a'");
        assert_eq!(python_repr_str("it's"), "\"it's\"");
        assert_eq!(python_repr_str("it's \"x\""), "'it\\'s \"x\"'");
        assert_eq!(python_repr_str("a\\b\tc"), "'a\\\\b\\tc'");
        assert_eq!(python_repr_str("\u{7f}\u{a0}\u{ad}é"), "'\\x7f\\xa0\\xadé'");
        assert_eq!(python_pair_text(Some("x"), None), "('x', None)");
    }

    #[test]
    fn escapes_like_python_json() {
        let v: Value = serde_json::from_str(r#"{"s":"a\"b\\c\n\u0001\u007f\u2028/"}"#).unwrap();
        assert_eq!(
            to_string(&v),
            "{\"s\":\"a\\\"b\\\\c\\n\\u0001\u{7f}\u{2028}/\"}"
        );
    }

    /// The plain char-by-char form of Python's escaping, as the oracle for the run-copying one.
    fn escape_char_by_char(s: &str) -> String {
        let mut out = String::from("\"");
        for ch in s.chars() {
            match ch {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{08}' => out.push_str("\\b"),
                '\u{0c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    #[test]
    fn run_copying_escape_matches_char_by_char() {
        let controls: String = (0u8..0x20).map(char::from).collect();
        let cases = [
            "",
            "plain ascii",
            controls.as_str(),
            "é\u{1f916}\"\\\u{0}ü\n✓",
            "\"leading and trailing\\",
            "démo 🤖 — ✓\u{7f}\u{2028}\u{1f}",
        ];
        for case in cases {
            let mut out = String::new();
            write_string(&mut out, case);
            assert_eq!(out, escape_char_by_char(case), "{case:?}");
        }
    }
}
