//! `conduct-walker ring ...`: build, verify and state NENRIN rings (spec rings.md §10).
//!
//! `build` writes exactly the reference builder's bytes and prints the sha256; `verify`
//! rebuilds a claimed ring and says MATCH (exit 0) or MISMATCH (exit 1, with the keys that
//! differ); `statement` writes the in-toto Statement; `dsse-verify` checks a signed envelope
//! (exit 0 verified, 1 not); `inputs` writes the witness files of an endpoint's month from the
//! ledger records the store keeps. Input that cannot be used exits 2 and writes nothing.

use super::records::DbArg;
use super::{EXIT_FINDING, EXIT_OK};
use crate::ring_files::{self, Inputs};
use crate::rings::inputs::Anchored;
use crate::rings::{self, Limits, compare, dsse, statement};
use anyhow::{Context, anyhow};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum RingCommand {
    /// Build an endpoint's ring for a month, byte-identical to the reference builder
    /// (make_ring.py v1.1), and print its sha256. Refuses (exit 2, nothing written) what the
    /// reference refuses.
    Build(BuildArgs),
    /// Rebuild a claimed ring from its inputs with the ring's own endpoint and month: MATCH
    /// (exit 0) or MISMATCH (exit 1) and the keys that differ, with both values.
    Verify(VerifyArgs),
    /// Write the in-toto Statement of a ring (what the register signs), byte-identical to the
    /// reference emitter (ring_to_intoto.py).
    Statement(StatementArgs),
    /// Verify a ring's DSSE envelope: the PAE signature (ES256, the JWKS key named by keyid),
    /// the Statement, and with --ring its subject digest and counts against the ring. Exit 0
    /// verified, 1 not (with the reason).
    DsseVerify(DsseVerifyArgs),
    /// Write the witness files of an endpoint's month from the ledger records the store holds
    /// (`ledger pull`, `ledger follow`): anchored records only, unwrapped, in ledger order, so
    /// that `ring build --witness DIR/*` reads them in that order.
    Inputs(InputsArgs),
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The month, YYYY-MM.
    #[arg(long, value_name = "YYYY-MM")]
    pub month: String,
    /// The endpoint (default: the history's "endpoint").
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    #[command(flatten)]
    pub from: RingSources,
    /// A .json file to write, or a folder: then OUT/<slug>/<YYYY-MM>.json.
    #[arg(long, value_name = "PATH", default_value = "rings")]
    pub out: PathBuf,
    /// Replace a ring already written there (a ring is otherwise written once).
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The ring file to check.
    pub ring: PathBuf,
    /// What it was built from.
    #[command(flatten)]
    pub from: RingSources,
    /// Print one JSON object (result, both digests, every differing key with both values).
    #[arg(long)]
    pub json: bool,
}

/// What a ring is built from: `ring build` builds with them, `ring verify` rebuilds.
#[derive(Debug, Args)]
pub struct RingSources {
    /// The gate's /history export, or the register's archive of it (history/<slug>.json).
    #[arg(long, value_name = "FILE")]
    pub history: PathBuf,
    /// A witness file (one JSON value); repeat it, in order: order can change the ring.
    #[arg(long, value_name = "FILE")]
    pub witness: Vec<PathBuf>,
    /// The previous ring to chain to (it must be in ring form, for this endpoint, and earlier).
    #[arg(long, value_name = "FILE")]
    pub prev: Option<PathBuf>,
}

impl RingSources {
    /// The builder's inputs for `month` and `endpoint` (None: the history's).
    fn inputs<'a>(&'a self, month: &'a str, endpoint: Option<&'a str>) -> Inputs<'a> {
        Inputs {
            month,
            endpoint,
            history: &self.history,
            witnesses: &self.witness,
            prev: self.prev.as_deref(),
            limits: Limits::default(),
        }
    }
}

#[derive(Debug, Args)]
pub struct StatementArgs {
    /// The ring file. When its path ends rings/<slug>/<YYYY-MM>.json, that names the subject.
    pub ring: PathBuf,
    /// Write the Statement's exact bytes here (no newline) instead of to stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace --out if it exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct DsseVerifyArgs {
    /// The envelope (rings/<slug>/<YYYY-MM>.intoto.dsse.json).
    pub envelope: PathBuf,
    /// The register's JWK Set (rings/jwks.json).
    #[arg(long, value_name = "FILE")]
    pub jwks: PathBuf,
    /// The ring file the Statement is about: its sha256 and counts are checked too.
    #[arg(long, value_name = "FILE")]
    pub ring: Option<PathBuf>,
    /// Print one JSON object with every check.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct InputsArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// The month, YYYY-MM (a record belongs to the month its walk's walked_at names).
    #[arg(long, value_name = "YYYY-MM")]
    pub month: String,
    /// The endpoint the records witness (as `ledger pull --endpoint`).
    #[arg(long, value_name = "URL")]
    pub endpoint: String,
    /// The intake whose ledger orders them (needed when records of the endpoint were filed
    /// with more than one).
    #[arg(long, value_name = "URL")]
    pub intake: Option<String>,
    /// The folder to write the NNNNNN-e<entry>-<sha>.json files into (created; it must hold no
    /// .json file, so that DIR/* is exactly these).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

pub async fn run(command: RingCommand) -> anyhow::Result<ExitCode> {
    // File reads and hashing block; keep them off the async thread.
    tokio::task::spawn_blocking(move || match command {
        RingCommand::Build(a) => build(a),
        RingCommand::Verify(a) => verify(a),
        RingCommand::Statement(a) => statement_cmd(a),
        RingCommand::DsseVerify(a) => dsse_verify(a),
        RingCommand::Inputs(a) => inputs(a),
    })
    .await
    .context("the ring command panicked")?
}

fn build(a: BuildArgs) -> anyhow::Result<ExitCode> {
    let built = ring_files::build(&a.from.inputs(&a.month, a.endpoint.as_deref()))
        .map_err(|e| anyhow!("ring refused: {e}"))?;
    let path = ring_files::out_path(&a.out, &built);
    ring_files::write_once(&path, &built.bytes, a.force)?;
    crate::outln!("{}", path.display());
    crate::outln!("sha256 {}", built.sha256);
    crate::outln!(
        "{} {}: {} instants ({} reached), {} witnesses",
        built.endpoint,
        built.month.as_str(),
        built.ring.instants_sampled,
        built.ring.instants_reached,
        built.ring.witnesses
    );
    Ok(ExitCode::from(EXIT_OK))
}

/// What a claimed ring says it is: its endpoint and month.
fn claimed(bytes: &[u8], path: &Path) -> anyhow::Result<(String, String)> {
    use crate::json::bounded::{self, Input, Refused};
    let doc =
        bounded::read(Input::RingFile, bytes, crate::json::ReadOptions::LENIENT).map_err(|e| {
            match e {
                Refused::NotJson(e) => anyhow!("{} is not JSON: {e}", path.display()),
                over => anyhow!("{}: {over}", path.display()),
            }
        })?;
    let text = |k: &str| {
        doc.root()
            .get(k)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("{} has no string {k:?}: not a ring", path.display()))
    };
    Ok((text("endpoint")?, text("ring")?))
}

fn verify(a: VerifyArgs) -> anyhow::Result<ExitCode> {
    let bytes = ring_files::read_capped(&a.ring, Limits::default().ring_file_bytes, "ring")?;
    let (endpoint, month) = claimed(&bytes, &a.ring)?;
    let built = ring_files::build(&a.from.inputs(&month, Some(&endpoint)))
        .map_err(|e| anyhow!("the ring could not be rebuilt: {e}"))?;
    let claimed_sha = crate::digest::sha256_hex(&bytes);
    let diffs = compare::differing_keys(&built.bytes, &bytes);
    let matched = diffs.is_empty();
    if a.json {
        let v = serde_json::json!({
            "result": if matched { "MATCH" } else { "MISMATCH" },
            "ring": a.ring.display().to_string(),
            "endpoint": endpoint,
            "month": month,
            "claimed_sha256": claimed_sha,
            "rebuilt_sha256": built.sha256,
            "differing_keys": diffs,
        });
        crate::outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        crate::outln!("claimed  sha256 {claimed_sha}  {}", a.ring.display());
        crate::outln!("rebuilt  sha256 {}", built.sha256);
        if matched {
            crate::outln!("MATCH");
        } else {
            crate::outln!("MISMATCH");
            for d in &diffs {
                let show =
                    |v: &Option<String>| v.as_deref().map_or("(absent)".into(), compare::clip);
                if d.key == "(layout)" {
                    crate::outln!(
                        "  the values are equal but the file is not in ring form (layout, escapes or numbers differ)"
                    );
                } else {
                    crate::outln!(
                        "  {}: rebuilt {} | claimed {}",
                        d.key,
                        show(&d.rebuilt),
                        show(&d.claimed)
                    );
                }
            }
        }
    }
    Ok(ExitCode::from(if matched { EXIT_OK } else { EXIT_FINDING }))
}

fn statement_cmd(a: StatementArgs) -> anyhow::Result<ExitCode> {
    let bytes = ring_files::read_capped(&a.ring, Limits::default().ring_file_bytes, "ring")?;
    let s = statement::emit(&bytes, Some(&a.ring.to_string_lossy()))?;
    match &a.out {
        Some(out) => {
            ring_files::write_once(out, &s.bytes, a.force)?;
            crate::errln!(
                "{} ({} bytes, sha256 {}), subject {} sha256 {}",
                out.display(),
                s.bytes.len(),
                crate::digest::sha256_hex(&s.bytes),
                s.subject_name,
                s.subject_sha256
            );
        }
        None => {
            use std::io::Write as _;
            let mut stdout = crate::output::stdout();
            stdout.write_all(&s.bytes)?;
            stdout.write_all(b"\n")?;
        }
    }
    Ok(ExitCode::from(EXIT_OK))
}

fn dsse_verify(a: DsseVerifyArgs) -> anyhow::Result<ExitCode> {
    let cap = Limits::default().ring_file_bytes;
    let envelope = ring_files::read_capped(&a.envelope, cap, "envelope")?;
    let jwks_bytes = ring_files::read_capped(&a.jwks, cap, "JWKS")?;
    let (keys, skipped) =
        dsse::parse_jwks(&jwks_bytes).map_err(|e| anyhow!("{}: {e}", a.jwks.display()))?;
    let ring = a
        .ring
        .as_deref()
        .map(|p| ring_files::read_capped(p, cap, "ring"))
        .transpose()?;
    let report = dsse::verify(&envelope, &keys, ring.as_deref());
    let verified = report.verified();
    if a.json {
        let v = serde_json::json!({
            "result": if verified { "VERIFIED" } else { "NOT VERIFIED" },
            "envelope": a.envelope.display().to_string(),
            "keyid": report.keyid,
            "subject_name": report.subject_name,
            "subject_sha256": report.subject_sha256,
            "statement_sha256": report.statement.as_ref().map(crate::digest::sha256_hex),
            "checks": report.checks,
            "skipped_keys": skipped,
        });
        crate::outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for c in &report.checks {
            crate::outln!(
                "{} {}: {}",
                if c.ok { "ok  " } else { "FAIL" },
                c.name,
                c.detail
            );
        }
        for s in &skipped {
            crate::outln!("note: JWKS {s} (skipped)");
        }
        match report.failure() {
            None => crate::outln!("VERIFIED"),
            Some(f) => crate::outln!("NOT VERIFIED: {}: {}", f.name, f.detail),
        }
    }
    Ok(super::exit_answer(verified))
}

fn inputs(a: InputsArgs) -> anyhow::Result<ExitCode> {
    let month = rings::Month::parse(&a.month)?;
    let store = a.db.open_read_only()?;
    let (records, disagreeing) = crate::store::ledger::anchored_for_endpoint(&store, &a.endpoint)?;
    let mut intakes: Vec<&str> = records.iter().map(|r| r.intake_url.as_str()).collect();
    intakes.sort_unstable();
    intakes.dedup();
    let intake = match (&a.intake, intakes.as_slice()) {
        (Some(i), _) => i.clone(),
        (None, [one]) => one.to_string(),
        (None, []) => String::new(),
        (None, many) => {
            return Err(anyhow!(
                "records of {} are anchored in {} ledgers ({}): choose one with --intake, since ledger order holds within one ledger only",
                a.endpoint,
                many.len(),
                many.join(", ")
            ));
        }
    };
    let mut archived = 0;
    let chosen: Vec<Anchored> = records
        .into_iter()
        .filter(|r| r.intake_url == intake)
        .filter_map(|r| match r.record_canonical {
            None => {
                archived += 1;
                None
            }
            Some(record_canonical) => Some(Anchored {
                sha256: r.sha256,
                ledger_entry: r.ledger_entry,
                ours: r.ours,
                record_canonical,
                signed: r.signed,
                signed_domain: r.signed_domain,
                mode: r.mode,
                witness_name: r.witness_name,
                vantage: r.vantage,
                counted: r.counted,
                count_reason: r.count_reason,
                endpoint: r.endpoint,
            }),
        })
        .collect();
    let (files, left) = rings::inputs::witness_files(chosen, &month);
    prepare_out_dir(&a.out)?;
    for f in &files {
        ring_files::write_once(&a.out.join(&f.name), &f.bytes, false)?;
    }
    let ours = files.iter().filter(|f| f.ours).count();
    crate::outln!(
        "{} witness files in {} ({} ours, {} other witnesses'), in ledger order of {}",
        files.len(),
        a.out.display(),
        ours,
        files.len() - ours,
        if intake.is_empty() {
            "(no ledger)"
        } else {
            &intake
        }
    );
    let unknown_counted = files.len() - ours;
    if unknown_counted > 0 {
        crate::outln!(
            "note: `ledger pull` does not keep the intake's counted flag, so the {unknown_counted} other witnesses' records are written without it (read as counted)"
        );
    }
    for (n, what) in [
        (left.other_month, "walked in another month"),
        (left.undated, "have no walked_at"),
        (archived, "are archived (records restore brings them back)"),
        (disagreeing, "disagree with their batch (see ledger pull)"),
    ] {
        if n > 0 {
            crate::outln!("left out: {n} anchored records that {what}");
        }
    }
    crate::outln!(
        "next: conduct-walker ring build --month {} --endpoint {} --history HISTORY --witness {}/*",
        month.as_str(),
        a.endpoint,
        a.out.display()
    );
    Ok(ExitCode::from(EXIT_OK))
}

/// Create the folder; refuse one that already holds .json files (they would join `DIR/*`).
fn prepare_out_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let stale = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok())
        .any(|e| e.path().extension().is_some_and(|x| x == "json"));
    if stale {
        return Err(anyhow!(
            "{} already holds .json files; give an empty folder, so that {}/* is exactly these inputs",
            dir.display(),
            dir.display()
        ));
    }
    Ok(())
}
