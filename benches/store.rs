//! Store throughput: single-record inserts with `synchronous=FULL` (each one a committed,
//! fsynced transaction), and `verify_all` over a store of signed synthetic records.
//!
//!     cargo bench --bench store
//!     STORE_BENCH_N=1000 cargo bench --bench store -- 'floor|insert'
//!     STORE_BENCH_N=100000 STORE_BENCH_DB=/tmp/walker-100k.db cargo bench --bench store
//!
//! `STORE_BENCH_N` sets the verify store's size (default 100,000); `STORE_BENCH_DB` keeps that
//! store at a path (reused when it already holds N records) so `conduct-walker records verify`
//! can be timed on the same file.

#[path = "support/cpu.rs"]
mod cpu;
#[path = "../tests/store_support/mod.rs"]
mod store_support;

use conduct_walker::store::group::GroupCommit;
use conduct_walker::store::{NewRecord, Store, verify};
use cpu::thread_cpu_time;
use criterion::{BatchSize, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use store_support::*;

fn insert_one(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("walker.db")).unwrap();
    let k = key(1);
    let mut i = 0u64;
    let mut group = c.benchmark_group("store");
    group.throughput(Throughput::Elements(1));
    group.bench_function("insert_one_signed_sync_full", |b| {
        b.iter_batched(
            || {
                i += 1;
                signed(record_bytes(i, !i.is_multiple_of(3)), &k)
            },
            |rec| store.insert_record(&rec).unwrap(),
            BatchSize::SmallInput,
        )
    });
    // The same insert split in two: the checks alone, then the commit alone.
    group.bench_function("prepare_one_signed", |b| {
        b.iter_batched(
            || signed(record_bytes(0, true), &k),
            |rec| rec.prepare().unwrap(),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("commit_one_prepared_sync_full", |b| {
        b.iter_batched(
            || {
                i += 1;
                signed(record_bytes(i, !i.is_multiple_of(3)), &k)
                    .prepare()
                    .unwrap()
            },
            |ready| {
                store
                    .insert_prepared_then(&ready, |_, _, _| Ok(()))
                    .unwrap()
            },
            BatchSize::SmallInput,
        )
    });
    // The same commit in this thread's CPU time (reported as "time"): what is not CPU in the
    // wall figure above is waiting for the disk.
    group.bench_function("commit_one_prepared_sync_full_thread_cpu", |b| {
        b.iter_custom(|iters| {
            let mut cpu = Duration::ZERO;
            for _ in 0..iters {
                i += 1;
                let ready = signed(record_bytes(i, !i.is_multiple_of(3)), &k)
                    .prepare()
                    .unwrap();
                let started = thread_cpu_time();
                store
                    .insert_prepared_then(&ready, |_, _, _| Ok(()))
                    .unwrap();
                cpu += thread_cpu_time() - started;
            }
            cpu
        })
    });
    group.finish();
}

/// What the daemon does with 64 walks finishing at once: two threads (one per core) share one
/// store behind a mutex, each checking its record (`NewRecord::prepare`) before taking the lock,
/// so one thread's CPU work overlaps the other's commit. Still one transaction per record.
fn insert_two_writers(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Mutex::new(Store::open(&dir.path().join("walker.db")).unwrap());
    let k = key(4);
    let mut next = 0u64;
    let mut group = c.benchmark_group("store");
    group.throughput(Throughput::Elements(1));
    group.bench_function("insert_signed_sync_full_two_writers", |b| {
        b.iter_custom(|iters| {
            let recs: Vec<_> = (0..iters)
                .map(|_| {
                    next += 1;
                    signed(record_bytes(next, !next.is_multiple_of(3)), &k)
                })
                .collect();
            let (left, right) = recs.split_at(recs.len() / 2);
            let start = Instant::now();
            std::thread::scope(|s| {
                for half in [left, right] {
                    let store = &store;
                    s.spawn(move || {
                        for rec in half {
                            let ready = rec.clone().prepare().unwrap();
                            let store = store.lock().unwrap();
                            store
                                .insert_prepared_then(&ready, |_, _, _| Ok(()))
                                .unwrap();
                        }
                    });
                }
            });
            start.elapsed()
        })
    });
    group.finish();
}

/// Issue 17's target: 64 producers at once, each checking its signed record
/// (`NewRecord::prepare`) on its own thread and handing it to the group-commit writer, which
/// commits whatever is queued in one transaction (`synchronous=FULL`). Throughput is records
/// acknowledged durable per second; the lone-record bench is the latency one record pays.
fn group_commit(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Mutex::new(
        Store::open(&dir.path().join("walker.db")).unwrap(),
    ));
    let writer = GroupCommit::<()>::start(store).unwrap();
    let k = key(6);
    let mut next = 0u64;
    let mut fresh = |n: u64| -> Vec<NewRecord> {
        (0..n)
            .map(|_| {
                next += 1;
                signed(record_bytes(next, !next.is_multiple_of(3)), &k)
            })
            .collect()
    };
    let mut group = c.benchmark_group("store");
    group.throughput(Throughput::Elements(1));
    group.bench_function("group_commit_one_signed_sync_full", |b| {
        b.iter_custom(|iters| {
            let recs = fresh(iters);
            let start = Instant::now();
            for rec in recs {
                writer
                    .commit_blocking(rec.prepare().unwrap(), Box::new(|_, _, _| Ok(())))
                    .unwrap();
            }
            start.elapsed()
        })
    });
    const PRODUCERS: usize = 64;
    let before = writer.transactions();
    let mut records = 0u64;
    // The whole process's CPU over the timed sections: what one record costs all threads
    // (checks, commit, the writer's share), so the figure on a loaded machine can be read as
    // capacity per free core.
    let mut process_cpu = Duration::ZERO;
    group.sample_size(20);
    group.bench_function("group_commit_signed_sync_full_64_producers", |b| {
        b.iter_custom(|iters| {
            // Each producer owns its share, built before the clock starts.
            let mut shares: Vec<Vec<NewRecord>> = vec![Vec::new(); PRODUCERS];
            for (n, rec) in fresh(iters).into_iter().enumerate() {
                shares[n % PRODUCERS].push(rec);
            }
            records += iters;
            let cpu_start = cpu::process_cpu_time();
            let start = Instant::now();
            std::thread::scope(|s| {
                for share in shares {
                    let writer = writer.clone();
                    s.spawn(move || {
                        for rec in share {
                            writer
                                .commit_blocking(rec.prepare().unwrap(), Box::new(|_, _, _| Ok(())))
                                .unwrap();
                        }
                    });
                }
            });
            let elapsed = start.elapsed();
            process_cpu += cpu::process_cpu_time() - cpu_start;
            elapsed
        })
    });
    group.finish();
    eprintln!(
        "group commit, 64 producers: {records} records in {} transactions; process CPU {:.1} µs per record; load average {}",
        writer.transactions() - before,
        process_cpu.as_secs_f64() * 1e6 / records.max(1) as f64,
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
}

/// The disk's floor for one durable SQLite transaction, with the store's own pragmas (WAL,
/// `synchronous=FULL`): one small row per transaction, and one row holding just a record's
/// bytes (no other column, no index). No record can commit faster than the second.
fn commit_floor(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("floor.db")).unwrap();
    conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
        .unwrap();
    conn.execute_batch(
        "PRAGMA synchronous = FULL; CREATE TABLE small (x INTEGER); \
         CREATE TABLE blob (id INTEGER PRIMARY KEY, canonical BLOB NOT NULL);",
    )
    .unwrap();
    let record = signed(record_bytes(1, true), &key(5)).canonical;
    let mut group = c.benchmark_group("store");
    group.throughput(Throughput::Elements(1));
    let mut one_per_transaction = |name: &str, sql: &str, value: &dyn rusqlite::ToSql| {
        group.bench_function(name, |b| {
            b.iter(|| {
                conn.execute_batch("BEGIN IMMEDIATE").unwrap();
                conn.execute(sql, [value]).unwrap();
                conn.execute_batch("COMMIT").unwrap();
            })
        });
    };
    one_per_transaction(
        "floor_one_small_row_per_transaction",
        "INSERT INTO small VALUES (?1)",
        &1i64,
    );
    one_per_transaction(
        "floor_one_record_blob_per_transaction",
        "INSERT INTO blob (canonical) VALUES (?1)",
        &record,
    );
    group.finish();
}

fn build_store(n: u64) -> (Option<tempfile::TempDir>, PathBuf) {
    let (dir, path) = match std::env::var_os("STORE_BENCH_DB") {
        Some(p) => (None, PathBuf::from(p)),
        None => {
            let d = tempfile::tempdir().unwrap();
            let p = d.path().join("walker.db");
            (Some(d), p)
        }
    };
    let store = Store::open(&path).unwrap();
    let have = store.count().unwrap();
    if have != n {
        assert_eq!(have, 0, "{} holds {have} records, not {n}", path.display());
        let k = key(2);
        let mut next = 0u64;
        while next < n {
            let chunk: Vec<_> = (next..(next + 10_000).min(n))
                .map(|i| signed(record_bytes(i, !i.is_multiple_of(7)), &k))
                .collect();
            next += chunk.len() as u64;
            store.insert_many(&chunk).unwrap();
        }
    }
    (dir, path)
}

fn verify_store(c: &mut Criterion) {
    let n: u64 = std::env::var("STORE_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let (_dir, path) = build_store(n);
    let store = Store::open_read_only(&path).unwrap();
    let mut group = c.benchmark_group("store");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(n));
    group.bench_function(format!("verify_all_{n}_signed"), |b| {
        b.iter(|| {
            let report = verify::verify_all(&store, |_, _| {}).unwrap();
            assert!(report.is_ok() && report.rows == n);
        })
    });
    group.finish();
}

/// Where `verify_all`'s per-row time goes, one check at a time on one typical record.
fn components(c: &mut Criterion) {
    let k = key(3);
    let rec = signed(record_bytes(1, true), &k);
    let (sig, pk) = (rec.signature_b64.unwrap(), rec.public_key_b64.unwrap());
    let bytes = rec.canonical;
    let mut group = c.benchmark_group("components");
    group.bench_function("sha256_record", |b| {
        b.iter(|| conduct_walker::digest::sha256(&bytes))
    });
    group.bench_function("check_signature", |b| {
        b.iter(|| conduct_walker::store::check_signature(&bytes, &sig, &pk).unwrap())
    });
    group.bench_function("parse_lenient", |b| {
        b.iter(|| conduct_walker::json::parse_lenient(&bytes).unwrap())
    });
    group.bench_function("derive_meta_from_bytes", |b| {
        b.iter(|| conduct_walker::store::meta::derive_from_bytes(&bytes).unwrap())
    });
    let value = conduct_walker::json::parse_lenient(&bytes).unwrap();
    group.bench_function("derive_meta", |b| {
        b.iter(|| conduct_walker::store::meta::derive(&value).unwrap())
    });
    group.finish();
}

criterion_group!(
    benches,
    components,
    commit_floor,
    insert_one,
    insert_two_writers,
    group_commit,
    verify_store
);
criterion_main!(benches);
