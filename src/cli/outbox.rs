//! `conduct-walker outbox ...`: the submissions a store still has to file, for witnesses who
//! do not run the daemon (which drains the outbox by itself every `drain_interval_secs`).

use crate::cli::net::NetArgs;
use crate::cli::records::DbArg;
use crate::cli::{EXIT_FINDING, EXIT_OK};
use crate::clock::SystemClock;
use crate::pipeline::{Pipeline, PipelineConfig};
use crate::store::outbox::{self, Submission};
use clap::Subcommand;
use serde_json::json;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Debug, Subcommand)]
pub enum OutboxCommand {
    /// List the submissions not yet settled (queued, being sent, kept local, host offline),
    /// oldest first. Read-only.
    List {
        #[command(flatten)]
        db: DbArg,
        /// One JSON object per line instead of text.
        #[arg(long)]
        json: bool,
    },
    /// File every submission that is due now (queued past its retry time, or `sending` past
    /// its retry time: a process stopped mid-request, or the intake's answer was lost), within
    /// the intakes' lanes, and record each answer. A `sending` row is looked up first
    /// (`GET <intake>/<sha256>`) and sent again only on a 404. Exit 0 when nothing due is left
    /// unfiled, 1 when some stay queued or were refused.
    ///
    /// A record signed at its walk is signed again as it is sent, with the key of --config (the
    /// one its key_url serves now, after any rotation); without --config it goes with the
    /// signature made at its walk, which the intake refuses once the key has changed.
    Drain {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        net: NetArgs,
        /// Sign at filing time with the key this config names (`[witness] key` or
        /// `key_credential`); its `database` unless --db is given.
        #[arg(long, value_name = "FILE")]
        config: Option<std::path::PathBuf>,
    },
}

pub async fn run(cmd: OutboxCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        OutboxCommand::List { db, json } => list(&db, json),
        OutboxCommand::Drain { db, net, config } => drain(db, &net, config.as_deref()).await,
    }
}

fn list(db: &DbArg, as_json: bool) -> anyhow::Result<ExitCode> {
    let store = db.open_read_only()?;
    let rows = outbox::unsettled(store.connection())?;
    for (sha, row) in &rows {
        if as_json {
            crate::outln!("{}", row_json(sha, row));
        } else {
            crate::outln!("{}", row_line(sha, row));
        }
    }
    if !as_json {
        use crate::filing::SubmissionState;
        let count = |state| rows.iter().filter(|(_, r)| r.state == state).count();
        crate::outln!(
            "{} unsettled submission(s), {} queued, {} waiting for a lookup (sent, the intake's answer lost: asked before any resend); `conduct-walker outbox drain --db {}` files what is due",
            rows.len(),
            count(SubmissionState::Queued),
            count(SubmissionState::Sending),
            db.path()?.display()
        );
    }
    Ok(ExitCode::from(EXIT_OK))
}

fn row_line(sha: &str, r: &Submission) -> String {
    let mut line = format!(
        "{}  {}  {}  attempts {}",
        &sha[..sha.len().min(12)],
        r.state,
        r.intake_url,
        r.attempts
    );
    if let Some(next) = &r.next_attempt_at {
        line.push_str(&format!("  next {next}"));
    }
    match (&r.last_answer, r.last_status, &r.last_error) {
        (Some(answer), status, error) => {
            line.push_str(&format!("  last answer {answer}"));
            if let Some(status) = status {
                line.push_str(&format!(" (http {status})"));
            }
            if let Some(error) = error {
                line.push_str(&format!(": {error}"));
            }
        }
        (None, _, Some(error)) => line.push_str(&format!("  last error: {error}")),
        (None, _, None) => {}
    }
    if r.state == crate::filing::SubmissionState::Sending {
        // Why it waits, and for what: the intake is asked before anything is sent again.
        line.push_str(&format!("  {}", r.summary().short));
    }
    line
}

fn row_json(sha: &str, r: &Submission) -> serde_json::Value {
    let summary = r.summary();
    json!({
        "sha256": sha,
        "state": r.state,
        "intake_url": r.intake_url,
        "lane": r.lane,
        "endpoint": r.endpoint,
        "attempts": r.attempts,
        "next_attempt_at": r.next_attempt_at,
        "last_answer": r.last_answer,
        "last_status": r.last_status,
        "last_error": r.last_error,
        "reason_code": r.reason_code,
        "outcome": summary.outcome,
        "summary": summary.text,
    })
}

async fn drain(
    mut db: DbArg,
    net: &NetArgs,
    config: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    let mut signing = None;
    if let Some(path) = config {
        let cfg = crate::config::load(path)?;
        signing = crate::app::signing(&cfg)?;
        if db.db.is_none() {
            db.db = Some(cfg.database_path()?);
        }
    }
    let db = &db;
    // No host is named here: intakes came from cards (or an earlier --intake), so private
    // addresses are admitted only at hosts given with --allow-host.
    let pipeline = Pipeline::new(PipelineConfig {
        signing,
        ..PipelineConfig::new(net.transport(&[])?, db.path()?, Arc::new(SystemClock))
    })?;
    let report = pipeline.drain_outbox().await?;
    // Task bindings queued by a walk that stopped before sending them (spec §5.1); one left
    // `sending` is settled as unknown, never sent twice.
    let bindings = pipeline.send_due_task_bindings().await?;
    pipeline.checkpoint().await?;
    crate::outln!(
        "sent {}: {} filed, {} refused, {} still queued; looked up {} whose answer was lost",
        report.attempted,
        report.filed,
        report.refused,
        report.deferred,
        report.looked_up
    );
    if bindings != Default::default() {
        crate::outln!(
            "task bindings: {} sent, {} left sending by a stopped process settled as unknown (not resent)",
            bindings.sent,
            bindings.settled_unknown
        );
    }
    let settled = report.deferred == 0 && report.refused == 0;
    if !settled {
        // Which rows wait, at which intake, and what the intake (or the way to it) did.
        let store = db.open_read_only()?;
        for (sha, row) in outbox::unsettled(store.connection())? {
            crate::outln!("  {}", row_line(&sha, &row));
        }
    }
    Ok(ExitCode::from(if settled { EXIT_OK } else { EXIT_FINDING }))
}
