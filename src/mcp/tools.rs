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
pub const RING_VERIFY: &str = "ring_verify";
pub const INSPECT_DOCUMENT: &str = "inspect_document";
pub const CANONICAL_FORM: &str = "canonical_form";

/// The longest document `inspect_document` and `canonical_form` take: a record, observation,
/// ring or card is far smaller, and a parsed tree costs a few times its text.
pub const DOCUMENT_MAX_CHARS: usize = 4 * 1024 * 1024;
/// A key or signature in any spelling, or a key_url document.
const KEY_MAX_CHARS: usize = 4096;

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => unreachable!("schemas are JSON objects"),
    }
}

/// The longest URL a tool takes (`origin`, `endpoint`, `url`): real ones are far shorter, and a
/// bound keeps a megabyte of input from being fetched, stored or echoed.
pub const URL_MAX_CHARS: usize = 4096;
/// The longest witness name or vantage a model may give: the same bound as the config's.
pub const NAME_MAX_CHARS: usize = crate::config::MAX_NAME_CHARS;
/// The longest other free-text argument (`since`).
const SHORT_MAX_CHARS: usize = 64;
/// How much of a bad input an error quotes.
pub const QUOTE_CHARS: usize = 200;

/// A bad input, quoted for an error: at most [`QUOTE_CHARS`] characters of it, and its length
/// when it was longer (a 1 MB argument must not come back as a 2 MB error).
pub fn quote(s: &str) -> String {
    if s.chars().count() <= QUOTE_CHARS {
        return format!("{s:?}");
    }
    let head: String = s.chars().take(QUOTE_CHARS).collect();
    format!("{head:?}… ({} characters in all)", s.chars().count())
}

/// A JSON value, quoted for an error like [`quote`] (compact text, clipped).
pub fn quote_json(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() <= QUOTE_CHARS {
        return text;
    }
    let head: String = text.chars().take(QUOTE_CHARS).collect();
    format!("{head}… ({} characters in all)", text.chars().count())
}

/// "X or null", spelled as `anyOf` branches of one `type` each: several MCP clients read `type`
/// as a single string and reject or mangle `"type": [X, "null"]` (the Inspector's `--strict`
/// warns about it).
fn nullable(t: &str) -> Value {
    json!({ "anyOf": [{ "type": t }, { "type": "null" }] })
}

/// An object schema that may also be null, in the same portable form.
fn nullable_object(description: &str, object: Value) -> Value {
    json!({ "description": description, "anyOf": [object, { "type": "null" }] })
}

fn string_input(max: usize, description: &str) -> Value {
    json!({ "type": "string", "maxLength": max, "description": description })
}

fn submission_schema() -> Value {
    nullable_object(
        "The intake's classified answer; null when nothing was to be filed.",
        json!({
        "type": "object",
        "properties": {
            "answer": {
                "type": "string",
                "enum": crate::filing::Outcome::ALL,
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
        }),
    )
}

fn witness_walk() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "origin": string_input(URL_MAX_CHARS, "The agent's https origin, e.g. https://agent.example (its card is at /.well-known/agent-card.json)."),
            "witness_name": string_input(NAME_MAX_CHARS, "The witness name to write into the record. Used only when the operator's config allows it; otherwise the configured identity is used and the answer says so."),
            "vantage": string_input(NAME_MAX_CHARS, "Where the walk is taken from (free text). Same rule as witness_name."),
            "mode": { "type": "string", "enum": ["a2a", "mcp"], "default": "a2a", "description": "a2a: send an A2A message; mcp: send an MCP initialize." },
            "wire": { "type": "string", "enum": ["1.0", "0.3"], "default": "1.0", "description": "A2A wire version." },
            "endpoint": string_input(URL_MAX_CHARS, "Walk this https endpoint instead of the card's first measured endpoint."),
            "submit": { "type": "boolean", "default": true, "description": "File the signed record with the intake (when the operator allows filing)." },
            "privacy": { "type": "string", "enum": ["full", "hash-only", "commitment"], "default": "full", "description": "full record, hash-only (URLs and methods redacted), or commitment (only a commitment is filed)." },
            "request_profile": { "type": "string", "enum": ["spec", "reference"], "default": "spec", "description": "mcp mode only: spec asks as MCP Streamable HTTP requires; reference asks exactly as the reference walker (byte-identical, but SDK-default MCP servers answer 406)." },
            "bind_task": { "type": "boolean", "default": false, "description": "a2a mode: also bind the A2A Task the agent returned to the operator's task-delegation ledger (a signed observation, sent once; the record does not change). Only when the operator allows filing." },
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
            "card_signature": nullable_object("The record's card_signature block, the reference walker's check (null in a commitment record).", json!({ "type": "object" })),
            "card_verification": nullable_object("conduct-walker's own check of a signed card (every algorithm, pinned keys, profiles, uncovered members): kept beside the record, not in it; null for an unsigned card.", json!({ "type": "object" })),
            "terms": nullable_object("conduct-walker's check of the card's A2A Terms listing (its block and the lines it would add), kept beside the record, not in it; null when the card lists no terms extension.", json!({ "type": "object" })),
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
            "task_binding": nullable_object("The task binding, when bind_task was asked: skipped (and why), or sent once with the ledger's answer.", json!({
                "type": "object",
                "properties": {
                    "ledger_url": { "type": "string" },
                    "state": { "type": "string", "enum": crate::filing::bind::BindState::ALL.map(crate::filing::bind::BindState::as_str) },
                    "summary": { "type": "string" },
                    "note": nullable("string"),
                    "task_id": nullable("string"),
                    "evidence_id": nullable("string"),
                    "witness_id": nullable("string"),
                    "requester_id": nullable("string"),
                    "sent_at": nullable("string"),
                    "answered_at": nullable("string"),
                    "http_status": nullable("integer"),
                    "answer": { "anyOf": [{ "type": "object", "additionalProperties": true }, { "type": "null" }], "description": "The ledger's JSON object answer, or {\"raw\": first 500 characters} of any other answer; null before an answer." },
                },
                "required": ["ledger_url", "state", "summary"],
            })),
            "notify_status": {
                "type": "null",
                "description": "What the origin's consent-file `notify` (§11.5) got after this walk: always null here, because an on-demand walk never notifies (anyone can cause one); the daemon's scheduled walks show theirs on the record page and in `records show`.",
            },
            "walks_today": {
                "type": "object",
                "description": "The daily cap this walk counted against: filing walks share the lane's cap, store-only walks (submit false) have their own.",
                "properties": {
                    "used": { "type": "integer" },
                    "cap": { "type": "integer" },
                    "counted_as": { "type": "string", "enum": ["filing", "store_only"] },
                    "resets_at": { "type": "string" },
                },
                "required": ["used", "cap", "counted_as", "resets_at"],
            },
        },
        "required": ["sha256", "verdict", "assertions", "nodes", "card_signature", "card_verification", "terms", "record",
                     "record_canonical", "identity", "stored", "submission", "submit_note", "notify_status", "walks_today"],
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
            "endpoint": string_input(URL_MAX_CHARS, "Only records of this endpoint (exact match)."),
            "since": string_input(SHORT_MAX_CHARS, "Only records walked at or after this date (YYYY-MM-DD or RFC 3339)."),
            "outcome": { "type": "string", "enum": ["PASS", "FAIL"] },
            "limit": { "type": "integer", "minimum": 1, "maximum": LIST_MAX, "default": LIST_DEFAULT, "description": "At most this many per page, newest first." },
            "offset": { "type": "integer", "minimum": 0, "default": 0, "description": "Skip this many of the newest matches: pass the previous page's next_offset." },
        },
        "additionalProperties": false,
    });
    let output = json!({
        "type": "object",
        "properties": {
            "records": { "type": "array", "items": { "type": "object" } },
            "matched": { "type": "integer" },
            "shown": { "type": "integer" },
            "offset": { "type": "integer" },
            "next_offset": { "type": "integer", "description": "Present when more records match: the offset of the next page." },
        },
        "required": ["records", "matched", "shown", "offset"],
    });
    Tool::new(
        RECORDS_LIST,
        "List stored walk records (read-only), newest first, a page at a time: time, endpoint, \
         verdict, sha256, signed.",
        object(input),
    )
    .with_raw_output_schema(object(output))
    .with_annotations(read_only())
}

fn records_show() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "sha_prefix": { "type": "string", "pattern": "^[0-9a-fA-F]{4,64}$", "maxLength": 64, "description": "The first hex characters (at least 4) of the record's sha256." },
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
            "reciprocal": { "description": "The agent's EXT/reciprocal answer (scheduled or declined) to the caller_card a scheduled a2a walk sent (witness-pool.md section 6.4): kept beside the record, not in it; null when none was sent or answered.", "anyOf": [{ "type": "string" }, { "type": "null" }] },
        },
        "required": ["row", "record", "record_canonical", "signature_ed25519_b64", "public_key_ed25519_b64", "kept_full_sha256", "reciprocal"],
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
            "chain_head": nullable_object(
                "The last row and its chain hash; null for an empty store.",
                json!({
                    "type": "object",
                    "properties": { "row": { "type": "integer" }, "chain_hash": { "type": "string" } },
                }),
            ),
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
            "url": string_input(URL_MAX_CHARS, what),
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
                "anyOf": [{ "type": "boolean" }, { "type": "null" }],
                "description": "true: a signature verifies; false: every checked signature failed; null: nothing could be checked",
            },
            "verdict": {
                "type": "string",
                "enum": ["verified", "verified_with_uncovered_members", "not_verified", "not_checked", "unsigned"],
                "description": "verified only when a signature verifies and every member a client acts on is covered",
            },
            "acted_on_uncovered": {
                "type": "array",
                "items": { "type": "object" },
                "description": "members a client acts on (url, supportedInterfaces, securitySchemes, a snake_case twin with another value) that the verifying signature does not cover",
            },
            "card_signature": { "type": "object" },
            "verified_reason": { "type": "string" },
            "does_not_establish": { "type": "string" },
        },
        "required": ["url", "valid", "verified", "verdict", "acted_on_uncovered", "card_signature", "verified_reason", "does_not_establish"],
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
            "terms": nullable_object("The card's terms block; null when the card lists no terms extension.", json!({ "type": "object" })),
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

/// The longest ring or previous ring a tool takes (characters): rings are a few KB; this is
/// the ring-file cap of `ring verify`.
pub const RING_TEXT_MAX_CHARS: usize = 4 * 1024 * 1024;
/// The longest history text (the register's archive of one endpoint is about 74 KB).
pub const HISTORY_TEXT_MAX_CHARS: usize = 8 * 1024 * 1024;
/// Witness files per call, and the longest one (a card's cap).
pub const WITNESSES_MAX_ITEMS: usize = 1000;
pub const WITNESS_TEXT_MAX_CHARS: usize = 1024 * 1024;

fn ring_verify() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "ring": string_input(RING_TEXT_MAX_CHARS, "The claimed ring file's exact text (rings/<slug>/<YYYY-MM>.json): its endpoint and month say what to rebuild."),
            "history": string_input(HISTORY_TEXT_MAX_CHARS, "The gate's /history export, or the register's archive history/<slug>.json, as text."),
            "witnesses": {
                "type": "array",
                "items": { "type": "string", "maxLength": WITNESS_TEXT_MAX_CHARS },
                "maxItems": WITNESSES_MAX_ITEMS,
                "description": "Witness files' texts (one JSON value each), in the order the ring was built with: order can change a ring.",
            },
            "prev": string_input(RING_TEXT_MAX_CHARS, "The previous ring's exact text, when the ring chains to one."),
        },
        "required": ["ring", "history"],
        "additionalProperties": false,
    });
    let output = json!({
        "type": "object",
        "properties": {
            "result": { "type": "string", "enum": ["MATCH", "MISMATCH"] },
            "endpoint": { "type": "string" },
            "month": { "type": "string" },
            "claimed_sha256": { "type": "string", "pattern": "^[0-9a-f]{64}$" },
            "rebuilt_sha256": { "type": "string", "pattern": "^[0-9a-f]{64}$" },
            "differing_keys": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "key": { "type": "string" },
                        "rebuilt": nullable("string"),
                        "claimed": nullable("string"),
                    },
                    "required": ["key", "rebuilt", "claimed"],
                },
            },
        },
        "required": ["result", "endpoint", "month", "claimed_sha256", "rebuilt_sha256", "differing_keys"],
    });
    Tool::new(
        RING_VERIFY,
        "Recompute a NENRIN ring (an endpoint's monthly counts in the register) from its inputs, \
         byte for byte as the register's builder, and compare it with the claimed ring (read-only, \
         no network): MATCH, or MISMATCH with each differing key's two values. Counts only: a ring \
         never states a rate or a score.",
        object(input),
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
        ring_verify(),
        inspect_document(),
        canonical_form(),
    ]
}

fn inspect_document() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "document": string_input(DOCUMENT_MAX_CHARS, "The file's exact text: a walk record, an intake body line, a witness observation, a ring, a key-history document or a gate verdict, pretty or compact."),
            "public_key": string_input(KEY_MAX_CHARS, "An Ed25519 public key to check signatures with: base64, base64url, 64 hex digits, or the key_url document's text."),
            "signature": string_input(KEY_MAX_CHARS, "A record's detached signature (base64), for a record that does not carry one."),
        },
        "required": ["document"],
        "additionalProperties": false,
    });
    let output = json!({
        "type": "object",
        "properties": {
            "kind": { "type": "string", "enum": ["walk_record", "commitment_record", "intake_body", "witness_observation", "ring", "key_history", "gate_verdict", "unknown", "not_json"] },
            "what": { "type": "string" },
            "sha256_given": { "type": "string", "pattern": "^[0-9a-f]{64}$" },
            "canonical_form": nullable("string"),
            "sha256_canonical": nullable("string"),
            "canonical_agrees": nullable("boolean"),
            "checks": { "type": "array", "items": { "type": "object" }, "description": "each check with holds true, false, or null when it could not be made" },
            "establishes": { "type": "array", "items": { "type": "string" } },
            "does_not_establish": { "type": "array", "items": { "type": "string" } },
            "notes": { "type": "array", "items": { "type": "string" } },
            "holds": { "type": "boolean", "description": "a known kind and no check failed" },
        },
        "required": ["kind", "what", "sha256_given", "checks", "establishes", "does_not_establish", "notes", "holds"],
    });
    Tool::new(
        INSPECT_DOCUMENT,
        "Say what a document is (walk record, intake body line, witness observation, ring, key \
         history, gate verdict), its sha256 as given and canonical, its signature's verdict and \
         what it establishes. Offline: nothing is fetched.",
        object(input),
    )
    .with_raw_output_schema(object(output))
    .with_annotations(read_only())
}

fn canonical_form() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "document": string_input(DOCUMENT_MAX_CHARS, "The JSON text."),
            "form": { "type": "string", "enum": crate::audit::forms::Form::names(), "description": "nenrin (records), rfc8785 (I-JSON), or a card signature profile." },
        },
        "required": ["document", "form"],
        "additionalProperties": false,
    });
    let output = json!({
        "type": "object",
        "properties": {
            "form": { "type": "string" },
            "canonical": { "type": "string" },
            "sha256": { "type": "string", "pattern": "^[0-9a-f]{64}$" },
            "uncovered": { "type": "array", "items": { "type": "object" }, "description": "card forms: the members the payload leaves out" },
        },
        "required": ["form", "canonical", "sha256", "uncovered"],
    });
    Tool::new(
        CANONICAL_FORM,
        "The canonical bytes of a JSON document under the NENRIN form, RFC 8785 or a card \
         signature profile, and their sha256; refused with the reason when the form has none.",
        object(input),
    )
    .with_raw_output_schema(object(output))
    .with_annotations(read_only())
}

/// The tool's input schema, which [`Args`] reads its argument names and bounds from.
pub fn input_schema(name: &str) -> Arc<JsonObject> {
    all()
        .into_iter()
        .find(|t| t.name == name)
        .map(|t| t.input_schema)
        .unwrap_or_default()
}

/// `records_list`'s page size: its default and its largest.
pub const LIST_DEFAULT: u64 = 20;
pub const LIST_MAX: u64 = 100;

/// A tool's arguments, read with clear errors: the model sees the text and can correct itself.
/// The names it takes and each string's `maxLength` come from the tool's input schema, so what
/// a client is told and what the server enforces are one thing.
pub struct Args {
    map: Map<String, Value>,
    schema: Arc<JsonObject>,
}

impl Args {
    /// Refuses names the tool does not take (a typo would otherwise silently fall to a default).
    pub fn new(map: Option<JsonObject>, tool: &str) -> Result<Args, String> {
        let map = map.unwrap_or_default();
        let schema = input_schema(tool);
        let known: Vec<&str> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        if let Some(unknown) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(if known.is_empty() {
                format!("unknown argument {}; this tool takes none", quote(unknown))
            } else {
                format!(
                    "unknown argument {}; this tool takes {}",
                    quote(unknown),
                    known.join(", ")
                )
            });
        }
        Ok(Args { map, schema })
    }

    fn max_chars(&self, name: &str) -> Option<usize> {
        self.schema
            .get("properties")?
            .get(name)?
            .get("maxLength")?
            .as_u64()
            .map(|n| n as usize)
    }

    pub fn string(&self, name: &str) -> Result<Option<String>, String> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => match self.max_chars(name) {
                Some(max) if s.chars().count() > max => Err(format!(
                    "{name} is {} characters long; at most {max} are taken: {}",
                    s.chars().count(),
                    quote(s)
                )),
                _ => Ok(Some(s.clone())),
            },
            Some(other) => Err(format!(
                "{name} must be a string, not {}",
                quote_json(other)
            )),
        }
    }

    pub fn required(&self, name: &str) -> Result<String, String> {
        self.string(name)?
            .ok_or_else(|| format!("{name} is required"))
    }

    /// An array of strings, each within the schema's `items.maxLength`, at most `maxItems`.
    pub fn strings(&self, name: &str) -> Result<Vec<String>, String> {
        let prop = self.schema.get("properties").and_then(|p| p.get(name));
        let max_items = prop.and_then(|p| p.get("maxItems")).and_then(Value::as_u64);
        let max_chars = prop
            .and_then(|p| p.get("items"))
            .and_then(|i| i.get("maxLength"))
            .and_then(Value::as_u64);
        let items = match self.map.get(name) {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(format!(
                    "{name} must be an array of strings, not {}",
                    quote_json(other)
                ));
            }
        };
        if let Some(max) = max_items.filter(|m| items.len() as u64 > *m) {
            return Err(format!(
                "{name} has {} items; at most {max} are taken",
                items.len()
            ));
        }
        items
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) => match max_chars {
                    Some(max) if s.chars().count() as u64 > max => Err(format!(
                        "{name}[{i}] is {} characters long; at most {max} are taken",
                        s.chars().count()
                    )),
                    _ => Ok(s.clone()),
                },
                other => Err(format!(
                    "{name}[{i}] must be a string, not {}",
                    quote_json(other)
                )),
            })
            .collect()
    }

    pub fn boolean(&self, name: &str, default: bool) -> Result<bool, String> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(format!(
                "{name} must be true or false, not {}",
                quote_json(other)
            )),
        }
    }

    /// An integer from `min` to `max`, or `default` when absent.
    pub fn integer(&self, name: &str, default: u64, min: u64, max: u64) -> Result<u64, String> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => match v.as_u64() {
                Some(n) if (min..=max).contains(&n) => Ok(n),
                _ => Err(format!(
                    "{name} must be an integer from {min} to {max}, not {}",
                    quote_json(v)
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
            Some(s) => allowed.iter().copied().find(|a| *a == s).ok_or_else(|| {
                format!(
                    "{name} must be one of {}, not {}",
                    allowed.join(", "),
                    quote(&s)
                )
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The task binding's states in `witness_walk`'s output schema are the stored states' own
    /// texts, every one of them, from the typed state (not spelled again in this face).
    #[test]
    fn the_task_binding_states_of_the_walk_schema_are_the_typed_states() {
        let tool = witness_walk();
        let schema = Value::Object((*tool.output_schema.unwrap()).clone());
        let states = schema
            .pointer("/properties/task_binding/anyOf")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find_map(|v| v.pointer("/properties/state/enum")))
            .cloned();
        let texts: Vec<&str> = crate::filing::bind::BindState::ALL
            .iter()
            .map(|s| s.as_str())
            .collect();
        assert_eq!(states, Some(json!(texts)), "{schema:#}");
        assert!(texts.contains(&"unknown") && texts.len() == 6);
    }

    /// Every schema node, with its path, for the checks below.
    fn nodes<'a>(v: &'a Value, path: String, out: &mut Vec<(String, &'a Value)>) {
        match v {
            Value::Object(m) => {
                out.push((path.clone(), v));
                for (k, child) in m {
                    nodes(child, format!("{path}.{k}"), out);
                }
            }
            Value::Array(a) => {
                for (i, child) in a.iter().enumerate() {
                    nodes(child, format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
    }

    /// What the MCP Inspector's `--strict` and strict clients object to: `type` as an array
    /// (`[X, "null"]`), an array without `items`, a bare `true`/`false` as a schema, a
    /// `default: null`. None may appear in any input or output schema.
    #[test]
    fn schemas_use_only_the_forms_strict_clients_read() {
        let mut problems = Vec::new();
        for tool in all() {
            let output = Value::Object((*tool.output_schema.clone().expect("output")).clone());
            let input = Value::Object((*tool.input_schema).clone());
            for (which, schema) in [("input", &input), ("output", &output)] {
                let mut all_nodes = Vec::new();
                nodes(schema, format!("{}.{which}", tool.name), &mut all_nodes);
                for (path, node) in all_nodes {
                    let Value::Object(m) = node else { continue };
                    if m.get("type").is_some_and(Value::is_array) {
                        problems.push(format!("{path}: type is an array"));
                    }
                    if m.get("type") == Some(&json!("array")) && !m.contains_key("items") {
                        problems.push(format!("{path}: an array without items"));
                    }
                    if m.get("default") == Some(&Value::Null) {
                        problems.push(format!("{path}: default null"));
                    }
                    if let Some(Value::Object(props)) = m.get("properties") {
                        for (k, p) in props {
                            if p.is_boolean() {
                                problems.push(format!("{path}.properties.{k}: a bare boolean"));
                            }
                            if !(p.get("type").is_some() || p.get("anyOf").is_some()) {
                                problems.push(format!("{path}.properties.{k}: no type"));
                            }
                        }
                    }
                }
            }
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    fn every_string_input_is_bounded() {
        for tool in all() {
            let props = tool.input_schema["properties"].as_object().unwrap();
            for (name, p) in props {
                if p["type"] == "string" && p.get("enum").is_none() {
                    assert!(
                        p["maxLength"].as_u64().is_some(),
                        "{}.{name} has no maxLength",
                        tool.name
                    );
                }
                if p["type"] == "array" {
                    assert!(
                        p["maxItems"].as_u64().is_some(),
                        "{}.{name} has no maxItems",
                        tool.name
                    );
                    assert!(
                        p["items"]["maxLength"].as_u64().is_some(),
                        "{}.{name}'s items have no maxLength",
                        tool.name
                    );
                }
            }
        }
    }

    #[test]
    fn quote_keeps_at_most_200_characters_and_says_how_long_it_was() {
        let long = "é".repeat(1_000_000);
        let q = quote(&long);
        assert!(q.chars().count() < QUOTE_CHARS + 60, "{}", q.len());
        assert!(q.contains("1000000 characters"), "{q}");
        assert_eq!(quote("short"), "\"short\"");
        let v = Value::Array(vec![json!("x"); 100_000]);
        assert!(quote_json(&v).len() < 300);
    }
}
