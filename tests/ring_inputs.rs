//! `ring inputs` (issue 37 item 4): the witness files of an endpoint's month from what `ledger
//! pull` and the follower keep, anchored records only, unwrapped, in ledger order; and a ring
//! built from them with `ring build --witness DIR/*`.

mod ledger_fake;
mod store_support;

use chrono::{DateTime, Utc};
use conduct_walker::ledger::pull;
use conduct_walker::store::Store;
use conduct_walker::store::ledger as lstore;
use ledger_fake::FakeLedger;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use store_support::*;

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");
const INTAKE: &str = "https://ledger.example/witness";
const ENDPOINT: &str = "https://agent.example/a2a";

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn canonical_text(seed: u64, endpoint: &str, pass: bool, walked: &str) -> String {
    let v = record_value(seed, "https://agent.example", endpoint, pass, walked);
    String::from_utf8(conduct_walker::canonical::to_bytes(&v)).unwrap()
}

fn run(args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).output().unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn inputs_from_the_store_build_a_ring_in_ledger_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("walker.db");
    let mut store = Store::open(&db).unwrap();
    let ledger = FakeLedger::default();
    // Ours: one September walk that passed, one that failed; one August walk.
    let mut ours = Vec::new();
    for (seed, pass, walked) in [
        (1, true, "2026-09-06T01:00:00Z"),
        (2, false, "2026-09-07T01:00:00Z"),
        (3, true, "2026-08-30T01:00:00Z"),
    ] {
        let text = canonical_text(seed, ENDPOINT, pass, walked);
        let rec = store
            .insert_record(&unsigned(text.clone().into_bytes()))
            .unwrap();
        file_accepted(
            store.connection(),
            rec.row.id,
            INTAKE,
            "1.2.3.4",
            "2026-12-01T13:00:00Z",
        );
        ledger.file(&text);
        ours.push(rec.row.sha256);
    }
    // Another witness's: a failed September walk, and one about another endpoint.
    let theirs = ledger.file(&canonical_text(
        101,
        ENDPOINT,
        false,
        "2026-09-20T05:00:00Z",
    ));
    let _elsewhere = ledger.file(&canonical_text(
        102,
        "https://other.example/a2a",
        true,
        "2026-09-20T05:00:00Z",
    ));
    ledger.anchor("2026-12-02T00:30:00.000Z", 2);
    // A second batch: what did not fit in the first.
    ledger.anchor("2026-12-03T00:30:00.000Z", 200);
    let r = pull::pull(
        &ledger,
        &mut store,
        INTAKE,
        ENDPOINT,
        t("2026-12-03T00:40:00Z"),
    )
    .await
    .unwrap();
    assert_eq!(r.kept, 1, "{r:?}");
    // The follower reads our records until each is anchored.
    for at in [
        "2026-12-03T01:00:00Z",
        "2026-12-03T02:00:00Z",
        "2026-12-03T04:00:00Z",
    ] {
        conduct_walker::ledger::follower::pass(
            &ledger,
            &mut store,
            INTAKE,
            &Default::default(),
            t(at),
        )
        .await
        .unwrap();
    }
    let anchored: Vec<_> = lstore::all(store.connection())
        .unwrap()
        .into_iter()
        .filter(|r| r.ledger_entry.is_some())
        .collect();
    assert_eq!(anchored.len(), 3, "every record of ours is anchored");
    drop(store);

    let out = dir.path().join("inputs");
    let o = run(&[
        "ring",
        "inputs",
        "--db",
        db.to_str().unwrap(),
        "--month",
        "2026-09",
        "--endpoint",
        ENDPOINT,
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.starts_with("3 witness files"), "{stdout}");
    assert!(
        stdout.contains("left out: 1 anchored records that walked in another month"),
        "{stdout}"
    );

    let mut files: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let objects: Vec<Value> = files
        .iter()
        .map(|f| serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap())
        .collect();
    // Ledger order: entry, then sha (a batch's row order).
    let order: Vec<(u64, String)> = objects
        .iter()
        .map(|o| {
            let sha = o["sha"].as_str().unwrap().to_string();
            let entry = anchored
                .iter()
                .find(|r| r.sha256 == sha)
                .and_then(|r| r.ledger_entry)
                .map_or(2, |n| n as u64);
            (entry, sha)
        })
        .collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
    let shas: Vec<&str> = order.iter().map(|(_, s)| s.as_str()).collect();
    assert!(shas.contains(&ours[0].as_str()) && shas.contains(&ours[1].as_str()));
    assert!(shas.contains(&theirs.as_str()));
    // Unwrapped stored objects, never an answer: no status, no nesting under "record".
    for o in &objects {
        assert!(o.get("status").is_none() && o.get("record").is_none());
        assert!(o["record_canonical"].is_string());
        assert_eq!(o["witness_name"], "store-test");
    }
    // A second run into the same folder is refused: DIR/* must be exactly these.
    let again = run(&[
        "ring",
        "inputs",
        "--db",
        db.to_str().unwrap(),
        "--month",
        "2026-09",
        "--endpoint",
        ENDPOINT,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(2));

    // The ring from them: the gate and the one identity both witnesses wrote, the two failed
    // walks' discrepancies (their shas), counted unsigned by name.
    let history = dir.path().join("history.json");
    std::fs::write(
        &history,
        format!(r#"{{"endpoint":"{ENDPOINT}","entries":[{{"at":"2026-09-10T00:00:00Z","record_sha256":"g1","reachable":true}}]}}"#),
    )
    .unwrap();
    let mut args = vec![
        "ring".to_string(),
        "build".into(),
        "--month".into(),
        "2026-09".into(),
        "--history".into(),
        history.display().to_string(),
        "--out".into(),
        dir.path().join("ring.json").display().to_string(),
    ];
    for f in &files {
        args.push("--witness".into());
        args.push(f.display().to_string());
    }
    let o = Command::new(BIN).args(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ring: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("ring.json")).unwrap()).unwrap();
    assert_eq!(ring["witnesses"], 2);
    let mut want = vec![ours[1].clone(), theirs.clone()];
    want.sort();
    assert_eq!(ring["discrepancies"], serde_json::json!(want));
    assert_eq!(ring["witnesses_unsigned"], 1);
    assert_eq!(ring["discrepancies_unsigned"].as_array().unwrap().len(), 2);
}

#[test]
fn an_empty_store_gives_no_files_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("walker.db");
    drop(Store::open(&db).unwrap());
    let out = dir.path().join("in");
    let o = run(&[
        "ring",
        "inputs",
        "--db",
        db.to_str().unwrap(),
        "--month",
        "2026-09",
        "--endpoint",
        ENDPOINT,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("0 witness files"));
    let bad = run(&[
        "ring",
        "inputs",
        "--db",
        db.to_str().unwrap(),
        "--month",
        "2026-9",
        "--endpoint",
        ENDPOINT,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--month YYYY-MM required"));
}
