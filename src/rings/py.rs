//! A JSON value as the reference builder (CPython) sees it once parsed: truthiness, `str()`,
//! equality (`1 == 1.0 == True`, a NaN equal to nothing), and the sets and sorts it makes of
//! discrepancy and record digests. The builder reads strangers' values with these rules
//! (rings.md §3, §4, §7 items 9 and 11), so a second builder must too.

use crate::canonical::{
    python_float_repr, python_float_str, python_int_repr, python_repr_str, write_string,
};
use crate::json::{JsonRef, Tag};
use std::collections::HashMap;

/// Python truthiness: null, false, 0, 0.0, "", [] and {} are false; NaN is true.
pub fn truthy(v: JsonRef<'_>) -> bool {
    match v.tag() {
        Tag::Null | Tag::False => false,
        Tag::True => true,
        Tag::Number => match number(v) {
            Some(Num::Int(text)) => text != "0",
            Some(Num::Float(f)) => f != 0.0,
            None => true,
        },
        Tag::String => !v.as_str().unwrap_or("").is_empty(),
        Tag::Array | Tag::Object => v.as_object().map_or_else(
            || v.as_array().is_some_and(|a| !a.is_empty()),
            |o| !o.is_empty(),
        ),
    }
}

/// A member that is present and truthy.
pub fn truthy_member<'a>(obj: JsonRef<'a>, key: &str) -> Option<JsonRef<'a>> {
    obj.get(key).filter(|v| truthy(*v))
}

/// Literally `true` (`x is True`).
pub fn is_true(v: Option<JsonRef<'_>>) -> bool {
    v.is_some_and(|v| v.tag() == Tag::True)
}

/// Literally `false` (`x is False`).
pub fn is_false(v: Option<JsonRef<'_>>) -> bool {
    v.is_some_and(|v| v.tag() == Tag::False)
}

/// A number as Python holds it: an exact int (its normalised text) or a float.
#[derive(Debug, Clone, PartialEq)]
pub enum Num {
    Int(String),
    Float(f64),
}

impl Num {
    fn as_f64(&self) -> f64 {
        match self {
            Num::Int(text) => text.parse().unwrap_or(f64::NAN),
            Num::Float(f) => *f,
        }
    }

    /// Text equal for equal numbers (`1`, `1.0` and `True` alike); None for NaN.
    fn eq_text(&self) -> Option<String> {
        match self {
            Num::Int(text) => Some(text.clone()),
            Num::Float(f) if f.is_nan() => None,
            Num::Float(f) if f.is_infinite() => Some(if *f > 0.0 { "inf" } else { "-inf" }.into()),
            // Every finite double that is a whole number is an exact integer: its exact
            // decimal is the int it equals (`1e20 == 10**20` in Python).
            Num::Float(f) if f.fract() == 0.0 => {
                let text = format!("{f:.0}");
                Some(if text == "-0" { "0".into() } else { text })
            }
            Num::Float(f) => Some(python_float_repr(*f)),
        }
    }
}

/// A number or a boolean (Python's `bool` is an `int`) as a [`Num`].
pub fn number(v: JsonRef<'_>) -> Option<Num> {
    match v.tag() {
        Tag::True => Some(Num::Int("1".into())),
        Tag::False => Some(Num::Int("0".into())),
        Tag::Number if v.is_float() => Some(Num::Float(v.as_f64().unwrap_or(f64::NAN))),
        Tag::Number => Some(Num::Int(python_int_repr(v.number_text().unwrap_or("0")))),
        _ => None,
    }
}

/// Python's `str()` of a value: a string as is, `True`, `404`, `1e+16`, `inf`, `None`, and the
/// `repr` forms of lists and dicts.
pub fn str_of(v: JsonRef<'_>) -> String {
    match v.tag() {
        Tag::String => v.as_str().unwrap_or("").to_string(),
        _ => {
            let mut out = String::new();
            repr_into(&mut out, v);
            out
        }
    }
}

/// Python's `repr()`.
fn repr_into(out: &mut String, v: JsonRef<'_>) {
    match v.tag() {
        Tag::Null => out.push_str("None"),
        Tag::True => out.push_str("True"),
        Tag::False => out.push_str("False"),
        Tag::Number => match number(v) {
            Some(Num::Int(text)) => out.push_str(&text),
            Some(Num::Float(f)) => out.push_str(&python_float_str(f)),
            None => {}
        },
        Tag::String => out.push_str(&python_repr_str(v.as_str().unwrap_or(""))),
        Tag::Array => {
            out.push('[');
            for (i, item) in v.as_array().into_iter().flatten().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr_into(out, item);
            }
            out.push(']');
        }
        Tag::Object => {
            out.push('{');
            for (i, (k, item)) in dict_items(v).into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&python_repr_str(k));
                out.push_str(": ");
                repr_into(out, item);
            }
            out.push('}');
        }
    }
}

/// An object's members as a dict holds them: each name where it first appeared, with its last
/// value.
pub fn dict_items(v: JsonRef<'_>) -> Vec<(&str, JsonRef<'_>)> {
    let Some(obj) = v.as_object() else {
        return Vec::new();
    };
    let mut out: Vec<(&str, JsonRef<'_>)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for (k, item) in obj.members() {
        match at.get(k) {
            Some(&i) => out[i].1 = item,
            None => {
                at.insert(k, out.len());
                out.push((k, item));
            }
        }
    }
    out
}

/// A text equal for two values exactly when Python's `==` holds between them; None when the
/// value holds a NaN (equal to nothing, not even another NaN read from the same text). It is
/// the canonical text with numbers and booleans in one form each (`1.0`, `1e0`, `true` → `1`),
/// so a value without numbers or booleans has its canonical text as its key.
pub fn eq_key(v: JsonRef<'_>) -> Option<String> {
    let mut out = String::new();
    eq_key_into(&mut out, v).then_some(out)
}

fn eq_key_into(out: &mut String, v: JsonRef<'_>) -> bool {
    match v.tag() {
        Tag::Null => out.push_str("null"),
        Tag::String => write_string(out, v.as_str().unwrap_or("")),
        Tag::True | Tag::False | Tag::Number => match number(v).and_then(|n| n.eq_text()) {
            Some(text) => out.push_str(&text),
            None => return false,
        },
        Tag::Array => {
            out.push('[');
            for (i, item) in v.as_array().into_iter().flatten().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !eq_key_into(out, item) {
                    return false;
                }
            }
            out.push(']');
        }
        Tag::Object => {
            out.push('{');
            let entries = v.as_object().map(|o| o.entries()).unwrap_or_default();
            for (i, (k, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                if !eq_key_into(out, item) {
                    return false;
                }
            }
            out.push('}');
        }
    }
    true
}

/// How a hashable scalar sorts.
#[derive(Debug, Clone, PartialEq)]
pub enum Sort {
    Str(String),
    Num(f64),
}

/// A hashable value (string, number, boolean, null) as a set member: its equality key, how it
/// sorts, and its canonical text (what the ring writes).
#[derive(Debug, Clone, PartialEq)]
pub struct Scalar {
    key: Option<String>,
    pub sort: Sort,
    pub text: String,
}

/// Why a value cannot go into a set (Python raises `TypeError: unhashable type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unhashable;

impl Scalar {
    pub fn of(v: JsonRef<'_>) -> Result<Scalar, Unhashable> {
        let sort = match v.tag() {
            Tag::Array | Tag::Object => return Err(Unhashable),
            Tag::String => Sort::Str(v.as_str().unwrap_or("").to_string()),
            Tag::Null => Sort::Num(f64::NAN),
            _ => Sort::Num(number(v).map_or(f64::NAN, |n| n.as_f64())),
        };
        let key = eq_key(v).map(|k| match v.tag() {
            Tag::String => k,
            _ => format!("#{k}"),
        });
        Ok(Scalar {
            key,
            sort,
            text: v.canonical_string(),
        })
    }

    /// A string scalar.
    pub fn string(s: &str) -> Scalar {
        let mut text = String::new();
        write_string(&mut text, s);
        Scalar {
            key: Some(text.clone()),
            sort: Sort::Str(s.to_string()),
            text,
        }
    }

    pub fn is_nan(&self) -> bool {
        self.key.is_none()
    }

    /// The text equal values share (None for a NaN, equal to nothing).
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }
}

/// Two scalars Python cannot order (`'<' not supported between instances of 'int' and 'str'`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unorderable {
    pub a: String,
    pub b: String,
}

/// A Python `set` of scalars: the first of equal values is kept.
#[derive(Debug, Clone, Default)]
pub struct ScalarSet {
    index: HashMap<String, usize>,
    items: Vec<Scalar>,
}

impl ScalarSet {
    /// Add `s` unless an equal value is there; whether it was added.
    pub fn insert(&mut self, s: Scalar) -> bool {
        match &s.key {
            Some(key) if self.index.contains_key(key) => false,
            Some(key) => {
                self.index.insert(key.clone(), self.items.len());
                self.items.push(s);
                true
            }
            None => {
                self.items.push(s);
                true
            }
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Bytes of canonical text held.
    pub fn text_bytes(&self) -> usize {
        self.items.iter().map(|s| s.text.len()).sum()
    }

    /// `sorted(set)`: the canonical texts in Python's order, or the two values it could not
    /// compare.
    pub fn sorted(&self) -> Result<Vec<String>, Unorderable> {
        let mut items: Vec<&Scalar> = self.items.iter().collect();
        sort_scalars(&mut items, |s| s)?;
        Ok(items.into_iter().map(|s| s.text.clone()).collect())
    }
}

/// Sort by scalar in Python's order; refuse what Python cannot compare: a string beside a
/// number, or a NaN beside anything (its comparisons are all false, so the order would be the
/// sort algorithm's, not the values').
pub fn sort_scalars<T>(items: &mut [T], key: impl Fn(&T) -> &Scalar) -> Result<(), Unorderable> {
    if items.len() < 2 {
        return Ok(());
    }
    check_orderable(items.iter().map(&key))?;
    items.sort_by(|a, b| compare(key(a), key(b)));
    Ok(())
}

/// Refuse a group Python could not sort (see [`sort_scalars`]).
pub fn check_orderable<'s>(mut items: impl Iterator<Item = &'s Scalar>) -> Result<(), Unorderable> {
    let Some(first) = items.next() else {
        return Ok(());
    };
    let mut seen_str = matches!(first.sort, Sort::Str(_)).then_some(first);
    let mut seen_num = matches!(first.sort, Sort::Num(_)).then_some(first);
    let mut count = 1;
    let mut nan = first.is_nan().then_some(first);
    for s in items {
        count += 1;
        match s.sort {
            Sort::Str(_) => seen_str = seen_str.or(Some(s)),
            Sort::Num(_) => seen_num = seen_num.or(Some(s)),
        }
        if s.is_nan() {
            nan = nan.or(Some(s));
        }
    }
    if let (Some(a), Some(b)) = (seen_str, seen_num) {
        return Err(Unorderable {
            a: a.text.clone(),
            b: b.text.clone(),
        });
    }
    if let Some(n) = nan.filter(|_| count > 1) {
        return Err(Unorderable {
            a: n.text.clone(),
            b: "another value".into(),
        });
    }
    Ok(())
}

/// The order of two scalars of one kind (checked by [`check_orderable`]).
pub fn compare(a: &Scalar, b: &Scalar) -> std::cmp::Ordering {
    match (&a.sort, &b.sort) {
        (Sort::Str(x), Sort::Str(y)) => x.cmp(y),
        (Sort::Num(x), Sort::Num(y)) => x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal),
        (Sort::Str(_), Sort::Num(_)) => std::cmp::Ordering::Greater,
        (Sort::Num(_), Sort::Str(_)) => std::cmp::Ordering::Less,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{ReadOptions, read};

    fn doc(t: &str) -> crate::json::Doc {
        read(t.as_bytes(), ReadOptions::LENIENT).unwrap()
    }

    #[test]
    fn truthiness_as_python() {
        let falsy = [
            "null", "false", "0", "-0", "0.0", "-0.0", "0e9", "1e-400", "\"\"", "[]", "{}",
        ];
        for t in falsy {
            assert!(!truthy(doc(t).root()), "{t}");
        }
        let truthy_ = [
            "true", "1", "-1", "0.5", "NaN", "Infinity", "\" \"", "[0]", "{\"\":0}", "\"0\"",
        ];
        for t in truthy_ {
            assert!(truthy(doc(t).root()), "{t}");
        }
    }

    #[test]
    fn str_as_python() {
        let cases = [
            ("\"x\"", "x"),
            ("true", "True"),
            ("404", "404"),
            ("-0", "0"),
            ("1.0", "1.0"),
            ("1e16", "1e+16"),
            ("1e400", "inf"),
            ("-Infinity", "-inf"),
            ("NaN", "nan"),
            ("null", "None"),
            ("[1, \"a\", null, [true]]", "[1, 'a', None, [True]]"),
            (
                "{\"b\": 1, \"a\": \"it's\", \"b\": 2}",
                "{'b': 2, 'a': \"it's\"}",
            ),
        ];
        for (t, want) in cases {
            assert_eq!(str_of(doc(t).root()), want, "{t}");
        }
    }

    #[test]
    fn equality_as_python() {
        let eq = |a: &str, b: &str| {
            let (a, b) = (doc(a), doc(b));
            matches!((eq_key(a.root()), eq_key(b.root())), (Some(x), Some(y)) if x == y)
        };
        assert!(eq("1", "1.0"));
        assert!(eq("true", "1"));
        assert!(eq("{\"a\":1,\"b\":[false]}", "{\"b\":[0.0],\"a\":1e0}"));
        assert!(eq("1e20", "100000000000000000000"));
        assert!(!eq("1e20", "100000000000000000001"));
        assert!(!eq("\"1\"", "1"));
        assert!(!eq("NaN", "NaN"));
        assert!(!eq("[1,2]", "[2,1]"));
        assert!(eq("-0.0", "0"));
    }

    #[test]
    fn sets_keep_the_first_and_sort_or_refuse_as_python() {
        let d = doc("[\"b\", \"a\", \"b\", 3, 1.0, true, 2]");
        let items: Vec<_> = d.root().as_array().unwrap().iter().collect();
        let mut strings = ScalarSet::default();
        for v in &items[..3] {
            strings.insert(Scalar::of(*v).unwrap());
        }
        assert_eq!(strings.sorted().unwrap(), ["\"a\"", "\"b\""]);
        let mut nums = ScalarSet::default();
        for v in &items[3..] {
            nums.insert(Scalar::of(*v).unwrap());
        }
        // 1.0 is kept, True (== 1) is not.
        assert_eq!(nums.sorted().unwrap(), ["1.0", "2", "3"]);
        let mut mixed = ScalarSet::default();
        mixed.insert(Scalar::of(items[0]).unwrap());
        mixed.insert(Scalar::of(items[3]).unwrap());
        assert!(mixed.sorted().is_err());
        assert_eq!(Scalar::of(doc("[1]").root()), Err(Unhashable));
    }
}
