//! What the channels send, built from data alone (no I/O, no clock): the text of the human
//! channels, each channel's message, what a receiver's answer means and what it makes of the
//! outbox row. The senders ([`super::Sender`]) put these on the wire.

use super::super::outbox::{Attempt, state};
use super::super::payload::{self, AlertPayload, Data, DigestRef, FlipRef, RecordRef};
use crate::filing::answer::RetryAfter;
use chrono::{DateTime, Utc};

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
    let title = payload::title(p);
    let mut body = format!("{title}\n");
    who(&mut body, d);
    flips(&mut body, &d.assertions_flipped);
    details(&mut body, d);
    if let Some(r) = &d.record {
        record_lines(&mut body, r, pages_url);
    }
    if let Some(n) = d.changes_since_last_alert.filter(|n| *n > 1) {
        let _ = writeln!(body, "changes since the last alert: {n}");
    }
    if let Some(dg) = &d.digest {
        digest_lines(&mut body, dg, pages_url, max_chars.unwrap_or(usize::MAX));
    }
    let _ = writeln!(body, "alert id: {}", p.id);
    (title, body)
}

/// Who it is about, in full (a forwarded alert or a second config still says which agent),
/// and which witness says so.
fn who(body: &mut String, d: &Data) {
    use std::fmt::Write as _;
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
}

/// One line per assertion that flipped.
fn flips(body: &mut String, flipped: &[FlipRef]) {
    use std::fmt::Write as _;
    let show = |v: Option<bool>| match v {
        Some(true) => "holds",
        Some(false) => "fails",
        None => "n/a",
    };
    for f in flipped {
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
}

/// What a filing, store or ledger alert is about.
fn details(body: &mut String, d: &Data) {
    use std::fmt::Write as _;
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
}

/// The record's links under `pages_url`; without one, its hash and why there is no link.
fn record_lines(body: &mut String, r: &RecordRef, pages_url: Option<&str>) {
    use std::fmt::Write as _;
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

/// A digest's held alerts, one line each, as many as fit in `room` characters; the rest
/// counted.
fn digest_lines(body: &mut String, dg: &DigestRef, pages_url: Option<&str>, room: usize) {
    use std::fmt::Write as _;
    let _ = writeln!(
        body,
        "{} alert(s) sent on {}, {} held:",
        dg.sent,
        dg.day,
        dg.held.len()
    );
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

fn link(base: &str, path: &str) -> String {
    format!("{}{path}", base.trim_end_matches('/'))
}

/// The generic webhook's body: the payload as this channel shows it (absolute links under
/// `pages_url`). Signed by the sender at the time of sending.
pub fn webhook_body(p: &AlertPayload, pages_url: Option<&str>) -> Result<Vec<u8>, String> {
    serde_json::to_vec(&p.for_channel(pages_url)).map_err(|e| e.to_string())
}

/// A Slack-compatible message: a header, the text (a section holds at most 3000 characters)
/// and the alert id.
pub fn slack_message(p: &AlertPayload, pages_url: Option<&str>) -> serde_json::Value {
    let (title, text) = render_text(p, pages_url, Some(3000));
    serde_json::json!({
        "text": title,
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": title.chars().take(150).collect::<String>()}},
            {"type": "section", "text": {"type": "mrkdwn", "text": text.chars().take(3000).collect::<String>()}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": format!("alert id `{}`", p.id)}]}
        ]
    })
}

/// An ntfy message: its headers and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NtfyMessage {
    pub headers: Vec<(String, String)>,
    pub text: String,
}

/// Whether an alert kind says something went wrong (as opposed to cleared, or news).
fn is_trouble(kind: &str) -> bool {
    kind.ends_with("opened")
        || kind.ends_with("flapping")
        || kind.ends_with("declined")
        || kind.starts_with("filing")
        || kind == "health.store_degraded"
}

/// Whether an alert kind says a trouble is over.
fn is_cleared(kind: &str) -> bool {
    kind.ends_with("resolved")
        || kind.ends_with("allowed")
        || kind.ends_with("recovered")
        || kind.ends_with("stable")
}

/// An ntfy message (over 4096 bytes ntfy makes the message an attachment, so the text is
/// bounded below that): a trouble at the channel's `priority` (others at the default, 3), a
/// tag by what it says, a click to the record under `pages_url`, the access `token` if any.
pub fn ntfy_message(
    p: &AlertPayload,
    pages_url: Option<&str>,
    priority: u8,
    token: Option<&str>,
) -> NtfyMessage {
    let (title, text) = render_text(p, pages_url, Some(4000));
    let trouble = is_trouble(&p.kind);
    let tags = if is_cleared(&p.kind) {
        "white_check_mark"
    } else if trouble {
        "rotating_light"
    } else {
        "information_source"
    };
    let priority = if trouble { priority } else { 3 };
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
    let mut headers: Vec<(String, String)> = vec![
        ("title".into(), title),
        ("tags".into(), tags.into()),
        ("priority".into(), priority.to_string()),
        ("webhook-id".into(), p.id.clone()),
    ];
    if let (Some(base), Some(r)) = (pages_url, &p.data.record) {
        headers.push(("click".into(), link(base, &r.page)));
    }
    if let Some(tok) = token {
        headers.push(("authorization".into(), format!("Bearer {tok}")));
    }
    NtfyMessage { headers, text }
}

/// An email's Message-ID: the alert id, so a resent alert is the same message.
pub fn message_id(p: &AlertPayload) -> String {
    format!("<{}@conduct-walker>", p.id)
}

/// What an HTTP answer (status 0: none, with the transport's `error`) comes to.
pub(super) fn classify_http(
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
            let wait = retry_after.map(|ra| crate::filing::retry_after_delay(ra, now));
            let delay = crate::filing::lanes::backoff(attempts, wait, jitter);
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
