//! Every signature the store made for a record (migration 19): the walk-time one (copied by a
//! trigger as the record is inserted) and each filing-time one (a record waiting in the outbox
//! is signed when it is submitted, with the key `key_url` serves then: witness-pool.md §8.5).

use super::StoreError;
use super::schema::has_table;
use rusqlite::{Connection, params};

/// When a signature was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MadeAt {
    Walk,
    Filing,
}

impl MadeAt {
    pub fn as_str(self) -> &'static str {
        match self {
            MadeAt::Walk => "walk",
            MadeAt::Filing => "filing",
        }
    }
}

/// One signature over a record's canonical bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSignature {
    pub public_key_b64: String,
    pub signature_b64: String,
    /// UTC, RFC 3339.
    pub signed_at: String,
    /// `walk` or `filing`.
    pub made_at: String,
}

/// Keep a filing-time signature of `record_id`; a key that already signed it (Ed25519 gives
/// the same signature again) is kept once, with its first time.
pub fn add(
    conn: &Connection,
    record_id: i64,
    public_key_b64: &str,
    signature_b64: &str,
    signed_at: &str,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT OR IGNORE INTO record_signatures \
         (record_id, public_key_b64, signature_b64, signed_at, made_at) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        record_id,
        public_key_b64,
        signature_b64,
        signed_at,
        MadeAt::Filing.as_str()
    ])?;
    Ok(())
}

/// Every signature of `record_id`, oldest first; empty on a store not yet migrated.
pub fn of(conn: &Connection, record_id: i64) -> Result<Vec<RecordSignature>, StoreError> {
    if !has_table(conn, "record_signatures")? {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare_cached(
        "SELECT public_key_b64, signature_b64, signed_at, made_at FROM record_signatures \
         WHERE record_id = ?1 ORDER BY signed_at, made_at DESC",
    )?;
    let rows = stmt
        .query_map([record_id], |r| {
            Ok(RecordSignature {
                public_key_b64: r.get(0)?,
                signature_b64: r.get(1)?,
                signed_at: r.get(2)?,
                made_at: r.get(3)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Every kept signature with its record's row id and sha256 (`None` once the row is
/// archived), in row order; empty on a store not yet migrated.
pub fn all(conn: &Connection) -> Result<Vec<(i64, Option<String>, RecordSignature)>, StoreError> {
    if !has_table(conn, "record_signatures")? {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare(
        "SELECT s.record_id, r.sha256, s.public_key_b64, s.signature_b64, s.signed_at, \
         s.made_at FROM record_signatures s LEFT JOIN records r ON r.id = s.record_id \
         ORDER BY s.record_id, s.signed_at, s.made_at DESC",
    )?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                RecordSignature {
                    public_key_b64: r.get(2)?,
                    signature_b64: r.get(3)?,
                    signed_at: r.get(4)?,
                    made_at: r.get(5)?,
                },
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}
