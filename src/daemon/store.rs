//! The daemon's handle on the record store: one read-write connection shared by the scheduler,
//! used off the async workers (SQLite blocks).

use crate::store::{Store, StoreError};
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[derive(Clone)]
pub struct DaemonStore {
    inner: Arc<Mutex<Store>>,
    path: PathBuf,
    health: Arc<WriteHealth>,
}

/// Why the store stopped taking writes, and since when (RFC 3339).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreFault {
    pub reason: String,
    pub since: String,
}

/// Whether the store takes writes: set when a write is refused for want of disk (or by an I/O
/// error), cleared when a record is stored again. `/healthz` reports it; nothing waits on it,
/// so the daemon keeps scheduling and recovers by itself when space returns.
#[derive(Debug, Default)]
pub struct WriteHealth {
    fault: Mutex<Option<StoreFault>>,
}

impl WriteHealth {
    /// A write was refused for `reason`; the first refusal's time is kept.
    pub fn refused(&self, reason: String) {
        let mut fault = self.fault.lock().unwrap_or_else(|p| p.into_inner());
        match fault.as_mut() {
            Some(f) => f.reason = reason,
            None => {
                tracing::error!(reason = %reason, "the store cannot write: walks are not stored and nothing is sent until it can");
                *fault = Some(StoreFault {
                    reason,
                    since: crate::daemon::db::timestamp(chrono::Utc::now()),
                });
            }
        }
    }

    /// A record was stored: the store takes writes again.
    pub fn wrote(&self) {
        let mut fault = self.fault.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = fault.take() {
            tracing::warn!(since = %f.since, "the store takes writes again");
        }
    }

    pub fn fault(&self) -> Option<StoreFault> {
        self.fault.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
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
