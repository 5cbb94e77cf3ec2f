//! The eight assertions of §3, one function each, named after the assertion, and the verdict.
//! Pure: every input is observed data; nothing here does I/O.

use super::declaration::{Declaration, compensation_problems, paid_model_signals};
use super::observation::{Mode, ObservedFetch, RequestProfile, Wire};
use super::spec::{EXT, N3_JSONRPC_ID, PERMA};
use super::url_norm::url_norm;
use crate::canonical::{self, python_bool, python_pair_text};
use crate::json::{Doc, JsonRef, ObjectRef};
use serde_json::json;
use std::sync::Arc;

/// One evaluated assertion (internal form; the record's wire form hashes `observed_input`).
#[derive(Debug, Clone, PartialEq)]
pub struct Assertion {
    pub name: &'static str,
    pub claim: String,
    /// `None` is "not applicable" and is left out of the verdict counts.
    pub result: Option<bool>,
    pub evidence_nodes: Vec<u8>,
    /// The exact pre-hash text of `observed_sha256` (§3.0).
    pub observed_input: String,
    pub note: Option<String>,
}

/// `verdict` (§3.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub ok: bool,
    pub n_pass: u32,
    pub n_total: u32,
}

impl Verdict {
    pub fn outcome(&self) -> &'static str {
        if self.ok { "PASS" } else { "FAIL" }
    }
}

/// Everything the assertions read.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub mode: Mode,
    pub wire: Wire,
    /// How n3 was asked and is read (§2.6.1).
    pub profile: RequestProfile,
    pub n0: &'a ObservedFetch,
    pub n1: &'a ObservedFetch,
    pub n3: Option<&'a ObservedFetch>,
    /// n1's body parsed as JSON when n1 answered 200, else None.
    pub card: Option<&'a super::declaration::Card>,
    pub declaration: &'a Declaration,
    pub target: Option<&'a str>,
}

// §3.3 notes.
pub const NOTE_COMPENSATION_TOP_LEVEL: &str = "read from the card's top-level compensation key: the extension is not declared, so there is no params.compensation. Whether the extension is declared is recorded by conduct_ext_declared and is not restated here.";
pub const NOTE_COMPENSATION_NEITHER: &str = "not applicable: the card carries no compensation declaration in either place. The extension's absence is recorded by conduct_ext_declared.";
// §3.4
pub const NOTE_ANSWERED_SSE_WITHOUT_RESPONSE: &str = "the endpoint answered with an event stream (text/event-stream) that ended without a JSON-RPC response with id 1 (section 2.6.1 of conduct-walk.md)";
pub const NOTE_ANSWERED_402: &str = "not applicable: the endpoint required payment (http 402) and this walk does not pay. A witness that pays the agent it is walking has a financial relationship with that agent, which is the thing this layer exists to disclose. What was observed instead is recorded by payment_required_as_declared.";
// §3.5
pub const NOTE_PAYMENT_NONE_NOT_402: &str =
    "not applicable: the card declares no paid model, so there is nothing to enforce";
pub const NOTE_PAYMENT_SOME_NOT_402: &str = "not applicable: the card declares a paid model and this request was answered without a charge; from here a free method and a waived charge look the same";
pub const NOTE_PAYMENT_NONE_402: &str = "the endpoint charged and the card declares no paid model at all; a charge nobody was told about is a failed disclosure, and without this line answering 402 would be a way to never be measured again";
// §3.6
pub const NOTE_ECHO_MCP: &str = "not applicable: node 3 was an MCP initialize, not an A2A message; the echo is only required on A2A requests";
// §3.7
pub const NOTE_METADATA_MCP: &str = "not applicable: node 3 was an MCP initialize, not an A2A message; section 3 metadata is only required on A2A responses";
pub const NOTE_METADATA_402: &str =
    "not applicable: the endpoint required payment (http 402) and returned no message to read";
pub const NOTE_METADATA_NOT_ANSWERED: &str = "not applicable: node 3 returned no A2A result of the wire's shape; that is measured_endpoint_answered's finding";
pub const NOTE_METADATA_NOT_DECLARED: &str = "not applicable: the card does not declare the extension, so nothing obliges the echo; that is conduct_ext_declared's finding";
// §3.8
pub const NOTE_BOUND_NOTHING_TO_BIND: &str = "not applicable: the returned metadata names no endpoint and no served_by, so there is nothing to bind; that is metadata_echoed's finding";
pub const NOTE_BOUND_BY_SERVED_BY: &str = "bound by .../served_by";
pub const NOTE_UNBOUND_BY_SERVED_BY: &str = ".../served_by names a URL other than the one node 3 was sent to; a response that says another URL served it is false whatever .../endpoint says (section 14.4)";
pub const NOTE_BOUND_BY_ENDPOINT: &str = "bound by .../endpoint (no .../served_by)";
pub const NOTE_UNBOUND_BY_ENDPOINT: &str = ".../endpoint names a URL other than the one node 3 was sent to and no .../served_by says where the request arrived; the response claims a URL that did not serve it served it";

const CLAIM_CARD_BYTES_STABLE: &str = "card_bytes_stable: node0.body_sha256 == node1.body_sha256";
const CLAIM_COMPENSATION: &str = "compensation_well_formed: the compensation declaration has the section 2 shape and any two copies of it agree";
const CLAIM_PAYMENT_PREFIX: &str = "payment_required_as_declared: an endpoint answering http 402 declares a paid model on its card; signals read (closed list, exact keys): ";
const CLAIM_METADATA: &str = "metadata_echoed: the returned Message or Task metadata carries the section 3 keys under the canonical identifier, .../endpoint is an entry of measured_endpoints, and .../conduct_record and .../witness_intake equal the card's params";
const CLAIM_BOUND: &str = "endpoint_bound: the URL node 3 was sent to equals .../served_by in the returned metadata, or .../endpoint when served_by is absent (section 14)";

/// Evaluate all eight, in record order.
pub fn evaluate(inp: &Inputs) -> Vec<Assertion> {
    let reply = read_reply(inp);
    let metadata_gate = metadata_not_applicable(inp, &reply);
    vec![
        card_bytes_stable(inp),
        conduct_ext_declared(inp),
        compensation_well_formed(inp),
        measured_endpoint_answered(inp, &reply),
        payment_required_as_declared(inp),
        extension_echoed(inp),
        metadata_echoed(inp, &reply, metadata_gate),
        endpoint_bound(inp, &reply, metadata_gate),
    ]
}

/// §3.0 verdict: every applicable result true.
pub fn verdict(assertions: &[Assertion]) -> Verdict {
    let n_total = assertions.iter().filter(|a| a.result.is_some()).count() as u32;
    let n_pass = assertions.iter().filter(|a| a.result == Some(true)).count() as u32;
    Verdict {
        ok: n_pass == n_total,
        n_pass,
        n_total,
    }
}

fn n3_evidence(inp: &Inputs) -> Vec<u8> {
    if inp.n3.is_some() { vec![3] } else { vec![2] }
}

fn is_402(inp: &Inputs) -> bool {
    inp.n3.is_some_and(|n3| n3.status() == 402)
}

/// §3.1
pub fn card_bytes_stable(inp: &Inputs) -> Assertion {
    let stable = inp.n0.status() == 200
        && inp.n1.status() == 200
        && inp.n0.body_sha256 == inp.n1.body_sha256;
    Assertion {
        name: "card_bytes_stable",
        claim: CLAIM_CARD_BYTES_STABLE.to_string(),
        result: Some(stable),
        evidence_nodes: vec![0, 1],
        observed_input: format!("{}{}", inp.n0.body_sha256, inp.n1.body_sha256),
        note: None,
    }
}

/// §3.2
pub fn conduct_ext_declared(inp: &Inputs) -> Assertion {
    let observed_input = match &inp.declaration.extension {
        Some(ext) => ext.value().canonical_string(),
        None => "absent".to_string(),
    };
    Assertion {
        name: "conduct_ext_declared",
        claim: format!("conduct_ext_declared: card lists {EXT} under capabilities.extensions[]"),
        result: Some(inp.declaration.declared()),
        evidence_nodes: vec![1, 2],
        observed_input,
        note: None,
    }
}

/// §3.3: reads params.compensation when declared (with the whole §1.4 problem list), else the
/// card's top-level compensation object, else not applicable.
pub fn compensation_well_formed(inp: &Inputs) -> Assertion {
    let top_level = inp
        .card
        .and_then(|c| c.root().get("compensation"))
        .filter(|c| c.is_object());
    let (problems, note): (Option<Vec<String>>, Option<&str>) = if inp.declaration.declared() {
        (Some(inp.declaration.problems.clone()), None)
    } else if let Some(top) = top_level {
        let problems = compensation_problems(Some(top))
            .into_iter()
            .map(String::from)
            .collect();
        (Some(problems), Some(NOTE_COMPENSATION_TOP_LEVEL))
    } else {
        (None, Some(NOTE_COMPENSATION_NEITHER))
    };
    let (result, observed_input) = match &problems {
        Some(p) => (Some(p.is_empty()), canonical::to_string(&json!(p))),
        None => (None, canonical::to_string(&json!("no declaration"))),
    };
    Assertion {
        name: "compensation_well_formed",
        claim: CLAIM_COMPENSATION.to_string(),
        result,
        evidence_nodes: vec![1, 2],
        observed_input,
        note: note.map(str::to_string),
    }
}

/// §3.4
pub fn measured_endpoint_answered(inp: &Inputs, reply: &Reply) -> Assertion {
    let mut claim = format!(
        "measured_endpoint_answered: POST {} returned http 200 with a JSON-RPC result",
        inp.target.unwrap_or("(no target)")
    );
    if inp.mode == Mode::A2a {
        claim.push_str(&format!(" of the A2A {} shape", inp.wire.as_str()));
    }
    let (result, note) = if is_402(inp) {
        (None, Some(NOTE_ANSWERED_402.to_string()))
    } else if inp.n3.is_some_and(|n3| sse_without_response(inp, n3)) {
        (
            Some(false),
            Some(NOTE_ANSWERED_SSE_WITHOUT_RESPONSE.to_string()),
        )
    } else {
        (Some(inp.target.is_some() && reply.answered), None)
    };
    let body = inp.n3.map_or("no-node", |n3| n3.body_sha256.as_str());
    Assertion {
        name: "measured_endpoint_answered",
        claim,
        result,
        evidence_nodes: n3_evidence(inp),
        observed_input: format!("{body}:{}", python_bool(reply.answered)),
        note,
    }
}

/// §3.5 (v1.3): only 402 counts; a walk never pays.
pub fn payment_required_as_declared(inp: &Inputs) -> Assertion {
    let signals = paid_model_signals(inp.card);
    let listed = if signals.is_empty() {
        "none".to_string()
    } else {
        signals.join(", ")
    };
    let charged = is_402(inp);
    let (result, note) = match (signals.is_empty(), charged) {
        (true, false) => (None, Some(NOTE_PAYMENT_NONE_NOT_402)),
        (false, false) => (None, Some(NOTE_PAYMENT_SOME_NOT_402)),
        (false, true) => (Some(true), None),
        (true, true) => (Some(false), Some(NOTE_PAYMENT_NONE_402)),
    };
    let status = inp
        .n3
        .map_or("None".to_string(), |n3| n3.status().to_string());
    Assertion {
        name: "payment_required_as_declared",
        claim: format!("{CLAIM_PAYMENT_PREFIX}{listed}"),
        result,
        evidence_nodes: n3_evidence(inp),
        observed_input: format!("{}:{status}", canonical::to_string(&json!(signals))),
        note: note.map(str::to_string),
    }
}

/// §3.6: the echo under the wire's own spelling; the other spelling does not count.
pub fn extension_echoed(inp: &Inputs) -> Assertion {
    if inp.mode == Mode::Mcp {
        return Assertion {
            name: "extension_echoed",
            claim: "extension_echoed".to_string(),
            result: None,
            evidence_nodes: n3_evidence(inp),
            observed_input: "not applicable".to_string(),
            note: Some(NOTE_ECHO_MCP.to_string()),
        };
    }
    let (header, captured) = match inp.wire {
        Wire::V1_0 => (
            "A2A-Extensions",
            inp.n3.and_then(|n| n.a2a_extensions.as_deref()),
        ),
        Wire::V0_3 => (
            "X-A2A-Extensions",
            inp.n3.and_then(|n| n.x_a2a_extensions.as_deref()),
        ),
    };
    let echoed = captured.is_some_and(|value| {
        value
            .split(',')
            .map(str::trim)
            .any(|item| item == EXT || item == PERMA)
    });
    let observed_input = match inp.n3 {
        Some(n3) => python_pair_text(n3.a2a_extensions.as_deref(), n3.x_a2a_extensions.as_deref()),
        None => "None".to_string(),
    };
    Assertion {
        name: "extension_echoed",
        claim: format!("extension_echoed: response header {header} contains {EXT}"),
        result: Some(echoed),
        evidence_nodes: n3_evidence(inp),
        observed_input,
        note: None,
    }
}

/// The n3 reply as §2.8 reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    /// `result_shape_ok`.
    pub answered: bool,
    /// Where the metadata was read (`message.metadata`, `task.metadata`,
    /// `task.status.message.metadata`), None when nothing was located.
    pub location: Option<String>,
    /// The metadata value when it is an object.
    pub metadata: Option<Metadata>,
}

/// The metadata object of n3's reply, where it sits in the reply's document.
#[derive(Clone)]
pub struct Metadata {
    reply: Arc<Doc>,
    at: u32,
}

impl Metadata {
    pub fn object(&self) -> ObjectRef<'_> {
        self.reply
            .at(self.at)
            .as_object()
            .expect("metadata is located only when it is an object")
    }
}

impl PartialEq for Metadata {
    fn eq(&self, other: &Self) -> bool {
        self.reply.at(self.at) == other.reply.at(other.at)
    }
}

impl std::fmt::Debug for Metadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Metadata({:?})", self.reply.at(self.at))
    }
}

/// Whether n3 answered 200 with an event stream the profile reads (§2.6.1).
fn answered_with_event_stream(mode: Mode, profile: RequestProfile, n3: &ObservedFetch) -> bool {
    n3.status() == 200
        && profile.reads_sse(mode)
        && n3
            .exchange
            .header("content-type")
            .is_some_and(crate::sse::is_event_stream)
}

fn sse_without_response(inp: &Inputs, n3: &ObservedFetch) -> bool {
    answered_with_event_stream(inp.mode, inp.profile, n3)
        && crate::sse::find_response(&n3.exchange.body, N3_JSONRPC_ID).is_none()
}

/// §2.8 and §2.6.1: the JSON-RPC message n3 answered with: only on 200; the body parsed as
/// JSON, or, when the profile reads MCP Streamable HTTP and the answer is an event stream,
/// the response event with id 1.
/// Read as a card is read (any shape, compact; `crate::json::read`).
pub fn n3_reply_message(mode: Mode, profile: RequestProfile, n3: &ObservedFetch) -> Option<Doc> {
    if n3.status() != 200 {
        return None;
    }
    if answered_with_event_stream(mode, profile, n3) {
        return crate::sse::find_response(&n3.exchange.body, N3_JSONRPC_ID).map(|e| e.message);
    }
    crate::json::read(&n3.exchange.body, crate::json::ReadOptions::LENIENT).ok()
}

/// §2.8: read n3's reply, decide "answered" for the mode and wire, and locate metadata
/// (a2a mode, answered replies only).
pub fn read_reply(inp: &Inputs) -> Reply {
    let Some(reply) = inp
        .n3
        .and_then(|n3| n3_reply_message(inp.mode, inp.profile, n3))
    else {
        return Reply::default();
    };
    let reply = Arc::new(reply);
    let Some(result) = reply
        .root()
        .as_object()
        .and_then(|r| r.get("result"))
        .filter(|r| !r.is_null())
    else {
        return Reply::default();
    };
    let answered = match inp.mode {
        Mode::Mcp => true,
        Mode::A2a => match (result.as_object(), inp.wire) {
            (None, _) => false,
            (Some(r), Wire::V0_3) => matches!(
                r.get("kind").and_then(|k| k.as_str()),
                Some("message") | Some("task")
            ),
            (Some(r), Wire::V1_0) => {
                (r.contains_key("message") || r.contains_key("task")) && !r.contains_key("kind")
            }
        },
    };
    if !answered || inp.mode != Mode::A2a {
        return Reply {
            answered,
            ..Reply::default()
        };
    }
    let located: Option<(&str, JsonRef<'_>)> = match inp.wire {
        Wire::V0_3 => result
            .get("kind")
            .and_then(|k| k.as_str())
            .map(|k| (k, result)),
        Wire::V1_0 => {
            if let Some(m) = result.get("message").filter(|m| m.is_object()) {
                Some(("message", m))
            } else {
                result
                    .get("task")
                    .filter(|t| t.is_object())
                    .map(|t| ("task", t))
            }
        }
    };
    let Some((kind, object)) = located else {
        return Reply {
            answered,
            ..Reply::default()
        };
    };
    let metadata = |v: Option<JsonRef<'_>>| {
        v.filter(|m| m.is_object()).map(|m| Metadata {
            reply: Arc::clone(&reply),
            at: m.index(),
        })
    };
    let own = object.get("metadata");
    if carries_conduct_keys(own) {
        return Reply {
            answered,
            location: Some(format!("{kind}.metadata")),
            metadata: metadata(own),
        };
    }
    if kind == "task" {
        let nested = object
            .get("status")
            .and_then(|s| s.get("message"))
            .and_then(|m| m.get("metadata"));
        if carries_conduct_keys(nested) {
            return Reply {
                answered,
                location: Some("task.status.message.metadata".to_string()),
                metadata: metadata(nested),
            };
        }
    }
    Reply {
        answered,
        location: Some(format!("{kind}.metadata")),
        metadata: metadata(own),
    }
}

/// A value that is there and not null (the two are alike where metadata is compared).
fn present(v: Option<JsonRef<'_>>) -> Option<JsonRef<'_>> {
    v.filter(|v| !v.is_null())
}

/// An object with at least one key under `EXT/` (keys under PERMA do not count, spec §12.4).
fn carries_conduct_keys(v: Option<JsonRef<'_>>) -> bool {
    let prefix = format!("{EXT}/");
    v.and_then(|v| v.as_object())
        .is_some_and(|m| m.keys().any(|k| k.starts_with(&prefix)))
}

fn conduct_key(suffix: &str) -> String {
    format!("{EXT}{suffix}")
}

/// §3.7 gate: the first matching not-applicable reason, shared with endpoint_bound.
fn metadata_not_applicable(inp: &Inputs, reply: &Reply) -> Option<&'static str> {
    if inp.mode == Mode::Mcp {
        Some(NOTE_METADATA_MCP)
    } else if is_402(inp) {
        Some(NOTE_METADATA_402)
    } else if !reply.answered {
        Some(NOTE_METADATA_NOT_ANSWERED)
    } else if !inp.declaration.declared() {
        Some(NOTE_METADATA_NOT_DECLARED)
    } else {
        None
    }
}

/// §3.7 (v1.4)
pub fn metadata_echoed(inp: &Inputs, reply: &Reply, gate: Option<&'static str>) -> Assertion {
    // canonical({"where": location, "keys": {suffix: value, ...} or null}), written from the
    // reply's document (names in code point order: "keys" < "where", and the four suffixes).
    let mut observed_input = String::from("{\"keys\":");
    match reply.metadata.as_ref().map(Metadata::object) {
        None => observed_input.push_str("null"),
        Some(md) => {
            observed_input.push('{');
            let mut first = true;
            for suffix in [
                "/conduct_record",
                "/endpoint",
                "/served_by",
                "/witness_intake",
            ] {
                if let Some(v) = md.get(&conduct_key(suffix)) {
                    if !first {
                        observed_input.push(',');
                    }
                    first = false;
                    canonical::write_string(&mut observed_input, suffix);
                    observed_input.push(':');
                    v.write_canonical(&mut observed_input);
                }
            }
            observed_input.push('}');
        }
    }
    observed_input.push_str(",\"where\":");
    match &reply.location {
        Some(location) => canonical::write_string(&mut observed_input, location),
        None => observed_input.push_str("null"),
    }
    observed_input.push('}');
    let base = Assertion {
        name: "metadata_echoed",
        claim: CLAIM_METADATA.to_string(),
        result: None,
        evidence_nodes: if inp.n3.is_some() {
            vec![1, 3]
        } else {
            vec![2]
        },
        observed_input,
        note: None,
    };
    if let Some(reason) = gate {
        return Assertion {
            note: Some(reason.to_string()),
            ..base
        };
    }
    let mut problems: Vec<String> = Vec::new();
    match reply.metadata.as_ref().map(Metadata::object) {
        None => problems.push(format!(
            "the returned {} carries no metadata object",
            reply.location.as_deref().unwrap_or("result")
        )),
        Some(md) => {
            let params = inp.declaration.params();
            let measured = params
                .and_then(|p| p.get("measured_endpoints"))
                .and_then(|m| m.as_array());
            match md.get(&conduct_key("/endpoint")).and_then(|v| v.as_str()) {
                None => problems.push(".../endpoint absent".to_string()),
                Some(ep) => {
                    let listed =
                        measured.is_some_and(|items| items.iter().any(|i| i.as_str() == Some(ep)));
                    if !listed {
                        problems.push(
                            ".../endpoint is not an entry of the card's measured_endpoints"
                                .to_string(),
                        );
                    }
                }
            }
            for key in ["conduct_record", "witness_intake"] {
                let echoed = md.get(&conduct_key(&format!("/{key}")));
                let declared = params.and_then(|p| p.get(key));
                // Absent and null are alike; otherwise `Value` equality (numbers by their text).
                if present(echoed) != present(declared) {
                    problems.push(match echoed {
                        None => format!(".../{key} absent"),
                        Some(_) => format!(".../{key} differs from params.{key}"),
                    });
                }
            }
        }
    }
    let mut note_parts: Vec<String> = Vec::new();
    if let Some(location) = &reply.location {
        note_parts.push(format!("read from {location}"));
    }
    note_parts.extend(problems.iter().cloned());
    let note = note_parts.join("; ");
    Assertion {
        result: Some(problems.is_empty()),
        note: (!note.is_empty()).then_some(note),
        ..base
    }
}

/// §3.8 (v1.4): the URL node 3 was sent to against `served_by`, else `endpoint`.
pub fn endpoint_bound(inp: &Inputs, reply: &Reply, gate: Option<&'static str>) -> Assertion {
    let md = reply.metadata.as_ref().map(Metadata::object);
    let served_by_key = md.and_then(|m| m.get(&conduct_key("/served_by")));
    let endpoint_key = md.and_then(|m| m.get(&conduct_key("/endpoint")));
    let walked = inp.target.and_then(url_norm);
    let served_by = served_by_key.and_then(|v| v.as_str()).and_then(url_norm);
    let endpoint = endpoint_key.and_then(|v| v.as_str()).and_then(url_norm);
    let observed_input = canonical::to_string(&json!({
        "walked": walked,
        "served_by": served_by,
        "endpoint": endpoint,
    }));
    let base = Assertion {
        name: "endpoint_bound",
        claim: CLAIM_BOUND.to_string(),
        result: None,
        evidence_nodes: n3_evidence(inp),
        observed_input,
        note: None,
    };
    if let Some(reason) = gate {
        return Assertion {
            note: Some(reason.to_string()),
            ..base
        };
    }
    if served_by_key.is_none() && endpoint_key.is_none() {
        return Assertion {
            note: Some(NOTE_BOUND_NOTHING_TO_BIND.to_string()),
            ..base
        };
    }
    let (claimed, bound_note, unbound_note) = if served_by_key.is_some() {
        (
            served_by,
            NOTE_BOUND_BY_SERVED_BY,
            NOTE_UNBOUND_BY_SERVED_BY,
        )
    } else {
        (endpoint, NOTE_BOUND_BY_ENDPOINT, NOTE_UNBOUND_BY_ENDPOINT)
    };
    let bound = walked.is_some() && walked == claimed;
    Assertion {
        result: Some(bound),
        note: Some(if bound { bound_note } else { unbound_note }.to_string()),
        ..base
    }
}
