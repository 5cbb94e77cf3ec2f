//! The `consent_checks` table (migration 3): one row per read of an origin's consent file,
//! written by the daemon's consent gate. Its own file because the daemon's tables and the summary
//! rows both read it (`summary::latest_consent` reads the latest per origin).

use super::StoreError;
use rusqlite::{Connection, params};

/// One read of a consent file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsentRow {
    pub origin: String,
    pub checked_at: String,
    pub outcome: String,
    pub status: Option<i64>,
    pub sha256: Option<String>,
    pub detail: Option<String>,
    /// The file's string `notify` (§11.5), when it had one (migration 17).
    pub notify: Option<String>,
}

pub fn insert_consent(conn: &Connection, row: &ConsentRow) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO consent_checks (origin, checked_at, outcome, status, sha256, detail, notify) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        row.origin,
        row.checked_at,
        row.outcome,
        row.status,
        row.sha256,
        row.detail,
        row.notify
    ])?;
    Ok(())
}

pub(crate) fn consent_from(r: &rusqlite::Row<'_>) -> rusqlite::Result<ConsentRow> {
    Ok(from_columns!(r => ConsentRow {
        origin, checked_at, outcome, status, sha256, detail, notify,
    }))
}
