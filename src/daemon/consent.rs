//! The daemon's consent gate over [`crate::consent`]: each origin's file is read at most once
//! a day; a read that failed in transport is retried no sooner than an hour later rather than a
//! day, because trusting a failed read for a whole day could walk an origin that declines for
//! that day. Every read is stored.

use super::db::{self, ConsentRow};
use super::store::DaemonStore;
use crate::consent::{Consent, fetch};
use crate::net::Transport;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::Mutex;

/// How long a definite answer (declined, silent, absent) is trusted.
pub const RECHECK_AFTER: chrono::Duration = chrono::Duration::hours(24);
/// How long an unreadable answer is trusted.
pub const RECHECK_UNREADABLE_AFTER: chrono::Duration = chrono::Duration::hours(1);

/// The stored form of one read.
fn consent_row(consent: &Consent, origin: &str, checked_at: &str) -> ConsentRow {
    let (status, sha256, detail) = match consent {
        Consent::Declined { sha256 } => (Some(200), Some(sha256.clone()), None),
        Consent::Silent { sha256, .. } => (Some(200), Some(sha256.clone()), None),
        Consent::Absent { status } => (Some(*status as i64), None, None),
        Consent::Unreadable { status, why } => (Some(*status as i64), None, Some(why.clone())),
    };
    let notify = match consent {
        Consent::Silent { notify, .. } => notify.clone(),
        _ => None,
    };
    ConsentRow {
        origin: origin.to_string(),
        checked_at: checked_at.to_string(),
        outcome: consent.outcome().to_string(),
        status,
        sha256,
        detail,
        notify,
    }
}

/// The daemon's view: one read per origin per day, every read stored.
pub struct ConsentGate {
    transport: Transport,
    store: DaemonStore,
    cache: Mutex<HashMap<String, (DateTime<Utc>, Consent)>>,
    clock: std::sync::Arc<dyn crate::clock::Clock>,
}

/// The gate's answer for one fire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Walk; `notify` is the consent file's string `notify` (§11.5), when it declares one.
    Walk { notify: Option<String> },
    /// Declined; the sha256 of the declining bytes and when they were read.
    Declined { sha256: String, checked_at: String },
}

impl ConsentGate {
    /// A gate that remembers the reads stored by earlier runs (so a restart does not re-read).
    pub async fn new(
        transport: Transport,
        store: DaemonStore,
        clock: std::sync::Arc<dyn crate::clock::Clock>,
    ) -> Result<ConsentGate, crate::store::StoreError> {
        let rows = store.with(db::latest_consent).await?;
        let mut cache = HashMap::new();
        for r in rows {
            let Ok(at) = DateTime::parse_from_rfc3339(&r.checked_at) else {
                continue;
            };
            let consent = match r.outcome.as_str() {
                "declined" => Consent::Declined {
                    sha256: r.sha256.unwrap_or_default(),
                },
                "silent" => Consent::Silent {
                    sha256: r.sha256.unwrap_or_default(),
                    notify: r.notify,
                },
                "absent" => Consent::Absent {
                    status: r.status.unwrap_or(404) as u16,
                },
                _ => Consent::Unreadable {
                    status: r.status.unwrap_or(0) as u16,
                    why: r.detail.unwrap_or_default(),
                },
            };
            cache.insert(r.origin, (at.with_timezone(&Utc), consent));
        }
        Ok(ConsentGate {
            transport,
            store,
            cache: Mutex::new(cache),
            clock,
        })
    }

    /// Use a new transport after a reload (the cache stays).
    pub fn with_transport(&self, transport: Transport) -> ConsentGate {
        ConsentGate {
            transport,
            store: self.store.clone(),
            cache: Mutex::new(self.cache.lock().expect("consent cache").clone()),
            clock: self.clock.clone(),
        }
    }

    fn cached(&self, origin: &str, now: DateTime<Utc>) -> Option<(DateTime<Utc>, Consent)> {
        let cache = self.cache.lock().expect("consent cache");
        let (at, consent) = cache.get(origin)?;
        let ttl = match consent {
            Consent::Unreadable { .. } => RECHECK_UNREADABLE_AFTER,
            _ => RECHECK_AFTER,
        };
        (now - *at < ttl).then(|| (*at, consent.clone()))
    }

    /// Whether to walk `origin` now; reads the file when the last read is stale.
    pub async fn decide(&self, origin: &str) -> Result<Decision, crate::store::StoreError> {
        let key = origin.trim_end_matches('/').to_string();
        let now = self.clock.now();
        let (at, consent) = match self.cached(&key, now) {
            Some(hit) => hit,
            None => {
                let consent = fetch(&self.transport, &key).await;
                let row = consent_row(&consent, &key, &db::timestamp(now));
                self.store
                    .with(move |c| db::insert_consent(c, &row))
                    .await?;
                match &consent {
                    Consent::Declined { sha256 } => tracing::warn!(
                        origin = %key, consent_sha256 = %sha256,
                        "the origin's consent file declines listing: not walking it"
                    ),
                    Consent::Unreadable { why, .. } => tracing::info!(
                        origin = %key, why = %why,
                        "consent file unreadable; it states nothing, walking as configured"
                    ),
                    _ => {
                        tracing::debug!(origin = %key, outcome = consent.outcome(), "consent file read")
                    }
                }
                self.cache
                    .lock()
                    .expect("consent cache")
                    .insert(key.clone(), (now, consent.clone()));
                (now, consent)
            }
        };
        Ok(match consent {
            Consent::Declined { sha256 } => Decision::Declined {
                sha256,
                checked_at: db::timestamp(at),
            },
            Consent::Silent { notify, .. } => Decision::Walk { notify },
            _ => Decision::Walk { notify: None },
        })
    }
}
