//! What an intake's answers mean (spec §5, §6.2, §6.6), as values: the witness's intake client
//! classifies each exchange into one of these, and the filing state machine decides from them.

use std::time::Duration;

/// What an intake answer means for the record (every row of §6.2 lands in one of these).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// 201: stored (pending). `counted` false with the intake's `count_reason` for a second walk
    /// of the same endpoint the same day.
    Accepted {
        sha: String,
        counted: bool,
        count_reason: Option<String>,
        signed_domain: Option<String>,
    },
    /// 200 `dedup`: these bytes were already there.
    Duplicate { sha: String, status: String },
    /// 400, 413, 422 (and any other unexpected answer): never retried, shown to the operator.
    Refused {
        status: u16,
        error: String,
        reason_code: Option<String>,
    },
    /// 429: a lane or the global cap is full until the next UTC day.
    LaneFull { error: String, cap: Option<u64> },
    /// Nothing was stored: a complete answer that says so (503: the intake's only 503,
    /// `key_url_unreachable`, comes before storing; a redirect, not followed), or a request
    /// that never reached the intake (no connection). Sent again later.
    Retry {
        status: u16,
        error: String,
        retry_after: Option<RetryAfter>,
    },
    /// No complete answer after the request may have left (reset, timeout, truncated, oversized
    /// or unreadable body, TLS error), an acceptance that does not read as one, or a 5xx other
    /// than 503 (a gateway may have passed the request on): the intake may hold the record.
    /// Never sent again blind: asked first (`GET <intake>/<sha256>`, `witness::intake::lookup`).
    Unknown {
        status: u16,
        error: String,
        retry_after: Option<RetryAfter>,
    },
}

/// A `Retry-After` header as the intake sent it (RFC 9110 §10.2.3); how long it means is
/// decided against the clock by [`super::retry_after_delay`], clamped to
/// [`MAX_RETRY_AFTER`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    Seconds(u64),
    Date(chrono::DateTime<chrono::Utc>),
}

impl RetryAfter {
    /// Delay-seconds or an HTTP date; anything unreadable is `None` (ignored).
    pub fn parse(value: &str) -> Option<RetryAfter> {
        let v = value.trim();
        match v.parse::<u64>() {
            Ok(secs) => Some(RetryAfter::Seconds(secs)),
            // Digits too many for a u64 are still a number of seconds: clamped later.
            Err(_) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
                Some(RetryAfter::Seconds(u64::MAX))
            }
            // The three HTTP-date forms (IMF-fixdate, RFC 850, asctime), then any RFC 2822
            // date with a zone offset.
            Err(_) => httpdate::parse_http_date(v)
                .map(chrono::DateTime::<chrono::Utc>::from)
                .or_else(|_| {
                    chrono::DateTime::parse_from_rfc2822(v).map(|d| d.with_timezone(&chrono::Utc))
                })
                .ok()
                .map(RetryAfter::Date),
        }
    }
}

/// The longest wait a `Retry-After` may impose: an intake (named by a stranger's card) must
/// not park a record for years.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);
/// What `GET <intake>/<sha256>` (§6.6, ledger.md §2) says of a record, for the row waiting
/// after an unknown outcome or a kill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// 200, pending or anchored, carrying this sha256 and exactly these canonical bytes: filed,
    /// without a second POST. `counted`, `count_reason` and `submitted_day` are the intake's
    /// (the UTC day it stored the record is the day its lane counted it).
    Found {
        status: String,
        counted: Option<bool>,
        count_reason: Option<String>,
        submitted_day: Option<String>,
    },
    /// 404: the intake does not hold it, so it is sent.
    NotFound,
    /// Anything else (no complete answer, another status, a body over the cap, not the
    /// route's shape, another sha256 or other bytes): still unknown, asked again later.
    Failed {
        status: u16,
        error: String,
        retry_after: Option<RetryAfter>,
    },
}
