//! The alert outbox in a real SQLite store: flapping is absorbed by the thresholds and the
//! minimum interval, held changes are sent by the timer once the interval has passed, the daily
//! cap holds alerts for one digest after the day, and neither a replayed walk nor a reload with
//! new thresholds re-announces what is known.

use chrono::{DateTime, TimeDelta, Utc};
use conduct_walker::alerts::config::{self, AlertsConfig, AlertsSection};
use conduct_walker::alerts::incident::{AssertionResult, Observation, WalkResult};
use conduct_walker::alerts::outbox;
use conduct_walker::store::Store;
use std::path::Path;

mod store_support;

fn cfg(dir: &Path, extra: &str) -> AlertsConfig {
    std::fs::write(dir.join("s"), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
    let section: AlertsSection = toml::from_str(&format!(
        r#"
{extra}
[[channel]]
name = "hook"
kind = "webhook"
url = "https://hooks.example/x"
secret_file = "s"
daily_cap = 2
"#
    ))
    .unwrap();
    config::validate(&section, dir, &["a", "b", "c"]).unwrap()
}

fn walk(at: DateTime<Utc>, ok: bool, n: u32) -> Observation {
    Observation {
        at,
        record_sha256: Some(format!("{n:064x}")),
        origin: Some("https://agent.example".into()),
        endpoint: Some("https://agent.example/a2a".into()),
        result: WalkResult::Conduct {
            ok,
            n_pass: if ok { 8 } else { 7 },
            n_total: 8,
            assertions: vec![AssertionResult {
                name: "extension_echoed".into(),
                claim: "the agent echoes the extension".into(),
                result: Some(ok),
                note: (!ok).then(|| "not echoed".into()),
            }],
        },
    }
}

fn rows(store: &Store) -> Vec<(String, String, String)> {
    let mut stmt = store
        .connection()
        .prepare("SELECT target, kind, state FROM alert_outbox ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| {
        Ok((
            r.get::<_, Option<String>>(0)?.unwrap_or_default(),
            r.get(1)?,
            r.get(2)?,
        ))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

fn observe(store: &Store, c: &AlertsConfig, target: &str, obs: &Observation) -> u32 {
    let tx = store.connection().unchecked_transaction().unwrap();
    let n = outbox::observe(&tx, c, target, obs).unwrap();
    tx.commit().unwrap();
    n
}

#[test]
fn flapping_thresholds_interval_cap_and_digest_in_a_real_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("walker.db")).unwrap();
    // The consecutive rule alone here (the windowed one has its own test below).
    let c = cfg(dir.path(), "min_interval_secs = 600\nwindow_failures = 0");
    let t0: DateTime<Utc> = "2026-12-01T10:00:00Z".parse().unwrap();
    let m = |k: i64| t0 + TimeDelta::minutes(k);

    // A passing first walk, then a flap every minute: never two FAILs in a row, nothing sent.
    let mut n = 0;
    for (k, ok) in [true, false, true, false, true, false, true]
        .into_iter()
        .enumerate()
    {
        n += 1;
        assert_eq!(observe(&store, &c, "a", &walk(m(k as i64), ok, n)), 0);
    }
    assert!(rows(&store).is_empty());

    // Two FAILs: the incident opens, once.
    n += 1;
    observe(&store, &c, "a", &walk(m(10), false, n));
    n += 1;
    assert_eq!(observe(&store, &c, "a", &walk(m(11), false, n)), 1);
    // Two PASSes inside the interval: resolved, but held.
    n += 1;
    observe(&store, &c, "a", &walk(m(12), true, n));
    n += 1;
    assert_eq!(observe(&store, &c, "a", &walk(m(13), true, n)), 0);
    assert_eq!(rows(&store).len(), 1);
    // The timer sends it once the interval is over, not before.
    let flush = |at| {
        let tx = store.connection().unchecked_transaction().unwrap();
        let k = outbox::flush_due(&tx, &c, at).unwrap();
        tx.commit().unwrap();
        k
    };
    assert_eq!(flush(m(20)), 0);
    assert_eq!(flush(m(21)), 1);
    assert_eq!(flush(m(22)), 0, "sent once");
    assert_eq!(
        rows(&store),
        vec![
            ("a".into(), "incident.opened".into(), "queued".into()),
            ("a".into(), "incident.resolved".into(), "queued".into())
        ]
    );

    // The daily cap is 2 and the channel used it: two more incidents today are held.
    for (t, base) in [("b", 100), ("c", 200)] {
        observe(&store, &c, t, &walk(m(30), false, base));
        observe(&store, &c, t, &walk(m(31), false, base + 1));
    }
    let r = rows(&store);
    assert_eq!(r.len(), 4, "{r:?}");
    assert!(r[2..].iter().all(|x| x.2 == "held"), "{r:?}");
    // After UTC midnight, one digest listing both.
    let digest = |at| {
        let tx = store.connection().unchecked_transaction().unwrap();
        let k = outbox::digests_due(&tx, &c, at).unwrap();
        tx.commit().unwrap();
        k
    };
    assert_eq!(digest(m(60)), 0, "not before the day is over");
    let tomorrow: DateTime<Utc> = "2026-12-02T00:00:05Z".parse().unwrap();
    assert_eq!(digest(tomorrow), 1);
    assert_eq!(digest(tomorrow), 0, "one digest per day");
    let last = outbox::latest(store.connection(), 1).unwrap().remove(0);
    assert_eq!(last.kind, "digest");
    let p: serde_json::Value = serde_json::from_str(&last.payload).unwrap();
    assert_eq!(p["data"]["digest"]["held"].as_array().unwrap().len(), 2);
    // Each held alert is listed: what, about whom, when, and its record (issue 35).
    let listed = p["data"]["digest"]["alerts"].as_array().unwrap();
    let about: Vec<_> = listed
        .iter()
        .map(|a| {
            (
                a["target"].as_str().unwrap(),
                a["type"].as_str().unwrap(),
                a["endpoint"].as_str().unwrap(),
                a["timestamp"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        about,
        [
            (
                "b",
                "incident.opened",
                "https://agent.example/a2a",
                "2026-12-01T10:31:00Z"
            ),
            (
                "c",
                "incident.opened",
                "https://agent.example/a2a",
                "2026-12-01T10:31:00Z"
            ),
        ]
    );
    assert_eq!(listed[0]["id"], p["data"]["digest"]["held"][0]);
    assert!(
        listed[0]["record"]["page"]
            .as_str()
            .unwrap()
            .starts_with("/records/")
    );
    assert_eq!(p["data"]["digest"]["day"], "2026-12-01");

    // Open incidents as `alerts list` shows them.
    let open = outbox::open_incidents(store.connection()).unwrap();
    let names: Vec<_> = open
        .iter()
        .map(|i| (i.target.as_str(), i.kind.as_str()))
        .collect();
    assert_eq!(names, vec![("b", "conduct"), ("c", "conduct")]);

    // A reload with other thresholds, and a replayed walk: nothing known is announced again.
    let c2 = cfg(
        dir.path(),
        "open_after = 1\nresolve_after = 5\nmin_interval_secs = 0",
    );
    let before = rows(&store).len();
    observe(&store, &c2, "b", &walk(tomorrow, false, 102));
    observe(&store, &c2, "b", &walk(tomorrow, false, 102));
    assert_eq!(rows(&store).len(), before);
}

/// Issue 35: an agent failing every other walk, under the default settings, opens one incident
/// (the windowed rule: 3 of the last 6 walks failed) and the alert says so once; one whose
/// incidents keep opening and resolving is announced flapping once.
#[test]
fn every_other_walk_failing_opens_once_and_a_flapping_agent_is_announced_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("walker.db")).unwrap();
    let c = cfg(dir.path(), "min_interval_secs = 0");
    let t0: DateTime<Utc> = "2026-12-01T10:00:00Z".parse().unwrap();
    for k in 0..185u32 {
        let at = t0 + TimeDelta::minutes(k.into());
        observe(&store, &c, "a", &walk(at, k % 2 == 0, 1 + k));
    }
    let kinds: Vec<_> = rows(&store).into_iter().map(|r| r.1).collect();
    assert_eq!(kinds, ["incident.opened"], "185 walks, 92 FAIL");
    // Two failing, two passing, over and over: three openings, then one flapping alert.
    for k in 0..60u32 {
        let at = t0 + TimeDelta::minutes((200 + k).into());
        observe(&store, &c, "b", &walk(at, k % 4 >= 2, 1000 + k));
    }
    let b: Vec<_> = rows(&store)
        .into_iter()
        .filter(|r| r.0 == "b")
        .map(|r| r.1)
        .collect();
    assert_eq!(
        b.last().map(String::as_str),
        Some("incident.flapping"),
        "{b:?}"
    );
    assert_eq!(b.iter().filter(|k| *k == "incident.flapping").count(), 1);
    assert!(b.len() <= 5, "{b:?}");
}

/// Issue 35: the same walks in two stores (two witnesses, or one store made anew) plan alerts
/// under distinct ids, each derived from its store's identifier, which a reopened store keeps.
#[test]
fn two_stores_plan_the_same_incident_under_distinct_ids_and_a_reopened_store_keeps_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let c = cfg(dir.path(), "min_interval_secs = 0");
    let t0: DateTime<Utc> = "2026-12-01T10:00:00Z".parse().unwrap();
    let ids_of = |store: &Store| -> Vec<String> {
        let mut stmt = store
            .connection()
            .prepare("SELECT alert_id FROM alert_outbox ORDER BY id")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let mut per_store = Vec::new();
    for name in ["one.db", "two.db"] {
        let store = Store::open(&dir.path().join(name)).unwrap();
        for (k, ok) in [false, false, true, true].into_iter().enumerate() {
            observe(
                &store,
                &c,
                "a",
                &walk(t0 + TimeDelta::minutes(k as i64), ok, 1 + k as u32),
            );
        }
        let ids = ids_of(&store);
        assert_eq!(ids.len(), 2, "opened and resolved");
        let witness = conduct_walker::store::identity(store.connection()).unwrap();
        assert_eq!(witness.len(), 32);
        // The payload says who sent it.
        let body: serde_json::Value =
            serde_json::from_str(&outbox::latest(store.connection(), 1).unwrap()[0].payload)
                .unwrap();
        assert_eq!(body["data"]["witness"]["id"], witness.as_str());
        assert_eq!(body["data"]["endpoint"], "https://agent.example/a2a");
        assert_eq!(body["data"]["origin"], "https://agent.example");
        per_store.push((witness, ids));
    }
    assert_ne!(
        per_store[0].0, per_store[1].0,
        "each store its own identifier"
    );
    for (a, b) in per_store[0].1.iter().zip(&per_store[1].1) {
        assert_ne!(a, b, "the same transition, another witness: another id");
    }
    // Reopened (a restart), a store keeps its identifier, so a replayed plan keeps its id.
    let again = Store::open(&dir.path().join("one.db")).unwrap();
    assert_eq!(
        conduct_walker::store::identity(again.connection()).unwrap(),
        per_store[0].0
    );
    assert_eq!(ids_of(&again), per_store[0].1);
}

/// Issue 23's findings reach the operator: each finding the follower stores after alerts are
/// on becomes one `ledger.finding` alert per channel; findings from before are not announced,
/// and looking again (or the same finding seen again) plans nothing more.
#[test]
fn ledger_findings_become_one_alert_each_and_old_ones_are_not_announced() {
    use conduct_walker::store::ledger::{NewFinding, open_finding};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("walker.db")).unwrap();
    let c = cfg(dir.path(), "");
    let conn = store.connection();
    let intake = "https://intake.example/witness";
    let t0: DateTime<Utc> = "2026-12-01T10:00:00Z".parse().unwrap();
    let finding = |kind: &'static str, sha: Option<&'static str>, n: u64| NewFinding {
        intake_url: intake,
        kind,
        sha256: sha,
        entry_n: Some(n),
        evidence: serde_json::json!({ "n": n, "kind": kind }),
    };
    let look = |at: DateTime<Utc>| {
        let tx = conn.unchecked_transaction().unwrap();
        let n = outbox::ledger_findings(&tx, &c, at).unwrap();
        tx.commit().unwrap();
        n
    };
    // Found before alerts looked: the first look only sets the watermark.
    assert!(
        open_finding(
            conn,
            &finding("rewound_head", None, 3),
            "2026-12-01T09:00:00Z"
        )
        .unwrap()
    );
    assert_eq!(look(t0), 0);
    assert!(rows(&store).is_empty());

    let sha = "ab".repeat(32);
    let sha: &'static str = Box::leak(sha.into_boxed_str());
    assert!(
        open_finding(
            conn,
            &finding("forked_head", None, 4),
            "2026-12-01T10:01:00Z"
        )
        .unwrap()
    );
    assert!(
        open_finding(
            conn,
            &finding("overdue", Some(sha), 5),
            "2026-12-01T10:02:00Z"
        )
        .unwrap()
    );
    // The same evidence again is not a new finding, so not a new alert.
    assert!(
        !open_finding(
            conn,
            &finding("overdue", Some(sha), 5),
            "2026-12-01T10:03:00Z"
        )
        .unwrap()
    );
    assert_eq!(look(t0 + TimeDelta::minutes(5)), 2);
    let r = rows(&store);
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(
        r.iter()
            .all(|(_, kind, state)| kind == "ledger.finding" && state == "queued"),
        "{r:?}"
    );
    assert_eq!(look(t0 + TimeDelta::minutes(6)), 0);
    assert_eq!(rows(&store).len(), 2);
    // The payloads say which finding, on which intake.
    let payloads: Vec<String> = conn
        .prepare("SELECT payload FROM alert_outbox ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        payloads[0].contains("forked_head at entry 4 on https://intake.example/witness"),
        "{}",
        payloads[0]
    );
    assert!(
        payloads[1].contains("overdue at entry 5") && payloads[1].contains(sha),
        "{}",
        payloads[1]
    );
}

/// A record queued for filing longer than `queued_max_age_secs` is alerted once
/// (`filing.queued_too_long`), on the timer, from the outbox as stored; a younger one is not.
#[test]
fn a_record_queued_too_long_is_alerted_once_and_a_young_one_not() {
    use conduct_walker::filing::SubmissionState;
    use conduct_walker::store::outbox::{NewSubmission, insert};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("walker.db")).unwrap();
    let c = cfg(dir.path(), "queued_max_age_secs = 3600");
    let queue = |i: u64, at: &str| {
        store
            .insert_many(&[store_support::unsigned(store_support::record_bytes(
                i, true,
            ))])
            .unwrap();
        let id: i64 = store
            .connection()
            .query_row("SELECT max(id) FROM records", [], |r| r.get(0))
            .unwrap();
        insert(
            store.connection(),
            &NewSubmission {
                record_id: id,
                intake_url: "https://intake.example/witness",
                lane: "address",
                identity: "w",
                endpoint: "https://agent.example/a2a",
                state: SubmissionState::Queued,
                next_attempt_at: Some(at),
                last_error: None,
                now: at,
            },
        )
        .unwrap();
    };
    queue(1, "2026-12-01T08:00:00Z");
    queue(2, "2026-12-01T09:30:00Z");
    let look = |at: &str| {
        let tx = store.connection().unchecked_transaction().unwrap();
        let n = outbox::queued_too_long(&tx, &c, at.parse().unwrap()).unwrap();
        tx.commit().unwrap();
        n
    };
    assert_eq!(
        look("2026-12-01T10:00:00Z"),
        1,
        "only the record queued for 2 hours"
    );
    assert_eq!(
        rows(&store),
        [(
            String::new(),
            "filing.queued_too_long".into(),
            "queued".into()
        )]
    );
    assert_eq!(
        look("2026-12-01T10:05:00Z"),
        0,
        "seen again: the same alert"
    );
    assert_eq!(
        look("2026-12-01T10:31:00Z"),
        1,
        "the second one's hour has passed"
    );
    assert_eq!(rows(&store).len(), 2);
}
