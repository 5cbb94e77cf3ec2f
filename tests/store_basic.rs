//! The store as a library: insert, reopen, list, idempotence, refusals, schema versions.

mod store_support;

use conduct_walker::digest::{sha256, sha256_hex};
use conduct_walker::store::{
    self, CHAIN_GENESIS, KeptFull, ListFilter, SCHEMA_VERSION, Store, StoreError, verify,
};
use store_support::*;

fn fresh() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    // A nested path: open must create the parent directory.
    let path = dir.path().join("state").join("walker.db");
    (dir, path)
}

#[test]
fn insert_reopen_list_and_chain() {
    let (_dir, path) = fresh();
    let k = key(7);
    let a = record_bytes(1, true);
    let b = record_bytes(2, false);
    let c = canonical_other_endpoint();
    {
        let store = Store::open(&path).unwrap();
        assert_eq!(store.count().unwrap(), 0);
        let ra = store.insert_record(&signed(a.clone(), &k)).unwrap();
        assert_eq!(ra.row.id, 1);
        assert_eq!(ra.row.sha256, sha256_hex(&a));
        assert!(ra.row.signed);
        assert_eq!(ra.row.meta.endpoint, "https://agent.example/a2a");
        assert_eq!(ra.row.meta.origin, "https://agent.example");
        assert_eq!(ra.row.meta.walker_mode.as_deref(), Some("a2a"));
        assert_eq!(ra.row.meta.privacy_mode, "full");
        assert_eq!(
            ra.row.meta.key_url.as_deref(),
            Some("https://witness.example/.well-known/nenrin-witness-key.json")
        );
        let v = ra.row.meta.verdict.clone().unwrap();
        assert!(v.ok);
        assert_eq!((v.outcome.as_str(), v.n_pass, v.n_total), ("PASS", 8, 8));
        store.insert_record(&unsigned(b.clone())).unwrap();
        store.insert_record(&unsigned(c.clone())).unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.count().unwrap(), 3);
    let rows = store.list(&ListFilter::default()).unwrap();
    let shas: Vec<_> = rows.iter().map(|r| r.sha256.clone()).collect();
    assert_eq!(shas, vec![sha256_hex(&a), sha256_hex(&b), sha256_hex(&c)]);
    assert_eq!(
        rows.iter().map(|r| r.signed).collect::<Vec<_>>(),
        vec![true, false, false]
    );

    // The documented chain rule, recomputed independently.
    let c1 = sha256([CHAIN_GENESIS, sha256(&a)].concat());
    let c2 = sha256([c1, sha256(&b)].concat());
    let c3 = sha256([c2, sha256(&c)].concat());
    assert_eq!(rows[0].chain_hash, hex::encode(c1));
    assert_eq!(rows[1].chain_hash, hex::encode(c2));
    assert_eq!(rows[2].chain_hash, hex::encode(c3));

    // Filters.
    let by = |f: ListFilter| {
        store
            .list(&f)
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        by(ListFilter {
            outcome: Some("FAIL".into()),
            ..Default::default()
        }),
        vec![2]
    );
    assert_eq!(
        by(ListFilter {
            endpoint: Some("https://other.example/mcp".into()),
            ..Default::default()
        }),
        vec![3]
    );
    // Record 2 was walked at +120 s, record 1 at +60 s.
    assert_eq!(
        by(ListFilter {
            since: Some(store::parse_since("2026-09-06T00:02:00Z").unwrap()),
            ..Default::default()
        }),
        vec![2, 3]
    );

    // Bytes come back exactly, by any unambiguous prefix, in either case.
    let got = store
        .get_by_prefix(&sha256_hex(&a)[..10].to_uppercase())
        .unwrap();
    assert_eq!(got.canonical, a);
    assert_eq!(got.signature_b64, Some(sign_b64(&k, &a)));
    assert_eq!(got.public_key_b64, Some(public_key_b64(&k)));

    let report = verify::verify_all(&store, |_, _| {}).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!((report.rows, report.signed), (3, 1));
    assert_eq!(report.head, Some((3, hex::encode(c3))));
}

fn canonical_other_endpoint() -> Vec<u8> {
    conduct_walker::canonical::to_bytes(&record_value(
        3,
        "https://other.example",
        "https://other.example/mcp",
        true,
        &walked_at(600),
    ))
}

#[test]
fn same_record_twice_is_one_row() {
    let (_dir, path) = fresh();
    let store = Store::open(&path).unwrap();
    let bytes = record_bytes(1, true);
    let first = store
        .insert_record_with_status(&unsigned(bytes.clone()))
        .unwrap();
    assert!(first.new);
    // Even with a signature now: the identity is the bytes, and rows are never rewritten.
    let again = store
        .insert_record_with_status(&signed(bytes.clone(), &key(1)))
        .unwrap();
    assert!(!again.new);
    assert_eq!(again.record, first.record);
    assert_eq!(store.count().unwrap(), 1);
    let summary = store
        .insert_many(&[unsigned(bytes), unsigned(record_bytes(2, true))])
        .unwrap();
    assert_eq!((summary.inserted, summary.already_present), (1, 1));
    assert_eq!(store.count().unwrap(), 2);
}

#[test]
fn refuses_what_is_not_a_good_record() {
    let (_dir, path) = fresh();
    let store = Store::open(&path).unwrap();
    let good = record_bytes(1, true);

    let mut spaced = b" ".to_vec();
    spaced.extend_from_slice(&good);
    assert!(matches!(
        store.insert_record(&unsigned(spaced)),
        Err(StoreError::NotCanonical { .. })
    ));
    assert!(matches!(
        store.insert_record(&unsigned(b"{\"schema\":\"other\"}".to_vec())),
        Err(StoreError::NotARecord(_))
    ));
    assert!(matches!(
        store.insert_record(&unsigned(b"not json".to_vec())),
        Err(StoreError::NotARecord(_))
    ));
    // Signed by one key, presented with another.
    let mut wrong_key = signed(good.clone(), &key(1));
    wrong_key.public_key_b64 = Some(public_key_b64(&key(2)));
    let err = store.insert_record(&wrong_key).unwrap_err();
    assert!(matches!(err, StoreError::Signature(_)), "{err}");
    let mut half = signed(good.clone(), &key(1));
    half.public_key_b64 = None;
    assert!(matches!(
        store.insert_record(&half),
        Err(StoreError::HalfSigned)
    ));
    // A kept full record that does not open the commitment.
    let mut bad_kept = commitment(4, &key(1));
    bad_kept.kept_full.as_mut().unwrap().salt_hex = "00".repeat(32);
    assert!(matches!(
        store.insert_record(&bad_kept),
        Err(StoreError::KeptFull(_))
    ));
    // A kept record on a non-commitment record.
    let mut kept_on_full = unsigned(good.clone());
    kept_on_full.kept_full = Some(KeptFull {
        canonical: good,
        salt_hex: "11".repeat(32),
    });
    assert!(matches!(
        store.insert_record(&kept_on_full),
        Err(StoreError::KeptFull(_))
    ));
    assert_eq!(store.count().unwrap(), 0, "nothing refused was stored");
}

#[test]
fn commitment_record_keeps_full_record_and_verifies() {
    let (_dir, path) = fresh();
    let store = Store::open(&path).unwrap();
    let rec = commitment(9, &key(3));
    let stored = store.insert_record(&rec).unwrap();
    assert_eq!(stored.row.meta.privacy_mode, "commitment");
    assert_eq!(stored.row.meta.verdict, None);
    assert_eq!(stored.kept_full, rec.kept_full);
    let report = verify::verify_all(&store, |_, _| {}).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn prefixes_unknown_ambiguous_and_malformed() {
    let (_dir, path) = fresh();
    let store = Store::open(&path).unwrap();
    // Insert until two records share a first hex digit (17 records guarantee it).
    let mut shas = Vec::new();
    for i in 0..17 {
        shas.push(
            store
                .insert_record(&unsigned(record_bytes(i, true)))
                .unwrap()
                .row
                .sha256,
        );
    }
    let first_digits: Vec<char> = shas.iter().map(|s| s.chars().next().unwrap()).collect();
    let shared = first_digits
        .iter()
        .find(|c| first_digits.iter().filter(|d| d == c).count() > 1)
        .unwrap();
    match store.get_by_prefix(&shared.to_string()) {
        Err(StoreError::AmbiguousPrefix { matches, .. }) => assert!(matches.len() >= 2),
        other => panic!("expected ambiguity, got {other:?}"),
    }
    let unused = "0123456789abcdef"
        .chars()
        .flat_map(|a| "0123456789abcdef".chars().map(move |b| format!("{a}{b}")))
        .find(|p| !shas.iter().any(|s| s.starts_with(p.as_str())))
        .unwrap();
    assert!(matches!(
        store.get_by_prefix(&unused),
        Err(StoreError::UnknownPrefix(_))
    ));
    assert!(matches!(
        store.get_by_prefix("xyz"),
        Err(StoreError::BadPrefix(_))
    ));
    assert!(matches!(
        store.get_by_prefix(""),
        Err(StoreError::BadPrefix(_))
    ));
    assert_eq!(store.get_by_prefix(&shas[5]).unwrap().row.id, 6);
}

#[test]
fn rows_cannot_be_updated_or_deleted_through_sqlite() {
    let (_dir, path) = fresh();
    let store = Store::open(&path).unwrap();
    store
        .insert_record(&unsigned(record_bytes(1, true)))
        .unwrap();
    let conn = store.connection();
    let upd = conn
        .execute("UPDATE records SET endpoint = 'x'", [])
        .unwrap_err();
    assert!(upd.to_string().contains("insert-only"), "{upd}");
    let del = conn.execute("DELETE FROM records", []).unwrap_err();
    assert!(del.to_string().contains("insert-only"), "{del}");
    assert_eq!(store.count().unwrap(), 1);
}

#[test]
fn newer_schema_is_refused_naming_both_versions() {
    let (_dir, path) = fresh();
    Store::open(&path).unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA user_version = 99").unwrap();
    }
    let err = Store::open(&path).unwrap_err();
    match &err {
        StoreError::SchemaTooNew { found, known, .. } => {
            assert_eq!((*found, *known), (99, SCHEMA_VERSION));
        }
        other => panic!("expected SchemaTooNew, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("99") && msg.contains(&SCHEMA_VERSION.to_string()),
        "{msg}"
    );
    assert!(matches!(
        Store::open_read_only(&path),
        Err(StoreError::SchemaTooNew { found: 99, .. })
    ));
    // Refusing must not have touched it.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let v: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 99);
}

#[test]
fn pragmas_are_set_on_open() {
    let (_dir, path) = fresh();
    let store = Store::open(&path).unwrap();
    let conn = store.connection();
    let q = |sql: &str| -> String {
        conn.query_row(sql, [], |r| r.get::<_, rusqlite::types::Value>(0))
            .map(|v| format!("{v:?}"))
            .unwrap()
    };
    assert_eq!(q("PRAGMA journal_mode"), "Text(\"wal\")");
    assert_eq!(q("PRAGMA synchronous"), "Integer(2)"); // FULL
    assert_eq!(q("PRAGMA foreign_keys"), "Integer(1)");
    assert_eq!(
        q("PRAGMA user_version"),
        format!("Integer({SCHEMA_VERSION})")
    );
}

#[test]
fn read_only_store_reads_while_a_writer_is_open_and_never_writes() {
    let (_dir, path) = fresh();
    let writer = Store::open(&path).unwrap();
    writer
        .insert_record(&unsigned(record_bytes(1, true)))
        .unwrap();
    let reader = Store::open_read_only(&path).unwrap();
    assert_eq!(reader.count().unwrap(), 1);
    writer
        .insert_record(&unsigned(record_bytes(2, true)))
        .unwrap();
    assert_eq!(reader.count().unwrap(), 2, "the reader sees committed rows");
    assert!(
        reader
            .insert_record(&unsigned(record_bytes(3, true)))
            .is_err()
    );
    assert_eq!(writer.count().unwrap(), 2);
}

#[test]
fn read_only_open_of_missing_or_foreign_file_is_refused() {
    let (dir, path) = fresh();
    assert!(matches!(
        Store::open_read_only(&path),
        Err(StoreError::Missing(_))
    ));
    assert!(!path.exists(), "a read-only open must not create the file");
    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    assert!(matches!(
        Store::open_read_only(&other),
        Err(StoreError::NotAStore { .. })
    ));
}
