//! Group commit: records that arrive while the store is busy committing are committed together,
//! in one transaction, by one writer thread.
//!
//! With `synchronous=FULL` each transaction waits for an `fsync`, and on the machines we measured
//! that wait, not the CPU, bounds one-transaction-per-record throughput (BENCHMARKS.md, note 5).
//! Here a producer hands its checked record to the writer and waits; the writer takes everything
//! queued (up to [`MAX_BATCH`]), inserts each record in turn inside one `BEGIN IMMEDIATE`
//! transaction, commits once, and only then answers each producer. So:
//!
//! - a record is durable before its producer hears of it (and so before it is printed, signed
//!   for the outbox or sent);
//! - the hash chain stays a total order: one thread appends, in queue order;
//! - a record alone is not delayed: the writer never waits for company, it takes whatever
//!   arrived while the previous commit was running;
//! - one record's failure does not fail its batch: each record runs inside its own savepoint,
//!   and only a failed `COMMIT` fails every record of the batch.

use super::{Prepared, PreparedRecord, Store, StoreError, insert_prepared};
use rusqlite::Connection;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

/// Most records one transaction takes: bounds the time the store's lock is held (other users of
/// the connection, such as the outbox, wait for it) and the WAL growth of one commit.
pub const MAX_BATCH: usize = 256;

/// What a record's caller writes in the record's transaction, after the record itself: it gets
/// the connection, the row id and whether the row is new (see [`Store::insert_prepared_then`]).
pub type Then<T> = Box<dyn FnOnce(&Connection, i64, bool) -> Result<T, StoreError> + Send>;

/// A record committed durably.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed<T> {
    /// The row id (chain order).
    pub id: i64,
    /// False when a record with the same sha256 was already stored (nothing was written).
    pub new: bool,
    /// What the record's [`Then`] returned.
    pub extra: T,
}

struct Job<T> {
    prepared: PreparedRecord,
    then: Then<T>,
    reply: Reply<T>,
}

/// The producers' handle on the writer thread; cheap to clone. The writer exits when every
/// handle is dropped and the queue is empty.
pub struct GroupCommit<T> {
    queue: mpsc::Sender<Job<T>>,
    transactions: Arc<AtomicU64>,
}

impl<T> Clone for GroupCommit<T> {
    fn clone(&self) -> Self {
        GroupCommit {
            queue: self.queue.clone(),
            transactions: self.transactions.clone(),
        }
    }
}

impl<T> GroupCommit<T> {
    /// Transactions the writer has committed (or tried to) so far: fewer than the records
    /// committed when records shared transactions.
    pub fn transactions(&self) -> u64 {
        self.transactions.load(Ordering::Relaxed)
    }
}

impl<T: Send + 'static> GroupCommit<T> {
    /// Start the writer thread over `store`. The lock is taken once per batch, so other users of
    /// the same store (outbox updates, reads) interleave between batches.
    pub fn start(store: Arc<Mutex<Store>>) -> std::io::Result<GroupCommit<T>> {
        let (queue, jobs) = mpsc::channel::<Job<T>>();
        let transactions = Arc::new(AtomicU64::new(0));
        let count = transactions.clone();
        std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || writer(&store, &jobs, &count))?;
        Ok(GroupCommit {
            queue,
            transactions,
        })
    }

    fn enqueue(
        &self,
        prepared: PreparedRecord,
        then: Then<T>,
    ) -> Result<tokio::sync::oneshot::Receiver<Result<Committed<T>, StoreError>>, StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.queue
            .send(Job {
                prepared,
                then,
                reply,
            })
            .map_err(|_| writer_gone())?;
        Ok(answer)
    }

    /// Commit a record (and what `then` writes about it); returns once its transaction is
    /// durable.
    pub async fn commit(
        &self,
        prepared: PreparedRecord,
        then: Then<T>,
    ) -> Result<Committed<T>, StoreError> {
        self.enqueue(prepared, then)?
            .await
            .map_err(|_| writer_gone())?
    }

    /// [`GroupCommit::commit`] for a thread outside any async runtime.
    pub fn commit_blocking(
        &self,
        prepared: PreparedRecord,
        then: Then<T>,
    ) -> Result<Committed<T>, StoreError> {
        self.enqueue(prepared, then)?
            .blocking_recv()
            .map_err(|_| writer_gone())?
    }
}

fn writer_gone() -> StoreError {
    StoreError::Batch("the store's writer thread has stopped".into())
}

fn writer<T>(store: &Mutex<Store>, jobs: &mpsc::Receiver<Job<T>>, transactions: &AtomicU64) {
    // Block for the first record only; then take what is already queued, never waiting.
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let answered = {
            let store = store.lock().unwrap_or_else(|p| p.into_inner());
            commit_batch(&store, batch)
        };
        transactions.fetch_add(1, Ordering::Relaxed);
        for (reply, answer) in answered {
            // A producer that stopped waiting (its task was cancelled) still has its record
            // stored; nothing else to do for it.
            let _ = reply.send(answer);
        }
    }
}

type Reply<T> = tokio::sync::oneshot::Sender<Result<Committed<T>, StoreError>>;

/// Each job's reply with its answer, in the batch's order.
type Answered<T> = Vec<(Reply<T>, Result<Committed<T>, StoreError>)>;

/// One transaction for the whole batch, one savepoint per record; each job's reply with its
/// answer, in order. Nothing is answered before the `COMMIT` returned.
fn commit_batch<T>(store: &Store, batch: Vec<Job<T>>) -> Answered<T> {
    // A failed COMMIT (a full disk) is rolled back when its transaction is dropped; should that
    // rollback fail too, the connection stays inside the transaction and every later BEGIN
    // would fail. End it here, so the writer recovers by itself once the disk takes writes.
    if !store.conn.is_autocommit() {
        let _ = store.conn.execute_batch("ROLLBACK");
    }
    let tx = match store.begin_immediate() {
        Ok(tx) => tx,
        Err(e) => return failed_all(batch.into_iter().map(|j| j.reply), &e),
    };
    let answered: Vec<_> = batch
        .into_iter()
        .map(|job| {
            let answer = one_in_savepoint(store, &job.prepared.0, job.then);
            (job.reply, answer)
        })
        .collect();
    match tx.commit() {
        Ok(()) => {
            store.codec.maybe_train(&store.conn, answered.len() as u64);
            answered
        }
        Err(e) => failed_all(answered.into_iter().map(|(r, _)| r), &StoreError::from(e)),
    }
}

fn one_in_savepoint<T>(
    store: &Store,
    prepared: &Prepared<crate::store::NewRecord>,
    then: Then<T>,
) -> Result<Committed<T>, StoreError> {
    let conn = &store.conn;
    conn.prepare_cached("SAVEPOINT record")?.execute([])?;
    let run = || -> Result<Committed<T>, StoreError> {
        let (id, new) = insert_prepared(conn, &store.codec, prepared)?;
        let extra = then(conn, id, new)?;
        Ok(Committed { id, new, extra })
    };
    // A panicking `then` must not take the writer (and every later record) down with it.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or_else(|_| {
        Err(StoreError::Batch(
            "storing this record panicked; it was not stored".into(),
        ))
    });
    if result.is_err() {
        conn.prepare_cached("ROLLBACK TO record")?.execute([])?;
    }
    conn.prepare_cached("RELEASE record")?.execute([])?;
    result
}

fn failed_all<T>(replies: impl Iterator<Item = Reply<T>>, e: &StoreError) -> Answered<T> {
    replies
        .map(|reply| {
            let answer = match e.unwritable_reason() {
                Some(why) => StoreError::Unwritable(why),
                None => StoreError::Batch(format!(
                    "the transaction holding this record failed, nothing of it was stored: {e}"
                )),
            };
            (reply, Err(answer))
        })
        .collect()
}
