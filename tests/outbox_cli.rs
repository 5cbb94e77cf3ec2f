//! `conduct-walker outbox list|drain` through the real binary: a witness without the daemon
//! files what an unreachable intake left queued, once the intake is back.

use conduct_walker::intake_emulator::{Emulator, EmulatorConfig};
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

async fn run(args: &[&str]) -> Output {
    tokio::process::Command::new(BIN)
        .args(args)
        .env_remove("STATE_DIRECTORY")
        .output()
        .await
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test]
async fn a_record_queued_by_a_down_intake_is_listed_then_filed_by_outbox_drain() {
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    let ca_path = dir.path().join("ca.pem");
    ca.write_pem(&ca_path).unwrap();
    let ca_arg = ca_path.to_str().unwrap();
    let db = dir.path().join("walker.db");
    let db_arg = db.to_str().unwrap();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    // A port nothing listens on yet: the intake is down during the walk.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let intake = format!("https://127.0.0.1:{port}/witness");
    let out = run(&[
        "walk",
        "--origin",
        &agent.origin(),
        "--mode",
        "a2a",
        "--witness-name",
        "outbox test",
        "--vantage",
        "loopback",
        "--allow-private-network",
        "--ca-cert",
        ca_arg,
        "--db",
        db_arg,
        "--submit",
        "--intake",
        &intake,
        "--out",
        dir.path().join("r.json").to_str().unwrap(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains(": queued"), "{}", text(&out));
    assert!(
        text(&out).contains("conduct-walker outbox drain --db"),
        "where it says queued, it says how to retry: {}",
        text(&out)
    );

    let list = run(&["outbox", "list", "--db", db_arg, "--json"]).await;
    assert_eq!(list.status.code(), Some(0), "{}", text(&list));
    let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["state"], "queued");
    assert_eq!(rows[0]["intake_url"], intake);
    assert!(
        rows[0]["last_error"]
            .as_str()
            .is_some_and(|e| !e.is_empty()),
        "{rows:?}"
    );

    let allow = format!("127.0.0.1:{port}");
    let drain_args = [
        "outbox",
        "drain",
        "--db",
        db_arg,
        "--allow-private-network",
        "--allow-host",
        &allow,
        "--ca-cert",
        ca_arg,
    ];
    // Not due yet (backoff): a drain sends nothing and says it stays queued.
    let early = run(&drain_args).await;
    assert!(text(&early).contains("sent 0"), "{}", text(&early));

    // The intake comes back, and the retry time passes.
    let mut policy = NetPolicy::new(true);
    policy.allow_url(&intake);
    let mut net = TransportConfig::new(policy);
    net.extra_roots = vec![ca.cert_der()];
    let emulator = Emulator::start(
        EmulatorConfig::new(
            dir.path().join("intake.sqlite"),
            Transport::new(net).unwrap(),
        ),
        &ca,
        format!("127.0.0.1:{port}").parse().unwrap(),
    )
    .await
    .unwrap();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("UPDATE submissions SET next_attempt_at = NULL", [])
        .unwrap();
    let drain = run(&drain_args).await;
    assert_eq!(drain.status.code(), Some(0), "{}", text(&drain));
    assert!(text(&drain).contains("sent 1: 1 filed"), "{}", text(&drain));
    assert_eq!(emulator.stored_count(), 1);
    let after = Command::new(BIN)
        .args(["outbox", "list", "--db", db_arg])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&after.stdout).starts_with("0 unsettled"),
        "{}",
        text(&after)
    );
}
