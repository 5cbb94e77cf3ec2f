//! The status pages' reads that are not one of [`super::status`]'s fire queries: the newest
//! record's witness and a record's bytes by id. The pages hold no SQL of their own.

use super::StoreError;
use rusqlite::{Connection, OptionalExtension};

/// Who signed a stored record, as the record names itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordWitness {
    pub name: Option<String>,
    pub vantage: Option<String>,
    pub key_url: Option<String>,
    /// Standard base64 of the key the row was signed with (`None`: unsigned).
    pub public_key_b64: Option<String>,
}

/// The newest record's witness (`None`: no record stored).
pub fn newest_witness(conn: &Connection) -> Result<Option<RecordWitness>, StoreError> {
    let row: Option<(Vec<u8>, Option<String>)> = conn
        .prepare_cached("SELECT canonical, public_key_b64 FROM records ORDER BY id DESC LIMIT 1")?
        .query_row([], |r| {
            Ok((super::codec::decode(conn, r.get(0)?)?, r.get(1)?))
        })
        .optional()?;
    let Some((canonical, public_key_b64)) = row else {
        return Ok(None);
    };
    // One typed reader of our own records (issue 36 item 7); an unreadable record shows no
    // witness rather than failing the page.
    let view = super::record_view::RecordView::read(&canonical).ok();
    let view = view.as_ref();
    Ok(Some(RecordWitness {
        name: view.and_then(|v| v.witness_name()).map(str::to_string),
        vantage: view.and_then(|v| v.witness_vantage()).map(str::to_string),
        key_url: view.and_then(|v| v.key_url()).map(str::to_string),
        public_key_b64,
    }))
}

/// A record's exact bytes by row id (`None`: no such row, or archived: `records archive` keeps
/// its facts but not its bytes).
pub fn canonical_of(conn: &Connection, id: i64) -> Result<Option<Vec<u8>>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT canonical FROM records WHERE id = ?1")?
        .query_row([id], |r| Ok(super::codec::decode(conn, r.get(0)?)?))
        .optional()?)
}

/// Run `read` in one read transaction: its queries see one state of the store (the overview
/// reads some 250 statements while the daemon commits), and take the snapshot once rather than
/// once a statement. A read only: nothing to commit, and the snapshot is released at the end
/// whatever `read` returned.
pub fn in_one_snapshot<T>(
    conn: &Connection,
    read: impl FnOnce() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    if !conn.is_autocommit() {
        // Already inside the caller's transaction.
        return read();
    }
    conn.execute_batch("BEGIN DEFERRED")?;
    let out = read();
    conn.execute_batch("COMMIT")?;
    out
}
