//! The `reciprocal_walks` table (migration 18, issue 44; witness-pool.md §6): each message that
//! asked for a reciprocal walk, what it was answered, and the walk it queued. The queue
//! decision (§6.2 steps 6–8) is taken in one write transaction with the row it writes, so two
//! requests arriving together cannot both pass the budget or queue the same origin twice.

use super::StoreError;
use crate::reciprocal::{self, Decline, OriginNow, Queue, state};
use rusqlite::{Connection, OptionalExtension, params};

/// One request, as it arrived.
#[derive(Debug, Clone, Copy)]
pub struct Requested<'a> {
    /// UTC, `2026-12-06T03:40:00.123Z`.
    pub requested_at: &'a str,
    pub caller_card: &'a str,
    /// `https://host[:port]`, once steps 1–2 have read it.
    pub origin: Option<&'a str>,
}

impl Requested<'_> {
    fn day(&self) -> &str {
        self.requested_at.get(..10).unwrap_or(self.requested_at)
    }
}

/// A row as the status pages and the walker read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReciprocalWalk {
    pub id: i64,
    pub requested_at: String,
    pub caller_card: String,
    pub origin: Option<String>,
    pub state: String,
    pub reason: Option<String>,
    pub detail: Option<String>,
    pub walk_by: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub record_id: Option<i64>,
    pub record_sha256: Option<String>,
    pub intake_url: Option<String>,
}

const COLUMNS: &str = "id, requested_at, caller_card, origin, state, reason, detail, walk_by, \
     started_at, finished_at, record_id, record_sha256, intake_url";

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ReciprocalWalk> {
    Ok(from_columns!(r => ReciprocalWalk {
        id, requested_at, caller_card, origin, state, reason, detail, walk_by, started_at,
        finished_at, record_id, record_sha256, intake_url,
    }))
}

fn insert(
    conn: &Connection,
    r: &Requested<'_>,
    row_state: &str,
    reason: Option<&str>,
    detail: Option<&str>,
    walk_by: Option<&str>,
) -> Result<i64, StoreError> {
    conn.prepare_cached(
        "INSERT INTO reciprocal_walks \
         (requested_at, caller_card, origin, state, reason, detail, walk_by) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        r.requested_at,
        r.caller_card,
        r.origin,
        row_state,
        reason,
        detail,
        walk_by
    ])?;
    Ok(conn.last_insert_rowid())
}

/// A request declined at steps 1–5 (before the queue was looked at).
pub fn insert_declined(
    conn: &Connection,
    r: &Requested<'_>,
    reason: Decline,
    detail: Option<&str>,
) -> Result<i64, StoreError> {
    insert(
        conn,
        r,
        state::DECLINED,
        Some(reason.as_str()),
        detail,
        None,
    )
}

/// Steps 6–8 for a caller that passed steps 1–5, and the row that says what was decided: a
/// new queued walk (to be walked by `walk_by`), a join of the walk already queued, or a
/// decline. The decision and its row are one transaction.
pub fn queue(
    conn: &Connection,
    r: &Requested<'_>,
    walk_by: &str,
    budget: u32,
) -> Result<Queue, StoreError> {
    let origin = r.origin.unwrap_or_default();
    let tx = super::write_transaction(conn)?;
    let now = origin_now(&tx, origin, r.day())?;
    let decision = reciprocal::queue_decision(now, taken_on(&tx, r.day())?, budget);
    match decision {
        Queue::Join(id) => {
            let detail = format!("joined the walk already queued (#{id})");
            insert(&tx, r, state::JOINED, None, Some(&detail), None)?;
        }
        Queue::Declined(reason) => {
            let detail = match reason {
                Decline::Budget => {
                    format!("the day's budget of {budget} reciprocal walks is spent")
                }
                _ => "a reciprocal walk of this origin was filed today (UTC)".into(),
            };
            insert(
                &tx,
                r,
                state::DECLINED,
                Some(reason.as_str()),
                Some(&detail),
                None,
            )?;
        }
        Queue::New => {
            insert(&tx, r, state::QUEUED, None, None, Some(walk_by))?;
        }
    }
    tx.commit()?;
    Ok(decision)
}

/// What the queue holds for `origin` on `day` (UTC, `YYYY-MM-DD`).
fn origin_now(conn: &Connection, origin: &str, day: &str) -> Result<OriginNow, StoreError> {
    let pending = conn
        .prepare_cached(
            "SELECT id FROM reciprocal_walks WHERE origin = ?1 AND state IN ('queued', 'running') \
             ORDER BY id LIMIT 1",
        )?
        .query_row([origin], |r| r.get(0))
        .optional()?;
    let filed_today = conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM reciprocal_walks WHERE origin = ?1 AND state = 'walked' \
             AND substr(finished_at, 1, 10) = ?2)",
        )?
        .query_row([origin, day], |r| r.get(0))?;
    Ok(OriginNow {
        pending,
        filed_today,
    })
}

/// Walks queued on `day` that count against its budget.
fn taken_on(conn: &Connection, day: &str) -> Result<u32, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT state, COUNT(*) FROM reciprocal_walks WHERE substr(requested_at, 1, 10) = ?1 \
         GROUP BY state",
    )?;
    let rows = stmt.query_map([day], |r| Ok((r.get::<_, String>(0)?, r.get::<_, u32>(1)?)))?;
    let mut taken = 0;
    for row in rows {
        let (s, n) = row?;
        if state::counts_against_budget(&s) {
            taken += n;
        }
    }
    Ok(taken)
}

/// At start: walks a stopped daemon left `running` are queued again (their record, if the
/// walk got that far, is in the store, and filing never sends a record twice).
pub fn requeue_interrupted(conn: &Connection) -> Result<usize, StoreError> {
    Ok(conn.execute(
        "UPDATE reciprocal_walks SET state = 'queued', started_at = NULL, \
         detail = 'interrupted: the daemon stopped during the walk; walked again' \
         WHERE state = 'running'",
        [],
    )?)
}

/// The oldest queued walk.
pub fn next_queued(conn: &Connection) -> Result<Option<ReciprocalWalk>, StoreError> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM reciprocal_walks WHERE state = 'queued' ORDER BY id LIMIT 1"
        ))?
        .query_row([], from_row)
        .optional()?)
}

/// Take a queued walk: false when it is no longer queued.
pub fn start(conn: &Connection, id: i64, now: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(
            "UPDATE reciprocal_walks SET state = 'running', started_at = ?2 \
             WHERE id = ?1 AND state = 'queued'",
        )?
        .execute(params![id, now])?
        == 1)
}

/// How a walk ended.
#[derive(Debug, Clone, Default)]
pub struct Ended<'a> {
    /// `filed`, `cancelled` or `failed`.
    pub state: &'a str,
    pub reason: Option<&'a str>,
    pub detail: Option<&'a str>,
    pub record_id: Option<i64>,
    pub record_sha256: Option<&'a str>,
    pub intake_url: Option<&'a str>,
}

pub fn finish(conn: &Connection, id: i64, end: &Ended<'_>, now: &str) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE reciprocal_walks SET state = ?2, reason = ?3, detail = ?4, record_id = ?5, \
         record_sha256 = ?6, intake_url = ?7, finished_at = ?8 WHERE id = ?1",
    )?
    .execute(params![
        id,
        end.state,
        end.reason,
        end.detail,
        end.record_id,
        end.record_sha256,
        end.intake_url,
        now
    ])?;
    Ok(())
}

/// The newest `limit` rows, newest first (none in a store older than migration 18).
pub fn recent(conn: &Connection, limit: usize) -> Result<Vec<ReciprocalWalk>, StoreError> {
    if !super::schema::has_table(conn, "reciprocal_walks")? {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM reciprocal_walks ORDER BY id DESC LIMIT ?1"
    ))?;
    let rows = stmt
        .query_map([limit as i64], from_row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The walk (if any) that produced `record_id`.
pub fn for_record(conn: &Connection, record_id: i64) -> Result<Option<ReciprocalWalk>, StoreError> {
    if !super::schema::has_table(conn, "reciprocal_walks")? {
        return Ok(None);
    }
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM reciprocal_walks WHERE record_id = ?1 ORDER BY id DESC LIMIT 1"
        ))?
        .query_row([record_id], from_row)
        .optional()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, crate::store::Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(&dir.path().join("r.db")).unwrap();
        (dir, store)
    }

    fn asked<'a>(at: &'a str, origin: &'a str) -> Requested<'a> {
        Requested {
            requested_at: at,
            caller_card: "https://caller.example.com/.well-known/agent-card.json",
            origin: Some(origin),
        }
    }

    #[test]
    fn the_queue_joins_a_pending_walk_and_declines_a_walked_origin_and_a_spent_budget() {
        let (_d, store) = store();
        let c = store.connection();
        let a = "https://a.example.com";
        let t = "2026-12-06T10:00:00.000Z";
        assert_eq!(
            queue(c, &asked(t, a), "2026-12-07T10:00:00.000Z", 2).unwrap(),
            Queue::New
        );
        let first = next_queued(c).unwrap().unwrap();
        assert_eq!(
            queue(c, &asked(t, a), "x", 2).unwrap(),
            Queue::Join(first.id),
            "the same origin again joins the queued walk"
        );
        assert!(start(c, first.id, t).unwrap());
        assert!(!start(c, first.id, t).unwrap(), "a walk is taken once");
        finish(
            c,
            first.id,
            &Ended {
                state: state::WALKED,
                record_id: Some(1),
                ..Ended::default()
            },
            "2026-12-06T10:01:00.000Z",
        )
        .unwrap();
        assert_eq!(
            queue(c, &asked(t, a), "x", 2).unwrap(),
            Queue::Declined(Decline::AlreadyWalked)
        );
        // The budget counts what was queued today: one so far.
        let b = "https://b.example.com";
        assert_eq!(queue(c, &asked(t, b), "x", 2).unwrap(), Queue::New);
        assert_eq!(
            queue(c, &asked(t, "https://c.example.com"), "x", 2).unwrap(),
            Queue::Declined(Decline::Budget)
        );
        // A new UTC day has a new budget, and the origin walked yesterday may be walked again.
        let tomorrow = "2026-12-07T00:00:01.000Z";
        assert_eq!(queue(c, &asked(tomorrow, a), "x", 2).unwrap(), Queue::New);
        let rows = recent(c, 10).unwrap();
        let states: Vec<&str> = rows.iter().map(|r| r.state.as_str()).collect();
        assert_eq!(
            states,
            [
                "queued", "declined", "queued", "declined", "joined", "walked"
            ]
        );
        assert_eq!(rows[1].reason.as_deref(), Some("budget"));
        assert_eq!(rows[3].reason.as_deref(), Some("already_walked"));
    }

    #[test]
    fn a_walk_interrupted_by_a_stop_is_queued_again() {
        let (_d, store) = store();
        let c = store.connection();
        let t = "2026-12-06T10:00:00.000Z";
        queue(c, &asked(t, "https://a.example.com"), "y", 20).unwrap();
        let row = next_queued(c).unwrap().unwrap();
        assert!(start(c, row.id, t).unwrap());
        assert!(next_queued(c).unwrap().is_none());
        assert_eq!(requeue_interrupted(c).unwrap(), 1);
        let again = next_queued(c).unwrap().unwrap();
        assert_eq!(again.id, row.id);
        assert!(again.detail.unwrap().starts_with("interrupted"));
        // The table refuses a state it does not know.
        let bad = finish(
            c,
            row.id,
            &Ended {
                state: "maybe",
                ..Ended::default()
            },
            t,
        );
        assert!(bad.is_err());
    }
}
