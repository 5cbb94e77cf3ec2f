//! The overview page served while the store grows as the soak's daemon grows it (issue 36): the
//! `benches/soak.rs` load (180 targets, a fire each every 2 s: 90 signed records a second in
//! group commits) written by a thread of this process into a store that already holds
//! `OVERVIEW_RECORDS` fires (default 50,000), while the pages' router (the daemon's: strips and
//! verification kept between requests) is asked for `/` every `OVERVIEW_EVERY_SECS` over
//! loopback HTTP. Prints each request's time, then the median and the slowest.
//!
//!     cargo bench --bench overview_load
//!     OVERVIEW_SAMPLES=30 OVERVIEW_EVERY_SECS=5 cargo test --bench overview_load   # dev build
//!
//! Cheaper than the soak (no walks, so it measures the page rather than the machine's walking),
//! and what it writes is what the daemon writes: `daemon_walks` rows begun and finished around
//! each record.

#[path = "support/daemon.rs"]
mod daemon;
#[path = "../tests/store_support/mod.rs"]
mod store_support;

use conduct_walker::pages::{Context, PagesState, router};
use conduct_walker::store::Store;
use conduct_walker::store::daemon_walks::{WalkEnd, WalkStart, begin_walk, finish_walk};
use daemon::{env_or, get_timed};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const TARGETS: u64 = 180;
/// Fires a second: 180 targets every 2 s.
const PER_SEC: u64 = 90;

/// One second of the daemon's writes: `n` fires, each begun, its record stored and ended, in
/// one transaction (the daemon's group commit).
fn write_fires(store: &Store, key: &ed25519_dalek::SigningKey, clock: &AtomicU64, n: u64) {
    let conn = store.connection();
    let mut recs = Vec::with_capacity(n as usize);
    let mut fires = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let i = clock.fetch_add(1, Ordering::SeqCst);
        let t = i % TARGETS;
        let at = store_support::walked_at(i / 45);
        let origin = format!("https://agent{}.example", t % 3);
        let endpoint = format!("{origin}/a2a");
        let v = store_support::record_value(i, &origin, &endpoint, i % 3 != 2, &at);
        recs.push(store_support::signed(
            conduct_walker::canonical::to_bytes(&v),
            key,
        ));
        fires.push((format!("t{t:04}"), origin, at));
    }
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    let first: i64 = conn
        .query_row("SELECT coalesce(max(id), 0) + 1 FROM records", [], |r| {
            r.get(0)
        })
        .unwrap();
    let ids: Vec<i64> = fires
        .iter()
        .map(|(target, origin, at)| {
            begin_walk(
                conn,
                &WalkStart {
                    target,
                    origin,
                    endpoint: None,
                    scheduled_for: at,
                    now: at,
                },
            )
            .unwrap()
        })
        .collect();
    conn.execute_batch("COMMIT").unwrap();
    store.insert_many(&recs).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    for (k, ((walk, (_, _, at)), rec)) in ids.iter().zip(&fires).zip(&recs).enumerate() {
        let sha = conduct_walker::digest::sha256_hex(&rec.canonical);
        finish_walk(
            conn,
            *walk,
            &WalkEnd {
                state: "done",
                record_id: Some(first + k as i64),
                record_sha256: Some(&sha),
                submission: None,
                detail: None,
            },
            at,
        )
        .unwrap();
    }
    conn.execute_batch("COMMIT").unwrap();
}

fn main() {
    let records = env_or("OVERVIEW_RECORDS", 50_000);
    let samples = env_or("OVERVIEW_SAMPLES", 20) as usize;
    let every = Duration::from_secs(env_or("OVERVIEW_EVERY_SECS", 5).max(1));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("walker.db");
    let key = store_support::key(9);
    let clock = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    {
        let store = Store::open(&db).unwrap();
        for _ in 0..records.div_ceil(1000) {
            write_fires(&store, &key, &clock, 1000);
        }
    }
    eprintln!(
        "store of {} fires built in {:.1} s",
        clock.load(Ordering::SeqCst),
        started.elapsed().as_secs_f64()
    );

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, key, clock, stop) = (db.clone(), key.clone(), clock.clone(), stop.clone());
        std::thread::spawn(move || {
            let store = Store::open(&db).unwrap();
            let mut next = Instant::now();
            while !stop.load(Ordering::SeqCst) {
                write_fires(&store, &key, &clock, PER_SEC);
                next += Duration::from_secs(1);
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
        })
    };

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let state = PagesState::new(db.clone(), Arc::new(Context::default), "bench");
    rt.spawn(async move { axum::serve(listener, router(state)).await });

    let mut times = Vec::with_capacity(samples);
    for n in 0..samples {
        std::thread::sleep(every);
        let t = get_timed(addr, "/").unwrap();
        println!(
            "request {n}: {:.1} ms ({} fires stored)",
            t.as_secs_f64() * 1e3,
            clock.load(Ordering::SeqCst)
        );
        times.push(t);
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "overview under load: median {:.1} ms, slowest {:.1} ms, fastest {:.1} ms over {samples} \
         requests (the first is a cold strip cache)",
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1]),
        ms(times[0])
    );
}
