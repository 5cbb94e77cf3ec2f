//! What conduct-walker checks of a walked card beyond the reference walker, and what the agent
//! answered to our `caller_card`, kept beside its record (table `record_beside`): the record
//! page, `records show` and MCP show it; the record's bytes carry only what the reference
//! writes (conduct-walk.md §4.3, witness-pool.md §6.4).

use super::StoreError;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

/// A record's findings beside it; all absent for most walks (unsigned card, no terms listing,
/// no caller card sent).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Beside {
    /// conduct-walker's own verification of a signed card.
    pub card_verification: Option<Value>,
    /// The A2A Terms listing's block, with the `establishes` / `does_not_establish` lines it
    /// would add.
    pub terms: Option<Value>,
    /// The agent's `EXT/reciprocal` answer (`scheduled`, `declined`, or a stranger's string,
    /// clipped) to the `caller_card` this walk's n3 message carried (migration 16).
    pub reciprocal: Option<String>,
}

impl Beside {
    fn is_empty(&self) -> bool {
        self.card_verification.is_none() && self.terms.is_none() && self.reciprocal.is_none()
    }
}

/// Keep `beside` for the record `record_id` (inside the record's transaction). Nothing is
/// written when all are absent; a record stored twice keeps its first findings.
pub fn put(conn: &Connection, record_id: i64, beside: &Beside) -> Result<(), StoreError> {
    if beside.is_empty() {
        return Ok(());
    }
    conn.prepare_cached(
        "INSERT OR IGNORE INTO record_beside (record_id, card_verification, terms, reciprocal) \
         VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![
        record_id,
        beside.card_verification.as_ref().map(Value::to_string),
        beside.terms.as_ref().map(Value::to_string),
        beside.reciprocal,
    ])?;
    Ok(())
}

/// The findings kept for `record_id` (empty for a record walked before this table existed, or a
/// store opened read-only before the migration; no reciprocal before migration 16).
pub fn get(conn: &Connection, record_id: i64) -> Result<Beside, StoreError> {
    if !super::schema::has_table(conn, "record_beside")? {
        return Ok(Beside::default());
    }
    let sql = if super::schema::has_column(conn, "record_beside", "reciprocal")? {
        "SELECT card_verification, terms, reciprocal FROM record_beside WHERE record_id = ?1"
    } else {
        "SELECT card_verification, terms, NULL FROM record_beside WHERE record_id = ?1"
    };
    type Row = (Option<String>, Option<String>, Option<String>);
    let row: Option<Row> = conn
        .prepare_cached(sql)?
        .query_row([record_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    let parse = |t: Option<String>| t.and_then(|t| serde_json::from_str(&t).ok());
    Ok(match row {
        Some((card, terms, reciprocal)) => Beside {
            card_verification: parse(card),
            terms: parse(terms),
            reciprocal,
        },
        None => Beside::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema;

    /// A store whose `records` has the rows `record_beside` refers to.
    fn store_at(version: usize) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        for m in &schema::MIGRATIONS[..version] {
            conn.execute_batch(m.sql).unwrap();
        }
        conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        conn
    }

    #[test]
    fn reciprocal_round_trips_beside_the_card_findings() {
        let conn = store_at(schema::MIGRATIONS.len());
        let only_reciprocal = Beside {
            reciprocal: Some("scheduled".into()),
            ..Beside::default()
        };
        put(&conn, 7, &only_reciprocal).unwrap();
        assert_eq!(get(&conn, 7).unwrap(), only_reciprocal);
        let all = Beside {
            card_verification: Some(serde_json::json!({"verified": true})),
            terms: Some(serde_json::json!({"listed": false})),
            reciprocal: Some("declined".into()),
        };
        put(&conn, 8, &all).unwrap();
        assert_eq!(get(&conn, 8).unwrap(), all);
        // Nothing to keep writes no row; a second put keeps the first findings.
        put(&conn, 9, &Beside::default()).unwrap();
        put(&conn, 7, &all).unwrap();
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM record_beside", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 2);
        assert_eq!(get(&conn, 7).unwrap(), only_reciprocal);
        assert_eq!(get(&conn, 9).unwrap(), Beside::default());
    }

    /// A store read before migration 16 (read-only stores are never migrated) still reads its
    /// card findings, with no reciprocal.
    #[test]
    fn a_store_before_the_reciprocal_column_reads_without_it() {
        let before = schema::MIGRATIONS
            .iter()
            .position(|m| m.name == "record_beside_reciprocal")
            .unwrap();
        let conn = store_at(before);
        conn.execute(
            "INSERT INTO record_beside (record_id, card_verification, terms) VALUES (1, '{\"v\":1}', NULL)",
            [],
        )
        .unwrap();
        let beside = get(&conn, 1).unwrap();
        assert_eq!(beside.card_verification, Some(serde_json::json!({"v": 1})));
        assert_eq!(beside.reciprocal, None);
    }
}
