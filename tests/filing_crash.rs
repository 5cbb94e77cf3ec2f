//! Issue 34's crash test: the real daemon files every walk with an intake emulator that loses
//! one answer in ten (it stores the record, then closes the connection without answering), and
//! is killed with SIGKILL at seeded random moments and restarted, at least twenty times. Then
//! the store and what the emulator received are compared record by record: none lost (every
//! record planned for filing is filed and held by the intake), none phantom (the intake holds
//! nothing the store does not), none sent twice (the emulator counts POSTs per sha256). Answers
//! are slow (250 ms after the write), so kills also land between the intake's write and the
//! walker's record of the answer.
//!
//! `FILING_CRASH_KILLS` (default 20) and `FILING_CRASH_SEED` (default 34) change the run; the
//! figures in BENCHMARKS.md come from `FILING_CRASH_KILLS=100`.

mod daemon_support;

use conduct_walker::intake_emulator::{Emulator, EmulatorConfig, Limits, RunningEmulator};
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::SandboxCa;
use daemon_support::{Daemon, config, free_port, metric, runtime, submitting_agents};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// One answer in ten is lost, as in the report.
const DROP_RATE: f64 = 0.1;
const AGENTS: usize = 6;
/// Each answer leaves this long after the intake stored the record, so that kills land between
/// the intake's write and the walker's record of the answer too (the other unknown outcome).
const ANSWER_DELAY: Duration = Duration::from_millis(250);

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The emulator with caps far above what the run files, so every record can be filed today and
/// the comparison is about lost answers and kills only (the caps' own interplay with lookups
/// is `tests/submission.rs`).
fn start_emulator(
    rt: &tokio::runtime::Runtime,
    ca: &SandboxCa,
    dir: &std::path::Path,
) -> RunningEmulator {
    let mut cfg = EmulatorConfig::new(
        dir.join("intake.db"),
        Transport::new(TransportConfig::new(NetPolicy::new(false))).unwrap(),
    );
    cfg.limits = Limits {
        // Under the walker's sanity bound on stated caps (1,000,000), which it would ignore.
        daily_global: 1_000_000,
        daily_per_ip: 1_000_000,
        ..Limits::default()
    };
    rt.block_on(Emulator::start(cfg, ca, "127.0.0.1:0".parse().unwrap()))
        .unwrap()
}

/// `(sha256, state)` of every submission, and the number of records.
fn submissions(d: &Daemon) -> (Vec<(String, String)>, u64) {
    let store = d.store().expect("the store opens");
    let mut stmt = store
        .connection()
        .prepare("SELECT r.sha256, s.state FROM submissions s JOIN records r ON r.id = s.record_id")
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    (rows, store.count().unwrap())
}

/// A row not settled yet: state, last answer, next attempt, last error.
type Unsettled = (String, Option<String>, Option<String>, Option<String>);

/// The rows not settled yet.
fn unsettled(d: &Daemon) -> Vec<Unsettled> {
    let Some(store) = d.store() else {
        return vec![("no store".into(), None, None, None)];
    };
    let mut stmt = store
        .connection()
        .prepare(
            "SELECT state, last_answer, next_attempt_at, last_error FROM submissions \
             WHERE state IN ('queued', 'sending') ORDER BY id",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Lookups by result, as the store counts them for `/metrics`.
fn lookups(d: &Daemon) -> BTreeMap<String, u64> {
    let store = d.store().unwrap();
    conduct_walker::store::summary::lookups_by_result(store.connection())
        .unwrap()
        .into_iter()
        .map(|(k, n)| (k.as_str().to_string(), n))
        .collect()
}

#[test]
fn killed_daemon_with_lost_answers_files_every_record_once() {
    let kills = env_u64("FILING_CRASH_KILLS", 20).max(20);
    let seed = env_u64("FILING_CRASH_SEED", 34);
    let started = Instant::now();
    let rt = runtime();
    let ca = SandboxCa::generate();
    let state = tempfile::tempdir().unwrap();
    let emulator = start_emulator(&rt, &ca, state.path());
    emulator.drop_answers(DROP_RATE, seed);
    emulator.delay_answers(ANSWER_DELAY);
    // Kept alive (each agent is a server): walked every second each, every walk filed.
    let (_agents, targets) = submitting_agents(&rt, &ca, AGENTS);
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let text = config(listen, 20, &targets).replace(
        "vantage = \"loopback\"\n",
        &format!(
            "vantage = \"loopback\"\nintake = \"{}\"\nfile_extra_walks = true\n",
            emulator.url()
        ),
    );

    let mut moments = rand::rngs::StdRng::seed_from_u64(seed);
    let mut d = Daemon::start(&ca, listen, &text);
    for _ in 0..kills {
        // A moment anywhere in a walk's life: fetching, storing, POSTing, recording the answer,
        // looking up a lost one.
        std::thread::sleep(Duration::from_millis(moments.random_range(150..1500)));
        d.signal("KILL");
        let _ = d.wait_exit(Duration::from_secs(10));
        d = d.restart();
    }

    // No more walks: the last life only drains what the kills and lost answers left (a lost
    // answer is looked up after its backoff, 30 s ± 20 %).
    let yearly = text.replace("schedule = \"* * * * * *\"", "schedule = \"0 0 0 1 1 *\"");
    assert_ne!(yearly, text);
    std::fs::write(d.path("walker.toml"), &yearly).unwrap();
    d.signal("KILL");
    let _ = d.wait_exit(Duration::from_secs(10));
    let mut d = d.restart();
    let deadline = Instant::now() + Duration::from_secs(180);
    while !unsettled(&d).is_empty() {
        assert!(
            Instant::now() < deadline,
            "not settled: {:#?}\n{}",
            unsettled(&d),
            d.log()
                .lines()
                .rev()
                .take(40)
                .collect::<Vec<_>>()
                .join("\n")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // `/metrics` counts the lookups by result as the store does.
    let scraped: BTreeMap<String, u64> = metric(
        &d.get_text("/metrics"),
        "conduct_walker_intake_lookups_total",
    )
    .into_iter()
    .map(|(labels, v)| (labels, v as u64))
    .collect();
    let stored: BTreeMap<String, u64> = lookups(&d)
        .into_iter()
        .map(|(result, n)| (format!("result=\"{result}\""), n))
        .collect();
    assert_eq!(scraped, stored);
    d.stop();

    let (subs, records) = submissions(&d);
    let posts = emulator.posts_per_sha();
    let by_result = lookups(&d);
    let states: BTreeMap<&str, usize> = subs.iter().fold(BTreeMap::new(), |mut m, (_, s)| {
        *m.entry(s.as_str()).or_default() += 1;
        m
    });
    // Every record was planned for filing (file_extra_walks), and every plan is filed: 0 lost.
    assert_eq!(subs.len() as u64, records, "{states:?}");
    assert_eq!(states.get("filed").copied(), Some(subs.len()), "{states:?}");
    for (sha, _) in &subs {
        assert!(
            emulator.stored(sha).is_some(),
            "{sha}: filed here, not at the intake"
        );
    }
    // The intake holds exactly those: 0 phantom.
    assert_eq!(emulator.stored_count(), subs.len() as u64);
    let ours: std::collections::BTreeSet<&str> = subs.iter().map(|(s, _)| s.as_str()).collect();
    for sha in posts.keys() {
        assert!(
            ours.contains(sha.as_str()),
            "{sha}: POSTed, but not a record of the store"
        );
    }
    // Each record POSTed exactly once, lost answers and kills included: 0 sent twice.
    let twice: Vec<(&String, &u64)> = posts.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "sent more than once: {twice:?}");
    assert_eq!(
        posts.len(),
        subs.len(),
        "a filed record the intake was never sent?"
    );
    // Every lost answer was settled by a lookup that found the record (kills add more).
    let dropped = emulator.dropped_answers();
    assert!(dropped > 0, "no answer was lost: the run tested nothing");
    assert!(
        by_result["found"] >= dropped,
        "{dropped} answers lost, lookups {by_result:?}"
    );
    eprintln!(
        "filing crash test: {kills} kills (seed {seed}), {records} records, {} POSTs, {dropped} answers dropped, \
         resends {}, lookups {by_result:?}, {:.1} s",
        posts.values().sum::<u64>(),
        posts.values().map(|n| n - 1).sum::<u64>(),
        started.elapsed().as_secs_f64()
    );
}
