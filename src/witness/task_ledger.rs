//! The task-delegation ledger's client (spec §5.1): one `POST <ledger>/witness/task` of an
//! observation, through the walk's transport (https only, no redirects, the address policy, the
//! deadline and body cap), and what is kept of the answer.

use super::task_bind::{self, USER_AGENT};
use crate::net::{HttpRequest, Transport};
use serde_json::Value;

/// Largest answer kept as JSON; a longer one is kept as its first 500 characters, like an answer
/// that is not JSON (a ledger's answer is a few hundred bytes; a store is not a dump).
pub const MAX_KEPT_JSON_BYTES: usize = 64 * 1024;

/// What became of one POST.
#[derive(Debug, Clone, PartialEq)]
pub enum Sent {
    /// Any HTTP status, with its body as kept.
    Answered { status: u16, answer: Value },
    /// No HTTP answer: the transport's error text.
    NoAnswer(String),
}

/// Send the body (already Python's `json.dumps` of the observation) once.
pub async fn post(transport: &Transport, url: &str, body: &str) -> Sent {
    let request = HttpRequest::post(
        url,
        &[
            ("content-type", "application/json"),
            ("user-agent", USER_AGENT),
        ],
        body.as_bytes().to_vec(),
    );
    let ex = transport.fetch(&request).await;
    if let Some(error) = ex.transport_error {
        return Sent::NoAnswer(error);
    }
    let answer = if ex.body.len() > MAX_KEPT_JSON_BYTES {
        task_bind::raw_answer(&ex.body)
    } else {
        task_bind::kept_answer(&ex.body)
    };
    Sent::Answered {
        status: ex.status,
        answer,
    }
}
