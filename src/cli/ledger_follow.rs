//! `conduct-walker ledger follow` and `ledger status` (issue 23): following the records we
//! filed into the ledger without the daemon (as `outbox drain` files without it), and where
//! each stands. The commands are members of `cli::ledger::LedgerCommand`.

use crate::cli::net::NetArgs;
use crate::cli::records::DbArg;
use crate::cli::{EXIT_FINDING, EXIT_OK};
use crate::ledger::follow::Policy;
use crate::ledger::follower::{self, LedgerReads, PassReport};
use crate::store::Store;
use crate::store::ledger as lstore;
use clap::Args;
use serde_json::json;
use std::process::ExitCode;

/// `ledger follow`: one pass over every intake we filed with.
#[derive(Debug, Args)]
pub struct FollowArgs {
    #[command(flatten)]
    pub db: DbArg,
    #[command(flatten)]
    pub net: NetArgs,
    /// Reads per minute per intake (on average; at most one minute's worth at once).
    #[arg(long, default_value_t = Policy::default().rate_per_minute)]
    pub rate_per_minute: u32,
    /// Hours after filing after which a record not anchored is a finding.
    #[arg(long, default_value_t = Policy::default().overdue_after.num_hours() as u64)]
    pub overdue_after_hours: u64,
    /// One JSON object per intake instead of text.
    #[arg(long)]
    pub json: bool,
}

impl FollowArgs {
    pub fn policy(&self) -> Policy {
        Policy {
            rate_per_minute: self.rate_per_minute.max(1),
            overdue_after: chrono::Duration::hours(self.overdue_after_hours as i64),
            ..Policy::default()
        }
    }
}

/// `ledger status`: read-only.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// One JSON object per followed record (and one per intake) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// One pass per intake with the reads `reads_for` builds; exit 1 when a pass opened a finding.
pub async fn follow_with<R: LedgerReads>(
    store: &mut Store,
    policy: &Policy,
    now: chrono::DateTime<chrono::Utc>,
    as_json: bool,
    mut reads_for: impl FnMut(&str) -> anyhow::Result<R>,
) -> anyhow::Result<(ExitCode, Vec<PassReport>)> {
    let mut reports = Vec::new();
    let mut found = false;
    for intake in lstore::intakes(store.connection())? {
        let reads = match reads_for(&intake) {
            Ok(r) => r,
            Err(e) => {
                crate::errln!("{intake}: not followed: {e:#}");
                continue;
            }
        };
        let r = follower::pass(&reads, store, &intake, policy, now).await?;
        found |= r.findings_opened > 0;
        if as_json {
            crate::outln!("{}", serde_json::to_string(&r)?);
        } else {
            crate::outln!("{}", pass_line(&r));
        }
        reports.push(r);
    }
    if reports.is_empty() && !as_json {
        crate::outln!("no filed records to follow");
    }
    let code = if found { EXIT_FINDING } else { EXIT_OK };
    Ok((ExitCode::from(code), reports))
}

fn pass_line(r: &PassReport) -> String {
    let head = r.head.as_ref().map_or("no head held".to_owned(), |h| {
        format!("head held n={} {}", h.n, &h.head[..12])
    });
    let mut line = format!(
        "{}: {} read(s), {head}, {} new entr(y/ies), {} record(s) read, {} anchored, {} inclusion verified, {} new finding(s)",
        r.intake_url, r.reads, r.new_entries, r.polled, r.anchored, r.verified, r.findings_opened
    );
    if r.unreadable > 0 {
        line.push_str(&format!(
            ", {} read(s) without a usable answer (tried again later; the last: {})",
            r.unreadable,
            r.last_unreadable.as_deref().unwrap_or("no usable answer")
        ));
    }
    if r.out_of_budget {
        line.push_str(", more due than the read rate allows now (next pass)");
    }
    line
}

pub fn status(args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let store = args.db.open_read_only()?;
    let conn = store.connection();
    let rows = lstore::all(conn)?;
    let intakes = lstore::all_intakes(conn)?;
    let all_findings = lstore::findings_by_record(conn)?;
    let reply_counts = lstore::latest_reply_counts(conn)?;
    let mut any_finding = false;
    for row in &rows {
        let findings = all_findings.get(&row.sha256).map_or(&[][..], Vec::as_slice);
        let replies = reply_counts.get(&row.sha256).copied().unwrap_or(0);
        any_finding |= !findings.is_empty();
        if args.json {
            crate::outln!(
                "{}",
                json!({"sha256": row.sha256, "intake_url": row.intake_url, "state": row.state,
                    "describe": row.describe(), "filed_at": row.filed_at, "polls": row.polls,
                    "last_seen": row.last_seen, "next_poll_at": row.next_poll_at,
                    "ledger_entry": row.ledger_entry, "claim_sha256": row.claim_sha256,
                    "anchored_at": row.anchored_at, "inclusion_verified_at": row.verified_at,
                    "overdue_at": row.overdue_at, "replies": replies,
                    "findings": findings.iter().map(|f| json!({"kind": f.kind, "opened_at": f.opened_at,
                        "entry_n": f.entry_n, "evidence": f.evidence})).collect::<Vec<_>>()})
            );
        } else {
            let mut line = format!(
                "{}  {}  {}",
                &row.sha256[..row.sha256.len().min(12)],
                row.intake_url,
                row.describe()
            );
            for f in findings {
                line.push_str(&format!("  [finding {} at {}]", f.kind, f.opened_at));
            }
            if replies > 0 {
                line.push_str(&format!("  {replies} repl(y/ies) from the measured party"));
            }
            crate::outln!("{line}");
        }
    }
    for i in &intakes {
        any_finding |= i.findings > 0;
        if args.json {
            crate::outln!("{}", json!({"intake": i}));
        } else {
            let head = match (i.head_n, &i.head) {
                (Some(n), Some(h)) => format!("head held n={n} {}", &h[..h.len().min(12)]),
                _ => "no head held yet".into(),
            };
            crate::outln!(
                "{}: {} filed, {} pending, {} anchored ({} inclusion verified), {} overdue, {} finding(s) opened; {head}; {} read(s) in {} pass(es), last {}",
                i.intake_url,
                i.filed,
                i.pending,
                i.anchored,
                i.verified,
                i.overdue,
                i.findings,
                i.reads,
                i.passes,
                i.last_pass_at.as_deref().unwrap_or("never")
            );
        }
    }
    if rows.is_empty() && !args.json {
        crate::outln!("no filed records followed yet");
    }
    // Read-only: exit 1 when the ledger gave a finding, like `records verify` on a problem.
    Ok(super::exit_answer(!any_finding))
}

/// `ledger follow`.
pub async fn follow_command(args: &FollowArgs) -> anyhow::Result<ExitCode> {
    let mut store = Store::open(&args.db.path()?)?;
    // Intakes came from cards or --intake: private addresses only at hosts given with
    // --allow-host, as for `outbox drain`.
    let transport = args.net.transport(&[])?;
    let (code, _) = follow_with(
        &mut store,
        &args.policy(),
        chrono::Utc::now(),
        args.json,
        |intake| {
            Ok(crate::ledger::client::LedgerClient::new(
                intake,
                transport.clone(),
            )?)
        },
    )
    .await?;
    store.checkpoint()?;
    Ok(code)
}

/// `ledger pull`.
#[derive(Debug, Args)]
pub struct PullArgs {
    /// The endpoint whose records (by any witness) are kept.
    #[arg(long, value_name = "URL")]
    pub endpoint: String,
    /// The ledger: the intake URL records are filed at (default: every intake this store filed
    /// with).
    #[arg(long, value_name = "URL")]
    pub intake: Option<String>,
    #[command(flatten)]
    pub db: DbArg,
    #[command(flatten)]
    pub net: NetArgs,
    /// One JSON object per intake instead of text.
    #[arg(long)]
    pub json: bool,
}

pub async fn pull_command(args: &PullArgs) -> anyhow::Result<ExitCode> {
    crate::net::https_url(&args.endpoint)
        .map_err(|why| anyhow::anyhow!("--endpoint {}: {why}", args.endpoint))?;
    let mut store = Store::open(&args.db.path()?)?;
    let intakes = match &args.intake {
        Some(i) => vec![i.clone()],
        None => lstore::intakes(store.connection())?,
    };
    if intakes.is_empty() {
        anyhow::bail!("no intake to read: give --intake URL (this store filed with none)");
    }
    let named: Vec<&str> = args.intake.iter().map(String::as_str).collect();
    let transport = args.net.transport(&named)?;
    for intake in intakes {
        let client = crate::ledger::client::LedgerClient::new(&intake, transport.clone())?;
        // Until every batch of the chain held is read (a call reads at most
        // ENTRIES_PER_CALL of them).
        let mut total = crate::ledger::pull::PullReport::default();
        loop {
            let r = crate::ledger::pull::pull(
                &client,
                &mut store,
                &intake,
                &args.endpoint,
                chrono::Utc::now(),
            )
            .await?;
            total.head_n = r.head_n;
            total.entries_read += r.entries_read;
            total.listed += r.listed;
            total.kept += r.kept;
            total.disagreeing += r.disagreeing;
            total.ours += r.ours;
            total.unreadable += r.unreadable;
            if let Some(why) = &r.head_unread {
                anyhow::bail!("the ledger of {intake} could not be read: {why}");
            }
            let done = r.head_n.is_none_or(|n| r.upto >= n) || r.unreadable > 0;
            total.upto = r.upto;
            if done {
                break;
            }
        }
        if args.json {
            crate::outln!(
                "{}",
                json!({"intake": intake, "endpoint": args.endpoint, "pull": total})
            );
        } else {
            crate::outln!(
                "{intake}: {} batch entr(y/ies) read up to entry {}: {} record(s) about {}, {} of ours, {} other witnesses' kept ({} disagree with their batch){}",
                total.entries_read,
                total.upto,
                total.listed,
                args.endpoint,
                total.ours,
                total.kept,
                total.disagreeing,
                if total.unreadable > 0 {
                    format!(", {} read(s) without an answer", total.unreadable)
                } else {
                    String::new()
                }
            );
        }
    }
    crate::outln!(
        "checked against their batch (sha, fields); the ledger keeps no signature, so who signed them is not checked"
    );
    store.checkpoint()?;
    Ok(ExitCode::from(EXIT_OK))
}
