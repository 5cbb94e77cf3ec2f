//! Threads for the read-only faces' blocking work: the status pages, `/metrics`, the daemon's
//! record API (issue 27).
//!
//! Not tokio's blocking pool: the daemon caps that pool at a few threads (`main.rs`) and a wave
//! of walks fills it with tasks waiting for the store's one write connection, so a page queued
//! behind them waited seconds (2.8 s for the overview during a wave of 1,000 walks on a
//! 10,000,000-record store). A face's read opens its own read-only connection and never waits
//! for the writer, so it gets a thread of its own, started per request (tens of microseconds
//! beside a render of milliseconds), and at most [`SLOTS`] at once: a flood of requests waits
//! for a slot instead of starting a thread each.

use tokio::sync::Semaphore;

/// Face reads running at once.
pub const SLOTS: usize = 4;

static RUNNING: Semaphore = Semaphore::const_new(SLOTS);

/// Why a read did not give its result.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot start a thread for the request: {0}")]
    Spawn(std::io::Error),
    #[error("the request's thread panicked")]
    Panicked,
}

/// Run `f` on a thread of its own once a slot is free; afterwards the heap it freed is handed
/// back (a page's rows and HTML were several MB at their peak: `crate::mem`).
pub async fn run<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ReadError> {
    // The semaphore is never closed.
    let _slot = RUNNING.acquire().await.map_err(|_| ReadError::Panicked)?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("face-read".into())
        .spawn(move || {
            let r = f();
            crate::mem::release_free_heap();
            let _ = tx.send(r);
        })
        .map_err(ReadError::Spawn)?;
    rx.await.map_err(|_| ReadError::Panicked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_runs_while_the_blocking_pool_is_full_of_waiting_tasks() {
        // A runtime whose one blocking thread is held, as the walks hold the daemon's.
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (started_tx, started) = std::sync::mpsc::channel::<()>();
        rt.spawn_blocking(move || {
            started_tx.send(()).unwrap();
            held.recv().unwrap();
        });
        started.recv().unwrap();
        let queued = rt.spawn_blocking(|| 1);
        let read = rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(10), run(|| 2)).await
        });
        assert_eq!(read.unwrap().unwrap(), 2, "not queued behind the held pool");
        assert!(!queued.is_finished(), "the pool's own queue is still held");
        release.send(()).unwrap();
        assert_eq!(rt.block_on(queued).unwrap(), 1);
        rt.shutdown_background();
    }

    #[tokio::test]
    async fn a_panicking_read_is_an_error_and_frees_its_slot() {
        for _ in 0..SLOTS + 1 {
            let r = run(|| -> u8 { panic!("boom") }).await;
            assert!(matches!(r, Err(ReadError::Panicked)), "{r:?}");
        }
        assert_eq!(run(|| 3).await.unwrap(), 3);
    }
}
