//! Issue 34: the filing state machine (`filing`, with the intake client's pure
//! classifiers) against a model intake that loses answers, a process that is killed at any
//! point of an attempt, lookups that fail or lie, and caps checked before the dedupe (§6.2).
//! One row is carried out the way `Pipeline::attempt` carries it out, through the same pure
//! functions: `next_step`, `classify_reached`/`classify`, `classify_lookup`/`after_lookup`.
//!
//! After every step: the intake never receives a POST of a record it already holds, a row is
//! `filed` only if the intake holds the record (on the day the row counts it), and `refused`
//! only if the intake refused it. Once the faults stop, the row settles: filed, or refused if
//! the intake refuses the record.
//!
//! 10,000 cases by default; `FILING_MODEL_CASES=1000000` runs a million (BENCHMARKS.md).

use chrono::{DateTime, Duration, Utc};
use conduct_walker::clock::walked_at;
use conduct_walker::filing::lanes::{self, Lane, Limits, Usage};
use conduct_walker::filing::{
    AfterLookup, AnswerKind, Row, Step, SubmissionState, Transition, after_lookup, classify,
    next_step,
};
use conduct_walker::net::{Exchange, HttpRequest, Reached};
use conduct_walker::witness::intake::{classify_lookup, classify_reached};
use proptest::prelude::*;
use serde_json::json;

const CANONICAL: &str = r#"{"base":"https://a.example","purpose":"a2a-conduct-walk-v1: https://a.example","schema":"jidec-path-v1","walked_at":"2026-11-30T23:50:00Z","witness":{"name":"model","vantage":"here"}}"#;

fn sha() -> String {
    conduct_walker::digest::sha256_hex(CANONICAL.as_bytes())
}

fn cases() -> u32 {
    std::env::var("FILING_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// What happens to one POST.
#[derive(Debug, Clone, Copy)]
enum PostFault {
    /// Answered as the intake decided.
    None,
    /// Killed after the row was marked `sending`, before the request left.
    KillBeforeSend,
    /// No connection (refused): the transport knows nothing was written.
    NoConnection,
    /// The connection dropped before the intake read the request.
    LostBeforeIntake,
    /// 503 from the intake before storing (key_url_unreachable).
    Busy,
    /// The intake handled it; the answer was lost (reset, timeout).
    LostAfterIntake,
    /// The intake handled it; a 2xx answer's body came back unreadable.
    Garbled,
    /// The intake handled it, then failed with a 500.
    FailedAfterIntake,
    /// The intake handled it; the process was killed before it recorded the answer.
    KillAfterIntake,
}

/// What happens to one lookup.
#[derive(Debug, Clone, Copy)]
enum GetFault {
    None,
    /// Killed while asking: the row is left as it was.
    Kill,
    /// No answer (reset, timeout, refused).
    NoAnswer,
    Busy,
    /// 200 for this sha256 with other bytes (a lying or broken intake).
    OtherBytes,
    /// 200 naming another record.
    OtherRecord,
    /// More than the lookup cap.
    Oversized,
}

fn post_fault() -> impl Strategy<Value = PostFault> {
    use PostFault::*;
    prop_oneof![
        4 => Just(None),
        1 => Just(KillBeforeSend),
        1 => Just(NoConnection),
        1 => Just(LostBeforeIntake),
        1 => Just(Busy),
        2 => Just(LostAfterIntake),
        1 => Just(Garbled),
        1 => Just(FailedAfterIntake),
        2 => Just(KillAfterIntake),
    ]
}

fn get_fault() -> impl Strategy<Value = GetFault> {
    use GetFault::*;
    prop_oneof![
        4 => Just(None),
        1 => Just(Kill),
        2 => Just(NoAnswer),
        1 => Just(Busy),
        1 => Just(OtherBytes),
        1 => Just(OtherRecord),
        1 => Just(Oversized),
    ]
}

/// One scripted step: how long the clock moves first, and the faults of its exchanges.
#[derive(Debug, Clone, Copy)]
struct Scripted {
    /// Seconds past the row's retry time (or past now when it has none).
    after: u32,
    post: PostFault,
    get: GetFault,
    jitter: f64,
}

fn scripted() -> impl Strategy<Value = Scripted> {
    (
        prop_oneof![3 => 0u32..120, 1 => 0u32..86_400],
        post_fault(),
        get_fault(),
        0.0f64..1.0,
    )
        .prop_map(|(after, post, get, jitter)| Scripted {
            after,
            post,
            get,
            jitter,
        })
}

/// The intake (§6.2 in the order that matters here: validation, the caps, then the dedupe).
#[derive(Debug)]
struct Intake {
    refuses: bool,
    lane_cap: u32,
    global_cap: u32,
    /// (day, lane count, global count) of records stored by others before the row, on day 0.
    day0: String,
    lane_used0: u32,
    global_used0: u32,
    /// The day it stored our record.
    held: Option<String>,
    posts: u32,
    posts_while_held: u32,
}

impl Intake {
    fn used(&self, day: &str) -> (u32, u32) {
        let ours = u32::from(self.held.as_deref() == Some(day));
        if day == self.day0 {
            (self.lane_used0 + ours, self.global_used0 + ours)
        } else {
            (ours, ours)
        }
    }

    /// A POST read by the intake: its status and JSON body.
    fn post(&mut self, now: DateTime<Utc>) -> (u16, serde_json::Value) {
        self.posts += 1;
        if self.held.is_some() {
            self.posts_while_held += 1;
        }
        if self.refuses {
            return (
                422,
                json!({"error": "invalid_witness_record", "reason_code": "schema"}),
            );
        }
        let day = lanes::utc_day(now);
        let (lane, global) = self.used(&day);
        if global >= self.global_cap {
            return (
                429,
                json!({"error": "daily_global_cap_reached", "cap": self.global_cap}),
            );
        }
        if lane >= self.lane_cap {
            return (
                429,
                json!({"error": "daily_per_ip_cap_reached", "cap": self.lane_cap}),
            );
        }
        if self.held.is_some() {
            return (
                200,
                json!({"sha": sha(), "status": "pending", "dedup": true}),
            );
        }
        self.held = Some(day);
        (
            201,
            json!({"sha": sha(), "status": "pending", "counted": true}),
        )
    }

    /// `GET /witness/<sha>`.
    fn get(&self) -> (u16, serde_json::Value) {
        match &self.held {
            Some(day) => (200, pending(&sha(), CANONICAL, day)),
            None => (404, json!({"error": "not found", "sha": sha()})),
        }
    }
}

fn pending(sha: &str, bytes: &str, day: &str) -> serde_json::Value {
    json!({"status": "pending", "sha": sha, "record_canonical": bytes, "signed": false,
        "public_key_ed25519_b64": null, "signed_domain": null, "key_url": null, "mode": "full",
        "v11": true, "disclaimer_present": true, "endpoint": "https://a.example",
        "counted": true, "count_reason": null, "purpose": "a2a-conduct-walk-v1: https://a.example",
        "witness_name": "model", "vantage": "here", "submitted_at": format!("{day}T00:00:01.000Z"),
        "responses": []})
}

fn exchange(status: u16, body: Vec<u8>) -> Exchange {
    Exchange {
        request: HttpRequest::get("https://intake.example/witness", &[]),
        status,
        response_headers: vec![("content-type".into(), "application/json".into())],
        body,
        duration_ms: 1,
        transport_error: None,
        cut_answer: None,
    }
}

fn json_exchange(status: u16, body: &serde_json::Value) -> Exchange {
    exchange(status, serde_json::to_vec(body).unwrap())
}

fn failure(why: &str) -> Exchange {
    Exchange::failure(
        HttpRequest::get("https://intake.example/witness", &[]),
        why,
        1,
    )
}

/// The outbox row as the store keeps it.
#[derive(Debug, Clone)]
struct StoredRow {
    state: SubmissionState,
    next_attempt_at: Option<String>,
    attempts: u32,
    lookups: u32,
    last_answer: Option<AnswerKind>,
    filed_day: Option<String>,
}

impl StoredRow {
    /// `outbox::record_attempt`: an acceptance is final; otherwise the transition's values.
    fn apply(&mut self, t: &Transition) {
        if self.last_answer == Some(AnswerKind::Accepted) {
            self.state = SubmissionState::Filed;
            self.next_attempt_at = None;
            return;
        }
        self.state = t.state;
        self.last_answer = Some(t.answer);
        if t.filed_day.is_some() {
            self.filed_day = t.filed_day.clone();
        }
        self.next_attempt_at = t.retry_at.map(walked_at);
    }

    /// Our own count of the lane on `day` (`outbox::accepted_on`): the records this store had
    /// filed before the row, plus the row once accepted or found.
    fn usage(&self, intake: &Intake, day: &str) -> Usage {
        let before = if day == intake.day0 {
            intake.lane_used0
        } else {
            0
        };
        let ours = u32::from(
            self.last_answer.is_some_and(AnswerKind::uses_the_lane)
                && self.filed_day.as_deref() == Some(day),
        );
        Usage {
            global: before + ours,
            lane: before + ours,
        }
    }
}

/// One `Pipeline::attempt`, with the step's faults.
fn attempt(row: &mut StoredRow, intake: &mut Intake, now: DateTime<Utc>, s: Scripted) {
    let lane = Lane::Address;
    let limits = Limits {
        daily_per_ip: intake.lane_cap,
        daily_global: intake.global_cap,
        ..Limits::default()
    };
    let usage = row.usage(intake, &lanes::utc_day(now));
    let mut looked_up = false;
    loop {
        let view = Row {
            state: row.state,
            next_attempt_at: row.next_attempt_at.as_deref(),
            lane: &lane,
            looked_up,
        };
        match next_step(&view, now, &limits, usage) {
            Step::NotDue => return,
            Step::Defer(until) => {
                row.apply(&Transition::deferred(until));
                return;
            }
            Step::LookUp => {
                let ex = match s.get {
                    GetFault::Kill => return,
                    GetFault::None => {
                        let (status, body) = intake.get();
                        json_exchange(status, &body)
                    }
                    GetFault::NoAnswer => failure("connection reset by peer"),
                    GetFault::Busy => json_exchange(503, &json!({"error": "busy"})),
                    GetFault::OtherBytes => {
                        json_exchange(200, &pending(&sha(), "{\"other\":1}", "2026-11-30"))
                    }
                    GetFault::OtherRecord => {
                        json_exchange(200, &pending(&"f".repeat(64), CANONICAL, "2026-11-30"))
                    }
                    GetFault::Oversized => exchange(200, vec![b' '; 600 * 1024]),
                };
                let lookup = classify_lookup(&ex, &sha(), CANONICAL.as_bytes());
                let tries = row.attempts + row.lookups + 1;
                row.lookups += 1;
                match after_lookup(&lookup, tries, now, s.jitter) {
                    AfterLookup::Filed(t) | AfterLookup::AskAgain(t) => {
                        row.apply(&t);
                        return;
                    }
                    AfterLookup::Send => looked_up = true,
                }
            }
            Step::Send => break,
        }
    }
    // outbox::mark_sending, committed before the request leaves.
    row.state = SubmissionState::Sending;
    row.attempts += 1;
    row.next_attempt_at = None;
    let (ex, reached) = match s.post {
        PostFault::KillBeforeSend => return,
        PostFault::NoConnection => (
            failure("tcp connect error: Connection refused"),
            Reached::Never,
        ),
        PostFault::LostBeforeIntake => (failure("connection reset by peer"), Reached::Maybe),
        PostFault::Busy => (
            json_exchange(503, &json!({"error": "key_url_unreachable"})),
            Reached::Maybe,
        ),
        fault => {
            let (status, body) = intake.post(now);
            let ex = match fault {
                PostFault::KillAfterIntake => return,
                PostFault::LostAfterIntake => failure("connection closed before message completed"),
                PostFault::Garbled if (200..300).contains(&status) => {
                    exchange(status, b"OK".to_vec())
                }
                PostFault::FailedAfterIntake => exchange(500, b"oops".to_vec()),
                _ => json_exchange(status, &body),
            };
            (ex, Reached::Maybe)
        }
    };
    let answer = classify_reached(&ex, &sha(), reached);
    row.apply(&classify(&answer, row.attempts, now, s.jitter));
}

/// The invariants that hold after every step.
fn check(row: &StoredRow, intake: &Intake) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        intake.posts_while_held,
        0,
        "a record the intake held was POSTed again: {:?} {:?}",
        row,
        intake
    );
    match row.state {
        SubmissionState::Filed => {
            prop_assert!(intake.held.is_some(), "filed, not held: {row:?} {intake:?}");
            if row.last_answer.is_some_and(AnswerKind::uses_the_lane) {
                prop_assert_eq!(
                    &row.filed_day,
                    &intake.held,
                    "counted on another day than the intake's"
                );
            }
        }
        SubmissionState::Refused => {
            prop_assert!(
                intake.refuses && intake.held.is_none(),
                "refused, but the intake did not refuse it: {row:?} {intake:?}"
            );
        }
        _ => {}
    }
    Ok(())
}

fn intake() -> impl Strategy<Value = (bool, u32, u32, u32)> {
    (
        prop_oneof![9 => Just(false), 1 => Just(true)],
        prop_oneof![Just(1u32), Just(5u32)],
        // Our own earlier records today: none, one place left, the lane full.
        0u32..=2,
        // Others' records on the intake today: none, one place left, full.
        prop_oneof![Just(0u32), Just(499u32), Just(500u32)],
    )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn lost_answers_kills_and_lying_lookups_never_file_twice_and_always_settle(
        (refuses, lane_cap, lane_fill, global_used0) in intake(),
        start in 0i64..1200,
        script in proptest::collection::vec(scripted(), 0..40),
    ) {
        // From ten minutes before a UTC midnight to ten after.
        let mut now: DateTime<Utc> =
            "2026-11-30T23:50:00Z".parse::<DateTime<Utc>>().unwrap() + Duration::seconds(start);
        let lane_used0 = match lane_fill {
            0 => 0,
            1 => lane_cap - 1,
            _ => lane_cap,
        };
        let mut intake = Intake {
            refuses,
            lane_cap,
            global_cap: 500,
            day0: lanes::utc_day(now),
            lane_used0,
            global_used0: global_used0.max(lane_used0),
            held: None,
            posts: 0,
            posts_while_held: 0,
        };
        // Planned in the record's transaction: queued, due now.
        let mut row = StoredRow {
            state: SubmissionState::Queued,
            next_attempt_at: Some(walked_at(now)),
            attempts: 0,
            lookups: 0,
            last_answer: None,
            filed_day: None,
        };
        let advance = |row: &StoredRow, now: DateTime<Utc>, after: u32| {
            let due = row
                .next_attempt_at
                .as_deref()
                .and_then(|t| t.parse::<DateTime<Utc>>().ok())
                .unwrap_or(now)
                .max(now);
            due + Duration::seconds(i64::from(after))
        };
        for s in script {
            now = advance(&row, now, s.after);
            attempt(&mut row, &mut intake, now, s);
            check(&row, &intake)?;
        }
        // The faults stop: the row settles within a bounded number of attempts (a lane full by
        // the intake's count waits for the next UTC day at most twice).
        let healthy = Scripted { after: 0, post: PostFault::None, get: GetFault::None, jitter: 0.5 };
        for _ in 0..8 {
            if row.state.is_settled() {
                break;
            }
            now = advance(&row, now, 0);
            attempt(&mut row, &mut intake, now, healthy);
            check(&row, &intake)?;
        }
        let expected = if refuses { SubmissionState::Refused } else { SubmissionState::Filed };
        prop_assert_eq!(row.state, expected, "not settled: {:?} {:?}", row, intake);
        if !refuses {
            prop_assert!(intake.posts >= 1);
        }
    }
}
