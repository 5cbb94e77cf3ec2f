//! The witness request, pure (§2, §4.1, §4.6): reading a `message/send` body and finding the
//! request in it, the JSON-RPC error answers, the request checks and hash, the pool hash, the
//! decisions before a measurement, and the requester's side of `witness ask` (building the
//! request and its envelope, reading the reply, accepting the observation).
//!
//! The I/O around it (the `/a2a` face with its size cap and busy slots, the resolver, the POST
//! of `witness ask`) is the caller's; the limits it enforces are exported from here so that
//! every answer is written from one place.

use super::observation::{self, CALLER_CARD, WITNESS_REPLY, WITNESS_REPLY_REASON, WITNESS_REQUEST};
use super::screen;
use super::surfaces::{KNOWN, Surface, known};
use super::validate::{self, Options, has_https_prefix, is_hex64_value, url_host};
use super::{EXT, OBSERVATION_SCHEMA, PERMA, REQUEST_SCHEMA};
use crate::json::{REFERENCE_MAX_DEPTH, ReadError, ReadOptions};
use serde_json::{Map, Value, json};
use std::net::IpAddr;

// ---------------------------------------------------------------------------------------------
// Reading JSON

/// How a request body (and a text part, and a reply) is read: the reference walker's reader
/// with three refusals. Duplicate names: the last value wins (both reference languages agree).
/// A lone surrogate escape cannot be held in a Rust string, so it is a parse error (§2.5, ours).
/// `NaN` / `Infinity` are not JSON to the reference responder (`JSON.parse`), so not here either.
/// Integers of any size stay integers and floats keep their text, for the NENRIN form (§2.5).
pub const READ_OPTIONS: ReadOptions = ReadOptions {
    python_constants: false,
    refuse_duplicates: false,
    refuse_lone_surrogates: true,
    max_depth: REFERENCE_MAX_DEPTH,
};

/// Parse one JSON text as requests are read ([`READ_OPTIONS`]).
pub fn parse_json(bytes: &[u8]) -> Result<Value, ReadError> {
    Ok(crate::json::read(bytes, READ_OPTIONS)?.root().to_value())
}

// ---------------------------------------------------------------------------------------------
// The `/a2a` face's answers (§4.6)

/// The JSON-RPC method served.
pub const MESSAGE_SEND: &str = "message/send";
/// Step 1: a body longer than this is not read further.
pub const MAX_BODY_BYTES: usize = 1_000_000;
/// Step 1's answer, HTTP 413.
pub const TOO_LARGE_STATUS: u16 = 413;
pub const TOO_LARGE_BODY: &str = r#"{"error":"too large"}"#;
/// Step 5's `retry-after` header value, seconds.
pub const RETRY_AFTER_SECONDS: u32 = 60;
/// Another method than POST on `/a2a`, HTTP 405 (ref).
pub const METHOD_NOT_ALLOWED_STATUS: u16 = 405;
pub const METHOD_NOT_ALLOWED_BODY: &str =
    r#"{"error":"POST a JSON-RPC message/send with a nenrin-witness-request-v1 data part"}"#;

pub const PARSE_ERROR: &str = "parse error";
pub const ONLY_MESSAGE_SEND: &str = "only message/send is served here";
pub const NO_REQUEST_PART: &str = "no nenrin-witness-request-v1 data part in the message";
pub const INTERNAL_ERROR: &str = "internal error";

/// A JSON-RPC error answer: HTTP status, the echoed id, code and message.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub http_status: u16,
    pub id: Value,
    pub code: i64,
    pub message: String,
}

impl RpcError {
    /// Step 2: the body is not JSON (400, id null).
    pub fn parse_error() -> RpcError {
        RpcError::new(400, Value::Null, -32700, PARSE_ERROR)
    }

    /// Step 3: not an object, or another method.
    pub fn method_not_served(id: Value) -> RpcError {
        RpcError::new(200, id, -32601, ONLY_MESSAGE_SEND)
    }

    /// Step 4: no request part and no reciprocal answer due.
    pub fn no_request_part(id: Value) -> RpcError {
        RpcError::new(200, id, -32602, NO_REQUEST_PART)
    }

    /// Step 5: `max_in_flight` measurements are running (429, with `retry-after`).
    pub fn busy(id: Value, in_flight: usize) -> RpcError {
        let message = format!("busy: {in_flight} measurements in flight; retry later");
        RpcError::new(429, id, -32000, &message)
    }

    /// An unexpected failure (500).
    pub fn internal(id: Value) -> RpcError {
        RpcError::new(500, id, -32603, INTERNAL_ERROR)
    }

    fn new(http_status: u16, id: Value, code: i64, message: &str) -> RpcError {
        RpcError {
            http_status,
            id,
            code,
            message: message.to_string(),
        }
    }

    /// The exact body, members in the order §4.6 writes them.
    pub fn body(&self) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":{},"message":{}}}}}"#,
            json_text(&self.id),
            self.code,
            json_text(&Value::String(self.message.clone())),
        )
    }
}

/// Step 6's body: `{"jsonrpc":"2.0","id":…,"result":…}`.
pub fn result_body(id: &Value, result: &Value) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{}}}"#,
        json_text(id),
        json_text(result)
    )
}

fn json_text(value: &Value) -> String {
    serde_json::to_string(value).expect("a Value always serialises")
}

/// A `message/send` body that was read: what the face needs for steps 4–6.
#[derive(Debug, Clone, PartialEq)]
pub struct Incoming {
    /// The JSON-RPC id to echo.
    pub id: Value,
    /// The request object R exactly as found (§2.2), if a part gave one.
    pub request: Option<Value>,
    /// The raw `EXT/caller_card` metadata value, if any (§6.2 judges it).
    pub caller_card: Option<Value>,
}

impl Incoming {
    /// Step 4's answer, for a message without a request when no reciprocal answer is due. The
    /// face decides that (only it knows whether `reciprocal` is on), so this is not chosen here.
    pub fn no_request_part(&self) -> RpcError {
        RpcError::no_request_part(self.id.clone())
    }
}

/// Steps 2–4 of §4.6 over the body bytes: the request found (or None) with the id and the
/// caller card, or the error answer of step 2 or 3.
pub fn read_a2a_body(body: &[u8]) -> Result<Incoming, RpcError> {
    let envelope = parse_json(body).map_err(|_| RpcError::parse_error())?;
    read_envelope(&envelope)
}

fn read_envelope(envelope: &Value) -> Result<Incoming, RpcError> {
    let id = echoed_id(envelope);
    if envelope.get("method").and_then(Value::as_str) != Some(MESSAGE_SEND) {
        return Err(RpcError::method_not_served(id));
    }
    let message = envelope.get("params").and_then(|p| p.get("message"));
    let parts = message.and_then(|m| m.get("parts"));
    let caller_card = message
        .and_then(|m| m.get("metadata"))
        .and_then(|m| ext_member(m, CALLER_CARD))
        .cloned();
    Ok(Incoming {
        id,
        request: parts.and_then(|p| first_part_with_schema(p, REQUEST_SCHEMA)),
        caller_card,
    })
}

/// The id as received when it is a string, a number or null; absent (or any other JSON value,
/// which JSON-RPC does not allow) → null. A falsy id (`0`, `""`) is echoed, unlike the reference.
fn echoed_id(envelope: &Value) -> Value {
    match envelope.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    }
}

/// `EXT/<name>` of a metadata object, else `PERMA/<name>` (PERMA is accepted wherever EXT is).
fn ext_member<'a>(metadata: &'a Value, name: &str) -> Option<&'a Value> {
    metadata
        .get(format!("{EXT}/{name}"))
        .or_else(|| metadata.get(format!("{PERMA}/{name}")))
}

/// §2.2 (and §2.6 for replies): in order, the first part that gives an object whose `schema`
/// is exactly `schema`. A data part gives `data`, a text part its text parsed as JSON; a part
/// of another kind, or without `kind` (A2A 1.0), gives nothing. Not an array → no parts.
fn first_part_with_schema(parts: &Value, schema: &str) -> Option<Value> {
    parts
        .as_array()?
        .iter()
        .filter_map(part_object)
        .find(|object| object.get("schema").and_then(Value::as_str) == Some(schema))
}

fn part_object(part: &Value) -> Option<Value> {
    let given = match part.get("kind").and_then(Value::as_str)? {
        "data" => part.get("data")?.clone(),
        "text" => parse_json(part.get("text")?.as_str()?.as_bytes()).ok()?,
        _ => return None,
    };
    given.is_object().then_some(given)
}

/// `witness answer --request FILE` (§10): FILE holds a whole `message/send` body or a bare
/// request. A JSON object with `jsonrpc` or `method` is an envelope, whose request part must be
/// there; anything else is the bare request, checked later (so a JSON array reaches the checks
/// and is declined `request is not an object`). Err: unusable input (exit 2).
pub fn read_answer_file(bytes: &[u8]) -> Result<Value, RpcError> {
    let value = parse_json(bytes).map_err(|_| RpcError::parse_error())?;
    let is_envelope = value
        .as_object()
        .is_some_and(|o| o.contains_key("jsonrpc") || o.contains_key("method"));
    if !is_envelope {
        return Ok(value);
    }
    let incoming = read_envelope(&value)?;
    match incoming.request {
        Some(request) => Ok(request),
        None => Err(RpcError::no_request_part(incoming.id)),
    }
}

// ---------------------------------------------------------------------------------------------
// The request: checks (§2.4), hash (§2.5), pool hash (§1.4)

pub const NOT_AN_OBJECT: &str = "request is not an object";
pub const SCHEMA_TEXT: &str = "schema must be nenrin-witness-request-v1";
pub const ENDPOINT_TEXT: &str = "endpoint must be an https origin";
pub const SURFACES_TEXT: &str = "surfaces must be a non-empty array of names";
pub const SUBJECT_TEXT: &str = "subject_sha256 must be 64 hex";
pub const POOL_TEXT: &str = "pool_sha256 must be 64 hex";
pub const BEACON_TEXT: &str = "beacon.hash must be 64 hex";
pub const REPLY_SCHEMA_TEXT: &str =
    "reply_schema, when present, must be nenrin-witness-observation-v1";

/// §2.4: Ok, or the why of a `bad_request` decline (every failing check's text, in order,
/// joined by `"; "`). The hash fields must be JSON strings (ours).
pub fn check_request(request: &Value) -> Result<(), String> {
    let Some(r) = request.as_object() else {
        return Err(NOT_AN_OBJECT.to_string());
    };
    let str_field = |name: &str| r.get(name).and_then(Value::as_str);
    let beacon_hash = r
        .get("beacon")
        .filter(|b| b.is_object())
        .and_then(|b| b.get("hash"));
    let checks = [
        (str_field("schema") == Some(REQUEST_SCHEMA), SCHEMA_TEXT),
        (
            str_field("endpoint").is_some_and(has_https_prefix),
            ENDPOINT_TEXT,
        ),
        (surfaces_ok(r.get("surfaces")), SURFACES_TEXT),
        (is_hex64_value(r.get("subject_sha256")), SUBJECT_TEXT),
        (is_hex64_value(r.get("pool_sha256")), POOL_TEXT),
        (is_hex64_value(beacon_hash), BEACON_TEXT),
        (
            r.get("reply_schema")
                .is_none_or(|s| s.as_str() == Some(OBSERVATION_SCHEMA)),
            REPLY_SCHEMA_TEXT,
        ),
    ];
    let failed: Vec<&str> = checks
        .iter()
        .filter(|(passed, _)| !passed)
        .map(|(_, text)| *text)
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("; "))
    }
}

/// A non-empty array of strings (the empty string is a string).
fn surfaces_ok(surfaces: Option<&Value>) -> bool {
    surfaces
        .and_then(Value::as_array)
        .is_some_and(|names| !names.is_empty() && names.iter().all(Value::is_string))
}

/// §2.5: sha of the NENRIN canonical form of R exactly as found.
pub fn request_sha256(request: &Value) -> String {
    crate::digest::sha256_hex(crate::canonical::to_bytes(request))
}

pub const POOL_SCHEMA: &str = "nenrin-witness-pool-v1";

/// A pool entry reduced to what the pool hash covers (§1.4; `a2a_url` is transport).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolEntry {
    pub signed_domain: String,
    pub key_url: String,
    pub public_key_ed25519_b64: String,
}

/// The entries of a pool document (`{"entries": [...]}`), refused when an entry lacks a member,
/// its `signed_domain` is not the host of its `key_url` (lower-case), or a key or a domain
/// repeats (§1.4).
pub fn pool_entries(pool: &Value) -> Result<Vec<PoolEntry>, String> {
    let entries = pool
        .get("entries")
        .and_then(Value::as_array)
        .ok_or("pool has no entries array")?;
    let mut read: Vec<PoolEntry> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let member = |name: &str| {
            entry
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or(format!("pool entry {i} has no string {name}"))
        };
        let e = PoolEntry {
            signed_domain: member("signed_domain")?,
            key_url: member("key_url")?,
            public_key_ed25519_b64: member("public_key_ed25519_b64")?,
        };
        if url_host(&e.key_url) != Some(e.signed_domain.to_lowercase()) {
            return Err(format!(
                "pool entry {i}: signed_domain is not the key_url's host"
            ));
        }
        let repeats = |p: &PoolEntry| {
            p.public_key_ed25519_b64 == e.public_key_ed25519_b64
                || p.signed_domain.to_lowercase() == e.signed_domain.to_lowercase()
        };
        if read.iter().any(repeats) {
            return Err(format!("pool entry {i} repeats a key or a domain"));
        }
        read.push(e);
    }
    Ok(read)
}

/// §1.4: sha(canonical({"schema": "nenrin-witness-pool-v1", "entries": E})), E sorted by key.
pub fn pool_sha256(entries: &[PoolEntry]) -> String {
    let mut sorted: Vec<&PoolEntry> = entries.iter().collect();
    sorted.sort_by(|a, b| a.public_key_ed25519_b64.cmp(&b.public_key_ed25519_b64));
    let entries: Vec<Value> = sorted
        .iter()
        .map(|e| {
            json!({
                "signed_domain": e.signed_domain,
                "key_url": e.key_url,
                "public_key_ed25519_b64": e.public_key_ed25519_b64,
            })
        })
        .collect();
    let pool = json!({ "schema": POOL_SCHEMA, "entries": entries });
    crate::digest::sha256_hex(crate::canonical::to_bytes(&pool))
}

// ---------------------------------------------------------------------------------------------
// The decisions before a measurement (§4.1)

/// Why a request is declined (§5.4 reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeclineReason {
    BadRequest,
    SelfWitness,
    TargetNotPublic,
    NoKnownSurface,
}

impl DeclineReason {
    pub fn as_str(self) -> &'static str {
        match self {
            DeclineReason::BadRequest => "bad_request",
            DeclineReason::SelfWitness => "self_witness",
            DeclineReason::TargetNotPublic => "target_not_public",
            DeclineReason::NoKnownSurface => "no_known_surface",
        }
    }
}

/// A decline: its reason and the why a requester reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decline {
    pub reason: DeclineReason,
    pub why: String,
}

impl Decline {
    fn new(reason: DeclineReason, why: impl Into<String>) -> Decline {
        Decline {
            reason,
            why: why.into(),
        }
    }
}

pub const SELF_WITNESS_WHY: &str = "an agent cannot witness itself under a key it serves (11.4)";
pub const NO_KNOWN_SURFACE_WHY: &str = "none of the requested surfaces is one this witness measures: health.gate_commit, agent-card.signature, well-known.jwks, well-known.openai-apps-challenge, ext.conduct-v1.spec, keys.agreement, keys.witness, keys.operator, well-known.did";

/// What a request that passed steps 1–4 asks to be measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeasurementPlan {
    /// T: the endpoint with every trailing `/` removed (§3.1).
    pub target: String,
    /// T's host name (no port), for step 5; None when T is not a URL with a host.
    pub host_name: Option<String>,
    /// The distinct known surfaces requested, in the order first requested.
    pub surfaces: Vec<&'static Surface>,
    /// The names this witness does not measure, in request order, repeats kept (§5.1).
    pub unknown_surfaces: Vec<String>,
}

/// T: `endpoint` with every trailing `/` removed.
pub fn target(endpoint: &str) -> &str {
    endpoint.trim_end_matches('/')
}

/// Steps 1–4 of §4.1, in order, for a responder whose `signed_domain` is given. The name screen
/// (step 3) is skipped when private networks are allowed; step 2 never is.
pub fn decide(
    request: &Value,
    signed_domain: &str,
    allow_private_network: bool,
) -> Result<MeasurementPlan, Decline> {
    check_request(request).map_err(|why| Decline::new(DeclineReason::BadRequest, why))?;
    let endpoint = request["endpoint"].as_str().unwrap_or_default();
    let target = target(endpoint).to_string();
    if url_host(&target) == Some(signed_domain.to_lowercase()) {
        return Err(Decline::new(DeclineReason::SelfWitness, SELF_WITNESS_WHY));
    }
    if !allow_private_network {
        screen::name_screen(&target)
            .map_err(|why| Decline::new(DeclineReason::TargetNotPublic, why))?;
    }
    let names = request["surfaces"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let (surfaces, unknown_surfaces) = split_surfaces(names);
    if surfaces.is_empty() {
        return Err(Decline::new(
            DeclineReason::NoKnownSurface,
            NO_KNOWN_SURFACE_WHY,
        ));
    }
    let host_name = url::Url::parse(&target)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string));
    Ok(MeasurementPlan {
        target,
        host_name,
        surfaces,
        unknown_surfaces,
    })
}

/// The distinct known surfaces (first request order) and the unknown names (all of them).
fn split_surfaces(names: &[Value]) -> (Vec<&'static Surface>, Vec<String>) {
    let mut surfaces: Vec<&'static Surface> = Vec::new();
    let mut unknown = Vec::new();
    for name in names.iter().filter_map(Value::as_str) {
        match known(name) {
            Some(s) if !surfaces.contains(&s) => surfaces.push(s),
            Some(_) => {}
            None => unknown.push(name.to_string()),
        }
    }
    (surfaces, unknown)
}

/// What resolving T's host name gave (§4.4 step 1), for step 5.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Every address of the name, A and AAAA, in the resolver's order (maybe none).
    Addresses(Vec<IpAddr>),
    /// No answer; the resolver's code (e.g. `ENOTFOUND`).
    Failed { code: String },
}

/// Step 5 of §4.1: one blocked address refuses the whole host (the first one found is named);
/// none at all refuses too. Skipped when private networks are allowed.
pub fn judge_resolution(
    host_name: &str,
    resolution: &Resolution,
    allow_private_network: bool,
) -> Result<(), Decline> {
    if allow_private_network {
        return Ok(());
    }
    let why = match resolution {
        Resolution::Failed { code } => format!("{host_name} does not resolve: {code}"),
        Resolution::Addresses(addresses) if addresses.is_empty() => {
            format!("{host_name} no address")
        }
        Resolution::Addresses(addresses) => {
            match addresses.iter().find(|a| screen::is_blocked(**a)) {
                Some(blocked) => format!("{host_name} resolves to a blocked address {blocked}"),
                None => return Ok(()),
            }
        }
    };
    Err(Decline::new(DeclineReason::TargetNotPublic, why))
}

// ---------------------------------------------------------------------------------------------
// The requester's side: `witness ask` (§2.6)

/// The instruction sentence of §2.3, exactly.
pub const INSTRUCTION: &str = "Measure the listed public surfaces of endpoint from your own vantage. Reply with one nenrin-witness-observation-v1 record: observed is surface -> what you saw, request_sha256 is the sha256 of this request's canonical bytes, source is { kind: external_witness, signed_domain, key_url }, signed Ed25519 over the canonical bytes with the key served at your key_url. Expected values are deliberately not given. Nothing you send is executed; only observed is compared, by hash, with the operator's expected state.";
/// The requester's user agent (ref).
pub const REQUESTER_USER_AGENT: &str = "nenrin-witness-request/0.1.0";
/// The requester gives up after this long.
pub const ASK_DEADLINE_SECONDS: u64 = 30;

/// The reference requester's default surfaces: the first eight known names.
pub fn default_surfaces() -> Vec<String> {
    KNOWN[..8].iter().map(|s| s.name.to_string()).collect()
}

/// The draw a request serves: the subject, the pool and the beacon.
#[derive(Debug, Clone, PartialEq)]
pub struct Drawn {
    pub subject_sha256: String,
    pub pool_sha256: String,
    pub beacon: Value,
}

impl Drawn {
    /// An ad hoc request with no draw (ours): a fresh random subject, so that no earlier answer
    /// can be replayed; 64 zeros for the pool; beacon kind `none`.
    pub fn ad_hoc(random: [u8; 32]) -> Drawn {
        let zeros = "0".repeat(64);
        Drawn {
            subject_sha256: hex::encode(random),
            pool_sha256: zeros.clone(),
            beacon: json!({ "kind": "none", "height": "0", "hash": zeros }),
        }
    }
}

/// The request of §2.3 as the reference requester writes it.
pub fn build_request(
    endpoint: &str,
    surfaces: &[String],
    requested_at: &str,
    drawn: &Drawn,
) -> Value {
    json!({
        "schema": REQUEST_SCHEMA,
        "endpoint": target(endpoint),
        "surfaces": surfaces,
        "subject_sha256": drawn.subject_sha256,
        "pool_sha256": drawn.pool_sha256,
        "beacon": drawn.beacon,
        "requested_at": requested_at,
        "reply_schema": OBSERVATION_SCHEMA,
        "instruction": INSTRUCTION,
    })
}

/// The `message/send` body of §2.1 around `request`; `caller_card` only when configured.
pub fn envelope(request: &Value, caller_card: Option<&str>) -> Value {
    let subject = request["subject_sha256"].as_str().unwrap_or_default();
    let id = format!("hs-witness-{}", subject.get(..16).unwrap_or(subject));
    let mut metadata = Map::new();
    metadata.insert(observation::ext_key(WITNESS_REQUEST), REQUEST_SCHEMA.into());
    if let Some(card) = caller_card {
        metadata.insert(observation::ext_key(CALLER_CARD), card.into());
    }
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": MESSAGE_SEND,
        "params": { "message": {
            "role": "user",
            "messageId": id,
            "parts": [{ "kind": "data", "data": request }],
            "metadata": metadata,
        }},
    })
}

pub const RPC_ERROR: &str = "rpc_error";
pub const NO_OBSERVATION_IN_REPLY: &str = "no_observation_in_reply";

/// What a witness's reply gave the requester.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplyReading {
    /// An object with the observation schema, not yet validated.
    Observation(Value),
    /// A declined answer: its `EXT/witness_reply_reason` and its text part (empty if none).
    Declined { reason: String, text: String },
    /// `http_<status>`, `unreachable: <text>`, `rpc_error` or `no_observation_in_reply`.
    Failed(String),
}

impl ReplyReading {
    /// A transport failure.
    pub fn unreachable(text: &str) -> ReplyReading {
        ReplyReading::Failed(format!("unreachable: {text}"))
    }
}

/// §2.6 "Reading the reply" over an HTTP answer. Parts are collected from `result.parts`,
/// `result.status.message.parts`, each `result.artifacts[].parts`, each `result.history[].parts`;
/// the first observation wins. With none, a message marked `declined` gives its reason (ours:
/// the reference reports `no_observation_in_reply` and shows the reason beside it); then
/// `rpc_error` when the body has an `error` member, else `no_observation_in_reply` (a body that
/// is not JSON included).
pub fn read_reply(status: u16, body: &[u8]) -> ReplyReading {
    if !(200..300).contains(&status) {
        return ReplyReading::Failed(format!("http_{status}"));
    }
    let Ok(reply) = parse_json(body) else {
        return ReplyReading::Failed(NO_OBSERVATION_IN_REPLY.to_string());
    };
    let result = reply.get("result").unwrap_or(&Value::Null);
    let parts: Vec<Value> = reply_part_lists(result)
        .into_iter()
        .filter_map(Value::as_array)
        .flatten()
        .cloned()
        .collect();
    if let Some(observation) = first_part_with_schema(&Value::Array(parts), OBSERVATION_SCHEMA) {
        return ReplyReading::Observation(observation);
    }
    if let Some(declined) = declined_reading(result) {
        return declined;
    }
    let code = if reply.get("error").is_some() {
        RPC_ERROR
    } else {
        NO_OBSERVATION_IN_REPLY
    };
    ReplyReading::Failed(code.to_string())
}

/// The part lists of a result, in the order §2.6 reads them.
fn reply_part_lists(result: &Value) -> Vec<&Value> {
    let each = |name: &str| -> Vec<&Value> {
        result
            .get(name)
            .and_then(Value::as_array)
            .map(|items| items.iter().filter_map(|i| i.get("parts")).collect())
            .unwrap_or_default()
    };
    let mut lists: Vec<&Value> = Vec::new();
    lists.extend(result.get("parts"));
    lists.extend(result.pointer("/status/message/parts"));
    lists.extend(each("artifacts"));
    lists.extend(each("history"));
    lists
}

/// A result message (or a task's status message) whose `EXT/witness_reply` is `declined`.
fn declined_reading(result: &Value) -> Option<ReplyReading> {
    let message = [Some(result), result.pointer("/status/message")]
        .into_iter()
        .flatten()
        .find(|m| {
            m.get("metadata")
                .and_then(|md| ext_member(md, WITNESS_REPLY))
                .and_then(Value::as_str)
                == Some("declined")
        })?;
    let metadata = &message["metadata"];
    let reason = ext_member(metadata, WITNESS_REPLY_REASON)
        .and_then(Value::as_str)
        .unwrap_or_default();
    let text = message
        .get("parts")
        .and_then(Value::as_array)
        .and_then(|parts| {
            parts
                .iter()
                .find(|p| p.get("kind").and_then(Value::as_str) == Some("text"))
        })
        .and_then(|p| p.get("text"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    Some(ReplyReading::Declined {
        reason: reason.to_string(),
        text: text.to_string(),
    })
}

pub const WITNESS_ENDPOINT_MISMATCH: &str = "witness_endpoint_mismatch";
pub const WITNESS_REQUEST_MISMATCH: &str = "witness_request_mismatch";
pub const KEY_URL_MISMATCH: &str = "key_url_mismatch";
pub const KEY_URL_UNREACHABLE: &str = "key_url_unreachable";

/// The witness's key document, as far as the requester got it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyDocument<'a> {
    /// `--key-doc` not given: nothing to compare.
    NotAsked,
    Fetched(&'a Value),
    /// It could not be fetched: "cannot judge now", not a refusal.
    Unreachable,
}

/// Whether the requester counts an observation (§2.6 "Accepting an observation").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acceptance {
    Accepted,
    /// The §5.5 codes, or else every acceptance refusal in order; the first decides.
    Refused(Vec<&'static str>),
    /// Valid and matching, but the key document could not be read ([`KEY_URL_UNREACHABLE`]).
    CannotJudge(&'static str),
}

/// Validate (§5.5), then refuse an observation of another endpoint (trailing `/` cut on both),
/// one answering another request, and one whose key is not the key document's.
pub fn accept(
    observation: &Value,
    requested_endpoint: &str,
    sent_request: &Value,
    key_document: KeyDocument,
) -> Acceptance {
    let invalid = validate::validate(observation, &Options::default());
    if !invalid.is_empty() {
        return Acceptance::Refused(invalid.into_iter().map(|r| r.as_str()).collect());
    }
    let embedded_key = observation["public_key_ed25519_b64"].as_str();
    let endpoint = observation["endpoint"].as_str().unwrap_or_default();
    let refusals: Vec<&'static str> = [
        (
            target(endpoint) != target(requested_endpoint),
            WITNESS_ENDPOINT_MISMATCH,
        ),
        (
            observation["request_sha256"].as_str() != Some(&request_sha256(sent_request)),
            WITNESS_REQUEST_MISMATCH,
        ),
        (
            matches!(key_document, KeyDocument::Fetched(doc) if validate::served_key(doc) != embedded_key),
            KEY_URL_MISMATCH,
        ),
    ]
    .into_iter()
    .filter_map(|(refused, code)| refused.then_some(code))
    .collect();
    if !refusals.is_empty() {
        Acceptance::Refused(refusals)
    } else if key_document == KeyDocument::Unreachable {
        Acceptance::CannotJudge(KEY_URL_UNREACHABLE)
    } else {
        Acceptance::Accepted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(name: &str) -> Value {
        let path = crate::sandbox::test_vectors(&format!("witness-pool/{name}"));
        parse_json(&std::fs::read(path).unwrap()).unwrap()
    }

    fn fixture_request() -> Value {
        vector("fixture.json")["request"].clone()
    }

    fn bytes(value: &Value) -> Vec<u8> {
        serde_json::to_vec(value).unwrap()
    }

    fn why_of(result: Result<MeasurementPlan, Decline>) -> (&'static str, String) {
        let decline = result.unwrap_err();
        (decline.reason.as_str(), decline.why)
    }

    #[test]
    fn every_extraction_case() {
        let cases = vector("requests.json")["extraction"].clone();
        assert_eq!(cases.as_array().unwrap().len(), 8);
        for case in cases.as_array().unwrap() {
            let expected = &case["expected"];
            let read = read_a2a_body(&bytes(&case["envelope"]));
            let answer = match read {
                Ok(Incoming {
                    request: Some(request),
                    ..
                }) => {
                    assert_eq!(expected["found"], true, "case {}", case["id"]);
                    assert_eq!(request_sha256(&request), expected["request_sha256"]);
                    continue;
                }
                Ok(incoming) => incoming.no_request_part(),
                Err(error) => error,
            };
            assert_eq!(expected["found"], false, "case {}", case["id"]);
            assert_eq!(
                answer.http_status, expected["http_status"],
                "case {}",
                case["id"]
            );
            assert_eq!(answer.code, expected["rpc_error"], "case {}", case["id"]);
            if let Some(id) = expected.get("reply_id") {
                assert_eq!(&answer.id, id, "case {}", case["id"]);
            }
        }
    }

    #[test]
    fn rpc_error_answers_are_the_table_s() {
        let table = vector("requests.json")["rpc_errors"].clone();
        let parse = RpcError::parse_error();
        assert_eq!(
            parse.body(),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#
        );
        let answers = [
            parse,
            RpcError::method_not_served(json!(8)),
            RpcError::no_request_part(json!("a")),
            RpcError::busy(Value::Null, 2),
        ];
        for answer in answers {
            let row = &table[answer.code.to_string()];
            assert_eq!(answer.http_status, row["http_status"]);
            let message = row["message"].as_str().unwrap().replace("<n>", "2");
            assert_eq!(answer.message, message);
            let body = parse_json(answer.body().as_bytes()).unwrap();
            assert_eq!(body["error"]["code"], answer.code);
            assert_eq!(body["id"], answer.id);
        }
        assert_eq!(
            table["-32000"]["headers"]["retry-after"],
            RETRY_AFTER_SECONDS.to_string()
        );
        assert_eq!(
            RpcError::no_request_part(json!("x\u{e9}")).body(),
            "{\"jsonrpc\":\"2.0\",\"id\":\"x\u{e9}\",\"error\":{\"code\":-32602,\"message\":\"no nenrin-witness-request-v1 data part in the message\"}}"
        );
        assert_eq!(RpcError::internal(json!(1)).http_status, 500);
        assert_eq!(
            result_body(&json!(0), &json!({"a": 1})),
            r#"{"jsonrpc":"2.0","id":0,"result":{"a":1}}"#
        );
    }

    #[test]
    fn not_json_is_a_parse_error() {
        let request = fixture_request();
        let envelope = envelope(&request, None);
        let text = String::from_utf8(bytes(&envelope)).unwrap();
        let lone = text.replace("\"role\":\"user\"", "\"role\":\"\\ud800\"");
        let nan = text.replace("\"role\":\"user\"", "\"role\":NaN");
        let bom = format!("\u{feff}{text}");
        for body in [lone.as_str(), nan.as_str(), bom.as_str(), "{", ""] {
            assert_eq!(read_a2a_body(body.as_bytes()), Err(RpcError::parse_error()));
        }
        // A surrogate pair is one character, not a lone surrogate.
        let pair = text.replace("\"role\":\"user\"", "\"role\":\"\\ud83d\\ude00\"");
        assert!(read_a2a_body(pair.as_bytes()).unwrap().request.is_some());
        // A text part holding a lone surrogate gives nothing (a parse failure), not an error.
        let text_part = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": {"parts": [{"kind": "text",
                "text": r#"{"schema":"nenrin-witness-request-v1","x":"\udc00"}"#}]}}});
        assert_eq!(read_a2a_body(&bytes(&text_part)).unwrap().request, None);
    }

    #[test]
    fn duplicate_keys_last_value_wins() {
        let request = fixture_request();
        let text = String::from_utf8(bytes(&envelope(&request, None))).unwrap();
        let doubled = text.replacen(
            "\"requested_at\":",
            "\"requested_at\":\"first\",\"requested_at\":",
            1,
        );
        assert_ne!(doubled, text);
        let found = read_a2a_body(doubled.as_bytes()).unwrap().request.unwrap();
        assert_eq!(request_sha256(&found), request_sha256(&request));
    }

    #[test]
    fn the_id_is_echoed_as_received() {
        let with_id = |id: Option<Value>| {
            let mut body = json!({"jsonrpc": "2.0", "method": "tasks/get"});
            if let Some(id) = id {
                body["id"] = id;
            }
            read_a2a_body(&bytes(&body)).unwrap_err().id
        };
        assert_eq!(with_id(Some(json!(""))), json!(""));
        assert_eq!(with_id(Some(json!(0))), json!(0));
        assert_eq!(with_id(Some(json!(1.5))), json!(1.5));
        assert_eq!(with_id(Some(Value::Null)), Value::Null);
        assert_eq!(with_id(None), Value::Null);
        assert_eq!(with_id(Some(json!({"a": 1}))), Value::Null);
        let not_object = read_a2a_body(b"[1]").unwrap_err();
        assert_eq!((not_object.code, not_object.id), (-32601, Value::Null));
    }

    #[test]
    fn caller_card_is_kept_raw_for_the_reciprocal_check() {
        let cases = vector("requests.json")["extraction"].clone();
        let with_card = read_a2a_body(&bytes(&cases[1]["envelope"])).unwrap();
        assert_eq!(
            with_card.caller_card,
            Some(json!(
                "https://caller.example.org/.well-known/agent-card.json"
            ))
        );
        let without = read_a2a_body(&bytes(&cases[0]["envelope"])).unwrap();
        assert_eq!(without.caller_card, None);
        // A message with a caller card and no request: the face decides between -32602 and
        // the reciprocal answer.
        let only_card = json!({"jsonrpc": "2.0", "id": "c", "method": "message/send",
            "params": {"message": {"parts": [{"kind": "text", "text": "hi"}],
                "metadata": {"https://w3id.org/horizonshield/conduct/v1/caller_card": 5}}}});
        let read = read_a2a_body(&bytes(&only_card)).unwrap();
        assert_eq!((read.request, read.caller_card), (None, Some(json!(5))));
    }

    #[test]
    fn witness_answer_reads_an_envelope_or_a_bare_request() {
        let request = fixture_request();
        assert_eq!(read_answer_file(&bytes(&request)), Ok(request.clone()));
        let whole = envelope(
            &request,
            Some("https://c.example.org/.well-known/agent-card.json"),
        );
        assert_eq!(read_answer_file(&bytes(&whole)), Ok(request.clone()));
        let bare_array = read_answer_file(b"[\"nenrin-witness-request-v1\"]").unwrap();
        assert_eq!(check_request(&bare_array), Err(NOT_AN_OBJECT.to_string()));
        let other_schema = read_answer_file(br#"{"schema":"x"}"#).unwrap();
        assert!(
            check_request(&other_schema)
                .unwrap_err()
                .starts_with(SCHEMA_TEXT)
        );
        let no_part = read_answer_file(br#"{"jsonrpc":"2.0","id":3,"method":"message/send"}"#);
        assert_eq!(no_part, Err(RpcError::no_request_part(json!(3))));
        let no_method = read_answer_file(br#"{"jsonrpc":"2.0","id":3}"#).unwrap_err();
        assert_eq!(no_method.code, -32601);
        assert_eq!(read_answer_file(b"nope"), Err(RpcError::parse_error()));
    }

    #[test]
    fn every_check_case() {
        let cases = vector("requests.json")["checks"].clone();
        assert_eq!(cases.as_array().unwrap().len(), 12);
        for case in cases.as_array().unwrap() {
            let decided = decide(&case["request"], "witness.example.org", false);
            if case["declined"].is_null() {
                assert!(decided.is_ok(), "case {}", case["id"]);
                assert_eq!(check_request(&case["request"]), Ok(()));
                continue;
            }
            assert_eq!(case["declined"], "bad_request");
            let (reason, why) = why_of(decided);
            assert_eq!(reason, "bad_request", "case {}", case["id"]);
            assert_eq!(why, case["why"].as_str().unwrap(), "case {}", case["id"]);
        }
    }

    #[test]
    fn hash_fields_must_be_strings() {
        let mut request = fixture_request();
        let hex = request["subject_sha256"].clone();
        request["subject_sha256"] = json!([hex]);
        request["beacon"] = json!({"hash": 5});
        assert_eq!(
            check_request(&request),
            Err(format!("{SUBJECT_TEXT}; {BEACON_TEXT}"))
        );
    }

    #[test]
    fn every_decision_case() {
        let cases = vector("requests.json")["decisions"].clone();
        assert_eq!(cases.as_array().unwrap().len(), 4);
        for case in cases.as_array().unwrap() {
            let mut request = fixture_request();
            request["endpoint"] = case["endpoint"].clone();
            if let Some(surfaces) = case.get("surfaces") {
                request["surfaces"] = surfaces.clone();
            }
            let signed_domain = case["signed_domain"].as_str().unwrap();
            let decided = decide(&request, signed_domain, false).and_then(|plan| {
                let Some(addresses) = case.get("resolves_to") else {
                    return Ok(plan);
                };
                let addresses = addresses
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap().parse().unwrap())
                    .collect();
                let host = plan.host_name.clone().unwrap();
                judge_resolution(&host, &Resolution::Addresses(addresses), false).map(|()| plan)
            });
            if case["declined"].is_null() {
                let plan = decided.unwrap();
                let names: Vec<&str> = plan.surfaces.iter().map(|s| s.name).collect();
                assert_eq!(
                    json!(names),
                    case["observed_surfaces"],
                    "case {}",
                    case["id"]
                );
                let lines = observation::does_not_establish(&plan.unknown_surfaces);
                assert_eq!(
                    json!(lines),
                    case["does_not_establish"],
                    "case {}",
                    case["id"]
                );
                continue;
            }
            let (reason, why) = why_of(decided);
            assert_eq!(
                reason,
                case["declined"].as_str().unwrap(),
                "case {}",
                case["id"]
            );
            assert_eq!(why, case["why"].as_str().unwrap(), "case {}", case["id"]);
        }
    }

    #[test]
    fn decisions_run_in_order() {
        let with = |endpoint: &str, surfaces: Value| {
            let mut request = fixture_request();
            request["endpoint"] = json!(endpoint);
            request["surfaces"] = surfaces;
            request
        };
        let unknown = json!(["dns.caa"]);
        // Step 2 before 3 and 4: a self request to a private name with no known surface.
        let own = with("https://witness.lan//", unknown.clone());
        assert_eq!(why_of(decide(&own, "Witness.LAN", false)).0, "self_witness");
        // Step 3 before 4.
        let (reason, why) = why_of(decide(
            &with("https://x.corp", unknown.clone()),
            "w.org",
            false,
        ));
        assert_eq!(
            (reason, why.as_str()),
            ("target_not_public", "not a public DNS name: x.corp")
        );
        // A T that is not a URL has no host: not self, and "not a URL" at the screen.
        let spaced = with("https://host name.org", json!(["keys.witness"]));
        assert_eq!(
            why_of(decide(&spaced, "host name.org", false)).1,
            "not a URL"
        );
        // Private networks allowed: no screen, self_witness still compared with the port.
        let local = with("https://127.0.0.1:9465/", json!(["keys.witness"]));
        assert!(decide(&local, "127.0.0.1:8443", true).is_ok());
        assert_eq!(
            why_of(decide(&local, "127.0.0.1:9465", true)).0,
            "self_witness"
        );
        assert_eq!(
            why_of(decide(&local, "w.org", false)).0,
            "target_not_public"
        );
        // Repeated known names are measured once; T keeps a path.
        let repeated = with(
            "https://a.org/mcp/",
            json!(["keys.witness", "x", "keys.witness"]),
        );
        let plan = decide(&repeated, "w.org", false).unwrap();
        assert_eq!(plan.target, "https://a.org/mcp");
        assert_eq!(plan.host_name.as_deref(), Some("a.org"));
        assert_eq!(plan.surfaces.len(), 1);
        assert_eq!(plan.unknown_surfaces, ["x"]);
    }

    #[test]
    fn resolution_judgements() {
        let judge = |r: Resolution| judge_resolution("a.org", &r, false).map_err(|d| d.why);
        let addresses = |list: &[&str]| {
            Resolution::Addresses(list.iter().map(|a| a.parse().unwrap()).collect())
        };
        assert_eq!(
            judge(addresses(&["93.184.216.34", "2606:2800:220:1::1"])),
            Ok(())
        );
        assert_eq!(judge(addresses(&[])), Err("a.org no address".into()));
        assert_eq!(
            judge(Resolution::Failed {
                code: "ENOTFOUND".into()
            }),
            Err("a.org does not resolve: ENOTFOUND".into())
        );
        assert_eq!(
            judge(addresses(&["8.8.8.8", "::ffff:127.0.0.1", "10.0.0.1"])),
            Err("a.org resolves to a blocked address ::ffff:127.0.0.1".into())
        );
        assert_eq!(
            judge_resolution("a.org", &addresses(&["127.0.0.1"]), true),
            Ok(())
        );
        let decline = judge_resolution("a.org", &addresses(&["::1"]), false).unwrap_err();
        assert_eq!(decline.reason, DeclineReason::TargetNotPublic);
    }

    #[test]
    fn fixture_request_and_pool_hashes() {
        let fixture = vector("fixture.json");
        let request = &fixture["request"];
        assert_eq!(crate::canonical::to_bytes(request).len(), 1164);
        let expected = vector("requests.json")["fixture_request_sha256"].clone();
        assert_eq!(request_sha256(request), expected);
        assert_eq!(
            expected,
            "a3d54bc77f49d7391af286723ec4caa485bb718be08f029262e2aed96e3765a5"
        );
        let entries = pool_entries(&fixture["pool"]).unwrap();
        assert_eq!(entries.len(), 6);
        let pool_sha = pool_sha256(&entries);
        assert_eq!(
            pool_sha,
            "2552595cc0f0de7ce5b8f5323574682ad02a3f508790c8ee73485de8504bc85d"
        );
        assert_eq!(request["pool_sha256"], pool_sha);
        // The order of the entries given does not matter: they are sorted by key.
        let reversed: Vec<PoolEntry> = entries.iter().rev().cloned().collect();
        assert_eq!(pool_sha256(&reversed), pool_sha);
    }

    #[test]
    fn invalid_pools_are_refused() {
        let fixture = vector("fixture.json");
        let mut pool = fixture["pool"].clone();
        pool["entries"][1]["signed_domain"] = json!("Witness-A.example");
        pool["entries"][1]["key_url"] = json!("https://witness-a.example/k.json");
        assert!(pool_entries(&pool).unwrap_err().contains("repeats"));
        let mut pool = fixture["pool"].clone();
        pool["entries"][2]["public_key_ed25519_b64"] =
            pool["entries"][0]["public_key_ed25519_b64"].clone();
        assert!(pool_entries(&pool).unwrap_err().contains("repeats"));
        let mut pool = fixture["pool"].clone();
        pool["entries"][0]["key_url"] = json!("https://elsewhere.example/k.json");
        assert!(pool_entries(&pool).unwrap_err().contains("host"));
        let mut pool = fixture["pool"].clone();
        pool["entries"][0]["signed_domain"] = json!("WITNESS-A.example");
        assert!(pool_entries(&pool).is_ok(), "compared lower-case");
    }

    #[test]
    fn numbers_hash_by_the_nenrin_rule() {
        let numbers = vector("requests.json")["numbers"].clone();
        let request = &numbers["request"];
        let canonical = String::from_utf8(crate::canonical::to_bytes(request)).unwrap();
        assert!(canonical.contains(numbers["canonical_fragment"].as_str().unwrap()));
        assert!(!canonical.contains(numbers["js_reference_fragment"].as_str().unwrap()));
        assert!(canonical.contains("\"x_weight\":0.5"));
        assert_eq!(request_sha256(request), numbers["request_sha256"]);
        assert_ne!(
            request_sha256(request),
            numbers["js_reference_request_sha256"]
        );
        // Through a body: integers of any size stay integers, floats in Python's form.
        let body = br#"{"a":123456789012345678901234567890,"b":1E21,"c":1e-7,"d":100.0,"e":-0}"#;
        let parsed = parse_json(body).unwrap();
        assert_eq!(
            String::from_utf8(crate::canonical::to_bytes(&parsed)).unwrap(),
            r#"{"a":123456789012345678901234567890,"b":1e+21,"c":1e-07,"d":100.0,"e":0}"#
        );
    }

    #[test]
    fn the_requester_writes_the_reference_envelope() {
        let fixture = fixture_request();
        let drawn = Drawn {
            subject_sha256: fixture["subject_sha256"].as_str().unwrap().into(),
            pool_sha256: fixture["pool_sha256"].as_str().unwrap().into(),
            beacon: fixture["beacon"].clone(),
        };
        let built = build_request(
            "https://gate.horizonshield.dev//",
            &default_surfaces(),
            "2026-09-20T08:03:30Z",
            &drawn,
        );
        assert_eq!(built, fixture);
        let cases = vector("requests.json")["extraction"].clone();
        assert_eq!(envelope(&built, None), cases[0]["envelope"]);
        let card = "https://caller.example.org/.well-known/agent-card.json";
        assert_eq!(envelope(&built, Some(card)), cases[1]["envelope"]);
    }

    #[test]
    fn an_ad_hoc_request_passes_the_checks() {
        let drawn = Drawn::ad_hoc([0xab; 32]);
        let request = build_request("https://a.org", &["keys.witness".into()], "t", &drawn);
        assert_eq!(check_request(&request), Ok(()));
        assert_eq!(request["subject_sha256"], "ab".repeat(32));
        assert_eq!(request["pool_sha256"], "0".repeat(64));
        assert_eq!(
            request["beacon"],
            json!({"kind": "none", "height": "0", "hash": "0".repeat(64)})
        );
        assert_eq!(
            envelope(&request, None)["id"],
            format!("hs-witness-{}", "ab".repeat(8))
        );
    }

    fn answered_reply() -> (Value, Value) {
        let example = vector("answer-example.json");
        (
            example["expected"]["reply"].clone(),
            example["inputs"]["request"].clone(),
        )
    }

    #[test]
    fn reading_replies() {
        let (reply, _) = answered_reply();
        let observation = reply["result"]["parts"][0]["data"].clone();
        assert_eq!(
            read_reply(200, &bytes(&reply)),
            ReplyReading::Observation(observation.clone())
        );
        // Parts are also looked for in a task's status message, artifacts and history.
        for shape in [
            json!({"status": {"message": {"parts": [{"kind": "data", "data": observation}]}}}),
            json!({"artifacts": [{"parts": []}, {"parts": [{"kind": "data", "data": observation}]}]}),
            json!({"history": [{"parts": [{"kind": "text", "text": observation.to_string()}]}]}),
        ] {
            let body = json!({"jsonrpc": "2.0", "id": 1, "result": shape});
            assert_eq!(
                read_reply(200, &bytes(&body)),
                ReplyReading::Observation(observation.clone())
            );
        }
        let declined = observation::declined_message("self_witness", "why", 1, None);
        let body = json!({"jsonrpc": "2.0", "id": 1, "result": declined});
        assert_eq!(
            read_reply(200, &bytes(&body)),
            ReplyReading::Declined {
                reason: "self_witness".into(),
                text: "declined: self_witness: why".into()
            }
        );
        let failed = |code: &str| ReplyReading::Failed(code.to_string());
        assert_eq!(read_reply(503, b"{}"), failed("http_503"));
        assert_eq!(read_reply(302, b""), failed("http_302"));
        let error = RpcError::parse_error().body();
        assert_eq!(read_reply(200, error.as_bytes()), failed(RPC_ERROR));
        assert_eq!(
            read_reply(200, b"{\"result\":{}}"),
            failed(NO_OBSERVATION_IN_REPLY)
        );
        assert_eq!(read_reply(200, b"<html>"), failed(NO_OBSERVATION_IN_REPLY));
        assert_eq!(
            ReplyReading::unreachable("connection refused"),
            failed("unreachable: connection refused")
        );
    }

    #[test]
    fn accepting_an_observation() {
        let (reply, request) = answered_reply();
        let observation = reply["result"]["parts"][0]["data"].clone();
        let endpoint = "https://agent.example.org/";
        let key = observation["public_key_ed25519_b64"].clone();
        let own_doc = json!({ "public_key_ed25519_b64": key });
        let other_doc =
            json!({ "public_key_ed25519_b64": "9rdUeb04kK1HOHXj/h2peL6Gi7YmZD3tWfcNJEmPC34=" });
        let accept_with = |endpoint: &str, request: &Value, doc: KeyDocument| {
            accept(&observation, endpoint, request, doc)
        };
        assert_eq!(
            accept_with(endpoint, &request, KeyDocument::NotAsked),
            Acceptance::Accepted
        );
        assert_eq!(
            accept_with(endpoint, &request, KeyDocument::Fetched(&own_doc)),
            Acceptance::Accepted
        );
        assert_eq!(
            accept_with(endpoint, &request, KeyDocument::Unreachable),
            Acceptance::CannotJudge(KEY_URL_UNREACHABLE)
        );
        let mut other_request = request.clone();
        other_request["requested_at"] = json!("2026-09-20T08:03:31Z");
        assert_eq!(
            accept_with(
                "https://agent.example.com",
                &other_request,
                KeyDocument::Fetched(&other_doc)
            ),
            Acceptance::Refused(vec![
                WITNESS_ENDPOINT_MISMATCH,
                WITNESS_REQUEST_MISMATCH,
                KEY_URL_MISMATCH
            ])
        );
        assert_eq!(
            accept_with(endpoint, &other_request, KeyDocument::Unreachable),
            Acceptance::Refused(vec![WITNESS_REQUEST_MISMATCH])
        );
        let mut tampered = observation.clone();
        tampered["endpoint"] = json!("https://agent.example.com");
        assert_eq!(
            accept(
                &tampered,
                "https://agent.example.com",
                &request,
                KeyDocument::NotAsked
            ),
            Acceptance::Refused(vec!["hash_mismatch"])
        );
    }
}
