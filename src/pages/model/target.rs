//! A target's page: its configuration, its latest walks, walks per day, and its history (the
//! latest walks or one UTC day's).

use super::configured;
use super::overview::STRIP;
use crate::pages::TargetInfo;
use crate::store::StoreError;
use crate::store::outbox::{self, Submission};
use crate::store::status::{self, Fire};
use chrono::{DateTime, Duration, NaiveDate, Utc};
use rusqlite::Connection;

/// Walks in a target page's history when no day is chosen.
const HISTORY: usize = 100;
/// Days in the per-target bar chart.
pub const DAYS: i64 = 30;
/// At most this many fires are read for a target's bar chart.
const CHART_MAX_FIRES: usize = 5000;
/// Fires of one day shown at most.
const DAY_MAX_FIRES: usize = 2000;

/// A target's page.
#[derive(Debug, Clone)]
pub struct TargetView {
    pub name: String,
    pub config: Option<TargetInfo>,
    /// When the schedule fires next (RFC 3339), for a configured target.
    pub next_fire: Option<String>,
    /// The day shown, or the latest walks.
    pub day: Option<NaiveDate>,
    /// The strip: the last walks, newest first.
    pub latest: Vec<Fire>,
    /// `(day, kind, count)` over the last [`DAYS`] days: the record's outcome for a stored walk
    /// (`PASS`, `FAIL`, `none`), else the fire's state.
    pub daily: Vec<(String, String, u64)>,
    /// The first day of the bar chart and its last (today).
    pub chart_days: Vec<String>,
    /// The history, newest first, each with how the intakes took its record.
    pub history: Vec<HistoryFire>,
}

/// One walk of the history.
#[derive(Debug, Clone, Default)]
pub struct HistoryFire {
    pub fire: Fire,
    pub filed: Option<Vec<Submission>>,
    /// The record's not-applicable assertions (`result: null`), when its bytes are kept.
    pub not_applicable: Vec<String>,
}

/// `None` when no such target is configured or has fired.
pub fn target(
    conn: &Connection,
    ctx: &crate::pages::Context,
    name: &str,
    day: Option<NaiveDate>,
    now: DateTime<Utc>,
) -> Result<Option<TargetView>, StoreError> {
    let conf = configured(ctx, name);
    let fires = match day {
        Some(d) => {
            let from = format!("{}T00:00:00", d.format("%Y-%m-%d"));
            let to = format!("{}T00:00:00", (d + Duration::days(1)).format("%Y-%m-%d"));
            status::fires_between(conn, name, &from, &to, DAY_MAX_FIRES)?
        }
        None => status::latest_fires(conn, name, HISTORY)?,
    };
    let latest = if day.is_some() {
        status::latest_fires(conn, name, STRIP)?
    } else {
        fires.iter().take(STRIP).cloned().collect()
    };
    if conf.is_none() && latest.is_empty() {
        return Ok(None);
    }
    let chart_days: Vec<String> = (0..DAYS)
        .map(|d| {
            (now - Duration::days(DAYS - 1 - d))
                .format("%Y-%m-%d")
                .to_string()
        })
        .collect();
    let daily = status::daily_outcomes(conn, name, &chart_days[0], CHART_MAX_FIRES)?;
    let mut history = Vec::with_capacity(fires.len());
    for fire in fires {
        history.push(history_fire(conn, fire)?);
    }
    Ok(Some(TargetView {
        name: name.to_string(),
        next_fire: conf
            .and_then(|t| t.next_fire.after(now))
            .map(super::overview::iso),
        config: conf.cloned(),
        day,
        latest,
        daily,
        chart_days,
        history,
    }))
}

fn history_fire(conn: &Connection, fire: Fire) -> Result<HistoryFire, StoreError> {
    let Some(r) = &fire.record else {
        return Ok(HistoryFire {
            fire,
            ..HistoryFire::default()
        });
    };
    let filed = Some(outbox::for_record(conn, r.id)?);
    // Not-applicable assertions are not among the stored facts: read from each record shown.
    let not_applicable = crate::store::pages::canonical_of(conn, r.id)?
        .map(|c| not_applicable(&c))
        .unwrap_or_default();
    Ok(HistoryFire {
        fire,
        filed,
        not_applicable,
    })
}

/// Names of a record's not-applicable assertions (`result: null`).
fn not_applicable(canonical: &[u8]) -> Vec<String> {
    crate::store::record_view::RecordView::read(canonical)
        .map(|v| v.assertion_names(crate::store::record_view::Outcome::NotApplicable))
        .unwrap_or_default()
}
