//! A record's page: the walk, the checks made again here (sha, signature, chain link), the
//! card signature, the commitment and its reveal, alerts, intake answers, task binding, ledger
//! life, and the record itself.

use crate::pages::{alerts, ledger};
use crate::store::outbox::{self, Submission};
use crate::store::status::{self, Attempt, ChainRow};
use crate::store::task_bindings::TaskBinding;
use crate::store::{Store, StoreError, StoredRecord};
use rusqlite::Connection;

/// A record's page.
#[derive(Debug, Clone)]
pub struct RecordView {
    pub stored: StoredRecord,
    /// The record, parsed (`Null` when its bytes are not JSON).
    pub value: serde_json::Value,
    pub checks: Checks,
    /// The full record a commitment keeps: its sha and, when revealed, its row `(id,
    /// inserted_at)`.
    pub revealed: Option<(String, Option<(i64, String)>)>,
    /// The commitment this full record opens: `(sha256, id)`.
    pub opens: Option<(String, i64)>,
    /// The daemon fire that stored it: `(target, started_at)`.
    pub fire: Option<(String, String)>,
    pub alerts: alerts::RecordAlerts,
    /// Each submission with the intake's answers.
    pub submissions: Vec<(Submission, Vec<Attempt>)>,
    pub binding: Option<TaskBinding>,
    pub ledger: ledger::RecordLife,
    /// conduct-walker's own card-signature check, kept beside the record.
    pub own_card_check: Option<serde_json::Value>,
    /// The agent's `EXT/reciprocal` answer to our caller card, kept beside the record.
    pub reciprocal: Option<String>,
    /// The §11.5 notification after the walk (`None`: `notify_status: null`); never part of
    /// the record's bytes.
    pub notify_status: Option<serde_json::Value>,
    /// Every signature the store made for it (the walk's, and one per key it was filed
    /// under after a rotation), each with what the key history says of its key (`None`: no
    /// history kept, or the key is not listed).
    pub signatures: Vec<KeyedSignature>,
}

/// The record checked again as the page is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checks {
    pub sha_ok: bool,
    /// `Ok(None)`: unsigned; `Err`: why the signature does not verify.
    pub signature: Result<Option<()>, String>,
    pub chain_ok: bool,
    pub prev: Option<ChainRow>,
    pub next: Option<ChainRow>,
}

pub fn record(store: &Store, prefix: &str) -> Result<RecordView, StoreError> {
    let stored = store.get_by_prefix(prefix)?;
    let conn = store.connection();
    let row = &stored.row;
    let checks = checks(conn, &stored)?;
    let revealed = match &stored.kept_full {
        Some(k) => {
            let sha = crate::digest::sha256_hex(&k.canonical);
            let row = store
                .get_by_sha256(&sha)?
                .map(|s| (s.row.id, s.row.inserted_at));
            Some((sha, row))
        }
        None => None,
    };
    let mut submissions = Vec::new();
    for s in outbox::for_record(conn, row.id)? {
        let tries = status::attempts(conn, s.id)?;
        submissions.push((s, tries));
    }
    let fire = status::fire_of_record(conn, row.id)?;
    let alerts = alerts::for_record(conn, &row.sha256, fire.as_ref().map(|(t, _)| t.as_str()))?;
    let beside = crate::store::beside::get(conn, row.id)?;
    Ok(RecordView {
        value: crate::json::parse_lenient(&stored.canonical).unwrap_or(serde_json::Value::Null),
        checks,
        revealed,
        opens: status::commitment_opened_by(conn, &row.sha256)?,
        fire,
        alerts,
        submissions,
        binding: crate::store::task_bindings::for_record(conn, row.id)?,
        ledger: ledger::record_life(conn, row.id, &row.sha256)?,
        own_card_check: beside.card_verification,
        reciprocal: beside.reciprocal,
        notify_status: crate::store::notifications::status_of_record(conn, row.id)?,
        signatures: signatures(conn, row.id)?,
        stored,
    })
}

/// The record's signatures, each with its key's label and status in the stored key history.
type KeyedSignature = (crate::store::signatures::RecordSignature, Option<String>);

fn signatures(conn: &Connection, record_id: i64) -> Result<Vec<KeyedSignature>, StoreError> {
    use crate::witness_pool::{key_history, rotation};
    let keys = rotation::stored_keys(conn)?.map(|(keys, _)| keys);
    Ok(crate::store::signatures::of(conn, record_id)?
        .into_iter()
        .map(|sig| {
            let listed = keys
                .as_deref()
                .and_then(|keys| key_history::find_witness_key(keys, &sig.public_key_b64))
                .map(|k| format!("{}, {}", k.kid, k.status.as_str()));
            (sig, listed)
        })
        .collect())
}

/// The sha of the bytes, the signature over them, and the chain link from the previous row.
fn checks(conn: &Connection, rec: &StoredRecord) -> Result<Checks, StoreError> {
    let row = &rec.row;
    let signature = match (&rec.signature_b64, &rec.public_key_b64) {
        (Some(s), Some(k)) => crate::store::check_signature(&rec.canonical, s, k)
            .map(Some)
            .map_err(|e| e.to_string()),
        _ => Ok(None),
    };
    let (prev, next) = status::neighbours(conn, row.id)?;
    let prev_chain = match &prev {
        Some((_, _, c)) => crate::store::verify::decode_hex32(c),
        None => Some(crate::store::CHAIN_GENESIS),
    };
    let sha_raw = crate::store::verify::decode_hex32(&row.sha256);
    let chain_ok = match (prev_chain, sha_raw) {
        (Some(p), Some(s)) => {
            hex::encode(crate::store::verify::chain_next(&p, &s)) == row.chain_hash
        }
        _ => false,
    };
    Ok(Checks {
        sha_ok: crate::digest::sha256_hex(&rec.canonical) == row.sha256,
        signature,
        chain_ok,
        prev,
        next,
    })
}
