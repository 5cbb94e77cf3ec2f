//! `conduct-walker run`, `conduct-walker config check FILE` and `conduct-walker print-config`.

use crate::config::{self, Config, KeySource};
use anyhow::Context as _;
use clap::{Args, Subcommand};
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub config: ConfigFileArg,
}

/// The config file, taken the same way by `run`, `config check` and `print-config`: as an
/// argument or with `--config`.
#[derive(Debug, Args)]
pub struct ConfigFileArg {
    /// The config file (default: $CONFIGURATION_DIRECTORY/walker.toml).
    #[arg(value_name = "FILE", conflicts_with = "config")]
    file: Option<PathBuf>,
    /// The config file, as --config FILE.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

impl ConfigFileArg {
    pub fn path(&self) -> anyhow::Result<PathBuf> {
        Ok(config::default_config_path(
            self.file.as_deref().or(self.config.as_deref()),
        )?)
    }
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate a config file and explain it: targets, next fire times, key, CA, store.
    /// Exit 0 when it is usable, 2 when not.
    Check {
        #[command(flatten)]
        config: ConfigFileArg,
        /// Check the file as `systemctl reload` does (the unit's ExecReload=): a systemd
        /// credential is loaded at start and cannot change without a restart (nor can a reload
        /// process read it), so a key_credential is not read; everything else is checked.
        #[arg(long)]
        reload: bool,
    },
}

#[derive(Debug, Args)]
pub struct PrintConfigArgs {
    #[command(flatten)]
    pub config: ConfigFileArg,
}

/// Logs to stderr: no colours unless stderr is a terminal, and no timestamps under journald
/// (it stamps every line itself). `CONDUCT_WALKER_LOG` (or `RUST_LOG`) sets the filter.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CONDUCT_WALKER_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(filter)
        .with_target(false);
    let result = if std::env::var_os("JOURNAL_STREAM").is_some() {
        builder.without_time().try_init()
    } else {
        builder.try_init()
    };
    // A subscriber already set (tests in one process) is fine.
    let _ = result;
}

/// `run`: start logging and hand the config file's path over to the daemon.
pub fn run(args: RunArgs) -> anyhow::Result<super::Handoff> {
    init_tracing();
    Ok(super::Handoff::Daemon {
        config: args.config.path()?,
    })
}

pub fn print_config(args: PrintConfigArgs) -> anyhow::Result<ExitCode> {
    let cfg = config::load(&args.config.path()?)?;
    crate::out!("{}", cfg.effective_toml());
    Ok(ExitCode::from(super::EXIT_OK))
}

pub fn config_command(cmd: ConfigCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ConfigCommand::Check { config, reload } => check(&config.path()?, reload),
    }
}

fn check(file: &Path, reload: bool) -> anyhow::Result<ExitCode> {
    let cfg = match config::load(file) {
        Ok(c) => c,
        Err(config::ConfigError::Invalid { path, problems }) => {
            crate::outln!("{}: INVALID", path.display());
            for p in &problems {
                crate::outln!("  error: {p}");
            }
            crate::outln!(
                "{}; the daemon would refuse to start",
                problems_count(problems.len())
            );
            return Ok(ExitCode::from(super::EXIT_ERROR));
        }
        Err(e) => return Err(e).context("config check"),
    };
    let (lines, problems) = explain_for(&cfg, reload);
    crate::outln!("{}: parsed", cfg.path.display());
    for l in &lines {
        crate::outln!("{l}");
    }
    if problems.is_empty() {
        crate::outln!("OK: the daemon can start with this file");
        Ok(ExitCode::from(super::EXIT_OK))
    } else {
        for p in &problems {
            crate::outln!("  error: {p}");
        }
        crate::outln!(
            "{}; the daemon would refuse to start",
            problems_count(problems.len())
        );
        Ok(ExitCode::from(super::EXIT_ERROR))
    }
}

/// `[alerts]`: each channel's secrets must be readable (the daemon reads them at start); no
/// receiver is contacted (`conduct-walker alerts test` does that).
fn explain_alerts(cfg: &Config, lines: &mut Vec<String>, problems: &mut Vec<String>) {
    let a = &cfg.alerts;
    if !a.enabled() {
        lines.push("alerts: no channel configured (nothing is planned)".into());
        return;
    }
    let d = a.defaults;
    lines.push(format!(
        "alerts: open after {} failing walk(s), resolve after {} passing, unreachable after {}, at most one alert per target per {} s",
        d.open_after, d.resolve_after, d.unreachable_after, d.min_interval_secs
    ));
    match crate::app::alert_delivery(cfg) {
        Ok(d) => {
            for s in d.senders {
                lines.push(format!(
                    "alerts: channel {} ({}), daily cap {}, secrets readable",
                    s.channel.name,
                    s.channel.kind.as_str(),
                    s.channel.daily_cap
                ));
            }
        }
        Err(e) => problems.push(e),
    }
    // A message read in a mail client or a phone notification can only link a record when
    // the channel knows where the status pages are.
    for c in a.channels.iter().filter(|c| {
        c.pages_url.is_none()
            && matches!(
                c.kind,
                crate::alerts::config::ChannelKind::Email
                    | crate::alerts::config::ChannelKind::Slack
                    | crate::alerts::config::ChannelKind::Ntfy
            )
    }) {
        lines.push(format!(
            "warning: alerts.channel {:?} ({}) has no pages_url: its messages name each record by sha256, with no link to its page",
            c.name,
            c.kind.as_str()
        ));
    }
}

/// The identity config/walker.toml ships with (the package installs it as is): records signed
/// under it would tell the intake nothing true about who walked and from where.
pub const SHIPPED_PLACEHOLDERS: [(&str, &str); 2] = [
    ("name", "Example Witness"),
    ("vantage", "Frankfurt, DE; residential fibre (AS3320)"),
];

fn problems_count(n: usize) -> String {
    format!("{n} problem{}", if n == 1 { "" } else { "s" })
}

/// The signing key: where it comes from, and that it can be read (a credential is left unread
/// on `--reload`).
fn explain_key(cfg: &Config, reload: bool, lines: &mut Vec<String>, problems: &mut Vec<String>) {
    match &cfg.key {
        // Read through the same `app::signing_key` every face signs with, so a credential
        // that is present but unusable is a problem here too, not only at start.
        KeySource::None => match (
            crate::witness::keys::resolve_key_path(None),
            crate::app::signing_key(cfg),
        ) {
            (Some(p), Ok(Some(k))) => lines.push(format!(
                "key: none configured; the credential {} is present and will be used, public key {}",
                p.display(),
                crate::witness::keys::public_key_b64(&k)
            )),
            (_, Err(e)) => problems.push(e.to_string()),
            _ => lines.push(
                "key: none: records are filed unsigned (address lane, 5 per day)".to_string(),
            ),
        },
        KeySource::Credential(n) if reload => lines.push(format!(
            "key: credential {n}, as loaded at start (a reload keeps it; not read here)"
        )),
        source => match crate::app::signing_key(cfg) {
            Ok(Some(k)) => lines.push(format!(
                "key: {} readable, public key {}",
                match source {
                    KeySource::File(p) => p.display().to_string(),
                    KeySource::Credential(n) => format!("credential {n}"),
                    KeySource::None => String::new(),
                },
                crate::witness::keys::public_key_b64(&k)
            )),
            Ok(None) => {}
            Err(e) => problems.push(e.to_string()),
        },
    }
}

/// What the daemon would do with this config, and what would stop it from starting.
pub fn explain(cfg: &Config) -> (Vec<String>, Vec<String>) {
    explain_for(cfg, false)
}

/// [`explain`]; `reload` leaves a credential key unread (see `config check --reload`).
fn explain_for(cfg: &Config, reload: bool) -> (Vec<String>, Vec<String>) {
    let mut lines = Vec::new();
    let mut problems = Vec::new();
    for (key, placeholder) in SHIPPED_PLACEHOLDERS {
        let value = match key {
            "name" => &cfg.witness.name,
            _ => &cfg.witness.vantage,
        };
        if value != placeholder {
            continue;
        }
        // With no target nothing is signed yet, so the installed file still idles; a target
        // would put the placeholder into every record it files.
        let text = format!(
            "[witness] {key} is still the shipped placeholder {placeholder:?}: set your own"
        );
        if cfg.targets.is_empty() {
            lines.push(format!("warning: {text} before adding targets"));
        } else {
            problems.push(format!("{text} (every record would carry it)"));
        }
    }
    lines.push(format!(
        "witness: {:?}, vantage {:?}{}",
        cfg.witness.name,
        cfg.witness.vantage,
        cfg.vantage_limitation
            .as_ref()
            .map(|l| format!(", limitation {l:?}"))
            .unwrap_or_default()
    ));
    // The daemon builds its card-signature trust store at start: a pinned jwks_file it cannot
    // read stops it, so the check says so too.
    if let Err(e) = crate::card_signature::TrustStore::from_config(&cfg.file.card_signature) {
        problems.push(format!("[card_signature]: {e}"));
    }
    explain_key(cfg, reload, &mut lines, &mut problems);
    match &cfg.witness.key_url {
        Some(u) => lines.push(format!("key_url: {u} (domain lane, 50 per day)")),
        None => lines.push("key_url: none (address lane)".into()),
    }
    lines.push(format!(
        "intake: {}",
        cfg.intake
            .as_deref()
            .unwrap_or("the one each agent's card names")
    ));
    if cfg.file_extra_walks {
        lines.push("filing: every walk (extra walks the same day are stored, not counted)".into());
    } else {
        lines.push(
            "filing: at most one record per identity × endpoint × UTC day; the rest kept local"
                .into(),
        );
    }
    explain_alerts(cfg, &mut lines, &mut problems);
    match crate::app::transport(cfg) {
        Ok(_) => lines.push(format!(
            "network: {} extra CA file(s), private networks {}, deadline {} s, body cap {} bytes",
            cfg.extra_ca.len(),
            if cfg.allow_private_network {
                "allowed at the named hosts"
            } else {
                "not allowed"
            },
            cfg.request_deadline.as_secs(),
            cfg.body_cap
        )),
        Err(e) => problems.push(e.to_string()),
    }
    match cfg.database_path() {
        Ok(p) => lines.push(format!("database: {}", p.display())),
        Err(e) => problems.push(e.to_string()),
    }
    match cfg.listen {
        Some(a) => lines.push(format!("listener: http://{a}/ (healthz, metrics, records)")),
        None => lines.push("listener: off".into()),
    }
    lines.push(format!(
        "concurrency: {} walk(s) at once; drain every {} s; shutdown grace {} s",
        cfg.concurrency,
        cfg.drain_interval.as_secs(),
        cfg.shutdown_grace.as_secs()
    ));
    if cfg.targets.is_empty() {
        lines.push("targets: none (the daemon would idle)".into());
    } else {
        lines.push(format!("targets: {}", cfg.targets.len()));
    }
    let now = chrono::Utc::now();
    for t in &cfg.targets {
        let r = &t.request;
        lines.push(format!(
            "  {}: {}{} mode {} wire {} privacy {} {}",
            t.name,
            r.origin,
            r.endpoint
                .as_ref()
                .map(|e| format!(" endpoint {e}"))
                .unwrap_or_default(),
            r.mode.as_str(),
            r.wire.as_str(),
            r.privacy.as_str(),
            if t.submit { "submit" } else { "store only" }
        ));
        let next: Vec<String> = t
            .schedule
            .upcoming(now, 3)
            .iter()
            .map(|t| crate::clock::utc_millis(*t))
            .collect();
        lines.push(format!(
            "    schedule {:?} (UTC) + jitter {:.3} s; next: {}",
            t.schedule.pattern,
            t.schedule.offset.as_secs_f64(),
            next.join(", ")
        ));
    }
    (lines, problems)
}
