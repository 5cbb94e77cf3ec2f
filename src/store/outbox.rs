//! The outbox (migration 2): submissions of stored records to witness intakes, their state and
//! every answer. Plain functions over a connection so the pipeline can run them inside the
//! record's own insert transaction.

use super::StoreError;
use crate::filing::{AnswerKind, Facts, Outcome, SubmissionState, Summary};
use rusqlite::{Connection, OptionalExtension, params};

const QUEUED: SubmissionState = SubmissionState::Queued;
const SENDING: SubmissionState = SubmissionState::Sending;
const FILED: SubmissionState = SubmissionState::Filed;
const REFUSED: SubmissionState = SubmissionState::Refused;
const ACCEPTED: AnswerKind = AnswerKind::Accepted;
/// A lookup found the record our POST left at the intake: it used the lane like an acceptance.
const FOUND: AnswerKind = AnswerKind::Found;

/// A new outbox row.
#[derive(Debug, Clone)]
pub struct NewSubmission<'a> {
    pub record_id: i64,
    pub intake_url: &'a str,
    pub lane: &'a str,
    pub identity: &'a str,
    pub endpoint: &'a str,
    pub state: SubmissionState,
    pub next_attempt_at: Option<&'a str>,
    pub last_error: Option<&'a str>,
    pub now: &'a str,
}

/// One outbox row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    pub id: i64,
    pub record_id: i64,
    pub intake_url: String,
    pub lane: String,
    pub identity: String,
    pub endpoint: String,
    pub state: SubmissionState,
    pub attempts: i64,
    pub next_attempt_at: Option<String>,
    pub last_answer: Option<AnswerKind>,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    pub reason_code: Option<String>,
    pub counted: Option<bool>,
    pub count_reason: Option<String>,
    pub filed_day: Option<String>,
}

impl Submission {
    /// Where this submission stands, as every face shows it.
    pub fn summary(&self) -> Summary {
        self.facts().summary()
    }

    pub fn facts(&self) -> Facts<'_> {
        Facts {
            state: self.state,
            answer: self.last_answer,
            counted: self.counted,
            count_reason: self.count_reason.as_deref(),
            reason_code: self.reason_code.as_deref(),
            error: self.last_error.as_deref(),
            next_attempt_at: self.next_attempt_at.as_deref(),
        }
    }
}

const COLUMNS: &str = "id, record_id, intake_url, lane, identity, endpoint, state, attempts, \
    next_attempt_at, last_answer, last_status, last_error, reason_code, counted, count_reason, filed_day";

fn row(r: &rusqlite::Row) -> rusqlite::Result<Submission> {
    Ok(from_columns!(r => Submission {
        id, record_id, intake_url, lane, identity, endpoint, state, attempts, next_attempt_at,
        last_answer, last_status, last_error, reason_code,
        counted(|v: Option<i64>| v.map(|c| c != 0)), count_reason, filed_day,
    }))
}

/// Insert an outbox row; an existing row for the same record and intake is kept (a record is
/// planned for an intake once) and returned.
pub fn insert(conn: &Connection, s: &NewSubmission) -> Result<Submission, StoreError> {
    conn.prepare_cached(
        "INSERT OR IGNORE INTO submissions (record_id, intake_url, lane, identity, endpoint, state, \
         next_attempt_at, last_error, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)",
    )?
    .execute(params![s.record_id, s.intake_url, s.lane, s.identity, s.endpoint, s.state, s.next_attempt_at, s.last_error, s.now])?;
    let sql = format!("SELECT {COLUMNS} FROM submissions WHERE record_id = ?1 AND intake_url = ?2");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row(params![s.record_id, s.intake_url], row)?)
}

pub fn get(conn: &Connection, id: i64) -> Result<Submission, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM submissions WHERE id = ?1");
    Ok(conn.prepare_cached(&sql)?.query_row([id], row)?)
}

/// The submissions of a record.
pub fn for_record(conn: &Connection, record_id: i64) -> Result<Vec<Submission>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM submissions WHERE record_id = ?1 ORDER BY id");
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt
        .query_map([record_id], row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Rows to try now: queued and due, or `sending` and due (left by a process that stopped
/// mid-request, due at once; or waiting out the backoff after a lost answer): those are looked
/// up before anything is sent again.
pub fn due(conn: &Connection, now: &str) -> Result<Vec<Submission>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM submissions WHERE state IN (?2, ?3) \
         AND (next_attempt_at IS NULL OR next_attempt_at <= ?1) ORDER BY id"
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt
        .query_map(params![now, SENDING, QUEUED], row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Whether this identity already has a record for this endpoint planned or filed with this
/// intake on this UTC day (the once-per-day rule: only the first is counted).
pub fn already_planned_today(
    conn: &Connection,
    intake_url: &str,
    identity: &str,
    endpoint: &str,
    day: &str,
) -> Result<bool, StoreError> {
    let found: Option<i64> = conn
        .query_row(
            "SELECT id FROM submissions WHERE intake_url = ?1 AND identity = ?2 AND endpoint = ?3 \
             AND substr(created_at, 1, 10) = ?4 AND state IN (?5, ?6, ?7) LIMIT 1",
            params![intake_url, identity, endpoint, day, QUEUED, SENDING, FILED],
            |r| r.get(0),
        )
        .optional()?;
    Ok(found.is_some())
}

/// Records this store had accepted (201, or found by a lookup after a lost 201) by an intake on
/// a UTC day: `(all lanes, this lane)`.
pub fn accepted_on(
    conn: &Connection,
    intake_url: &str,
    lane: &str,
    day: &str,
) -> Result<(u32, u32), StoreError> {
    Ok(conn.query_row(
        "SELECT count(*), coalesce(sum(lane = ?2), 0) FROM submissions \
         WHERE intake_url = ?1 AND filed_day = ?3 AND last_answer IN (?4, ?5)",
        params![intake_url, lane, day, ACCEPTED, FOUND],
        |r| Ok((r.get::<_, i64>(0)? as u32, r.get::<_, i64>(1)? as u32)),
    )?)
}

/// Mark a row as being sent (before the request leaves). Its retry time is cleared: a process
/// stopped before the answer is recorded leaves it due at once, for a lookup.
pub fn mark_sending(conn: &Connection, id: i64, now: &str) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE submissions SET state = ?3, attempts = attempts + 1, next_attempt_at = NULL, \
         updated_at = ?2 WHERE id = ?1",
    )?
    .execute(params![id, now, SENDING])?;
    Ok(())
}

/// What happened on one attempt, to be written with its log row.
#[derive(Debug, Clone)]
pub struct AttemptResult<'a> {
    pub state: SubmissionState,
    pub answer: AnswerKind,
    pub status: u16,
    pub body: &'a str,
    pub error: Option<&'a str>,
    pub reason_code: Option<&'a str>,
    pub counted: Option<bool>,
    pub count_reason: Option<&'a str>,
    pub filed_day: Option<&'a str>,
    pub next_attempt_at: Option<&'a str>,
}

/// Record an attempt's answer: the append-only log row and the submission's new state, in one
/// transaction. An acceptance is final: a later answer is logged but never replaces it (a
/// `duplicate` after an `accepted` would under-count the day's lane).
pub fn record_attempt(
    conn: &Connection,
    id: i64,
    now: &str,
    a: &AttemptResult,
) -> Result<(), StoreError> {
    record_attempt_then(conn, id, now, a, |_| Ok(()))
}

/// [`record_attempt`], running `then` in the same transaction before it commits: what the
/// answer causes elsewhere (an alert that a lane is full) is stored exactly when the answer is.
pub fn record_attempt_then(
    conn: &Connection,
    id: i64,
    now: &str,
    a: &AttemptResult,
    then: impl FnOnce(&Connection) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let tx = super::write_transaction(conn)?;
    conn.prepare_cached(
        "INSERT INTO submission_attempts (submission_id, attempted_at, answer, status, body) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![id, now, a.answer, a.status, a.body])?;
    let accepted: bool = conn
        .prepare_cached("SELECT coalesce(last_answer, '') = ?2 FROM submissions WHERE id = ?1")?
        .query_row(params![id, ACCEPTED], |r| r.get(0))?;
    if accepted {
        conn.prepare_cached(
            "UPDATE submissions SET state = ?3, next_attempt_at = NULL, updated_at = ?2 WHERE id = ?1",
        )?
        .execute(params![id, now, FILED])?;
        super::ledger::start_following(conn, id, now)?;
        then(conn)?;
        tx.commit()?;
        return Ok(());
    }
    conn.prepare_cached(
        "UPDATE submissions SET state = ?2, last_answer = ?3, last_status = ?4, last_error = ?5, \
         reason_code = coalesce(?6, reason_code), counted = coalesce(?7, counted), \
         count_reason = coalesce(?8, count_reason), filed_day = coalesce(?9, filed_day), \
         next_attempt_at = ?10, updated_at = ?11 WHERE id = ?1",
    )?
    .execute(params![
        id,
        a.state,
        a.answer,
        a.status,
        a.error,
        a.reason_code,
        a.counted.map(i64::from),
        a.count_reason,
        a.filed_day,
        a.next_attempt_at,
        now
    ])?;
    if a.state == FILED {
        // Accepted (201) or found stored (dedupe): followed into the ledger from now on,
        // in this same transaction.
        super::ledger::start_following(conn, id, now)?;
    }
    then(conn)?;
    tx.commit()?;
    Ok(())
}

/// Lookups (`GET <intake>/<sha256>`) made for a row (migration 11; not in [`Submission`], which
/// read-only faces also read from stores older than that).
pub fn lookups(conn: &Connection, id: i64) -> Result<u32, StoreError> {
    Ok(conn
        .prepare_cached("SELECT lookups FROM submissions WHERE id = ?1")?
        .query_row([id], |r| r.get::<_, i64>(0))? as u32)
}

/// Count a lookup on its row, inside the transaction that records its result (the `then` of
/// [`record_attempt_then`], or [`record_not_found`]).
pub fn count_lookup(conn: &Connection, id: i64) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE submissions SET lookups = lookups + 1 WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// Log a lookup's 404 (the record is not at the intake) and count it: the row's state does not
/// change here, the POST that follows records its own answer.
pub fn record_not_found(
    conn: &Connection,
    id: i64,
    now: &str,
    status: u16,
    body: &str,
) -> Result<(), StoreError> {
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
    conn.prepare_cached(
        "INSERT INTO submission_attempts (submission_id, attempted_at, answer, status, body) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![id, now, AnswerKind::NotFound, status, body])?;
    count_lookup(conn, id)?;
    tx.commit()?;
    Ok(())
}

/// Every row not settled (neither filed nor refused), oldest first, with its record's sha256:
/// what `conduct-walker outbox list` shows.
pub fn unsettled(conn: &Connection) -> Result<Vec<(String, Submission)>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS}, (SELECT sha256 FROM records WHERE records.id = record_id) \
         FROM submissions WHERE state NOT IN (?1, ?2) ORDER BY id"
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt
        .query_map(params![FILED, REFUSED], |r| Ok((r.get(16)?, row(r)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Queued or in flight: the outbox depth (from the summary rows, migration 7: a queue that grew
/// while an intake was away costs no more to count).
pub fn depth(conn: &Connection) -> Result<u64, StoreError> {
    Ok(super::summary::submissions(conn)?
        .into_iter()
        .filter(|((state, _, _), _)| {
            matches!(state, SubmissionState::Queued | SubmissionState::Sending)
        })
        .map(|(_, n)| n)
        .sum())
}

/// `(intake, lane, accepted today)` for a UTC day.
pub fn lanes_used(conn: &Connection, day: &str) -> Result<Vec<(String, String, u32)>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT intake_url, lane, count(*) FROM submissions WHERE filed_day = ?1 \
         AND last_answer IN (?2, ?3) GROUP BY intake_url, lane ORDER BY intake_url, lane",
    )?;
    let rows = stmt
        .query_map(params![day, ACCEPTED, FOUND], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u32))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Count of submissions by where they stand ([`Outcome`], the summary every face shows), every
/// outcome listed (zero included), in [`Outcome::ALL`] order.
pub fn by_outcome(conn: &Connection) -> Result<Vec<(Outcome, u64)>, StoreError> {
    let mut counts: Vec<(Outcome, u64)> = Outcome::ALL.iter().map(|&o| (o, 0)).collect();
    for ((state, answer, counted), n) in super::summary::submissions(conn)? {
        let outcome = Facts {
            state,
            answer,
            counted,
            count_reason: None,
            reason_code: None,
            error: None,
            next_attempt_at: None,
        }
        .summary()
        .outcome;
        if let Some(slot) = counts.iter_mut().find(|(o, _)| *o == outcome) {
            slot.1 += n;
        }
    }
    Ok(counts)
}

/// Count of submissions by their last answer (`none` when never attempted) and state.
pub fn by_answer(conn: &Connection) -> Result<Vec<(String, u64)>, StoreError> {
    let mut out: std::collections::BTreeMap<String, u64> = Default::default();
    for ((state, answer, _), n) in super::summary::submissions(conn)? {
        let key = match answer {
            Some(a) => a.as_str(),
            None => state.as_str(),
        };
        *out.entry(key.to_string()).or_default() += n;
    }
    Ok(out.into_iter().collect())
}
