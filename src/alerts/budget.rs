//! The per-channel daily cap and its digest, pure.
//!
//! Each channel may deliver at most `daily_cap` alerts per UTC day. [`admit`] says, for one
//! alert, whether to send it or hold it for the digest; an alert held is still planned and stored
//! (it is not lost), only not delivered alone. Once the day is over, [`digest_due`] returns the
//! one digest of that day (what was held, in order) with its own deterministic id; the digest is
//! not counted against the cap.

use super::alert_id;
use crate::filing::lanes::utc_day;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One channel's count for its current UTC day, stored with the channel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelDay {
    /// `YYYY-MM-DD` (UTC); empty before the first alert.
    pub day: String,
    pub sent: u32,
    /// Ids of the alerts held for the digest of `day`, in the order they came.
    pub held: Vec<String>,
}

/// What to do with one alert on one channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    Send,
    /// Over the cap: held for the digest of that day.
    Held,
}

/// The digest of one day's held alerts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    /// What the id is derived from, with the witness's identity ([`Digest::id`]).
    pub key: String,
    pub channel: String,
    pub day: String,
    pub sent: u32,
    pub held: Vec<String>,
}

/// Count one alert at `at` against the channel's cap. A day that is not the stored one starts a
/// new count; an earlier day's unsent digest must be taken first with [`digest_due`] (this
/// returns it too, so it is never dropped).
pub fn admit(
    channel: &str,
    prev: &ChannelDay,
    daily_cap: u32,
    alert_id: &str,
    at: DateTime<Utc>,
) -> (ChannelDay, Admission, Option<Digest>) {
    let day = utc_day(at);
    // A time before the stored day (a clock stepped back) counts on the stored day: a day's
    // digest is only ever taken once that day is over.
    let (mut s, digest) = if !prev.day.is_empty() && day <= prev.day {
        (prev.clone(), None)
    } else {
        (
            ChannelDay {
                day: day.clone(),
                ..ChannelDay::default()
            },
            digest_of(channel, prev),
        )
    };
    if s.sent < daily_cap {
        s.sent += 1;
        (s, Admission::Send, digest)
    } else {
        s.held.push(alert_id.to_string());
        (s, Admission::Held, digest)
    }
}

/// The digest of a finished day, once `now` is past it (for a timer at UTC midnight); the state
/// keeps the new day with nothing held.
pub fn digest_due(
    channel: &str,
    prev: &ChannelDay,
    now: DateTime<Utc>,
) -> (ChannelDay, Option<Digest>) {
    let today = utc_day(now);
    // Days are YYYY-MM-DD, so text order is time order.
    if prev.day.is_empty() || prev.day >= today {
        return (prev.clone(), None);
    }
    (
        ChannelDay {
            day: today,
            ..ChannelDay::default()
        },
        digest_of(channel, prev),
    )
}

impl Digest {
    /// The digest's id as `witness` sends it ([`alert_id`]).
    pub fn id(&self, witness: &str) -> String {
        alert_id(witness, &self.key)
    }
}

fn digest_of(channel: &str, day: &ChannelDay) -> Option<Digest> {
    (!day.held.is_empty()).then(|| Digest {
        key: format!("{channel}\0digest\0{}", day.day),
        channel: channel.to_string(),
        day: day.day.clone(),
        sent: day.sent,
        held: day.held.clone(),
    })
}
