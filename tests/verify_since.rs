//! Verification that resumes from an earlier run's head (issue 27): the status pages check only
//! the rows added since, linked to the chain value the last run ended in, and read every row
//! again once a day. Real signed records in a real SQLite file; edits made as an attacker with
//! the file would.

mod store_support;
use conduct_walker::pages::VerifyCache;
use conduct_walker::store::verify::{Resume, VerifyOptions, verify_with};
use conduct_walker::store::{ProblemKind, Store, verify_all};
use store_support::*;

/// A store with records 1..=n, signed.
fn store_with(n: u64) -> (tempfile::TempDir, std::path::PathBuf, Store) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("walker.db");
    let store = Store::open(&path).unwrap();
    add(&store, 1..=n);
    (dir, path, store)
}

fn add(store: &Store, ids: std::ops::RangeInclusive<u64>) {
    let k = key(7);
    let recs: Vec<_> = ids
        .map(|i| signed(record_bytes(i, i % 4 != 0), &k))
        .collect();
    store.insert_many(&recs).unwrap();
}

fn since(store: &Store, from: &Option<(i64, String)>) -> conduct_walker::store::VerifyReport {
    verify_with(
        store,
        &VerifyOptions {
            from: Resume::from_head(from),
            workers: Some(1),
            ..VerifyOptions::default()
        },
        |_, _| {},
    )
    .unwrap()
}

#[test]
fn a_resumed_run_reads_only_the_new_rows_and_ends_where_a_full_run_ends() {
    let (_d, _p, store) = store_with(20);
    let first = verify_all(&store, |_, _| {}).unwrap();
    assert!(first.is_ok(), "{:?}", first.problems);
    assert_eq!((first.rows, first.head.as_ref().unwrap().0), (20, 20));

    add(&store, 21..=30);
    let newer = since(&store, &first.head);
    assert!(newer.is_ok(), "{:?}", newer.problems);
    assert_eq!((newer.rows, newer.signed), (10, 10));
    let full = verify_all(&store, |_, _| {}).unwrap();
    assert_eq!(newer.head, full.head, "both end in the same chain value");

    // Nothing new: nothing read, nothing wrong, no head.
    let idle = since(&store, &full.head);
    assert_eq!(
        (idle.rows, idle.head.clone(), idle.is_ok()),
        (0, None, true)
    );
}

#[test]
fn a_resumed_run_names_an_edited_new_row_and_a_chain_rewritten_at_the_join() {
    let (_d, path, store) = store_with(20);
    let first = verify_all(&store, |_, _| {}).unwrap();
    add(&store, 21..=30);
    let conn = tamper_conn(&path);

    // A new row's bytes edited after it was stored.
    assert_eq!(edit_stored_bytes(&conn, 25, "\"n_pass\"", "\"n_pazz\""), 1);
    let r = since(&store, &first.head);
    assert!(
        r.problems.iter().any(|p| p.row == 25),
        "row 25 named: {:?}",
        r.problems
    );
    assert!(r.problems.iter().all(|p| p.row > 20), "{:?}", r.problems);

    // Rows up to 20 rewritten wholesale with a consistent chain of their own cannot hide behind
    // the head the last run remembered: row 21 no longer links to it. (The chain value
    // remembered differs from the one the rows now build on, as it would after such a rewrite.)
    let remembered = Some((20, "11".repeat(32)));
    let r = since(&store, &remembered);
    let join = r
        .problems
        .iter()
        .find(|p| p.row == 21)
        .expect("row 21 named");
    assert_eq!(join.kind, ProblemKind::MissingOrReordered, "{join:?}");
}

#[test]
fn an_edit_before_the_resume_point_is_left_to_the_full_run_which_names_it() {
    let (_d, path, store) = store_with(20);
    let first = verify_all(&store, |_, _| {}).unwrap();
    add(&store, 21..=25);
    let conn = tamper_conn(&path);
    assert_eq!(edit_stored_bytes(&conn, 5, "\"n_pass\"", "\"n_pazz\""), 1);
    assert!(
        since(&store, &first.head).is_ok(),
        "rows 1..=20 are not read"
    );
    let full = verify_all(&store, |_, _| {}).unwrap();
    assert!(
        full.problems.iter().any(|p| p.row == 5),
        "{:?}",
        full.problems
    );
}

#[test]
fn the_pages_summary_adds_the_new_rows_to_the_last_full_run() {
    let (_d, path, store) = store_with(12);
    let cache = VerifyCache::default();
    cache.run_now(&path).unwrap();
    let full = cache.last().unwrap();
    assert_eq!((full.rows, full.signed, full.problems.len()), (12, 12, 0));
    assert_eq!(full.full_at, full.finished_at);

    add(&store, 13..=20);
    let conn = tamper_conn(&path);
    assert_eq!(edit_stored_bytes(&conn, 17, "\"n_pass\"", "\"n_pazz\""), 1);
    cache.run_new_rows_now(&path).unwrap();
    let s = cache.last().unwrap();
    assert_eq!((s.rows, s.signed), (20, 20), "12 read before, 8 now");
    assert_eq!(s.full_at, full.full_at, "the full run's time is kept");
    assert_eq!(s.head.as_ref().unwrap().0, 20);
    assert!(
        !s.problems.is_empty() && s.problems.iter().all(|p| p.starts_with("row 17:")),
        "{:?}",
        s.problems
    );
}

#[test]
fn a_paced_run_reads_no_faster_than_its_rate_and_finds_the_same() {
    let (_d, _p, store) = store_with(600);
    let started = std::time::Instant::now();
    let paced = verify_with(
        &store,
        &VerifyOptions {
            workers: Some(1),
            rows_per_sec: Some(1_000),
            ..VerifyOptions::default()
        },
        |_, _| {},
    )
    .unwrap();
    // Two full batches of 256 rows were handed on: at 1,000 rows a second, not before 0.512 s.
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(512),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(paced, verify_all(&store, |_, _| {}).unwrap());
}

/// A run in pieces of `limit` rows, each resumed from the last one's head, as the pages' paced
/// background run reads.
fn in_pieces(store: &Store, limit: u64) -> conduct_walker::store::VerifyReport {
    let mut all = conduct_walker::store::VerifyReport::default();
    let mut from = None;
    loop {
        let r = verify_with(
            store,
            &VerifyOptions {
                from: from.clone(),
                limit: Some(limit),
                workers: Some(1),
                ..VerifyOptions::default()
            },
            |_, _| {},
        )
        .unwrap();
        let (more, next) = (r.rows >= limit, Resume::from_head(&r.head));
        all.extend(r);
        match next {
            Some(next) if more => from = Some(next),
            _ => break,
        }
    }
    all
}

#[test]
fn a_run_in_pieces_finds_what_one_run_finds_tail_included() {
    let (_d, path, store) = store_with(25);
    let conn = tamper_conn(&path);
    assert_eq!(edit_stored_bytes(&conn, 7, "\"n_pass\"", "\"n_pazz\""), 1);
    conn.execute("DELETE FROM records WHERE id > 23", [])
        .unwrap();
    let whole = verify_all(&store, |_, _| {}).unwrap();
    let kinds: Vec<_> = whole.problems.iter().map(|p| (p.row, p.kind)).collect();
    assert!(
        kinds.iter().any(|k| k.1 == ProblemKind::TailMissing),
        "{kinds:?}"
    );
    assert!(kinds.iter().any(|k| k.0 == 7), "{kinds:?}");
    for limit in [1, 5, 23, 100] {
        assert_eq!(in_pieces(&store, limit), whole, "in pieces of {limit}");
    }
}
