//! `conduct-walker alerts ...`: send a test message to each configured channel, and list the
//! open incidents and the alert outbox's delivery state.

use crate::alerts::deliver::Answer;
use crate::alerts::outbox;
use crate::alerts::payload::AlertPayload;
use crate::cli::daemon::ConfigFileArg;
use crate::cli::records::DbArg;
use crate::cli::{EXIT_ERROR, EXIT_FINDING, EXIT_OK};
use crate::config;
use clap::Subcommand;
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum AlertsCommand {
    /// Send a test message to each channel of the config's `[alerts]` (or only `--channel`) and
    /// say what each answered. Exit 0 when every channel took it, 1 when one did not.
    Test {
        #[command(flatten)]
        config: ConfigFileArg,
        /// Only this channel.
        #[arg(long, value_name = "NAME")]
        channel: Option<String>,
    },
    /// The open incidents and the latest alerts with their delivery state. Read-only.
    List {
        #[command(flatten)]
        db: DbArg,
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
        /// How many alerts to show.
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
}

pub async fn run(cmd: AlertsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        AlertsCommand::Test { config, channel } => test(&config, channel.as_deref()).await,
        AlertsCommand::List { db, json, limit } => list(&db, json, limit),
    }
}

async fn test(arg: &ConfigFileArg, only: Option<&str>) -> anyhow::Result<ExitCode> {
    let cfg = config::load(&arg.path()?)?;
    if !cfg.alerts.enabled() {
        crate::outln!("no [[alerts.channel]] configured: nothing to test");
        return Ok(ExitCode::from(EXIT_ERROR));
    }
    if let Some(name) = only
        && !cfg.alerts.channels.iter().any(|c| c.name == name)
    {
        anyhow::bail!("no alert channel named {name:?} in {}", cfg.path.display());
    }
    let crate::alerts::deliver::Delivery { senders, transport } =
        crate::app::alert_delivery(&cfg).map_err(anyhow::Error::msg)?;
    let payload = AlertPayload::of_test(chrono::Utc::now());
    let mut all_ok = true;
    for s in senders
        .iter()
        .filter(|s| only.is_none_or(|n| n == s.channel.name))
    {
        let answer = s.send(&transport, &payload).await;
        all_ok &= matches!(answer, Answer::Delivered { .. });
        crate::outln!(
            "{} ({}): {}",
            s.channel.name,
            s.channel.kind.as_str(),
            answer.describe()
        );
    }
    Ok(ExitCode::from(if all_ok { EXIT_OK } else { EXIT_FINDING }))
}

fn list(db: &DbArg, as_json: bool, limit: u32) -> anyhow::Result<ExitCode> {
    let store = db.open_read_only()?;
    let conn = store.connection();
    let open = outbox::open_incidents(conn)?;
    let rows = outbox::latest(conn, limit)?;
    let states = outbox::by_state(conn)?;
    if as_json {
        let rows: Vec<_> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "alert_id": r.alert_id, "channel": r.channel, "target": r.target,
                    "type": r.kind, "state": r.state, "attempts": r.attempts,
                    "next_attempt_at": r.next_attempt(), "last_status": r.last_status,
                    "last_answer": r.last_answer, "created_at": r.created_at,
                    "delivered_at": r.delivered_at,
                })
            })
            .collect();
        let doc = serde_json::json!({
            "open_incidents": open,
            "alerts": rows,
            "by_state": states.iter().map(|(s, n)| (s.clone(), *n)).collect::<std::collections::BTreeMap<_, _>>(),
        });
        crate::outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::from(EXIT_OK));
    }
    if open.is_empty() {
        crate::outln!("no open incident");
    }
    for i in &open {
        crate::outln!(
            "OPEN {} {} #{} since {}{}",
            i.target,
            i.kind,
            i.number,
            i.opened_at,
            if i.announced {
                ""
            } else {
                " (not announced yet)"
            }
        );
    }
    for r in &rows {
        crate::outln!(
            "{} {} {} {} -> {} {} {} attempt(s){}{}",
            r.created_at,
            r.alert_id,
            r.kind,
            r.target.as_deref().unwrap_or("-"),
            r.channel,
            r.state,
            r.attempts,
            r.last_answer
                .as_deref()
                .map(|a| format!("; last: {a}"))
                .unwrap_or_default(),
            r.next_attempt()
                .map(|t| format!("; next at {t}"))
                .unwrap_or_default(),
        );
    }
    let summary: Vec<String> = states.iter().map(|(s, n)| format!("{n} {s}")).collect();
    crate::outln!(
        "alerts: {}",
        if summary.is_empty() {
            "none".to_string()
        } else {
            summary.join(", ")
        }
    );
    Ok(ExitCode::from(EXIT_OK))
}
