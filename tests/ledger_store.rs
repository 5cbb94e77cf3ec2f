//! Issue 23: a record enters the ledger follower's table in the transaction that marks its
//! submission filed (201 or a dedupe answer), and only then; the ledger tables never touch the
//! records, the outbox rows or the records chain.

mod store_support;

use conduct_walker::filing::{AnswerKind, SubmissionState};
use conduct_walker::store::ledger;
use conduct_walker::store::outbox::{self, AttemptResult, NewSubmission};
use conduct_walker::store::{Store, verify};
use store_support::*;

const INTAKE: &str = "https://intake.example/witness";

fn planned(store: &Store, i: u64) -> (i64, i64, String) {
    let rec = store
        .insert_record(&unsigned(record_bytes(i, true)))
        .unwrap();
    let sub = outbox::insert(
        store.connection(),
        &NewSubmission {
            record_id: rec.row.id,
            intake_url: INTAKE,
            lane: "address",
            identity: "1.2.3.4",
            endpoint: "https://agent.example/a2a",
            state: SubmissionState::Queued,
            next_attempt_at: None,
            last_error: None,
            now: "2026-12-01T13:00:00Z",
        },
    )
    .unwrap();
    (rec.row.id, sub.id, rec.row.sha256)
}

fn answer(state: SubmissionState, answer: AnswerKind, status: u16) -> AttemptResult<'static> {
    AttemptResult {
        state,
        answer,
        status,
        body: "{}",
        error: None,
        reason_code: None,
        counted: Some(true),
        count_reason: None,
        filed_day: Some("2026-12-01"),
        next_attempt_at: None,
    }
}

#[test]
fn accepted_and_duplicate_are_followed_refused_and_retried_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("walker.db")).unwrap();
    let conn = store.connection();
    let (rec_a, a, sha_a) = planned(&store, 1);
    let (_, b, sha_b) = planned(&store, 2);
    let (_, c, _) = planned(&store, 3);
    let (_, d, _) = planned(&store, 4);
    let now = "2026-12-01T13:00:05Z";
    outbox::record_attempt(
        conn,
        a,
        now,
        &answer(SubmissionState::Filed, AnswerKind::Accepted, 201),
    )
    .unwrap();
    outbox::record_attempt(
        conn,
        b,
        now,
        &answer(SubmissionState::Filed, AnswerKind::Duplicate, 200),
    )
    .unwrap();
    outbox::record_attempt(
        conn,
        c,
        now,
        &answer(SubmissionState::Refused, AnswerKind::Refused, 400),
    )
    .unwrap();
    let mut retry = answer(SubmissionState::Queued, AnswerKind::Retry, 503);
    retry.next_attempt_at = Some("2026-12-01T13:01:00Z");
    outbox::record_attempt(conn, d, now, &retry).unwrap();

    let all = ledger::all(conn).unwrap();
    let mut shas: Vec<_> = all.iter().map(|r| r.sha256.clone()).collect();
    shas.sort();
    let mut want = vec![sha_a.clone(), sha_b.clone()];
    want.sort();
    assert_eq!(shas, want);
    let row_a = ledger::for_record(conn, rec_a).unwrap().remove(0);
    assert_eq!(row_a.state, "pending");
    assert_eq!(row_a.intake_url, INTAKE);
    assert_eq!(row_a.filed_at, now);
    // The first read is a few minutes after filing, never at once.
    let first = row_a.next_poll_at.clone().unwrap();
    assert!(
        first.as_str() > "2026-12-01T13:02:00Z" && first.as_str() < "2026-12-01T13:04:00Z",
        "{first}"
    );
    let counts = ledger::intake(conn, INTAKE).unwrap();
    assert_eq!((counts.filed, counts.pending, counts.anchored), (2, 2, 0));

    // A later answer for an accepted row (logged, never overwriting it) does not re-enter it.
    outbox::record_attempt(
        conn,
        a,
        "2026-12-01T14:00:00Z",
        &answer(SubmissionState::Filed, AnswerKind::Duplicate, 200),
    )
    .unwrap();
    assert_eq!(ledger::intake(conn, INTAKE).unwrap().filed, 2);
    assert_eq!(ledger::for_record(conn, rec_a).unwrap()[0].filed_at, now);

    // The ledger tables change nothing `records verify` checks.
    ledger::open_finding(
        conn,
        &ledger::NewFinding {
            intake_url: INTAKE,
            kind: "overdue",
            sha256: Some(&sha_a),
            entry_n: None,
            evidence: serde_json::json!({"since_filed_secs": 1}),
        },
        now,
    )
    .unwrap();
    let report = verify::verify_all(&store, |_, _| {}).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.rows, 4);
}
