//! Exact strings of the A2A Conduct Extension v1.4 walk (conduct-walk.md). Each lives here once,
//! beside its section number, so a grep for a phrase lands on the rule that uses it.

/// §1.1 canonical identifier (EXT).
pub const EXT: &str = "https://gate.horizonshield.dev/ext/conduct/v1";
/// §1.1 permanent identifier (PERMA), accepted since v1.2.
pub const PERMA: &str = "https://w3id.org/horizonshield/conduct/v1";
/// §1.1 the closed set of accepted identifiers (exact byte equality).
pub const ACCEPTED_URIS: [&str; 2] = [EXT, PERMA];

/// §2.1 the card's location under the origin.
/// The eight assertions, in the order a record lists them (conduct-walk.md §3). What reads
/// records by assertion (the status pages' timeline) takes the names from here.
pub const ASSERTION_NAMES: [&str; 8] = [
    "card_bytes_stable",
    "conduct_ext_declared",
    "compensation_well_formed",
    "measured_endpoint_answered",
    "payment_required_as_declared",
    "extension_echoed",
    "metadata_echoed",
    "endpoint_bound",
];

pub const CARD_PATH: &str = "/.well-known/agent-card.json";

/// §2.6 request bodies, byte for byte (Python's default separators).
pub const BODY_MCP_INITIALIZE: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "a2a_conduct_walk", "version": "1"}}}"#;
pub const BODY_A2A_1_0: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "conduct-walk-1", "role": "ROLE_USER", "parts": [{"text": "a2a-conduct-walk-v1: reading the conduct pointers of this agent"}]}}}"#;
pub const BODY_A2A_0_3: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {"messageId": "conduct-walk-1", "role": "user", "kind": "message", "parts": [{"kind": "text", "text": "a2a-conduct-walk-v1: reading the conduct pointers of this agent"}]}}}"#;

/// witness-pool.md §6.4 (ours, §11.6): the n3 message metadata key a scheduled A2A walk adds
/// when `[witness] caller_card` is set, asking the agent to walk us back.
pub const CALLER_CARD_KEY: &str = "https://gate.horizonshield.dev/ext/conduct/v1/caller_card";
/// §11.6: the reply metadata key carrying the agent's `scheduled` / `declined` answer to it.
pub const RECIPROCAL_KEY: &str = "https://gate.horizonshield.dev/ext/conduct/v1/reciprocal";
/// The longest `EXT/reciprocal` value kept beside a record (in characters): the spec's values
/// are two short words, anything longer is a stranger's text and only needs recognising.
pub const RECIPROCAL_MAX_CHARS: usize = 64;

/// §2.4 the n2 compute node label.
pub const N2_LABEL: &str = "locate https://gate.horizonshield.dev/ext/conduct/v1 in node 1 and validate params (section 2 of CONDUCT_EXT_v1.md)";

/// §1.4 problem strings, in the order they accumulate.
pub const PROBLEM_CARD_NOT_OBJECT: &str = "card is not a JSON object";
pub const PROBLEM_EXTENSIONS_NOT_ARRAY: &str = "capabilities.extensions is not an array";
pub const PROBLEM_NOT_DECLARED: &str = "extension URI not declared";
pub const PROBLEM_PARAMS_NOT_OBJECT: &str = "params is not an object";
pub const PROBLEM_COMPENSATION_NOT_OBJECT: &str = "compensation is not an object";
pub const PROBLEM_PAID_BY: &str =
    "paid_by not one of buyer,seller,referral,advertising,subscription,public,other";
pub const PROBLEM_REFERRAL_FEE: &str = "referral_fee not boolean";
pub const PROBLEM_LISTING_FEE: &str = "listing_fee not boolean";
pub const PROBLEM_SUCCESS_FEE: &str = "success_fee_pct not a number in 0..100";
pub const PROBLEM_DISCLOSURE_URL: &str = "disclosure_url not a string";
pub const PROBLEM_MEASURED_ENDPOINTS: &str =
    "measured_endpoints missing, empty, or not https strings";
pub const PROBLEM_CONDUCT_RECORD: &str = "conduct_record missing or not https";
pub const PROBLEM_WITNESS_INTAKE: &str = "witness_intake missing or not https";
/// Node 2's note when a value the record writes or hashes from the card's declaration held a
/// lone surrogate escape: the reference crashes there and writes no record (§8.3 item 23).
pub const NOTE_LONE_SURROGATE: &str = "the card holds a lone surrogate escape, written as U+FFFD";
pub const PROBLEM_REQUIRED_TRUE: &str =
    "declared required: true (a data-only extension must not be)";
pub const PROBLEM_TOP_LEVEL_DISAGREES: &str =
    "top-level compensation disagrees with params.compensation";

/// §1.4 step 5: the closed set of `paid_by` values.
pub const PAID_BY_VALUES: [&str; 7] = [
    "buyer",
    "seller",
    "referral",
    "advertising",
    "subscription",
    "public",
    "other",
];
/// §1.4 step 10: the five keys compared between the two compensation copies.
pub const AGREEMENT_KEYS: [&str; 5] = [
    "paid_by",
    "referral_fee",
    "listing_fee",
    "success_fee_pct",
    "disclosure_url",
];

/// §2.6.1 n3's `Accept` in mcp mode under each request profile.
pub const ACCEPT_JSON: &str = "application/json";
pub const ACCEPT_MCP_STREAMABLE_HTTP: &str = "application/json, text/event-stream";
/// §2.6.1 the JSON-RPC id of the one request n3 sends (the response event to wait for).
pub const N3_JSONRPC_ID: i64 = 1;

/// §4.2 fixed `replay` strings (`how` names this walker and, §2.6.1, the request profile).
pub const REPLAY_HOW_SPEC: &str = "re-run conduct-walker (request profile spec) against base with the same mode; recompute every node body_sha256 and re-evaluate assertions";
pub const REPLAY_HOW_REFERENCE: &str = "re-run conduct-walker (request profile reference) against base with the same mode; recompute every node body_sha256 and re-evaluate assertions";
pub const REPLAY_MATCH_MEANS: &str =
    "the card and the endpoint answer the same bytes as when this walk was anchored";
pub const REPLAY_MISMATCH_MEANS: &str = "the live agent now differs from the anchored observation; a changed card is a finding, not an error in the walk";

/// §4.2 the record schema and purpose prefix (they belong to the record's wire form).
pub use crate::wire::{PURPOSE_PREFIX, SCHEMA};

/// The published reference walker whose records ours match byte for byte (conduct-walk.md "How
/// to read this", item 4), and the SDK it runs with. Bump with the oracle's pin
/// (tests/reference/requirements.txt) when a new version is followed: docs/auditor.md "Conformance".
pub const REFERENCE_WALKER: &str = "a2a-conduct-walk 1.5.0";
pub const REFERENCE_SDK: &str = "a2a-sdk 1.3.0";
/// What `conduct-walker --version` prints (a literal: `concat!` takes no consts).
pub const VERSION_TEXT: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (records match the reference walker a2a-conduct-walk 1.5.0 run with a2a-sdk 1.3.0)"
);

#[cfg(test)]
mod version_tests {
    #[test]
    fn version_text_names_the_reference_pin() {
        assert!(super::VERSION_TEXT.contains(super::REFERENCE_WALKER));
        assert!(super::VERSION_TEXT.contains(super::REFERENCE_SDK));
    }
}
