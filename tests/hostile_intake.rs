//! The witness intake is named by a stranger's card: intakes that misbehave one way each, over
//! real loopback HTTPS. Every walk survives, the record stays in the store and the outbox, and
//! each answer gets a bounded, recorded outcome (issue 14, section 3).

mod common;

use common::*;
use conduct_walker::pipeline::{JobReport, Pipeline, PipelineConfig, WalkJob};
use conduct_walker::sandbox::{
    Behaviour, HttpsServer, Req, Resp, SandboxAgent, SandboxCa, handler,
};
use conduct_walker::store::outbox::Submission;
use conduct_walker::walk::{Mode, Wire};
use conduct_walker::witness::filing::SubmissionState;
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
        // At most a day (conduct_walker::witness::intake::MAX_RETRY_AFTER).
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
    assert_eq!(run.row.state, SubmissionState::Queued);
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
async fn an_oversized_answer_is_a_transport_error_and_retried() {
    let run = file_with(
        answer(|_| Resp::bytes(201, "application/json", vec![b' '; 2 * 1024 * 1024])),
        json!({}),
    )
    .await;
    is_queued_until(&run.row, "2026-11-30T12:01:00Z");
    assert!(run.row.last_error.as_deref().unwrap().contains("too large"));
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
