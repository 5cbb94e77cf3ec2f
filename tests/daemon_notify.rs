//! §11.5 notify end to end (spec witness-pool.md §7): the daemon walks loopback HTTPS agents on
//! a schedule (an injected clock), reads each origin's consent file, and POSTs its summary to a
//! loopback HTTPS receiver the file names: once per endpoint per hour across a restart, never
//! to an IP literal, never with `[witness] notify = "never"`.

use conduct_walker::clock::{Clock, ManualClock};
use conduct_walker::sandbox::{Behaviour, HttpsServer, Resp, SandboxAgent, SandboxCa, handler};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

async fn until<F: Fn() -> bool>(what: &str, limit: Duration, f: F) {
    let started = std::time::Instant::now();
    while !f() {
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn count(db: &Path, sql: &str) -> i64 {
    let Ok(conn) = rusqlite::Connection::open(db) else {
        return 0;
    };
    conn.query_row(sql, [], |r| r.get(0)).unwrap_or(0)
}

/// `notifications` rows for the endpoints under `origin`, oldest first: their statuses.
fn statuses(db: &Path, origin: &str) -> Vec<Value> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT status FROM notifications WHERE endpoint LIKE ?1 || '%' ORDER BY id")
        .unwrap();
    stmt.query_map([origin], |r| r.get::<_, Option<String>>(0))
        .unwrap()
        .map(|s| serde_json::from_str(&s.unwrap().unwrap_or_default()).unwrap_or(Value::Null))
        .collect()
}

/// A loopback HTTPS receiver that keeps every request's body and answers 204.
async fn receiver(ca: &SandboxCa) -> (HttpsServer, Arc<Mutex<Vec<(String, Vec<u8>)>>>) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let log = got.clone();
    let server = HttpsServer::start(
        ca,
        handler(move |req| {
            let ct = req.header("content-type").unwrap_or_default().to_string();
            log.lock().unwrap().push((ct, req.body.clone()));
            Resp::empty(204)
        }),
    )
    .await
    .unwrap();
    (server, got)
}

fn agent_asking(notify: &str) -> Behaviour {
    Behaviour {
        consent: Some(json!({"notify": notify})),
        ..Behaviour::default()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A config walking `origins` at 03:00 and 03:30 UTC (store only: nothing is filed).
fn write_config(dir: &Path, origins: &[String], notify: &str, listen: &str) -> PathBuf {
    let mut text = format!(
        "[witness]\nname = \"notify test\"\nvantage = \"loopback\"\nnotify = \"{notify}\"\n\n\
         [network]\nextra_ca = [\"ca.pem\"]\nallow_private_network = true\n\n\
         [daemon]\ndatabase = \"walker.db\"\nlisten = \"{listen}\"\nconcurrency = 2\njitter_secs = 0\n\
         shutdown_grace_secs = 10\n\n"
    );
    for (i, origin) in origins.iter().enumerate() {
        text.push_str(&format!(
            "[[target]]\nname = \"t{i}\"\norigin = \"{origin}\"\nmode = \"a2a\"\nsubmit = false\n\
             schedule = \"0 0,30 3 * * *\"\n\n"
        ));
    }
    let path = dir.join("walker.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Run the daemon from one second before `fire` until `done` holds, stepping the clock to
/// `fire`; then stop it.
async fn run_once<F: Fn() -> bool>(
    config: &Path,
    clock: &Arc<ManualClock>,
    fire: &str,
    what: &str,
    done: F,
    metrics_port: Option<u16>,
    pages: &[String],
) -> Vec<String> {
    let fire: chrono::DateTime<chrono::Utc> = fire.parse().unwrap();
    clock.set(fire - chrono::Duration::seconds(1));
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let daemon_clock: Arc<dyn Clock> = clock.clone();
    let config = config.to_path_buf();
    let daemon = tokio::spawn(async move {
        conduct_walker::daemon::run_with(&config, daemon_clock, async {
            let _ = stop_rx.await;
        })
        .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    clock.set(fire);
    until(what, Duration::from_secs(60), done).await;
    let mut fetched = Vec::new();
    if let Some(port) = metrics_port {
        for page in pages {
            let url = format!("http://127.0.0.1:{port}{page}");
            let answer = reqwest::Client::new()
                .get(url)
                .header("accept", "text/html")
                .send()
                .await
                .unwrap();
            fetched.push(answer.text().await.unwrap());
        }
    }
    stop_tx.send(()).unwrap();
    daemon.await.unwrap().unwrap();
    fetched
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_post_per_endpoint_per_hour_across_a_restart_and_never_to_an_ip_literal() {
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let (hook, received) = receiver(&ca).await;
    let port = hook.addr().port();
    let asking = SandboxAgent::start(&ca, agent_asking(&format!("https://localhost:{port}/hook")))
        .await
        .unwrap();
    let literal = SandboxAgent::start(&ca, agent_asking(&format!("https://127.0.0.1:{port}/hook")))
        .await
        .unwrap();
    let metrics_port = free_port();
    let config = write_config(
        dir.path(),
        &[asking.origin(), literal.origin()],
        "consent",
        &format!("127.0.0.1:{metrics_port}"),
    );
    let db = dir.path().join("walker.db");
    let clock = Arc::new(ManualClock::new("2026-12-06T02:59:59Z".parse().unwrap()));

    let settled = "SELECT count(*) FROM notifications WHERE status IS NOT NULL";
    run_once(
        &config,
        &clock,
        "2026-12-06T03:00:00Z",
        "two settled notifications",
        || count(&db, settled) == 2,
        None,
        &[],
    )
    .await;
    assert_eq!(
        statuses(&db, &asking.origin()),
        vec![json!({"sent": true, "status": 204})]
    );
    assert_eq!(
        statuses(&db, &literal.origin()),
        vec![json!({"sent": false, "reason": "refused: notify URL is an IP literal"})]
    );
    let first_sha = {
        let got = received.lock().unwrap();
        assert_eq!(got.len(), 1, "one POST: the IP literal is never sent to");
        let (content_type, body) = &got[0];
        assert_eq!(content_type, "application/json");
        let body: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(body["event"], "measured");
        assert!(
            body["endpoint"]
                .as_str()
                .unwrap()
                .starts_with(&asking.origin())
        );
        let sha = body["record_sha256"].as_str().unwrap();
        assert!(
            sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
            "{sha}"
        );
        for list in ["establishes", "does_not_establish"] {
            let lines = body[list].as_array().unwrap();
            assert!(
                !lines.is_empty() && lines.iter().all(Value::is_string),
                "{list}"
            );
        }
        assert!(
            body["note"]
                .as_str()
                .unwrap()
                .contains("Remove the field to stop")
        );
        assert!(
            body["lookup"]
                .as_str()
                .unwrap()
                .contains("lookup?endpoint=")
        );
        assert_eq!(body["changed"], json!(["first walk of this endpoint"]));
        assert_eq!(
            body["conduct_record"],
            Value::Null,
            "the walk files nothing"
        );
        let stored = count(
            &db,
            &format!("SELECT count(*) FROM records WHERE sha256 = '{sha}'"),
        );
        assert_eq!(stored, 1, "record_sha256 is the stored record's identity");
        sha.to_string()
    };

    // Half an hour later, after a restart: the endpoint's hour still holds.
    let pages = [
        "/metrics".to_string(),
        format!("/records/{first_sha}"),
        "/".to_string(),
        format!("/records/{first_sha}/raw"),
    ];
    let fetched = run_once(
        &config,
        &clock,
        "2026-12-06T03:30:00Z",
        "four settled notifications",
        || count(&db, settled) == 4,
        Some(metrics_port),
        &pages,
    )
    .await;
    let (metrics, record_page, overview, raw) =
        (&fetched[0], &fetched[1], &fetched[2], &fetched[3]);
    assert!(
        raw.starts_with('{') && !raw.contains("notify_status"),
        "never in the record's bytes"
    );
    // Shown beside the record (never in its bytes), and listed on the overview.
    assert!(
        record_page.contains("{&quot;sent&quot;:true,&quot;status&quot;:204}"),
        "{record_page}"
    );
    assert!(overview.contains("id=\"notifications\""), "{overview}");
    assert!(overview.contains("rate limited: one notification per endpoint per hour"));
    assert_eq!(
        statuses(&db, &asking.origin())[1],
        json!({"sent": false, "reason": "rate limited: one notification per endpoint per hour"})
    );
    assert_eq!(
        statuses(&db, &literal.origin())[1],
        json!({"sent": false, "reason": "refused: notify URL is an IP literal"})
    );
    assert_eq!(
        received.lock().unwrap().len(),
        1,
        "exactly one POST arrived"
    );
    for line in [
        "conduct_walker_notifications_total{result=\"sent\"} 1",
        "conduct_walker_notifications_total{result=\"refused\"} 2",
        "conduct_walker_notifications_total{result=\"rate_limited\"} 1",
        "conduct_walker_notifications_total{result=\"deferred\"} 0",
        "conduct_walker_notifications_total{result=\"failed\"} 0",
    ] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_never_sends_nothing() {
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let (hook, received) = receiver(&ca).await;
    let asking = SandboxAgent::start(
        &ca,
        agent_asking(&format!("https://localhost:{}/hook", hook.addr().port())),
    )
    .await
    .unwrap();
    let config = write_config(dir.path(), &[asking.origin()], "never", "off");
    let db = dir.path().join("walker.db");
    let clock = Arc::new(ManualClock::new("2026-12-06T02:59:59Z".parse().unwrap()));
    run_once(
        &config,
        &clock,
        "2026-12-06T03:00:00Z",
        "the walk done",
        || {
            count(
                &db,
                "SELECT count(*) FROM daemon_walks WHERE state = 'done'",
            ) == 1
        },
        None,
        &[],
    )
    .await;
    // The daemon has stopped: a notification would have been decided before its fire ended.
    assert_eq!(count(&db, "SELECT count(*) FROM notifications"), 0);
    assert_eq!(received.lock().unwrap().len(), 0);
    // The consent file's notify was read and kept all the same.
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM consent_checks WHERE notify LIKE 'https://localhost:%'"
        ),
        1
    );
}

/// Guard 7 in the daemon: four origins asking, walked in one wave (the same scheduled instant),
/// get three POSTs; the fourth is deferred, and nothing is sent for it later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_three_notifications_per_wave() {
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let (hook, received) = receiver(&ca).await;
    let url = format!("https://localhost:{}/hook", hook.addr().port());
    let mut agents = Vec::new();
    for _ in 0..4 {
        agents.push(SandboxAgent::start(&ca, agent_asking(&url)).await.unwrap());
    }
    let origins: Vec<String> = agents.iter().map(SandboxAgent::origin).collect();
    let config = write_config(dir.path(), &origins, "consent", "off");
    let db = dir.path().join("walker.db");
    let clock = Arc::new(ManualClock::new("2026-12-06T02:59:59Z".parse().unwrap()));
    let settled = "SELECT count(*) FROM notifications WHERE status IS NOT NULL";
    run_once(
        &config,
        &clock,
        "2026-12-06T03:00:00Z",
        "four settled notifications",
        || count(&db, settled) == 4,
        None,
        &[],
    )
    .await;
    let all: Vec<Value> = origins.iter().flat_map(|o| statuses(&db, o)).collect();
    let sent = all.iter().filter(|s| s["sent"] == true).count();
    let deferred: Vec<&Value> = all.iter().filter(|s| s["sent"] == false).collect();
    assert_eq!((sent, deferred.len()), (3, 1), "{all:?}");
    assert_eq!(
        deferred[0]["reason"],
        "deferred: at most 3 notifications per wave"
    );
    assert_eq!(received.lock().unwrap().len(), 3, "three POSTs arrived");
    assert_eq!(
        count(&db, "SELECT count(DISTINCT wave) FROM notifications"),
        1,
        "one wave"
    );
}
