//! The alert outbox and the alert state in the store (migration 10), and the planner that moves
//! them: every function takes the connection of a transaction the caller holds (the record's,
//! on the store's writer thread; or the delivery task's own), so an alert is planned exactly
//! when the record or fire that caused it is committed, and never otherwise.

use super::budget::{self, Admission, ChannelDay};
use super::config::AlertsConfig;
use super::health::{PlannedHealth, StoreHealth};
use super::incident::{self, Observation, Planned, TargetState};
use super::payload::{AlertPayload, WitnessRef};
use crate::store::StoreError;
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

fn ts(t: DateTime<Utc>) -> String {
    crate::store::daemon_walks::timestamp(t)
}

fn json_err(e: serde_json::Error) -> StoreError {
    StoreError::Batch(format!("alert state is not valid JSON: {e}"))
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

/// A target's stored state (default when it has none yet).
pub fn load_target(conn: &Connection, target: &str) -> Result<TargetState, StoreError> {
    load_json(
        conn,
        "SELECT state FROM alert_targets WHERE target = ?1",
        target,
    )
}

fn save_target(
    conn: &Connection,
    target: &str,
    s: &TargetState,
    flush_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let text = serde_json::to_string(s).map_err(json_err)?;
    let open = open_of(target, s);
    let open = (!open.is_empty())
        .then(|| serde_json::to_string(&open))
        .transpose()
        .map_err(json_err)?;
    conn.prepare_cached(
        "INSERT INTO alert_targets (target, state, flush_at, open, updated_at) VALUES (?1, ?2, ?3, ?4, ?5) \
         ON CONFLICT (target) DO UPDATE SET state = ?2, flush_at = ?3, open = ?4, updated_at = ?5",
    )?
    .execute(params![target, text, flush_at.map(ts), open, ts(now)])?;
    Ok(())
}

fn load_channel(conn: &Connection, channel: &str) -> Result<ChannelDay, StoreError> {
    load_json(
        conn,
        "SELECT state FROM alert_channels WHERE channel = ?1",
        channel,
    )
}

fn save_channel(conn: &Connection, channel: &str, d: &ChannelDay) -> Result<(), StoreError> {
    let text = serde_json::to_string(d).map_err(json_err)?;
    conn.prepare_cached(
        "INSERT INTO alert_channels (channel, state) VALUES (?1, ?2) \
         ON CONFLICT (channel) DO UPDATE SET state = ?2",
    )?
    .execute(params![channel, text])?;
    Ok(())
}

/// Who sends this store's alerts: its identifier (every id is derived from it) and the
/// configured `[witness]` name.
pub fn witness(conn: &Connection, cfg: &AlertsConfig) -> Result<WitnessRef, StoreError> {
    Ok(WitnessRef {
        id: crate::store::identity(conn)?,
        name: cfg.witness_name.clone(),
    })
}

/// Insert one row per channel for `payload` (a row already there for the id is kept as it is),
/// counting each against its channel's daily cap. Returns the rows inserted.
fn enqueue(
    conn: &Connection,
    cfg: &AlertsConfig,
    target: Option<&str>,
    payload: &AlertPayload,
    now: DateTime<Utc>,
) -> Result<u32, StoreError> {
    let body = serde_json::to_string(payload).map_err(json_err)?;
    let mut n = 0;
    for ch in &cfg.channels {
        let exists: Option<i64> = conn
            .prepare_cached("SELECT id FROM alert_outbox WHERE alert_id = ?1 AND channel = ?2")?
            .query_row(params![payload.id, ch.name], |r| r.get(0))
            .optional()?;
        if exists.is_some() {
            continue;
        }
        let day = load_channel(conn, &ch.name)?;
        let (next, admission, digest) =
            budget::admit(&ch.name, &day, ch.daily_cap, &payload.id, now);
        save_channel(conn, &ch.name, &next)?;
        if let Some(d) = digest {
            insert_digest(conn, cfg, &ch.name, &d, now)?;
        }
        let st = match admission {
            Admission::Send => state::QUEUED,
            Admission::Held => state::HELD,
        };
        insert_row(conn, &ch.name, target, payload, &body, st, now)?;
        n += 1;
    }
    Ok(n)
}

/// The one INSERT into `alert_outbox` (`body` is `payload` serialized, once per alert however
/// many channels it goes to). A row already there for the id and channel is kept as it is.
fn insert_row(
    conn: &Connection,
    channel: &str,
    target: Option<&str>,
    payload: &AlertPayload,
    body: &str,
    st: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT OR IGNORE INTO alert_outbox (alert_id, channel, target, kind, payload, state, next_attempt_at, created_at, record_sha256) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        payload.id,
        channel,
        target,
        payload.kind,
        body,
        st,
        (st == state::QUEUED).then(|| ts(now)),
        ts(now),
        payload.data.record.as_ref().map(|r| r.sha256.as_str())
    ])?;
    Ok(())
}

/// A channel's digest row (queued now; it is about no target or record), listing each held
/// alert from its stored body.
fn insert_digest(
    conn: &Connection,
    cfg: &AlertsConfig,
    channel: &str,
    d: &budget::Digest,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let mut held = Vec::new();
    for id in d.held.iter().take(super::payload::DIGEST_LISTED) {
        let body: Option<String> = conn
            .prepare_cached(
                "SELECT payload FROM alert_outbox WHERE alert_id = ?1 AND channel = ?2",
            )?
            .query_row(params![id, channel], |r| r.get(0))
            .optional()?;
        if let Some(b) = body {
            held.push(serde_json::from_str::<AlertPayload>(&b).map_err(json_err)?);
        }
    }
    let payload = AlertPayload::of_digest(d, now, &witness(conn, cfg)?, &held);
    let body = serde_json::to_string(&payload).map_err(json_err)?;
    insert_row(conn, channel, None, &payload, &body, state::QUEUED, now)
}

/// When a held change may be sent: the end of the minimum interval, if the state holds
/// changes the last alert did not carry.
fn flush_at(s: &TargetState, settings: &incident::Settings) -> Option<DateTime<Utc>> {
    if s.held_changes == 0 {
        return None;
    }
    let last = s.last_alert_at?;
    let wait = chrono::TimeDelta::try_seconds(i64::try_from(settings.min_interval_secs).ok()?)?;
    last.checked_add_signed(wait)
}

fn enqueue_planned(
    conn: &Connection,
    cfg: &AlertsConfig,
    planned: &[Planned],
    now: DateTime<Utc>,
) -> Result<u32, StoreError> {
    if planned.is_empty() {
        return Ok(0);
    }
    let w = witness(conn, cfg)?;
    let mut n = 0;
    for p in planned {
        n += enqueue(
            conn,
            cfg,
            Some(&p.target),
            &AlertPayload::of_incident(p, &w),
            now,
        )?;
    }
    Ok(n)
}

/// One observation of `target`: step its state and plan what it says, in the caller's
/// transaction. Returns the outbox rows inserted.
pub fn observe(
    conn: &Connection,
    cfg: &AlertsConfig,
    target: &str,
    obs: &Observation,
) -> Result<u32, StoreError> {
    let settings = cfg.settings_for(target);
    let prev = load_target(conn, target)?;
    let (next, planned) = incident::step(target, &prev, obs, &settings);
    save_target(conn, target, &next, flush_at(&next, &settings), obs.at)?;
    enqueue_planned(conn, cfg, &planned, obs.at)
}

/// Targets whose held changes may be sent by `now` (an indexed read of the few that hold any).
pub fn flush_due(
    conn: &Connection,
    cfg: &AlertsConfig,
    now: DateTime<Utc>,
) -> Result<u32, StoreError> {
    let targets: Vec<String> = conn
        .prepare_cached("SELECT target FROM alert_targets WHERE flush_at IS NOT NULL AND flush_at <= ?1 LIMIT 256")?
        .query_map([ts(now)], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut n = 0;
    for target in targets {
        let settings = cfg.settings_for(&target);
        let prev = load_target(conn, &target)?;
        let (mut next, planned) = incident::flush(&target, &prev, &settings, now);
        if planned.is_empty() {
            // Nothing was pending after all (changes that came and went): stop asking.
            next.held_changes = 0;
        }
        save_target(
            conn,
            &target,
            &next,
            flush_at(&next, &settings).filter(|t| *t > now),
            now,
        )?;
        n += enqueue_planned(conn, cfg, &planned, now)?;
    }
    Ok(n)
}

/// Each channel's digest of a finished day, once.
pub fn digests_due(
    conn: &Connection,
    cfg: &AlertsConfig,
    now: DateTime<Utc>,
) -> Result<u32, StoreError> {
    let mut n = 0;
    for ch in &cfg.channels {
        let day = load_channel(conn, &ch.name)?;
        let (next, digest) = budget::digest_due(&ch.name, &day, now);
        if let Some(d) = digest {
            save_channel(conn, &ch.name, &next)?;
            insert_digest(conn, cfg, &ch.name, &d, now)?;
            n += 1;
        }
    }
    Ok(n)
}

/// Plan a filing or health alert (deciding it twice plans one row per channel).
pub fn plan_health(
    conn: &Connection,
    cfg: &AlertsConfig,
    p: &PlannedHealth,
) -> Result<u32, StoreError> {
    if !cfg.health {
        return Ok(0);
    }
    let mut payload = AlertPayload::of_health(p, &witness(conn, cfg)?);
    // An alert about a record names what that record walked.
    if let Some(sha) = payload.data.record.as_ref().map(|r| r.sha256.clone()) {
        let walked: Option<(String, String)> = conn
            .prepare_cached("SELECT origin, endpoint FROM records WHERE sha256 = ?1")?
            .query_row([sha], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        if let Some((origin, endpoint)) = walked {
            payload.data.origin = Some(origin);
            payload.data.endpoint = Some(endpoint);
        }
    }
    enqueue(conn, cfg, None, &payload, p.at)
}

/// The hook for issue 23's ledger follower: plan the alert of one ledger finding, in the
/// transaction that stores the finding. One alert per finding (its id comes from the finding).
pub fn plan_ledger_finding(
    conn: &Connection,
    cfg: &AlertsConfig,
    kind: super::health::LedgerFindingKind,
    record_sha256: Option<String>,
    detail: String,
    now: DateTime<Utc>,
) -> Result<u32, StoreError> {
    let p = super::health::HealthEvent::LedgerFinding {
        kind,
        record_sha256,
        detail,
    }
    .plan(now);
    plan_health(conn, cfg, &p)
}

/// The store's health now (`Some(why)`: it cannot write): plans an alert on each change.
pub fn store_health(
    conn: &Connection,
    cfg: &AlertsConfig,
    degraded: Option<&str>,
    now: DateTime<Utc>,
) -> Result<u32, StoreError> {
    let prev: StoreHealth = load_json(
        conn,
        "SELECT state FROM alert_health WHERE name = ?1",
        "store",
    )?;
    let (next, planned) = super::health::store_health(&prev, degraded, now);
    let Some(p) = planned else { return Ok(0) };
    set_watermark(
        conn,
        "store",
        &serde_json::to_string(&next).map_err(json_err)?,
    )?;
    plan_health(conn, cfg, &p)
}

/// A named watermark in `alert_health` (what the timer's last look saw); `None` before the
/// first look.
fn watermark(conn: &Connection, name: &str) -> Result<Option<String>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT state FROM alert_health WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
        .optional()?)
}

/// Store `alert_health`'s `name` (a watermark, or the store's health as JSON).
fn set_watermark(conn: &Connection, name: &str, mark: &str) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO alert_health (name, state) VALUES (?1, ?2) \
         ON CONFLICT (name) DO UPDATE SET state = ?2",
    )?
    .execute([name, mark])?;
    Ok(())
}

/// Intake refusals stored since the last look (the submissions' `updated_at` is the watermark,
/// kept in `alert_health`): each becomes one `filing.refused` alert. Done on the delivery timer,
/// not in the attempt's own transaction (which the outbox module owns), so a refusal stored just
/// before a kill is still found at the next start. The first look starts from `now`: turning
/// alerts on does not announce old refusals.
pub fn refusals(
    conn: &Connection,
    cfg: &AlertsConfig,
    now: DateTime<Utc>,
) -> Result<u32, StoreError> {
    if !cfg.health {
        return Ok(0);
    }
    let Some(mark) = watermark(conn, "refused_since")? else {
        return set_watermark(conn, "refused_since", &crate::clock::walked_at(now)).map(|()| 0);
    };
    let rows: Vec<(String, Option<String>, Option<String>, String)> = conn
        .prepare_cached(
            "SELECT r.sha256, s.reason_code, s.last_error, s.updated_at FROM submissions s \
             JOIN records r ON r.id = s.record_id \
             WHERE s.state = 'refused' AND s.updated_at >= ?1 ORDER BY s.updated_at LIMIT 256",
        )?
        .query_map([&mark], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<Result<_, _>>()?;
    let mut n = 0;
    let mut latest = mark.clone();
    for (sha, code, err, updated) in rows {
        let reason = match (code, err) {
            (Some(c), Some(e)) => format!("{c}: {e}"),
            (Some(c), None) => c,
            (None, Some(e)) => e,
            (None, None) => "refused without a reason".into(),
        };
        let p = super::health::HealthEvent::IntakeRefused {
            record_sha256: sha,
            reason,
        }
        .plan(now);
        // Seen twice (the watermark is inclusive): the alert's id keeps it one row.
        n += plan_health(conn, cfg, &p)?;
        latest = latest.max(updated);
    }
    if latest != mark {
        set_watermark(conn, "refused_since", &latest)?;
    }
    Ok(n)
}

/// Ledger findings stored since the last look (`ledger_findings`, issue 23; its AUTOINCREMENT id
/// is the watermark, kept in `alert_health`): each becomes one `ledger.finding` alert, its id
/// from the finding's kind, record and evidence hash, so seeing it twice plans it once. Done on
/// the delivery timer like [`refusals`]: the follower runs on its own thread without the alerts
/// config. The first look after alerts are turned on announces no old finding.
pub fn ledger_findings(
    conn: &Connection,
    cfg: &AlertsConfig,
    now: DateTime<Utc>,
) -> Result<u32, StoreError> {
    if !cfg.health {
        return Ok(0);
    }
    const MARK: &str = "ledger_findings_after";
    let Some(mark) = watermark(conn, MARK)?.and_then(|t| t.parse::<i64>().ok()) else {
        let newest: i64 = conn.query_row(
            "SELECT coalesce(max(id), 0) FROM ledger_findings",
            [],
            |r| r.get(0),
        )?;
        return set_watermark(conn, MARK, &newest.to_string()).map(|()| 0);
    };
    type Row = (i64, String, String, Option<String>, Option<i64>, String);
    let rows: Vec<Row> = conn
        .prepare_cached(
            "SELECT id, intake_url, kind, sha256, entry_n, evidence_sha256 FROM ledger_findings \
             WHERE id > ?1 ORDER BY id LIMIT 256",
        )?
        .query_map([mark], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })?
        .collect::<Result<_, _>>()?;
    let mut n = 0;
    let mut latest = mark;
    for (id, intake, kind, sha, entry_n, evidence_sha) in rows {
        let at_entry = entry_n
            .map(|e| format!(" at entry {e}"))
            .unwrap_or_default();
        let detail = format!("{kind}{at_entry} on {intake} (evidence sha256 {evidence_sha})");
        let alert_kind = super::health::LedgerFindingKind::of_finding(&kind, sha.is_some());
        n += plan_ledger_finding(conn, cfg, alert_kind, sha, detail, now)?;
        latest = latest.max(id);
    }
    if latest != mark {
        set_watermark(conn, MARK, &latest.to_string())?;
    }
    Ok(n)
}

/// Records queued for filing longer than the configured age (an indexed read of the queued).
pub fn queued_too_long(
    conn: &Connection,
    cfg: &AlertsConfig,
    now: DateTime<Utc>,
) -> Result<u32, StoreError> {
    if cfg.queued_max_age_secs == 0 || !cfg.health {
        return Ok(0);
    }
    let cutoff =
        now - chrono::TimeDelta::seconds(cfg.queued_max_age_secs.min(10 * 365 * 86_400) as i64);
    let rows: Vec<(String, String)> = conn
        .prepare_cached(
            "SELECT r.sha256, s.created_at FROM submissions s JOIN records r ON r.id = s.record_id \
             WHERE s.state IN ('queued', 'sending') AND s.created_at < ?1 LIMIT 256",
        )?
        .query_map([crate::clock::walked_at(cutoff)], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<Result<_, _>>()?;
    let queued: Vec<(String, DateTime<Utc>)> = rows
        .into_iter()
        .filter_map(|(sha, at)| Some((sha, at.parse().ok()?)))
        .collect();
    let mut n = 0;
    for p in super::health::queued_too_long(&queued, cfg.queued_max_age_secs as i64, now) {
        n += plan_health(conn, cfg, &p)?;
    }
    Ok(n)
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
    Ok(AlertRow {
        id: r.get(0)?,
        alert_id: r.get(1)?,
        channel: r.get(2)?,
        target: r.get(3)?,
        kind: r.get(4)?,
        payload: r.get(5)?,
        state: r.get(6)?,
        attempts: r.get(7)?,
        next_attempt_at: r.get(8)?,
        last_status: r.get(9)?,
        last_answer: r.get(10)?,
        created_at: r.get(11)?,
        delivered_at: r.get(12)?,
    })
}

/// Rows due by `now`, in the order they were planned.
pub fn due(conn: &Connection, now: DateTime<Utc>, limit: u32) -> Result<Vec<AlertRow>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM alert_outbox WHERE state = 'queued' AND next_attempt_at <= ?1 \
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
        "SELECT {COLUMNS} FROM alert_outbox WHERE state = 'queued' AND next_attempt_at <= ?1 \
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
    Ok(conn
        .prepare_cached(
            "UPDATE alert_outbox SET next_attempt_at = ?2 \
             WHERE state = 'queued' AND channel = ?1 AND next_attempt_at > ?2",
        )?
        .execute(params![channel, ts(now)])?)
}

/// The next time a queued row is due, if any.
pub fn next_due(conn: &Connection) -> Result<Option<String>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT min(next_attempt_at) FROM alert_outbox WHERE state = 'queued'")?
        .query_row([], |r| r.get(0))?)
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
    conn.prepare_cached(
        "UPDATE alert_outbox SET state = ?2, attempts = attempts + 1, last_status = ?3, last_answer = ?4, \
         next_attempt_at = ?5, delivered_at = CASE WHEN ?2 = 'delivered' THEN ?6 ELSE delivered_at END \
         WHERE id = ?1 AND state = 'queued'",
    )?
    .execute(params![
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

/// A target's open incidents.
pub fn open_of(target: &str, s: &TargetState) -> Vec<OpenIncident> {
    [("conduct", &s.conduct), ("unreachable", &s.unreachable)]
        .into_iter()
        .filter_map(|(kind, t)| {
            t.open.as_ref().map(|i| OpenIncident {
                target: target.to_string(),
                kind: kind.to_string(),
                number: i.number,
                opened_at: i
                    .opened_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                announced: t.announced == Some(i.number),
            })
        })
        .collect()
}
