//! The filing state machine (spec §5, §6.2), pure: which step an outbox row takes next, what an
//! intake's answer makes of it, and how every face words where it stands. The pipeline only
//! carries out what these functions return; time, the jitter and the store's counts come in as
//! values, so every rule is table-tested without a network.
//!
//! ```text
//!            plan (pipeline::plan, in the record's insert transaction)
//!   ┌───────────────┬──────────────┴─────────────┬──────────────────┐
//!   ▼               ▼                            ▼                  ▼
//! kept_local    host_offline                  queued ◄──────┐    refused (too long)
//! (settled)     (settled)                        │           │
//!                              next_step: NotDue (wait) ─────┤
//!                              next_step: Defer(midnight) ───┤ (lane full by our own count)
//!                              next_step: Send               │
//!                                                ▼           │ answered, not stored:
//!                                             sending        │ retry, lane_full
//!                                                │ POST ─────┘ (backoff / next UTC midnight)
//!                                                ├─ answered, stored: accepted, duplicate ─► filed
//!                                                ├─ answered, refused ────────────────────► refused
//!                                                └─ unknown (no complete answer), or killed:
//!                                                     stays sending; next_step: LookUp
//!                                                     GET <intake>/<sha256> (after_lookup)
//!                                                     ├─ same sha256 and bytes ──► filed (found)
//!                                                     ├─ 404 ──► lane check, then Send
//!                                                     └─ anything else ──► sending, asked again
//!                                                                          after a backoff
//! ```
//!
//! An attempt has three outcomes (issue 34): the intake answered and did not store the record,
//! answered and stored it, or nobody knows. Only the first is sent again directly; an unknown
//! outcome is never resent blind, because a resend of a record the intake already holds is
//! checked against its caps before its dedupe (§6.2) and can be refused for a record that is
//! in fact filed.

pub mod answer;
pub mod bind;
pub mod lanes;

use answer::{Answer, Lookup, MAX_RETRY_AFTER};
use chrono::{DateTime, Utc};
use lanes::{Lane, Limits, Usage};
use std::fmt;
use std::str::FromStr;

/// Generates the one text form (the store's column value) of a fieldless enum. The store maps
/// it to and from its columns (`store::columns`).
macro_rules! text_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vm])* $variant,)+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The text stored in the database and printed by the faces.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text,)+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownText;
            fn from_str(s: &str) -> Result<Self, UnknownText> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownText { what: stringify!($name), text: s.to_string() }),
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}

/// A text that names no value of the enum (a store written by a newer version, or edited).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a {what}")]
pub struct UnknownText {
    pub what: &'static str,
    pub text: String,
}

text_enum! {
    /// Where an outbox row stands (the `submissions.state` column).
    SubmissionState {
        /// Waiting for its first or next attempt (`next_attempt_at`).
        Queued = "queued",
        /// Its request may have left and no answer says what the intake did (in flight, the
        /// process was stopped, or the answer was lost): the intake is asked before any resend.
        Sending = "sending",
        /// The intake holds it (accepted or duplicate): settled.
        Filed = "filed",
        /// The intake refused it, or it could never be taken (too long): settled, not retried.
        Refused = "refused",
        /// Not the day's first walk of its identity × endpoint: stored, never sent.
        KeptLocal = "kept_local",
        /// This host could not reach the intake when the walk saw transport errors: not filed.
        HostOffline = "host_offline",
    }
}

text_enum! {
    /// The kind of the last answer (the `submissions.last_answer` and
    /// `submission_attempts.answer` columns); `lane_full` also when our own count held it back.
    /// The last four are issue 34's: a POST with no complete answer, and what a lookup
    /// (`GET <intake>/<sha256>`) found.
    AnswerKind {
        Accepted = "accepted",
        Duplicate = "duplicate",
        Refused = "refused",
        LaneFull = "lane_full",
        Retry = "retry",
        /// No complete answer after the request may have left: a lookup comes next.
        Unknown = "unknown",
        /// A lookup found the record (same sha256, same bytes): filed, not sent again.
        Found = "found",
        /// A lookup's 404: the record is sent (logged only; the POST's answer follows).
        NotFound = "not_found",
        /// A lookup without a usable answer: still unknown, asked again after a backoff.
        LookupFailed = "lookup_failed",
    }
}

text_enum! {
    /// What a submission came to, as every face shows it (the MCP tool's `answer`).
    Outcome {
        FiledCounted = "filed_counted",
        FiledNotCounted = "filed_not_counted",
        Duplicate = "duplicate",
        Refused = "refused",
        LaneFull = "lane_full",
        QueuedForRetry = "queued_for_retry",
        KeptLocal = "kept_local",
        HostOffline = "host_offline",
        NotSent = "not_sent",
        /// Sent, and what the intake did is not known yet: it is asked before any resend.
        AwaitingLookup = "awaiting_lookup",
    }
}

impl SubmissionState {
    /// Filed, refused, kept local or host offline: nothing more will be sent.
    pub fn is_settled(self) -> bool {
        !matches!(self, SubmissionState::Queued | SubmissionState::Sending)
    }

    /// The state read aloud (`kept local`).
    pub fn words(self) -> String {
        self.as_str().replace('_', " ")
    }
}

impl AnswerKind {
    /// Whether this is a lookup's result (`GET <intake>/<sha256>`), not a POST's answer.
    pub fn is_lookup(self) -> bool {
        matches!(
            self,
            AnswerKind::Found | AnswerKind::NotFound | AnswerKind::LookupFailed
        )
    }

    /// The store counts this answer against the day's lanes: the intake stored the record
    /// because of our POST (a lookup finds only what an earlier POST of ours left there).
    pub fn uses_the_lane(self) -> bool {
        matches!(self, AnswerKind::Accepted | AnswerKind::Found)
    }
}

/// What an attempt says the intake did with the record (issue 34).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// A complete answer that says nothing was stored (429, 503, a redirect, a 4xx refusal).
    AnsweredNotStored,
    /// A complete answer that says the record is stored (201, 200 duplicate).
    AnsweredStored,
    /// No complete answer after the request may have left: the intake is asked next.
    Unknown,
}

impl Answer {
    /// The stored kind of this answer.
    pub fn kind(&self) -> AnswerKind {
        match self {
            Answer::Accepted { .. } => AnswerKind::Accepted,
            Answer::Duplicate { .. } => AnswerKind::Duplicate,
            Answer::Refused { .. } => AnswerKind::Refused,
            Answer::LaneFull { .. } => AnswerKind::LaneFull,
            Answer::Retry { .. } => AnswerKind::Retry,
            Answer::Unknown { .. } => AnswerKind::Unknown,
        }
    }

    /// Which of the three outcomes this answer is.
    pub fn outcome(&self) -> AttemptOutcome {
        match self {
            Answer::Accepted { .. } | Answer::Duplicate { .. } => AttemptOutcome::AnsweredStored,
            Answer::Refused { .. } | Answer::LaneFull { .. } | Answer::Retry { .. } => {
                AttemptOutcome::AnsweredNotStored
            }
            Answer::Unknown { .. } => AttemptOutcome::Unknown,
        }
    }
}

/// The facts of a submission a summary is made from (an outbox row or a pipeline report).
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    pub state: SubmissionState,
    pub answer: Option<AnswerKind>,
    pub counted: Option<bool>,
    pub count_reason: Option<&'a str>,
    pub reason_code: Option<&'a str>,
    pub error: Option<&'a str>,
    pub next_attempt_at: Option<&'a str>,
}

/// Where a submission stands, decided once; the faces render [`Summary::short`] (pages,
/// tables) or [`Summary::text`] (CLI, MCP), never the stored strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub outcome: Outcome,
    /// A few words: `counted`, `refused: <reason_code>`, `queued (<error>)`.
    pub short: String,
    /// A sentence for a reader who does not know the outbox.
    pub text: String,
}

impl Facts<'_> {
    pub fn summary(&self) -> Summary {
        use SubmissionState as S;
        let err = self.error.unwrap_or("no reason given");
        let (outcome, short, text) = match self.state {
            S::Filed if self.answer == Some(AnswerKind::Found) => (
                if self.counted == Some(false) {
                    Outcome::FiledNotCounted
                } else {
                    Outcome::FiledCounted
                },
                "found at the intake (answer lost)".to_string(),
                "filed: an answer was lost, and the intake, asked (GET <intake>/<sha256>), holds these exact bytes; not sent again".to_string(),
            ),
            S::Filed if self.answer == Some(AnswerKind::Duplicate) => (
                Outcome::Duplicate,
                "duplicate".to_string(),
                "filed: the intake already had these exact bytes".to_string(),
            ),
            S::Filed if self.counted == Some(false) => (
                Outcome::FiledNotCounted,
                // The intake's reason may end with the same words: say them once.
                match self
                    .count_reason
                    .map(|r| {
                        r.replace("stored, not counted", "")
                            .trim_matches(|c: char| c == ';' || c == ',' || c.is_whitespace())
                            .to_string()
                    })
                    .filter(|r| !r.is_empty())
                {
                    Some(r) => format!("stored, not counted ({r})"),
                    None => "stored, not counted".to_string(),
                },
                format!(
                    "filed: stored by the intake, not counted ({})",
                    self.count_reason.unwrap_or("no reason given")
                ),
            ),
            S::Filed => (
                Outcome::FiledCounted,
                "counted".to_string(),
                "filed and counted".to_string(),
            ),
            S::Refused => (
                Outcome::Refused,
                format!("refused: {}", self.reason_code.unwrap_or("no reason_code")),
                format!(
                    "refused by the intake{}: {err} (not retried)",
                    self.reason_code
                        .map(|c| format!(" with reason_code {c}"))
                        .unwrap_or_default(),
                ),
            ),
            S::KeptLocal => (
                Outcome::KeptLocal,
                "kept local (one counted record per day)".to_string(),
                self.error.unwrap_or("kept local, not filed").to_string(),
            ),
            S::HostOffline => (
                Outcome::HostOffline,
                "host offline: not filed".to_string(),
                self.error.unwrap_or("host offline: not filed").to_string(),
            ),
            S::Sending => {
                let why = match self.answer {
                    Some(AnswerKind::Unknown | AnswerKind::LookupFailed) => {
                        self.error.unwrap_or("no complete answer")
                    }
                    // Marked sending, nothing recorded since: in flight now, or the process
                    // stopped before the answer was committed.
                    _ => "sent, no answer recorded (in flight, or the process stopped)",
                };
                (
                    Outcome::AwaitingLookup,
                    format!("waiting for a lookup ({why})"),
                    format!(
                        "not known whether the intake stored it ({why}): before anything is sent again the intake is asked (GET <intake>/<sha256>) whether it holds these exact bytes, at {}, by `conduct-walker outbox drain` or the daemon; only a 404 leads to a resend",
                        self.next_attempt_at.unwrap_or("the next drain")
                    ),
                )
            }
            S::Queued => match self.answer {
                Some(AnswerKind::LaneFull) => (
                    Outcome::LaneFull,
                    "lane full (waits for the next UTC day)".to_string(),
                    format!(
                        "lane full today: queued, to be filed from {} (the next UTC day)",
                        self.next_attempt_at.unwrap_or("the next UTC day")
                    ),
                ),
                Some(_) => (
                    Outcome::QueuedForRetry,
                    format!("queued ({err})"),
                    format!(
                        "the intake did not take it now ({}): the record is kept and queued for retry at {}",
                        self.error.unwrap_or("no answer"),
                        self.next_attempt_at.unwrap_or("a later time")
                    ),
                ),
                None => (
                    Outcome::NotSent,
                    match self.error {
                        Some(e) => format!("queued ({e})"),
                        None => "queued".to_string(),
                    },
                    "queued, not sent yet: the record is kept and will be filed by `conduct-walker outbox drain` or the daemon".to_string(),
                ),
            },
        };
        Summary {
            outcome,
            short,
            text,
        }
    }
}

/// What to do with an outbox row now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Settled, or waiting for its retry time: leave it.
    NotDue,
    /// Its request may have left and no answer says what the intake did (a stopped process,
    /// a lost answer, a failed lookup): ask the intake (`GET <intake>/<sha256>`) before
    /// sending again.
    LookUp,
    /// Our own count says the lane (or the intake's day) is full: do not send; wait until then.
    Defer(DateTime<Utc>),
    /// Mark it `sending` (committed), then POST.
    Send,
}

/// The facts of an outbox row the next step depends on.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    pub state: SubmissionState,
    /// RFC 3339 seconds, as stored.
    pub next_attempt_at: Option<&'a str>,
    pub lane: &'a Lane,
    /// The intake was already asked whether it holds the record (after an interrupted
    /// attempt or an unknown outcome) and said no (404).
    pub looked_up: bool,
}

/// Whether a row is due now: `queued` or `sending` past its retry time (a row marked
/// `sending` has none: a process stopped mid-request is looked up at once; one whose answer
/// was lost waits its backoff). A retry time that does not read as a time is due (a damaged
/// row is not parked forever).
pub fn is_due(row: &Row, now: DateTime<Utc>) -> bool {
    match row.state {
        SubmissionState::Sending | SubmissionState::Queued => row.next_attempt_at.is_none_or(|t| {
            DateTime::parse_from_rfc3339(t).map_or(true, |t| t.with_timezone(&Utc) <= now)
        }),
        _ => false,
    }
}

/// The next step of a row, given the intake's limits and this walker's accepted records at
/// that intake today (`usage`, counted on `now`'s UTC day).
pub fn next_step(row: &Row, now: DateTime<Utc>, limits: &Limits, usage: Usage) -> Step {
    if !is_due(row, now) {
        return Step::NotDue;
    }
    if row.state == SubmissionState::Sending && !row.looked_up {
        return Step::LookUp;
    }
    if !lanes::has_room(limits, row.lane, usage) {
        // The client never sends what a lane cannot take: wait for the next UTC day.
        return Step::Defer(lanes::next_utc_midnight(now));
    }
    Step::Send
}

/// What an attempt did to a row: its new state and what is logged with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub state: SubmissionState,
    pub answer: AnswerKind,
    pub error: Option<String>,
    pub reason_code: Option<String>,
    pub counted: Option<bool>,
    pub count_reason: Option<String>,
    /// The UTC day the intake took it, for the lane counts.
    pub filed_day: Option<String>,
    /// Set exactly when `state` is `queued`.
    pub retry_at: Option<DateTime<Utc>>,
}

impl Transition {
    fn new(state: SubmissionState, answer: AnswerKind) -> Transition {
        Transition {
            state,
            answer,
            error: None,
            reason_code: None,
            counted: None,
            count_reason: None,
            filed_day: None,
            retry_at: None,
        }
    }

    /// [`Step::Defer`]: not sent, our own count says the lane is full until `until`.
    pub fn deferred(until: DateTime<Utc>) -> Transition {
        Transition {
            error: Some("lane full today (counted locally)".into()),
            retry_at: Some(until),
            ..Transition::new(SubmissionState::Queued, AnswerKind::LaneFull)
        }
    }
}

/// What a lookup (`GET <intake>/<sha256>`) makes of a row waiting for one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterLookup {
    /// The intake holds these exact bytes: filed, without a second POST.
    Filed(Transition),
    /// The intake said 404: go on to the lane check, then send.
    Send,
    /// Still unknown: the row stays `sending`, asked again at the transition's retry time.
    AskAgain(Transition),
}

/// The next step after a lookup. `tries` counts this row's attempts and lookups so far (the
/// backoff grows with both); `jitter` in [0, 1).
pub fn after_lookup(lookup: &Lookup, tries: u32, now: DateTime<Utc>, jitter: f64) -> AfterLookup {
    match lookup {
        Lookup::Found {
            counted,
            count_reason,
            submitted_day,
            ..
        } => AfterLookup::Filed(Transition {
            counted: *counted,
            count_reason: count_reason.clone(),
            // The day the intake stored it is the day its lane counted it.
            filed_day: Some(submitted_day.clone().unwrap_or_else(|| lanes::utc_day(now))),
            ..Transition::new(SubmissionState::Filed, AnswerKind::Found)
        }),
        Lookup::NotFound => AfterLookup::Send,
        Lookup::Failed {
            error, retry_after, ..
        } => AfterLookup::AskAgain(Transition {
            error: Some(error.clone()),
            retry_at: Some(retry_time(tries, *retry_after, now, jitter)),
            ..Transition::new(SubmissionState::Sending, AnswerKind::LookupFailed)
        }),
    }
}

/// How long to wait after a `Retry-After`, relative to `now`: clamped to [`MAX_RETRY_AFTER`];
/// a date in the past means now.
pub fn retry_after_delay(ra: answer::RetryAfter, now: DateTime<Utc>) -> std::time::Duration {
    use answer::RetryAfter;
    let secs = match ra {
        RetryAfter::Seconds(s) => s,
        RetryAfter::Date(when) => when.timestamp().saturating_sub(now.timestamp()).max(0) as u64,
    };
    std::time::Duration::from_secs(secs).min(MAX_RETRY_AFTER)
}

/// What an intake's answer to the `attempts`-th POST makes of the row (§6.2): filed, refused,
/// queued with its retry time (the next UTC midnight for a full lane; exponential backoff
/// with `jitter` in [0, 1), never sooner than `Retry-After`, for anything else), or, when the
/// outcome is unknown, left `sending` to be looked up after the same backoff.
pub fn classify(answer: &Answer, attempts: u32, now: DateTime<Utc>, jitter: f64) -> Transition {
    use SubmissionState as S;
    let mut t = Transition::new(S::Queued, answer.kind());
    match answer {
        Answer::Accepted {
            counted,
            count_reason,
            ..
        } => {
            t.state = S::Filed;
            t.counted = Some(*counted);
            t.count_reason = count_reason.clone();
            t.filed_day = Some(lanes::utc_day(now));
        }
        Answer::Duplicate { .. } => {
            t.state = S::Filed;
            t.filed_day = Some(lanes::utc_day(now));
        }
        Answer::Refused {
            error, reason_code, ..
        } => {
            t.state = S::Refused;
            t.error = Some(error.clone());
            t.reason_code = reason_code.clone();
        }
        Answer::LaneFull { error, .. } => {
            t.error = Some(error.clone());
            t.retry_at = Some(lanes::next_utc_midnight(now));
        }
        Answer::Retry {
            error, retry_after, ..
        } => {
            t.error = Some(error.clone());
            t.retry_at = Some(retry_time(attempts, *retry_after, now, jitter));
        }
        Answer::Unknown {
            error, retry_after, ..
        } => {
            // Left `sending`: its next step is the lookup a kill would leave, after a backoff
            // (an intake that just failed is not asked again at once, and a store's read may
            // lag its write).
            t.state = S::Sending;
            t.error = Some(format!("no complete answer: {error}"));
            t.retry_at = Some(retry_time(attempts, *retry_after, now, jitter));
        }
    }
    t
}

/// When the `tries`-th failed exchange is followed up: exponential backoff with `jitter` in
/// [0, 1), never sooner than `Retry-After`.
fn retry_time(
    tries: u32,
    retry_after: Option<answer::RetryAfter>,
    now: DateTime<Utc>,
    jitter: f64,
) -> DateTime<Utc> {
    let wait = retry_after.map(|ra| retry_after_delay(ra, now));
    let delay = lanes::backoff(tries, wait, jitter);
    // Checked: whatever an intake says (or the clock reads), a date overflow must not take the
    // walk down; past the end of time the row waits there.
    chrono::Duration::from_std(delay)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

#[cfg(test)]
mod tests;
