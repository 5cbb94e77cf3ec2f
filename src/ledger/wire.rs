//! The ledger's read side as a monitor reads it (ledger.md §2–§5): serde types for the
//! `/witness/<sha>` answers, `/ledger/head`, a ledger entry's JSON view, an export line and the
//! batch / checkpoint text an entry's raw bytes hold.
//!
//! Unknown keys are tolerated everywhere (the worker may add some), missing required ones are
//! errors that name the key. Nothing here is ever hashed as a whole: the hashes are recomputed
//! from typed fields (`super::chain`, `super::text`), never from a served line (§2.4, §5.3).
//!
//! Bodies are parsed into a `serde_json::Value` first and typed from there, not with serde's
//! `tag`/`flatten`: those buffer numbers through serde's private content type, which the crate's
//! `arbitrary_precision` feature turns into maps, so `ledger_entry: 1` would fail to read.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why a served body could not be read as the form the route promises.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("{what}: not JSON: {detail}")]
    NotJson { what: &'static str, detail: String },
    #[error("{what}: {detail}")]
    Shape { what: &'static str, detail: String },
    #[error("{what}: unknown status {status:?}")]
    UnknownStatus { what: &'static str, status: String },
    #[error("{what}: {detail}")]
    OverCap { what: &'static str, detail: String },
}

fn value(what: &'static str, body: &[u8]) -> Result<Value, WireError> {
    use crate::json::bounded::{Input, admit};
    admit(Input::LedgerAnswer, body).map_err(|e| WireError::OverCap {
        what,
        detail: e.to_string(),
    })?;
    serde_json::from_slice(body).map_err(|e| WireError::NotJson {
        what,
        detail: e.to_string(),
    })
}

fn typed<T: for<'de> Deserialize<'de>>(what: &'static str, v: Value) -> Result<T, WireError> {
    serde_json::from_value(v).map_err(|e| WireError::Shape {
        what,
        detail: e.to_string(),
    })
}

/// The stored object of a filed record (conduct-walk.md §6.2; ledger.md §2.3 table), in the
/// order the worker writes it. Records stored before v1.1 may lack the v1.1 fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredRecord {
    pub sha: String,
    pub record_canonical: String,
    pub signed: bool,
    #[serde(default)]
    pub public_key_ed25519_b64: Option<String>,
    #[serde(default)]
    pub signed_domain: Option<String>,
    #[serde(default)]
    pub key_url: Option<String>,
    /// Absent on old records; `"full"` is what the pool and the batch assume then.
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub v11: Option<bool>,
    #[serde(default)]
    pub disclaimer_present: Option<bool>,
    #[serde(default)]
    pub endpoint: Option<String>,
    /// Absent on old records, which count (§3).
    #[serde(default)]
    pub counted: Option<bool>,
    #[serde(default)]
    pub count_reason: Option<String>,
    pub purpose: String,
    pub witness_name: String,
    pub vantage: String,
    #[serde(default)]
    pub submitted_at: Option<String>,
}

impl StoredRecord {
    /// The stored object of a counted, full-mode, unsigned record filed from `endpoint` whose
    /// bytes are not at hand (`record_canonical` is `{}`): what a batch row, a seeded intake or
    /// a fake ledger needs of it. Set the other fields with `..` where they matter.
    pub fn unsigned(sha: &str, endpoint: &str, witness_name: &str, vantage: &str) -> Self {
        StoredRecord {
            sha: sha.into(),
            record_canonical: "{}".into(),
            signed: false,
            public_key_ed25519_b64: None,
            signed_domain: None,
            key_url: None,
            mode: Some("full".into()),
            v11: Some(true),
            disclaimer_present: Some(true),
            endpoint: Some(endpoint.into()),
            counted: Some(true),
            count_reason: None,
            purpose: format!("a2a-conduct-walk-v1: {endpoint}"),
            witness_name: witness_name.into(),
            vantage: vantage.into(),
            submitted_at: None,
        }
    }

    /// The mode the batch row reflects: absent means `"full"`.
    pub fn mode_or_full(&self) -> &str {
        self.mode.as_deref().unwrap_or("full")
    }

    /// Counted unless the stored value is `false` (§3).
    pub fn is_counted(&self) -> bool {
        self.counted != Some(false)
    }
}

/// One reply of the measured party (§2.4). Not anchored, may change at any time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseRef {
    pub response_sha: String,
    pub url: String,
    pub subject_origin: String,
    pub responded_at: String,
}

/// `GET /witness/<sha>` read as one of its three answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WitnessAnswer {
    /// 404 `{"error": "not found", "sha"}` (§2.2): unknown, or refused at filing.
    NotFound { sha: String },
    /// 200 flat (§2.3).
    Pending {
        record: StoredRecord,
        responses: Vec<ResponseRef>,
    },
    /// 200 nested, six keys (§2.4). `record` is `None` when the worker's copy is missing.
    Anchored {
        sha: String,
        ledger_entry: u64,
        url: String,
        record: Option<StoredRecord>,
        responses: Vec<ResponseRef>,
    },
}

#[derive(Deserialize)]
struct StatusProbe {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    sha: Option<String>,
    #[serde(default)]
    responses: Vec<ResponseRef>,
}

#[derive(Deserialize)]
struct AnchoredWire {
    sha: String,
    ledger_entry: u64,
    url: String,
    record: Option<StoredRecord>,
}

impl WitnessAnswer {
    /// Reads a `/witness/<sha>` answer from its HTTP status and body.
    pub fn parse(http_status: u16, body: &[u8]) -> Result<Self, WireError> {
        const WHAT: &str = "GET /witness/<sha>";
        let v = value(WHAT, body)?;
        let probe: StatusProbe = typed(WHAT, v.clone())?;
        if http_status == 404 {
            return match (probe.error.as_deref(), probe.sha) {
                (Some("not found"), Some(sha)) => Ok(WitnessAnswer::NotFound { sha }),
                _ => Err(WireError::Shape {
                    what: WHAT,
                    detail: "404 without {\"error\": \"not found\", \"sha\"}".into(),
                }),
            };
        }
        if http_status != 200 {
            return Err(WireError::Shape {
                what: WHAT,
                detail: format!("HTTP {http_status}"),
            });
        }
        match probe.status.as_deref() {
            Some("pending") => Ok(WitnessAnswer::Pending {
                record: typed(WHAT, v)?,
                responses: probe.responses,
            }),
            Some("anchored") => {
                let a: AnchoredWire = typed(WHAT, v)?;
                Ok(WitnessAnswer::Anchored {
                    sha: a.sha,
                    ledger_entry: a.ledger_entry,
                    url: a.url,
                    record: a.record,
                    responses: probe.responses,
                })
            }
            Some(other) => Err(WireError::UnknownStatus {
                what: WHAT,
                status: other.to_string(),
            }),
            None => Err(WireError::Shape {
                what: WHAT,
                detail: "no \"status\"".into(),
            }),
        }
    }

    pub fn responses(&self) -> &[ResponseRef] {
        match self {
            WitnessAnswer::NotFound { .. } => &[],
            WitnessAnswer::Pending { responses, .. }
            | WitnessAnswer::Anchored { responses, .. } => responses,
        }
    }
}

/// `GET /witness/pending` (§3): the public pool, ascending sha, at most one KV page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingPool {
    pub count: u64,
    pub counted: u64,
    pub stored_not_counted: u64,
    pub pending: Vec<PoolEntry>,
}

/// One element of the pool, keys exactly as served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolEntry {
    pub sha: String,
    pub purpose: String,
    pub witness_name: String,
    pub vantage: String,
    pub signed: bool,
    pub signed_domain: Option<String>,
    pub mode: String,
    pub counted: bool,
    pub submitted_at: String,
}

impl PendingPool {
    pub fn parse(body: &[u8]) -> Result<Self, WireError> {
        const WHAT: &str = "GET /witness/pending";
        typed(WHAT, value(WHAT, body)?)
    }
}

/// `GET /ledger/head` (§5.2): 200, or 409 when the chain is broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadAnswer {
    Head(Head),
    Broken(HeadBroken),
}

/// The head object; the explanatory keys (`recipe`, `fields`, …) are not kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    pub schema: String,
    pub n: u64,
    pub head: String,
    pub root: String,
    pub chain: String,
    pub prev_entry_sha256: String,
    /// The end marker (§6.3), not an entry's hash.
    pub entry_sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeadBroken {
    pub broken_at: u64,
    pub last_linked: u64,
    #[serde(default)]
    pub head_before_break: Option<String>,
}

impl HeadAnswer {
    pub fn parse(http_status: u16, body: &[u8]) -> Result<Self, WireError> {
        const WHAT: &str = "GET /ledger/head";
        let v = value(WHAT, body)?;
        match http_status {
            200 => Ok(HeadAnswer::Head(typed(WHAT, v)?)),
            409 if v.get("error").and_then(Value::as_str) == Some("chain_broken") => {
                Ok(HeadAnswer::Broken(typed(WHAT, v)?))
            }
            other => Err(WireError::Shape {
                what: WHAT,
                detail: format!("HTTP {other}"),
            }),
        }
    }
}

/// A ledger entry's JSON view (`/ledger/<n>?format=json`, §4.3, §5.1). `schema` and
/// `created_at` enter the chain only when they are strings (§6.1 step 3), so a non-string
/// value is kept as served and read through [`LedgerEntry::schema_str`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEntry {
    pub n: u64,
    #[serde(default)]
    pub work: Option<String>,
    pub claim_sha256: String,
    #[serde(default)]
    pub record_canonical: Option<String>,
    #[serde(default)]
    pub schema: Option<Value>,
    #[serde(default)]
    pub created_at: Option<Value>,
    #[serde(default)]
    pub ots_status: Option<String>,
    #[serde(default)]
    pub bitcoin_block: Option<Value>,
    #[serde(default)]
    pub block_time: Option<Value>,
    #[serde(default)]
    pub stamped_at: Option<Value>,
    #[serde(default)]
    pub anchored_by: Option<String>,
    #[serde(default)]
    pub pending_stage: Option<String>,
    #[serde(default)]
    pub pending_hours: Option<u64>,
    #[serde(default)]
    pub pending_stale_after_hours: Option<u64>,
}

impl LedgerEntry {
    pub fn parse(body: &[u8]) -> Result<Self, WireError> {
        const WHAT: &str = "GET /ledger/<n>?format=json";
        typed(WHAT, value(WHAT, body)?)
    }

    pub fn schema_str(&self) -> Option<&str> {
        self.schema.as_ref().and_then(Value::as_str)
    }

    pub fn created_at_str(&self) -> Option<&str> {
        self.created_at.as_ref().and_then(Value::as_str)
    }

    /// What the chain covers of this entry (§6.1 step 5).
    pub fn chain_fields(&self) -> super::chain::ChainFields {
        super::chain::ChainFields {
            n: self.n,
            claim_sha256: self.claim_sha256.clone(),
            schema: self.schema_str().map(str::to_owned),
            created_at: self.created_at_str().map(str::to_owned),
        }
    }
}

/// One line of `/ledger/export.jsonl` (§5.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportLine {
    Entry(ExportRow),
    /// The end line: the head object without the explanatory keys.
    End(Head),
    /// `{"schema":"jidec-chain-broken-v1","broken_at":k,"last_linked":k−1}`.
    Broken {
        broken_at: u64,
        last_linked: u64,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportRow {
    pub n: u64,
    pub claim_sha256: String,
    pub prev_entry_sha256: String,
    #[serde(default)]
    pub schema: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
    pub entry_sha256: String,
}

impl ExportRow {
    pub fn chain_fields(&self) -> super::chain::ChainFields {
        super::chain::ChainFields {
            n: self.n,
            claim_sha256: self.claim_sha256.clone(),
            schema: self.schema.clone(),
            created_at: self.created_at.clone(),
        }
    }
}

impl ExportLine {
    /// Reads one line (without its `\n`).
    pub fn parse(line: &[u8]) -> Result<Self, WireError> {
        const WHAT: &str = "export.jsonl line";
        let v = value(WHAT, line)?;
        match v.get("schema").and_then(Value::as_str) {
            Some(super::HEAD_SCHEMA) => Ok(ExportLine::End(typed(WHAT, v)?)),
            Some("jidec-chain-broken-v1") => {
                let b: HeadBroken = typed(WHAT, v)?;
                Ok(ExportLine::Broken {
                    broken_at: b.broken_at,
                    last_linked: b.last_linked,
                })
            }
            _ => Ok(ExportLine::Entry(typed(WHAT, v)?)),
        }
    }
}

/// The chain head a batch or checkpoint carries (`ledger_head`, §4.4, §4.5). Field order is the
/// batch text's insertion order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CarriedHead {
    Linked {
        chain: String,
        n: u64,
        entry_sha256: String,
        /// Checkpoints only.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        marker_sha256: Option<String>,
    },
    Broken {
        chain: String,
        broken_at: u64,
        last_linked: u64,
    },
}

/// One row of a batch (§4.4): `signed_domain` only if set, `mode` only if not `"full"`,
/// `counted` only when `false`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchRow {
    pub sha: String,
    pub purpose: String,
    pub witness_name: String,
    pub vantage: String,
    pub signed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_domain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<bool>,
}

impl BatchRow {
    /// The row the worker writes for a stored record.
    pub fn of(record: &StoredRecord) -> Self {
        BatchRow {
            sha: record.sha.clone(),
            purpose: record.purpose.clone(),
            witness_name: record.witness_name.clone(),
            vantage: record.vantage.clone(),
            signed: record.signed,
            signed_domain: record.signed_domain.clone(),
            mode: Some(record.mode_or_full())
                .filter(|m| *m != "full")
                .map(str::to_owned),
            counted: (!record.is_counted()).then_some(false),
        }
    }

    pub fn mode_or_full(&self) -> &str {
        self.mode.as_deref().unwrap_or("full")
    }

    pub fn is_counted(&self) -> bool {
        self.counted != Some(false)
    }
}

/// A `nenrin-witness-batch-v1` text (§4.4), keys in insertion order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batch {
    pub schema: String,
    pub anchored_at: String,
    pub count: u64,
    pub ledger_head: CarriedHead,
    pub records: Vec<BatchRow>,
}

/// A `nenrin-head-checkpoint-v1` text (§4.5), keys in insertion order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub schema: String,
    pub anchored_at: String,
    pub ledger_head: CarriedHead,
    pub note: String,
}

/// What an entry's raw bytes hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryText {
    Batch(Batch),
    Checkpoint(Checkpoint),
    /// Another kind of entry (the worker's other pools): only its `schema`, if any.
    Other {
        schema: Option<String>,
    },
}

impl EntryText {
    pub fn parse(raw: &[u8]) -> Result<Self, WireError> {
        const WHAT: &str = "ledger entry bytes";
        let v = value(WHAT, raw)?;
        match v.get("schema").and_then(Value::as_str) {
            Some(super::BATCH_SCHEMA) => Ok(EntryText::Batch(typed(WHAT, v)?)),
            Some(super::CHECKPOINT_SCHEMA) => Ok(EntryText::Checkpoint(typed(WHAT, v)?)),
            other => Ok(EntryText::Other {
                schema: other.map(str::to_owned),
            }),
        }
    }

    /// The chain head this text carries, if it is a batch or a checkpoint.
    pub fn carried_head(&self) -> Option<&CarriedHead> {
        match self {
            EntryText::Batch(b) => Some(&b.ledger_head),
            EntryText::Checkpoint(c) => Some(&c.ledger_head),
            EntryText::Other { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The spec's observed answers (ledger.md §2–§5), pretty-printed as the worker serves them;
    // values the spec shortens with `…` are filled in full.
    const SHA_A: &str = "1711aa6d00000000000000000000000000000000000000000000000000006bf9a9";
    const HEAD_1: &str = "fa548cc57ce7819dfb71e394f2f56f3995f02a18639afb962f04a581d785dd06";

    fn pending_body() -> String {
        format!(
            r#"{{
  "status": "pending",
  "sha": "{SHA_A}",
  "record_canonical": "{{\"assertions\":[],\"mode\":\"full\"}}",
  "signed": false,
  "public_key_ed25519_b64": null,
  "signed_domain": null,
  "key_url": null,
  "mode": "full",
  "v11": true,
  "disclaimer_present": true,
  "endpoint": "https://agent-obs1-a.example/a2a",
  "counted": true,
  "count_reason": null,
  "purpose": "a2a-conduct-walk-v1: https://agent-obs1-a.example/a2a",
  "witness_name": "obs-witness",
  "vantage": "probe obs1 #1",
  "submitted_at": "2026-12-01T13:25:09.865Z",
  "responses": []
}}"#
        )
    }

    /// §2.3: the flat pending form of record A.
    #[test]
    fn observed_2_3_pending_answer() {
        let WitnessAnswer::Pending { record, responses } =
            WitnessAnswer::parse(200, pending_body().as_bytes()).unwrap()
        else {
            panic!("not pending")
        };
        assert_eq!(record.sha, SHA_A);
        assert_eq!(
            record.record_canonical,
            r#"{"assertions":[],"mode":"full"}"#
        );
        assert!(!record.signed);
        assert_eq!(record.mode_or_full(), "full");
        assert!(record.is_counted());
        assert_eq!(record.witness_name, "obs-witness");
        assert_eq!(
            record.submitted_at.as_deref(),
            Some("2026-12-01T13:25:09.865Z")
        );
        assert!(responses.is_empty());
    }

    /// §2.4: the nested anchored form (six keys), `record` identical to the pending answer
    /// minus `status` and `responses`; replies carried in `responses`.
    #[test]
    fn observed_2_4_anchored_answer_with_a_reply() {
        let pending: Value = serde_json::from_str(&pending_body()).unwrap();
        let mut record = pending.as_object().unwrap().clone();
        record.remove("status");
        record.remove("responses");
        let body = serde_json::to_string_pretty(&serde_json::json!({
            "status": "anchored", "sha": SHA_A, "ledger_entry": 1,
            "url": "https://127.0.0.1:46043/ledger/1", "record": record,
            "responses": [{"response_sha": "ab".repeat(32),
                           "url": format!("https://127.0.0.1:46043/response/{}", "ab".repeat(32)),
                           "subject_origin": "https://agent-obs1-a.example",
                           "responded_at": "2026-12-02T08:00:00Z"}],
        }))
        .unwrap();
        let WitnessAnswer::Pending { record: stored, .. } =
            WitnessAnswer::parse(200, pending_body().as_bytes()).unwrap()
        else {
            panic!()
        };
        let answer = WitnessAnswer::parse(200, body.as_bytes()).unwrap();
        let WitnessAnswer::Anchored {
            sha,
            ledger_entry,
            url,
            record,
            responses,
        } = &answer
        else {
            panic!("not anchored")
        };
        assert_eq!(sha, SHA_A);
        assert_eq!(*ledger_entry, 1);
        assert_eq!(url, "https://127.0.0.1:46043/ledger/1");
        assert_eq!(record.as_ref(), Some(&stored));
        assert_eq!(responses.len(), 1);
        assert_eq!(
            answer.responses()[0].subject_origin,
            "https://agent-obs1-a.example"
        );
    }

    /// §2.4: `record` is null when the worker's copy is missing; §2.2: the 404 answer.
    #[test]
    fn observed_2_2_not_found_and_anchored_without_copy() {
        let nf = format!("{{\n  \"error\": \"not found\",\n  \"sha\": \"{SHA_A}\"\n}}");
        assert_eq!(
            WitnessAnswer::parse(404, nf.as_bytes()).unwrap(),
            WitnessAnswer::NotFound { sha: SHA_A.into() }
        );
        let body = format!(
            r#"{{"status": "anchored", "sha": "{SHA_A}", "ledger_entry": 4, "url": "u", "record": null, "responses": []}}"#
        );
        assert!(matches!(
            WitnessAnswer::parse(200, body.as_bytes()).unwrap(),
            WitnessAnswer::Anchored {
                record: None,
                ledger_entry: 4,
                ..
            }
        ));
    }

    /// Garbage is an error naming what was wrong, never a guess.
    #[test]
    fn unreadable_witness_answers_are_errors() {
        let e = WitnessAnswer::parse(200, b"<html>").unwrap_err();
        assert!(e.to_string().contains("not JSON"), "{e}");
        let e = WitnessAnswer::parse(200, br#"{"status": "stamped"}"#).unwrap_err();
        assert!(matches!(e, WireError::UnknownStatus { .. }));
        let e = WitnessAnswer::parse(200, br#"{"status": "anchored", "sha": "x"}"#).unwrap_err();
        assert!(e.to_string().contains("ledger_entry"), "{e}");
        let generic = br#"{"error": "not found", "routes": ["/ledger"]}"#;
        assert!(WitnessAnswer::parse(404, generic).is_err());
    }

    /// §3: the pool, in the observed shape (one element shown).
    #[test]
    fn observed_3_pending_pool() {
        let body = format!(
            r#"{{
  "count": 1,
  "counted": 1,
  "stored_not_counted": 0,
  "pending": [
    {{
      "sha": "{SHA_A}",
      "purpose": "a2a-conduct-walk-v1: https://agent-obs1-a.example/a2a",
      "witness_name": "obs-witness",
      "vantage": "probe obs1 #1",
      "signed": false,
      "signed_domain": null,
      "mode": "full",
      "counted": true,
      "submitted_at": "2026-12-01T13:25:09.865Z"
    }}
  ],
  "caps": {{"daily_global": 500, "daily_per_ip": 5, "daily_per_domain": 50}},
  "note": "public pool; bundled into a ledger entry daily at 00:30 UTC by schedule when not empty"
}}"#
        );
        let pool = PendingPool::parse(body.as_bytes()).unwrap();
        assert_eq!(
            (pool.count, pool.counted, pool.stored_not_counted),
            (1, 1, 0)
        );
        assert_eq!(pool.pending[0].sha, SHA_A);
        assert_eq!(pool.pending[0].signed_domain, None);
    }

    /// §5.2: the head at n = 1 (explanatory keys ignored) and the 409 broken form.
    #[test]
    fn observed_5_2_head_and_broken_head() {
        let body = format!(
            r#"{{
  "schema": "jidec-head-v1",
  "n": 1,
  "head": "{HEAD_1}",
  "root": "{root}",
  "chain": "jidec-chain-v1",
  "prev_entry_sha256": "{HEAD_1}",
  "entry_sha256": "7f0e7e9700000000000000000000000000000000000000000000000003c74f41d",
  "recipe": "entry_sha256 = sha256(canon({{n, schema, claim_sha256, created_at, prev_entry_sha256}}))",
  "fields": ["n", "schema", "claim_sha256", "created_at", "prev_entry_sha256"],
  "marker_fields": ["n", "schema", "prev_entry_sha256", "head"],
  "export": "https://127.0.0.1:46043/ledger/export.jsonl",
  "does_not_establish": ["that every submission the ledger received was appended"]
}}"#,
            root = super::super::chain::ROOT
        );
        let HeadAnswer::Head(head) = HeadAnswer::parse(200, body.as_bytes()).unwrap() else {
            panic!()
        };
        assert_eq!((head.n, head.head.as_str()), (1, HEAD_1));
        assert_eq!(head.prev_entry_sha256, HEAD_1);
        let broken = format!(
            r#"{{"schema": "jidec-head-v1", "chain": "jidec-chain-v1", "error": "chain_broken", "broken_at": 2, "last_linked": 1, "head_before_break": "{HEAD_1}"}}"#
        );
        assert_eq!(
            HeadAnswer::parse(409, broken.as_bytes()).unwrap(),
            HeadAnswer::Broken(HeadBroken {
                broken_at: 2,
                last_linked: 1,
                head_before_break: Some(HEAD_1.into())
            })
        );
        assert!(HeadAnswer::parse(409, br#"{"error": "other"}"#).is_err());
    }

    /// §5.1: entry 3's JSON view as observed, with the `pending_*` keys.
    #[test]
    fn observed_5_1_entry_json_view() {
        let body = br#"{
  "n": 3,
  "work": "NENRIN head checkpoint (entries 1..2)",
  "claim_sha256": "95368077b0c04041ef29b2cfcac79a74da5e7c6723a41c1d6d330b365f82e6e1",
  "record_canonical": "{}",
  "schema": "v0-plain",
  "created_at": "2026-12-01T13:25:30.651Z",
  "ots_status": "unstamped",
  "bitcoin_block": null,
  "block_time": null,
  "stamped_at": null,
  "anchored_by": "schedule",
  "pending_stage": "fresh",
  "pending_hours": 0,
  "pending_stale_after_hours": 6
}"#;
        let e = LedgerEntry::parse(body).unwrap();
        assert_eq!(e.n, 3);
        assert_eq!(e.anchored_by.as_deref(), Some("schedule"));
        assert_eq!(e.pending_stale_after_hours, Some(6));
        let f = e.chain_fields();
        assert_eq!(f.schema.as_deref(), Some("v0-plain"));
        assert_eq!(f.created_at.as_deref(), Some("2026-12-01T13:25:30.651Z"));
        // §6.1 step 3: a non-string schema is omitted from the chain, an old entry may lack both.
        let odd = LedgerEntry::parse(br#"{"n": 1, "claim_sha256": "c", "schema": 5}"#).unwrap();
        assert_eq!(odd.chain_fields().schema, None);
        assert_eq!(odd.chain_fields().created_at, None);
        // §6.1 step 2: no string claim_sha256 is unreadable (the chain is broken there).
        assert!(LedgerEntry::parse(br#"{"n": 1, "claim_sha256": 7}"#).is_err());
    }

    /// §5.3: an entry line (observed line 1), the end line and the broken line.
    #[test]
    fn observed_5_3_export_lines() {
        let root = super::super::chain::ROOT;
        let line = format!(
            r#"{{"n":1,"claim_sha256":"c85dbef09ad8e4e789f090374efd30abbfd7f64af4a8c644292333094d59fec4","prev_entry_sha256":"{root}","schema":"v0-plain","created_at":"2026-12-01T13:25:16.153Z","entry_sha256":"{HEAD_1}"}}"#
        );
        let ExportLine::Entry(row) = ExportLine::parse(line.as_bytes()).unwrap() else {
            panic!()
        };
        assert_eq!(row.n, 1);
        assert_eq!(row.entry_sha256, HEAD_1);
        // The row's fields give the observed head; the line itself is never hashed.
        assert_eq!(
            super::super::chain::entry_sha256(&row.chain_fields(), &row.prev_entry_sha256),
            HEAD_1
        );
        let end = format!(
            r#"{{"schema":"jidec-head-v1","n":1,"head":"{HEAD_1}","root":"{root}","chain":"jidec-chain-v1","prev_entry_sha256":"{HEAD_1}","entry_sha256":"{m}"}}"#,
            m = super::super::chain::marker_sha256(1, HEAD_1)
        );
        assert!(
            matches!(ExportLine::parse(end.as_bytes()).unwrap(), ExportLine::End(h) if h.n == 1)
        );
        assert_eq!(
            ExportLine::parse(
                br#"{"schema":"jidec-chain-broken-v1","broken_at":2,"last_linked":1}"#
            )
            .unwrap(),
            ExportLine::Broken {
                broken_at: 2,
                last_linked: 1
            }
        );
    }

    /// §4.4: a batch whose chain was broken carries `{chain, broken_at, last_linked}`; an
    /// entry of another pool is `Other`.
    #[test]
    fn batch_with_broken_head_and_other_entries() {
        let text = br#"{"schema":"nenrin-witness-batch-v1","anchored_at":"2026-12-01T00:30:00.000Z","count":0,"ledger_head":{"chain":"jidec-chain-v1","broken_at":3,"last_linked":2},"records":[]}"#;
        let EntryText::Batch(b) = EntryText::parse(text).unwrap() else {
            panic!()
        };
        assert!(matches!(
            b.ledger_head,
            CarriedHead::Broken { broken_at: 3, .. }
        ));
        assert_eq!(
            EntryText::parse(br#"{"schema":"other-pool-v1"}"#).unwrap(),
            EntryText::Other {
                schema: Some("other-pool-v1".into())
            }
        );
    }
}
