//! Delivery: the channels (Standard Webhooks, Slack-compatible, ntfy, SMTP) and the task that
//! drains the alert outbox.
//!
//! The task is the walks' neighbour, never in their way: it has its own store connection, its
//! own transport (https only but for a loopback relay named in `allow_hosts`, the address
//! policy, no redirects, a 10 s deadline over the whole exchange, a 64 KiB answer cap), at most [`CONCURRENCY`] sends at once, and each row is sent by
//! one task of the process at a time. A receiver that hangs, streams a gigabyte, redirects, fails
//! TLS or answers 500 forever costs one slot for at most the deadline per attempt, and its row
//! backs off (30 s · 2^n up to 6 h, never sooner than its `Retry-After`). A row answered 2xx is
//! stored `delivered` and never sent again; a row whose answer was lost (kill -9 mid-request) is
//! sent again with the same id, which receivers dedupe (`webhook-id`, the email's Message-ID).

use super::config::{AlertsConfig, Channel, ChannelKind, SmtpTls};
use super::outbox::{self, AlertRow, Attempt, state};
use super::payload::AlertPayload;
use crate::clock::Clock;
use crate::net::{HttpRequest, Transport, TransportConfig};
use crate::store::{Store, StoreError};
use crate::witness::intake::RetryAfter;
use chrono::{DateTime, Utc};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Sends at once, over all channels.
pub const CONCURRENCY: usize = 4;
/// One attempt's deadline: connect, TLS, request, answer.
pub const DEADLINE: Duration = Duration::from_secs(10);
/// The most of a receiver's answer read (the rest is not read: the attempt is a failure).
pub const ANSWER_CAP: usize = 64 * 1024;
/// How often the deliverer looks for records queued for filing too long.
const QUEUED_EVERY: Duration = Duration::from_secs(60);
/// Consecutive failed attempts of one channel after which `/healthz` says alerting is degraded.
pub const DEGRADED_AFTER: u64 = 3;
/// The most rows one channel's task sends before it lets go of the channel.
const DRAIN_BATCH: usize = 64;

/// Counters kept as the task works (for `/metrics` and `/healthz`; no history is read).
#[derive(Debug, Default)]
pub struct AlertMetrics {
    pub delivered: AtomicU64,
    pub failed_attempts: AtomicU64,
    pub refused: AtomicU64,
    pub in_flight: AtomicU64,
    pub planned_by_timer: AtomicU64,
    /// Per channel: consecutive failed attempts (0 after a delivery).
    pub failing: Mutex<HashMap<String, u64>>,
}

impl AlertMetrics {
    /// Channels failing now (at least [`DEGRADED_AFTER`] attempts in a row).
    pub fn degraded_channels(&self) -> Vec<String> {
        let f = self.failing.lock().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<String> = f
            .iter()
            .filter(|(_, n)| **n >= DEGRADED_AFTER)
            .map(|(k, _)| k.clone())
            .collect();
        v.sort();
        v
    }

    fn note(&self, channel: &str, ok: bool) {
        let mut f = self.failing.lock().unwrap_or_else(|p| p.into_inner());
        let n = f.entry(channel.to_string()).or_default();
        *n = if ok { 0 } else { *n + 1 };
    }

    /// Prometheus text lines.
    pub fn render(&self, out: &mut String) {
        use std::fmt::Write as _;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "# HELP conduct_walker_alerts_delivered_total Alert deliveries a receiver answered 2xx.\n\
             # TYPE conduct_walker_alerts_delivered_total counter\n\
             conduct_walker_alerts_delivered_total {}\n\
             # HELP conduct_walker_alerts_failed_attempts_total Alert delivery attempts that failed (retried with backoff).\n\
             # TYPE conduct_walker_alerts_failed_attempts_total counter\n\
             conduct_walker_alerts_failed_attempts_total {}\n\
             # HELP conduct_walker_alerts_refused_total Alerts a receiver refused (4xx; not retried).\n\
             # TYPE conduct_walker_alerts_refused_total counter\n\
             conduct_walker_alerts_refused_total {}\n\
             # HELP conduct_walker_alerts_in_flight Alert deliveries in progress.\n\
             # TYPE conduct_walker_alerts_in_flight gauge\n\
             conduct_walker_alerts_in_flight {}",
            g(&self.delivered),
            g(&self.failed_attempts),
            g(&self.refused),
            g(&self.in_flight),
        );
        let _ = writeln!(
            out,
            "# HELP conduct_walker_alerts_channel_failing Consecutive failed attempts per alert channel.\n\
             # TYPE conduct_walker_alerts_channel_failing gauge"
        );
        let f = self.failing.lock().unwrap_or_else(|p| p.into_inner());
        let mut names: Vec<_> = f.iter().collect();
        names.sort();
        for (name, n) in names {
            let name = name.replace(['\\', '"', '\n'], "_");
            let _ = writeln!(
                out,
                "conduct_walker_alerts_channel_failing{{channel=\"{name}\"}} {n}"
            );
        }
    }
}

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

/// What one send came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// 2xx (or the SMTP server took the message).
    Delivered { status: i64, text: String },
    /// A failure worth retrying: 3xx, 408, 429, 5xx, transport, SMTP transient.
    Retry {
        status: Option<i64>,
        text: String,
        retry_after: Option<RetryAfter>,
    },
    /// A 4xx (or an SMTP permanent error): not retried.
    Refused { status: Option<i64>, text: String },
}

impl Answer {
    pub fn describe(&self) -> String {
        match self {
            Answer::Delivered { status, text } => format!("delivered ({status} {text})"),
            Answer::Retry { status, text, .. } => match status {
                Some(s) => format!("failed, will retry ({s} {text})"),
                None => format!("failed, will retry ({text})"),
            },
            Answer::Refused { status, text } => match status {
                Some(s) => format!("refused ({s} {text})"),
                None => format!("refused ({text})"),
            },
        }
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
    for der in crate::net::roots::system_roots().iter().chain(extra_roots) {
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

/// A one-line title and a plain-text body for the human channels. `max_chars` bounds the body
/// (Slack's section and ntfy's message are limited): a digest then lists what fits and counts
/// the rest.
pub fn render_text(
    p: &AlertPayload,
    pages_url: Option<&str>,
    max_chars: Option<usize>,
) -> (String, String) {
    use std::fmt::Write as _;
    let d = &p.data;
    let title = super::payload::title(p);
    let mut body = format!("{title}\n");
    // Who it is about, in full: a forwarded alert or a second config still says which agent.
    for (k, v) in [
        ("target", &d.target),
        ("origin", &d.origin),
        ("endpoint", &d.endpoint),
    ] {
        if let Some(v) = v {
            let _ = writeln!(body, "{k}: {v}");
        }
    }
    if let Some(w) = &d.witness {
        let _ = match &w.name {
            Some(n) => writeln!(body, "witness: {n} (store {})", w.id),
            None => writeln!(body, "witness: store {}", w.id),
        };
    }
    for f in &d.assertions_flipped {
        let show = |v: Option<bool>| match v {
            Some(true) => "holds",
            Some(false) => "fails",
            None => "n/a",
        };
        let _ = write!(
            body,
            "- {}: {} -> {} ({})",
            f.name,
            show(f.from),
            show(f.to),
            f.claim
        );
        if let Some(n) = &f.note {
            let _ = write!(body, " [{n}]");
        }
        body.push('\n');
    }
    if let Some(f) = &d.filing {
        if let Some(r) = &f.reason {
            let _ = writeln!(body, "reason: {r}");
        }
        if let Some(a) = f.age_secs {
            let _ = writeln!(body, "queued for {a} s");
        }
        if let (Some(i), Some(l)) = (&f.intake, &f.lane) {
            let _ = writeln!(body, "intake: {i}, lane {l}");
        }
    }
    if let Some(s) = &d.store
        && let Some(w) = &s.why
    {
        let _ = writeln!(body, "store: {w}");
    }
    if let Some(l) = &d.ledger {
        let _ = writeln!(body, "ledger: {}", l.detail);
    }
    if let Some(r) = &d.record {
        match pages_url {
            Some(base) => {
                let _ = writeln!(body, "record: {}", link(base, &r.page));
                let _ = writeln!(body, "raw: {}", link(base, &r.raw));
            }
            None => {
                let _ = writeln!(
                    body,
                    "record: sha256 {} (at {} on the status pages; set this channel's pages_url for links)",
                    r.sha256, r.page
                );
            }
        }
    }
    if let Some(n) = d.changes_since_last_alert.filter(|n| *n > 1) {
        let _ = writeln!(body, "changes since the last alert: {n}");
    }
    if let Some(dg) = &d.digest {
        let _ = writeln!(
            body,
            "{} alert(s) sent on {}, {} held:",
            dg.sent,
            dg.day,
            dg.held.len()
        );
        let room = max_chars.unwrap_or(usize::MAX);
        let mut listed = 0usize;
        for a in &dg.alerts {
            let mut line = format!("- {} {}", a.timestamp, a.summary);
            if let Some(r) = &a.record {
                let _ = match pages_url {
                    Some(base) => write!(line, " {}", link(base, &r.page)),
                    None => write!(line, " record {}", r.sha256),
                };
            }
            let _ = write!(line, " [{}]", a.id);
            line.push('\n');
            // Keep room for the closing lines.
            if body.len() + line.len() + 200 > room {
                break;
            }
            body.push_str(&line);
            listed += 1;
        }
        let unlisted = dg.held.len().saturating_sub(listed);
        if unlisted > 0 {
            let _ = writeln!(
                body,
                "... and {unlisted} more (all in the webhook digest; `conduct-walker alerts list` shows each)"
            );
        }
    }
    let _ = writeln!(body, "alert id: {}", p.id);
    (title, body)
}

fn link(base: &str, path: &str) -> String {
    format!("{}{path}", base.trim_end_matches('/'))
}

fn classify_http(
    status: u16,
    body: &[u8],
    retry_after: Option<RetryAfter>,
    error: Option<&str>,
) -> Answer {
    let text: String = String::from_utf8_lossy(&body[..body.len().min(200)])
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    match (status, error) {
        (0, e) => Answer::Retry {
            status: None,
            text: e.unwrap_or("no answer").to_string(),
            retry_after: None,
        },
        (200..=299, _) => Answer::Delivered {
            status: status.into(),
            text,
        },
        (408 | 429, _) | (500..=599, _) | (300..=399, _) => Answer::Retry {
            status: Some(status.into()),
            text,
            retry_after,
        },
        _ => Answer::Refused {
            status: Some(status.into()),
            text,
        },
    }
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
        let body = serde_json::to_vec(&p.for_channel(pages)).map_err(|e| e.to_string())?;
        let mut req = match self.channel.kind {
            ChannelKind::Webhook => {
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
            ChannelKind::Slack => {
                // A section's text is at most 3000 characters.
                let (title, text) = render_text(p, pages, Some(3000));
                let msg = serde_json::json!({
                    "text": title,
                    "blocks": [
                        {"type": "header", "text": {"type": "plain_text", "text": title.chars().take(150).collect::<String>()}},
                        {"type": "section", "text": {"type": "mrkdwn", "text": text.chars().take(3000).collect::<String>()}},
                        {"type": "context", "elements": [{"type": "mrkdwn", "text": format!("alert id `{}`", p.id)}]}
                    ]
                });
                HttpRequest::post(
                    url,
                    &[("content-type", "application/json"), ("webhook-id", &p.id)],
                    serde_json::to_vec(&msg).map_err(|e| e.to_string())?,
                )
            }
            ChannelKind::Ntfy => {
                // ntfy turns a message over 4096 bytes into an attachment.
                let (title, text) = render_text(p, pages, Some(4000));
                let opened = p.kind.ends_with("opened")
                    || p.kind.ends_with("flapping")
                    || p.kind.ends_with("declined")
                    || p.kind.starts_with("filing")
                    || p.kind == "health.store_degraded";
                let tags = if p.kind.ends_with("resolved")
                    || p.kind.ends_with("allowed")
                    || p.kind.ends_with("recovered")
                    || p.kind.ends_with("stable")
                {
                    "white_check_mark"
                } else if opened {
                    "rotating_light"
                } else {
                    "information_source"
                };
                let priority = if opened { self.channel.priority } else { 3 };
                // Header values must be visible ASCII: titles are cut to that.
                let title: String = title
                    .chars()
                    .map(|c| {
                        if c.is_ascii() && !c.is_control() {
                            c
                        } else {
                            '?'
                        }
                    })
                    .collect();
                let mut h: Vec<(String, String)> = vec![
                    ("title".into(), title),
                    ("tags".into(), tags.into()),
                    ("priority".into(), priority.to_string()),
                    ("webhook-id".into(), p.id.clone()),
                ];
                if let (Some(base), Some(r)) = (pages, &p.data.record) {
                    h.push(("click".into(), link(base, &r.page)));
                }
                if let Some(tok) = &self.secret {
                    h.push(("authorization".into(), format!("Bearer {tok}")));
                }
                let mut req = HttpRequest::post(url, &[], text.into_bytes());
                req.headers = h;
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
        classify_http(ex.status, &ex.body, ra, ex.transport_error.as_deref())
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
        let (title, text) = render_text(p, c.pages_url.as_deref(), None);
        let mut b = lettre::Message::builder()
            .subject(title)
            // The alert id is the Message-ID: a resent alert is the same message.
            .message_id(Some(format!("<{}@conduct-walker>", p.id)))
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

/// What an answer makes of the row.
pub fn attempt_of(answer: &Answer, attempts: u32, now: DateTime<Utc>, jitter: f64) -> Attempt {
    match answer {
        Answer::Delivered { status, text } => Attempt {
            state: state::DELIVERED,
            status: Some(*status),
            answer: format!("delivered: {text}"),
            next_attempt_at: None,
        },
        Answer::Refused { status, text } => Attempt {
            state: state::REFUSED,
            status: *status,
            answer: format!("refused: {text}"),
            next_attempt_at: None,
        },
        Answer::Retry {
            status,
            text,
            retry_after,
        } => {
            let wait = retry_after.map(|ra| crate::witness::filing::retry_after_delay(ra, now));
            let delay = crate::witness::lanes::backoff(attempts, wait, jitter);
            Attempt {
                state: state::QUEUED,
                status: *status,
                answer: format!("retry: {text}"),
                next_attempt_at: Some(
                    chrono::Duration::from_std(delay)
                        .ok()
                        .and_then(|d| now.checked_add_signed(d))
                        .unwrap_or(DateTime::<Utc>::MAX_UTC),
                ),
            }
        }
    }
}

/// The outbox's drainer. One per daemon; a reload swaps its configuration.
pub struct Deliverer {
    pub cfg: Arc<AlertsConfig>,
    pub senders: HashMap<String, Arc<Sender>>,
    pub transport: Transport,
    pub store: Arc<Mutex<Store>>,
    pub clock: Arc<dyn Clock>,
    pub metrics: Arc<AlertMetrics>,
    /// Channels some task of this process is sending to now (shared across reloads): one
    /// send at a time per channel, so its alerts arrive in the order they were planned.
    pub in_flight: Arc<Mutex<HashSet<String>>>,
    pub slots: Arc<tokio::sync::Semaphore>,
    /// The daemon's store health: its changes are alerted (degraded, recovered).
    pub store_health: Option<Arc<crate::daemon::store::WriteHealth>>,
}

impl Deliverer {
    async fn with_store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        crate::store::shared::blocking(&self.store, f).await
    }

    /// The timers (held changes, digests, records queued too long) in one transaction.
    pub async fn plan_timers(&self, with_queued: bool) -> Result<u32, StoreError> {
        let cfg = self.cfg.clone();
        let now = self.clock.now();
        let fault = self
            .store_health
            .as_ref()
            .map(|h| h.fault().map(|f| f.reason));
        let n = self
            .with_store(move |s| {
                // Most ticks find nothing to write: no write lock is taken for those.
                crate::store::mostly_read_transaction(s.connection(), |tx| {
                    let mut n = outbox::flush_due(tx, &cfg, now)?;
                    // While the store cannot write this fails too, and is tried again next
                    // time: the degraded alert is planned once writes work (with the recovery
                    // after it).
                    if let Some(fault) = &fault {
                        n += outbox::store_health(tx, &cfg, fault.as_deref(), now)?;
                    }
                    n += outbox::digests_due(tx, &cfg, now)?;
                    n += outbox::refusals(tx, &cfg, now)?;
                    n += outbox::ledger_findings(tx, &cfg, now)?;
                    if with_queued {
                        n += outbox::queued_too_long(tx, &cfg, now)?;
                    }
                    Ok(n)
                })
            })
            .await?;
        self.metrics
            .planned_by_timer
            .fetch_add(n.into(), Ordering::Relaxed);
        Ok(n)
    }

    /// Start sending what is due: one task per channel with rows due and none in flight,
    /// within the slots; returns how many were started. Does not wait for them.
    pub async fn pass(self: &Arc<Self>) -> Result<usize, StoreError> {
        let now = self.clock.now();
        let rows = self
            .with_store(move |s| outbox::due(s.connection(), now, 256))
            .await?;
        let mut started = 0;
        for row in rows {
            if !self.claim(&row.channel) {
                continue;
            }
            let Ok(permit) = self.slots.clone().try_acquire_owned() else {
                self.unclaim(&row.channel);
                break;
            };
            started += 1;
            let me = self.clone();
            tokio::spawn(async move {
                let channel = row.channel.clone();
                me.drain(row).await;
                me.unclaim(&channel);
                drop(permit);
            });
        }
        Ok(started)
    }

    fn claim(&self, channel: &str) -> bool {
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(channel.to_string())
    }

    fn unclaim(&self, channel: &str) {
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(channel);
    }

    /// Send `first`, then the channel's next due rows in the order they were planned, while
    /// its receiver answers (at most [`DRAIN_BATCH`] per claim: a reload's new senders take
    /// over at the next pass).
    async fn drain(&self, first: AlertRow) {
        let channel = first.channel.clone();
        let mut row = first;
        for _ in 0..DRAIN_BATCH {
            if !self.deliver(row).await {
                return;
            }
            let now = self.clock.now();
            let ch = channel.clone();
            match self
                .with_store(move |s| outbox::next_due_on(s.connection(), &ch, now))
                .await
            {
                Ok(Some(next)) => row = next,
                Ok(None) => return,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the alert outbox");
                    return;
                }
            }
        }
    }

    /// Send one row and store the answer; true when the receiver answered (delivered or
    /// refused), which also releases the channel's rows waiting out a backoff.
    async fn deliver(&self, row: AlertRow) -> bool {
        let Some(sender) = self.senders.get(&row.channel).cloned() else {
            // A channel no longer configured: its rows wait (a reload may bring it back).
            return false;
        };
        let payload: AlertPayload = match serde_json::from_str(&row.payload) {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(alert = %row.alert_id, error = %e, "an alert's stored payload is unreadable");
                return false;
            }
        };
        self.metrics.in_flight.fetch_add(1, Ordering::Relaxed);
        let answer = sender.send(&self.transport, &payload).await;
        self.metrics.in_flight.fetch_sub(1, Ordering::Relaxed);
        let answered = !matches!(answer, Answer::Retry { .. });
        self.metrics
            .note(&row.channel, matches!(answer, Answer::Delivered { .. }));
        match &answer {
            Answer::Delivered { .. } => self.metrics.delivered.fetch_add(1, Ordering::Relaxed),
            Answer::Refused { .. } => self.metrics.refused.fetch_add(1, Ordering::Relaxed),
            Answer::Retry { .. } => self.metrics.failed_attempts.fetch_add(1, Ordering::Relaxed),
        };
        let now = self.clock.now();
        let attempts = u32::try_from(row.attempts + 1).unwrap_or(u32::MAX);
        let attempt = attempt_of(&answer, attempts, now, rand::random());
        tracing::info!(
            alert = %row.alert_id,
            channel = %row.channel,
            kind = %row.kind,
            answer = %answer.describe(),
            "alert delivery attempt"
        );
        let (id, channel) = (row.id, row.channel.clone());
        let stored = self
            .with_store(move |s| {
                let tx = crate::store::write_transaction(s.connection())?;
                outbox::record_attempt(&tx, id, &attempt, now)?;
                let released = if answered {
                    outbox::release(&tx, &channel, now)?
                } else {
                    0
                };
                tx.commit()?;
                Ok(released)
            })
            .await;
        match stored {
            Ok(released) => {
                if released > 0 {
                    tracing::info!(channel = %row.channel, released, "alerts: the receiver answers again; its queued alerts go out now");
                }
                answered
            }
            Err(e) => {
                tracing::error!(alert = %row.alert_id, error = %e, "cannot store an alert delivery's answer");
                false
            }
        }
    }

    /// Run until `stop` says so: the timers at most once a `tick`, a pass every `tick` (sooner
    /// while a backlog drains).
    pub async fn run(
        self: Arc<Self>,
        mut stop: tokio::sync::watch::Receiver<bool>,
        tick: Duration,
    ) {
        let mut timers_at: Option<std::time::Instant> = None;
        let mut queued_at: Option<std::time::Instant> = None;
        loop {
            if *stop.borrow() {
                return;
            }
            // The timers once a tick, not on every quick pass of a draining backlog: each is a
            // write transaction beside the records' writer. Records queued too long are looked
            // for once a minute (an indexed read), by the clock rather than by passes.
            if timers_at.is_none_or(|t| t.elapsed() >= tick) {
                let with_queued = queued_at.is_none_or(|t| t.elapsed() >= QUEUED_EVERY);
                if with_queued {
                    queued_at = Some(std::time::Instant::now());
                }
                timers_at = Some(std::time::Instant::now());
                if let Err(e) = self.plan_timers(with_queued).await {
                    tracing::error!(error = %e, "cannot plan the alert timers");
                }
            }
            // A pass that found work looks again soon (a backlog drains at the slots' pace,
            // not one batch per tick).
            let wait = match self.pass().await {
                Ok(0) => tick,
                Ok(_) => tick.min(Duration::from_millis(50)),
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the alert outbox");
                    tick
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.changed() => {}
            }
        }
    }
}
