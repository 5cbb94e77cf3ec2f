//! Retention that keeps the audit (issue 27, item 3).
//!
//! Old records leave the live store only into an archive: a run of consecutive rows is written
//! to a segment file (zstd-compressed lines, see below), the file is fsynced and renamed into
//! place, and only then, in one transaction, a *cut* is written into `record_cuts` (the range,
//! the chain value before it, its first and last rows' sha256 and chain hash, the file's name
//! and sha256) and the rows are deleted (a trigger refuses to delete a row no cut covers).
//! A kill at any moment loses nothing: before the commit the rows are all still live (a segment
//! file may exist beside them: the next run writes it again, or removes it when its range is no
//! longer a candidate); after it, the file was durable before the rows went.
//!
//! `records verify` links the chain across each cut (the row before it must end in the cut's
//! `prev_chain`, the row after it must build on its `last_chain`); given the archive directory
//! it re-verifies every archived row ([`check_segment`]), else it names each range it could not
//! check. `records import SEGMENT` puts a range back in place ([`restore`]) after checking the
//! segment against its cut.
//!
//! A segment file is one zstd stream of `\n`-terminated lines, each the canonical JSON of an
//! object: first a header `{"archive":"conduct-walker records segment","version":1,
//! "first_row","last_row","count","prev_chain","last_chain","created_at"}`, then one line per
//! row `{"row","sha256","chain_hash","inserted_at","record_canonical",
//! "signature_ed25519_b64","public_key_ed25519_b64","kept_full_canonical","kept_salt_hex"}`
//! (the last four only when present). `zstd -dc FILE | tail -n +2` gives lines that
//! `records import` reads as any export; `record_canonical` is the record's exact bytes.

use super::integrity::{self, KeptRow, KeyCache, Problem, ProblemKind, StoredRow, decode_hex32};
use super::{CHAIN_GENESIS, KeptFull, NewRecord, Store, StoreError, codec, insert_row, prepare};
use crate::filing::SubmissionState;
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

/// The `archive` member of a segment's header line.
pub const SEGMENT_KIND: &str = "conduct-walker records segment";
/// Most rows one segment (and one delete transaction) holds.
pub const MAX_SEGMENT: i64 = 10_000;
/// zstd level of segment files: written once, read rarely.
const SEGMENT_LEVEL: i32 = 9;

/// A segment's first line. Fields in code point order, as the canonical writer streams them;
/// read back, each is optional so a file that is not a segment is told apart, not refused.
#[derive(Debug, Default, Serialize, Deserialize)]
struct SegmentHeader<'a> {
    #[serde(borrow)]
    archive: Option<Cow<'a, str>>,
    count: Option<i64>,
    #[serde(borrow)]
    created_at: Option<Cow<'a, str>>,
    first_row: Option<i64>,
    #[serde(borrow)]
    last_chain: Option<Cow<'a, str>>,
    last_row: Option<i64>,
    #[serde(borrow)]
    prev_chain: Option<Cow<'a, str>>,
    version: Option<i64>,
}

/// One row's line of a segment (fields in code point order; absent ones are left out).
#[derive(Debug, Default, Serialize, Deserialize)]
struct SegmentLine<'a> {
    #[serde(borrow)]
    chain_hash: Option<Cow<'a, str>>,
    #[serde(borrow)]
    inserted_at: Option<Cow<'a, str>>,
    #[serde(borrow, skip_serializing_if = "Option::is_none")]
    kept_full_canonical: Option<Cow<'a, str>>,
    #[serde(borrow, skip_serializing_if = "Option::is_none")]
    kept_salt_hex: Option<Cow<'a, str>>,
    #[serde(borrow, skip_serializing_if = "Option::is_none")]
    public_key_ed25519_b64: Option<Cow<'a, str>>,
    #[serde(borrow)]
    record_canonical: Option<Cow<'a, str>>,
    row: Option<i64>,
    #[serde(borrow)]
    sha256: Option<Cow<'a, str>>,
    #[serde(borrow, skip_serializing_if = "Option::is_none")]
    signature_ed25519_b64: Option<Cow<'a, str>>,
}

/// A segment line read as `T`: strict JSON first (borrowing), else through the lenient parser.
fn read_line<'a, T: Deserialize<'a>>(text: &'a [u8]) -> Result<T, String> {
    match serde_json::from_slice(text) {
        Ok(v) => Ok(v),
        Err(strict) => {
            let value =
                crate::json::parse_lenient(text).map_err(|e| format!("line is not JSON: {e}"))?;
            if !value.is_object() {
                return Err("line is not a JSON object".into());
            }
            T::deserialize(value).map_err(|_| format!("line is not a segment line: {strict}"))
        }
    }
}

/// One line of canonical JSON.
fn canonical_line<T: Serialize>(value: &T) -> Vec<u8> {
    let mut line = crate::canonical::to_bytes_of(value);
    line.push(b'\n');
    line
}

/// How long to keep what; `None` keeps forever. Both off is the default: nothing is archived.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Records never filed (no submission of theirs reached `filed`) older than this many days.
    pub unfiled_days: Option<u32>,
    /// Every record older than this many days.
    pub all_days: Option<u32>,
}

impl Retention {
    pub fn is_off(&self) -> bool {
        self.unfiled_days.is_none() && self.all_days.is_none()
    }
}

/// One cut: a range of rows that lives in an archive segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub id: i64,
    pub first_id: i64,
    pub last_id: i64,
    pub count: i64,
    pub prev_chain: String,
    pub first_sha256: String,
    pub first_chain: String,
    pub last_sha256: String,
    pub last_chain: String,
    /// The segment's file name (no directory).
    pub file: String,
    pub file_sha256: String,
    pub created_at: String,
}

/// Every cut, in chain order.
pub fn cuts(conn: &Connection) -> Result<Vec<Cut>, StoreError> {
    // A store from before migration 8 (read-only, not migrated) has no cuts.
    if !super::schema::has_table(conn, "record_cuts")? {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare(
        "SELECT id, first_id, last_id, count, prev_chain, first_sha256, first_chain, \
         last_sha256, last_chain, file, file_sha256, created_at FROM record_cuts ORDER BY first_id",
    )?;
    let rows = stmt
        .query_map([], |r| {
            Ok(from_columns!(r => Cut {
                id, first_id, last_id, count, prev_chain, first_sha256, first_chain,
                last_sha256, last_chain, file, file_sha256, created_at,
            }))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// What holds a record in the live store whatever its age, as one SQL condition on the records
/// row `r` (named parameters `:queued`, `:sending`; bind them with [`hold_params`]). The one
/// definition of "not prunable": [`is_prunable`], the archiver's choice and its re-check inside
/// the delete transaction all use it.
///
/// A record followed into the ledger (`ledger_follow`, migration 7) and not yet seen anchored is
/// held too, findings included: its bytes are the evidence a finding about it points to.
pub const HOLD_SQL: &str = "(EXISTS (SELECT 1 FROM submissions s WHERE s.record_id = r.id \
     AND s.state IN (:queued, :sending)) \
     OR EXISTS (SELECT 1 FROM ledger_follow f WHERE f.record_id = r.id AND f.anchored_at IS NULL))";

/// The parameters of [`HOLD_SQL`].
pub fn hold_params() -> [(&'static str, SubmissionState); 2] {
    [
        (":queued", SubmissionState::Queued),
        (":sending", SubmissionState::Sending),
    ]
}

/// Whether record `id` may leave the live store into an archive: it is not queued for filing,
/// not being filed, not followed into the ledger and still unanchored. Age is the
/// retention policy's business, not this function's.
pub fn is_prunable(conn: &Connection, id: i64) -> Result<bool, StoreError> {
    let sql = format!("SELECT NOT ({HOLD_SQL}) FROM records r WHERE r.id = :id");
    let [(q, queued), (s, sending)] = hold_params();
    let mut stmt = conn.prepare_cached(&sql)?;
    let prunable: Option<bool> = stmt
        .query_row(
            &[
                (q, &queued as &dyn rusqlite::ToSql),
                (s, &sending),
                (":id", &id),
            ][..],
            |r| r.get(0),
        )
        .optional()?;
    Ok(prunable.unwrap_or(false))
}

/// A run of rows chosen to leave the store, or one that left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub first_id: i64,
    pub last_id: i64,
    /// The segment file (in the archive directory).
    pub file: PathBuf,
}

impl Segment {
    pub fn count(&self) -> i64 {
        self.last_id - self.first_id + 1
    }
}

/// What [`Store::archive`] did (or, dry, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchiveReport {
    /// Segments written and cut (or, in a dry run, that would be).
    pub segments: Vec<Segment>,
    /// Records old enough to go but held (queued, being filed, ...).
    pub held: u64,
    /// Segments skipped because their rows changed between the choice and the delete (a record
    /// was queued again meanwhile): their file was removed, their rows stay live.
    pub skipped: u64,
    /// Leftover segment files of an earlier, interrupted run that were removed.
    pub leftovers_removed: u64,
}

impl ArchiveReport {
    pub fn archived(&self) -> i64 {
        self.segments.iter().map(Segment::count).sum()
    }
}

fn cutoff(now: chrono::DateTime<chrono::Utc>, days: u32) -> String {
    crate::clock::walked_at(now - chrono::Duration::days(i64::from(days)))
}

/// The runs of consecutive rows the retention policy lets go at `now`, each at most
/// [`MAX_SEGMENT`] rows, oldest first; and how many old-enough records are held.
pub fn candidates(
    conn: &Connection,
    retention: Retention,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(Vec<(i64, i64)>, u64), StoreError> {
    let unfiled = retention.unfiled_days.map(|d| cutoff(now, d));
    let all = retention.all_days.map(|d| cutoff(now, d));
    // Rows older than the later of the two cutoffs are the only ones either rule can take.
    let Some(oldest) = [unfiled.clone(), all.clone()].into_iter().flatten().max() else {
        return Ok((Vec::new(), 0));
    };
    let sql = format!(
        "SELECT r.id, r.walked_at, ({HOLD_SQL}) AS held, \
         EXISTS (SELECT 1 FROM submissions s WHERE s.record_id = r.id AND s.state = :filed) \
         FROM records r WHERE r.walked_at < :oldest ORDER BY r.id"
    );
    let [(q, queued), (s, sending)] = hold_params();
    let filed = SubmissionState::Filed;
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(
        &[
            (q, &queued as &dyn rusqlite::ToSql),
            (s, &sending),
            (":filed", &filed),
            (":oldest", &oldest),
        ][..],
    )?;
    let mut runs: Vec<(i64, i64)> = Vec::new();
    let mut held = 0u64;
    while let Some(r) = rows.next()? {
        let (id, walked_at, is_held, was_filed): (i64, String, bool, bool) =
            (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
        let old = all.as_ref().is_some_and(|c| walked_at < *c)
            || (!was_filed && unfiled.as_ref().is_some_and(|c| walked_at < *c));
        if !old {
            continue;
        }
        if is_held {
            held += 1;
            continue;
        }
        match runs.last_mut() {
            Some((first, last)) if *last + 1 == id && id - *first < MAX_SEGMENT => *last = id,
            _ => runs.push((id, id)),
        }
    }
    Ok((runs, held))
}

/// The segment file name of rows `first..=last` whose last chain hash is `last_chain`: the range
/// sorts by name, and the chain prefix keeps two stores archiving into one directory apart.
pub fn segment_name(first: i64, last: i64, last_chain: &str) -> String {
    format!(
        "records-{first:012}-{last:012}-{}.jsonl.zst",
        &last_chain[..last_chain.len().min(16)]
    )
}

/// `(first, last, chain prefix)` of a segment file name, if it is one.
fn parse_segment_name(name: &str) -> Option<(i64, i64, String)> {
    let rest = name.strip_prefix("records-")?.strip_suffix(".jsonl.zst")?;
    let mut parts = rest.splitn(3, '-');
    let first = parts.next()?.parse().ok()?;
    let last = parts.next()?.parse().ok()?;
    Some((first, last, parts.next()?.to_string()))
}

/// The chain value before row `first`: the previous live row's, or the last chain of the cut
/// that ends just before it, or the genesis value for row 1.
fn chain_before(conn: &Connection, first: i64) -> Result<String, StoreError> {
    if first == 1 {
        return Ok(hex::encode(CHAIN_GENESIS));
    }
    let chain_at = |sql: &str| -> Result<Option<String>, StoreError> {
        Ok(conn.query_row(sql, [first - 1], |r| r.get(0)).optional()?)
    };
    if let Some(c) = chain_at("SELECT chain_hash FROM records WHERE id = ?1")? {
        return Ok(c);
    }
    let cut = chain_at("SELECT last_chain FROM record_cuts WHERE last_id = ?1")?;
    cut.ok_or_else(|| {
        StoreError::Batch(format!(
            "row {} is neither in the store nor in an archive: run `records verify` before archiving",
            first - 1
        ))
    })
}

/// A writer that hashes what passes through it.
struct Hashing<W> {
    inner: W,
    hash: Sha256,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// What a written segment ends with, for its cut.
struct Written {
    name: String,
    file_sha256: String,
    prev_chain: String,
    first: (String, String),
    last: (String, String),
}

fn io_err(what: String) -> impl FnOnce(std::io::Error) -> StoreError {
    move |e| StoreError::Batch(format!("{what}: {e}"))
}

/// Fsync a directory, so a rename in it is durable.
fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(format!(
            "cannot sync the directory {}",
            dir.display()
        )))
}

/// Write rows `first..=last` (all live) to their segment file in `dir`: a temporary file,
/// fsynced, renamed into place, the directory fsynced. The file is created 0600: it holds what
/// the store holds, commitment salts included.
fn write_segment(
    conn: &Connection,
    dir: &Path,
    (first, last): (i64, i64),
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Written, StoreError> {
    let prev_chain = chain_before(conn, first)?;
    let (last_sha, last_chain): (String, String) = conn.query_row(
        "SELECT sha256, chain_hash FROM records WHERE id = ?1",
        [last],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let name = segment_name(first, last, &last_chain);
    let tmp = dir.join(format!(".{name}.tmp"));
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(io_err(format!("cannot create {}", tmp.display())))?
    };
    let werr = || io_err(format!("cannot write {}", tmp.display()));
    let hashing = Hashing {
        inner: std::io::BufWriter::new(file),
        hash: Sha256::new(),
    };
    let mut z = zstd::stream::write::Encoder::new(hashing, SEGMENT_LEVEL).map_err(werr())?;
    let header = SegmentHeader {
        archive: Some(SEGMENT_KIND.into()),
        version: Some(1),
        first_row: Some(first),
        last_row: Some(last),
        count: Some(last - first + 1),
        prev_chain: Some(prev_chain.as_str().into()),
        last_chain: Some(last_chain.as_str().into()),
        created_at: Some(crate::clock::walked_at(now).into()),
    };
    z.write_all(&canonical_line(&header)).map_err(werr())?;
    let mut first_pair = None;
    let mut n = 0i64;
    {
        let mut stmt = conn.prepare(
            "SELECT r.id, r.sha256, r.chain_hash, r.inserted_at, r.canonical, r.signature_b64, \
             r.public_key_b64, k.canonical, k.salt_hex \
             FROM records r LEFT JOIN kept_full k ON k.record_id = r.id \
             WHERE r.id BETWEEN ?1 AND ?2 ORDER BY r.id",
        )?;
        let mut rows = stmt.query([first, last])?;
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            let sha: String = r.get(1)?;
            let chain: String = r.get(2)?;
            if id != first + n {
                return Err(StoreError::Batch(format!(
                    "row {} is missing from the range {first}..{last} being archived",
                    first + n
                )));
            }
            let canonical = codec::decode(conn, r.get(4)?).map_err(|e| {
                StoreError::Batch(format!("row {id} cannot be read back, not archived: {e}"))
            })?;
            let text = |bytes: Vec<u8>| {
                String::from_utf8(bytes).map_err(|_| {
                    StoreError::Batch(format!("row {id}: the stored bytes are not UTF-8"))
                })
            };
            let inserted_at: String = r.get(3)?;
            let signature: Option<String> = r.get(5)?;
            let key: Option<String> = r.get(6)?;
            let kept = r.get::<_, Option<Vec<u8>>>(7)?.map(text).transpose()?;
            let salt: Option<String> = r.get(8)?;
            let line = SegmentLine {
                row: Some(id),
                sha256: Some(sha.as_str().into()),
                chain_hash: Some(chain.as_str().into()),
                inserted_at: Some(inserted_at.into()),
                record_canonical: Some(text(canonical)?.into()),
                signature_ed25519_b64: signature.map(Cow::Owned),
                public_key_ed25519_b64: key.map(Cow::Owned),
                kept_full_canonical: kept.map(Cow::Owned),
                kept_salt_hex: salt.map(Cow::Owned),
            };
            z.write_all(&canonical_line(&line)).map_err(werr())?;
            if first_pair.is_none() {
                first_pair = Some((sha, chain));
            }
            n += 1;
        }
    }
    if n != last - first + 1 {
        return Err(StoreError::Batch(format!(
            "rows {}..{last} are missing from the range being archived",
            first + n
        )));
    }
    let hashing = z.finish().map_err(werr())?;
    let file = hashing
        .inner
        .into_inner()
        .map_err(|e| StoreError::Batch(format!("cannot write {}: {e}", tmp.display())))?;
    file.sync_all().map_err(werr())?;
    drop(file);
    let path = dir.join(&name);
    std::fs::rename(&tmp, &path).map_err(io_err(format!(
        "cannot rename {} to {}",
        tmp.display(),
        path.display()
    )))?;
    sync_dir(dir)?;
    Ok(Written {
        name,
        file_sha256: hex::encode(hashing.hash.finalize()),
        prev_chain,
        first: first_pair.unwrap_or_default(),
        last: (last_sha, last_chain),
    })
}

impl Store {
    /// Move the records `retention` lets go at `now` into segment files in `dir` (created if
    /// needed), one cut each. `dry_run` only reports what would go. Safe to run while a writer
    /// appends (each delete transaction re-checks its rows under the write lock) and to kill at
    /// any moment (module docs).
    pub fn archive(
        &self,
        dir: &Path,
        retention: Retention,
        now: chrono::DateTime<chrono::Utc>,
        dry_run: bool,
    ) -> Result<ArchiveReport, StoreError> {
        self.archive_until(dir, retention, now, dry_run, &|| false)
    }

    /// [`Store::archive`] that stops between two segments once `stop()` says so (the daemon's
    /// shutdown); what was cut stays cut, the rest waits for the next run.
    pub fn archive_until(
        &self,
        dir: &Path,
        retention: Retention,
        now: chrono::DateTime<chrono::Utc>,
        dry_run: bool,
        stop: &dyn Fn() -> bool,
    ) -> Result<ArchiveReport, StoreError> {
        let conn = &self.conn;
        let (runs, held) = candidates(conn, retention, now)?;
        let mut report = ArchiveReport {
            held,
            ..ArchiveReport::default()
        };
        if dry_run {
            for (first, last) in runs {
                let chain: String = conn.query_row(
                    "SELECT chain_hash FROM records WHERE id = ?1",
                    [last],
                    |r| r.get(0),
                )?;
                report.segments.push(Segment {
                    first_id: first,
                    last_id: last,
                    file: dir.join(segment_name(first, last, &chain)),
                });
            }
            return Ok(report);
        }
        std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
        for (first, last) in runs {
            if stop() {
                break;
            }
            let written = write_segment(conn, dir, (first, last), now)?;
            let path = dir.join(&written.name);
            if self.cut(first, last, &written, now)? {
                report.segments.push(Segment {
                    first_id: first,
                    last_id: last,
                    file: path,
                });
            } else {
                // The rows stay live; the file would only confuse an auditor.
                let _ = std::fs::remove_file(&path);
                report.skipped += 1;
            }
        }
        report.leftovers_removed = remove_leftovers(conn, dir)?;
        Ok(report)
    }

    /// The delete transaction of one segment: re-check the rows under the write lock, write the
    /// cut, delete the rows. False (nothing changed) when a row is no longer prunable or no
    /// longer what was written.
    fn cut(
        &self,
        first: i64,
        last: i64,
        w: &Written,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<bool, StoreError> {
        let conn = &self.conn;
        // Fires, submissions and facts keep pointing at archived rows (their ids come back with
        // `records import`); foreign keys cannot be deferred past a commit, so they are off for
        // this transaction only. PRAGMA foreign_keys is a no-op inside a transaction.
        conn.execute_batch("PRAGMA foreign_keys = OFF")?;
        let result = (|| -> Result<bool, StoreError> {
            let tx = self.begin_immediate()?;
            let sql = format!(
                "SELECT count(*), coalesce(sum({HOLD_SQL}), 0), \
                 (SELECT chain_hash FROM records WHERE id = :first), \
                 (SELECT chain_hash FROM records WHERE id = :last) \
                 FROM records r WHERE r.id BETWEEN :first AND :last"
            );
            let [(q, queued), (s, sending)] = hold_params();
            let (n, held, first_chain, last_chain): (i64, i64, Option<String>, Option<String>) =
                conn.query_row(
                    &sql,
                    &[
                        (q, &queued as &dyn rusqlite::ToSql),
                        (s, &sending),
                        (":first", &first),
                        (":last", &last),
                    ][..],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )?;
            if n != last - first + 1
                || held != 0
                || first_chain.as_deref() != Some(w.first.1.as_str())
                || last_chain.as_deref() != Some(w.last.1.as_str())
                || chain_before(conn, first)? != w.prev_chain
            {
                return Ok(false);
            }
            conn.execute(
                "INSERT INTO record_cuts (first_id, last_id, count, prev_chain, first_sha256, \
                 first_chain, last_sha256, last_chain, file, file_sha256, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    first,
                    last,
                    last - first + 1,
                    w.prev_chain,
                    w.first.0,
                    w.first.1,
                    w.last.0,
                    w.last.1,
                    w.name,
                    w.file_sha256,
                    crate::clock::utc_millis(now),
                ],
            )?;
            conn.execute(
                "DELETE FROM kept_full WHERE record_id BETWEEN ?1 AND ?2",
                [first, last],
            )?;
            conn.execute(
                "DELETE FROM record_beside WHERE record_id BETWEEN ?1 AND ?2",
                [first, last],
            )?;
            conn.execute(
                "DELETE FROM records WHERE id BETWEEN ?1 AND ?2",
                [first, last],
            )?;
            tx.commit()?;
            Ok(true)
        })();
        conn.execute_batch("PRAGMA foreign_keys = ON")?;
        result
    }
}

/// Remove segment files in `dir` left by an interrupted run: named for this store's rows (the
/// chain prefix of their last row matches), with no cut, and every row of their range still
/// live. Anything else in the directory is left alone.
fn remove_leftovers(conn: &Connection, dir: &Path) -> Result<u64, StoreError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(0);
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let tmp = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp"));
        let final_name = tmp.unwrap_or(&name);
        let Some((first, last, prefix)) = parse_segment_name(final_name) else {
            continue;
        };
        let cut: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM record_cuts WHERE file = ?1)",
            [final_name],
            |r| r.get(0),
        )?;
        // A temporary copy of a segment that was cut is stale; a cut segment is kept.
        let stale = if cut {
            tmp.is_some()
        } else {
            let (n, last_chain): (i64, Option<String>) = conn.query_row(
                "SELECT count(*), (SELECT chain_hash FROM records WHERE id = ?2) \
                 FROM records WHERE id BETWEEN ?1 AND ?2",
                [first, last],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            n == last - first + 1 && last_chain.is_some_and(|c| c.starts_with(&prefix))
        };
        if stale && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

/// One archived row as read from a segment.
pub struct ArchivedRow {
    pub id: i64,
    pub sha256: String,
    pub chain_hash: String,
    pub inserted_at: String,
    pub record: NewRecord,
}

/// What [`check_segment`] found.
#[derive(Debug, Default)]
pub struct SegmentCheck {
    pub rows: u64,
    pub signed: u64,
    pub problems: Vec<Problem>,
}

/// Read a segment line by line: the header, then each row, handed to `each`. An unreadable file
/// or line is a problem at the row it concerns.
fn read_segment(
    path: &Path,
    cut: &Cut,
    mut header: impl FnMut(&SegmentHeader),
    mut each: impl FnMut(i64, Result<ArchivedRow, String>),
) -> Result<(), String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let z = zstd::stream::read::Decoder::new(file)
        .map_err(|e| format!("{} is not a zstd file: {e}", path.display()))?;
    let mut reader = std::io::BufReader::new(z);
    let mut line = Vec::new();
    let mut expected = cut.first_id;
    let mut first = true;
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(|e| {
            format!(
                "{} cannot be read past row {}: {e}",
                path.display(),
                expected - 1
            )
        })?;
        if n == 0 {
            return Ok(());
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        if first {
            first = false;
            match read_line::<SegmentHeader>(text) {
                Ok(h) if h.archive.as_deref() == Some(SEGMENT_KIND) => header(&h),
                _ => {
                    return Err(format!(
                        "{} does not start with a segment header",
                        path.display()
                    ));
                }
            }
            continue;
        }
        each(
            expected,
            read_line::<SegmentLine>(text).and_then(archived_row),
        );
        expected += 1;
    }
}

/// A row's line as the row it archives, or what it lacks.
fn archived_row(line: SegmentLine) -> Result<ArchivedRow, String> {
    let id = line.row.ok_or("line has no row number")?;
    let need =
        |v: Option<Cow<str>>, k: &str| v.map(Cow::into_owned).ok_or(format!("row {id} has no {k}"));
    let kept_full = match (line.kept_full_canonical, line.kept_salt_hex) {
        (Some(k), Some(salt_hex)) => Some(KeptFull {
            canonical: k.into_owned().into_bytes(),
            salt_hex: salt_hex.into_owned(),
        }),
        (None, None) => None,
        _ => return Err(format!("row {id} has half a kept full record")),
    };
    Ok(ArchivedRow {
        id,
        sha256: need(line.sha256, "sha256")?,
        chain_hash: need(line.chain_hash, "chain_hash")?,
        inserted_at: need(line.inserted_at, "inserted_at")?,
        record: NewRecord {
            canonical: need(line.record_canonical, "record_canonical")?.into_bytes(),
            signature_b64: line.signature_ed25519_b64.map(Cow::into_owned),
            public_key_b64: line.public_key_ed25519_b64.map(Cow::into_owned),
            kept_full,
        },
    })
}

/// Whether a segment's header describes its cut.
fn header_matches(h: &SegmentHeader, cut: &Cut) -> bool {
    h.first_row == Some(cut.first_id)
        && h.last_row == Some(cut.last_id)
        && h.count == Some(cut.count)
        && h.prev_chain.as_deref() == Some(cut.prev_chain.as_str())
        && h.last_chain.as_deref() == Some(cut.last_chain.as_str())
}

/// Re-verify a segment against its cut: the header, every row's sha256, signature, form and
/// kept commitment, row numbers, and the chain from the cut's `prev_chain` to its `last_chain`
/// (the checks of [`integrity`], as `records verify` runs them on live rows). Every problem
/// names the row and the file.
pub fn check_segment(path: &Path, cut: &Cut) -> SegmentCheck {
    let mut out = SegmentCheck::default();
    let mut problems = Vec::new();
    let mut prev = decode_hex32(&cut.prev_chain).unwrap_or(CHAIN_GENESIS);
    let mut last_seen: Option<(i64, String)> = None;
    let mut header_problem = None;
    let mut keys = KeyCache::default();
    let read = read_segment(
        path,
        cut,
        |h| {
            if !header_matches(h, cut) {
                header_problem = Some(format!(
                    "its header does not describe the cut (rows {} to {}, chain {} to {})",
                    cut.first_id, cut.last_id, cut.prev_chain, cut.last_chain
                ));
            }
        },
        |expected, row| {
            out.rows += 1;
            let row = match row {
                Ok(r) => r,
                Err(e) => {
                    problems.push(Problem {
                        row: expected,
                        kind: ProblemKind::Unreadable,
                        detail: e,
                    });
                    return;
                }
            };
            if row.id != expected {
                problems.push(Problem {
                    row: expected,
                    kind: ProblemKind::MissingOrReordered,
                    detail: format!("row {} stands where row {expected} should", row.id),
                });
            }
            let rec = &row.record;
            if rec.signature_b64.is_some() && rec.public_key_b64.is_some() {
                out.signed += 1;
            }
            integrity::check_record(&stored_row(&row), &mut keys, true, &mut problems);
            prev =
                integrity::check_link(row.id, &row.sha256, &row.chain_hash, &prev, &mut problems);
            last_seen = Some((row.id, hex::encode(prev)));
        },
    );
    if let Err(e) = read {
        problems.push(Problem {
            row: cut.first_id,
            kind: ProblemKind::Unreadable,
            detail: e,
        });
    }
    if let Some(h) = header_problem {
        problems.push(Problem {
            row: cut.first_id,
            kind: ProblemKind::MissingOrReordered,
            detail: h,
        });
    }
    if let Some(p) = segment_end_problem(last_seen, cut) {
        problems.push(p);
    }
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for p in &mut problems {
        p.detail = format!("in archive {file}: {}", p.detail);
    }
    problems.sort_by_key(|p| (p.row, p.kind));
    out.problems = problems;
    out
}

fn stored_row(row: &ArchivedRow) -> StoredRow<'_> {
    let rec = &row.record;
    StoredRow {
        id: row.id,
        sha256: &row.sha256,
        canonical: &rec.canonical,
        signature_b64: rec.signature_b64.as_deref(),
        public_key_b64: rec.public_key_b64.as_deref(),
        kept: rec.kept_full.as_ref().map(|k| KeptRow {
            canonical: &k.canonical,
            sha256: None,
            salt_hex: &k.salt_hex,
        }),
    }
}

/// The segment must end where its cut does: at its last row, in its last chain value.
fn segment_end_problem(last_seen: Option<(i64, String)>, cut: &Cut) -> Option<Problem> {
    match last_seen {
        Some((id, chain)) if id == cut.last_id && chain == cut.last_chain => None,
        Some((id, chain)) => Some(Problem {
            row: cut.last_id,
            kind: ProblemKind::MissingOrReordered,
            detail: format!(
                "the archive ends at row {id} with chain hash {chain}, but the cut ends at row {} with {}",
                cut.last_id, cut.last_chain
            ),
        }),
        None => Some(Problem {
            row: cut.first_id,
            kind: ProblemKind::RowMissing,
            detail: "the archive holds no rows".into(),
        }),
    }
}

/// The segment header of `path`, if it is a segment file: `(first_row, last_row, last_chain)`.
pub fn segment_header(path: &Path) -> Option<(i64, i64, String)> {
    let file = std::fs::File::open(path).ok()?;
    let z = zstd::stream::read::Decoder::new(file).ok()?;
    let mut line = Vec::new();
    std::io::BufReader::new(z)
        .read_until(b'\n', &mut line)
        .ok()?;
    let h: SegmentHeader = read_line(line.strip_suffix(b"\n").unwrap_or(&line)).ok()?;
    if h.archive.as_deref() != Some(SEGMENT_KIND) {
        return None;
    }
    Some((h.first_row?, h.last_row?, h.last_chain?.into_owned()))
}

/// Whether `path` starts with zstd's magic number (a segment, not a plain export).
pub fn is_zstd_file(path: &Path) -> bool {
    use std::io::Read as _;
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && head == [0x28, 0xB5, 0x2F, 0xFD]
}

/// What [`Store::restore`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restored {
    /// The cut's rows are back in place and the cut is gone.
    InPlace { first_id: i64, last_id: i64 },
    /// No cut of this store matches the segment: its records were imported as new rows
    /// (deduplicated by sha256, chained after the store's last row), as any export.
    AsNew { inserted: u64, already_present: u64 },
}

impl Store {
    /// `records import SEGMENT`: put an archived range back, after checking the whole segment
    /// against its cut (any problem refuses it, nothing written). A segment of another store is
    /// imported as new records.
    pub fn restore(&self, path: &Path) -> Result<Restored, StoreError> {
        let (first, last, last_chain) = segment_header(path).ok_or_else(|| {
            StoreError::Batch(format!(
                "{} is not a records segment (its first line is no segment header)",
                path.display()
            ))
        })?;
        let cut = cuts(&self.conn)?
            .into_iter()
            .find(|c| c.first_id == first && c.last_id == last && c.last_chain == last_chain);
        let Some(cut) = cut else {
            return self.import_as_new(path, first, last);
        };
        let check = check_segment(path, &cut);
        if let Some(p) = check.problems.first() {
            return Err(StoreError::Batch(format!(
                "{} does not match its cut (rows {first} to {last}), nothing was imported: row {}: {}: {}{}",
                path.display(),
                p.row,
                p.kind,
                p.detail,
                if check.problems.len() > 1 {
                    format!(" (and {} more problems)", check.problems.len() - 1)
                } else {
                    String::new()
                }
            )));
        }
        let tx = self.begin_immediate()?;
        // The facts rows stayed while the records were away; the insert writes them anew.
        self.conn.execute(
            "DELETE FROM record_facts WHERE record_id BETWEEN ?1 AND ?2",
            [first, last],
        )?;
        // The summary rows (migration 9) counted these records when they were first stored and
        // kept counting them while archived (counters never go down): the re-insert must not
        // count them twice, so the counts are put back as they were before it.
        let summaries = crate::store::summary::has_summaries(&self.conn)?;
        if summaries {
            self.conn.execute_batch(
                "CREATE TEMP TABLE IF NOT EXISTS restore_summary_records AS \
                     SELECT * FROM summary_records WHERE 0; \
                 CREATE TEMP TABLE IF NOT EXISTS restore_summary_failures AS \
                     SELECT * FROM summary_assertion_failures WHERE 0; \
                 DELETE FROM temp.restore_summary_records; \
                 DELETE FROM temp.restore_summary_failures; \
                 INSERT INTO temp.restore_summary_records SELECT * FROM summary_records; \
                 INSERT INTO temp.restore_summary_failures SELECT * FROM summary_assertion_failures;",
            )?;
        }
        let mut failure = None;
        read_segment(
            path,
            &cut,
            |_| {},
            |_, row| {
                if failure.is_some() {
                    return;
                }
                let r = row.map_err(StoreError::Batch).and_then(|row| {
                    let p = prepare(&row.record)?;
                    insert_row(
                        &self.conn,
                        &self.codec,
                        &p,
                        Some(row.id),
                        &row.inserted_at,
                        &row.chain_hash,
                    )
                    .map_err(|e| StoreError::Batch(format!("row {}: {e}", row.id)))
                });
                if let Err(e) = r {
                    failure = Some(e);
                }
            },
        )
        .map_err(StoreError::Batch)?;
        if let Some(e) = failure {
            return Err(e);
        }
        if summaries {
            self.conn.execute_batch(
                "DELETE FROM summary_records; \
                 INSERT INTO summary_records SELECT * FROM temp.restore_summary_records; \
                 DELETE FROM summary_assertion_failures; \
                 INSERT INTO summary_assertion_failures SELECT * FROM temp.restore_summary_failures;",
            )?;
        }
        self.conn
            .execute("DELETE FROM record_cuts WHERE id = ?1", [cut.id])?;
        tx.commit()?;
        Ok(Restored::InPlace {
            first_id: first,
            last_id: last,
        })
    }

    fn import_as_new(&self, path: &Path, first: i64, last: i64) -> Result<Restored, StoreError> {
        let fake = Cut {
            id: 0,
            first_id: first,
            last_id: last,
            count: last - first + 1,
            prev_chain: String::new(),
            first_sha256: String::new(),
            first_chain: String::new(),
            last_sha256: String::new(),
            last_chain: String::new(),
            file: String::new(),
            file_sha256: String::new(),
            created_at: String::new(),
        };
        let mut records = Vec::new();
        let mut failure = None;
        read_segment(
            path,
            &fake,
            |_| {},
            |expected, row| match row {
                Ok(r) => records.push(r.record),
                Err(e) => {
                    failure.get_or_insert(format!("row {expected}: {e}"));
                }
            },
        )
        .map_err(StoreError::Batch)?;
        if let Some(e) = failure {
            return Err(StoreError::Batch(format!("{}: {e}", path.display())));
        }
        let s = self.insert_many(&records)?;
        Ok(Restored::AsNew {
            inserted: s.inserted,
            already_present: s.already_present,
        })
    }
}
