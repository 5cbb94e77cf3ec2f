//! Serialized wire types: the `jidec-path-v1` record (conduct-walk.md §4.2) and the intake body
//! (§5). These are the only types whose field names are a contract with the outside; internal
//! types (`walk::assertions::Assertion`, ...) stay free to change.
//!
//! Records are written straight to canonical bytes by [`crate::canonical::to_bytes_of`], which
//! streams only when fields arrive in canonical (code point) order: so **fields are declared
//! in alphabetical order** here (a test checks each record shape streams). Out of order still
//! gives the right bytes, through a slower path. Presence matters: optional fields that the
//! reference omits when unused are `skip_serializing_if`, the ones it writes as `null` are
//! plain `Option`s.

use serde::Serialize;
use serde_json::Value;

/// §4.2 the record schema.
pub const SCHEMA: &str = "jidec-path-v1";
/// §4.2 the purpose prefix the walker writes before the walked endpoint.
pub const PURPOSE_PREFIX: &str = "a2a-conduct-walk-v1: ";

/// The intake's `^a2a-conduct-walk-v1:\s*(\S+)` (§6.5): the walked endpoint a purpose names.
pub fn endpoint_from_purpose(purpose: &str) -> Option<&str> {
    // The prefix the walker writes, without its space: the intake's regex allows none or many.
    let rest = purpose
        .strip_prefix(PURPOSE_PREFIX.trim_end())?
        .trim_start();
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// A full (or hash-only, after redaction) walk record.
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    pub assertions: Vec<AssertionWire>,
    pub base: String,
    pub card_signature: Value,
    pub conduct_ext: ConductExt,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<Context>,
    pub does_not_establish: Vec<String>,
    pub establishes: Vec<String>,
    pub mode: &'static str,
    pub nodes: Vec<Node>,
    pub prev_path_refs: Vec<Value>,
    pub purpose: String,
    pub replay: Replay,
    pub schema: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vantage_limitation: Option<String>,
    pub verdict: VerdictWire,
    pub walked_at: String,
    pub walker: Walker,
    pub witness: Witness,
}

/// The record filed in commitment privacy (§4.6 step 4): exactly these keys.
#[derive(Debug, Clone, Serialize)]
pub struct CommitmentRecord {
    pub base: String,
    pub commitment: String,
    pub commitment_recipe: &'static str,
    pub does_not_establish: Vec<String>,
    pub establishes: Vec<String>,
    pub mode: &'static str,
    pub purpose: String,
    pub schema: &'static str,
    pub walked_at: String,
    pub walker: Walker,
    pub witness: Witness,
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
    pub duration_ms: u64,
    pub kind: &'static str,
    pub n: u8,
    pub request: FetchRequest,
    pub response: FetchResponse,
}

/// A fetch node's request. In hash-only privacy (§4.5) the request is redacted: `method`
/// is `REDACTED`, `url` is `scheme://authority/`, and both hashes are left out entirely.
#[derive(Debug, Clone)]
pub struct FetchRequest {
    pub body_sha256: Option<String>,
    pub headers_sha256: String,
    pub method: String,
    pub url: String,
    /// §4.5: write neither `body_sha256` nor `headers_sha256` (the caller redacts the rest).
    pub hashes_withheld: bool,
}

impl Serialize for FetchRequest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut st = s.serialize_struct("FetchRequest", 4)?;
        if !self.hashes_withheld {
            st.serialize_field("body_sha256", &self.body_sha256)?;
            st.serialize_field("headers_sha256", &self.headers_sha256)?;
        }
        st.serialize_field("method", &self.method)?;
        st.serialize_field("url", &self.url)?;
        st.end()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct FetchResponse {
    pub a2a_extensions: Option<String>,
    pub body_sha256: String,
    pub headers_sha256: String,
    pub status: u16,
    pub x_a2a_extensions: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ComputeNode {
    pub inputs: Vec<Value>,
    pub kind: &'static str,
    pub label: &'static str,
    pub n: u8,
    pub output_preview: String,
    pub output_sha256: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct AssertionWire {
    pub claim: String,
    pub evidence_nodes: Vec<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub observed_sha256: String,
    pub op: &'static str,
    pub result: Option<bool>,
}

#[derive(Debug, Clone, Serialize)]
pub struct VerdictWire {
    pub n_pass: u32,
    pub n_total: u32,
    pub ok: bool,
    pub outcome: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct Replay {
    pub how: &'static str,
    pub match_means: &'static str,
    pub mismatch_means: &'static str,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Witness {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_url: Option<String>,
    pub name: String,
    pub vantage: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConductExt {
    pub conduct_record: Option<Value>,
    pub declared_uri: Option<String>,
    pub mode: &'static str,
    pub target: Option<String>,
    pub uri: &'static str,
    pub wire: Option<&'static str>,
    pub witness_intake: Option<Value>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::{to_bytes, try_stream};
    use serde_json::json;

    fn fetch(n: u8, withheld: bool) -> Node {
        Node::Fetch(FetchNode {
            duration_ms: 12,
            kind: "fetch",
            n,
            request: FetchRequest {
                body_sha256: (n == 3).then(|| "b".repeat(64)),
                headers_sha256: "h".repeat(64),
                method: if withheld { "REDACTED" } else { "GET" }.into(),
                url: "https://agent.example/.well-known/agent-card.json".into(),
                hashes_withheld: withheld,
            },
            response: FetchResponse {
                a2a_extensions: Some("https://x.example/ext".into()),
                body_sha256: "r".repeat(64),
                headers_sha256: "s".repeat(64),
                status: 200,
                x_a2a_extensions: None,
            },
        })
    }

    fn witness() -> Witness {
        Witness {
            key_url: Some("https://w.example/key".into()),
            name: "w".into(),
            vantage: "v".into(),
        }
    }

    fn record(withheld: bool) -> Record {
        Record {
            assertions: vec![AssertionWire {
                claim: "c \"quoted\" é".into(),
                evidence_nodes: vec![0, 1],
                note: Some("n".into()),
                observed_sha256: "o".repeat(64),
                op: "eq",
                result: None,
            }],
            base: "https://agent.example".into(),
            card_signature: json!({"present": true, "verified": null, "jku": "https://k", "n": 1.5}),
            conduct_ext: ConductExt {
                conduct_record: Some(json!({"z": [1, 2], "a": "x"})),
                declared_uri: Some("u".into()),
                mode: "a2a",
                target: Some("https://agent.example/a2a".into()),
                uri: "u",
                wire: Some("1.0"),
                witness_intake: Some(json!(7)),
            },
            context: Some(Context {
                contract_sha256: "c".repeat(64),
            }),
            does_not_establish: vec!["d".into()],
            establishes: vec!["e".into()],
            mode: "full",
            nodes: vec![
                fetch(0, withheld),
                Node::Compute(ComputeNode {
                    inputs: vec![json!({"from_node": 1})],
                    kind: "compute",
                    label: "l",
                    n: 2,
                    output_preview: "p".into(),
                    output_sha256: "q".repeat(64),
                }),
                fetch(3, withheld),
            ],
            prev_path_refs: vec![],
            purpose: "p".into(),
            replay: Replay {
                how: "h",
                match_means: "m",
                mismatch_means: "x",
            },
            schema: "jidec-path-v1",
            vantage_limitation: Some("vl".into()),
            verdict: VerdictWire {
                n_pass: 7,
                n_total: 8,
                ok: false,
                outcome: "FAIL",
            },
            walked_at: "2026-11-30T08:00:00Z".into(),
            walker: Walker::this(),
            witness: witness(),
        }
    }

    /// Every record shape takes the streaming path (fields declared in canonical order), and
    /// its bytes equal the general path's.
    #[test]
    fn record_shapes_stream_in_canonical_order() {
        for withheld in [false, true] {
            let r = record(withheld);
            let streamed = try_stream(&r).expect("Record fields are declared in order");
            assert_eq!(streamed, to_bytes(&serde_json::to_value(&r).unwrap()));
        }
        let c = CommitmentRecord {
            base: "b".into(),
            commitment: "c".repeat(64),
            commitment_recipe: "r",
            does_not_establish: vec![],
            establishes: vec!["e".into()],
            mode: "commitment",
            purpose: "p".into(),
            schema: "jidec-path-v1",
            walked_at: "t".into(),
            walker: Walker::this(),
            witness: witness(),
        };
        let streamed = try_stream(&c).expect("CommitmentRecord fields are declared in order");
        assert_eq!(streamed, to_bytes(&serde_json::to_value(&c).unwrap()));
    }

    #[test]
    fn withheld_request_hashes_are_absent_not_null() {
        let Node::Fetch(node) = fetch(3, true) else {
            unreachable!()
        };
        let text = String::from_utf8(try_stream(&node.request).unwrap()).unwrap();
        assert_eq!(
            text,
            r#"{"method":"REDACTED","url":"https://agent.example/.well-known/agent-card.json"}"#
        );
    }
}
