//! One store connection shared behind a lock, used from async code: the daemon's, the
//! pipeline's and the alert deliverer's connections all run their statements this way.

use super::{Store, StoreError};
use std::sync::{Arc, Mutex};

/// Run `f` on the shared store in the blocking pool (SQLite with synchronous=FULL fsyncs).
///
/// A panic in `f` is a bug, not a store error: it resumes on the caller, as if `f` had run
/// there. A lock poisoned by such a panic is taken anyway (the connection holds no state a
/// panic could leave half-written outside a transaction, which SQLite rolls back). The task is
/// cancelled only when the runtime shuts down: that is reported as an interrupted statement.
pub async fn blocking<T, F>(store: &Arc<Mutex<Store>>, f: F) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
{
    let store = store.clone();
    match tokio::task::spawn_blocking(move || {
        let store = store.lock().unwrap_or_else(|p| p.into_inner());
        f(&store)
    })
    .await
    {
        Ok(r) => r,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(StoreError::Sql(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_INTERRUPT),
            Some(format!("store task cancelled: {e}")),
        ))),
    }
}
