//! The daemon with an injected clock: a full lane defers the record to the next UTC day, and the
//! outbox files it after midnight (issue 7; spec §6.1 "UTC day" is the intake's, not walked_at).

use conduct_walker::clock::{Clock, ManualClock};
use conduct_walker::intake_emulator::{Emulator, EmulatorConfig, Limits};
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use std::sync::Arc;
use std::time::Duration;

async fn until<F: Fn() -> bool>(what: &str, limit: Duration, f: F) {
    let started = std::time::Instant::now();
    while !f() {
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn count(db: &std::path::Path, sql: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(sql, [], |r| r.get(0)).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_lane_defers_to_the_next_utc_day_and_is_filed_after_midnight() {
    let clock = Arc::new(ManualClock::new("2026-11-30T23:59:49Z".parse().unwrap()));
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    let emulator = Emulator::start(
        EmulatorConfig {
            limits: Limits {
                daily_per_ip: 2,
                ..Limits::default()
            },
            clock: clock.clone(),
            ..EmulatorConfig::new(
                dir.path().join("intake.db"),
                Transport::new(TransportConfig::new(NetPolicy::new(false))).unwrap(),
            )
        },
        &ca,
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let mut agents = Vec::new();
    for _ in 0..3 {
        agents.push(
            SandboxAgent::start(&ca, Behaviour::default())
                .await
                .unwrap(),
        );
    }
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let mut text = format!(
        "[witness]\nname = \"lane test\"\nvantage = \"loopback\"\nintake = \"{}\"\n\n[network]\n\
         extra_ca = [\"ca.pem\"]\nallow_private_network = true\n\n[daemon]\ndatabase = \"walker.db\"\n\
         concurrency = 3\njitter_secs = 0\ndrain_interval_secs = 1\nshutdown_grace_secs = 10\n\n",
        emulator.url()
    );
    // Each target fires once a day, at 23:59:50 UTC.
    for (i, a) in agents.iter().enumerate() {
        text.push_str(&format!(
            "[[target]]\nname = \"t{i}\"\norigin = \"{}\"\nmode = \"a2a\"\nsubmit = true\nschedule = \"50 59 23 * * *\"\n\n",
            a.origin()
        ));
    }
    let config = dir.path().join("walker.toml");
    std::fs::write(&config, text).unwrap();
    let db = dir.path().join("walker.db");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let daemon_clock: Arc<dyn Clock> = clock.clone();
    let daemon = tokio::spawn(async move {
        conduct_walker::daemon::run_with(&config, daemon_clock, async {
            let _ = stop_rx.await;
        })
        .await
    });

    // 23:59:50: the three walks fire; the address lane (2 a day) takes two, the third waits.
    tokio::time::sleep(Duration::from_millis(300)).await;
    clock.set("2026-11-30T23:59:50Z".parse().unwrap());
    until("three stored records with settled submissions", Duration::from_secs(60), || {
        count(&db, "SELECT count(*) FROM submissions WHERE state IN ('filed', 'queued') AND last_answer IS NOT NULL") == 3
    })
    .await;
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM submissions WHERE state = 'filed'"
        ),
        2
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM submissions WHERE state = 'queued'"
        ),
        1
    );
    assert_eq!(
        emulator.stored_count(),
        2,
        "the client never sends what the lane cannot take"
    );
    // Drains before midnight leave it waiting.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(emulator.stored_count(), 2);

    // After midnight the drain files it, once.
    clock.set("2026-12-01T00:00:01Z".parse().unwrap());
    // Wait for the walker to have recorded the intake's answer (the intake stores first).
    until("the deferred record filed", Duration::from_secs(30), || {
        count(
            &db,
            "SELECT count(*) FROM submissions WHERE state = 'filed' AND filed_day = '2026-12-01'",
        ) == 1
    })
    .await;
    assert_eq!(emulator.stored_count(), 3, "filed once");
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM submissions WHERE state = 'filed'"
        ),
        3
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM records"),
        3,
        "no extra walks: the schedule is daily"
    );

    stop_tx.send(()).unwrap();
    daemon.await.unwrap().unwrap();
}
