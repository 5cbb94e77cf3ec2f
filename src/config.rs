//! The configuration file (TOML) of the daemon and of every face that takes one (the MCP
//! server): the witness, the network rules, the targets.
//!
//! Every table refuses keys it does not know (`deny_unknown_fields`): a misspelt key would
//! otherwise silently fall back to a default, and for a witness that files signed records under
//! its name that is worse than refusing to start. Every problem is reported with its line and
//! key. Relative paths in the file are taken relative to the file's directory, so a unit's
//! `ConfigurationDirectory=` can hold the key, the CA and the config side by side.
//!
//! Schedules are cron patterns in UTC (the intake's lanes are UTC days too), with an optional
//! seconds field: `0 17 3 * * *` is 03:17:00 every day, `17 3 * * *` the same without seconds.

use crate::walk::{Mode, Privacy, RequestProfile, WalkRequest, Wire};
use crate::wire::Witness;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;

pub mod witness_face;
pub use witness_face::{WitnessFace, WitnessFaceSection};

/// The config file's name inside `$CONFIGURATION_DIRECTORY`.
pub const CONFIG_FILE_NAME: &str = "walker.toml";

/// Default metrics/health listener: loopback only (the Prometheus exporter port range).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9464";

/// The longest witness name or vantage (characters), as [`crate::walk::check`] takes it.
pub use crate::walk::check::MAX_NAME_CHARS;

/// The default daily cap on store-only walks through MCP (`submit: false`, or filing not
/// allowed): they cost the intake nothing, so it is larger than any lane's.
pub const DEFAULT_STORE_ONLY_CAP: u32 = 100;

/// The file as written (plus serde defaults), kept for `print-config`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub witness: WitnessSection,
    #[serde(default)]
    pub network: NetworkSection,
    #[serde(default)]
    pub daemon: DaemonSection,
    /// `[card_signature]`: pinned card-signature keys per origin and revocations (A2A §8.4).
    #[serde(default)]
    pub card_signature: crate::card_signature::TrustConfig,
    /// `[mcp]`: what a model may do through `conduct-walker mcp`.
    #[serde(default)]
    pub mcp: McpSection,
    /// `[ledger]`: following filed records into the witness ledger (issue 23).
    #[serde(default)]
    pub ledger: LedgerSection,
    /// `[retention]`: how long records stay in the live store before the daemon archives them.
    #[serde(default)]
    pub retention: RetentionSection,
    /// `[alerts]`: where and when to tell the operator that an agent's conduct changed.
    #[serde(default)]
    pub alerts: crate::alerts::config::AlertsSection,
    /// `[witness_face]`: answer the witness pool's requests and serve what a pool member
    /// publishes (issue 43). Off when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witness_face: Option<WitnessFaceSection>,
    /// One per agent to walk, each on its own schedule; with none the daemon idles.
    #[serde(default, rename = "target", skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetSection>,
}

/// `[witness]`: who signs and files, and how.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WitnessSection {
    /// The witness's name, written into every record (must not be empty).
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// Where the witness walks from (place, network), written into every record (must not be
    /// empty).
    #[schemars(with = "String")]
    pub vantage: Spanned<String>,
    /// What this vantage cannot see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vantage_limitation: Option<String>,
    /// PKCS#8 PEM Ed25519 key file (mode 0600); not together with `key_credential`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<PathBuf>")]
    pub key: Option<Spanned<PathBuf>>,
    /// Name of a systemd credential (`LoadCredential=NAME:...`) holding the key, read from
    /// `$CREDENTIALS_DIRECTORY`. With neither this nor `key`, the `signing-key` credential is
    /// used when present; with no key at all records are filed unsigned (address lane).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub key_credential: Option<Spanned<String>>,
    /// https URL, on a domain you control, serving `{"public_key_ed25519_b64": ...}`
    /// (`conduct-walker pubkey` prints it); makes records domain-signed (domain lane). Needs a key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub key_url: Option<Spanned<String>>,
    /// Privacy of filed records unless a target says otherwise.
    #[serde(default)]
    pub privacy: PrivacyName,
    /// How n3 is asked in mcp mode, for every target that does not say (§2.6.1): `spec`
    /// (MCP Streamable HTTP) or `reference` (byte-identical with the reference walker).
    #[serde(default)]
    pub request_profile: RequestProfileName,
    /// File every record with this https intake instead of the one each agent's card names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub intake: Option<Spanned<String>>,
    /// File more than one record per identity × endpoint × UTC day (the intake stores but does
    /// not count the extra ones, and they use up the lane).
    #[serde(default)]
    pub file_extra_walks: bool,
    /// The https task-delegation ledger that `bind_task` targets (and the MCP walk tool's
    /// `bind_task`) send their observations to (spec §5.1); default
    /// https://ledger.horizonshield.dev/witness/task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub task_ledger: Option<Spanned<String>>,
    /// https URL of your own agent card (`https://<host>/.well-known/agent-card.json`): the
    /// n3 message of every scheduled a2a-mode walk carries it as `EXT/caller_card`, asking the
    /// agent to walk you back (§11.6). Opt-in: it changes n3's request bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub caller_card: Option<Spanned<String>>,
    /// After a scheduled full-mode walk, POST a summary to the `notify` URL the origin's
    /// consent file declares (`consent`, §11.5), or never (`never`).
    #[serde(default)]
    pub notify: NotifyName,
}

/// `[witness] notify`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NotifyName {
    /// Honour a consent file's `notify` (declaring it is consent to receive the POST).
    #[default]
    Consent,
    /// Never notify.
    Never,
}

impl From<NotifyName> for crate::notify::Policy {
    fn from(n: NotifyName) -> crate::notify::Policy {
        match n {
            NotifyName::Consent => crate::notify::Policy::Consent,
            NotifyName::Never => crate::notify::Policy::Never,
        }
    }
}

/// `[network]`: the transport rules every walk, consent read and submission follows.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetworkSection {
    /// Extra trust roots (PEM files), added to the system's.
    #[serde(default)]
    pub extra_ca: Vec<PathBuf>,
    /// Admit private/loopback addresses, only at hosts this file names (targets, intake, task
    /// ledger, `allow_hosts`).
    #[serde(default)]
    pub allow_private_network: bool,
    /// More `HOST:PORT` pairs at which private addresses are admitted.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub allow_hosts: Vec<Spanned<String>>,
    /// Per-request deadline covering connect, headers and body.
    #[serde(default = "default_deadline")]
    pub request_deadline_secs: u64,
    /// Largest response body read.
    #[serde(default = "default_body_cap")]
    pub body_cap_bytes: usize,
}

impl Default for NetworkSection {
    fn default() -> Self {
        NetworkSection {
            extra_ca: Vec::new(),
            allow_private_network: false,
            allow_hosts: Vec::new(),
            request_deadline_secs: default_deadline(),
            body_cap_bytes: default_body_cap(),
        }
    }
}

/// `[daemon]`: how the service runs.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DaemonSection {
    /// The store; default `$STATE_DIRECTORY/walker.db`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<PathBuf>,
    /// Loopback address of `/healthz`, `/metrics` and `/records`; `"off"` disables it.
    #[serde(default = "default_listen")]
    #[schemars(with = "String")]
    pub listen: Spanned<String>,
    /// Walks running at once, over all targets.
    #[serde(default = "default_concurrency")]
    #[schemars(with = "usize")]
    pub concurrency: Spanned<usize>,
    /// Each target fires up to this many seconds after its cron time (a fixed offset per
    /// target, derived from `jitter_seed` and the target's name).
    #[serde(default = "default_jitter")]
    pub jitter_secs: u64,
    /// Seed of the per-target jitter offsets (change it to move every target's offset).
    #[serde(default)]
    pub jitter_seed: u64,
    /// How often the outbox is drained (records whose filing is due are sent).
    #[serde(default = "default_drain")]
    pub drain_interval_secs: u64,
    /// On SIGTERM, how long walks in flight may take to finish before they are cut off.
    #[serde(default = "default_grace")]
    pub shutdown_grace_secs: u64,
}

impl Default for DaemonSection {
    fn default() -> Self {
        DaemonSection {
            database: None,
            listen: default_listen(),
            concurrency: default_concurrency(),
            jitter_secs: default_jitter(),
            jitter_seed: 0,
            drain_interval_secs: default_drain(),
            shutdown_grace_secs: default_grace(),
        }
    }
}

/// `[ledger]`: how the daemon follows the records it filed into the intake's ledger
/// (`GET /witness/<sha>` until anchored, inclusion, the chain; `conduct-walker ledger follow`
/// does one pass by hand).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LedgerSection {
    /// Run the follower as a task of the daemon.
    #[serde(default = "yes")]
    pub follow: bool,
    /// Seconds between the follower's passes over each intake.
    #[serde(default = "default_ledger_poll")]
    pub poll_interval_secs: u64,
    /// Reads per minute per intake, on average (at most one minute's worth at once).
    #[serde(default = "default_ledger_rate")]
    pub rate_per_minute: u64,
    /// Hours after filing after which a record not yet anchored is a finding.
    #[serde(default = "default_ledger_overdue")]
    pub overdue_after_hours: u64,
    /// Seconds between reads of `/ledger/head` (how soon an operator batch is seen; the head
    /// is also read just after each 00:30 UTC run).
    #[serde(default = "default_ledger_head")]
    pub head_interval_secs: u64,
    /// Per-intake values instead of the two above.
    #[serde(default, rename = "intake", skip_serializing_if = "Vec::is_empty")]
    pub intakes: Vec<LedgerIntakeSection>,
}

impl Default for LedgerSection {
    fn default() -> Self {
        LedgerSection {
            follow: true,
            poll_interval_secs: default_ledger_poll(),
            rate_per_minute: default_ledger_rate(),
            overdue_after_hours: default_ledger_overdue(),
            head_interval_secs: default_ledger_head(),
            intakes: Vec::new(),
        }
    }
}

/// `[retention]`: old records leave the live store into verifiable archive segments
/// (docs/operator.md, "Retention"). Off by default: with neither `unfiled_days` nor `all_days`, every record is
/// kept in the store for ever.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetentionSection {
    /// Archive records that were never filed (no submission reached `filed`) once they are
    /// older than this many days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfiled_days: Option<u64>,
    /// Archive every record older than this many days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_days: Option<u64>,
    /// Where the segment files go; default: the directory `archive` beside the database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_dir: Option<PathBuf>,
    /// How often the daemon archives (hours; the first run is 10 seconds after start).
    #[serde(default = "default_archive_every")]
    pub every_hours: u64,
}

fn default_archive_every() -> u64 {
    24
}

impl Default for RetentionSection {
    fn default() -> Self {
        RetentionSection {
            unfiled_days: None,
            all_days: None,
            archive_dir: None,
            every_hours: default_archive_every(),
        }
    }
}

/// `[[ledger.intake]]`: one intake's own read rate and overdue limit.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LedgerIntakeSection {
    /// The intake URL records are filed with (`https://host/witness`).
    #[schemars(with = "String")]
    pub url: Spanned<String>,
    /// Default: `ledger.rate_per_minute`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_minute: Option<u64>,
    /// Default: `ledger.overdue_after_hours`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overdue_after_hours: Option<u64>,
}

fn default_ledger_poll() -> u64 {
    60
}
fn default_ledger_rate() -> u64 {
    crate::ledger::follow::Policy::default().rate_per_minute as u64
}
fn default_ledger_head() -> u64 {
    crate::ledger::follow::Policy::default()
        .head_every
        .num_seconds() as u64
}
fn default_ledger_overdue() -> u64 {
    crate::ledger::follow::Policy::default()
        .overdue_after
        .num_hours() as u64
}

/// The validated `[ledger]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerSettings {
    pub follow: bool,
    pub poll_interval: Duration,
    pub default: crate::ledger::follow::Policy,
    pub per_intake: Vec<(String, crate::ledger::follow::Policy)>,
}

impl Default for LedgerSettings {
    fn default() -> Self {
        LedgerSettings {
            follow: true,
            poll_interval: Duration::from_secs(default_ledger_poll()),
            default: crate::ledger::follow::Policy::default(),
            per_intake: Vec::new(),
        }
    }
}

impl LedgerSettings {
    /// The follower's policy for an intake.
    pub fn policy_for(&self, intake: &str) -> crate::ledger::follow::Policy {
        let norm = |u: &str| u.trim_end_matches('/').to_owned();
        self.per_intake
            .iter()
            .find(|(u, _)| norm(u) == norm(intake))
            .map_or_else(|| self.default.clone(), |(_, p)| p.clone())
    }
}

fn ledger_policy(rate: u64, overdue_hours: u64, head_secs: u64) -> crate::ledger::follow::Policy {
    crate::ledger::follow::Policy {
        rate_per_minute: rate.clamp(1, 600) as u32,
        overdue_after: chrono::Duration::hours(overdue_hours.clamp(1, 24 * 90) as i64),
        head_every: chrono::Duration::seconds(head_secs.clamp(10, 86_400) as i64),
        ..crate::ledger::follow::Policy::default()
    }
}

/// The validated `[retention]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionConfig {
    pub policy: crate::store::archive::Retention,
    /// As configured (resolved against the config's directory); see [`RetentionConfig::dir`].
    pub archive_dir: Option<PathBuf>,
    pub every: Duration,
}

impl RetentionConfig {
    /// The archive directory for the store at `db`.
    pub fn dir(&self, db: &Path) -> PathBuf {
        self.archive_dir.clone().unwrap_or_else(|| {
            db.parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .join("archive")
        })
    }
}

/// `[mcp]`: the operator's limits on what a model may do through the MCP server. Identity,
/// key, store and network rules are the rest of this file; a model never chooses them.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    /// Whether a tool call may file records with the intake at all (false: store only).
    #[serde(default = "yes")]
    pub allow_submit: bool,
    /// Whether `witness_name` / `vantage` given by the model are written into records (false:
    /// the `[witness]` identity is always used, and the answer says so).
    #[serde(default)]
    pub allow_model_identity: bool,
    /// Walks that file with the intake a model may start per UTC day; default: the witness's
    /// lane budget at the intake (5 unsigned or address-signed, 50 domain-signed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<u32>")]
    pub daily_walk_cap: Option<Spanned<u32>>,
    /// Store-only walks (`submit: false`, or `allow_submit = false`) a model may start per UTC
    /// day, counted apart from the filing walks; default 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<u32>")]
    pub daily_store_only_cap: Option<Spanned<u32>>,
}

impl Default for McpSection {
    fn default() -> Self {
        McpSection {
            allow_submit: true,
            allow_model_identity: false,
            daily_walk_cap: None,
            daily_store_only_cap: None,
        }
    }
}

/// One `[[target]]`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetSection {
    /// Label in logs, metrics and status; default: the endpoint, else the origin.
    /// Unique among the targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub name: Option<Spanned<String>>,
    /// The agent's https origin; its card is at ORIGIN/.well-known/agent-card.json.
    #[schemars(with = "String")]
    pub origin: Spanned<String>,
    /// Walk this https endpoint instead of the card's first measured endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub endpoint: Option<Spanned<String>>,
    /// `mcp` (an MCP initialize) or `a2a` (an A2A message).
    #[serde(default)]
    pub mode: ModeName,
    /// A2A wire version.
    #[serde(default)]
    pub wire: WireName,
    /// Default: `witness.privacy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub privacy: Option<PrivacyName>,
    /// Default: `witness.request_profile`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_profile: Option<RequestProfileName>,
    /// File the records with the intake (false: store only).
    #[serde(default = "yes")]
    pub submit: bool,
    /// Also keep other witnesses' records about this endpoint, read from the anchored batches
    /// of the intake's ledger (what `conduct-walker ledger pull` does by hand). Needs
    /// `endpoint`.
    #[serde(default)]
    pub pull_ledger: bool,
    /// After each walk, bind the A2A Task the agent returned to `witness.task_ledger` (spec
    /// §5.1, the reference's `--bind-task`): a signed observation queued with the record and
    /// sent once; the record itself does not change. Needs `mode = "a2a"` and a signing key
    /// (without one each walk's binding is skipped, and says so).
    #[serde(default)]
    pub bind_task: bool,
    /// Cron pattern in UTC: "min hour day month weekday", or with seconds first
    /// "sec min hour day month weekday"; `@daily`, `@hourly` also work.
    #[schemars(with = "String")]
    pub schedule: Spanned<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ModeName {
    #[default]
    Mcp,
    A2a,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum WireName {
    #[default]
    #[serde(rename = "1.0")]
    V1_0,
    #[serde(rename = "0.3")]
    V0_3,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PrivacyName {
    #[default]
    Full,
    HashOnly,
    Commitment,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RequestProfileName {
    #[default]
    Spec,
    Reference,
}

impl From<RequestProfileName> for RequestProfile {
    fn from(p: RequestProfileName) -> RequestProfile {
        match p {
            RequestProfileName::Spec => RequestProfile::Spec,
            RequestProfileName::Reference => RequestProfile::Reference,
        }
    }
}

impl From<ModeName> for Mode {
    fn from(m: ModeName) -> Mode {
        match m {
            ModeName::Mcp => Mode::Mcp,
            ModeName::A2a => Mode::A2a,
        }
    }
}

impl From<WireName> for Wire {
    fn from(w: WireName) -> Wire {
        match w {
            WireName::V1_0 => Wire::V1_0,
            WireName::V0_3 => Wire::V0_3,
        }
    }
}

impl From<PrivacyName> for Privacy {
    fn from(p: PrivacyName) -> Privacy {
        match p {
            PrivacyName::Full => Privacy::Full,
            PrivacyName::HashOnly => Privacy::HashOnly,
            PrivacyName::Commitment => Privacy::Commitment,
        }
    }
}

fn default_deadline() -> u64 {
    crate::net::REQUEST_DEADLINE.as_secs()
}
fn default_body_cap() -> usize {
    crate::net::BODY_CAP_BYTES
}
fn default_listen() -> Spanned<String> {
    Spanned::new(0..0, DEFAULT_LISTEN.to_string())
}
/// Walks at once, at most (a semaphore's permits; far above what 2 cores can use).
pub const MAX_CONCURRENCY: u64 = 1024;

fn default_concurrency() -> Spanned<usize> {
    Spanned::new(0..0, 4)
}
fn default_jitter() -> u64 {
    60
}
fn default_drain() -> u64 {
    60
}
fn default_grace() -> u64 {
    30
}
fn yes() -> bool {
    true
}

/// One problem in a config file, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The key the problem is about (as written on that line), when known.
    pub key: Option<String>,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.line, &self.key) {
            (Some(l), Some(k)) => write!(f, "line {l}, `{k}`: {}", self.message),
            (Some(l), None) => write!(f, "line {l}: {}", self.message),
            (None, Some(k)) => write!(f, "`{k}`: {}", self.message),
            (None, None) => write!(f, "{}", self.message),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "no config file: pass --config FILE (or run under systemd with ConfigurationDirectory= set, which reads $CONFIGURATION_DIRECTORY/{CONFIG_FILE_NAME})"
    )]
    NoPath,
    #[error("cannot read the config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {}", .problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("; "))]
    Invalid {
        path: PathBuf,
        problems: Vec<Problem>,
    },
}

/// The config file path: `--config` wins, else `$CONFIGURATION_DIRECTORY/walker.toml` (the first
/// directory when systemd lists several).
pub fn default_config_path(cli: Option<&Path>) -> Result<PathBuf, ConfigError> {
    let dirs = std::env::var_os("CONFIGURATION_DIRECTORY");
    crate::store::flag_or_systemd_dir(cli, dirs.as_deref(), CONFIG_FILE_NAME)
        .ok_or(ConfigError::NoPath)
}

/// When a target fires: a cron pattern (UTC) shifted by a fixed per-target offset.
#[derive(Debug, Clone)]
pub struct Schedule {
    pub pattern: String,
    /// Shared by every target with this pattern: one parsed pattern holds about 5 KB of
    /// bit tables, so 10,000 targets each with their own copy held 50 MB per copy of the config.
    cron: std::sync::Arc<croner::Cron>,
    /// The seeded jitter: this target always fires this long after its cron times.
    pub offset: Duration,
}

impl Schedule {
    /// Parse a pattern (5 fields, or 6 with seconds first; `@daily` and friends).
    pub fn parse(pattern: &str, offset: Duration) -> Result<Schedule, String> {
        let s = Schedule::parse_pattern(pattern, offset)?;
        s.check_fires()?;
        Ok(s)
    }

    fn parse_pattern(pattern: &str, offset: Duration) -> Result<Schedule, String> {
        let parser = croner::parser::CronParser::builder()
            .seconds(croner::parser::Seconds::Optional)
            .build();
        let cron = parser
            .parse(pattern)
            .map_err(|e| format!("not a cron pattern ({e}): {pattern:?}"))?;
        Ok(Schedule {
            pattern: pattern.to_string(),
            cron: std::sync::Arc::new(cron),
            offset,
        })
    }

    /// A pattern that parses but never matches (Feb 30) would park the target forever.
    /// Finding that out means searching the calendar (tens of milliseconds), so a config with
    /// many targets checks each distinct pattern once.
    fn check_fires(&self) -> Result<(), String> {
        // Whether the pattern matches at all does not depend on the target's offset.
        match self.cron.find_next_occurrence(&Utc::now(), false) {
            Ok(_) => Ok(()),
            Err(_) => Err(format!("the cron pattern {:?} never fires", self.pattern)),
        }
    }

    /// The first fire time strictly after `now`.
    pub fn next_after(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let offset = chrono::Duration::from_std(self.offset).ok()?;
        // Fire times are cron times + offset, so look for the next cron time after now - offset.
        // Cron times are whole seconds: the first one after x is the first one after floor(x).
        // (croner keeps a start time's fraction in its answer, so floor it first.)
        // Checked arithmetic: an offset out of chrono's range is "no fire", never a panic.
        let x = now.checked_sub_signed(offset)?;
        let floor = x - chrono::Duration::nanoseconds(x.timestamp_subsec_nanos() as i64);
        let cron_time = self.cron.find_next_occurrence(&floor, false).ok()?;
        cron_time.checked_add_signed(offset)
    }

    /// The next `n` fire times after `now`.
    pub fn upcoming(&self, now: DateTime<Utc>, n: usize) -> Vec<DateTime<Utc>> {
        let mut out = Vec::with_capacity(n);
        let mut t = now;
        while out.len() < n {
            match self.next_after(t) {
                Some(next) => {
                    out.push(next);
                    t = next;
                }
                None => break,
            }
        }
        out
    }
}

/// The seeded jitter of a target: a fixed offset in `[0, max]`, spread by a hash so that targets
/// sharing a cron pattern do not all fire in the same second.
pub fn jitter_offset(seed: u64, target_name: &str, max: Duration) -> Duration {
    let max_ms = max.as_millis() as u64;
    if max_ms == 0 {
        return Duration::ZERO;
    }
    let mut input = seed.to_le_bytes().to_vec();
    input.extend_from_slice(target_name.as_bytes());
    let digest = crate::digest::sha256(&input);
    let n = u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"));
    Duration::from_millis(n % (max_ms + 1))
}

/// One validated target.
#[derive(Debug, Clone)]
pub struct Target {
    pub name: String,
    pub request: WalkRequest,
    pub submit: bool,
    pub schedule: Schedule,
    /// `pull_ledger`: keep other witnesses' records about this endpoint.
    pub pull_ledger: bool,
    /// `bind_task`: the task-delegation ledger each walk's A2A Task is bound to.
    pub bind_task: Option<String>,
}

/// Where the signing key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// Records are filed unsigned (address lane).
    None,
    File(PathBuf),
    /// `$CREDENTIALS_DIRECTORY/<name>`.
    Credential(String),
}

impl KeySource {
    /// The file to read, if any (a credential needs `$CREDENTIALS_DIRECTORY`).
    pub fn path(&self) -> Result<Option<PathBuf>, String> {
        match self {
            KeySource::None => Ok(None),
            KeySource::File(p) => Ok(Some(p.clone())),
            KeySource::Credential(name) => Ok(Some(crate::credentials::path(
                &format!("witness.key_credential = {name:?}"),
                name,
            )?)),
        }
    }
}

/// A validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from.
    pub path: PathBuf,
    /// The parsed file, for `print-config`.
    pub file: ConfigFile,
    pub witness: Witness,
    pub vantage_limitation: Option<String>,
    pub key: KeySource,
    pub intake: Option<String>,
    pub file_extra_walks: bool,
    /// `witness.task_ledger`, or the spec's default ledger.
    pub task_ledger: String,
    /// `witness.notify`.
    pub notify: crate::notify::Policy,
    pub extra_ca: Vec<PathBuf>,
    pub allow_private_network: bool,
    pub allow_hosts: Vec<String>,
    pub request_deadline: Duration,
    pub body_cap: usize,
    /// `None` when the configured path is missing and `$STATE_DIRECTORY` is not set.
    pub database: Option<PathBuf>,
    /// `None`: the listener is off.
    pub listen: Option<SocketAddr>,
    pub concurrency: usize,
    pub drain_interval: Duration,
    pub shutdown_grace: Duration,
    pub targets: Vec<Target>,
    /// `[ledger]`.
    pub ledger: LedgerSettings,
    /// `[retention]`; `policy.is_off()` by default.
    pub retention: RetentionConfig,
    /// `[alerts]`, validated (secrets not read: `app::alert_delivery` reads them).
    pub alerts: std::sync::Arc<crate::alerts::config::AlertsConfig>,
    /// `[witness_face]`, checked; `None` when the face is off.
    pub witness_face: Option<WitnessFace>,
}

/// Read and validate a config file.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(path, &text)
}

/// Validate config text; `path` names it in messages and anchors relative paths.
pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
    let invalid = |problems| ConfigError::Invalid {
        path: path.to_path_buf(),
        problems,
    };
    let mut file: ConfigFile = toml::from_str(text).map_err(|e| {
        let span = e.span();
        invalid(vec![locate(text, span, e.message().to_string())])
    })?;
    let base_dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    // Relative paths are relative to this file (the header's promise); the trust store reads
    // these itself, later, from whatever the working directory is then (`/` under systemd).
    for pin in &mut file.card_signature.pinned {
        if let Some(p) = &pin.jwks_file {
            pin.jwks_file = Some(rel(&base_dir, p));
        }
    }
    let mut problems = Vec::new();
    let cfg = validate(&file, text, &base_dir, &mut problems);
    if !problems.is_empty() {
        return Err(invalid(problems));
    }
    Ok(Config {
        path: path.to_path_buf(),
        file,
        ..cfg
    })
}

/// A problem at a span: the line and the key written on it.
fn locate(text: &str, span: Option<std::ops::Range<usize>>, message: String) -> Problem {
    let Some(span) = span.filter(|s| !(s.start == 0 && s.end == 0) || text.is_empty()) else {
        return Problem {
            line: None,
            key: None,
            message,
        };
    };
    let start = span.start.min(text.len());
    let line = text[..start].bytes().filter(|&b| b == b'\n').count() + 1;
    let line_text = text.lines().nth(line - 1).unwrap_or("").trim();
    let key = if let Some((k, _)) = line_text.split_once('=') {
        Some(k.trim().trim_matches('"').to_string())
    } else if line_text.starts_with('[') {
        Some(line_text.to_string())
    } else {
        None
    };
    Problem {
        line: Some(line),
        key,
        message,
    }
}

fn rel(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// Where validation puts what it finds: each problem located in the file's text.
struct Found<'a> {
    text: &'a str,
    problems: &'a mut Vec<Problem>,
}

impl Found<'_> {
    /// A problem at a span of the file.
    fn at(&mut self, span: std::ops::Range<usize>, message: String) {
        self.problems.push(locate(self.text, Some(span), message));
    }
}

fn validate(file: &ConfigFile, text: &str, base: &Path, problems: &mut Vec<Problem>) -> Config {
    let mut found = Found { text, problems };
    let w = &file.witness;
    let (key, task_ledger) = validate_witness(w, base, &mut found);
    let n = &file.network;
    check_allow_hosts(n, &mut found);
    check_ranges(file, &mut found);
    let d = &file.daemon;
    let listen = validate_listen(d, &mut found);
    check_ledger_intakes(&file.ledger, &mut found);
    check_mcp(&file.mcp, &mut found);
    let targets = validate_targets(file, &task_ledger, &mut found);
    let witness_face = file
        .witness_face
        .as_ref()
        .and_then(|f| witness_face::validate(f, w, &key, listen, &mut found));
    let alerts = validate_alerts(file, base, &targets, &mut found);
    let database = match &d.database {
        Some(p) => Some(rel(base, p)),
        None => crate::store::default_db_path(None).ok(),
    };
    Config {
        path: PathBuf::new(),
        file: file.clone(),
        witness: witness_of(w),
        vantage_limitation: w.vantage_limitation.clone(),
        key,
        intake: w.intake.as_ref().map(|i| i.get_ref().clone()),
        file_extra_walks: w.file_extra_walks,
        task_ledger,
        notify: w.notify.into(),
        extra_ca: n.extra_ca.iter().map(|p| rel(base, p)).collect(),
        allow_private_network: n.allow_private_network,
        allow_hosts: n.allow_hosts.iter().map(|h| h.get_ref().clone()).collect(),
        request_deadline: Duration::from_secs(n.request_deadline_secs),
        body_cap: n.body_cap_bytes,
        database,
        listen,
        concurrency: (*d.concurrency.get_ref()).max(1),
        drain_interval: Duration::from_secs(d.drain_interval_secs.max(1)),
        shutdown_grace: Duration::from_secs(d.shutdown_grace_secs),
        targets,
        ledger: ledger_settings(&file.ledger),
        retention: retention_config(&file.retention, base),
        alerts: std::sync::Arc::new(alerts),
        witness_face,
    }
}

/// The identity every record names.
fn witness_of(w: &WitnessSection) -> Witness {
    Witness {
        name: w.name.get_ref().clone(),
        vantage: w.vantage.get_ref().clone(),
        key_url: w.key_url.as_ref().map(|u| u.get_ref().clone()),
    }
}

/// `[witness]`: the identity, where the key comes from, the https URLs; the key source and the
/// task ledger.
fn validate_witness(w: &WitnessSection, base: &Path, found: &mut Found) -> (KeySource, String) {
    use crate::walk::check::{Field, Problem};
    for problem in crate::walk::check::witness(&witness_of(w)) {
        let (field, message) = match problem {
            Problem::Empty(Field::WitnessName) => (
                &w.name,
                "must not be empty (the intake refuses a record without a witness name)".into(),
            ),
            Problem::Empty(_) => (
                &w.vantage,
                "must not be empty (the intake refuses a record without a vantage)".into(),
            ),
            Problem::TooLong { field, chars } => (
                if field == Field::WitnessName {
                    &w.name
                } else {
                    &w.vantage
                },
                format!("is {chars} characters long; at most {MAX_NAME_CHARS} are taken"),
            ),
            Problem::NotHttps { why, .. } => (&w.name, why),
        };
        found.at(field.span(), message);
    }
    let key = key_source(w, base, found);
    if let Some(u) = &w.key_url {
        match crate::net::https_url(u.get_ref()) {
            Err(why) => found.at(u.span(), why),
            Ok(_) if key == KeySource::None => found.at(
                u.span(),
                "key_url needs a signing key (witness.key or witness.key_credential): the intake refuses key_url on an unsigned record".into(),
            ),
            Ok(_) => {}
        }
    }
    for url in [&w.intake, &w.task_ledger].into_iter().flatten() {
        if let Err(why) = crate::net::https_url(url.get_ref()) {
            found.at(url.span(), why);
        }
    }
    if let Some(card) = &w.caller_card
        && let Err(why) = caller_card_problem(card.get_ref())
    {
        found.at(card.span(), why);
    }
    let task_ledger = w.task_ledger.as_ref().map_or(
        crate::witness::task_bind::DEFAULT_TASK_LEDGER.to_string(),
        |l| l.get_ref().clone(),
    );
    (key, task_ledger)
}

/// `witness.caller_card`: an https URL of a card location. A receiver declines any other path,
/// a query or a fragment (`not_card_url`, witness-pool.md §6.2), so such a value could never be
/// walked back: refused here rather than sent on every walk.
fn caller_card_problem(raw: &str) -> Result<(), String> {
    let url = crate::net::https_url(raw)?;
    if url.path() != crate::walk::spec::CARD_PATH
        || url.query().is_some()
        || url.fragment().is_some()
    {
        return Err(format!(
            "must be the URL of an agent card, https://<host>{} with no query or fragment (a receiver declines anything else)",
            crate::walk::spec::CARD_PATH
        ));
    }
    Ok(())
}

/// `witness.key` or `witness.key_credential` (not both), or neither.
fn key_source(w: &WitnessSection, base: &Path, found: &mut Found) -> KeySource {
    match (&w.key, &w.key_credential) {
        (Some(k), Some(c)) => {
            found.at(
                c.span(),
                format!(
                    "give either witness.key or witness.key_credential, not both (key is {})",
                    k.get_ref().display()
                ),
            );
            KeySource::None
        }
        (Some(k), None) => KeySource::File(rel(base, k.get_ref())),
        (None, Some(c)) => {
            if c.get_ref().is_empty() || c.get_ref().contains('/') {
                found.at(c.span(), "a credential name is a plain file name".into());
            }
            KeySource::Credential(c.get_ref().clone())
        }
        (None, None) => KeySource::None,
    }
}

/// `network.allow_hosts`: each a `HOST:PORT` the destination rules take.
fn check_allow_hosts(n: &NetworkSection, found: &mut Found) {
    let mut probe = crate::net::NetPolicy::new(true);
    for h in &n.allow_hosts {
        if let Err(why) = probe.allow_host_port(h.get_ref()) {
            found.at(h.span(), why.replace("--allow-host", "allow_hosts entry"));
        }
    }
}

/// Every number has a range: values that parse but overflow a date, an instant or a semaphore
/// later (at start, at reload, at shutdown) are refused here, where a line is named, instead of
/// panicking the daemon.
fn check_ranges(file: &ConfigFile, found: &mut Found) {
    let (n, d, l, r) = (&file.network, &file.daemon, &file.ledger, &file.retention);
    let (deadline, body_cap) = (
        crate::net::options::DEADLINE_SECS_RANGE,
        crate::net::options::BODY_CAP_RANGE,
    );
    let ranges: [(&str, u64, u64, u64); 13] = [
        (
            "network.request_deadline_secs",
            n.request_deadline_secs,
            deadline.0,
            deadline.1,
        ),
        (
            "network.body_cap_bytes",
            n.body_cap_bytes as u64,
            body_cap.0,
            body_cap.1,
        ),
        (
            "daemon.concurrency",
            *d.concurrency.get_ref() as u64,
            1,
            MAX_CONCURRENCY,
        ),
        ("daemon.jitter_secs", d.jitter_secs, 0, 86_400),
        (
            "daemon.drain_interval_secs",
            d.drain_interval_secs,
            1,
            86_400,
        ),
        (
            "daemon.shutdown_grace_secs",
            d.shutdown_grace_secs,
            0,
            3_600,
        ),
        (
            "ledger.poll_interval_secs",
            l.poll_interval_secs,
            10,
            86_400,
        ),
        ("ledger.rate_per_minute", l.rate_per_minute, 1, 600),
        (
            "ledger.overdue_after_hours",
            l.overdue_after_hours,
            1,
            24 * 90,
        ),
        (
            "ledger.head_interval_secs",
            l.head_interval_secs,
            10,
            86_400,
        ),
        (
            "retention.unfiled_days",
            r.unfiled_days.unwrap_or(1),
            1,
            36_500,
        ),
        ("retention.all_days", r.all_days.unwrap_or(1), 1, 36_500),
        ("retention.every_hours", r.every_hours, 1, 720),
    ];
    for (key, value, min, max) in ranges {
        if !(min..=max).contains(&value) {
            found.problems.push(Problem {
                line: line_of_key(found.text, key),
                key: Some(key.into()),
                message: format!("{value} is out of range: must be between {min} and {max}"),
            });
        }
    }
}

/// The first line that sets `key`'s last part (`concurrency = ...` for `daemon.concurrency`):
/// a plain number carries no span.
fn line_of_key(text: &str, key: &str) -> Option<usize> {
    let name = key.rsplit('.').next().unwrap_or(key);
    text.lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(name)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

/// `daemon.listen`: a loopback `IP:PORT`, or `"off"`.
fn validate_listen(d: &DaemonSection, found: &mut Found) -> Option<SocketAddr> {
    match d.listen.get_ref().as_str() {
        "off" => None,
        s => match s.parse::<SocketAddr>() {
            Ok(a) if a.ip().is_loopback() => Some(a),
            Ok(a) => {
                found.at(
                    d.listen.span(),
                    format!(
                        "{a} is not a loopback address: the listener serves the store to auditors and is loopback-only (put a reverse proxy in front to publish it)"
                    ),
                );
                None
            }
            Err(_) => {
                found.at(
                    d.listen.span(),
                    format!("{s:?} is not IP:PORT (e.g. {DEFAULT_LISTEN}) or \"off\""),
                );
                None
            }
        },
    }
}

/// `[[ledger.intake]]`: https URLs, and each override in its range.
fn check_ledger_intakes(l: &LedgerSection, found: &mut Found) {
    for i in &l.intakes {
        if let Err(why) = crate::net::https_url(i.url.get_ref()) {
            found.at(i.url.span(), why);
        }
        if let Some(r) = i.rate_per_minute
            && !(1..=600).contains(&r)
        {
            found.at(
                i.url.span(),
                format!("rate_per_minute {r} is out of range: must be between 1 and 600"),
            );
        }
        if let Some(h) = i.overdue_after_hours
            && !(1..=24 * 90).contains(&h)
        {
            found.at(
                i.url.span(),
                format!("overdue_after_hours {h} is out of range: must be between 1 and 2160"),
            );
        }
    }
}

/// `[mcp]`: a daily cap of 0 would let a model walk nothing.
fn check_mcp(m: &McpSection, found: &mut Found) {
    for cap in [&m.daily_walk_cap, &m.daily_store_only_cap]
        .into_iter()
        .flatten()
    {
        if *cap.get_ref() == 0 {
            found.at(
                cap.span(),
                "must be at least 1 (to let a model walk nothing, do not run `conduct-walker mcp`)"
                    .into(),
            );
        }
    }
}

/// `[[target]]`: each walkable, uniquely named and on a schedule that fires.
fn validate_targets(file: &ConfigFile, task_ledger: &str, found: &mut Found) -> Vec<Target> {
    let d = &file.daemon;
    let jitter_max = Duration::from_secs(d.jitter_secs);
    let mut targets: Vec<Target> = Vec::new();
    // Each distinct pattern's "does it ever fire" answer (an offset does not change it).
    let mut schedules: std::collections::HashMap<String, Result<Schedule, String>> =
        Default::default();
    for t in &file.targets {
        check_target_urls(t, found);
        let name = target_name(t);
        if let Some(prev) = targets.iter().find(|p| p.name == name) {
            let span = t.name.as_ref().map(|n| n.span()).unwrap_or(t.origin.span());
            found.at(
                span,
                format!(
                    "a second target named {:?} (names identify a target in logs and metrics; set `name` to tell them apart)",
                    prev.name
                ),
            );
        }
        let offset = jitter_offset(d.jitter_seed, &name, jitter_max);
        // Each distinct pattern is parsed and searched once; its targets share the result.
        let checked = schedules
            .entry(t.schedule.get_ref().clone())
            .or_insert_with(|| {
                Schedule::parse_pattern(t.schedule.get_ref(), Duration::ZERO)
                    .and_then(|s| s.check_fires().map(|()| s))
            })
            .clone()
            .map(|s| Schedule { offset, ..s });
        let schedule = match checked {
            Ok(s) => s,
            Err(why) => {
                found.at(t.schedule.span(), why);
                continue;
            }
        };
        targets.push(Target {
            name,
            request: scheduled_target_request(&file.witness, t),
            submit: t.submit,
            schedule,
            pull_ledger: t.pull_ledger,
            bind_task: t.bind_task.then(|| task_ledger.to_string()),
        });
    }
    targets
}

/// A target's https URLs, and the options that need an endpoint or a2a mode.
fn check_target_urls(t: &TargetSection, found: &mut Found) {
    let endpoint = t.endpoint.as_ref().map(|e| e.get_ref().as_str());
    for problem in crate::walk::check::urls(t.origin.get_ref(), endpoint) {
        if let crate::walk::check::Problem::NotHttps { field, why } = problem {
            let span = match (&t.endpoint, field) {
                (Some(e), crate::walk::check::Field::Endpoint) => e.span(),
                _ => t.origin.span(),
            };
            found.at(span, why);
        }
    }
    if t.pull_ledger && t.endpoint.is_none() {
        found.at(
            t.origin.span(),
            "pull_ledger needs the target's endpoint (the ledger's batches name endpoints, not origins)".into(),
        );
    }
    if t.bind_task && t.mode != ModeName::A2a {
        found.at(
            t.origin.span(),
            "bind_task needs mode = \"a2a\" (only an A2A agent returns an A2A Task to bind)".into(),
        );
    }
}

/// A target's name: as given, else its endpoint, else its origin.
fn target_name(t: &TargetSection) -> String {
    match &t.name {
        Some(n) => n.get_ref().clone(),
        None => t
            .endpoint
            .as_ref()
            .map(|e| e.get_ref().clone())
            .unwrap_or_else(|| t.origin.get_ref().clone()),
    }
}

/// What a scheduled target's walks ask: its URLs and options, the `[witness]` identity and
/// defaults, and (a2a mode only) `[witness] caller_card`. Only the daemon's schedule builds
/// requests here; every other walk (CLI, MCP, reciprocal) builds its own without a caller card.
fn scheduled_target_request(w: &WitnessSection, t: &TargetSection) -> WalkRequest {
    let mode: Mode = t.mode.into();
    WalkRequest {
        origin: t.origin.get_ref().clone(),
        endpoint: t.endpoint.as_ref().map(|e| e.get_ref().clone()),
        mode,
        wire: t.wire.into(),
        witness: witness_of(w),
        vantage_limitation: w.vantage_limitation.clone(),
        contract_sha256: None,
        privacy: t.privacy.unwrap_or(w.privacy).into(),
        profile: t.request_profile.unwrap_or(w.request_profile).into(),
        caller_card: w
            .caller_card
            .as_ref()
            .filter(|_| mode == Mode::A2a)
            .map(|c| c.get_ref().clone()),
    }
}

/// `[alerts]`, validated against the targets' names; each problem located at the channel,
/// target or key it names.
fn validate_alerts(
    file: &ConfigFile,
    base: &Path,
    targets: &[Target],
    found: &mut Found,
) -> crate::alerts::config::AlertsConfig {
    let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
    match crate::alerts::config::validate(&file.alerts, base, &names) {
        Ok(a) => crate::alerts::config::AlertsConfig {
            witness_name: Some(file.witness.name.get_ref().clone()),
            ..a
        },
        Err(messages) => {
            for message in messages {
                let problem = match AlertsSpans::span_of(found.text, &message) {
                    Some(span) => locate(found.text, Some(span), message),
                    None => Problem {
                        line: None,
                        key: Some("alerts".into()),
                        message,
                    },
                };
                found.problems.push(problem);
            }
            Default::default()
        }
    }
}

/// Where `[alerts]` and its channels, targets and keys are written, read from the text again
/// (the section's own types carry no spans): what lets its problems name a line.
#[derive(Debug, Default, Deserialize)]
struct AlertsSpans {
    #[serde(default)]
    alerts: Option<Spanned<AlertsShape>>,
}

#[derive(Debug, Default, Deserialize)]
struct AlertsShape {
    #[serde(default)]
    channel: Vec<NamedShape>,
    #[serde(default)]
    target: Vec<NamedShape>,
}

#[derive(Debug, Default, Deserialize)]
struct NamedShape {
    #[serde(default)]
    name: Option<Spanned<String>>,
}

/// `[alerts]`'s own keys with where each value is written.
#[derive(Debug, Default, Deserialize)]
struct AlertsKeySpans {
    #[serde(default)]
    alerts: std::collections::BTreeMap<String, Spanned<toml::Value>>,
}

impl AlertsSpans {
    /// The span a problem is about: `alerts.channel "x": ...` at that channel's name,
    /// `alerts.target "x"...` at that target's, `alerts.KEY: ...` (or `alerts: KEY ...`) at
    /// that key's value, else at `[alerts]`.
    fn span_of(text: &str, message: &str) -> Option<std::ops::Range<usize>> {
        let shape: AlertsSpans = toml::from_str(text).ok()?;
        let alerts = shape.alerts?;
        let named = |list: &[NamedShape], prefix: &str| {
            list.iter().find_map(|c| {
                let name = c.name.as_ref()?;
                message
                    .starts_with(&format!("{prefix} {:?}", name.get_ref()))
                    .then(|| name.span())
            })
        };
        if let Some(span) = named(&alerts.get_ref().channel, "alerts.channel") {
            return Some(span);
        }
        if let Some(span) = named(&alerts.get_ref().target, "alerts.target") {
            return Some(span);
        }
        let keys: AlertsKeySpans = toml::from_str(text).unwrap_or_default();
        let key = keys.alerts.iter().find(|(k, _)| {
            message.starts_with(&format!("alerts.{k}:"))
                || message.starts_with(&format!("alerts: {k} "))
        });
        Some(key.map_or(alerts.span(), |(_, v)| v.span()))
    }
}

/// `[ledger]` as the follower takes it: the default policy and each intake's own.
fn ledger_settings(l: &LedgerSection) -> LedgerSettings {
    LedgerSettings {
        follow: l.follow,
        poll_interval: Duration::from_secs(l.poll_interval_secs.max(1)),
        default: ledger_policy(
            l.rate_per_minute,
            l.overdue_after_hours,
            l.head_interval_secs,
        ),
        per_intake: l
            .intakes
            .iter()
            .map(|i| {
                (
                    i.url.get_ref().clone(),
                    ledger_policy(
                        i.rate_per_minute.unwrap_or(l.rate_per_minute),
                        i.overdue_after_hours.unwrap_or(l.overdue_after_hours),
                        l.head_interval_secs,
                    ),
                )
            })
            .collect(),
    }
}

/// `[retention]` as the archiver takes it.
fn retention_config(r: &RetentionSection, base: &Path) -> RetentionConfig {
    RetentionConfig {
        policy: crate::store::archive::Retention {
            unfiled_days: r.unfiled_days.map(|d| d.min(36_500) as u32),
            all_days: r.all_days.map(|d| d.min(36_500) as u32),
        },
        archive_dir: r.archive_dir.as_ref().map(|p| rel(base, p)),
        every: Duration::from_secs(r.every_hours.max(1) * 3_600),
    }
}

impl Config {
    /// The database path, or why there is none.
    pub fn database_path(&self) -> Result<PathBuf, crate::store::StoreError> {
        self.database
            .clone()
            .ok_or_else(|| crate::store::StoreError::NoDbPathInConfig {
                config: self.path.clone(),
            })
    }

    /// Every URL the operator named: targets, the intake override and the task ledger when
    /// the file names one. Private addresses are admitted only at these hosts (and
    /// `allow_hosts`).
    pub fn named_urls(&self) -> Vec<String> {
        let mut urls = Vec::new();
        for t in &self.targets {
            urls.push(t.request.origin.clone());
            urls.extend(t.request.endpoint.clone());
        }
        urls.extend(self.intake.clone());
        if self.file.witness.task_ledger.is_some() {
            urls.push(self.task_ledger.clone());
        }
        urls
    }

    /// The `[network]` section as the options every transport is built from.
    pub fn network_options(&self) -> crate::net::NetworkOptions {
        crate::net::NetworkOptions {
            allow_private_network: self.allow_private_network,
            allow_hosts: self.allow_hosts.clone(),
            extra_ca: self.extra_ca.clone(),
            deadline: self.request_deadline,
            body_cap: self.body_cap,
        }
    }

    /// The effective configuration as TOML: defaults filled, paths resolved.
    pub fn effective_toml(&self) -> String {
        let mut f = self.file.clone();
        let span0 = 0..0;
        match &self.key {
            KeySource::File(p) => f.witness.key = Some(Spanned::new(span0.clone(), p.clone())),
            KeySource::Credential(_) | KeySource::None => {}
        }
        f.network.extra_ca = self.extra_ca.clone();
        f.daemon.database = self.database.clone();
        f.witness.task_ledger = Some(Spanned::new(span0.clone(), self.task_ledger.clone()));
        if !self.retention.policy.is_off() {
            f.retention.archive_dir = self
                .retention
                .archive_dir
                .clone()
                .or_else(|| self.database.as_deref().map(|db| self.retention.dir(db)));
        }
        for (ts, t) in f.targets.iter_mut().zip(&self.targets) {
            ts.name = Some(Spanned::new(span0.clone(), t.name.clone()));
            ts.privacy = Some(ts.privacy.unwrap_or(self.file.witness.privacy));
            ts.request_profile = Some(
                ts.request_profile
                    .unwrap_or(self.file.witness.request_profile),
            );
        }
        let body = toml::to_string_pretty(&f)
            .unwrap_or_else(|e| format!("# cannot render the config as TOML: {e}\n"));
        let mut out = format!(
            "# effective configuration of {} (defaults filled in, paths resolved)\n",
            self.path.display()
        );
        if self.database.is_none() {
            out.push_str("# daemon.database: unset and $STATE_DIRECTORY is not set\n");
        }
        out.push_str(&body);
        out
    }
}

/// Why the `[network]` section gives no transport (the same reasons as the flags').
pub type ConfigTransportError = crate::net::NetworkOptionsError;

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str = r#"
[witness]
name = "w"
vantage = "v"

[[target]]
origin = "https://agent.example"
schedule = "0 0 3 * * *"
"#;

    /// `[alerts]` problems name their line like every other section's: a channel's at its
    /// name, a target's at its name, a key's at its value.
    #[test]
    fn alerts_problems_carry_line_numbers() {
        let text = format!(
            "{MIN}
[alerts]
open_after = 0

[[alerts.channel]]
name = \"hook\"
kind = \"webhook\"
url = \"https://hooks.example/x\"

[[alerts.target]]
name = \"nobody\"
"
        );
        let Err(ConfigError::Invalid { problems, .. }) = parse(Path::new("/tmp/w.toml"), &text)
        else {
            panic!("invalid alerts accepted");
        };
        let line_of = |needle: &str| {
            let n = text.lines().position(|l| l.contains(needle)).unwrap() + 1;
            Some(n)
        };
        let find = |start: &str| {
            problems
                .iter()
                .find(|p| p.message.starts_with(start))
                .unwrap_or_else(|| panic!("no problem starting {start:?} in {problems:?}"))
        };
        let p = find("alerts.channel \"hook\": a webhook is signed");
        assert_eq!(p.line, line_of("name = \"hook\""), "{p}");
        assert_eq!(p.key.as_deref(), Some("name"));
        let p = find("alerts.target \"nobody\": no [[target]] has this name");
        assert_eq!(p.line, line_of("name = \"nobody\""), "{p}");
        let p = find("alerts: open_after");
        assert_eq!(p.line, line_of("open_after = 0"), "{p}");
        assert_eq!(p.key.as_deref(), Some("open_after"));
        assert!(problems.iter().all(|p| p.line.is_some()), "{problems:?}");
    }

    /// `[witness] caller_card` reaches only the scheduled a2a targets' requests, and a value a
    /// receiver would decline is a located problem.
    #[test]
    fn caller_card_goes_to_scheduled_a2a_targets_and_is_checked() {
        let card = "https://walker.example/.well-known/agent-card.json";
        let with = |value: &str| {
            MIN.replace(
                "vantage = \"v\"\n",
                &format!("vantage = \"v\"\ncaller_card = \"{value}\"\n"),
            ) + "\n[[target]]\nname = \"a2a\"\norigin = \"https://b.example\"\nmode = \"a2a\"\nschedule = \"0 0 3 * * *\"\n"
        };
        let c = parse(Path::new("/etc/cw/walker.toml"), &with(card)).unwrap();
        let by_name = |n: &str| &c.targets.iter().find(|t| t.name == n).unwrap().request;
        assert_eq!(by_name("a2a").caller_card.as_deref(), Some(card));
        assert_eq!(by_name("https://agent.example").mode, Mode::Mcp);
        assert_eq!(by_name("https://agent.example").caller_card, None);
        let c = parse(Path::new("/etc/cw/walker.toml"), MIN).unwrap();
        assert!(c.targets.iter().all(|t| t.request.caller_card.is_none()));
        for (bad, says) in [
            (
                "http://walker.example/.well-known/agent-card.json",
                "only https://",
            ),
            (
                "https://walker.example/card.json",
                "must be the URL of an agent card",
            ),
            (
                "https://walker.example/.well-known/agent-card.json?x=1",
                "must be the URL of an agent card",
            ),
            (
                "https://walker.example/.well-known/agent-card.json#me",
                "must be the URL of an agent card",
            ),
            ("not a url", "not a URL"),
        ] {
            let text = with(bad);
            let Err(ConfigError::Invalid { problems, .. }) = parse(Path::new("/tmp/w.toml"), &text)
            else {
                panic!("caller_card {bad:?} accepted");
            };
            let line = text
                .lines()
                .position(|l| l.starts_with("caller_card"))
                .unwrap()
                + 1;
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert!(problems[0].message.contains(says), "{bad}: {}", problems[0]);
            assert_eq!(problems[0].line, Some(line), "{bad}: {}", problems[0]);
            assert_eq!(
                problems[0].key.as_deref(),
                Some("caller_card"),
                "{}",
                problems[0]
            );
        }
    }

    #[test]
    fn minimal_config_fills_defaults() {
        let c = parse(Path::new("/etc/cw/walker.toml"), MIN).unwrap();
        assert_eq!(c.targets.len(), 1);
        assert_eq!(c.targets[0].name, "https://agent.example");
        assert!(c.targets[0].submit);
        assert_eq!(c.concurrency, 4);
        assert_eq!(c.listen, Some(DEFAULT_LISTEN.parse().unwrap()));
        assert_eq!(c.key, KeySource::None);
    }

    #[test]
    fn retention_is_off_by_default_validated_and_shown() {
        let c = parse(Path::new("/etc/cw/walker.toml"), MIN).unwrap();
        assert!(c.retention.policy.is_off());
        assert_eq!(c.retention.every, Duration::from_secs(24 * 3600));
        let text = format!(
            "{MIN}\n[retention]\nunfiled_days = 30\nall_days = 365\narchive_dir = \"arch\"\n"
        );
        let c = parse(Path::new("/etc/cw/walker.toml"), &text).unwrap();
        assert_eq!(c.retention.policy.unfiled_days, Some(30));
        assert_eq!(c.retention.policy.all_days, Some(365));
        // Relative to the config's directory, and what print-config shows.
        assert_eq!(
            c.retention.dir(Path::new("/var/lib/cw/walker.db")),
            Path::new("/etc/cw/arch")
        );
        assert!(
            c.effective_toml()
                .contains("archive_dir = \"/etc/cw/arch\""),
            "{}",
            c.effective_toml()
        );
        // Without a directory: archive/ beside the store.
        let text = format!("{MIN}\n[retention]\nall_days = 10\n");
        let c = parse(Path::new("/etc/cw/walker.toml"), &text).unwrap();
        assert_eq!(
            c.retention.dir(Path::new("/var/lib/cw/walker.db")),
            Path::new("/var/lib/cw/archive")
        );
        for (bad, key) in [
            ("all_days = 0", "retention.all_days"),
            ("unfiled_days = 100000", "retention.unfiled_days"),
            ("every_hours = 0", "retention.every_hours"),
        ] {
            let text = format!("{MIN}\n[retention]\n{bad}\n");
            let e = parse(Path::new("/etc/cw/walker.toml"), &text).unwrap_err();
            let ConfigError::Invalid { problems, .. } = e else {
                panic!("{e}")
            };
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert_eq!(problems[0].key.as_deref(), Some(key));
            assert_eq!(problems[0].line, Some(11), "{bad}: {problems:?}");
        }
        let e = parse(
            Path::new("/etc/cw/walker.toml"),
            &format!("{MIN}\n[retention]\nkeep_days = 3\n"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("keep_days"), "{e}");
    }

    #[test]
    fn jitter_is_stable_bounded_and_spread() {
        let max = Duration::from_secs(60);
        let a = jitter_offset(1, "a", max);
        assert_eq!(a, jitter_offset(1, "a", max));
        assert!(a <= max);
        let distinct: std::collections::HashSet<_> = (0..50)
            .map(|i| jitter_offset(1, &format!("t{i}"), max))
            .collect();
        assert!(distinct.len() > 40, "offsets should spread: {distinct:?}");
        assert_eq!(jitter_offset(1, "a", Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn schedule_shifts_by_offset() {
        let s = Schedule::parse("0 0 3 * * *", Duration::from_secs(90)).unwrap();
        let now: DateTime<Utc> = "2026-01-01T03:00:30Z".parse().unwrap();
        // 03:00:00 + 90 s = 03:01:30 is still ahead of 03:00:30.
        assert_eq!(
            s.next_after(now).unwrap(),
            "2026-01-01T03:01:30Z".parse::<DateTime<Utc>>().unwrap()
        );
        let later: DateTime<Utc> = "2026-01-01T03:01:30Z".parse().unwrap();
        assert_eq!(
            s.next_after(later).unwrap(),
            "2026-01-02T03:01:30Z".parse::<DateTime<Utc>>().unwrap()
        );
        let five = Schedule::parse("17 3 * * *", Duration::ZERO).unwrap();
        assert_eq!(
            five.next_after(now).unwrap(),
            "2026-01-01T03:17:00Z".parse::<DateTime<Utc>>().unwrap()
        );
    }

    #[test]
    fn fractional_now_and_offset_keep_whole_cron_seconds() {
        let s = Schedule::parse("* * * * * *", Duration::from_millis(250)).unwrap();
        let now: DateTime<Utc> = "2026-01-01T00:00:00.900Z".parse().unwrap();
        assert_eq!(
            s.next_after(now).unwrap(),
            "2026-01-01T00:00:01.250Z".parse::<DateTime<Utc>>().unwrap()
        );
        let now: DateTime<Utc> = "2026-01-01T00:00:01.100Z".parse().unwrap();
        assert_eq!(
            s.next_after(now).unwrap(),
            "2026-01-01T00:00:01.250Z".parse::<DateTime<Utc>>().unwrap()
        );
    }

    #[test]
    fn config_path_precedence() {
        // The directories' order is `store::flag_or_systemd_dir`'s (tested there).
        assert_eq!(
            default_config_path(Some(Path::new("x.toml"))).unwrap(),
            Path::new("x.toml")
        );
        assert_eq!(
            crate::store::flag_or_systemd_dir(
                None,
                Some("/etc/a:/etc/b".as_ref()),
                CONFIG_FILE_NAME
            ),
            Some(PathBuf::from("/etc/a/walker.toml"))
        );
    }
}
