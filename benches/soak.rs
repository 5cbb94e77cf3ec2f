//! The daemon's memory over a long run (issue 27): the real `conduct-walker run` walking loopback
//! sandbox agents at a steady rate, no filing, `/metrics` scraped every 15 s and the overview
//! every minute (as Prometheus and an operator would), its RSS sampled from /proc.
//!
//! Run:
//!
//!     cargo bench --bench soak                               # 2 hours, 180 targets every 2 s
//!     SOAK_MINUTES=20 cargo bench --bench soak
//!     SOAK_TARGETS=180 SOAK_AGENTS=3 SOAK_EVERY_SECS=2 SOAK_CONCURRENCY=16 SOAK_SAMPLE_SECS=60
//!
//! Prints one row per sample (minute, records stored, walks/s since the last sample, VmRSS,
//! RssAnon), the growth after the first 10 minutes, and the overview's times (median, p95,
//! slowest; `SOAK_OVERVIEW_SECS` sets how often it is asked for, default 60, as issue 36's
//! page figures were taken with 10). The store (about 7 KB a record) is
//! written under target/soak-bench/ (or `SOAK_DIR`, e.g. a directory on tmpfs so that other
//! jobs' disk writes on a shared machine do not stall the store's syncs) and deleted at the end.

#[path = "support/daemon.rs"]
mod daemon;
use conduct_walker::sandbox::agent::Metadata;
use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use conduct_walker::store::{Store, status};
use daemon::{env_or, get_timed, status_kb};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn main() {
    let minutes = env_or("SOAK_MINUTES", 120);
    let targets = env_or("SOAK_TARGETS", 180);
    let agents_n = env_or("SOAK_AGENTS", 3).max(1);
    let every = env_or("SOAK_EVERY_SECS", 2).max(1);
    let concurrency = env_or("SOAK_CONCURRENCY", 16);
    let sample = Duration::from_secs(env_or("SOAK_SAMPLE_SECS", 60).max(1));
    let overview_every = Duration::from_secs(env_or("SOAK_OVERVIEW_SECS", 60).max(1));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ca = SandboxCa::generate();
    // Passing and failing agents, as in the soak.
    let agents: Vec<SandboxAgent> = (0..agents_n)
        .map(|i| {
            let b = if i % 3 == 2 {
                Behaviour {
                    metadata: Metadata::ServedBy("https://elsewhere.example/mcp".into()),
                    ..Behaviour::default()
                }
            } else {
                Behaviour::default()
            };
            rt.block_on(SandboxAgent::start(&ca, b)).unwrap()
        })
        .collect();
    let dir = std::env::var_os("SOAK_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/soak-bench")
        });
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    ca.write_pem(&dir.join("ca.pem")).unwrap();
    let listen: SocketAddr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut text = format!(
        "[witness]\nname = \"soak\"\nvantage = \"loopback\"\n\n[network]\nextra_ca = [\"ca.pem\"]\n\
         allow_private_network = true\n\n[daemon]\ndatabase = \"walker.db\"\nlisten = \"{listen}\"\n\
         concurrency = {concurrency}\njitter_secs = 0\n\n"
    );
    for t in 0..targets {
        text.push_str(&format!(
            "[[target]]\nname = \"t{t:04}\"\norigin = \"{}\"\nmode = \"a2a\"\nsubmit = false\nschedule = \"*/{every} * * * * *\"\n\n",
            agents[(t % agents_n) as usize].origin()
        ));
    }
    std::fs::write(dir.join("walker.toml"), text).unwrap();
    let mut child = daemon::spawn(&dir.join("walker.toml"));
    let pid = child.id();
    let db = dir.join("walker.db");

    // Scrapes: /metrics every 15 s (the slowest kept), the overview every `overview_every`
    // (every time kept).
    let stop = Arc::new(AtomicBool::new(false));
    let slowest_metrics = Arc::new(AtomicU64::new(0));
    let overview_times = Arc::new(std::sync::Mutex::new(Vec::<Duration>::new()));
    let scraper = {
        let (stop, sm, ot) = (
            stop.clone(),
            slowest_metrics.clone(),
            overview_times.clone(),
        );
        std::thread::spawn(move || {
            let (mut next_metrics, mut next_overview) = (Instant::now(), Instant::now());
            while !stop.load(Ordering::SeqCst) {
                if Instant::now() >= next_metrics {
                    next_metrics += Duration::from_secs(15);
                    if let Ok(t) = get_timed(listen, "/metrics") {
                        sm.fetch_max(t.as_millis() as u64, Ordering::SeqCst);
                    }
                }
                if Instant::now() >= next_overview {
                    next_overview += overview_every;
                    if let Ok(t) = get_timed(listen, "/") {
                        ot.lock().unwrap().push(t);
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };

    println!(
        "soak: {targets} targets over {agents_n} agents every {every} s, concurrency {concurrency}, {minutes} min\n"
    );
    println!("| minute | records | walks/s | VmRSS MiB | RssAnon MiB |");
    println!("|---|---|---|---|---|");
    let records = || {
        Store::open_read_only(&db)
            .ok()
            .and_then(|s| status::newest_record_id(s.connection()).ok().flatten())
            .unwrap_or(0) as u64
    };
    let started = Instant::now();
    let (mut last_n, mut last_t) = (0u64, Instant::now());
    let mut rows: Vec<(f64, u64)> = Vec::new();
    while started.elapsed() < Duration::from_secs(minutes * 60) {
        std::thread::sleep(sample);
        if child.try_wait().unwrap().is_some() {
            panic!("the daemon exited; see {}", dir.display());
        }
        let n = records();
        let rate = (n - last_n) as f64 / last_t.elapsed().as_secs_f64();
        (last_n, last_t) = (n, Instant::now());
        let rss = status_kb(pid, "VmRSS:").unwrap_or(0);
        let anon = status_kb(pid, "RssAnon:").unwrap_or(0);
        let minute = started.elapsed().as_secs_f64() / 60.0;
        rows.push((minute, rss));
        println!(
            "| {minute:.1} | {n} | {rate:.1} | {:.1} | {:.1} |",
            rss as f64 / 1024.0,
            anon as f64 / 1024.0
        );
    }
    stop.store(true, Ordering::SeqCst);
    let _ = scraper.join();
    let hwm = status_kb(pid, "VmHWM:").unwrap_or(0);
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = child.wait();
    let total = records();
    let secs = started.elapsed().as_secs_f64();
    let at10 = rows
        .iter()
        .find(|(m, _)| *m >= 10.0)
        .map(|(_, r)| *r)
        .unwrap_or(0);
    let end = rows.last().map(|(_, r)| *r).unwrap_or(0);
    let after10 = rows.iter().filter(|(m, _)| *m >= 10.0).map(|(_, r)| *r);
    let max_after10 = after10.clone().max().unwrap_or(0);
    println!(
        "\n{total} records in {:.1} min ({:.1} walks/s); VmRSS at 10 min {:.1} MiB, at the end {:.1} MiB \
         (growth after 10 min {:+.1} MiB, highest sample after 10 min {:.1} MiB); VmHWM {:.1} MiB; \
         slowest /metrics {} ms",
        secs / 60.0,
        total as f64 / secs,
        at10 as f64 / 1024.0,
        end as f64 / 1024.0,
        (end as f64 - at10 as f64) / 1024.0,
        max_after10 as f64 / 1024.0,
        hwm as f64 / 1024.0,
        slowest_metrics.load(Ordering::SeqCst),
    );
    let mut times = overview_times.lock().unwrap().clone();
    times.sort();
    let at = |q: f64| {
        times
            .get(((times.len() as f64 * q) as usize).min(times.len().saturating_sub(1)))
            .map_or(0.0, |t| t.as_secs_f64() * 1000.0)
    };
    println!(
        "the overview, asked every {} s: {} answers, median {:.1} ms, p95 {:.1} ms, slowest {:.1} ms",
        overview_every.as_secs(),
        times.len(),
        at(0.5),
        at(0.95),
        at(1.0)
    );
    drop(agents);
    let _ = std::fs::remove_dir_all(&dir);
}
