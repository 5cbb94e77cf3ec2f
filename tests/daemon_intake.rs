//! The daemon with ten sandbox agents and the intake emulator on an accelerated schedule: every
//! endpoint's first walk of the day is filed exactly once, later walks are kept local, and
//! `/metrics` reports the intake's answers and the lane as the store does.

mod daemon_support;

use conduct_walker::sandbox::SandboxCa;
use conduct_walker::sandbox::{Behaviour, SandboxAgent};
use conduct_walker::store::ListFilter;
use daemon_support::{
    Daemon, any_port, config, free_port, metric, runtime, start_intake, submitting_agents, target,
};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// A daemon config filing with `intake_url`; `witness_extra` adds `[witness]` lines.
fn filing_config(
    listen: SocketAddr,
    targets: &str,
    intake_url: &str,
    witness_extra: &str,
) -> String {
    config(listen, 20, targets).replace(
        "vantage = \"loopback\"\n",
        &format!("vantage = \"loopback\"\nintake = \"{intake_url}\"\n{witness_extra}"),
    )
}

#[test]
fn ten_agents_on_an_accelerated_schedule_file_exactly_the_expected_records() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let state = tempfile::tempdir().unwrap();
    // The address lane's 5 a day would defer half of the ten: raise it, so this test is about
    // "once per endpoint per day", not about the cap.
    let emulator = start_intake(&rt, &ca, state.path(), any_port(), Some(100));
    let (agents, targets) = submitting_agents(&rt, &ca, 10);
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let text = filing_config(listen, &targets, &emulator.url(), "");
    let mut d = Daemon::start(&ca, listen, &text);
    d.wait_for("two walks of every agent", Duration::from_secs(90), |d| {
        let walks = d.walks();
        (0..10).all(|i| {
            walks
                .iter()
                .filter(|w| w.target == format!("agent{i}") && w.state == "done")
                .count()
                >= 2
        })
    });
    let m = d.get_text("/metrics");
    d.stop();

    let store = d.store().unwrap();
    let rows = store.list(&ListFilter::default()).unwrap();
    let mut states: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    {
        let conn = store.connection();
        let mut stmt = conn
            .prepare(
                "SELECT s.state, r.sha256, r.endpoint FROM submissions s \
                 JOIN records r ON r.id = s.record_id ORDER BY s.id",
            )
            .unwrap();
        let it = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?)))
            .unwrap();
        for row in it {
            let (state, sha, endpoint) = row.unwrap();
            states.entry(state).or_default().push((sha, endpoint));
        }
    }
    let filed = states.get("filed").cloned().unwrap_or_default();
    // Exactly one filed record per endpoint: the first walk of each agent today.
    assert_eq!(filed.len(), 10, "{states:?}");
    let endpoints: std::collections::BTreeSet<_> = filed.iter().map(|(_, e)| e.clone()).collect();
    assert_eq!(endpoints.len(), 10);
    for (i, a) in agents.iter().enumerate() {
        let first = rows
            .iter()
            .find(|r| r.meta.origin == a.origin())
            .unwrap_or_else(|| panic!("agent{i} has no record"));
        assert!(
            filed.iter().any(|(sha, _)| *sha == first.sha256),
            "agent{i}'s first record was not the one filed"
        );
    }
    // The intake holds exactly those ten, once each.
    assert_eq!(emulator.stored_count(), 10);
    for (sha, _) in &filed {
        assert!(emulator.stored(sha).is_some(), "{sha} not at the intake");
    }
    // Every other record stayed local: nothing else was queued, refused or lost.
    let kept = states.get("kept_local").map(Vec::len).unwrap_or(0);
    assert_eq!(filed.len() + kept, rows.len(), "{states:?}");
    assert_eq!(states.len(), if kept > 0 { 2 } else { 1 }, "{states:?}");

    // /metrics (scraped while running) agrees with the intake: no more than ten accepted.
    let accepted: f64 = metric(&m, "conduct_walker_submissions_total")
        .iter()
        .filter(|(l, _)| l.contains("accepted"))
        .map(|(_, v)| v)
        .sum();
    assert!((1.0..=10.0).contains(&accepted), "{m}");
    // The same submissions by where they stand (the outcome every face shows): every outcome
    // listed, and the filed ones are the accepted ones.
    let by_outcome = metric(&m, "conduct_walker_submissions");
    assert_eq!(by_outcome.len(), 10, "{m}");
    let filed: f64 = by_outcome
        .iter()
        .filter(|(l, _)| l.contains("\"filed_counted\"") || l.contains("\"filed_not_counted\""))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(filed, accepted, "{m}");
    let lane: f64 = metric(&m, "conduct_walker_lane_used_today")
        .iter()
        .map(|(_, v)| v)
        .sum();
    assert_eq!(lane, accepted, "{m}");
}

#[test]
fn kill_9_mid_run_then_restart_files_each_record_exactly_once() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let state = tempfile::tempdir().unwrap();
    let emulator = start_intake(&rt, &ca, state.path(), any_port(), Some(100));
    // Kept alive (each agent is a server) though not looked at again.
    let (_agents, mut targets) = submitting_agents(&rt, &ca, 3);
    // A fourth agent trickles its first card (one byte every 20 ms, so the fetch runs into the
    // 10 s request deadline): its first walk is surely still running when the kill lands. A fast
    // walk seen running may finish between the look and the kill.
    let slow = rt
        .block_on(SandboxAgent::start(
            &ca,
            Behaviour {
                card_trickle: Some(Duration::from_millis(20)),
                ..Behaviour::default()
            },
        ))
        .unwrap();
    targets.push_str(
        &target("slow", &slow.origin(), "", "* * * * * *")
            .replace("submit = false", "submit = true"),
    );
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let text = filing_config(
        listen,
        &targets,
        &emulator.url(),
        "file_extra_walks = true\n",
    );
    // Every walk is filed (file_extra_walks), so the kill lands while filing is going on.
    let mut d = Daemon::start(&ca, listen, &text);
    d.wait_for(
        "a few walks, the slow one in flight",
        Duration::from_secs(60),
        |d| {
            let w = d.walks();
            w.iter().filter(|w| w.state == "done").count() >= 3
                && w.iter().any(|w| w.target == "slow" && w.state == "running")
        },
    );
    d.signal("KILL");
    let _ = d.wait_exit(Duration::from_secs(10));
    // Restart on the same store: leftovers are aborted, the outbox is drained.
    let mut d = d.restart();
    d.wait_for(
        "the outbox to drain after more walks",
        Duration::from_secs(60),
        |d| {
            let Some(s) = d.store() else { return false };
            let pending: i64 = s
                .connection()
                .query_row(
                    "SELECT count(*) FROM submissions WHERE state IN ('queued', 'sending')",
                    [],
                    |r| r.get(0),
                )
                .unwrap_or(1);
            pending == 0 && d.walks().iter().filter(|w| w.state == "done").count() >= 6
        },
    );
    d.stop();
    let store = d.store().unwrap();
    let mut stmt = store
        .connection()
        .prepare("SELECT r.sha256, s.state FROM submissions s JOIN records r ON r.id = s.record_id")
        .unwrap();
    let subs: Vec<(String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let filed: Vec<_> = subs.iter().filter(|(_, s)| s == "filed").collect();
    assert_eq!(filed.len(), subs.len(), "{subs:?}");
    assert_eq!(subs.len() as u64, store.count().unwrap());
    // Each record is at the intake exactly once (the intake dedupes by sha; its count is records).
    assert_eq!(emulator.stored_count(), filed.len() as u64);
    for (sha, _) in filed {
        assert!(emulator.stored(sha).is_some());
    }
    assert!(
        d.walks().iter().any(|w| w.target == "slow"
            && w.state == "aborted"
            && w.detail.as_deref().unwrap_or("").contains("found running")),
        "the walk cut by kill -9 is recorded as aborted"
    );
}

#[test]
fn intake_down_then_up_files_everything_queued_once() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let state = tempfile::tempdir().unwrap();
    // The intake's address is known, but nothing listens there yet.
    let intake_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let intake_url = format!("https://{intake_addr}/witness");
    // Kept alive (each agent is a server) though not looked at again.
    let (_agents, targets) = submitting_agents(&rt, &ca, 3);
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let text = filing_config(listen, &targets, &intake_url, "");
    let mut d = Daemon::start(&ca, listen, &text);
    d.wait_for("a walk of every agent", Duration::from_secs(60), |d| {
        let walks = d.walks();
        (0..3).all(|i| {
            walks
                .iter()
                .any(|w| w.target == format!("agent{i}") && w.state == "done")
        })
    });
    // While the intake is down, the first record of each agent waits in the outbox.
    {
        let store = d.store().unwrap();
        let queued: i64 = store
            .connection()
            .query_row(
                "SELECT count(*) FROM submissions WHERE state = 'queued'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(queued, 3, "{}", d.log());
    }
    let emulator = start_intake(&rt, &ca, state.path(), intake_addr, None);
    // The retry waits out its backoff (30 s ± 20 %), then the drain files each record.
    d.wait_for("the queued records filed", Duration::from_secs(120), |_| {
        emulator.stored_count() >= 3
    });
    d.stop();
    let store = d.store().unwrap();
    let (filed, queued): (i64, i64) = store
        .connection()
        .query_row(
            "SELECT sum(state = 'filed'), sum(state IN ('queued', 'sending')) FROM submissions",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((filed, queued), (3, 0));
    assert_eq!(emulator.stored_count(), 3, "each record filed once");
}
