//! The emulator's own SQLite file: stored records (pending or anchored), per-day counters and
//! counting markers, the key_url cache, batch ledger entries and the per-day network tallies.
//! Everything that must survive a restart lives here; nothing is kept only in memory.

use super::EmulatorError;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;
use std::path::Path;

const SCHEMA_SQL: &str = "
CREATE TABLE IF NOT EXISTS records (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    sha          TEXT NOT NULL UNIQUE,
    stored       TEXT NOT NULL,      -- the stored object of §6.2 as JSON
    ledger_entry INTEGER            -- NULL while pending
);
CREATE TABLE IF NOT EXISTS counters (
    day  TEXT NOT NULL,             -- server UTC date, YYYY-MM-DD
    lane TEXT NOT NULL,             -- global | ip:<16 hex> | domain:<host>
    n    INTEGER NOT NULL,
    PRIMARY KEY (day, lane)
);
CREATE TABLE IF NOT EXISTS count_markers (
    day    TEXT NOT NULL,
    marker TEXT NOT NULL,           -- 32-hex prefix of sha256(identity|endpoint)
    PRIMARY KEY (day, marker)
);
CREATE TABLE IF NOT EXISTS key_cache (
    key_url      TEXT PRIMARY KEY,
    served_key   TEXT NOT NULL,
    fetched_at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger (
    n                INTEGER PRIMARY KEY AUTOINCREMENT,
    sha              TEXT NOT NULL,
    record_canonical TEXT NOT NULL,
    created_at       TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS day_salts (
    day  TEXT PRIMARY KEY,
    salt TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS networks (
    day     TEXT NOT NULL,
    net_key TEXT NOT NULL,          -- salted hash of a /24 or /48; no address is kept
    PRIMARY KEY (day, net_key)
);
";

/// Lane name of the global counter.
pub const LANE_GLOBAL: &str = "global";

/// Where a stored record stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordStatus {
    Pending,
    Anchored { ledger_entry: i64 },
}

/// Everything steps 7–10 need, decided before the transaction.
#[derive(Debug, Clone)]
pub struct Admission<'a> {
    pub day: &'a str,
    pub sha: &'a str,
    /// `ip:<16 hex>` or `domain:<host>`.
    pub lane: &'a str,
    pub lane_cap: u64,
    pub global_cap: u64,
    pub marker: &'a str,
    /// The stored object without `counted` / `count_reason` (filled in here).
    pub stored: serde_json::Map<String, Value>,
    pub count_reason_when_not_counted: &'a str,
}

/// What steps 7–10 decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Admit {
    GlobalFull,
    LaneFull,
    Duplicate(RecordStatus),
    Stored { counted: bool },
}

/// One batch written by [`State::anchor`].
#[derive(Debug, Clone)]
pub struct AnchoredBatch {
    pub ledger_entry: i64,
    pub count: usize,
    pub record_canonical: String,
    pub shas: Vec<String>,
}

pub struct State {
    conn: Connection,
}

impl State {
    pub fn open(path: &Path) -> Result<Self, EmulatorError> {
        let open_err = |source| EmulatorError::StateOpen {
            path: path.display().to_string(),
            source,
        };
        let conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(open_err)?;
        conn.execute_batch(SCHEMA_SQL).map_err(open_err)?;
        Ok(State { conn })
    }

    pub fn counter(&self, day: &str, lane: &str) -> Result<u64, EmulatorError> {
        Ok(counter_in(&self.conn, day, lane)?)
    }

    /// Steps 7–10 in one transaction, so concurrent submissions cannot overshoot a cap or both
    /// claim the counting marker. The global cap was checked at step 4 already; it is checked
    /// again here only to close that race (sequential use gets the same answers).
    pub fn admit(&mut self, a: Admission<'_>) -> Result<Admit, EmulatorError> {
        let tx = self.conn.transaction()?;
        if counter_in(&tx, a.day, LANE_GLOBAL)? >= a.global_cap {
            return Ok(Admit::GlobalFull);
        }
        if counter_in(&tx, a.day, a.lane)? >= a.lane_cap {
            return Ok(Admit::LaneFull);
        }
        if let Some(status) = status_in(&tx, a.sha)? {
            return Ok(Admit::Duplicate(status));
        }
        let counted = tx.execute(
            "INSERT OR IGNORE INTO count_markers (day, marker) VALUES (?1, ?2)",
            params![a.day, a.marker],
        )? == 1;
        let mut stored = a.stored;
        stored.insert("counted".into(), Value::Bool(counted));
        stored.insert(
            "count_reason".into(),
            if counted {
                Value::Null
            } else {
                Value::String(a.count_reason_when_not_counted.to_string())
            },
        );
        tx.execute(
            "INSERT INTO records (sha, stored) VALUES (?1, ?2)",
            params![a.sha, Value::Object(stored).to_string()],
        )?;
        for lane in [LANE_GLOBAL, a.lane] {
            tx.execute(
                "INSERT INTO counters (day, lane, n) VALUES (?1, ?2, 1)
                 ON CONFLICT (day, lane) DO UPDATE SET n = n + 1",
                params![a.day, lane],
            )?;
        }
        tx.commit()?;
        Ok(Admit::Stored { counted })
    }

    pub fn status(&self, sha: &str) -> Result<Option<RecordStatus>, EmulatorError> {
        Ok(status_in(&self.conn, sha)?)
    }

    /// The stored object and where it stands.
    pub fn stored(&self, sha: &str) -> Result<Option<(Value, RecordStatus)>, EmulatorError> {
        let row: Option<(String, Option<i64>)> = self
            .conn
            .query_row(
                "SELECT stored, ledger_entry FROM records WHERE sha = ?1",
                [sha],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        row.map(|(text, entry)| Ok((parse_stored(&text)?, to_status(entry))))
            .transpose()
    }

    /// Pending stored objects in submission order.
    pub fn pending(&self) -> Result<Vec<Value>, EmulatorError> {
        let mut stmt = self
            .conn
            .prepare("SELECT stored FROM records WHERE ledger_entry IS NULL ORDER BY seq")?;
        let texts = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        texts.iter().map(|t| parse_stored(t)).collect()
    }

    /// Records held, pending and anchored.
    pub fn stored_count(&self) -> Result<u64, EmulatorError> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM records", [], |r| r.get::<_, i64>(0))?
            as u64)
    }

    /// A served key still inside its cache lifetime.
    pub fn cached_key(
        &self,
        key_url: &str,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<Option<String>, EmulatorError> {
        Ok(self
            .conn
            .query_row(
                "SELECT served_key FROM key_cache WHERE key_url = ?1 AND ?2 < fetched_at_ms + ?3",
                params![key_url, now_ms, ttl_ms],
                |r| r.get(0),
            )
            .optional()?)
    }

    pub fn cache_key(&self, key_url: &str, served: &str, now_ms: i64) -> Result<(), EmulatorError> {
        self.conn.execute(
            "INSERT INTO key_cache (key_url, served_key, fetched_at_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT (key_url) DO UPDATE SET served_key = ?2, fetched_at_ms = ?3",
            params![key_url, served, now_ms],
        )?;
        Ok(())
    }

    /// Bundle up to `batch_max` pending records (sorted by sha) into one ledger entry whose text
    /// `build` writes from the stored objects and the current ledger head. None when the pool
    /// is empty.
    pub fn anchor(
        &mut self,
        batch_max: usize,
        created_at: &str,
        build: impl FnOnce(&[Value], Option<&str>) -> String,
    ) -> Result<Option<AnchoredBatch>, EmulatorError> {
        let tx = self.conn.transaction()?;
        let rows: Vec<(String, String)> = {
            let mut stmt = tx.prepare(
                "SELECT sha, stored FROM records WHERE ledger_entry IS NULL ORDER BY sha LIMIT ?1",
            )?;
            stmt.query_map([batch_max as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?
        };
        if rows.is_empty() {
            return Ok(None);
        }
        let stored = rows
            .iter()
            .map(|(_, t)| parse_stored(t))
            .collect::<Result<Vec<_>, _>>()?;
        let head: Option<String> = tx
            .query_row("SELECT sha FROM ledger ORDER BY n DESC LIMIT 1", [], |r| {
                r.get(0)
            })
            .optional()?;
        let text = build(&stored, head.as_deref());
        tx.execute(
            "INSERT INTO ledger (sha, record_canonical, created_at) VALUES (?1, ?2, ?3)",
            params![crate::digest::sha256_hex(&text), text, created_at],
        )?;
        let n = tx.last_insert_rowid();
        for (sha, _) in &rows {
            tx.execute(
                "UPDATE records SET ledger_entry = ?1 WHERE sha = ?2",
                params![n, sha],
            )?;
        }
        tx.commit()?;
        Ok(Some(AnchoredBatch {
            ledger_entry: n,
            count: rows.len(),
            record_canonical: text,
            shas: rows.into_iter().map(|(sha, _)| sha).collect(),
        }))
    }

    /// A ledger entry: (sha, record_canonical, created_at).
    pub fn ledger_entry(&self, n: i64) -> Result<Option<(String, String, String)>, EmulatorError> {
        Ok(self
            .conn
            .query_row(
                "SELECT sha, record_canonical, created_at FROM ledger WHERE n = ?1",
                [n],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?)
    }

    /// The day's salt for network tallies, created on first use.
    pub fn day_salt(&self, day: &str) -> Result<String, EmulatorError> {
        let fresh = hex::encode(rand::random::<[u8; 32]>());
        self.conn.execute(
            "INSERT OR IGNORE INTO day_salts (day, salt) VALUES (?1, ?2)",
            params![day, fresh],
        )?;
        Ok(self
            .conn
            .query_row("SELECT salt FROM day_salts WHERE day = ?1", [day], |r| {
                r.get(0)
            })?)
    }

    pub fn note_network(&self, day: &str, net_key: &str) -> Result<(), EmulatorError> {
        self.conn.execute(
            "INSERT OR IGNORE INTO networks (day, net_key) VALUES (?1, ?2)",
            params![day, net_key],
        )?;
        Ok(())
    }

    /// (day, distinct networks) in day order.
    pub fn networks_by_day(&self) -> Result<Vec<(String, u64)>, EmulatorError> {
        let mut stmt = self
            .conn
            .prepare("SELECT day, COUNT(*) FROM networks GROUP BY day ORDER BY day")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }
}

fn counter_in(conn: &Connection, day: &str, lane: &str) -> rusqlite::Result<u64> {
    let n: Option<i64> = conn
        .query_row(
            "SELECT n FROM counters WHERE day = ?1 AND lane = ?2",
            params![day, lane],
            |r| r.get(0),
        )
        .optional()?;
    Ok(n.unwrap_or(0) as u64)
}

fn status_in(conn: &Connection, sha: &str) -> rusqlite::Result<Option<RecordStatus>> {
    let entry: Option<Option<i64>> = conn
        .query_row(
            "SELECT ledger_entry FROM records WHERE sha = ?1",
            [sha],
            |r| r.get(0),
        )
        .optional()?;
    Ok(entry.map(to_status))
}

fn to_status(entry: Option<i64>) -> RecordStatus {
    match entry {
        Some(ledger_entry) => RecordStatus::Anchored { ledger_entry },
        None => RecordStatus::Pending,
    }
}

fn parse_stored(text: &str) -> Result<Value, EmulatorError> {
    serde_json::from_str(text)
        .map_err(|e| EmulatorError::Corrupt(format!("a stored object is not JSON: {e}")))
}
