//! The filing state machine, table-tested (some cases classify real exchanges first).

use super::*;
use crate::net::{Exchange, HttpRequest};
use serde_json::{Value, json};

const SHA: &str = "ab";

fn at(t: &str) -> DateTime<Utc> {
    t.parse().unwrap()
}

fn exchange(status: u16, body: &[u8], headers: &[(&str, &str)]) -> Exchange {
    let headers = headers.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    let request = HttpRequest::get("https://i.example/witness", &[]);
    Exchange::answered(request, status, headers.collect(), body.to_vec(), 1)
}

fn json_answer(status: u16, body: Value, headers: &[(&str, &str)]) -> Exchange {
    exchange(status, &serde_json::to_vec(&body).unwrap(), headers)
}

#[test]
fn every_value_has_one_text_form_that_reads_back() {
    fn check<T: Copy + PartialEq + fmt::Debug + fmt::Display + FromStr<Err = UnknownText>>(
        all: &[T],
        as_str: fn(T) -> &'static str,
    ) {
        let mut seen = std::collections::HashSet::new();
        for &v in all {
            assert!(seen.insert(as_str(v)), "{v:?}: text used twice");
            assert_eq!(v.to_string(), as_str(v));
            assert_eq!(as_str(v).parse::<T>(), Ok(v));
        }
        let err = "Queued ".parse::<T>().unwrap_err();
        assert!(err.to_string().contains("\"Queued \" is not a"), "{err}");
    }
    check(SubmissionState::ALL, SubmissionState::as_str);
    check(AnswerKind::ALL, AnswerKind::as_str);
    check(Outcome::ALL, Outcome::as_str);
    assert_eq!(SubmissionState::ALL.len(), 6);
    assert_eq!(AnswerKind::ALL.len(), 9);
    assert_eq!(Outcome::ALL.len(), 10);
}

#[test]
fn the_store_reads_back_what_it_wrote_and_names_a_stranger_text() {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    for &s in SubmissionState::ALL {
        let back: SubmissionState = conn.query_row("SELECT ?1", [s], |r| r.get(0)).unwrap();
        assert_eq!(back, s);
    }
    let err = conn
        .query_row("SELECT 'posted'", [], |r| r.get::<_, AnswerKind>(0))
        .unwrap_err();
    assert!(
        err.to_string().contains("\"posted\" is not a AnswerKind"),
        "{err}"
    );
}

/// One row of the lane table: a row as stored, the clock, our count today, the step.
struct Case {
    state: SubmissionState,
    next: Option<&'static str>,
    lane: Lane,
    looked_up: bool,
    now: &'static str,
    usage: (u32, u32),
    step: Step,
}

#[test]
fn next_step_table_with_lane_edges_across_utc_midnight() {
    use SubmissionState::*;
    let domain = || Lane::Domain("w.example".into());
    let open_at = |t: &str| Step::Defer(at(t));
    let midnight = "2026-12-01T00:00:00Z";
    let case = |state, next, lane, now, usage, step| Case {
        state,
        next,
        lane,
        looked_up: false,
        now,
        usage,
        step,
    };
    let cases = [
        // A fresh row, nothing used: send.
        case(
            Queued,
            None,
            Lane::Address,
            "2026-11-30T12:00:00Z",
            (0, 0),
            Step::Send,
        ),
        // The address lane's fifth record is the last: the sixth waits for midnight.
        case(
            Queued,
            None,
            Lane::Address,
            "2026-11-30T23:59:59Z",
            (4, 4),
            Step::Send,
        ),
        case(
            Queued,
            None,
            Lane::Address,
            "2026-11-30T23:59:59Z",
            (5, 5),
            open_at(midnight),
        ),
        // A second before the next day the deferred row is not due; at midnight it is,
        // and the new day's count (kept by filed_day) starts from nothing.
        case(
            Queued,
            Some(midnight),
            Lane::Address,
            "2026-11-30T23:59:59Z",
            (5, 5),
            Step::NotDue,
        ),
        case(
            Queued,
            Some(midnight),
            Lane::Address,
            midnight,
            (0, 0),
            Step::Send,
        ),
        // Full again on the new day: deferred to the following midnight, not the old one.
        case(
            Queued,
            Some(midnight),
            Lane::Address,
            midnight,
            (5, 5),
            open_at("2026-12-02T00:00:00Z"),
        ),
        // The domain lane takes fifty, whatever the address lane did.
        case(
            Queued,
            None,
            domain(),
            "2026-11-30T23:00:00Z",
            (49, 49),
            Step::Send,
        ),
        case(
            Queued,
            None,
            domain(),
            "2026-11-30T23:00:00Z",
            (50, 50),
            open_at(midnight),
        ),
        // The intake's day is full across lanes: no lane has room.
        case(
            Queued,
            None,
            domain(),
            "2026-11-30T23:00:00Z",
            (500, 0),
            open_at(midnight),
        ),
        case(
            Queued,
            None,
            Lane::Address,
            "2026-11-30T23:00:00Z",
            (499, 0),
            Step::Send,
        ),
        // Retry times: due at the second, not before; an unreadable one is due.
        case(
            Queued,
            Some("2026-11-30T12:00:30Z"),
            Lane::Address,
            "2026-11-30T12:00:29Z",
            (0, 0),
            Step::NotDue,
        ),
        case(
            Queued,
            Some("2026-11-30T12:00:30Z"),
            Lane::Address,
            "2026-11-30T12:00:30Z",
            (0, 0),
            Step::Send,
        ),
        case(
            Queued,
            Some("not a time"),
            Lane::Address,
            "2026-11-30T12:00:00Z",
            (0, 0),
            Step::Send,
        ),
        // An interrupted attempt is looked up first, even with the lane full.
        case(
            Sending,
            None,
            Lane::Address,
            "2026-11-30T12:00:00Z",
            (5, 5),
            Step::LookUp,
        ),
        // A lost answer's row waits its backoff, then is looked up (never sent blind),
        // at any lane level.
        case(
            Sending,
            Some("2026-11-30T12:00:30Z"),
            Lane::Address,
            "2026-11-30T12:00:29Z",
            (0, 0),
            Step::NotDue,
        ),
        case(
            Sending,
            Some("2026-11-30T12:00:30Z"),
            Lane::Address,
            "2026-11-30T12:00:30Z",
            (0, 0),
            Step::LookUp,
        ),
        case(
            Sending,
            Some("2026-11-30T12:00:30Z"),
            Lane::Address,
            "2026-11-30T23:59:59Z",
            (500, 5),
            Step::LookUp,
        ),
        case(
            Sending,
            Some("not a time"),
            Lane::Address,
            "2026-11-30T12:00:00Z",
            (0, 0),
            Step::LookUp,
        ),
        // Settled rows are never sent again.
        case(
            Filed,
            None,
            Lane::Address,
            "2026-11-30T12:00:00Z",
            (0, 0),
            Step::NotDue,
        ),
        case(
            Refused,
            None,
            Lane::Address,
            "2026-11-30T12:00:00Z",
            (0, 0),
            Step::NotDue,
        ),
        case(
            KeptLocal,
            None,
            Lane::Address,
            "2026-11-30T12:00:00Z",
            (0, 0),
            Step::NotDue,
        ),
        case(
            HostOffline,
            None,
            Lane::Address,
            "2026-11-30T12:00:00Z",
            (0, 0),
            Step::NotDue,
        ),
    ];
    // Looked up and not found: then the lane decides.
    let looked_up = [
        Case {
            looked_up: true,
            ..case(
                Sending,
                None,
                Lane::Address,
                "2026-11-30T12:00:00Z",
                (0, 0),
                Step::Send,
            )
        },
        Case {
            looked_up: true,
            ..case(
                Sending,
                None,
                Lane::Address,
                "2026-11-30T23:59:59Z",
                (5, 5),
                open_at(midnight),
            )
        },
    ];
    for (i, c) in cases.iter().chain(&looked_up).enumerate() {
        let row = Row {
            state: c.state,
            next_attempt_at: c.next,
            lane: &c.lane,
            looked_up: c.looked_up,
        };
        let usage = Usage {
            global: c.usage.0,
            lane: c.usage.1,
        };
        assert_eq!(
            next_step(&row, at(c.now), &Limits::default(), usage),
            c.step,
            "case {i}: {:?} next {:?} lane {:?} at {} usage {:?}",
            c.state,
            c.next,
            c.lane,
            c.now,
            c.usage
        );
    }
}

#[test]
fn stated_limits_move_the_lane_edges() {
    let limits = Limits {
        daily_per_ip: 0,
        ..Limits::default()
    };
    let row = Row {
        state: SubmissionState::Queued,
        next_attempt_at: None,
        lane: &Lane::Address,
        looked_up: false,
    };
    let now = at("2026-11-30T00:00:00Z");
    assert_eq!(
        next_step(&row, now, &limits, Usage::default()),
        Step::Defer(at("2026-12-01T00:00:00Z")),
        "an intake that takes no address-lane records: never sent, waits a day at a time"
    );
}

/// What the row should come to after an answer.
#[derive(Debug)]
enum Then {
    /// Answered, stored or refused: settled, with the answer's kind.
    Settled(SubmissionState, AnswerKind),
    /// Answered, not stored: queued again with this kind, retried after exactly this many
    /// seconds.
    RetryIn(AnswerKind, i64),
    /// Unknown: left `sending`, looked up (never resent blind) after this many seconds.
    LookUpIn(i64),
}

/// Every answer of the hostile-intake corpus (tests/hostile_intake.rs) and of §6.2, as
/// [`crate::witness::intake::classify`] reads it, which of the three outcomes it is, and
/// what [`classify`] and [`next_step`] make of the row.
#[test]
fn classify_table_over_the_hostile_intake_corpus() {
    use AnswerKind as K;
    use SubmissionState as S;
    use Then::*;
    let other = "f".repeat(64);
    let hostile = format!("\u{1b}]0;pwned\u{7}\u{1b}[2J{}", "A".repeat(10_000));
    let failed = |why: &str| Exchange::failure(HttpRequest::get("https://i/", &[]), why, 1);
    let corpus: Vec<(&str, Exchange, Then)> = vec![
        (
            "accepted, counted",
            json_answer(
                201,
                json!({"sha": SHA, "status": "pending", "counted": true}),
                &[],
            ),
            Settled(S::Filed, K::Accepted),
        ),
        (
            "accepted, not counted",
            json_answer(
                201,
                json!({"sha": SHA, "status": "pending", "counted": false, "count_reason": "same day"}),
                &[],
            ),
            Settled(S::Filed, K::Accepted),
        ),
        (
            "dedup",
            json_answer(
                200,
                json!({"sha": SHA, "status": "pending", "dedup": true}),
                &[],
            ),
            Settled(S::Filed, K::Duplicate),
        ),
        (
            "dedup, anchored",
            json_answer(
                200,
                json!({"sha": SHA, "status": "anchored", "dedup": true}),
                &[],
            ),
            Settled(S::Filed, K::Duplicate),
        ),
        // A complete status line with a body that does not read: the intake may have
        // stored it.
        (
            "acceptance not JSON",
            exchange(201, b"OK", &[]),
            LookUpIn(30),
        ),
        (
            "acceptance naming another record",
            json_answer(201, json!({"sha": other, "status": "pending"}), &[]),
            LookUpIn(30),
        ),
        (
            "dedup naming another record",
            json_answer(200, json!({"sha": other, "dedup": true}), &[]),
            LookUpIn(30),
        ),
        (
            "acceptance naming no record",
            json_answer(201, json!({"status": "pending"}), &[]),
            LookUpIn(30),
        ),
        (
            "redirect",
            exchange(
                307,
                b"",
                &[("location", "https://elsewhere.example/witness")],
            ),
            RetryIn(K::Retry, 30),
        ),
        (
            "429 global cap",
            json_answer(
                429,
                json!({"error": "daily_global_cap_reached", "cap": 500}),
                &[],
            ),
            RetryIn(K::LaneFull, 12 * 3600),
        ),
        (
            "429 per-ip cap",
            json_answer(
                429,
                json!({"error": "daily_per_ip_cap_reached", "cap": 5}),
                &[],
            ),
            RetryIn(K::LaneFull, 12 * 3600),
        ),
        (
            "429 per-domain cap",
            json_answer(
                429,
                json!({"error": "daily_per_domain_cap_reached", "cap": 50}),
                &[],
            ),
            RetryIn(K::LaneFull, 12 * 3600),
        ),
        (
            "422 with terminal escapes",
            json_answer(
                422,
                json!({"error": hostile, "reason_code": "schema\u{1b}[31m"}),
                &[],
            ),
            Settled(S::Refused, K::Refused),
        ),
        (
            "422 signature_invalid",
            json_answer(
                422,
                json!({"error": "signature_invalid", "reason_code": "signature_invalid"}),
                &[],
            ),
            Settled(S::Refused, K::Refused),
        ),
        (
            "413",
            json_answer(413, json!({"error": "too_large"}), &[]),
            Settled(S::Refused, K::Refused),
        ),
        (
            "400",
            json_answer(400, json!({"error": "bad_request"}), &[]),
            Settled(S::Refused, K::Refused),
        ),
        (
            "404, unexpected",
            exchange(404, b"", &[]),
            Settled(S::Refused, K::Refused),
        ),
        (
            "503 key_url_unreachable",
            json_answer(
                503,
                json!({"error": "key_url_unreachable"}),
                &[("retry-after", "120")],
            ),
            RetryIn(K::Retry, 120),
        ),
        (
            "503 Retry-After 9e15",
            json_answer(
                503,
                json!({"error": "busy"}),
                &[("Retry-After", "9000000000000000")],
            ),
            RetryIn(K::Retry, 86_400),
        ),
        (
            "503 Retry-After u64::MAX",
            json_answer(
                503,
                json!({"error": "busy"}),
                &[("Retry-After", "18446744073709551615")],
            ),
            RetryIn(K::Retry, 86_400),
        ),
        (
            "503 Retry-After ten years",
            json_answer(
                503,
                json!({"error": "busy"}),
                &[("Retry-After", "315360000")],
            ),
            RetryIn(K::Retry, 86_400),
        ),
        // A 500 may follow the store's write; a gateway's 502/504 may follow the intake's.
        (
            "500 without Retry-After",
            exchange(500, b"oops", &[]),
            LookUpIn(30),
        ),
        (
            "502 from a gateway",
            exchange(502, b"bad gateway", &[]),
            LookUpIn(30),
        ),
        (
            "504 with Retry-After",
            exchange(504, b"", &[("retry-after", "90")]),
            LookUpIn(90),
        ),
        // No complete answer: whatever failed, the request may have left.
        (
            "connection refused",
            failed("connection refused"),
            LookUpIn(30),
        ),
        (
            "reset after the request left",
            failed("error sending request: connection reset by peer"),
            LookUpIn(30),
        ),
        (
            "answer dropped (closed without a status line)",
            failed("error sending request: connection closed before message completed"),
            LookUpIn(30),
        ),
        (
            "timeout",
            failed(
                "timed out: no complete answer within 20 s (the deadline covers connect, headers and body)",
            ),
            LookUpIn(30),
        ),
        (
            "truncated body",
            failed("error decoding response body: end of file before message length reached"),
            LookUpIn(30),
        ),
        (
            "TLS error after the handshake",
            failed("error sending request: received fatal alert: DecryptError"),
            LookUpIn(30),
        ),
        (
            "oversized answer",
            failed("response body too large (over 1048576 bytes)"),
            LookUpIn(30),
        ),
    ];
    let now = at("2026-11-30T12:00:00Z");
    let lane = Lane::Address;
    for (what, ex, then) in corpus {
        let answer = crate::witness::intake::classify(&ex, SHA);
        let t = classify(&answer, 1, now, 0.5);
        let expected_outcome = match &then {
            Settled(S::Filed, _) => AttemptOutcome::AnsweredStored,
            Settled(..) | RetryIn(..) => AttemptOutcome::AnsweredNotStored,
            LookUpIn(_) => AttemptOutcome::Unknown,
        };
        assert_eq!(answer.outcome(), expected_outcome, "{what}: {answer:?}");
        match then {
            Settled(state, kind) => {
                assert_eq!((t.state, t.answer), (state, kind), "{what}: {t:?}");
                assert_eq!(t.retry_at, None, "{what}: settled rows have no retry time");
                let filed = state == S::Filed;
                assert_eq!(t.filed_day.is_some(), filed, "{what}");
                if filed {
                    assert_eq!(t.filed_day.as_deref(), Some("2026-11-30"));
                }
            }
            RetryIn(kind, secs) => {
                assert_eq!((t.state, t.answer), (S::Queued, kind), "{what}: {t:?}");
                assert_eq!(
                    t.retry_at,
                    Some(now + chrono::Duration::seconds(secs)),
                    "{what}"
                );
                assert!(t.error.is_some(), "{what}: a queued row says why");
                assert_eq!(t.filed_day, None, "{what}");
            }
            LookUpIn(secs) => {
                assert_eq!(
                    (t.state, t.answer),
                    (S::Sending, K::Unknown),
                    "{what}: {t:?}"
                );
                let retry_at = t.retry_at.expect("a lookup time");
                assert_eq!(retry_at, now + chrono::Duration::seconds(secs), "{what}");
                assert_eq!(t.filed_day, None, "{what}");
                // The row as stored: not due before its time, then a lookup whatever the
                // lane says (the same step a kill leaves), never a send.
                let next = crate::clock::walked_at(retry_at);
                let row = Row {
                    state: t.state,
                    next_attempt_at: Some(&next),
                    lane: &lane,
                    looked_up: false,
                };
                let limits = Limits::default();
                let before = retry_at - chrono::Duration::seconds(1);
                assert_eq!(
                    next_step(&row, before, &limits, Usage::default()),
                    Step::NotDue,
                    "{what}"
                );
                for usage in [(0, 0), (5, 5), (500, 5)] {
                    let usage = Usage {
                        global: usage.0,
                        lane: usage.1,
                    };
                    assert_eq!(
                        next_step(&row, retry_at, &limits, usage),
                        Step::LookUp,
                        "{what}"
                    );
                }
                let f = Facts {
                    state: t.state,
                    answer: Some(t.answer),
                    counted: None,
                    count_reason: None,
                    reason_code: None,
                    error: t.error.as_deref(),
                    next_attempt_at: Some(&next),
                };
                let s = f.summary();
                assert_eq!(s.outcome, Outcome::AwaitingLookup, "{what}");
                assert!(
                    s.short
                        .starts_with("waiting for a lookup (no complete answer"),
                    "{what}: {}",
                    s.short
                );
                assert!(s.text.contains(&next), "{what}: {}", s.text);
            }
        }
        let e = t.error.as_deref();
        if let Some(e) = e {
            assert!(!e.chars().any(char::is_control), "{what}: {e:?}");
            assert!(e.chars().count() <= 300, "{what}");
        }
    }
}

/// A request the transport knows never reached the intake (no connection: refused,
/// unreachable, TLS handshake failed, or our own address rules) was not stored: it is
/// retried as before, without a lookup.
#[test]
fn a_request_that_never_connected_is_retried_not_looked_up() {
    use crate::net::Reached;
    let now = at("2026-11-30T12:00:00Z");
    for why in [
        "error sending request: client error (Connect): tcp connect error: Connection refused (os error 111)",
        "refused: 10.0.0.1 is a private address",
        "cannot resolve intake.example: failed to lookup address information",
    ] {
        let ex = Exchange::failure(HttpRequest::get("https://i/", &[]), why, 1);
        let never = crate::witness::intake::classify_reached(&ex, SHA, Reached::Never);
        assert_eq!(never.outcome(), AttemptOutcome::AnsweredNotStored, "{why}");
        let t = classify(&never, 1, now, 0.5);
        assert_eq!(
            (t.state, t.answer),
            (SubmissionState::Queued, AnswerKind::Retry)
        );
        assert_eq!(t.retry_at, Some(now + chrono::Duration::seconds(30)));
        let maybe = crate::witness::intake::classify_reached(&ex, SHA, Reached::Maybe);
        assert_eq!(maybe.outcome(), AttemptOutcome::Unknown, "{why}");
    }
    // A complete answer is what it says, whatever the flag.
    let answered = json_answer(201, json!({"sha": SHA, "status": "pending"}), &[]);
    assert_eq!(
        crate::witness::intake::classify_reached(&answered, SHA, Reached::Never).kind(),
        AnswerKind::Accepted
    );
}

const CANONICAL: &str = r#"{"schema":"jidec-path-v1","witness":{"name":"w"}}"#;

fn lookup_sha() -> String {
    crate::digest::sha256_hex(CANONICAL.as_bytes())
}

/// The stored object of ledger.md §2.3 for [`CANONICAL`], with `bytes` as its
/// `record_canonical` and `sha` as its sha.
fn stored(sha: &str, bytes: &str) -> Value {
    json!({"sha": sha, "record_canonical": bytes, "signed": false,
        "public_key_ed25519_b64": null, "signed_domain": null, "key_url": null, "mode": "full",
        "v11": true, "disclaimer_present": true, "endpoint": "https://a.example/a2a",
        "counted": false, "count_reason": "same witness, same endpoint, same day; stored, not counted",
        "purpose": "a2a-conduct-walk-v1: https://a.example/a2a", "witness_name": "w",
        "vantage": "v", "submitted_at": "2026-11-29T23:59:59.120Z"})
}

fn pending(sha: &str, bytes: &str) -> Value {
    let mut v = stored(sha, bytes);
    v["status"] = json!("pending");
    v["responses"] = json!([]);
    v
}

fn anchored(sha: &str, record: Value) -> Value {
    json!({"status": "anchored", "sha": sha, "ledger_entry": 7,
        "url": "https://i.example/ledger/7", "record": record, "responses": []})
}

/// What the row should come to after a lookup.
#[derive(Debug)]
enum Looked {
    Found(&'static str),
    NotFound,
    /// Asked again after this many seconds; the error says this.
    Again(i64, &'static str),
}

/// Every answer a `GET <intake>/<sha256>` can get (ledger.md §2 and the hostile-intake
/// corpus): only the same sha256 with the same bytes is "filed", only a 404 is "send",
/// anything else is asked again after a backoff.
#[test]
fn lookup_table_over_every_answer_kind() {
    use Looked::*;
    let sha = lookup_sha();
    let upper = sha.to_uppercase();
    let other = "f".repeat(64);
    let failed = |why: &str| Exchange::failure(HttpRequest::get("https://i/", &[]), why, 1);
    let hostile = format!("\u{1b}]0;pwned\u{7}{}", "A".repeat(10_000));
    let corpus: Vec<(&str, Exchange, Looked)> = vec![
        (
            "pending, same bytes",
            json_answer(200, pending(&sha, CANONICAL), &[]),
            Found("pending"),
        ),
        (
            "pending, upper-case sha",
            json_answer(200, pending(&upper, CANONICAL), &[]),
            Found("pending"),
        ),
        (
            "anchored, same bytes",
            json_answer(200, anchored(&sha, stored(&sha, CANONICAL)), &[]),
            Found("anchored"),
        ),
        (
            "404 as the intake writes it",
            json_answer(404, json!({"error": "not found", "sha": sha}), &[]),
            NotFound,
        ),
        (
            "404 of a path no route claims",
            json_answer(
                404,
                json!({"error": "not found", "routes": ["/ledger"]}),
                &[],
            ),
            NotFound,
        ),
        ("404, empty", exchange(404, b"", &[]), NotFound),
        (
            "404 naming another record",
            json_answer(404, json!({"error": "not found", "sha": other}), &[]),
            Again(30, "not this record's"),
        ),
        (
            "pending with other bytes under this sha",
            json_answer(200, pending(&sha, "{}"), &[]),
            Again(30, "other bytes"),
        ),
        (
            "pending naming another record",
            json_answer(200, pending(&other, CANONICAL), &[]),
            Again(30, "not this record's"),
        ),
        (
            "anchored, its record naming another",
            json_answer(200, anchored(&sha, stored(&other, CANONICAL)), &[]),
            Again(30, "not this record's"),
        ),
        (
            "anchored naming another, its record this one",
            json_answer(200, anchored(&other, stored(&sha, CANONICAL)), &[]),
            Again(30, "not this record's"),
        ),
        (
            "anchored with other bytes",
            json_answer(200, anchored(&sha, stored(&sha, "{ }")), &[]),
            Again(30, "other bytes"),
        ),
        (
            "anchored, the record copy missing",
            json_answer(200, anchored(&sha, Value::Null), &[]),
            Again(30, "no record bytes"),
        ),
        (
            "200, not JSON",
            exchange(200, b"<html>ok</html>", &[]),
            Again(30, "not JSON"),
        ),
        (
            "200, no status",
            json_answer(200, json!({"sha": sha}), &[]),
            Again(30, "no \"status\""),
        ),
        (
            "200, unknown status",
            json_answer(200, json!({"sha": sha, "status": "filed"}), &[]),
            Again(30, "unknown status"),
        ),
        (
            "200 pending, fields missing",
            json_answer(200, json!({"status": "pending", "sha": sha}), &[]),
            Again(30, "http 200"),
        ),
        (
            "200, a dedup-shaped answer without the bytes",
            json_answer(
                200,
                json!({"sha": sha, "status": "pending", "dedup": true}),
                &[],
            ),
            Again(30, "http 200"),
        ),
        (
            "200 with a not-found body",
            json_answer(200, json!({"error": "not found", "sha": sha}), &[]),
            Again(30, "http 200"),
        ),
        (
            "oversized 200 under the transport's cap",
            exchange(
                200,
                &vec![b' '; crate::witness::intake::MAX_LOOKUP_BODY_BYTES + 1],
                &[],
            ),
            Again(30, "lookup cap"),
        ),
        (
            "503 with Retry-After",
            json_answer(503, json!({"error": "busy"}), &[("retry-after", "120")]),
            Again(120, "http 503: busy"),
        ),
        (
            "429",
            json_answer(429, json!({"error": "daily_global_cap_reached"}), &[]),
            Again(30, "http 429"),
        ),
        ("500", exchange(500, b"oops", &[]), Again(30, "http 500")),
        (
            "redirect",
            exchange(302, b"", &[("location", "https://elsewhere.example/")]),
            Again(30, "http 302"),
        ),
        ("410", exchange(410, b"", &[]), Again(30, "http 410")),
        (
            "hostile error text",
            json_answer(500, json!({"error": hostile}), &[]),
            Again(30, "\\u{1b}]0;pwned"),
        ),
        (
            "connection refused",
            failed("connection refused"),
            Again(30, "connection refused"),
        ),
        (
            "timeout (a slow intake)",
            failed("timed out: no complete answer within 20 s"),
            Again(30, "timed out"),
        ),
        (
            "oversized over the transport's cap",
            failed("response body too large (over 1048576 bytes)"),
            Again(30, "too large"),
        ),
        (
            "reset",
            failed("connection reset by peer"),
            Again(30, "reset"),
        ),
    ];
    let now = at("2026-11-30T12:00:00Z");
    for (what, ex, then) in corpus {
        let lookup = crate::witness::intake::classify_lookup(&ex, &sha, CANONICAL.as_bytes());
        let after = after_lookup(&lookup, 1, now, 0.5);
        match then {
            Found(status) => {
                assert!(
                    matches!(&lookup, Lookup::Found { status: s, .. } if s == status),
                    "{what}: {lookup:?}"
                );
                let AfterLookup::Filed(t) = after else {
                    panic!("{what}: {after:?}")
                };
                assert_eq!(
                    (t.state, t.answer),
                    (SubmissionState::Filed, AnswerKind::Found)
                );
                // The intake's own facts: its day (the lane it used), its count.
                assert_eq!(t.filed_day.as_deref(), Some("2026-11-29"), "{what}");
                assert_eq!(t.counted, Some(false), "{what}");
                assert_eq!(t.retry_at, None);
            }
            NotFound => {
                assert_eq!(lookup, Lookup::NotFound, "{what}");
                assert_eq!(after, AfterLookup::Send, "{what}");
            }
            Again(secs, says) => {
                let AfterLookup::AskAgain(t) = after else {
                    panic!("{what}: {after:?}")
                };
                assert_eq!(
                    (t.state, t.answer),
                    (SubmissionState::Sending, AnswerKind::LookupFailed),
                    "{what}"
                );
                assert_eq!(
                    t.retry_at,
                    Some(now + chrono::Duration::seconds(secs)),
                    "{what}"
                );
                let e = t.error.unwrap();
                assert!(e.contains(says), "{what}: {e}");
                assert!(!e.chars().any(char::is_control), "{what}: {e:?}");
                assert!(e.chars().count() <= 300, "{what}: {}", e.chars().count());
                assert_eq!(t.filed_day, None);
            }
        }
    }
}

#[test]
fn a_found_record_without_a_readable_day_uses_the_lane_of_today() {
    let sha = lookup_sha();
    let mut body = pending(&sha, CANONICAL);
    body["submitted_at"] = json!("yesterday");
    body["counted"] = json!(true);
    let now = at("2026-11-30T12:00:00Z");
    let lookup = crate::witness::intake::classify_lookup(
        &json_answer(200, body, &[]),
        &sha,
        CANONICAL.as_bytes(),
    );
    let AfterLookup::Filed(t) = after_lookup(&lookup, 1, now, 0.5) else {
        panic!("{lookup:?}")
    };
    assert_eq!(
        (t.filed_day.as_deref(), t.counted),
        (Some("2026-11-30"), Some(true))
    );
    assert!(t.answer.uses_the_lane());
}

/// A lookup that keeps failing backs off like a POST that keeps failing, capped at six
/// hours, and a row that was looked up and not found is sent (or deferred by its lane).
#[test]
fn failed_lookups_back_off_and_a_404_goes_on_to_the_lane() {
    let now = at("2026-11-30T12:00:00Z");
    let failed = Lookup::Failed {
        status: 0,
        error: "lookup: connection refused".into(),
        retry_after: None,
    };
    let wait = |tries| match after_lookup(&failed, tries, now, 0.5) {
        AfterLookup::AskAgain(t) => (t.retry_at.unwrap() - now).num_seconds(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        (wait(1), wait(2), wait(3), wait(50)),
        (30, 60, 120, 6 * 3600)
    );
    let row = |looked_up| Row {
        state: SubmissionState::Sending,
        next_attempt_at: None,
        lane: &Lane::Address,
        looked_up,
    };
    let full = Usage { global: 5, lane: 5 };
    assert_eq!(
        next_step(&row(false), now, &Limits::default(), full),
        Step::LookUp
    );
    assert_eq!(
        next_step(&row(true), now, &Limits::default(), Usage::default()),
        Step::Send
    );
    assert_eq!(
        next_step(&row(true), now, &Limits::default(), full),
        Step::Defer(at("2026-12-01T00:00:00Z"))
    );
}

#[test]
fn an_acceptance_keeps_its_count_and_a_refusal_its_reason() {
    let now = at("2026-11-30T23:59:59Z");
    let answer = Answer::Accepted {
        sha: SHA.into(),
        counted: false,
        count_reason: Some("same day".into()),
        signed_domain: None,
    };
    let t = classify(&answer, 3, now, 0.0);
    assert_eq!(
        (t.counted, t.count_reason.as_deref(), t.filed_day.as_deref()),
        (Some(false), Some("same day"), Some("2026-11-30")),
        "filed on the intake's day of the answer"
    );
    let refused = Answer::Refused {
        status: 422,
        error: "invalid_witness_record".into(),
        reason_code: Some("path_leaks_tool".into()),
    };
    let t = classify(&refused, 1, now, 0.0);
    assert_eq!(t.reason_code.as_deref(), Some("path_leaks_tool"));
    assert_eq!(t.error.as_deref(), Some("invalid_witness_record"));
}

/// Every form a `Retry-After` comes in (RFC 9110 §10.2.3: delay-seconds or an HTTP-date
/// in any of its three forms), and the strange ones a stranger's intake may send.
#[test]
fn retry_after_table() {
    let now = at("2026-11-30T12:00:00Z");
    // First attempt, jitter 0.5: the backoff alone is 30 s, the floor of every row.
    let cases: &[(&str, i64)] = &[
        ("120", 120),
        (" 120 ", 120),
        ("0", 30),
        ("29", 30),
        ("86400", 86_400),
        ("86401", 86_400),
        ("315360000", 86_400),
        ("18446744073709551615", 86_400),
        ("99999999999999999999999", 86_400),
        ("-5", 30),
        ("1.5", 30),
        ("soon", 30),
        ("", 30),
        ("Mon, 30 Nov 2026 12:10:00 GMT", 600),
        ("Monday, 30-Nov-26 12:10:00 GMT", 600),
        ("Mon Nov 30 12:10:00 2026", 600),
        ("Mon, 30 Nov 2026 13:10:00 +0100", 600),
        ("Mon, 30 Nov 2026 11:00:00 GMT", 30),
        ("Thu, 01 Jan 1970 00:00:00 GMT", 30),
        ("Mon, 01 Dec 2036 00:00:00 GMT", 86_400),
    ];
    for &(value, secs) in cases {
        let ex = json_answer(503, json!({"error": "busy"}), &[("retry-after", value)]);
        let answer = crate::witness::intake::classify(&ex, SHA);
        let t = classify(&answer, 1, now, 0.5);
        assert_eq!(
            t.retry_at,
            Some(now + chrono::Duration::seconds(secs)),
            "Retry-After {value:?}: {answer:?}"
        );
    }
    assert_eq!(
        retry_after_delay(super::answer::RetryAfter::Seconds(u64::MAX), now),
        MAX_RETRY_AFTER
    );
}

#[test]
fn backoff_grows_with_the_attempts_and_stays_within_its_jitter() {
    let now = at("2026-11-30T12:00:00Z");
    let retry = Answer::Retry {
        status: 500,
        error: "http 500".into(),
        retry_after: None,
    };
    let wait = |attempts, jitter| {
        (classify(&retry, attempts, now, jitter).retry_at.unwrap() - now).num_seconds()
    };
    assert_eq!(wait(1, 0.5), 30);
    assert_eq!(wait(2, 0.5), 60);
    assert_eq!(wait(3, 0.5), 120);
    assert_eq!(wait(40, 0.5), 6 * 3600, "capped at six hours");
    assert_eq!(wait(1, 0.0), 24);
    assert!(wait(1, 0.999) <= 36);
    // A late retry near the end of time does not overflow.
    let end = DateTime::<Utc>::MAX_UTC - chrono::Duration::seconds(10);
    assert!(classify(&retry, 1, end, 0.5).retry_at.is_some());
}

#[test]
fn the_pipelines_own_transitions() {
    let now = at("2026-11-30T23:59:59Z");
    let d = Transition::deferred(lanes::next_utc_midnight(now));
    assert_eq!(
        (d.state, d.answer),
        (SubmissionState::Queued, AnswerKind::LaneFull)
    );
    assert_eq!(d.retry_at, Some(at("2026-12-01T00:00:00Z")));
}

#[test]
fn one_summary_for_every_state_and_answer() {
    use AnswerKind as K;
    use SubmissionState as S;
    let facts = |state, answer, counted| Facts {
        state,
        answer,
        counted,
        count_reason: Some("same day"),
        reason_code: Some("path_leaks_tool"),
        error: Some("busy"),
        next_attempt_at: Some("2026-12-01T00:00:00Z"),
    };
    let table = [
        (
            facts(S::Filed, Some(K::Accepted), Some(true)),
            Outcome::FiledCounted,
            "counted",
        ),
        (
            facts(S::Filed, Some(K::Accepted), None),
            Outcome::FiledCounted,
            "counted",
        ),
        (
            facts(S::Filed, Some(K::Accepted), Some(false)),
            Outcome::FiledNotCounted,
            "stored, not counted (same day)",
        ),
        (
            facts(S::Filed, Some(K::Duplicate), None),
            Outcome::Duplicate,
            "duplicate",
        ),
        (
            facts(S::Refused, Some(K::Refused), None),
            Outcome::Refused,
            "refused: path_leaks_tool",
        ),
        (
            facts(S::Refused, None, None),
            Outcome::Refused,
            "refused: path_leaks_tool",
        ),
        (
            facts(S::Queued, Some(K::LaneFull), None),
            Outcome::LaneFull,
            "lane full (waits for the next UTC day)",
        ),
        (
            facts(S::Queued, Some(K::Retry), None),
            Outcome::QueuedForRetry,
            "queued (busy)",
        ),
        (
            facts(S::Sending, Some(K::Retry), None),
            Outcome::AwaitingLookup,
            "waiting for a lookup (sent, no answer recorded (in flight, or the process stopped))",
        ),
        (
            facts(S::Sending, None, None),
            Outcome::AwaitingLookup,
            "waiting for a lookup (sent, no answer recorded (in flight, or the process stopped))",
        ),
        (
            facts(S::Sending, Some(K::Unknown), None),
            Outcome::AwaitingLookup,
            "waiting for a lookup (busy)",
        ),
        (
            facts(S::Sending, Some(K::LookupFailed), None),
            Outcome::AwaitingLookup,
            "waiting for a lookup (busy)",
        ),
        (
            facts(S::Filed, Some(K::Found), Some(true)),
            Outcome::FiledCounted,
            "found at the intake (answer lost)",
        ),
        (
            facts(S::Filed, Some(K::Found), Some(false)),
            Outcome::FiledNotCounted,
            "found at the intake (answer lost)",
        ),
        (
            facts(S::Queued, None, None),
            Outcome::NotSent,
            "queued (busy)",
        ),
        (
            facts(S::KeptLocal, None, None),
            Outcome::KeptLocal,
            "kept local (one counted record per day)",
        ),
        (
            facts(S::HostOffline, None, None),
            Outcome::HostOffline,
            "host offline: not filed",
        ),
    ];
    for (f, outcome, short) in table {
        let s = f.summary();
        assert_eq!((s.outcome, s.short.as_str()), (outcome, short), "{f:?}");
        assert!(!s.text.is_empty());
    }
    let lane_full = facts(S::Queued, Some(K::LaneFull), None).summary();
    assert!(
        lane_full.text.contains("2026-12-01T00:00:00Z"),
        "{}",
        lane_full.text
    );
    let refused = facts(S::Refused, Some(K::Refused), None).summary();
    assert!(
        refused.text.contains("reason_code path_leaks_tool")
            && refused.text.contains("not retried")
    );
}

#[test]
fn settled_states() {
    let settled: Vec<_> = SubmissionState::ALL
        .iter()
        .filter(|s| s.is_settled())
        .map(|s| s.as_str())
        .collect();
    assert_eq!(settled, ["filed", "refused", "kept_local", "host_offline"]);
    assert_eq!(SubmissionState::KeptLocal.words(), "kept local");
}
