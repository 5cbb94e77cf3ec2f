//! Fetching a card to verify it (`card verify`, `terms verify`, the MCP server's `card_verify`
//! and `terms_verify`): one place for the URL rule and the refusals every face reports.

use crate::net::{HttpRequest, Transport};

/// Where an agent publishes its card (A2A §8.2).
pub const AGENT_CARD_WELL_KNOWN_PATH: &str = "/.well-known/agent-card.json";

/// The URL actually fetched for a card URL: https only, and a bare origin means the
/// well-known card path.
pub fn card_url(raw: &str) -> Result<String, String> {
    let url = url::Url::parse(raw).map_err(|e| format!("{raw:?} is not a URL ({e})"))?;
    if url.scheme() != "https" {
        return Err(format!(
            "{raw:?}: only https:// is fetched, not {}://",
            url.scheme()
        ));
    }
    if url.path() == "/" && url.query().is_none() {
        Ok(format!(
            "{}{AGENT_CARD_WELL_KNOWN_PATH}",
            url.origin().ascii_serialization()
        ))
    } else {
        Ok(raw.to_string())
    }
}

/// GET a card's bytes; anything but a 200 is an error saying what came back.
pub async fn fetch_card(transport: &Transport, url: &str) -> Result<Vec<u8>, String> {
    let ex = transport
        .fetch(&HttpRequest::get(url, &[("Accept", "application/json")]))
        .await;
    if let Some(err) = ex.transport_error {
        return Err(format!("cannot fetch the card at {url}: {err}"));
    }
    if ex.status != 200 {
        return Err(format!(
            "the card at {url} answered http {} (redirects are not followed)",
            ex.status
        ));
    }
    Ok(ex.body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_origin_means_the_well_known_card() {
        assert_eq!(
            card_url("https://a.example").unwrap(),
            "https://a.example/.well-known/agent-card.json"
        );
        assert_eq!(
            card_url("https://a.example/card.json").unwrap(),
            "https://a.example/card.json"
        );
        assert!(card_url("http://a.example").unwrap_err().contains("https"));
        assert!(card_url("not a url").is_err());
    }
}
