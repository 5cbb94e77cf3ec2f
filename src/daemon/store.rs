//! The daemon's handle on the record store: one read-write connection shared by the scheduler,
//! used off the async workers (SQLite blocks).

use crate::store::{Store, StoreError};
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use crate::store::write_health::{StoreFault, WriteHealth};

#[derive(Clone)]
pub struct DaemonStore {
    inner: Arc<Mutex<Store>>,
    path: PathBuf,
    health: Arc<WriteHealth>,
}

impl DaemonStore {
    /// Open (creating and migrating) the store.
    pub fn open(path: &Path) -> Result<DaemonStore, StoreError> {
        Ok(DaemonStore {
            inner: Arc::new(Mutex::new(Store::open(path)?)),
            path: path.to_path_buf(),
            health: Arc::default(),
        })
    }

    /// Whether the store takes writes (shared by every clone).
    pub fn health(&self) -> Arc<WriteHealth> {
        self.health.clone()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A connection of its own to the same store (WAL), for a service that must neither wait
    /// for the walks' connection nor hold it: the ledger follower (it holds its connection
    /// across reads), retention (a run deletes segment after segment), alert delivery (it
    /// marks deliveries with relaxed syncs). Each is opened once per process.
    pub fn open_another(&self) -> Result<Store, StoreError> {
        Store::open(&self.path)
    }

    /// Run `f` on the connection in the blocking pool.
    pub async fn with<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.with_store(move |s| f(s.connection())).await
    }

    /// Run `f` with this connection's commits not waiting for an fsync (`synchronous =
    /// NORMAL`), for the fires' own rows (`daemon_walks`): two per walk, and with FULL each
    /// waited for its fsync while holding the store's write lock that the records' commits
    /// need. With the WAL such a commit survives a process kill; at power loss only the newest
    /// can be lost (a begun walk then reads as aborted), never one written before a record's
    /// commit: that commit's fsync covers the whole WAL, these frames with it.
    pub async fn with_relaxed<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.with(move |c| {
            c.execute_batch("PRAGMA synchronous = NORMAL")?;
            let result = f(c);
            c.execute_batch("PRAGMA synchronous = FULL")?;
            result
        })
        .await
    }

    /// Run `f` on the store itself in the blocking pool (its record methods).
    pub async fn with_store<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    {
        let result = crate::store::shared::blocking(&self.inner, f).await;
        if let Err(e) = &result
            && let Some(why) = e.unwritable_reason()
        {
            self.health.refused(why);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synchronous(c: &Connection) -> Result<i64, StoreError> {
        Ok(c.query_row("PRAGMA synchronous", [], |r| r.get(0))?)
    }

    /// A relaxed write runs with NORMAL (1) and leaves the connection at FULL (2) for the next
    /// caller, whether it succeeded or failed; what it wrote is there.
    #[tokio::test]
    async fn a_relaxed_write_commits_and_leaves_the_connection_at_full() {
        let dir = tempfile::tempdir().unwrap();
        let store = DaemonStore::open(&dir.path().join("walker.db")).unwrap();
        assert_eq!(store.with(synchronous).await.unwrap(), 2);
        let (inside, id) = store
            .with_relaxed(|c| {
                let id = crate::store::daemon_walks::begin_walk(
                    c,
                    &crate::store::daemon_walks::WalkStart {
                        target: "t",
                        origin: "https://agent.example",
                        endpoint: None,
                        scheduled_for: "2026-12-04T12:00:00Z",
                        now: "2026-12-04T12:00:00Z",
                    },
                )?;
                Ok((synchronous(c)?, id))
            })
            .await
            .unwrap();
        assert_eq!(inside, 1);
        assert_eq!(store.with(synchronous).await.unwrap(), 2);
        let failed: Result<(), _> = store
            .with_relaxed(|c| Ok(c.execute_batch("INSERT INTO no_such_table VALUES (1)")?))
            .await;
        assert!(failed.is_err());
        assert_eq!(store.with(synchronous).await.unwrap(), 2);
        let reopened = Store::open(store.path()).unwrap();
        let state: String = reopened
            .connection()
            .query_row("SELECT state FROM daemon_walks WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(state, "running");
    }
}
