//! The tools' declarations (JSON Schema inputs and outputs) and the argument reader.
//!
//! Schemas are written out by hand rather than derived: they are the contract a model reads,
//! `witness_walk`'s inputs must stay compatible with the reference tool's, and every enum and
//! default should be visible in them.

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub const WITNESS_WALK: &str = "witness_walk";
pub const RECORDS_LIST: &str = "records_list";
pub const RECORDS_SHOW: &str = "records_show";
pub const RECORDS_VERIFY: &str = "records_verify";
pub const CARD_VERIFY: &str = "card_verify";
pub const TERMS_VERIFY: &str = "terms_verify";

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => unreachable!("schemas are JSON objects"),
    }
}

fn nullable(t: &str) -> Value {
    json!({ "type": [t, "null"] })
}

fn submission_schema() -> Value {
    json!({
        "type": ["object", "null"],
        "description": "The intake's classified answer; null when nothing was to be filed.",
        "properties": {
            "answer": {
                "type": "string",
                "enum": crate::witness::filing::Outcome::ALL,
            },
            "state": { "type": "string" },
            "intake_url": { "type": "string" },
            "http_status": nullable("integer"),
            "reason_code": nullable("string"),
            "error": nullable("string"),
            "counted": nullable("boolean"),
            "count_reason": nullable("string"),
            "next_attempt_at": nullable("string"),
            "summary": { "type": "string" },
        },
        "required": ["answer", "state", "intake_url", "summary"],
    })
}

fn witness_walk() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "origin": { "type": "string", "description": "The agent's https origin, e.g. https://agent.example (its card is at /.well-known/agent-card.json)." },
            "witness_name": { "type": "string", "description": "The witness name to write into the record. Used only when the operator's config allows it; otherwise the configured identity is used and the answer says so." },
            "vantage": { "type": "string", "description": "Where the walk is taken from (free text). Same rule as witness_name." },
            "mode": { "type": "string", "enum": ["a2a", "mcp"], "default": "a2a", "description": "a2a: send an A2A message; mcp: send an MCP initialize." },
            "wire": { "type": "string", "enum": ["1.0", "0.3"], "default": "1.0", "description": "A2A wire version." },
            "endpoint": { "type": "string", "description": "Walk this https endpoint instead of the card's first measured endpoint." },
            "submit": { "type": "boolean", "default": true, "description": "File the signed record with the intake (when the operator allows filing)." },
            "privacy": { "type": "string", "enum": ["full", "hash-only", "commitment"], "default": "full", "description": "full record, hash-only (URLs and methods redacted), or commitment (only a commitment is filed)." },
            "request_profile": { "type": "string", "enum": ["spec", "reference"], "default": "spec", "description": "mcp mode only: spec asks as MCP Streamable HTTP requires; reference asks exactly as the reference walker (byte-identical, but SDK-default MCP servers answer 406)." },
        },
        "required": ["origin"],
        "additionalProperties": false,
    });
    let output = json!({
        "type": "object",
        "properties": {
            "sha256": { "type": "string", "pattern": "^[0-9a-f]{64}$" },
            "verdict": {
                "type": "object",
                "properties": {
                    "ok": { "type": "boolean" },
                    "outcome": { "type": "string", "enum": ["PASS", "FAIL"] },
                    "n_pass": { "type": "integer" },
                    "n_total": { "type": "integer" },
                },
                "required": ["ok", "outcome", "n_pass", "n_total"],
            },
            "assertions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": { "type": "string" },
                        "result": nullable("boolean"),
                        "claim": { "type": "string" },
                        "note": nullable("string"),
                    },
                    "required": ["name", "result", "claim", "note"],
                },
            },
            "nodes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "n": { "type": "integer" },
                        "method": { "type": "string" },
                        "url": { "type": "string" },
                        "status": { "type": "integer" },
                        "body_sha256": { "type": "string" },
                        "transport_error": nullable("string"),
                    },
                    "required": ["n", "method", "url", "status", "body_sha256", "transport_error"],
                },
            },
            "card_signature": { "type": ["object", "null"], "description": "The record's card_signature block (null in a commitment record)." },
            "terms": { "type": ["object", "null"], "description": "The record's terms block, when the card lists the terms extension." },
            "record": { "type": "object", "description": "The filed record, parsed." },
            "record_canonical": { "type": "string", "description": "The filed record's exact canonical bytes (UTF-8); sha256 is their hash." },
            "identity": {
                "type": "object",
                "properties": {
                    "witness_name": { "type": "string" },
                    "vantage": { "type": "string" },
                    "source": { "type": "string", "enum": ["config", "model"] },
                    "note": nullable("string"),
                },
                "required": ["witness_name", "vantage", "source", "note"],
            },
            "stored": {
                "type": "object",
                "properties": {
                    "database": { "type": "string" },
                    "record_id": { "type": "integer" },
                    "signed": { "type": "boolean" },
                },
                "required": ["database", "record_id", "signed"],
            },
            "submission": submission_schema(),
            "submit_note": nullable("string"),
            "walks_today": {
                "type": "object",
                "properties": { "used": { "type": "integer" }, "cap": { "type": "integer" } },
                "required": ["used", "cap"],
            },
        },
        "required": ["sha256", "verdict", "assertions", "nodes", "card_signature", "terms", "record",
                     "record_canonical", "identity", "stored", "submission", "submit_note", "walks_today"],
    });
    Tool::new(
        WITNESS_WALK,
        "Walk an A2A agent as a witness (A2A Conduct Extension v1.4): fetch its card twice, send one \
         request, evaluate the assertions, sign the record with the operator's key, store it, and \
         file it with the witness intake. A walk never pays: an endpoint answering 402 is recorded, \
         not paid. Origins whose /.well-known/mcp-conduct.json declines listing are not walked.",
        object(input),
    )
    .with_raw_output_schema(object(output))
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(false)
            .idempotent(false)
            .open_world(true),
    )
}

fn records_list() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "endpoint": { "type": "string", "description": "Only records of this endpoint (exact match)." },
            "since": { "type": "string", "description": "Only records walked at or after this date (YYYY-MM-DD or RFC 3339)." },
            "outcome": { "type": "string", "enum": ["PASS", "FAIL"] },
            "limit": { "type": "integer", "minimum": 1, "maximum": 1000, "default": 50, "description": "At most this many, newest first." },
        },
        "additionalProperties": false,
    });
    let output = json!({
        "type": "object",
        "properties": {
            "records": { "type": "array", "items": { "type": "object" } },
            "matched": { "type": "integer" },
            "shown": { "type": "integer" },
        },
        "required": ["records", "matched", "shown"],
    });
    Tool::new(
        RECORDS_LIST,
        "List stored walk records (read-only): time, endpoint, verdict, sha256, signed.",
        object(input),
    )
    .with_raw_output_schema(object(output))
    .with_annotations(read_only())
}

fn records_show() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "sha_prefix": { "type": "string", "pattern": "^[0-9a-fA-F]{4,64}$", "description": "The first hex characters (at least 4) of the record's sha256." },
        },
        "required": ["sha_prefix"],
        "additionalProperties": false,
    });
    let output = json!({
        "type": "object",
        "properties": {
            "row": { "type": "object" },
            "record": { "type": "object" },
            "record_canonical": { "type": "string" },
            "signature_ed25519_b64": nullable("string"),
            "public_key_ed25519_b64": nullable("string"),
            "kept_full_sha256": nullable("string"),
        },
        "required": ["row", "record", "record_canonical", "signature_ed25519_b64", "public_key_ed25519_b64", "kept_full_sha256"],
    });
    Tool::new(
        RECORDS_SHOW,
        "Show one stored record by sha256 prefix (read-only): the record, its exact canonical \
         bytes, signature and stored metadata.",
        object(input),
    )
    .with_raw_output_schema(object(output))
    .with_annotations(read_only())
}

fn records_verify() -> Tool {
    let input = json!({ "type": "object", "properties": {}, "additionalProperties": false });
    let output = json!({
        "type": "object",
        "properties": {
            "ok": { "type": "boolean" },
            "rows": { "type": "integer" },
            "signed": { "type": "integer" },
            "chain_head": {
                "type": ["object", "null"],
                "properties": { "row": { "type": "integer" }, "chain_hash": { "type": "string" } },
            },
            "problems": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "row": { "type": "integer" },
                        "kind": { "type": "string" },
                        "detail": { "type": "string" },
                    },
                    "required": ["row", "kind", "detail"],
                },
            },
        },
        "required": ["ok", "rows", "signed", "chain_head", "problems"],
    });
    Tool::new(
        RECORDS_VERIFY,
        "Verify the whole store (read-only): every sha256, every signature, the metadata and the \
         hash chain.",
        object(input),
    )
    .with_raw_output_schema(object(output))
    .with_annotations(read_only())
}

fn url_input(what: &str) -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {
            "url": { "type": "string", "description": what },
        },
        "required": ["url"],
        "additionalProperties": false,
    }))
}

fn card_verify() -> Tool {
    let output = json!({
        "type": "object",
        "properties": {
            "url": { "type": "string" },
            "valid": { "type": "boolean" },
            "verified": {
                "type": ["boolean", "null"],
                "description": "true: a signature verifies; false: every checked signature failed; null: nothing could be checked",
            },
            "card_signature": { "type": "object" },
            "verified_reason": { "type": "string" },
            "does_not_establish": { "type": "string" },
        },
        "required": ["url", "valid", "verified", "card_signature", "verified_reason", "does_not_establish"],
    });
    Tool::new(
        CARD_VERIFY,
        "Verify the JWS signatures of an Agent Card (A2A §8.4): each entry, its key source and the \
         canonicalisation profile that verified.",
        url_input("The card's https URL; a bare origin means /.well-known/agent-card.json."),
    )
    .with_raw_output_schema(object(output))
    .with_annotations(read_only())
}

fn terms_verify() -> Tool {
    let output = json!({
        "type": "object",
        "properties": {
            "url": { "type": "string" },
            "listed": { "type": "boolean" },
            "all_verified": { "type": "boolean" },
            "terms": { "type": ["object", "null"] },
            "establishes": { "type": "array", "items": { "type": "string" } },
            "does_not_establish": { "type": "array", "items": { "type": "string" } },
        },
        "required": ["url", "listed", "all_verified", "terms", "establishes", "does_not_establish"],
    });
    Tool::new(
        TERMS_VERIFY,
        "Fetch and verify every standing proposal an Agent Card lists (A2A Terms extension) and \
         summarise the terms on offer.",
        url_input("The card's https URL; a bare origin means /.well-known/agent-card.json."),
    )
    .with_raw_output_schema(object(output))
    .with_annotations(read_only())
}

fn read_only() -> ToolAnnotations {
    ToolAnnotations::new().read_only(true).open_world(false)
}

/// Every tool, in the order `tools/list` shows them.
pub fn all() -> Vec<Tool> {
    vec![
        witness_walk(),
        records_list(),
        records_show(),
        records_verify(),
        card_verify(),
        terms_verify(),
    ]
}

/// A tool's arguments, read with clear errors: the model sees the text and can correct itself.
pub struct Args {
    map: Map<String, Value>,
}

impl Args {
    /// Refuses names the tool does not take (a typo would otherwise silently fall to a default).
    pub fn new(map: Option<JsonObject>, known: &[&str]) -> Result<Args, String> {
        let map = map.unwrap_or_default();
        if let Some(unknown) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(format!(
                "unknown argument {unknown:?}; this tool takes {}",
                known.join(", ")
            ));
        }
        Ok(Args { map })
    }

    pub fn string(&self, name: &str) -> Result<Option<String>, String> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("{name} must be a string, not {other}")),
        }
    }

    pub fn required(&self, name: &str) -> Result<String, String> {
        self.string(name)?
            .ok_or_else(|| format!("{name} is required"))
    }

    pub fn boolean(&self, name: &str, default: bool) -> Result<bool, String> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(format!("{name} must be true or false, not {other}")),
        }
    }

    pub fn integer(&self, name: &str, default: u64, max: u64) -> Result<u64, String> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => match v.as_u64() {
                Some(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(format!(
                    "{name} must be an integer from 1 to {max}, not {v}"
                )),
            },
        }
    }

    /// One of `allowed`, or `default` when absent.
    pub fn choice(
        &self,
        name: &str,
        allowed: &[&'static str],
        default: &'static str,
    ) -> Result<&'static str, String> {
        match self.string(name)? {
            None => Ok(default),
            Some(s) => {
                allowed.iter().copied().find(|a| *a == s).ok_or_else(|| {
                    format!("{name} must be one of {}, not {s:?}", allowed.join(", "))
                })
            }
        }
    }
}
