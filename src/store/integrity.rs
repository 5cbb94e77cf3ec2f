//! The integrity checks of stored rows, pure (no SQL, no files): the sha256 of the bytes, the
//! chain link, the signature, the record's form and the commitment a kept full record opens.
//! `records verify` (over the live rows, [`super::verify`]) and the archive's segment check
//! ([`super::archive::check_segment`]) both run these, so a problem reads the same wherever the
//! row lives; the store's insert ([`super::prepare`]) opens commitments with the same rule.

use super::meta::{self, RecordMeta};
use super::record_view::RecordView;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, VerifyingKey};
use std::fmt;

/// `sha256(prev || sha)` over raw 32-byte values: the next chain hash.
pub fn chain_next(prev: &[u8; 32], sha: &[u8; 32]) -> [u8; 32] {
    let mut buf = [0u8; 64];
    buf[..32].copy_from_slice(prev);
    buf[32..].copy_from_slice(sha);
    crate::digest::sha256(buf)
}

/// Decode 64 hex characters (either case) into 32 bytes.
pub fn decode_hex32(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}

/// A salt must be exactly 64 lower-case hex characters (how §4.6 holds it).
pub fn decode_salt(salt_hex: &str) -> Result<[u8; 32], String> {
    if salt_hex.len() != 64
        || !salt_hex
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(format!(
            "salt {salt_hex:?} is not 64 lower-case hex characters"
        ));
    }
    decode_hex32(salt_hex).ok_or_else(|| format!("salt {salt_hex:?} is not hex"))
}

/// Why a signature does not check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the signature is not standard padded base64 of 64 bytes")]
    SignatureEncoding,
    #[error("the public key is not standard padded base64 of 32 bytes")]
    KeyEncoding,
    #[error("the public key is not a usable Ed25519 point")]
    BadKey,
    #[error("the Ed25519 signature does not verify over these bytes with this key")]
    Mismatch,
}

impl SignatureError {
    /// Whether the inputs were malformed (usage) rather than well-formed but wrong (a finding).
    pub fn is_malformed(&self) -> bool {
        !matches!(self, SignatureError::Mismatch)
    }
}

/// Check a pure Ed25519 signature (RFC 8032, no pre-hash) over `bytes`; signature and key are
/// standard padded base64 (§5). Strict verification: rejects weak keys and malleable signatures.
pub fn check_signature(
    bytes: &[u8],
    signature_b64: &str,
    public_key_b64: &str,
) -> Result<(), SignatureError> {
    let sig = decode_signature(signature_b64)?;
    let key: [u8; 32] = STANDARD
        .decode(public_key_b64)
        .ok()
        .and_then(|v| v.try_into().ok())
        .ok_or(SignatureError::KeyEncoding)?;
    let key = VerifyingKey::from_bytes(&key).map_err(|_| SignatureError::BadKey)?;
    check_with_key(bytes, &sig, &key)
}

fn check_with_key(bytes: &[u8], sig: &[u8; 64], key: &VerifyingKey) -> Result<(), SignatureError> {
    key.verify_strict(bytes, &Signature::from_bytes(sig))
        .map_err(|_| SignatureError::Mismatch)
}

fn decode_signature(signature_b64: &str) -> Result<[u8; 64], SignatureError> {
    STANDARD
        .decode(signature_b64)
        .ok()
        .and_then(|v| v.try_into().ok())
        .ok_or(SignatureError::SignatureEncoding)
}

/// Decoded keys by their base64 text: a store usually holds one or two witness keys, and
/// decoding plus point decompression is a fair share of a verification.
#[derive(Default)]
pub struct KeyCache(std::collections::HashMap<String, Result<VerifyingKey, SignatureError>>);

impl KeyCache {
    pub fn check(
        &mut self,
        bytes: &[u8],
        sig_b64: &str,
        key_b64: &str,
    ) -> Result<(), SignatureError> {
        let sig = decode_signature(sig_b64)?;
        let key = self
            .0
            .entry(key_b64.to_string())
            .or_insert_with(|| {
                let raw: [u8; 32] = STANDARD
                    .decode(key_b64)
                    .ok()
                    .and_then(|v| v.try_into().ok())
                    .ok_or(SignatureError::KeyEncoding)?;
                VerifyingKey::from_bytes(&raw).map_err(|_| SignatureError::BadKey)
            })
            .clone()?;
        check_with_key(bytes, &sig, &key)
    }
}

/// The kinds of problem `records verify` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProblemKind {
    /// The stored bytes no longer hash to the stored sha256.
    BytesAltered,
    /// The stored signature does not verify over the stored bytes with the stored key.
    SignatureInvalid,
    /// The row's chain hash is not sha256(previous row's chain hash || its sha256): a row before
    /// it was removed, inserted or reordered (or its sha256 column rewritten).
    MissingOrReordered,
    /// Row ids jump: the rows in between were deleted.
    RowMissing,
    /// SQLite's AUTOINCREMENT counter is past the last row: rows were deleted from the end.
    TailMissing,
    /// A metadata column disagrees with what the bytes say (e.g. an edited endpoint or verdict).
    MetadataMismatch,
    /// The kept full record no longer opens the filed record's commitment.
    CommitmentMismatch,
    /// A row cannot be read as a record at all (bytes not JSON, hash columns not hex...).
    Unreadable,
    /// An archived range's segment file is not in the archive directory given.
    ArchiveMissing,
}

impl ProblemKind {
    /// Stable kebab-case name printed by the CLI (scripts may match on it).
    pub fn name(self) -> &'static str {
        match self {
            ProblemKind::BytesAltered => "bytes-altered",
            ProblemKind::SignatureInvalid => "signature-invalid",
            ProblemKind::MissingOrReordered => "missing-or-reordered",
            ProblemKind::RowMissing => "row-missing",
            ProblemKind::TailMissing => "tail-missing",
            ProblemKind::MetadataMismatch => "metadata-mismatch",
            ProblemKind::CommitmentMismatch => "commitment-mismatch",
            ProblemKind::Unreadable => "unreadable",
            ProblemKind::ArchiveMissing => "archive-missing",
        }
    }
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One problem found at one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Row id (`records.id`) where the problem shows.
    pub row: i64,
    pub kind: ProblemKind,
    /// What exactly was found.
    pub detail: String,
}

/// Check one chain link; returns the chain value the next row must build on (the stored one,
/// so a single break is reported once, not at every later row).
pub fn check_link(
    id: i64,
    sha256: &str,
    chain_hash: &str,
    prev: &[u8; 32],
    problems: &mut Vec<Problem>,
) -> [u8; 32] {
    let Some(sha) = decode_hex32(sha256) else {
        problems.push(Problem {
            row: id,
            kind: ProblemKind::Unreadable,
            detail: format!("stored sha256 {sha256:?} is not 64 hex characters"),
        });
        return decode_hex32(chain_hash).unwrap_or(*prev);
    };
    let expected = chain_next(prev, &sha);
    match decode_hex32(chain_hash) {
        Some(stored) if stored == expected => stored,
        Some(stored) => {
            problems.push(Problem {
                row: id,
                kind: ProblemKind::MissingOrReordered,
                detail: format!(
                    "chain hash {chain_hash} does not follow from the previous row (expected {}): a row before it was removed, inserted or reordered",
                    hex::encode(expected)
                ),
            });
            stored
        }
        None => {
            problems.push(Problem {
                row: id,
                kind: ProblemKind::Unreadable,
                detail: format!("stored chain hash {chain_hash:?} is not 64 hex characters"),
            });
            expected
        }
    }
}

/// One stored row's own bytes, as the live store or a segment holds them.
pub struct StoredRow<'a> {
    pub id: i64,
    /// The sha256 the row claims for `canonical`.
    pub sha256: &'a str,
    pub canonical: &'a [u8],
    pub signature_b64: Option<&'a str>,
    pub public_key_b64: Option<&'a str>,
    pub kept: Option<KeptRow<'a>>,
}

/// The full record kept beside a commitment record (§4.6).
pub struct KeptRow<'a> {
    pub canonical: &'a [u8],
    /// The sha256 the store claims for it (a segment keeps none).
    pub sha256: Option<&'a str>,
    pub salt_hex: &'a str,
}

/// The checks of one row that do not depend on other rows: its bytes against their sha256, its
/// signature, its form as a walk record (and, with `canonical_form`, as canonical bytes), and
/// its kept record against the commitment. Returns the metadata its bytes say, for a caller
/// that has columns to compare.
pub fn check_record(
    row: &StoredRow,
    keys: &mut KeyCache,
    canonical_form: bool,
    problems: &mut Vec<Problem>,
) -> Option<RecordMeta> {
    let mut push = |kind, detail: String| {
        problems.push(Problem {
            row: row.id,
            kind,
            detail,
        })
    };
    let actual = crate::digest::sha256_hex(row.canonical);
    let intact = actual == row.sha256;
    if !intact {
        push(
            ProblemKind::BytesAltered,
            format!("stored bytes hash to {actual}, the row says {}", row.sha256),
        );
    }
    match (row.signature_b64, row.public_key_b64) {
        (Some(sig), Some(key)) => {
            if let Err(e) = keys.check(row.canonical, sig, key) {
                push(ProblemKind::SignatureInvalid, e.to_string());
            }
        }
        (None, None) => {}
        _ => push(
            ProblemKind::SignatureInvalid,
            "a signature without its public key, or a key without its signature".into(),
        ),
    }
    let derived = match meta::derive_from_bytes(row.canonical) {
        Ok(derived) => Some(derived),
        Err(e) => {
            push(ProblemKind::Unreadable, format!("not a walk record: {e}"));
            None
        }
    };
    // Bytes whose sha256 holds were canonical when stored; the check is for rows of a file.
    if canonical_form && intact && derived.is_some() && !is_canonical(row.canonical) {
        push(
            ProblemKind::Unreadable,
            "the record bytes are not in NENRIN canonical form".into(),
        );
    }
    if let Some(kept) = &row.kept {
        let kept_sha = crate::digest::sha256_hex(kept.canonical);
        if let Some(claimed) = kept.sha256.filter(|c| *c != kept_sha) {
            push(
                ProblemKind::CommitmentMismatch,
                format!("kept full record bytes hash to {kept_sha}, the row says {claimed}"),
            );
        }
        // Only commitment rows pay for a second read of the record.
        let opened = match RecordView::read(row.canonical) {
            Ok(view) => open_commitment(&view, kept.canonical, kept.salt_hex),
            Err(e) => Err(format!("the filed record cannot be read: {e}")),
        };
        if let Err(e) = opened {
            push(ProblemKind::CommitmentMismatch, e);
        }
    }
    derived
}

fn is_canonical(bytes: &[u8]) -> bool {
    crate::json::parse_lenient(bytes).is_ok_and(|v| crate::canonical::to_bytes(&v) == bytes)
}

/// Whether a kept full record opens the filed record's commitment (§4.6 step 3):
/// `sha256(kept || salt)` is the commitment a commitment-mode record files.
pub fn open_commitment(filed: &RecordView, kept: &[u8], salt_hex: &str) -> Result<(), String> {
    let commitment = filed.filed_commitment().ok_or(
        "only a commitment-mode record (mode \"commitment\" with a commitment) has a kept full record",
    )?;
    let salt = decode_salt(salt_hex)?;
    let opened = crate::digest::commitment_hex(kept, &salt);
    if opened != commitment {
        return Err(format!(
            "sha256(kept full record || salt) is {opened}, but the filed record commits to {commitment}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row<'a>(canonical: &'a [u8], sha256: &'a str) -> StoredRow<'a> {
        StoredRow {
            id: 7,
            sha256,
            canonical,
            signature_b64: None,
            public_key_b64: None,
            kept: None,
        }
    }

    const REC: &[u8] = br#"{"base":"https://a.example","schema":"jidec-path-v1","walked_at":"t"}"#;

    #[test]
    fn a_row_whose_bytes_changed_or_whose_signature_is_half_is_named() {
        let mut problems = Vec::new();
        let mut keys = KeyCache::default();
        let sha = crate::digest::sha256_hex(REC);
        let meta = check_record(&row(REC, &sha), &mut keys, true, &mut problems);
        assert_eq!(problems, []);
        assert_eq!(meta.unwrap().origin, "https://a.example");

        let mut half = row(REC, "00");
        half.signature_b64 = Some("AAAA");
        check_record(&half, &mut keys, false, &mut problems);
        let kinds: Vec<_> = problems.iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [ProblemKind::BytesAltered, ProblemKind::SignatureInvalid]
        );
        assert!(
            problems[0]
                .detail
                .starts_with(&format!("stored bytes hash to {sha}"))
        );
    }

    #[test]
    fn a_kept_record_opens_only_a_commitment_records_commitment() {
        let kept = b"{}";
        let salt = [7u8; 32];
        let commitment = crate::digest::commitment_hex(kept, &salt);
        let filed = format!(r#"{{"commitment":"{commitment}","mode":"commitment"}}"#);
        let view = RecordView::read(filed.as_bytes()).unwrap();
        assert_eq!(open_commitment(&view, kept, &hex::encode(salt)), Ok(()));
        let e = open_commitment(&view, b"[]", &hex::encode(salt)).unwrap_err();
        assert!(e.contains("but the filed record commits to"), "{e}");
        assert!(open_commitment(&view, kept, "AB").is_err());
        let full = RecordView::read(br#"{"commitment":"x","mode":"full"}"#).unwrap();
        let e = open_commitment(&full, kept, &hex::encode(salt)).unwrap_err();
        assert!(e.starts_with("only a commitment-mode record"), "{e}");
    }

    #[test]
    fn a_link_that_does_not_follow_is_named_and_the_stored_value_carries_on() {
        let sha = [1u8; 32];
        let good = chain_next(&[0; 32], &sha);
        let mut problems = Vec::new();
        let next = check_link(
            1,
            &hex::encode(sha),
            &hex::encode(good),
            &[0; 32],
            &mut problems,
        );
        assert_eq!((next, problems.len()), (good, 0));
        let wrong = [9u8; 32];
        let next = check_link(
            2,
            &hex::encode(sha),
            &hex::encode(wrong),
            &good,
            &mut problems,
        );
        assert_eq!(next, wrong);
        assert_eq!(problems[0].kind, ProblemKind::MissingOrReordered);
        check_link(3, "zz", &hex::encode(wrong), &good, &mut problems);
        assert_eq!(problems[1].kind, ProblemKind::Unreadable);
    }
}
