//! The overview's model: the witness, today's lanes, the outbox, the ledger and alert boxes,
//! the store's size and last verification, and one page of targets with their strips.

use super::configured;
use crate::filing::SubmissionState;
use crate::filing::lanes::{Lane, Limits};
use crate::pages::strips::StripCache;
use crate::pages::{Context, VerifySummary, WitnessInfo, alerts, ledger};
use crate::store::StoreError;
use crate::store::notifications::{self, NotificationRow};
use crate::store::outbox::{self, Submission};
use crate::store::reciprocal_walks::{self, ReciprocalWalk};
use crate::store::status::{self, Fire};
use crate::store::witness_requests::{self, WitnessRequest};
use chrono::{DateTime, Duration, Utc};
use rusqlite::Connection;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Strip length: the last this many fires of a target.
pub const STRIP: usize = 50;
/// Targets per overview page.
pub const TARGETS_PER_PAGE: usize = 100;
/// Days in the lane chart.
pub const LANE_DAYS: i64 = 14;
/// The witness face's requests the overview lists.
pub const WITNESS_REQUESTS: usize = 20;
/// The reciprocal walks the overview lists.
pub const RECIPROCAL_WALKS: usize = 20;
/// The §11.5 notifications the overview lists.
pub const NOTIFICATIONS: usize = 20;

/// The overview page.
#[derive(Debug, Clone, Default)]
pub struct OverviewView {
    pub witness: Option<WitnessInfo>,
    /// Today (UTC), `YYYY-MM-DD`.
    pub today: String,
    pub lanes_today: Vec<LaneToday>,
    /// One chart per lane: `(lane, cap, accepted per day over the last LANE_DAYS days)`.
    pub lane_charts: Vec<LaneChart>,
    pub outbox: Vec<(SubmissionState, u64)>,
    pub ledger: ledger::LedgerOverview,
    pub alerts: alerts::OverviewAlerts,
    pub records: i64,
    pub size_bytes: u64,
    /// The last verification and whether one is running.
    pub verify: (Option<VerifySummary>, bool),
    pub targets: TargetList,
    /// The witness face's latest requests, newest first (none without a face).
    pub witness_requests: Vec<WitnessRequest>,
    /// Reciprocal walks asked of this witness (requested, declined, queued, filed), newest
    /// first.
    pub reciprocal_walks: Vec<ReciprocalWalk>,
    /// The latest §11.5 notifications after scheduled walks, newest first.
    pub notifications: Vec<NotificationRow>,
}

/// Accepted today by one intake in one lane, under its cap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaneToday {
    pub intake: String,
    pub lane: String,
    pub used: u32,
    pub cap: u32,
    /// The cap is the intake's own (`GET /witness`), not the spec's.
    pub stated: bool,
}

/// One lane's chart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaneChart {
    pub lane: String,
    pub cap: u64,
    pub per_day: Vec<(String, u64)>,
}

/// One page of the target (or endpoint) rows.
#[derive(Debug, Clone, Default)]
pub struct TargetList {
    /// Rows in all pages.
    pub total: usize,
    /// A store without a daemon: one row per endpoint.
    pub by_endpoint: bool,
    pub page: usize,
    pub pages: usize,
    pub rows: Vec<TargetRow>,
}

/// One overview row.
#[derive(Debug, Clone, Default)]
pub struct TargetRow {
    pub name: String,
    /// Configured or walked target (else an endpoint of a store without a daemon).
    pub is_target: bool,
    pub endpoint: String,
    pub schedule: Option<String>,
    pub next_fire: Option<String>,
    /// Newest first (shared with the strip cache).
    pub fires: Arc<Vec<Fire>>,
    /// How the intakes took the row's last record (`None`: no record).
    pub last_filed: Option<Vec<Submission>>,
}

pub(crate) fn iso(t: DateTime<Utc>) -> String {
    crate::clock::walked_at(t)
}

/// Read the overview's page `page` (from 1). `strips` keeps each target's strip between calls
/// (the served pages keep one for the process; `&StripCache::default()` reads every strip
/// afresh).
pub fn overview(
    conn: &Connection,
    ctx: &Context,
    verify: &(Option<VerifySummary>, bool),
    page: usize,
    now: DateTime<Utc>,
    strips: &StripCache,
) -> Result<OverviewView, StoreError> {
    crate::store::pages::in_one_snapshot(conn, || {
        strips.begin(conn)?;
        let today = now.format("%Y-%m-%d").to_string();
        let from_day = (now - Duration::days(LANE_DAYS - 1))
            .format("%Y-%m-%d")
            .to_string();
        let lane_days = status::lanes_by_day(conn, &from_day)?;
        Ok(OverviewView {
            witness: witness_of(conn, ctx)?,
            lanes_today: lanes_today(ctx, outbox::lanes_used(conn, &today)?),
            lane_charts: lane_charts(ctx, &lane_days, now),
            today,
            outbox: status::outbox_by_state(conn)?,
            ledger: ledger::overview(conn)?,
            alerts: alerts::overview(conn)?,
            records: status::newest_record_id(conn)?.unwrap_or(0),
            size_bytes: status::size_bytes(conn)?,
            verify: verify.clone(),
            targets: target_list(conn, ctx, page, now, strips)?,
            witness_requests: witness_requests::recent(conn, WITNESS_REQUESTS)?,
            reciprocal_walks: reciprocal_walks::recent(conn, RECIPROCAL_WALKS)?,
            notifications: notifications::recent(conn, NOTIFICATIONS)?,
        })
    })
}

/// The witness block: from the config, else from the newest record.
fn witness_of(conn: &Connection, ctx: &Context) -> Result<Option<WitnessInfo>, StoreError> {
    let newest = crate::store::pages::newest_witness(conn)?;
    if let Some(w) = &ctx.witness {
        let mut w = w.clone();
        // The config's key may be a credential only the service can read: then the newest
        // record this witness signed tells its key, rather than calling it unsigned.
        if w.public_key_b64.is_none()
            && let Some(n) = newest
            && n.name.as_deref() == Some(w.name.as_str())
        {
            w.public_key_b64 = n.public_key_b64;
        }
        return Ok(Some(w));
    }
    Ok(newest.map(|n| WitnessInfo {
        name: n.name.unwrap_or_default(),
        vantage: n.vantage.unwrap_or_default(),
        key_url: n.key_url,
        public_key_b64: n.public_key_b64,
    }))
}

/// Each intake's stated limits, else the spec's (and whether they were stated).
fn limits_of(ctx: &Context, intake: &str) -> (Limits, bool) {
    match ctx.limits.iter().find(|(u, _)| u == intake) {
        Some((_, l)) => (*l, true),
        None => (Limits::default(), false),
    }
}

fn lanes_today(ctx: &Context, used: Vec<(String, String, u32)>) -> Vec<LaneToday> {
    used.into_iter()
        .map(|(intake, lane, used)| {
            let (limits, stated) = limits_of(ctx, &intake);
            LaneToday {
                cap: limits.lane_cap(&Lane::from_key(&lane)),
                intake,
                lane,
                used,
                stated,
            }
        })
        .collect()
}

/// One chart per lane, each under its own cap: a domain lane's 9 of 50 is not an address
/// lane's 9 of 5. The caps: what the one intake stated, else the spec's.
fn lane_charts(
    ctx: &Context,
    rows: &[(String, String, u64)],
    now: DateTime<Utc>,
) -> Vec<LaneChart> {
    let chart_limits = match ctx.limits.as_slice() {
        [(_, l)] => *l,
        _ => Limits::default(),
    };
    let lanes: BTreeSet<&str> = rows.iter().map(|(_, l, _)| l.as_str()).collect();
    let lanes: Vec<&str> = if lanes.is_empty() {
        vec!["address"]
    } else {
        lanes.into_iter().collect()
    };
    lanes
        .into_iter()
        .map(|lane| LaneChart {
            lane: lane.to_string(),
            cap: chart_limits.lane_cap(&Lane::from_key(lane)) as u64,
            per_day: lane_day_series(rows, lane, now),
        })
        .collect()
}

/// Accepted per day over the lane chart's days, zeros included.
fn lane_day_series(
    rows: &[(String, String, u64)],
    lane: &str,
    now: DateTime<Utc>,
) -> Vec<(String, u64)> {
    let mut by_day: std::collections::BTreeMap<String, u64> = Default::default();
    for d in 0..LANE_DAYS {
        by_day.insert(
            (now - Duration::days(LANE_DAYS - 1 - d))
                .format("%Y-%m-%d")
                .to_string(),
            0,
        );
    }
    for (day, _, n) in rows.iter().filter(|(_, l, _)| l == lane) {
        if let Some(v) = by_day.get_mut(day) {
            *v += n;
        }
    }
    by_day.into_iter().collect()
}

/// The rows: configured targets and every target the daemon fired; a store without a daemon
/// (walks with --db, merged imports) has one row per endpoint instead.
fn target_list(
    conn: &Connection,
    ctx: &Context,
    page: usize,
    now: DateTime<Utc>,
    strips: &StripCache,
) -> Result<TargetList, StoreError> {
    let mut names: BTreeSet<String> = ctx.targets.iter().map(|t| t.name.clone()).collect();
    names.extend(status::walked_targets(conn, 100_000)?);
    // Endpoints whose records no daemon fire stands for (walks with --db, records imported
    // from other daemons): a row each, also beside configured targets (`records serve
    // --config` over a merged store), so nothing in the store is hidden.
    let fired: BTreeSet<String> = crate::store::summary::fired_endpoints(conn)?;
    let configured_endpoints: BTreeSet<&str> = ctx
        .targets
        .iter()
        .filter_map(|t| t.endpoint.as_deref())
        .collect();
    let bare: Vec<String> = status::stored_endpoints(conn, 100_000)?
        .into_iter()
        .filter(|e| !fired.contains(e) && !configured_endpoints.contains(e.as_str()))
        .collect();
    let all: Vec<(bool, String)> = names
        .into_iter()
        .map(|n| (false, n))
        .chain(bare.into_iter().map(|e| (true, e)))
        .collect();
    let pages = all.len().div_ceil(TARGETS_PER_PAGE).max(1);
    let page = page.clamp(1, pages);
    let mut rows = Vec::new();
    for (is_endpoint, name) in all
        .iter()
        .skip((page - 1) * TARGETS_PER_PAGE)
        .take(TARGETS_PER_PAGE)
    {
        let mut row = if *is_endpoint {
            endpoint_row(conn, name)?
        } else {
            target_row(conn, ctx, name, now, strips)?
        };
        row.last_filed = match row.fires.iter().find_map(|f| f.record.as_ref()) {
            Some(rec) => Some(outbox::for_record(conn, rec.id)?),
            None => None,
        };
        rows.push(row);
    }
    Ok(TargetList {
        total: all.len(),
        by_endpoint: all.iter().all(|(e, _)| *e),
        page,
        pages,
        rows,
    })
}

fn endpoint_row(conn: &Connection, endpoint: &str) -> Result<TargetRow, StoreError> {
    Ok(TargetRow {
        name: endpoint.to_string(),
        is_target: false,
        endpoint: endpoint.to_string(),
        fires: Arc::new(status::endpoint_records(conn, endpoint, STRIP)?),
        ..TargetRow::default()
    })
}

fn target_row(
    conn: &Connection,
    ctx: &Context,
    name: &str,
    now: DateTime<Utc>,
    strips: &StripCache,
) -> Result<TargetRow, StoreError> {
    let conf = configured(ctx, name);
    let mut fires = strips.latest_fires(conn, name, STRIP)?;
    // A configured target this store has no fires of (a merged store served with the config):
    // the records of its endpoint, when the config names one.
    if fires.is_empty()
        && let Some(e) = conf.and_then(|t| t.endpoint.as_deref())
    {
        fires = Arc::new(status::endpoint_records(conn, e, STRIP)?);
    }
    let endpoint = conf
        .map(|t| t.endpoint.clone().unwrap_or_else(|| t.origin.clone()))
        .or_else(|| {
            fires.iter().find_map(|f| {
                f.record
                    .as_ref()
                    .map(|r| r.endpoint.clone())
                    .or(f.endpoint.clone())
                    .or(f.origin.clone())
            })
        })
        .unwrap_or_default();
    Ok(TargetRow {
        name: name.to_string(),
        is_target: true,
        endpoint,
        schedule: conf.map(|t| t.schedule.clone()),
        next_fire: conf.and_then(|t| t.next_fire.after(now)).map(iso),
        fires,
        last_filed: None,
    })
}
