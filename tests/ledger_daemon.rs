//! Issue 23: the daemon follows what it filed. One agent walked and filed with the intake
//! emulator; the emulator's operator batch anchors it; the daemon's follower (its own thread)
//! sees the new head, reads the batch once and verifies each filed record's inclusion, and
//! `/metrics` and `/healthz` say so.

mod daemon_support;

use conduct_walker::sandbox::SandboxCa;
use conduct_walker::store::ledger as lstore;
use daemon_support::{
    Daemon, any_port, config, free_port, metric, runtime, start_intake, submitting_agents,
};
use std::net::SocketAddr;
use std::time::Duration;

#[test]
fn the_daemon_follows_its_filed_records_to_inclusion_verified() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let state = tempfile::tempdir().unwrap();
    let emulator = start_intake(&rt, &ca, state.path(), any_port(), Some(100));
    let (_agents, targets) = submitting_agents(&rt, &ca, 1);
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let text = config(listen, 20, &targets)
        .replace(
            "vantage = \"loopback\"\n",
            &format!("vantage = \"loopback\"\nintake = \"{}\"\n", emulator.url()),
        )
        .replace(
            "[daemon]\n",
            "[ledger]\npoll_interval_secs = 10\nhead_interval_secs = 10\n\n[daemon]\n",
        );
    let mut d = Daemon::start(&ca, listen, &text);
    d.wait_for("a filed record followed", Duration::from_secs(90), |d| {
        d.store()
            .and_then(|s| lstore::all(s.connection()).ok())
            .is_some_and(|rows| !rows.is_empty())
    });
    let anchored = emulator
        .anchor()
        .unwrap()
        .expect("a pending record to anchor");
    d.wait_for("inclusion verified", Duration::from_secs(90), |d| {
        d.store()
            .and_then(|s| lstore::all(s.connection()).ok())
            .is_some_and(|rows| rows.iter().any(|r| r.verified_at.is_some()))
    });
    let store = d.store().unwrap();
    let rows = lstore::all(store.connection()).unwrap();
    let verified: Vec<_> = rows.iter().filter(|r| r.verified_at.is_some()).collect();
    assert!(!verified.is_empty());
    for r in &verified {
        assert_eq!(r.ledger_entry, Some(anchored.ledger_entry));
        assert!(anchored.shas.contains(&r.sha256));
    }
    assert!(
        lstore::latest_findings(store.connection(), 10)
            .unwrap()
            .is_empty()
    );
    let m = d.get_text("/metrics");
    let v = metric(&m, "conduct_walker_ledger_inclusion_verified_total");
    assert!(v.iter().any(|(_, n)| *n >= 1.0), "{m}");
    let h = d.get_text("/healthz");
    let h: serde_json::Value = serde_json::from_str(&h).unwrap();
    assert_eq!(h["status"], "ok");
    assert_eq!(h["ledger"]["open_findings"], 0);
    assert_eq!(h["ledger"]["heads_held"][0]["n"], anchored.ledger_entry);
    d.stop();
}
