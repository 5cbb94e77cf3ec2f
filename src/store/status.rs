//! Read-only queries behind the status pages (`crate::pages`): a target's latest fires, an
//! endpoint's records across witnesses, a record's neighbours and intake answers, lane use per
//! day. Each reads a bounded number of rows through an index (migration 5), never every row, so
//! the pages stay fast on a large store. Shared by every face that serves the pages (the daemon's
//! listener, `records serve`); the daemon writes `daemon_walks` (`crate::daemon::db`), these only
//! read it.

use super::StoreError;
use rusqlite::{Connection, OptionalExtension, params};

pub use super::meta::{Facts, facts_from_canonical};

fn split_failed(s: &str) -> Vec<String> {
    s.split(',')
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether the store has migration 5's `record_facts` (a read-only store may be older).
pub fn has_facts(conn: &Connection) -> Result<bool, StoreError> {
    Ok(super::schema::has_table(conn, "record_facts")?)
}

pub use super::schema::has_daemon_walks;

/// Every distinct value of an indexed text column, in order, by one index seek per value
/// (a skip scan): a thousand targets cost a thousand seeks, not a pass over every row.
fn distinct_by_seek(
    conn: &Connection,
    table: &str,
    column: &str,
    limit: usize,
) -> Result<Vec<String>, StoreError> {
    let sql = format!("SELECT {column} FROM {table} WHERE {column} > ?1 ORDER BY {column} LIMIT 1");
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut out: Vec<String> = Vec::new();
    let mut after = String::new();
    while out.len() < limit {
        let next: Option<String> = stmt.query_row([&after], |r| r.get(0)).optional()?;
        match next {
            Some(v) => {
                after = v.clone();
                out.push(v);
            }
            None => break,
        }
    }
    Ok(out)
}

/// Target names the daemon has fired, in order (at most `limit`).
pub fn walked_targets(conn: &Connection, limit: usize) -> Result<Vec<String>, StoreError> {
    if !has_daemon_walks(conn)? {
        return Ok(Vec::new());
    }
    // The summary rows (one per target and state) are read in one pass; the seeks cost a
    // third of the overview at 10,000,000 fires.
    if super::summary::has_summaries(conn)? {
        return distinct_from(conn, "summary_fires", "target", limit);
    }
    distinct_by_seek(conn, "daemon_walks", "target", limit)
}

/// Endpoints records were stored for, in order (at most `limit`), for the overview: from the
/// summary rows when the store has them (they keep an endpoint whose records were all archived
/// since), else by seeks as [`endpoints`].
pub fn stored_endpoints(conn: &Connection, limit: usize) -> Result<Vec<String>, StoreError> {
    if super::summary::has_summaries(conn)? {
        return distinct_from(conn, "summary_records", "endpoint", limit);
    }
    endpoints(conn, limit)
}

/// `column`'s distinct values in a small table (a summary), in order.
fn distinct_from(
    conn: &Connection,
    table: &str,
    column: &str,
    limit: usize,
) -> Result<Vec<String>, StoreError> {
    let sql = format!("SELECT DISTINCT {column} FROM {table} ORDER BY {column} LIMIT ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_map([limit as i64], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}

/// Endpoints with stored records, in order (at most `limit`).
pub fn endpoints(conn: &Connection, limit: usize) -> Result<Vec<String>, StoreError> {
    distinct_by_seek(conn, "records", "endpoint", limit)
}

/// One scheduled fire of a target, or one record of an endpoint (stores without a daemon).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fire {
    /// `daemon_walks.id` (0 for a bare record).
    pub walk_id: i64,
    /// `done`, `aborted`, `declined`, `skipped_overlap`, `error`, `running` (`done` for a bare
    /// record).
    pub state: String,
    /// When it fired (the record's `walked_at` for a bare record).
    pub at: String,
    pub origin: Option<String>,
    pub endpoint: Option<String>,
    pub detail: Option<String>,
    /// The pipeline's submission state as the daemon noted it.
    pub submission: Option<String>,
    pub record: Option<FireRecord>,
    /// The record's signing key (endpoint records only: tells witnesses of one name apart).
    pub public_key_b64: Option<String>,
}

/// The record a fire stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FireRecord {
    pub id: i64,
    pub sha256: String,
    pub walked_at: String,
    pub endpoint: String,
    /// `PASS`, `FAIL`, or None (commitment records carry no verdict).
    pub outcome: Option<String>,
    pub n_pass: Option<i64>,
    pub n_total: Option<i64>,
    pub facts: Facts,
}

/// The columns every fire query selects after its own: record columns, then facts.
fn record_cols(facts: bool) -> &'static str {
    if facts {
        "f.record_id, f.sha256, f.walked_at, f.endpoint, f.outcome, f.n_pass, f.n_total, \
         f.transport_error, f.failed, f.witness_name, f.vantage, NULL"
    } else {
        "r.id, r.sha256, r.walked_at, r.endpoint, r.outcome, r.n_pass, r.n_total, \
         NULL, NULL, NULL, NULL, r.canonical"
    }
}

fn record_from(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Option<FireRecord>> {
    let Some(id) = r.get::<_, Option<i64>>(at)? else {
        return Ok(None);
    };
    let facts = match r.get::<_, Option<Vec<u8>>>(at + 11)? {
        Some(bytes) => facts_from_canonical(&bytes),
        None => Facts {
            transport_error: r.get::<_, Option<bool>>(at + 7)?.unwrap_or(false),
            failed: split_failed(&r.get::<_, Option<String>>(at + 8)?.unwrap_or_default()),
            witness_name: r.get(at + 9)?,
            vantage: r.get(at + 10)?,
        },
    };
    Ok(Some(FireRecord {
        id,
        sha256: r.get(at + 1)?,
        walked_at: r.get(at + 2)?,
        endpoint: r.get(at + 3)?,
        outcome: r.get(at + 4)?,
        n_pass: r.get(at + 5)?,
        n_total: r.get(at + 6)?,
        facts,
    }))
}

/// How a fire query reaches its record: `record_facts` alone when it exists (no `records` row,
/// whose bytes sit before its small columns, is read), else `records`.
fn fire_join(facts: bool) -> &'static str {
    if facts {
        " LEFT JOIN record_facts f ON f.record_id = w.record_id"
    } else {
        " LEFT JOIN records r ON r.id = w.record_id"
    }
}

const WALK_COLS: &str = "w.id, w.state, w.started_at, w.origin, w.endpoint, w.detail, w.submission";

fn fire_from(r: &rusqlite::Row<'_>) -> rusqlite::Result<Fire> {
    Ok(Fire {
        walk_id: r.get(0)?,
        state: r.get(1)?,
        at: r.get(2)?,
        origin: r.get(3)?,
        endpoint: r.get(4)?,
        detail: r.get(5)?,
        submission: r.get(6)?,
        record: record_from(r, 7)?,
        public_key_b64: None,
    })
}

/// Fires (with their records' facts) matching `tail` (the WHERE and ORDER of the query, over
/// `daemon_walks w`), as every fire reader reads them.
fn fires(
    conn: &Connection,
    tail: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<Fire>, StoreError> {
    let facts = has_facts(conn)?;
    let sql = format!(
        "SELECT {WALK_COLS}, {} FROM daemon_walks w{} {tail}",
        record_cols(facts),
        fire_join(facts)
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt
        .query_map(params, fire_from)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// A target's latest `n` fires, newest first.
pub fn latest_fires(conn: &Connection, target: &str, n: usize) -> Result<Vec<Fire>, StoreError> {
    fires_after(conn, target, i64::MIN, n)
}

/// A target's fires after fire `after_id`, newest first, at most `n`: what happened since a
/// strip was read (`pages::strips`).
pub fn fires_after(
    conn: &Connection,
    target: &str,
    after_id: i64,
    n: usize,
) -> Result<Vec<Fire>, StoreError> {
    fires(
        conn,
        "WHERE w.target = ?1 AND w.id > ?2 ORDER BY w.id DESC LIMIT ?3",
        params![target, after_id, n as i64],
    )
}

/// One fire by its id (`None`: no such row).
pub fn fire_by_id(conn: &Connection, id: i64) -> Result<Option<Fire>, StoreError> {
    Ok(fires(conn, "WHERE w.id = ?1", [id])?.pop())
}

/// A target's fires started in `[from, to)` (RFC 3339 text), newest first, at most `n`.
pub fn fires_between(
    conn: &Connection,
    target: &str,
    from: &str,
    to: &str,
    n: usize,
) -> Result<Vec<Fire>, StoreError> {
    fires(
        conn,
        "WHERE w.target = ?1 AND w.started_at >= ?2 AND w.started_at < ?3 \
         ORDER BY w.started_at DESC, w.id DESC LIMIT ?4",
        params![target, from, to, n as i64],
    )
}

/// A target's fires since `from` by UTC day and how they ended: `(day, kind, count)` where kind
/// is the record's outcome for a stored walk, else the fire's state. At most `max_rows` fires
/// are read (a target firing every minute for a month would otherwise be 43,200 rows).
pub fn daily_outcomes(
    conn: &Connection,
    target: &str,
    from: &str,
    max_rows: usize,
) -> Result<Vec<(String, String, u64)>, StoreError> {
    let table = if has_facts(conn)? {
        "record_facts r ON r.record_id"
    } else {
        "records r ON r.id"
    };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT substr(started_at, 1, 10) AS day, kind, count(*) FROM ( \
            SELECT w.started_at, CASE WHEN w.state = 'done' THEN coalesce(r.outcome, 'none') \
                ELSE w.state END AS kind \
            FROM daemon_walks w LEFT JOIN {table} = w.record_id \
            WHERE w.target = ?1 AND w.started_at >= ?2 ORDER BY w.started_at DESC LIMIT ?3) \
         GROUP BY day, kind ORDER BY day, kind"
    ))?;
    let rows = stmt
        .query_map(params![target, from, max_rows as i64], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u64))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// An endpoint's latest `n` records (every witness the store holds), newest walk first, each as
/// a fire of state `done`.
pub fn endpoint_records(
    conn: &Connection,
    endpoint: &str,
    n: usize,
) -> Result<Vec<Fire>, StoreError> {
    let facts = has_facts(conn)?;
    let sql = format!(
        "SELECT {}, r.public_key_b64 FROM records r{} WHERE r.endpoint = ?1 \
         ORDER BY r.walked_at DESC, r.id DESC LIMIT ?2",
        record_cols(facts),
        if facts {
            " JOIN record_facts f ON f.record_id = r.id"
        } else {
            ""
        }
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt
        .query_map(params![endpoint, n as i64], |r| {
            let rec = record_from(r, 0)?;
            Ok(Fire {
                state: "done".into(),
                at: rec
                    .as_ref()
                    .map(|x| x.walked_at.clone())
                    .unwrap_or_default(),
                endpoint: Some(endpoint.to_string()),
                public_key_b64: r.get(12)?,
                record: rec,
                ..Fire::default()
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The newest record (for the witness block when no config names one).
pub fn newest_record_id(conn: &Connection) -> Result<Option<i64>, StoreError> {
    Ok(conn.query_row("SELECT max(id) FROM records", [], |r| r.get(0))?)
}

/// `(state, count)` of the outbox, ordered by the state's text, from the summary rows.
pub fn outbox_by_state(
    conn: &Connection,
) -> Result<Vec<(crate::filing::SubmissionState, u64)>, StoreError> {
    let mut out: std::collections::BTreeMap<&'static str, _> = Default::default();
    for ((state, _, _), n) in super::summary::submissions(conn)? {
        out.entry(state.as_str()).or_insert((state, 0)).1 += n;
    }
    Ok(out.into_values().collect())
}

/// Accepted submissions (or found by a lookup after a lost acceptance) per UTC day and lane
/// since `from_day`: `(day, lane, count)`.
pub fn lanes_by_day(
    conn: &Connection,
    from_day: &str,
) -> Result<Vec<(String, String, u64)>, StoreError> {
    use crate::filing::AnswerKind;
    let mut stmt = conn.prepare_cached(
        "SELECT filed_day, lane, count(*) FROM submissions \
         WHERE filed_day >= ?1 AND last_answer IN (?2, ?3) GROUP BY filed_day, lane \
         ORDER BY filed_day, lane",
    )?;
    let rows = stmt
        .query_map(
            rusqlite::params![from_day, AnswerKind::Accepted, AnswerKind::Found],
            |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u64)),
        )?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The database's size in bytes (pages × page size; the WAL not included).
pub fn size_bytes(conn: &Connection) -> Result<u64, StoreError> {
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
    let size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
    Ok((pages * size) as u64)
}

/// `(id, sha256, chain_hash)` of a row.
pub type ChainRow = (i64, String, String);

/// `(id, sha256, chain_hash)` of the row with this id, if any.
pub fn chain_row(conn: &Connection, id: i64) -> Result<Option<ChainRow>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT id, sha256, chain_hash FROM records WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?)
}

/// The rows just before and after `id` in chain order (ids can have gaps after a tamper).
pub fn neighbours(
    conn: &Connection,
    id: i64,
) -> Result<(Option<ChainRow>, Option<ChainRow>), StoreError> {
    let prev = conn
        .prepare_cached(
            "SELECT id, sha256, chain_hash FROM records WHERE id < ?1 ORDER BY id DESC LIMIT 1",
        )?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    let next = conn
        .prepare_cached(
            "SELECT id, sha256, chain_hash FROM records WHERE id > ?1 ORDER BY id LIMIT 1",
        )?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    Ok((prev, next))
}

/// One answer an intake gave (`submission_attempts`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub attempted_at: String,
    pub answer: crate::filing::AnswerKind,
    pub status: i64,
    pub body: String,
}

pub fn attempts(conn: &Connection, submission_id: i64) -> Result<Vec<Attempt>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT attempted_at, answer, status, body FROM submission_attempts \
         WHERE submission_id = ?1 ORDER BY id",
    )?;
    let rows = stmt
        .query_map([submission_id], |r| {
            Ok(from_columns!(r => Attempt {
                attempted_at, answer, status, body,
            }))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The commitment record a revealed full record opens: `(sha256, id)`.
pub fn commitment_opened_by(
    conn: &Connection,
    full_sha256: &str,
) -> Result<Option<(String, i64)>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT r.sha256, r.id FROM kept_full k JOIN records r ON r.id = k.record_id \
             WHERE k.sha256 = ?1 LIMIT 1",
        )?
        .query_row([full_sha256], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// The daemon fire that stored a record: `(target, started_at)`.
pub fn fire_of_record(
    conn: &Connection,
    record_id: i64,
) -> Result<Option<(String, String)>, StoreError> {
    if !has_daemon_walks(conn)? {
        return Ok(None);
    }
    // daemon_walks_record (migration 5) makes this one seek.
    Ok(conn
        .prepare_cached("SELECT target, started_at FROM daemon_walks WHERE record_id = ?1 LIMIT 1")?
        .query_row([record_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}
