//! The I/O of one measurement (§3.1, §4.4): the surfaces of a target fetched concurrently
//! through the witness's guard, and the resolution that §4.1 step 5 judges.
//!
//! Every fetch here is named by a stranger (the requester's endpoint, the target card's `jku`),
//! so every one goes through [`crate::net::AddressGuard`] with [`super::screen::is_blocked`]:
//! all the host's addresses resolved, the host refused when any one is blocked, the connection
//! made to those vetted addresses only, https on port 443, no redirect followed, 15 s and
//! 1 MiB per fetch. `--allow-private-network` (tests only) lifts the address and port rules.

use super::surfaces::{self, Fetched, Surface};
use crate::net::{HttpRequest, NetPolicy, Session, Transport, TransportConfig};
use rustls_pki_types::CertificateDer;
use serde_json::{Map, Value};
use std::net::IpAddr;
use std::time::Duration;

/// What every pool witness sends, so that witnesses look alike to a target (ref).
pub const USER_AGENT: &str = "nenrin-drift-witness/0.2";
/// From the start of one fetch to its last body byte (ref).
pub const FETCH_DEADLINE: Duration = Duration::from_secs(15);
/// The whole answer is sent within this, so a requester's 30 s is never passed (ours).
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(25);
/// A body longer than this is not read further (ours).
pub const BODY_CAP_BYTES: usize = 1_048_576;

/// The guarded HTTP client of a witness.
#[derive(Clone)]
pub struct Measurer {
    transport: Transport,
    allow_private: bool,
}

impl Measurer {
    /// `extra_roots`: `--ca-cert` (tests' loopback CAs). `allow_private`: tests only (§4.5).
    pub fn new(
        allow_private: bool,
        extra_roots: Vec<CertificateDer<'static>>,
    ) -> Result<Measurer, crate::net::TransportSetupError> {
        let mut config = TransportConfig::new(NetPolicy::new(allow_private));
        config.extra_roots = extra_roots;
        config.deadline = FETCH_DEADLINE;
        config.body_cap = BODY_CAP_BYTES;
        config.user_agent = USER_AGENT.to_string();
        config.address_guard = Some(super::screen::GUARD);
        Ok(Measurer {
            transport: Transport::new(config)?,
            allow_private,
        })
    }

    /// The guarded client itself, for the reads a reciprocal request makes (`super::caller`).
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Whether private networks are open (tests): the name screen and §4.1 step 5 are skipped.
    pub fn allows_private(&self) -> bool {
        self.allow_private
    }

    /// §3.1: every surface of `plan` fetched at once under `target` (the endpoint with its
    /// trailing `/` removed; the path is appended as is), observed (§3.3), all within
    /// [`ANSWER_DEADLINE`]: a surface unfinished then is `{"error": "timeout"}`. One session:
    /// the target's host is resolved and vetted once, and every surface connects to those
    /// addresses.
    pub async fn measure(&self, target: &str, plan: &[&'static Surface]) -> Map<String, Value> {
        let until = tokio::time::Instant::now() + ANSWER_DEADLINE;
        let session = self.transport.session();
        let prepared = tokio::time::timeout_at(until, session.prepare(target)).await;
        let unreachable = match prepared {
            Ok(Ok(())) => None,
            Ok(Err(why)) => Some(surfaces::error_object(&short_error(&why))),
            Err(_) => Some(surfaces::error_object("timeout")),
        };
        let session = &session;
        let each = plan.iter().map(|surface| {
            let unreachable = unreachable.clone();
            async move {
                let observed = match unreachable {
                    Some(error) => error,
                    None => tokio::time::timeout_at(until, surface_in(session, target, surface))
                        .await
                        .unwrap_or_else(|_| surfaces::error_object("timeout")),
                };
                (surface.name.to_string(), observed)
            }
        });
        futures_util::future::join_all(each)
            .await
            .into_iter()
            .collect()
    }
}

/// One guarded GET of `url` in `session`: an answer (any status, a redirect included, not
/// followed), or why there was none as the short text of an error object (§3.4).
/// `accept_json` adds `accept: application/json` (only the conduct spec surface asks, §3.1).
async fn fetch_in(session: &Session, url: &str, accept_json: bool) -> Fetched {
    let headers: &[(&str, &str)] = if accept_json {
        &[("accept", "application/json")]
    } else {
        &[]
    };
    let exchange = session.fetch(&HttpRequest::get(url, headers)).await;
    match exchange.transport_error {
        None => Fetched::Answer {
            status: exchange.status,
            body: exchange.body,
        },
        Some(text) => Fetched::Failed(short_error(&text)),
    }
}

/// One surface's observed object; the card's signatures need their `jku` sets fetched
/// through the same guard before they can be judged.
async fn surface_in(session: &Session, target: &str, surface: &Surface) -> Value {
    let accept_json = surface.name == "ext.conduct-v1.spec";
    let url = format!("{target}{}", surface.path);
    let (status, body) = match fetch_in(session, &url, accept_json).await {
        Fetched::Answer { status, body } => (status, body),
        Fetched::Failed(why) => return surfaces::error_object(&why),
    };
    if surface.name != "agent-card.signature" {
        return surfaces::observe(surface.name, status, &body)
            .unwrap_or_else(|| surfaces::error_object("not a surface this witness measures"));
    }
    let jkus = surfaces::agent_card_jkus(&body);
    let sets = jkus
        .iter()
        .map(|jku| async move { (jku.clone(), fetch_in(session, jku, false).await) });
    let fetched = futures_util::future::join_all(sets).await;
    surfaces::agent_card_signature(status, &body, &fetched)
}

/// A transport's message reduced to a short text without addresses (§3.4): the transport
/// names the host and what it resolved to, which must not travel into a signed observation.
pub fn short_error(text: &str) -> String {
    let said = |needle: &str| text.contains(needle);
    let short = if said("timed out") {
        "timeout"
    } else if said("too large") {
        "body over 1048576 bytes"
    } else if said("blocked address") || said("only port") {
        "refused by the address guard"
    } else if said("cannot resolve") || said("resolves to no address") {
        "does not resolve"
    } else if said("refused: only https") || said("not a URL") {
        "not an https URL"
    } else if said("certificate") || said("tls") || said("TLS") {
        "tls error"
    } else if said("reset") || said("closed") || said("connect") {
        "connection failed"
    } else {
        "fetch failed"
    };
    short.to_string()
}

/// How a host name resolved (§4.1 step 5): every address, or the resolver's error code
/// (`ENOTFOUND`, `EAI_AGAIN`, `EAI_FAIL`, as a Node resolver names them; the why is free text).
pub async fn resolve(host: &str) -> Result<Vec<IpAddr>, String> {
    match tokio::time::timeout(FETCH_DEADLINE, tokio::net::lookup_host((host, 443))).await {
        Err(_) => Err("ETIMEOUT".into()),
        Ok(Err(e)) => Err(resolver_code(&e.to_string()).into()),
        Ok(Ok(addrs)) => {
            let mut ips: Vec<IpAddr> = addrs.map(|a| a.ip()).collect();
            ips.dedup();
            Ok(ips)
        }
    }
}

fn resolver_code(text: &str) -> &'static str {
    if text.contains("Temporary failure") || text.contains("try again") {
        "EAI_AGAIN"
    } else if text.contains("not known") || text.contains("No address") || text.contains("nodename")
    {
        "ENOTFOUND"
    } else {
        "EAI_FAIL"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_texts_are_short_and_never_carry_an_address() {
        for (transport_says, short) in [
            (
                "timed out: no complete answer within 15 s (the deadline covers connect, headers and body)",
                "timeout",
            ),
            (
                "response body too large: more than the 1048576-byte cap",
                "body over 1048576 bytes",
            ),
            (
                "refused: inside.example resolves to a blocked address 10.0.0.7",
                "refused by the address guard",
            ),
            (
                "cannot resolve nowhere.example: failed to lookup",
                "does not resolve",
            ),
            (
                "error sending request for url (https://a.example/x): client error (Connect): tcp connect error: Connection refused (os error 111)",
                "connection failed",
            ),
        ] {
            let got = short_error(transport_says);
            assert_eq!(got, short, "{transport_says}");
            assert!(!got.contains("10.0.0.7") && !got.contains("a.example"));
        }
    }

    #[tokio::test]
    async fn a_name_that_does_not_resolve_gives_a_resolver_code() {
        // `.invalid` never resolves (RFC 6761), without any network.
        let code = resolve("nothing-here.invalid").await.unwrap_err();
        assert!(
            ["ENOTFOUND", "EAI_AGAIN", "EAI_FAIL"].contains(&code.as_str()),
            "{code}"
        );
    }
}
