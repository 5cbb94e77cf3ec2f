//! conduct-walker's own verification of a walked signed card, kept beside its record
//! (migration `card_verifications`): the record page and MCP show it; the record's bytes carry
//! only the reference's block (conduct-walk.md §4.3).

use super::StoreError;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

/// Keep `block` for the record `record_id` (inside the record's transaction). A record stored
/// twice keeps its first verification.
pub fn put(conn: &Connection, record_id: i64, block: &Value) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT OR IGNORE INTO card_verifications (record_id, block) VALUES (?1, ?2)",
    )?
    .execute(params![record_id, block.to_string()])?;
    Ok(())
}

/// The verification kept for `record_id`, if any (none for an unsigned card, a record walked
/// before this table existed, or a store opened read-only before the migration).
pub fn get(conn: &Connection, record_id: i64) -> Result<Option<Value>, StoreError> {
    if !super::schema::has_table(conn, "card_verifications")? {
        return Ok(None);
    }
    let text: Option<String> = conn
        .prepare_cached("SELECT block FROM card_verifications WHERE record_id = ?1")?
        .query_row([record_id], |r| r.get(0))
        .optional()?;
    Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
}
