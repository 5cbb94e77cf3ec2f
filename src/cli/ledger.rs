//! `conduct-walker ledger ...`: the witness ledger as a Certificate Transparency monitor sees it
//! (spec ledger.md). `verify` is the auditor's stateless check of a whole ledger.
//!
//! `ledger verify --intake URL` reads `/ledger/head`, then `/ledger/export.jsonl` line by line,
//! fetching each entry's bytes (`/ledger/<n>?format=raw`) as its row arrives, and feeds
//! [`crate::ledger::audit::Audit::full`] (the same fold the follower runs) from the root: every export row against the recomputed
//! `jidec-chain-v1`, every entry's bytes against its `claim_sha256`, every `ledger_head` a batch
//! or checkpoint carries against the head recomputed at its n, and the served head, its end
//! marker and the export's end line against the recomputation. `--hold FILE` adds §7 step 5: the
//! head saved there earlier must still be in the chain. Memory: one line, a few entries' bytes
//! in flight, and one 64-character head per entry.

use crate::cli::EXIT_ERROR;
use crate::cli::net::NetArgs;
use crate::ledger::audit::{Audit, Fetched, Need};
use crate::ledger::chain::{self, ROOT};
use crate::ledger::check::HeldHead;
use crate::ledger::client::{ClientError, ExportLimits, ExportReader, LedgerClient};
use crate::ledger::wire::HeadAnswer;
use anyhow::Context;
use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// Check a whole witness ledger, statelessly (a Certificate-Transparency-style audit):
    /// recompute its hash chain from the export, check the served head and end marker, every
    /// entry's bytes against its claim_sha256 and every ledger_head a batch or checkpoint
    /// carries. Exit 0 when it holds, 1 on a finding, 2 when it could not be checked.
    Verify(VerifyArgs),
    /// Follow every record an intake accepted into its ledger, one pass per intake (what the
    /// daemon does by itself every `[ledger] poll_interval_secs`): read each due record, check
    /// inclusion once anchored, extend the head held. Exit 0, or 1 when the pass opened a
    /// finding.
    Follow(super::ledger_follow::FollowArgs),
    /// Where each filed record stands in the ledger: pending, anchored at entry n, inclusion
    /// verified, or a finding (with its evidence in --json). Read-only; exit 1 when there is
    /// a finding.
    Status(super::ledger_follow::StatusArgs),
    /// Keep every record any witness filed about an endpoint, read from the anchored batches
    /// of the intake's ledger and checked against them (sha, fields). The ledger keeps no
    /// signature: these are not checked as signed.
    Pull(super::ledger_follow::PullArgs),
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The ledger: its origin or the intake URL records are filed at
    /// (https://ledger.horizonshield.dev/witness).
    #[arg(long, value_name = "URL")]
    pub intake: String,
    /// A head saved by an earlier run: the ledger must still extend it (never rewound, never
    /// forked). When the ledger holds, the new head is saved there (atomically); a missing file
    /// is created.
    #[arg(long, value_name = "FILE")]
    pub hold: Option<PathBuf>,
    /// One JSON object on stdout instead of text.
    #[arg(long)]
    pub json: bool,
    /// Entries whose bytes are fetched at once.
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u16).range(1..=64))]
    pub parallel: u16,
    /// Deadline of the whole export read, which lasts while every entry's bytes are fetched.
    #[arg(long, value_name = "SECS", default_value_t = 1800)]
    pub export_deadline_secs: u64,
    #[command(flatten)]
    pub net: NetArgs,
}

pub async fn run(cmd: LedgerCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        LedgerCommand::Verify(args) => verify_command(args).await,
        LedgerCommand::Follow(args) => super::ledger_follow::follow_command(&args).await,
        LedgerCommand::Status(args) => super::ledger_follow::status(&args),
        LedgerCommand::Pull(args) => super::ledger_follow::pull_command(&args).await,
    }
}

/// A finding of `ledger verify`: the audit's ([`crate::ledger::audit`]), named as it names them.
pub use crate::ledger::audit::{AuditFinding as VerifyFinding, ServedFinding};

/// The head `--hold` keeps between runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldFile {
    pub chain: String,
    pub n: u64,
    pub head: String,
    /// The end marker at (n, head), for whoever reads the file.
    pub marker_sha256: String,
    pub ledger: String,
    pub saved_at: String,
}

/// What `--hold` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HoldOutcome {
    pub path: PathBuf,
    /// The head read from the file (none on first use).
    pub held: Option<HeldHead>,
    /// The head written to the file (only when the ledger held).
    pub saved: Option<HeldHead>,
}

/// The outcome of one verification.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    pub ledger: String,
    pub holds: bool,
    /// `/ledger/head` (n, head) as served, when it was the 200 form.
    pub served: Option<HeldHead>,
    /// The last head recomputed from the export.
    pub recomputed: Option<HeldHead>,
    pub entries: u64,
    pub batches: u64,
    pub checkpoints: u64,
    pub other_entries: u64,
    pub records_listed: u64,
    pub findings: Vec<VerifyFinding>,
    pub hold: Option<HoldOutcome>,
}

/// Why a verification could not be completed (exit 2): the ledger could not be reached or read
/// at all, or the held head could not be read or saved.
#[derive(Debug, thiserror::Error)]
pub enum CouldNotCheck {
    #[error("could not check: {0}")]
    Fetch(ClientError),
    #[error("could not check: the held head in {path}: {why}")]
    Hold { path: String, why: String },
}

/// How [`verify`] reports progress (a bar on a terminal, nothing otherwise).
pub trait Progress {
    fn start(&self, _entries: u64) {}
    fn advance(&self) {}
    fn finish(&self) {}
}

/// No progress shown.
pub struct Quiet;
impl Progress for Quiet {}

struct Bar(indicatif::ProgressBar);
impl Progress for Bar {
    fn start(&self, entries: u64) {
        self.0.set_length(entries);
    }
    fn advance(&self) {
        self.0.inc(1);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

type RawFetch = tokio::task::JoinHandle<Result<Option<Vec<u8>>, ClientError>>;

/// The full stateless check of a ledger (and of a held head, if given). Findings are in the
/// report; `Err` only when the ledger could not be checked. The judging is the audit's
/// ([`Audit::full`]); this reads the head and the export and fetches the bytes it asks for.
pub async fn verify(
    client: &LedgerClient,
    hold: Option<&Path>,
    parallel: usize,
    progress: &dyn Progress,
) -> Result<VerifyReport, CouldNotCheck> {
    let mut report = VerifyReport {
        ledger: client.origin().to_string(),
        holds: false,
        served: None,
        recomputed: None,
        entries: 0,
        batches: 0,
        checkpoints: 0,
        other_entries: 0,
        records_listed: 0,
        findings: Vec::new(),
        hold: None,
    };
    let held = match hold {
        Some(path) => read_hold(path)?,
        None => None,
    };
    let Some(served) = answer_or_unreadable(client.head().await, &mut report)? else {
        return Ok(report);
    };
    if let HeadAnswer::Head(h) = &served {
        report.served = Some(HeldHead {
            n: h.n,
            head: h.head.clone(),
        });
        progress.start(h.n);
    }
    let Some(export) = answer_or_unreadable(client.export().await, &mut report)? else {
        return Ok(report);
    };
    let mut audit = Audit::full(served, held.clone());
    read_export(client, export, &mut audit, parallel, progress).await?;
    progress.finish();
    let audited = audit.finish();
    report.recomputed = audited.heads.last().cloned();
    let t = audited.tally;
    (report.entries, report.batches, report.checkpoints) = (t.entries, t.batches, t.checkpoints);
    (report.other_entries, report.records_listed) = (t.other_entries, t.records_listed);
    report.findings.extend(audited.findings);
    if let Some(path) = hold {
        let mut outcome = HoldOutcome {
            path: path.to_path_buf(),
            held,
            saved: None,
        };
        if let Some(s) = audited.hold {
            save_hold(path, &s, client.origin())?;
            outcome.saved = Some(s);
        }
        report.hold = Some(outcome);
    }
    report.holds = report.findings.is_empty();
    Ok(report)
}

/// Streams the export into the audit, with up to `parallel` entries' bytes in flight (the
/// audit judges them in export order whenever they come).
async fn read_export(
    client: &LedgerClient,
    mut export: ExportReader,
    audit: &mut Audit,
    parallel: usize,
    progress: &dyn Progress,
) -> Result<(), CouldNotCheck> {
    let mut in_flight: VecDeque<(u64, RawFetch)> = VecDeque::new();
    loop {
        let line = match export.next().await {
            Ok(Some((_, line))) => line.map_err(|e| e.to_string()),
            Ok(None) => break,
            // Served, but not a line (over the cap, cut inside a line): the audit says so.
            Err(e) if e.is_served() => Err(e.to_string()),
            Err(e) => return Err(CouldNotCheck::Fetch(e)),
        };
        match audit.on_line(line) {
            Need::EntryBytes(n) => {
                let c = client.clone();
                in_flight.push_back((n, tokio::spawn(async move { c.entry_raw(n).await })));
                if in_flight.len() >= parallel {
                    let (n, fetch) = in_flight.pop_front().expect("not empty");
                    audit.on_entry(n, fetched(n, fetch).await?);
                    progress.advance();
                }
            }
            Need::Stop => break,
            Need::Nothing | Need::HeldEntry(_) => {}
        }
    }
    while let Some((n, fetch)) = in_flight.pop_front() {
        audit.on_entry(n, fetched(n, fetch).await?);
        progress.advance();
    }
    Ok(())
}

/// `/ledger/head` or the export: a served answer that is not theirs is `answer_unreadable`
/// (`None`: the report ends there); a failed fetch is a failure to check.
fn answer_or_unreadable<T>(
    answer: Result<T, ClientError>,
    report: &mut VerifyReport,
) -> Result<Option<T>, CouldNotCheck> {
    match answer {
        Ok(x) => Ok(Some(x)),
        Err(e) if e.is_served() => {
            report
                .findings
                .push(VerifyFinding::Served(ServedFinding::AnswerUnreadable {
                    detail: e.to_string(),
                }));
            Ok(None)
        }
        Err(e) => Err(CouldNotCheck::Fetch(e)),
    }
}

/// Entry n's bytes as the audit takes them; a fetch that failed is a failure to check.
async fn fetched(n: u64, fetch: RawFetch) -> Result<Fetched, CouldNotCheck> {
    match fetch.await {
        Ok(Ok(Some(raw))) => Ok(Fetched::Bytes(raw)),
        Ok(Ok(None)) => Ok(Fetched::Missing),
        Ok(Err(e)) if e.is_served() => Ok(Fetched::Unreadable(e.to_string())),
        Ok(Err(e)) => Err(CouldNotCheck::Fetch(e)),
        Err(join) => Err(CouldNotCheck::Fetch(ClientError::Fetch {
            url: format!("/ledger/{n}?format=raw"),
            why: join.to_string(),
        })),
    }
}

fn read_hold(path: &Path) -> Result<Option<HeldHead>, CouldNotCheck> {
    let shown = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(CouldNotCheck::Hold {
                path: shown,
                why: e.to_string(),
            });
        }
    };
    let file: HoldFile = serde_json::from_str(&text).map_err(|e| CouldNotCheck::Hold {
        path: shown.clone(),
        why: format!("not a held head ({e})"),
    })?;
    let is_hex64 =
        |s: &str| s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if file.chain != crate::ledger::CHAIN
        || !is_hex64(&file.head)
        || (file.n == 0 && file.head != ROOT)
    {
        return Err(CouldNotCheck::Hold {
            path: shown,
            why: "not a jidec-chain-v1 head (chain, 64 lower-case hex head)".into(),
        });
    }
    Ok(Some(HeldHead {
        n: file.n,
        head: file.head,
    }))
}

/// Writes the held head next to its final place, syncs it, then renames it over: a crash
/// leaves the old head or the new one, never half a file.
fn save_hold(path: &Path, head: &HeldHead, ledger: &str) -> Result<(), CouldNotCheck> {
    let shown = path.display().to_string();
    let fail = |why: String| CouldNotCheck::Hold {
        path: shown.clone(),
        why,
    };
    let file = HoldFile {
        chain: crate::ledger::CHAIN.into(),
        n: head.n,
        head: head.head.clone(),
        marker_sha256: chain::marker_sha256(head.n, &head.head),
        ledger: ledger.into(),
        saved_at: crate::clock::utc_millis(chrono::Utc::now()),
    };
    let mut text = serde_json::to_string_pretty(&file).expect("a held head serialises");
    text.push('\n');
    let name = path
        .file_name()
        .ok_or_else(|| fail("not a file path".into()))?
        .to_string_lossy()
        .into_owned();
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && let Ok(d) = std::fs::File::open(dir)
        {
            let _ = d.sync_all();
        }
        Ok(())
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(format!("cannot save: {e}"))
    })
}

async fn verify_command(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let transport = args
        .net
        .transport(&[args.intake.as_str()])
        .context("ledger verify")?;
    let client = LedgerClient::new(&args.intake, transport)?.with_export_limits(ExportLimits {
        deadline: Duration::from_secs(args.export_deadline_secs),
        ..ExportLimits::default()
    });
    let bar: Box<dyn Progress> = if std::io::stderr().is_terminal() && !args.json {
        let pb = indicatif::ProgressBar::new(0);
        pb.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} entries {pos}/{len} [{bar:30}] {per_sec} {eta}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        Box::new(Bar(pb))
    } else {
        Box::new(Quiet)
    };
    let outcome = verify(&client, args.hold.as_deref(), args.parallel as usize, &*bar).await;
    let report = match outcome {
        Ok(r) => r,
        Err(e) => {
            if args.json {
                crate::outln!(
                    "{}",
                    serde_json::json!({"ledger": client.origin(), "holds": null, "could_not_check": e.to_string()})
                );
            } else {
                crate::errln!("conduct-walker: error: {e}");
            }
            return Ok(ExitCode::from(EXIT_ERROR));
        }
    };
    if args.json {
        crate::outln!(
            "{}",
            serde_json::to_string(&report).expect("a report serialises")
        );
    } else {
        crate::out!("{}", text_report(&report));
    }
    Ok(super::exit_answer(report.holds))
}

fn short(h: &str) -> &str {
    &h[..h.len().min(16)]
}

/// The report as text: what was checked, each finding on its own line, the verdict last.
pub fn text_report(r: &VerifyReport) -> String {
    let mut out = format!("ledger {}\n", r.ledger);
    match &r.served {
        Some(s) => out.push_str(&format!(
            "  served head: n={} head={}\n",
            s.n,
            short(&s.head)
        )),
        None => out.push_str("  served head: none (see the findings)\n"),
    }
    if let Some(c) = &r.recomputed {
        out.push_str(&format!(
            "  recomputed:  n={} head={}\n",
            c.n,
            short(&c.head)
        ));
    }
    out.push_str(&format!(
        "  checked: {} entries ({} batches listing {} records, {} checkpoints, {} other), their bytes against claim_sha256, every ledger_head carried, the export rows, end line and end marker\n",
        r.entries, r.batches, r.records_listed, r.checkpoints, r.other_entries
    ));
    if let Some(h) = &r.hold {
        match &h.held {
            Some(held) => out.push_str(&format!(
                "  held head: n={} head={} from {}\n",
                held.n,
                short(&held.head),
                h.path.display()
            )),
            None => out.push_str(&format!("  held head: none yet in {}\n", h.path.display())),
        }
        if let Some(saved) = &h.saved {
            out.push_str(&format!(
                "  saved head: n={} to {}\n",
                saved.n,
                h.path.display()
            ));
        }
    }
    for f in &r.findings {
        let evidence = match f {
            VerifyFinding::Chain(c) => serde_json::to_string(c),
            VerifyFinding::Served(s) => serde_json::to_string(s),
        }
        .unwrap_or_default();
        out.push_str(&format!("finding: {}: {evidence}\n", f.name()));
    }
    if r.holds {
        out.push_str("holds: the chain, head, end marker, export and every entry's bytes agree\n");
    } else {
        out.push_str(&format!("does not hold: {} finding(s)\n", r.findings.len()));
    }
    out
}
