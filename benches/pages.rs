//! Status page render time on a large store: 100,000 records over 1,000 targets (100 fires
//! each, spread over 30 days), each record with a filed submission, as a daemon would leave them.
//!
//!     cargo bench --bench pages
//!     PAGES_BENCH_DB=/tmp/pages-100k.db cargo bench --bench pages    # keep (and reuse) the store
//!
//! Each iteration does what a request does: open the store read-only, query, render the HTML.

#[path = "support/cpu.rs"]
mod cpu;
#[path = "../tests/store_support/mod.rs"]
mod store_support;

use conduct_walker::pages::{Context, render};
use conduct_walker::store::Store;
use criterion::{Criterion, criterion_group, criterion_main};
use rusqlite::params;
use std::path::PathBuf;
use std::time::Duration;

const TARGETS: u64 = 1_000;
const PER_TARGET: u64 = 100;

fn walked_at(i: u64) -> String {
    // 100 fires per target over 30 days: one every 7.2 hours.
    let base = chrono::DateTime::parse_from_rfc3339("2026-09-01T00:00:00Z").unwrap();
    (base + chrono::Duration::seconds((i * 25_920) as i64))
        .with_timezone(&chrono::Utc)
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Build (or reuse) the store.
fn store_path() -> (PathBuf, Option<tempfile::TempDir>) {
    let (path, dir) = match std::env::var_os("PAGES_BENCH_DB") {
        Some(p) => (PathBuf::from(p), None),
        None => {
            let d = tempfile::tempdir().unwrap();
            (d.path().join("walker.db"), Some(d))
        }
    };
    if let Ok(s) = Store::open_read_only(&path)
        && s.count().unwrap() == TARGETS * PER_TARGET
    {
        return (path, dir);
    }
    let _ = std::fs::remove_file(&path);
    let store = Store::open(&path).unwrap();
    let started = std::time::Instant::now();
    for round in 0..PER_TARGET {
        // One round: every target's fire number `round`, oldest round first.
        let recs: Vec<_> = (0..TARGETS)
            .map(|t| {
                let i = round * TARGETS + t;
                let v = store_support::record_value(
                    i,
                    &format!("https://agent{t:04}.example"),
                    &format!("https://agent{t:04}.example/a2a"),
                    !(i.is_multiple_of(7) || (t.is_multiple_of(10) && round > 90)),
                    &walked_at(round),
                );
                store_support::unsigned(conduct_walker::canonical::to_bytes(&v))
            })
            .collect();
        store.insert_many(&recs).unwrap();
        let conn = store.connection();
        conn.execute_batch("BEGIN").unwrap();
        let first_id = (round * TARGETS + 1) as i64;
        for t in 0..TARGETS {
            let id = first_id + t as i64;
            let at = walked_at(round);
            let sha: String = conn
                .query_row("SELECT sha256 FROM records WHERE id = ?1", [id], |r| {
                    r.get(0)
                })
                .unwrap();
            conn.execute(
                "INSERT INTO daemon_walks (target, origin, endpoint, scheduled_for, started_at, \
                 finished_at, state, record_id, record_sha256, submission) \
                 VALUES (?1, ?2, NULL, ?3, ?3, ?3, 'done', ?4, ?5, 'filed')",
                params![
                    format!("t{t:04}"),
                    format!("https://agent{t:04}.example"),
                    at,
                    id,
                    sha
                ],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO submissions (record_id, intake_url, lane, identity, endpoint, state, \
                 attempts, last_answer, last_status, counted, filed_day, created_at, updated_at) \
                 VALUES (?1, 'https://ledger.example/witness', 'address', 'w', ?2, 'filed', 1, \
                 'accepted', 201, 1, ?3, ?4, ?4)",
                params![
                    id,
                    format!("https://agent{t:04}.example/a2a"),
                    &at[..10],
                    at
                ],
            )
            .unwrap();
        }
        conn.execute_batch("COMMIT").unwrap();
    }
    eprintln!(
        "built {} records over {TARGETS} targets in {:.1} s",
        TARGETS * PER_TARGET,
        started.elapsed().as_secs_f64()
    );
    drop(store);
    (path, dir)
}

/// The overview as a first visit renders it: the store opened read-only, every strip read.
fn overview_fresh(
    path: &std::path::Path,
    ctx: &Context,
    now: chrono::DateTime<chrono::Utc>,
) -> String {
    let store = Store::open_read_only(path).unwrap();
    let strips = conduct_walker::pages::strips::StripCache::default();
    render::overview(
        store.connection(),
        ctx,
        &(None, false),
        1,
        now,
        "bench",
        &strips,
    )
    .unwrap()
}

fn pages(c: &mut Criterion) {
    let (path, _keep) = store_path();
    let now = chrono::DateTime::parse_from_rfc3339("2026-09-30T12:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let ctx = Context::default();
    let mut g = c.benchmark_group("pages");
    g.sample_size(30).measurement_time(Duration::from_secs(10));
    g.bench_function("overview_100k_records_1000_targets", |b| {
        b.iter(|| overview_fresh(&path, &ctx, now))
    });
    g.bench_function("target_page_100k_records", |b| {
        b.iter(|| {
            let store = Store::open_read_only(&path).unwrap();
            render::target(store.connection(), &ctx, "t0500", None, now, "bench")
                .unwrap()
                .unwrap()
        })
    });
    let sha: String = Store::open_read_only(&path)
        .unwrap()
        .connection()
        .query_row("SELECT sha256 FROM records WHERE id = 50000", [], |r| {
            r.get(0)
        })
        .unwrap();
    g.bench_function("record_page_100k_records", |b| {
        b.iter(|| {
            let store = Store::open_read_only(&path).unwrap();
            render::record(&store, &sha, "bench").unwrap()
        })
    });
    g.bench_function("endpoint_page_100k_records", |b| {
        b.iter(|| {
            let store = Store::open_read_only(&path).unwrap();
            render::endpoints(
                store.connection(),
                Some("https://agent0500.example/a2a"),
                "bench",
            )
            .unwrap()
        })
    });
    g.finish();
    // The same two pages in this thread's CPU time: on a shared machine wall time includes
    // waiting for a core.
    let mut g = c.benchmark_group("pages_cpu");
    g.sample_size(30).measurement_time(Duration::from_secs(10));
    let cpu = |f: &dyn Fn() -> usize, iters: u64| {
        let start = cpu::thread_cpu_time();
        for _ in 0..iters {
            std::hint::black_box(f());
        }
        cpu::thread_cpu_time() - start
    };
    g.bench_function("overview_100k_records_1000_targets", |b| {
        b.iter_custom(|iters| cpu(&|| overview_fresh(&path, &ctx, now).len(), iters))
    });
    g.bench_function("target_page_100k_records", |b| {
        b.iter_custom(|iters| {
            cpu(
                &|| {
                    let store = Store::open_read_only(&path).unwrap();
                    render::target(store.connection(), &ctx, "t0500", None, now, "bench")
                        .unwrap()
                        .unwrap()
                        .len()
                },
                iters,
            )
        })
    });
    g.finish();
}

criterion_group!(benches, pages);
criterion_main!(benches);
