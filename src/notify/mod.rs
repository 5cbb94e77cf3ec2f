//! §11.5 `notify` (spec witness-pool.md §7): after a scheduled, full-mode walk of an origin
//! whose consent file declares `notify`, POST a summary of the record there, once per hour per
//! endpoint, three per wave, never to an IP literal, a local name or our own hosts, no retry.
//!
//! A pure core ([`guard`]: guards 1–7; [`body`]: the summary) and the I/O of one notification
//! ([`send`]: guard 8, resolving through the witness's address guard, and step 9, the POST).
//! [`Notifier::decide`] runs guards 1–7 and stores the decision in one transaction, so an
//! attempt is on disk before its POST leaves; the daemon's scheduler is the only caller (an
//! on-demand, MCP, reciprocal or requested walk never comes here).

pub mod body;
pub mod guard;
pub mod send;

pub use guard::{Policy, WalkKind};
pub use send::Notifier;

use crate::store::{Store, StoreError, notifications};
use crate::walk::Privacy;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// What the notifier is told of one finished walk that stored a record.
#[derive(Debug, Clone)]
pub struct AfterWalk {
    /// Its `daemon_walks` row.
    pub walk_id: i64,
    pub record_id: i64,
    pub kind: WalkKind,
    pub privacy: Privacy,
    /// The origin walked (`https://host[:port]`), whose consent file was read.
    pub origin: String,
    /// The consent file's string `notify`, as read for this walk.
    pub notify: Option<String>,
    /// The fire's scheduled time: its wave (one round of the scheduler).
    pub wave: String,
    /// Whether the walk files its record.
    pub submits: bool,
}

/// What to do after guards 1–7.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// `notify_status: null`: nothing stored, nothing sent.
    Null,
    /// Refused, rate limited or deferred: stored as this status.
    Settled(Value),
    /// Stored as an attempt (row `id`): run guard 8, POST `body` to `url`, settle the row.
    Send {
        id: i64,
        url: String,
        host: String,
        body: Vec<u8>,
    },
}

/// The notifier's configuration.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub policy: Policy,
    /// Our own host names, lower case (guard 5).
    pub own_hosts: Vec<String>,
    /// Tests only (§4.5): the name screen is skipped and the address guard admits loopback.
    pub allow_private_network: bool,
    /// `[witness] intake`: where records are filed instead of the card's `witness_intake`.
    pub intake_override: Option<String>,
}

impl Settings {
    /// Add a URL's host to our own (ignored when `url` has none).
    pub fn add_own_host(&mut self, url: &str) {
        if let Some(host) = guard::host_of(url)
            && !self.own_hosts.contains(&host)
        {
            self.own_hosts.push(host);
        }
    }
}

/// Guards 1–7 for `walk`, and the decision stored (guard 1 stores nothing). The counts guards
/// 6 and 7 read and the row written are one transaction: two fires of one wave deciding at
/// once cannot both take the third place.
pub fn decide(
    settings: &Settings,
    store: &Store,
    walk: &AfterWalk,
    now: DateTime<Utc>,
) -> Result<Step, StoreError> {
    let Some(url) = walk.notify.as_deref() else {
        return Ok(Step::Null);
    };
    let null_facts = guard::Facts {
        policy: settings.policy,
        kind: walk.kind,
        privacy: walk.privacy,
        notify: Some(url),
        own_hosts: &[],
        last_attempt: None,
        attempts_in_wave: 0,
        now,
        allow_private_network: settings.allow_private_network,
    };
    // Guard 1 before anything is read: most walks stop here.
    if guard::decide(&null_facts) == guard::Decision::Settled(None) {
        return Ok(Step::Null);
    }
    let stored = store.get_by_id(walk.record_id)?;
    let record: Value =
        serde_json::from_slice(&stored.canonical).map_err(|_| StoreError::NotCanonical {
            sha256: stored.row.sha256.clone(),
        })?;
    let endpoint = body::endpoint(&record);
    // The intake the record names is one we file to: one of our own hosts for this walk.
    let record_intake = record["conduct_ext"]["witness_intake"].as_str();
    let mut own = settings.clone();
    record_intake.inspect(|intake| own.add_own_host(intake));
    // Where the pipeline files it (the same choice): the override, else the card's intake.
    let filed_to = walk
        .submits
        .then(|| settings.intake_override.as_deref().or(record_intake))
        .flatten();
    let conn = store.connection();
    let tx = crate::store::write_transaction(conn)?;
    let last_attempt = notifications::last_attempt(&tx, &endpoint)?
        .and_then(|at| DateTime::parse_from_rfc3339(&at).ok())
        .map(|at| at.with_timezone(&Utc));
    let facts = guard::Facts {
        own_hosts: &own.own_hosts,
        last_attempt,
        attempts_in_wave: notifications::attempts_in_wave(&tx, &walk.wave)?,
        ..null_facts
    };
    let decided_at = crate::clock::utc_millis(now);
    let mut row = notifications::NewNotification {
        walk_id: walk.walk_id,
        record_id: walk.record_id,
        record_sha256: &stored.row.sha256,
        endpoint: &endpoint,
        url,
        wave: &walk.wave,
        decided_at: &decided_at,
        status: None,
    };
    let step = match guard::decide(&facts) {
        guard::Decision::Settled(None) => Step::Null,
        guard::Decision::Settled(Some(status)) => {
            row.status = Some(&status);
            notifications::insert(&tx, &row)?;
            Step::Settled(status)
        }
        guard::Decision::Attempt { host } => {
            let previous = match notifications::previous_walk_record(&tx, walk.walk_id)? {
                Some(id) => serde_json::from_slice(&store.get_by_id(id)?.canonical).ok(),
                None => None,
            };
            let walked = body::Walked {
                record: &record,
                sha256: &stored.row.sha256,
                origin: &walk.origin,
                filed_to,
            };
            let body = body::body(walked, previous.as_ref())
                .to_string()
                .into_bytes();
            let id = notifications::insert(&tx, &row)?;
            Step::Send {
                id,
                url: url.to_string(),
                host,
                body,
            }
        }
    };
    tx.commit()?;
    Ok(step)
}
