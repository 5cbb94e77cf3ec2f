//! The intake client (spec §5, §6.2): file one record and classify the answer.

use super::lanes::Limits;
use crate::net::{Exchange, HttpRequest, Transport};
use crate::wire::IntakeSubmission;
use serde_json::Value;
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
    /// 503 `key_url_unreachable`, other 5xx, transport errors: try again later.
    Retry {
        status: u16,
        error: String,
        retry_after: Option<Duration>,
    },
}

impl Answer {
    /// Stored and counted name of the answer kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Answer::Accepted { .. } => "accepted",
            Answer::Duplicate { .. } => "duplicate",
            Answer::Refused { .. } => "refused",
            Answer::LaneFull { .. } => "lane_full",
            Answer::Retry { .. } => "retry",
        }
    }
}

/// Classify an intake exchange.
pub fn classify(ex: &Exchange) -> Answer {
    let body: Value = crate::json::parse_lenient(&ex.body).unwrap_or(Value::Null);
    let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_string);
    let error = text("error").unwrap_or_else(|| match &ex.transport_error {
        Some(t) => t.clone(),
        None => format!("http {}", ex.status),
    });
    match ex.status {
        0 => Answer::Retry {
            status: 0,
            error,
            retry_after: None,
        },
        200 if body.get("dedup") == Some(&Value::Bool(true)) => Answer::Duplicate {
            sha: text("sha").unwrap_or_default(),
            status: text("status").unwrap_or_default(),
        },
        200 | 201 => Answer::Accepted {
            sha: text("sha").unwrap_or_default(),
            counted: body.get("counted").and_then(Value::as_bool).unwrap_or(true),
            count_reason: text("count_reason"),
            signed_domain: text("signed_domain"),
        },
        429 => Answer::LaneFull {
            error,
            cap: body.get("cap").and_then(Value::as_u64),
        },
        s if s >= 500 => Answer::Retry {
            status: s,
            error,
            retry_after: retry_after(ex),
        },
        s => Answer::Refused {
            status: s,
            error,
            reason_code: text("reason_code"),
        },
    }
}

fn retry_after(ex: &Exchange) -> Option<Duration> {
    let v = ex.header("retry-after")?.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let secs = (when.timestamp() - chrono::Utc::now().timestamp()).max(0) as u64;
    Some(Duration::from_secs(secs))
}

/// `POST <intake>` with the submission body (§5).
pub async fn submit(
    transport: &Transport,
    intake_url: &str,
    body: &IntakeSubmission,
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
    let ex = transport.fetch(&request).await;
    (classify(&ex), ex)
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
        .then(|| crate::json::parse_lenient(&ex.body).ok())
        .flatten()
        .and_then(|v| Limits::from_self_description(&v));
    IntakeProbe::Answered(stated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ex(status: u16, body: Value, headers: Vec<(&str, &str)>) -> Exchange {
        Exchange {
            request: HttpRequest::get("https://i/witness", &[]),
            status,
            response_headers: headers
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            body: serde_json::to_vec(&body).unwrap(),
            duration_ms: 1,
            transport_error: None,
        }
    }

    #[test]
    fn every_answer_class() {
        let a = classify(&ex(
            201,
            json!({"sha": "ab", "status": "pending", "counted": false, "count_reason": "same witness, same endpoint, same day; stored, not counted"}),
            vec![],
        ));
        assert!(
            matches!(a, Answer::Accepted { counted: false, ref count_reason, .. } if count_reason.as_deref().unwrap().starts_with("same witness"))
        );
        assert_eq!(
            classify(&ex(
                200,
                json!({"sha": "ab", "status": "pending", "dedup": true}),
                vec![]
            ))
            .kind(),
            "duplicate"
        );
        assert_eq!(
            classify(&ex(
                422,
                json!({"error": "invalid_witness_record", "reason_code": "path_leaks_tool"}),
                vec![]
            )),
            Answer::Refused {
                status: 422,
                error: "invalid_witness_record".into(),
                reason_code: Some("path_leaks_tool".into())
            }
        );
        assert_eq!(
            classify(&ex(413, json!({"error": "too_large"}), vec![])).kind(),
            "refused"
        );
        assert_eq!(
            classify(&ex(
                429,
                json!({"error": "daily_per_ip_cap_reached", "cap": 5}),
                vec![]
            )),
            Answer::LaneFull {
                error: "daily_per_ip_cap_reached".into(),
                cap: Some(5)
            }
        );
        assert_eq!(
            classify(&ex(
                503,
                json!({"error": "key_url_unreachable"}),
                vec![("retry-after", "120")]
            )),
            Answer::Retry {
                status: 503,
                error: "key_url_unreachable".into(),
                retry_after: Some(Duration::from_secs(120))
            }
        );
        let failed =
            Exchange::failure(HttpRequest::get("https://i/", &[]), "connection refused", 1);
        assert_eq!(
            classify(&failed),
            Answer::Retry {
                status: 0,
                error: "connection refused".into(),
                retry_after: None
            }
        );
    }
}
