//! The daemon at scale (issue 17, target 3): the real `conduct-walker run` with 10,000 targets over
//! 500 sandbox agents, every target due in the same second, each agent serving a consent file,
//! records signed and filed with an intake emulator whose caps admit everything.
//!
//!     cargo bench --bench daemon_scale
//!     SCALE_TARGETS=2000 SCALE_AGENTS=100 SCALE_CONCURRENCY=64 SCALE_IDLE_SECS=30 cargo bench --bench daemon_scale
//!     SCALE_ALERTS=1 SCALE_FAIL=1 cargo bench --bench daemon_scale
//!     DAEMON_BENCH_BIN=/path/to/previous/conduct-walker cargo bench --bench daemon_scale
//!
//! `SCALE_ALERTS=1` adds `[alerts]` with a Standard Webhooks channel to a loopback receiver in
//! this process (issue 24: the same run with alerts on and off must keep its walks/s within 5 %);
//! `SCALE_FAIL=1` makes every agent fail its walk and `open_after = 1`, so each target opens an
//! incident and one alert per target is planned in its record's transaction and delivered.
//!
//! The agents and the emulator run in this process, on the same cores as the daemon. Measured:
//! records stored per second (from the first record to the last), outbox rows planned and by
//! state, the daemon's peak RSS (VmHWM), its CPU during the wave and, once the wave has passed,
//! while idle with every target scheduled, and `records verify` over the result.

#[path = "support/daemon.rs"]
mod daemon;
use conduct_walker::intake_emulator::{Emulator, EmulatorConfig, Limits};
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use daemon::{env_or, status_kb};
use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn clk_tck() -> f64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as f64 }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn raise_fd_limit(want: u64) {
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        if lim.rlim_cur < want {
            lim.rlim_cur = want.min(lim.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

fn count(db: &Path, sql: &str) -> u64 {
    let Ok(conn) = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) else {
        return 0;
    };
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn.query_row(sql, [], |r| r.get::<_, i64>(0))
        .map(|n| n as u64)
        .unwrap_or(0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let targets = env_or("SCALE_TARGETS", 10_000) as usize;
    let n_agents = env_or("SCALE_AGENTS", 500) as usize;
    let concurrency = env_or("SCALE_CONCURRENCY", 64);
    let idle_secs = env_or("SCALE_IDLE_SECS", 60);
    let alerts = env_or("SCALE_ALERTS", 0) == 1;
    let fail = env_or("SCALE_FAIL", 0) == 1;
    raise_fd_limit(65_536);
    let dir = tempfile::tempdir().unwrap();
    let ca = SandboxCa::generate();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();

    // The intake: caps high enough that every record the daemon files is accepted.
    // No key_url is signed in, so the emulator never fetches anything.
    let mut emu_cfg = EmulatorConfig::new(
        dir.path().join("intake.db"),
        Transport::new(TransportConfig::new(NetPolicy::new(false))).unwrap(),
    );
    emu_cfg.limits = Limits {
        daily_global: 1_000_000,
        daily_per_ip: 1_000_000,
        daily_per_domain: 1_000_000,
        ..Limits::default()
    };
    let emulator = Emulator::start(emu_cfg, &ca, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();

    let behaviour = Behaviour {
        consent: Some(json!({"listing": "allow", "contact": "bench@example.org"})),
        ..if fail {
            conduct_walker::sandbox::scenario("metadata-missing")
                .unwrap()
                .behaviour
        } else {
            Behaviour::default()
        }
    };
    // The alert receiver: answers 204 to everything, counts what it got.
    let received = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let got = received.clone();
    let receiver = conduct_walker::sandbox::HttpsServer::start(
        &ca,
        conduct_walker::sandbox::handler(move |_req| {
            got.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            conduct_walker::sandbox::Resp::empty(204)
        }),
    )
    .await
    .unwrap();
    std::fs::write(
        dir.path().join("hook.secret"),
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    )
    .unwrap();
    let mut agents = Vec::with_capacity(n_agents);
    for _ in 0..n_agents {
        agents.push(SandboxAgent::start(&ca, behaviour.clone()).await.unwrap());
    }
    conduct_walker::witness::keys::generate_key_file(&dir.path().join("key.pem")).unwrap();
    let listen = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    // Every target fires at the same second, far enough ahead for the daemon to start.
    let fire_at = chrono::Utc::now() + chrono::Duration::seconds(15);
    let schedule = fire_at.format("%S %M %H * * *").to_string();
    let mut text = format!(
        "[witness]\nname = \"scale bench\"\nvantage = \"loopback\"\nkey = \"key.pem\"\nintake = \"{}\"\n\n\
         [network]\nextra_ca = [\"ca.pem\"]\nallow_private_network = true\n\n\
         [daemon]\ndatabase = \"walker.db\"\nlisten = \"{listen}\"\nconcurrency = {concurrency}\n\
         jitter_secs = 0\ndrain_interval_secs = 5\n\n",
        emulator.url()
    );
    for i in 0..targets {
        text.push_str(&format!(
            "[[target]]\nname = \"t{i}\"\norigin = \"{}\"\nmode = \"a2a\"\nschedule = \"{schedule}\"\n\n",
            agents[i % n_agents].origin()
        ));
    }
    if alerts {
        let r = receiver.addr();
        text.push_str(&format!(
            "[alerts]\nallow_hosts = [\"{r}\"]\nopen_after = 1\n\n\
             [[alerts.channel]]\nname = \"hook\"\nkind = \"webhook\"\nurl = \"https://{r}/hook\"\n\
             secret_file = \"hook.secret\"\ndaily_cap = 1000000\n\n"
        ));
    }
    std::fs::write(dir.path().join("walker.toml"), text).unwrap();
    let db = dir.path().join("walker.db");
    let mut child = daemon::spawn(&dir.path().join("walker.toml"));
    let pid = child.id();
    println!("load average at start: {}", loadavg());

    // The wave: poll the store until every target has a record (or nothing moves for 60 s).
    let mut first: Option<(Instant, u64)> = None;
    let mut last_change = Instant::now();
    let mut stored = 0;
    let cpu_before_wave = cpu_ticks(pid);
    let wave_started = loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if chrono::Utc::now() >= fire_at {
            break Instant::now();
        }
    };
    let mut max_rss = 0;
    let done_at = loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        max_rss = max_rss.max(status_kb(pid, "VmRSS:").unwrap_or(0));
        let now = count(&db, "SELECT count(*) FROM records");
        if now != stored {
            if first.is_none() && now > 0 {
                first = Some((Instant::now(), now));
            }
            stored = now;
            last_change = Instant::now();
        }
        if stored >= targets as u64 {
            break Instant::now();
        }
        // Nothing more for 60 s (a record two targets walked alike is stored once): the wave
        // ended at its last record, not at the end of this wait.
        if last_change.elapsed() > Duration::from_secs(60) {
            break last_change;
        }
    };
    let wave_cpu = cpu_ticks(pid) - cpu_before_wave;
    let (first_at, first_n) = first.expect("no record was stored");
    let sustained = (stored - first_n) as f64 / (done_at - first_at).as_secs_f64();
    println!("load average after the wave: {}", loadavg());

    // Let the outbox settle (drain every 5 s), then measure idle CPU with every target scheduled.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let idle_start = cpu_ticks(pid);
    tokio::time::sleep(Duration::from_secs(idle_secs)).await;
    let idle_ticks = cpu_ticks(pid) - idle_start;
    let hwm = status_kb(pid, "VmHWM:").unwrap_or(0);
    println!("load average after idle: {}", loadavg());
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = child.wait();

    let walks_done = count(
        &db,
        "SELECT count(*) FROM daemon_walks WHERE state = 'done'",
    );
    let walks_other = count(
        &db,
        "SELECT count(*) FROM daemon_walks WHERE state <> 'done'",
    );
    let outbox = count(&db, "SELECT count(*) FROM submissions");
    let mut by_state = Vec::new();
    {
        let conn =
            rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        let mut stmt = conn
            .prepare("SELECT state, count(*) FROM submissions GROUP BY state ORDER BY state")
            .unwrap();
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .unwrap();
        for r in rows {
            let (s, n) = r.unwrap();
            by_state.push(format!("{s} {n}"));
        }
    }
    let verify = Command::new(daemon::binary())
        .args(["records", "verify", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let tck = clk_tck();
    println!("| what | value |");
    println!("|---|---|");
    println!("| targets, agents, concurrency | {targets}, {n_agents}, {concurrency} |");
    println!(
        "| alerts | {} (agents {}); alert rows {} ({} delivered), receiver got {} |",
        if alerts { "on" } else { "off" },
        if fail { "failing" } else { "passing" },
        count(&db, "SELECT count(*) FROM alert_outbox"),
        count(
            &db,
            "SELECT count(*) FROM alert_outbox WHERE state = 'delivered'"
        ),
        received.load(std::sync::atomic::Ordering::Relaxed)
    );
    println!("| records stored | {stored} (daemon_walks done {walks_done}, other {walks_other}) |");
    println!(
        "| wave | first record {:.2} s after the fire time, last {:.2} s after |",
        (first_at - wave_started).as_secs_f64(),
        (done_at - wave_started).as_secs_f64()
    );
    println!("| sustained records stored / s (first to last) | {sustained:.0} |");
    println!(
        "| daemon CPU during the wave | {:.2} s ({:.2} ms per record) |",
        wave_cpu as f64 / tck,
        wave_cpu as f64 / tck * 1000.0 / stored.max(1) as f64
    );
    println!(
        "| outbox rows planned | {outbox} ({}) |",
        by_state.join(", ")
    );
    println!("| intake emulator stored | {} |", emulator.stored_count());
    println!(
        "| peak RSS | VmHWM {:.1} MiB (max VmRSS sampled {:.1} MiB) |",
        hwm as f64 / 1024.0,
        max_rss as f64 / 1024.0
    );
    println!(
        "| idle CPU after the wave | {idle_ticks} ticks in {idle_secs} s = {:.3} % of a core |",
        idle_ticks as f64 / tck / idle_secs as f64 * 100.0
    );
    println!(
        "| records verify | exit {} |",
        verify.status.code().unwrap_or(-1)
    );
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}
