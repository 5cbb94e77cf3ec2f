//! The origin's consent file (spec README §5, §11.6): `https://ORIGIN/.well-known/mcp-conduct.json`.
//!
//! Only an explicit `"listing": "decline"` stops a walk. A missing file, an error, a body that is
//! not a JSON object or that says nothing about listing states nothing, and the origin is walked
//! as configured: the absence of a file is not a refusal. Shared by every face that walks (the
//! CLI, the daemon's gate in `daemon::consent`, the MCP server).

use crate::digest::sha256_hex;
use crate::net::{Exchange, HttpRequest, Transport};
use std::time::Duration;

/// Where the file lives under an origin.
pub const CONSENT_PATH: &str = "/.well-known/mcp-conduct.json";

/// The consent read is the one request a walk adds to the spec's three: a host that accepts
/// connections and never answers costs this, not another full 20 s request deadline.
pub const CONSENT_DEADLINE: Duration = Duration::from_secs(5);

/// What a consent file said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Consent {
    /// `"listing": "decline"`: do not walk. `sha256` of the exact bytes served.
    Declined { sha256: String },
    /// A JSON object that does not decline. `notify`: its `notify` member when that is a
    /// string (§11.5: declaring it asks scheduled measurers to POST a summary there), kept as
    /// written; whether it may be used is the notifier's to judge.
    Silent {
        sha256: String,
        notify: Option<String>,
    },
    /// 404 or 410: there is no file.
    Absent { status: u16 },
    /// Transport failure, another status, or not a JSON object.
    Unreadable { status: u16, why: String },
}

impl Consent {
    pub fn outcome(&self) -> &'static str {
        match self {
            Consent::Declined { .. } => "declined",
            Consent::Silent { .. } => "silent",
            Consent::Absent { .. } => "absent",
            Consent::Unreadable { .. } => "unreadable",
        }
    }
}

/// The consent URL of an origin: the well-known path at the root of its scheme, host and port
/// (RFC 8615), whatever path the walk's `--origin` has (`https://host/agent1` is asked at
/// `https://host/.well-known/mcp-conduct.json`). A text that is not a URL keeps the old form.
pub fn consent_url(origin: &str) -> String {
    match url::Url::parse(origin) {
        Ok(url) if url.has_host() => {
            format!("{}{CONSENT_PATH}", url.origin().ascii_serialization())
        }
        _ => format!("{}{CONSENT_PATH}", origin.trim_end_matches('/')),
    }
}

/// Classify what the origin served.
pub fn classify(ex: &Exchange) -> Consent {
    if let Some(err) = &ex.transport_error {
        return Consent::Unreadable {
            status: 0,
            why: err.clone(),
        };
    }
    match ex.status {
        200 => {}
        404 | 410 => return Consent::Absent { status: ex.status },
        s => {
            return Consent::Unreadable {
                status: s,
                why: format!("HTTP {s}"),
            };
        }
    }
    let sha256 = sha256_hex(&ex.body);
    // Read as the walk reads a card (any shape under the cap, in a compact document).
    match crate::json::read(&ex.body, crate::json::ReadOptions::LENIENT) {
        Ok(doc) if doc.root().is_object() => {
            match doc.root().get("listing").and_then(|l| l.as_str()) {
                Some("decline") => Consent::Declined { sha256 },
                _ => Consent::Silent {
                    sha256,
                    notify: doc
                        .root()
                        .get("notify")
                        .and_then(|n| n.as_str())
                        .map(str::to_string),
                },
            }
        }
        Ok(_) => Consent::Unreadable {
            status: 200,
            why: "not a JSON object".into(),
        },
        Err(e) => Consent::Unreadable {
            status: 200,
            why: format!("not JSON: {e}"),
        },
    }
}

/// Fetch and classify an origin's consent file with the walk's transport rules, within
/// [`CONSENT_DEADLINE`] (or the transport's own deadline when that is shorter).
pub async fn fetch(transport: &Transport, origin: &str) -> Consent {
    let req = HttpRequest::get(consent_url(origin), &[("Accept", "application/json")]);
    match tokio::time::timeout(CONSENT_DEADLINE, transport.fetch(&req)).await {
        Ok(answer) => classify(&answer),
        Err(_) => Consent::Unreadable {
            status: 0,
            why: format!(
                "no answer within {} s (the consent read's own deadline)",
                CONSENT_DEADLINE.as_secs()
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(status: u16, body: &str) -> Exchange {
        let request = HttpRequest::get("https://a.example/x", &[]);
        Exchange::answered(request, status, vec![], body.as_bytes().to_vec(), 1)
    }

    #[test]
    fn only_an_explicit_decline_declines() {
        let body = r#"{"listing": "decline"}"#;
        assert_eq!(
            classify(&ex(200, body)),
            Consent::Declined {
                sha256: sha256_hex(body.as_bytes())
            }
        );
        assert!(matches!(
            classify(&ex(200, r#"{"listing": "allow"}"#)),
            Consent::Silent { .. }
        ));
        assert!(matches!(
            classify(&ex(200, r#"{"listing": ["decline"]}"#)),
            Consent::Silent { .. }
        ));
        assert!(matches!(classify(&ex(200, "{}")), Consent::Silent { .. }));
        let asks = r#"{"notify": "https://hooks.a.example/conduct"}"#;
        assert_eq!(
            classify(&ex(200, asks)),
            Consent::Silent {
                sha256: sha256_hex(asks.as_bytes()),
                notify: Some("https://hooks.a.example/conduct".into())
            }
        );
        // Only a string is a notify URL; anything else states nothing.
        assert!(matches!(
            classify(&ex(200, r#"{"notify": ["https://hooks.a.example/"]}"#)),
            Consent::Silent { notify: None, .. }
        ));
        assert!(matches!(
            classify(&ex(200, "[\"decline\"]")),
            Consent::Unreadable { .. }
        ));
        assert!(matches!(
            classify(&ex(200, "<html>")),
            Consent::Unreadable { .. }
        ));
        assert_eq!(classify(&ex(404, body)), Consent::Absent { status: 404 });
        assert!(matches!(
            classify(&ex(500, body)),
            Consent::Unreadable { status: 500, .. }
        ));
        let failed = Exchange::failure(HttpRequest::get("https://a.example/", &[]), "refused", 1);
        assert!(matches!(
            classify(&failed),
            Consent::Unreadable { status: 0, .. }
        ));
    }

    #[test]
    fn consent_url_strips_trailing_slashes() {
        assert_eq!(
            consent_url("https://a.example//"),
            "https://a.example/.well-known/mcp-conduct.json"
        );
    }

    #[test]
    fn consent_is_read_at_the_root_of_the_origin_whatever_its_path() {
        for (origin, expected) in [
            (
                "https://a.example/agent1",
                "https://a.example/.well-known/mcp-conduct.json",
            ),
            (
                "https://a.example/a/b/",
                "https://a.example/.well-known/mcp-conduct.json",
            ),
            (
                "https://A.example:8443/x?q=1",
                "https://a.example:8443/.well-known/mcp-conduct.json",
            ),
            (
                "https://a.example:443/x",
                "https://a.example/.well-known/mcp-conduct.json",
            ),
        ] {
            assert_eq!(consent_url(origin), expected, "{origin}");
        }
    }
}
