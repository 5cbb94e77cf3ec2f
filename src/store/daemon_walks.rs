//! The daemon's own tables (migration 3, `daemon_walks`, and `consent_checks`, whose row type
//! lives in [`super::consent_checks`]): plain functions over a connection to the record store, so they
//! share its file, WAL and migrations.

use super::StoreError;
use rusqlite::{Connection, params};

/// `daemon_walks.state` values.
pub mod state {
    pub const RUNNING: &str = "running";
    pub const DONE: &str = "done";
    pub const ABORTED: &str = "aborted";
    pub const DECLINED: &str = "declined";
    pub const SKIPPED_OVERLAP: &str = "skipped_overlap";
    pub const ERROR: &str = "error";
}

/// UTC time in the form every daemon table uses (sorts as text).
pub use crate::clock::utc_millis as timestamp;

/// A scheduled fire about to walk.
pub struct WalkStart<'a> {
    pub target: &'a str,
    pub origin: &'a str,
    pub endpoint: Option<&'a str>,
    pub scheduled_for: &'a str,
    pub now: &'a str,
}

/// Write the `running` row before the walk starts (so a cut-off walk leaves a trace).
pub fn begin_walk(conn: &Connection, w: &WalkStart<'_>) -> Result<i64, StoreError> {
    conn.prepare_cached(
        "INSERT INTO daemon_walks (target, origin, endpoint, scheduled_for, started_at, state) \
         VALUES (?1, ?2, ?3, ?4, ?5, 'running')",
    )?
    .execute(params![
        w.target,
        w.origin,
        w.endpoint,
        w.scheduled_for,
        w.now
    ])?;
    Ok(conn.last_insert_rowid())
}

/// How a walk ended.
#[derive(Debug, Clone, Default)]
pub struct WalkEnd<'a> {
    pub state: &'a str,
    pub record_id: Option<i64>,
    pub record_sha256: Option<&'a str>,
    pub submission: Option<crate::filing::SubmissionState>,
    pub detail: Option<&'a str>,
}

pub fn finish_walk(
    conn: &Connection,
    id: i64,
    end: &WalkEnd<'_>,
    now: &str,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE daemon_walks SET state = ?2, record_id = ?3, record_sha256 = ?4, submission = ?5, \
         detail = ?6, finished_at = ?7 WHERE id = ?1",
    )?
    .execute(params![
        id,
        end.state,
        end.record_id,
        end.record_sha256,
        end.submission,
        end.detail,
        now
    ])?;
    Ok(())
}

/// A fire that did not walk (declined, overlapping): one row, already finished.
pub fn note_fire(
    conn: &Connection,
    w: &WalkStart<'_>,
    end: &WalkEnd<'_>,
) -> Result<(), StoreError> {
    let id = begin_walk(conn, w)?;
    finish_walk(conn, id, end, w.now)
}

/// Walks a previous run left `running` (kill -9, power loss) were cut off, not failed.
pub fn abort_leftovers(conn: &Connection, now: &str) -> Result<usize, StoreError> {
    Ok(conn.execute(
        "UPDATE daemon_walks SET state = 'aborted', finished_at = ?1, \
         detail = 'the daemon stopped before this walk finished (found running at the next start)' \
         WHERE state = 'running'",
        [now],
    )?)
}

pub use super::consent_checks::{ConsentRow, insert_consent};

/// The latest read of every origin (one summary row each, migration 9).
pub fn latest_consent(conn: &Connection) -> Result<Vec<ConsentRow>, StoreError> {
    super::summary::latest_consent(conn)
}

/// Origins whose latest consent read declined.
pub fn declined_origins(conn: &Connection) -> Result<Vec<ConsentRow>, StoreError> {
    Ok(latest_consent(conn)?
        .into_iter()
        .filter(|r| r.outcome == "declined")
        .collect())
}

/// Fires by state (`done`, `aborted`, ...), from the summary rows (migration 9).
pub fn walks_by_state(conn: &Connection) -> Result<Vec<(String, u64)>, StoreError> {
    super::summary::fires_by_state(conn)
}

/// Per target: when its last walk finished and stored a record (summary rows, migration 7).
pub fn last_success(conn: &Connection) -> Result<Vec<(String, String)>, StoreError> {
    super::summary::last_success(conn)
}

/// A daemon walk row (tests and status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkRow {
    pub id: i64,
    pub target: String,
    pub state: String,
    pub record_sha256: Option<String>,
    pub submission: Option<String>,
    pub detail: Option<String>,
}

pub fn walks(conn: &Connection) -> Result<Vec<WalkRow>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, target, state, record_sha256, submission, detail FROM daemon_walks ORDER BY id",
    )?;
    let rows = stmt
        .query_map([], |r| {
            Ok(from_columns!(r => WalkRow {
                id, target, state, record_sha256, submission, detail,
            }))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Close every `running` walk as aborted (at shutdown, once the grace period cut them off).
pub fn abort_running(conn: &Connection, now: &str, detail: &str) -> Result<usize, StoreError> {
    Ok(conn.execute(
        // The literal (not a parameter) lets SQLite use the partial index daemon_walks_running.
        "UPDATE daemon_walks SET state = ?1, finished_at = ?2, detail = ?3 WHERE state = 'running'",
        params![state::ABORTED, now, detail],
    )?)
}
