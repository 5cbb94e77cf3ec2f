//! Delivery: the channels (Standard Webhooks, Slack-compatible, ntfy, SMTP) and the task that
//! drains the alert outbox.
//!
//! - [`message`]: what each channel sends and what an answer means, from data alone.
//! - this module: each channel's sender (its secrets read, its transport) putting a message
//!   on the wire.
//! - [`task`]: the [`Deliverer`], the task that drains the outbox and runs the alert timers.
//!
//! The task is the walks' neighbour, never in their way: it has its own store connection, its
//! own transport (https only but for a loopback relay named in `allow_hosts`, the address
//! policy, no redirects, a 10 s deadline over the whole exchange, a 64 KiB answer cap), at most [`CONCURRENCY`] sends at once, and each row is sent by
//! one task of the process at a time. A receiver that hangs, streams a gigabyte, redirects, fails
//! TLS or answers 500 forever costs one slot for at most the deadline per attempt, and its row
//! backs off (30 s · 2^n up to 6 h, never sooner than its `Retry-After`). A row answered 2xx is
//! stored `delivered` and never sent again; a row whose answer was lost (kill -9 mid-request) is
//! sent again with the same id, which receivers dedupe (`webhook-id`, the email's Message-ID).

pub mod message;
pub mod task;

pub use message::{Answer, attempt_of, render_text};
pub use task::{AlertMetrics, DEGRADED_AFTER, Deliverer};

use super::config::{AlertsConfig, Channel, ChannelKind, SmtpTls};
use super::payload::AlertPayload;
use crate::filing::answer::RetryAfter;
use crate::net::{HttpRequest, Transport, TransportConfig};
use std::sync::Arc;
use std::time::Duration;

/// Sends at once, over all channels.
pub const CONCURRENCY: usize = 4;
/// One attempt's deadline: connect, TLS, request, answer.
pub const DEADLINE: Duration = Duration::from_secs(10);
/// The most of a receiver's answer read (the rest is not read: the attempt is a failure).
pub const ANSWER_CAP: usize = 64 * 1024;

/// A channel with its secrets read. `Debug` shows no secret.
pub struct Sender {
    pub channel: Channel,
    url: Option<String>,
    secret: Option<String>,
    webhook: Option<standardwebhooks::Webhook>,
    smtp: Option<Smtp>,
}

/// An email channel's transport and its addresses, parsed once when the sender is built.
struct Smtp {
    transport: lettre::AsyncSmtpTransport<lettre::Tokio1Executor>,
    from: lettre::message::Mailbox,
    to: Vec<lettre::message::Mailbox>,
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Sender({} {}, secrets redacted)",
            self.channel.name,
            self.channel.kind.as_str()
        )
    }
}

/// What delivers alerts: each channel's sender (its secrets read) and the one transport, built
/// from one address policy and one set of trust roots.
pub struct Delivery {
    pub senders: Vec<Arc<Sender>>,
    pub transport: Transport,
}

/// Read each channel's secrets, build its sender and the delivery transport (https, or plain
/// http only to a loopback host named in `allow_hosts`; private addresses only at
/// `allow_hosts`). The error names the channel and what is wrong, never a secret.
pub fn delivery(
    cfg: &AlertsConfig,
    extra_roots: Vec<rustls_pki_types::CertificateDer<'static>>,
) -> Result<Delivery, String> {
    let policy = allow_policy(cfg)?;
    let senders = cfg
        .channels
        .iter()
        .map(|c| {
            sender(c, &policy, &extra_roots)
                .map(Arc::new)
                .map_err(|e| format!("alerts.channel {:?}: {e}", c.name))
        })
        .collect::<Result<_, _>>()?;
    let mut tc = TransportConfig::new(policy);
    tc.plain_http_loopback = true;
    tc.extra_roots = extra_roots;
    tc.deadline = DEADLINE;
    tc.body_cap = ANSWER_CAP;
    let transport = Transport::new(tc)
        .map_err(|e| format!("alerts: cannot build the delivery transport: {e}"))?;
    Ok(Delivery { senders, transport })
}

fn sender(
    c: &Channel,
    policy: &crate::net::NetPolicy,
    extra_roots: &[rustls_pki_types::CertificateDer<'static>],
) -> Result<Sender, String> {
    let url = match (&c.url, &c.url_secret) {
        (Some(u), _) => Some(u.clone()),
        (None, Some(s)) => {
            let u = s.read()?;
            super::config::receiver_url(&u, policy)
                .map_err(|why| format!("the URL read from its file: {why}"))?;
            Some(u)
        }
        (None, None) => None,
    };
    let secret = c.secret.as_ref().map(|s| s.read()).transpose()?;
    let webhook = match (c.kind, &secret) {
        (ChannelKind::Webhook, Some(s)) => Some(
            standardwebhooks::Webhook::new(s)
                .map_err(|e| format!("the signing secret is not whsec_ + base64 ({e})"))?,
        ),
        _ => None,
    };
    let smtp = if c.kind == ChannelKind::Email {
        let mailbox = |key: &str, a: &str| {
            a.parse::<lettre::message::Mailbox>()
                .map_err(|_| format!("{key}: {a:?} is not an email address"))
        };
        Some(Smtp {
            transport: smtp_transport(c, secret.as_deref(), extra_roots)?,
            from: mailbox("from", c.from.as_deref().unwrap_or_default())?,
            to: c
                .to
                .iter()
                .map(|a| mailbox("to", a))
                .collect::<Result<_, _>>()?,
        })
    } else {
        None
    };
    Ok(Sender {
        channel: c.clone(),
        url,
        secret,
        webhook,
        smtp,
    })
}

fn smtp_transport(
    c: &Channel,
    password: Option<&str>,
    extra_roots: &[rustls_pki_types::CertificateDer<'static>],
) -> Result<lettre::AsyncSmtpTransport<lettre::Tokio1Executor>, String> {
    use lettre::transport::smtp::client::{Certificate, CertificateStore, Tls, TlsParameters};
    let host = c.smtp_host.clone().unwrap_or_default();
    let mut tls = TlsParameters::builder(host.clone()).certificate_store(CertificateStore::None);
    for der in crate::net::roots::system_roots()
        .certs
        .iter()
        .chain(extra_roots)
    {
        if let Ok(cert) = Certificate::from_der(der.to_vec()) {
            tls = tls.add_root_certificate(cert);
        }
    }
    let tls = tls.build_rustls().map_err(|e| format!("TLS setup: {e}"))?;
    let mut b = lettre::AsyncSmtpTransport::<lettre::Tokio1Executor>::builder_dangerous(&host)
        .port(c.smtp_port)
        .timeout(Some(DEADLINE))
        .tls(match c.smtp_tls {
            SmtpTls::Starttls => Tls::Required(tls),
            SmtpTls::Implicit => Tls::Wrapper(tls),
        });
    if let (Some(user), Some(pw)) = (&c.username, password) {
        b = b.credentials(lettre::transport::smtp::authentication::Credentials::new(
            user.clone(),
            pw.to_string(),
        ));
    }
    Ok(b.build())
}

/// The address policy of alert deliveries: private addresses only at `allow_hosts`.
fn allow_policy(cfg: &AlertsConfig) -> Result<crate::net::NetPolicy, String> {
    let mut policy = crate::net::NetPolicy::new(true);
    for h in &cfg.allow_hosts {
        policy.allow_host_port(h)?;
    }
    Ok(policy)
}

impl Sender {
    /// Send one payload. Never panics, never waits past [`DEADLINE`] (plus the SMTP dialogue's own
    /// per-command timeouts of the same length).
    pub async fn send(&self, transport: &Transport, p: &AlertPayload) -> Answer {
        match self.channel.kind {
            ChannelKind::Email => self.send_email(transport, p).await,
            _ => self.send_http(transport, p).await,
        }
    }

    fn http_request(&self, p: &AlertPayload) -> Result<HttpRequest, String> {
        let url = self.url.clone().ok_or("no URL")?;
        let pages = self.channel.pages_url.as_deref();
        let mut req = match self.channel.kind {
            ChannelKind::Webhook => {
                let body = message::webhook_body(p, pages)?;
                let hook = self.webhook.as_ref().ok_or("no signing key")?;
                // The receiver checks this against its own clock (5 minutes' tolerance): the
                // time of sending, not of planning.
                let now = chrono::Utc::now().timestamp();
                let sig = hook.sign(&p.id, now, &body).map_err(|e| e.to_string())?;
                HttpRequest::post(
                    url,
                    &[
                        ("content-type", "application/json"),
                        ("webhook-id", &p.id),
                        ("webhook-timestamp", &now.to_string()),
                        ("webhook-signature", &sig),
                    ],
                    body,
                )
            }
            ChannelKind::Slack => HttpRequest::post(
                url,
                &[("content-type", "application/json"), ("webhook-id", &p.id)],
                serde_json::to_vec(&message::slack_message(p, pages)).map_err(|e| e.to_string())?,
            ),
            ChannelKind::Ntfy => {
                let m =
                    message::ntfy_message(p, pages, self.channel.priority, self.secret.as_deref());
                let mut req = HttpRequest::post(url, &[], m.text.into_bytes());
                req.headers = m.headers;
                req
            }
            ChannelKind::Email => return Err("not HTTP".into()),
        };
        req.read = crate::net::BodyRead::Whole;
        Ok(req)
    }

    async fn send_http(&self, transport: &Transport, p: &AlertPayload) -> Answer {
        let req = match self.http_request(p) {
            Ok(r) => r,
            Err(e) => {
                return Answer::Refused {
                    status: None,
                    text: e,
                };
            }
        };
        // The transport's own deadline covers the exchange; this one bounds anything around it.
        let ex =
            match tokio::time::timeout(DEADLINE + Duration::from_secs(2), transport.fetch(&req))
                .await
            {
                Ok(ex) => ex,
                Err(_) => {
                    return Answer::Retry {
                        status: None,
                        text: "deadline passed".into(),
                        retry_after: None,
                    };
                }
            };
        let ra = ex.header("retry-after").and_then(RetryAfter::parse);
        message::classify_http(ex.status, &ex.body, ra, ex.transport_error.as_deref())
    }

    async fn send_email(&self, transport: &Transport, p: &AlertPayload) -> Answer {
        use lettre::AsyncTransport;
        let c = &self.channel;
        let host = c.smtp_host.clone().unwrap_or_default();
        // The address policy: the SMTP server must be public unless named in allow_hosts.
        if let Err(why) = transport
            .check_destination(&format!("https://{host}:{}/", c.smtp_port))
            .await
        {
            return Answer::Retry {
                status: None,
                text: why,
                retry_after: None,
            };
        }
        let (title, text) = message::render_text(p, c.pages_url.as_deref(), None);
        let mut b = lettre::Message::builder()
            .subject(title)
            // The alert id is the Message-ID: a resent alert is the same message.
            .message_id(Some(message::message_id(p)))
            .header(lettre::message::header::ContentType::TEXT_PLAIN);
        let Some(smtp) = &self.smtp else {
            return Answer::Refused {
                status: None,
                text: "no SMTP transport".into(),
            };
        };
        b = b.from(smtp.from.clone());
        for t in &smtp.to {
            b = b.to(t.clone());
        }
        let msg = match b.body(text) {
            Ok(m) => m,
            Err(e) => {
                return Answer::Refused {
                    status: None,
                    text: e.to_string(),
                };
            }
        };
        match tokio::time::timeout(DEADLINE * 3, smtp.transport.send(msg)).await {
            Err(_) => Answer::Retry {
                status: None,
                text: "SMTP deadline passed".into(),
                retry_after: None,
            },
            Ok(Ok(r)) => Answer::Delivered {
                status: i64::from(u16::from(r.code())),
                text: r
                    .message()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .chars()
                    .take(200)
                    .collect(),
            },
            Ok(Err(e)) if e.is_permanent() => Answer::Refused {
                status: e.status().map(|s| i64::from(u16::from(s))),
                text: e.to_string().chars().take(200).collect(),
            },
            Ok(Err(e)) => Answer::Retry {
                status: e.status().map(|s| i64::from(u16::from(s))),
                text: e.to_string().chars().take(200).collect(),
                retry_after: None,
            },
        }
    }
}
