//! The alerts' tables (migrations 10 and 14): the outbox of alerts to deliver, each target's
//! incident state, each channel's day and the timers' watermarks; and the reads of other
//! tables the alert timers look at (refused and long-queued submissions, ledger findings, what
//! a record walked). Plain functions over a connection, every one run in a transaction the
//! caller holds, so an alert is planned exactly when what caused it is committed.
//!
//! The incident and channel states are the alerts core's types, stored as JSON: these
//! functions take and give any (de)serialisable value, so the store knows nothing of them.

use super::StoreError;
use crate::filing::SubmissionState;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

/// `alert_outbox.state`.
pub mod state {
    /// To deliver (now or at `next_attempt_at`).
    pub const QUEUED: &str = "queued";
    /// A receiver answered 2xx: never sent again.
    pub const DELIVERED: &str = "delivered";
    /// Over the channel's daily cap: listed in that day's digest, not sent alone.
    pub const HELD: &str = "held";
    /// The receiver refused it (4xx other than 408/429): not retried.
    pub const REFUSED: &str = "refused";
}

// In the SQL text itself, not bound: the partial indexes on `state = 'queued'` serve only a
// query that names the state literally.
use state::{DELIVERED, QUEUED};

/// The time form of the alert tables (as `daemon_walks`): milliseconds, `Z`; sorts as text.
fn ts(t: DateTime<Utc>) -> String {
    super::daemon_walks::timestamp(t)
}

fn json_err(e: serde_json::Error) -> StoreError {
    StoreError::Batch(format!("alert state is not valid JSON: {e}"))
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(json_err)
}

/// The JSON state stored under `key` by `sql` (a `SELECT state ... WHERE <key> = ?1`), or the
/// default when there is none yet.
fn load_json<T: serde::de::DeserializeOwned + Default>(
    conn: &Connection,
    sql: &str,
    key: &str,
) -> Result<T, StoreError> {
    let text: Option<String> = conn
        .prepare_cached(sql)?
        .query_row([key], |r| r.get(0))
        .optional()?;
    match text {
        None => Ok(T::default()),
        Some(t) => serde_json::from_str(&t).map_err(json_err),
    }
}

/// A target's stored incident state (default when it has none yet).
pub fn load_target<T: serde::de::DeserializeOwned + Default>(
    conn: &Connection,
    target: &str,
) -> Result<T, StoreError> {
    load_json(
        conn,
        "SELECT state FROM alert_targets WHERE target = ?1",
        target,
    )
}

/// Store a target's incident state, when its held changes may be sent (`flush_at`) and its
/// open incidents (what the faces list).
pub fn save_target<T: serde::Serialize>(
    conn: &Connection,
    target: &str,
    state: &T,
    flush_at: Option<DateTime<Utc>>,
    open: &[OpenIncident],
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let text = to_json(state)?;
    let open = (!open.is_empty()).then(|| to_json(&open)).transpose()?;
    conn.prepare_cached(
        "INSERT INTO alert_targets (target, state, flush_at, open, updated_at) VALUES (?1, ?2, ?3, ?4, ?5) \
         ON CONFLICT (target) DO UPDATE SET state = ?2, flush_at = ?3, open = ?4, updated_at = ?5",
    )?
    .execute(params![target, text, flush_at.map(ts), open, ts(now)])?;
    Ok(())
}

/// Targets whose held changes may be sent by `now` (an indexed read of the few that hold any).
pub fn targets_to_flush(conn: &Connection, now: DateTime<Utc>) -> Result<Vec<String>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT target FROM alert_targets WHERE flush_at IS NOT NULL AND flush_at <= ?1 LIMIT 256")?
        .query_map([ts(now)], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}

/// A channel's stored day (default when it has none yet).
pub fn load_channel<T: serde::de::DeserializeOwned + Default>(
    conn: &Connection,
    channel: &str,
) -> Result<T, StoreError> {
    load_json(
        conn,
        "SELECT state FROM alert_channels WHERE channel = ?1",
        channel,
    )
}

/// Store a channel's day.
pub fn save_channel<T: serde::Serialize>(
    conn: &Connection,
    channel: &str,
    day: &T,
) -> Result<(), StoreError> {
    let text = to_json(day)?;
    conn.prepare_cached(
        "INSERT INTO alert_channels (channel, state) VALUES (?1, ?2) \
         ON CONFLICT (channel) DO UPDATE SET state = ?2",
    )?
    .execute(params![channel, text])?;
    Ok(())
}

/// A health state stored as JSON under `name` in `alert_health` (default before the first).
pub fn load_health<T: serde::de::DeserializeOwned + Default>(
    conn: &Connection,
    name: &str,
) -> Result<T, StoreError> {
    load_json(conn, "SELECT state FROM alert_health WHERE name = ?1", name)
}

/// Store a health state as JSON under `name` in `alert_health`.
pub fn save_health<T: serde::Serialize>(
    conn: &Connection,
    name: &str,
    state: &T,
) -> Result<(), StoreError> {
    set_watermark(conn, name, &to_json(state)?)
}

/// A named watermark in `alert_health` (what the timer's last look saw); `None` before the
/// first look.
pub fn watermark(conn: &Connection, name: &str) -> Result<Option<String>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT state FROM alert_health WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
        .optional()?)
}

/// Store `alert_health`'s `name` (a watermark, or a health state as JSON).
pub fn set_watermark(conn: &Connection, name: &str, mark: &str) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO alert_health (name, state) VALUES (?1, ?2) \
         ON CONFLICT (name) DO UPDATE SET state = ?2",
    )?
    .execute([name, mark])?;
    Ok(())
}

/// Whether `channel` already has a row for the alert `alert_id`.
pub fn exists(conn: &Connection, alert_id: &str, channel: &str) -> Result<bool, StoreError> {
    let id: Option<i64> = conn
        .prepare_cached("SELECT id FROM alert_outbox WHERE alert_id = ?1 AND channel = ?2")?
        .query_row(params![alert_id, channel], |r| r.get(0))
        .optional()?;
    Ok(id.is_some())
}

/// The stored body of the alert `alert_id` on `channel`, if it has a row.
pub fn payload_of(
    conn: &Connection,
    alert_id: &str,
    channel: &str,
) -> Result<Option<String>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT payload FROM alert_outbox WHERE alert_id = ?1 AND channel = ?2")?
        .query_row(params![alert_id, channel], |r| r.get(0))
        .optional()?)
}

/// One alert for one channel, as planned.
#[derive(Debug, Clone, Copy)]
pub struct NewAlert<'a> {
    pub alert_id: &'a str,
    pub channel: &'a str,
    /// The target it is about (none for a digest or a health alert).
    pub target: Option<&'a str>,
    pub kind: &'a str,
    /// The payload, serialized (once per alert however many channels it goes to).
    pub payload: &'a str,
    /// [`state::QUEUED`] (due now) or [`state::HELD`].
    pub state: &'static str,
    /// The record it is about, if any (its page lists it).
    pub record_sha256: Option<&'a str>,
}

/// The one INSERT into `alert_outbox`. A row already there for the id and channel is kept as
/// it is.
pub fn insert(conn: &Connection, a: &NewAlert<'_>, now: DateTime<Utc>) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT OR IGNORE INTO alert_outbox (alert_id, channel, target, kind, payload, state, next_attempt_at, created_at, record_sha256) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        a.alert_id,
        a.channel,
        a.target,
        a.kind,
        a.payload,
        a.state,
        (a.state == state::QUEUED).then(|| ts(now)),
        ts(now),
        a.record_sha256
    ])?;
    Ok(())
}

/// One outbox row.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AlertRow {
    pub id: i64,
    pub alert_id: String,
    pub channel: String,
    pub target: Option<String>,
    pub kind: String,
    pub payload: String,
    pub state: String,
    pub attempts: i64,
    pub next_attempt_at: Option<String>,
    pub last_status: Option<i64>,
    pub last_answer: Option<String>,
    pub created_at: String,
    pub delivered_at: Option<String>,
}

impl AlertRow {
    /// When the next delivery attempt is due, while the row is still to be delivered (a
    /// delivered, held or refused row keeps its last `next_attempt_at`, which no face shows).
    pub fn next_attempt(&self) -> Option<&str> {
        self.next_attempt_at
            .as_deref()
            .filter(|_| self.state == state::QUEUED)
    }
}

const COLUMNS: &str = "id, alert_id, channel, target, kind, payload, state, attempts, next_attempt_at, \
                       last_status, last_answer, created_at, delivered_at";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<AlertRow> {
    Ok(from_columns!(r => AlertRow {
        id, alert_id, channel, target, kind, payload, state, attempts, next_attempt_at,
        last_status, last_answer, created_at, delivered_at,
    }))
}

/// Rows due by `now`, in the order they were planned.
pub fn due(conn: &Connection, now: DateTime<Utc>, limit: u32) -> Result<Vec<AlertRow>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM alert_outbox WHERE state = '{QUEUED}' AND next_attempt_at <= ?1 \
         ORDER BY id LIMIT ?2"
    );
    Ok(conn
        .prepare_cached(&sql)?
        .query_map(params![ts(now), limit], row)?
        .collect::<Result<_, _>>()?)
}

/// The next row of `channel` due by `now`, in the order they were planned.
pub fn next_due_on(
    conn: &Connection,
    channel: &str,
    now: DateTime<Utc>,
) -> Result<Option<AlertRow>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM alert_outbox WHERE state = '{QUEUED}' AND next_attempt_at <= ?1 \
         AND channel = ?2 ORDER BY id LIMIT 1"
    );
    Ok(conn
        .prepare_cached(&sql)?
        .query_row(params![ts(now), channel], row)
        .optional()?)
}

/// The receiver of `channel` answered: every row of it waiting out a backoff is due now, so
/// what queued up while it was away goes out at once, in order, instead of each row waiting
/// for its own next attempt (issue 35: the last of 52 arrived 8.5 minutes after the receiver
/// came back). Returns the rows released.
pub fn release(conn: &Connection, channel: &str, now: DateTime<Utc>) -> Result<usize, StoreError> {
    let sql = format!(
        "UPDATE alert_outbox SET next_attempt_at = ?2 \
         WHERE state = '{QUEUED}' AND channel = ?1 AND next_attempt_at > ?2"
    );
    Ok(conn
        .prepare_cached(&sql)?
        .execute(params![channel, ts(now)])?)
}

/// The next time a queued row is due, if any.
pub fn next_due(conn: &Connection) -> Result<Option<String>, StoreError> {
    let sql = format!("SELECT min(next_attempt_at) FROM alert_outbox WHERE state = '{QUEUED}'");
    Ok(conn.prepare_cached(&sql)?.query_row([], |r| r.get(0))?)
}

/// What one delivery attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub state: &'static str,
    pub status: Option<i64>,
    pub answer: String,
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// Store an attempt's outcome. A row already delivered is never moved back.
pub fn record_attempt(
    conn: &Connection,
    id: i64,
    a: &Attempt,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let sql = format!(
        "UPDATE alert_outbox SET state = ?2, attempts = attempts + 1, last_status = ?3, last_answer = ?4, \
         next_attempt_at = ?5, delivered_at = CASE WHEN ?2 = '{DELIVERED}' THEN ?6 ELSE delivered_at END \
         WHERE id = ?1 AND state = '{QUEUED}'"
    );
    conn.prepare_cached(&sql)?.execute(params![
        id,
        a.state,
        a.status,
        a.answer,
        a.next_attempt_at.map(ts),
        ts(now)
    ])?;
    Ok(())
}

/// Every row of a target, newest first (the record page), at most `limit`.
pub fn for_target(
    conn: &Connection,
    target: &str,
    limit: u32,
) -> Result<Vec<AlertRow>, StoreError> {
    let sql =
        format!("SELECT {COLUMNS} FROM alert_outbox WHERE target = ?1 ORDER BY id DESC LIMIT ?2");
    Ok(conn
        .prepare_cached(&sql)?
        .query_map(params![target, limit], row)?
        .collect::<Result<_, _>>()?)
}

/// The latest rows, newest first.
pub fn latest(conn: &Connection, limit: u32) -> Result<Vec<AlertRow>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM alert_outbox ORDER BY id DESC LIMIT ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_map(params![limit], row)?
        .collect::<Result<_, _>>()?)
}

/// Rows per state.
pub fn by_state(conn: &Connection) -> Result<Vec<(String, u64)>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT state, count(*) FROM alert_outbox GROUP BY state ORDER BY state")?
        .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))?
        .collect::<Result<_, _>>()?)
}

/// The alerts about one record (its page), oldest first.
pub fn for_record(conn: &Connection, sha256: &str) -> Result<Vec<AlertRow>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM alert_outbox WHERE record_sha256 = ?1 ORDER BY id LIMIT 100"
    );
    Ok(conn
        .prepare_cached(&sql)?
        .query_map([sha256], row)?
        .collect::<Result<_, _>>()?)
}

/// An open incident, as `alerts list` and the pages show it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OpenIncident {
    pub target: String,
    pub kind: String,
    pub number: u64,
    pub opened_at: String,
    pub announced: bool,
}

/// Open incidents of every target (an indexed read of the targets that have one).
pub fn open_incidents(conn: &Connection) -> Result<Vec<OpenIncident>, StoreError> {
    let rows: Vec<String> = conn
        .prepare_cached(
            "SELECT open FROM alert_targets WHERE open IS NOT NULL ORDER BY target LIMIT 10000",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for text in rows {
        let v: Vec<OpenIncident> = serde_json::from_str(&text).map_err(json_err)?;
        out.extend(v);
    }
    Ok(out)
}

/// One target's open incidents.
pub fn open_incidents_of(conn: &Connection, target: &str) -> Result<Vec<OpenIncident>, StoreError> {
    let text: Option<Option<String>> = conn
        .prepare_cached("SELECT open FROM alert_targets WHERE target = ?1")?
        .query_row([target], |r| r.get(0))
        .optional()?;
    match text.flatten() {
        None => Ok(Vec::new()),
        Some(t) => serde_json::from_str(&t).map_err(json_err),
    }
}

/// What the record `sha256` walked: its origin and endpoint (`None` when it is not ours).
pub fn walked_by_record(
    conn: &Connection,
    sha256: &str,
) -> Result<Option<(String, String)>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT origin, endpoint FROM records WHERE sha256 = ?1")?
        .query_row([sha256], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// A submission the intake refused, as the refusal timer reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub record_sha256: String,
    pub reason_code: Option<String>,
    pub last_error: Option<String>,
    /// The submission's `updated_at` (the timer's watermark).
    pub updated_at: String,
}

/// Submissions refused at or after `since` (their `updated_at`), oldest first, at most 256.
pub fn refusals_since(conn: &Connection, since: &str) -> Result<Vec<Refusal>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT r.sha256, s.reason_code, s.last_error, s.updated_at FROM submissions s \
             JOIN records r ON r.id = s.record_id \
             WHERE s.state = ?2 AND s.updated_at >= ?1 ORDER BY s.updated_at LIMIT 256",
        )?
        .query_map(params![since, SubmissionState::Refused], |r| {
            Ok(from_columns!(r => Refusal {
                record_sha256, reason_code, last_error, updated_at,
            }))
        })?
        .collect::<Result<_, _>>()?)
}

/// Records still to be filed (queued or sending) whose submission was made before `cutoff`,
/// with when it was made (as stored), at most 256.
pub fn queued_before(
    conn: &Connection,
    cutoff: DateTime<Utc>,
) -> Result<Vec<(String, String)>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT r.sha256, s.created_at FROM submissions s JOIN records r ON r.id = s.record_id \
             WHERE s.state IN (?2, ?3) AND s.created_at < ?1 LIMIT 256",
        )?
        .query_map(
            params![
                crate::clock::walked_at(cutoff),
                SubmissionState::Queued,
                SubmissionState::Sending
            ],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?
        .collect::<Result<_, _>>()?)
}

/// The id of the newest ledger finding (0 when there is none).
pub fn newest_ledger_finding(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row(
        "SELECT coalesce(max(id), 0) FROM ledger_findings",
        [],
        |r| r.get(0),
    )?)
}

/// A ledger finding, as the finding timer reads it (its evidence by hash only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingSeen {
    pub id: i64,
    pub intake_url: String,
    pub kind: String,
    pub sha256: Option<String>,
    pub entry_n: Option<i64>,
    pub evidence_sha256: String,
}

/// Ledger findings stored after the finding `after`, oldest first, at most 256.
pub fn ledger_findings_after(
    conn: &Connection,
    after: i64,
) -> Result<Vec<FindingSeen>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT id, intake_url, kind, sha256, entry_n, evidence_sha256 FROM ledger_findings \
             WHERE id > ?1 ORDER BY id LIMIT 256",
        )?
        .query_map([after], |r| {
            Ok(from_columns!(r => FindingSeen {
                id, intake_url, kind, sha256, entry_n, evidence_sha256,
            }))
        })?
        .collect::<Result<_, _>>()?)
}
