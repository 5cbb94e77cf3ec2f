//! The metadata columns, derived from a record's canonical bytes. The store never takes these
//! from the caller: deriving them here means `records verify` can re-derive and compare them.

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

/// [`derive`] straight from bytes, reading only the fields it needs (the nodes and assertions,
/// most of a record, are skipped without being built), which is several times faster than
/// parsing the whole record. Same result as `derive(&parse_lenient(bytes)?)` for any record
/// without duplicate keys (canonical records have none).
pub fn derive_from_bytes(bytes: &[u8]) -> Result<RecordMeta, MetaError> {
    // Null and absent both become None here; `derive` treats them alike for every field but
    // the three required ones, where either is an error anyway.
    #[derive(serde::Deserialize)]
    struct Fields {
        schema: Option<Value>,
        base: Option<Value>,
        walked_at: Option<Value>,
        purpose: Option<Value>,
        conduct_ext: Option<Value>,
        mode: Option<Value>,
        verdict: Option<Value>,
        witness: Option<Value>,
    }
    // A struct also deserializes from a JSON array; only an object may take the fast path.
    let is_object = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    let fast = if is_object {
        serde_json::from_slice::<Fields>(bytes).ok()
    } else {
        None
    };
    let f = match fast {
        Some(f) => f,
        // Not an object at all, or a field of the wrong shape: let the full path name it.
        None => {
            let v =
                crate::json::parse_lenient(bytes).map_err(|e| MetaError::NotJson(e.to_string()))?;
            return derive(&v);
        }
    };
    let mut obj = serde_json::Map::new();
    for (k, v) in [
        ("schema", f.schema),
        ("base", f.base),
        ("walked_at", f.walked_at),
        ("purpose", f.purpose),
        ("conduct_ext", f.conduct_ext),
        ("mode", f.mode),
        ("verdict", f.verdict),
        ("witness", f.witness),
    ] {
        if let Some(v) = v {
            obj.insert(k.to_string(), v);
        }
    }
    derive(&Value::Object(obj))
}

/// Derive the metadata of a parsed record.
pub fn derive(record: &Value) -> Result<RecordMeta, MetaError> {
    let obj = record.as_object().ok_or(MetaError::NotObject)?;
    match obj.get("schema") {
        Some(Value::String(s)) if s == crate::wire::SCHEMA => {}
        Some(other) => return Err(MetaError::WrongSchema(other.to_string())),
        None => return Err(MetaError::MissingString("schema")),
    }
    let origin = req_str(record, "base")?;
    let walked_at = req_str(record, "walked_at")?;
    let purpose = opt_str(record.get("purpose"), "purpose")?;
    let endpoint = purpose
        .and_then(endpoint_from_purpose)
        .unwrap_or(origin)
        .to_string();
    let walker_mode = match record.get("conduct_ext") {
        None | Some(Value::Null) => None,
        Some(Value::Object(ext)) => opt_str(ext.get("mode"), "conduct_ext.mode")?,
        Some(_) => return Err(MetaError::WrongType("conduct_ext")),
    };
    let privacy_mode = opt_str(record.get("mode"), "mode")?.unwrap_or("full");
    let verdict = match record.get("verdict") {
        None | Some(Value::Null) => None,
        Some(Value::Object(v)) => Some(Verdict {
            ok: v
                .get("ok")
                .and_then(Value::as_bool)
                .ok_or(MetaError::WrongType("verdict.ok"))?,
            outcome: v
                .get("outcome")
                .and_then(Value::as_str)
                .ok_or(MetaError::WrongType("verdict.outcome"))?
                .to_string(),
            n_pass: v
                .get("n_pass")
                .and_then(Value::as_i64)
                .ok_or(MetaError::WrongType("verdict.n_pass"))?,
            n_total: v
                .get("n_total")
                .and_then(Value::as_i64)
                .ok_or(MetaError::WrongType("verdict.n_total"))?,
        }),
        Some(_) => return Err(MetaError::WrongType("verdict")),
    };
    let key_url = match record.get("witness") {
        None | Some(Value::Null) => None,
        Some(Value::Object(w)) => opt_str(w.get("key_url"), "witness.key_url")?,
        Some(_) => return Err(MetaError::WrongType("witness")),
    };
    Ok(RecordMeta {
        endpoint,
        origin: origin.to_string(),
        walked_at: walked_at.to_string(),
        walker_mode: walker_mode.map(str::to_string),
        privacy_mode: privacy_mode.to_string(),
        verdict,
        key_url: key_url.map(str::to_string),
    })
}

/// The endpoint a purpose names: the rule lives with the record's wire form.
pub use crate::wire::endpoint_from_purpose;

fn req_str<'a>(record: &'a Value, key: &'static str) -> Result<&'a str, MetaError> {
    record
        .get(key)
        .and_then(Value::as_str)
        .ok_or(MetaError::MissingString(key))
}

fn opt_str<'a>(v: Option<&'a Value>, key: &'static str) -> Result<Option<&'a str>, MetaError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(MetaError::WrongType(key)),
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
