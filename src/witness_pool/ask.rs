//! The requester's side (§2.6), as I/O over the pure pieces of [`super::request`]: send one
//! request to a witness's `/a2a`, read what came back, fetch the witness's key document, and
//! judge the observation as a requester does. `witness ask` and `witness selfcheck` use it.

use super::request::{self, Acceptance, KeyDocument, ReplyReading};
use crate::net::{HttpRequest, Transport};
use serde_json::Value;
use std::time::Duration;

/// One request asked of one witness, and everything its answer came to.
#[derive(Debug, Clone)]
pub struct Asked {
    /// The request object sent (its hash is what the observation must answer).
    pub request: Value,
    pub reading: ReplyReading,
    /// Present when an observation came back: the requester's verdict on it.
    pub acceptance: Option<Acceptance>,
}

/// POST the §2.1 envelope of `request` to `a2a_url`, read the reply, and judge any observation
/// with the key document at `key_doc_url` (the observation's own `source.key_url` when None).
pub async fn ask(
    transport: &Transport,
    a2a_url: &str,
    request: Value,
    caller_card: Option<&str>,
    key_doc_url: Option<&str>,
) -> Asked {
    let body = serde_json::to_vec(&request::envelope(&request, caller_card))
        .expect("an envelope serialises");
    let post = HttpRequest::post(a2a_url, &[("content-type", "application/json")], body);
    let deadline = Duration::from_secs(request::ASK_DEADLINE_SECONDS);
    let exchange = match tokio::time::timeout(deadline, transport.fetch(&post)).await {
        Ok(ex) => ex,
        Err(_) => {
            return Asked {
                request,
                reading: ReplyReading::unreachable("no answer within 30 s"),
                acceptance: None,
            };
        }
    };
    let reading = match &exchange.transport_error {
        Some(text) => ReplyReading::unreachable(text),
        None => request::read_reply(exchange.status, &exchange.body),
    };
    let acceptance = match &reading {
        ReplyReading::Observation(observation) => {
            let endpoint = request["endpoint"].as_str().unwrap_or_default();
            let key_url = key_doc_url
                .map(str::to_owned)
                .or_else(|| observation["source"]["key_url"].as_str().map(str::to_owned));
            let document = match &key_url {
                Some(url) => fetch_json(transport, url).await.ok(),
                None => None,
            };
            let key_document = match (&key_url, &document) {
                (None, _) => KeyDocument::NotAsked,
                (Some(_), Some(doc)) => KeyDocument::Fetched(doc),
                (Some(_), None) => KeyDocument::Unreachable,
            };
            Some(request::accept(
                observation,
                endpoint,
                &request,
                key_document,
            ))
        }
        _ => None,
    };
    Asked {
        request,
        reading,
        acceptance,
    }
}

/// JSON served directly: 200, no redirect followed (a 3xx reads as absent, as the pool builder
/// reads it), or why not, naming the URL.
pub async fn fetch_json(transport: &Transport, url: &str) -> Result<Value, String> {
    let exchange = transport
        .fetch(&HttpRequest::get(url, &[("accept", "application/json")]))
        .await;
    if let Some(why) = &exchange.transport_error {
        return Err(format!("{url}: not fetched ({why})"));
    }
    if exchange.status != 200 {
        return Err(format!(
            "{url} answered {} (served directly: 200)",
            exchange.status
        ));
    }
    request::parse_json(&exchange.body).map_err(|_| format!("{url} is not JSON"))
}
