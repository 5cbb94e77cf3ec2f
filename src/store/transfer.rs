//! The line formats of `records export` and `records import`.
//!
//! Plain export: each line is a record's canonical bytes, exactly, then `\n` (canonical JSON
//! never contains a raw newline, so lines split cleanly and `sha256sum` of a line without its
//! newline is the record's identity).
//!
//! With signatures, each line is instead the canonical JSON of the submission body (§5):
//! `{"public_key_ed25519_b64":…,"record_canonical":…,"signature_ed25519_b64":…}` (the two
//! signature keys only when signed), so the line can be POSTed to an intake as it is. With kept
//! records it adds `kept_full_canonical` and `kept_salt_hex` for commitment rows: a backup
//! format, never to be filed (the salt is the witness's secret until reveal).
//!
//! Import accepts both forms, line by line.

use super::{KeptFull, NewRecord, StoredRecord};
use serde_json::{Map, Value};

/// Which columns travel with each exported record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// Emit the submission-body wrapper with signature and key.
    pub with_signatures: bool,
    /// Also carry commitment rows' kept full record and salt (implies the wrapper form).
    pub with_kept: bool,
}

/// Why a line could not be exported or imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransferError {
    #[error("row {row}: the stored bytes are not UTF-8, so they cannot go in a JSON string")]
    NotUtf8 { row: i64 },
    #[error("line {line}: not JSON: {reason}")]
    NotJson { line: usize, reason: String },
    #[error("line {line}: {reason}")]
    OverCap { line: usize, reason: String },
    #[error("line {line}: `{key}` must be a string")]
    NotAString { line: usize, key: &'static str },
    #[error("line {line}: has kept_full_canonical without kept_salt_hex, or the reverse")]
    HalfKept { line: usize },
}

const RECORD: &str = "record_canonical";
const SIGNATURE: &str = "signature_ed25519_b64";
const PUBLIC_KEY: &str = "public_key_ed25519_b64";
const KEPT: &str = "kept_full_canonical";
const SALT: &str = "kept_salt_hex";

/// One export line for `rec`, including the trailing `\n`.
pub fn export_line(rec: &StoredRecord, opts: ExportOptions) -> Result<Vec<u8>, TransferError> {
    if !opts.with_signatures && !opts.with_kept {
        let mut out = Vec::with_capacity(rec.canonical.len() + 1);
        out.extend_from_slice(&rec.canonical);
        out.push(b'\n');
        return Ok(out);
    }
    let text = |bytes: &[u8]| {
        String::from_utf8(bytes.to_vec()).map_err(|_| TransferError::NotUtf8 { row: rec.row.id })
    };
    let mut obj = Map::new();
    obj.insert(RECORD.into(), Value::String(text(&rec.canonical)?));
    if let (Some(sig), Some(key)) = (&rec.signature_b64, &rec.public_key_b64) {
        obj.insert(SIGNATURE.into(), Value::String(sig.clone()));
        obj.insert(PUBLIC_KEY.into(), Value::String(key.clone()));
    }
    if opts.with_kept
        && let Some(kept) = &rec.kept_full
    {
        obj.insert(KEPT.into(), Value::String(text(&kept.canonical)?));
        obj.insert(SALT.into(), Value::String(kept.salt_hex.clone()));
    }
    let mut out = crate::canonical::to_bytes(&Value::Object(obj));
    out.push(b'\n');
    Ok(out)
}

/// Parse one import line (without its `\n`; a trailing `\r` is ignored). `line_no` is 1-based,
/// for messages. Returns `None` for a blank line.
pub fn parse_line(line: &[u8], line_no: usize) -> Result<Option<NewRecord>, TransferError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    use crate::json::bounded::{self, Input, Refused};
    let value = bounded::lenient(Input::ImportLine, line).map_err(|e| match e {
        Refused::NotJson(e) => TransferError::NotJson {
            line: line_no,
            reason: e.to_string(),
        },
        over => TransferError::OverCap {
            line: line_no,
            reason: over.to_string(),
        },
    })?;
    let Some(obj) = value.as_object().filter(|o| o.contains_key(RECORD)) else {
        // A bare record: its bytes are the record (the store checks them).
        return Ok(Some(NewRecord {
            canonical: line.to_vec(),
            signature_b64: None,
            public_key_b64: None,
            kept_full: None,
        }));
    };
    record_of_body(obj).map(Some).map_err(|e| match e {
        BodyError::NotAString(key) => TransferError::NotAString { line: line_no, key },
        BodyError::HalfKept => TransferError::HalfKept { line: line_no },
    })
}

/// Why a submission body (an object with `record_canonical`) does not make a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("`{0}` must be a string")]
    NotAString(&'static str),
    #[error("has kept_full_canonical without kept_salt_hex, or the reverse")]
    HalfKept,
}

/// The record a submission body carries (either export line form's wrapper, or an intake body
/// an auditor copied), unchecked: the store checks bytes, signature and kept record.
pub fn record_of_body(obj: &Map<String, Value>) -> Result<NewRecord, BodyError> {
    let get = |key: &'static str| -> Result<Option<String>, BodyError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(BodyError::NotAString(key)),
        }
    };
    let canonical = get(RECORD)?.ok_or(BodyError::NotAString(RECORD))?;
    let kept_full = match (get(KEPT)?, get(SALT)?) {
        (Some(k), Some(salt_hex)) => Some(KeptFull {
            canonical: k.into_bytes(),
            salt_hex,
        }),
        (None, None) => None,
        _ => return Err(BodyError::HalfKept),
    };
    Ok(NewRecord {
        canonical: canonical.into_bytes(),
        signature_b64: get(SIGNATURE)?,
        public_key_b64: get(PUBLIC_KEY)?,
        kept_full,
    })
}
