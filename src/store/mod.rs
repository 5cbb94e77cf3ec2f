//! The SQLite record store: every walk record, exactly as signed and filed, in an append-only
//! table whose rows are linked by a hash chain, so an auditor can prove nothing was edited,
//! removed or reordered (`conduct-walker records verify`).
//!
//! Chain rule: `chain_hash(row) = sha256(chain_hash(previous row) || sha256(row's canonical
//! bytes))`, over the raw 32-byte digests (not their hex), with 32 zero bytes standing in for the
//! row before the first. Rows are chained in `id` order. Both digests are stored as lower-case hex.
//!
//! The store derives its metadata columns (endpoint, verdict, ...) from the canonical bytes itself
//! ([`meta::derive`]); callers hand over only the bytes, the signature and the key.

/// A struct read from a row whose columns are its fields, in the struct's order:
/// `SELECT a, b, c` → `from_columns!(r => T { a, b, c })`, each `r.get(i)?` with `i` counted
/// here; `b(|v: i64| v as u64)` reads the column as the closure's argument and converts it.
macro_rules! from_columns {
    ($row:ident => $ty:ident { $($field:ident $(($conv:expr))?),+ $(,)? }) => {{
        let mut column = 0usize;
        $ty {
            $($field: from_columns!(@get $row, column $(, $conv)?)),+
        }
    }};
    (@get $row:ident, $column:ident) => {
        $row.get({
            $column += 1;
            $column - 1
        })?
    };
    (@get $row:ident, $column:ident, $conv:expr) => {
        ($conv)($row.get({
            $column += 1;
            $column - 1
        })?)
    };
}

pub mod alerts;
pub mod archive;
pub mod beside;
pub mod codec;
mod columns;
pub mod consent_checks;
pub mod daemon_walks;
pub mod group;
pub mod integrity;
pub mod key_events;
pub mod ledger;
pub mod mcp_walks;
pub mod meta;
pub mod notifications;
pub mod outbox;
pub mod pages;
pub mod reciprocal_walks;
pub mod record_view;
pub mod schema;
pub mod shared;
pub mod signatures;
pub mod status;
pub mod summary;
pub mod task_bindings;
pub mod transfer;
pub mod verifier;
pub mod verify;
pub mod witness_requests;
pub mod write_health;

use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, params};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use meta::{MetaError, RecordMeta, Verdict};
pub use schema::SCHEMA_VERSION;
pub use verify::{Problem, ProblemKind, SignatureError, VerifyReport, check_signature, verify_all};

/// File name of the store inside `$STATE_DIRECTORY`.
pub const DB_FILE_NAME: &str = "walker.db";

/// How long a connection waits for another process's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// 32 zero bytes: the chain value "before" the first row.
pub const CHAIN_GENESIS: [u8; 32] = [0; 32];

/// Everything the store can refuse or fail at, each naming what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no database path: pass --db PATH (or run under systemd with StateDirectory= set)")]
    NoDbPath,
    /// A config file names no store: `run` and `mcp` take no `--db`, so the hint is the key.
    #[error(
        "no database path: set `database` under [daemon] in {config} (or run under systemd with StateDirectory= set)"
    )]
    NoDbPathInConfig { config: PathBuf },
    #[error("cannot create the directory {path} for the database: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create the database {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no database at {0}")]
    Missing(PathBuf),
    #[error("cannot open the database {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "cannot read the database {path} here: its write-ahead log {wal} holds records not yet in the main file, and reading them needs write access to {dir} (for the -shm index). Read it where it is written, or copy the database with its -wal file to a writable place"
    )]
    WalNeedsWritableDirectory {
        path: PathBuf,
        wal: PathBuf,
        dir: PathBuf,
    },
    #[error("the database {path} could not be switched to WAL journaling (it reports {mode:?})")]
    NotWal { path: PathBuf, mode: String },
    #[error(
        "the database {path} has schema version {found}, but this conduct-walker knows versions up to {known}; use a newer conduct-walker"
    )]
    SchemaTooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error(
        "{path} holds no records in its main file, and its write-ahead log {wal} is missing: a store in use keeps its newest records in the -wal file. Copy walker.db together with walker.db-wal (or stop the writer first: a clean exit folds the log into walker.db), or copy it with `records export` / sqlite3's `.backup`"
    )]
    WalMissing { path: PathBuf, wal: PathBuf },
    #[error(
        "{path} is not a conduct-walker store (schema version 0); open it read-write once to create one"
    )]
    NotAStore { path: PathBuf },
    #[error("cannot migrate the database {path} to schema version {known}: {source}")]
    Migrate {
        path: PathBuf,
        known: i64,
        source: rusqlite::Error,
    },
    #[error(
        "{path}: another connection kept its write-ahead log busy, so its records were not all copied into the database file; copy the store with its -wal file, or with `records export`"
    )]
    CheckpointBusy { path: PathBuf },
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("not a walk record: {0}")]
    NotARecord(#[from] MetaError),
    #[error(
        "the record bytes are not in NENRIN canonical form (sha256 {sha256}); store exactly the canonical bytes that are signed and filed"
    )]
    NotCanonical { sha256: String },
    #[error("a signature needs its public key and a public key needs its signature")]
    HalfSigned,
    #[error("the record's signature does not check: {0}")]
    Signature(#[from] SignatureError),
    #[error("kept full record: {0}")]
    KeptFull(String),
    #[error("{0:?} is not a sha256 prefix (1 to 64 hex characters)")]
    BadPrefix(String),
    #[error("no record has a sha256 starting with {0}")]
    UnknownPrefix(String),
    #[error("the prefix {prefix} is ambiguous: it matches {} and more may follow; give more characters", .matches.join(", "))]
    AmbiguousPrefix {
        prefix: String,
        matches: Vec<String>,
    },
    #[error("{0:?} is not a date: use YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ")]
    BadDate(String),
    #[error("{0}")]
    Batch(String),
    /// The transaction holding a record could not be written (disk full, I/O error, read-only
    /// file): nothing of it was stored. Kept apart from [`StoreError::Batch`] so the daemon can
    /// tell a store that cannot write from a record that was wrong.
    #[error(
        "the transaction holding this record could not be written, nothing of it was stored: {0}"
    )]
    Unwritable(String),
    #[error("record {} of the batch: {source}", .index + 1)]
    InBatch {
        /// 0-based position in the slice given to [`Store::insert_many`].
        index: usize,
        source: Box<StoreError>,
    },
}

impl StoreError {
    /// Another connection held the lock past what this one could wait (`SQLITE_BUSY`).
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            StoreError::Sql(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
        )
    }

    /// Why the store cannot write, when that is what this error means: SQLite ran out of disk
    /// (`SQLITE_FULL`), the file system failed a write or a sync (`SQLITE_IOERR`, which is what
    /// a write past a file-size limit gives), or the file became read-only. None for everything
    /// else (a bad record, a constraint, a busy lock): those say nothing about the disk.
    pub fn unwritable_reason(&self) -> Option<String> {
        use rusqlite::ErrorCode;
        match self {
            StoreError::Unwritable(why) => Some(why.clone()),
            StoreError::InBatch { source, .. } => source.unwritable_reason(),
            StoreError::Sql(rusqlite::Error::SqliteFailure(e, msg)) => {
                let what = match e.code {
                    ErrorCode::DiskFull => "the disk is full",
                    ErrorCode::SystemIoFailure => "the file system failed a write",
                    ErrorCode::ReadOnly => "the database has become read-only",
                    _ => return None,
                };
                Some(match msg {
                    Some(m) => format!("{what} ({m}, SQLite code {})", e.extended_code),
                    None => format!("{what} (SQLite code {})", e.extended_code),
                })
            }
            _ => None,
        }
    }
}

/// The database path: `--db` wins, else `$STATE_DIRECTORY/walker.db` (the first directory when
/// systemd lists several, colon-separated), else an error asking for `--db`.
pub fn default_db_path(cli: Option<&Path>) -> Result<PathBuf, StoreError> {
    let dirs = std::env::var_os("STATE_DIRECTORY");
    flag_or_systemd_dir(cli, dirs.as_deref(), DB_FILE_NAME).ok_or(StoreError::NoDbPath)
}

/// A path flag when given, else `file` in the first of the colon-separated directories systemd
/// names in a `$…_DIRECTORY` variable (`dirs`); None with neither.
pub fn flag_or_systemd_dir(
    flag: Option<&Path>,
    dirs: Option<&std::ffi::OsStr>,
    file: &str,
) -> Option<PathBuf> {
    if let Some(p) = flag {
        return Some(p.to_path_buf());
    }
    let dir = dirs
        .and_then(|s| s.to_str())
        .and_then(|s| s.split(':').next())
        .filter(|s| !s.is_empty())?;
    Some(Path::new(dir).join(file))
}

/// Commitment mode (conduct-walk.md §4.6): the full record and salt the witness keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptFull {
    /// Canonical bytes of the kept full record.
    pub canonical: Vec<u8>,
    /// The 32-byte salt as 64 lower-case hex characters.
    pub salt_hex: String,
}

/// A record to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRecord {
    /// The exact bytes that were signed and filed (NENRIN canonical form).
    pub canonical: Vec<u8>,
    /// Standard padded base64 Ed25519 signature over `canonical`.
    pub signature_b64: Option<String>,
    /// Standard padded base64 of the raw 32-byte Ed25519 public key.
    pub public_key_b64: Option<String>,
    /// Commitment mode only: the full record and salt, kept beside, never filed.
    pub kept_full: Option<KeptFull>,
}

/// A stored row without its bytes (what `list` returns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRow {
    /// Row id: insertion order and chain order.
    pub id: i64,
    /// Lower-case hex sha256 of the canonical bytes: the record's identity.
    pub sha256: String,
    pub meta: RecordMeta,
    pub signed: bool,
    /// When this store received the record (UTC, RFC 3339).
    pub inserted_at: String,
    /// Lower-case hex chain hash of this row (see the module docs).
    pub chain_hash: String,
}

impl RecordRow {
    /// The row as JSON, one shape for every face that lists records (`records list --json`,
    /// the daemon's `/records`).
    pub fn to_json(&self) -> serde_json::Value {
        let verdict = self.meta.verdict.as_ref().map(|v| {
            serde_json::json!({"ok": v.ok, "outcome": v.outcome, "n_pass": v.n_pass, "n_total": v.n_total})
        });
        serde_json::json!({
            "id": self.id,
            "sha256": self.sha256,
            "walked_at": self.meta.walked_at,
            "endpoint": self.meta.endpoint,
            "origin": self.meta.origin,
            "walker_mode": self.meta.walker_mode,
            "privacy_mode": self.meta.privacy_mode,
            "verdict": verdict,
            "signed": self.signed,
            "key_url": self.meta.key_url,
            "inserted_at": self.inserted_at,
            "chain_hash": self.chain_hash,
        })
    }
}

/// A stored row with its bytes, signature and any kept full record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRecord {
    pub row: RecordRow,
    pub canonical: Vec<u8>,
    pub signature_b64: Option<String>,
    pub public_key_b64: Option<String>,
    pub kept_full: Option<KeptFull>,
}

/// Result of [`Store::insert_record_with_status`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inserted {
    pub record: StoredRecord,
    /// False when a record with the same sha256 was already stored (nothing was written).
    pub new: bool,
}

/// Totals of [`Store::insert_many`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InsertSummary {
    pub inserted: u64,
    pub already_present: u64,
}

/// Filters of [`Store::list`]; all optional, combined with AND.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Exact match on the derived endpoint.
    pub endpoint: Option<String>,
    /// `walked_at >= since`; a `YYYY-MM-DDTHH:MM:SSZ` string (see [`parse_since`]).
    pub since: Option<String>,
    /// Exact match on `verdict.outcome` (`PASS`, `FAIL`).
    pub outcome: Option<String>,
}

/// Begin a transaction that writes, the one way every writer of the store begins one:
/// IMMEDIATE, so the write lock is taken first and another writer is waited for (up to the
/// busy timeout, 10 s). A DEFERRED transaction that reads and then writes cannot wait: SQLite
/// answers its first write with "database is locked" at once when another connection wrote
/// since its read (issue 35: alert-timer planning beside a restarted daemon's writer).
pub fn write_transaction(conn: &Connection) -> Result<rusqlite::Transaction<'_>, StoreError> {
    Ok(rusqlite::Transaction::new_unchecked(
        conn,
        rusqlite::TransactionBehavior::Immediate,
    )?)
}

/// Run `f` in a transaction that usually only reads (a timer looking for work): DEFERRED, so
/// it takes no write lock when it writes nothing and never stalls the records' writer for a
/// look that finds nothing. When its first write is refused because another connection holds
/// the lock (which a transaction that has read cannot wait out), it is rolled back and runs
/// again from the start in a [`write_transaction`], which waits like every writer. `f` must
/// decide only from what it reads (it may run twice).
pub fn mostly_read_transaction<T>(
    conn: &Connection,
    mut f: impl FnMut(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    {
        let tx =
            rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Deferred)?;
        match f(&tx).and_then(|v| Ok(tx.commit().map(|()| v)?)) {
            Ok(v) => return Ok(v),
            Err(e) if e.is_busy() => {} // rolled back when `tx` was dropped
            Err(e) => return Err(e),
        }
    }
    let tx = write_transaction(conn)?;
    let v = f(&tx)?;
    tx.commit()?;
    Ok(v)
}

/// The store's own identifier (`store_identity`: 32 hex digits, made once when the store was
/// created or migrated, never changed): the witness's identity in every alert id.
pub fn identity(conn: &Connection) -> Result<String, StoreError> {
    Ok(conn
        .prepare_cached("SELECT id FROM store_identity WHERE one = 1")?
        .query_row([], |r| r.get(0))?)
}

/// Turn a user's `--since` value into the `walked_at` form it is compared with:
/// `YYYY-MM-DD` means midnight UTC; an RFC 3339 time is converted to UTC whole seconds.
pub fn parse_since(text: &str) -> Result<String, StoreError> {
    let bad = || StoreError::BadDate(text.to_string());
    if let Ok(d) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(format!("{}T00:00:00Z", d.format("%Y-%m-%d")));
    }
    let t = chrono::DateTime::parse_from_rfc3339(text).map_err(|_| bad())?;
    Ok(crate::clock::walked_at(t.with_timezone(&chrono::Utc)))
}

/// An open store. Read-write stores own the schema; read-only ones refuse every write at the
/// SQLite level.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Compresses new rows (item 4 of issue 27); unused by read-only stores.
    codec: codec::Encoder,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

const ROW_COLUMNS: &str = "r.id, r.sha256, r.signed, r.endpoint, r.origin, r.walked_at, \
    r.walker_mode, r.privacy_mode, r.verdict_ok, r.outcome, r.n_pass, r.n_total, r.key_url, \
    r.inserted_at, r.chain_hash";
const FULL_COLUMNS: &str =
    "r.canonical, r.signature_b64, r.public_key_b64, k.canonical, k.salt_hex";

/// `PATH` + `suffix` (SQLite's `-wal` and `-shm` files).
fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Whether the file's SQLite header says WAL journaling (read and write versions 2, bytes 18
/// and 19): its newest transactions may live in the `-wal` file beside it.
fn is_wal_database(path: &Path) -> bool {
    use std::io::Read as _;
    let mut head = [0u8; 20];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && head.starts_with(b"SQLite format 3\0")
        && head[18] == 2
        && head[19] == 2
}

/// A `file:` URI for SQLite with one query parameter; the path is percent-encoded so `?`, `#`
/// and `%` in a file name stay part of it.
fn sqlite_uri(path: &Path, query: &str) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push('?');
    uri.push_str(query);
    uri
}

impl Store {
    /// Open (creating the file and its directory if needed) for reading and writing, set the
    /// pragmas and apply any missing migrations in one transaction.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        // The store holds commitment salts and kept full records: it is created 0600, as `walk`
        // writes its salt files, whatever the umask. SQLite gives its -wal and -shm files the
        // main file's mode.
        {
            use std::os::unix::fs::OpenOptionsExt;
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
            {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(source) => {
                    return Err(StoreError::Create {
                        path: path.to_path_buf(),
                        source,
                    });
                }
            }
        }
        let open_err = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(open_err)?;
        // The busy timeout first: switching to WAL needs a lock another process may hold.
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(open_err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::NotWal {
                path: path.to_path_buf(),
                mode,
            });
        }
        // FULL: a record acknowledged as stored survives power loss (WAL + NORMAL would not).
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
            .map_err(open_err)?;
        stable_plans(&conn).map_err(open_err)?;
        match schema::migrate(&conn) {
            Ok(schema::Migrated::TooNew { found }) => Err(StoreError::SchemaTooNew {
                path: path.to_path_buf(),
                found,
                known: SCHEMA_VERSION,
            }),
            Ok(_) => Ok(Store {
                conn,
                path: path.to_path_buf(),
                codec: codec::Encoder::default(),
            }),
            Err(source) => Err(StoreError::Migrate {
                path: path.to_path_buf(),
                known: SCHEMA_VERSION,
                source,
            }),
        }
    }

    /// Open an existing store read-only (auditor commands). Works while a writer has the
    /// database open; never creates, migrates or writes anything, and leaves no file behind.
    ///
    /// A store with no `-wal` file beside it is whole in its main file and nobody has it open
    /// for writing (a writer's connection keeps the `-wal`): it is opened `immutable=1`, which
    /// takes no locks and creates no `-wal`/`-shm`, so a copy on a read-only mount can be read.
    /// Otherwise `mode=ro` reads the log too, which needs the `-shm` index; if that cannot be
    /// made and the log is empty, `immutable=1` still reads everything.
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing(path.to_path_buf()));
        }
        let open_err = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let wal = sidecar(path, "-wal");
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let immutable = || Connection::open_with_flags(sqlite_uri(path, "immutable=1"), flags);
        let conn = match std::fs::metadata(&wal) {
            Err(_) => immutable().map_err(open_err)?,
            Ok(log) => {
                let live = Connection::open_with_flags(sqlite_uri(path, "mode=ro"), flags)
                    .and_then(|c| {
                        // Opening is lazy: the first read is what needs the -shm index.
                        c.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
                        Ok(c)
                    });
                match live {
                    Ok(c) => c,
                    Err(_) if log.len() == 0 => immutable().map_err(open_err)?,
                    Err(_) => {
                        return Err(StoreError::WalNeedsWritableDirectory {
                            path: path.to_path_buf(),
                            dir: path
                                .parent()
                                .filter(|d| !d.as_os_str().is_empty())
                                .unwrap_or(Path::new("."))
                                .to_path_buf(),
                            wal,
                        });
                    }
                }
            }
        };
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        conn.execute_batch("PRAGMA query_only = ON")
            .map_err(open_err)?;
        stable_plans(&conn).map_err(open_err)?;
        let found = schema::current_version(&conn).map_err(open_err)?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::SchemaTooNew {
                path: path.to_path_buf(),
                found,
                known: SCHEMA_VERSION,
            });
        }
        if found == 0 {
            // A WAL database whose -wal was left behind (a copy of walker.db alone, taken while
            // a writer had it open) reads as empty: say so, rather than suggest making a store.
            if is_wal_database(path) && !wal.exists() {
                return Err(StoreError::WalMissing {
                    path: path.to_path_buf(),
                    wal,
                });
            }
            return Err(StoreError::NotAStore {
                path: path.to_path_buf(),
            });
        }
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            codec: codec::Encoder::default(),
        })
    }

    /// Copy every transaction in the write-ahead log into the database file and empty the log:
    /// after this, `walker.db` alone holds every record, so a copy of it without its `-wal` is
    /// whole. Each face that writes calls it on a clean exit (SQLite does the same when the last
    /// connection closes, but a process that exits with a connection still open skips that).
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        let (busy, _log, _moved): (i64, i64, i64) =
            self.conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?;
        if busy != 0 {
            return Err(StoreError::CheckpointBusy {
                path: self.path.clone(),
            });
        }
        Ok(())
    }

    /// The database file this store was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The compressor of new rows (`codec::Encoder::set_enabled(false)`: rows stored raw, as
    /// before migration 7; the benches' baseline).
    pub fn codec(&self) -> &codec::Encoder {
        &self.codec
    }

    /// The underlying connection, for modules that add their own tables by migration.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Store a record in one transaction and return its row. A record whose sha256 is already
    /// stored is not written again: the existing row is returned.
    pub fn insert_record(&self, rec: &NewRecord) -> Result<StoredRecord, StoreError> {
        Ok(self.insert_record_with_status(rec)?.record)
    }

    /// [`Store::insert_record`], also telling whether a row was written.
    pub fn insert_record_with_status(&self, rec: &NewRecord) -> Result<Inserted, StoreError> {
        let prepared = prepare(rec)?;
        Ok(self.commit_prepared(&prepared, |_, _, _| Ok(()))?.0)
    }

    /// Store a record checked beforehand by [`NewRecord::prepare`] and, in the same transaction,
    /// whatever `then` writes about it (the outbox row of a submission, say): both commit or
    /// neither does. `then` gets the record's row id and whether the row is new. Checking first
    /// lets a caller that shares one store between threads do the CPU work (parse, canonical
    /// form, signature) before taking its lock, so the lock is held only for the commit.
    pub fn insert_prepared_then<T>(
        &self,
        prepared: &PreparedRecord,
        then: impl FnOnce(&Connection, i64, bool) -> Result<T, StoreError>,
    ) -> Result<(Inserted, T), StoreError> {
        self.commit_prepared(&prepared.0, then)
    }

    fn commit_prepared<R: std::borrow::Borrow<NewRecord>, T>(
        &self,
        prepared: &Prepared<R>,
        then: impl FnOnce(&Connection, i64, bool) -> Result<T, StoreError>,
    ) -> Result<(Inserted, T), StoreError> {
        let tx = self.begin_immediate()?;
        let (id, new) = insert_prepared(&self.conn, &self.codec, prepared)?;
        let extra = then(&self.conn, id, new)?;
        tx.commit()?;
        self.codec.maybe_train(&self.conn, 1);
        let record = self.get_by_id(id)?;
        Ok((Inserted { record, new }, extra))
    }

    /// Store many records in one transaction, in order (all or none). Every record is checked
    /// before anything is written.
    pub fn insert_many(&self, recs: &[NewRecord]) -> Result<InsertSummary, StoreError> {
        let in_batch = |index, e| StoreError::InBatch {
            index,
            source: Box::new(e),
        };
        let prepared = recs
            .iter()
            .enumerate()
            .map(|(i, r)| prepare(r).map_err(|e| in_batch(i, e)))
            .collect::<Result<Vec<_>, _>>()?;
        let tx = self.begin_immediate()?;
        let mut summary = InsertSummary::default();
        for (i, p) in prepared.iter().enumerate() {
            if insert_prepared(&self.conn, &self.codec, p)
                .map_err(|e| in_batch(i, e))?
                .1
            {
                summary.inserted += 1;
            } else {
                summary.already_present += 1;
            }
        }
        tx.commit()?;
        self.codec.maybe_train(&self.conn, summary.inserted);
        Ok(summary)
    }

    /// IMMEDIATE so the previous chain hash read inside cannot change under us (another
    /// process's insert waits for our commit).
    fn begin_immediate(&self) -> Result<rusqlite::Transaction<'_>, StoreError> {
        write_transaction(&self.conn)
    }

    /// Number of stored records.
    pub fn count(&self) -> Result<u64, StoreError> {
        let n: i64 = self
            .conn
            .query_row("SELECT count(*) FROM records", [], |r| r.get(0))?;
        Ok(n as u64)
    }

    /// The record whose sha256 starts with `prefix` (hex, any case). Errors when none or more
    /// than one match.
    pub fn get_by_prefix(&self, prefix: &str) -> Result<StoredRecord, StoreError> {
        let p = prefix.trim().to_ascii_lowercase();
        if p.is_empty() || p.len() > 64 || !p.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(StoreError::BadPrefix(prefix.to_string()));
        }
        // A range scan on the unique index: every hex string starting with p sorts in [p, p+"g").
        let mut stmt = self.conn.prepare_cached(
            "SELECT sha256 FROM records WHERE sha256 >= ?1 AND sha256 < ?2 ORDER BY sha256 LIMIT 3",
        )?;
        let matches = stmt
            .query_map(params![p, format!("{p}g")], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        match matches.len() {
            0 => Err(StoreError::UnknownPrefix(p)),
            1 => self
                .get_by_sha256(&matches[0])?
                .ok_or(StoreError::UnknownPrefix(p)),
            _ => Err(StoreError::AmbiguousPrefix { prefix: p, matches }),
        }
    }

    /// The record with exactly this sha256 (lower-case hex), if stored.
    pub fn get_by_sha256(&self, sha256: &str) -> Result<Option<StoredRecord>, StoreError> {
        let sql = format!(
            "SELECT {ROW_COLUMNS}, {FULL_COLUMNS} FROM records r \
             LEFT JOIN kept_full k ON k.record_id = r.id WHERE r.sha256 = ?1"
        );
        Ok(self
            .conn
            .query_row(&sql, [sha256], |r| stored_from_row(&self.conn, r))
            .optional()?)
    }

    /// The record with this row id.
    pub fn get_by_id(&self, id: i64) -> Result<StoredRecord, StoreError> {
        let sql = format!(
            "SELECT {ROW_COLUMNS}, {FULL_COLUMNS} FROM records r \
             LEFT JOIN kept_full k ON k.record_id = r.id WHERE r.id = ?1"
        );
        // Cached: every stored walk reads its row back through here.
        Ok(self
            .conn
            .prepare_cached(&sql)?
            .query_row([id], |r| stored_from_row(&self.conn, r))?)
    }

    /// Rows matching `filter`, oldest row first, without their bytes.
    pub fn list(&self, filter: &ListFilter) -> Result<Vec<RecordRow>, StoreError> {
        let (where_sql, args) = filter_sql(filter);
        let sql = format!("SELECT {ROW_COLUMNS} FROM records r{where_sql} ORDER BY r.id");
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args.iter()), row_from_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Call `f` with every record matching `filter` (with bytes), in row order, streaming so
    /// large stores are not held in memory.
    pub fn for_each_record<E>(
        &self,
        filter: &ListFilter,
        mut f: impl FnMut(StoredRecord) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<StoreError>,
    {
        let (where_sql, args) = filter_sql(filter);
        let sql = format!(
            "SELECT {ROW_COLUMNS}, {FULL_COLUMNS} FROM records r \
             LEFT JOIN kept_full k ON k.record_id = r.id{where_sql} ORDER BY r.id"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(StoreError::from)?;
        let mut rows = stmt
            .query(rusqlite::params_from_iter(args.iter()))
            .map_err(StoreError::from)?;
        while let Some(row) = rows.next().map_err(StoreError::from)? {
            f(stored_from_row(&self.conn, row).map_err(StoreError::from)?)?;
        }
        Ok(())
    }
}

fn filter_sql(filter: &ListFilter) -> (String, Vec<String>) {
    let mut clauses = Vec::new();
    let mut args = Vec::new();
    if let Some(e) = &filter.endpoint {
        args.push(e.clone());
        clauses.push(format!("r.endpoint = ?{}", args.len()));
    }
    if let Some(s) = &filter.since {
        args.push(s.clone());
        clauses.push(format!("r.walked_at >= ?{}", args.len()));
    }
    if let Some(o) = &filter.outcome {
        args.push(o.clone());
        clauses.push(format!("r.outcome = ?{}", args.len()));
    }
    if clauses.is_empty() {
        (String::new(), args)
    } else {
        (format!(" WHERE {}", clauses.join(" AND ")), args)
    }
}

/// The metadata columns as every record query selects them: `endpoint, origin, walked_at,
/// walker_mode, privacy_mode` from `first`, the four verdict columns, then `key_url`.
pub(super) fn meta_columns(
    r: &Row<'_>,
    first: usize,
    verdict: Option<Verdict>,
) -> rusqlite::Result<RecordMeta> {
    Ok(RecordMeta {
        endpoint: r.get(first)?,
        origin: r.get(first + 1)?,
        walked_at: r.get(first + 2)?,
        walker_mode: r.get(first + 3)?,
        privacy_mode: r.get(first + 4)?,
        verdict,
        key_url: r.get(first + 9)?,
    })
}

fn row_from_row(r: &Row<'_>) -> rusqlite::Result<RecordRow> {
    let verdict_ok: Option<bool> = r.get(8)?;
    let outcome: Option<String> = r.get(9)?;
    let n_pass: Option<i64> = r.get(10)?;
    let n_total: Option<i64> = r.get(11)?;
    let verdict = match (verdict_ok, outcome, n_pass, n_total) {
        (Some(ok), Some(outcome), Some(n_pass), Some(n_total)) => Some(Verdict {
            ok,
            outcome,
            n_pass,
            n_total,
        }),
        _ => None,
    };
    Ok(RecordRow {
        id: r.get(0)?,
        sha256: r.get(1)?,
        signed: r.get(2)?,
        meta: meta_columns(r, 3, verdict)?,
        inserted_at: r.get(13)?,
        chain_hash: r.get(14)?,
    })
}

fn stored_from_row(conn: &Connection, r: &Row<'_>) -> rusqlite::Result<StoredRecord> {
    let kept_canonical: Option<Vec<u8>> = r.get(18)?;
    let kept_salt: Option<String> = r.get(19)?;
    Ok(StoredRecord {
        row: row_from_row(r)?,
        canonical: codec::decode(conn, r.get(15)?)?,
        signature_b64: r.get(16)?,
        public_key_b64: r.get(17)?,
        kept_full: match (kept_canonical, kept_salt) {
            (Some(canonical), Some(salt_hex)) => Some(KeptFull {
                canonical,
                salt_hex,
            }),
            _ => None,
        },
    })
}

/// Keep each cached statement's query plan whatever values are bound to it. Without this,
/// SQLite (with STAT4, as bundled) marks statements such as `WHERE id = ?1` for re-preparing
/// whenever a new value is bound, so the statement cache saved nothing: re-parsing the
/// read-back `SELECT` was about a fifth of a record's commit CPU (`perf`, benches/store.rs).
fn stable_plans(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

/// A record that passed every check that needs no database (JSON shape, canonical form,
/// signature, kept-record commitment), digested and ready to insert; made by
/// [`NewRecord::prepare`].
pub struct PreparedRecord(Prepared<NewRecord>);

impl NewRecord {
    /// Run every check that needs no database. Pure CPU work (about 0.1 ms for a signed
    /// record, most of it the Ed25519 verification): do it before taking a shared store's lock.
    pub fn prepare(self) -> Result<PreparedRecord, StoreError> {
        let Prepared {
            sha,
            sha_hex,
            meta,
            kept_sha_hex,
            ..
        } = prepare(&self)?;
        Ok(PreparedRecord(Prepared {
            rec: self,
            sha,
            sha_hex,
            meta,
            kept_sha_hex,
        }))
    }
}

/// A record checked and digested, ready to insert; `R` is the record, borrowed or owned.
struct Prepared<R: std::borrow::Borrow<NewRecord>> {
    rec: R,
    sha: [u8; 32],
    sha_hex: String,
    meta: RecordMeta,
    kept_sha_hex: Option<String>,
}

/// Every check that does not need the database: JSON shape, canonical form, signature, and the
/// commitment of a kept full record.
fn prepare(rec: &NewRecord) -> Result<Prepared<&NewRecord>, StoreError> {
    let sha = crate::digest::sha256(&rec.canonical);
    let sha_hex = hex::encode(sha);
    let value = crate::json::parse_lenient(&rec.canonical)
        .map_err(|e| MetaError::NotJson(e.to_string()))?;
    let meta = meta::derive(&value)?;
    // Identity is the sha of these bytes; refusing non-canonical bytes keeps one identity per
    // record (and makes `records export` lines canonical, as promised).
    if crate::canonical::to_bytes(&value) != rec.canonical {
        return Err(StoreError::NotCanonical { sha256: sha_hex });
    }
    match (&rec.signature_b64, &rec.public_key_b64) {
        (Some(sig), Some(key)) => check_signature(&rec.canonical, sig, key)?,
        (None, None) => {}
        _ => return Err(StoreError::HalfSigned),
    }
    let kept_sha_hex = match &rec.kept_full {
        None => None,
        Some(kept) => Some(check_kept_full(&value, kept)?),
    };
    Ok(Prepared {
        rec,
        sha,
        sha_hex,
        meta,
        kept_sha_hex,
    })
}

/// The kept full record must open the filed record's commitment (§4.6 step 3).
fn check_kept_full(filed: &serde_json::Value, kept: &KeptFull) -> Result<String, StoreError> {
    let view = record_view::RecordView::from_value(filed)
        .map_err(|e| StoreError::KeptFull(format!("the filed record cannot be read: {e}")))?;
    integrity::open_commitment(&view, &kept.canonical, &kept.salt_hex)
        .map_err(StoreError::KeptFull)?;
    Ok(crate::digest::sha256_hex(&kept.canonical))
}

/// Insert inside the caller's transaction; returns the row id and whether it was new.
fn insert_prepared<R: std::borrow::Borrow<NewRecord>>(
    conn: &Connection,
    codec: &codec::Encoder,
    p: &Prepared<R>,
) -> Result<(i64, bool), StoreError> {
    let existing: Option<i64> = conn
        .prepare_cached("SELECT id FROM records WHERE sha256 = ?1")?
        .query_row([&p.sha_hex], |r| r.get(0))
        .optional()?;
    if let Some(id) = existing {
        return Ok((id, false));
    }
    let prev = last_chain(conn)?;
    let chain = hex::encode(verify::chain_next(&prev, &p.sha));
    let inserted_at = crate::clock::utc_millis(chrono::Utc::now());
    let id = insert_row(conn, codec, p, None, &inserted_at, &chain)?;
    Ok((id, true))
}

/// Write one records row (and its kept full record and facts): at the next id, or at `id` when
/// an archived row is put back (`store::archive::restore`).
fn insert_row<R: std::borrow::Borrow<NewRecord>>(
    conn: &Connection,
    codec: &codec::Encoder,
    p: &Prepared<R>,
    id: Option<i64>,
    inserted_at: &str,
    chain: &str,
) -> Result<i64, StoreError> {
    let rec = p.rec.borrow();
    let v = p.meta.verdict.as_ref();
    let stored = codec.encode(conn, &rec.canonical)?;
    conn.prepare_cached(
        "INSERT INTO records (sha256, canonical, signature_b64, public_key_b64, signed, endpoint, \
         origin, walked_at, walker_mode, privacy_mode, verdict_ok, outcome, n_pass, n_total, \
         key_url, inserted_at, chain_hash, id) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
    )?
    .execute(params![
        p.sha_hex,
        stored,
        rec.signature_b64,
        rec.public_key_b64,
        rec.signature_b64.is_some(),
        p.meta.endpoint,
        p.meta.origin,
        p.meta.walked_at,
        p.meta.walker_mode,
        p.meta.privacy_mode,
        v.map(|v| v.ok),
        v.map(|v| v.outcome.as_str()),
        v.map(|v| v.n_pass),
        v.map(|v| v.n_total),
        p.meta.key_url,
        inserted_at,
        chain,
        id,
    ])?;
    let id = conn.last_insert_rowid();
    if stored.first() != Some(&b'{') {
        // The facts trigger reads raw rows only (migration 7): these bytes are compressed.
        conn.prepare_cached(FACTS_SQL)?
            .execute(params![id, rec.canonical])?;
        // And the summary's trigger too (migration 9).
        conn.prepare_cached(SUMMARY_FAILURES_SQL)?
            .execute(params![rec.canonical])?;
    }
    if let (Some(kept), Some(kept_sha)) = (&rec.kept_full, &p.kept_sha_hex) {
        conn.prepare_cached(
            "INSERT INTO kept_full (record_id, canonical, sha256, salt_hex) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![id, kept.canonical, kept_sha, kept.salt_hex])?;
    }
    Ok(id)
}

/// The `record_facts` row of record `?1` whose canonical bytes are `?2`: the expressions of the
/// `records_facts` trigger (migration 5, restated in migration 7), over the bytes the store had
/// before compressing them. Keep the two in step.
const FACTS_SQL: &str = "INSERT INTO record_facts (record_id, sha256, walked_at, endpoint, \
    outcome, n_pass, n_total, transport_error, failed, witness_name, vantage) \
    SELECT r.id, r.sha256, r.walked_at, r.endpoint, r.outcome, r.n_pass, r.n_total, \
        EXISTS (SELECT 1 FROM json_each(CAST(?2 AS TEXT), '$.nodes') n \
                WHERE json_extract(n.value, '$.kind') = 'fetch' \
                  AND json_extract(n.value, '$.response.status') = 0), \
        coalesce((SELECT group_concat(name, ',') FROM ( \
            SELECT CASE WHEN instr(c, ':') > 0 THEN trim(substr(c, 1, instr(c, ':') - 1)) ELSE trim(c) END AS name \
            FROM (SELECT json_extract(a.value, '$.claim') AS c, a.key AS k \
                  FROM json_each(CAST(?2 AS TEXT), '$.assertions') a \
                  WHERE json_extract(a.value, '$.result') = 0) \
            WHERE c IS NOT NULL ORDER BY k)), ''), \
        json_extract(CAST(?2 AS TEXT), '$.witness.name'), \
        json_extract(CAST(?2 AS TEXT), '$.witness.vantage') \
    FROM records r WHERE r.id = ?1";

/// The failed assertions of a record whose canonical bytes are `?1`, added to the summary: the
/// statement of the `summary_assertions_insert` trigger (migration 9), which reads raw rows
/// only, over the bytes the store had before compressing them. Keep the two in step.
const SUMMARY_FAILURES_SQL: &str = "INSERT INTO summary_assertion_failures (assertion, n) \
    SELECT name, count(*) FROM ( \
        SELECT CASE WHEN instr(c, ':') > 0 THEN trim(substr(c, 1, instr(c, ':') - 1), char(32, 9, 10, 11, 12, 13)) \
                    ELSE trim(c, char(32, 9, 10, 11, 12, 13)) END AS name \
        FROM (SELECT json_extract(a.value, '$.claim') AS c \
              FROM json_each(CAST(?1 AS TEXT), '$.assertions') a \
              WHERE typeof(a.key) = 'integer' \
                AND json_type(a.value, '$.result') = 'false' \
                AND json_type(a.value, '$.claim') = 'text')) \
    GROUP BY name HAVING true \
    ON CONFLICT (assertion) DO UPDATE SET n = n + excluded.n";

/// The chain hash of the last row, or the genesis value for an empty table.
fn last_chain(conn: &Connection) -> Result<[u8; 32], StoreError> {
    let last: Option<String> = conn
        .prepare_cached("SELECT chain_hash FROM records ORDER BY id DESC LIMIT 1")?
        .query_row([], |r| r.get(0))
        .optional()?;
    match last {
        None => Ok(CHAIN_GENESIS),
        // A damaged last row must not silently restart the chain: refuse to extend it.
        Some(h) => verify::decode_hex32(&h).ok_or_else(|| {
            StoreError::Sql(rusqlite::Error::InvalidColumnType(
                0,
                format!("chain_hash {h:?} of the last row is not 64 hex characters"),
                rusqlite::types::Type::Text,
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn db_path_precedence() {
        let path =
            |cli, dirs: Option<&str>| flag_or_systemd_dir(cli, dirs.map(OsStr::new), DB_FILE_NAME);
        let cli = Path::new("/x/my.db");
        assert_eq!(path(Some(cli), Some("/var/lib/w")).unwrap(), cli);
        assert_eq!(
            path(None, Some("/var/lib/a:/var/lib/b")).unwrap(),
            Path::new("/var/lib/a/walker.db")
        );
        assert_eq!(path(None, None), None);
        assert_eq!(path(None, Some("")), None);
        assert!(matches!(
            default_db_path(Some(cli)),
            Ok(p) if p == cli
        ));
    }

    #[test]
    fn since_forms() {
        assert_eq!(parse_since("2026-09-06").unwrap(), "2026-09-06T00:00:00Z");
        assert_eq!(
            parse_since("2026-09-06T12:00:00+02:00").unwrap(),
            "2026-09-06T10:00:00Z"
        );
        assert!(matches!(
            parse_since("yesterday"),
            Err(StoreError::BadDate(_))
        ));
    }
}
