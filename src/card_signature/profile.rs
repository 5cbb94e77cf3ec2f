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
//! - [`Profile::Served`]: RFC 8785 of the card as served minus `signatures`, nothing dropped:
//!   how the reference walker 1.5.0 signs and checks first (conduct-walk.md §4.3 C.2).
//!
//! Each canonicalisation also lists the members of the raw card that its payload does not cover
//! (§7.4): a signature says nothing about them.

use super::schema::{AGENT_CARD, Cardinality, Field, Kind, MAX_FIELDS, Msg, Presence};
use serde_json::Value;

/// A named canonicalisation profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Profile {
    Sdk,
    SpecLiteral,
    PythonLegacy,
    Js100,
    Served,
}

impl Profile {
    /// Every profile, in the order verification tries them: the SDK profile first, then the
    /// labelled fallbacks.
    pub const ALL: [Profile; 5] = [
        Profile::Sdk,
        Profile::SpecLiteral,
        Profile::PythonLegacy,
        Profile::Js100,
        Profile::Served,
    ];

    /// The name written in records and printed by `card verify`.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Sdk => "sdk",
            Profile::SpecLiteral => "spec-literal",
            Profile::PythonLegacy => "python-legacy",
            Profile::Js100 => "js-1.0.0",
            Profile::Served => "served-rfc8785",
        }
    }

    /// The profile of this [`Profile::name`], for `--profile` and `--form card-NAME`.
    pub fn from_name(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == name)
    }

    /// What the profile signs, in one clause (used in `verified_reason`).
    pub fn description(self) -> &'static str {
        match self {
            Profile::Sdk => PROFILE_SDK_TEXT,
            Profile::SpecLiteral => PROFILE_SPEC_LITERAL_TEXT,
            Profile::PythonLegacy => PROFILE_PYTHON_LEGACY_TEXT,
            Profile::Js100 => PROFILE_JS_100_TEXT,
            Profile::Served => PROFILE_SERVED_TEXT,
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

/// [`Profile::description`] of the served-rfc8785 profile.
pub const PROFILE_SERVED_TEXT: &str = "the served-rfc8785 profile (RFC 8785 of the card as served with signatures removed, nothing else dropped; what the reference walker 1.5.0 signs)";

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
            let projected =
                Pv::Obj(projector.message(&AGENT_CARD, card, &Seg::Root, "AgentCard")?);
            if profile == Profile::PythonLegacy {
                let mut out = String::with_capacity(4096);
                python_dumps(&projected, &mut out);
                out.into_bytes()
            } else {
                pv_rfc8785(&projected)?
            }
        }
        Profile::Served => {
            if !card.is_object() {
                return Err(CardInvalid::NotObject {
                    found: type_name(card),
                });
            }
            let text =
                serde_json::to_vec(card).map_err(|e| CardInvalid::NotIJson(e.to_string()))?;
            let doc = crate::json::read(&text, crate::json::ReadOptions::LENIENT)
                .map_err(|e| CardInvalid::NotIJson(e.to_string()))?;
            super::served_form::served_rfc8785_without_signatures(doc.root())
                .map_err(|why| CardInvalid::NotIJson(why.reason().to_string()))?
                .into_bytes()
        }
        Profile::Js100 => {
            let Value::Object(map) = card else {
                return Err(CardInvalid::NotObject {
                    found: type_name(card),
                });
            };
            let mut cleaned = Vec::with_capacity(map.len());
            for (name, value) in map {
                if name == "signatures" {
                    continue;
                }
                if let Some(v) = clean_empty(value, &Seg::Key(&Seg::Root, name), &mut recorder) {
                    cleaned.push((name.as_str(), v));
                }
            }
            pv_rfc8785(&Pv::Obj(cleaned))?
        }
    };
    Ok(Canonical {
        profile,
        bytes,
        uncovered: recorder.topmost(),
    })
}

/// A projected value borrowing from the card: the payload is written from it directly, so
/// projecting copies no strings and builds no maps (this is the hot path of every walk of a
/// signed card). Object members are in any order; the writers sort them.
enum Pv<'a> {
    Null,
    Bool(bool),
    Num(&'a serde_json::Number),
    Str(&'a str),
    Arr(Vec<Pv<'a>>),
    Obj(Vec<(&'a str, Pv<'a>)>),
}

impl<'a> Pv<'a> {
    /// A JSON value as it is (Struct contents under the literal reading).
    fn of(v: &'a Value) -> Pv<'a> {
        match v {
            Value::Null => Pv::Null,
            Value::Bool(b) => Pv::Bool(*b),
            Value::Number(n) => Pv::Num(n),
            Value::String(s) => Pv::Str(s),
            Value::Array(items) => Pv::Arr(items.iter().map(Pv::of).collect()),
            Value::Object(map) => {
                Pv::Obj(map.iter().map(|(k, v)| (k.as_str(), Pv::of(v))).collect())
            }
        }
    }

    /// `""`, `[]` or `{}`.
    fn is_empty(&self) -> bool {
        match self {
            Pv::Str(s) => s.is_empty(),
            Pv::Arr(a) => a.is_empty(),
            Pv::Obj(o) => o.is_empty(),
            _ => false,
        }
    }
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
        let mut out = String::new();
        self.render_into(&mut out);
        out
    }

    fn render_into(&self, out: &mut String) {
        match self {
            Seg::Root => {}
            Seg::Key(parent, key) => {
                parent.render_into(out);
                out.push('/');
                for c in key.chars() {
                    match c {
                        '~' => out.push_str("~0"),
                        '/' => out.push_str("~1"),
                        c => out.push(c),
                    }
                }
            }
            Seg::Index(parent, i) => {
                parent.render_into(out);
                out.push('/');
                out.push_str(&i.to_string());
            }
        }
    }
}

#[derive(Default)]
struct Recorder {
    entries: Vec<Uncovered>,
}

impl Recorder {
    /// Record a dropped member. Recording is post-order (a subtree's members before the subtree
    /// itself), so the entries under `at` are exactly the trailing ones with its prefix: they
    /// are replaced by `at`, and the list holds topmost members only. A pointer already at the
    /// tail (a Struct that cleans to nothing is seen by cleanEmpty and by its field) is kept once.
    fn record(&mut self, at: &Seg, why: UncoveredWhy) {
        let pointer = at.render();
        if self.entries.last().is_some_and(|u| u.pointer == pointer) {
            return;
        }
        while let Some(last) = self.entries.last() {
            let under = last.pointer.len() > pointer.len()
                && last.pointer.starts_with(&pointer)
                && last.pointer.as_bytes()[pointer.len()] == b'/';
            if !under {
                break;
            }
            self.entries.pop();
        }
        self.entries.push(Uncovered { pointer, why });
    }

    fn topmost(self) -> Vec<Uncovered> {
        self.entries
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

/// Whether a2a-sdk (protobuf's `ParseDict` with unknown fields ignored) reads a non-object
/// `value` of a message field as an empty message instead of refusing the card: it iterates the
/// value as if it were a dict's names, so a string's characters and an array's strings are
/// unknown names and ignored, unless one is a field's name (then it indexes the value and
/// fails); anything else (a number, a boolean, a non-string element) is refused.
fn sdk_reads_as_empty_message(msg: &Msg, value: &Value) -> bool {
    // A name holding a lone surrogate cannot be looked up: refused.
    match value {
        Value::String(s) => !s.contains(LONE_SURROGATE_MARK),
        Value::Array(items) => items.iter().all(|item| {
            item.as_str().is_some_and(|name| {
                !name.contains(LONE_SURROGATE_MARK)
                    && !msg.fields.iter().any(|f| f.json == name || f.proto == name)
            })
        }),
        _ => false,
    }
}

/// Stands for a string or member name that held a lone surrogate when a card is projected for
/// the a2a-sdk form (`walk_block::sdk_form`): a noncharacter no card string carries through our
/// reader unchanged. The SDK's parser refuses every name holding a lone surrogate that it looks
/// up (a message's members, a map's keys, a Struct's keys) and every string it keeps.
pub(crate) const LONE_SURROGATE_MARK: &str = "\u{fdd0}lone-surrogate\u{fdd1}";

fn lone_surrogate_refused(at: &Seg, name: &str) -> CardInvalid {
    CardInvalid::NotIJson(format!(
        "a lone surrogate in the member name at {}",
        Seg::Key(at, name).render()
    ))
}

/// Whether a Struct value holds a name that held a lone surrogate (the SDK encodes every key).
fn struct_names_hold_mark(v: &Value) -> bool {
    match v {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k.contains(LONE_SURROGATE_MARK) || struct_names_hold_mark(v)),
        Value::Array(items) => items.iter().any(struct_names_hold_mark),
        _ => false,
    }
}

impl Projector<'_> {
    /// Project one message. The result may be empty; the caller decides whether that is kept.
    fn message<'a>(
        &mut self,
        msg: &'static Msg,
        value: &'a Value,
        at: &Seg,
        context: &'static str,
    ) -> Result<Vec<(&'a str, Pv<'a>)>, CardInvalid> {
        let Value::Object(obj) = value else {
            if matches!(at, Seg::Root) {
                return Err(CardInvalid::NotObject {
                    found: type_name(value),
                });
            }
            if self.mode == Mode::Sdk && sdk_reads_as_empty_message(msg, value) {
                self.rec.record(at, UncoveredWhy::OutsideSchema);
                return Ok(Vec::new());
            }
            return Err(CardInvalid::WrongType {
                pointer: at.render(),
                message: context,
                field: msg.name,
                expected: "an object",
                found: type_name(value),
            });
        };
        // One pass over the members: each is a field's camelCase name, its snake_case name, or
        // outside the schema.
        let mut camel: [Option<(&'a str, &'a Value)>; MAX_FIELDS] = [None; MAX_FIELDS];
        let mut snake: [Option<(&'a str, &'a Value)>; MAX_FIELDS] = [None; MAX_FIELDS];
        for (name, v) in obj {
            if self.mode == Mode::Sdk && name.contains(LONE_SURROGATE_MARK) {
                return Err(lone_surrogate_refused(at, name));
            }
            if let Some(i) = msg.fields.iter().position(|f| f.json == name.as_str()) {
                camel[i] = Some((name.as_str(), v));
            } else if let Some(i) = msg.fields.iter().position(|f| f.proto == name.as_str()) {
                snake[i] = Some((name.as_str(), v));
            } else {
                self.rec
                    .record(&Seg::Key(at, name), UncoveredWhy::OutsideSchema);
            }
        }
        let mut out = Vec::with_capacity(msg.fields.len());
        let mut oneof_set: Vec<&'static str> = Vec::new();
        for (i, field) in msg.fields.iter().enumerate() {
            // camelCase wins over snake_case (ts-proto order); a null spelling means "not set".
            let (camel, snake) = (camel[i], snake[i]);
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
                // The SDK sets a oneof member once per spelling and refuses the second.
                if self.mode == Mode::Sdk
                    && camel.is_some_and(|(_, v)| !v.is_null())
                    && snake.is_some_and(|(_, v)| !v.is_null())
                {
                    oneof_set.push(field.proto);
                }
            }
            let here = Seg::Key(at, name);
            if let Some(projected) = self.field(msg, field, v, &here)? {
                out.push((field.json, projected));
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
    fn field<'a>(
        &mut self,
        msg: &'static Msg,
        field: &'static Field,
        v: &'a Value,
        at: &Seg,
    ) -> Result<Option<Pv<'a>>, CardInvalid> {
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
                Ok(self.keep_or_record(field, Pv::Arr(out), at))
            }
            Cardinality::Map => {
                let Value::Object(entries) = v else {
                    return Err(self.wrong_type(msg, field, v, at, "an object (a map)"));
                };
                let mut out = Vec::with_capacity(entries.len());
                for (key, item) in entries {
                    if self.mode == Mode::Sdk && key.contains(LONE_SURROGATE_MARK) {
                        return Err(lone_surrogate_refused(at, key));
                    }
                    let here = Seg::Key(at, key);
                    if let Some(x) = self.element(msg, field, item, &here)? {
                        out.push((key.as_str(), x));
                    }
                }
                Ok(self.keep_or_record(field, Pv::Obj(out), at))
            }
        }
    }

    /// Keep a projected value or drop it as a default/empty, per profile.
    fn keep_or_record<'a>(&mut self, field: &Field, v: Pv<'a>, at: &Seg) -> Option<Pv<'a>> {
        let keep = match &v {
            // Only a non-optional bool has `false` as "not set"; optional ones are kept.
            Pv::Bool(b) => *b || field.presence != Presence::Implicit,
            other => !other.is_empty() || self.keeps_empty(field),
        };
        if keep {
            Some(v)
        } else {
            self.rec.record(at, Self::drop_reason(field));
            None
        }
    }

    /// A scalar, message or Struct value of a singular field (not yet judged for emptiness).
    fn single<'a>(
        &mut self,
        msg: &'static Msg,
        field: &'static Field,
        v: &'a Value,
        at: &Seg,
    ) -> Result<Pv<'a>, CardInvalid> {
        match field.kind {
            Kind::Str => match v {
                Value::String(s) => Ok(Pv::Str(s)),
                _ => Err(self.wrong_type(msg, field, v, at, "a string")),
            },
            Kind::Bool => match v {
                Value::Bool(b) => Ok(Pv::Bool(*b)),
                _ => Err(self.wrong_type(msg, field, v, at, "a boolean")),
            },
            Kind::Msg(inner) => Ok(Pv::Obj(self.message(inner, v, at, msg.name)?)),
            Kind::Struct => match v {
                Value::Object(_) if self.mode == Mode::SpecLiteral => Ok(Pv::of(v)),
                Value::Object(_) if struct_names_hold_mark(v) => {
                    Err(lone_surrogate_refused(at, "(a Struct key)"))
                }
                Value::Object(_) => Ok(clean_empty(v, at, self.rec).unwrap_or(Pv::Obj(Vec::new()))),
                _ => Err(self.wrong_type(msg, field, v, at, "an object (a Struct)")),
            },
            Kind::Excluded => Ok(Pv::Null),
        }
    }

    /// One element of a repeated field or one value of a map.
    fn element<'a>(
        &mut self,
        msg: &'static Msg,
        field: &'static Field,
        v: &'a Value,
        at: &Seg,
    ) -> Result<Option<Pv<'a>>, CardInvalid> {
        let projected = self.single(msg, field, v, at)?;
        // cleanEmpty drops empty elements; the literal reading keeps every element it was given.
        if projected.is_empty() && self.mode == Mode::Sdk {
            self.rec.record(at, UncoveredWhy::Empty);
            return Ok(None);
        }
        Ok(Some(projected))
    }
}

/// RFC 8785 bytes of a value: the same bytes as [`crate::jcs::canonicalize`] (a test holds them
/// equal over the shared vectors and random documents), written directly instead of through
/// serde_jcs, whose per-object buffering made a 10 KiB card cost ~200 us. Numbers, the one hard
/// part, still go through serde_jcs one at a time, after the same finiteness check.
#[cfg(test)]
pub(crate) fn rfc8785(v: &Value) -> Result<Vec<u8>, CardInvalid> {
    pv_rfc8785(&Pv::of(v))
}

fn pv_rfc8785(v: &Pv) -> Result<Vec<u8>, CardInvalid> {
    let mut out = Vec::with_capacity(4096);
    write_rfc8785(v, &mut out)?;
    Ok(out)
}

// Object members are sorted by the UTF-16 code units of their names (RFC 8785 section 3.2.3).
// UTF-16 order differs from UTF-8 byte order only between an astral character and one at
// U+E000..U+FFFF (lead bytes 0xEE..=0xF4), so names without those sort by bytes.
fn write_rfc8785(v: &Pv, out: &mut Vec<u8>) -> Result<(), CardInvalid> {
    match v {
        Pv::Null => out.extend_from_slice(b"null"),
        Pv::Bool(true) => out.extend_from_slice(b"true"),
        Pv::Bool(false) => out.extend_from_slice(b"false"),
        Pv::Num(n) => {
            if !crate::json::number_f64(n).is_finite() {
                return Err(CardInvalid::NotIJson(crate::jcs::not_finite(n)));
            }
            let formatted =
                serde_jcs::to_vec(n).map_err(|e| CardInvalid::NotIJson(e.to_string()))?;
            out.extend_from_slice(&formatted);
        }
        Pv::Str(s) => write_rfc8785_string(s, out),
        Pv::Arr(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_rfc8785(item, out)?;
            }
            out.push(b']');
        }
        Pv::Obj(members) => {
            let mut order: Vec<(&str, &Pv)> = members.iter().map(|(k, v)| (*k, v)).collect();
            if order.iter().all(|(k, _)| k.bytes().all(|b| b < 0xee)) {
                // Schema fields are listed in name order and maps arrive sorted: usually no-op.
                if !order.windows(2).all(|w| w[0].0 < w[1].0) {
                    order.sort_unstable_by(|a, b| a.0.cmp(b.0));
                }
            } else {
                order.sort_unstable_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            }
            out.push(b'{');
            for (i, (k, item)) in order.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_rfc8785_string(k, out);
                out.push(b':');
                write_rfc8785(item, out)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// ECMAScript `JSON.stringify` string form: `\"`, `\\`, the five short escapes, other controls
/// as lower-case `\u00xx`, everything else as raw UTF-8.
fn write_rfc8785_string(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if escape.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 0x0f) as usize]);
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// cleanEmpty (a2a-js `cleanEmpty`, a2a-python `_clean_empty`): drop `""` and `null`, and arrays
/// and objects that are empty once their own members are cleaned; keep `false` and `0`.
fn clean_empty<'a>(v: &'a Value, at: &Seg, rec: &mut Recorder) -> Option<Pv<'a>> {
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
            let out: Vec<Pv> = items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| clean_empty(item, &Seg::Index(at, i), rec))
                .collect();
            if out.is_empty() {
                rec.record(at, UncoveredWhy::Empty);
                return None;
            }
            Some(Pv::Arr(out))
        }
        Value::Object(map) => {
            let mut out = Vec::with_capacity(map.len());
            for (k, item) in map {
                if let Some(x) = clean_empty(item, &Seg::Key(at, k), rec) {
                    out.push((k.as_str(), x));
                }
            }
            if out.is_empty() {
                rec.record(at, UncoveredWhy::Empty);
                return None;
            }
            Some(Pv::Obj(out))
        }
        other => Some(Pv::of(other)),
    }
}

/// Python's `json.dumps(v, sort_keys=True, separators=(",", ":"))` (ensure_ascii on) for a
/// projected card, whose only numbers are Struct values and so Python floats.
fn python_dumps(v: &Pv, out: &mut String) {
    use crate::canonical::write_list;
    match v {
        Pv::Null => out.push_str("null"),
        Pv::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Pv::Num(n) => {
            // Parsing the source text gives the nearest double, as Python's float() does.
            out.push_str(&crate::canonical::python_float_repr(
                crate::json::number_f64(n),
            ));
        }
        Pv::Str(s) => crate::canonical::write_ascii_string(out, s),
        Pv::Arr(items) => write_list(out, ('[', ']'), items, |out, item| python_dumps(item, out)),
        Pv::Obj(members) => {
            // sort_keys sorts str by code point, which is UTF-8 byte order.
            let mut order: Vec<&(&str, Pv)> = members.iter().collect();
            order.sort_unstable_by(|a, b| a.0.cmp(b.0));
            write_list(out, ('{', '}'), order, |out, (k, item)| {
                crate::canonical::write_ascii_string(out, k);
                out.push(':');
                python_dumps(item, out);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sdk(v: Value) -> String {
        String::from_utf8(canonicalize_card(&v, Profile::Sdk).unwrap().bytes).unwrap()
    }

    /// Python's reader takes `NaN` in a card (the walk parses leniently); RFC 8785 cannot write
    /// it, so the JCS profiles refuse the card as not I-JSON, and the Python-legacy profile
    /// writes `NaN` as Python's json.dumps does, never the marker's -0.0.
    #[test]
    fn nan_in_a_struct_value_is_refused_by_jcs_and_written_by_python() {
        let card = crate::json::parse_lenient(
            br#"{"capabilities":{"extensions":[{"uri":"u","params":{"pct":NaN}}]}}"#,
        )
        .unwrap();
        let err = canonicalize_card(&card, Profile::Sdk).unwrap_err();
        assert!(
            matches!(&err, CardInvalid::NotIJson(why) if why.contains("NaN")),
            "{err}"
        );
        let legacy = canonicalize_card(&card, Profile::PythonLegacy).unwrap();
        let text = String::from_utf8(legacy.bytes).unwrap();
        assert!(text.contains(r#""pct":NaN"#), "{text}");
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
                ("/a~0~1b", "outside_schema"),
                ("/url", "outside_schema"),
                ("/securityRequirements", "implicit_default"),
                ("/skills/0/examples", "implicit_default"),
            ]
        );
    }

    /// The direct writer and `crate::jcs::canonicalize` (serde_jcs) give the same bytes: over
    /// the cyberphone inputs, the card vectors, and random documents with controls, escapes,
    /// astral and private-use characters in names and values, and numbers of every form.
    #[test]
    fn direct_rfc8785_writer_matches_serde_jcs() {
        let root = crate::sandbox::test_vectors("");
        let mut docs: Vec<Value> = Vec::new();
        for entry in std::fs::read_dir(root.join("jcs/input")).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            docs.push(crate::jcs::parse_i_json(&bytes).unwrap());
        }
        let canonical: Value = serde_json::from_slice(
            &std::fs::read(root.join("card-signature/canonical.json")).unwrap(),
        )
        .unwrap();
        for v in canonical["vectors"].as_array().unwrap() {
            let text = v["input_json"].as_str().unwrap();
            docs.push(crate::jcs::parse_i_json(text.as_bytes()).unwrap());
        }
        docs.extend(crate::test_docs::random_json_docs(2000));
        for doc in &docs {
            assert_eq!(
                rfc8785(doc).unwrap(),
                crate::jcs::canonicalize(doc).unwrap(),
                "{doc}"
            );
        }
        assert!(rfc8785(&serde_json::from_str::<Value>("[1e400]").unwrap()).is_err());
    }

    #[test]
    fn python_ascii_escapes() {
        let mut s = String::new();
        crate::canonical::write_ascii_string(&mut s, "é😂\u{7f}\"\u{1}");
        assert_eq!(s, r#""\u00e9\ud83d\ude02\u007f\"\u0001""#);
    }
}
