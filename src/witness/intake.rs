//! The intake client (spec §5, §6.2, §6.6): file one record, ask whether the intake holds one,
//! and classify each answer. Classifying is pure ([`classify`], [`classify_lookup`]); the two
//! requests are [`submit`] and [`lookup`].

use crate::filing::answer::{Answer, Lookup, RetryAfter};
use crate::filing::lanes::Limits;
use crate::net::{Exchange, HttpRequest, Reached, Transport};
use crate::wire::IntakeSubmission;
use serde_json::Value;

/// Intake text (error, reason_code) kept for a terminal, a log or the store, in characters.
pub const MAX_INTAKE_TEXT_CHARS: usize = 200;

/// A stranger's text made safe to print and store: at most [`MAX_INTAKE_TEXT_CHARS`]
/// characters, control characters (terminal escape codes among them) escaped as `\u{..}`.
pub fn sanitize_text(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == MAX_INTAKE_TEXT_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// An intake's answer as a tree, within the caps of a stranger's document (`json::bounded`).
fn intake_answer(body: &[u8]) -> Result<Value, crate::json::bounded::Refused> {
    crate::json::bounded::lenient(crate::json::bounded::Input::IntakeAnswer, body)
}

/// Classify an intake exchange for the record whose sha256 is `expected_sha`. An acceptance
/// counts only when its body is JSON naming this record's sha256: anything else is recorded as
/// an error and the outcome is unknown (the intake may have stored it), never taken for
/// "filed" and never sent again without asking. A failed exchange is taken to have maybe
/// reached the intake; [`classify_reached`] knows better when the transport does.
pub fn classify(ex: &Exchange, expected_sha: &str) -> Answer {
    classify_reached(ex, expected_sha, Reached::Maybe)
}

/// What arrived of an intake's answer: a complete status line with its headers, and the body
/// as a tree or why it could not be read.
struct Heard<'a> {
    status: u16,
    headers: &'a [(String, String)],
    /// The body, or the words that finish "whose body is …": `not JSON (why)`, `not read (why)`.
    body: Result<Value, String>,
}

impl<'a> Heard<'a> {
    /// The answer's head and body; None when no complete status line arrived (no connection,
    /// a reset or timeout before the head).
    fn of(ex: &'a Exchange) -> Option<Heard<'a>> {
        match (&ex.transport_error, &ex.cut_answer) {
            (None, _) => Some(Heard {
                status: ex.status,
                headers: &ex.response_headers,
                body: intake_answer(&ex.body).map_err(|e| {
                    let why = sanitize_text(&e.to_string());
                    if e.over_cap() {
                        format!("not read ({why})")
                    } else {
                        format!("not JSON ({why})")
                    }
                }),
            }),
            (Some(why), Some(head)) => Some(Heard {
                status: head.status,
                headers: &head.headers,
                body: Err(format!("not read (cut off: {})", sanitize_text(why))),
            }),
            (Some(_), None) => None,
        }
    }

    fn header(&self, name: &str) -> Option<&'a str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn text(&self, key: &str) -> Option<String> {
        let body = self.body.as_ref().ok()?;
        body.get(key).and_then(Value::as_str).map(sanitize_text)
    }

    fn retry_after(&self) -> Option<RetryAfter> {
        self.header("retry-after").and_then(RetryAfter::parse)
    }

    /// The intake's `error` text, else the status and why the body said nothing.
    fn error(&self) -> String {
        self.text("error").unwrap_or_else(|| match &self.body {
            Ok(_) => format!("http {}", self.status),
            Err(why) => format!("http {}: its body is {why}", self.status),
        })
    }

    /// A 2xx that does not name `expected_sha` in a readable body: it may have been stored.
    fn unconfirmed(&self, what: &str) -> Answer {
        let status = self.status;
        let error = match (&self.body, self.text("sha")) {
            (Err(why), _) => {
                format!("http {status}: {what} whose body is {why}; not counted as filed")
            }
            (Ok(_), Some(sha)) => format!(
                "http {status}: {what} naming sha256 {sha}, not this record's; not counted as filed"
            ),
            (Ok(_), None) => {
                format!("http {status}: {what} naming no sha256; not counted as filed")
            }
        };
        Answer::Unknown {
            status,
            error,
            retry_after: None,
        }
    }
}

/// [`classify`] with what the transport knows of a failed exchange: a request that never
/// reached the intake (no connection) was certainly not stored, and is sent again as usual.
///
/// An answer is its status line (issue 42): once a complete status line arrived, it decides
/// the class even when the body is over the cap, not JSON or cut off; the body only refines
/// the reason (and says why it could not be read). Unknown is left for attempts with no
/// complete status line and for acceptances that cannot confirm this record's sha256.
pub fn classify_reached(ex: &Exchange, expected_sha: &str, reached: Reached) -> Answer {
    let Some(heard) = Heard::of(ex) else {
        let error = sanitize_text(ex.transport_error.as_deref().unwrap_or("no answer"));
        return match reached {
            Reached::Never => Answer::Retry {
                status: 0,
                error,
                retry_after: None,
            },
            // Connected, then failed: the request may have been sent (and stored) before it did.
            Reached::Maybe => Answer::Unknown {
                status: 0,
                error,
                retry_after: None,
            },
        };
    };
    let names_this_record = || heard.text("sha").is_some_and(|sha| sha == expected_sha);
    let dedup = heard
        .body
        .as_ref()
        .is_ok_and(|b| b.get("dedup") == Some(&Value::Bool(true)));
    match heard.status {
        200 if dedup => {
            if !names_this_record() {
                return heard.unconfirmed("a dedup answer");
            }
            Answer::Duplicate {
                sha: expected_sha.to_string(),
                status: heard.text("status").unwrap_or_default(),
            }
        }
        200 | 201 => {
            if !names_this_record() {
                return heard.unconfirmed("an acceptance");
            }
            let body = heard.body.as_ref().ok();
            Answer::Accepted {
                sha: expected_sha.to_string(),
                counted: body
                    .and_then(|b| b.get("counted"))
                    .and_then(Value::as_bool)
                    .unwrap_or(true),
                count_reason: heard.text("count_reason"),
                signed_domain: heard.text("signed_domain"),
            }
        }
        // A redirect is not followed, and it says nothing against the record: try again.
        300..=399 => Answer::Retry {
            status: heard.status,
            error: format!(
                "http {}: redirected{} (not followed)",
                heard.status,
                heard
                    .header("location")
                    .map(|l| format!(" to {}", sanitize_text(l)))
                    .unwrap_or_default()
            ),
            retry_after: None,
        },
        429 => Answer::LaneFull {
            error: heard.error(),
            cap: heard
                .body
                .as_ref()
                .ok()
                .and_then(|b| b.get("cap"))
                .and_then(Value::as_u64),
        },
        503 => Answer::Retry {
            status: 503,
            error: heard.error(),
            retry_after: heard.retry_after(),
        },
        // A 500 may come after the store was written, a 502/504 from a gateway that passed
        // the request on: the intake may hold the record.
        s if s >= 500 => Answer::Unknown {
            status: s,
            error: heard.error(),
            retry_after: heard.retry_after(),
        },
        s => Answer::Refused {
            status: s,
            error: heard.error(),
            reason_code: heard.text("reason_code"),
        },
    }
}

/// `POST <intake>` with the submission body (§5); `sha256` is the record's identity, which an
/// acceptance must name.
pub async fn submit(
    transport: &Transport,
    intake_url: &str,
    body: &IntakeSubmission,
    sha256: &str,
) -> (Answer, Exchange) {
    let bytes = serde_json::to_vec(body).expect("submission serialises");
    let request = HttpRequest::post(
        intake_url,
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
        ],
        bytes,
    );
    let (ex, reached) = transport.fetch_noting_reach(&request).await;
    (classify_reached(&ex, sha256, reached), ex)
}

/// Largest lookup answer read as one: a record of the intake's 65,536 UTF-16 units is at most
/// 196,608 UTF-8 bytes, twice that JSON-escaped, plus the stored object's other fields and the
/// replies list. The transport's own cap and deadline bound the read itself.
pub const MAX_LOOKUP_BODY_BYTES: usize = 512 * 1024;

/// Classify a `GET <intake>/<sha256>` exchange for the record `sha256` whose exact bytes are
/// `canonical`. Only an answer that carries the same sha256 and the same bytes says "filed";
/// only a 404 says "not there".
pub fn classify_lookup(ex: &Exchange, sha256: &str, canonical: &[u8]) -> Lookup {
    use crate::ledger::wire::WitnessAnswer;
    let failed = |error: String| Lookup::Failed {
        status: ex.status,
        error: format!("lookup: {error}"),
        retry_after: ex.header("retry-after").and_then(RetryAfter::parse),
    };
    if let Some(t) = &ex.transport_error {
        return failed(sanitize_text(t));
    }
    if ex.body.len() > MAX_LOOKUP_BODY_BYTES {
        return failed(format!(
            "http {}: answer of {} bytes, over the {MAX_LOOKUP_BODY_BYTES}-byte lookup cap",
            ex.status,
            ex.body.len()
        ));
    }
    let names_another = |sha: &str| !sha.eq_ignore_ascii_case(sha256);
    match ex.status {
        404 => {
            // A 404 is the one "not there"; one that names another record says nothing of this.
            let named = intake_answer(&ex.body)
                .ok()
                .and_then(|v| v.get("sha").and_then(Value::as_str).map(str::to_string));
            match named {
                Some(sha) if names_another(&sha) => failed(format!(
                    "http 404 naming sha256 {}, not this record's",
                    sanitize_text(&sha)
                )),
                _ => Lookup::NotFound,
            }
        }
        200 => {
            let answer = match WitnessAnswer::parse(200, &ex.body) {
                Ok(a) => a,
                Err(e) => return failed(format!("http 200: {}", sanitize_text(&e.to_string()))),
            };
            let (status, top_sha, record) = match answer {
                WitnessAnswer::Pending { record, .. } => {
                    ("pending", record.sha.clone(), Some(record))
                }
                WitnessAnswer::Anchored { sha, record, .. } => ("anchored", sha, record),
                WitnessAnswer::NotFound { .. } => {
                    return failed("http 200 with a not-found body".into());
                }
            };
            let Some(record) = record else {
                return failed(format!(
                    "http 200 {status}, but the answer carries no record bytes to compare"
                ));
            };
            if names_another(&top_sha) || names_another(&record.sha) {
                return failed(format!(
                    "http 200 naming sha256 {}, not this record's",
                    sanitize_text(if names_another(&top_sha) {
                        &top_sha
                    } else {
                        &record.sha
                    })
                ));
            }
            if record.record_canonical.as_bytes() != canonical {
                return failed(format!(
                    "http 200 {status} for this sha256 with other bytes than the record's; not taken as filed"
                ));
            }
            Lookup::Found {
                status: status.to_string(),
                counted: record.counted,
                count_reason: record.count_reason.as_deref().map(sanitize_text),
                submitted_day: record
                    .submitted_at
                    .as_deref()
                    .and_then(|t| t.get(..10))
                    .filter(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").is_ok())
                    .map(str::to_string),
            }
        }
        s => {
            let body = intake_answer(&ex.body).ok();
            let said = body
                .as_ref()
                .and_then(|b| b.get("error"))
                .and_then(Value::as_str)
                .map(|e| format!(": {}", sanitize_text(e)))
                .unwrap_or_default();
            failed(format!("http {s}{said}"))
        }
    }
}

/// `GET <intake>/<sha256>` (§6.6): whether the intake holds this record, classified by
/// [`classify_lookup`] against its exact bytes.
pub async fn lookup(
    transport: &Transport,
    intake_url: &str,
    sha256: &str,
    canonical: &[u8],
) -> (Lookup, Exchange) {
    let url = format!("{}/{sha256}", intake_url.trim_end_matches('/'));
    let ex = transport
        .fetch(&HttpRequest::get(url, &[("Accept", "application/json")]))
        .await;
    (classify_lookup(&ex, sha256, canonical), ex)
}

/// What `GET <intake>` found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum IntakeProbe {
    /// Nothing answered (a transport error): this host cannot reach the intake now.
    Unreachable,
    /// Something answered; the limits it states, when it states them (200 with a
    /// self-description).
    Answered(Option<Limits>),
}

/// `GET <intake>`: whether it answers, and the limits it states.
pub async fn probe(transport: &Transport, intake_url: &str) -> IntakeProbe {
    let ex = transport
        .fetch(&HttpRequest::get(
            intake_url,
            &[("Accept", "application/json")],
        ))
        .await;
    if ex.status == 0 {
        return IntakeProbe::Unreachable;
    }
    let stated = (ex.status == 200)
        .then(|| intake_answer(&ex.body).ok())
        .flatten()
        .and_then(|v| Limits::from_self_description(&v));
    IntakeProbe::Answered(stated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filing::AnswerKind;
    use crate::filing::answer::MAX_RETRY_AFTER;
    use serde_json::json;
    use std::time::Duration;

    fn ex(status: u16, body: Value, headers: Vec<(&str, &str)>) -> Exchange {
        let headers = headers.into_iter().map(|(k, v)| (k.into(), v.into()));
        let request = HttpRequest::get("https://i/witness", &[]);
        let body = serde_json::to_vec(&body).unwrap();
        Exchange::answered(request, status, headers.collect(), body, 1)
    }

    #[test]
    fn every_answer_class() {
        let a = classify(
            &ex(
                201,
                json!({"sha": "ab", "status": "pending", "counted": false, "count_reason": "same witness, same endpoint, same day; stored, not counted"}),
                vec![],
            ),
            "ab",
        );
        assert!(
            matches!(a, Answer::Accepted { counted: false, ref count_reason, .. } if count_reason.as_deref().unwrap().starts_with("same witness"))
        );
        assert_eq!(
            classify(
                &ex(
                    200,
                    json!({"sha": "ab", "status": "pending", "dedup": true}),
                    vec![]
                ),
                "ab"
            )
            .kind(),
            AnswerKind::Duplicate
        );
        assert_eq!(
            classify(
                &ex(
                    422,
                    json!({"error": "invalid_witness_record", "reason_code": "path_leaks_tool"}),
                    vec![]
                ),
                "ab"
            ),
            Answer::Refused {
                status: 422,
                error: "invalid_witness_record".into(),
                reason_code: Some("path_leaks_tool".into())
            }
        );
        assert_eq!(
            classify(&ex(413, json!({"error": "too_large"}), vec![]), "ab").kind(),
            AnswerKind::Refused
        );
        assert_eq!(
            classify(
                &ex(
                    429,
                    json!({"error": "daily_per_ip_cap_reached", "cap": 5}),
                    vec![]
                ),
                "ab"
            ),
            Answer::LaneFull {
                error: "daily_per_ip_cap_reached".into(),
                cap: Some(5)
            }
        );
        assert_eq!(
            classify(
                &ex(
                    503,
                    json!({"error": "key_url_unreachable"}),
                    vec![("retry-after", "120")]
                ),
                "ab"
            ),
            Answer::Retry {
                status: 503,
                error: "key_url_unreachable".into(),
                retry_after: Some(RetryAfter::Seconds(120))
            }
        );
        let failed =
            Exchange::failure(HttpRequest::get("https://i/", &[]), "connection refused", 1);
        assert_eq!(
            classify(&failed, "ab"),
            Answer::Unknown {
                status: 0,
                error: "connection refused".into(),
                retry_after: None
            }
        );
        for status in [500, 502, 504] {
            assert_eq!(
                classify(&ex(status, json!({}), vec![]), "ab").kind(),
                AnswerKind::Unknown,
                "{status}: the intake may have stored it before failing"
            );
        }
    }

    #[test]
    fn an_acceptance_that_is_not_json_or_names_another_record_is_not_filed() {
        let raw = |status: u16, body: &[u8]| Exchange {
            body: body.to_vec(),
            ..ex(status, json!(null), vec![])
        };
        for (answer, says) in [
            (raw(201, b"OK"), "not JSON"),
            (
                ex(201, json!({"sha": "cd", "status": "pending"}), vec![]),
                "sha256 cd",
            ),
            (
                ex(200, json!({"sha": "cd", "dedup": true}), vec![]),
                "sha256 cd",
            ),
            (ex(201, json!({"status": "pending"}), vec![]), "no sha256"),
        ] {
            match classify(&answer, "ab") {
                Answer::Unknown { error, .. } => assert!(error.contains(says), "{error}"),
                other => panic!("{says}: {other:?}"),
            }
        }
    }

    /// Issue 42: an answer is its status line. Each hostile intake's shape, with what its
    /// attempt is taken for and what the row must say of the body.
    #[test]
    fn a_complete_status_line_classifies_whatever_the_body_did() {
        use crate::net::AnswerHead;
        let request = || HttpRequest::post("https://i/witness", &[], b"{}".to_vec());
        let cut = |status: u16, headers: &[(&str, &str)], why: &str| {
            let head = AnswerHead {
                status,
                headers: headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            };
            Exchange::cut_off(request(), head, why, 1)
        };
        let raw =
            |status: u16, body: Vec<u8>| Exchange::answered(request(), status, Vec::new(), body, 1);
        let over_cap = "response body too large: 1049600 bytes announced, cap is 1048576 bytes";
        let reset = "error decoding response body: connection reset by peer";
        // Inside the transport's cap, beyond the reader's depth.
        let long_json = [vec![b'['; 100_000], vec![b']'; 100_000]].concat();
        let rows: Vec<(&str, Exchange, AnswerKind, &str)> = vec![
            (
                "400, body over the transport's cap",
                cut(400, &[], over_cap),
                AnswerKind::Refused,
                "its body is not read (cut off: response body too large",
            ),
            (
                "422, body cut off by a reset",
                cut(422, &[], reset),
                AnswerKind::Refused,
                "connection reset by peer",
            ),
            (
                "413, body not JSON",
                raw(413, b"<html>too large</html>".to_vec()),
                AnswerKind::Refused,
                "http 413: its body is not JSON",
            ),
            (
                "400, JSON nested too deep",
                raw(400, long_json.clone()),
                AnswerKind::Refused,
                "http 400: its body is not JSON (",
            ),
            (
                "429, body cut off",
                cut(429, &[], reset),
                AnswerKind::LaneFull,
                "http 429: its body is not read",
            ),
            (
                "503, body cut off",
                cut(503, &[("retry-after", "30")], reset),
                AnswerKind::Retry,
                "http 503: its body is not read",
            ),
            (
                "302, body cut off",
                cut(302, &[("location", "https://x/")], reset),
                AnswerKind::Retry,
                "redirected to https://x/",
            ),
            (
                "201, body cut off",
                cut(201, &[], reset),
                AnswerKind::Unknown,
                "an acceptance whose body is not read (cut off:",
            ),
            (
                "200, body over the cap",
                cut(200, &[], over_cap),
                AnswerKind::Unknown,
                "whose body is not read",
            ),
            (
                "201, JSON nested too deep",
                raw(201, long_json),
                AnswerKind::Unknown,
                "an acceptance whose body is not JSON (",
            ),
            (
                "500, body cut off",
                cut(500, &[], reset),
                AnswerKind::Unknown,
                "http 500: its body is not read",
            ),
            (
                "reset before the status line",
                Exchange::failure(request(), reset, 1),
                AnswerKind::Unknown,
                reset,
            ),
        ];
        for (shape, exchange, kind, says) in rows {
            let answer = classify(&exchange, "ab");
            assert_eq!(answer.kind(), kind, "{shape}: {answer:?}");
            let text = match &answer {
                Answer::Refused { error, .. }
                | Answer::LaneFull { error, .. }
                | Answer::Retry { error, .. }
                | Answer::Unknown { error, .. } => error.clone(),
                other => panic!("{shape}: {other:?}"),
            };
            assert!(text.contains(says), "{shape}: {text:?} lacks {says:?}");
            assert!(text.chars().count() < 600, "{shape}: {text:?}");
        }
        // The head's headers still count: a 503's Retry-After, whatever the body did.
        assert!(matches!(
            classify(&cut(503, &[("retry-after", "30")], reset), "ab"),
            Answer::Retry {
                retry_after: Some(RetryAfter::Seconds(30)),
                ..
            }
        ));
        // With no status line, a request that never left is sent again; one that may have is asked.
        let never = Exchange::failure(request(), "connection refused", 1);
        assert_eq!(
            classify_reached(&never, "ab", Reached::Never).kind(),
            AnswerKind::Retry
        );
    }

    #[test]
    fn retry_after_is_clamped_and_dates_in_the_past_mean_now() {
        let now: chrono::DateTime<chrono::Utc> = "2026-12-01T00:00:00Z".parse().unwrap();
        let with = |v: &str| {
            let answer = classify(&ex(503, json!({}), vec![("retry-after", v)]), "ab");
            let Answer::Retry { retry_after, .. } = answer else {
                panic!("{answer:?}")
            };
            retry_after.map(|ra| crate::filing::retry_after_delay(ra, now))
        };
        assert_eq!(with("315360000"), Some(MAX_RETRY_AFTER), "ten years");
        assert_eq!(with("18446744073709551615"), Some(MAX_RETRY_AFTER));
        assert_eq!(with("-5"), None);
        assert_eq!(with("Mon, 30 Nov 2026 00:00:00 GMT"), Some(Duration::ZERO));
        assert_eq!(
            with("Tue, 01 Dec 2026 00:01:00 GMT"),
            Some(Duration::from_secs(60))
        );
        assert_eq!(with("Mon, 01 Dec 2036 00:00:00 GMT"), Some(MAX_RETRY_AFTER));
    }

    #[test]
    fn a_redirect_is_retried_not_a_refusal() {
        let a = classify(
            &ex(302, json!({}), vec![("location", "https://elsewhere/")]),
            "ab",
        );
        assert!(
            matches!(&a, Answer::Retry { status: 302, error, .. } if error.contains("https://elsewhere/")),
            "{a:?}"
        );
    }

    #[test]
    fn intake_text_is_truncated_and_its_control_characters_escaped() {
        let hostile = format!("\u{1b}[31mred\u{1b}[0m\r\n{}", "x".repeat(5000));
        let a = classify(
            &ex(
                422,
                json!({"error": hostile, "reason_code": "\u{7}bell"}),
                vec![],
            ),
            "ab",
        );
        let Answer::Refused {
            error, reason_code, ..
        } = a
        else {
            panic!("{a:?}")
        };
        assert!(
            error.starts_with("\\u{1b}[31mred\\u{1b}[0m\\u{d}\\u{a}x"),
            "{error}"
        );
        assert!(!error.chars().any(char::is_control));
        // 200 characters of the original (14 before the x's), then an ellipsis.
        assert_eq!(error.matches('x').count(), MAX_INTAKE_TEXT_CHARS - 14);
        assert!(error.ends_with('…'));
        assert_eq!(reason_code.as_deref(), Some("\\u{7}bell"));
    }
}
