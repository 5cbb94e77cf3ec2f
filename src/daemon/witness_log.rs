//! The witness face's rows (`witness_requests`), written off the async threads: the face hands
//! each row to a thread of its own holding a connection of its own, which commits whatever
//! queued meanwhile in one transaction. Neither the walks' connection nor tokio's blocking pool
//! is used, so a burst of requests cannot delay a scheduled walk. The queue is bounded: a burst
//! can neither grow the heap nor make a request wait on the store; a row that finds the queue
//! full is dropped and logged (the `/metrics` counters still count its request).

use crate::store::witness_requests::{self, WitnessRequest};
use crate::store::{Store, StoreError};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::Duration;
use tokio::time::Instant;

/// Rows waiting for the writer at most.
const QUEUE: usize = 1024;
/// Rows committed in one transaction at most.
const BATCH: usize = 256;

/// The writer thread and the face's way to it.
pub(super) struct RequestLog {
    sender: RowSender,
    thread: std::thread::JoinHandle<()>,
}

/// What a request handler holds to record its row.
#[derive(Clone)]
pub(super) struct RowSender(SyncSender<WitnessRequest>);

impl RowSender {
    /// Queue `row` for the writer; never waits.
    pub fn record(&self, row: WitnessRequest) {
        match self.0.try_send(row) {
            Ok(()) => {}
            Err(TrySendError::Full(row)) => tracing::warn!(
                outcome = %row.outcome,
                "witness face: the request log's queue is full; this request is not recorded"
            ),
            Err(TrySendError::Disconnected(_)) => {
                tracing::warn!("witness face: the request log has stopped; request not recorded")
            }
        }
    }
}

impl RequestLog {
    /// Start the writer on `store` (a connection of its own). Its commits do not wait for an
    /// fsync: with the WAL a process kill loses none, a power loss at most the newest rows of
    /// a log that only informs the operator.
    pub fn start(store: Store) -> Result<RequestLog, String> {
        store
            .connection()
            .execute_batch("PRAGMA synchronous = NORMAL")
            .map_err(|e| format!("the request log's connection: {e}"))?;
        let (tx, rx) = sync_channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("witness-log".into())
            .spawn(move || write_rows(&store, &rx))
            .map_err(|e| format!("cannot start the request log's thread: {e}"))?;
        Ok(RequestLog {
            sender: RowSender(tx),
            thread,
        })
    }

    pub fn sender(&self) -> RowSender {
        self.sender.clone()
    }

    /// Let the writer commit what is queued and end, waiting at most until `until` (a handler
    /// still holding a sender past it leaves the thread behind; the process is ending).
    pub async fn stop(self, until: Instant) {
        let RequestLog { sender, thread } = self;
        drop(sender);
        let joined = tokio::task::spawn_blocking(move || thread.join());
        if tokio::time::timeout_at(until, joined).await.is_err() {
            tracing::warn!("witness face: the request log was still writing at shutdown");
        }
    }
}

fn write_rows(store: &Store, rows: &Receiver<WitnessRequest>) {
    while let Ok(first) = rows.recv() {
        let batch: Vec<WitnessRequest> = std::iter::once(first)
            .chain(rows.try_iter().take(BATCH - 1))
            .collect();
        if let Err(e) = insert_all(store.connection(), &batch) {
            tracing::warn!(error = %e, rows = batch.len(), "witness face: requests not recorded");
        }
    }
}

fn insert_all(conn: &rusqlite::Connection, rows: &[WitnessRequest]) -> Result<(), StoreError> {
    let tx = conn.unchecked_transaction()?;
    for row in rows {
        witness_requests::insert(&tx, row)?;
    }
    tx.commit()?;
    Ok(())
}

/// The shortest wait for the writer at shutdown, however late the daemon's grace ends.
pub(super) const MIN_STOP_WAIT: Duration = Duration::from_secs(2);

/// At most `chars` characters of `text`, an ellipsis saying when it was cut.
pub(super) fn clip(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: usize) -> WitnessRequest {
        WitnessRequest {
            received_at: format!("2026-12-06T03:40:{:02}.000Z", i % 60),
            outcome: "declined".into(),
            reason: Some("bad_request".into()),
            endpoint: None,
            request_sha256: None,
            record_sha256: None,
            detail: Some(format!("row {i}")),
        }
    }

    #[tokio::test]
    async fn every_queued_row_is_committed_before_the_writer_ends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("walker.db");
        let log = RequestLog::start(Store::open(&path).unwrap()).unwrap();
        let sender = log.sender();
        for i in 0..300 {
            sender.record(row(i));
        }
        drop(sender);
        log.stop(Instant::now() + Duration::from_secs(30)).await;
        let store = Store::open_read_only(&path).unwrap();
        let rows = witness_requests::recent(store.connection(), 1000).unwrap();
        assert_eq!(rows.len(), 300);
        assert_eq!(rows[0].detail.as_deref(), Some("row 299"));
    }
}
