//! Serialized wire types: the `jidec-path-v1` record (conduct-walk.md §4.2) and the intake body
//! (§5). These are the only types whose field names are a contract with the outside; internal
//! types (`walk::assertions::Assertion`, ...) stay free to change.
//!
//! Records are turned into bytes by `serde_json::to_value` then [`crate::canonical::to_bytes`]
//! (sorted keys, Python forms), so field order here does not matter; presence does: optional
//! fields that the reference omits when unused are `skip_serializing_if`, the ones it writes as
//! `null` are plain `Option`s.

use serde::Serialize;
use serde_json::Value;

/// A full (or hash-only, after redaction) walk record.
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    pub schema: &'static str,
    pub purpose: String,
    pub walked_at: String,
    pub walker: Walker,
    pub base: String,
    pub nodes: Vec<Node>,
    pub assertions: Vec<AssertionWire>,
    pub verdict: VerdictWire,
    pub replay: Replay,
    pub witness: Witness,
    pub card_signature: Value,
    pub conduct_ext: ConductExt,
    pub prev_path_refs: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vantage_limitation: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<Context>,
    pub mode: &'static str,
    pub establishes: Vec<String>,
    pub does_not_establish: Vec<String>,
    /// A2A Terms extension findings (conduct-walker addition; outside the assertions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terms: Option<Value>,
}

/// The record filed in commitment privacy (§4.6 step 4): exactly these keys.
#[derive(Debug, Clone, Serialize)]
pub struct CommitmentRecord {
    pub schema: &'static str,
    pub purpose: String,
    pub walked_at: String,
    pub walker: Walker,
    pub base: String,
    pub witness: Witness,
    pub mode: &'static str,
    pub commitment: String,
    pub commitment_recipe: &'static str,
    pub establishes: Vec<String>,
    pub does_not_establish: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Walker {
    pub tool: String,
    pub version: String,
}

impl Walker {
    /// This walker's self-identification (an allowed difference from the reference).
    pub fn this() -> Self {
        Walker {
            tool: "conduct-walker".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Node {
    Fetch(FetchNode),
    Compute(ComputeNode),
}

#[derive(Debug, Clone, Serialize)]
pub struct FetchNode {
    pub n: u8,
    pub kind: &'static str,
    pub request: FetchRequest,
    pub response: FetchResponse,
    pub duration_ms: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct FetchRequest {
    pub method: String,
    pub url: String,
    pub headers_sha256: String,
    pub body_sha256: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FetchResponse {
    pub status: u16,
    pub headers_sha256: String,
    pub body_sha256: String,
    pub a2a_extensions: Option<String>,
    pub x_a2a_extensions: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ComputeNode {
    pub n: u8,
    pub kind: &'static str,
    pub label: &'static str,
    pub inputs: Vec<Value>,
    pub output_sha256: String,
    pub output_preview: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct AssertionWire {
    pub claim: String,
    pub op: &'static str,
    pub result: Option<bool>,
    pub evidence_nodes: Vec<u8>,
    pub observed_sha256: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct VerdictWire {
    pub ok: bool,
    pub outcome: &'static str,
    pub n_pass: u32,
    pub n_total: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct Replay {
    pub how: &'static str,
    pub match_means: &'static str,
    pub mismatch_means: &'static str,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Witness {
    pub name: String,
    pub vantage: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_url: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConductExt {
    pub uri: &'static str,
    pub declared_uri: Option<String>,
    pub mode: &'static str,
    pub wire: Option<&'static str>,
    pub conduct_record: Option<Value>,
    pub witness_intake: Option<Value>,
    pub target: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Context {
    pub contract_sha256: String,
}

/// `POST /witness` body (§5): the exact string filed, and the signature when signing.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct IntakeSubmission {
    pub record_canonical: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature_ed25519_b64: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_key_ed25519_b64: Option<String>,
}
