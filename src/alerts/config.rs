//! `[alerts]`: the channels alerts go to and the per-target trigger settings (issue 24).
//!
//! Secrets (the webhook's signing key, the SMTP password, a URL that carries a token, an ntfy
//! access token) never sit in the config text: each is named by a file (`*_file`, relative to the
//! config) or a systemd credential (`*_credential`, read from `$CREDENTIALS_DIRECTORY`), read
//! when the daemon starts or `config check` runs, and shown nowhere (print-config keeps only
//! the names; logs and pages show the channel's name and kind).

use super::incident::{Settings, Triggers};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `[alerts]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AlertsSection {
    /// Consecutive FAIL walks that open a conduct incident (N); default 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_after: Option<u32>,
    /// Consecutive PASS walks that resolve it (M); default 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolve_after: Option<u32>,
    /// Consecutive walks that cannot reach the agent before an "unreachable" incident opens
    /// (counted apart from conduct failures); default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreachable_after: Option<u32>,
    /// Least seconds between two alerts of one target; default 900.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_interval_secs: Option<u64>,
    /// The windowed rule beside `open_after`: a FAIL walk also opens a conduct incident when
    /// at least this many of the last `window_walks` walks failed (an agent failing every
    /// other walk); default 3, 0 turns the rule off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_failures: Option<u32>,
    /// The windowed rule's walks (from `window_failures` to 64); default 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_walks: Option<u32>,
    /// Flap detection: a target whose incidents opened this many times within `flap_window`
    /// walks is flapping: one alert says so, one says when it is stable again, nothing in
    /// between; default 3, 0 turns it off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flap_opens: Option<u32>,
    /// Flap detection's walks: openings counted within them, and as many walks without an
    /// opening or resolution are stable again (1 to 10000); default 20.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flap_window: Option<u32>,
    /// Which changes are alerted on (each default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triggers: Option<TriggersSection>,
    /// Alert when a record stays queued for filing longer than this (seconds); default 86400,
    /// 0 turns it off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_max_age_secs: Option<u64>,
    /// Alert on filing problems (intake refusals, records queued too long) and the store's
    /// health; default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<bool>,
    /// `HOST:PORT`s of receivers on private or loopback addresses (a local relay); any other
    /// receiver must be a public https host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_hosts: Vec<String>,
    /// Where alerts go; with none, nothing is planned.
    #[serde(default, rename = "channel", skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<ChannelSection>,
    /// Per-target settings that differ from the ones above.
    #[serde(default, rename = "target", skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetAlertsSection>,
}

/// `[alerts.triggers]` (or a target's `triggers`).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TriggersSection {
    /// The verdict changes: an incident opens (FAIL) or resolves (PASS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<bool>,
    /// One assertion changes while the verdict holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertion: Option<bool>,
    /// The agent cannot be reached (and is reached again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreachable: Option<bool>,
    /// The origin declines consent (and allows it again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consent: Option<bool>,
}

/// One `[[alerts.target]]`: a target's own settings.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetAlertsSection {
    /// The `[[target]]`'s name.
    pub name: String,
    /// This target's N (default: `alerts.open_after`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_after: Option<u32>,
    /// This target's M (default: `alerts.resolve_after`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolve_after: Option<u32>,
    /// Default: `alerts.unreachable_after`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreachable_after: Option<u32>,
    /// Default: `alerts.min_interval_secs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_interval_secs: Option<u64>,
    /// Default: `alerts.window_failures`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_failures: Option<u32>,
    /// Default: `alerts.window_walks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_walks: Option<u32>,
    /// Default: `alerts.flap_opens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flap_opens: Option<u32>,
    /// Default: `alerts.flap_window`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flap_window: Option<u32>,
    /// Which of this target's changes are alerted on (unset ones: `alerts.triggers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triggers: Option<TriggersSection>,
}

/// A channel's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChannelKind {
    /// A JSON POST signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`,
    /// `webhook-signature`); the body is `alerts::payload` schema 1.
    Webhook,
    /// A Slack-compatible incoming webhook (Slack, Mattermost, Discord's `/slack`): `text` and
    /// `blocks`.
    Slack,
    /// An ntfy topic URL: the text as body, `Title`, `Tags`, `Priority`, `Click` headers.
    Ntfy,
    /// Email over SMTP (STARTTLS or implicit TLS, with authentication).
    Email,
}

impl ChannelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Webhook => "webhook",
            ChannelKind::Slack => "slack",
            ChannelKind::Ntfy => "ntfy",
            ChannelKind::Email => "email",
        }
    }
}

/// SMTP transport security.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SmtpTls {
    /// Plain connection upgraded with STARTTLS (refused if the server does not offer it).
    #[default]
    Starttls,
    /// TLS from the first byte (SMTPS, usually port 465).
    Implicit,
}

/// One `[[alerts.channel]]`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelSection {
    /// Unique name (logs, `alerts test --channel`, metrics).
    pub name: String,
    /// `webhook`, `slack`, `ntfy` or `email`.
    pub kind: ChannelKind,
    /// The receiver's https URL, when it carries no secret (webhook, slack, ntfy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A file holding the URL, when the URL is the secret (a Slack incoming-webhook URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_file: Option<PathBuf>,
    /// A credential holding the URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_credential: Option<String>,
    /// Webhook: a file holding the signing secret (`whsec_` + base64, as Standard Webhooks
    /// writes it). ntfy: a file holding an access token (sent as `Authorization: Bearer`).
    /// Email: a file holding the SMTP password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_file: Option<PathBuf>,
    /// The same secret as a credential in `$CREDENTIALS_DIRECTORY`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_credential: Option<String>,
    /// Alerts this channel delivers per UTC day; past it they are held and one digest is sent
    /// after the day ends. Default 50.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_cap: Option<u32>,
    /// ntfy: the priority of an opened incident (1-5); resolutions go at 3. Default 4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u8>,
    /// Base URL of the status pages, for links in messages (e.g. https://walker.example).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages_url: Option<String>,
    /// Email: the SMTP server's host name (also the name its certificate must carry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smtp_host: Option<String>,
    /// Email: default 587 (STARTTLS) or 465 (implicit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smtp_port: Option<u16>,
    /// Email: `starttls` (default) or `implicit`.
    #[serde(default)]
    pub smtp_tls: SmtpTls,
    /// Email: the login (the password is the channel's secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Email: the sender address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Email: the recipients.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<String>,
}

pub const DEFAULT_DAILY_CAP: u32 = 50;
pub const DEFAULT_QUEUED_MAX_AGE_SECS: u64 = 86_400;

/// A secret's source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    File(PathBuf),
    Credential(String),
}

impl SecretSource {
    /// Read it (trailing newline dropped); the error names the source, never the content.
    pub fn read(&self) -> Result<String, String> {
        let path = match self {
            SecretSource::File(p) => p.clone(),
            SecretSource::Credential(name) => {
                crate::credentials::path(&format!("credential {name:?} is named"), name)?
            }
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let text = text.trim_end_matches(['\r', '\n']).to_string();
        if text.is_empty() {
            return Err(format!("{} is empty", path.display()));
        }
        Ok(text)
    }
}

/// One channel, validated (secrets not yet read).
#[derive(Debug, Clone)]
pub struct Channel {
    pub name: String,
    pub kind: ChannelKind,
    pub url: Option<String>,
    pub url_secret: Option<SecretSource>,
    pub secret: Option<SecretSource>,
    pub daily_cap: u32,
    pub priority: u8,
    pub pages_url: Option<String>,
    pub smtp_host: Option<String>,
    pub smtp_port: u16,
    pub smtp_tls: SmtpTls,
    pub username: Option<String>,
    pub from: Option<String>,
    pub to: Vec<String>,
}

/// `[alerts]`, validated.
#[derive(Debug, Clone, Default)]
pub struct AlertsConfig {
    pub defaults: Settings,
    pub per_target: std::collections::HashMap<String, Settings>,
    pub queued_max_age_secs: u64,
    pub health: bool,
    pub allow_hosts: Vec<String>,
    pub channels: Vec<Channel>,
    /// The `[witness]` name, which every alert carries beside the store's identifier.
    pub witness_name: Option<String>,
}

impl AlertsConfig {
    pub fn enabled(&self) -> bool {
        !self.channels.is_empty()
    }

    pub fn settings_for(&self, target: &str) -> Settings {
        self.per_target
            .get(target)
            .copied()
            .unwrap_or(self.defaults)
    }
}

fn triggers(base: Triggers, t: Option<TriggersSection>) -> Triggers {
    let Some(t) = t else { return base };
    Triggers {
        verdict: t.verdict.unwrap_or(base.verdict),
        assertion: t.assertion.unwrap_or(base.assertion),
        unreachable: t.unreachable.unwrap_or(base.unreachable),
        consent: t.consent.unwrap_or(base.consent),
    }
}

/// `base` with the settings a section gives (`counts`: open_after, resolve_after,
/// unreachable_after, window_failures, window_walks, flap_opens, flap_window), one rule for
/// `[alerts]` over the built-in defaults and for an `[[alerts.target]]` over `[alerts]`.
fn overlay(
    base: Settings,
    counts: [Option<u32>; 7],
    min_interval_secs: Option<u64>,
    t: Option<TriggersSection>,
) -> Settings {
    let [
        open_after,
        resolve_after,
        unreachable_after,
        window_failures,
        window_walks,
        flap_opens,
        flap_window,
    ] = counts;
    Settings {
        open_after: open_after.unwrap_or(base.open_after),
        resolve_after: resolve_after.unwrap_or(base.resolve_after),
        unreachable_after: unreachable_after.unwrap_or(base.unreachable_after),
        min_interval_secs: min_interval_secs.unwrap_or(base.min_interval_secs),
        triggers: triggers(base.triggers, t),
        window_failures: window_failures.unwrap_or(base.window_failures),
        window_walks: window_walks.unwrap_or(base.window_walks),
        flap_opens: flap_opens.unwrap_or(base.flap_opens),
        flap_window: flap_window.unwrap_or(base.flap_window),
    }
}

fn secret_of(
    what: &str,
    file: &Option<PathBuf>,
    credential: &Option<String>,
    base: &Path,
    problems: &mut Vec<String>,
) -> Option<SecretSource> {
    match (file, credential) {
        (Some(_), Some(_)) => {
            problems.push(format!(
                "give either {what}_file or {what}_credential, not both"
            ));
            None
        }
        (Some(f), None) => Some(SecretSource::File(if f.is_absolute() {
            f.clone()
        } else {
            base.join(f)
        })),
        (None, Some(c)) => {
            if c.is_empty() || c.contains('/') {
                problems.push(format!(
                    "{what}_credential: a credential name is a plain file name"
                ));
            }
            Some(SecretSource::Credential(c.clone()))
        }
        (None, None) => None,
    }
}

/// A receiver's URL (webhook, slack, ntfy): https, or plain http only at a loopback host
/// (`localhost`, 127.0.0.0/8, `[::1]`) whose `HOST:PORT` is in `alerts.allow_hosts` (`allowed`
/// holds them): a relay on the same machine the operator named, where TLS protects nothing.
pub fn receiver_url(raw: &str, allowed: &crate::net::NetPolicy) -> Result<url::Url, String> {
    let u = url::Url::parse(raw).map_err(|e| format!("not a URL ({e})"))?;
    if u.scheme() != "http" {
        return crate::net::https_url(raw);
    }
    let named = crate::net::loopback_host(&u)
        && u.host_str()
            .zip(u.port_or_known_default())
            .is_some_and(|(h, port)| allowed.private_allowed_at(h, port));
    if !named {
        return Err(
            "must be https (plain http only for a loopback host named in alerts.allow_hosts)"
                .into(),
        );
    }
    if let Some(why) = crate::net::userinfo_refusal(&u) {
        return Err(why);
    }
    Ok(u)
}

/// Validate the section; each problem names the channel or target and the key. `targets` are
/// the configured target names (an `[[alerts.target]]` must name one).
pub fn validate(
    s: &AlertsSection,
    base: &Path,
    targets: &[&str],
) -> Result<AlertsConfig, Vec<String>> {
    let mut problems = Vec::new();
    let (defaults, per_target) = settings(s, targets, &mut problems);
    let mut probe = crate::net::NetPolicy::new(true);
    for h in &s.allow_hosts {
        if let Err(why) = probe.allow_host_port(h) {
            problems.push(format!("alerts.allow_hosts: {why}"));
        }
    }
    let mut channels: Vec<Channel> = Vec::new();
    for c in &s.channels {
        let (channel, p) = channel(c, &channels, base, &probe);
        problems.extend(
            p.into_iter()
                .map(|m| format!("alerts.channel {:?}: {m}", c.name)),
        );
        channels.push(channel);
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(AlertsConfig {
        defaults,
        per_target,
        queued_max_age_secs: s.queued_max_age_secs.unwrap_or(DEFAULT_QUEUED_MAX_AGE_SECS),
        health: s.health.unwrap_or(true),
        allow_hosts: s.allow_hosts.clone(),
        channels,
        witness_name: None,
    })
}

/// The incident settings: `[alerts]` over the built-in defaults, and each `[[alerts.target]]`
/// over `[alerts]` (it must name a configured target, once).
fn settings(
    s: &AlertsSection,
    targets: &[&str],
    problems: &mut Vec<String>,
) -> (Settings, std::collections::HashMap<String, Settings>) {
    let defaults = overlay(
        Settings::default(),
        [
            s.open_after,
            s.resolve_after,
            s.unreachable_after,
            s.window_failures,
            s.window_walks,
            s.flap_opens,
            s.flap_window,
        ],
        s.min_interval_secs,
        s.triggers,
    );
    if let Err(e) = defaults.validate() {
        problems.push(e);
    }
    let mut per_target = std::collections::HashMap::new();
    for t in &s.targets {
        if !targets.contains(&t.name.as_str()) {
            problems.push(format!(
                "alerts.target {:?}: no [[target]] has this name",
                t.name
            ));
        }
        let st = overlay(
            defaults,
            [
                t.open_after,
                t.resolve_after,
                t.unreachable_after,
                t.window_failures,
                t.window_walks,
                t.flap_opens,
                t.flap_window,
            ],
            t.min_interval_secs,
            t.triggers,
        );
        if let Err(e) = st.validate() {
            problems.push(format!("alerts.target {:?}: {e}", t.name));
        }
        if per_target.insert(t.name.clone(), st).is_some() {
            problems.push(format!("alerts.target {:?} is given twice", t.name));
        }
    }
    (defaults, per_target)
}

/// One channel, and its problems (each names the key; the caller names the channel). `before`
/// are the channels already read (names are unique); `probe` admits the `allow_hosts`.
fn channel(
    c: &ChannelSection,
    before: &[Channel],
    base: &Path,
    probe: &crate::net::NetPolicy,
) -> (Channel, Vec<String>) {
    let mut p = Vec::new();
    if c.name.trim().is_empty() || c.name.len() > 100 {
        p.push("name must be 1 to 100 characters".to_string());
    }
    if before.iter().any(|o| o.name == c.name) {
        p.push("a second channel with this name".to_string());
    }
    let url_secret = secret_of("url", &c.url_file, &c.url_credential, base, &mut p);
    let secret = secret_of("secret", &c.secret_file, &c.secret_credential, base, &mut p);
    if let Some(u) = &c.url {
        if url_secret.is_some() {
            p.push("give url or url_file/url_credential, not both".into());
        }
        if let Err(why) = receiver_url(u, probe) {
            p.push(format!("url: {why}"));
        }
    }
    if let Some(u) = &c.pages_url
        && let Err(why) = url::Url::parse(u)
    {
        p.push(format!("pages_url: not a URL ({why})"));
    }
    match c.kind {
        ChannelKind::Webhook | ChannelKind::Slack | ChannelKind::Ntfy => {
            check_http_channel(c, url_secret.is_some(), secret.is_some(), &mut p)
        }
        ChannelKind::Email => {
            check_email_channel(c, url_secret.is_some(), secret.is_some(), &mut p)
        }
    }
    if let Some(pr) = c.priority
        && !(1..=5).contains(&pr)
    {
        p.push(format!("priority {pr}: must be 1 to 5"));
    }
    if c.daily_cap == Some(0) {
        p.push("daily_cap must be at least 1".into());
    }
    let channel = Channel {
        name: c.name.clone(),
        kind: c.kind,
        url: c.url.clone(),
        url_secret,
        secret,
        daily_cap: c.daily_cap.unwrap_or(DEFAULT_DAILY_CAP),
        priority: c.priority.unwrap_or(4),
        pages_url: c.pages_url.clone(),
        smtp_host: c.smtp_host.clone(),
        smtp_port: c.smtp_port.unwrap_or(match c.smtp_tls {
            SmtpTls::Starttls => 587,
            SmtpTls::Implicit => 465,
        }),
        smtp_tls: c.smtp_tls,
        username: c.username.clone(),
        from: c.from.clone(),
        to: c.to.clone(),
    };
    (channel, p)
}

/// A webhook, Slack or ntfy channel: a receiver URL, a webhook's signing secret, no email keys.
fn check_http_channel(c: &ChannelSection, url_secret: bool, secret: bool, p: &mut Vec<String>) {
    if c.url.is_none() && !url_secret {
        p.push("needs url (or url_file / url_credential)".into());
    }
    if c.kind == ChannelKind::Webhook && !secret {
        p.push("a webhook is signed: give secret_file or secret_credential (whsec_...)".into());
    }
    if c.smtp_host.is_some() || c.from.is_some() || !c.to.is_empty() {
        p.push("smtp_host, from and to are for kind = \"email\"".into());
    }
}

/// An email channel: a server, a sender and recipients that are addresses, a login only with
/// its password, no URL.
fn check_email_channel(c: &ChannelSection, url_secret: bool, secret: bool, p: &mut Vec<String>) {
    if c.smtp_host.is_none() {
        p.push("needs smtp_host".into());
    }
    for (k, v) in [("from", c.from.as_deref())] {
        match v {
            None => p.push(format!("needs {k}")),
            Some(a) if a.parse::<lettre::Address>().is_err() => {
                p.push(format!("{k}: {a:?} is not an email address"))
            }
            _ => {}
        }
    }
    if c.to.is_empty() {
        p.push("needs at least one address in to".into());
    }
    for a in &c.to {
        if a.parse::<lettre::Address>().is_err() {
            p.push(format!("to: {a:?} is not an email address"));
        }
    }
    if c.username.is_some() != secret {
        p.push("username and secret_file/secret_credential (the password) go together".into());
    }
    if c.url.is_some() || url_secret {
        p.push("url is not for kind = \"email\"".into());
    }
}
