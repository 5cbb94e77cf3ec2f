//! The generic webhook's JSON body, schema version 1.
//!
//! ```text
//! {
//!   "schema_version": 1,                 // integer; a new major shape gets a new number
//!   "id": "cwa_<32 hex>",                // = the webhook-id header: the idempotency key
//!   "type": "incident.opened",           // incident.opened | incident.resolved |
//!                                        // unreachable.opened | unreachable.resolved |
//!                                        // assertion.flipped | consent.declined |
//!                                        // consent.allowed | filing.refused |
//!                                        // filing.queued_too_long | filing.lane_exhausted |
//!                                        // health.store_degraded | health.store_recovered |
//!                                        // ledger.finding | digest
//!   "timestamp": "2026-12-01T16:00:00Z", // RFC 3339, UTC: when the alert was planned
//!   "data": {                            // every member optional: absent when not relevant
//!     "target": "alpha",
//!     "incident": {"number": 3, "kind": "conduct", "opened_at": "..."},
//!     "verdict": {"outcome": "FAIL", "n_pass": 6, "n_total": 7},
//!     "assertions_flipped": [{"name": "extension_echoed", "claim": "...",
//!                             "from": true, "to": false, "note": null}],
//!                                        // from/to: true, false, or null (not applicable)
//!     "record": {"sha256": "<64 hex>", "page": "/records/<sha256>",
//!                "raw": "/records/<sha256>/raw"},   // paths on the walker's status pages
//!     "changes_since_last_alert": 4,
//!     "consent_episode": 1,
//!     "filing": {"record_sha256": "...", "reason": "...", "queued_since": "...",
//!                "age_secs": 90000, "intake": "...", "lane": "...", "day": "2026-12-01"},
//!     "store": {"episode": 1, "why": "disk full"},
//!     "ledger": {"kind": "rewound_head", "record_sha256": null, "detail": "..."},
//!     "digest": {"channel": "ops", "day": "2026-11-30", "sent": 20, "held": ["cwa_..."]}
//!   }
//! }
//! ```
//!
//! Receivers must ignore members they do not know: version 1 grows only by adding optional
//! members; removing or changing one makes version 2.

use super::budget::Digest;
use super::health::{HealthEvent, LedgerFindingKind, PlannedHealth};
use super::incident::{IncidentKind, Planned, Transition};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertPayload {
    pub schema_version: u32,
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub timestamp: String,
    pub data: Data,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Data {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incident: Option<IncidentRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<VerdictRef>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assertions_flipped: Vec<FlipRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<RecordRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes_since_last_alert: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consent_episode: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filing: Option<FilingRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger: Option<LedgerRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<DigestRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncidentRef {
    pub number: u64,
    pub kind: IncidentKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opened_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictRef {
    pub outcome: String,
    pub n_pass: u32,
    pub n_total: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlipRef {
    pub name: String,
    pub claim: String,
    pub from: Option<bool>,
    pub to: Option<bool>,
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordRef {
    pub sha256: String,
    pub page: String,
    pub raw: String,
}

impl RecordRef {
    /// The status pages' paths of a record (`pages`: `/records/<sha>`, `/records/<sha>/raw`).
    pub fn of(sha256: &str) -> RecordRef {
        RecordRef {
            sha256: sha256.to_string(),
            page: format!("/records/{sha256}"),
            raw: format!("/records/{sha256}/raw"),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilingRef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_since: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_secs: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intake: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreRef {
    pub episode: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerRef {
    pub kind: LedgerFindingKind,
    pub record_sha256: Option<String>,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DigestRef {
    pub channel: String,
    pub day: String,
    pub sent: u32,
    pub held: Vec<String>,
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn envelope(id: &str, kind: &str, at: DateTime<Utc>, data: Data) -> AlertPayload {
    AlertPayload {
        schema_version: SCHEMA_VERSION,
        id: id.to_string(),
        kind: kind.to_string(),
        timestamp: rfc3339(at),
        data,
    }
}

impl AlertPayload {
    /// The body of a target's alert.
    pub fn of_incident(p: &Planned) -> AlertPayload {
        let incident = match &p.transition {
            Transition::Opened { kind, incident } => Some(IncidentRef {
                number: incident.number,
                kind: *kind,
                opened_at: Some(rfc3339(incident.opened_at)),
            }),
            Transition::Resolved { kind, number } => Some(IncidentRef {
                number: *number,
                kind: *kind,
                opened_at: None,
            }),
            _ => None,
        };
        let consent_episode = match p.transition {
            Transition::ConsentDeclined { episode } | Transition::ConsentAllowed { episode } => {
                Some(episode)
            }
            _ => None,
        };
        let data = Data {
            target: Some(p.target.clone()),
            incident,
            verdict: p.verdict.map(|(ok, n_pass, n_total)| VerdictRef {
                outcome: if ok { "PASS" } else { "FAIL" }.to_string(),
                n_pass,
                n_total,
            }),
            assertions_flipped: p
                .flips
                .iter()
                .map(|f| FlipRef {
                    name: f.name.clone(),
                    claim: f.claim.clone(),
                    from: f.from,
                    to: f.to,
                    note: f.note.clone(),
                })
                .collect(),
            record: p.record_sha256.as_deref().map(RecordRef::of),
            changes_since_last_alert: Some(p.held_changes),
            consent_episode,
            ..Data::default()
        };
        envelope(&p.id, p.transition.type_name(), p.at, data)
    }

    /// The body of a filing or health alert.
    pub fn of_health(p: &PlannedHealth) -> AlertPayload {
        let mut data = Data::default();
        match &p.event {
            HealthEvent::IntakeRefused {
                record_sha256,
                reason,
            } => {
                data.record = Some(RecordRef::of(record_sha256));
                data.filing = Some(FilingRef {
                    record_sha256: Some(record_sha256.clone()),
                    reason: Some(reason.clone()),
                    ..FilingRef::default()
                });
            }
            HealthEvent::QueuedTooLong {
                record_sha256,
                queued_since,
                age_secs,
            } => {
                data.record = Some(RecordRef::of(record_sha256));
                data.filing = Some(FilingRef {
                    record_sha256: Some(record_sha256.clone()),
                    queued_since: Some(rfc3339(*queued_since)),
                    age_secs: Some(*age_secs),
                    ..FilingRef::default()
                });
            }
            HealthEvent::LaneExhausted { intake, lane, day } => {
                data.filing = Some(FilingRef {
                    intake: Some(intake.clone()),
                    lane: Some(lane.clone()),
                    day: Some(day.clone()),
                    ..FilingRef::default()
                });
            }
            HealthEvent::StoreDegraded { episode, why } => {
                data.store = Some(StoreRef {
                    episode: *episode,
                    why: Some(why.clone()),
                });
            }
            HealthEvent::StoreRecovered { episode } => {
                data.store = Some(StoreRef {
                    episode: *episode,
                    why: None,
                });
            }
            HealthEvent::LedgerFinding {
                kind,
                record_sha256,
                detail,
            } => {
                data.record = record_sha256.as_deref().map(RecordRef::of);
                data.ledger = Some(LedgerRef {
                    kind: kind.clone(),
                    record_sha256: record_sha256.clone(),
                    detail: detail.clone(),
                });
            }
        }
        envelope(&p.id, p.event.type_name(), p.at, data)
    }

    /// The body of `alerts test`: a fresh id each time (receivers would dedupe a repeated one).
    pub fn of_test(at: DateTime<Utc>) -> AlertPayload {
        let id = super::alert_id(&format!(
            "test\0{}\0{}",
            at.timestamp_nanos_opt().unwrap_or(0),
            rand::random::<u64>()
        ));
        envelope(&id, "alerts.test", at, Data::default())
    }

    /// The body of a channel's daily digest.
    pub fn of_digest(d: &Digest, at: DateTime<Utc>) -> AlertPayload {
        let data = Data {
            digest: Some(DigestRef {
                channel: d.channel.clone(),
                day: d.day.clone(),
                sent: d.sent,
                held: d.held.clone(),
            }),
            ..Data::default()
        };
        envelope(&d.id, "digest", at, data)
    }
}
