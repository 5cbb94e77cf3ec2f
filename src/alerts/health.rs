//! Filing problems and the daemon's own health, as pure decisions. Each returns the alert to
//! plan (or none) with an id derived from what it is about, so deciding twice (every drain pass,
//! every restart) plans one alert: the outbox keeps one row per id.

use super::alert_id;
use crate::filing::lanes::{Lane, Limits, Usage, has_room, utc_day};
use crate::filing::{AnswerKind, Transition};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What the ledger follower found (`ledger_findings`, fed by `alerts::outbox::ledger_findings`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LedgerFindingKind {
    /// A record not anchored in time.
    NotAnchored,
    /// An inclusion proof failed.
    InclusionFailed,
    /// The ledger's head went back.
    RewoundHead,
    /// The chain does not hold: a fork, a changed entry, bytes that do not hash to their claim.
    ChainInconsistent,
}

impl LedgerFindingKind {
    /// The alert kind of a stored finding's name (`ledger_findings.kind`, the follower's names:
    /// `overdue`, `rewound_head`, `entry_changed`, ...): about one record of ours, it is that
    /// record's inclusion; otherwise the chain's.
    pub fn of_finding(name: &str, about_a_record: bool) -> Self {
        match name {
            "overdue" | "not_anchored" => LedgerFindingKind::NotAnchored,
            "rewound" | "rewound_head" => LedgerFindingKind::RewoundHead,
            _ if about_a_record => LedgerFindingKind::InclusionFailed,
            _ => LedgerFindingKind::ChainInconsistent,
        }
    }
}

/// A health or filing alert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HealthEvent {
    /// The intake refused a record (a 4xx with its reason): settled, never retried.
    IntakeRefused {
        record_sha256: String,
        reason: String,
    },
    /// A record still queued longer than the configured age.
    QueuedTooLong {
        record_sha256: String,
        queued_since: DateTime<Utc>,
        age_secs: i64,
    },
    /// A lane took its last record of the UTC day.
    LaneExhausted {
        intake: String,
        lane: String,
        day: String,
    },
    /// The store cannot write (disk full, I/O error); episode counts degradations.
    StoreDegraded {
        episode: u64,
        why: String,
    },
    StoreRecovered {
        episode: u64,
    },
    /// The hook for issue 23.
    LedgerFinding {
        kind: LedgerFindingKind,
        record_sha256: Option<String>,
        detail: String,
    },
}

/// One health alert to plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedHealth {
    /// What the id is derived from, with the witness's identity ([`PlannedHealth::id`]).
    pub key: String,
    pub at: DateTime<Utc>,
    pub event: HealthEvent,
}

impl HealthEvent {
    /// The payload's `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            HealthEvent::IntakeRefused { .. } => "filing.refused",
            HealthEvent::QueuedTooLong { .. } => "filing.queued_too_long",
            HealthEvent::LaneExhausted { .. } => "filing.lane_exhausted",
            HealthEvent::StoreDegraded { .. } => "health.store_degraded",
            HealthEvent::StoreRecovered { .. } => "health.store_recovered",
            HealthEvent::LedgerFinding { .. } => "ledger.finding",
        }
    }

    /// What the id is derived from: one alert per record refused, per record gone stale, per
    /// lane and day, per store episode, per ledger finding.
    pub fn key(&self) -> String {
        match self {
            HealthEvent::IntakeRefused { record_sha256, .. } => format!("refused\0{record_sha256}"),
            HealthEvent::QueuedTooLong { record_sha256, .. } => format!("stale\0{record_sha256}"),
            HealthEvent::LaneExhausted { intake, lane, day } => {
                format!("lane\0{intake}\0{lane}\0{day}")
            }
            HealthEvent::StoreDegraded { episode, .. } => format!("store\0{episode}\0degraded"),
            HealthEvent::StoreRecovered { episode } => format!("store\0{episode}\0recovered"),
            HealthEvent::LedgerFinding {
                kind,
                record_sha256,
                detail,
            } => format!(
                "ledger\0{kind:?}\0{}\0{detail}",
                record_sha256.as_deref().unwrap_or("")
            ),
        }
    }

    pub fn plan(self, at: DateTime<Utc>) -> PlannedHealth {
        PlannedHealth {
            key: self.key(),
            at,
            event: self,
        }
    }
}

impl PlannedHealth {
    /// The alert's id as `witness` sends it ([`alert_id`]).
    pub fn id(&self, witness: &str) -> String {
        alert_id(witness, &self.key)
    }
}

/// A filing attempt's transition: an alert when the intake refused the record.
pub fn on_filing(
    record_sha256: &str,
    t: &Transition,
    at: DateTime<Utc>,
    enabled: bool,
) -> Option<PlannedHealth> {
    if !enabled || t.answer != AnswerKind::Refused {
        return None;
    }
    let reason = match (&t.reason_code, &t.error) {
        (Some(code), Some(err)) => format!("{code}: {err}"),
        (Some(code), None) => code.clone(),
        (None, Some(err)) => err.clone(),
        (None, None) => "refused without a reason".to_string(),
    };
    Some(
        HealthEvent::IntakeRefused {
            record_sha256: record_sha256.to_string(),
            reason,
        }
        .plan(at),
    )
}

/// Records still queued (sha256, queued since) past `max_age_secs` at `now`.
pub fn queued_too_long(
    queued: &[(String, DateTime<Utc>)],
    max_age_secs: i64,
    now: DateTime<Utc>,
) -> Vec<PlannedHealth> {
    queued
        .iter()
        .filter_map(|(sha, since)| {
            let age = (now - *since).num_seconds();
            (age > max_age_secs).then(|| {
                HealthEvent::QueuedTooLong {
                    record_sha256: sha.clone(),
                    queued_since: *since,
                    age_secs: age,
                }
                .plan(now)
            })
        })
        .collect()
}

/// A lane full today, whoever said so (our own count or the intake's answer): one alert per
/// intake, lane and UTC day.
pub fn lane_full(intake: &str, lane: &str, now: DateTime<Utc>) -> PlannedHealth {
    HealthEvent::LaneExhausted {
        intake: intake.to_string(),
        lane: lane.to_string(),
        day: utc_day(now),
    }
    .plan(now)
}

/// A lane's use today against its cap: an alert once it is full (one per lane and UTC day).
pub fn lane_exhausted(
    intake: &str,
    lane: &str,
    used_today: u32,
    cap: u32,
    now: DateTime<Utc>,
) -> Option<PlannedHealth> {
    (used_today >= cap).then(|| lane_full(intake, lane, now))
}

/// [`lane_exhausted`] from the filing's own lane arithmetic: the lane is named by its stored key
/// (`address`, `domain:<host>`), or `global` when the intake's daily total is what is used up.
pub fn lane_exhausted_by_limits(
    intake: &str,
    limits: &Limits,
    lane: &Lane,
    usage: Usage,
    now: DateTime<Utc>,
) -> Option<PlannedHealth> {
    if has_room(limits, lane, usage) {
        return None;
    }
    if usage.global >= limits.daily_global {
        lane_exhausted(intake, "global", usage.global, limits.daily_global, now)
    } else {
        lane_exhausted(intake, &lane.key(), usage.lane, limits.lane_cap(lane), now)
    }
}

/// The store's health, stored between checks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreHealth {
    pub degraded: bool,
    pub episodes: u64,
}

/// The store's health now (`Some(why)`: it cannot write): an alert on each change.
pub fn store_health(
    prev: &StoreHealth,
    degraded: Option<&str>,
    now: DateTime<Utc>,
) -> (StoreHealth, Option<PlannedHealth>) {
    match (prev.degraded, degraded) {
        (false, Some(why)) => {
            let next = StoreHealth {
                degraded: true,
                episodes: prev.episodes + 1,
            };
            let ev = HealthEvent::StoreDegraded {
                episode: next.episodes,
                why: why.to_string(),
            };
            (next, Some(ev.plan(now)))
        }
        (true, None) => {
            let next = StoreHealth {
                degraded: false,
                episodes: prev.episodes,
            };
            let ev = HealthEvent::StoreRecovered {
                episode: prev.episodes,
            };
            (next, Some(ev.plan(now)))
        }
        _ => (prev.clone(), None),
    }
}
