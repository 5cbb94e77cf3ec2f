//! Records at rest (issue 27, item 4): the `records.canonical` column holds either the exact
//! canonical bytes (every row written before migration 8) or one zstd frame of them, compressed
//! with the store's dictionary (table `record_dicts`) once one has been trained, with none
//! before. A blob tells which it is by itself: canonical JSON starts with `{`, a zstd frame with
//! its magic number, and the frame header names the dictionary it needs. Every reader goes
//! through [`decode`], so the bytes that come back, are hashed, exported and filed are the exact
//! canonical bytes.
//!
//! Old rows are not recompressed: rows are insert-only (a trigger refuses UPDATE), and rewriting
//! a store's history in place is what the chain exists to rule out. They shrink when they leave
//! the live store into an archive (`store::archive`).

use rusqlite::{Connection, OptionalExtension, params};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use zstd::zstd_safe::{self, CCtx, CDict, DCtx, DDict};

/// zstd's frame magic number, little-endian as it is written.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Compression level of new rows: level 3 with a dictionary compresses a soak record about as
/// well as level 19 without one, at a fraction of the CPU (BENCHMARKS.md, "Records at rest").
pub const LEVEL: i32 = 3;

/// A dictionary is trained once the store holds this many records...
pub const TRAIN_AFTER: i64 = 500;
/// ...from (at most) this many of the newest ones...
const TRAIN_SAMPLES: i64 = 2_000;
/// ...into a dictionary of this many bytes.
const DICT_SIZE: usize = 64 * 1024;
/// How many records the writer stores between two looks at whether it is time to train.
const CHECK_EVERY: u64 = 64;

/// Largest record a frame may claim to hold: far above any record (a card is capped at 1 MiB),
/// so a damaged frame header cannot ask for gigabytes.
const MAX_DECODED: u64 = 64 * 1024 * 1024;

/// Why stored bytes could not be turned back into the record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("the stored bytes are neither canonical JSON nor a zstd frame")]
    NotAFrame,
    #[error("the zstd frame does not say how long the record is, or claims more than 64 MiB")]
    BadSize,
    #[error("the zstd frame needs dictionary {0}, which this store does not hold")]
    NoDictionary(u32),
    #[error("the zstd frame does not decompress: {0}")]
    Corrupt(String),
}

impl From<CodecError> for rusqlite::Error {
    fn from(e: CodecError) -> Self {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Blob, Box::new(e))
    }
}

/// Decoding dictionaries by zstd dictionary id. Ids are derived by zstd from the dictionary's
/// content (trainer default), so one id names one dictionary whatever store it came from, and a
/// process reading several stores (the tests, a fleet) can share the cache.
fn ddicts() -> &'static Mutex<HashMap<u32, Arc<DDict<'static>>>> {
    static CACHE: OnceLock<Mutex<HashMap<u32, Arc<DDict<'static>>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// What a blob needs before it can be decoded off the database thread: nothing (raw), or a
/// dictionary (`None` inside: a frame made without one).
pub enum Needs {
    Raw,
    Frame(Option<Arc<DDict<'static>>>),
}

/// Resolve what `blob` needs, reading the dictionary from `conn` the first time it is seen.
pub fn needs(conn: &Connection, blob: &[u8]) -> Result<Needs, CodecError> {
    if blob.first() == Some(&b'{') {
        return Ok(Needs::Raw);
    }
    if !blob.starts_with(&ZSTD_MAGIC) {
        return Err(CodecError::NotAFrame);
    }
    let Some(id) = zstd_safe::get_dict_id_from_frame(blob) else {
        return Ok(Needs::Frame(None));
    };
    let id = id.get();
    if let Some(d) = ddicts().lock().unwrap_or_else(|p| p.into_inner()).get(&id) {
        return Ok(Needs::Frame(Some(d.clone())));
    }
    let bytes: Option<Vec<u8>> = conn
        .prepare_cached("SELECT bytes FROM record_dicts WHERE id = ?1")
        .and_then(|mut s| s.query_row([i64::from(id)], |r| r.get(0)).optional())
        .ok()
        .flatten();
    let bytes = bytes.ok_or(CodecError::NoDictionary(id))?;
    // A dictionary row whose bytes are not the dictionary its id names is no dictionary.
    if zstd_safe::get_dict_id_from_dict(&bytes).map(|n| n.get()) != Some(id) {
        return Err(CodecError::NoDictionary(id));
    }
    let d = Arc::new(DDict::try_create(&bytes).ok_or(CodecError::NoDictionary(id))?);
    ddicts()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(id, d.clone());
    Ok(Needs::Frame(Some(d)))
}

/// Decode `blob` given what it needs (pure CPU: may run on any thread).
pub fn decode_with(blob: Vec<u8>, needs: &Needs) -> Result<Vec<u8>, CodecError> {
    let dict = match needs {
        Needs::Raw => return Ok(blob),
        Needs::Frame(d) => d.as_deref(),
    };
    let size = match zstd_safe::get_frame_content_size(&blob) {
        Ok(Some(n)) if n <= MAX_DECODED => n as usize,
        _ => return Err(CodecError::BadSize),
    };
    thread_local! {
        static DCTX: RefCell<DCtx<'static>> = RefCell::new(DCtx::create());
    }
    DCTX.with(|d| {
        let mut dctx = d.borrow_mut();
        let mut out = Vec::with_capacity(size);
        let res = match dict {
            Some(dict) => dctx.decompress_using_ddict(&mut out, &blob, dict),
            None => dctx.decompress(&mut out, &blob),
        };
        match res {
            Ok(n) if n == size => Ok(out),
            Ok(n) => Err(CodecError::Corrupt(format!(
                "it gave {n} bytes where its header says {size}"
            ))),
            Err(code) => Err(CodecError::Corrupt(
                zstd_safe::get_error_name(code).to_string(),
            )),
        }
    })
}

/// The stored column back to the record's exact canonical bytes.
pub fn decode(conn: &Connection, blob: Vec<u8>) -> Result<Vec<u8>, CodecError> {
    let needs = needs(conn, &blob)?;
    decode_with(blob, &needs)
}

/// A read-write store's compressor: the newest dictionary (loaded on first use), and the
/// schedule for training one when there is none yet.
pub struct Encoder {
    inner: RefCell<Inner>,
}

struct Inner {
    cctx: CCtx<'static>,
    /// Loaded from `record_dicts` on first use.
    loaded: bool,
    dict: Option<CDict<'static>>,
    since_check: u64,
    /// False: store rows raw, as before migration 8 (the benches' "before").
    enabled: bool,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder {
            inner: RefCell::new(Inner {
                cctx: CCtx::create(),
                loaded: false,
                dict: None,
                // The first commit of a process looks at once.
                since_check: CHECK_EVERY - 1,
                enabled: true,
            }),
        }
    }
}

impl Encoder {
    /// Compress `raw` for the `canonical` column.
    pub fn encode(&self, conn: &Connection, raw: &[u8]) -> rusqlite::Result<Vec<u8>> {
        let mut inner = self.inner.borrow_mut();
        if !inner.enabled {
            return Ok(raw.to_vec());
        }
        if !inner.loaded {
            inner.dict = newest_dict(conn)?.and_then(|b| CDict::try_create(&b, LEVEL));
            inner.loaded = true;
        }
        let Inner { cctx, dict, .. } = &mut *inner;
        let mut out = Vec::with_capacity(zstd_safe::compress_bound(raw.len()));
        let res = match dict {
            Some(d) => cctx.compress_using_cdict(&mut out, raw, d),
            None => cctx.compress(&mut out, raw, LEVEL),
        };
        match res {
            Ok(_) => Ok(out),
            // Compression of a bounded buffer does not fail; if it ever does, the record is
            // stored as it is (readers take raw bytes too) rather than lost.
            Err(_) => Ok(raw.to_vec()),
        }
    }

    /// Store new rows raw (false) or compressed (true, the default). For benches that measure
    /// the store as it was before compression.
    pub fn set_enabled(&self, on: bool) {
        self.inner.borrow_mut().enabled = on;
    }

    /// Called after a commit of `stored` records: once the store holds [`TRAIN_AFTER`] records
    /// and no dictionary, train one from the newest records and use it from now on. Cheap
    /// otherwise (a counter, and two indexed lookups every [`CHECK_EVERY`] records). Runs
    /// outside any transaction.
    pub fn maybe_train(&self, conn: &Connection, stored: u64) {
        {
            let mut inner = self.inner.borrow_mut();
            if !inner.enabled || (inner.loaded && inner.dict.is_some()) {
                return;
            }
            inner.since_check += stored;
            if inner.since_check < CHECK_EVERY {
                return;
            }
            inner.since_check = 0;
        }
        match train(conn) {
            Ok(Some(bytes)) => {
                let mut inner = self.inner.borrow_mut();
                inner.dict = CDict::try_create(&bytes, LEVEL);
                inner.loaded = true;
            }
            Ok(None) => {}
            // A failed training (a busy or full disk) only means no dictionary yet.
            Err(e) => tracing::debug!("record dictionary not trained: {e}"),
        }
    }
}

fn newest_dict(conn: &Connection) -> rusqlite::Result<Option<Vec<u8>>> {
    conn.prepare_cached("SELECT bytes FROM record_dicts ORDER BY trained_at DESC, id DESC LIMIT 1")?
        .query_row([], |r| r.get(0))
        .optional()
}

/// Train and store a dictionary when it is time; returns the dictionary in use (an existing one
/// when another writer trained first), or None when the store is too small yet.
pub fn train(conn: &Connection) -> rusqlite::Result<Option<Vec<u8>>> {
    if let Some(d) = newest_dict(conn)? {
        return Ok(Some(d));
    }
    let newest: Option<i64> = conn.query_row("SELECT max(id) FROM records", [], |r| r.get(0))?;
    let Some(newest) = newest.filter(|&n| n >= TRAIN_AFTER) else {
        return Ok(None);
    };
    let mut samples = Vec::new();
    {
        let mut stmt = conn.prepare("SELECT canonical FROM records WHERE id > ?1 ORDER BY id")?;
        let mut rows = stmt.query([newest - TRAIN_SAMPLES])?;
        while let Some(r) = rows.next()? {
            if let Ok(raw) = decode(conn, r.get(0)?) {
                samples.push(raw);
            }
        }
    }
    if (samples.len() as i64) < TRAIN_AFTER / 2 {
        return Ok(None);
    }
    let dict = match zstd::dict::from_samples(&samples, DICT_SIZE) {
        Ok(d) => d,
        Err(e) => {
            tracing::debug!("zstd could not train a record dictionary: {e}");
            return Ok(None);
        }
    };
    let Some(id) = zstd_safe::get_dict_id_from_dict(&dict) else {
        return Ok(None);
    };
    let now = crate::clock::utc_millis(chrono::Utc::now());
    conn.execute(
        "INSERT OR IGNORE INTO record_dicts (id, bytes, sha256, samples, trained_at) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            i64::from(id.get()),
            dict,
            crate::digest::sha256_hex(&dict),
            samples.len() as i64,
            now
        ],
    )?;
    Ok(Some(dict))
}

/// Bytes at rest of the `canonical` column (what BENCHMARKS.md's per-record figure counts).
pub fn stored_bytes(conn: &Connection) -> rusqlite::Result<(i64, i64)> {
    conn.query_row(
        "SELECT count(*), coalesce(sum(length(canonical)), 0) FROM records",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_bytes_come_back_as_they_are_and_garbage_is_refused() {
        let conn = Connection::open_in_memory().unwrap();
        assert_eq!(decode(&conn, b"{\"a\":1}".to_vec()).unwrap(), b"{\"a\":1}");
        assert_eq!(
            decode(&conn, b"not a record".to_vec()),
            Err(CodecError::NotAFrame)
        );
        let frame = zstd::bulk::compress(b"{\"a\":1}", 3).unwrap();
        assert_eq!(decode(&conn, frame.clone()).unwrap(), b"{\"a\":1}");
        let mut cut = frame;
        cut.truncate(cut.len() - 2);
        assert!(matches!(
            decode(&conn, cut),
            Err(CodecError::Corrupt(_) | CodecError::BadSize)
        ));
    }
}
