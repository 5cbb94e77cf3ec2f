//! §11.6 reciprocal walks, the decisions that need no I/O (witness-pool.md §6.2, §6.3; every
//! rule here is ours: no other implementation exists). A message to the witness face that
//! carries `EXT/caller_card` asks us to walk its sender back within `reciprocal_within`; the
//! face answers `EXT/reciprocal` = `scheduled` or `declined`, and the first of these reasons
//! that applies decides:
//!
//! 1. `not_https`, 2. `not_card_url`, 3. `own_host` ([`read_caller_card`]);
//! 4. `not_public`, 5. `listing_decline` (the I/O of `witness_pool::caller`);
//! 6. already queued (the same walk answers `scheduled`), 7. `already_walked`, 8. `budget`
//!    ([`queue_decision`], taken in the store's write transaction so two requests cannot both
//!    pass the budget).
//!
//! A queued walk moves through the states of [`state`]; the store keeps them
//! (`store::reciprocal_walks`), so a killed daemon loses none.

use serde_json::Value;

/// The one path a walk can read (conduct-walk.md §2.1).
pub const CARD_PATH: &str = "/.well-known/agent-card.json";

/// Reciprocal walks queued per UTC day when `[witness_face] reciprocal_per_day` is not set.
/// The intake stores 50 records per domain and UTC day, shared with every scheduled walk: 20
/// leaves 30 for them (docs/reference/config.md says so).
pub const DEFAULT_DAILY_BUDGET: u32 = 20;
/// The largest budget a config may set: above it reciprocal walks alone could fill the lane.
pub const MAX_DAILY_BUDGET: u32 = 40;

/// Why a reciprocal walk was declined (§6.2, in the order they are checked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decline {
    NotHttps,
    NotCardUrl,
    OwnHost,
    NotPublic,
    ListingDecline,
    AlreadyWalked,
    Budget,
}

impl Decline {
    pub const ALL: [Decline; 7] = [
        Decline::NotHttps,
        Decline::NotCardUrl,
        Decline::OwnHost,
        Decline::NotPublic,
        Decline::ListingDecline,
        Decline::AlreadyWalked,
        Decline::Budget,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Decline::NotHttps => "not_https",
            Decline::NotCardUrl => "not_card_url",
            Decline::OwnHost => "own_host",
            Decline::NotPublic => "not_public",
            Decline::ListingDecline => "listing_decline",
            Decline::AlreadyWalked => "already_walked",
            Decline::Budget => "budget",
        }
    }

    pub fn parse(text: &str) -> Option<Decline> {
        Decline::ALL.into_iter().find(|d| d.as_str() == text)
    }
}

/// A caller card that passed steps 1–3.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The card URL as the caller sent it.
    pub card_url: String,
    /// `https://host[:port]`: what is walked (the scheme and host of the card URL).
    pub origin: String,
    /// The host, lower-case ASCII.
    pub host: String,
}

/// Steps 1–3 of §6.2 over the raw `EXT/caller_card` value; `own_hosts` are the face's origin
/// host and the `key_url` host (lower-case; a port does not make a host another's).
pub fn read_caller_card(value: &Value, own_hosts: &[String]) -> Result<Caller, Decline> {
    let text = value.as_str().ok_or(Decline::NotHttps)?;
    let url = url::Url::parse(text).map_err(|_| Decline::NotHttps)?;
    let host = match url.host_str() {
        Some(h) if url.scheme() == "https" && !h.is_empty() => h.to_ascii_lowercase(),
        _ => return Err(Decline::NotHttps),
    };
    if url.path() != CARD_PATH || url.query().is_some() || url.fragment().is_some() {
        return Err(Decline::NotCardUrl);
    }
    if own_hosts.iter().any(|own| own.eq_ignore_ascii_case(&host)) {
        return Err(Decline::OwnHost);
    }
    Ok(Caller {
        card_url: text.to_string(),
        origin: url.origin().ascii_serialization(),
        host,
    })
}

/// The host of an https URL (lower-case), for the list of our own hosts.
pub fn host_of(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()?
        .host_str()
        .map(str::to_ascii_lowercase)
}

/// What the store knows of one origin when a request for it arrives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OriginNow {
    /// A reciprocal walk of this origin that is queued or running: its row id.
    pub pending: Option<i64>,
    /// A reciprocal walk of this origin was walked today (UTC): its record is on its way to the
    /// intake, which counts one per identity, endpoint and day.
    pub filed_today: bool,
}

/// Steps 6–8, after the caller passed steps 1–5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    /// The same walk is already queued: answer `scheduled`, queue nothing more.
    Join(i64),
    Declined(Decline),
    /// Queue a new walk.
    New,
}

/// `taken_today`: reciprocal walks queued today (UTC) that count against the budget (every one
/// that was queued, whatever became of it: a failed walk still cost the caller's turn).
pub fn queue_decision(origin: OriginNow, taken_today: u32, budget: u32) -> Queue {
    if let Some(id) = origin.pending {
        return Queue::Join(id);
    }
    if origin.filed_today {
        return Queue::Declined(Decline::AlreadyWalked);
    }
    if taken_today >= budget {
        return Queue::Declined(Decline::Budget);
    }
    Queue::New
}

/// The states of a reciprocal walk's row.
pub mod state {
    /// Declined while answering (`reason` says why); never walked.
    pub const DECLINED: &str = "declined";
    /// The request joined a walk of the same origin already queued (`detail` names it).
    pub const JOINED: &str = "joined";
    pub const QUEUED: &str = "queued";
    pub const RUNNING: &str = "running";
    /// Walked: its record stored with its outbox row (how its filing stands is the outbox's
    /// state, not this one).
    pub const WALKED: &str = "walked";
    /// The origin's consent file declined listing when the walk was to start.
    pub const CANCELLED: &str = "cancelled";
    /// The walk produced no record (a store or setup error; an agent's failure is a record).
    pub const FAILED: &str = "failed";
    /// Whether a row in this state counts against the day's budget.
    pub fn counts_against_budget(state: &str) -> bool {
        matches!(state, QUEUED | RUNNING | WALKED | CANCELLED | FAILED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn own() -> Vec<String> {
        vec!["witness.example.org".into(), "keys.example.org".into()]
    }

    #[test]
    fn steps_one_to_three_in_order() {
        let cases: &[(Value, Result<&str, Decline>)] = &[
            (json!(42), Err(Decline::NotHttps)),
            (json!("not a url"), Err(Decline::NotHttps)),
            (
                json!("http://caller.example.com/.well-known/agent-card.json"),
                Err(Decline::NotHttps),
            ),
            (
                json!("https://caller.example.com/agent.json"),
                Err(Decline::NotCardUrl),
            ),
            (
                json!("https://caller.example.com/.well-known/agent-card.json?x=1"),
                Err(Decline::NotCardUrl),
            ),
            (
                json!("https://caller.example.com/.well-known/agent-card.json#f"),
                Err(Decline::NotCardUrl),
            ),
            // not_card_url is checked before own_host: an own-host URL with a wrong path says
            // the first thing wrong with it.
            (
                json!("https://witness.example.org/x"),
                Err(Decline::NotCardUrl),
            ),
            (
                json!("https://WITNESS.example.org:8443/.well-known/agent-card.json"),
                Err(Decline::OwnHost),
            ),
            (
                json!("https://keys.example.org/.well-known/agent-card.json"),
                Err(Decline::OwnHost),
            ),
            (
                json!("https://Caller.Example.com/.well-known/agent-card.json"),
                Ok("https://caller.example.com"),
            ),
            (
                json!("https://caller.example.com:8443/.well-known/agent-card.json"),
                Ok("https://caller.example.com:8443"),
            ),
        ];
        for (value, want) in cases {
            let got = read_caller_card(value, &own()).map(|c| c.origin);
            assert_eq!(got.as_deref(), want.as_ref().map(|s| *s), "{value}");
        }
    }

    #[test]
    fn a_pending_walk_is_joined_before_anything_is_counted() {
        let pending = OriginNow {
            pending: Some(7),
            filed_today: true,
        };
        assert_eq!(queue_decision(pending, 99, 1), Queue::Join(7));
        let walked = OriginNow {
            pending: None,
            filed_today: true,
        };
        assert_eq!(
            queue_decision(walked, 0, 20),
            Queue::Declined(Decline::AlreadyWalked)
        );
        let fresh = OriginNow::default();
        assert_eq!(queue_decision(fresh, 19, 20), Queue::New);
        assert_eq!(
            queue_decision(fresh, 20, 20),
            Queue::Declined(Decline::Budget)
        );
    }

    #[test]
    fn decline_names_round_trip() {
        for d in Decline::ALL {
            assert_eq!(Decline::parse(d.as_str()), Some(d));
        }
        assert_eq!(Decline::parse("scheduled"), None);
    }
}
