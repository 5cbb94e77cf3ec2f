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
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher as _;

/// A witness identity: `{name, vantage}` (ledger form) or the plain form's whole `witness`
/// object, kept as its canonical text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub text: String,
    /// Python equality (see [`py::eq_key`]).
    key: Key,
    pub name: Name,
    lone_surrogate: bool,
    depth: usize,
}

/// An identity's equality key, kept only where it is not the canonical text itself (a value
/// with numbers or booleans), so a large identity is held once.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    Text,
    Own(String),
    /// Holds a NaN: equal to nothing.
    None,
}

impl Key {
    fn of(key: Option<String>, text: &str) -> Key {
        match key {
            Some(k) if k == text => Key::Text,
            Some(k) => Key::Own(k),
            None => Key::None,
        }
    }
}

impl Identity {
    fn key(&self) -> Option<&str> {
        match &self.key {
            Key::Text => Some(&self.text),
            Key::Own(k) => Some(k),
            Key::None => None,
        }
    }
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
            key: Key::of(key_of_text(&text), &text),
            text,
            name: Name::Str(spec::GATE_NAME.into()),
            lone_surrogate: false,
            depth: 1,
        }
    }

    fn of_object(v: JsonRef<'_>) -> Identity {
        let text = v.canonical_string();
        Identity {
            key: Key::of(py::eq_key(v), &text),
            text,
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
        let key = Key::of(key_of_text(&text), &text);
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
    /// Identities by the hash of their key (the key itself is compared in `identities`, so a
    /// large identity is held once).
    identity_index: HashMap<u64, Vec<usize>>,
    key_hasher: RandomState,
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
        let key_hasher = RandomState::new();
        let gate_hash = key_hasher.hash_one(gate.key().unwrap_or_default());
        Tally {
            month: month.clone(),
            endpoint: endpoint.to_string(),
            origin: coverage_origin(endpoint).to_string(),
            host: hostname(endpoint),
            v11: month.is_v11(),
            limits: *limits,
            identity_index: HashMap::from([(gate_hash, vec![0])]),
            key_hasher,
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
        let Some(key) = id.key() else {
            // Equal to nothing: always a new identity.
            self.keep(id.text.len())?;
            self.identities.push(id.clone());
            return Ok(());
        };
        let hash = self.key_hasher.hash_one(key);
        let known = self
            .identity_index
            .get(&hash)
            .is_some_and(|at| at.iter().any(|i| self.identities[*i].key() == Some(key)));
        if !known {
            self.keep(
                id.text.len()
                    + if matches!(id.key, Key::Own(_)) {
                        key.len()
                    } else {
                        0
                    },
            )?;
            self.identity_index
                .entry(hash)
                .or_default()
                .push(self.identities.len());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Doc;

    fn doc(t: &str) -> Doc {
        read(t.as_bytes(), ReadOptions::LENIENT).unwrap()
    }

    fn norm(t: &str) -> Result<Option<Walk>, String> {
        normalise(doc(t).root())
    }

    const WALK: &str = r#"{"witness":{"name":"w1","vantage":"v1","key_url":"https://k.example/key"},"walked_at":"2026-09-03T10:00:00Z","base":"https://target.example/mcp","nodes":[{"request":{"url":"https://target.example/.well-known/agent-card.json"}},{"request":{"url":"https://target.example/mcp"}}],"verdict":{"ok":true}}"#;

    fn stored(walk: &str, extra: &str) -> String {
        let rc = serde_json::to_string(walk).unwrap();
        format!(
            r#"{{"sha":"s1","record_canonical":{rc},"witness_name":"filed-name","vantage":"filed-v","submitted_at":"2026-10-01T00:00:00.000Z"{extra}}}"#
        )
    }

    /// One row per public form of §2.3: dropped, or (at, identity, urls, counted).
    #[test]
    fn every_public_form_as_the_spec_tables_it() {
        type Row = Option<(Option<&'static str>, &'static str, usize, bool)>;
        let stored_obj = stored(WALK, "");
        let anchored =
            format!(r#"{{"status":"anchored","sha":"s1","ledger_entry":3,"record":{stored_obj}}}"#);
        let pending = stored(
            WALK,
            r#","status":"pending","counted":false,"responses":[]"#,
        );
        let cases: Vec<(String, Row)> = vec![
            ("[1, 2]".into(), None),
            ("\"a string\"".into(), None),
            (
                r#"{"at":"2026-09-02","witness":{"name":"p","extra":[1]}}"#.into(),
                Some((Some("2026-09-02"), r#"{"extra":[1],"name":"p"}"#, 0, false)),
            ),
            (
                stored_obj.clone(),
                Some((Some("2026-09-03T10:00:00Z"), r#"{"name":"w1","vantage":"v1"}"#, 3, true)),
            ),
            (anchored, None),
            (
                pending,
                Some((Some("2026-09-03T10:00:00Z"), r#"{"name":"w1","vantage":"v1"}"#, 3, false)),
            ),
            (
                r#"{"sha":"s2","purpose":"a2a-conduct-walk-v1: https://x","witness_name":"row","vantage":"rv","signed":false}"#.into(),
                Some((None, r#"{"name":"row","vantage":"rv"}"#, 0, true)),
            ),
            (
                r#"{"sha":"s3","witness_name":"pend","vantage":null,"submitted_at":"2026-09-05T00:00:00.000Z","counted":true}"#.into(),
                Some((Some("2026-09-05T00:00:00.000Z"), r#"{"name":"pend","vantage":""}"#, 0, true)),
            ),
            (WALK.into(), None),
            (
                r#"{"record_canonical":"{not json","witness_name":"n","at":"2026-09-09"}"#.into(),
                Some((Some("2026-09-09"), r#"{"name":"n","vantage":""}"#, 0, true)),
            ),
            (
                r#"{"record_canonical":{"witness":{"name":"o"},"walked_at":"2026-09-01","base":"https://b.example/"}}"#.into(),
                Some((Some("2026-09-01"), r#"{"name":"o","vantage":""}"#, 1, true)),
            ),
        ];
        for (input, want) in cases {
            let got = norm(&input).unwrap().map(|w| {
                (
                    w.at.clone(),
                    w.identity.text.clone(),
                    w.urls.len(),
                    w.counted,
                )
            });
            let want = want.map(|(at, id, n, c)| (at.map(str::to_owned), id.to_string(), n, c));
            assert_eq!(got, want, "{input}");
        }
    }

    #[test]
    fn a_failed_verdict_without_sha_hashes_the_re_canonicalised_walk() {
        // Not canonical as filed (spaces, key order): the hash is of the canonical form.
        let walk = r#"{"walked_at": "2026-09-01", "witness": {"name": "w"}, "verdict": {"result": false, "ok": null}}"#;
        let v = format!(
            r#"{{"record_canonical":{}}}"#,
            serde_json::to_string(walk).unwrap()
        );
        let w = norm(&v).unwrap().unwrap();
        let canonical = doc(walk).root().canonical_string();
        let want = crate::digest::sha256_hex(&canonical);
        assert_ne!(want, crate::digest::sha256_hex(walk));
        match w.discrepancy {
            Some(Discrepancy::Scalar { value, .. }) => {
                assert_eq!(value.text, format!("\"{want}\""))
            }
            other => panic!("{other:?}"),
        }
        // With a sha, the sha; with discrepancy_sha256, that.
        let v = format!(
            r#"{{"sha":"abc","record_canonical":{}}}"#,
            serde_json::to_string(walk).unwrap()
        );
        assert!(
            matches!(norm(&v).unwrap().unwrap().discrepancy, Some(Discrepancy::Scalar { value, .. }) if value.text == "\"abc\"")
        );
        let ok = r#"{"record_canonical":{"witness":{"name":"w"},"verdict":{"ok":true}}}"#;
        assert_eq!(norm(ok).unwrap().unwrap().discrepancy, None);
    }

    #[test]
    fn what_the_reference_cannot_iterate_fails() {
        assert!(norm(r#"{"record_canonical":{"witness":{"name":"w"},"nodes":5}}"#).is_err());
        assert!(norm(r#"{"record_canonical":{"witness":{"name":"w"},"nodes":"abc"}}"#).is_ok());
    }

    fn covers(endpoint: &str, value: &str) -> Result<bool, String> {
        let month = Month::parse("2026-09").unwrap();
        let t = Tally::new(&month, endpoint, &Limits::default());
        t.covers(&norm(value).unwrap().unwrap())
    }

    fn walk_of(urls: &[&str]) -> String {
        let nodes: Vec<String> = urls
            .iter()
            .map(|u| format!(r#"{{"request":{{"url":"{u}"}}}}"#))
            .collect();
        format!(
            r#"{{"record_canonical":{{"witness":{{"name":"w"}},"walked_at":"2026-09-01","nodes":[{}]}}}}"#,
            nodes.join(",")
        )
    }

    /// §4.3 and its consequences, row by row.
    #[test]
    fn coverage_as_the_reference_decides_it() {
        let rows: &[(&str, &str, bool)] = &[
            (
                "https://target.example/mcp",
                r#"{"at":"x","witness":{"name":"p"},"endpoint":"https://target.example/mcp"}"#,
                true,
            ),
            (
                "https://target.example/mcp",
                r#"{"at":"x","witness":{"name":"p"},"endpoint":"https://other.example/mcp"}"#,
                false,
            ),
            (
                "https://target.example/mcp",
                r#"{"at":"x","witness":{"name":"p"}}"#,
                true,
            ),
            (
                "https://target.example/mcp",
                r#"{"witness_name":"pending element","submitted_at":"x"}"#,
                true,
            ),
            (
                "https://target.example/mcp",
                &walk_of(&["https://target.example/mcp"]),
                true,
            ),
            (
                "https://target.example/mcp",
                &walk_of(&["https://target.example/"]),
                true,
            ),
            (
                "https://target.example/mcp",
                &walk_of(&["https://target.example"]),
                true,
            ),
            (
                "https://target.example/mcp",
                &walk_of(&["https://other.example/mcp"]),
                false,
            ),
            (
                "https://agent.example/a2a",
                &walk_of(&["https://agent.example/a2a-v2"]),
                true,
            ),
            (
                "https://agent.example/a2a",
                &walk_of(&["https://agent.example/"]),
                false,
            ),
            (
                "https://agent.example/a2a",
                &walk_of(&["https://agent.example/other"]),
                false,
            ),
            (
                "https://mcp.example/mcp",
                &walk_of(&["https://mcp.example/"]),
                false,
            ),
            (
                "https://mcp.example/mcp",
                &walk_of(&["https://mcp.example/mcp/x"]),
                true,
            ),
        ];
        for (endpoint, value, want) in rows {
            assert_eq!(covers(endpoint, value), Ok(*want), "{endpoint} {value}");
        }
        // A URL that is not a string fails where the test reaches it, not before.
        let bad = r#"{"record_canonical":{"witness":{"name":"w"},"base":5}}"#;
        assert!(covers("https://target.example/mcp", bad).is_err());
        let fine = r#"{"record_canonical":{"witness":{"name":"w"},"base":"https://target.example/mcp","nodes":[{"request":{"url":7}}]}}"#;
        assert_eq!(covers("https://target.example/mcp", fine), Ok(true));
    }

    fn tally(month: &str, endpoint: &str, values: &[&str]) -> Result<WitnessColumns, String> {
        let month = Month::parse(month).unwrap();
        let mut t = Tally::new(&month, endpoint, &Limits::default());
        for v in values {
            if let Some(w) = norm(v)? {
                t.add(&w)?;
            }
        }
        t.finish().map_err(|e| e.to_string())
    }

    const EP: &str = "https://target.example/mcp";

    #[test]
    fn the_first_discrepancy_of_an_identity_on_a_day_wins() {
        let a = r#"{"at":"2026-09-03T01:00:00Z","witness":{"name":"n"},"counted":true,"signed_domain":"d.example","discrepancy_sha256":"aaa"}"#;
        let b = r#"{"at":"2026-09-03T23:00:00Z","witness":{"name":"m"},"counted":true,"signed_domain":"d.example","discrepancy_sha256":"bbb"}"#;
        let ab = tally("2026-09", EP, &[a, b]).unwrap();
        let ba = tally("2026-09", EP, &[b, a]).unwrap();
        assert_eq!(ab.discrepancies_signed, ["\"aaa\""]);
        assert_eq!(ba.discrepancies_signed, ["\"bbb\""]);
        // v1 lists every discrepancy either way; two names, one domain: one signed witness.
        assert_eq!(ab.discrepancies, ba.discrepancies);
        assert_eq!((ab.witnesses_signed, ab.witnesses), (1, 3));
    }

    #[test]
    fn identities_are_objects_equal_as_python_compares_them() {
        let one = r#"{"at":"2026-09-01","witness":{"name":"x","v":1}}"#;
        let same = r#"{"at":"2026-09-02","witness":{"v":1.0,"name":"x"}}"#;
        let other_vantage = r#"{"at":"2026-09-02","witness":{"name":"x","vantage":"b"}}"#;
        let gate = r#"{"at":"2026-09-02","witness":{"name":"gate.horizonshield.dev","vantage":"cloudflare-worker"}}"#;
        let c = tally("2026-09", EP, &[other_vantage, one, same, gate]).unwrap();
        assert_eq!(c.witnesses, 3);
        assert_eq!(
            c.identities,
            [
                r#"{"name":"gate.horizonshield.dev","vantage":"cloudflare-worker"}"#,
                r#"{"name":"x","vantage":"b"}"#,
                r#"{"name":"x","v":1}"#
            ]
        );
        // A plain value without counted:true is in v1 columns only.
        assert_eq!((c.witnesses_signed, c.witnesses_unsigned), (0, 0));
        let bad = r#"{"at":"2026-09-01","witness":{"name":5}}"#;
        assert!(tally("2026-09", EP, &[bad]).is_err());
    }

    #[test]
    fn walked_as_witness_counts_any_target_and_commitments_apart() {
        let own = r#"{"at":"2026-09-01","witness":{"name":"t"},"counted":true,"signed_domain":"target.example","endpoint":"https://elsewhere.example/mcp"}"#;
        let commit = r#"{"at":"2026-09-01","witness":{"name":"c"},"counted":true,"mode":"commitment","discrepancy_sha256":"ddd"}"#;
        let uncounted = r#"{"record_canonical":{"witness":{"name":"u"},"walked_at":"2026-09-02","verdict":{"ok":false}},"sha":"eee","counted":false,"signed_domain":"target.example"}"#;
        let c = tally("2026-09", EP, &[own, commit, uncounted]).unwrap();
        assert_eq!(c.walked_as_witness, 1);
        assert_eq!(c.commitments_unrevealed, 1);
        assert_eq!(c.discrepancies, ["\"ddd\"", "\"eee\""]);
        assert!(c.discrepancies_signed.is_empty() && c.discrepancies_unsigned.is_empty());
        // August: none of the v1.1 counts move.
        let c = tally("2026-08", EP, &[own.replace("2026-09", "2026-08").as_str()]).unwrap();
        assert_eq!(c.walked_as_witness, 0);
    }

    #[test]
    fn walked_at_decides_the_month() {
        let july = stored(&WALK.replace("2026-09-03", "2026-07-31"), "");
        let c = tally("2026-09", EP, &[&july]).unwrap();
        assert_eq!(c.witnesses, 1);
        let c = tally("2026-07", EP, &[&july]).unwrap();
        assert_eq!(c.witnesses, 2);
    }
}
