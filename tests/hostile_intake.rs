//! The witness intake is named by a stranger's card: intakes that misbehave one way each, over
//! real loopback HTTPS. Every walk survives, the record stays in the store and the outbox, and
//! each answer gets a bounded, recorded outcome (issue 14, section 3). An answer that is lost
//! or unreadable leaves the record waiting for a lookup, and a lookup's answer is bounded and
//! believed only when it carries the record's own sha256 and bytes (issue 34).

mod common;

use common::*;
use conduct_walker::clock::Clock;
use conduct_walker::filing::{AnswerKind, Outcome, SubmissionState};
use conduct_walker::pipeline::{JobReport, Pipeline, PipelineConfig, WalkJob};
use conduct_walker::sandbox::{
    Behaviour, HttpsServer, Req, Resp, SandboxAgent, SandboxCa, handler,
};
use conduct_walker::store::outbox::Submission;
use conduct_walker::walk::{Mode, Wire};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How the hostile intake answers a POST; `sha` is the record's own sha256.
type Answer = Arc<dyn Fn(&str) -> Resp + Send + Sync>;

struct Run {
    report: JobReport,
    row: Submission,
    posts: usize,
}

async fn file_with(answer: Answer, self_description: Value) -> Run {
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let posts = Arc::new(AtomicUsize::new(0));
    let counted = posts.clone();
    let intake = HttpsServer::start(
        &ca,
        handler(move |req: Req| {
            if req.method == "GET" {
                return Resp::json(200, &self_description);
            }
            counted.fetch_add(1, Ordering::SeqCst);
            let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
            let record = body["record_canonical"].as_str().unwrap_or_default();
            answer(&conduct_walker::digest::sha256_hex(record.as_bytes()))
        }),
    )
    .await
    .unwrap();
    let intake_url = format!("{}/witness", intake.base());
    let dir = tempfile::tempdir().unwrap();
    let pipeline = Pipeline::new(PipelineConfig {
        transport: transport(&ca, &[&agent.origin(), &intake_url], None),
        store_path: dir.path().join("walker.db"),
        signing: None,
        clock: Arc::new(fixed_clock()),
        intake_override: Some(intake_url),
        file_extra_walks: false,
    })
    .unwrap();
    let report = pipeline
        .run_job(&WalkJob {
            request: request(&agent.origin(), None, Mode::A2a, Wire::V1_0),
            submit: true,
            bind_task: None,
        })
        .await
        .expect("the walk survives any intake answer");
    let rows = pipeline.submissions_of(report.record_id).await.unwrap();
    assert_eq!(rows.len(), 1, "the record keeps its one outbox row");
    Run {
        report,
        row: rows.into_iter().next().unwrap(),
        posts: posts.load(Ordering::SeqCst),
    }
}

fn answer(f: impl Fn(&str) -> Resp + Send + Sync + 'static) -> Answer {
    Arc::new(f)
}

fn accepted(sha: &str) -> Resp {
    Resp::json(
        201,
        &json!({"sha": sha, "status": "pending", "counted": true}),
    )
}

const NOW: &str = "2026-11-30T12:00:00Z";

fn is_queued_until(row: &Submission, latest: &str) {
    assert_eq!(row.state, SubmissionState::Queued, "{row:?}");
    let next = row.next_attempt_at.as_deref().expect("a retry time");
    assert!(
        next > NOW && next <= latest,
        "{next} not in ({NOW}, {latest}]"
    );
}

fn waits_for_a_lookup_until(row: &Submission, latest: &str) {
    assert_eq!(row.state, SubmissionState::Sending, "{row:?}");
    assert_eq!(row.last_answer, Some(AnswerKind::Unknown), "{row:?}");
    let next = row.next_attempt_at.as_deref().expect("a lookup time");
    assert!(
        next > NOW && next <= latest,
        "{next} not in ({NOW}, {latest}]"
    );
    assert_eq!(row.summary().outcome, Outcome::AwaitingLookup);
}

#[tokio::test]
async fn an_overflowing_retry_after_is_clamped_not_a_panic() {
    // 9e15 s converts to a chrono duration but overflows when added to now: the old panic.
    for value in ["9000000000000000", "18446744073709551615", "315360000"] {
        let run = file_with(
            answer(move |_| {
                Resp::json(503, &json!({"error": "busy"})).with_header("Retry-After", value)
            }),
            json!({}),
        )
        .await;
        // At most a day (conduct_walker::filing::answer::MAX_RETRY_AFTER).
        is_queued_until(&run.row, "2026-12-01T12:00:00Z");
        assert_eq!(run.row.last_status, Some(503));
    }
}

#[tokio::test]
async fn an_acceptance_that_is_not_json_is_not_filed() {
    let run = file_with(answer(|_| Resp::bytes(201, "text/plain", "OK")), json!({})).await;
    assert_ne!(run.row.state, SubmissionState::Filed);
    assert!(
        run.row.last_error.as_deref().unwrap().contains("not JSON"),
        "{:?}",
        run.row
    );
    assert_eq!(run.report.submission.as_ref().unwrap().counted, None);
}

#[tokio::test]
async fn an_acceptance_naming_another_record_is_recorded_as_an_error() {
    let other = "f".repeat(64);
    let run = file_with(answer(move |_| accepted(&other)), json!({})).await;
    // Not filed, and not sent again blind either: the intake may hold it.
    assert_eq!(run.row.state, SubmissionState::Sending);
    assert_eq!(run.row.last_answer, Some(AnswerKind::Unknown));
    let error = run.row.last_error.clone().unwrap();
    assert!(
        error.contains(&"f".repeat(64)) && error.contains("not this record's"),
        "{error}"
    );
}

#[tokio::test]
async fn a_redirect_is_an_answer_to_retry_not_a_refusal() {
    let run = file_with(
        answer(|_| Resp::empty(307).with_header("location", "https://elsewhere.example/witness")),
        json!({}),
    )
    .await;
    is_queued_until(&run.row, "2026-11-30T12:01:00Z");
    assert!(
        run.row
            .last_error
            .as_deref()
            .unwrap()
            .contains("not followed")
    );
}

#[tokio::test]
async fn a_429_waits_for_the_next_utc_day() {
    let run = file_with(
        answer(|_| {
            Resp::json(
                429,
                &json!({"error": "daily_global_cap_reached", "cap": 500}),
            )
        }),
        json!({}),
    )
    .await;
    assert_eq!(
        run.row.next_attempt_at.as_deref(),
        Some("2026-12-01T00:00:00Z")
    );
}

#[tokio::test]
async fn an_oversized_answer_is_a_transport_error_and_looked_up() {
    let run = file_with(
        answer(|_| Resp::bytes(201, "application/json", vec![b' '; 2 * 1024 * 1024])),
        json!({}),
    )
    .await;
    // The request went out before the answer overflowed: the outcome is unknown.
    waits_for_a_lookup_until(&run.row, "2026-11-30T12:01:00Z");
    assert!(run.row.last_error.as_deref().unwrap().contains("too large"));
}

/// Issue 42: a refusal is its status line. A 400 whose error text is 1 MiB + 1 KiB (over the
/// transport's cap) used to be read as "unknown": looked up, 404, sent again, refused again, for
/// ever. Now it is refused once, never looked up or resent, and the row says why the body was
/// not read.
#[tokio::test]
async fn a_refusal_with_a_body_over_the_cap_is_refused_once_not_looked_up() {
    let text = "x".repeat(1024 * 1024 + 1024);
    let run = file_with(
        answer(move |_| Resp::json(400, &json!({"error": text}))),
        json!({}),
    )
    .await;
    assert_eq!(run.row.state, SubmissionState::Refused, "{:?}", run.row);
    assert_eq!(run.row.last_answer, Some(AnswerKind::Refused));
    assert_eq!(run.posts, 1);
    assert_eq!(run.row.next_attempt_at, None, "nothing more is planned");
    let error = run.row.last_error.as_deref().unwrap();
    assert!(
        error.starts_with("http 400: its body is not read") && error.contains("too large"),
        "{error}"
    );
    assert_eq!(run.row.summary().outcome, Outcome::Refused);
}

#[tokio::test]
async fn intake_text_with_terminal_escapes_is_stored_escaped_and_short() {
    let hostile = format!("\u{1b}]0;pwned\u{7}\u{1b}[2J{}", "A".repeat(10_000));
    let run = file_with(
        answer(move |_| {
            Resp::json(
                422,
                &json!({"error": hostile, "reason_code": "schema\u{1b}[31m"}),
            )
        }),
        json!({}),
    )
    .await;
    assert_eq!(run.row.state, SubmissionState::Refused);
    let error = run.row.last_error.clone().unwrap();
    assert!(!error.chars().any(char::is_control), "{error:?}");
    assert!(error.chars().count() < 300, "{}", error.chars().count());
    assert_eq!(run.row.reason_code.as_deref(), Some("schema\\u{1b}[31m"));
}

#[tokio::test]
async fn absurd_stated_caps_keep_the_spec_constants_and_the_record_is_filed() {
    let run = file_with(
        answer(accepted),
        json!({"limits_stated_not_hidden": {"daily_per_ip": 4294967296u64,
            "daily_global": -3, "max_bytes": 1e300}}),
    )
    .await;
    assert_eq!(run.posts, 1, "2^32 was not read as a cap of zero");
    assert_eq!(run.row.state, SubmissionState::Filed);
    assert_eq!(run.row.counted, Some(true));
}

// Lost answers and lookups (issue 34): an intake that keeps what it is sent and answers its
// reads as told, on a clock the test moves.

/// How the lookup intake answers `GET /witness/<sha>`: given the sha asked for and the bytes
/// stored under it (if any).
type Read = Arc<dyn Fn(&str, Option<&str>) -> Resp + Send + Sync>;

struct LookupWorld {
    agent: SandboxAgent,
    _intake: HttpsServer,
    dir: tempfile::TempDir,
    clock: Arc<conduct_walker::clock::ManualClock>,
    pipeline: Pipeline,
    /// POSTs received, by sha.
    posts: Arc<std::sync::Mutex<std::collections::BTreeMap<String, usize>>>,
    /// GETs of `/witness/<sha>` received.
    reads: Arc<AtomicUsize>,
}

/// An intake that stores every POST and answers the first `lose` of them with nothing (the
/// connection closed after storing), later ones 201; its `/witness/<sha>` answers `read`.
/// `store_lost`: whether a POST whose answer is lost was stored first.
async fn lookup_world(
    lose: usize,
    store_lost: bool,
    read: Read,
    deadline: Option<std::time::Duration>,
) -> LookupWorld {
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let stored: Arc<std::sync::Mutex<std::collections::BTreeMap<String, String>>> =
        Default::default();
    let posts: Arc<std::sync::Mutex<std::collections::BTreeMap<String, usize>>> =
        Default::default();
    let reads = Arc::new(AtomicUsize::new(0));
    let (stored2, posts2, reads2) = (stored.clone(), posts.clone(), reads.clone());
    let intake = HttpsServer::start(
        &ca,
        handler(move |req: Req| {
            if req.method == "GET" {
                let Some(sha) = req.path.strip_prefix("/witness/") else {
                    return Resp::json(200, &json!({}));
                };
                reads2.fetch_add(1, Ordering::SeqCst);
                let held = stored2.lock().unwrap().get(sha).cloned();
                return read(sha, held.as_deref());
            }
            let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
            let record = body["record_canonical"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let sha = conduct_walker::digest::sha256_hex(record.as_bytes());
            let n = {
                let mut p = posts2.lock().unwrap();
                let n = p.entry(sha.clone()).or_default();
                *n += 1;
                *n
            };
            if n <= lose {
                if store_lost {
                    stored2.lock().unwrap().insert(sha, record);
                }
                return Resp::close_without_answer();
            }
            stored2.lock().unwrap().insert(sha.clone(), record);
            accepted(&sha)
        }),
    )
    .await
    .unwrap();
    let intake_url = format!("{}/witness", intake.base());
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(fixed_clock());
    let pipeline = Pipeline::new(PipelineConfig {
        transport: transport(&ca, &[&agent.origin(), &intake_url], deadline),
        store_path: dir.path().join("walker.db"),
        signing: None,
        clock: clock.clone(),
        intake_override: Some(intake_url),
        file_extra_walks: false,
    })
    .unwrap();
    LookupWorld {
        agent,
        _intake: intake,
        dir,
        clock,
        pipeline,
        posts,
        reads,
    }
}

impl LookupWorld {
    /// Walk once and file; the row after that attempt.
    async fn walk(&self) -> (String, Submission) {
        let report = self
            .pipeline
            .run_job(&WalkJob {
                request: request(&self.agent.origin(), None, Mode::A2a, Wire::V1_0),
                submit: true,
                bind_task: None,
            })
            .await
            .unwrap();
        let row = self.row(report.record_id).await;
        (report.outcome.sha256, row)
    }

    async fn row(&self, record_id: i64) -> Submission {
        self.pipeline
            .submissions_of(record_id)
            .await
            .unwrap()
            .remove(0)
    }

    /// The record's status page, rendered from the store as `records serve` does.
    fn page(&self, sha: &str) -> String {
        let db = self.dir.path().join("walker.db");
        let store = conduct_walker::store::Store::open_read_only(&db).unwrap();
        conduct_walker::pages::render::record(&store, sha, "test").unwrap()
    }

    fn posts(&self, sha: &str) -> usize {
        self.posts.lock().unwrap().get(sha).copied().unwrap_or(0)
    }
}

/// The intake's pending form of a stored record (ledger.md §2.3).
fn pending(sha: &str, bytes: &str) -> Value {
    json!({"status": "pending", "sha": sha, "record_canonical": bytes, "signed": false,
        "public_key_ed25519_b64": null, "signed_domain": null, "key_url": null, "mode": "full",
        "v11": true, "disclaimer_present": true, "endpoint": "https://a.example/",
        "counted": true, "count_reason": null, "purpose": "a2a-conduct-walk-v1: https://a.example/",
        "witness_name": "test witness", "vantage": "loopback",
        "submitted_at": "2026-11-30T12:00:00.500Z", "responses": []})
}

/// The honest read: the stored bytes, or 404.
fn honest() -> Read {
    Arc::new(|sha, held| match held {
        Some(bytes) => Resp::json(200, &pending(sha, bytes)),
        None => Resp::json(404, &json!({"error": "not found", "sha": sha})),
    })
}

#[tokio::test]
async fn a_lost_answer_is_looked_up_and_the_record_filed_without_a_second_post() {
    let w = lookup_world(1, true, honest(), None).await;
    let (sha, row) = w.walk().await;
    waits_for_a_lookup_until(&row, "2026-11-30T12:00:37Z");
    assert!(
        row.last_error
            .as_deref()
            .unwrap()
            .starts_with("no complete answer"),
        "{row:?}"
    );
    assert_eq!(
        w.reads.load(Ordering::SeqCst),
        0,
        "no lookup before its time"
    );
    // The record's page says why it waits and what comes next.
    let page = w.page(&sha);
    assert!(
        page.contains("class=\"lookup\"")
            && page.contains("not known whether the intake stored it (no complete answer")
            && page.contains("only a 404 leads to a resend"),
        "{page}"
    );
    // Before its time a drain does nothing; then the lookup files it.
    assert_eq!(w.pipeline.drain_outbox().await.unwrap().looked_up, 0);
    w.clock.advance(chrono::Duration::seconds(40));
    let report = w.pipeline.drain_outbox().await.unwrap();
    assert_eq!(
        (report.looked_up, report.attempted, report.filed),
        (1, 0, 1),
        "{report:?}"
    );
    let row = w.row(row.record_id).await;
    assert_eq!(row.state, SubmissionState::Filed);
    assert_eq!(row.last_answer, Some(AnswerKind::Found));
    assert_eq!(row.counted, Some(true));
    assert_eq!(w.posts(&sha), 1, "sent once");
    // The lane counts it (the intake did), and the lookups are counted by result.
    let status = w.pipeline.status().unwrap();
    assert_eq!(status.lanes_used_today.len(), 1, "{status:?}");
    assert_eq!(status.lanes_used_today[0].2, 1);
    assert_eq!(
        status
            .lookups_by_result
            .iter()
            .map(|(k, n)| (k.as_str(), *n))
            .collect::<Vec<_>>(),
        [("found", 1), ("not_found", 0), ("lookup_failed", 0)]
    );
    assert_eq!(row.summary().outcome, Outcome::FiledCounted);
    // The page shows it filed, with the lookup in the attempt log.
    let page = w.page(&sha);
    assert!(page.contains("found at the intake (answer lost)"), "{page}");
    assert!(!page.contains("class=\"lookup\""), "{page}");
    assert!(
        page.contains("found (pending, same sha256 and bytes): filed, not sent again"),
        "{page}"
    );
}

#[tokio::test]
async fn a_lost_request_is_looked_up_then_sent_once_more_on_404() {
    // The first POST is lost before the intake stored it: the lookup says 404, so it is sent.
    let w = lookup_world(1, false, honest(), None).await;
    let (sha, row) = w.walk().await;
    assert_eq!(row.state, SubmissionState::Sending);
    w.clock.advance(chrono::Duration::seconds(40));
    let report = w.pipeline.drain_outbox().await.unwrap();
    assert_eq!(
        (report.looked_up, report.attempted, report.filed),
        (1, 1, 1),
        "{report:?}"
    );
    let row = w.row(row.record_id).await;
    assert_eq!(
        (row.state, row.last_answer),
        (SubmissionState::Filed, Some(AnswerKind::Accepted))
    );
    assert_eq!(w.posts(&sha), 2, "sent again only after the 404");
}

/// Every hostile answer to the lookup: none files the record, none leads to a second POST;
/// the row keeps waiting, with the reason.
#[tokio::test]
async fn hostile_lookup_answers_neither_file_nor_resend() {
    let other = "f".repeat(64);
    let cases: Vec<(&str, Read)> = vec![
        (
            "other bytes under this sha",
            Arc::new(|sha, _| Resp::json(200, &pending(sha, "{\"forged\":true}"))),
        ),
        (
            "another record",
            Arc::new(move |_, held| Resp::json(200, &pending(&other, held.unwrap_or("")))),
        ),
        (
            "over the lookup cap",
            Arc::new(|_, _| Resp::bytes(200, "application/json", vec![b' '; 600 * 1024])),
        ),
        (
            "over the transport's cap",
            Arc::new(|_, _| Resp::bytes(200, "application/json", vec![b' '; 2 * 1024 * 1024])),
        ),
        (
            "not JSON",
            Arc::new(|_, _| Resp::bytes(200, "text/html", "<p>yes</p>")),
        ),
        (
            "anchored without the record",
            Arc::new(|sha, _| {
                Resp::json(
                    200,
                    &json!({"status": "anchored", "sha": sha, "ledger_entry": 1,
                        "url": "https://x/ledger/1", "record": null, "responses": []}),
                )
            }),
        ),
        (
            "503",
            Arc::new(|_, _| Resp::json(503, &json!({"error": "busy"}))),
        ),
        (
            "redirect",
            Arc::new(|_, _| Resp::empty(302).with_header("location", "https://elsewhere.example/")),
        ),
        (
            "closed without an answer",
            Arc::new(|_, _| Resp::close_without_answer()),
        ),
        (
            "slow (past the deadline)",
            Arc::new(|sha, held| {
                let body = serde_json::to_vec(&pending(sha, held.unwrap_or(""))).unwrap();
                Resp {
                    status: 200,
                    headers: vec![("content-type".into(), "application/json".into())],
                    body: conduct_walker::sandbox::Body::Trickle {
                        bytes: body,
                        every: std::time::Duration::from_millis(100),
                    },
                }
            }),
        ),
    ];
    for (what, read) in cases {
        let w = lookup_world(1, true, read, Some(std::time::Duration::from_secs(3))).await;
        let (sha, row) = w.walk().await;
        assert_eq!(row.state, SubmissionState::Sending, "{what}");
        w.clock.advance(chrono::Duration::seconds(40));
        let report = w.pipeline.drain_outbox().await.unwrap();
        assert_eq!(
            (report.looked_up, report.attempted, report.filed),
            (1, 0, 0),
            "{what}: {report:?}"
        );
        let row = w.row(row.record_id).await;
        assert_eq!(
            (row.state, row.last_answer),
            (SubmissionState::Sending, Some(AnswerKind::LookupFailed)),
            "{what}: {row:?}"
        );
        let error = row.last_error.clone().unwrap();
        assert!(error.starts_with("lookup: "), "{what}: {error}");
        assert!(!error.chars().any(char::is_control), "{what}: {error:?}");
        assert!(error.chars().count() < 300, "{what}: {error}");
        assert!(
            row.summary()
                .short
                .starts_with("waiting for a lookup (lookup: "),
            "{what}"
        );
        // Asked again later, with a longer wait; still never POSTed twice.
        let next: chrono::DateTime<chrono::Utc> =
            row.next_attempt_at.as_deref().unwrap().parse().unwrap();
        assert!(next > w.clock.now(), "{what}");
        assert_eq!(w.posts(&sha), 1, "{what}: never sent blind");
    }
}
