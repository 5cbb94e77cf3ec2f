//! Card canonicalisation: the bytes a card signature is made over (A2A §8.4.1), per profile.
//!
//! The spec text and the SDKs disagree (A2A#2122, a2a-js#627), so every profile has a name and a
//! verification always says which one verified (card-signature-and-terms.md §7.1):
//!
//! - [`Profile::Sdk`] (§2.7): what a2a-js ≥ 1.0.1 and a2a-sdk (Python) ≥ 1.1.4 sign, byte for
//!   byte. Project onto the 1.0 proto shape (camelCase or snake_case names), refuse wrong JSON
//!   types, drop implicit defaults, then drop every empty string, empty array, empty object and
//!   null ("cleanEmpty", also inside extension `params`), then RFC 8785.
//! - [`Profile::SpecLiteral`]: §8.4.1 as written: required members and explicitly set optional
//!   members kept even when empty; implicit defaults dropped; no cleanEmpty.
//! - [`Profile::PythonLegacy`]: a2a-sdk ≤ 1.1.3: the SDK profile's members, serialised by
//!   `json.dumps(sort_keys=True, separators=(",", ":"))`: ASCII `\uXXXX` escapes, code-point key
//!   order, Struct numbers as Python floats (`1.0`, `-0.0`, `1e-07`).
//! - [`Profile::Js100`]: the a2a-js 1.0.0 signer: the raw card minus `signatures`, cleanEmpty,
//!   RFC 8785; no projection, so unknown members and `required:false` are inside.
//!
//! Each canonicalisation also lists the members of the raw card that its payload does not cover
//! (§7.4): a signature says nothing about them.

use super::schema::{AGENT_CARD, Cardinality, Field, Kind, Msg, Presence};
use serde_json::{Map, Value};
use std::collections::HashSet;

/// A named canonicalisation profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Profile {
    Sdk,
    SpecLiteral,
    PythonLegacy,
    Js100,
}

impl Profile {
    /// Every profile, in the order verification tries them: the SDK profile first, then the
    /// labelled fallbacks.
    pub const ALL: [Profile; 4] = [
        Profile::Sdk,
        Profile::SpecLiteral,
        Profile::PythonLegacy,
        Profile::Js100,
    ];

    /// The name written in records and printed by `card verify`.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Sdk => "sdk",
            Profile::SpecLiteral => "spec-literal",
            Profile::PythonLegacy => "python-legacy",
            Profile::Js100 => "js-1.0.0",
        }
    }

    /// What the profile signs, in one clause (used in `verified_reason`).
    pub fn description(self) -> &'static str {
        match self {
            Profile::Sdk => PROFILE_SDK_TEXT,
            Profile::SpecLiteral => PROFILE_SPEC_LITERAL_TEXT,
            Profile::PythonLegacy => PROFILE_PYTHON_LEGACY_TEXT,
            Profile::Js100 => PROFILE_JS_100_TEXT,
        }
    }
}

/// [`Profile::description`] of the SDK profile.
pub const PROFILE_SDK_TEXT: &str = "the sdk profile (RFC 8785 over the A2A 1.0 proto shape with implicit defaults, empty members and signatures removed; what a2a-js >= 1.0.1 and a2a-sdk >= 1.1.4 sign)";
/// [`Profile::description`] of the spec-literal profile.
pub const PROFILE_SPEC_LITERAL_TEXT: &str = "the spec-literal fallback profile (A2A section 8.4.1 as written: required and explicitly set optional members kept even when empty; no SDK signs this)";
/// [`Profile::description`] of the python-legacy profile.
pub const PROFILE_PYTHON_LEGACY_TEXT: &str = "the python-legacy fallback profile (a2a-sdk <= 1.1.3: json.dumps with ASCII escapes, code-point key order and Struct numbers as Python floats, not RFC 8785)";
/// [`Profile::description`] of the js-1.0.0 profile.
pub const PROFILE_JS_100_TEXT: &str = "the js-1.0.0 fallback profile (a2a-js 1.0.0 signer: the raw card minus signatures with empty members removed, RFC 8785, no schema projection)";

/// Why a member of the raw card is outside a payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UncoveredWhy {
    /// Not part of the A2A 1.0 schema (0.3 and legacy fields, anything unknown).
    OutsideSchema,
    /// A proto3 implicit default (`""`, `false`, `[]`, `{}` of a non-optional field).
    ImplicitDefault,
    /// Empty (`""`, `[]`, `{}`, or became empty once its own empties were removed).
    Empty,
    /// `null`, which ProtoJSON reads as "not set".
    Null,
    /// The snake_case spelling of a member also written in camelCase (the camelCase one counts).
    NameShadowed,
}

impl UncoveredWhy {
    pub fn code(self) -> &'static str {
        match self {
            UncoveredWhy::OutsideSchema => "outside_schema",
            UncoveredWhy::ImplicitDefault => "implicit_default",
            UncoveredWhy::Empty => "empty",
            UncoveredWhy::Null => "null",
            UncoveredWhy::NameShadowed => "name_shadowed",
        }
    }
}

/// One member of the raw card that a payload does not cover, as a JSON Pointer (RFC 6901).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uncovered {
    pub pointer: String,
    pub why: UncoveredWhy,
}

/// A payload and what it leaves out.
#[derive(Debug, Clone)]
pub struct Canonical {
    pub profile: Profile,
    pub bytes: Vec<u8>,
    /// Topmost uncovered members only (a dropped object's own members are not listed again).
    pub uncovered: Vec<Uncovered>,
}

/// Why a card has no payload under a profile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CardInvalid {
    #[error("invalid card: the card is {found}, not a JSON object")]
    NotObject { found: &'static str },
    #[error(
        "invalid card: wrong scalar type at {pointer}: {message}.{field} must be {expected}, found {found}"
    )]
    WrongType {
        pointer: String,
        message: &'static str,
        field: &'static str,
        expected: &'static str,
        found: &'static str,
    },
    #[error(
        "invalid card: {pointer} sets {count} members of the {message} oneof ({names}); at most one may be set"
    )]
    OneofConflict {
        pointer: String,
        message: &'static str,
        count: usize,
        names: String,
    },
    #[error("invalid card: not I-JSON: {0}")]
    NotIJson(String),
}

/// The payload of `card` under `profile`.
pub fn canonicalize_card(card: &Value, profile: Profile) -> Result<Canonical, CardInvalid> {
    let mut recorder = Recorder::default();
    let bytes = match profile {
        Profile::Sdk | Profile::PythonLegacy | Profile::SpecLiteral => {
            let mode = if profile == Profile::SpecLiteral {
                Mode::SpecLiteral
            } else {
                Mode::Sdk
            };
            let mut projector = Projector {
                mode,
                rec: &mut recorder,
            };
            let projected = projector.message(&AGENT_CARD, card, &Seg::Root, "AgentCard")?;
            let projected = Value::Object(projected);
            if profile == Profile::PythonLegacy {
                let mut out = String::new();
                python_dumps(&projected, &mut out);
                out.into_bytes()
            } else {
                crate::jcs::canonicalize(&projected)
                    .map_err(|e| CardInvalid::NotIJson(e.to_string()))?
            }
        }
        Profile::Js100 => {
            let Value::Object(map) = card else {
                return Err(CardInvalid::NotObject {
                    found: type_name(card),
                });
            };
            let mut cleaned = Map::new();
            for (name, value) in map {
                if name == "signatures" {
                    continue;
                }
                if let Some(v) = clean_empty(value, &Seg::Key(&Seg::Root, name), &mut recorder) {
                    cleaned.insert(name.clone(), v);
                }
            }
            crate::jcs::canonicalize(&Value::Object(cleaned))
                .map_err(|e| CardInvalid::NotIJson(e.to_string()))?
        }
    };
    Ok(Canonical {
        profile,
        bytes,
        uncovered: recorder.topmost(),
    })
}

/// A JSON Pointer under construction; rendered only when something is recorded, so the hot path
/// allocates nothing for it.
enum Seg<'a> {
    Root,
    Key(&'a Seg<'a>, &'a str),
    Index(&'a Seg<'a>, usize),
}

impl Seg<'_> {
    fn render(&self) -> String {
        let mut parts = Vec::new();
        let mut cur = self;
        loop {
            match cur {
                Seg::Root => break,
                Seg::Key(parent, key) => {
                    parts.push(key.replace('~', "~0").replace('/', "~1"));
                    cur = parent;
                }
                Seg::Index(parent, i) => {
                    parts.push(i.to_string());
                    cur = parent;
                }
            }
        }
        parts.reverse();
        parts.iter().map(|p| format!("/{p}")).collect()
    }
}

#[derive(Default)]
struct Recorder {
    entries: Vec<Uncovered>,
}

impl Recorder {
    fn record(&mut self, at: &Seg, why: UncoveredWhy) {
        self.entries.push(Uncovered {
            pointer: at.render(),
            why,
        });
    }

    /// Keep an entry only if none of its ancestors is listed too, and each pointer once (a
    /// Struct that cleans to nothing is recorded by cleanEmpty and by its field).
    fn topmost(self) -> Vec<Uncovered> {
        let listed: HashSet<&str> = self.entries.iter().map(|u| u.pointer.as_str()).collect();
        let mut seen: HashSet<&str> = HashSet::new();
        let keep: Vec<bool> = self
            .entries
            .iter()
            .map(|u| {
                let p = u.pointer.as_str();
                let under_listed = p
                    .char_indices()
                    .filter(|(i, c)| *c == '/' && *i > 0)
                    .any(|(i, _)| listed.contains(&p[..i]));
                !under_listed && seen.insert(p)
            })
            .collect();
        self.entries
            .into_iter()
            .zip(keep)
            .filter_map(|(u, k)| k.then_some(u))
            .collect()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Sdk,
    SpecLiteral,
}

struct Projector<'r> {
    mode: Mode,
    rec: &'r mut Recorder,
}

pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Projector<'_> {
    /// Project one message. The result may be empty; the caller decides whether that is kept.
    fn message(
        &mut self,
        msg: &'static Msg,
        value: &Value,
        at: &Seg,
        context: &'static str,
    ) -> Result<Map<String, Value>, CardInvalid> {
        let Value::Object(obj) = value else {
            if matches!(at, Seg::Root) {
                return Err(CardInvalid::NotObject {
                    found: type_name(value),
                });
            }
            return Err(CardInvalid::WrongType {
                pointer: at.render(),
                message: context,
                field: msg.name,
                expected: "an object",
                found: type_name(value),
            });
        };
        let mut out = Map::new();
        let mut oneof_set: Vec<&'static str> = Vec::new();
        for field in msg.fields {
            // camelCase wins over snake_case (ts-proto order); a null spelling means "not set".
            let camel = obj.get(field.json).map(|v| (field.json, v));
            let snake = (field.proto != field.json)
                .then(|| obj.get(field.proto).map(|v| (field.proto, v)))
                .flatten();
            let chosen = [camel, snake]
                .into_iter()
                .flatten()
                .find(|(_, v)| !v.is_null());
            for (name, v) in [camel, snake].into_iter().flatten() {
                if chosen.is_some_and(|(c, _)| c == name) {
                    continue;
                }
                if !matches!(field.kind, Kind::Excluded) {
                    let why = if v.is_null() {
                        UncoveredWhy::Null
                    } else {
                        UncoveredWhy::NameShadowed
                    };
                    self.rec.record(&Seg::Key(at, name), why);
                }
            }
            let Some((name, v)) = chosen else { continue };
            if msg.oneof {
                oneof_set.push(field.json);
            }
            let here = Seg::Key(at, name);
            if let Some(projected) = self.field(msg, field, v, &here)? {
                out.insert(field.json.to_string(), projected);
            }
        }
        if oneof_set.len() > 1 {
            return Err(CardInvalid::OneofConflict {
                pointer: at.render(),
                message: msg.name,
                count: oneof_set.len(),
                names: oneof_set.join(", "),
            });
        }
        for name in obj.keys() {
            let known = msg
                .fields
                .iter()
                .any(|f| f.json == name.as_str() || f.proto == name.as_str());
            if !known {
                self.rec
                    .record(&Seg::Key(at, name), UncoveredWhy::OutsideSchema);
            }
        }
        Ok(out)
    }

    fn wrong_type(
        &self,
        msg: &'static Msg,
        field: &'static Field,
        v: &Value,
        at: &Seg,
        expected: &'static str,
    ) -> CardInvalid {
        CardInvalid::WrongType {
            pointer: at.render(),
            message: msg.name,
            field: field.json,
            expected,
            found: type_name(v),
        }
    }

    /// Whether an empty value of this field stays in the payload.
    fn keeps_empty(&self, field: &Field) -> bool {
        self.mode == Mode::SpecLiteral && field.presence != Presence::Implicit
    }

    fn drop_reason(field: &Field) -> UncoveredWhy {
        if field.presence == Presence::Implicit {
            UncoveredWhy::ImplicitDefault
        } else {
            UncoveredWhy::Empty
        }
    }

    /// One field's value, or `None` when the profile leaves it out (recorded).
    fn field(
        &mut self,
        msg: &'static Msg,
        field: &'static Field,
        v: &Value,
        at: &Seg,
    ) -> Result<Option<Value>, CardInvalid> {
        if matches!(field.kind, Kind::Excluded) {
            return Ok(None);
        }
        match field.card {
            Cardinality::Single => {
                let one = self.single(msg, field, v, at)?;
                Ok(self.keep_or_record(field, one, at))
            }
            Cardinality::Repeated => {
                let Value::Array(items) = v else {
                    return Err(self.wrong_type(msg, field, v, at, "an array"));
                };
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let here = Seg::Index(at, i);
                    if let Some(x) = self.element(msg, field, item, &here)? {
                        out.push(x);
                    }
                }
                Ok(self.keep_or_record(field, Value::Array(out), at))
            }
            Cardinality::Map => {
                let Value::Object(entries) = v else {
                    return Err(self.wrong_type(msg, field, v, at, "an object (a map)"));
                };
                let mut out = Map::new();
                for (key, item) in entries {
                    let here = Seg::Key(at, key);
                    if let Some(x) = self.element(msg, field, item, &here)? {
                        out.insert(key.clone(), x);
                    }
                }
                Ok(self.keep_or_record(field, Value::Object(out), at))
            }
        }
    }

    /// Keep a projected value or drop it as a default/empty, per profile.
    fn keep_or_record(&mut self, field: &Field, v: Value, at: &Seg) -> Option<Value> {
        let is_default = match &v {
            Value::String(s) => s.is_empty(),
            // Only a non-optional bool has `false` as "not set"; optional ones are kept.
            Value::Bool(b) => !b && field.presence == Presence::Implicit,
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            _ => false,
        };
        let keep = !is_default || (self.keeps_empty(field) && !matches!(v, Value::Bool(_)));
        if keep {
            Some(v)
        } else {
            self.rec.record(at, Self::drop_reason(field));
            None
        }
    }

    /// A scalar, message or Struct value of a singular field (not yet judged for emptiness).
    fn single(
        &mut self,
        msg: &'static Msg,
        field: &'static Field,
        v: &Value,
        at: &Seg,
    ) -> Result<Value, CardInvalid> {
        match field.kind {
            Kind::Str => match v {
                Value::String(_) => Ok(v.clone()),
                _ => Err(self.wrong_type(msg, field, v, at, "a string")),
            },
            Kind::Bool => match v {
                Value::Bool(_) => Ok(v.clone()),
                _ => Err(self.wrong_type(msg, field, v, at, "a boolean")),
            },
            Kind::Msg(inner) => Ok(Value::Object(self.message(inner, v, at, msg.name)?)),
            Kind::Struct => match v {
                Value::Object(_) if self.mode == Mode::SpecLiteral => Ok(v.clone()),
                Value::Object(_) => {
                    Ok(clean_empty(v, at, self.rec).unwrap_or(Value::Object(Map::new())))
                }
                _ => Err(self.wrong_type(msg, field, v, at, "an object (a Struct)")),
            },
            Kind::Excluded => Ok(Value::Null),
        }
    }

    /// One element of a repeated field or one value of a map.
    fn element(
        &mut self,
        msg: &'static Msg,
        field: &'static Field,
        v: &Value,
        at: &Seg,
    ) -> Result<Option<Value>, CardInvalid> {
        let projected = self.single(msg, field, v, at)?;
        let empty = match &projected {
            Value::String(s) => s.is_empty(),
            Value::Object(o) => o.is_empty(),
            _ => false,
        };
        // cleanEmpty drops empty elements; the literal reading keeps every element it was given.
        if empty && self.mode == Mode::Sdk {
            self.rec.record(at, UncoveredWhy::Empty);
            return Ok(None);
        }
        Ok(Some(projected))
    }
}

/// cleanEmpty (a2a-js `cleanEmpty`, a2a-python `_clean_empty`): drop `""` and `null`, and arrays
/// and objects that are empty once their own members are cleaned; keep `false` and `0`.
fn clean_empty(v: &Value, at: &Seg, rec: &mut Recorder) -> Option<Value> {
    match v {
        Value::Null => {
            rec.record(at, UncoveredWhy::Null);
            None
        }
        Value::String(s) if s.is_empty() => {
            rec.record(at, UncoveredWhy::Empty);
            None
        }
        Value::Array(items) => {
            let out: Vec<Value> = items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| clean_empty(item, &Seg::Index(at, i), rec))
                .collect();
            if out.is_empty() {
                rec.record(at, UncoveredWhy::Empty);
                return None;
            }
            Some(Value::Array(out))
        }
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, item) in map {
                if let Some(x) = clean_empty(item, &Seg::Key(at, k), rec) {
                    out.insert(k.clone(), x);
                }
            }
            if out.is_empty() {
                rec.record(at, UncoveredWhy::Empty);
                return None;
            }
            Some(Value::Object(out))
        }
        _ => Some(v.clone()),
    }
}

/// Python's `json.dumps(v, sort_keys=True, separators=(",", ":"))` (ensure_ascii on) for a
/// projected card, whose only numbers are Struct values and so Python floats.
fn python_dumps(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            // Parsing the source text gives the nearest double, as Python's float() does.
            let f: f64 = n.to_string().parse().unwrap_or(f64::NAN);
            out.push_str(&crate::canonical::python_float_repr(f));
        }
        Value::String(s) => python_ascii_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                python_dumps(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // sort_keys sorts str by code point, which is UTF-8 byte order; sorted here so the
            // result does not depend on serde_json's map feature flags.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                python_ascii_string(k, out);
                out.push(':');
                python_dumps(&map[k], out);
            }
            out.push('}');
        }
    }
}

/// `json.dumps` string form with `ensure_ascii=True`: everything outside space..`~` is a
/// lower-case `\uXXXX` escape (UTF-16 surrogate pairs for astral characters), except the five
/// short escapes.
fn python_ascii_string(s: &str, out: &mut String) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sdk(v: Value) -> String {
        String::from_utf8(canonicalize_card(&v, Profile::Sdk).unwrap().bytes).unwrap()
    }

    #[test]
    fn optional_false_stays_implicit_false_goes() {
        let card = json!({"capabilities": {"streaming": false,
            "extensions": [{"uri": "u", "required": false}]}});
        assert_eq!(
            sdk(card),
            r#"{"capabilities":{"extensions":[{"uri":"u"}],"streaming":false}}"#
        );
    }

    #[test]
    fn camel_case_wins_over_snake_case_and_the_loser_is_listed() {
        let card = json!({"iconUrl": "a", "icon_url": "b"});
        let c = canonicalize_card(&card, Profile::Sdk).unwrap();
        assert_eq!(c.bytes, br#"{"iconUrl":"a"}"#);
        assert_eq!(
            c.uncovered,
            vec![Uncovered {
                pointer: "/icon_url".into(),
                why: UncoveredWhy::NameShadowed
            }]
        );
    }

    #[test]
    fn two_oneof_members_make_the_card_invalid() {
        let card = json!({"securitySchemes": {"x": {
            "mtlsSecurityScheme": {"description": "a"},
            "apiKeySecurityScheme": {"name": "n", "location": "header"}}}});
        let err = canonicalize_card(&card, Profile::Sdk).unwrap_err();
        assert!(
            matches!(err, CardInvalid::OneofConflict { count: 2, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("/securitySchemes/x"), "{err}");
    }

    #[test]
    fn uncovered_lists_only_the_topmost_dropped_member() {
        let card = json!({"securityRequirements": [{"schemes": {"k": {"list": []}}}],
            "url": "x", "skills": [{"id": "s", "name": "n", "description": "d",
            "tags": ["t"], "examples": [""]}], "a~/b": 1});
        let c = canonicalize_card(&card, Profile::Sdk).unwrap();
        let got: Vec<(&str, &str)> = c
            .uncovered
            .iter()
            .map(|u| (u.pointer.as_str(), u.why.code()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("/securityRequirements", "implicit_default"),
                ("/skills/0/examples", "implicit_default"),
                ("/a~0~1b", "outside_schema"),
                ("/url", "outside_schema"),
            ]
        );
    }

    #[test]
    fn python_ascii_escapes() {
        let mut s = String::new();
        python_ascii_string("é😂\u{7f}\"\u{1}", &mut s);
        assert_eq!(s, r#""\u00e9\ud83d\ude02\u007f\"\u0001""#);
    }
}
