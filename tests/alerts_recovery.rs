//! Issue 35, the delivery task against a real store and a loopback HTTPS receiver:
//!
//! - when a channel's receiver answers again, everything queued for it goes out at once, in the
//!   order it was planned, instead of each row waiting out its own backoff (the clock is held
//!   still: nothing is due by time alone);
//! - the alert timers' transaction waits for another writer of the store, as every writer
//!   does, instead of failing with "database is locked" (and takes no lock when it finds
//!   nothing to write).

use chrono::{DateTime, TimeDelta, Utc};
use conduct_walker::alerts::config::{self, AlertsSection};
use conduct_walker::alerts::deliver::{self, AlertMetrics, Deliverer};
use conduct_walker::alerts::incident::{AssertionResult, Observation, WalkResult};
use conduct_walker::alerts::outbox;
use conduct_walker::clock::{Clock, ManualClock};
use conduct_walker::sandbox::SandboxCa;
use conduct_walker::store::Store;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// A loopback HTTPS receiver answering 503 while `up` is false and 204 once it is true; it
/// keeps the `webhook-id` of every request it answered 204, in the order they came.
struct Receiver {
    port: u16,
    up: Arc<AtomicBool>,
    delivered: Arc<Mutex<Vec<String>>>,
    requests: Arc<Mutex<usize>>,
}

async fn receiver(ca: &SandboxCa) -> Receiver {
    let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config(&[]));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let r = Receiver {
        port: listener.local_addr().unwrap().port(),
        up: Arc::new(AtomicBool::new(false)),
        delivered: Arc::default(),
        requests: Arc::default(),
    };
    let (up, delivered, requests) = (r.up.clone(), r.delivered.clone(), r.requests.clone());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, up, delivered, requests) = (
                acceptor.clone(),
                up.clone(),
                delivered.clone(),
                requests.clone(),
            );
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                // The head, then as much body as it announces.
                let (head, length) = loop {
                    let Ok(n) = tls.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                        let length: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .map(|v| v.trim().parse().unwrap())
                            .unwrap_or(0);
                        break (head, end + 4 + length);
                    }
                };
                while buf.len() < length {
                    match tls.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let id = head
                    .lines()
                    .find_map(|l| l.strip_prefix("webhook-id:"))
                    .unwrap_or("")
                    .trim()
                    .to_string();
                *requests.lock().unwrap() += 1;
                let answer: &[u8] = if up.load(Ordering::SeqCst) {
                    delivered.lock().unwrap().push(id);
                    b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n"
                } else {
                    b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                };
                let _ = tls.write_all(answer).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    r
}

fn cfg(dir: &Path, port: u16) -> conduct_walker::alerts::config::AlertsConfig {
    std::fs::write(dir.join("s"), SECRET).unwrap();
    let section: AlertsSection = toml::from_str(&format!(
        r#"
open_after = 1
min_interval_secs = 0
allow_hosts = ["127.0.0.1:{port}"]
[[channel]]
name = "hook"
kind = "webhook"
url = "https://127.0.0.1:{port}/hook"
secret_file = "s"
daily_cap = 1000
"#
    ))
    .unwrap();
    let names: Vec<String> = (0..40).map(|i| format!("t{i:02}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    config::validate(&section, dir, &names).unwrap()
}

fn failing_walk(at: DateTime<Utc>, n: u32) -> Observation {
    Observation {
        at,
        record_sha256: Some(format!("{n:064x}")),
        origin: Some("https://agent.example".into()),
        endpoint: Some("https://agent.example/a2a".into()),
        result: WalkResult::Conduct {
            ok: false,
            n_pass: 0,
            n_total: 1,
            assertions: vec![AssertionResult {
                name: "extension_echoed".into(),
                claim: "the agent echoes the extension".into(),
                result: Some(false),
                note: None,
            }],
        },
    }
}

fn deliverer(
    cfg: conduct_walker::alerts::config::AlertsConfig,
    ca_pem: &Path,
    db: &Path,
    clock: Arc<ManualClock>,
) -> Arc<Deliverer> {
    let roots = conduct_walker::net::load_pem_certs(ca_pem).unwrap();
    let deliver::Delivery { senders, transport } = deliver::delivery(&cfg, roots).unwrap();
    Arc::new(Deliverer {
        cfg: Arc::new(cfg),
        senders: senders
            .into_iter()
            .map(|s| (s.channel.name.clone(), s))
            .collect(),
        transport,
        store: Arc::new(Mutex::new(Store::open(db).unwrap())),
        clock,
        metrics: Arc::new(AlertMetrics::default()),
        in_flight: Arc::default(),
        slots: Arc::new(tokio::sync::Semaphore::new(deliver::CONCURRENCY)),
        store_health: None,
    })
}

/// (alert id, state, attempts, next attempt) of every row, in the order planned.
fn rows(store: &Store) -> Vec<(String, String, i64, Option<String>)> {
    let mut stmt = store
        .connection()
        .prepare("SELECT alert_id, state, attempts, next_attempt_at FROM alert_outbox ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Passes until `done` says so (the sends run in their own tasks), at most 30 s.
async fn passes_until(d: &Arc<Deliverer>, done: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < until, "timed out");
        d.pass().await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_answering_again_gets_everything_queued_at_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let ca = SandboxCa::generate();
    let ca_pem = dir.path().join("ca.pem");
    ca.write_pem(&ca_pem).unwrap();
    let recv = receiver(&ca).await;
    let c = cfg(dir.path(), recv.port);
    let db = dir.path().join("walker.db");
    let store = Store::open(&db).unwrap();
    let t0: DateTime<Utc> = "2026-12-01T10:00:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(t0));
    let d = deliverer(c.clone(), &ca_pem, &db, clock.clone());

    // While the receiver is down, 40 incidents open, one a minute; each of their alerts is
    // tried once as it is planned and backs off (30 s to several minutes, by its attempts).
    const N: usize = 40;
    for i in 0..N {
        clock.set(t0 + TimeDelta::minutes(i as i64));
        let tx = store.connection().unchecked_transaction().unwrap();
        outbox::observe(
            &tx,
            &c,
            &format!("t{i:02}"),
            &failing_walk(clock.now(), i as u32),
        )
        .unwrap();
        tx.commit().unwrap();
        passes_until(&d, || rows(&store).iter().all(|r| r.2 >= 1)).await;
    }
    let queued = rows(&store);
    assert_eq!(queued.len(), N);
    assert!(
        queued.iter().all(|r| r.1 == "queued" && r.2 >= 1),
        "{queued:?}"
    );
    let failed_requests = *recv.requests.lock().unwrap();
    // The rows wait for different times: the one due first is what finds the receiver back.
    let first_due = queued.iter().filter_map(|r| r.3.clone()).min().unwrap();
    let first: DateTime<Utc> = first_due.parse().unwrap();
    let later_due = queued
        .iter()
        .filter(|r| r.3.as_deref() > Some(&first_due))
        .count();
    assert!(
        later_due >= N - 2,
        "the rest back off past the first: {queued:?}"
    );

    recv.up.store(true, Ordering::SeqCst);
    clock.set(first);
    let held_still = clock.now();
    passes_until(&d, || rows(&store).iter().all(|r| r.1 == "delivered")).await;
    assert_eq!(clock.now(), held_still, "no row waited out its own backoff");

    // One request each once it was back: the first due, then every other in planned order.
    let delivered = recv.delivered.lock().unwrap().clone();
    assert_eq!(
        *recv.requests.lock().unwrap() - failed_requests,
        N,
        "one send each"
    );
    let first_id = &queued
        .iter()
        .find(|r| r.3.as_deref() == Some(&first_due))
        .unwrap()
        .0;
    assert_eq!(&delivered[0], first_id);
    let rest: Vec<&String> = queued
        .iter()
        .map(|r| &r.0)
        .filter(|id| *id != first_id)
        .collect();
    let rest_delivered: Vec<&String> = delivered[1..].iter().collect();
    assert_eq!(rest_delivered, rest, "in the order planned");
    assert_eq!(d.metrics.delivered.load(Ordering::Relaxed), N as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_alert_timers_wait_for_another_writer_instead_of_failing() {
    let dir = tempfile::tempdir().unwrap();
    let ca = SandboxCa::generate();
    let ca_pem = dir.path().join("ca.pem");
    ca.write_pem(&ca_pem).unwrap();
    let c = cfg(dir.path(), 9);
    let db = dir.path().join("walker.db");
    drop(Store::open(&db).unwrap());
    let t0: DateTime<Utc> = "2026-12-01T10:00:00Z".parse().unwrap();
    let d = deliverer(c, &ca_pem, &db, Arc::new(ManualClock::new(t0)));

    // Another connection holds the write lock for a while (the records' writer committing).
    let hold = |ms: u64| {
        let other = rusqlite::Connection::open(&db).unwrap();
        other
            .execute_batch(
                "BEGIN IMMEDIATE; INSERT OR REPLACE INTO alert_health (name, state) VALUES ('other', 'x');",
            )
            .unwrap();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(ms));
            other.execute_batch("COMMIT").unwrap();
        })
    };

    // Why it matters: a DEFERRED transaction that has read cannot wait for the lock; its first
    // write is refused at once, whatever the busy timeout.
    let mine = Store::open(&db).unwrap();
    let h = hold(800);
    std::thread::sleep(Duration::from_millis(100));
    let tx = mine.connection().unchecked_transaction().unwrap();
    let _: i64 = tx
        .query_row("SELECT count(*) FROM alert_outbox", [], |r| r.get(0))
        .unwrap();
    let refused = tx.execute(
        "INSERT INTO alert_health (name, state) VALUES ('deferred', 'x')",
        [],
    );
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("database is locked")),
        "{refused:?}"
    );
    drop(tx);
    h.join().unwrap();

    // The timers (their first look writes the refusal and finding watermarks) wait for it.
    let h = hold(800);
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    d.plan_timers(true)
        .await
        .expect("the timers wait for the lock");
    assert!(started.elapsed() >= Duration::from_millis(500), "it waited");
    h.join().unwrap();
    let marks: i64 = mine
        .connection()
        .query_row(
            "SELECT count(*) FROM alert_health WHERE name IN ('refused_since', 'ledger_findings_after')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(marks, 2);

    // A look that finds nothing to write takes no lock: it does not wait for the writer (and
    // so never makes the records' writer wait for it either).
    let h = hold(800);
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    assert_eq!(d.plan_timers(true).await.unwrap(), 0);
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    h.join().unwrap();
}
