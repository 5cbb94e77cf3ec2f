//! Guard 8 and step 9 of §7.4: the notify URL's host resolved and vetted through the witness's
//! address guard (§4.4: every address, one blocked refuses the host, the connection goes only
//! to the vetted addresses on port 443), then one POST: 10 s, no redirect followed, no retry.
//! The host is named by a stranger (the origin's consent file), hence the witness's guard
//! rather than the walks' transport.

use super::guard::not_sent;
use crate::net::{HttpRequest, NetPolicy, Transport, TransportConfig};
use crate::witness_pool::{measure, request, screen};
use rustls_pki_types::CertificateDer;
use serde_json::{Value, json};
use std::time::Duration;

/// From the start of the POST to the answer's last byte.
pub const POST_DEADLINE: Duration = Duration::from_secs(10);
/// The receiver's answer is not ours to keep: little of it is read.
const ANSWER_CAP_BYTES: usize = 64 * 1024;

/// The guarded client that sends notifications, with what guards 1–7 need.
#[derive(Clone)]
pub struct Notifier {
    transport: Transport,
    pub settings: super::Settings,
}

impl Notifier {
    /// `extra_roots`: the config's `extra_ca` (tests' loopback CAs).
    pub fn new(
        settings: super::Settings,
        extra_roots: Vec<CertificateDer<'static>>,
    ) -> Result<Notifier, crate::net::TransportSetupError> {
        let mut config = TransportConfig::new(NetPolicy::new(settings.allow_private_network));
        config.extra_roots = extra_roots;
        config.deadline = POST_DEADLINE;
        config.body_cap = ANSWER_CAP_BYTES;
        // Under allow_private_network (tests only) the guard admits every address and port.
        config.address_guard = Some(screen::GUARD);
        Ok(Notifier {
            transport: Transport::new(config)?,
            settings,
        })
    }

    /// Guard 8, then step 9: the final `notify_status` of an attempt.
    pub async fn send(&self, host: &str, url: &str, body: Vec<u8>) -> Value {
        let allow_private = self.settings.allow_private_network;
        if !allow_private {
            let resolution = match measure::resolve(host).await {
                Ok(addresses) => request::Resolution::Addresses(addresses),
                Err(code) => request::Resolution::Failed { code },
            };
            if let Err(decline) = request::judge_resolution(host, &resolution, false) {
                return not_sent(&format!("refused: {}", decline.why));
            }
        }
        // Resolved and vetted again, once, by the session that connects: the POST goes to
        // these addresses only (no lookup between the check and the connection).
        let session = self.transport.session();
        if let Err(why) = session.prepare(url).await {
            let why = why.strip_prefix("refused: ").unwrap_or(&why).to_string();
            let why = if why.starts_with(host) {
                why
            } else {
                format!("{host} {why}")
            };
            return not_sent(&format!("refused: {why}"));
        }
        let post = HttpRequest::post(url, &[("content-type", "application/json")], body);
        let exchange = session.fetch(&post).await;
        // An answer whose body was then cut off (over the cap, late) was still an answer.
        match exchange.heard_status() {
            0 => {
                let why = exchange.transport_error.as_deref().unwrap_or("no answer");
                not_sent(&format!("failed: {}", measure::short_error(why)))
            }
            status => json!({"sent": true, "status": status}),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::{HttpsServer, Resp, SandboxCa, handler};
    use std::sync::{Arc, Mutex};

    fn notifier(ca: &SandboxCa, allow_private: bool) -> Notifier {
        let settings = super::super::Settings {
            allow_private_network: allow_private,
            ..Default::default()
        };
        Notifier::new(settings, vec![ca.cert_der()]).unwrap()
    }

    #[tokio::test]
    async fn one_post_any_status_is_sent_and_no_redirect_is_followed() {
        let ca = SandboxCa::generate();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let server = HttpsServer::start(
            &ca,
            handler(move |req| {
                log.lock().unwrap().push((
                    req.method.clone(),
                    req.path.clone(),
                    req.header("content-type").map(str::to_string),
                    req.body.clone(),
                ));
                Resp::empty(302).with_header("location", "/elsewhere")
            }),
        )
        .await
        .unwrap();
        let url = format!("https://localhost:{}/hook", server.addr().port());
        let status = notifier(&ca, true)
            .send("localhost", &url, b"{\"event\":\"measured\"}".to_vec())
            .await;
        assert_eq!(status, json!({"sent": true, "status": 302}));
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "one POST, the redirect not followed");
        assert_eq!(seen[0].0, "POST");
        assert_eq!(seen[0].1, "/hook");
        assert_eq!(seen[0].2.as_deref(), Some("application/json"));
        assert_eq!(seen[0].3, b"{\"event\":\"measured\"}");
    }

    #[tokio::test]
    async fn a_transport_failure_is_failed_with_a_short_text() {
        let ca = SandboxCa::generate();
        // A port nobody listens on: bound, then released.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("https://localhost:{port}/hook");
        let status = notifier(&ca, true)
            .send("localhost", &url, b"{}".to_vec())
            .await;
        assert_eq!(
            status,
            json!({"sent": false, "reason": "failed: connection failed"})
        );
    }

    #[tokio::test]
    async fn the_address_guard_refuses_a_name_inside() {
        let ca = SandboxCa::generate();
        // `localhost` resolves to loopback: refused before any connection, with the spec's why.
        let status = notifier(&ca, false)
            .send("localhost", "https://localhost/hook", b"{}".to_vec())
            .await;
        let reason = status["reason"].as_str().unwrap();
        assert_eq!(status["sent"], false);
        assert!(
            reason.starts_with("refused: localhost resolves to a blocked address "),
            "{reason}"
        );
        let nowhere = notifier(&ca, false)
            .send(
                "nothing-here.invalid",
                "https://nothing-here.invalid/hook",
                b"{}".to_vec(),
            )
            .await;
        let reason = nowhere["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("refused: nothing-here.invalid does not resolve: "),
            "{reason}"
        );
    }
}
