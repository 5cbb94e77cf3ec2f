//! Building the `jidec-path-v1` record (§4.2), its disclaimers (§4.4) and the privacy
//! transformations (§4.5 hash-only, §4.6 commitment). Pure: the clock, the salt and the card
//! signature block are inputs.

use super::assertions::{Assertion, Verdict};
use super::declaration::Declaration;
use super::observation::{Mode, ObservedFetch, RequestProfile, Wire};
use super::spec::*;
use crate::canonical;
use crate::digest::sha256_hex;
use crate::wire::{
    AssertionWire, CommitmentRecord, ComputeNode, ConductExt, Context, FetchNode, FetchRequest,
    FetchResponse, Node, Record, Replay, VerdictWire, Walker, Witness,
};
use serde_json::{Value, json};

/// What the operator asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Privacy {
    #[default]
    Full,
    HashOnly,
    Commitment,
}

impl Privacy {
    pub fn as_str(self) -> &'static str {
        match self {
            Privacy::Full => "full",
            Privacy::HashOnly => "hash-only",
            Privacy::Commitment => "commitment",
        }
    }

    pub fn parse(s: &str) -> Option<Privacy> {
        match s {
            "full" => Some(Privacy::Full),
            "hash-only" => Some(Privacy::HashOnly),
            "commitment" => Some(Privacy::Commitment),
            _ => None,
        }
    }
}

// §4.4 disclaimer lines.
pub const DNE_COMMITMENT: &str =
    "anything about the walked agent until the committed record is revealed";
pub const DNE_CORRECTNESS: &str = "correctness or quality of any response";
pub const DNE_COMPENSATION_TRUTH: &str = "truth of the compensation declaration";
pub const DNE_OTHER_INSTANTS: &str =
    "that the agent behaves the same at other instants or from other vantages";
pub const DNE_AMOUNT_402: &str =
    "that the amount charged matches the price the card declares: the walk did not pay";
pub const DNE_HASH_ONLY: &str = "which tool or method was called";
pub const DNE_IDENTITY: &str = "identity of the witness beyond the name given";
/// §4.6 the commitment recipe text.
pub const COMMITMENT_RECIPE: &str =
    "sha256(canonical(full record) || salt); salt is 32 bytes, kept by the witness";

/// Everything about the walk that is not observed traffic.
#[derive(Debug, Clone)]
pub struct RecordContext {
    /// The origin with trailing `/` removed.
    pub base: String,
    pub walked_at: String,
    pub mode: Mode,
    pub wire: Wire,
    pub witness: Witness,
    pub vantage_limitation: Option<String>,
    pub contract_sha256: Option<String>,
    pub walker: Walker,
    /// Named in `replay.how` (§2.6.1).
    pub profile: RequestProfile,
}

/// The card-dependent parts decided outside the walk core.
#[derive(Debug, Clone)]
pub struct CardFindings {
    /// The record's `card_signature` object.
    pub card_signature: Value,
    /// The card-attribution line of `establishes` (a verified card, §4.3 D), after line 3 or 4.
    pub card_establishes: Option<String>,
    /// The card-attribution lines of `does_not_establish` (§4.3 D).
    pub attribution_lines: Vec<String>,
    /// conduct-walker's own verification of a signed card (richer than the record's block):
    /// kept beside the record, never in it.
    pub verification: Option<Value>,
    /// conduct-walker's check of the A2A Terms extension listing (its block and the lines it
    /// would add): kept beside the record, never in it, since the reference writes no such key.
    pub terms: Option<Value>,
}

/// The evaluated walk, ready to become a record.
#[derive(Debug, Clone)]
pub struct Evaluated<'a> {
    pub n0: &'a ObservedFetch,
    pub n1: &'a ObservedFetch,
    pub n3: Option<&'a ObservedFetch>,
    pub declaration: &'a Declaration,
    pub target: Option<&'a str>,
    pub assertions: &'a [Assertion],
    pub verdict: Verdict,
}

/// The records one walk produces.
#[derive(Debug, Clone)]
pub struct Built {
    /// Canonical bytes of the record to file (full, hash-only or commitment).
    pub filed: Vec<u8>,
    /// Commitment privacy: the canonical bytes of the full record kept by the witness, and
    /// its salt (hex).
    pub kept: Option<(Vec<u8>, String)>,
}

/// §2.4 the n2 compute node's output object and preview.
pub fn n2_output(declaration: &Declaration, target: Option<&str>) -> (String, String) {
    let output = json!({
        "extension_declared": declaration.declared(),
        "problems": declaration.problems,
        "target": target,
    });
    let mut preview = if declaration.declared() {
        "declared"
    } else {
        "not declared"
    }
    .to_string();
    if declaration.problems.is_empty() {
        preview.push_str("; well formed");
    } else {
        preview.push_str("; ");
        preview.push_str(&declaration.problems.join("; "));
    }
    // What the record writes and hashes from the declaration is written with U+FFFD for a lone
    // surrogate; the reference crashes instead, so there is no record to equal: say so.
    if declaration
        .extension
        .as_ref()
        .is_some_and(|e| e.value().holds_lone_surrogate())
    {
        preview.push_str("; ");
        preview.push_str(NOTE_LONE_SURROGATE);
    }
    (sha256_hex(canonical::to_bytes(&output)), preview)
}

/// A fetch node; `redact` applies §4.5 (hash-only): method `REDACTED`, URL reduced to
/// `scheme://authority/`, request hashes left out.
fn fetch_node(f: &ObservedFetch, redact: bool) -> Node {
    let (method, url) = if redact {
        ("REDACTED".to_string(), origin_form(&f.exchange.request.url))
    } else {
        (
            f.exchange.request.method.to_string(),
            f.exchange.request.url.clone(),
        )
    };
    Node::Fetch(FetchNode {
        n: f.n,
        kind: "fetch",
        request: FetchRequest {
            method,
            url,
            headers_sha256: f.request_headers_sha256.clone(),
            body_sha256: f.request_body_sha256.clone(),
            hashes_withheld: redact,
        },
        response: FetchResponse {
            status: f.status(),
            headers_sha256: f.response_headers_sha256.clone(),
            body_sha256: f.body_sha256.clone(),
            a2a_extensions: f.a2a_extensions.clone(),
            x_a2a_extensions: f.x_a2a_extensions.clone(),
        },
        duration_ms: f.exchange.duration_ms,
    })
}

/// `scheme://authority/` of a URL as written (Python `urlsplit`: scheme lower-cased, netloc kept).
pub fn origin_form(url: &str) -> String {
    let (scheme, rest) = url.split_once(':').unwrap_or(("", url));
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    format!("{}://{}/", scheme.to_ascii_lowercase(), &rest[..end])
}

/// Build the record(s) for one walk. `salt` is used only in commitment privacy.
pub fn build(
    ctx: &RecordContext,
    ev: &Evaluated,
    card: &CardFindings,
    privacy: Privacy,
    salt: [u8; 32],
) -> Built {
    match privacy {
        Privacy::Full | Privacy::HashOnly => Built {
            filed: full_record(ctx, ev, card, privacy),
            kept: None,
        },
        Privacy::Commitment => {
            let kept = full_record(ctx, ev, card, Privacy::Commitment);
            let commitment = crate::digest::commitment_hex(&kept, &salt);
            let mut does_not_establish = vec![
                DNE_COMMITMENT.to_string(),
                DNE_CORRECTNESS.to_string(),
                DNE_COMPENSATION_TRUTH.to_string(),
                DNE_OTHER_INSTANTS.to_string(),
            ];
            if ctx.witness.key_url.is_none() {
                does_not_establish.push(DNE_IDENTITY.to_string());
            }
            let filed = CommitmentRecord {
                schema: SCHEMA,
                purpose: purpose(ctx, ev.target),
                walked_at: ctx.walked_at.clone(),
                walker: ctx.walker.clone(),
                base: ctx.base.clone(),
                witness: ctx.witness.clone(),
                mode: "commitment",
                commitment,
                commitment_recipe: COMMITMENT_RECIPE,
                establishes: vec![commitment_line(&ctx.walked_at)],
                does_not_establish,
            };
            Built {
                filed: canonical::to_bytes_of(&filed),
                kept: Some((kept, hex::encode(salt))),
            }
        }
    }
}

fn commitment_line(walked_at: &str) -> String {
    format!("a record with the stated commitment existed at {walked_at}")
}

fn purpose(ctx: &RecordContext, target: Option<&str>) -> String {
    format!("{PURPOSE_PREFIX}{}", target.unwrap_or(&ctx.base))
}

/// The full record's canonical bytes; `HashOnly` redacts it (§4.5); `Commitment` gives the
/// kept record (§4.6).
fn full_record(
    ctx: &RecordContext,
    ev: &Evaluated,
    card: &CardFindings,
    privacy: Privacy,
) -> Vec<u8> {
    let hash_only = privacy == Privacy::HashOnly;
    let (n2_sha, n2_preview) = n2_output(ev.declaration, ev.target);
    let record = Record {
        schema: SCHEMA,
        purpose: purpose(ctx, ev.target),
        walked_at: ctx.walked_at.clone(),
        walker: ctx.walker.clone(),
        base: ctx.base.clone(),
        nodes: nodes(ev, hash_only, n2_sha, n2_preview.clone()),
        assertions: assertions(ev, hash_only),
        verdict: VerdictWire {
            ok: ev.verdict.ok,
            outcome: ev.verdict.outcome(),
            n_pass: ev.verdict.n_pass,
            n_total: ev.verdict.n_total,
        },
        replay: Replay {
            how: match ctx.profile {
                RequestProfile::Spec => REPLAY_HOW_SPEC,
                RequestProfile::Reference => REPLAY_HOW_REFERENCE,
            },
            match_means: REPLAY_MATCH_MEANS,
            mismatch_means: REPLAY_MISMATCH_MEANS,
        },
        witness: ctx.witness.clone(),
        card_signature: card_signature(card, privacy),
        conduct_ext: conduct_ext(ctx, ev),
        prev_path_refs: Vec::new(),
        vantage_limitation: ctx.vantage_limitation.clone(),
        context: ctx
            .contract_sha256
            .clone()
            .map(|c| Context { contract_sha256: c }),
        mode: if hash_only { "hash-only" } else { "full" },
        establishes: establishes(ctx, ev, card, privacy, &n2_preview),
        does_not_establish: does_not_establish(ctx, ev, card, privacy),
    };
    canonical::to_bytes_of(&record)
}

/// n0 and n1 (the card, fetched twice), n2 (the declaration checked), n3 (the measured
/// endpoint) when it was sent.
fn nodes(ev: &Evaluated, hash_only: bool, n2_sha: String, n2_preview: String) -> Vec<Node> {
    let mut nodes = vec![fetch_node(ev.n0, hash_only), fetch_node(ev.n1, hash_only)];
    nodes.push(Node::Compute(ComputeNode {
        n: 2,
        kind: "compute",
        label: N2_LABEL,
        inputs: vec![json!({"from_node": 1})],
        output_sha256: n2_sha,
        output_preview: n2_preview,
    }));
    if let Some(n3) = ev.n3 {
        nodes.push(fetch_node(n3, hash_only));
    }
    nodes
}

/// The assertions as filed; hash-only redacts the target's path in each claim (§4.5).
fn assertions(ev: &Evaluated, hash_only: bool) -> Vec<AssertionWire> {
    ev.assertions
        .iter()
        .map(|a| AssertionWire {
            claim: match (hash_only, ev.target) {
                (true, Some(t)) => a
                    .claim
                    .replace(t, &format!("{}(redacted path)", origin_form(t))),
                _ => a.claim.clone(),
            },
            op: "eq",
            result: a.result,
            evidence_nodes: a.evidence_nodes.clone(),
            observed_sha256: sha256_hex(&a.observed_input),
            note: a.note.clone(),
        })
        .collect()
}

/// The card signature block; any privacy but full drops the key set's address (`jku`).
fn card_signature(card: &CardFindings, privacy: Privacy) -> Value {
    let mut card_signature = card.card_signature.clone();
    if privacy != Privacy::Full
        && let Some(obj) = card_signature.as_object_mut()
        && obj.contains_key("jku")
    {
        obj.insert("jku".into(), Value::Null);
    }
    card_signature
}

fn conduct_ext(ctx: &RecordContext, ev: &Evaluated) -> ConductExt {
    let params = ev.declaration.params();
    ConductExt {
        uri: EXT,
        declared_uri: ev.declaration.declared_uri().map(str::to_string),
        mode: ctx.mode.as_str(),
        wire: (ctx.mode == Mode::A2a).then(|| ctx.wire.as_str()),
        conduct_record: params
            .and_then(|p| p.get("conduct_record"))
            .map(|v| v.to_value()),
        witness_intake: params
            .and_then(|p| p.get("witness_intake"))
            .map(|v| v.to_value()),
        target: ev.target.map(str::to_string),
    }
}

/// §4.4 establishes.
fn establishes(
    ctx: &RecordContext,
    ev: &Evaluated,
    card: &CardFindings,
    privacy: Privacy,
    n2_preview: &str,
) -> Vec<String> {
    if privacy == Privacy::Commitment {
        // The kept full record: the commitment line, then a verified card's line (ref 1.5.0).
        let mut lines = vec![commitment_line(&ctx.walked_at)];
        lines.extend(card.card_establishes.iter().cloned());
        return lines;
    }
    let mut lines = vec![
        format!(
            "agent card at {} fetched twice at {}; body sha256 {} and {}",
            ctx.base, ctx.walked_at, ev.n0.body_sha256, ev.n1.body_sha256
        ),
        format!(
            "extension declaration checked against CONDUCT_EXT_v1 section 2: {}",
            n2_preview.chars().take(160).collect::<String>()
        ),
    ];
    if let Some(n3) = ev.n3 {
        let target = ev.target.unwrap_or_default();
        let who = if privacy == Privacy::HashOnly {
            origin_form(target)
        } else {
            target.to_string()
        };
        lines.push(format!(
            "one request answered by {who} with http {} and body sha256 {}",
            n3.status(),
            n3.body_sha256
        ));
    }
    if let Some(contract) = &ctx.contract_sha256 {
        lines.push(format!("that this walk was taken under the a2a-contract-v0 terms whose contract_sha256 is {contract} (walk.context.contract_sha256); it does not establish that the terms were honored, which is what settlement decides"));
    }
    lines.extend(card.card_establishes.iter().cloned());
    lines
}

/// §4.4 does_not_establish, in order.
fn does_not_establish(
    ctx: &RecordContext,
    ev: &Evaluated,
    card: &CardFindings,
    privacy: Privacy,
) -> Vec<String> {
    let mut lines = Vec::new();
    if privacy == Privacy::Commitment {
        lines.push(DNE_COMMITMENT.to_string());
    }
    lines.extend([DNE_CORRECTNESS, DNE_COMPENSATION_TRUTH, DNE_OTHER_INSTANTS].map(String::from));
    if ev.n3.is_some_and(|n3| n3.status() == 402) {
        lines.push(DNE_AMOUNT_402.to_string());
    }
    if privacy == Privacy::HashOnly {
        lines.push(DNE_HASH_ONLY.to_string());
    }
    if ctx.witness.key_url.is_none() {
        lines.push(DNE_IDENTITY.to_string());
    }
    lines.extend(card.attribution_lines.iter().cloned());
    lines
}

#[cfg(test)]
mod tests {
    use super::origin_form;

    #[test]
    fn origin_form_keeps_authority_as_written() {
        assert_eq!(
            origin_form("https://Host.example:8443/mcp?q"),
            "https://Host.example:8443/"
        );
        assert_eq!(origin_form("HTTPS://a.example"), "https://a.example/");
    }
}
