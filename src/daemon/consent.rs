//! The origin's consent file (spec README §5, §11.6): `https://ORIGIN/.well-known/mcp-conduct.json`.
//!
//! Only an explicit `"listing": "decline"` stops a walk. A missing file, an error, a body that is
//! not a JSON object or that says nothing about listing states nothing, and the origin is walked
//! as configured: the absence of a file is not a refusal.
//!
//! The daemon reads each origin's file at most once a day ([`ConsentGate`]); a read that failed in
//! transport is retried no sooner than an hour later rather than a day, because trusting a
//! failed read for a whole day could walk an origin that declines for that day.

use super::db::{self, ConsentRow};
use super::store::DaemonStore;
use crate::digest::sha256_hex;
use crate::net::{Exchange, HttpRequest, Transport};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;

/// Where the file lives under an origin.
pub const CONSENT_PATH: &str = "/.well-known/mcp-conduct.json";

/// How long a definite answer (declined, silent, absent) is trusted.
pub const RECHECK_AFTER: chrono::Duration = chrono::Duration::hours(24);
/// How long an unreadable answer is trusted.
pub const RECHECK_UNREADABLE_AFTER: chrono::Duration = chrono::Duration::hours(1);

/// What a consent file said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Consent {
    /// `"listing": "decline"`: do not walk. `sha256` of the exact bytes served.
    Declined { sha256: String },
    /// A JSON object that does not decline.
    Silent { sha256: String },
    /// 404 or 410: there is no file.
    Absent { status: u16 },
    /// Transport failure, another status, or not a JSON object.
    Unreadable { status: u16, why: String },
}

impl Consent {
    pub fn outcome(&self) -> &'static str {
        match self {
            Consent::Declined { .. } => "declined",
            Consent::Silent { .. } => "silent",
            Consent::Absent { .. } => "absent",
            Consent::Unreadable { .. } => "unreadable",
        }
    }

    fn row(&self, origin: &str, checked_at: &str) -> ConsentRow {
        let (status, sha256, detail) = match self {
            Consent::Declined { sha256 } => (Some(200), Some(sha256.clone()), None),
            Consent::Silent { sha256 } => (Some(200), Some(sha256.clone()), None),
            Consent::Absent { status } => (Some(*status as i64), None, None),
            Consent::Unreadable { status, why } => (Some(*status as i64), None, Some(why.clone())),
        };
        ConsentRow {
            origin: origin.to_string(),
            checked_at: checked_at.to_string(),
            outcome: self.outcome().to_string(),
            status,
            sha256,
            detail,
        }
    }
}

/// The consent URL of an origin (trailing slashes removed, as the walk forms its base).
pub fn consent_url(origin: &str) -> String {
    format!("{}{CONSENT_PATH}", origin.trim_end_matches('/'))
}

/// Classify what the origin served.
pub fn classify(ex: &Exchange) -> Consent {
    if let Some(err) = &ex.transport_error {
        return Consent::Unreadable {
            status: 0,
            why: err.clone(),
        };
    }
    match ex.status {
        200 => {}
        404 | 410 => return Consent::Absent { status: ex.status },
        s => {
            return Consent::Unreadable {
                status: s,
                why: format!("HTTP {s}"),
            };
        }
    }
    let sha256 = sha256_hex(&ex.body);
    match crate::json::parse_lenient(&ex.body) {
        Ok(Value::Object(obj)) => match obj.get("listing") {
            Some(Value::String(s)) if s == "decline" => Consent::Declined { sha256 },
            _ => Consent::Silent { sha256 },
        },
        Ok(_) => Consent::Unreadable {
            status: 200,
            why: "not a JSON object".into(),
        },
        Err(e) => Consent::Unreadable {
            status: 200,
            why: format!("not JSON: {e}"),
        },
    }
}

/// Fetch and classify an origin's consent file with the walk's transport rules.
pub async fn fetch(transport: &Transport, origin: &str) -> Consent {
    let req = HttpRequest::get(consent_url(origin), &[("Accept", "application/json")]);
    classify(&transport.fetch(&req).await)
}

/// The daemon's view: one read per origin per day, every read stored.
pub struct ConsentGate {
    transport: Transport,
    store: DaemonStore,
    cache: Mutex<HashMap<String, (DateTime<Utc>, Consent)>>,
}

/// The gate's answer for one fire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Walk,
    /// Declined; the sha256 of the declining bytes and when they were read.
    Declined {
        sha256: String,
        checked_at: String,
    },
}

impl ConsentGate {
    /// A gate that remembers the reads stored by earlier runs (so a restart does not re-read).
    pub async fn new(
        transport: Transport,
        store: DaemonStore,
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
        })
    }

    /// Use a new transport after a reload (the cache stays).
    pub fn with_transport(&self, transport: Transport) -> ConsentGate {
        ConsentGate {
            transport,
            store: self.store.clone(),
            cache: Mutex::new(self.cache.lock().expect("consent cache").clone()),
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
        let now = Utc::now();
        let (at, consent) = match self.cached(&key, now) {
            Some(hit) => hit,
            None => {
                let consent = fetch(&self.transport, &key).await;
                let row = consent.row(&key, &db::timestamp(now));
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
            _ => Decision::Walk,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(status: u16, body: &str) -> Exchange {
        Exchange {
            request: HttpRequest::get("https://a.example/x", &[]),
            status,
            response_headers: vec![],
            body: body.as_bytes().to_vec(),
            duration_ms: 1,
            transport_error: None,
        }
    }

    #[test]
    fn only_an_explicit_decline_declines() {
        let body = r#"{"listing": "decline"}"#;
        assert_eq!(
            classify(&ex(200, body)),
            Consent::Declined {
                sha256: sha256_hex(body.as_bytes())
            }
        );
        assert!(matches!(
            classify(&ex(200, r#"{"listing": "allow"}"#)),
            Consent::Silent { .. }
        ));
        assert!(matches!(
            classify(&ex(200, r#"{"listing": ["decline"]}"#)),
            Consent::Silent { .. }
        ));
        assert!(matches!(classify(&ex(200, "{}")), Consent::Silent { .. }));
        assert!(matches!(
            classify(&ex(200, "[\"decline\"]")),
            Consent::Unreadable { .. }
        ));
        assert!(matches!(
            classify(&ex(200, "<html>")),
            Consent::Unreadable { .. }
        ));
        assert_eq!(classify(&ex(404, body)), Consent::Absent { status: 404 });
        assert!(matches!(
            classify(&ex(500, body)),
            Consent::Unreadable { status: 500, .. }
        ));
        let failed = Exchange::failure(HttpRequest::get("https://a.example/", &[]), "refused", 1);
        assert!(matches!(
            classify(&failed),
            Consent::Unreadable { status: 0, .. }
        ));
    }

    #[test]
    fn consent_url_strips_trailing_slashes() {
        assert_eq!(
            consent_url("https://a.example//"),
            "https://a.example/.well-known/mcp-conduct.json"
        );
    }
}
