//! The `mcp_walks` table (migration 4): the walks started through `conduct-walker mcp`, whose
//! daily cap counts its rows so it holds across restarts.

use super::StoreError;
use rusqlite::{Connection, params};

/// Take a place under `cap` walks on `day` (one `IMMEDIATE` transaction, so two servers cannot
/// both take the last place): `Ok((row id, walks today including this one))`, or
/// `Err(walks today)` when the cap is reached.
/// `files`: whether the walk files its record (filing walks and store-only walks are counted
/// against separate caps, migration 6).
pub fn begin(
    conn: &Connection,
    day: &str,
    now: &str,
    origin: &str,
    files: bool,
    cap: u32,
) -> Result<Result<(i64, u32), u32>, StoreError> {
    let tx = super::write_transaction(conn)?;
    let used: u32 = conn.query_row(
        "SELECT count(*) FROM mcp_walks WHERE day = ?1 AND files = ?2",
        params![day, files],
        |r| r.get(0),
    )?;
    if used >= cap {
        return Ok(Err(used));
    }
    conn.execute(
        "INSERT INTO mcp_walks (day, started_at, origin, state, files) VALUES (?1, ?2, ?3, 'running', ?4)",
        params![day, now, origin, files],
    )?;
    let id = conn.last_insert_rowid();
    tx.commit()?;
    Ok(Ok((id, used + 1)))
}

/// Note how a walk ended.
pub fn finish(
    conn: &Connection,
    id: i64,
    state: &str,
    now: &str,
    sha256: Option<&str>,
    detail: Option<&str>,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE mcp_walks SET state = ?1, finished_at = ?2, record_sha256 = ?3, detail = ?4 WHERE id = ?5",
        params![state, now, sha256, detail, id],
    )?;
    Ok(())
}
