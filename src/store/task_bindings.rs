//! Task bindings (migration 0012, spec §5.1): one row per record whose walk was asked to bind
//! its A2A Task. Inserted in the record's own transaction (so a binding exists exactly when its
//! record does), sent at most once: [`claim`] moves a queued row to `sending` in a committed
//! statement before its POST leaves, and [`settle_interrupted`] turns a row a stopped process
//! left `sending` into `unknown`, never back into `queued`.

use super::StoreError;
use crate::filing::bind::{BindState, UNKNOWN_NOTE};
use rusqlite::{Connection, OptionalExtension, params};

/// What a walk's binding is, before it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewBinding {
    Skipped {
        ledger_url: String,
        reason: String,
    },
    Queued {
        ledger_url: String,
        task_id: String,
        evidence_id: String,
        witness_id: String,
        requester_id: String,
        body: String,
    },
}

/// One stored binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskBinding {
    pub id: i64,
    pub record_id: i64,
    pub ledger_url: String,
    pub state: BindState,
    pub note: Option<String>,
    pub task_id: Option<String>,
    pub evidence_id: Option<String>,
    pub witness_id: Option<String>,
    pub requester_id: Option<String>,
    pub body: Option<String>,
    pub created_at: String,
    pub sent_at: Option<String>,
    pub answered_at: Option<String>,
    pub http_status: Option<i64>,
    /// The ledger's JSON answer (or `{"raw": …}`), as text.
    pub answer: Option<String>,
}

impl TaskBinding {
    /// One line saying where it stands.
    pub fn describe(&self) -> String {
        crate::filing::bind::describe(self.state, self.http_status, self.note.as_deref())
    }

    /// The answer kept, parsed (it was stored from a JSON value).
    pub fn answer_json(&self) -> Option<serde_json::Value> {
        self.answer
            .as_deref()
            .and_then(|a| serde_json::from_str(a).ok())
    }

    /// As the faces' JSON shows it.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "ledger_url": self.ledger_url,
            "state": self.state.as_str(),
            "summary": self.describe(),
            "note": self.note,
            "task_id": self.task_id,
            "evidence_id": self.evidence_id,
            "witness_id": self.witness_id,
            "requester_id": self.requester_id,
            "sent_at": self.sent_at,
            "answered_at": self.answered_at,
            "http_status": self.http_status,
            "answer": self.answer_json(),
        })
    }
}

const COLUMNS: &str = "id, record_id, ledger_url, state, note, task_id, evidence_id, witness_id, \
     requester_id, body, created_at, sent_at, answered_at, http_status, answer";

fn row(r: &rusqlite::Row) -> rusqlite::Result<TaskBinding> {
    Ok(from_columns!(r => TaskBinding {
        id, record_id, ledger_url, state, note, task_id, evidence_id, witness_id, requester_id,
        body, created_at, sent_at, answered_at, http_status, answer,
    }))
}

/// Store a record's binding (inside the record's transaction). A record has at most one: a
/// second insert for the same record keeps the first and returns it.
pub fn insert(
    conn: &Connection,
    record_id: i64,
    binding: &NewBinding,
    now: &str,
) -> Result<TaskBinding, StoreError> {
    let sql = "INSERT OR IGNORE INTO task_bindings (record_id, ledger_url, state, note, task_id, \
               evidence_id, witness_id, requester_id, body, created_at) \
               VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";
    match binding {
        NewBinding::Skipped { ledger_url, reason } => {
            conn.prepare_cached(sql)?.execute(params![
                record_id,
                ledger_url,
                BindState::Skipped,
                reason,
                None::<String>,
                None::<String>,
                None::<String>,
                None::<String>,
                None::<String>,
                now
            ])?
        }
        NewBinding::Queued {
            ledger_url,
            task_id,
            evidence_id,
            witness_id,
            requester_id,
            body,
        } => conn.prepare_cached(sql)?.execute(params![
            record_id,
            ledger_url,
            BindState::Queued,
            None::<String>,
            task_id,
            evidence_id,
            witness_id,
            requester_id,
            body,
            now
        ])?,
    };
    Ok(for_record(conn, record_id)?.expect("just inserted or already there"))
}

pub fn get(conn: &Connection, id: i64) -> Result<TaskBinding, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM task_bindings WHERE id = ?1");
    Ok(conn.prepare_cached(&sql)?.query_row([id], row)?)
}

/// A record's binding, if its walk asked for one. A store opened read-only before migration
/// 0012 has no such table: no binding.
pub fn for_record(conn: &Connection, record_id: i64) -> Result<Option<TaskBinding>, StoreError> {
    if !super::schema::has_table(conn, "task_bindings")? {
        return Ok(None);
    }
    let sql = format!("SELECT {COLUMNS} FROM task_bindings WHERE record_id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([record_id], row)
        .optional()?)
}

/// Ids of the rows waiting to be sent, oldest first.
pub fn queued(conn: &Connection) -> Result<Vec<i64>, StoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT id FROM task_bindings WHERE state = ?1 ORDER BY id")?;
    let ids = stmt
        .query_map([BindState::Queued], |r| r.get(0))?
        .collect::<Result<Vec<i64>, _>>()?;
    Ok(ids)
}

/// Take a queued row for sending: `queued` → `sending`, committed before the request leaves.
/// False when the row is not queued (another task or process took it, or it is settled): only
/// one claimant ever sends a row.
pub fn claim(conn: &Connection, id: i64, now: &str) -> Result<bool, StoreError> {
    let changed = conn
        .prepare_cached(
            "UPDATE task_bindings SET state = ?3, sent_at = ?2 WHERE id = ?1 AND state = ?4",
        )?
        .execute(params![id, now, BindState::Sending, BindState::Queued])?;
    Ok(changed == 1)
}

/// Settle a row that was not sent after all (refused by the destination rules before any
/// connection): `failed` with why.
pub fn not_sent(conn: &Connection, id: i64, now: &str, why: &str) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE task_bindings SET state = ?3, note = ?4, answered_at = ?2 WHERE id = ?1 AND state = ?5",
    )?
    .execute(params![id, now, BindState::Failed, why, BindState::Queued])?;
    Ok(())
}

/// The ledger answered. Also over `unknown`: an answer that arrives after its row was judged
/// interrupted is still the answer.
pub fn answered(
    conn: &Connection,
    id: i64,
    now: &str,
    status: u16,
    answer: &serde_json::Value,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE task_bindings SET state = ?3, note = NULL, http_status = ?4, answer = ?5, answered_at = ?2 \
         WHERE id = ?1 AND state IN (?6, ?7)",
    )?
    .execute(params![
        id,
        now,
        BindState::Answered,
        status,
        answer.to_string(),
        BindState::Sending,
        BindState::Unknown
    ])?;
    Ok(())
}

/// The POST got no answer (a transport error): `failed`, never resent.
pub fn failed(conn: &Connection, id: i64, now: &str, error: &str) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE task_bindings SET state = ?3, note = ?4, answered_at = ?2 WHERE id = ?1 AND state IN (?5, ?6)",
    )?
    .execute(params![
        id,
        now,
        BindState::Failed,
        error,
        BindState::Sending,
        BindState::Unknown
    ])?;
    Ok(())
}

/// Rows `sending` since before `cutoff` (RFC 3339 UTC) were left by a stopped process: settle
/// them as `unknown` (not resent). Returns how many.
pub fn settle_interrupted(conn: &Connection, cutoff: &str) -> Result<usize, StoreError> {
    Ok(conn
        .prepare_cached(
            "UPDATE task_bindings SET state = ?1, note = ?2 WHERE state = ?3 AND sent_at < ?4",
        )?
        .execute(params![
            BindState::Unknown,
            UNKNOWN_NOTE,
            BindState::Sending,
            cutoff
        ])?)
}

/// Rows per state, every state listed (for `/metrics` and tests).
pub fn by_state(conn: &Connection) -> Result<Vec<(BindState, u64)>, StoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT state, count(*) FROM task_bindings GROUP BY state")?;
    let found = stmt
        .query_map([], |r| Ok((r.get::<_, BindState>(0)?, r.get::<_, i64>(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(BindState::ALL
        .into_iter()
        .map(|s| {
            let n = found.iter().find(|(f, _)| *f == s).map_or(0, |(_, n)| *n);
            (s, n as u64)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{NewRecord, Store};

    fn store_with_record() -> (tempfile::TempDir, Store, i64) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("walker.db")).unwrap();
        let rec = store
            .insert_record(&NewRecord {
                // A real record (the reference's sample walk): the store checks what it keeps.
                canonical: std::fs::read(crate::sandbox::test_vectors(
                    "walks/walk_97b7e4883e8b.json",
                ))
                .unwrap(),
                signature_b64: None,
                public_key_b64: None,
                kept_full: None,
            })
            .unwrap();
        (dir, store, rec.row.id)
    }

    fn queued() -> NewBinding {
        NewBinding::Queued {
            ledger_url: "https://ledger.example/witness/task".into(),
            task_id: "t".into(),
            evidence_id: "e".repeat(64),
            witness_id: "did:key:zW".into(),
            requester_id: "did:key:zP".into(),
            body: "{}".into(),
        }
    }

    /// Queued → claimed once (a second claim fails) → an answer; a record keeps its first
    /// binding; a row left sending settles as unknown only once its send is older than the
    /// cutoff, and a late answer still replaces unknown.
    #[test]
    fn a_binding_is_claimed_once_and_an_interrupted_send_settles_as_unknown() {
        let (_dir, store, record) = store_with_record();
        let c = store.connection();
        let b = insert(c, record, &queued(), "2026-12-01T12:00:00Z").unwrap();
        assert_eq!(b.state, BindState::Queued);
        assert_eq!(queued_ids(c), [b.id]);
        // A second binding for the same record keeps the first.
        let again = insert(
            c,
            record,
            &NewBinding::Skipped {
                ledger_url: "x".into(),
                reason: "r".into(),
            },
            "2026-12-01T12:00:01Z",
        )
        .unwrap();
        assert_eq!(again, b);
        assert!(claim(c, b.id, "2026-12-01T12:00:02Z").unwrap());
        assert!(
            !claim(c, b.id, "2026-12-01T12:00:03Z").unwrap(),
            "only one claimant"
        );
        assert!(queued_ids(c).is_empty());
        assert_eq!(settle_interrupted(c, "2026-12-01T12:00:02Z").unwrap(), 0);
        assert_eq!(settle_interrupted(c, "2026-12-01T12:05:00Z").unwrap(), 1);
        let row = get(c, b.id).unwrap();
        assert_eq!(row.state, BindState::Unknown);
        assert!(
            row.describe()
                .starts_with("unknown: the process stopped while sending")
        );
        // Nothing makes an unknown row queued again.
        assert!(!claim(c, b.id, "2026-12-01T12:06:00Z").unwrap());
        answered(
            c,
            b.id,
            "2026-12-01T12:06:00Z",
            201,
            &serde_json::json!({"ok": true}),
        )
        .unwrap();
        let row = get(c, b.id).unwrap();
        assert_eq!(
            (row.state, row.http_status),
            (BindState::Answered, Some(201))
        );
        assert_eq!(row.answer_json(), Some(serde_json::json!({"ok": true})));
        assert_eq!(row.note, None);
        let counts = by_state(c).unwrap();
        assert_eq!(counts.len(), BindState::ALL.len());
        assert!(counts.contains(&(BindState::Answered, 1)));
    }

    fn queued_ids(c: &Connection) -> Vec<i64> {
        super::queued(c).unwrap()
    }
}
