//! `conduct-walker records ...`: the auditor commands over the record store.
//!
//! Everything except `import` opens the database read-only and never writes. Exit codes: 0 all
//! good, 1 a finding (verification failed), 2 usage or I/O errors. The auditor walkthrough
//! (including checking one record with `sha256sum` and `verify-file`) is in `src/store/README.md`.

use crate::cli::{EXIT_FINDING, EXIT_OK};
use crate::store::transfer::{self, ExportOptions};
use crate::store::{self, ListFilter, NewRecord, RecordRow, Store, StoreError, StoredRecord};
use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use std::io::{IsTerminal as _, Read as _, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Where the store is.
#[derive(Debug, Clone, Args)]
pub struct DbArg {
    /// The store (default: $STATE_DIRECTORY/walker.db).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

impl DbArg {
    pub(crate) fn path(&self) -> anyhow::Result<PathBuf> {
        Ok(store::default_db_path(self.db.as_deref())?)
    }

    pub(crate) fn open_read_only(&self) -> anyhow::Result<Store> {
        Ok(Store::open_read_only(&self.path()?)?)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "UPPER")]
pub enum Outcome {
    Pass,
    Fail,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum RecordsCommand {
    /// List stored records, one line each: time, endpoint, verdict, sha12, signed or unsigned.
    List {
        #[command(flatten)]
        db: DbArg,
        /// Only records of this endpoint (exact match).
        #[arg(long, value_name = "URL")]
        endpoint: Option<String>,
        /// Only records walked at or after DATE (YYYY-MM-DD or RFC 3339).
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        /// Only records with this verdict outcome (PASS or FAIL, any case).
        #[arg(long, value_enum, ignore_case = true)]
        outcome: Option<Outcome>,
        /// One JSON object per line instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show one record pretty-printed, with its stored metadata.
    Show {
        /// The first hex characters of the record's sha256.
        sha_prefix: String,
        #[command(flatten)]
        db: DbArg,
    },
    /// Write one record's exact canonical bytes to stdout (no newline), e.g. for sha256sum.
    Raw {
        /// The first hex characters of the record's sha256.
        sha_prefix: String,
        #[command(flatten)]
        db: DbArg,
    },
    /// Export records, one canonical record per line, oldest first.
    Export {
        #[command(flatten)]
        db: DbArg,
        /// Only records walked at or after DATE (YYYY-MM-DD or RFC 3339).
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        /// Each line is a submission body {"record_canonical", "signature_ed25519_b64",
        /// "public_key_ed25519_b64"} instead of the bare record, so signatures travel too.
        #[arg(long)]
        with_signatures: bool,
        /// Also carry commitment records' kept full record and salt (a private backup: never
        /// file these lines). Implies --with-signatures.
        #[arg(long)]
        with_kept: bool,
    },
    /// Import records into the store at --db: export files (either line form), a walk record
    /// or intake body line as a file, compact or pretty-printed, or JSON lines of any of
    /// those ("-" reads stdin). Records already present are skipped; new rows are chained in
    /// the target store. A record enters as its canonical bytes: a copy that differs from
    /// them only in whitespace (pretty-printed) is taken as them, any other difference is
    /// refused.
    ///
    /// An archive segment (a file `records archive` wrote) is put back in place instead: the
    /// whole segment is checked against its cut first (every sha256, signature and chain link),
    /// then its rows return under their old row numbers and the cut is removed. A segment of
    /// another store is imported as new records.
    ///
    /// All or nothing for each file: every line is checked before anything is written (JSON,
    /// its kind, canonical form, the record's fields, its signature, a kept record's
    /// commitment), and one bad line refuses the whole file, named with its line number and
    /// what was there instead (a gate verdict, an observation, ...). Each file's rows go in one
    /// transaction, so an import that is killed leaves the store as the last whole file left
    /// it. A refused file loses nothing the files before it imported, and the files after it
    /// are still tried.
    ///
    /// Exit codes: 0 every file imported (records already present are skipped); 2 a file was
    /// refused (each named on stderr, nothing of it written, the others imported), or the
    /// store cannot be opened or written (nothing of the file being imported was written).
    Import {
        /// The files: `records export` output, record or intake body files, archive segments.
        #[arg(value_name = "FILE", required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        db: DbArg,
    },
    /// Verify the whole store: every sha256, every signature, the metadata, and the hash chain.
    /// Exit 0 only when everything holds. Archived ranges are linked into the chain through
    /// their cuts; with --archives each is re-verified from its segment, else each is named as
    /// not checked.
    Verify {
        #[command(flatten)]
        db: DbArg,
        /// The directory holding the archive segments (`records archive --dir`).
        #[arg(long, value_name = "DIR")]
        archives: Option<PathBuf>,
    },
    /// Move old records out of the live store into compressed archive segments, each recorded
    /// in the store as a cut so `records verify` still proves the chain (docs/operator.md, "Retention").
    /// Records queued or being filed are never archived. Safe to kill at any moment.
    Archive {
        #[command(flatten)]
        db: DbArg,
        /// Where the segments go (default: [retention] archive_dir of --config, else the
        /// directory `archive` beside the database).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Take the retention periods (and the database, unless --db) from this config's
        /// [retention] and [daemon] tables.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Archive records never filed once older than N days (overrides the config).
        #[arg(long, value_name = "N")]
        unfiled_days: Option<u32>,
        /// Archive every record older than N days (overrides the config).
        #[arg(long, value_name = "N")]
        all_days: Option<u32>,
        /// Only say what would be archived.
        #[arg(long)]
        dry_run: bool,
    },
    /// Serve the status pages (overview, targets, records, endpoints) over this store,
    /// read-only, until interrupted. Works on any copy: an auditor's, a merged fleet store.
    Serve {
        #[command(flatten)]
        db: DbArg,
        /// Address to listen on. Loopback only unless --allow-non-loopback (then put an
        /// authenticating reverse proxy in front: docs/operator.md, "Status pages").
        #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:9465")]
        listen: std::net::SocketAddr,
        /// Accept a --listen address that is not loopback.
        #[arg(long)]
        allow_non_loopback: bool,
        /// A daemon config: its witness and targets' schedules are shown too.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// A rings folder laid out as the register's rings/ (<slug>/<YYYY-MM>.json, the
        /// envelopes beside them, jwks.json): each endpoint page shows its rings.
        #[arg(long, value_name = "DIR")]
        rings: Option<PathBuf>,
    },
    /// Print a record file's sha256 (of its bytes as given, and of their NENRIN canonical form,
    /// the record's identity) and, given --signature and --public-key, check the Ed25519
    /// signature over the file's exact bytes.
    ///
    /// Exit codes: 0 the sha256 printed and the signature, when given, valid; 1 signature
    /// INVALID; 2 the file cannot be read, the signature is not base64 of 64 bytes, or the key
    /// cannot be read.
    VerifyFile {
        /// The record file (exact canonical bytes, e.g. from `records raw`).
        file: PathBuf,
        /// Standard padded base64 of the 64-byte signature.
        #[arg(long, value_name = "B64", requires = "public_key")]
        signature: Option<String>,
        /// The Ed25519 public key: base64 (padded or not), base64url, 64 hex digits, or a file
        /// holding any of those or the key_url document `pubkey` prints (as `inspect` takes it).
        #[arg(long, value_name = "KEY", requires = "signature")]
        public_key: Option<String>,
    },
}

pub async fn run(command: RecordsCommand) -> anyhow::Result<ExitCode> {
    if let RecordsCommand::Serve {
        db,
        listen,
        allow_non_loopback,
        config,
        rings,
    } = command
    {
        return serve(&db, listen, allow_non_loopback, config.as_deref(), rings).await;
    }
    // SQLite and hashing block; keep them off the async workers.
    tokio::task::spawn_blocking(move || run_blocking(command))
        .await
        .context("the records command panicked")?
}

fn run_blocking(command: RecordsCommand) -> anyhow::Result<ExitCode> {
    let result = match command {
        RecordsCommand::List {
            db,
            endpoint,
            since,
            outcome,
            json,
        } => list(&db, endpoint, since, outcome, json),
        RecordsCommand::Show { sha_prefix, db } => show(&db, &sha_prefix),
        RecordsCommand::Raw { sha_prefix, db } => raw(&db, &sha_prefix),
        RecordsCommand::Export {
            db,
            since,
            with_signatures,
            with_kept,
        } => export(&db, since, with_signatures, with_kept),
        RecordsCommand::Import { files, db } => import(&db, &files),
        RecordsCommand::Verify { db, archives } => verify(&db, archives.as_deref()),
        RecordsCommand::Archive {
            db,
            dir,
            config,
            unfiled_days,
            all_days,
            dry_run,
        } => archive(&db, dir, config.as_deref(), unfiled_days, all_days, dry_run),
        RecordsCommand::VerifyFile {
            file,
            signature,
            public_key,
        } => verify_file(&file, signature.zip(public_key)),
        RecordsCommand::Serve { .. } => unreachable!("served by run"),
    };
    match result {
        // A reader that went away (`records list | head`) is not an error.
        Err(e) if is_broken_pipe(&e) => Ok(ExitCode::from(EXIT_OK)),
        other => other,
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn since_filter(since: Option<String>) -> anyhow::Result<Option<String>> {
    Ok(since.as_deref().map(store::parse_since).transpose()?)
}

fn verdict_text(row: &RecordRow) -> String {
    match &row.meta.verdict {
        Some(v) => format!("{} {}/{}", v.outcome, v.n_pass, v.n_total),
        None => row.meta.privacy_mode.clone(),
    }
}

fn list(
    db: &DbArg,
    endpoint: Option<String>,
    since: Option<String>,
    outcome: Option<Outcome>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let filter = ListFilter {
        endpoint,
        since: since_filter(since)?,
        outcome: outcome.map(|o| o.as_str().to_string()),
    };
    let store = db.open_read_only()?;
    let rows = store.list(&filter)?;
    let mut out = std::io::BufWriter::new(crate::output::stdout());
    for row in &rows {
        if json {
            let v = row.to_json();
            writeln!(out, "{}", serde_json::to_string(&v)?)?;
        } else {
            writeln!(
                out,
                "{}  {}  {}  {}  {}",
                row.meta.walked_at,
                row.meta.endpoint,
                verdict_text(row),
                &row.sha256[..12],
                if row.signed { "signed" } else { "unsigned" }
            )?;
        }
    }
    out.flush()?;
    Ok(ExitCode::from(EXIT_OK))
}

/// One row as `records list --json` (and the daemon's `/records`) show it.
fn find(db: &DbArg, prefix: &str) -> anyhow::Result<StoredRecord> {
    let store = db.open_read_only()?;
    Ok(store.get_by_prefix(prefix)?)
}

fn show(db: &DbArg, prefix: &str) -> anyhow::Result<ExitCode> {
    let store = db.open_read_only()?;
    let rec = store.get_by_prefix(prefix)?;
    let row = &rec.row;
    let binding = crate::store::task_bindings::for_record(store.connection(), row.id)?;
    let beside = crate::store::beside::get(store.connection(), row.id)?;
    let notify_status = crate::store::notifications::status_of_record(store.connection(), row.id)?;
    let mut out = std::io::BufWriter::new(crate::output::stdout());
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    writeln!(out, "sha256        {}", row.sha256)?;
    writeln!(out, "row           {}", row.id)?;
    writeln!(out, "chain_hash    {}", row.chain_hash)?;
    writeln!(out, "inserted_at   {}", row.inserted_at)?;
    writeln!(out, "walked_at     {}", row.meta.walked_at)?;
    writeln!(out, "endpoint      {}", row.meta.endpoint)?;
    writeln!(out, "origin        {}", row.meta.origin)?;
    writeln!(out, "walker_mode   {}", opt(&row.meta.walker_mode))?;
    writeln!(out, "privacy_mode  {}", row.meta.privacy_mode)?;
    writeln!(out, "verdict       {}", verdict_text(row))?;
    writeln!(
        out,
        "signed        {}",
        if row.signed { "yes" } else { "no" }
    )?;
    if let Some(key) = &rec.public_key_b64 {
        writeln!(out, "public_key    {key}")?;
    }
    if let Some(sig) = &rec.signature_b64 {
        writeln!(out, "signature     {sig}")?;
    }
    writeln!(out, "key_url       {}", opt(&row.meta.key_url))?;
    writeln!(out, "bytes         {}", rec.canonical.len())?;
    // Beside the record, never part of its bytes (§11.5); the reason is our own text.
    writeln!(
        out,
        "notify_status {}",
        notify_status.map_or_else(|| "null".to_string(), |s| s.to_string())
    )?;
    if let Some(kept) = &rec.kept_full {
        writeln!(
            out,
            "kept_full     sha256 {} ({} bytes, salt kept)",
            crate::digest::sha256_hex(&kept.canonical),
            kept.canonical.len()
        )?;
    }
    if let Some(b) = &binding {
        // The ledger's answer and the task id are a stranger's text: escaped for the terminal.
        let safe = crate::witness::task_bind::for_terminal;
        writeln!(out, "task_binding  {}", b.describe())?;
        writeln!(out, "  ledger      {}", b.ledger_url)?;
        if let (Some(task), Some(eid)) = (&b.task_id, &b.evidence_id) {
            writeln!(out, "  task_id     {}", safe(task))?;
            writeln!(out, "  evidence_id {eid}")?;
        }
        if let (Some(w), Some(p)) = (&b.witness_id, &b.requester_id) {
            writeln!(out, "  witness     {w}")?;
            writeln!(out, "  requester   {p}")?;
        }
        if let Some(at) = &b.sent_at {
            writeln!(out, "  sent_at     {at}")?;
        }
        if let Some(answer) = b.answer_json() {
            writeln!(out, "  answer      {}", safe(&answer.to_string()))?;
        }
    }
    if let Some(answer) = &beside.reciprocal {
        // The agent's answer to our caller card: a stranger's text, escaped for the terminal.
        writeln!(
            out,
            "reciprocal    {} (the agent's answer to our caller card; not in the record)",
            crate::witness::task_bind::for_terminal(answer)
        )?;
    }
    writeln!(out)?;
    // Pretty-printing reads the stored bytes; if they no longer parse, show them as they are.
    match crate::json::parse_lenient(&rec.canonical) {
        Ok(v) => writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?,
        Err(_) => writeln!(out, "{}", String::from_utf8_lossy(&rec.canonical))?,
    }
    out.flush()?;
    Ok(ExitCode::from(EXIT_OK))
}

fn raw(db: &DbArg, prefix: &str) -> anyhow::Result<ExitCode> {
    let rec = find(db, prefix)?;
    let mut out = crate::output::stdout();
    out.write_all(&rec.canonical)?;
    out.flush()?;
    Ok(ExitCode::from(EXIT_OK))
}

fn export(
    db: &DbArg,
    since: Option<String>,
    with_signatures: bool,
    with_kept: bool,
) -> anyhow::Result<ExitCode> {
    let filter = ListFilter {
        since: since_filter(since)?,
        ..ListFilter::default()
    };
    let opts = ExportOptions {
        with_signatures: with_signatures || with_kept,
        with_kept,
    };
    let store = db.open_read_only()?;
    let mut out = std::io::BufWriter::new(crate::output::stdout());
    store.for_each_record(&filter, |rec| -> anyhow::Result<()> {
        out.write_all(&transfer::export_line(&rec, opts)?)?;
        Ok(())
    })?;
    out.flush()?;
    Ok(ExitCode::from(EXIT_OK))
}

/// `records import FILE...`: each file in its own transaction, so a refused file loses
/// nothing the files before it brought, and the files after it are still tried (as ripgrep
/// goes on past a file it cannot read); the exit is 2 when any was refused.
fn import(db: &DbArg, files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let path = db.path()?;
    let existed = path.exists();
    let mut store: Option<Store> = None;
    let (mut inserted, mut refused) = (0u64, 0usize);
    for file in files {
        let name = file.display();
        let outcome = if file != Path::new("-") && store::archive::is_zstd_file(file) {
            import_segment(db, file).map(|()| 0)
        } else {
            import_file(&path, &mut store, file)
        };
        match outcome {
            Ok(n) => inserted += n,
            Err(Refused::Input(why)) => {
                refused += 1;
                crate::errln!(
                    "conduct-walker: error: {name}: {why}; nothing was imported from {name}"
                );
            }
            Err(Refused::Store(e)) => {
                if !existed && inserted == 0 {
                    discard(store, &path);
                }
                return Err(e.context(format!("{name}: nothing was imported from it")));
            }
        }
    }
    // An import that brought nothing into a store it created leaves no empty store behind.
    if !existed && inserted == 0 {
        discard(store, &path);
        if refused == 0 {
            crate::outln!(
                "imported nothing (no new records); no store was created at {}",
                path.display()
            );
        }
    } else {
        let held = match &store {
            Some(store) => store.count()?,
            None => Store::open_read_only(&path)?.count()?,
        };
        crate::outln!("{} now holds {held} records", path.display());
    }
    if refused > 0 && files.len() > 1 {
        crate::errln!(
            "conduct-walker: {} of {} refused (each named above); the others were imported",
            count(refused, "file"),
            files.len()
        );
    }
    if refused > 0 {
        return Ok(ExitCode::from(crate::cli::EXIT_ERROR));
    }
    Ok(ExitCode::from(EXIT_OK))
}

/// Why one file of an import brought nothing.
enum Refused {
    /// The file: unreadable, or a line or document that is not a record the store takes.
    Input(String),
    /// The store: it cannot be opened or written, so no later file can be either.
    Store(anyhow::Error),
}

/// One file's records, in one transaction; returns how many were new.
fn import_file(path: &Path, store: &mut Option<Store>, file: &Path) -> Result<u64, Refused> {
    let bytes = read_input(file).map_err(|e| Refused::Input(crate::cli::one_line(&e)))?;
    let found = crate::audit::import::read(&bytes).map_err(|r| Refused::Input(r.to_string()))?;
    let (lines, records): (Vec<Option<usize>>, Vec<NewRecord>) =
        found.into_iter().map(|f| (f.line, f.record)).unzip();
    if store.is_none() {
        *store = Some(Store::open(path).map_err(|e| Refused::Store(e.into()))?);
    }
    let Some(store) = store.as_ref() else {
        unreachable!("opened above")
    };
    let summary = match store.insert_many(&records) {
        Ok(s) => s,
        Err(StoreError::InBatch { index, source })
            if source.unwritable_reason().is_none() && !source.is_busy() =>
        {
            let at = lines[index]
                .map(|n| format!("line {n}: "))
                .unwrap_or_default();
            return Err(Refused::Input(format!("{at}{source}")));
        }
        Err(e) => return Err(Refused::Store(e.into())),
    };
    crate::outln!(
        "{}: imported {} records, {} already present",
        file.display(),
        summary.inserted,
        summary.already_present
    );
    Ok(summary.inserted as u64)
}

/// A file's bytes, or stdin's for "-".
fn read_input(file: &Path) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if file == Path::new("-") {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("cannot read stdin")?;
    } else {
        bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    }
    Ok(bytes)
}

/// Remove the store an import created and brought nothing into (closed first).
fn discard(store: Option<Store>, path: &Path) {
    drop(store);
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.to_path_buf().into_os_string();
        name.push(suffix);
        let _ = std::fs::remove_file(name);
    }
}

/// `records import SEGMENT`.
fn import_segment(db: &DbArg, file: &Path) -> Result<(), Refused> {
    import_segment_into(db, file).map_err(|e| Refused::Input(crate::cli::one_line(&e)))
}

fn import_segment_into(db: &DbArg, file: &Path) -> anyhow::Result<()> {
    let path = db.path()?;
    if !path.exists() {
        anyhow::bail!(
            "no store at {}: a segment is restored into the store it was archived from",
            path.display()
        );
    }
    let store = Store::open(&path)?;
    match store.restore(file)? {
        store::archive::Restored::InPlace { first_id, last_id } => crate::outln!(
            "restored rows {first_id} to {last_id} from {} into {}; their cut is removed",
            file.display(),
            path.display()
        ),
        store::archive::Restored::AsNew {
            inserted,
            already_present,
        } => crate::outln!(
            "no cut of {} matches {}: imported its records as new rows ({inserted} new, {already_present} already present)",
            path.display(),
            file.display()
        ),
    }
    Ok(())
}

/// `records archive`.
fn archive(
    db: &DbArg,
    dir: Option<PathBuf>,
    config: Option<&Path>,
    unfiled_days: Option<u32>,
    all_days: Option<u32>,
    dry_run: bool,
) -> anyhow::Result<ExitCode> {
    let cfg = config.map(crate::config::load).transpose()?;
    let retention = cfg
        .as_ref()
        .map(|c| c.retention.clone())
        .unwrap_or_default();
    let policy = store::archive::Retention {
        unfiled_days: unfiled_days.or(retention.policy.unfiled_days),
        all_days: all_days.or(retention.policy.all_days),
    };
    if policy.is_off() {
        anyhow::bail!(
            "no retention period: pass --unfiled-days N and/or --all-days N, or a --config whose [retention] sets them"
        );
    }
    if policy.unfiled_days == Some(0) || policy.all_days == Some(0) {
        anyhow::bail!("a retention period is at least 1 day");
    }
    let path = match (&db.db, cfg.as_ref().and_then(|c| c.database.clone())) {
        (None, Some(p)) => p,
        _ => db.path()?,
    };
    if !path.exists() {
        anyhow::bail!("no store at {}", path.display());
    }
    let dir = dir.unwrap_or_else(|| retention.dir(&path));
    let store = Store::open(&path)?;
    let report = store.archive(&dir, policy, chrono::Utc::now(), dry_run)?;
    let verb = if dry_run { "would archive" } else { "archived" };
    for s in &report.segments {
        crate::outln!(
            "{verb} rows {} to {} ({} records) into {}",
            s.first_id,
            s.last_id,
            s.count(),
            s.file.display()
        );
    }
    // A clause about `n` things, left out when there are none.
    let clause = |n: usize, what: &str, say: fn(String) -> String| {
        if n > 0 {
            say(count(n, what))
        } else {
            String::new()
        }
    };
    let skipped = clause(report.skipped as usize, "segment", |n| {
        format!("; {n} skipped (changed meanwhile)")
    });
    let leftovers = clause(report.leftovers_removed as usize, "segment file", |n| {
        format!("; removed {n} left by an interrupted run")
    });
    crate::outln!(
        "{verb} {} records in {}; {} old enough but held (queued or being filed){}{}",
        report.archived(),
        count(report.segments.len(), "segment"),
        report.held,
        skipped,
        leftovers
    );
    if !dry_run {
        store.checkpoint()?;
    }
    Ok(ExitCode::from(EXIT_OK))
}

fn verify(db: &DbArg, archives: Option<&Path>) -> anyhow::Result<ExitCode> {
    if let Some(dir) = archives
        && !dir.is_dir()
    {
        anyhow::bail!("--archives {}: not a directory", dir.display());
    }
    let store = db.open_read_only()?;
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "verifying {bar:40} {pos}/{len} records ({per_sec}, {eta} left)",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let report = store::verify::verify_all_with(&store, archives, |done, total| {
        if let Some(bar) = &bar {
            bar.set_length(total);
            bar.set_position(done);
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let mut out = crate::output::stdout();
    for p in &report.problems {
        writeln!(out, "row {}: {}: {}", p.row, p.kind, p.detail)?;
    }
    let head = report
        .head
        .as_ref()
        .map(|(row, chain)| format!("; chain head row {row} {chain}"))
        .unwrap_or_default();
    let mut unchecked = 0;
    for a in report.unchecked() {
        unchecked += a.last_id - a.first_id + 1;
        writeln!(
            out,
            "rows {} to {}: not checked: archived in {} (pass --archives DIR to check them)",
            a.first_id, a.last_id, a.file
        )?;
    }
    let checked_archives = report.archived.len() - report.unchecked().count();
    let mut head = head;
    if checked_archives > 0 {
        head.push_str(&format!(
            "; {} re-verified from their archives",
            count(checked_archives, "archived range")
        ));
    }
    if unchecked > 0 {
        head.push_str(&format!(
            "; {unchecked} archived records not checked (their cuts link the chain)"
        ));
    }
    let key_findings = verify_keys(&store, &mut out)?;
    if report.is_ok() && key_findings > 0 {
        writeln!(
            out,
            "FAILED: {} (signatures by a revoked key from its compromised_from on, or a broken key chain); {} records verified ({} signed){head}",
            count(key_findings, "key finding"),
            report.rows,
            report.signed
        )?;
        Ok(ExitCode::from(EXIT_FINDING))
    } else if report.is_ok() {
        writeln!(
            out,
            "ok: {} records verified ({} signed){head}",
            report.rows, report.signed
        )?;
        Ok(ExitCode::from(EXIT_OK))
    } else {
        let rows: std::collections::BTreeSet<_> = report.problems.iter().map(|p| p.row).collect();
        writeln!(
            out,
            "FAILED: {} at {}, out of {} records ({} signed){head}",
            count(report.problems.len(), "problem"),
            count(rows.len(), "row"),
            report.rows,
            report.signed
        )?;
        Ok(ExitCode::from(EXIT_FINDING))
    }
}

/// The witness key's side of `records verify` (issue 45), when the store keeps a key history:
/// its chain of key events, and per record which key signed it and whether the history makes
/// that attributable (witness-pool.md §8.3). The findings: a broken key chain, and signatures
/// by a revoked key from its `compromised_from` on.
fn verify_keys(store: &Store, out: &mut impl Write) -> anyhow::Result<usize> {
    let conn = store.connection();
    let chain = store::key_events::verify(conn)?;
    for problem in &chain {
        writeln!(out, "{problem}")?;
    }
    let Some(judged) = crate::witness_pool::rotation::attribute(conn)? else {
        return Ok(chain.len());
    };
    let mut after_compromise = 0;
    for attribution in &judged {
        writeln!(out, "{}", attribution.line())?;
        after_compromise += usize::from(attribution.after_compromise);
    }
    Ok(chain.len() + after_compromise)
}

/// "1 problem", "2 problems".
fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

fn verify_file(file: &Path, check: Option<(String, String)>) -> anyhow::Result<ExitCode> {
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let sha = crate::digest::sha256_hex(&bytes);
    // Every input is checked before anything is printed: a signature or key that cannot be
    // read is a usage error (exit 2), never half an answer.
    let verdict = match check {
        None => None,
        Some((signature, key)) => {
            let (key, _) = super::inspect::public_key(&key)?;
            match store::check_signature(&bytes, signature.trim(), &key) {
                Err(e) if e.is_malformed() => return Err(e.into()),
                other => Some(other),
            }
        }
    };
    crate::outln!("{sha}  {}", file.display());
    // A pretty-printed or re-encoded copy hashes differently from the record: say which sha256
    // is the record's identity.
    match crate::json::read(&bytes, crate::json::ReadOptions::LENIENT) {
        Ok(doc) => {
            let canonical = crate::digest::sha256_hex(doc.root().canonical_string().as_bytes());
            let agrees = if canonical == sha {
                "the same: the file is in canonical form"
            } else {
                "different: the file is not in canonical form; a signature covers the canonical bytes"
            };
            crate::outln!("{canonical}  canonical (NENRIN) form, {agrees}");
        }
        Err(e) => crate::outln!("not JSON ({e}): no canonical form"),
    }
    match verdict {
        None => {
            crate::outln!("signature not checked: give --signature and --public-key");
            Ok(ExitCode::from(EXIT_OK))
        }
        Some(Ok(())) => {
            crate::outln!("signature valid");
            Ok(ExitCode::from(EXIT_OK))
        }
        Some(Err(e)) => {
            crate::outln!("signature INVALID: {e}");
            Ok(ExitCode::from(EXIT_FINDING))
        }
    }
}

/// `records serve`: the status pages over a store opened read-only on every request.
async fn serve(
    db: &DbArg,
    listen: std::net::SocketAddr,
    allow_non_loopback: bool,
    config: Option<&Path>,
    rings: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    if !listen.ip().is_loopback() && !allow_non_loopback {
        anyhow::bail!(
            "{listen} is not a loopback address: the pages show the whole store; pass --allow-non-loopback and put an authenticating reverse proxy in front"
        );
    }
    let path = db.path()?;
    // Fail now, not on the first request, when the store cannot be read.
    drop(Store::open_read_only(&path)?);
    let mut context = match config {
        None => crate::pages::Context::default(),
        Some(c) => {
            let cfg = crate::config::load(c)?;
            crate::app::page_context(&cfg, None)
        }
    };
    if let Some(dir) = &rings
        && !dir.is_dir()
    {
        anyhow::bail!("--rings {}: not a folder", dir.display());
    }
    context.rings = rings;
    let state = crate::pages::PagesState::new(
        path.clone(),
        std::sync::Arc::new(move || context.clone()),
        "conduct-walker records serve",
    );
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let bound = listener.local_addr()?;
    // One line a script (and the tests) can wait for.
    crate::outln!("serving {} read-only at http://{bound}/", path.display());
    crate::output::stdout().flush()?;
    axum::serve(listener, crate::pages::router(state))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(ExitCode::from(EXIT_OK))
}
