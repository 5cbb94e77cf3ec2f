//! The history (rings.md §2.1) and the month's instants (§3) with the columns read from them
//! (§5.1, §5.2).
//!
//! The history is read from a stream, one entry at a time ([`crate::json::stream`]): the
//! register's archive grows without end, and only the month's measurements, a few fields each,
//! are kept. Counts that do not depend on order are added as each kept entry arrives; the rest
//! (first and last instant, hashes in order of first sight, surface changes) waits for the sort.

use super::py::{self, Scalar};
use super::{Limits, Month, RingError};
use crate::json::stream::{Stream, StreamError};
use crate::json::{Doc, JsonRef, Tag};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;

/// What the history gave: its `endpoint` member (when it is an object that has one) and the
/// month's instants.
#[derive(Debug)]
pub struct History {
    pub endpoint: Option<HistoryEndpoint>,
    pub instants: Instants,
}

/// The history's own `endpoint` member, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryEndpoint {
    Str(String),
    /// Falsy (null, "", …): as absent.
    Falsy,
    /// A truthy value that is not a string: the reference fails on it (`.replace`).
    NotString(String),
}

/// Read a history (§2.1) and keep the entries of `month` (§3).
pub fn read(src: impl Read, month: &Month, limits: &Limits) -> Result<History, RingError> {
    let mut stream = Stream::new(src, limits.history_bytes);
    let history = read_stream(&mut stream, month, limits).map_err(|e| match e {
        Failure::Stream(e) => stream_error(e, limits),
        Failure::Ring(e) => e,
    })?;
    Ok(history)
}

enum Failure {
    Stream(StreamError),
    Ring(RingError),
}

impl From<StreamError> for Failure {
    fn from(e: StreamError) -> Self {
        Failure::Stream(e)
    }
}

fn stream_error(e: StreamError, limits: &Limits) -> RingError {
    match e {
        StreamError::ValueTooLarge { at, cap } => RingError::TooLarge {
            what: "history".into(),
            why: format!(
                "the value at byte {at} is larger than {cap} bytes (each entry is read whole, up to a card's size)"
            ),
        },
        StreamError::DocumentTooLarge { .. } => RingError::TooLarge {
            what: "history".into(),
            why: format!("larger than {} bytes", limits.history_bytes),
        },
        other => RingError::input("history is not JSON", other.to_string()),
    }
}

fn read_stream<R: Read>(
    s: &mut Stream<R>,
    month: &Month,
    limits: &Limits,
) -> Result<History, Failure> {
    let cap = limits.history_value_bytes;
    let history = match s.peek()? {
        Some(b'[') => {
            let mut fold = Fold::new(month, limits);
            s.array_items(cap, 0, |entry| {
                fold.entry(&entry);
                Ok(())
            })?;
            History {
                endpoint: None,
                instants: fold.finish().map_err(Failure::Ring)?,
            }
        }
        Some(b'{') => read_object(s, month, limits)?,
        _ => {
            let doc = s.value(cap, 0)?;
            s.finish()?;
            return Err(Failure::Ring(RingError::NoEntries(format!(
                "it is {}, not an object or an array",
                kind(doc.root())
            ))));
        }
    };
    s.finish()?;
    Ok(history)
}

/// The history as an object: `entries` (the last one, as a dict keeps it) streamed, `endpoint`
/// kept, every other member read (so the file is JSON throughout) and dropped.
fn read_object<R: Read>(
    s: &mut Stream<R>,
    month: &Month,
    limits: &Limits,
) -> Result<History, Failure> {
    let cap = limits.history_value_bytes;
    s.expect(b'{', "Expecting '{'")?;
    let mut endpoint = None;
    // None: no `entries` yet; Some(Err(kind)): the last one is not an array.
    let mut entries: Option<Result<Fold<'_>, String>> = None;
    if s.peek()? == Some(b'}') {
        s.expect(b'}', "Expecting '}'")?;
    } else {
        loop {
            let name_doc = s.value(cap, 1)?;
            let name = match name_doc.root().as_str() {
                Some(n) if name_doc.root().is_string() => n.to_string(),
                _ => {
                    return Err(Failure::Stream(StreamError::Syntax {
                        at: s.offset(),
                        what: "Expecting property name enclosed in double quotes",
                    }));
                }
            };
            s.expect(b':', "Expecting ':' delimiter")?;
            let is_array = s.peek()? == Some(b'[');
            match name.as_str() {
                "entries" if is_array => {
                    let mut fold = Fold::new(month, limits);
                    s.array_items(cap, 1, |entry| {
                        fold.entry(&entry);
                        Ok(())
                    })?;
                    entries = Some(Ok(fold));
                }
                "entries" => {
                    let doc = s.value(cap, 1)?;
                    entries = Some(Err(kind(doc.root()).to_string()));
                }
                "endpoint" => {
                    let doc = s.value(cap, 1)?;
                    endpoint = Some(history_endpoint(doc.root()));
                }
                // Read so the file is checked as JSON throughout, then dropped; an array is
                // read item by item, so a long one costs no more than an entry.
                _ if is_array => s.array_items(cap, 1, |_| Ok(()))?,
                _ => drop(s.value(cap, 1)?),
            }
            match s.peek()? {
                Some(b',') => s.expect(b',', "Expecting ','")?,
                Some(b'}') => {
                    s.expect(b'}', "Expecting '}'")?;
                    break;
                }
                _ => {
                    return Err(Failure::Stream(StreamError::Syntax {
                        at: s.offset(),
                        what: "Expecting ',' delimiter",
                    }));
                }
            }
        }
    }
    let fold = match entries {
        Some(Ok(fold)) => fold,
        Some(Err(kind)) => {
            return Err(Failure::Ring(RingError::NoEntries(format!(
                "\"entries\" is {kind}, not an array"
            ))));
        }
        None => {
            return Err(Failure::Ring(RingError::NoEntries(
                "the object has no \"entries\"".into(),
            )));
        }
    };
    Ok(History {
        endpoint,
        instants: fold.finish().map_err(Failure::Ring)?,
    })
}

fn history_endpoint(v: JsonRef<'_>) -> HistoryEndpoint {
    match v.as_str() {
        Some(s) if !s.is_empty() => HistoryEndpoint::Str(s.to_string()),
        _ if !py::truthy(v) => HistoryEndpoint::Falsy,
        _ => HistoryEndpoint::NotString(v.canonical_string()),
    }
}

/// What a value is, in an error.
pub fn kind(v: JsonRef<'_>) -> &'static str {
    match v.tag() {
        Tag::Null => "null",
        Tag::True | Tag::False => "a boolean",
        Tag::Number => "a number",
        Tag::String => "a string",
        Tag::Array => "an array",
        Tag::Object => "an object",
    }
}

/// A kept measurement: what the order-dependent columns need, compactly (a month may hold
/// hundreds of thousands).
#[derive(Debug)]
struct Instant {
    at: Box<str>,
    rsha: Rsha,
    manifest: Option<u32>,
}

/// An instant's `record_sha256`.
#[derive(Debug)]
enum Rsha {
    Absent,
    /// A string (the usual 64 hex digits, or "").
    Str(Box<str>),
    /// Anything else: its canonical text and `record_sha256 or ""` as a sort key.
    Other(Box<(Box<str>, Scalar)>),
}

impl Rsha {
    /// Canonical text for the ring (None when absent).
    fn text(&self) -> Option<String> {
        match self {
            Rsha::Absent => None,
            Rsha::Str(s) => Some(Scalar::string(s).text),
            Rsha::Other(o) => Some(o.0.to_string()),
        }
    }

    /// The sort's second key, `record_sha256 or ""`: a string, or a number.
    fn sort_key(&self) -> Result<&str, &Scalar> {
        match self {
            Rsha::Absent => Ok(""),
            Rsha::Str(s) => Ok(s),
            Rsha::Other(o) => match &o.1.sort {
                py::Sort::Str(s) => Ok(s),
                py::Sort::Num(_) => Err(&o.1),
            },
        }
    }
}

/// The month's instants and every column read from them.
#[derive(Debug, Default)]
pub struct Instants {
    /// Kept in sort order (§3.3).
    kept: Vec<Instant>,
    pub reached: u64,
    pub by_status: BTreeMap<String, u64>,
    pub by_consent_source: BTreeMap<String, u64>,
    /// Entries whose `conditions.determinism.measured` is literally false.
    pub unmeasured: u64,
    pub derived: u64,
    pub legacy: u64,
    pub no_coordinate_block: u64,
    /// Distinct manifest hashes (canonical text), by id.
    manifests: Vec<String>,
    /// Bytes of stranger text the columns carry.
    pub carried_bytes: usize,
}

/// `{"at", "from", "to"}` of §5.1, as texts (`from`/`to` canonical JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SurfaceChange {
    pub at: String,
    pub from: String,
    pub to: String,
}

impl Instants {
    pub fn sampled(&self) -> u64 {
        self.kept.len() as u64
    }

    /// `at` and `record_sha256` (canonical text or None) of the first instant.
    pub fn first(&self) -> Option<(&str, Option<String>)> {
        self.kept.first().map(|i| (&*i.at, i.rsha.text()))
    }

    pub fn last(&self) -> Option<(&str, Option<String>)> {
        self.kept.last().map(|i| (&*i.at, i.rsha.text()))
    }

    /// Distinct manifest hashes in order of first sight along the sorted instants.
    pub fn manifest_hashes_observed(&self) -> Vec<&str> {
        let mut seen = HashSet::new();
        self.kept
            .iter()
            .filter_map(|i| i.manifest)
            .filter(|id| seen.insert(*id))
            .map(|id| self.manifests[id as usize].as_str())
            .collect()
    }

    /// Each change of hash between consecutive instants that have one (§5.1).
    pub fn surface_changes(&self) -> Vec<SurfaceChange> {
        let mut out = Vec::new();
        let mut last: Option<u32> = None;
        for i in &self.kept {
            let Some(id) = i.manifest else { continue };
            if let Some(prev) = last.filter(|p| *p != id) {
                out.push(SurfaceChange {
                    at: i.at.to_string(),
                    from: self.manifests[prev as usize].clone(),
                    to: self.manifests[id as usize].clone(),
                });
            }
            last = Some(id);
        }
        out
    }
}

/// The entries of one `entries` array, folded as they arrive.
struct Fold<'m> {
    month: &'m Month,
    limits: &'m Limits,
    index: u64,
    /// Keys of the entries kept (`record_sha256`, or `noid:<at>`), tagged by kind.
    seen: HashSet<Box<str>>,
    /// Manifest hash equality key → id (a NaN-holding hash gets an id of its own each time).
    manifest_ids: HashMap<String, u32>,
    out: Instants,
    /// The first entry the reference fails on (reported only if this array is the one used).
    error: Option<RingError>,
}

impl<'m> Fold<'m> {
    fn new(month: &'m Month, limits: &'m Limits) -> Self {
        Fold {
            month,
            limits,
            index: 0,
            seen: HashSet::new(),
            manifest_ids: HashMap::new(),
            out: Instants::default(),
            error: None,
        }
    }

    fn entry(&mut self, doc: &Doc) {
        let index = self.index;
        self.index += 1;
        if self.error.is_some() {
            return;
        }
        if let Err(why) = self.take(doc.root()) {
            self.error = Some(RingError::input(format!("history entry {index}"), why));
        }
    }

    /// One entry (§3.1, §3.2), and its counts when kept.
    fn take(&mut self, e: JsonRef<'_>) -> Result<(), String> {
        if !e.is_object() {
            return Err(format!(
                "{} is not an object (the reference fails on it)",
                kind(e)
            ));
        }
        let Some(at) = e.get("at").and_then(|a| a.as_str()) else {
            return Ok(());
        };
        if !self.month.holds(at) {
            return Ok(());
        }
        let rsha = e.get("record_sha256");
        let rsha_truthy = rsha.filter(|v| py::truthy(*v));
        let key: Box<str> = match rsha_truthy {
            Some(v) if v.is_string() => format!("s{}", v.as_str().unwrap_or("")).into(),
            Some(v) => match Scalar::of(v) {
                Ok(s) => match s.key() {
                    Some(k) => format!("#{k}").into(),
                    None => format!("nan {}", self.index).into(),
                },
                Err(_) => {
                    return Err(format!(
                        "record_sha256 is {}, which the reference cannot use as a key",
                        kind(v)
                    ));
                }
            },
            None => format!("snoid:{at}").into(),
        };
        if !self.seen.insert(key) {
            return Ok(());
        }
        no_lone_surrogate(e, &["at", "record_sha256", "status", "consent_source"])?;
        let unmeasured = unmeasured(e)?;
        if self.out.kept.len() >= self.limits.instants {
            return Err(format!(
                "more than {} measurements in {}: refused rather than held",
                self.limits.instants,
                self.month.as_str()
            ));
        }
        let manifest = self.manifest(e)?;
        let rsha = match rsha {
            None => Rsha::Absent,
            Some(v) if v.is_string() => Rsha::Str(v.as_str().unwrap_or("").into()),
            Some(v) => {
                let sort = match rsha_truthy {
                    Some(t) => {
                        Scalar::of(t).map_err(|_| "record_sha256 is not hashable".to_string())?
                    }
                    None => Scalar::string(""),
                };
                Rsha::Other(Box::new((v.canonical_string().into(), sort)))
            }
        };
        let o = &mut self.out;
        o.unmeasured += unmeasured as u64;
        o.reached += py::is_true(e.get("reachable")) as u64;
        let status = column_key(e.get("status"), "unknown");
        let consent = column_key(e.get("consent_source"), "none");
        o.carried_bytes += at.len() + rsha.text().map_or(0, |t| t.len());
        for (map, k) in [
            (&mut o.by_status, status),
            (&mut o.by_consent_source, consent),
        ] {
            if !map.contains_key(&k) {
                o.carried_bytes += k.len();
            }
            *map.entry(k).or_insert(0) += 1;
        }
        match e.get("coordinate_derivation").filter(|c| c.is_object()) {
            Some(c) if py::is_true(c.get("derived")) => o.derived += 1,
            Some(c) if py::is_false(c.get("derived")) => o.legacy += 1,
            _ => o.no_coordinate_block += 1,
        }
        o.kept.push(Instant {
            at: at.into(),
            rsha,
            manifest,
        });
        if o.carried_bytes > self.limits.carried_bytes {
            return Err(format!(
                "the ring would carry more than {} bytes of the history's text",
                self.limits.carried_bytes
            ));
        }
        Ok(())
    }

    /// The entry's `surface.manifest_hash`, when truthy, as an id (equal hashes, one id).
    fn manifest(&mut self, e: JsonRef<'_>) -> Result<Option<u32>, String> {
        let Some(h) = e
            .get("surface")
            .filter(|s| s.is_object())
            .and_then(|s| py::truthy_member(s, "manifest_hash"))
        else {
            return Ok(None);
        };
        if h.holds_lone_surrogate() {
            return Err(lone_surrogate("surface.manifest_hash"));
        }
        if super::form::depth(h) + 3 > super::form::MAX_RING_DEPTH {
            return Err("surface.manifest_hash is nested too deep to be written".into());
        }
        let key = py::eq_key(h);
        if let Some(id) = key.as_ref().and_then(|k| self.manifest_ids.get(k)) {
            return Ok(Some(*id));
        }
        let id = self.out.manifests.len() as u32;
        let text = h.canonical_string();
        self.out.carried_bytes += 2 * text.len();
        self.out.manifests.push(text);
        if let Some(k) = key {
            self.manifest_ids.insert(k, id);
        }
        Ok(Some(id))
    }

    /// Sort (§3.3): by `at`, then `record_sha256 or ""`. Python compares the second keys only
    /// between entries of equal `at`, and fails when those are a string and a number.
    fn finish(mut self) -> Result<Instants, RingError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let kept = &mut self.out.kept;
        kept.sort_by(|a, b| a.at.cmp(&b.at));
        let mut start = 0;
        while start < kept.len() {
            let end = start
                + kept[start..]
                    .iter()
                    .take_while(|i| i.at == kept[start].at)
                    .count();
            sort_group(&mut kept[start..end]).map_err(|(a, b)| {
                RingError::input(
                    "history",
                    format!(
                        "two entries at {} have record_sha256 values the reference cannot order ({a} and {b})",
                        kept[start].at
                    ),
                )
            })?;
            start = end;
        }
        Ok(self.out)
    }
}

/// Sort entries of one `at` by `record_sha256 or ""`, as Python compares them: strings with
/// strings, numbers with numbers; a string beside a number, or a NaN beside anything, is a
/// comparison Python fails (the two values).
fn sort_group(group: &mut [Instant]) -> Result<(), (String, String)> {
    if group.len() < 2 {
        return Ok(());
    }
    let text = |i: &Instant| i.rsha.text().unwrap_or_else(|| "\"\"".into());
    let first_str = group.iter().find(|i| i.rsha.sort_key().is_ok());
    let first_num = group.iter().find(|i| i.rsha.sort_key().is_err());
    if let (Some(a), Some(b)) = (first_str, first_num) {
        return Err((text(a), text(b)));
    }
    if let Some(n) = group
        .iter()
        .find(|i| matches!(i.rsha.sort_key(), Err(s) if s.is_nan()))
    {
        return Err((text(n), "another value".into()));
    }
    group.sort_by(|a, b| match (a.rsha.sort_key(), b.rsha.sort_key()) {
        (Ok(x), Ok(y)) => x.cmp(y),
        (Err(x), Err(y)) => py::compare(x, y),
        (Ok(_), Err(_)) => std::cmp::Ordering::Greater,
        (Err(_), Ok(_)) => std::cmp::Ordering::Less,
    });
    Ok(())
}

/// `str(value or default)` (§5.1, §7 item 9).
fn column_key(v: Option<JsonRef<'_>>, default: &str) -> String {
    match v.filter(|v| py::truthy(*v)) {
        Some(v) => py::str_of(v),
        None => default.to_string(),
    }
}

/// `conditions.determinism.measured is False`, as the reference reads it: a truthy
/// `conditions` that is not an object, or a `determinism` present but not an object, fails
/// (§7 item 11).
fn unmeasured(e: JsonRef<'_>) -> Result<bool, String> {
    let Some(c) = e.get("conditions").filter(|c| py::truthy(*c)) else {
        return Ok(false);
    };
    if !c.is_object() {
        return Err(format!(
            "conditions is {}, not an object (the reference fails on it)",
            kind(c)
        ));
    }
    match c.get("determinism") {
        None => Ok(false),
        Some(d) if d.is_object() => Ok(py::is_false(d.get("measured"))),
        Some(d) => Err(format!(
            "conditions.determinism is {}, not an object (the reference fails on it)",
            kind(d)
        )),
    }
}

fn lone_surrogate(field: &str) -> String {
    format!("{field} holds a lone surrogate escape, which the reference cannot write as UTF-8")
}

fn no_lone_surrogate(e: JsonRef<'_>, fields: &[&str]) -> Result<(), String> {
    for f in fields {
        if e.get(f).is_some_and(|v| v.holds_lone_surrogate()) {
            return Err(lone_surrogate(f));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn month(m: &str) -> Month {
        Month::parse(m).unwrap()
    }

    fn hist(text: &str) -> Result<History, RingError> {
        read(text.as_bytes(), &month("2026-09"), &Limits::default())
    }

    fn ats(h: &History) -> Vec<String> {
        h.instants.kept.iter().map(|i| i.at.to_string()).collect()
    }

    #[test]
    fn selection_by_text_prefix_first_repeat_wins_sorted_by_at_then_sha() {
        let h = hist(
            r#"{"endpoint": "https://e.example/mcp", "archive": {"x": [1]}, "entries": [
              {"at": "2026-09-30T23:30:00-05:00", "record_sha256": "b", "status": "pass"},
              {"at": "2026-10-01T01:00:00+09:00", "record_sha256": "c"},
              {"at": "2026-09-02T00:00:00Z", "record_sha256": "b", "status": "fail"},
              {"at": "2026-09-01T00:00:00Z", "record_sha256": "z"},
              {"at": "2026-09-01T00:00:00Z", "record_sha256": "a", "reachable": true},
              {"at": "2026-09-01T00:00:00Z"},
              {"at": "2026-09-01T00:00:00Z", "record_sha256": ""},
              {"at": 202609, "record_sha256": "n"}
            ]}"#,
        )
        .unwrap();
        assert_eq!(
            h.endpoint,
            Some(HistoryEndpoint::Str("https://e.example/mcp".into()))
        );
        assert_eq!(
            ats(&h),
            [
                "2026-09-01T00:00:00Z",
                "2026-09-01T00:00:00Z",
                "2026-09-01T00:00:00Z",
                "2026-09-30T23:30:00-05:00"
            ]
        );
        // `noid:<at>` and "" share a key (the second is a repeat); "" sorts first, then a, z.
        assert_eq!(h.instants.first(), Some(("2026-09-01T00:00:00Z", None)));
        assert_eq!(h.instants.kept[1].rsha.text().as_deref(), Some("\"a\""));
        assert_eq!(h.instants.by_status.get("pass"), Some(&1));
        assert_eq!(h.instants.by_status.get("unknown"), Some(&3));
        assert_eq!(
            h.instants.by_status.get("fail"),
            None,
            "the repeat of b is dropped"
        );
        assert_eq!(h.instants.reached, 1);
    }

    #[test]
    fn str_of_statuses_and_literal_reachable() {
        let h = hist(
            r#"[{"at": "2026-09-01", "status": true, "reachable": 1, "consent_source": 404},
                {"at": "2026-09-02", "status": 0, "reachable": "true", "consent_source": [1, "a"]}]"#,
        )
        .unwrap();
        let keys: Vec<_> = h.instants.by_status.keys().cloned().collect();
        assert_eq!(keys, ["True", "unknown"]);
        let keys: Vec<_> = h.instants.by_consent_source.keys().cloned().collect();
        assert_eq!(keys, ["404", "[1, 'a']"]);
        assert_eq!(h.instants.reached, 0);
    }

    #[test]
    fn surface_gaps_are_bridged_and_changes_listed() {
        let e = |at: &str, h: &str| {
            format!(r#"{{"at": "2026-09-{at}", "surface": {{"manifest_hash": {h}}}}}"#)
        };
        let text = format!(
            "[{},{},{},{},{},{}]",
            e("01", "\"A\""),
            e("02", "null"),
            e("03", "\"B\""),
            e("04", "\"C\""),
            r#"{"at": "2026-09-05", "surface": "A"}"#,
            e("06", "\"A\""),
        );
        let h = hist(&text).unwrap();
        assert_eq!(
            h.instants.manifest_hashes_observed(),
            ["\"A\"", "\"B\"", "\"C\""]
        );
        let changes: Vec<_> = h
            .instants
            .surface_changes()
            .into_iter()
            .map(|c| format!("{} {}>{}", c.at, c.from, c.to))
            .collect();
        assert_eq!(
            changes,
            [
                "2026-09-03 \"A\">\"B\"",
                "2026-09-04 \"B\">\"C\"",
                "2026-09-06 \"C\">\"A\""
            ]
        );
    }

    #[test]
    fn coordinate_and_determinism_columns() {
        let h = hist(
            r#"[{"at": "2026-09-01", "coordinate_derivation": {"derived": true},
                 "conditions": {"determinism": {"measured": false}}},
                {"at": "2026-09-02", "coordinate_derivation": {"derived": false}, "conditions": null},
                {"at": "2026-09-03", "coordinate_derivation": {"derived": 1}, "conditions": {}},
                {"at": "2026-09-04", "coordinate_derivation": true}]"#,
        )
        .unwrap();
        let i = &h.instants;
        assert_eq!(
            (i.derived, i.legacy, i.no_coordinate_block, i.unmeasured),
            (1, 1, 2, 1)
        );
    }

    #[test]
    fn what_the_reference_fails_on_is_refused() {
        let bad = [
            r#"[{"at": "2026-09-01"}, 5]"#,
            r#"[{"at": "2026-09-01", "conditions": [1]}]"#,
            r#"[{"at": "2026-09-01", "conditions": {"determinism": null}}]"#,
            r#"[{"at": "2026-09-01", "record_sha256": ["x"]}]"#,
            r#"[{"at": "2026-09-01", "record_sha256": "a"}, {"at": "2026-09-01", "record_sha256": 5}]"#,
            r#"[{"at": "2026-09-01\ud800"}]"#,
            r#"{"entries": {}}"#,
            r#"{"endpoint": "x"}"#,
            r#""entries""#,
            r#"[1] [2]"#,
            r#"[{"at": "2026-09-01"},]"#,
        ];
        for text in bad {
            assert!(hist(text).is_err(), "{text}");
        }
        // Out of the month, the same fields are never read.
        assert!(
            hist(r#"[{"at": "2026-08-01", "conditions": [1], "record_sha256": ["x"]}]"#).is_ok()
        );
        // A string and a number at different instants are never compared.
        assert!(hist(r#"[{"at": "2026-09-01", "record_sha256": "a"}, {"at": "2026-09-02", "record_sha256": 5}]"#).is_ok());
        // The last `entries` is the one used, as a dict keeps it.
        let h = hist(r#"{"entries": [5], "entries": [{"at": "2026-09-01"}]}"#).unwrap();
        assert_eq!(h.instants.sampled(), 1);
    }

    #[test]
    fn caps_refuse_clearly() {
        let limits = Limits {
            instants: 2,
            ..Limits::default()
        };
        let text = r#"[{"at": "2026-09-01"}, {"at": "2026-09-02"}, {"at": "2026-09-03"}]"#;
        let e = read(text.as_bytes(), &month("2026-09"), &limits).unwrap_err();
        assert!(e.to_string().contains("more than 2 measurements"), "{e}");
        let deep = format!("[{}{}]", "[".repeat(10_000), "]".repeat(10_000));
        assert!(hist(&deep).is_err());
    }
}
