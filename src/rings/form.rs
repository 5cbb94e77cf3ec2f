//! The ring form (rings.md §6): Python's `json.dumps(ring, ensure_ascii=False, sort_keys=True,
//! indent=2)` and one final newline. Strings and numbers are written as the NENRIN canonical
//! form writes them (`crate::canonical`: Python's escapes and number spellings); only the layout
//! differs, so it is written here over the same pieces.

use crate::canonical::{write_number_text, write_string};
use crate::json::{JsonRef, ReadOptions, Tag, read};

/// Deepest nesting a ring may have. The reference writes with Python's own indenting encoder,
/// one generator per level, and raises `RecursionError` a little short of CPython's limit of
/// 1,000 frames; a ring nested this deep can only come from a witness identity built to be
/// deep, and is refused rather than written where the reference cannot write it.
pub const MAX_RING_DEPTH: usize = 980;

/// A value to write: the ring's own fields, or a stranger's JSON kept as its canonical text.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    Null,
    Int(u64),
    Str(String),
    /// Canonical JSON text (written again in this layout).
    Json(String),
    Array(Vec<Out>),
    /// Members in any order: written sorted by name.
    Object(Vec<(String, Out)>),
}

impl Out {
    pub fn str(s: impl Into<String>) -> Out {
        Out::Str(s.into())
    }

    pub fn opt_str(s: Option<&str>) -> Out {
        s.map_or(Out::Null, Out::str)
    }

    pub fn opt_json(s: Option<&str>) -> Out {
        s.map_or(Out::Null, |t| Out::Json(t.to_string()))
    }
}

/// The ring bytes of `value`.
pub fn to_bytes(value: &Out) -> Vec<u8> {
    let mut out = String::with_capacity(4096);
    write_out(&mut out, value, 0);
    out.push('\n');
    out.into_bytes()
}

/// The ring bytes of a parsed document (to tell whether a file is in ring form).
pub fn doc_bytes(value: JsonRef<'_>) -> Vec<u8> {
    let mut out = String::with_capacity(4096);
    write_ref(&mut out, value, 0);
    out.push('\n');
    out.into_bytes()
}

/// How deep a value nests (containers around its deepest scalar, itself included).
pub fn depth(value: JsonRef<'_>) -> usize {
    match value.tag() {
        Tag::Array => {
            1 + value
                .as_array()
                .into_iter()
                .flatten()
                .map(depth)
                .max()
                .unwrap_or(0)
        }
        Tag::Object => {
            1 + value
                .as_object()
                .map(|o| o.members().map(|(_, v)| depth(v)).max().unwrap_or(0))
                .unwrap_or(0)
        }
        _ => 0,
    }
}

fn newline(out: &mut String, level: usize) {
    out.push('\n');
    for _ in 0..level {
        out.push_str("  ");
    }
}

/// A non-empty array (items without a key) or object: each item on a line of its own one level
/// in, the closing bracket back at `level`.
fn write_nested<'k, T>(
    out: &mut String,
    (open, close): (char, char),
    items: impl IntoIterator<Item = (Option<&'k str>, T)>,
    level: usize,
    write: fn(&mut String, T, usize),
) {
    out.push(open);
    for (i, (key, item)) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        newline(out, level + 1);
        if let Some(key) = key {
            write_string(out, key);
            out.push_str(": ");
        }
        write(out, item, level + 1);
    }
    newline(out, level);
    out.push(close);
}

fn write_out(out: &mut String, value: &Out, level: usize) {
    match value {
        Out::Null => out.push_str("null"),
        Out::Int(n) => out.push_str(&n.to_string()),
        Out::Str(s) => write_string(out, s),
        Out::Json(text) => match read(text.as_bytes(), ReadOptions::LENIENT) {
            Ok(doc) => write_ref(out, doc.root(), level),
            // Never happens: the text was written by the canonical writer.
            Err(_) => out.push_str(text),
        },
        Out::Array(items) if items.is_empty() => out.push_str("[]"),
        Out::Array(items) => {
            let items = items.iter().map(|item| (None, item));
            write_nested(out, ('[', ']'), items, level, write_out);
        }
        Out::Object(members) if members.is_empty() => out.push_str("{}"),
        Out::Object(members) => {
            let mut sorted: Vec<&(String, Out)> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            let members = sorted.into_iter().map(|(k, v)| (Some(k.as_str()), v));
            write_nested(out, ('{', '}'), members, level, write_out);
        }
    }
}

fn write_ref(out: &mut String, value: JsonRef<'_>, level: usize) {
    match value.tag() {
        Tag::Null => out.push_str("null"),
        Tag::True => out.push_str("true"),
        Tag::False => out.push_str("false"),
        Tag::Number => {
            let text = value.number_text().unwrap_or("0");
            match text {
                "NaN" | "Infinity" | "-Infinity" if value.is_float() => out.push_str(text),
                _ => write_number_text(out, text),
            }
        }
        Tag::String => write_string(out, value.as_str().unwrap_or("")),
        Tag::Array => {
            let items = value.as_array().expect("an array");
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            let items = items.iter().map(|item| (None, item));
            write_nested(out, ('[', ']'), items, level, write_ref);
        }
        Tag::Object => {
            let entries = value.as_object().expect("an object").entries();
            if entries.is_empty() {
                out.push_str("{}");
                return;
            }
            let members = entries.into_iter().map(|(k, v)| (Some(k), v));
            write_nested(out, ('{', '}'), members, level, write_ref);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(t: &str) -> String {
        let d = read(t.as_bytes(), ReadOptions::LENIENT).unwrap();
        String::from_utf8(doc_bytes(d.root())).unwrap()
    }

    #[test]
    fn python_indent_two_sorted_layout() {
        assert_eq!(
            form(r#"{"b":[1,{"y":null,"x":[]}],"a":{},"é":"\u00e9\n","n":1.50,"i":1e400}"#),
            "{\n  \"a\": {},\n  \"b\": [\n    1,\n    {\n      \"x\": [],\n      \"y\": null\n    }\n  ],\n  \"i\": Infinity,\n  \"n\": 1.5,\n  \"é\": \"é\\n\"\n}\n"
        );
        assert_eq!(form("[]"), "[]\n");
        assert_eq!(form("NaN"), "NaN\n");
    }

    #[test]
    fn out_values_write_as_their_documents_do() {
        let v = Out::Object(vec![
            ("z".into(), Out::Int(3)),
            (
                "a".into(),
                Out::Array(vec![Out::Json(r#"{"k":[true]}"#.into()), Out::Null]),
            ),
            ("m".into(), Out::str("s")),
        ]);
        let text = String::from_utf8(to_bytes(&v)).unwrap();
        assert_eq!(text, form(r#"{"z":3,"a":[{"k":[true]},null],"m":"s"}"#));
    }

    #[test]
    fn depth_counts_containers() {
        let d = read(b"{\"a\":[1,[{}]],\"b\":2}", ReadOptions::LENIENT).unwrap();
        assert_eq!(depth(d.root()), 4);
    }
}
