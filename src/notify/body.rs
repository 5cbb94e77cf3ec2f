//! The POST's body (§7.3), pure: built from the record the walk stored and, for `changed`,
//! the previous scheduled walk's record of the same endpoint. Nothing here is part of the
//! record: the body is a summary of it sent beside it.

use serde_json::{Value, json};

/// Where the body's `lookup` points: the registry's lookup, `endpoint=` appended.
pub const LOOKUP_BASE: &str = "https://gate.horizonshield.dev/register/lookup?endpoint=";
/// `changed` when there is no previous scheduled walk of the endpoint.
pub const FIRST_WALK: &str = "first walk of this endpoint";
/// `changed` when the card's body hash differs from the previous walk's.
pub const CARD_CHANGED: &str = "card body sha256 changed";

/// One stored walk, as the body reads it.
#[derive(Debug, Clone, Copy)]
pub struct Walked<'a> {
    /// The record's JSON (its canonical bytes parsed).
    pub record: &'a Value,
    /// The record's identity: the sha256 of its canonical bytes.
    pub sha256: &'a str,
    /// The origin whose consent file declared `notify` (`https://host[:port]`).
    pub origin: &'a str,
    /// The intake the record is filed to, when the walk files; `conduct_record` is null
    /// otherwise (there is no read URL for a record that was never filed).
    pub filed_to: Option<&'a str>,
}

/// The body's `endpoint`: the walk's target (`conduct_ext.target`), else the record's `base`.
pub fn endpoint(record: &Value) -> String {
    record["conduct_ext"]["target"]
        .as_str()
        .or_else(|| record["base"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The §7.3 body.
pub fn body(walked: Walked<'_>, previous: Option<&Value>) -> Value {
    let record = walked.record;
    let endpoint = endpoint(record);
    let consent_file = crate::consent::consent_url(walked.origin);
    json!({
        "event": "measured",
        "endpoint": endpoint,
        "at": record["walked_at"],
        "status": record["verdict"]["outcome"],
        "record_sha256": walked.sha256,
        "changed": changed(record, previous),
        "establishes": record["establishes"],
        "does_not_establish": record["does_not_establish"],
        "witness": record["witness"],
        "conduct_record": walked
            .filed_to
            .map(|intake| format!("{}/{}", intake.trim_end_matches('/'), walked.sha256)),
        "lookup": format!("{LOOKUP_BASE}{}", crate::witness_pool::publish::encode(&endpoint)),
        "note": format!(
            "Sent because {consent_file} declares notify. This changes nothing about the record. Remove the field to stop."
        ),
    })
}

/// What differs from the previous scheduled walk of the endpoint: the verdict, the card's
/// body hash, the n3 status. Empty when nothing did.
pub fn changed(record: &Value, previous: Option<&Value>) -> Vec<String> {
    let Some(previous) = previous else {
        return vec![FIRST_WALK.to_string()];
    };
    let mut changes = Vec::new();
    let verdict = |r: &Value| shown(&r["verdict"]["outcome"]);
    if verdict(record) != verdict(previous) {
        changes.push(format!(
            "verdict: was {}, now {}",
            verdict(previous),
            verdict(record)
        ));
    }
    if node_response(record, 1, "body_sha256") != node_response(previous, 1, "body_sha256") {
        changes.push(CARD_CHANGED.to_string());
    }
    let n3 = |r: &Value| shown(node_response(r, 3, "status"));
    if n3(record) != n3(previous) {
        changes.push(format!(
            "n3 status: was {}, now {}",
            n3(previous),
            n3(record)
        ));
    }
    changes
}

/// A field of node `n`'s response (`Null` when the node or the field is missing: an n3 that
/// was never sent).
fn node_response<'a>(record: &'a Value, n: u64, field: &str) -> &'a Value {
    record["nodes"]
        .as_array()
        .and_then(|nodes| nodes.iter().find(|node| node["n"] == n))
        .map_or(&Value::Null, |node| &node["response"][field])
}

fn shown(v: &Value) -> String {
    match v {
        Value::Null => "none".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(outcome: &str, card_sha: &str, n3_status: Option<u16>) -> Value {
        let mut nodes = vec![
            json!({"n": 0, "response": {"body_sha256": card_sha, "status": 200}}),
            json!({"n": 1, "response": {"body_sha256": card_sha, "status": 200}}),
            json!({"n": 2, "kind": "compute"}),
        ];
        if let Some(status) = n3_status {
            nodes.push(json!({"n": 3, "response": {"status": status}}));
        }
        json!({
            "base": "https://agent.a.example",
            "conduct_ext": {"target": "https://agent.a.example/mcp"},
            "walked_at": "2026-12-06T03:40:00Z",
            "verdict": {"outcome": outcome},
            "nodes": nodes,
            "establishes": ["line one"],
            "does_not_establish": ["line two"],
            "witness": {"name": "w", "vantage": "v"},
        })
    }

    #[test]
    fn the_body_carries_the_specs_fields() {
        let r = record("PASS", "aa", Some(200));
        let sha = "ab".repeat(32);
        let b = body(
            Walked {
                record: &r,
                sha256: &sha,
                origin: "https://agent.a.example/",
                filed_to: Some("https://ledger.c.example/witness/"),
            },
            None,
        );
        assert_eq!(b["event"], "measured");
        assert_eq!(b["endpoint"], "https://agent.a.example/mcp");
        assert_eq!(b["at"], "2026-12-06T03:40:00Z");
        assert_eq!(b["status"], "PASS");
        assert_eq!(b["record_sha256"], sha.as_str());
        assert_eq!(b["changed"], json!([FIRST_WALK]));
        assert_eq!(b["establishes"], json!(["line one"]));
        assert_eq!(b["does_not_establish"], json!(["line two"]));
        assert_eq!(b["witness"]["name"], "w");
        assert_eq!(
            b["conduct_record"],
            format!("https://ledger.c.example/witness/{sha}")
        );
        assert_eq!(
            b["lookup"],
            "https://gate.horizonshield.dev/register/lookup?endpoint=https%3A%2F%2Fagent.a.example%2Fmcp"
        );
        assert_eq!(
            b["note"],
            "Sent because https://agent.a.example/.well-known/mcp-conduct.json declares notify. This changes nothing about the record. Remove the field to stop."
        );
        let unfiled = body(
            Walked {
                record: &r,
                sha256: &sha,
                origin: "https://agent.a.example",
                filed_to: None,
            },
            None,
        );
        assert_eq!(unfiled["conduct_record"], Value::Null);
    }

    #[test]
    fn the_endpoint_is_the_base_when_the_walk_has_no_target() {
        let mut r = record("PASS", "aa", None);
        r["conduct_ext"]["target"] = Value::Null;
        assert_eq!(endpoint(&r), "https://agent.a.example");
    }

    #[test]
    fn changed_names_what_differs_from_the_previous_walk() {
        let before = record("PASS", "aa", Some(200));
        assert_eq!(
            changed(&record("PASS", "aa", Some(200)), Some(&before)),
            Vec::<String>::new()
        );
        assert_eq!(
            changed(&record("FAIL", "bb", Some(500)), Some(&before)),
            vec![
                "verdict: was PASS, now FAIL".to_string(),
                CARD_CHANGED.to_string(),
                "n3 status: was 200, now 500".to_string(),
            ]
        );
        assert_eq!(
            changed(&record("PASS", "aa", None), Some(&before)),
            vec!["n3 status: was 200, now none".to_string()]
        );
        assert_eq!(changed(&before, None), vec![FIRST_WALK.to_string()]);
    }
}
