//! §6.2 step 6: obtaining the key served at `witness.key_url`. https only and no redirects (the
//! transport enforces both: a 3xx comes back as its status), 5 s, fetched on every submission:
//! the real intake stopped caching (witness-pool.md §8.5), so right after a rotation a
//! signature by the old key is refused `key_url_mismatch` here too.

use super::{EmulatorError, Shared};
use crate::net::HttpRequest;
use serde_json::Value;

pub(super) enum KeyOutcome {
    Served(String),
    Unreachable(String),
}

pub(super) async fn served_key(
    shared: &Shared,
    key_url: &str,
) -> Result<KeyOutcome, EmulatorError> {
    Ok(fetch(shared, key_url).await)
}

async fn fetch(shared: &Shared, key_url: &str) -> KeyOutcome {
    let request = HttpRequest::get(key_url, &[("Accept", "application/json")]);
    let timeout = shared.limits.key_fetch_timeout;
    // The transport has its own deadline; this one holds the spec's 5 s whatever it is.
    let Ok(exchange) = tokio::time::timeout(timeout, shared.transport.fetch(&request)).await else {
        return KeyOutcome::Unreachable(format!(
            "key_url fetch timed out after {} ms",
            timeout.as_millis()
        ));
    };
    if let Some(error) = &exchange.transport_error {
        return KeyOutcome::Unreachable(format!("key_url fetch failed: {error}"));
    }
    match exchange.status {
        300..=399 => {
            return KeyOutcome::Unreachable(format!(
                "key_url answered http {} (redirects are not followed)",
                exchange.status
            ));
        }
        200..=299 => {}
        other => {
            return KeyOutcome::Unreachable(format!("key_url answered http {other}"));
        }
    }
    // `Response.json()` decodes UTF-8 leniently and drops a leading BOM; do the same.
    let text = String::from_utf8_lossy(&exchange.body);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let Ok(document) = serde_json::from_str::<Value>(text) else {
        return KeyOutcome::Unreachable("key_url did not serve JSON".to_string());
    };
    match document
        .get("public_key_ed25519_b64")
        .and_then(Value::as_str)
    {
        Some(key) => KeyOutcome::Served(key.to_string()),
        None => KeyOutcome::Unreachable(
            "key_url document has no string public_key_ed25519_b64".to_string(),
        ),
    }
}
