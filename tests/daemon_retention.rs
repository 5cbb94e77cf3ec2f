//! The daemon archives on its schedule when `[retention]` is set: old records leave the store
//! into segments, held ones stay, and `records verify --archives` proves the chain.

mod daemon_support;
mod store_support;

use conduct_walker::sandbox::SandboxCa;
use conduct_walker::store::{NewRecord, Store, verify};
use daemon_support::{Daemon, config, free_port};
use std::time::Duration;
use store_support::{key, record_bytes, signed};

#[test]
fn the_daemon_archives_old_records_on_its_schedule_and_keeps_held_ones() {
    let ca = SandboxCa::generate();
    let listen = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let text = format!(
        "{}\n[retention]\nall_days = 1\narchive_dir = \"old\"\n",
        config(listen, 5, "")
    );
    let mut d = Daemon::start(&ca, listen, &text);
    // Records walked in September 2026, written while the daemon runs (its first archiving run
    // is 10 s after start); the second one waits in the outbox.
    let k = key(4);
    let recs: Vec<NewRecord> = (0..20).map(|i| signed(record_bytes(i, true), &k)).collect();
    let store = Store::open(&d.path("walker.db")).unwrap();
    store.insert_many(&recs).unwrap();
    store
        .connection()
        .execute(
            "INSERT INTO submissions (record_id, intake_url, lane, identity, endpoint, state, \
             created_at, updated_at) VALUES (2, 'https://intake.example', 'address', 'x', 'e', \
             'queued', '2026-09-06T00:00:00Z', '2026-09-06T00:00:00Z')",
            [],
        )
        .unwrap();
    drop(store);
    d.wait_for("the archiving run", Duration::from_secs(60), |d| {
        d.log().contains("old records archived")
    });
    d.stop();
    assert!(d.log().contains("archived=19"), "{}", d.log());
    let store = Store::open_read_only(&d.path("walker.db")).unwrap();
    assert_eq!(store.count().unwrap(), 1, "the queued record stays");
    assert!(store.get_by_id(2).is_ok());
    let r = verify::verify_all_with(&store, Some(&d.path("old")), |_, _| {}).unwrap();
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(r.rows, 20);
    assert_eq!(r.archived.len(), 2, "rows 1 and 3 to 20: {:?}", r.archived);
}
