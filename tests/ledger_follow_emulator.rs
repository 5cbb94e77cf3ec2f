//! Issue 23: the follower against the real intake emulator over loopback HTTPS (the bounded
//! client, the emulator's routes and its fault hooks, ledger.md §8 item 7): anchored records are
//! verified; each fault is a finding with its evidence; nothing the ledger does changes our
//! records, our outbox rows or `records verify`. And the commands, as processes.

mod ledger_support;
mod store_support;

use chrono::{DateTime, Duration, Utc};
use conduct_walker::ledger::follow::Policy;
use conduct_walker::ledger::follower::{self, PassReport};
use conduct_walker::store::ledger as lstore;
use conduct_walker::store::outbox;
use conduct_walker::store::{NewRecord, Store, verify};
use ledger_support::*;

struct World {
    env: Env,
    _dir: tempfile::TempDir,
    db: std::path::PathBuf,
    store: Store,
    intake: String,
    shas: Vec<String>,
    policy: Policy,
}

fn t(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

impl World {
    async fn start(k: u64, filed_at: &str) -> World {
        let env = Env::start("2026-12-01T13:00:00.000Z").await;
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("walker.db");
        let store = Store::open(&db).unwrap();
        let intake = env.emu.url();
        let mut w = World {
            env,
            _dir: dir,
            db,
            store,
            intake,
            shas: Vec::new(),
            policy: Policy::default(),
        };
        for i in 0..k {
            w.file(i, filed_at).await;
        }
        w
    }

    /// Stores a record as ours, files it with the emulator and marks it accepted.
    async fn file(&mut self, nonce: u64, filed_at: &str) -> String {
        let value = store_support::record_value(
            nonce,
            "https://agent.example",
            "https://agent.example/a2a",
            nonce.is_multiple_of(2),
            &store_support::walked_at(nonce * 60),
        );
        // Filed unsigned: without the key_url a signed record would carry.
        let mut value = value;
        value["witness"].as_object_mut().unwrap().remove("key_url");
        let text = String::from_utf8(conduct_walker::canonical::to_bytes(&value)).unwrap();
        let rec = self
            .store
            .insert_record(&NewRecord {
                canonical: text.clone().into_bytes(),
                signature_b64: None,
                public_key_b64: None,
                kept_full: None,
            })
            .unwrap();
        let ip = format!("198.51.{}.{}", (nonce / 250) % 250, nonce % 250);
        let ex = self
            .env
            .send(
                "POST",
                "/witness",
                &[
                    ("Content-Type", "application/json"),
                    ("CF-Connecting-IP", &ip),
                ],
                Some(serde_json::to_vec(&serde_json::json!({"record_canonical": text})).unwrap()),
            )
            .await;
        assert_eq!(ex.status, 201, "{}", String::from_utf8_lossy(&ex.body));
        let sha = conduct_walker::digest::sha256_hex(text.as_bytes());
        assert_eq!(sha, rec.row.sha256);
        store_support::file_accepted(
            self.store.connection(),
            rec.row.id,
            &self.intake,
            "198.51.0.1",
            filed_at,
        );
        self.shas.push(sha.clone());
        sha
    }

    async fn pass(&mut self, at: &str) -> PassReport {
        let client = self.env.client();
        follower::pass(&client, &mut self.store, &self.intake, &self.policy, t(at))
            .await
            .unwrap()
    }

    fn kinds(&self) -> Vec<String> {
        let mut k: Vec<String> = lstore::latest_findings(self.store.connection(), 100)
            .unwrap()
            .into_iter()
            .map(|f| f.kind)
            .collect();
        k.sort();
        k.dedup();
        k
    }

    fn finding(&self, kind: &str) -> lstore::Finding {
        lstore::latest_findings(self.store.connection(), 100)
            .unwrap()
            .into_iter()
            .find(|f| f.kind == kind)
            .unwrap_or_else(|| panic!("no {kind} finding: {:?}", self.kinds()))
    }

    fn own_state(&self) -> (Vec<String>, Vec<outbox::Submission>, bool) {
        let conn = self.store.connection();
        let records: Vec<String> = conn
            .prepare("SELECT sha256 || hex(chain_hash) FROM records ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let subs = (1..=self.shas.len() as i64)
            .map(|id| outbox::get(conn, id).unwrap())
            .collect();
        (
            records,
            subs,
            verify::verify_all(&self.store, |_, _| {}).unwrap().is_ok(),
        )
    }

    /// Filed, read once, anchored by an operator batch, verified; the head held at n.
    async fn anchored(k: u64) -> World {
        let mut w = World::start(k, "2026-12-01T13:00:00Z").await;
        w.pass("2026-12-01T13:05:00Z").await;
        let (status, _) = w.env.anchor().await;
        assert_eq!(status, 201);
        let r = w.pass("2026-12-01T13:21:00Z").await;
        assert_eq!(
            (r.anchored, r.verified, r.findings_opened),
            (k, k, 0),
            "{r:?}"
        );
        w
    }
}

#[tokio::test]
async fn anchored_records_are_verified_through_the_emulator() {
    let mut w = World::anchored(3).await;
    for row in lstore::all(w.store.connection()).unwrap() {
        assert_eq!(row.state, "anchored");
        assert_eq!(row.ledger_entry, Some(1));
        assert!(row.verified_at.is_some());
    }
    // The scheduled run adds a checkpoint: the next head read extends the held head over it,
    // its carried ledger_head and marker agreeing.
    w.env.emu.scheduled_run().unwrap();
    let r = w.pass("2026-12-02T00:31:00Z").await;
    assert_eq!((r.new_entries, r.findings_opened), (1, 0), "{r:?}");
    assert_eq!(r.head.unwrap().n, 2);
    assert!(w.kinds().is_empty());
}

#[tokio::test]
async fn a_rewritten_entry_is_a_changed_entry_and_a_forked_head() {
    let mut w = World::anchored(2).await;
    let before = w.own_state();
    w.env
        .emu
        .rewrite_entry_bytes(1, "{\"schema\":\"nenrin-witness-batch-v1\"}", true)
        .unwrap();
    w.pass("2026-12-01T13:40:00Z").await;
    let kinds = w.kinds();
    assert!(kinds.contains(&"entry_changed".to_string()), "{kinds:?}");
    assert!(kinds.contains(&"forked_head".to_string()), "{kinds:?}");
    let f = w.finding("entry_changed");
    assert_eq!(f.entry_n, Some(1));
    assert_ne!(
        f.evidence["held"]["claim_sha256"],
        f.evidence["served"]["claim_sha256"]
    );
    let fork = w.finding("forked_head");
    assert_eq!(fork.evidence["held"]["n"], 1);
    assert_eq!(before, w.own_state());
    // The held head is not replaced by the forged one.
    let st = lstore::intake(w.store.connection(), &w.intake).unwrap();
    assert_eq!(st.head_n, Some(1));
}

#[tokio::test]
async fn a_rewound_head_a_fork_and_a_dropped_entry_are_findings() {
    let mut w = World::anchored(1).await;
    w.file(50, "2026-12-01T13:30:00Z").await;
    let (status, _) = w.env.anchor().await;
    assert_eq!(status, 201);
    let r = w.pass("2026-12-01T13:40:00Z").await;
    assert_eq!((r.verified, r.findings_opened), (1, 0), "{r:?}");
    let before = w.own_state();

    w.env.emu.rewind_head(Some(1));
    w.pass("2026-12-01T14:00:00Z").await;
    let rewound = w.finding("rewound_head");
    assert_eq!(
        (
            rewound.evidence["held"]["n"].clone(),
            rewound.evidence["served"]["n"].clone()
        ),
        (2.into(), 1.into())
    );
    w.env.emu.rewind_head(None);

    w.env.emu.fork_from(2).unwrap();
    w.pass("2026-12-01T14:20:00Z").await;
    assert!(
        w.kinds().contains(&"forked_head".to_string()),
        "{:?}",
        w.kinds()
    );

    w.env.emu.drop_entry(1).unwrap();
    w.pass("2026-12-01T14:40:00Z").await;
    assert!(
        w.kinds().contains(&"chain_broken".to_string()),
        "{:?}",
        w.kinds()
    );
    assert_eq!(before, w.own_state());
}

#[tokio::test]
async fn a_stale_pending_key_lagging_reads_and_replies_are_no_findings() {
    let mut w = World::start(2, "2026-12-01T13:00:00Z").await;
    // Eventual consistency: right after the 201 the intake does not show it yet.
    w.env
        .emu
        .delay_visibility(std::time::Duration::from_secs(3600));
    w.pass("2026-12-01T13:04:00Z").await;
    assert!(w.kinds().is_empty(), "{:?}", w.kinds());
    assert!(
        lstore::all(w.store.connection())
            .unwrap()
            .iter()
            .all(|r| r.last_seen.as_deref() == Some("not_found"))
    );
    w.env.emu.delay_visibility(std::time::Duration::ZERO);
    w.env
        .emu
        .attach_response(
            &w.shas[0],
            &"e".repeat(64),
            "https://agent.example",
            "2026-12-01T14:00:00Z",
        )
        .unwrap();
    let (status, _) = w.env.anchor().await;
    assert_eq!(status, 201);
    w.env.emu.stale_pending(&w.shas[1]).unwrap();
    let r = w.pass("2026-12-01T13:14:00Z").await;
    assert_eq!(r.verified, 2, "{r:?}");
    assert!(w.kinds().is_empty(), "{:?}", w.kinds());
    let replies = lstore::responses_for(w.store.connection(), &w.shas[0]).unwrap();
    assert_eq!(replies.last().unwrap().count, 1);
    assert_eq!(
        replies.last().unwrap().responses[0]["subject_origin"],
        "https://agent.example"
    );
}

#[tokio::test]
async fn a_404_past_the_grace_and_an_overdue_record_are_findings() {
    let mut w = World::start(1, "2026-12-01T13:00:00Z").await;
    w.env
        .emu
        .delay_visibility(std::time::Duration::from_secs(24 * 3600));
    w.pass("2026-12-01T13:04:00Z").await;
    w.pass("2026-12-01T13:15:00Z").await;
    assert_eq!(w.kinds(), vec!["not_found_after_accept"]);
    w.env.emu.delay_visibility(std::time::Duration::ZERO);
    w.policy.overdue_after = Duration::hours(2);
    w.pass("2026-12-01T15:00:00Z").await;
    assert_eq!(w.kinds(), vec!["not_found_after_accept", "overdue"]);
    let row = &lstore::all(w.store.connection()).unwrap()[0];
    assert_eq!(row.state, "finding");
}

// The processes block a worker while the emulator answers them on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_commands_follow_show_and_pull_as_processes() {
    let now = Utc::now();
    let filed = lstore::ts(now - Duration::minutes(10));
    let mut w = World::start(2, &filed).await;
    // Another witness's record of the same endpoint.
    w.env
        .file("their-witness", "https://agent.example/a2a", 900)
        .await;
    let (status, _) = w.env.anchor().await;
    assert_eq!(status, 201);
    drop(std::mem::replace(&mut w.store, Store::open(&w.db).unwrap()));
    let net = [
        "--allow-private-network".to_string(),
        "--ca-cert".into(),
        w.env.ca_pem.display().to_string(),
    ];
    let run = |args: &[&str]| {
        let out = std::process::Command::new(BIN)
            .args(args)
            .args(["--db", w.db.to_str().unwrap()])
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let host = w.env.emu.addr().to_string();
    let mut follow: Vec<&str> = vec!["ledger", "follow", "--allow-host", &host];
    follow.extend(net.iter().map(String::as_str));
    let (code, out, err) = run(&follow);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("2 anchored, 2 inclusion verified, 0 new finding(s)"),
        "{out}{err}"
    );
    let (code, out, _) = run(&["ledger", "status"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out.matches("anchored at entry 1, inclusion verified")
            .count(),
        2,
        "{out}"
    );
    assert!(
        out.contains(
            "2 filed, 0 pending, 2 anchored (2 inclusion verified), 0 overdue, 0 finding(s)"
        ),
        "{out}"
    );
    let (code, out, _) = run(&["ledger", "status", "--json"]);
    assert_eq!(code, 0);
    let first: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(first["ledger_entry"], 1);
    assert!(first["inclusion_verified_at"].is_string());
    let intake = w.intake.clone();
    let mut pull: Vec<&str> = vec![
        "ledger",
        "pull",
        "--endpoint",
        "https://agent.example/a2a",
        "--intake",
        &intake,
    ];
    pull.extend(net.iter().map(String::as_str));
    let (code, out, err) = run(&pull);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("2 of ours, 1 other witnesses' kept (0 disagree"),
        "{out}"
    );
    assert!(out.contains("the ledger keeps no signature"), "{out}");
    let store = Store::open_read_only(&w.db).unwrap();
    let kept =
        lstore::foreign_for_endpoint(store.connection(), "https://agent.example/a2a", 10).unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].witness_name, "their-witness");
    assert_eq!(kept[0].checked, "ok");
}
