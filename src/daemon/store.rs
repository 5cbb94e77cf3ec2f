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
