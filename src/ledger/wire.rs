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
}

fn value(what: &'static str, body: &[u8]) -> Result<Value, WireError> {
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
