//! Summary rows (migration 9, issue 27): the counts `/metrics` and the status pages show, kept by
//! triggers in the same transaction as the rows they count, so a scrape or a page reads
//! O(targets) rows however long the history is, and a kill -9 cannot leave them wrong.
//!
//! Each reader here has a `recount` twin in [`recount`] that computes the same figure from the
//! whole history, as the code did before: for stores older than migration 9 opened read-only
//! (`records serve` never migrates) and for the tests that hold the two equal.
//!
//! Adding a figure (the ledger follower's, the alerts'): a table and triggers in your own
//! migration, a reader here (or in your own module) beside a `recount` of it, and a test that
//! compares the two over a store real runs built (`tests/summaries.rs`).

use super::StoreError;
use super::consent_checks::ConsentRow;
use crate::filing::{AnswerKind, SubmissionState};
use rusqlite::Connection;
use std::collections::{BTreeMap, BTreeSet};

/// Whether the store has migration 9's tables (a read-only store may be older).
pub fn has_summaries(conn: &Connection) -> Result<bool, StoreError> {
    Ok(super::schema::has_table(conn, "summary_records")?)
}

/// (endpoint, outcome) → stored records; outcome `PASS`, `FAIL` or `none` (no verdict).
pub type RecordCounts = BTreeMap<(String, String), u64>;

/// Stored records by endpoint and outcome.
pub fn records_by_endpoint_outcome(conn: &Connection) -> Result<RecordCounts, StoreError> {
    summary_or_recount(
        conn,
        recount::records_by_endpoint_outcome,
        "SELECT endpoint, outcome, n FROM summary_records WHERE n > 0 ORDER BY 1, 2",
        |r| Ok(((r.get(0)?, r.get(1)?), r.get::<_, i64>(2)? as u64)),
    )
}

/// Assertion name → stored records in which it failed.
pub fn assertion_failures(conn: &Connection) -> Result<BTreeMap<String, u64>, StoreError> {
    summary_or_recount(
        conn,
        recount::assertion_failures,
        "SELECT assertion, n FROM summary_assertion_failures WHERE n > 0 ORDER BY 1",
        |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)),
    )
}

/// Fires by state (`done`, `aborted`, ...), states with none left out.
pub fn fires_by_state(conn: &Connection) -> Result<Vec<(String, u64)>, StoreError> {
    summary_or_recount(
        conn,
        recount::fires_by_state,
        "SELECT state, sum(n) FROM summary_fires GROUP BY state HAVING sum(n) > 0 ORDER BY state",
        |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)),
    )
}

/// Per target: when its last `done` fire finished.
pub fn last_success(conn: &Connection) -> Result<Vec<(String, String)>, StoreError> {
    summary_or_recount(
        conn,
        recount::last_success,
        "SELECT target, last_finished_at FROM summary_fires \
         WHERE state = 'done' AND n > 0 ORDER BY target",
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// Endpoints of records that some daemon fire stored.
pub fn fired_endpoints(conn: &Connection) -> Result<BTreeSet<String>, StoreError> {
    summary_or_recount(
        conn,
        recount::fired_endpoints,
        "SELECT endpoint FROM summary_fired_endpoints",
        |r| r.get::<_, String>(0),
    )
}

/// The latest consent read of every origin, by origin.
pub fn latest_consent(conn: &Connection) -> Result<Vec<ConsentRow>, StoreError> {
    summary_or_recount(
        conn,
        recount::latest_consent,
        "SELECT c.origin, c.checked_at, c.outcome, c.status, c.sha256, c.detail, c.notify \
         FROM summary_consent_latest l JOIN consent_checks c ON c.id = l.check_id \
         ORDER BY c.origin",
        super::consent_checks::consent_from,
    )
}

/// A submission's counting key: where it stands, the intake's last answer, whether counted.
pub type SubmissionKey = (SubmissionState, Option<AnswerKind>, Option<bool>);

/// Submissions by [`SubmissionKey`], keys with none left out, in key order.
pub fn submissions(conn: &Connection) -> Result<Vec<(SubmissionKey, u64)>, StoreError> {
    summary_or_recount(
        conn,
        recount::submissions,
        "SELECT state, nullif(last_answer, ''), nullif(counted, -1), n FROM summary_submissions \
         WHERE n > 0 ORDER BY 1, 2, 3",
        submission_group,
    )
}

/// The results a lookup (`GET <intake>/<sha256>`, issue 34) can log, in `/metrics` order.
pub const LOOKUP_RESULTS: [AnswerKind; 3] = [
    AnswerKind::Found,
    AnswerKind::NotFound,
    AnswerKind::LookupFailed,
];

/// Lookups by result, every result listed (zero included), from migration 11's summary row.
pub fn lookups_by_result(conn: &Connection) -> Result<Vec<(AnswerKind, u64)>, StoreError> {
    if !super::schema::has_table(conn, "summary_lookups")? {
        return recount::lookups_by_result(conn);
    }
    let counted: BTreeMap<String, u64> = read_all(
        conn,
        "SELECT result, n FROM summary_lookups ORDER BY 1",
        |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)),
    )?;
    Ok(every_lookup_result(counted))
}

fn every_lookup_result(counted: BTreeMap<String, u64>) -> Vec<(AnswerKind, u64)> {
    LOOKUP_RESULTS
        .iter()
        .map(|&k| (k, counted.get(k.as_str()).copied().unwrap_or(0)))
        .collect()
}

fn submission_group(r: &rusqlite::Row<'_>) -> rusqlite::Result<(SubmissionKey, u64)> {
    Ok((
        (
            r.get(0)?,
            r.get(1)?,
            r.get::<_, Option<i64>>(2)?.map(|c| c != 0),
        ),
        r.get::<_, i64>(3)? as u64,
    ))
}

/// A figure from migration 9's summary rows (`sql`, each row through `map`), or its `recount`
/// twin on an older store.
fn summary_or_recount<T, C: FromIterator<T>>(
    conn: &Connection,
    recount: fn(&Connection) -> Result<C, StoreError>,
    sql: &str,
    map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<C, StoreError> {
    if !has_summaries(conn)? {
        return recount(conn);
    }
    read_all(conn, sql, map)
}

/// Every row of `sql` (no parameters), mapped and collected: each summary figure is one query.
fn read_all<T, C: FromIterator<T>>(
    conn: &Connection,
    sql: &str,
    map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<C, StoreError> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map([], map)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The same figures from the whole history (the code before migration 9): for older read-only
/// stores, and for the tests that hold the summaries to them.
pub mod recount {
    use super::*;

    pub fn records_by_endpoint_outcome(conn: &Connection) -> Result<RecordCounts, StoreError> {
        let mut stmt = conn.prepare_cached(
            "SELECT endpoint, coalesce(outcome, 'none'), count(*) FROM records GROUP BY 1, 2",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(((r.get(0)?, r.get(1)?), r.get::<_, i64>(2)? as u64))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Every record's bytes read and parsed (the failed assertions as the pages' facts say).
    pub fn assertion_failures(conn: &Connection) -> Result<BTreeMap<String, u64>, StoreError> {
        let mut out = BTreeMap::new();
        let mut stmt = conn.prepare_cached("SELECT canonical FROM records ORDER BY id")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            // Rows may be zstd frames at rest (migration 8).
            let canonical =
                super::super::codec::decode(conn, r.get(0)?).map_err(rusqlite::Error::from)?;
            for name in super::super::meta::facts_from_canonical(&canonical).failed {
                *out.entry(name).or_default() += 1;
            }
        }
        Ok(out)
    }

    pub fn fires_by_state(conn: &Connection) -> Result<Vec<(String, u64)>, StoreError> {
        if !super::super::schema::has_daemon_walks(conn)? {
            return Ok(Vec::new());
        }
        let mut stmt = conn.prepare_cached(
            "SELECT state, count(*) FROM daemon_walks GROUP BY state ORDER BY state",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn last_success(conn: &Connection) -> Result<Vec<(String, String)>, StoreError> {
        if !super::super::schema::has_daemon_walks(conn)? {
            return Ok(Vec::new());
        }
        let mut stmt = conn.prepare_cached(
            "SELECT target, max(finished_at) FROM daemon_walks WHERE state = 'done' \
             GROUP BY target ORDER BY target",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn fired_endpoints(conn: &Connection) -> Result<BTreeSet<String>, StoreError> {
        if !super::super::schema::has_daemon_walks(conn)? {
            return Ok(BTreeSet::new());
        }
        let mut stmt = conn.prepare_cached(
            "SELECT DISTINCT r.endpoint FROM daemon_walks w JOIN records r ON r.id = w.record_id",
        )?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn latest_consent(conn: &Connection) -> Result<Vec<ConsentRow>, StoreError> {
        if !super::super::schema::has_daemon_walks(conn)? {
            return Ok(Vec::new());
        }
        let mut stmt = conn.prepare_cached(
            "SELECT c.origin, c.checked_at, c.outcome, c.status, c.sha256, c.detail, c.notify \
             FROM consent_checks c JOIN (SELECT origin, max(id) AS id FROM consent_checks GROUP BY origin) m \
             ON c.id = m.id ORDER BY c.origin",
        )?;
        let rows = stmt.query_map([], super::super::consent_checks::consent_from)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Every lookup in the attempt log.
    pub fn lookups_by_result(conn: &Connection) -> Result<Vec<(AnswerKind, u64)>, StoreError> {
        let mut stmt = conn.prepare_cached(
            "SELECT answer, count(*) FROM submission_attempts \
             WHERE answer IN ('found', 'not_found', 'lookup_failed') GROUP BY answer",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))?;
        Ok(super::every_lookup_result(rows.collect::<Result<_, _>>()?))
    }

    pub fn submissions(conn: &Connection) -> Result<Vec<(SubmissionKey, u64)>, StoreError> {
        let mut stmt = conn.prepare_cached(
            "SELECT state, last_answer, CASE WHEN counted IS NULL THEN NULL \
             WHEN counted != 0 THEN 1 ELSE 0 END, count(*) FROM submissions \
             GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        )?;
        let rows = stmt.query_map([], super::submission_group)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
