//! The emulator's own SQLite file: stored records (pending or anchored), per-day counters and
//! counting markers, batch ledger entries and the per-day network tallies.
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
CREATE TABLE IF NOT EXISTS ledger_entries (
    n     INTEGER PRIMARY KEY,      -- explicit: a dropped entry leaves a hole (fault hook)
    entry TEXT NOT NULL,            -- the stored entry of ledger.md §4.3 as JSON
    claim TEXT NOT NULL,            -- its claim_sha256 (the batch's dedupe looks it up)
    proof BLOB                      -- the OpenTimestamps proof, once stamped
);
CREATE INDEX IF NOT EXISTS ledger_entries_claim ON ledger_entries (claim);
CREATE TABLE IF NOT EXISTS ledger_meta (
    k TEXT PRIMARY KEY,
    v INTEGER NOT NULL              -- count: entries ever appended (n of the last one)
);
CREATE TABLE IF NOT EXISTS responses (
    sha            TEXT NOT NULL,
    response_sha   TEXT NOT NULL,
    subject_origin TEXT NOT NULL,
    responded_at   TEXT NOT NULL,
    PRIMARY KEY (sha, response_sha)
);
CREATE TABLE IF NOT EXISTS day_salts (
    day  TEXT PRIMARY KEY,
    salt TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS task_observations (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    evidence_id  TEXT NOT NULL,     -- not unique: every accepted POST is kept
    task_id      TEXT NOT NULL,
    witness_id   TEXT NOT NULL,
    body         TEXT NOT NULL,     -- exactly as POSTed
    received_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS task_observations_evidence ON task_observations (evidence_id);
CREATE TABLE IF NOT EXISTS networks (
    day     TEXT NOT NULL,
    net_key TEXT NOT NULL,          -- salted hash of a /24 or /48; no address is kept
    PRIMARY KEY (day, net_key)
);
";

/// A ledger entry as stored: its JSON text and its proof, if stamped.
pub type EntryRow = (String, Option<Vec<u8>>);

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
    /// The emulator clock at storing, in ms (delayed visibility).
    pub now_ms: i64,
}

/// What steps 7–10 decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Admit {
    GlobalFull,
    LaneFull,
    Duplicate(RecordStatus),
    Stored { counted: bool },
}

/// One batch entry appended by the operator or scheduled run.
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
        // WAL with NORMAL sync: a crash cannot corrupt the file, and a test that appends
        // thousands of ledger entries does not wait for an fsync per entry (a 10,000-entry
        // ledger took 7.5 minutes with the default journal). The emulator's state is test data.
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
            .map_err(open_err)?;
        conn.execute_batch(SCHEMA_SQL).map_err(open_err)?;
        // Columns added with the ledger's read side; a state file from before gets them here
        // ("duplicate column" means it has them already).
        for column in [
            "stale_pending INTEGER NOT NULL DEFAULT 0",
            "stored_ms INTEGER",
            "anchored_ms INTEGER",
        ] {
            match conn.execute(&format!("ALTER TABLE records ADD COLUMN {column}"), []) {
                Ok(_) => {}
                Err(e) if e.to_string().contains("duplicate column") => {}
                Err(e) => return Err(open_err(e)),
            }
        }
        // The pool's keys, so a batch reads the pool, not every record ever stored.
        conn.execute_batch(
            "CREATE INDEX IF NOT EXISTS records_pool_sha ON records (sha)
                 WHERE ledger_entry IS NULL OR stale_pending = 1;
             CREATE INDEX IF NOT EXISTS records_pool_seq ON records (seq)
                 WHERE ledger_entry IS NULL OR stale_pending = 1;
             CREATE INDEX IF NOT EXISTS records_pending_sha ON records (sha)
                 WHERE ledger_entry IS NULL;",
        )
        .map_err(open_err)?;
        Ok(State { conn })
    }

    pub fn counter(&self, day: &str, lane: &str) -> Result<u64, EmulatorError> {
        Ok(counter_in(&self.conn, day, lane)?)
    }

    /// Steps 7–10 in one transaction, so concurrent submissions cannot overshoot a cap or both
    /// claim the counting marker. The global cap was checked at step 4 already; it is checked
    /// again here only to close that race (sequential use gets the same answers).
    pub fn admit(&mut self, a: Admission<'_>) -> Result<Admit, EmulatorError> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
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
            "INSERT INTO records (sha, stored, stored_ms) VALUES (?1, ?2, ?3)",
            params![a.sha, Value::Object(stored).to_string(), a.now_ms],
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

    /// Pending stored objects in sha order (KV key order), at most one KV page of 1,000
    /// (ledger.md §3). Anchored records with a stale pending key are skipped.
    pub fn pending(&self) -> Result<Vec<Value>, EmulatorError> {
        let mut stmt = self.conn.prepare(
            "SELECT stored FROM records WHERE ledger_entry IS NULL ORDER BY sha LIMIT 1000",
        )?;
        let texts = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        texts.iter().map(|t| parse_stored(t)).collect()
    }

    /// Keep an accepted task observation (`POST /witness/task`); how many POSTs of this
    /// evidence_id it now holds.
    pub fn store_task_observation(
        &self,
        evidence_id: &str,
        task_id: &str,
        witness_id: &str,
        body: &str,
        received_at: &str,
    ) -> Result<u64, EmulatorError> {
        self.conn.execute(
            "INSERT INTO task_observations (evidence_id, task_id, witness_id, body, received_at) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![evidence_id, task_id, witness_id, body, received_at],
        )?;
        Ok(self.conn.query_row(
            "SELECT COUNT(*) FROM task_observations WHERE evidence_id = ?1",
            [evidence_id],
            |r| r.get::<_, i64>(0),
        )? as u64)
    }

    /// Task observations accepted, duplicates included.
    pub fn task_observation_count(&self) -> Result<u64, EmulatorError> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM task_observations", [], |r| {
                r.get::<_, i64>(0)
            })? as u64)
    }

    /// Every accepted task observation body, in arrival order.
    pub fn task_observations(&self) -> Result<Vec<String>, EmulatorError> {
        let mut stmt = self
            .conn
            .prepare("SELECT body FROM task_observations ORDER BY seq")?;
        let rows = stmt
            .query_map([], |r| r.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        Ok(rows)
    }

    /// Records held, pending and anchored.
    pub fn stored_count(&self) -> Result<u64, EmulatorError> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM records", [], |r| r.get::<_, i64>(0))?
            as u64)
    }

    /// The keys of the pending pool as the batch lists them (ledger.md §4.2): records without
    /// an entry, and anchored ones whose pending key survived (a stale key, fault hook), by sha
    /// or by submission; each with its stored object and whether it is already anchored.
    pub fn pending_keys(
        &self,
        limit: usize,
        oldest_first: bool,
    ) -> Result<Vec<(String, Value, bool)>, EmulatorError> {
        let order = if oldest_first { "seq" } else { "sha" };
        let mut stmt = self.conn.prepare(&format!(
            "SELECT sha, stored, ledger_entry IS NOT NULL FROM records
             WHERE ledger_entry IS NULL OR stale_pending = 1 ORDER BY {order} LIMIT ?1"
        ))?;
        let rows = stmt
            .query_map([limit as i64], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get(2)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        rows.into_iter()
            .map(|(sha, text, anchored)| Ok((sha, parse_stored(&text)?, anchored)))
            .collect()
    }

    /// Removes the pending keys of records already anchored (the worker's "healed" case).
    pub fn heal(&self, shas: &[String]) -> Result<(), EmulatorError> {
        for sha in shas {
            self.conn
                .execute("UPDATE records SET stale_pending = 0 WHERE sha = ?1", [sha])?;
        }
        Ok(())
    }

    /// Entries ever appended: the n of the last one, whatever was dropped since.
    pub fn ledger_count(&self) -> Result<u64, EmulatorError> {
        let v: Option<i64> = self
            .conn
            .query_row("SELECT v FROM ledger_meta WHERE k = 'count'", [], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(v.unwrap_or(0) as u64)
    }

    /// Appends entry `entry_json` as n = count + 1 and marks `anchored` as anchored in it, in
    /// one transaction.
    pub fn append_entry(
        &mut self,
        n: u64,
        entry_json: &str,
        claim: &str,
        anchored: &[String],
        now_ms: i64,
    ) -> Result<(), EmulatorError> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO ledger_entries (n, entry, claim) VALUES (?1, ?2, ?3)",
            params![n as i64, entry_json, claim],
        )?;
        tx.execute(
            "INSERT INTO ledger_meta (k, v) VALUES ('count', ?1)
             ON CONFLICT (k) DO UPDATE SET v = ?1",
            [n as i64],
        )?;
        for sha in anchored {
            tx.execute(
                "UPDATE records SET ledger_entry = ?1, stale_pending = 0, anchored_ms = ?2
                 WHERE sha = ?3",
                params![n as i64, now_ms, sha],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// A ledger entry's stored JSON and its proof, if any.
    pub fn ledger_entry(&self, n: u64) -> Result<Option<EntryRow>, EmulatorError> {
        Ok(self
            .conn
            .query_row(
                "SELECT entry, proof FROM ledger_entries WHERE n = ?1",
                [n as i64],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }

    /// Entries `from..=to` present, in n order (a dropped one is simply absent).
    pub fn ledger_entries(&self, from: u64, to: u64) -> Result<Vec<(u64, String)>, EmulatorError> {
        let mut stmt = self
            .conn
            .prepare("SELECT n, entry FROM ledger_entries WHERE n BETWEEN ?1 AND ?2 ORDER BY n")?;
        let rows = stmt
            .query_map(params![from as i64, to as i64], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get(1)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Replaces entry n's stored JSON (fault hooks; the OTS fields).
    pub fn put_entry(&self, n: u64, entry_json: &str, claim: &str) -> Result<bool, EmulatorError> {
        Ok(self.conn.execute(
            "UPDATE ledger_entries SET entry = ?2, claim = ?3 WHERE n = ?1",
            params![n as i64, entry_json, claim],
        )? == 1)
    }

    /// The lowest n of an entry with this claim.
    pub fn entry_with_claim(&self, claim: &str) -> Result<Option<u64>, EmulatorError> {
        Ok(self
            .conn
            .query_row(
                "SELECT MIN(n) FROM ledger_entries WHERE claim = ?1",
                [claim],
                |r| r.get::<_, Option<i64>>(0),
            )?
            .map(|n| n as u64))
    }

    pub fn set_proof(&self, n: u64, proof: Option<&[u8]>) -> Result<bool, EmulatorError> {
        Ok(self.conn.execute(
            "UPDATE ledger_entries SET proof = ?2 WHERE n = ?1",
            params![n as i64, proof],
        )? == 1)
    }

    /// Removes entry n (fault hook): the count stays, so the chain has a hole at n.
    pub fn delete_entry(&self, n: u64) -> Result<bool, EmulatorError> {
        Ok(self
            .conn
            .execute("DELETE FROM ledger_entries WHERE n = ?1", [n as i64])?
            == 1)
    }

    /// Stores a record object as given, pending (test hook: records whose bytes a test does
    /// not have, e.g. the spec's observed ones).
    pub fn insert_stored(
        &self,
        sha: &str,
        stored: &Value,
        now_ms: i64,
    ) -> Result<(), EmulatorError> {
        self.conn.execute(
            "INSERT INTO records (sha, stored, stored_ms) VALUES (?1, ?2, ?3)",
            params![sha, stored.to_string(), now_ms],
        )?;
        Ok(())
    }

    /// Leaves an anchored record's pending key in place (fault hook).
    pub fn set_stale_pending(&self, sha: &str) -> Result<bool, EmulatorError> {
        Ok(self.conn.execute(
            "UPDATE records SET stale_pending = 1 WHERE sha = ?1 AND ledger_entry IS NOT NULL",
            [sha],
        )? == 1)
    }

    /// When a record was stored and anchored (emulator clock, ms), for delayed visibility.
    pub fn record_times(&self, sha: &str) -> Result<(Option<i64>, Option<i64>), EmulatorError> {
        Ok(self
            .conn
            .query_row(
                "SELECT stored_ms, anchored_ms FROM records WHERE sha = ?1",
                [sha],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?
            .unwrap_or((None, None)))
    }

    pub fn add_response(
        &self,
        sha: &str,
        response_sha: &str,
        subject_origin: &str,
        responded_at: &str,
    ) -> Result<(), EmulatorError> {
        self.conn.execute(
            "INSERT INTO responses (sha, response_sha, subject_origin, responded_at)
             VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (sha, response_sha) DO UPDATE SET subject_origin = ?3, responded_at = ?4",
            params![sha, response_sha, subject_origin, responded_at],
        )?;
        Ok(())
    }

    /// (response_sha, subject_origin, responded_at), sorted by `responded_at` then
    /// `response_sha` (§2.4).
    pub fn responses(&self, sha: &str) -> Result<Vec<(String, String, String)>, EmulatorError> {
        let mut stmt = self.conn.prepare(
            "SELECT response_sha, subject_origin, responded_at FROM responses WHERE sha = ?1
             ORDER BY responded_at, response_sha",
        )?;
        let rows = stmt
            .query_map([sha], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
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
