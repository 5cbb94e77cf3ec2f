//! Tampering with the SQLite file behind the store's back, each detected and named by
//! `verify_all` at the right row.

mod store_support;

use conduct_walker::store::{ProblemKind, Store, verify};
use std::collections::BTreeSet;
use store_support::*;

/// A store of five signed records (plus the tempdir keeping it alive).
fn five() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("walker.db");
    let store = Store::open(&path).unwrap();
    let k = key(5);
    for i in 1..=5 {
        store
            .insert_record(&signed(record_bytes(i, i != 3), &k))
            .unwrap();
    }
    (dir, path)
}

fn findings(path: &std::path::Path) -> BTreeSet<(i64, ProblemKind)> {
    let store = Store::open_read_only(path).unwrap();
    let mut calls = 0;
    let report = verify::verify_all(&store, |done, total| {
        calls += 1;
        assert!(done <= total);
    })
    .unwrap();
    assert!(calls > 0, "progress is reported");
    assert_eq!(report.is_ok(), report.problems.is_empty());
    report.problems.iter().map(|p| (p.row, p.kind)).collect()
}

#[test]
fn untouched_store_verifies() {
    let (_d, path) = five();
    assert!(findings(&path).is_empty());
}

#[test]
fn edited_bytes_are_named() {
    let (_d, path) = five();
    let conn = tamper_conn(&path);
    // Turn record 2's PASS into FAIL inside the stored bytes only.
    let n = edit_stored_bytes(&conn, 2, "\"PASS\"", "\"FAIL\"");
    assert_eq!(n, 1);
    let f = findings(&path);
    assert!(f.contains(&(2, ProblemKind::BytesAltered)), "{f:?}");
    assert!(f.contains(&(2, ProblemKind::SignatureInvalid)), "{f:?}");
    assert!(f.contains(&(2, ProblemKind::MetadataMismatch)), "{f:?}");
    assert!(f.iter().all(|(row, _)| *row == 2), "only row 2: {f:?}");
}

#[test]
fn edited_bytes_with_rewritten_sha_break_the_chain() {
    let (_d, path) = five();
    let conn = tamper_conn(&path);
    let other = record_bytes(99, true);
    conn.execute(
        "UPDATE records SET canonical = ?1, sha256 = ?2 WHERE id = 2",
        rusqlite::params![other, conduct_walker::digest::sha256_hex(&other)],
    )
    .unwrap();
    let f = findings(&path);
    assert!(f.contains(&(2, ProblemKind::MissingOrReordered)), "{f:?}");
    assert!(f.contains(&(2, ProblemKind::SignatureInvalid)), "{f:?}");
    assert!(!f.contains(&(2, ProblemKind::BytesAltered)), "{f:?}");
}

#[test]
fn deleted_middle_row_is_named() {
    let (_d, path) = five();
    tamper_conn(&path)
        .execute("DELETE FROM records WHERE id = 3", [])
        .unwrap();
    let f = findings(&path);
    assert_eq!(
        f,
        BTreeSet::from([
            (4, ProblemKind::MissingOrReordered),
            (4, ProblemKind::RowMissing)
        ])
    );
}

#[test]
fn deleted_last_row_is_named() {
    let (_d, path) = five();
    tamper_conn(&path)
        .execute("DELETE FROM records WHERE id = 5", [])
        .unwrap();
    assert_eq!(
        findings(&path),
        BTreeSet::from([(5, ProblemKind::TailMissing)])
    );
}

#[test]
fn swapped_rows_are_named() {
    let (_d, path) = five();
    let conn = tamper_conn(&path);
    swap_rows(&conn, 2, 3);
    let f = findings(&path);
    // Each link that no longer follows: into row 2, into row 3, and into row 4.
    assert_eq!(
        f,
        BTreeSet::from([
            (2, ProblemKind::MissingOrReordered),
            (3, ProblemKind::MissingOrReordered),
            (4, ProblemKind::MissingOrReordered),
        ])
    );
}

#[test]
fn flipped_signature_is_named() {
    let (_d, path) = five();
    let conn = tamper_conn(&path);
    let sig: String = conn
        .query_row("SELECT signature_b64 FROM records WHERE id = 4", [], |r| {
            r.get(0)
        })
        .unwrap();
    // Change one base64 character: still 64 bytes, no longer the signature.
    let first = sig.chars().next().unwrap();
    let flipped = format!("{}{}", if first == 'A' { 'B' } else { 'A' }, &sig[1..]);
    conn.execute(
        "UPDATE records SET signature_b64 = ?1 WHERE id = 4",
        [flipped],
    )
    .unwrap();
    assert_eq!(
        findings(&path),
        BTreeSet::from([(4, ProblemKind::SignatureInvalid)])
    );
}

#[test]
fn edited_metadata_column_is_named() {
    let (_d, path) = five();
    tamper_conn(&path)
        .execute(
            "UPDATE records SET outcome = 'PASS', verdict_ok = 1 WHERE id = 3",
            [],
        )
        .unwrap();
    assert_eq!(
        findings(&path),
        BTreeSet::from([(3, ProblemKind::MetadataMismatch)])
    );
    // The detail names the column and both values, and nothing that was not edited.
    let store = Store::open_read_only(&path).unwrap();
    let report = verify::verify_all(&store, |_, _| {}).unwrap();
    let detail = &report.problems[0].detail;
    // As text an auditor reads, not Rust Debug output.
    assert!(detail.starts_with("verdict stored PASS "), "{detail}");
    assert!(
        detail.contains("(ok true) but the bytes say FAIL "),
        "{detail}"
    );
    assert!(!detail.contains("Some("), "{detail}");
    assert!(
        !detail.contains("endpoint") && !detail.contains(';'),
        "{detail}"
    );
}

#[test]
fn edited_kept_salt_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("walker.db");
    {
        let store = Store::open(&path).unwrap();
        store
            .insert_record(&signed(record_bytes(1, true), &key(1)))
            .unwrap();
        store.insert_record(&commitment(2, &key(1))).unwrap();
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("DROP TRIGGER kept_full_insert_only_update")
        .unwrap();
    conn.execute(
        "UPDATE kept_full SET salt_hex = ?1 WHERE record_id = 2",
        ["ab".repeat(32)],
    )
    .unwrap();
    assert_eq!(
        findings(&path),
        BTreeSet::from([(2, ProblemKind::CommitmentMismatch)])
    );
}
