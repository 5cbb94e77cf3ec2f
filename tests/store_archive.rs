//! Retention into archives (issue 27, item 3) and records at rest compressed (item 4): archive →
//! verify (with and without the archives) → import round trips, a cut in the middle of the
//! chain, an archive edited after the fact, held records never archived, a kill -9 at random
//! points of archiving, and compressed rows coming back byte for byte, also after migrating a
//! store written before compression.

mod store_support;

use conduct_walker::digest::sha256_hex;
use conduct_walker::store::archive::{ArchiveReport, Restored, Retention};
use conduct_walker::store::schema::{MIGRATIONS, SCHEMA_VERSION};
use conduct_walker::store::{ListFilter, NewRecord, ProblemKind, Store, verify};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use store_support::*;

/// Walk time `day` days after 2026-09-06 (plus `n` seconds to keep records apart).
fn on_day(day: u64, n: u64) -> u64 {
    day * 1440 + n
}

/// The canonical bytes of record `i`, walked on day `i` (one record a day).
fn daily(i: u64) -> Vec<u8> {
    record_bytes(on_day(i, 0), !i.is_multiple_of(3))
}

/// `now` for retention: `day` days after the first record's day.
fn day(day: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339("2026-09-06T00:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc)
        + chrono::Duration::days(day)
}

/// A store of `n` signed records, one per day from day 0, plus every record's exact bytes.
fn store_of(n: u64) -> (tempfile::TempDir, PathBuf, Vec<Vec<u8>>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("walker.db");
    let store = Store::open(&path).unwrap();
    let k = key(3);
    let mut all = Vec::new();
    let recs: Vec<NewRecord> = (0..n)
        .map(|i| {
            all.push(daily(i));
            signed(daily(i), &k)
        })
        .collect();
    store.insert_many(&recs).unwrap();
    (dir, path, all)
}

/// Mark record `id` as having a submission in `state` (`queued`, `sending`, `filed`).
fn submission(path: &Path, id: i64, state: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute(
        "INSERT INTO submissions (record_id, intake_url, lane, identity, endpoint, state, \
         created_at, updated_at) VALUES (?1, 'https://intake.example', 'address', 'x', 'e', ?2, \
         '2026-09-06T00:00:00Z', '2026-09-06T00:00:00Z')",
        rusqlite::params![id, state],
    )
    .unwrap();
}

fn cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conduct-walker"))
        .args(args)
        .output()
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `records export` as bytes.
fn export(path: &Path) -> Vec<u8> {
    let o = cli(&["records", "export", "--db", s(path), "--with-kept"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o.stdout
}

/// (records counted, failed assertions counted) in the summary rows `/metrics` reads.
fn summary_counts(path: &Path) -> (i64, i64) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row(
        "SELECT (SELECT coalesce(sum(n), 0) FROM summary_records), \
                (SELECT coalesce(sum(n), 0) FROM summary_assertion_failures)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

fn live_ids(path: &Path) -> Vec<i64> {
    Store::open_read_only(path)
        .unwrap()
        .list(&ListFilter::default())
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect()
}

fn segment_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn archive_verify_import_round_trip() {
    let (d, path, all) = store_of(30);
    // A commitment record travels with its kept full record and salt.
    let store = Store::open(&path).unwrap();
    store
        .insert_record(&commitment(on_day(35, 0), &key(3)))
        .unwrap();
    drop(store);
    let before = export(&path);
    let archives = d.path().join("archive");

    // The CLI reads the real clock: keep as many days as puts the cutoff within day 9.
    let keep = ((chrono::Utc::now() - day(10)).num_days() + 1).to_string();
    let o = cli(&[
        "records",
        "archive",
        "--db",
        s(&path),
        "--dir",
        s(&archives),
        "--all-days",
        &keep,
        "--dry-run",
    ]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("would archive rows 1 to 10 (10 records)"));
    assert_eq!(live_ids(&path).len(), 31, "a dry run moves nothing");
    assert!(segment_files(&archives).is_empty());

    // Day 40, keep 30 days: the records of days 0..=9 go (rows 1 to 10).
    let counted = summary_counts(&path);
    assert_eq!(counted.0, 31, "the summary rows count every stored record");
    let store = Store::open(&path).unwrap();
    let report = store
        .archive(
            &archives,
            Retention {
                all_days: Some(30),
                unfiled_days: None,
            },
            day(40),
            false,
        )
        .unwrap();
    assert_eq!(report.archived(), 10);
    drop(store);
    assert_eq!(live_ids(&path), (11..=31).collect::<Vec<_>>());
    let files = segment_files(&archives);
    assert_eq!(files.len(), 1, "{files:?}");
    let file_name = files[0].file_name().unwrap().to_str().unwrap().to_string();
    assert!(file_name.starts_with("records-000000000001-000000000010-"));

    // Without the archives: the chain holds through the cut, and the range is named unchecked.
    let o = cli(&["records", "verify", "--db", s(&path)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).contains(&format!(
            "rows 1 to 10: not checked: archived in {file_name} (pass --archives DIR to check them)"
        )),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("ok: 21 records verified"),
        "{}",
        stdout(&o)
    );
    // With them: every archived row re-verified too.
    let o = cli(&[
        "records",
        "verify",
        "--db",
        s(&path),
        "--archives",
        s(&archives),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("ok: 31 records verified"),
        "{}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains("not checked"));
    // The export holds only the live rows now, and they are unchanged.
    let after = export(&path);
    let before_lines: Vec<&[u8]> = before.split_inclusive(|&b| b == b'\n').collect();
    assert_eq!(after, before_lines[10..].concat());
    // The segment's records are the exact bytes.
    let mut text = Vec::new();
    zstd::stream::read::Decoder::new(std::fs::File::open(&files[0]).unwrap())
        .unwrap()
        .read_to_end(&mut text)
        .unwrap();
    let lines: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len(), 11, "a header and ten rows");
    for (i, line) in lines[1..].iter().enumerate() {
        let v: serde_json::Value = serde_json::from_slice(line).unwrap();
        assert_eq!(
            v["record_canonical"].as_str().unwrap().as_bytes(),
            &all[i][..]
        );
    }

    // Import puts the range back in place, and the store is as it was.
    let o = cli(&["records", "import", s(&files[0]), "--db", s(&path)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout(&o).contains("restored rows 1 to 10"),
        "{}",
        stdout(&o)
    );
    assert_eq!(live_ids(&path), (1..=31).collect::<Vec<_>>());
    assert_eq!(export(&path), before, "byte for byte, in the same order");
    // The summary rows (counters: archived records stay counted) are not counted twice.
    assert_eq!(summary_counts(&path), counted);
    let store = Store::open_read_only(&path).unwrap();
    let report = verify::verify_all(&store, |_, _| {}).unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert!(report.archived.is_empty());
    assert_eq!(report.rows, 31);
    // A second import of the same segment: no cut matches any more, nothing is new.
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(
        store.restore(&files[0]).unwrap(),
        Restored::AsNew {
            inserted: 0,
            already_present: 10
        }
    );
}

#[test]
fn a_cut_in_the_middle_of_the_chain_and_held_records_stay() {
    let (d, path, all) = store_of(30);
    // Rows 1..=10 are waiting to be filed or being filed: they never leave.
    for id in 1..=10 {
        submission(&path, id, if id % 2 == 0 { "queued" } else { "sending" });
    }
    // Row 11 was filed: only the all-records period takes it; rows 12.. were never filed.
    submission(&path, 11, "filed");
    let archives = d.path().join("a");
    let store = Store::open(&path).unwrap();
    for id in 1..=10 {
        assert!(!conduct_walker::store::archive::is_prunable(store.connection(), id).unwrap());
    }
    assert!(conduct_walker::store::archive::is_prunable(store.connection(), 11).unwrap());
    // Unfiled older than 20 days (rows 1..=10 held, 11 filed, 12..=20 go), all older than 365.
    let report = store
        .archive(
            &archives,
            Retention {
                unfiled_days: Some(20),
                all_days: Some(365),
            },
            day(40),
            false,
        )
        .unwrap();
    assert_eq!(report.held, 10);
    assert_eq!(report.archived(), 9);
    // New records keep chaining after the cut.
    store.insert_record(&signed(daily(100), &key(3))).unwrap();
    drop(store);
    let ids = live_ids(&path);
    assert_eq!(
        ids,
        (1..=11).chain(21..=31).collect::<Vec<_>>(),
        "the cut is in the middle"
    );
    let store = Store::open_read_only(&path).unwrap();
    let bare = verify::verify_all(&store, |_, _| {}).unwrap();
    assert!(bare.is_ok(), "{bare:?}");
    assert_eq!(bare.archived.len(), 1);
    assert_eq!(
        (bare.archived[0].first_id, bare.archived[0].last_id),
        (12, 20)
    );
    assert!(!bare.archived[0].checked);
    let full = verify::verify_all_with(&store, Some(&archives), |_, _| {}).unwrap();
    assert!(full.is_ok(), "{full:?}");
    assert_eq!(full.rows, 31);
    assert!(full.archived[0].checked);

    // A row deleted next to the cut behind the triggers' back still shows, at its row.
    let conn = tamper_conn(&path);
    conn.execute("DELETE FROM records WHERE id = 21", [])
        .unwrap();
    drop(conn);
    let store = Store::open_read_only(&path).unwrap();
    let r = verify::verify_all_with(&store, Some(&archives), |_, _| {}).unwrap();
    assert!(
        r.problems
            .iter()
            .any(|p| p.row == 22 && p.kind == ProblemKind::RowMissing),
        "{r:?}"
    );
    // The records of the range match the originals.
    let _ = all;
}

#[test]
fn the_delete_trigger_refuses_rows_no_cut_covers() {
    let (_d, path, _) = store_of(3);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let e = conn
        .execute("DELETE FROM records WHERE id = 2", [])
        .unwrap_err()
        .to_string();
    assert!(e.contains("rows leave only into an archive"), "{e}");
    let e = conn
        .execute("DELETE FROM record_cuts", [])
        .map(|n| n.to_string())
        .unwrap_or_else(|e| e.to_string());
    assert_eq!(e, "0", "no cut to delete");
}

/// Rewrite a segment file's lines through `edit` (as someone with the file could).
/// A store of 20 daily records whose first 10 days are archived into `<dir>/archive` (on day 20,
/// keeping 10 days), and that run's report.
fn twenty_days_first_ten_archived() -> (tempfile::TempDir, PathBuf, PathBuf, ArchiveReport) {
    let (d, path, _) = store_of(20);
    let archives = d.path().join("archive");
    let report = Store::open(&path)
        .unwrap()
        .archive(
            &archives,
            Retention {
                all_days: Some(10),
                unfiled_days: None,
            },
            day(20),
            false,
        )
        .unwrap();
    (d, path, archives, report)
}

fn rewrite_segment(file: &Path, edit: impl FnOnce(&mut Vec<String>)) {
    let mut text = String::new();
    zstd::stream::read::Decoder::new(std::fs::File::open(file).unwrap())
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    edit(&mut lines);
    let mut out = zstd::stream::write::Encoder::new(std::fs::File::create(file).unwrap(), 3)
        .unwrap()
        .auto_finish();
    for l in lines {
        out.write_all(l.as_bytes()).unwrap();
        out.write_all(b"\n").unwrap();
    }
}

#[test]
fn an_archive_edited_after_the_fact_is_named_by_file_and_row() {
    let (_d, path, archives, _) = twenty_days_first_ten_archived();
    let file = segment_files(&archives).remove(0);
    let name = file.file_name().unwrap().to_str().unwrap().to_string();
    let pristine = std::fs::read(&file).unwrap();

    // Row 5's verdict turned from FAIL to PASS inside the archive (record 4 failed: 4 % 3 != 0
    // is true, so it passed; record 3 failed): edit record 3, row 4.
    rewrite_segment(&file, |lines| {
        assert!(lines[4].contains("\"row\":4"));
        lines[4] = lines[4].replace("\\\"FAIL\\\"", "\\\"PASS\\\"");
    });
    let o = cli(&[
        "records",
        "verify",
        "--db",
        s(&path),
        "--archives",
        s(&archives),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!("row 4: bytes-altered: in archive {name}: ")),
        "{out}"
    );
    assert!(out.contains("FAILED"), "{out}");
    // Restoring it is refused, naming the row, and nothing is written.
    let o = cli(&["records", "import", s(&file), "--db", s(&path)]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("does not match its cut") && err.contains("row 4"),
        "{err}"
    );
    assert_eq!(live_ids(&path), (11..=20).collect::<Vec<_>>());

    // A row removed from the archive (its sha and chain consistent otherwise) breaks the chain.
    std::fs::write(&file, &pristine).unwrap();
    rewrite_segment(&file, |lines| {
        lines.remove(6);
    });
    let o = cli(&[
        "records",
        "verify",
        "--db",
        s(&path),
        "--archives",
        s(&archives),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains(&format!("row 6: missing-or-reordered: in archive {name}: ")),
        "{out}"
    );
    // The whole chain rewritten inside the archive cannot end where the cut says.
    std::fs::write(&file, &pristine).unwrap();
    rewrite_segment(&file, |lines| {
        let mut v: serde_json::Value = serde_json::from_str(&lines[10]).unwrap();
        v["chain_hash"] = serde_json::Value::from("0".repeat(64));
        lines[10] = serde_json::to_string(&v).unwrap();
    });
    let store = Store::open_read_only(&path).unwrap();
    let r = verify::verify_all_with(&store, Some(&archives), |_, _| {}).unwrap();
    assert!(
        r.problems
            .iter()
            .any(|p| p.row == 10 && p.kind == ProblemKind::MissingOrReordered),
        "{r:?}"
    );
    // A missing file is a finding too.
    std::fs::remove_file(&file).unwrap();
    let r = verify::verify_all_with(&store, Some(&archives), |_, _| {}).unwrap();
    assert_eq!(r.problems.len(), 1, "{r:?}");
    assert_eq!(r.problems[0].kind, ProblemKind::ArchiveMissing);
    assert_eq!(r.problems[0].row, 1);
    // And the pristine file verifies.
    std::fs::write(&file, &pristine).unwrap();
    let r = verify::verify_all_with(&store, Some(&archives), |_, _| {}).unwrap();
    assert!(r.is_ok(), "{r:?}");
}

/// One `records archive` run, killed after `delay_ms` (or left to finish when `None`).
fn archive_run(path: &Path, dir: &Path, delay_ms: Option<u64>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_conduct-walker"))
        .args([
            "records",
            "archive",
            "--db",
            s(path),
            "--dir",
            s(dir),
            "--all-days",
            "1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    match delay_ms {
        Some(ms) => {
            std::thread::sleep(std::time::Duration::from_millis(ms));
            child.kill().unwrap();
            child.wait().unwrap();
        }
        None => assert!(child.wait().unwrap().success()),
    }
}

#[test]
fn kill_9_at_random_points_of_archiving_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let pristine = dir.path().join("pristine.db");
    let k = key(5);
    // 400 records (walked in September 2026, a minute apart), every fifth queued: 80 runs of
    // four rows, 80 segments and transactions.
    let recs: Vec<NewRecord> = (0..400)
        .map(|i| signed(record_bytes(i, true), &k))
        .collect();
    let shas: Vec<String> = recs.iter().map(|r| sha256_hex(&r.canonical)).collect();
    let store = Store::open(&pristine).unwrap();
    store.insert_many(&recs).unwrap();
    drop(store);
    for id in (5..=400).step_by(5) {
        submission(&pristine, id, "queued");
    }
    Store::open(&pristine).unwrap().checkpoint().unwrap();
    // A cheap xorshift: the kill points differ from run to run but need no crate.
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut partial = 0;
    for round in 0..8 {
        let path = dir.path().join(format!("walker-{round}.db"));
        let archives = dir.path().join(format!("archive-{round}"));
        std::fs::copy(&pristine, &path).unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        archive_run(&path, &archives, Some(5 + seed % 300));
        // Whatever moment it died at: every record is live or in a segment that verifies, and
        // the chain holds.
        let store = Store::open_read_only(&path).unwrap();
        let r = verify::verify_all_with(&store, Some(&archives), |_, _| {}).unwrap();
        assert!(r.is_ok(), "round {round}: {r:?}");
        assert_eq!(r.rows, 400, "round {round}: every record is accounted for");
        assert!(r.archived.iter().all(|a| a.checked));
        let archived: i64 = r.archived.iter().map(|a| a.last_id - a.first_id + 1).sum();
        eprintln!("round {round}: killed with {archived} records archived");
        if archived > 0 && archived < 320 {
            partial += 1;
        }
        drop(store);
        // The next run finishes the job: everything not held is archived, and no segment file
        // the killed run left without a cut remains.
        archive_run(&path, &archives, None);
        assert_eq!(live_ids(&path), (5..=400).step_by(5).collect::<Vec<i64>>());
        let store = Store::open_read_only(&path).unwrap();
        let r = verify::verify_all_with(&store, Some(&archives), |_, _| {}).unwrap();
        assert!(r.is_ok(), "round {round}: {r:?}");
        assert_eq!(r.rows, 400);
        let cut_files: std::collections::BTreeSet<String> =
            r.archived.iter().map(|a| a.file.clone()).collect();
        let on_disk: std::collections::BTreeSet<String> = segment_files(&archives)
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
            .collect();
        assert_eq!(cut_files, on_disk, "round {round}");
        // And every record comes back from the segments.
        if round == 0 {
            drop(store);
            let store = Store::open(&path).unwrap();
            for f in segment_files(&archives) {
                assert!(matches!(
                    store.restore(&f).unwrap(),
                    Restored::InPlace { .. }
                ));
            }
            for sha in &shas {
                assert!(store.get_by_sha256(sha).unwrap().is_some(), "{sha}");
            }
            assert_eq!(store.count().unwrap(), 400);
        }
    }
    assert!(
        partial > 0,
        "no kill landed in the middle of an archiving run"
    );
}

/// A store written by the schema before compression (migrations 1 to 6), rows inserted as that
/// version did: raw bytes, chained, metadata columns derived.
fn old_store(path: &Path, recs: &[NewRecord]) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch("PRAGMA journal_mode = WAL").unwrap();
    // The migrations before the one that brought compression (found by name: the numbers
    // move when branches merge).
    let old = MIGRATIONS
        .iter()
        .position(|m| m.name == "archive_compress")
        .unwrap();
    assert!((old as i64) < SCHEMA_VERSION);
    for m in &MIGRATIONS[..old] {
        conn.execute_batch(m.sql).unwrap();
    }
    conn.execute_batch(&format!("PRAGMA user_version = {old}"))
        .unwrap();
    let mut prev = [0u8; 32];
    for r in recs {
        let m = conduct_walker::store::meta::derive_from_bytes(&r.canonical).unwrap();
        let sha = conduct_walker::digest::sha256(&r.canonical);
        let chain = conduct_walker::store::verify::chain_next(&prev, &sha);
        prev = chain;
        let v = m.verdict.as_ref();
        conn.execute(
            "INSERT INTO records (sha256, canonical, signature_b64, public_key_b64, signed, \
             endpoint, origin, walked_at, walker_mode, privacy_mode, verdict_ok, outcome, \
             n_pass, n_total, key_url, inserted_at, chain_hash) VALUES \
             (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
            rusqlite::params![
                hex::encode(sha),
                r.canonical,
                r.signature_b64,
                r.public_key_b64,
                r.signature_b64.is_some(),
                m.endpoint,
                m.origin,
                m.walked_at,
                m.walker_mode,
                m.privacy_mode,
                v.map(|v| v.ok),
                v.map(|v| v.outcome.clone()),
                v.map(|v| v.n_pass),
                v.map(|v| v.n_total),
                m.key_url,
                "2026-09-06T00:00:00.000Z",
                hex::encode(chain),
            ],
        )
        .unwrap();
    }
}

fn facts(path: &Path) -> Vec<(String, i64, String, Option<String>)> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT sha256, transport_error, failed, witness_name FROM record_facts ORDER BY sha256",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn compressed_rows_come_back_byte_for_byte_also_after_migrating_an_old_store() {
    let dir = tempfile::tempdir().unwrap();
    let old_path = dir.path().join("old.db");
    let k = key(8);
    let recs: Vec<NewRecord> = (0..700).map(|i| signed(daily(i), &k)).collect();
    // 50 rows written before compression existed.
    old_store(&old_path, &recs[..50]);
    let store = Store::open(&old_path).unwrap();
    // 550 more in one transaction (compressed without a dictionary; the store then holds 600
    // and trains one), then 100 one by one (compressed with it).
    store.insert_many(&recs[50..600]).unwrap();
    for r in &recs[600..] {
        store.insert_record(r).unwrap();
    }
    drop(store);
    let conn = rusqlite::Connection::open(&old_path).unwrap();
    let blobs: Vec<Vec<u8>> = conn
        .prepare("SELECT canonical FROM records ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        blobs[..50].iter().all(|b| b[0] == b'{'),
        "old rows stay raw"
    );
    let frame = |b: &Vec<u8>| b.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]);
    assert!(blobs[50..].iter().all(frame), "new rows are zstd frames");
    let dict_id = |b: &Vec<u8>| zstd::zstd_safe::get_dict_id_from_frame(b).map(|n| n.get());
    assert!(blobs[50..600].iter().all(|b| dict_id(b).is_none()));
    let trained: u32 = conn
        .query_row("SELECT id FROM record_dicts", [], |r| r.get(0))
        .unwrap();
    assert!(blobs[600..].iter().all(|b| dict_id(b) == Some(trained)));
    let avg = |bs: &[Vec<u8>]| bs.iter().map(Vec::len).sum::<usize>() / bs.len();
    let raw_avg = avg(&recs.iter().map(|r| r.canonical.clone()).collect::<Vec<_>>());
    assert!(
        avg(&blobs[50..600]) < raw_avg / 2,
        "plain zstd halves a record"
    );
    assert!(
        avg(&blobs[600..]) < avg(&blobs[50..600]),
        "the dictionary does better than plain zstd"
    );
    drop(conn);

    // Every read path gives the exact bytes: by sha, by prefix, the export, and verify.
    let store = Store::open_read_only(&old_path).unwrap();
    for r in &recs {
        let sha = sha256_hex(&r.canonical);
        assert_eq!(
            store.get_by_sha256(&sha).unwrap().unwrap().canonical,
            r.canonical
        );
    }
    let o = cli(&[
        "records",
        "raw",
        &sha256_hex(&recs[650].canonical)[..16],
        "--db",
        s(&old_path),
    ]);
    assert_eq!(o.stdout, recs[650].canonical);
    let expected: Vec<u8> = recs
        .iter()
        .flat_map(|r| r.canonical.iter().copied().chain([b'\n']))
        .collect();
    let o = cli(&["records", "export", "--db", s(&old_path)]);
    assert!(o.stdout == expected, "records export is byte-identical");
    let report = verify::verify_all(&store, |_, _| {}).unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.rows, 700);
    // A compressed row's facts are the ones the trigger computes for the same raw row.
    let raw_path = dir.path().join("raw.db");
    old_store(&raw_path, &recs);
    assert_eq!(facts(&old_path), facts(&raw_path));
    // A compressed frame edited behind the store's back is named, not silently misread.
    drop(store);
    let conn = tamper_conn(&old_path);
    conn.execute(
        "UPDATE records SET canonical = substr(canonical, 1, length(canonical) - 3) WHERE id = 650",
        [],
    )
    .unwrap();
    drop(conn);
    let store = Store::open_read_only(&old_path).unwrap();
    let report = verify::verify_all(&store, |_, _| {}).unwrap();
    assert_eq!(report.problems.len(), 1, "{report:?}");
    assert_eq!(report.problems[0].row, 650);
    assert_eq!(report.problems[0].kind, ProblemKind::Unreadable);
}

/// Issue 23 and retention: a filed record followed into the ledger stays in the live store until
/// the follower has seen it anchored (its bytes are what an inclusion check, or a finding about
/// it, needs); once anchored, the all-records period takes it like any other.
#[test]
fn a_record_followed_into_the_ledger_stays_until_anchored() {
    let (_d, path, _all) = store_of(10);
    for id in 1..=3 {
        submission(&path, id, "filed");
    }
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        for sub in [1, 2] {
            conduct_walker::store::ledger::start_following(&conn, sub, "2026-09-06T00:00:00Z")
                .unwrap();
        }
        // Row 2's record was seen anchored; row 1's is still pending in the ledger.
        conn.execute(
            "UPDATE ledger_follow SET state = 'anchored', anchored_at = '2026-09-07T00:31:00Z' \
             WHERE record_id = 2",
            [],
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let prunable =
        |id| conduct_walker::store::archive::is_prunable(store.connection(), id).unwrap();
    assert!(!prunable(1), "followed and not anchored: held");
    assert!(prunable(2), "anchored: may go");
    assert!(prunable(3), "filed, not followed: may go");
    let report = store
        .archive(
            &_d.path().join("a"),
            Retention {
                unfiled_days: None,
                all_days: Some(1),
            },
            day(400),
            false,
        )
        .unwrap();
    assert_eq!(report.held, 1);
    assert_eq!(report.archived(), 9);
    drop(store);
    assert_eq!(live_ids(&path), vec![1]);
}

/// A segment's header and its cut are dated by the clock the caller passes (the daemon's
/// injected clock), not the machine's; every row line carries the row's columns, in canonical
/// form, and the header names the range.
#[test]
fn segments_and_cuts_are_dated_by_the_given_clock_and_lines_are_canonical() {
    let (_d, path, archives, report) = twenty_days_first_ten_archived();
    assert_eq!(report.archived(), 10);
    let file = segment_files(&archives).remove(0);
    let mut text = String::new();
    zstd::stream::read::Decoder::new(std::fs::File::open(&file).unwrap())
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let header: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(header["created_at"], "2026-09-26T00:00:00Z");
    assert_eq!(header["first_row"], 1);
    assert_eq!(header["last_row"], 10);
    assert_eq!(header["count"], 10);
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            conduct_walker::canonical::to_bytes(&v),
            line.as_bytes(),
            "{line}"
        );
    }
    let row: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(row["row"], 1);
    assert!(row["record_canonical"].as_str().unwrap().starts_with('{'));
    let cut_created: String = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT created_at FROM record_cuts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(cut_created, "2026-09-26T00:00:00.000Z");
}
