//! The JavaScript semantics the pool's rules use (witness-pool.md §3.6): the reference responder
//! runs on Node, and what it observes goes through `JSON.parse`, `String()`, truthiness,
//! `trim()`, `JSON.stringify` and `localeCompare`. Two hashes (§3.5) are taken over
//! `JSON.stringify` output, so a parsed value keeps V8's member order here, never a sorted one.
//!
//! Parsing reuses the crate's reader ([`crate::json::read`]) with JavaScript's options: no
//! `NaN`, a repeated name kept (first position, last value). Where it still differs from V8,
//! only for bodies no honest surface serves, the text reads as not JSON ("none"): nesting
//! deeper than [`MAX_DEPTH`], and an integer of more than 4,300 digits (the reader's Python
//! limit). An unpaired surrogate escape reads as U+FFFD: what Node's UTF-8 encoder writes for it
//! in an observed value, though inside the two `JSON.stringify` hashes the reference writes
//! `\udXXX` instead, so such a body hashes differently there (accepted, spec §11 item 4).

use crate::json::{JsonRef, ReadOptions, Tag};
use icu_collator::{Collator, CollatorBorrowed};
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::LazyLock;

/// Deepest nesting of objects and arrays parsed; one more level is "none" (serde_json's limit,
/// the one the spec names as an accepted difference: V8 has none).
pub const MAX_DEPTH: usize = 128;

/// A value `JSON.parse` returns.
#[derive(Debug, Clone, PartialEq)]
pub enum JsValue {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<JsValue>),
    Object(JsObject),
}

/// An object's members in V8's order: array-index names ascending, then the others in the
/// order first written; each name once, with the last value written for it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JsObject {
    members: Vec<(String, JsValue)>,
}

impl JsObject {
    /// The object `JSON.parse` builds from `written`, the members as the text has them.
    pub fn from_written(written: impl IntoIterator<Item = (String, JsValue)>) -> JsObject {
        let mut members: Vec<(String, JsValue)> = Vec::new();
        let mut position: HashMap<String, usize> = HashMap::new();
        for (name, value) in written {
            match position.get(&name) {
                Some(&at) => members[at].1 = value,
                None => {
                    position.insert(name.clone(), members.len());
                    members.push((name, value));
                }
            }
        }
        // Stable: the other names keep the order they were first written in.
        members.sort_by_key(|(name, _)| array_index(name).map_or((1, 0), |index| (0, index)));
        JsObject { members }
    }

    pub fn get(&self, name: &str) -> Option<&JsValue> {
        self.members.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    pub fn members(&self) -> impl Iterator<Item = (&str, &JsValue)> {
        self.members.iter().map(|(n, v)| (n.as_str(), v))
    }
}

/// The value of an array-index name ("0" … "4294967294" in canonical decimal form).
fn array_index(name: &str) -> Option<u32> {
    let canonical = name == "0" || (!name.starts_with('0') && name.len() <= 10);
    if !canonical || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse::<u64>()
        .ok()
        .filter(|&n| n <= 4_294_967_294)
        .map(|n| n as u32)
}

impl JsValue {
    /// `v.name` for a parsed value: an object's member; nothing (`undefined`) on anything else,
    /// since no name the rules read exists on a JSON array, string or number in JavaScript.
    pub fn get(&self, name: &str) -> Option<&JsValue> {
        match self {
            JsValue::Object(object) => object.get(name),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            JsValue::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[JsValue]> {
        match self {
            JsValue::Array(items) => Some(items),
            _ => None,
        }
    }

    /// As a `serde_json::Value` (for the crate's card canonicaliser): numbers carry their
    /// JavaScript text, a non-finite number (`1e400` parses to Infinity) becomes `null` as
    /// `JSON.stringify` writes it. Member order is lost: a `Map` sorts.
    pub fn to_json_value(&self) -> Value {
        match self {
            JsValue::Null => Value::Null,
            JsValue::Bool(b) => Value::Bool(*b),
            JsValue::Number(n) if n.is_finite() => {
                serde_json::from_str(&number_string(*n)).unwrap_or(Value::Null)
            }
            JsValue::Number(_) => Value::Null,
            JsValue::String(s) => Value::String(s.clone()),
            JsValue::Array(items) => Value::Array(items.iter().map(Self::to_json_value).collect()),
            JsValue::Object(object) => Value::Object(
                object
                    .members()
                    .map(|(n, v)| (n.to_string(), v.to_json_value()))
                    .collect(),
            ),
        }
    }
}

/// A body as the reference reads it: UTF-8 with U+FFFD for each invalid sequence (the WHATWG
/// decoder's substitution, which Rust's lossy decoding follows), a leading BOM kept.
pub fn decode_body(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `JSON.parse(text)`, or `None` where it throws (and where this parser's limits are passed).
pub fn parse(text: &str) -> Option<JsValue> {
    let options = ReadOptions {
        python_constants: false,
        refuse_duplicates: false,
        refuse_lone_surrogates: false,
        max_depth: MAX_DEPTH,
    };
    let doc = crate::json::read(text.as_bytes(), options).ok()?;
    Some(from_doc(doc.root()))
}

fn from_doc(value: JsonRef<'_>) -> JsValue {
    match value.tag() {
        Tag::Null => JsValue::Null,
        Tag::False => JsValue::Bool(false),
        Tag::True => JsValue::Bool(true),
        Tag::Number => JsValue::Number(value.as_f64().unwrap_or(f64::NAN)),
        Tag::String => JsValue::String(value.as_str().unwrap_or_default().to_string()),
        Tag::Array => JsValue::Array(
            value
                .as_array()
                .map_or_else(Vec::new, |items| items.iter().map(from_doc).collect()),
        ),
        Tag::Object => JsValue::Object(JsObject::from_written(
            value
                .as_object()
                .into_iter()
                .flat_map(|object| object.members())
                .map(|(name, member)| (name.to_string(), from_doc(member))),
        )),
    }
}

/// `a === b` for parsed values: primitives by value (`NaN` never, `-0` equals `0`); arrays and
/// objects are equal only to themselves, and two parsed documents never share one.
pub fn strict_equals(a: &JsValue, b: &JsValue) -> bool {
    match (a, b) {
        (JsValue::Array(_) | JsValue::Object(_), _) => false,
        _ => a == b,
    }
}

/// Truthiness; `None` is `undefined`.
pub fn truthy(value: Option<&JsValue>) -> bool {
    match value {
        None | Some(JsValue::Null) => false,
        Some(JsValue::Bool(b)) => *b,
        Some(JsValue::Number(n)) => *n != 0.0 && !n.is_nan(),
        Some(JsValue::String(s)) => !s.is_empty(),
        Some(JsValue::Array(_) | JsValue::Object(_)) => true,
    }
}

/// `String(v)`; `None` is `undefined`.
pub fn string(value: Option<&JsValue>) -> String {
    match value {
        None => "undefined".to_string(),
        Some(JsValue::Null) => "null".to_string(),
        Some(JsValue::Bool(b)) => b.to_string(),
        Some(JsValue::Number(n)) => number_string(*n),
        Some(JsValue::String(s)) => s.clone(),
        Some(JsValue::Array(items)) => items
            .iter()
            .map(|item| match item {
                JsValue::Null => String::new(),
                item => string(Some(item)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(JsValue::Object(_)) => "[object Object]".to_string(),
    }
}

/// `String(v)` when `v` is truthy, else `""`: the form most observed members take (§3.3).
pub fn string_if_truthy(value: Option<&JsValue>) -> String {
    if truthy(value) {
        string(value)
    } else {
        String::new()
    }
}

/// ECMAScript `Number::toString`: shortest round-trip digits (`2.0` → `2`, `1e21` → `1e+21`),
/// `-0` → `0`.
pub fn number_string(n: f64) -> String {
    if n == 0.0 {
        return "0".to_string();
    }
    ryu_js::Buffer::new().format(n).to_string()
}

/// `JSON.stringify(v)` without white space (§3.5).
pub fn stringify(value: &JsValue) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

fn write_json(value: &JsValue, out: &mut String) {
    match value {
        JsValue::Null => out.push_str("null"),
        JsValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        JsValue::Number(n) if n.is_finite() => out.push_str(&number_string(*n)),
        JsValue::Number(_) => out.push_str("null"),
        JsValue::String(s) => write_json_string(s, out),
        JsValue::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        JsValue::Object(object) => {
            out.push('{');
            for (i, (name, member)) in object.members().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(name, out);
                out.push(':');
                write_json(member, out);
            }
            out.push('}');
        }
    }
}

/// A string as `JSON.stringify` writes it: only `"`, `\` and the code points below U+0020
/// escaped; everything else raw (U+007F, U+2028 and `/` included).
pub fn write_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// JavaScript's WhiteSpace and LineTerminator: what `trim()` removes and `\s` matches. Not
/// Rust's `char::is_whitespace`, which adds U+0085 and leaves out U+FEFF (a BOM).
pub fn is_space(c: char) -> bool {
    matches!(c,
        '\u{9}'..='\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}'
        | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}')
}

/// `s.trim()`: JavaScript's white space and line terminators at both ends (a BOM included).
pub fn trim(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// The first `n` UTF-16 code units of `s` (`s.slice(0, n)`), as UTF-8: a cut inside a surrogate
/// pair leaves a dangling high surrogate, which the reference's UTF-8 encoder writes as U+FFFD.
pub fn first_code_units(s: &str, n: usize) -> String {
    let mut out = String::new();
    let mut units = 0;
    for c in s.chars() {
        let width = c.len_utf16();
        if units + width > n {
            if units < n {
                out.push(char::REPLACEMENT_CHARACTER);
            }
            break;
        }
        out.push(c);
        units += width;
    }
    out
}

/// Node's default collator: the CLDR root collation at tertiary strength.
static ROOT_COLLATOR: LazyLock<CollatorBorrowed<'static>> = LazyLock::new(|| {
    Collator::try_new(Default::default(), Default::default())
        .expect("the compiled root collation data is part of the binary")
});

/// `a.localeCompare(b)` under Node's default locale (§3.5): punctuation before digits before
/// letters, case a last-level difference with lower case first. Not code point order.
pub fn locale_compare(a: &str, b: &str) -> Ordering {
    ROOT_COLLATOR.compare(a, b)
}

/// `items.sort((x, y) => key(x).localeCompare(key(y)))`: stable, so equal keys keep their order.
pub fn sort_by_locale_compare<T>(items: &mut [T], key: impl Fn(&T) -> String) {
    items.sort_by(|x, y| locale_compare(&key(x), &key(y)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> JsValue {
        parse(text).unwrap_or_else(|| panic!("{text} parses"))
    }

    #[test]
    fn member_order_is_v8s() {
        let v = parsed(
            r#"{"kty":"OKP","2":"b","crv":"Ed25519","1":"a","kty":"EC","01":"x","4294967295":"y","4294967294":"z"}"#,
        );
        assert_eq!(
            stringify(&v),
            r#"{"1":"a","2":"b","4294967294":"z","kty":"EC","crv":"Ed25519","01":"x","4294967295":"y"}"#
        );
        assert_eq!(array_index("0"), Some(0));
        assert_eq!(array_index("00"), None);
        assert_eq!(array_index("-1"), None);
        assert_eq!(array_index("+1"), None);
        assert_eq!(array_index("１"), None);
    }

    #[test]
    fn strict_json_only() {
        for text in [
            "\u{feff}{}",
            "{\"a\":1,}",
            "[1,]",
            "NaN",
            "Infinity",
            "/* c */ 1",
            "{'a':1}",
            "01",
            "1.",
            "\"\t\"",
            "",
            " ",
            "{} x",
        ] {
            assert_eq!(parse(text), None, "{text:?}");
        }
        assert_eq!(parsed(" \r\n\t1 "), JsValue::Number(1.0));
        assert_eq!(parsed("1e400"), JsValue::Number(f64::INFINITY));
        assert_eq!(parsed(r#""\ud800x""#), JsValue::String("\u{fffd}x".into()));
        assert_eq!(parsed(r#""\ud83d\ude00""#), JsValue::String("😀".into()));
    }

    #[test]
    fn depth_limit_reads_as_none() {
        let at_limit = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(&at_limit).is_some());
        let deeper = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(parse(&deeper), None);
    }

    #[test]
    fn string_truthy_and_numbers() {
        let v = parsed(
            r#"{"n":2.0,"z":-0,"big":1e21,"small":1e-7,"a":[1,null,"x",[2,3],{}],"o":{},"e":"","f":false}"#,
        );
        let s = |name: &str| string(v.get(name));
        assert_eq!(s("n"), "2");
        assert_eq!(s("z"), "0");
        assert_eq!(s("big"), "1e+21");
        assert_eq!(s("small"), "1e-7");
        assert_eq!(s("a"), "1,,x,2,3,[object Object]");
        assert_eq!(s("o"), "[object Object]");
        assert_eq!(s("missing"), "undefined");
        assert_eq!(string(Some(&JsValue::Null)), "null");
        assert_eq!(string(Some(&JsValue::Number(f64::INFINITY))), "Infinity");
        for falsy in ["z", "e", "f", "missing"] {
            assert!(!truthy(v.get(falsy)), "{falsy}");
            assert_eq!(string_if_truthy(v.get(falsy)), "");
        }
        assert!(!truthy(Some(&JsValue::Number(f64::NAN))));
        for truthy_one in ["n", "a", "o"] {
            assert!(truthy(v.get(truthy_one)), "{truthy_one}");
        }
    }

    #[test]
    fn stringify_escapes_as_js_does() {
        let v = parsed(
            r#"["\"\\\b\f\n\r\t\u0001\u001f\u007f\u2028/é",1.5,-0,1e400,true,null,{"a":[]}]"#,
        );
        assert_eq!(
            stringify(&v),
            "[\"\\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001f\u{7f}\u{2028}/é\",1.5,0,null,true,null,{\"a\":[]}]"
        );
    }

    #[test]
    fn trim_and_code_units() {
        assert_eq!(trim("\u{feff}\u{a0} a b\u{3000}\u{2028}\n"), "a b");
        assert_eq!(trim("\u{85}x\u{200b}"), "\u{85}x\u{200b}");
        assert_eq!(first_code_units("ab😀c", 3), "ab\u{fffd}");
        assert_eq!(first_code_units("ab😀c", 4), "ab😀");
        assert_eq!(first_code_units("ab😀c", 2), "ab");
        assert_eq!(first_code_units("ab", 200), "ab");
    }

    #[test]
    fn locale_compare_is_root_collation() {
        let mut ids = vec!["Key-2", "key-1", "key_0", "key.9"];
        sort_by_locale_compare(&mut ids, |s| s.to_string());
        assert_eq!(ids, ["key_0", "key-1", "Key-2", "key.9"]);
        assert_eq!(locale_compare("a", "A"), Ordering::Less);
        assert_eq!(locale_compare("a", "b"), Ordering::Less);
        assert_eq!(locale_compare("B", "a"), Ordering::Greater);
        assert_eq!(locale_compare("9", "a"), Ordering::Less);
        assert_eq!(locale_compare("-", "0"), Ordering::Less);
        // Equal under the collator keep document order.
        let mut pairs = vec![("x", 1), ("x", 0)];
        sort_by_locale_compare(&mut pairs, |p| p.0.to_string());
        assert_eq!(pairs, [("x", 1), ("x", 0)]);
    }

    #[test]
    fn strict_equality() {
        let v = parsed(r#"["k",5,-0,0,{},[]]"#);
        let items = v.as_array().unwrap();
        assert!(strict_equals(&items[0], &JsValue::String("k".into())));
        assert!(strict_equals(&items[1], &JsValue::Number(5.0)));
        assert!(!strict_equals(&items[1], &JsValue::String("5".into())));
        assert!(strict_equals(&items[2], &items[3]));
        assert!(!strict_equals(&items[4], &items[4].clone()));
        assert!(!strict_equals(&items[5], &items[5].clone()));
    }

    #[test]
    fn body_decoding_keeps_the_bom_and_replaces_invalid_bytes() {
        assert_eq!(decode_body(b"\xef\xbb\xbfx"), "\u{feff}x");
        assert_eq!(decode_body(b"a\xffb\xe2\x82"), "a\u{fffd}b\u{fffd}");
    }

    #[test]
    fn json_value_carries_js_numbers() {
        let v = parsed(r#"{"a":5.0,"b":1e400,"c":[0.1]}"#);
        assert_eq!(
            v.to_json_value().to_string(),
            r#"{"a":5,"b":null,"c":[0.1]}"#
        );
    }
}
