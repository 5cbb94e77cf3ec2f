//! The metadata columns, derived from a record's canonical bytes. The store never takes these
//! from the caller: deriving them here means `records verify` can re-derive and compare them.

use super::record_view::RecordView;
use serde_json::Value;

/// The record's verdict (`verdict` object, conduct-walk.md §4.2). Commitment records have none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub ok: bool,
    pub outcome: String,
    pub n_pass: i64,
    pub n_total: i64,
}

/// What the store indexes about a record, all read from its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordMeta {
    /// The walked endpoint (§6.5): the first non-space run after `a2a-conduct-walk-v1:` at the
    /// start of `purpose`, else `base`.
    pub endpoint: String,
    /// `base`: the origin walked.
    pub origin: String,
    pub walked_at: String,
    /// `conduct_ext.mode` (`mcp` or `a2a`); absent in commitment records.
    pub walker_mode: Option<String>,
    /// Top-level `mode`: `full`, `hash-only` or `commitment`; absent means `full`.
    pub privacy_mode: String,
    pub verdict: Option<Verdict>,
    /// `witness.key_url`, present on domain-signed records.
    pub key_url: Option<String>,
}

/// Why some bytes are not a record this store keeps.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetaError {
    #[error("the bytes are not JSON: {0}")]
    NotJson(String),
    #[error("the record is not a JSON object")]
    NotObject,
    #[error("`schema` is {0}, expected \"jidec-path-v1\"")]
    WrongSchema(String),
    #[error("`{0}` is missing or not a string")]
    MissingString(&'static str),
    #[error("`{0}` is present but has the wrong type")]
    WrongType(&'static str),
}

/// [`derive`] straight from bytes, through the typed record view (the nodes and assertions,
/// most of a record, are skipped without being built), which is several times faster than
/// parsing the whole record. Same result as `derive(&parse_lenient(bytes)?)` for any record
/// without duplicate keys (canonical records have none).
pub fn derive_from_bytes(bytes: &[u8]) -> Result<RecordMeta, MetaError> {
    let fast = match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => serde_json::from_slice::<RecordView>(bytes).ok(),
        _ => None,
    };
    match fast {
        Some(view) => from_view(&view).ok_or_else(|| missing(&view)),
        // Not an object at all, or a field of the wrong shape: let the full path name it.
        None => {
            let v =
                crate::json::parse_lenient(bytes).map_err(|e| MetaError::NotJson(e.to_string()))?;
            derive(&v)
        }
    }
}

/// Derive the metadata of a parsed record.
pub fn derive(record: &Value) -> Result<RecordMeta, MetaError> {
    RecordView::from_value(record)
        .ok()
        .and_then(|view| from_view(&view))
        .ok_or_else(|| misfit(record))
}

/// The metadata of a view whose indexed fields all have their types; `None` when a required
/// one is absent, null, or the schema is another.
fn from_view(view: &RecordView) -> Option<RecordMeta> {
    if view.schema.as_deref() != Some(crate::wire::SCHEMA) {
        return None;
    }
    let origin = view.base.as_deref()?;
    let walked_at = view.walked_at.as_deref()?;
    Some(RecordMeta {
        endpoint: view.endpoint().unwrap_or(origin).to_string(),
        origin: origin.to_string(),
        walked_at: walked_at.to_string(),
        walker_mode: view
            .conduct_ext
            .as_ref()
            .and_then(|c| c.mode.as_deref())
            .map(str::to_string),
        privacy_mode: view.mode.as_deref().unwrap_or("full").to_string(),
        verdict: view.verdict.as_ref().map(|v| Verdict {
            ok: v.ok,
            outcome: v.outcome.to_string(),
            n_pass: v.n_pass,
            n_total: v.n_total,
        }),
        key_url: view.key_url().map(str::to_string),
    })
}

/// Why [`from_view`] found no metadata in a view.
fn missing(view: &RecordView) -> MetaError {
    match view.schema.as_deref() {
        None => MetaError::MissingString("schema"),
        Some(s) if s != crate::wire::SCHEMA => MetaError::WrongSchema(Value::from(s).to_string()),
        _ if view.base.is_none() => MetaError::MissingString("base"),
        _ => MetaError::MissingString("walked_at"),
    }
}

/// Which indexed field of `record` is missing or has the wrong type (the typed view could not
/// be read, or lacks a required field): the first in the order the fields are derived.
fn misfit(record: &Value) -> MetaError {
    let Some(obj) = record.as_object() else {
        return MetaError::NotObject;
    };
    match obj.get("schema") {
        Some(Value::String(s)) if s == crate::wire::SCHEMA => {}
        Some(other) => return MetaError::WrongSchema(other.to_string()),
        None => return MetaError::MissingString("schema"),
    }
    let is_text = |v: Option<&Value>| matches!(v, None | Some(Value::Null | Value::String(_)));
    for key in ["base", "walked_at"] {
        if !matches!(obj.get(key), Some(Value::String(_))) {
            return MetaError::MissingString(key);
        }
    }
    if !is_text(obj.get("purpose")) {
        return MetaError::WrongType("purpose");
    }
    // An object member's members, each named `key.member` when it does not fit.
    type Member = (&'static str, fn(&Value) -> bool);
    let member_misfit = |key: &'static str, members: &[Member]| match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::Object(o)) => members
            .iter()
            .find(|(m, fits)| {
                let name = m.rsplit('.').next().unwrap_or(m);
                !fits(o.get(name).unwrap_or(&Value::Null))
            })
            .map(|(m, _)| MetaError::WrongType(m)),
        Some(_) => Some(MetaError::WrongType(key)),
    };
    let text = |v: &Value| matches!(v, Value::Null | Value::String(_));
    if let Some(e) = member_misfit("conduct_ext", &[("conduct_ext.mode", text)]) {
        return e;
    }
    if !is_text(obj.get("mode")) {
        return MetaError::WrongType("mode");
    }
    let verdict_members: [Member; 4] = [
        ("verdict.ok", |v| v.is_boolean()),
        ("verdict.outcome", |v| v.is_string()),
        ("verdict.n_pass", |v| v.is_i64()),
        ("verdict.n_total", |v| v.is_i64()),
    ];
    if let Some(e) = member_misfit("verdict", &verdict_members) {
        return e;
    }
    if let Some(e) = member_misfit("witness", &[("witness.key_url", text)]) {
        return e;
    }
    MetaError::NotJson("the record could not be read".into())
}

/// The endpoint a purpose names: the rule lives with the record's wire form.
pub use crate::wire::endpoint_from_purpose;

/// What a record shows beyond its `records` columns (migration 5's `record_facts`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Some fetch ended in a transport error (status 0).
    pub transport_error: bool,
    /// Names of the failed assertions, in record order.
    pub failed: Vec<String>,
    pub witness_name: Option<String>,
    pub vantage: Option<String>,
}

/// The same facts from a record's bytes, for stores older than migration 5 (opened read-only,
/// so never migrated) and to check the SQL derivation against.
pub fn facts_from_canonical(canonical: &[u8]) -> Facts {
    let Ok(v) = RecordView::read(canonical) else {
        return Facts::default();
    };
    Facts {
        transport_error: v.transport_error(),
        failed: v.assertion_names(super::record_view::Outcome::Failed),
        witness_name: v.witness_name().map(str::to_string),
        vantage: v.witness_vantage().map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn endpoint_follows_the_intake_pattern() {
        assert_eq!(
            endpoint_from_purpose("a2a-conduct-walk-v1: https://a.example/mcp"),
            Some("https://a.example/mcp")
        );
        assert_eq!(
            endpoint_from_purpose("a2a-conduct-walk-v1:https://a.example/x tail"),
            Some("https://a.example/x")
        );
        assert_eq!(endpoint_from_purpose("a2a-conduct-walk-v1:   "), None);
        assert_eq!(endpoint_from_purpose("other: https://a.example"), None);
    }

    #[test]
    fn commitment_record_has_no_verdict_and_base_endpoint_fallback() {
        let rec = json!({
            "schema": "jidec-path-v1",
            "purpose": "something-else",
            "base": "https://a.example",
            "walked_at": "2026-09-06T10:00:00Z",
            "mode": "commitment",
            "witness": {"name": "w", "key_url": "https://w.example/k.json"}
        });
        let m = derive(&rec).unwrap();
        assert_eq!(m.endpoint, "https://a.example");
        assert_eq!(m.privacy_mode, "commitment");
        assert_eq!(m.verdict, None);
        assert_eq!(m.walker_mode, None);
        assert_eq!(m.key_url.as_deref(), Some("https://w.example/k.json"));
    }

    #[test]
    fn from_bytes_matches_full_parse() {
        let rec = json!({
            "schema": "jidec-path-v1",
            "purpose": "a2a-conduct-walk-v1: https://a.example/a2a",
            "base": "https://a.example",
            "walked_at": "2026-09-06T10:00:00Z",
            "nodes": [{"x": [1, 2.5, "é"]}],
            "verdict": {"ok": false, "outcome": "FAIL", "n_pass": 5, "n_total": 8},
            "conduct_ext": {"mode": "a2a", "target": null},
            "witness": {"name": "w"}
        });
        let bytes = crate::canonical::to_bytes(&rec);
        assert_eq!(derive_from_bytes(&bytes), derive(&rec));
        assert_eq!(
            derive_from_bytes(&bytes).unwrap().verdict.unwrap().n_pass,
            5
        );
        assert_eq!(derive_from_bytes(b"[1]"), Err(MetaError::NotObject));
        assert!(matches!(
            derive_from_bytes(b"{"),
            Err(MetaError::NotJson(_))
        ));
        assert_eq!(
            derive_from_bytes(
                br#"{"schema":"jidec-path-v1","base":"b","walked_at":"t","verdict":7}"#
            ),
            Err(MetaError::WrongType("verdict"))
        );
    }

    #[test]
    fn malformed_records_are_named() {
        assert_eq!(derive(&json!([1])), Err(MetaError::NotObject));
        assert_eq!(
            derive(&json!({"schema": "x"})),
            Err(MetaError::WrongSchema("\"x\"".into()))
        );
        let bad = json!({"schema": "jidec-path-v1", "base": "b", "walked_at": "t",
                         "verdict": {"ok": true, "outcome": "PASS", "n_pass": "8", "n_total": 8}});
        assert_eq!(derive(&bad), Err(MetaError::WrongType("verdict.n_pass")));
    }
}
