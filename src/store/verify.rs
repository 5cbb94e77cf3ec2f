//! `records verify` as a library: recompute every sha256 from the stored bytes, re-verify every
//! Ed25519 signature, re-derive the metadata columns, re-open every kept commitment, and
//! re-walk the hash chain. Each problem is reported with its row id and kind.
//!
//! The per-row work (hashing, signature checks, JSON parsing) runs on worker threads; the
//! calling thread reads rows in id order and checks the chain links, which are cheap.

use super::integrity::{self, KeptRow, KeyCache, StoredRow};
use super::meta::{RecordMeta, Verdict};
use super::{CHAIN_GENESIS, Store, StoreError, codec};
use std::sync::{Mutex, mpsc};

pub use super::integrity::{
    Problem, ProblemKind, SignatureError, chain_next, check_signature, decode_hex32, decode_salt,
};

/// The outcome of [`verify_all`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Rows read.
    pub rows: u64,
    /// Rows carrying a signature (each one checked).
    pub signed: u64,
    /// The last row's id and stored chain hash: an auditor who notes it can later detect a
    /// rewrite of the whole chain.
    pub head: Option<(i64, String)>,
    /// Problems ordered by row, then kind.
    pub problems: Vec<Problem>,
    /// Ranges that live in archive segments (`records archive`), in chain order, each linked
    /// into the chain through its cut; `checked` when its segment was re-verified.
    pub archived: Vec<ArchivedRange>,
}

/// One cut as `records verify` saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchivedRange {
    pub first_id: i64,
    pub last_id: i64,
    /// The segment's file name.
    pub file: String,
    /// Whether the segment was read and re-verified (the archive directory was given).
    pub checked: bool,
}

impl VerifyReport {
    /// Archived ranges that were not re-verified.
    pub fn unchecked(&self) -> impl Iterator<Item = &ArchivedRange> {
        self.archived.iter().filter(|a| !a.checked)
    }
}

impl VerifyReport {
    /// Add what a run resumed from this one's head found (a scrub in pieces).
    pub fn extend(&mut self, later: VerifyReport) {
        self.rows += later.rows;
        self.signed += later.signed;
        self.problems.extend(later.problems);
        self.archived.extend(later.archived);
        if later.head.is_some() {
            self.head = later.head;
        }
    }

    /// True when every check held.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Rows handed to a worker at a time: large enough to amortise channel traffic.
const BATCH: usize = 256;

/// One row as read for verification.
struct RowData {
    id: i64,
    sha256: String,
    /// The column as stored (raw or compressed) and what decoding it needs.
    canonical: Vec<u8>,
    needs: Result<codec::Needs, codec::CodecError>,
    signature_b64: Option<String>,
    public_key_b64: Option<String>,
    signed: bool,
    meta: RecordMeta,
    kept_canonical: Option<Vec<u8>>,
    kept_sha256: Option<String>,
    kept_salt: Option<String>,
}

/// Verify every row of the store. `progress(done, total)` is called on the calling thread as
/// rows finish (and once at the end). Only database errors are `Err`; findings are in the report.
pub fn verify_all(
    store: &Store,
    progress: impl FnMut(u64, u64),
) -> Result<VerifyReport, StoreError> {
    verify_all_with(store, None, progress)
}

/// [`verify_all`], also re-verifying every archived range from its segment in `archives` (the
/// directory `records archive` wrote to) when given; without it, each archived range is linked
/// through its cut and listed as not checked.
pub fn verify_all_with(
    store: &Store,
    archives: Option<&std::path::Path>,
    progress: impl FnMut(u64, u64),
) -> Result<VerifyReport, StoreError> {
    verify_with(
        store,
        &VerifyOptions {
            archives,
            ..VerifyOptions::default()
        },
        progress,
    )
}

/// Where a verification that only checks the rows added since an earlier one starts: the last
/// row that run read and the chain value it ended in (its [`VerifyReport::head`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    pub after_id: i64,
    pub chain: [u8; 32],
}

impl Resume {
    /// From a report's head (`None`: it read no row, or the head's hash is not hex).
    pub fn from_head(head: &Option<(i64, String)>) -> Option<Resume> {
        let (id, chain) = head.as_ref()?;
        Some(Resume {
            after_id: *id,
            chain: decode_hex32(chain)?,
        })
    }
}

/// How [`verify_with`] runs.
#[derive(Debug, Default)]
pub struct VerifyOptions<'a> {
    /// The archive directory: archived ranges are re-verified from their segments.
    pub archives: Option<&'a std::path::Path>,
    /// Only rows after this point, linked to its chain value: what was added since. Rows at
    /// or before it are not read, so an edit there is left to the next full run.
    pub from: Option<Resume>,
    /// Worker threads checking rows (default: the cores, at most 8).
    pub workers: Option<usize>,
    /// Read at most this many live rows, in this run's one read transaction (a long scrub runs
    /// as a series of such runs, each resumed from the last one's head, so no read transaction
    /// keeps the write-ahead log from being checkpointed for long). The end-of-chain checks
    /// (cuts after the last row, rows removed from the end) run only in the run that reaches
    /// the end.
    pub limit: Option<u64>,
    /// Read at most this many rows a second (a background scrub: bounded I/O and CPU, and the
    /// page cache is not swept faster than what the daemon reads can refill).
    pub rows_per_sec: Option<u32>,
}

/// [`verify_all_with`], with a start point and a worker count.
pub fn verify_with(
    store: &Store,
    opts: &VerifyOptions<'_>,
    mut progress: impl FnMut(u64, u64),
) -> Result<VerifyReport, StoreError> {
    let conn = store.connection();
    // One read transaction so rows inserted meanwhile by a writer are not half-seen.
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Deferred)?;
    let total = rows_to_read(conn, opts)?;
    let mut report = VerifyReport::default();
    let workers = opts
        .workers
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
        .clamp(1, 8);

    let (batch_tx, batch_rx) = mpsc::sync_channel::<Vec<RowData>>(workers * 2);
    let batch_rx = Mutex::new(batch_rx);
    let (result_tx, result_rx) = mpsc::channel::<(u64, Vec<Problem>)>();

    let read_result: Result<(), StoreError> = std::thread::scope(|scope| {
        for _ in 0..workers {
            let result_tx = result_tx.clone();
            let batch_rx = &batch_rx;
            scope.spawn(move || check_batches(batch_rx, result_tx));
        }
        drop(result_tx);

        let mut done = 0u64;
        let mut collect = |report: &mut VerifyReport, block: bool| {
            loop {
                let next = if block {
                    result_rx.recv().ok()
                } else {
                    result_rx.try_recv().ok()
                };
                let Some((n, problems)) = next else { break };
                done += n;
                report.problems.extend(problems);
                progress(done, total);
            }
        };
        let read = read_rows(conn, opts, &batch_tx, &mut report, &mut collect);
        // Close the batch channel so workers finish, then gather what they found.
        drop(batch_tx);
        collect(&mut report, true);
        read
    });
    read_result?;
    drop(tx);
    report.problems.sort_by_key(|p| (p.row, p.kind));
    progress(report.rows, total.max(report.rows));
    Ok(report)
}

/// How many rows this run reads, for the progress callback only. A run in pieces does not
/// count the rows after it: that would read every remaining row once per piece.
fn rows_to_read(conn: &rusqlite::Connection, opts: &VerifyOptions<'_>) -> Result<u64, StoreError> {
    let total: i64 = match (opts.limit, opts.from.as_ref()) {
        (Some(limit), _) => i64::try_from(limit).unwrap_or(i64::MAX),
        // A rowid range: no scan of what came before.
        (None, Some(from)) => conn.query_row(
            "SELECT count(*) FROM records WHERE id > ?1",
            [from.after_id],
            |r| r.get(0),
        )?,
        (None, None) => conn.query_row("SELECT count(*) FROM records", [], |r| r.get(0))?,
    };
    Ok(total as u64)
}

/// A worker: check the batches it takes until the channel closes.
fn check_batches(
    batch_rx: &Mutex<mpsc::Receiver<Vec<RowData>>>,
    result_tx: mpsc::Sender<(u64, Vec<Problem>)>,
) {
    let mut keys = KeyCache::default();
    loop {
        // The lock is held only while taking one batch.
        let batch = match batch_rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(batch) = batch else { return };
        let mut problems = Vec::new();
        let n = batch.len() as u64;
        for row in batch {
            check_row(row, &mut keys, &mut problems);
        }
        if result_tx.send((n, problems)).is_err() {
            return;
        }
    }
}

/// Where the chain walk stands: the last row linked and the chain value it ended in.
struct ChainWalk<'a> {
    prev_id: i64,
    prev_chain: [u8; 32],
    cuts: std::iter::Peekable<std::vec::IntoIter<super::archive::Cut>>,
    archives: Option<&'a std::path::Path>,
}

/// Read the rows in id order on this thread: link each into the chain (and through the cuts
/// before it) and hand it to the workers in batches; at the end of the chain, check what lies
/// after the last row.
fn read_rows(
    conn: &rusqlite::Connection,
    opts: &VerifyOptions<'_>,
    batch_tx: &mpsc::SyncSender<Vec<RowData>>,
    report: &mut VerifyReport,
    collect: &mut dyn FnMut(&mut VerifyReport, bool),
) -> Result<(), StoreError> {
    let after_id = opts.from.as_ref().map(|f| f.after_id);
    // A full run reads every row, whatever its id (a row inserted with id 0 or below is found
    // as out of place); a resumed one only those after its start.
    let filter = if after_id.is_some() {
        "WHERE r.id > ?1"
    } else {
        ""
    };
    let limit = match opts.limit {
        Some(l) => format!(" LIMIT {l}"),
        None => String::new(),
    };
    let mut stmt = conn.prepare(&format!(
        "SELECT r.id, r.sha256, r.canonical, r.signature_b64, r.public_key_b64, r.signed, \
         r.endpoint, r.origin, r.walked_at, r.walker_mode, r.privacy_mode, r.verdict_ok, \
         r.outcome, r.n_pass, r.n_total, r.key_url, r.chain_hash, \
         k.canonical, k.sha256, k.salt_hex \
         FROM records r LEFT JOIN kept_full k ON k.record_id = r.id {filter} ORDER BY r.id{limit}"
    ))?;
    let mut rows = match after_id {
        Some(after) => stmt.query([after])?,
        None => stmt.query([])?,
    };
    let (prev_id, prev_chain) = match &opts.from {
        Some(f) => (f.after_id, f.chain),
        None => (0i64, CHAIN_GENESIS),
    };
    let mut walk = ChainWalk {
        prev_id,
        prev_chain,
        cuts: super::archive::cuts(conn)?
            .into_iter()
            .filter(|c| after_id.is_none_or(|after| c.first_id > after))
            .collect::<Vec<_>>()
            .into_iter()
            .peekable(),
        archives: opts.archives,
    };
    let mut batch = Vec::with_capacity(BATCH);
    let paced_from = std::time::Instant::now();
    let mut sent = 0u64;
    let mut live_rows = 0u64;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let sha256: String = r.get(1)?;
        let chain_hash: String = r.get(16)?;
        through_cuts(&mut walk, id, report);
        report.rows += 1;
        live_rows += 1;
        if id != walk.prev_id + 1 {
            report.problems.push(gap(walk.prev_id, id));
        }
        walk.prev_chain = integrity::check_link(
            id,
            &sha256,
            &chain_hash,
            &walk.prev_chain,
            &mut report.problems,
        );
        walk.prev_id = id;
        let row = row_data(conn, r, id, sha256)?;
        if row.signature_b64.is_some() {
            report.signed += 1;
        }
        report.head = Some((id, chain_hash));
        batch.push(row);
        if batch.len() == BATCH {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
            if batch_tx.send(full).is_err() {
                break;
            }
            collect(report, false);
            sent += BATCH as u64;
            if let Some(rate) = opts.rows_per_sec.filter(|r| *r > 0) {
                let due = std::time::Duration::from_secs_f64(sent as f64 / f64::from(rate));
                if let Some(ahead) = due.checked_sub(paced_from.elapsed()) {
                    std::thread::sleep(ahead);
                }
            }
        }
    }
    if !batch.is_empty() {
        let _ = batch_tx.send(batch);
    }
    if opts.limit.is_some_and(|l| live_rows >= l) {
        // More rows may follow: the next run goes on from this one's head.
        return Ok(());
    }
    end_of_chain(conn, walk, report);
    Ok(())
}

/// Rows between the previous one and `id` are gone.
fn gap(prev_id: i64, id: i64) -> Problem {
    let detail = if id == prev_id + 2 {
        format!("row {} is missing", prev_id + 1)
    } else {
        format!("rows {} to {} are missing", prev_id + 1, id - 1)
    };
    Problem {
        row: id,
        kind: ProblemKind::RowMissing,
        detail,
    }
}

/// One row's columns as the workers check them.
fn row_data(
    conn: &rusqlite::Connection,
    r: &rusqlite::Row<'_>,
    id: i64,
    sha256: String,
) -> Result<RowData, StoreError> {
    let verdict_ok: Option<bool> = r.get(11)?;
    let outcome: Option<String> = r.get(12)?;
    let n_pass: Option<i64> = r.get(13)?;
    let n_total: Option<i64> = r.get(14)?;
    let verdict = match (verdict_ok, outcome, n_pass, n_total) {
        (None, None, None, None) => None,
        (ok, outcome, n_pass, n_total) => Some(Verdict {
            // A partly-null verdict can never equal a derived one: poison it.
            ok: ok.unwrap_or_default(),
            outcome: outcome.unwrap_or_else(|| "<null>".into()),
            n_pass: n_pass.unwrap_or(i64::MIN),
            n_total: n_total.unwrap_or(i64::MIN),
        }),
    };
    let canonical: Vec<u8> = r.get(2)?;
    let needs = codec::needs(conn, &canonical);
    Ok(RowData {
        id,
        sha256,
        canonical,
        needs,
        signature_b64: r.get(3)?,
        public_key_b64: r.get(4)?,
        signed: r.get(5)?,
        meta: super::meta_columns(r, 6, verdict)?,
        kept_canonical: r.get(17)?,
        kept_sha256: r.get(18)?,
        kept_salt: r.get(19)?,
    })
}

/// After the last row: the cuts after it, cuts that overlap live rows, and rows removed from
/// the end.
fn end_of_chain(conn: &rusqlite::Connection, mut walk: ChainWalk<'_>, report: &mut VerifyReport) {
    through_cuts(&mut walk, i64::MAX, report);
    for c in walk.cuts {
        report.problems.push(Problem {
            row: c.first_id,
            kind: ProblemKind::MissingOrReordered,
            detail: format!(
                "a cut says rows {} to {} are archived in {}, but live rows overlap it",
                c.first_id, c.last_id, c.file
            ),
        });
    }
    // Rows removed from the end leave no gap and no broken link; only SQLite's AUTOINCREMENT
    // counter remembers them.
    let seq: Option<i64> = conn
        .query_row(
            "SELECT seq FROM sqlite_sequence WHERE name = 'records'",
            [],
            |r| r.get(0),
        )
        .ok();
    let prev_id = walk.prev_id;
    if let Some(seq) = seq.filter(|&s| s > prev_id) {
        report.problems.push(Problem {
            row: seq,
            kind: ProblemKind::TailMissing,
            detail: format!(
                "rows {} to {seq} were stored once but are gone (last row is {prev_id})",
                prev_id + 1
            ),
        });
    }
}

/// Link the chain through every cut that ends before row `next` (the next live row, or
/// `i64::MAX` at the end): the chain before the cut must be the one the previous row ended in,
/// and the chain continues from the cut's last value. With `archives`, each segment is
/// re-verified row by row.
fn through_cuts(walk: &mut ChainWalk<'_>, next: i64, report: &mut VerifyReport) {
    let ChainWalk {
        prev_id,
        prev_chain,
        cuts,
        archives,
    } = walk;
    while let Some(c) = cuts.next_if(|c| c.first_id > *prev_id && c.last_id < next) {
        if c.first_id != *prev_id + 1 {
            report.problems.push(Problem {
                row: c.first_id,
                kind: ProblemKind::RowMissing,
                detail: format!(
                    "rows {} to {} are neither in the store nor in an archive",
                    *prev_id + 1,
                    c.first_id - 1
                ),
            });
        }
        if decode_hex32(&c.prev_chain) != Some(*prev_chain) {
            report.problems.push(Problem {
                row: c.first_id,
                kind: ProblemKind::MissingOrReordered,
                detail: format!(
                    "the cut of rows {} to {} ({}) starts from chain hash {}, but the row before it ends in {}",
                    c.first_id,
                    c.last_id,
                    c.file,
                    c.prev_chain,
                    hex::encode(*prev_chain)
                ),
            });
        }
        let checked = match *archives {
            None => false,
            Some(dir) => {
                let path = dir.join(&c.file);
                if path.exists() {
                    let check = super::archive::check_segment(&path, &c);
                    report.rows += check.rows;
                    report.signed += check.signed;
                    report.problems.extend(check.problems);
                } else {
                    report.problems.push(Problem {
                        row: c.first_id,
                        kind: ProblemKind::ArchiveMissing,
                        detail: format!(
                            "rows {} to {} are archived in {}, which is not in {}",
                            c.first_id,
                            c.last_id,
                            c.file,
                            dir.display()
                        ),
                    });
                }
                true
            }
        };
        report.archived.push(ArchivedRange {
            first_id: c.first_id,
            last_id: c.last_id,
            file: c.file.clone(),
            checked,
        });
        *prev_chain = decode_hex32(&c.last_chain).unwrap_or(*prev_chain);
        *prev_id = c.last_id;
        if next == i64::MAX {
            report.head = Some((c.last_id, c.last_chain.clone()));
        }
    }
}

/// The per-row checks that do not depend on other rows, and the row's columns against what
/// its bytes say.
fn check_row(mut row: RowData, keys: &mut KeyCache, problems: &mut Vec<Problem>) {
    let decoded = match &row.needs {
        Ok(needs) => codec::decode_with(std::mem::take(&mut row.canonical), needs),
        Err(e) => Err(e.clone()),
    };
    match decoded {
        Ok(bytes) => row.canonical = bytes,
        Err(e) => {
            problems.push(Problem {
                row: row.id,
                kind: ProblemKind::Unreadable,
                detail: format!("the stored record cannot be read back: {e}"),
            });
            return;
        }
    }
    let stored = StoredRow {
        id: row.id,
        sha256: &row.sha256,
        canonical: &row.canonical,
        signature_b64: row.signature_b64.as_deref(),
        public_key_b64: row.public_key_b64.as_deref(),
        kept: row.kept_canonical.as_deref().map(|canonical| KeptRow {
            canonical,
            // A missing column is a mismatch like any other.
            sha256: Some(row.kept_sha256.as_deref().unwrap_or("<null>")),
            salt_hex: row.kept_salt.as_deref().unwrap_or_default(),
        }),
    };
    let derived = integrity::check_record(&stored, keys, false, problems);
    let mut push = |kind, detail: String| {
        problems.push(Problem {
            row: row.id,
            kind,
            detail,
        })
    };
    if row.signed != row.signature_b64.is_some() {
        push(
            ProblemKind::MetadataMismatch,
            format!(
                "the signed flag says {} but the row {} a signature",
                row.signed,
                if row.signature_b64.is_some() {
                    "has"
                } else {
                    "has no"
                }
            ),
        );
    }
    if let Some(derived) = derived.filter(|d| *d != row.meta) {
        push(
            ProblemKind::MetadataMismatch,
            meta_diff(&row.meta, &derived),
        );
    }
}

/// A metadata column as an auditor reads it (not Rust `Debug` output).
trait ColumnText {
    fn column_text(&self) -> String;
}

impl ColumnText for String {
    fn column_text(&self) -> String {
        format!("\"{self}\"")
    }
}

impl ColumnText for Option<String> {
    fn column_text(&self) -> String {
        self.as_ref()
            .map_or("nothing".into(), ColumnText::column_text)
    }
}

impl ColumnText for Option<super::meta::Verdict> {
    fn column_text(&self) -> String {
        self.as_ref().map_or("nothing".into(), |v| {
            format!("{} {}/{} (ok {})", v.outcome, v.n_pass, v.n_total, v.ok)
        })
    }
}

/// Name the columns that disagree, stored vs derived.
fn meta_diff(stored: &RecordMeta, derived: &RecordMeta) -> String {
    let mut parts = Vec::new();
    macro_rules! compare {
        ($($field:ident),*) => {$(
            if stored.$field != derived.$field {
                parts.push(format!(
                    "{} stored {} but the bytes say {}",
                    stringify!($field),
                    stored.$field.column_text(),
                    derived.$field.column_text()
                ));
            }
        )*};
    }
    compare!(
        endpoint,
        origin,
        walked_at,
        walker_mode,
        privacy_mode,
        verdict,
        key_url
    );
    parts.join("; ")
}
