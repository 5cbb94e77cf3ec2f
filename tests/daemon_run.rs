//! The real daemon binary against loopback sandbox agents: an accelerated schedule stores exactly
//! the expected records, `/metrics` and `/records` match the store, consent declines are never
//! walked, SIGHUP with a broken config keeps the old one, SIGTERM loses nothing.

mod daemon_support;

use conduct_walker::daemon::db;
use conduct_walker::digest::sha256_hex;
use conduct_walker::sandbox::{
    Behaviour, HttpsServer, Resp, SandboxAgent, SandboxCa, handler, scenario,
};
use conduct_walker::store::ListFilter;
use daemon_support::{Daemon, config, free_port, metric, target};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const EVERY_SECOND: &str = "* * * * * *";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn listen() -> SocketAddr {
    format!("127.0.0.1:{}", free_port()).parse().unwrap()
}

fn scenario_target(name: &str, agent: &SandboxAgent, scenario_name: &str) -> String {
    let sc = scenario(scenario_name).unwrap();
    let origin = agent.origin();
    let mut extra = format!(
        "mode = \"{}\"\nwire = \"{}\"\n",
        sc.mode.as_str(),
        sc.wire.as_str()
    );
    if let Some(p) = sc.endpoint_path {
        extra.push_str(&format!("endpoint = \"{origin}{p}\"\n"));
    }
    target(name, &origin, &extra, EVERY_SECOND)
}

#[test]
fn accelerated_schedule_stores_exactly_the_expected_records_and_metrics_match() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let names = ["honest-mcp", "honest-a2a", "metadata-missing"];
    let agents: Vec<SandboxAgent> = names
        .iter()
        .map(|n| {
            rt.block_on(SandboxAgent::start(&ca, scenario(n).unwrap().behaviour))
                .unwrap()
        })
        .collect();
    let targets: String = names
        .iter()
        .zip(&agents)
        .map(|(n, a)| scenario_target(n, a, n))
        .collect();
    let addr = listen();
    let mut d = Daemon::start(&ca, addr, &config(addr, 10, &targets));
    d.wait_for("two records per target", Duration::from_secs(60), |d| {
        let walks = d.walks();
        names.iter().all(|n| {
            walks
                .iter()
                .filter(|w| w.target == *n && w.state == "done")
                .count()
                >= 2
        })
    });

    // Stop the schedule with a valid reload (no targets) and let the last walks finish, so the
    // counters can be compared with the store at rest.
    let no_targets = config(addr, 10, "");
    std::fs::write(d.path("walker.toml"), no_targets).unwrap();
    d.signal("HUP");
    d.wait_for("the reload", Duration::from_secs(20), |d| {
        d.log().contains("configuration reloaded")
    });
    d.wait_for("walks in flight to finish", Duration::from_secs(30), |d| {
        let h = d.get_text("/healthz");
        let v: serde_json::Value = serde_json::from_str(&h).unwrap();
        v["walks_in_flight"] == 0 && v["targets"] == 0
    });

    let store = d.store().unwrap();
    let rows = store.list(&ListFilter::default()).unwrap();
    let walks = d.walks();
    let done: Vec<_> = walks.iter().filter(|w| w.state == "done").collect();
    // Every stored record came from exactly one finished walk, and every finished walk stored one.
    assert_eq!(rows.len(), done.len(), "walks: {walks:?}");
    for w in &done {
        let sha = w.record_sha256.as_deref().unwrap();
        assert!(rows.iter().any(|r| r.sha256 == sha), "{sha} not stored");
    }
    assert!(
        walks
            .iter()
            .all(|w| w.state != "running" && w.state != "aborted" && w.state != "error"),
        "{walks:?}"
    );
    // Each walk fetched the card exactly twice (n0, n1): no extra walks behind our back.
    for (n, a) in names.iter().zip(&agents) {
        let walked = done.iter().filter(|w| w.target == *n).count();
        assert_eq!(a.card_fetches(), 2 * walked, "{n}");
        let origin = a.origin();
        assert_eq!(
            rows.iter().filter(|r| r.meta.origin == origin).count(),
            walked,
            "{n}"
        );
    }
    // Verdicts as the scenarios say.
    for r in &rows {
        let v = r.meta.verdict.as_ref().unwrap();
        let is_failing = r.meta.origin == agents[2].origin();
        assert_eq!(v.outcome, if is_failing { "FAIL" } else { "PASS" });
    }

    // /metrics against the store.
    let m = d.get_text("/metrics");
    let mut expected: BTreeMap<String, f64> = BTreeMap::new();
    for r in &rows {
        let key = format!(
            "endpoint=\"{}\",outcome=\"{}\"",
            r.meta.endpoint,
            r.meta.verdict.as_ref().unwrap().outcome
        );
        *expected.entry(key).or_default() += 1.0;
    }
    let got: BTreeMap<String, f64> = metric(&m, "conduct_walker_walks_total")
        .into_iter()
        .collect();
    assert_eq!(got, expected, "{m}");
    let mut failures: BTreeMap<String, f64> = BTreeMap::new();
    store
        .for_each_record(&ListFilter::default(), |rec| {
            let v: serde_json::Value = serde_json::from_slice(&rec.canonical).unwrap();
            for a in v["assertions"].as_array().unwrap() {
                if a["result"] == false {
                    let name = a["claim"].as_str().unwrap().split(':').next().unwrap();
                    *failures.entry(format!("assertion=\"{name}\"")).or_default() += 1.0;
                }
            }
            Ok::<_, conduct_walker::store::StoreError>(())
        })
        .unwrap();
    assert!(!failures.is_empty());
    let got: BTreeMap<String, f64> = metric(&m, "conduct_walker_assertion_failures_total")
        .into_iter()
        .collect();
    assert_eq!(got, failures, "{m}");
    let by_state: BTreeMap<String, f64> = metric(&m, "conduct_walker_scheduled_walks_total")
        .into_iter()
        .collect();
    assert_eq!(by_state.get("state=\"done\""), Some(&(done.len() as f64)));
    let last = metric(&m, "conduct_walker_target_last_success_timestamp_seconds");
    assert_eq!(last.len(), names.len(), "{m}");

    // /records lists what `records list` lists; /records/<prefix> is the exact bytes.
    let listed: Vec<serde_json::Value> = serde_json::from_str(&d.get_text("/records")).unwrap();
    assert_eq!(listed.len(), rows.len());
    let fails: Vec<serde_json::Value> =
        serde_json::from_str(&d.get_text("/records?outcome=FAIL")).unwrap();
    assert_eq!(
        fails.len(),
        rows.iter()
            .filter(|r| r.meta.verdict.as_ref().unwrap().outcome == "FAIL")
            .count()
    );
    let first = store.get_by_sha256(&rows[0].sha256).unwrap().unwrap();
    let (status, raw) = d
        .get(&format!("/records/{}", &rows[0].sha256[..16]))
        .unwrap();
    assert_eq!(status, 200);
    assert_eq!(raw, first.canonical);
    assert_eq!(sha256_hex(&raw), rows[0].sha256);
    assert_eq!(d.get("/records/zz").unwrap().0, 400);
    assert_eq!(d.get("/records/ffffffffffffffff0").unwrap().0, 404);

    d.stop();
}

/// A server that declines listing in its consent file and counts every other request.
struct Decliner {
    server: HttpsServer,
    consent_reads: Arc<AtomicUsize>,
    other: Arc<AtomicUsize>,
    body: &'static str,
}

fn start_decliner(rt: &tokio::runtime::Runtime, ca: &SandboxCa) -> Decliner {
    const BODY: &str = "{\"listing\": \"decline\", \"note\": \"please do not walk us\"}";
    let consent_reads = Arc::new(AtomicUsize::new(0));
    let other = Arc::new(AtomicUsize::new(0));
    let (c, o) = (consent_reads.clone(), other.clone());
    let server = rt
        .block_on(HttpsServer::start(
            ca,
            handler(move |req| {
                if req.path == "/.well-known/mcp-conduct.json" {
                    c.fetch_add(1, Ordering::SeqCst);
                    Resp::bytes(200, "application/json", BODY)
                } else {
                    o.fetch_add(1, Ordering::SeqCst);
                    Resp::json(404, &serde_json::json!({"error": "not found"}))
                }
            }),
        ))
        .unwrap();
    Decliner {
        server,
        consent_reads,
        other,
        body: BODY,
    }
}

#[test]
fn an_origin_whose_consent_file_declines_is_never_walked() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let decliner = start_decliner(&rt, &ca);
    let control = rt
        .block_on(SandboxAgent::start(&ca, Behaviour::default()))
        .unwrap();
    let targets = format!(
        "{}{}",
        target("declines", &decliner.server.base(), "", EVERY_SECOND),
        target("control", &control.origin(), "", EVERY_SECOND)
    );
    let addr = listen();
    let mut d = Daemon::start(&ca, addr, &config(addr, 10, &targets));
    d.wait_for(
        "three declined fires and two walks",
        Duration::from_secs(60),
        |d| {
            let w = d.walks();
            w.iter()
                .filter(|w| w.target == "declines" && w.state == "declined")
                .count()
                >= 3
                && w.iter()
                    .filter(|w| w.target == "control" && w.state == "done")
                    .count()
                    >= 2
        },
    );
    // Never walked: no card fetch, no POST; and the file was read once (once a day per origin).
    assert_eq!(decliner.other.load(Ordering::SeqCst), 0);
    assert_eq!(decliner.consent_reads.load(Ordering::SeqCst), 1);
    let store = d.store().unwrap();
    let origin = decliner.server.base();
    assert_eq!(
        store
            .list(&ListFilter::default())
            .unwrap()
            .iter()
            .filter(|r| r.meta.origin == origin)
            .count(),
        0
    );
    let declined = db::declined_origins(store.connection()).unwrap();
    assert_eq!(declined.len(), 1);
    assert_eq!(declined[0].origin, origin);
    assert_eq!(
        declined[0].sha256.as_deref(),
        Some(sha256_hex(decliner.body.as_bytes()).as_str())
    );
    let walks = d.walks();
    let w = walks.iter().find(|w| w.state == "declined").unwrap();
    assert!(
        w.detail
            .as_deref()
            .unwrap()
            .contains(&sha256_hex(decliner.body.as_bytes()))
    );
    // The control origin (404 for the consent file) is walked as configured.
    assert!(control.card_fetches() >= 4);
    let m = d.get_text("/metrics");
    let g = metric(&m, "conduct_walker_consent_declined");
    assert_eq!(g.len(), 1, "{m}");
    assert!(g[0].0.contains(&origin) && g[0].1 == 1.0, "{m}");
    assert_eq!(
        metric(&m, "conduct_walker_consent_declined_origins"),
        vec![(String::new(), 1.0)]
    );
    d.stop();
}

#[test]
fn walk_command_refuses_a_declining_origin_unless_told_to_ignore_consent() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let decliner = start_decliner(&rt, &ca);
    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let walk = |extra: &[&str]| {
        std::process::Command::new(daemon_support::BIN)
            .current_dir(dir.path())
            .args(["walk", "--origin", &decliner.server.base()])
            .args([
                "--witness-name",
                "w",
                "--vantage",
                "v",
                "--allow-private-network",
            ])
            .args(["--ca-cert", "ca.pem", "--out", "rec.json"])
            .args(extra)
            .output()
            .unwrap()
    };
    let refused = walk(&[]);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("decline") && err.contains("--ignore-consent"),
        "{err}"
    );
    assert_eq!(decliner.other.load(Ordering::SeqCst), 0, "nothing walked");
    assert!(!dir.path().join("rec.json").exists());
    let walked = walk(&["--ignore-consent"]);
    // The server has no card: the walk runs and FAILs (exit 1), with a warning.
    assert_eq!(walked.status.code(), Some(1), "{walked:?}");
    assert!(String::from_utf8_lossy(&walked.stderr).contains("warning"));
    assert!(decliner.other.load(Ordering::SeqCst) >= 2);
    assert!(dir.path().join("rec.json").exists());
}

#[test]
fn sighup_with_a_broken_config_keeps_running_on_the_old_one() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let agent = rt
        .block_on(SandboxAgent::start(&ca, Behaviour::default()))
        .unwrap();
    let addr = listen();
    let good = config(addr, 10, &target("t", &agent.origin(), "", EVERY_SECOND));
    let mut d = Daemon::start(&ca, addr, &good);
    d.wait_for("a first record", Duration::from_secs(30), |d| {
        d.record_count() >= 1
    });
    let broken = good.replace("[daemon]\n", "[daemon]\nconcurency = 3\n");
    std::fs::write(d.path("walker.toml"), broken).unwrap();
    d.signal("HUP");
    d.wait_for("the refusal in the log", Duration::from_secs(20), |d| {
        d.log().contains("config reload refused")
    });
    let log = d.log();
    assert!(
        log.contains("concurency"),
        "the log names the bad key: {log}"
    );
    let before = d.record_count();
    d.wait_for(
        "walks to continue on the old config",
        Duration::from_secs(30),
        |d| d.record_count() >= before + 2,
    );
    assert_eq!(d.get("/healthz").unwrap().0, 200);
    d.stop();
}

/// An agent whose first card answer trickles (one byte every `every`): its first walk is slow.
fn slow_agent(rt: &tokio::runtime::Runtime, ca: &SandboxCa, every: Duration) -> SandboxAgent {
    rt.block_on(SandboxAgent::start(
        ca,
        Behaviour {
            card_trickle: Some(every),
            ..Behaviour::default()
        },
    ))
    .unwrap()
}

#[test]
fn sigterm_mid_walk_lets_it_finish_and_loses_nothing() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let agent = slow_agent(&rt, &ca, Duration::from_millis(2));
    let addr = listen();
    let mut d = Daemon::start(
        &ca,
        addr,
        &config(addr, 30, &target("slow", &agent.origin(), "", EVERY_SECOND)),
    );
    d.wait_for("a walk in flight", Duration::from_secs(30), |d| {
        d.walks().iter().any(|w| w.state == "running")
    });
    assert_eq!(d.record_count(), 0, "the first walk is still trickling");
    d.stop();
    let walks = d.walks();
    let done: Vec<_> = walks.iter().filter(|w| w.state == "done").collect();
    assert_eq!(done.len(), 1, "{walks:?}");
    assert!(
        walks
            .iter()
            .all(|w| w.state == "done" || w.state == "skipped_overlap"),
        "{walks:?}"
    );
    let store = d.store().unwrap();
    assert_eq!(store.count().unwrap(), 1);
    assert!(
        store
            .get_by_sha256(done[0].record_sha256.as_deref().unwrap())
            .unwrap()
            .is_some()
    );
    assert!(d.log().contains("stopped"));
    // A clean stop folds the write-ahead log into walker.db: that file alone is the whole store.
    let wal = std::fs::metadata(d.path("walker.db-wal")).map_or(0, |m| m.len());
    assert_eq!(wal, 0, "records left in walker.db-wal after a clean stop");
}

#[test]
fn sigterm_past_the_grace_period_records_the_walk_as_aborted_not_failed() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let agent = slow_agent(&rt, &ca, Duration::from_millis(20));
    let addr = listen();
    let mut d = Daemon::start(
        &ca,
        addr,
        &config(addr, 0, &target("slow", &agent.origin(), "", EVERY_SECOND)),
    );
    d.wait_for("a walk in flight", Duration::from_secs(30), |d| {
        d.walks().iter().any(|w| w.state == "running")
    });
    d.stop();
    let walks = d.walks();
    let aborted: Vec<_> = walks.iter().filter(|w| w.state == "aborted").collect();
    assert_eq!(aborted.len(), 1, "{walks:?}");
    assert!(
        aborted[0]
            .detail
            .as_deref()
            .unwrap()
            .contains("cut off by shutdown")
    );
    // No record claims the agent failed: nothing was stored for a walk that never finished.
    assert_eq!(d.store().unwrap().count().unwrap(), 0);
}
