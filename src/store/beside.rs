//! What conduct-walker checks of a walked card beyond the reference walker, kept beside its
//! record (table `record_beside`): the record page and MCP show it; the record's bytes carry
//! only what the reference writes (conduct-walk.md §4.3).

use super::StoreError;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

/// A record's findings beside it; both absent for most cards (unsigned, no terms listing).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Beside {
    /// conduct-walker's own verification of a signed card.
    pub card_verification: Option<Value>,
    /// The A2A Terms listing's block, with the `establishes` / `does_not_establish` lines it
    /// would add.
    pub terms: Option<Value>,
}

/// Keep `beside` for the record `record_id` (inside the record's transaction). Nothing is
/// written when both are absent; a record stored twice keeps its first findings.
pub fn put(conn: &Connection, record_id: i64, beside: &Beside) -> Result<(), StoreError> {
    if beside.card_verification.is_none() && beside.terms.is_none() {
        return Ok(());
    }
    conn.prepare_cached(
        "INSERT OR IGNORE INTO record_beside (record_id, card_verification, terms) \
         VALUES (?1, ?2, ?3)",
    )?
    .execute(params![
        record_id,
        beside.card_verification.as_ref().map(Value::to_string),
        beside.terms.as_ref().map(Value::to_string),
    ])?;
    Ok(())
}

/// The findings kept for `record_id` (empty for a record walked before this table existed, or a
/// store opened read-only before the migration).
pub fn get(conn: &Connection, record_id: i64) -> Result<Beside, StoreError> {
    if !super::schema::has_table(conn, "record_beside")? {
        return Ok(Beside::default());
    }
    let row: Option<(Option<String>, Option<String>)> = conn
        .prepare_cached("SELECT card_verification, terms FROM record_beside WHERE record_id = ?1")?
        .query_row([record_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let parse = |t: Option<String>| t.and_then(|t| serde_json::from_str(&t).ok());
    Ok(match row {
        Some((card, terms)) => Beside {
            card_verification: parse(card),
            terms: parse(terms),
        },
        None => Beside::default(),
    })
}
