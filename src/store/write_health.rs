//! Whether the store takes writes (the daemon's one view of it, shared by `/healthz` and the
//! alert timers): kept beside the store so the faces and the alerts read it without importing
//! each other.

use std::sync::Mutex;

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
                    since: super::daemon_walks::timestamp(chrono::Utc::now()),
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
