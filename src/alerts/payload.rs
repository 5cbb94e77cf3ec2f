//! The generic webhook's JSON body, schema version 1.
//!
//! ```text
//! {
//!   "schema_version": 1,                 // integer; a new major shape gets a new number
//!   "id": "cwa_<32 hex>",                // = the webhook-id header: the idempotency key
//!   "type": "incident.opened",           // incident.opened | incident.resolved |
//!                                        // unreachable.opened | unreachable.resolved |
//!                                        // incident.flapping | incident.stable |
//!                                        // unreachable.flapping | unreachable.stable |
//!                                        // assertion.flipped | consent.declined |
//!                                        // consent.allowed | filing.refused |
//!                                        // filing.queued_too_long | filing.lane_exhausted |
//!                                        // health.store_degraded | health.store_recovered |
//!                                        // ledger.finding | digest
//!   "timestamp": "2026-12-01T16:00:00Z", // RFC 3339, UTC: when the alert was planned
//!   "data": {                            // every member optional: absent when not relevant
//!     "witness": {"id": "<32 hex>", "name": "w1"},  // who sends: the store's identifier
//!                                        // (part of every id) and [witness] name
//!     "target": "alpha",
//!     "origin": "https://agent.example", // the origin walked (the record's base)
//!     "endpoint": "https://agent.example/a2a",  // the endpoint measured
//!     "incident": {"number": 3, "kind": "conduct", "opened_at": "..."},
//!     "verdict": {"outcome": "FAIL", "n_pass": 6, "n_total": 7},
//!     "assertions_flipped": [{"name": "extension_echoed", "claim": "...",
//!                             "from": true, "to": false, "note": null}],
//!                                        // from/to: true, false, or null (not applicable)
//!     "record": {"sha256": "<64 hex>", "page": "/records/<sha256>",
//!                "raw": "/records/<sha256>/raw",    // paths on the walker's status pages
//!                "page_url": "https://walker.example/records/<sha256>",
//!                "raw_url": "..."},      // absolute, when the channel has a pages_url
//!     "changes_since_last_alert": 4,
//!     "consent_episode": 1,
//!     "flap": {"kind": "conduct", "episode": 1},   // *.flapping, *.stable (with "incident"
//!                                        // when one is open as it turns stable)
//!     "filing": {"record_sha256": "...", "reason": "...", "queued_since": "...",
//!                "age_secs": 90000, "intake": "...", "lane": "...", "day": "2026-12-01"},
//!     "store": {"episode": 1, "why": "disk full"},
//!     "ledger": {"kind": "rewound_head", "record_sha256": null, "detail": "..."},
//!     "digest": {"channel": "ops", "day": "2026-11-30", "sent": 20, "held": ["cwa_..."],
//!                "alerts": [{"id": "cwa_...", "type": "incident.opened",
//!                            "timestamp": "...", "summary": "alpha: conduct incident #3 opened",
//!                            "target": "alpha", "origin": "...", "endpoint": "...",
//!                            "incident": {...}, "record": {...}}],  // each held alert
//!                "alerts_omitted": 0}    // held alerts past the first 500, not listed
//!   }
//! }
//! ```
//!
//! Receivers must ignore members they do not know: version 1 grows only by adding optional
//! members; removing or changing one makes version 2.

use super::budget::Digest;
use super::health::{HealthEvent, LedgerFindingKind, PlannedHealth};
use super::incident::{IncidentKind, Planned, Transition};
use chrono::{DateTime, Utc};
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
    pub witness: Option<WitnessRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
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
    pub flap: Option<FlapRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filing: Option<FilingRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger: Option<LedgerRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<DigestRef>,
}

/// Who sends: the store's identifier, from which every alert id is derived, and the
/// `[witness]` name when the config gives one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WitnessRef {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncidentRef {
    pub number: u64,
    pub kind: IncidentKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opened_at: Option<String>,
}

/// A flapping episode (`incident.flapping`, `incident.stable`, and the `unreachable.` pair).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlapRef {
    pub kind: IncidentKind,
    pub episode: u64,
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
    /// `page` and `raw` as absolute URLs, filled per channel when it has a `pages_url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_url: Option<String>,
}

impl RecordRef {
    /// The status pages' paths of a record (`pages`: `/records/<sha>`, `/records/<sha>/raw`).
    pub fn of(sha256: &str) -> RecordRef {
        RecordRef {
            sha256: sha256.to_string(),
            page: format!("/records/{sha256}"),
            raw: format!("/records/{sha256}/raw"),
            page_url: None,
            raw_url: None,
        }
    }

    /// With the absolute URLs under `pages_url` (the status pages' base).
    fn with_base(&mut self, pages_url: &str) {
        let base = pages_url.trim_end_matches('/');
        self.page_url = Some(format!("{base}{}", self.page));
        self.raw_url = Some(format!("{base}{}", self.raw));
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
    /// The held alerts' ids, in the order they came.
    pub held: Vec<String>,
    /// Each held alert, in the same order, up to [`DIGEST_LISTED`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alerts: Vec<HeldRef>,
    /// Held alerts past the first [`DIGEST_LISTED`], counted but not listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub alerts_omitted: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The most held alerts a digest lists one by one (a body stays well under a receiver's limit).
pub const DIGEST_LISTED: usize = 500;

/// One held alert as a digest lists it: what it was about, when, and where to look.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldRef {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub timestamp: String,
    /// The alert's one-line title, as the text channels show it.
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incident: Option<IncidentRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<RecordRef>,
}

impl HeldRef {
    /// A held alert's entry, from its stored body.
    pub fn of(p: &AlertPayload) -> HeldRef {
        HeldRef {
            id: p.id.clone(),
            kind: p.kind.clone(),
            timestamp: p.timestamp.clone(),
            summary: title(p),
            target: p.data.target.clone(),
            origin: p.data.origin.clone(),
            endpoint: p.data.endpoint.clone(),
            incident: p.data.incident.clone(),
            record: p.data.record.clone(),
        }
    }
}

fn rfc3339(t: DateTime<Utc>) -> String {
    crate::clock::walked_at(t)
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
    /// The body of a target's alert, as `witness` sends it.
    pub fn of_incident(p: &Planned, witness: &WitnessRef) -> AlertPayload {
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
            // Stable again with an incident open: which one.
            Transition::Stable {
                kind,
                open: Some(incident),
                ..
            } => Some(IncidentRef {
                number: incident.number,
                kind: *kind,
                opened_at: Some(rfc3339(incident.opened_at)),
            }),
            _ => None,
        };
        let flap = match p.transition {
            Transition::Flapping { kind, episode } | Transition::Stable { kind, episode, .. } => {
                Some(FlapRef { kind, episode })
            }
            _ => None,
        };
        let consent_episode = match p.transition {
            Transition::ConsentDeclined { episode } | Transition::ConsentAllowed { episode } => {
                Some(episode)
            }
            _ => None,
        };
        let data = Data {
            witness: Some(witness.clone()),
            target: Some(p.target.clone()),
            origin: p.origin.clone(),
            endpoint: p.endpoint.clone(),
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
            flap,
            ..Data::default()
        };
        envelope(&p.id(&witness.id), p.transition.type_name(), p.at, data)
    }

    /// The body of a filing or health alert, as `witness` sends it.
    pub fn of_health(p: &PlannedHealth, witness: &WitnessRef) -> AlertPayload {
        let mut data = Data {
            witness: Some(witness.clone()),
            ..Data::default()
        };
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
        envelope(&p.id(&witness.id), p.event.type_name(), p.at, data)
    }

    /// The body of `alerts test`: a fresh id each time (receivers would dedupe a repeated one).
    pub fn of_test(at: DateTime<Utc>) -> AlertPayload {
        let id = super::alert_id(
            "test",
            &format!(
                "{}\0{}",
                at.timestamp_nanos_opt().unwrap_or(0),
                rand::random::<u64>()
            ),
        );
        envelope(&id, "alerts.test", at, Data::default())
    }

    /// The body of a channel's daily digest, as `witness` sends it: `held` are the held
    /// alerts' bodies, in the digest's order (an id whose body is gone is listed by id only).
    pub fn of_digest(
        d: &Digest,
        at: DateTime<Utc>,
        witness: &WitnessRef,
        held: &[AlertPayload],
    ) -> AlertPayload {
        let listed: Vec<HeldRef> = held.iter().take(DIGEST_LISTED).map(HeldRef::of).collect();
        let data = Data {
            witness: Some(witness.clone()),
            digest: Some(DigestRef {
                channel: d.channel.clone(),
                day: d.day.clone(),
                sent: d.sent,
                held: d.held.clone(),
                alerts_omitted: u32::try_from(held.len() - listed.len()).unwrap_or(u32::MAX),
                alerts: listed,
            }),
            ..Data::default()
        };
        envelope(&d.id(&witness.id), "digest", at, data)
    }

    /// This body as one channel sends it: record links made absolute under its `pages_url`.
    pub fn for_channel(&self, pages_url: Option<&str>) -> AlertPayload {
        let mut p = self.clone();
        if let Some(base) = pages_url {
            if let Some(r) = &mut p.data.record {
                r.with_base(base);
            }
            if let Some(d) = &mut p.data.digest {
                for r in d.alerts.iter_mut().filter_map(|a| a.record.as_mut()) {
                    r.with_base(base);
                }
            }
        }
        p
    }
}

/// Who an alert is about, as its title says it: the target and, when known, the endpoint it
/// measured (the target's name alone may be another agent in another config).
fn subject(d: &Data) -> String {
    match (&d.target, &d.endpoint) {
        (Some(t), Some(e)) => format!("{t} ({e})"),
        (Some(t), None) => t.clone(),
        (None, Some(e)) => e.clone(),
        (None, None) => "conduct-walker".to_string(),
    }
}

/// An alert's one-line title, as the human channels show it (the email's subject, ntfy's
/// `Title`, Slack's header) and a digest lists it.
pub fn title(p: &AlertPayload) -> String {
    let d = &p.data;
    let who = subject(d);
    let verdict = d
        .verdict
        .as_ref()
        .map(|v| format!(" ({} {}/{})", v.outcome, v.n_pass, v.n_total))
        .unwrap_or_default();
    match p.kind.as_str() {
        "incident.opened" | "unreachable.opened" | "incident.resolved" | "unreachable.resolved" => {
            let n = d.incident.as_ref().map(|i| i.number).unwrap_or(0);
            let what = if p.kind.starts_with("unreachable") {
                "unreachable"
            } else {
                "conduct incident"
            };
            let how = if p.kind.ends_with("opened") {
                "opened"
            } else {
                "resolved"
            };
            format!("{who}: {what} #{n} {how}{verdict}")
        }
        "incident.flapping" | "unreachable.flapping" => {
            let what = if p.kind.starts_with("unreachable") {
                "reachability"
            } else {
                "conduct"
            };
            format!(
                "{who}: {what} flapping (incidents keep opening and resolving; quiet until stable){verdict}"
            )
        }
        "incident.stable" | "unreachable.stable" => {
            let what = if p.kind.starts_with("unreachable") {
                "reachability"
            } else {
                "conduct"
            };
            let now = match &d.incident {
                Some(i) if p.kind.starts_with("unreachable") => {
                    format!(", unreachable #{} open", i.number)
                }
                Some(i) => format!(", conduct incident #{} open", i.number),
                None => ", no incident open".to_string(),
            };
            format!("{who}: {what} stable again{now}{verdict}")
        }
        "assertion.flipped" => format!("{who}: assertions changed{verdict}"),
        "consent.declined" => format!("{who}: the origin declines consent (listing: decline)"),
        "consent.allowed" => format!("{who}: the origin allows walks again"),
        "filing.refused" => format!("{who}: the intake refused a record"),
        "filing.queued_too_long" => format!("{who}: a record is queued for filing too long"),
        "filing.lane_exhausted" => {
            let lane = d.filing.as_ref().and_then(|f| f.lane.as_deref());
            format!(
                "conduct-walker: filing lane {} full today",
                lane.unwrap_or("?")
            )
        }
        "health.store_degraded" => "conduct-walker: the store cannot write".to_string(),
        "health.store_recovered" => "conduct-walker: the store writes again".to_string(),
        "ledger.finding" => format!("{who}: ledger finding"),
        "digest" => {
            let dg = d.digest.as_ref();
            format!(
                "conduct-walker digest {}: {} alert(s) held over the daily cap",
                dg.map(|x| x.day.as_str()).unwrap_or(""),
                dg.map(|x| x.held.len()).unwrap_or(0)
            )
        }
        "alerts.test" => "conduct-walker: test alert".to_string(),
        other => format!("conduct-walker: {other}"),
    }
}
