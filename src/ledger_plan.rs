//! The ledger follower's plan and held state, pure (pure core: no crate imports; the store
//! keeps this state and the `ledger` capability acts on it, so it lives below both). Re-exported
//! as `ledger::follow`; [`HeldHead`] also as `ledger::check::HeldHead`.
//!
//! The follower's poll planner (ledger.md §7 step 1; issue 23): when to read `/witness/<sha>`
//! for one of our filed records, and when silence or an answer is a finding. Pure: no I/O, no
//! clock (`now` is passed in), no randomness (the spread is derived from the sha, so two runs
//! plan the same reads and tests are data).
//!
//! How it stays cheap and polite:
//! - A record is read once shortly after filing (`first_poll`: the intake holds it), then not
//!   again until a batch can have taken it: the next scheduled run (00:30 UTC) plus a spread
//!   per record, or earlier when the follower sees it listed in a new batch entry (the
//!   follower reads each new entry once, and that read covers every record of the batch:
//!   the follower moves its next read to now). Operator batches show up as a new head, not as a poll per record.
//! - Re-reads back off (`backoff_base · 2^polls`, at most `backoff_max`), never sooner than
//!   the next run while nothing moved.
//! - [`Bucket`]: reads per intake never exceed `rate_per_minute` on average (a burst of at
//!   most one minute's worth).
//! - A 404 after the intake's 201 is tolerated for `not_found_grace` (eventual consistency,
//!   §2.5), then it is a finding; a record not anchored after `overdue_after` is a finding.
//!   Findings are kept; the record is still followed (a late anchoring is still checked), but
//!   nothing is retried away.

use chrono::{DateTime, Duration, NaiveTime, TimeDelta, Utc};

/// head_0 of `jidec-chain-v1`: the root, 64 `0` characters (ledger.md §6.1).
pub const ROOT: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// A head we hold: (n, head_n), from an earlier check or a stamped batch / checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HeldHead {
    pub n: u64,
    pub head: String,
}

impl HeldHead {
    /// The empty ledger's head.
    pub fn root() -> Self {
        HeldHead {
            n: 0,
            head: ROOT.into(),
        }
    }
}

/// The scheduled batch run, 00:30 UTC every day (ledger.md §3, §4.1).
pub const SCHEDULED_RUN: NaiveTime = match NaiveTime::from_hms_opt(0, 30, 0) {
    Some(t) => t,
    None => panic!("00:30 is a time"),
};

/// What the follower may do, per intake (config `[[ledger]]` or the defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The first read after filing (the intake holds it; a 404 starts the grace).
    pub first_poll: Duration,
    /// How long a 404 after the intake's 201 is tolerated (eventual consistency).
    pub not_found_grace: Duration,
    /// Re-read backoff: `backoff_base · 2^polls`, capped at `backoff_max`.
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// Reads after a scheduled run are spread over this window after 00:30 (per record).
    pub run_spread: Duration,
    /// Not anchored this long after filing: a finding.
    pub overdue_after: Duration,
    /// Reads per minute per intake, on average.
    pub rate_per_minute: u32,
    /// `/ledger/head` is read at most this often (and once just after each scheduled run).
    pub head_every: Duration,
    /// New export rows kept in one pass at most: a hostile export cannot grow memory without
    /// bound; past this the pass stops with an `export_too_long` finding and holds nothing.
    pub max_new_rows: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            first_poll: Duration::minutes(2),
            not_found_grace: Duration::minutes(15),
            backoff_base: Duration::minutes(1),
            backoff_max: Duration::hours(6),
            run_spread: Duration::minutes(20),
            // Two scheduled runs: a record can wait one run behind 200 lower shas (§4.2).
            overdue_after: Duration::hours(50),
            rate_per_minute: 30,
            head_every: Duration::minutes(15),
            max_new_rows: 1_000_000,
        }
    }
}

/// A fraction in [0, 1) derived from a sha (hex), so each record has its own stable offset.
pub fn spread_fraction(sha: &str) -> f64 {
    let head = sha.get(..8).unwrap_or("0");
    u32::from_str_radix(head, 16).unwrap_or(0) as f64 / (u32::MAX as f64 + 1.0)
}

fn scaled(d: Duration, f: f64) -> Duration {
    Duration::milliseconds((d.num_milliseconds() as f64 * f) as i64)
}

/// The first scheduled run strictly after `now`.
pub fn next_scheduled_run(now: DateTime<Utc>) -> DateTime<Utc> {
    let today = now.date_naive().and_time(SCHEDULED_RUN).and_utc();
    if today > now {
        today
    } else {
        today + Duration::days(1)
    }
}

/// When this record is read after the next scheduled run: the run plus its own spread (at
/// least a minute after the run, so the batch is written).
pub fn after_next_run(sha: &str, now: DateTime<Utc>, p: &Policy) -> DateTime<Utc> {
    next_scheduled_run(now) + Duration::minutes(1) + scaled(p.run_spread, spread_fraction(sha))
}

/// `backoff_base · 2^polls`, capped, plus up to 20 % of it from the sha.
pub fn backoff(sha: &str, polls: u32, p: &Policy) -> Duration {
    let base = p.backoff_base.num_milliseconds().max(1);
    let raw = base.saturating_mul(1i64 << polls.min(30));
    let capped = Duration::milliseconds(raw.min(p.backoff_max.num_milliseconds()));
    capped + scaled(capped, 0.2 * spread_fraction(sha))
}

/// The first read of a record filed at `filed_at`.
pub fn first_poll_at(sha: &str, filed_at: DateTime<Utc>, p: &Policy) -> DateTime<Utc> {
    filed_at + p.first_poll + scaled(Duration::minutes(1), spread_fraction(sha))
}

/// Whether `/ledger/head` is due: never read, `head_every` since the last read, or a scheduled
/// run has passed since (operator batches are seen within `head_every`).
pub fn head_due(last: Option<DateTime<Utc>>, now: DateTime<Utc>, p: &Policy) -> bool {
    let Some(last) = last else { return true };
    now >= last + p.head_every || now >= next_scheduled_run(last) + Duration::minutes(1)
}

/// Where a followed record stands (the store's `ledger_follow.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowState {
    /// Filed, not yet seen anchored.
    Pending,
    /// Anchored and inclusion verified.
    Anchored,
    /// Something is wrong (the findings say what); still followed where that helps.
    Finding,
}

impl FollowState {
    pub fn as_str(self) -> &'static str {
        match self {
            FollowState::Pending => "pending",
            FollowState::Anchored => "anchored",
            FollowState::Finding => "finding",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => FollowState::Pending,
            "anchored" => FollowState::Anchored,
            "finding" => FollowState::Finding,
            _ => return None,
        })
    }
}

/// What the last `/witness/<sha>` read said, as far as planning goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answered {
    NotFound,
    Pending,
    /// Anchored: inclusion checked (`verified` = no findings).
    Anchored {
        verified: bool,
    },
    /// No usable answer (transport error, garbage, another status): read again later; the
    /// answer is not a finding about the record (the ledger may just be down).
    Unreadable,
}

/// One followed record, as the planner needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Followed<'a> {
    pub sha: &'a str,
    pub filed_at: DateTime<Utc>,
    /// Reads of `/witness/<sha>` so far (before this one).
    pub polls: u32,
    /// The intake ever answered pending or anchored for it.
    pub seen: bool,
    /// An overdue finding is already open.
    pub overdue_found: bool,
}

/// A finding the planner makes (the inclusion and chain findings come from `check`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FollowFinding {
    /// 404 after the intake accepted it, past the grace period.
    NotFoundAfterAccept { since_filed_secs: i64 },
    /// Not anchored `overdue_after` after filing.
    Overdue { since_filed_secs: i64 },
}

impl FollowFinding {
    pub fn kind(&self) -> &'static str {
        match self {
            FollowFinding::NotFoundAfterAccept { .. } => "not_found_after_accept",
            FollowFinding::Overdue { .. } => "overdue",
        }
    }
}

/// What to do after a read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub state: FollowState,
    /// The next read; `None` = done following (anchored, inclusion settled).
    pub next_poll_at: Option<DateTime<Utc>>,
    pub findings: Vec<FollowFinding>,
}

/// What follows an answer read at `now`.
pub fn after_answer(r: &Followed<'_>, answer: Answered, now: DateTime<Utc>, p: &Policy) -> Plan {
    let age = now - r.filed_at;
    let mut findings = Vec::new();
    let mut state = FollowState::Pending;
    let next = match answer {
        Answered::Anchored { verified } => {
            return Plan {
                state: if verified {
                    FollowState::Anchored
                } else {
                    FollowState::Finding
                },
                next_poll_at: None,
                findings,
            };
        }
        Answered::NotFound if !r.seen => {
            if age >= p.not_found_grace {
                findings.push(FollowFinding::NotFoundAfterAccept {
                    since_filed_secs: age.num_seconds(),
                });
                state = FollowState::Finding;
                // Still read now and then: the finding stays, a late appearance is recorded.
                now + backoff(r.sha, r.polls, p).max(after_next_run(r.sha, now, p) - now)
            } else {
                // Within the grace: read again soon, but not past the grace's end.
                (now + backoff(r.sha, r.polls, p)).min(r.filed_at + p.not_found_grace)
            }
        }
        // A 404 once it was seen is the transition check's business (check::transition).
        Answered::NotFound => {
            state = FollowState::Finding;
            after_next_run(r.sha, now, p)
        }
        Answered::Pending => {
            // Nothing can change before a batch: the next run (or a listing, earlier).
            (now + backoff(r.sha, r.polls, p)).max(after_next_run(r.sha, now, p))
        }
        Answered::Unreadable => now + backoff(r.sha, r.polls, p),
    };
    if !matches!(answer, Answered::Anchored { .. }) {
        if let Some(f) = overdue(r, now, p) {
            findings.push(f);
        }
        if r.overdue_found || findings.iter().any(|f| f.kind() == "overdue") {
            state = FollowState::Finding;
        }
    }
    Plan {
        state,
        next_poll_at: Some(next),
        findings,
    }
}

/// An overdue finding for a record not anchored by `filed_at + overdue_after` (once).
pub fn overdue(r: &Followed<'_>, now: DateTime<Utc>, p: &Policy) -> Option<FollowFinding> {
    let age = now - r.filed_at;
    (!r.overdue_found && age >= p.overdue_after).then(|| FollowFinding::Overdue {
        since_filed_secs: age.num_seconds(),
    })
}

/// A token bucket per intake: `rate_per_minute` tokens a minute, at most one minute's worth
/// held. Its state is data (the store keeps it, so one-shot runs share it with the daemon).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    pub tokens: f64,
    pub at: DateTime<Utc>,
}

impl Bucket {
    /// A full bucket at `now`.
    pub fn full(now: DateTime<Utc>, p: &Policy) -> Self {
        Bucket {
            tokens: p.rate_per_minute as f64,
            at: now,
        }
    }

    /// Refills up to `now` (a clock that went back refills nothing).
    pub fn refill(&mut self, now: DateTime<Utc>, p: &Policy) {
        let elapsed = (now - self.at).max(TimeDelta::zero());
        let rate = p.rate_per_minute as f64;
        self.tokens = (self.tokens + rate * elapsed.num_milliseconds() as f64 / 60_000.0).min(rate);
        self.at = now.max(self.at);
    }

    /// Takes one read if there is one.
    pub fn take(&mut self) -> bool {
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    const SHA_LOW: &str = "0000000011111111111111111111111111111111111111111111111111111111";
    const SHA_HIGH: &str = "ffffffff11111111111111111111111111111111111111111111111111111111";
    const SHA_MID: &str = "8000000011111111111111111111111111111111111111111111111111111111";

    fn rec<'a>(sha: &'a str, filed: &str, polls: u32, seen: bool) -> Followed<'a> {
        Followed {
            sha,
            filed_at: t(filed),
            polls,
            seen,
            overdue_found: false,
        }
    }

    /// The plan after `answer` at `at`, for a record filed at 13:00 and read `polls` times, under
    /// the default policy.
    fn answered(polls: u32, seen: bool, answer: Answered, at: &str) -> Plan {
        let r = rec(SHA_LOW, "2026-12-01T13:00:00Z", polls, seen);
        after_answer(&r, answer, t(at), &Policy::default())
    }

    fn assert_pending_until(plan: &Plan, next: &str) {
        assert_eq!(plan.state, FollowState::Pending);
        assert!(plan.findings.is_empty());
        assert_eq!(plan.next_poll_at, Some(t(next)));
    }

    #[test]
    fn the_next_scheduled_run_is_the_next_0030_utc() {
        for (now, want) in [
            ("2026-12-01T00:00:00Z", "2026-12-01T00:30:00Z"),
            ("2026-12-01T00:30:00Z", "2026-12-02T00:30:00Z"),
            ("2026-12-01T13:00:00Z", "2026-12-02T00:30:00Z"),
            ("2026-12-31T23:59:59Z", "2027-01-01T00:30:00Z"),
        ] {
            assert_eq!(next_scheduled_run(t(now)), t(want), "{now}");
        }
    }

    #[test]
    fn reads_after_a_run_are_spread_over_the_window_by_sha() {
        let p = Policy::default();
        let now = t("2026-12-01T13:00:00Z");
        assert_eq!(after_next_run(SHA_LOW, now, &p), t("2026-12-02T00:31:00Z"));
        assert_eq!(after_next_run(SHA_MID, now, &p), t("2026-12-02T00:41:00Z"));
        let high = after_next_run(SHA_HIGH, now, &p);
        assert!(high > t("2026-12-02T00:50:59Z") && high < t("2026-12-02T00:51:00Z"));
    }

    #[test]
    fn the_first_read_comes_minutes_after_filing() {
        let p = Policy::default();
        let at = first_poll_at(SHA_MID, t("2026-12-01T13:00:00Z"), &p);
        assert_eq!(at, t("2026-12-01T13:02:30Z"));
    }

    #[test]
    fn backoff_doubles_caps_and_spreads() {
        let p = Policy::default();
        assert_eq!(backoff(SHA_LOW, 0, &p), Duration::minutes(1));
        assert_eq!(backoff(SHA_LOW, 3, &p), Duration::minutes(8));
        assert_eq!(backoff(SHA_LOW, 40, &p), Duration::hours(6));
        // The spread adds up to 20 %.
        assert_eq!(backoff(SHA_MID, 0, &p), Duration::seconds(66));
    }

    #[test]
    fn pending_waits_for_the_next_run_not_for_the_backoff() {
        let plan = answered(1, true, Answered::Pending, "2026-12-01T13:02:00Z");
        assert_pending_until(&plan, "2026-12-02T00:31:00Z");
        // A long backoff past the run wins over the run.
        let plan = answered(20, true, Answered::Pending, "2026-12-02T00:20:00Z");
        assert_eq!(plan.next_poll_at, Some(t("2026-12-02T06:20:00Z")));
    }

    #[test]
    fn a_404_within_the_grace_is_read_again_before_the_grace_ends() {
        let plan = answered(4, false, Answered::NotFound, "2026-12-01T13:10:00Z");
        assert_pending_until(&plan, "2026-12-01T13:15:00Z");
    }

    #[test]
    fn a_404_past_the_grace_is_a_finding_and_still_followed() {
        let plan = answered(5, false, Answered::NotFound, "2026-12-01T13:15:00Z");
        assert_eq!(plan.state, FollowState::Finding);
        assert_eq!(
            plan.findings,
            vec![FollowFinding::NotFoundAfterAccept {
                since_filed_secs: 900
            }]
        );
        assert!(plan.next_poll_at.unwrap() >= t("2026-12-02T00:31:00Z"));
    }

    #[test]
    fn not_anchored_after_overdue_after_is_a_finding_once() {
        let p = Policy {
            overdue_after: Duration::hours(30),
            ..Policy::default()
        };
        let mut r = rec(SHA_LOW, "2026-12-01T13:00:00Z", 3, true);
        let early = after_answer(&r, Answered::Pending, t("2026-12-02T18:59:59Z"), &p);
        assert!(early.findings.is_empty());
        let late = after_answer(&r, Answered::Pending, t("2026-12-02T19:00:00Z"), &p);
        assert_eq!(
            late.findings,
            vec![FollowFinding::Overdue {
                since_filed_secs: 30 * 3600
            }]
        );
        assert_eq!(late.state, FollowState::Finding);
        assert!(
            late.next_poll_at.is_some(),
            "an overdue record is still followed"
        );
        r.overdue_found = true;
        let again = after_answer(&r, Answered::Pending, t("2026-12-03T19:00:00Z"), &p);
        assert!(again.findings.is_empty(), "an open finding is not repeated");
        assert_eq!(again.state, FollowState::Finding);
    }

    #[test]
    fn anchored_ends_the_following() {
        let p = Policy::default();
        let r = rec(SHA_LOW, "2026-12-01T13:00:00Z", 2, true);
        let now = t("2026-12-02T00:31:00Z");
        let ok = after_answer(&r, Answered::Anchored { verified: true }, now, &p);
        assert_eq!((ok.state, ok.next_poll_at), (FollowState::Anchored, None));
        let bad = after_answer(&r, Answered::Anchored { verified: false }, now, &p);
        assert_eq!((bad.state, bad.next_poll_at), (FollowState::Finding, None));
    }

    #[test]
    fn an_unreadable_answer_backs_off_and_is_no_finding() {
        let plan = answered(2, true, Answered::Unreadable, "2026-12-01T14:00:00Z");
        assert_pending_until(&plan, "2026-12-01T14:04:00Z");
    }

    #[test]
    fn the_head_is_read_every_so_often_and_after_each_run() {
        let p = Policy::default();
        assert!(head_due(None, t("2026-12-01T13:00:00Z"), &p));
        let last = Some(t("2026-12-01T13:00:00Z"));
        assert!(!head_due(last, t("2026-12-01T13:14:59Z"), &p));
        assert!(head_due(last, t("2026-12-01T13:15:00Z"), &p));
        let last = Some(t("2026-12-02T00:25:00Z"));
        assert!(!head_due(last, t("2026-12-02T00:30:59Z"), &p));
        assert!(head_due(last, t("2026-12-02T00:31:00Z"), &p));
    }

    #[test]
    fn the_bucket_never_gives_more_than_the_rate() {
        let p = Policy {
            rate_per_minute: 10,
            ..Policy::default()
        };
        let start = Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap();
        let mut b = Bucket::full(start, &p);
        let mut taken = 0;
        // Ten minutes of asking every second: at most 10 + 10 per minute.
        for s in 0..600 {
            b.refill(start + Duration::seconds(s), &p);
            while b.take() {
                taken += 1;
            }
        }
        assert!((100..=110).contains(&taken), "{taken}");
        // A clock that goes back refills nothing.
        let mut b = Bucket {
            tokens: 0.0,
            at: start,
        };
        b.refill(start - Duration::hours(1), &p);
        assert!(!b.take());
    }
}
