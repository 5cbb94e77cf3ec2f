//! `/metrics` and the overview on a long history (issue 27): a synthesised store of 10,000,000
//! fires over 1,000 targets, each with a record by default (small synthetic records: no figure
//! depends on a record's size; with `HISTORY_RECORDS` below the fires, the fires without one
//! declined, skipped, aborted or failed), then
//! 1. in this process, what a scrape and an overview request do (open the store read-only, read,
//!    render), at rest;
//! 2. the real `conduct-walker run` on that store with the 1,000 targets pointed at loopback
//!    sandbox agents: `GET /metrics` and `GET /` over HTTP at rest, then while all 1,000 fire
//!    at once (a wave of walks);
//! 3. "before": the same requests through the recount each did before the summary rows
//!    (migration 9), a few times.
//!
//! Run:
//!
//!     cargo bench --bench history
//!     HISTORY_FIRES=1000000 HISTORY_RECORDS=500000 cargo bench --bench history  # smaller
//!     HISTORY_DB=target/history.db HISTORY_KEEP=1 HISTORY_BEFORE_RUNS=0 cargo bench --bench history
//!                                              # keep and reuse (the "before" phase drops a table)
//!
//! The store is built under target/ (about 12 GB at the default size) and deleted at the end
//! unless HISTORY_KEEP is set.

#[path = "support/daemon.rs"]
mod daemon;
use conduct_walker::daemon::metrics::{Snapshot, render};
use conduct_walker::daemon::runner::RunnerStatus;
use conduct_walker::pages::{Context, render as pages};
use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use conduct_walker::store::{Store, outbox, summary};
use daemon::env_or;
use rusqlite::{Connection, params};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const TARGETS: u64 = 1_000;

/// Fire `round` of every target: one a round, rounds an hour apart ending before now.
fn at(round: u64, rounds: u64) -> String {
    let end = chrono::Utc::now() - chrono::Duration::hours(1);
    (end - chrono::Duration::hours((rounds - round) as i64))
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

fn origin(t: u64) -> String {
    format!("https://a{t:04}.example")
}

/// Build the store: the schema through `Store::open`, then rows through prepared statements,
/// 100,000 per transaction, with the daemon's triggers (facts, summaries) running as they do.
fn build(path: &Path, fires: u64, records: u64) {
    let _ = std::fs::remove_file(path);
    drop(Store::open(path).unwrap());
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -1000000;",
    )
    .unwrap();
    let rounds = fires / TARGETS;
    let mut id: i64 = 0;
    let started = Instant::now();
    let mut chain = [0u8; 32];
    let mut insert_record = conn
        .prepare(
            "INSERT INTO records (id, sha256, canonical, signed, endpoint, origin, walked_at, \
             walker_mode, privacy_mode, verdict_ok, outcome, n_pass, n_total, inserted_at, chain_hash) \
             VALUES (?1, ?2, ?3, 0, ?4, ?5, ?6, 'a2a', 'full', ?7, ?8, ?9, 8, ?6, ?10)",
        )
        .unwrap();
    let mut insert_fire = conn
        .prepare(
            "INSERT INTO daemon_walks (target, origin, endpoint, scheduled_for, started_at, \
             finished_at, state, record_id, record_sha256, submission) \
             VALUES (?1, ?2, NULL, ?3, ?3, ?3, ?4, ?5, NULL, ?6)",
        )
        .unwrap();
    let mut insert_sub = conn
        .prepare(
            "INSERT INTO submissions (record_id, intake_url, lane, identity, endpoint, state, \
             attempts, last_answer, last_status, counted, filed_day, created_at, updated_at) \
             VALUES (?1, 'https://ledger.example/witness', 'address', 'w', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)",
        )
        .unwrap();
    let mut insert_consent = conn
        .prepare(
            "INSERT INTO consent_checks (origin, checked_at, outcome, status) VALUES (?1, ?2, ?3, 200)",
        )
        .unwrap();
    conn.execute_batch("BEGIN").unwrap();
    for round in 0..rounds {
        let when = at(round, rounds);
        for t in 0..TARGETS {
            let i = round * TARGETS + t;
            // Records spread evenly over the fires; a fire without one ended otherwise.
            if (i + 1) * records / fires == i * records / fires {
                insert_fire
                    .execute(params![
                        format!("t{t:04}"),
                        origin(t),
                        when,
                        ["declined", "skipped_overlap", "aborted", "error"][(i % 4) as usize],
                        None::<i64>,
                        None::<&str>
                    ])
                    .unwrap();
                continue;
            }
            id += 1;
            let pass = !(id % 7 == 0 || (t % 10 == 0 && round % 3 == 0));
            let canonical = if pass {
                format!(
                    r#"{{"assertions":[{{"claim":"card_bytes_stable: n0 == n1","result":true}}],"i":{id}}}"#
                )
            } else {
                format!(
                    r#"{{"assertions":[{{"claim":"endpoint_bound: n3 answered","result":false}},{{"claim":"extension_echoed: x","result":{}}}],"i":{id}}}"#,
                    if id % 2 == 0 { "false" } else { "true" }
                )
            };
            let sha: [u8; 32] = Sha256::digest(canonical.as_bytes()).into();
            let mut h = Sha256::new();
            h.update(chain);
            h.update(sha);
            chain = h.finalize().into();
            let sha_hex = hex::encode(sha);
            let endpoint = format!("{}/a2a", origin(t));
            insert_record
                .execute(params![
                    id,
                    sha_hex,
                    canonical.as_bytes(),
                    endpoint,
                    origin(t),
                    when,
                    pass,
                    if pass { "PASS" } else { "FAIL" },
                    if pass { 8 } else { 6 },
                    hex::encode(chain)
                ])
                .unwrap();
            // One in ten records filed (the first of its endpoint's day), the rest kept local;
            // a kept-local submission is what a daemon that files writes for the others.
            let filed = round % 24 == 0;
            insert_fire
                .execute(params![
                    format!("t{t:04}"),
                    origin(t),
                    when,
                    "done",
                    id,
                    if filed { "filed" } else { "kept_local" }
                ])
                .unwrap();
            if filed || id % 10 == 0 {
                insert_sub
                    .execute(params![
                        id,
                        endpoint,
                        if filed { "filed" } else { "kept_local" },
                        filed as i64,
                        filed.then_some("accepted"),
                        filed.then_some(201),
                        filed.then_some(1),
                        filed.then(|| when[..10].to_string()),
                        when
                    ])
                    .unwrap();
            }
        }
        // Consent read once a day per origin (a few decline).
        if round % 24 == 0 {
            for t in 0..TARGETS {
                insert_consent
                    .execute(params![
                        origin(t),
                        when,
                        if t % 250 == 7 { "declined" } else { "absent" }
                    ])
                    .unwrap();
            }
        }
        if round % 100 == 99 {
            conn.execute_batch("COMMIT; BEGIN").unwrap();
            eprint!(
                "\r{} of {fires} fires, {:.0} s",
                (round + 1) * TARGETS,
                started.elapsed().as_secs_f64()
            );
        }
    }
    conn.execute_batch("COMMIT").unwrap();
    drop((insert_record, insert_fire, insert_sub, insert_consent));
    conn.execute_batch("PRAGMA journal_mode = WAL").unwrap();
    drop(conn);
    eprintln!(
        "\nbuilt {fires} fires, {id} records in {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

/// What `/metrics` does per scrape (the runner's figures read as `Pipeline::status` reads them).
fn scrape(path: &Path) -> usize {
    let store = Store::open_read_only(path).unwrap();
    let conn = store.connection();
    let mut snap = Snapshot::read(conn).unwrap();
    snap.runner = Some(runner_status(conn));
    render(&snap).len()
}

fn runner_status(conn: &Connection) -> RunnerStatus {
    RunnerStatus {
        outbox_depth: outbox::depth(conn).unwrap(),
        lanes_used_today: outbox::lanes_used(
            conn,
            &chrono::Utc::now().format("%Y-%m-%d").to_string(),
        )
        .unwrap(),
        submissions_by_answer: outbox::by_answer(conn).unwrap(),
        submissions_by_outcome: outbox::by_outcome(conn).unwrap(),
        lookups_by_result: conduct_walker::store::summary::lookups_by_result(conn).unwrap(),
    }
}

fn overview(path: &Path) -> usize {
    let store = Store::open_read_only(path).unwrap();
    pages::overview(
        store.connection(),
        &Context::default(),
        &(None, false),
        1,
        chrono::Utc::now(),
        "bench",
        // A fresh read of every strip: the first visit's cost (the daemon keeps them after).
        &Default::default(),
    )
    .unwrap()
    .len()
}

/// (median, p95, max) in ms.
fn stats(mut ms: Vec<f64>) -> (f64, f64, f64) {
    ms.sort_by(f64::total_cmp);
    let q = |p: f64| ms[((ms.len() - 1) as f64 * p).round() as usize];
    (q(0.5), q(0.95), *ms.last().unwrap())
}

fn time(n: usize, mut f: impl FnMut() -> usize) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let s = Instant::now();
            std::hint::black_box(f());
            s.elapsed().as_secs_f64() * 1000.0
        })
        .collect()
}

fn row(what: &str, ms: Vec<f64>) {
    let n = ms.len();
    let (med, p95, max) = stats(ms);
    println!("| {what} | {n} | {med:.1} | {p95:.1} | {max:.1} |");
}

fn http_ms(addr: std::net::SocketAddr, path: &str) -> f64 {
    daemon::get_timed(addr, path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .as_secs_f64()
        * 1000.0
}

/// The real daemon on the store, its 1,000 targets due together in `wave_in` seconds.
fn daemon_phase(path: &Path, agents_n: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ca = SandboxCa::generate();
    let agents: Vec<SandboxAgent> = (0..agents_n)
        .map(|_| {
            rt.block_on(SandboxAgent::start(&ca, Behaviour::default()))
                .unwrap()
        })
        .collect();
    let dir = path.parent().unwrap();
    ca.write_pem(&dir.join("ca.pem")).unwrap();
    let listen: std::net::SocketAddr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    // Every target fires at one second of the next minutes but one (a wave of 1,000 walks).
    let fire_at = chrono::Utc::now() + chrono::Duration::seconds(75);
    let schedule = fire_at.format("%S %M %H * * *").to_string();
    let mut text = format!(
        "[witness]\nname = \"history bench\"\nvantage = \"loopback\"\n\n[network]\nextra_ca = [\"ca.pem\"]\n\
         allow_private_network = true\n\n[daemon]\ndatabase = \"{}\"\nlisten = \"{listen}\"\n\
         concurrency = 16\njitter_secs = 0\n\n",
        path.display()
    );
    for t in 0..TARGETS {
        text.push_str(&format!(
            "[[target]]\nname = \"t{t:04}\"\norigin = \"{}\"\nmode = \"a2a\"\nsubmit = false\nschedule = \"{schedule}\"\n\n",
            agents[t as usize % agents.len()].origin()
        ));
    }
    std::fs::write(dir.join("history.toml"), text).unwrap();
    let started = Instant::now();
    let mut child = daemon::spawn(&dir.join("history.toml"));
    while std::net::TcpStream::connect(listen).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the daemon did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("daemon ready in {:.1} s", started.elapsed().as_secs_f64());
    // Fires that ended (two walks of one agent in the same millisecond can be the same bytes,
    // one record: count fires, not records).
    let ended = || {
        let s = Store::open_read_only(path).unwrap();
        summary::fires_by_state(s.connection())
            .unwrap()
            .iter()
            .filter(|(state, _)| state != "running")
            .map(|(_, n)| n)
            .sum::<u64>()
    };
    let before = ended();
    let (mut rest_m, mut rest_o) = (Vec::new(), Vec::new());
    while chrono::Utc::now() < fire_at - chrono::Duration::seconds(5) {
        rest_m.push(http_ms(listen, "/metrics"));
        rest_o.push(http_ms(listen, "/"));
        std::thread::sleep(Duration::from_millis(200));
    }
    while chrono::Utc::now() < fire_at {
        std::thread::sleep(Duration::from_millis(50));
    }
    let wave = Instant::now();
    let (mut wave_m, mut wave_o) = (Vec::new(), Vec::new());
    let mut stored = 0;
    while stored < TARGETS && wave.elapsed() < Duration::from_secs(300) {
        wave_m.push(http_ms(listen, "/metrics"));
        wave_o.push(http_ms(listen, "/"));
        stored = ended() - before;
        std::thread::sleep(Duration::from_millis(100));
    }
    let wave_secs = wave.elapsed().as_secs_f64();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    println!(
        "\nThe daemon over HTTP (1,000 targets over {agents_n} agents, concurrency 16; the wave: {stored} fires ended in {wave_secs:.1} s):\n"
    );
    println!("| request | n | median ms | p95 ms | max ms |");
    println!("|---|---|---|---|---|");
    row("GET /metrics at rest", rest_m);
    row("GET / (overview) at rest", rest_o);
    row("GET /metrics during the wave", wave_m);
    row("GET / (overview) during the wave", wave_o);
}

fn main() {
    let fires = env_or("HISTORY_FIRES", 10_000_000) / TARGETS * TARGETS;
    let records = env_or("HISTORY_RECORDS", 10_000_000).min(fires);
    let path: PathBuf = match std::env::var_os("HISTORY_DB") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/history-bench/walker.db"),
    };
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let reuse = Store::open_read_only(&path)
        .ok()
        .filter(|s| {
            s.count().ok().is_some_and(|n| n >= records)
                && summary::has_summaries(s.connection()).unwrap_or(false)
        })
        .is_some();
    if !reuse {
        build(&path, fires, records);
    }
    let size = std::fs::metadata(&path).unwrap().len();
    println!(
        "store: {records} records, {fires} fires, {TARGETS} targets, {:.2} GB\n",
        size as f64 / 1e9
    );
    // Warm the page cache as a running daemon's store would be.
    scrape(&path);
    overview(&path);
    println!("In this process (open read-only, read, render), at rest:\n");
    println!("| request | n | median ms | p95 ms | max ms |");
    println!("|---|---|---|---|---|");
    row("/metrics (summary rows)", time(50, || scrape(&path)));
    row("overview (summary rows)", time(30, || overview(&path)));

    if std::env::var_os("HISTORY_NO_DAEMON").is_none() {
        daemon_phase(&path, env_or("HISTORY_AGENTS", 8) as usize);
    }

    // Before: every figure recounted, as each scrape and page did before migration 9.
    let n = env_or("HISTORY_BEFORE_RUNS", 3) as usize;
    if n == 0 {
        // Skipped: the store stays reusable (the phase drops a summary table).
        return;
    }
    println!("\nBefore (the recount each request did before migration 9), at rest:\n");
    println!("| request | n | median ms | p95 ms | max ms |");
    println!("|---|---|---|---|---|");
    row(
        "/metrics, a scrape after the first (fires, consent, submissions recounted)",
        time(n, || {
            let store = Store::open_read_only(&path).unwrap();
            let c = store.connection();
            summary::recount::fires_by_state(c).unwrap().len()
                + summary::recount::last_success(c).unwrap().len()
                + summary::recount::latest_consent(c).unwrap().len()
                + summary::recount::submissions(c).unwrap().len()
        }),
    );
    row(
        "/metrics, the first scrape after a start (every record read too)",
        time(1, || {
            let store = Store::open_read_only(&path).unwrap();
            render(&Snapshot::recount(store.connection()).unwrap()).len()
        }),
    );
    {
        // Without the summary tables every reader falls back to the recount.
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("DROP TABLE summary_records").unwrap();
    }
    row("overview", time(n, || overview(&path)));
    if std::env::var_os("HISTORY_KEEP").is_none() {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    } else {
        eprintln!(
            "kept {} (summary_records dropped: rebuild before reuse)",
            path.display()
        );
    }
}
