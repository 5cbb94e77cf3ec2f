//! Walker → intake emulator over loopback HTTPS: signing, privacy modes, lanes, dedupe, refusals,
//! resume after a kill (spec §4.5–§6).

mod common;

use common::*;
use conduct_walker::clock::{Clock, ManualClock};
use conduct_walker::filing::answer::Answer;
use conduct_walker::filing::{AnswerKind, SubmissionState};
use conduct_walker::intake_emulator::{
    Emulator, EmulatorConfig, Limits as EmulatorLimits, RunningEmulator,
};
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::pipeline::{Pipeline, PipelineConfig, WalkJob};
use conduct_walker::sandbox::{Behaviour, HttpsServer, Resp, SandboxAgent, SandboxCa, handler};
use conduct_walker::walk::{Mode, Privacy, Wire};
use conduct_walker::wire::IntakeSubmission;
use conduct_walker::witness::intake;
use ed25519_dalek::SigningKey;
use serde_json::json;
use std::sync::Arc;

struct World {
    ca: SandboxCa,
    agent: SandboxAgent,
    emulator: RunningEmulator,
    clock: Arc<ManualClock>,
    dir: tempfile::TempDir,
    transport: Transport,
}

async fn world_with(limits: EmulatorLimits, extra_named: &[String]) -> World {
    world_with_ca(SandboxCa::generate(), limits, extra_named).await
}

async fn world_with_ca(ca: SandboxCa, limits: EmulatorLimits, extra_named: &[String]) -> World {
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let clock = Arc::new(fixed_clock());
    let dir = tempfile::tempdir().unwrap();
    let mut policy = NetPolicy::new(true);
    for url in extra_named {
        policy.allow_url(url);
    }
    let mut cfg = TransportConfig::new(policy.clone());
    cfg.extra_roots = vec![ca.cert_der()];
    let emulator_transport = Transport::new(cfg).unwrap();
    let emulator = Emulator::start(
        EmulatorConfig {
            state_path: dir.path().join("intake.db"),
            limits,
            clock: clock.clone(),
            transport: emulator_transport,
            ledger_host: "ledger.horizonshield.dev".into(),
        },
        &ca,
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    policy.allow_url(&agent.origin());
    policy.allow_url(&emulator.url());
    let mut cfg = TransportConfig::new(policy);
    cfg.extra_roots = vec![ca.cert_der()];
    let transport = Transport::new(cfg).unwrap();
    World {
        ca,
        agent,
        emulator,
        clock,
        dir,
        transport,
    }
}

async fn world() -> World {
    world_with(EmulatorLimits::default(), &[]).await
}

fn pipeline(w: &World, signing: Option<(SigningKey, Option<String>)>, extra: bool) -> Pipeline {
    Pipeline::new(PipelineConfig {
        transport: w.transport.clone(),
        store_path: w.dir.path().join("walker.db"),
        signing,
        clock: w.clock.clone(),
        intake_override: Some(w.emulator.url()),
        file_extra_walks: extra,
    })
    .unwrap()
}

fn job(w: &World, privacy: Privacy) -> WalkJob {
    let mut request = request(&w.agent.origin(), None, Mode::A2a, Wire::V1_0);
    request.privacy = privacy;
    WalkJob {
        request,
        submit: true,
        bind_task: None,
    }
}

fn key() -> SigningKey {
    SigningKey::from_bytes(&[42u8; 32])
}

#[tokio::test]
async fn unsigned_full_record_is_accepted_and_counted() {
    let w = world().await;
    let p = pipeline(&w, None, false);
    let r = p.run_job(&job(&w, Privacy::Full)).await.unwrap();
    let sub = r.submission.unwrap();
    assert_eq!(sub.state, SubmissionState::Filed);
    assert_eq!(sub.answer_kind, Some(AnswerKind::Accepted));
    assert_eq!(sub.counted, Some(true));
    let stored = w.emulator.stored(&r.outcome.sha256).unwrap();
    assert_eq!(
        stored["record_canonical"],
        json!(String::from_utf8(r.outcome.canonical.clone()).unwrap())
    );
}

#[tokio::test]
async fn all_three_privacy_modes_are_accepted_signed() {
    let w = world().await;
    let p = pipeline(&w, Some((key(), None)), true);
    for privacy in [Privacy::Full, Privacy::HashOnly, Privacy::Commitment] {
        let r = p.run_job(&job(&w, privacy)).await.unwrap();
        let sub = r.submission.unwrap();
        assert_eq!(sub.state, SubmissionState::Filed, "{privacy:?}: {sub:?}");
        let stored = w.emulator.stored(&r.outcome.sha256).unwrap();
        assert_eq!(stored["mode"], privacy.as_str());
        assert_eq!(stored["signed"], true);
    }
    assert_eq!(w.emulator.stored_count(), 3);
}

#[tokio::test]
async fn second_walk_the_same_day_is_kept_local_by_default_and_uncounted_when_filed() {
    let w = world().await;
    let p = pipeline(&w, None, false);
    p.run_job(&job(&w, Privacy::Full)).await.unwrap();
    w.clock.advance(chrono::Duration::seconds(5));
    let second = p.run_job(&job(&w, Privacy::Full)).await.unwrap();
    assert_eq!(second.submission.unwrap().state, SubmissionState::KeptLocal);
    assert_eq!(w.emulator.stored_count(), 1);
    let extra = pipeline(&w, None, true);
    w.clock.advance(chrono::Duration::seconds(5));
    let third = extra.run_job(&job(&w, Privacy::Full)).await.unwrap();
    let sub = third.submission.unwrap();
    assert_eq!(sub.state, SubmissionState::Filed);
    assert_eq!(sub.counted, Some(false));
    assert_eq!(
        sub.count_reason.as_deref(),
        Some("same witness, same endpoint, same day; stored, not counted")
    );
}

#[tokio::test]
async fn a_clock_stepping_across_midnight_files_one_counted_record_per_utc_day_and_none_twice() {
    // The witness and the intake read the same clock here, so its steps are the UTC day both
    // count in (issue 14, section 4: NTP corrections forward and back across midnight).
    let w = world().await;
    let p = pipeline(&w, None, false);
    let mut walked = Vec::new();
    for (at, expected) in [
        ("2026-11-30T23:59:30Z", SubmissionState::Filed),
        // Forward across midnight: a new UTC day, so a new counted record.
        ("2026-12-01T00:00:30Z", SubmissionState::Filed),
        // Back into the previous day, whose record was filed: this one stays local.
        ("2026-11-30T23:59:40Z", SubmissionState::KeptLocal),
        // Forward again: the new day has its record too.
        ("2026-12-01T00:00:40Z", SubmissionState::KeptLocal),
    ] {
        w.clock.set(at.parse().unwrap());
        let r = p.run_job(&job(&w, Privacy::Full)).await.unwrap();
        let sub = r.submission.unwrap();
        assert_eq!(sub.state, expected, "walk at {at}");
        if expected == SubmissionState::Filed {
            assert_eq!(sub.counted, Some(true), "walk at {at}");
        }
        walked.push(r.record_id);
    }
    assert_eq!(p.drain_outbox().await.unwrap().attempted, 0);
    assert_eq!(w.emulator.stored_count(), 2);
    for id in walked {
        let subs = p.submissions_of(id).await.unwrap();
        assert_eq!(
            subs.len(),
            1,
            "record {id}: one submission row, never a second"
        );
    }
}

#[tokio::test]
async fn a_submission_killed_in_flight_is_not_resent_and_keeps_its_acceptance() {
    let w = world().await;
    let p = pipeline(&w, None, false);
    let r = p.run_job(&job(&w, Privacy::Full)).await.unwrap();
    assert_eq!(r.submission.unwrap().state, SubmissionState::Filed);
    // As if the process died after the intake stored it but before the answer was committed.
    let conn = rusqlite::Connection::open(w.dir.path().join("walker.db")).unwrap();
    conn.execute("UPDATE submissions SET state = 'sending'", [])
        .unwrap();
    drop(conn);
    drop(p);
    let restarted = pipeline(&w, None, false);
    let drained = restarted.drain_outbox().await.unwrap();
    assert_eq!(drained.filed, 1);
    assert_eq!(
        drained.attempted, 0,
        "found at the intake, not POSTed again"
    );
    let subs = restarted.submissions_of(r.record_id).await.unwrap();
    assert_eq!(subs[0].state, SubmissionState::Filed);
    assert_eq!(subs[0].last_answer, Some(AnswerKind::Accepted));
    assert_eq!(
        w.emulator.stored_count(),
        1,
        "exactly one stored copy at the intake"
    );
}

/// Issue 34: the intake checks its caps before its dedupe (§6.2), so a blind resend of a record
/// it already holds, at the lane's last place, is refused with 429 although the record is
/// filed. The lost answer is looked up instead: filed, counted against the lane, sent once.
#[tokio::test]
async fn a_lost_answer_at_the_lanes_last_place_is_found_not_resent_into_a_429() {
    let limits = EmulatorLimits {
        daily_per_ip: 1,
        ..EmulatorLimits::default()
    };
    let w = world_with(limits, &[]).await;
    let p = pipeline(&w, None, true);
    w.emulator.drop_answers(1.0, 7);
    let r = p.run_job(&job(&w, Privacy::Full)).await.unwrap();
    let sha = r.outcome.sha256.clone();
    let sub = r.submission.unwrap();
    assert_eq!(
        (sub.state, sub.answer_kind),
        (SubmissionState::Sending, Some(AnswerKind::Unknown))
    );
    assert!(w.emulator.stored(&sha).is_some(), "stored, answer lost");
    assert_eq!(w.emulator.dropped_answers(), 1);
    w.emulator.drop_answers(0.0, 0);

    w.clock.advance(chrono::Duration::seconds(40));
    let d = p.drain_outbox().await.unwrap();
    assert_eq!((d.looked_up, d.attempted, d.filed), (1, 0, 1), "{d:?}");
    let row = p.submissions_of(r.record_id).await.unwrap().remove(0);
    assert_eq!(
        (row.state, row.last_answer, row.counted),
        (SubmissionState::Filed, Some(AnswerKind::Found), Some(true))
    );
    assert_eq!(w.emulator.posts_per_sha().get(&sha), Some(&1), "sent once");

    // Our own count knows the lane's one place is used: the next walk waits, unsent.
    let r2 = p.run_job(&job(&w, Privacy::Full)).await.unwrap();
    let sub2 = r2.submission.unwrap();
    assert_eq!(
        (sub2.state, sub2.answer_kind),
        (SubmissionState::Queued, Some(AnswerKind::LaneFull))
    );
    assert_eq!(w.emulator.posts_per_sha().get(&r2.outcome.sha256), None);

    // What a blind resend of the filed record would have got: a refusal by the cap.
    let canonical = String::from_utf8(r.outcome.canonical.clone()).unwrap();
    let (answer, _) = intake::submit(
        &w.transport,
        &w.emulator.url(),
        &IntakeSubmission {
            record_canonical: canonical,
            signature_ed25519_b64: None,
            public_key_ed25519_b64: None,
        },
        &sha,
    )
    .await;
    assert!(matches!(answer, Answer::LaneFull { .. }), "{answer:?}");
}

#[tokio::test]
async fn a_full_lane_defers_to_the_next_utc_day() {
    let limits = EmulatorLimits {
        daily_per_ip: 2,
        ..EmulatorLimits::default()
    };
    let w = world_with(limits, &[]).await;
    let p = pipeline(&w, None, true);
    w.clock.set("2026-11-30T23:50:00Z".parse().unwrap());
    let mut states = Vec::new();
    for _ in 0..3 {
        let r = p.run_job(&job(&w, Privacy::Full)).await.unwrap();
        states.push(r.submission.unwrap().state);
        w.clock.advance(chrono::Duration::seconds(1));
    }
    assert_eq!(
        states,
        [
            SubmissionState::Filed,
            SubmissionState::Filed,
            SubmissionState::Queued
        ],
        "the client never sends what the lane cannot take"
    );
    assert_eq!(w.emulator.stored_count(), 2);
    // Still the same day: nothing is due.
    assert_eq!(p.drain_outbox().await.unwrap().filed, 0);
    w.clock.set("2026-12-01T00:00:01Z".parse().unwrap());
    assert_eq!(p.drain_outbox().await.unwrap().filed, 1);
    assert_eq!(w.emulator.stored_count(), 3);
    assert_eq!(p.status().unwrap().outbox_depth, 0);
}

async fn key_server(ca: &SandboxCa, doc: serde_json::Value, redirect: bool) -> HttpsServer {
    HttpsServer::start(
        ca,
        handler(move |_| {
            if redirect {
                Resp::empty(302).with_header("location", "/elsewhere")
            } else {
                Resp::json(200, &doc)
            }
        }),
    )
    .await
    .unwrap()
}

/// A world whose emulator may fetch a key_url served by a server on the same CA.
async fn world_with_key_server(
    doc: serde_json::Value,
    redirect: bool,
) -> (World, HttpsServer, String) {
    let ca = SandboxCa::generate();
    let server = key_server(&ca, doc, redirect).await;
    let key_url = format!(
        "https://localhost:{}/.well-known/nenrin-witness-key.json",
        server.addr().port()
    );
    let w = world_with_ca(
        ca,
        EmulatorLimits::default(),
        std::slice::from_ref(&key_url),
    )
    .await;
    (w, server, key_url)
}

#[tokio::test]
async fn domain_signed_record_whose_key_url_serves_the_key_is_accepted() {
    let k = key();
    let (w, _server, key_url) =
        world_with_key_server(conduct_walker::witness::keys::key_document(&k), false).await;
    let p = pipeline(&w, Some((k, Some(key_url))), false);
    let r = p.run_job(&job(&w, Privacy::Full)).await.unwrap();
    let sub = r.submission.unwrap();
    assert_eq!(sub.state, SubmissionState::Filed, "{sub:?}");
    let stored = w.emulator.stored(&r.outcome.sha256).unwrap();
    assert_eq!(stored["signed_domain"], "localhost");
    // The key_url is inside the signed bytes.
    assert!(
        r.outcome.record()["witness"]["key_url"]
            .as_str()
            .unwrap()
            .ends_with("nenrin-witness-key.json")
    );
}

#[tokio::test]
async fn key_url_serving_another_key_is_refused_as_mismatch() {
    let other = SigningKey::from_bytes(&[7u8; 32]);
    let (w, _server, key_url) =
        world_with_key_server(conduct_walker::witness::keys::key_document(&other), false).await;
    let p = pipeline(&w, Some((key(), Some(key_url))), false);
    let sub = p
        .run_job(&job(&w, Privacy::Full))
        .await
        .unwrap()
        .submission
        .unwrap();
    assert_eq!(sub.state, SubmissionState::Refused);
    assert_eq!(sub.reason_code.as_deref(), Some("key_url_mismatch"));
    assert_eq!(w.emulator.stored_count(), 0);
}

#[tokio::test]
async fn key_url_that_redirects_is_unreachable_and_retried_later() {
    let (w, _server, key_url) = world_with_key_server(json!({}), true).await;
    let p = pipeline(&w, Some((key(), Some(key_url))), false);
    let sub = p
        .run_job(&job(&w, Privacy::Full))
        .await
        .unwrap()
        .submission
        .unwrap();
    assert_eq!(sub.state, SubmissionState::Queued);
    assert_eq!(sub.answer_kind, Some(AnswerKind::Retry));
    assert_eq!(sub.status, Some(503));
    assert_eq!(sub.error.as_deref(), Some("key_url_unreachable"));
}

#[tokio::test]
async fn refusals_are_classified_by_reason_code_and_never_retried() {
    let w = world().await;
    let url = w.emulator.url();
    let t = &w.transport;
    let post = |body: IntakeSubmission| {
        let t = t.clone();
        let url = url.clone();
        async move {
            let sha = conduct_walker::digest::sha256_hex(body.record_canonical.as_bytes());
            intake::submit(&t, &url, &body, &sha).await.0
        }
    };
    let unsigned = |record: serde_json::Value| IntakeSubmission {
        record_canonical: String::from_utf8(conduct_walker::canonical::to_bytes(&record)).unwrap(),
        signature_ed25519_b64: None,
        public_key_ed25519_b64: None,
    };
    let base = json!({
        "schema": "jidec-path-v1", "purpose": "a2a-conduct-walk-v1: https://a.example/mcp",
        "walked_at": "2026-11-30T12:00:00Z", "base": "https://a.example",
        "witness": {"name": "t", "vantage": "v"}, "mode": "full",
        "establishes": ["x"], "does_not_establish": ["y"],
        "nodes": [{"n": 0}], "assertions": [{}], "verdict": {}
    });
    let with = |patch: serde_json::Value| {
        let mut r = base.clone();
        for (k, v) in patch.as_object().unwrap() {
            r[k] = v.clone();
        }
        r
    };
    let cases = [
        (with(json!({"schema": "other"})), "schema"),
        (with(json!({"mode": "secret"})), "bad_mode"),
        (with(json!({"establishes": []})), "disclaimer_missing"),
        (
            with(json!({"mode": "commitment", "commitment": "xyz"})),
            "bad_commitment",
        ),
        (
            with(
                json!({"mode": "hash-only", "nodes": [{"request": {"url": "https://a.example/mcp", "method": "REDACTED"}}]}),
            ),
            "path_leaks_tool",
        ),
        (
            with(
                json!({"witness": {"name": "t", "vantage": "v", "key_url": "http://w.example/k"}}),
            ),
            "bad_key_url",
        ),
    ];
    for (record, code) in cases {
        match post(unsigned(record)).await {
            Answer::Refused {
                status: 422,
                reason_code,
                ..
            } => assert_eq!(reason_code.as_deref(), Some(code)),
            other => panic!("{code}: {other:?}"),
        }
    }
    // A bad signature.
    let mut body = unsigned(base.clone());
    body.signature_ed25519_b64 =
        Some(conduct_walker::witness::sign(b"other bytes", &key()).signature_b64);
    body.public_key_ed25519_b64 = Some(conduct_walker::witness::keys::public_key_b64(&key()));
    match post(body).await {
        Answer::Refused {
            status: 422,
            reason_code,
            ..
        } => assert_eq!(reason_code.as_deref(), Some("signature_invalid")),
        other => panic!("signature_invalid: {other:?}"),
    }
    // key_url on an unsigned record.
    let record =
        with(json!({"witness": {"name": "t", "vantage": "v", "key_url": "https://w.example/k"}}));
    match post(unsigned(record)).await {
        Answer::Refused { reason_code, .. } => {
            assert_eq!(reason_code.as_deref(), Some("bad_key_url"))
        }
        other => panic!("key_url_without_signature: {other:?}"),
    }
    // Self-witness: the key is served from the walked agent's own host.
    let record =
        with(json!({"witness": {"name": "t", "vantage": "v", "key_url": "https://a.example/k"}}));
    let canonical = conduct_walker::canonical::to_bytes(&record);
    let signed = conduct_walker::witness::sign(&canonical, &key());
    let body = IntakeSubmission {
        record_canonical: String::from_utf8(canonical).unwrap(),
        signature_ed25519_b64: Some(signed.signature_b64),
        public_key_ed25519_b64: Some(signed.public_key_b64),
    };
    match post(body).await {
        Answer::Refused { reason_code, .. } => {
            assert_eq!(reason_code.as_deref(), Some("self_witness"))
        }
        other => panic!("self_witness: {other:?}"),
    }
    // 400 and 413.
    let t2 = w.transport.clone();
    let ex = t2
        .fetch(&conduct_walker::net::HttpRequest::post(
            w.emulator.url(),
            &[("Content-Type", "application/json")],
            b"{}".to_vec(),
        ))
        .await;
    assert_eq!(intake::classify(&ex, "00").kind(), AnswerKind::Refused);
    assert_eq!(ex.status, 400);
    let big = IntakeSubmission {
        record_canonical: "x".repeat(70_000),
        signature_ed25519_b64: None,
        public_key_ed25519_b64: None,
    };
    assert!(matches!(
        post(big).await,
        Answer::Refused { status: 413, .. }
    ));
    assert_eq!(w.emulator.stored_count(), 0);
}

#[tokio::test]
async fn commitment_reveal_matches_the_commitment() {
    let w = world().await;
    let p = pipeline(&w, Some((key(), None)), true);
    let r = p.run_job(&job(&w, Privacy::Commitment)).await.unwrap();
    let (kept, salt) = r.outcome.kept.clone().unwrap();
    let revealed = p
        .reveal(&r.outcome.sha256[..16], true, "test witness")
        .await
        .unwrap();
    assert_eq!(revealed.outcome.canonical, kept);
    assert_eq!(revealed.submission.unwrap().state, SubmissionState::Filed);
    let mut preimage = kept.clone();
    preimage.extend(hex::decode(salt).unwrap());
    let filed_commitment = w.emulator.stored(&r.outcome.sha256).unwrap();
    let record: serde_json::Value =
        serde_json::from_str(filed_commitment["record_canonical"].as_str().unwrap()).unwrap();
    assert_eq!(
        record["commitment"],
        conduct_walker::digest::sha256_hex(&preimage)
    );
    assert!(w.emulator.stored(&revealed.outcome.sha256).is_some());
}

#[tokio::test]
async fn an_unreachable_intake_is_queued_for_a_later_retry() {
    let w = world().await;
    // An intake URL nobody listens on (operator-named so the policy admits it).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = format!("https://127.0.0.1:{port}/witness");
    let mut policy = NetPolicy::new(true);
    policy.allow_url(&dead);
    policy.allow_url(&w.agent.origin());
    let mut cfg = TransportConfig::new(policy);
    cfg.extra_roots = vec![w.ca.cert_der()];
    let p = Pipeline::new(PipelineConfig {
        transport: Transport::new(cfg).unwrap(),
        store_path: w.dir.path().join("walker.db"),
        signing: None,
        clock: w.clock.clone(),
        intake_override: Some(dead),
        file_extra_walks: false,
    })
    .unwrap();
    let r = p.run_job(&job(&w, Privacy::Full)).await.unwrap();
    let sub = r.submission.unwrap();
    assert_eq!(sub.state, SubmissionState::Queued);
    assert_eq!(sub.answer_kind, Some(AnswerKind::Retry));
    let before = w.clock.now();
    let rows = p.submissions_of(r.record_id).await.unwrap();
    let next: chrono::DateTime<chrono::Utc> =
        rows[0].next_attempt_at.as_ref().unwrap().parse().unwrap();
    assert!(next > before, "a retry waits");
}

#[tokio::test]
async fn a_walk_taken_while_the_host_is_offline_is_marked_and_not_filed() {
    let w = world().await;
    // Neither the agent nor the intake answers: from here that is an offline host, not an
    // agent failure (issue 7: "marked as such in the store and not filed").
    let dead = |_: ()| {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        format!("https://127.0.0.1:{port}")
    };
    let (origin, intake) = (dead(()), format!("{}/witness", dead(())));
    let mut policy = NetPolicy::new(true);
    policy.allow_url(&origin);
    policy.allow_url(&intake);
    let mut cfg = TransportConfig::new(policy);
    cfg.extra_roots = vec![w.ca.cert_der()];
    let p = Pipeline::new(PipelineConfig {
        transport: Transport::new(cfg).unwrap(),
        store_path: w.dir.path().join("walker.db"),
        signing: None,
        clock: w.clock.clone(),
        intake_override: Some(intake),
        file_extra_walks: false,
    })
    .unwrap();
    let r = p
        .run_job(&WalkJob {
            request: request(&origin, None, Mode::A2a, Wire::V1_0),
            submit: true,
            bind_task: None,
        })
        .await
        .unwrap();
    let sub = r.submission.unwrap();
    assert_eq!(sub.state, SubmissionState::HostOffline);
    assert_eq!(sub.answer_kind, None, "nothing was sent");
    assert_eq!(p.status().unwrap().outbox_depth, 0, "not queued for filing");
    assert_eq!(p.drain_outbox().await.unwrap().attempted, 0);
}

#[tokio::test]
async fn a_record_longer_than_the_intakes_stated_limit_is_stored_and_never_sent() {
    // The intake states its limit at GET /witness; this record (about 4 KB) exceeds 1,000.
    let w = world_with(
        EmulatorLimits {
            max_record_len: 1000,
            ..EmulatorLimits::default()
        },
        &[],
    )
    .await;
    let p = pipeline(&w, Some((key(), None)), false);
    let r = p.run_job(&job(&w, Privacy::Full)).await.unwrap();
    assert!(r.outcome.canonical.len() > 1000);
    let sub = r.submission.unwrap();
    assert_eq!(sub.state, SubmissionState::Refused);
    assert_eq!(sub.answer_kind, None, "nothing was sent");
    let why = sub.error.unwrap();
    assert!(why.contains("longer than the intake's 1000 limit"), "{why}");
    assert_eq!(w.emulator.stored_count(), 0);
    assert_eq!(
        p.status().unwrap().outbox_depth,
        0,
        "not queued for a retry"
    );
    assert_eq!(p.drain_outbox().await.unwrap().attempted, 0);
    // The record itself is kept, signed, whatever the intake would take.
    let store =
        conduct_walker::store::Store::open_read_only(&w.dir.path().join("walker.db")).unwrap();
    let kept = store.get_by_id(r.record_id).unwrap();
    assert_eq!(kept.row.sha256, r.outcome.sha256);
    assert!(kept.row.signed);
}

#[tokio::test]
async fn two_drains_at_once_send_a_due_row_once() {
    let w = world().await;
    let p = pipeline(&w, None, false);
    let r = p.run_job(&job(&w, Privacy::Full)).await.unwrap();
    assert_eq!(r.submission.unwrap().state, SubmissionState::Filed);
    // Due again, as a queued retry would be; count the attempts logged so far.
    let db = w.dir.path().join("walker.db");
    let attempts = || -> i64 {
        rusqlite::Connection::open(&db)
            .unwrap()
            .query_row("SELECT count(*) FROM submission_attempts", [], |r| r.get(0))
            .unwrap()
    };
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE submissions SET state = 'queued', next_attempt_at = NULL",
            [],
        )
        .unwrap();
    let before = attempts();
    // The daemon's drain and a walk filing its own row can reach the same row together.
    let (a, b) = tokio::join!(p.drain_outbox(), p.drain_outbox());
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.attempted + b.attempted, 1, "{a:?} {b:?}");
    assert_eq!(a.filed + b.filed, 1, "{a:?} {b:?}");
    assert_eq!(attempts(), before + 1, "one POST, one logged answer");
}

#[tokio::test]
async fn the_intakes_429_leaves_the_record_queued_until_the_next_utc_day() {
    // Two walkers (two stores) behind one address share the intake's address lane; the second
    // cannot know the lane is full until the intake says so (429).
    let w = world_with(
        EmulatorLimits {
            daily_per_ip: 1,
            ..EmulatorLimits::default()
        },
        &[],
    )
    .await;
    w.clock.set("2026-11-30T12:00:00Z".parse().unwrap());
    let first = pipeline(&w, None, false);
    let r = first.run_job(&job(&w, Privacy::Full)).await.unwrap();
    assert_eq!(r.submission.unwrap().state, SubmissionState::Filed);
    let second = Pipeline::new(PipelineConfig {
        transport: w.transport.clone(),
        store_path: w.dir.path().join("second.db"),
        signing: None,
        clock: w.clock.clone(),
        intake_override: Some(w.emulator.url()),
        file_extra_walks: false,
    })
    .unwrap();
    // Hash-only, so its bytes differ from the first record's (the intake would dedupe those).
    let r = second.run_job(&job(&w, Privacy::HashOnly)).await.unwrap();
    let sub = r.submission.unwrap();
    assert_eq!(sub.state, SubmissionState::Queued, "{sub:?}");
    assert_eq!(sub.answer_kind, Some(AnswerKind::LaneFull));
    assert_eq!(sub.status, Some(429));
    let rows = second.submissions_of(r.record_id).await.unwrap();
    assert_eq!(
        rows[0].next_attempt_at.as_deref(),
        Some("2026-12-01T00:00:00Z")
    );
    assert_eq!(
        w.emulator.stored_count(),
        1,
        "nothing stored beyond the cap"
    );
}

/// Filing exactly once (issue 14, section 4): a drain works from a snapshot of due rows; a row
/// the walk filed after that snapshot must not be sent again when the drain reaches it.
#[tokio::test]
async fn a_row_filed_after_a_drains_snapshot_is_not_sent_again() {
    let w = world().await;
    let p = pipeline(&w, None, false);
    let r = p.run_job(&job(&w, Privacy::Full)).await.unwrap();
    let rows = p.submissions_of(r.record_id).await.unwrap();
    assert_eq!(rows[0].state, SubmissionState::Filed);
    assert_eq!(rows[0].attempts, 1);
    // The stale drain reaches the row it saw as due.
    let after = p.file_submission(rows[0].id).await.unwrap();
    assert_eq!(after.attempts, 1, "not sent a second time");
    assert_eq!(after.last_answer, Some(AnswerKind::Accepted));
    assert_eq!(after.counted, Some(true));
}

/// A process killed between its POST and the answer leaves the row `sending`; the next run
/// asks the intake (`GET /witness/<sha256>`) and records it filed without a second POST.
#[tokio::test]
async fn an_interrupted_attempt_is_looked_up_before_it_is_resent() {
    let w = world().await;
    let p = pipeline(&w, None, false);
    let r = p.run_job(&job(&w, Privacy::Full)).await.unwrap();
    assert_eq!(w.emulator.stored_count(), 1);
    let db = w.dir.path().join("walker.db");
    // As a kill after the POST left it (the answer never recorded).
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE submissions SET state = 'sending', last_answer = NULL, counted = NULL",
            [],
        )
        .unwrap();
    let report = p.drain_outbox().await.unwrap();
    assert_eq!(report.attempted, 0, "nothing was POSTed again");
    assert_eq!(report.looked_up, 1);
    let rows = p.submissions_of(r.record_id).await.unwrap();
    assert_eq!(rows[0].state, SubmissionState::Filed);
    // Found by the lookup, with the intake's own count (it stored this walk's POST).
    assert_eq!(rows[0].last_answer, Some(AnswerKind::Found));
    assert_eq!(rows[0].counted, Some(true));
    assert_eq!(rows[0].attempts, 1);
    assert_eq!(w.emulator.stored_count(), 1);
    assert_eq!(w.emulator.posts_per_sha().get(&r.outcome.sha256), Some(&1));
}

/// An acceptance is never overwritten by a later answer.
#[tokio::test]
async fn a_later_answer_does_not_erase_an_acceptance() {
    let w = world().await;
    let p = pipeline(&w, None, false);
    let r = p.run_job(&job(&w, Privacy::Full)).await.unwrap();
    let db = w.dir.path().join("walker.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    // Force the row due again (as the old race did) and drain: the intake answers dedup.
    conn.execute("UPDATE submissions SET state = 'queued'", [])
        .unwrap();
    p.drain_outbox().await.unwrap();
    let rows = p.submissions_of(r.record_id).await.unwrap();
    assert_eq!(rows[0].last_answer, Some(AnswerKind::Accepted));
    assert_eq!(rows[0].counted, Some(true));
    let answers: Vec<String> = conn
        .prepare("SELECT answer FROM submission_attempts ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        answers,
        ["accepted", "duplicate"],
        "every answer is kept in the log"
    );
}
