//! §6.3 record validation (`witnessValidate`) and §6.5 endpoint attribution: pure functions
//! over the submitted text, no I/O.
//!
//! The real intake is JavaScript, so a few rules follow JavaScript semantics on purpose:
//! `String.prototype.trim` whitespace, `typeof x === "object"` for `verdict` (null and arrays
//! pass), `\s` in the purpose pattern, and WHATWG URL parsing (the `url` crate implements it).

use super::constants::*;
use serde_json::{Map, Value};
use std::fmt;

/// A §6.3 reason code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasonCode {
    Schema,
    BadMode,
    DisclaimerMissing,
    BadCommitment,
    PathLeaksTool,
    BadKeyUrl,
}

impl ReasonCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ReasonCode::Schema => REASON_SCHEMA,
            ReasonCode::BadMode => REASON_BAD_MODE,
            ReasonCode::DisclaimerMissing => REASON_DISCLAIMER_MISSING,
            ReasonCode::BadCommitment => REASON_BAD_COMMITMENT,
            ReasonCode::PathLeaksTool => REASON_PATH_LEAKS_TOOL,
            ReasonCode::BadKeyUrl => REASON_BAD_KEY_URL,
        }
    }
}

impl fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a record failed §6.3: the `reason_code` and `why` of the 422 answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason_code}: {why}")]
pub struct Invalid {
    pub reason_code: ReasonCode,
    pub why: String,
}

impl Invalid {
    fn new(reason_code: ReasonCode, why: impl Into<String>) -> Self {
        Invalid {
            reason_code,
            why: why.into(),
        }
    }

    fn schema(why: impl Into<String>) -> Self {
        Invalid::new(ReasonCode::Schema, why)
    }
}

/// Privacy mode of a record (§4.5, §4.6); a v1 record without `mode` is `full`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordMode {
    Full,
    HashOnly,
    Commitment,
}

impl RecordMode {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordMode::Full => MODE_FULL,
            RecordMode::HashOnly => MODE_HASH_ONLY,
            RecordMode::Commitment => MODE_COMMITMENT,
        }
    }
}

/// What the intake keeps from a record that passed §6.3.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validated {
    pub purpose: String,
    pub base: String,
    pub witness_name: String,
    pub vantage: String,
    /// `witness.key_url`, already checked to be an https URL.
    pub key_url: Option<String>,
    pub mode: RecordMode,
    /// The record has a `mode` key (§6.3 step 5); such records also carry the disclaimers.
    pub v11: bool,
    /// The walked endpoint (§6.5).
    pub endpoint: String,
}

/// Run §6.3 steps 1–9 in order; the first failure is the answer.
pub fn validate(record_canonical: &str) -> Result<Validated, Invalid> {
    // Step 1. JSON.parse is strict: NaN/Infinity are not JSON here, unlike the walker's card reader.
    let value: Value =
        serde_json::from_str(record_canonical).map_err(|_| Invalid::schema(WHY_NOT_JSON))?;
    let record = value
        .as_object()
        .ok_or_else(|| Invalid::schema(WHY_NOT_OBJECT))?;

    // Step 2.
    if record.get("schema").and_then(Value::as_str) != Some(SCHEMA_PATH) {
        return Err(Invalid::schema(WHY_SCHEMA));
    }

    // Step 3: presence and type only; no format check on walked_at or base.
    let mut strings = ["purpose", "walked_at", "base"].into_iter().map(|name| {
        non_empty_str(record, name)
            .ok_or_else(|| Invalid::schema(format!("{WHY_MISSING_STRING_FIELD}{name}")))
    });
    let purpose = strings.next().expect("purpose")?.to_string();
    strings.next().expect("walked_at")?;
    let base = strings.next().expect("base")?.to_string();

    // Step 4.
    let witness = record
        .get("witness")
        .and_then(Value::as_object)
        .ok_or_else(|| Invalid::schema("witness must be an object"))?;
    let witness_name = non_empty_str(witness, "name")
        .ok_or_else(|| Invalid::schema("witness.name must be a non-empty string"))?
        .to_string();
    let vantage = non_empty_str(witness, "vantage")
        .ok_or_else(|| Invalid::schema("witness.vantage must be a non-empty string"))?
        .to_string();

    // Step 5: the presence of the key, whatever its value, makes a record v1.1.
    let v11 = record.contains_key("mode");
    let mode = match record.get("mode") {
        None => RecordMode::Full,
        Some(Value::String(s)) if s == MODE_FULL => RecordMode::Full,
        Some(Value::String(s)) if s == MODE_HASH_ONLY => RecordMode::HashOnly,
        Some(Value::String(s)) if s == MODE_COMMITMENT => RecordMode::Commitment,
        Some(_) => {
            return Err(Invalid::new(
                ReasonCode::BadMode,
                "mode must be one of full, hash-only, commitment",
            ));
        }
    };

    // Step 6: establishes first, then does_not_establish.
    if v11 {
        for field in ["establishes", "does_not_establish"] {
            if !non_blank_string_list(record.get(field)) {
                return Err(Invalid::new(
                    ReasonCode::DisclaimerMissing,
                    format!("{field} must be a non-empty array of non-blank strings"),
                ));
            }
        }
    }

    // Step 7.
    if mode == RecordMode::Commitment {
        let ok = record
            .get("commitment")
            .and_then(Value::as_str)
            .is_some_and(|c| c.len() == 64 && c.bytes().all(|b| b.is_ascii_hexdigit()));
        if !ok {
            return Err(Invalid::new(
                ReasonCode::BadCommitment,
                "commitment must be 64 hex characters",
            ));
        }
    } else {
        for field in ["nodes", "assertions"] {
            let ok = record
                .get(field)
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty());
            if !ok {
                return Err(Invalid::schema(format!(
                    "{field} must be a non-empty array"
                )));
            }
        }
        // `typeof verdict === "object"`: null and arrays pass, a missing key or a scalar does not.
        let ok = matches!(
            record.get("verdict"),
            Some(Value::Object(_) | Value::Array(_) | Value::Null)
        );
        if !ok {
            return Err(Invalid::schema("verdict must be an object"));
        }
    }

    // Step 8.
    if mode == RecordMode::HashOnly {
        let nodes = record.get("nodes").and_then(Value::as_array);
        for (i, node) in nodes.into_iter().flatten().enumerate() {
            check_hash_only_node(i, node)?;
        }
    }

    // Step 9: a present key_url of any value (null included) must be an https URL.
    let key_url = match witness.get("key_url") {
        None => None,
        Some(v) => {
            let url = v
                .as_str()
                .filter(|s| url::Url::parse(s).is_ok_and(|u| u.scheme() == "https"))
                .ok_or_else(|| Invalid::new(ReasonCode::BadKeyUrl, WHY_BAD_KEY_URL))?;
            Some(url.to_string())
        }
    };

    let endpoint = walked_endpoint(&purpose, &base);
    Ok(Validated {
        purpose,
        base,
        witness_name,
        vantage,
        key_url,
        mode,
        v11,
        endpoint,
    })
}

fn check_hash_only_node(i: usize, node: &Value) -> Result<(), Invalid> {
    let Some(request) = node.get("request").and_then(Value::as_object) else {
        return Ok(());
    };
    if let Some(url) = request.get("url") {
        let parsed = url
            .as_str()
            .and_then(|s| url::Url::parse(s).ok())
            .ok_or_else(|| {
                Invalid::new(
                    ReasonCode::PathLeaksTool,
                    format!("hash-only node {i}: request.url is not a URL"),
                )
            })?;
        // JavaScript's URL reports an empty query or fragment ("?" / "#") as "", so only a
        // non-empty one leaks something.
        let path_ok = matches!(parsed.path(), "" | "/");
        let query_ok = parsed.query().is_none_or(str::is_empty);
        let fragment_ok = parsed.fragment().is_none_or(str::is_empty);
        if !(path_ok && query_ok && fragment_ok) {
            return Err(Invalid::new(
                ReasonCode::PathLeaksTool,
                format!(
                    "hash-only node {i}: request.url must be scheme://authority/ with no path, query or fragment"
                ),
            ));
        }
    }
    if let Some(method) = request.get("method")
        && method.as_str() != Some(REDACTED_METHOD)
    {
        return Err(Invalid::new(
            ReasonCode::PathLeaksTool,
            format!("hash-only node {i}: request.method must be {REDACTED_METHOD}"),
        ));
    }
    Ok(())
}

fn non_empty_str<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    map.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn non_blank_string_list(value: Option<&Value>) -> bool {
    value.and_then(Value::as_array).is_some_and(|items| {
        !items.is_empty()
            && items.iter().all(|item| {
                item.as_str()
                    .is_some_and(|s| !s.trim_matches(crate::witness_pool::js::is_space).is_empty())
            })
    })
}

/// §6.5: the first run of non-space characters after `a2a-conduct-walk-v1:` and any whitespace
/// at the very start of `purpose` (the intake's `^a2a-conduct-walk-v1:\s*(\S+)`), else `base`.
pub fn walked_endpoint(purpose: &str, base: &str) -> String {
    if let Some(rest) = purpose.strip_prefix(PURPOSE_PREFIX) {
        let endpoint: String = rest
            .trim_start_matches(crate::witness_pool::js::is_space)
            .chars()
            .take_while(|c| !crate::witness_pool::js::is_space(*c))
            .collect();
        if !endpoint.is_empty() {
            return endpoint;
        }
    }
    base.to_string()
}

/// The lower-case host name (no port) of an https URL; None for anything else. The self-witness
/// check compares https hosts only (§6.5).
pub fn https_host(raw: &str) -> Option<String> {
    url::Url::parse(raw)
        .ok()
        .filter(|u| u.scheme() == "https")
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn full() -> Value {
        json!({
            "schema": "jidec-path-v1",
            "purpose": "a2a-conduct-walk-v1: https://agent.example/a2a",
            "walked_at": "2026-11-30T12:00:00Z",
            "base": "https://agent.example",
            "witness": {"name": "w", "vantage": "v"},
            "nodes": [{"n": 0}],
            "assertions": [{}],
            "verdict": {"ok": true},
            "mode": "full",
            "establishes": ["e"],
            "does_not_establish": ["d"],
        })
    }

    fn check(v: &Value) -> Result<Validated, Invalid> {
        validate(&v.to_string())
    }

    fn code(v: &Value) -> ReasonCode {
        check(v).unwrap_err().reason_code
    }

    #[test]
    fn accepts_a_full_record_and_attributes_the_endpoint() {
        let ok = check(&full()).unwrap();
        assert_eq!(ok.endpoint, "https://agent.example/a2a");
        assert!(ok.v11);
        assert_eq!(ok.mode, RecordMode::Full);
    }

    #[test]
    fn step_order_and_texts() {
        assert_eq!(validate("{").unwrap_err().why, WHY_NOT_JSON);
        assert_eq!(validate("NaN").unwrap_err().why, WHY_NOT_JSON);
        assert_eq!(validate("[1]").unwrap_err().why, WHY_NOT_OBJECT);
        let mut r = full();
        r["schema"] = json!("jidec-path-v2");
        r["mode"] = json!("bogus");
        assert_eq!(check(&r).unwrap_err().why, WHY_SCHEMA, "schema before mode");
        let mut r = full();
        r["walked_at"] = json!("");
        assert_eq!(
            check(&r).unwrap_err().why,
            "missing string field: walked_at"
        );
        let mut r = full();
        r["mode"] = json!(null);
        r["establishes"] = json!([]);
        assert_eq!(code(&r), ReasonCode::BadMode, "mode before disclaimers");
        let mut r = full();
        r["establishes"] = json!([" \u{feff}\u{3000}"]);
        assert_eq!(code(&r), ReasonCode::DisclaimerMissing);
        // U+0085 is not JavaScript whitespace, so this line is not blank.
        r["establishes"] = json!(["\u{85}"]);
        assert!(check(&r).is_ok());
    }

    #[test]
    fn v1_record_needs_no_disclaimers_and_is_full() {
        let mut r = full();
        let m = r.as_object_mut().unwrap();
        m.remove("mode");
        m.remove("establishes");
        m.remove("does_not_establish");
        let ok = check(&r).unwrap();
        assert!(!ok.v11);
        assert_eq!(ok.mode, RecordMode::Full);
    }

    #[test]
    fn verdict_uses_typeof_object() {
        let mut r = full();
        r["verdict"] = json!(null);
        assert!(check(&r).is_ok());
        r["verdict"] = json!([]);
        assert!(check(&r).is_ok());
        r["verdict"] = json!("PASS");
        assert_eq!(code(&r), ReasonCode::Schema);
        r.as_object_mut().unwrap().remove("verdict");
        assert_eq!(code(&r), ReasonCode::Schema);
    }

    #[test]
    fn commitment_and_hash_only_rules() {
        let mut r = full();
        r["mode"] = json!("commitment");
        r["commitment"] = json!("AB".repeat(32));
        r.as_object_mut().unwrap().remove("nodes");
        assert!(check(&r).is_ok());
        r["commitment"] = json!("ab".repeat(31));
        assert_eq!(code(&r), ReasonCode::BadCommitment);

        let mut r = full();
        r["mode"] = json!("hash-only");
        r["nodes"] =
            json!([{"request": {"url": "https://h:8443/", "method": "REDACTED"}}, {"n": 2}]);
        assert!(check(&r).is_ok());
        r["nodes"] = json!([{"request": {"url": "https://h/?"}}]);
        assert!(
            check(&r).is_ok(),
            "an empty query is no query in JavaScript"
        );
        for bad in [
            json!({"url": "https://h/a2a"}),
            json!({"url": "https://h/?q=1"}),
            json!({"url": "https://h/#f"}),
            json!({"url": "not a url"}),
            json!({"url": null}),
            json!({"method": "POST"}),
        ] {
            r["nodes"] = json!([{"request": bad}]);
            assert_eq!(code(&r), ReasonCode::PathLeaksTool, "{bad}");
        }
    }

    #[test]
    fn key_url_must_be_https_when_present() {
        let mut r = full();
        for bad in [
            json!("http://w.example/k"),
            json!(null),
            json!(""),
            json!(5),
        ] {
            r["witness"]["key_url"] = bad;
            let e = check(&r).unwrap_err();
            assert_eq!(
                (e.reason_code, e.why.as_str()),
                (ReasonCode::BadKeyUrl, WHY_BAD_KEY_URL)
            );
        }
        r["witness"]["key_url"] = json!("https://W.Example/k");
        assert_eq!(
            check(&r).unwrap().key_url.as_deref(),
            Some("https://W.Example/k")
        );
    }

    #[test]
    fn endpoint_attribution() {
        let b = "https://b.example";
        assert_eq!(
            walked_endpoint("a2a-conduct-walk-v1:https://e/x y", b),
            "https://e/x"
        );
        assert_eq!(
            walked_endpoint("a2a-conduct-walk-v1:\t\u{a0}https://e/x", b),
            "https://e/x"
        );
        assert_eq!(walked_endpoint("a2a-conduct-walk-v1:   ", b), b);
        assert_eq!(walked_endpoint(" a2a-conduct-walk-v1: https://e/", b), b);
        assert_eq!(walked_endpoint("other", b), b);
        assert_eq!(
            https_host("https://Agent.Example:8443/x").as_deref(),
            Some("agent.example")
        );
        assert_eq!(https_host("http://agent.example/"), None);
    }
}
