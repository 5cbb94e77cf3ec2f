//! Issue 23: the follower against a ledger that answers as ledger.md says, then lies: each lie
//! is a finding with its evidence, and nothing the ledger does changes our records, our outbox
//! rows or `records verify`.

mod ledger_fake;
mod store_support;

use chrono::{DateTime, Duration, Utc};
use conduct_walker::ledger::follow::Policy;
use conduct_walker::ledger::follower::{self, PassReport};
use conduct_walker::ledger::pull::{self, PullReport};
use conduct_walker::store::ledger as lstore;
use conduct_walker::store::outbox;
use conduct_walker::store::{Store, verify};
use ledger_fake::FakeLedger;
use store_support::*;

const INTAKE: &str = "https://ledger.example/witness";

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

struct World {
    _dir: tempfile::TempDir,
    store: Store,
    ledger: FakeLedger,
    shas: Vec<String>,
    policy: Policy,
}

/// `k` records filed (201) at `filed_at` and given to the ledger.
fn world(k: u64, filed_at: &str) -> World {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("walker.db")).unwrap();
    let ledger = FakeLedger::default();
    let mut shas = Vec::new();
    for i in 0..k {
        let bytes = record_bytes(i + 1, i.is_multiple_of(2));
        shas.push(file(&store, &ledger, bytes, filed_at));
    }
    World {
        _dir: dir,
        store,
        ledger,
        shas,
        policy: Policy::default(),
    }
}

/// Another witness's record (canonical text) about `endpoint` of `origin`.
fn foreign(seed: u64, origin: &str, endpoint: &str, signed: bool, walked: &str) -> String {
    let v = record_value(seed, origin, endpoint, signed, walked);
    String::from_utf8(conduct_walker::canonical::to_bytes(&v)).unwrap()
}

fn file(store: &Store, ledger: &FakeLedger, bytes: Vec<u8>, filed_at: &str) -> String {
    let rec = store.insert_record(&unsigned(bytes.clone())).unwrap();
    file_accepted(store.connection(), rec.row.id, INTAKE, "1.2.3.4", filed_at);
    ledger.file(std::str::from_utf8(&bytes).unwrap());
    rec.row.sha256
}

impl World {
    async fn pass(&mut self, at: &str) -> PassReport {
        follower::pass(&self.ledger, &mut self.store, INTAKE, &self.policy, t(at))
            .await
            .unwrap()
    }

    /// `ledger pull` of `endpoint`'s records: a follower pass, then the batches it holds.
    async fn pull(&mut self, endpoint: &str, at: &str) -> PullReport {
        pull::pull(&self.ledger, &mut self.store, INTAKE, endpoint, t(at))
            .await
            .unwrap()
    }

    /// The daemon's pull, from the head the last pass held.
    async fn pull_held(&mut self, endpoint: &str, at: &str) -> PullReport {
        pull::pull_held(&self.ledger, &mut self.store, INTAKE, endpoint, t(at))
            .await
            .unwrap()
    }

    fn rows(&self) -> Vec<lstore::FollowRow> {
        lstore::all(self.store.connection()).unwrap()
    }

    fn findings(&self) -> Vec<lstore::Finding> {
        lstore::latest_findings(self.store.connection(), 1000).unwrap()
    }

    fn kinds(&self) -> Vec<String> {
        let mut k: Vec<_> = self.findings().into_iter().map(|f| f.kind).collect();
        k.sort();
        k
    }

    /// What the ledger may never change: every record row, every outbox row, verify's verdict.
    fn own_state(&self) -> (String, Vec<outbox::Submission>, bool, u64) {
        let conn = self.store.connection();
        let records: Vec<String> = conn
            .prepare("SELECT sha256 || hex(chain_hash) FROM records ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let subs: Vec<outbox::Submission> = (1..=self.shas.len() as i64)
            .map(|id| outbox::get(conn, id).unwrap())
            .collect();
        let report = verify::verify_all(&self.store, |_, _| {}).unwrap();
        (records.join(","), subs, report.is_ok(), report.rows)
    }
}

#[tokio::test(flavor = "current_thread")]
async fn anchored_records_are_verified_with_one_entry_read_per_batch() {
    let mut w = world(5, "2026-12-01T13:00:00Z");
    let before = w.own_state();
    let r = w.pass("2026-12-01T13:05:00Z").await;
    assert_eq!(r.polled, 5, "{r:?}");
    assert!(
        w.rows()
            .iter()
            .all(|r| r.last_seen.as_deref() == Some("pending"))
    );
    // Nothing moves until a batch: no reads of records in between.
    let quiet = w.pass("2026-12-01T18:00:00Z").await;
    assert_eq!(quiet.polled, 0, "{quiet:?}");
    w.ledger.anchor("2026-12-02T00:30:00.120Z", 200);
    w.ledger.checkpoint("2026-12-02T00:30:00.200Z");
    let reads_before = w.ledger.total_reads();
    let r = w.pass("2026-12-02T00:31:00Z").await;
    assert_eq!(
        (r.anchored, r.verified, r.findings_opened),
        (5, 5, 0),
        "{r:?}"
    );
    assert_eq!(r.head.as_ref().map(|h| h.n), Some(2));
    // head + export + 2 raw entries (batch, checkpoint) + 5 records + the batch's JSON and raw once.
    assert_eq!(w.ledger.total_reads() - reads_before, 1 + 1 + 2 + 5 + 2);
    for row in w.rows() {
        assert_eq!(row.state, "anchored");
        assert_eq!(row.ledger_entry, Some(1));
        assert!(row.verified_at.is_some() && row.claim_sha256.is_some());
        assert_eq!(row.next_poll_at, None, "followed to the end");
        assert!(
            row.describe()
                .starts_with("anchored at entry 1, inclusion verified")
        );
    }
    let st = lstore::intake(w.store.connection(), INTAKE).unwrap();
    assert_eq!(
        (st.filed, st.pending, st.anchored, st.verified, st.findings),
        (5, 0, 5, 5, 0)
    );
    assert_eq!(st.head_n, Some(2));
    // The next pass reads only the head, once it is due.
    let later = w.pass("2026-12-02T01:00:00Z").await;
    assert_eq!((later.reads, later.findings_opened), (1, 0), "{later:?}");
    assert_eq!(before, w.own_state());
}

#[tokio::test(flavor = "current_thread")]
async fn a_404_after_the_201_is_a_finding_only_after_the_grace() {
    let mut w = world(1, "2026-12-01T13:00:00Z");
    w.ledger.0.borrow_mut().hide.push(w.shas[0].clone());
    w.pass("2026-12-01T13:04:00Z").await;
    assert!(w.findings().is_empty(), "a brief 404 is tolerated");
    let row = &w.rows()[0];
    assert_eq!(row.last_seen.as_deref(), Some("not_found"));
    assert!(row.next_poll_at.as_deref().unwrap() <= "2026-12-01T13:15:00Z");
    w.pass("2026-12-01T13:15:00Z").await;
    assert_eq!(w.kinds(), vec!["not_found_after_accept"]);
    assert_eq!(w.findings()[0].sha256.as_deref(), Some(w.shas[0].as_str()));
    assert_eq!(w.rows()[0].state, "finding");
    // Still followed, the finding kept, not opened twice.
    assert!(w.rows()[0].next_poll_at.is_some());
    w.pass("2026-12-02T01:00:00Z").await;
    assert_eq!(w.kinds(), vec!["not_found_after_accept"]);
}

#[tokio::test(flavor = "current_thread")]
async fn not_anchored_in_time_is_an_overdue_finding() {
    let mut w = world(2, "2026-12-01T13:00:00Z");
    w.policy.overdue_after = Duration::hours(30);
    w.pass("2026-12-01T13:05:00Z").await;
    w.pass("2026-12-02T18:59:00Z").await;
    assert!(w.findings().is_empty());
    w.pass("2026-12-02T19:00:00Z").await;
    assert_eq!(w.kinds(), vec!["overdue", "overdue"]);
    assert!(
        w.rows()
            .iter()
            .all(|r| r.state == "finding" && r.overdue_at.is_some())
    );
    assert_eq!(
        lstore::intake(w.store.connection(), INTAKE)
            .unwrap()
            .overdue,
        2
    );
    // Anchored late: inclusion is still checked, the overdue finding stays.
    w.ledger.anchor("2026-12-03T00:30:00.000Z", 200);
    let r = w.pass("2026-12-03T00:45:00Z").await;
    assert_eq!(r.verified, 2, "{r:?}");
    assert_eq!(w.kinds(), vec!["overdue", "overdue"]);
}

#[tokio::test(flavor = "current_thread")]
async fn stored_bytes_that_differ_from_ours_are_a_finding() {
    let mut w = world(2, "2026-12-01T13:00:00Z");
    w.ledger
        .0
        .borrow_mut()
        .stored_bytes_override
        .insert(w.shas[1].clone(), "{\"forged\":true}".into());
    w.ledger.anchor("2026-12-02T00:30:00.000Z", 200);
    let r = w.pass("2026-12-02T00:35:00Z").await;
    assert_eq!((r.anchored, r.verified), (2, 1), "{r:?}");
    let f = w.findings();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].kind, "stored_bytes_differ");
    assert_eq!(f[0].sha256.as_deref(), Some(w.shas[1].as_str()));
    assert_eq!(
        f[0].evidence["stored_sha256"],
        conduct_walker::digest::sha256_hex(b"{\"forged\":true}")
    );
    let bad = w
        .rows()
        .into_iter()
        .find(|r| r.sha256 == w.shas[1])
        .unwrap();
    assert_eq!(bad.state, "finding");
    assert_eq!(bad.verified_at, None);
}

#[tokio::test(flavor = "current_thread")]
async fn a_rewound_head_is_a_finding_with_both_heads() {
    let mut w = world(1, "2026-12-01T13:00:00Z");
    w.ledger.anchor("2026-12-01T14:00:00.000Z", 200);
    w.ledger.checkpoint("2026-12-01T14:00:00.100Z");
    w.pass("2026-12-01T14:05:00Z").await;
    let (n, held) = w.ledger.head();
    assert_eq!(n, 2);
    w.ledger.0.borrow_mut().rewind_to = Some(1);
    let before = w.own_state();
    w.pass("2026-12-01T14:30:00Z").await;
    let f = w.findings();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].kind, "rewound_head");
    assert_eq!(f[0].evidence["held"]["n"], 2);
    assert_eq!(f[0].evidence["held"]["head"], held.as_str());
    assert_eq!(f[0].evidence["served"]["n"], 1);
    // The held head is kept, not replaced by the rewound one.
    assert_eq!(
        lstore::intake(w.store.connection(), INTAKE).unwrap().head_n,
        Some(2)
    );
    assert_eq!(before, w.own_state());
}

#[tokio::test(flavor = "current_thread")]
async fn a_changed_entry_and_a_forked_head_are_findings() {
    let mut w = world(1, "2026-12-01T13:00:00Z");
    w.ledger.anchor("2026-12-01T14:00:00.000Z", 200);
    w.pass("2026-12-01T14:05:00Z").await;
    assert!(w.findings().is_empty());
    // Rewrite entry 1's created_at: same claim, another head at the same n (a fork).
    w.ledger.0.borrow_mut().entries[0].created_at = "2026-12-01T14:00:09.000Z".into();
    w.pass("2026-12-01T14:30:00Z").await;
    // The served head and the export's end line both disagree with the head held at n = 1.
    assert_eq!(w.kinds(), vec!["export_end_differs", "forked_head"]);
    let fork = w
        .findings()
        .into_iter()
        .find(|f| f.kind == "forked_head")
        .unwrap();
    assert_eq!(fork.evidence["held"]["n"], 1);
    assert_ne!(
        fork.evidence["held"]["head"],
        fork.evidence["served"]["head"]
    );
    // Rewrite its bytes and append: the old row's claim changed, the junction forks.
    {
        let mut st = w.ledger.0.borrow_mut();
        st.entries[0].raw.push(' ');
        st.entries[0].claim = conduct_walker::digest::sha256_hex(st.entries[0].raw.as_bytes());
    }
    let extra = record_bytes(99, true);
    file(&w.store, &w.ledger, extra, "2026-12-01T14:40:00Z");
    w.ledger.anchor("2026-12-01T15:00:00.000Z", 200);
    w.pass("2026-12-01T15:00:00Z").await;
    let kinds = w.kinds();
    assert!(kinds.contains(&"entry_changed".to_string()), "{kinds:?}");
    assert!(
        kinds.contains(&"forked_at_junction".to_string()),
        "{kinds:?}"
    );
    let changed = w
        .findings()
        .into_iter()
        .find(|f| f.kind == "entry_changed")
        .unwrap();
    assert_eq!(changed.evidence["n"], 1);
    assert_ne!(
        changed.evidence["held"]["claim_sha256"],
        changed.evidence["served"]["claim_sha256"]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_down_or_garbage_ledger_changes_only_findings() {
    let mut w = world(3, "2026-12-01T13:00:00Z");
    let before = w.own_state();
    w.ledger.0.borrow_mut().down = true;
    let r = w.pass("2026-12-01T13:05:00Z").await;
    assert!(r.unreadable > 0 && r.findings_opened == 0, "{r:?}");
    assert!(w.findings().is_empty(), "down is not a finding");
    assert!(w.rows().iter().all(|r| r.state == "pending"));
    {
        let mut st = w.ledger.0.borrow_mut();
        st.down = false;
        st.garbage = true;
    }
    w.pass("2026-12-01T13:30:00Z").await;
    assert!(
        w.kinds().iter().all(|k| k == "garbage_answer"),
        "{:?}",
        w.kinds()
    );
    assert!(!w.kinds().is_empty());
    assert!(w.rows().iter().all(|r| r.ledger_entry.is_none()));
    // Lying bytes on top: the records, the outbox and verify stay as they were.
    {
        let mut st = w.ledger.0.borrow_mut();
        st.garbage = false;
        for s in w.shas.clone() {
            st.stored_bytes_override.insert(s, "{}".into());
        }
    }
    w.ledger.anchor("2026-12-02T00:30:00.000Z", 200);
    w.pass("2026-12-02T00:40:00Z").await;
    assert!(w.kinds().contains(&"stored_bytes_differ".to_string()));
    assert_eq!(before, w.own_state());
}

#[tokio::test(flavor = "current_thread")]
async fn an_export_longer_than_the_cap_is_a_finding_and_nothing_is_held() {
    let mut w = world(1, "2026-12-01T13:00:00Z");
    w.ledger.anchor("2026-12-01T14:00:00.000Z", 200);
    w.ledger.checkpoint("2026-12-01T14:00:00.100Z");
    assert_eq!(w.ledger.head().0, 2);
    let before = w.own_state();
    // Two new rows against a cap of one: the pass stops reading and judges nothing from half.
    w.policy.max_new_rows = 1;
    w.pass("2026-12-01T14:05:00Z").await;
    let f = w.findings();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].kind, "export_too_long");
    assert_eq!(f[0].evidence["new_rows_over"], 1);
    assert_eq!(
        lstore::intake(w.store.connection(), INTAKE).unwrap().head_n,
        None,
        "no head is held from a cut export"
    );
    assert_eq!(before, w.own_state());
    // With room for the export, the next pass holds its head.
    w.policy.max_new_rows = Policy::default().max_new_rows;
    w.pass("2026-12-01T14:30:00Z").await;
    assert_eq!(
        lstore::intake(w.store.connection(), INTAKE).unwrap().head_n,
        Some(2)
    );
    assert_eq!(w.kinds(), vec!["export_too_long"], "no other finding");
}

#[tokio::test(flavor = "current_thread")]
async fn replies_are_kept_as_versions() {
    let mut w = world(1, "2026-12-01T13:00:00Z");
    w.pass("2026-12-01T13:05:00Z").await;
    let reply = serde_json::json!([{"response_sha": "d".repeat(64),
        "url": format!("https://ledger.example/response/{}", "d".repeat(64)),
        "subject_origin": "https://agent.example", "responded_at": "2026-12-01T20:00:00Z"}]);
    w.ledger
        .0
        .borrow_mut()
        .responses
        .insert(w.shas[0].clone(), reply.clone());
    w.ledger.anchor("2026-12-02T00:30:00.000Z", 200);
    w.pass("2026-12-02T00:40:00Z").await;
    let v = lstore::responses_for(w.store.connection(), &w.shas[0]).unwrap();
    assert_eq!(v.len(), 2, "{v:?}");
    assert_eq!(v[0].count, 0);
    assert_eq!(v[1].responses, reply);
}

/// `ledger status` lists each followed record with its own findings and its latest reply
/// count (read in one pass over each table), and exits 1 on a finding.
#[tokio::test(flavor = "current_thread")]
async fn ledger_status_names_each_records_findings_and_replies() {
    let mut w = world(3, "2026-12-01T13:00:00Z");
    w.pass("2026-12-01T13:05:00Z").await;
    let replies = |n: usize| {
        serde_json::json!(
            (0..n)
                .map(
                    |i| serde_json::json!({"response_sha": format!("{i}").repeat(64),
            "url": format!("https://ledger.example/response/{}", format!("{i}").repeat(64)),
            "subject_origin": "https://agent.example", "responded_at": "2026-12-01T20:00:00Z"})
                )
                .collect::<Vec<_>>()
        )
    };
    {
        let mut st = w.ledger.0.borrow_mut();
        st.stored_bytes_override
            .insert(w.shas[1].clone(), "{\"forged\":true}".into());
        st.responses.insert(w.shas[2].clone(), replies(1));
    }
    w.ledger.anchor("2026-12-02T00:30:00.000Z", 200);
    w.pass("2026-12-02T00:40:00Z").await;
    // Two versions of the replies (none at the first poll, then one): the latest is counted.
    let versions = lstore::responses_for(w.store.connection(), &w.shas[2]).unwrap();
    assert_eq!(
        versions.iter().map(|v| v.count).collect::<Vec<_>>(),
        vec![0, 1]
    );
    let status = |json: bool| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_conduct-walker"));
        c.args(["ledger", "status", "--db"])
            .arg(w._dir.path().join("walker.db"));
        if json {
            c.arg("--json");
        }
        c.output().unwrap()
    };
    let out = status(true);
    assert_eq!(out.status.code(), Some(1), "a finding: exit 1");
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |sha: &str| lines.iter().find(|l| l["sha256"] == sha).unwrap();
    let kinds = |sha: &str| {
        of(sha)["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["kind"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(kinds(&w.shas[0]), Vec::<String>::new());
    assert_eq!(kinds(&w.shas[1]), vec!["stored_bytes_differ"]);
    assert_eq!(kinds(&w.shas[2]), Vec::<String>::new());
    assert_eq!(
        (
            of(&w.shas[0])["replies"].clone(),
            of(&w.shas[2])["replies"].clone()
        ),
        (serde_json::json!(0), serde_json::json!(1))
    );
    let text = String::from_utf8(status(false).stdout).unwrap();
    let line = |sha: &str| text.lines().find(|l| l.starts_with(&sha[..12])).unwrap();
    assert!(
        line(&w.shas[1]).contains("[finding stored_bytes_differ at "),
        "{text}"
    );
    assert!(
        line(&w.shas[2]).contains("1 repl(y/ies) from the measured party"),
        "{text}"
    );
    assert!(!line(&w.shas[0]).contains("finding"), "{text}");
}

#[tokio::test(flavor = "current_thread")]
async fn the_rate_per_intake_is_never_exceeded() {
    let mut w = world(40, "2026-12-01T13:00:00Z");
    w.policy.rate_per_minute = 10;
    let r = w.pass("2026-12-01T13:05:00Z").await;
    assert!(r.out_of_budget);
    assert_eq!(r.reads, 10);
    let r = w.pass("2026-12-01T13:05:30Z").await;
    assert_eq!(r.reads, 5, "half a minute refills half");
    let mut at = t("2026-12-01T13:06:00Z");
    while w.rows().iter().any(|r| r.last_seen.is_none()) {
        let r = follower::pass(&w.ledger, &mut w.store, INTAKE, &w.policy, at)
            .await
            .unwrap();
        assert!(r.reads <= 10);
        at += Duration::minutes(1);
    }
}

#[tokio::test(flavor = "current_thread")]
async fn pull_keeps_other_witnesses_records_checked_against_their_batch() {
    let mut w = world(1, "2026-12-01T13:00:00Z");
    let endpoint = "https://agent.example/a2a";
    // Two other witnesses' records about the same endpoint, one about another endpoint.
    let theirs = |i: u64, ep: &str| {
        foreign(
            100 + i,
            "https://agent.example",
            ep,
            i.is_multiple_of(2),
            &walked_at(i * 3600),
        )
    };
    let a = w.ledger.file(&theirs(1, endpoint));
    let b = w.ledger.file(&theirs(2, endpoint));
    let _other = w.ledger.file(&theirs(3, "https://other.example/a2a"));
    // The intake serves b's bytes altered: kept, with what disagreed.
    w.ledger
        .0
        .borrow_mut()
        .stored_bytes_override
        .insert(b.clone(), theirs(4, endpoint));
    w.ledger.anchor("2026-12-02T00:30:00.000Z", 200);
    let r = w.pull(endpoint, "2026-12-02T00:40:00Z").await;
    assert_eq!(
        (r.listed, r.ours, r.kept, r.disagreeing),
        (3, 1, 2, 1),
        "{r:?}"
    );
    let kept = lstore::foreign_for_endpoint(w.store.connection(), endpoint, 10).unwrap();
    let ok = kept.iter().find(|f| f.sha256 == a).unwrap();
    assert_eq!(ok.checked, "ok");
    assert_eq!(ok.ledger_entry, 1);
    assert!(ok.walked_at.is_some() && ok.outcome.is_some());
    let bad = kept.iter().find(|f| f.sha256 == b).unwrap();
    assert!(
        bad.checked.contains("bytes_do_not_hash_to_sha"),
        "{}",
        bad.checked
    );
    // Not our records: our store's records and chain are untouched.
    assert_eq!(w.store.count().unwrap(), 1);
    // A second pull reads nothing again.
    let again = w.pull(endpoint, "2026-12-02T00:41:00Z").await;
    assert_eq!((again.entries_read, again.kept), (0, 0));
}

/// Item 7: a simulated day. 1,000 records filed from 01:00 to 23:39 UTC, an operator batch at
/// 12:00, the scheduled run at 00:30 (the newer worker's five batches of 200, then a
/// checkpoint); the follower passes every minute at the default rate. Every record ends
/// anchored and verified, with about two reads per record (BENCHMARKS.md).
#[tokio::test(flavor = "current_thread")]
async fn a_simulated_day_follows_1000_records_to_anchoring_with_bounded_reads() {
    let mut w = world(0, "2026-11-30T01:00:00Z");
    let start = t("2026-11-30T01:00:00Z");
    let mut filed = 0u64;
    let mut at = start;
    let end = t("2026-12-01T02:00:00Z");
    let mut operator_done = false;
    let mut run_done = false;
    let mut all_verified_at = None;
    let mut cache = follower::Cache::default();
    while at <= end {
        // One record every 68 s: 1,000 by 19:53.
        while filed < 1000 && start + Duration::seconds(68 * filed as i64) <= at {
            let bytes = record_bytes(10_000 + filed, !filed.is_multiple_of(3));
            let sha = file(&w.store, &w.ledger, bytes, &lstore::ts(at));
            w.shas.push(sha);
            filed += 1;
        }
        if !operator_done && at >= t("2026-11-30T12:00:00Z") {
            w.ledger.anchor("2026-11-30T12:00:00.000Z", 200);
            operator_done = true;
        }
        if !run_done && at >= t("2026-12-01T00:30:00Z") {
            for _ in 0..5 {
                w.ledger.anchor("2026-12-01T00:30:00.000Z", 200);
            }
            w.ledger.checkpoint("2026-12-01T00:30:00.500Z");
            run_done = true;
        }
        follower::pass_cached(&w.ledger, &mut w.store, INTAKE, &w.policy, at, &mut cache)
            .await
            .unwrap();
        if all_verified_at.is_none() && filed == 1000 {
            let st = lstore::intake(w.store.connection(), INTAKE).unwrap();
            if st.verified == 1000 {
                all_verified_at = Some(at);
            }
        }
        at += Duration::minutes(1);
    }
    let st = lstore::intake(w.store.connection(), INTAKE).unwrap();
    assert_eq!(
        (st.filed, st.anchored, st.verified, st.findings),
        (1000, 1000, 1000, 0)
    );
    let reads = w.ledger.total_reads();
    let by: Vec<(String, u64)> = ["head", "export", "entry_raw", "entry_json", "witness"]
        .iter()
        .map(|k| (k.to_string(), w.ledger.reads_of(k)))
        .collect();
    println!(
        "simulated day: 1000 records, all verified at {:?}, {reads} reads {by:?}",
        all_verified_at
    );
    assert_eq!(st.reads as u64, reads, "the store counts every read");
    // At most two `/witness/<sha>` reads per record (once after filing, once when its batch
    // lists it), the head every 15 minutes and after the run, one export per new head, each
    // entry's bytes once, and each batch's JSON view and bytes once for inclusion.
    assert!(w.ledger.reads_of("witness") <= 2000);
    assert!(w.ledger.reads_of("head") <= 24 * 4 + 8);
    assert!(w.ledger.reads_of("export") <= 4);
    assert!(w.ledger.reads_of("entry_json") <= 6, "{by:?}");
    assert!(reads <= 2130, "{reads}");
    assert!(all_verified_at.unwrap() < t("2026-12-01T01:10:00Z"));
}

#[tokio::test(flavor = "current_thread")]
async fn the_faces_show_the_ledger_life_figures_and_findings() {
    use conduct_walker::pages::{Context, render};
    let mut w = world(3, "2026-12-01T13:00:00Z");
    w.ledger
        .0
        .borrow_mut()
        .stored_bytes_override
        .insert(w.shas[2].clone(), "{}".into());
    w.pass("2026-12-01T13:05:00Z").await;
    w.ledger.anchor("2026-12-02T00:30:00.000Z", 200);
    w.pass("2026-12-02T00:35:00Z").await;
    // The record page: filed → anchored at entry 1 → inclusion verified; replies read.
    let page = render::record(&w.store, &w.shas[0], "test").unwrap();
    assert!(page.contains("id=\"ledger\""), "{page}");
    assert!(page.contains("anchored at entry 1, inclusion verified"));
    assert!(page.contains("filed (accepted by the intake) at 2026-12-01T13:00:00Z"));
    assert!(page.contains("id=\"replies\""));
    // The record whose stored copy differs shows its finding and evidence.
    let bad = render::record(&w.store, &w.shas[2], "test").unwrap();
    assert!(bad.contains("stored_bytes_differ"), "{bad}");
    // The overview: per intake figures and the head held.
    let ov = render::overview(
        w.store.connection(),
        &Context::default(),
        &(None, false),
        1,
        t("2026-12-02T00:40:00Z"),
        "test",
        &Default::default(),
    )
    .unwrap();
    assert!(ov.contains("data-ledger=\"filed\">3<"), "{ov}");
    assert!(ov.contains("data-ledger=\"verified\">2<"));
    assert!(ov.contains("data-ledger=\"findings\">1<"));
    assert!(ov.contains("head held: n = 1"));
    // /metrics from the per-intake row; /healthz names the finding.
    let m = conduct_walker::daemon::ledger_faces::metrics_text(w.store.connection()).unwrap();
    assert!(
        m.contains(&format!(
            "conduct_walker_ledger_anchored{{intake=\"{INTAKE}\"}} 2"
        )),
        "{m}"
    );
    assert!(m.contains(&format!(
        "conduct_walker_ledger_findings_total{{intake=\"{INTAKE}\"}} 1"
    )));
    assert!(m.contains(&format!(
        "conduct_walker_ledger_head_n{{intake=\"{INTAKE}\"}} 1"
    )));
    let h = conduct_walker::daemon::ledger_faces::health(w.store.connection());
    assert_eq!(h["open_findings"], 1);
    assert_eq!(h["latest_findings"][0]["kind"], "stored_bytes_differ");
    // The endpoint page: other witnesses' records pulled from the ledger.
    let other = foreign(
        500,
        "https://agent.example",
        "https://agent.example/a2a",
        false,
        &walked_at(7),
    );
    w.ledger.file(&other);
    w.ledger.anchor("2026-12-02T01:00:00.000Z", 200);
    w.pull("https://agent.example/a2a", "2026-12-02T01:05:00Z")
        .await;
    let ep = render::endpoints(
        w.store.connection(),
        Some("https://agent.example/a2a"),
        "test",
    )
    .unwrap();
    assert!(ep.contains("id=\"foreign\""), "{ep}");
    assert!(ep.contains("class=\"foreign-witness\""));
    assert!(ep.contains("agrees with its batch"));
    assert!(ep.contains("The ledger keeps no signature"));
}

#[tokio::test(flavor = "current_thread")]
async fn a_first_sync_recomputes_an_old_chain_but_reads_no_old_entry_bytes() {
    let mut w = world(0, "2026-12-01T13:00:00Z");
    // Thirty batches of other witnesses' records, written weeks before we filed anything.
    for i in 0..30u64 {
        w.ledger.file(&foreign(
            700 + i,
            "https://x.example",
            "https://x.example/a2a",
            true,
            &walked_at(i),
        ));
        w.ledger
            .anchor(&format!("2026-11-{:02}T00:30:00.000Z", 1 + i % 28), 200);
    }
    let ours = file(
        &w.store,
        &w.ledger,
        record_bytes(1, true),
        "2026-12-01T13:00:00Z",
    );
    w.shas.push(ours);
    w.ledger.anchor("2026-12-01T13:30:00.000Z", 200);
    let r = w.pass("2026-12-01T13:31:00Z").await;
    assert_eq!(r.new_entries, 31, "{r:?}");
    assert_eq!(r.verified, 1, "{r:?}");
    // The chain over all 31 was recomputed from one export; only our batch's bytes were read.
    assert_eq!(w.ledger.reads_of("export"), 1);
    assert_eq!(
        w.ledger.reads_of("entry_raw"),
        2,
        "the new batch once, and once for inclusion"
    );
    assert!(w.findings().is_empty());
}

/// An entry whose served bytes do not hash to its claim (ledger.md §7 step 3) is the finding
/// `entry_bytes_differ`, kept with both hashes; our records and chain stay as they were.
#[tokio::test(flavor = "current_thread")]
async fn entry_bytes_that_do_not_hash_to_their_claim_are_a_finding() {
    let mut w = world(1, "2026-12-01T13:00:00Z");
    w.ledger.anchor("2026-12-01T14:00:00.000Z", 200);
    let claim = w.ledger.0.borrow().entries[0].claim.clone();
    let forged = w.ledger.0.borrow().entries[0]
        .raw
        .replace("\"count\"", "\"count\" ");
    w.ledger
        .0
        .borrow_mut()
        .raw_override
        .insert(1, forged.clone());
    let before = w.own_state();
    w.pass("2026-12-01T14:05:00Z").await;
    let f: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.kind == "entry_bytes_differ")
        .collect();
    assert_eq!(f.len(), 1, "{:?}", w.kinds());
    assert_eq!(f[0].entry_n, Some(1));
    assert_eq!(f[0].evidence["claim_sha256"], claim.as_str());
    assert_eq!(
        f[0].evidence["bytes_sha256"],
        conduct_walker::digest::sha256_hex(forged.as_bytes()).as_str()
    );
    assert_eq!(before, w.own_state());
}

/// The follower reads an entry's bytes as `ledger verify` does (`audit::read_entry`): a batch
/// whose `count` is not its number of rows (§4.4) and bytes that are no ledger text are
/// findings here too, each named once with its entry.
#[tokio::test(flavor = "current_thread")]
async fn a_miscounted_batch_and_unreadable_entry_bytes_are_findings_as_ledger_verify_names_them() {
    let mut w = world(1, "2026-12-01T13:00:00Z");
    w.ledger.anchor("2026-12-01T14:00:00.000Z", 200);
    let raw = w.ledger.0.borrow().entries[0].raw.clone();
    let miscounted = raw.replacen("\"count\":1,", "\"count\":3,", 1);
    assert_ne!(miscounted, raw, "entry 1 is a batch of 1: {raw}");
    w.ledger.0.borrow_mut().raw_override.insert(1, miscounted);
    w.pass("2026-12-01T14:05:00Z").await;
    let f: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.kind == "batch_count_differs")
        .collect();
    assert_eq!(f.len(), 1, "{:?}", w.kinds());
    assert_eq!(f[0].entry_n, Some(1));
    assert_eq!(
        (&f[0].evidence["count"], &f[0].evidence["rows"]),
        (&serde_json::json!(3), &serde_json::json!(1))
    );

    let mut w = world(1, "2026-12-01T13:00:00Z");
    w.ledger.anchor("2026-12-01T14:00:00.000Z", 200);
    w.ledger
        .0
        .borrow_mut()
        .raw_override
        .insert(1, "not a ledger text".into());
    w.pass("2026-12-01T14:05:00Z").await;
    let kinds = w.kinds();
    assert!(kinds.iter().any(|k| k == "entry_unreadable"), "{kinds:?}");
    assert!(!kinds.iter().any(|k| k == "entry_missing"), "{kinds:?}");
}

/// An entry the export lists whose raw bytes answer 404 (ledger.md §7 step 3) is the finding
/// `entry_missing`, kept with its claim; our records and chain stay as they were.
#[tokio::test(flavor = "current_thread")]
async fn an_entry_whose_bytes_answer_404_is_a_finding() {
    let mut w = world(1, "2026-12-01T13:00:00Z");
    w.ledger.anchor("2026-12-01T14:00:00.000Z", 200);
    let claim = w.ledger.0.borrow().entries[0].claim.clone();
    w.ledger.0.borrow_mut().raw_missing.push(1);
    let before = w.own_state();
    w.pass("2026-12-01T14:05:00Z").await;
    let f: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.kind == "entry_missing")
        .collect();
    assert_eq!(f.len(), 1, "{:?}", w.kinds());
    assert_eq!(f[0].entry_n, Some(1));
    assert_eq!(f[0].evidence["claim_sha256"], claim.as_str());
    assert_eq!(f[0].evidence["status"], 404);
    assert_eq!(before, w.own_state());
}

/// The daemon pulls right after its own follower pass: `pull_held` keeps the same records from
/// the head that pass holds, and reads neither the head nor the export again.
#[tokio::test(flavor = "current_thread")]
async fn pull_held_works_from_the_head_a_pass_just_held() {
    let mut w = world(1, "2026-12-01T13:00:00Z");
    let endpoint = "https://agent.example/a2a";
    let theirs = w.ledger.file(&foreign(
        101,
        "https://agent.example",
        endpoint,
        false,
        &walked_at(3600),
    ));
    w.ledger.anchor("2026-12-02T00:30:00.000Z", 200);
    w.pass("2026-12-02T00:40:00Z").await;
    let (heads, exports) = (w.ledger.reads_of("head"), w.ledger.reads_of("export"));
    assert!(heads >= 1 && exports >= 1);
    let r = w.pull_held(endpoint, "2026-12-02T00:40:00Z").await;
    assert_eq!((r.listed, r.ours, r.kept), (2, 1, 1), "{r:?}");
    let kept = lstore::foreign_for_endpoint(w.store.connection(), endpoint, 10).unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(
        (kept[0].sha256.as_str(), kept[0].checked.as_str()),
        (theirs.as_str(), "ok")
    );
    assert_eq!(
        (w.ledger.reads_of("head"), w.ledger.reads_of("export")),
        (heads, exports)
    );
}

/// A batch whose bytes no longer hash to the claim held for its entry: the foreign records it
/// lists are kept, marked with what disagreed (the held chain is the reference, ledger.md §7).
#[tokio::test(flavor = "current_thread")]
async fn pull_marks_a_batch_that_differs_from_the_held_claim() {
    let mut w = world(1, "2026-12-01T13:00:00Z");
    let endpoint = "https://agent.example/a2a";
    let theirs = w.ledger.file(&foreign(
        102,
        "https://agent.example",
        endpoint,
        true,
        &walked_at(7200),
    ));
    w.ledger.anchor("2026-12-02T00:30:00.000Z", 200);
    w.pass("2026-12-02T00:40:00Z").await;
    let forged = w.ledger.0.borrow().entries[0]
        .raw
        .replace("\"count\"", "\"count\" ");
    w.ledger.0.borrow_mut().raw_override.insert(1, forged);
    let r = w.pull_held(endpoint, "2026-12-02T00:41:00Z").await;
    assert_eq!((r.kept, r.disagreeing), (1, 1), "{r:?}");
    let kept = lstore::foreign_for_endpoint(w.store.connection(), endpoint, 10).unwrap();
    assert_eq!(kept[0].sha256, theirs);
    // Named once, by inclusion's check against the claim held from the chain.
    assert_eq!(kept[0].checked, "batch_bytes_differ");
}
