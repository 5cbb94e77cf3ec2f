//! The witness key's history in the store (migration 20): one row per change, each a link of
//! a hash chain of its own that names the records' chain head at that moment, so an audit
//! shows when each key changed and where among the records. The row keeps the KEY_HISTORY_v1
//! hashed members as they stood after the change (witness-pool.md §8.1, §8.2).

use super::StoreError;
use super::integrity::{chain_next, decode_hex32};
use super::schema::has_table;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde_json::{Value, json};

/// What an event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A key in use before any history was kept, recorded as it stood.
    Recorded,
    Rotated,
    Revoked,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Recorded => "recorded",
            EventKind::Rotated => "rotated",
            EventKind::Revoked => "revoked",
        }
    }
}

/// A change about to be recorded.
#[derive(Debug, Clone)]
pub struct NewKeyEvent {
    /// UTC, RFC 3339.
    pub at: String,
    pub kind: EventKind,
    /// The key active after the change.
    pub public_key_b64: String,
    /// The key that left (rotated or revoked), if any.
    pub left_b64: Option<String>,
    pub compromised_from: Option<String>,
    pub reason: Option<String>,
}

/// One stored change.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyEvent {
    pub id: i64,
    pub at: String,
    pub event: String,
    pub public_key_b64: String,
    pub records_head: Option<String>,
    pub chain_hash: String,
    /// The hashed members `{schema, subject, keys, rule}` after the change.
    pub history: Value,
    pub history_sha256: String,
}

const SCHEMA: &str = "conduct-walker-key-event-v1";
const COLUMNS: &str =
    "id, at, event, public_key_b64, records_head, chain_hash, history, history_sha256";

fn event_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<KeyEvent> {
    let history: Vec<u8> = r.get(6)?;
    Ok(KeyEvent {
        id: r.get(0)?,
        at: r.get(1)?,
        event: r.get(2)?,
        public_key_b64: r.get(3)?,
        records_head: r.get(4)?,
        chain_hash: r.get(5)?,
        history: serde_json::from_slice(&history).unwrap_or(Value::Null),
        history_sha256: r.get(7)?,
    })
}

/// The event's own bytes (what its chain link hashes): the change, the records' head, and the
/// history as it stood before it, so each row's link also fixes the list it changed.
fn event_canonical(
    new: &NewKeyEvent,
    records_head: Option<&str>,
    history_before: Option<&str>,
) -> Vec<u8> {
    crate::canonical::to_bytes(&json!({
        "schema": SCHEMA,
        "at": new.at,
        "event": new.kind.as_str(),
        "public_key_ed25519_b64": new.public_key_b64,
        "left_public_key_ed25519_b64": new.left_b64,
        "compromised_from": new.compromised_from,
        "reason": new.reason,
        "records_head": records_head,
        "history_before_sha256": history_before,
    }))
}

/// Record `new` in one IMMEDIATE transaction. `history` gets the `since_commit` of the key the
/// change made active (the first 8 hex of this row's chain hash) and returns the hashed
/// members after the change.
pub fn append(
    conn: &Connection,
    new: &NewKeyEvent,
    history: impl FnOnce(&str) -> Value,
) -> Result<KeyEvent, StoreError> {
    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    let last: Option<(String, String)> = tx
        .query_row(
            "SELECT chain_hash, history_sha256 FROM key_events ORDER BY id DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let records_head: Option<String> = tx
        .query_row(
            "SELECT chain_hash FROM records ORDER BY id DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()?;
    let (prev, before) = match &last {
        Some((chain, sha)) => (decode_hex32(chain).unwrap_or([0; 32]), Some(sha.as_str())),
        None => ([0u8; 32], None),
    };
    let canonical = event_canonical(new, records_head.as_deref(), before);
    let chain_hash = hex::encode(chain_next(&prev, &crate::digest::sha256(&canonical)));
    let members = history(&chain_hash[..8]);
    let history_bytes = crate::canonical::to_bytes(&members);
    let history_sha256 = crate::digest::sha256_hex(&history_bytes);
    tx.execute(
        "INSERT INTO key_events (at, event, public_key_b64, records_head, event_canonical, \
         chain_hash, history, history_sha256) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            new.at,
            new.kind.as_str(),
            new.public_key_b64,
            records_head,
            canonical,
            chain_hash,
            history_bytes,
            history_sha256
        ],
    )?;
    let id = tx.last_insert_rowid();
    tx.commit()?;
    Ok(KeyEvent {
        id,
        at: new.at.clone(),
        event: new.kind.as_str().to_string(),
        public_key_b64: new.public_key_b64.clone(),
        records_head,
        chain_hash,
        history: members,
        history_sha256,
    })
}

/// Every change, oldest first; empty on a store without the table (read-only, not migrated).
pub fn all(conn: &Connection) -> Result<Vec<KeyEvent>, StoreError> {
    if !has_table(conn, "key_events")? {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM key_events ORDER BY id"))?;
    let rows = stmt
        .query_map([], event_from_row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The last change: the history as it stands.
pub fn latest(conn: &Connection) -> Result<Option<KeyEvent>, StoreError> {
    if !has_table(conn, "key_events")? {
        return Ok(None);
    }
    Ok(conn
        .query_row(
            &format!("SELECT {COLUMNS} FROM key_events ORDER BY id DESC LIMIT 1"),
            [],
            event_from_row,
        )
        .optional()?)
}

/// What does not hold in the key events' chain: each link recomputed from the event's bytes,
/// each history's sha256 recomputed, each event naming the history before it. One line per
/// problem, `key event N: ...`.
pub fn verify(conn: &Connection) -> Result<Vec<String>, StoreError> {
    if !has_table(conn, "key_events")? {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare(
        "SELECT id, event_canonical, chain_hash, history, history_sha256 FROM key_events \
         ORDER BY id",
    )?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, Vec<u8>>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Vec<u8>>(3)?,
                r.get::<_, String>(4)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let mut problems = Vec::new();
    let (mut prev, mut before): ([u8; 32], Option<String>) = ([0; 32], None);
    for (id, canonical, chain, history, history_sha) in rows {
        let link = chain_next(&prev, &crate::digest::sha256(&canonical));
        if hex::encode(link) != chain {
            problems.push(format!("key event {id}: chain hash does not recompute"));
        }
        if crate::digest::sha256_hex(&history) != history_sha {
            problems.push(format!("key event {id}: history_sha256 does not recompute"));
        }
        let named = serde_json::from_slice::<Value>(&canonical)
            .ok()
            .and_then(|v| v["history_before_sha256"].as_str().map(str::to_owned));
        if named != before {
            problems.push(format!(
                "key event {id}: does not name the history before it"
            ));
        }
        prev = decode_hex32(&chain).unwrap_or(link);
        before = Some(history_sha);
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        crate::store::schema::migrate(&conn).unwrap();
        conn
    }

    fn event(kind: EventKind, key: &str) -> NewKeyEvent {
        NewKeyEvent {
            at: "2026-12-06T10:00:00Z".into(),
            kind,
            public_key_b64: key.into(),
            left_b64: None,
            compromised_from: None,
            reason: None,
        }
    }

    #[test]
    fn events_chain_and_a_tampered_one_is_found() {
        let conn = store();
        let first = append(
            &conn,
            &event(EventKind::Recorded, "A"),
            |commit| json!({"since_commit": commit}),
        )
        .unwrap();
        assert_eq!(first.history["since_commit"], first.chain_hash[..8]);
        let second = append(&conn, &event(EventKind::Rotated, "B"), |_| json!({"n": 2})).unwrap();
        assert_ne!(first.chain_hash, second.chain_hash);
        assert_eq!(latest(&conn).unwrap().unwrap(), second);
        assert_eq!(all(&conn).unwrap().len(), 2);
        assert_eq!(verify(&conn).unwrap(), Vec::<String>::new());

        // Rows are insert-only; a store edited under the triggers is caught by the chain.
        assert!(
            conn.execute("UPDATE key_events SET at = 'x' WHERE id = 1", [])
                .is_err()
        );
        conn.execute_batch(
            "DROP TRIGGER key_events_insert_only_update; \
             UPDATE key_events SET history = X'7B7D' WHERE id = 1; \
             UPDATE key_events SET event_canonical = X'7B7D' WHERE id = 2;",
        )
        .unwrap();
        assert_eq!(
            verify(&conn).unwrap(),
            vec![
                "key event 1: history_sha256 does not recompute".to_string(),
                "key event 2: chain hash does not recompute".to_string(),
                "key event 2: does not name the history before it".to_string(),
            ]
        );
    }
}
