//! The store's incremental verifier (issue 27, moved here from the status pages in issue 36):
//! `records verify` over the rows added since its last run, linked to the chain value that run
//! ended in, and over every row once a day. It keeps the last result in memory; whoever serves
//! the pages runs it as a background job ([`IncrementalVerifier::due`] says what a tick should
//! run) and shows [`IncrementalVerifier::last`].
//!
//! Its cost must not grow with the history (a store of 10,000,000 records takes many minutes
//! to verify), so a tick checks only the new rows, at most once a minute; every row is read
//! again once a day. An edit to a row already checked shows at the next daily run (and at any
//! `records verify`).

use super::verify::{Resume, VerifyOptions, verify_with};
use super::{Store, StoreError, VerifyReport};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The last verification of this store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifySummary {
    /// When the last run finished (a full one, or one over the rows added since).
    pub finished_at: String,
    /// When the last run over every row finished.
    pub full_at: String,
    /// Rows checked by the last full run and the runs over new rows since.
    pub rows: u64,
    pub signed: u64,
    pub problems: Vec<String>,
    pub head: Option<(i64, String)>,
}

impl VerifySummary {
    /// This summary followed by a run over the rows added after its head.
    fn then(self, newer: VerifySummary) -> VerifySummary {
        VerifySummary {
            finished_at: newer.finished_at,
            full_at: self.full_at,
            rows: self.rows + newer.rows,
            signed: self.signed + newer.signed,
            problems: self.problems.into_iter().chain(newer.problems).collect(),
            head: newer.head.or(self.head),
        }
    }
}

/// How often every row is read again.
const VERIFY_ALL_EVERY_SECS: i64 = 24 * 3600;
/// How often a tick checks the rows added since the last run.
const VERIFY_NEW_EVERY_SECS: i64 = 60;
/// A background run's pace: 10,000,000 rows in under 17 minutes once a day, while its reads
/// (unlike its CPU, which nice 19 yields) would otherwise sweep the page cache the pages and
/// the walks read from (the I/O scheduler may ignore the idle class).
pub const BACKGROUND_ROWS_PER_SEC: u32 = 10_000;
/// Rows per read transaction of a background run (about a second of it at that pace).
const BACKGROUND_CHUNK_ROWS: u64 = 10_000;

/// What a tick runs.
#[derive(Debug, PartialEq, Eq)]
pub enum VerifyRun {
    Nothing,
    All,
    Since(Resume),
}

/// The run due at `now` (seconds) after `last`.
pub fn run_due(last: Option<&VerifySummary>, now: i64) -> VerifyRun {
    let age = |t: &str| {
        chrono::DateTime::parse_from_rfc3339(t)
            .map(|t| now - t.timestamp())
            .unwrap_or(i64::MAX)
    };
    let Some(last) = last else {
        return VerifyRun::All;
    };
    if age(&last.full_at) > VERIFY_ALL_EVERY_SECS {
        return VerifyRun::All;
    }
    if age(&last.finished_at) <= VERIFY_NEW_EVERY_SECS {
        return VerifyRun::Nothing;
    }
    match Resume::from_head(&last.head) {
        Some(from) => VerifyRun::Since(from),
        // Nothing read yet (an empty store): reading everything costs nothing.
        None => VerifyRun::All,
    }
}

/// How a verification runs: its workers, its pace, and the rows per read transaction (`None`:
/// the defaults, unpaced, one transaction).
#[derive(Debug, Default, Clone)]
pub struct VerifyPace {
    pub workers: Option<usize>,
    pub rows_per_sec: Option<u32>,
    pub chunk: Option<u64>,
}

impl VerifyPace {
    /// A background job's: one worker, [`BACKGROUND_ROWS_PER_SEC`], a read transaction a second.
    pub fn background() -> VerifyPace {
        VerifyPace {
            workers: Some(1),
            rows_per_sec: Some(BACKGROUND_ROWS_PER_SEC),
            chunk: Some(BACKGROUND_CHUNK_ROWS),
        }
    }
}

/// The last run's result, and whether a run is going on.
#[derive(Default)]
pub struct IncrementalVerifier {
    last: Mutex<Option<VerifySummary>>,
    running: AtomicBool,
}

/// A claim on the verifier: the run it is for. Dropping it lets the next run start.
pub struct Claimed {
    verifier: Arc<IncrementalVerifier>,
    pub from: Option<Resume>,
}

impl Drop for Claimed {
    fn drop(&mut self) {
        self.verifier.running.store(false, Ordering::SeqCst);
    }
}

impl Claimed {
    /// Run the claimed verification over the store at `db` at `pace`.
    pub fn run(self, db: &Path, pace: &VerifyPace) -> Result<(), StoreError> {
        self.verifier.run(db, self.from.clone(), pace)
    }
}

impl IncrementalVerifier {
    pub fn last(&self) -> Option<VerifySummary> {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::SeqCst)
    }

    /// The run due at `now` (seconds), claimed so no other starts meanwhile; `None` when nothing
    /// is due or a run is going on.
    pub fn claim_due(self: &Arc<Self>, now: i64) -> Option<Claimed> {
        let from = match run_due(self.last().as_ref(), now) {
            VerifyRun::Nothing => return None,
            VerifyRun::All => None,
            VerifyRun::Since(from) => Some(from),
        };
        if self.running.swap(true, Ordering::SeqCst) {
            return None;
        }
        Some(Claimed {
            verifier: self.clone(),
            from,
        })
    }

    /// Verify every row now, in this thread (tests and `records serve --verify-now`).
    pub fn run_now(&self, db: &Path) -> Result<(), StoreError> {
        self.run(db, None, &VerifyPace::default())
    }

    /// Check the rows added since the last run now, in this thread (tests).
    pub fn run_new_rows_now(&self, db: &Path) -> Result<(), StoreError> {
        let from = self.last().and_then(|l| Resume::from_head(&l.head));
        self.run(db, from, &VerifyPace::default())
    }

    /// Verify every row (`from` = None) or those after `from`, and remember the result: a
    /// resumed run adds to the last summary.
    fn run(&self, db: &Path, from: Option<Resume>, pace: &VerifyPace) -> Result<(), StoreError> {
        let resumed = from.is_some();
        let s = verify_summary(db, from, pace)?;
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        *last = Some(match last.take() {
            Some(prev) if resumed => prev.then(s),
            _ => s,
        });
        Ok(())
    }
}

/// `records verify` over the store at `db`, read-only: every row, or those after `from`. With a
/// chunk, in runs of at most that many rows, each in its own read transaction and resumed from
/// the last one's head: a paced scrub of millions of rows must not hold one read transaction
/// for many minutes (the write-ahead log could not be checkpointed meanwhile, and every
/// reader's page lookups would slow as it grew).
fn verify_summary(
    db: &Path,
    mut from: Option<Resume>,
    pace: &VerifyPace,
) -> Result<VerifySummary, StoreError> {
    let store = Store::open_read_only(db)?;
    let mut all = VerifyReport::default();
    loop {
        let r = verify_with(
            &store,
            &VerifyOptions {
                archives: None,
                from: from.clone(),
                workers: pace.workers,
                rows_per_sec: pace.rows_per_sec,
                limit: pace.chunk,
            },
            |_, _| {},
        )?;
        let more = pace.chunk.is_some_and(|c| r.rows >= c);
        let next = Resume::from_head(&r.head);
        all.extend(r);
        match next {
            Some(next) if more => from = Some(next),
            _ => break,
        }
    }
    let finished_at = crate::clock::walked_at(chrono::Utc::now());
    Ok(VerifySummary {
        full_at: finished_at.clone(),
        finished_at,
        rows: all.rows,
        signed: all.signed,
        problems: all
            .problems
            .iter()
            .map(|p| format!("row {}: {}: {}", p.row, p.kind, p.detail))
            .collect(),
        head: all.head,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(finished: &str, full: &str, head: Option<(i64, String)>) -> VerifySummary {
        VerifySummary {
            finished_at: finished.into(),
            full_at: full.into(),
            rows: 1,
            signed: 1,
            problems: Vec::new(),
            head,
        }
    }

    fn at(t: &str) -> i64 {
        chrono::DateTime::parse_from_rfc3339(t).unwrap().timestamp()
    }

    #[test]
    fn every_row_first_then_new_rows_each_minute_then_every_row_daily() {
        let head = Some((7, "ab".repeat(32)));
        let resume = VerifyRun::Since(Resume {
            after_id: 7,
            chain: [0xab; 32],
        });
        assert_eq!(run_due(None, at("2026-12-01T10:00:00Z")), VerifyRun::All);
        let s = summary("2026-12-01T10:00:00Z", "2026-12-01T10:00:00Z", head.clone());
        assert_eq!(
            run_due(Some(&s), at("2026-12-01T10:01:00Z")),
            VerifyRun::Nothing
        );
        assert_eq!(run_due(Some(&s), at("2026-12-01T10:01:01Z")), resume);
        let s = summary("2026-12-02T09:58:00Z", "2026-12-01T10:00:00Z", head.clone());
        assert_eq!(run_due(Some(&s), at("2026-12-02T10:00:00Z")), resume);
        assert_eq!(
            run_due(Some(&s), at("2026-12-02T10:00:01Z")),
            VerifyRun::All
        );
        // An empty store has no head to resume from: reading "everything" costs nothing.
        let s = summary("2026-12-01T10:00:00Z", "2026-12-01T10:00:00Z", None);
        assert_eq!(
            run_due(Some(&s), at("2026-12-01T10:05:00Z")),
            VerifyRun::All
        );
        // A time that cannot be read is as old as can be.
        let s = summary("garbage", "garbage", head);
        assert_eq!(
            run_due(Some(&s), at("2026-12-01T10:05:00Z")),
            VerifyRun::All
        );
    }

    #[test]
    fn one_claim_at_a_time_and_none_when_nothing_is_due() {
        let v = Arc::new(IncrementalVerifier::default());
        let now = at("2026-12-01T10:00:00Z");
        let claim = v.claim_due(now).expect("a first run is due");
        assert!(claim.from.is_none(), "the first run reads every row");
        assert!(v.is_running());
        assert!(v.claim_due(now).is_none(), "one run at a time");
        drop(claim);
        assert!(!v.is_running());
        *v.last.lock().unwrap() = Some(summary(
            "2026-12-01T10:00:00Z",
            "2026-12-01T10:00:00Z",
            Some((3, "cd".repeat(32))),
        ));
        assert!(
            v.claim_due(now + 30).is_none(),
            "ran less than a minute ago"
        );
        assert_eq!(
            v.claim_due(now + 61)
                .unwrap()
                .from
                .clone()
                .unwrap()
                .after_id,
            3
        );
    }
}
