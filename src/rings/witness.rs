//! Witness values (rings.md §2.3): normalised (§4.1 plain form, §4.2 ledger form), tested for
//! coverage (§4.3) and counted in command-line order (§4.4) into the `witnesses`,
//! `witness_identities` and `discrepancies` columns and the v1.1 ones.
//!
//! The loop is order-dependent on purpose (§7 items 3–4): the first discrepancy of an identity
//! on a day wins, and equal names keep their input order.

use super::history::kind;
use super::py::{self, Scalar, ScalarSet};
use super::{Limits, Month, RingError, coverage_origin, first_chars, form, hostname, spec};
use crate::json::{JsonRef, ReadOptions, Tag, read};
use std::collections::HashSet;

/// A witness identity: `{name, vantage}` (ledger form) or the plain form's whole `witness`
/// object, kept as its canonical text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub text: String,
    /// Python equality (None: holds a NaN, equal to nothing).
    key: Option<String>,
    pub name: Name,
    lone_surrogate: bool,
    depth: usize,
}

/// An identity's `name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Name {
    Str(String),
    /// Absent or falsy: the walk is not counted (§4.4 step 2).
    Falsy,
    /// A truthy value that is not a string (its `str()`): the reference fails sorting it
    /// beside the gate's name (§7 item 11).
    Other(String),
}

impl Identity {
    /// The gate, witness 1 of every ring.
    pub fn gate() -> Identity {
        let text = format!(
            "{{\"name\":\"{}\",\"vantage\":\"{}\"}}",
            spec::GATE_NAME,
            spec::GATE_VANTAGE
        );
        Identity {
            key: key_of_text(&text),
            text,
            name: Name::Str(spec::GATE_NAME.into()),
            lone_surrogate: false,
            depth: 1,
        }
    }

    fn of_object(v: JsonRef<'_>) -> Identity {
        Identity {
            text: v.canonical_string(),
            key: py::eq_key(v),
            name: name_of(v.get("name")),
            lone_surrogate: v.holds_lone_surrogate(),
            depth: form::depth(v),
        }
    }

    /// `{"name": name, "vantage": vantage or ""}` (§4.2).
    fn name_vantage(name: Option<JsonRef<'_>>, vantage: Option<JsonRef<'_>>) -> Identity {
        let vantage = vantage.filter(|v| py::truthy(*v));
        let text_of = |v: Option<JsonRef<'_>>, default: &str| {
            v.map_or_else(|| default.to_string(), |v| v.canonical_string())
        };
        let text = format!(
            "{{\"name\":{},\"vantage\":{}}}",
            text_of(name, "null"),
            text_of(vantage, "\"\"")
        );
        let key = key_of_text(&text);
        let depth = |v: Option<JsonRef<'_>>| v.map_or(0, form::depth);
        Identity {
            text,
            key,
            name: name_of(name),
            lone_surrogate: name.is_some_and(|n| n.holds_lone_surrogate())
                || vantage.is_some_and(|v| v.holds_lone_surrogate()),
            depth: 1 + depth(name).max(depth(vantage)),
        }
    }
}

/// The equality key of an identity written as canonical text (one form for every identity).
fn key_of_text(text: &str) -> Option<String> {
    read(text.as_bytes(), ReadOptions::LENIENT)
        .ok()
        .and_then(|d| py::eq_key(d.root()))
}

fn name_of(v: Option<JsonRef<'_>>) -> Name {
    match v.filter(|v| py::truthy(*v)) {
        None => Name::Falsy,
        Some(n) => match n.as_str() {
            Some(s) if n.tag() == Tag::String => Name::Str(s.to_string()),
            _ => Name::Other(py::str_of(n)),
        },
    }
}

/// A URL a walk names (`base`, `nodes[i].request.url`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Url {
    Str(String),
    /// Truthy but not a string: the reference fails when the coverage test reaches it.
    NotString(&'static str),
}

/// A value's own `endpoint` (plain form), when truthy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    Str(String),
    /// Never equal to a string endpoint.
    Other,
}

/// A discrepancy value (as given, or computed).
#[derive(Debug, Clone, PartialEq)]
pub enum Discrepancy {
    Scalar {
        value: Scalar,
        lone_surrogate: bool,
    },
    /// A list or object: the reference fails adding it to a set (§7 item 11).
    Unhashable(&'static str),
}

impl Discrepancy {
    fn of(v: JsonRef<'_>) -> Discrepancy {
        match Scalar::of(v) {
            Ok(value) => Discrepancy::Scalar {
                value,
                lone_surrogate: v.holds_lone_surrogate(),
            },
            Err(_) => Discrepancy::Unhashable(kind(v)),
        }
    }

    fn computed(hex: String) -> Discrepancy {
        Discrepancy::Scalar {
            value: Scalar::string(&hex),
            lone_surrogate: false,
        }
    }

    fn usable(&self) -> Result<&Scalar, String> {
        match self {
            Discrepancy::Scalar {
                lone_surrogate: true,
                ..
            } => Err("a discrepancy holds a lone surrogate escape, which the reference cannot write as UTF-8".into()),
            Discrepancy::Scalar { value, .. } => Ok(value),
            Discrepancy::Unhashable(k) => Err(format!(
                "a discrepancy is {k}, which the reference cannot put in a set"
            )),
        }
    }
}

/// A normalised witness value (§4).
#[derive(Debug, Clone, PartialEq)]
pub struct Walk {
    /// `at` when it is a string (any other value is in no month).
    pub at: Option<String>,
    at_lone_surrogate: bool,
    pub identity: Identity,
    pub urls: Vec<Url>,
    pub endpoint: Option<Claimed>,
    /// `str(signed_domain)` when truthy, and the string itself when it is one.
    pub signed_domain: Option<(String, Option<String>)>,
    signed_domain_lone_surrogate: bool,
    pub commitment: bool,
    pub counted: bool,
    pub discrepancy: Option<Discrepancy>,
}

/// Normalise one witness value: None when it is dropped (§2.3: not an object, or a ledger form
/// with no identity). An error is a value the reference fails on.
pub fn normalise(v: JsonRef<'_>) -> Result<Option<Walk>, String> {
    if !v.is_object() {
        return Ok(None);
    }
    let witness = v.get("witness").filter(|w| w.is_object());
    match (witness, py::truthy_member(v, "at")) {
        (Some(w), Some(at)) => Ok(Some(plain(v, w, at))),
        _ => ledger(v),
    }
}

fn at_of(at: Option<JsonRef<'_>>) -> (Option<String>, bool) {
    match at {
        Some(a) if a.is_string() => (a.as_str().map(str::to_owned), a.holds_lone_surrogate()),
        _ => (None, false),
    }
}

fn signed_domain_of(v: JsonRef<'_>) -> (Option<(String, Option<String>)>, bool) {
    match py::truthy_member(v, "signed_domain") {
        Some(sd) => (
            Some((py::str_of(sd), sd.as_str().map(str::to_owned))),
            sd.holds_lone_surrogate(),
        ),
        None => (None, false),
    }
}

/// §4.1: used as given.
fn plain(v: JsonRef<'_>, witness: JsonRef<'_>, at: JsonRef<'_>) -> Walk {
    let (at, at_lone_surrogate) = at_of(Some(at));
    let (signed_domain, sd_lone) = signed_domain_of(v);
    Walk {
        at,
        at_lone_surrogate,
        identity: Identity::of_object(witness),
        urls: Vec::new(),
        endpoint: py::truthy_member(v, "endpoint").map(|e| match e.as_str() {
            Some(s) if e.is_string() => Claimed::Str(s.to_string()),
            _ => Claimed::Other,
        }),
        signed_domain,
        signed_domain_lone_surrogate: sd_lone,
        commitment: v.get("mode").and_then(|m| m.as_str()) == Some("commitment"),
        counted: v.get("counted").is_some_and(py::truthy),
        discrepancy: py::truthy_member(v, "discrepancy_sha256").map(Discrepancy::of),
    }
}

/// §4.2: a stored object or a pending answer, read through its `record_canonical`.
fn ledger(v: JsonRef<'_>) -> Result<Option<Walk>, String> {
    let parsed;
    let walk: Option<JsonRef<'_>> = match v.get("record_canonical") {
        Some(rc) if rc.is_string() => {
            parsed = read(rc.as_str().unwrap_or("").as_bytes(), ReadOptions::LENIENT).ok();
            parsed.as_ref().map(|d| d.root()).filter(|w| w.is_object())
        }
        Some(rc) if rc.is_object() => Some(rc),
        _ => None,
    };
    let get = |k: &str| walk.and_then(|w| w.get(k));
    let identity = match get("witness").filter(|w| w.is_object() && py::truthy(*w)) {
        Some(w) => Identity::name_vantage(w.get("name"), w.get("vantage")),
        None => match py::truthy_member(v, "witness_name") {
            Some(name) => Identity::name_vantage(Some(name), v.get("vantage")),
            None => return Ok(None),
        },
    };
    let at = walk
        .and_then(|w| py::truthy_member(w, "walked_at"))
        .or_else(|| py::truthy_member(v, "submitted_at"))
        .or_else(|| py::truthy_member(v, "at"));
    let (at, at_lone_surrogate) = at_of(at);
    let (signed_domain, sd_lone) = signed_domain_of(v);
    let mode =
        py::truthy_member(v, "mode").or_else(|| walk.and_then(|w| py::truthy_member(w, "mode")));
    Ok(Some(Walk {
        at,
        at_lone_surrogate,
        identity,
        urls: urls(walk)?,
        endpoint: None,
        signed_domain,
        signed_domain_lone_surrogate: sd_lone,
        commitment: mode.and_then(|m| m.as_str()) == Some("commitment"),
        counted: !py::is_false(v.get("counted")),
        discrepancy: discrepancy(v, walk)?,
    }))
}

/// `[walk.base] + [n.request.url for n in walk.nodes]`, the truthy ones.
fn urls(walk: Option<JsonRef<'_>>) -> Result<Vec<Url>, String> {
    let Some(walk) = walk else {
        return Ok(Vec::new());
    };
    let url = |u: JsonRef<'_>| match u.as_str() {
        Some(s) if u.is_string() => Url::Str(s.to_string()),
        _ => Url::NotString(kind(u)),
    };
    let mut out: Vec<Url> = py::truthy_member(walk, "base")
        .map(url)
        .into_iter()
        .collect();
    match py::truthy_member(walk, "nodes") {
        None => {}
        Some(nodes) if nodes.is_array() => {
            for n in nodes.as_array().into_iter().flatten() {
                if let Some(u) = n
                    .get("request")
                    .filter(|r| r.is_object())
                    .and_then(|r| py::truthy_member(r, "url"))
                {
                    out.push(url(u));
                }
            }
        }
        // Iterating a string or an object gives strings, which have no request.
        Some(nodes) if nodes.is_string() || nodes.is_object() => {}
        Some(nodes) => {
            return Err(format!(
                "the walk's nodes is {}, which the reference cannot iterate",
                kind(nodes)
            ));
        }
    }
    Ok(out)
}

/// §4.2: the value's `discrepancy_sha256`; else, for a walk whose verdict failed, its `sha`
/// or the sha256 of the walk in canonical form (§7 item 8).
fn discrepancy(v: JsonRef<'_>, walk: Option<JsonRef<'_>>) -> Result<Option<Discrepancy>, String> {
    if let Some(d) = py::truthy_member(v, "discrepancy_sha256") {
        return Ok(Some(Discrepancy::of(d)));
    }
    let failed = walk
        .and_then(|w| w.get("verdict"))
        .filter(|verdict| verdict.is_object())
        .is_some_and(|verdict| {
            py::is_false(verdict.get("ok")) || py::is_false(verdict.get("result"))
        });
    if !failed {
        return Ok(None);
    }
    if let Some(sha) = py::truthy_member(v, "sha") {
        return Ok(Some(Discrepancy::of(sha)));
    }
    let walk = walk.expect("a failed verdict has a walk");
    if walk.holds_lone_surrogate() {
        return Err(
            "the walk holds a lone surrogate escape, which the reference cannot hash".into(),
        );
    }
    Ok(Some(Discrepancy::computed(crate::digest::sha256_hex(
        walk.canonical_string(),
    ))))
}

/// The witness columns of §5 (texts are canonical JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessColumns {
    pub witnesses: u64,
    pub identities: Vec<String>,
    pub discrepancies: Vec<String>,
    pub witnesses_signed: u64,
    pub witnesses_unsigned: u64,
    pub discrepancies_signed: Vec<String>,
    pub discrepancies_unsigned: Vec<String>,
    pub commitments_unrevealed: u64,
    pub walked_as_witness: u64,
    pub carried_bytes: usize,
}

/// The loop of §4.4 over the witness values in input order.
#[derive(Debug)]
pub struct Tally {
    month: Month,
    endpoint: String,
    origin: String,
    host: Option<String>,
    v11: bool,
    limits: Limits,
    identities: Vec<Identity>,
    identity_keys: HashSet<String>,
    discrepancies: ScalarSet,
    signed: HashSet<String>,
    unsigned: HashSet<String>,
    per_day: HashSet<(String, String)>,
    discrepancies_signed: ScalarSet,
    discrepancies_unsigned: ScalarSet,
    commitments: u64,
    walked_as_witness: u64,
    carried_bytes: usize,
}

impl Tally {
    pub fn new(month: &Month, endpoint: &str, limits: &Limits) -> Tally {
        let gate = Identity::gate();
        Tally {
            month: month.clone(),
            endpoint: endpoint.to_string(),
            origin: coverage_origin(endpoint).to_string(),
            host: hostname(endpoint),
            v11: month.is_v11(),
            limits: *limits,
            identity_keys: gate.key.iter().cloned().collect(),
            identities: vec![gate],
            discrepancies: ScalarSet::default(),
            signed: HashSet::new(),
            unsigned: HashSet::new(),
            per_day: HashSet::new(),
            discrepancies_signed: ScalarSet::default(),
            discrepancies_unsigned: ScalarSet::default(),
            commitments: 0,
            walked_as_witness: 0,
            carried_bytes: 0,
        }
    }

    /// §4.3: whether the walk witnesses the endpoint.
    fn covers(&self, w: &Walk) -> Result<bool, String> {
        if let Some(claimed) = &w.endpoint {
            return Ok(matches!(claimed, Claimed::Str(e) if *e == self.endpoint));
        }
        if w.urls.is_empty() {
            return Ok(true);
        }
        for u in &w.urls {
            match u {
                Url::Str(u) => {
                    if u.starts_with(&self.endpoint) || u.trim_end_matches('/') == self.origin {
                        return Ok(true);
                    }
                }
                Url::NotString(k) => {
                    return Err(format!(
                        "a URL of the walk is {k}, not a string (the reference fails on it)"
                    ));
                }
            }
        }
        Ok(false)
    }

    /// One value, §4.4 steps 1–8.
    pub fn add(&mut self, w: &Walk) -> Result<(), String> {
        let Some(at) = w.at.as_deref().filter(|at| self.month.holds(at)) else {
            return Ok(());
        };
        if w.at_lone_surrogate || w.signed_domain_lone_surrogate {
            return Err("a lone surrogate escape in at or signed_domain".into());
        }
        let sd = w.signed_domain.as_ref();
        if self.v11
            && w.counted
            && self.host.is_some()
            && sd.and_then(|(_, s)| s.as_ref()) == self.host.as_ref()
        {
            self.walked_as_witness += 1;
        }
        if !self.covers(w)? || w.identity.name == Name::Falsy {
            return Ok(());
        }
        self.identity(&w.identity)?;
        let disc = w
            .discrepancy
            .as_ref()
            .map(Discrepancy::usable)
            .transpose()?;
        if let Some(d) = disc {
            self.keep(d.text.len())?;
            self.discrepancies.insert(d.clone());
        }
        if !(self.v11 && w.counted) {
            return Ok(());
        }
        if w.commitment {
            self.commitments += 1;
            return Ok(());
        }
        let key = match (sd, &w.identity.name) {
            (Some((text, _)), _) => format!("domain:{text}"),
            (None, Name::Str(n)) | (None, Name::Other(n)) => format!("name:{n}"),
            (None, Name::Falsy) => unreachable!("a nameless walk stopped at step 2"),
        };
        self.keep(key.len())?;
        if sd.is_some() {
            self.signed.insert(key.clone());
        } else {
            self.unsigned.insert(key.clone());
        }
        if let Some(d) = disc {
            let day = first_chars(at, 10).to_string();
            if self.per_day.insert((key, day)) {
                let list = if sd.is_some() {
                    &mut self.discrepancies_signed
                } else {
                    &mut self.discrepancies_unsigned
                };
                list.insert(d.clone());
            }
        }
        Ok(())
    }

    fn keep(&mut self, bytes: usize) -> Result<(), String> {
        self.carried_bytes += bytes;
        if self.carried_bytes > self.limits.carried_bytes {
            return Err(format!(
                "the ring would carry more than {} bytes of witness text",
                self.limits.carried_bytes
            ));
        }
        Ok(())
    }

    /// §4.4 step 3.
    fn identity(&mut self, id: &Identity) -> Result<(), String> {
        if id.lone_surrogate {
            return Err("the witness identity holds a lone surrogate escape, which the reference cannot write as UTF-8".into());
        }
        if id.depth + 2 > form::MAX_RING_DEPTH {
            return Err(format!(
                "the witness identity nests {} levels; the reference cannot write a ring that deep",
                id.depth
            ));
        }
        let known = id
            .key
            .as_ref()
            .is_some_and(|k| self.identity_keys.contains(k));
        if !known {
            self.keep(id.text.len() + id.key.as_ref().map_or(0, String::len))?;
            if let Some(k) = &id.key {
                self.identity_keys.insert(k.clone());
            }
            self.identities.push(id.clone());
        }
        Ok(())
    }

    /// The columns, once every value is in.
    pub fn finish(mut self) -> Result<WitnessColumns, RingError> {
        if let Some(odd) = self.identities.iter().find_map(|i| match &i.name {
            Name::Other(s) => Some(s.clone()),
            _ => None,
        }) {
            return Err(RingError::input(
                "witnesses",
                format!(
                    "an identity's name is not a string ({odd}); the reference fails sorting it beside the gate's"
                ),
            ));
        }
        let name = |i: &Identity| match &i.name {
            Name::Str(s) => s.clone(),
            _ => String::new(),
        };
        self.identities.sort_by_key(name);
        let sorted = |set: &ScalarSet, what: &str| {
            set.sorted().map_err(|u| {
                RingError::input(
                    "witnesses",
                    format!(
                        "{what} holds values the reference cannot order ({} and {})",
                        u.a, u.b
                    ),
                )
            })
        };
        Ok(WitnessColumns {
            witnesses: self.identities.len() as u64,
            discrepancies: sorted(&self.discrepancies, "discrepancies")?,
            discrepancies_signed: sorted(&self.discrepancies_signed, "discrepancies_signed")?,
            discrepancies_unsigned: sorted(&self.discrepancies_unsigned, "discrepancies_unsigned")?,
            identities: self.identities.into_iter().map(|i| i.text).collect(),
            witnesses_signed: self.signed.len() as u64,
            witnesses_unsigned: self.unsigned.len() as u64,
            commitments_unrevealed: self.commitments,
            walked_as_witness: self.walked_as_witness,
            carried_bytes: self.carried_bytes,
        })
    }
}
