//! The alert planner: steps the alert state kept in the store ([`crate::store::alerts`]) and
//! plans what it says into the alert outbox. Every function takes the connection of a
//! transaction the caller holds (the record's, on the store's writer thread; or the delivery
//! task's own), so an alert is planned exactly when the record or fire that caused it is
//! committed, and never otherwise. No SQL here: the tables are the store's.

use super::budget::{self, Admission, ChannelDay};
use super::config::AlertsConfig;
use super::health::{PlannedHealth, StoreHealth};
use super::incident::{self, Observation, Planned, TargetState};
use super::payload::{AlertPayload, WitnessRef};
use crate::store::StoreError;
use crate::store::alerts as table;
use chrono::{DateTime, Utc};
use rusqlite::Connection;

// The outbox's rows and reads, for the faces and the deliverer (they live in the store).
pub use crate::store::alerts::{
    AlertRow, Attempt, OpenIncident, by_state, due, for_record, for_target, latest, next_due,
    next_due_on, open_incidents, open_incidents_of, record_attempt, release, state,
};

fn json_err(e: serde_json::Error) -> StoreError {
    StoreError::Batch(format!("alert state is not valid JSON: {e}"))
}

/// A target's stored state (default when it has none yet).
pub fn load_target(conn: &Connection, target: &str) -> Result<TargetState, StoreError> {
    table::load_target(conn, target)
}

fn save_target(
    conn: &Connection,
    target: &str,
    s: &TargetState,
    flush_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    table::save_target(conn, target, s, flush_at, &open_of(target, s), now)
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
        if table::exists(conn, &payload.id, &ch.name)? {
            continue;
        }
        let day: ChannelDay = table::load_channel(conn, &ch.name)?;
        let (next, admission, digest) =
            budget::admit(&ch.name, &day, ch.daily_cap, &payload.id, now);
        table::save_channel(conn, &ch.name, &next)?;
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

/// Queue (or hold) `payload` for `channel` (`body` is `payload` serialized, once per alert
/// however many channels it goes to). A row already there for the id and channel is kept.
fn insert_row(
    conn: &Connection,
    channel: &str,
    target: Option<&str>,
    payload: &AlertPayload,
    body: &str,
    st: &'static str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let row = table::NewAlert {
        alert_id: &payload.id,
        channel,
        target,
        kind: &payload.kind,
        payload: body,
        state: st,
        record_sha256: payload.data.record.as_ref().map(|r| r.sha256.as_str()),
    };
    table::insert(conn, &row, now)
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
        if let Some(b) = table::payload_of(conn, id, channel)? {
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
    let mut n = 0;
    for target in table::targets_to_flush(conn, now)? {
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
        let day: ChannelDay = table::load_channel(conn, &ch.name)?;
        let (next, digest) = budget::digest_due(&ch.name, &day, now);
        if let Some(d) = digest {
            table::save_channel(conn, &ch.name, &next)?;
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
    if let Some(sha) = payload.data.record.as_ref().map(|r| r.sha256.clone())
        && let Some((origin, endpoint)) = table::walked_by_record(conn, &sha)?
    {
        payload.data.origin = Some(origin);
        payload.data.endpoint = Some(endpoint);
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
    let prev: StoreHealth = table::load_health(conn, "store")?;
    let (next, planned) = super::health::store_health(&prev, degraded, now);
    let Some(p) = planned else { return Ok(0) };
    table::save_health(conn, "store", &next)?;
    plan_health(conn, cfg, &p)
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
    const MARK: &str = "refused_since";
    let Some(mark) = table::watermark(conn, MARK)? else {
        return table::set_watermark(conn, MARK, &crate::clock::walked_at(now)).map(|()| 0);
    };
    let mut n = 0;
    let mut latest = mark.clone();
    for refusal in table::refusals_since(conn, &mark)? {
        let table::Refusal {
            record_sha256: sha,
            reason_code: code,
            last_error: err,
            updated_at: updated,
        } = refusal;
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
        table::set_watermark(conn, MARK, &latest)?;
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
    let Some(mark) = table::watermark(conn, MARK)?.and_then(|t| t.parse::<i64>().ok()) else {
        let newest = table::newest_ledger_finding(conn)?;
        return table::set_watermark(conn, MARK, &newest.to_string()).map(|()| 0);
    };
    let mut n = 0;
    let mut latest = mark;
    for f in table::ledger_findings_after(conn, mark)? {
        let table::FindingSeen {
            id,
            intake_url: intake,
            kind,
            sha256: sha,
            entry_n,
            evidence_sha256: evidence_sha,
        } = f;
        let at_entry = entry_n
            .map(|e| format!(" at entry {e}"))
            .unwrap_or_default();
        let detail = format!("{kind}{at_entry} on {intake} (evidence sha256 {evidence_sha})");
        let alert_kind = super::health::LedgerFindingKind::of_finding(&kind, sha.is_some());
        n += plan_ledger_finding(conn, cfg, alert_kind, sha, detail, now)?;
        latest = latest.max(id);
    }
    if latest != mark {
        table::set_watermark(conn, MARK, &latest.to_string())?;
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
    let queued: Vec<(String, DateTime<Utc>)> = table::queued_before(conn, cutoff)?
        .into_iter()
        .filter_map(|(sha, at)| Some((sha, at.parse().ok()?)))
        .collect();
    let mut n = 0;
    for p in super::health::queued_too_long(&queued, cfg.queued_max_age_secs as i64, now) {
        n += plan_health(conn, cfg, &p)?;
    }
    Ok(n)
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
