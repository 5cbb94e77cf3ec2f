//! Issue 27: `/metrics` and the status pages read summary rows (migration 9) that triggers keep
//! in the transaction of each record, fire and submission. These tests hold them to a full recount
//! of the history (the code before migration 9), over stores the real daemon built: while it
//! walks, after kill -9, after a restart, at rest after a reload; and over a store from the
//! schema before migration 9, whose summary rows the migration builds.

mod common;
mod daemon_support;
mod pages_support;

use conduct_walker::daemon::db;
use conduct_walker::daemon::metrics::{RecordTally, Snapshot, render};
use conduct_walker::daemon::runner::RunnerStatus;
use conduct_walker::pages::{Context, render as pages};
use conduct_walker::sandbox::{HttpsServer, Resp, SandboxAgent, SandboxCa, handler, scenario};
use conduct_walker::store::schema::MIGRATIONS;
use conduct_walker::store::summary::{self, recount};
use conduct_walker::store::{Store, outbox, status};
use daemon_support::{Daemon, any_port, config, free_port, metric, runtime, start_intake, target};
use rusqlite::Connection;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// Every summary figure equals its recount, read in one snapshot of the store (the daemon may be
/// writing meanwhile). Returns the fires by state, for the caller to check what it expects.
fn summaries_equal_recount(conn: &Connection, when: &str) -> Vec<(String, u64)> {
    conn.execute_batch("BEGIN").unwrap();
    assert!(summary::has_summaries(conn).unwrap());
    assert_eq!(
        summary::records_by_endpoint_outcome(conn).unwrap(),
        recount::records_by_endpoint_outcome(conn).unwrap(),
        "{when}: records by endpoint and outcome"
    );
    let failures = summary::assertion_failures(conn).unwrap();
    assert_eq!(
        failures,
        recount::assertion_failures(conn).unwrap(),
        "{when}: assertion failures"
    );
    let fires = summary::fires_by_state(conn).unwrap();
    assert_eq!(
        fires,
        recount::fires_by_state(conn).unwrap(),
        "{when}: fires by state"
    );
    assert_eq!(
        summary::last_success(conn).unwrap(),
        recount::last_success(conn).unwrap(),
        "{when}: last success"
    );
    assert_eq!(
        summary::fired_endpoints(conn).unwrap(),
        recount::fired_endpoints(conn).unwrap(),
        "{when}: fired endpoints"
    );
    assert_eq!(
        summary::latest_consent(conn).unwrap(),
        recount::latest_consent(conn).unwrap(),
        "{when}: latest consent"
    );
    assert_eq!(
        summary::submissions(conn).unwrap(),
        recount::submissions(conn).unwrap(),
        "{when}: submissions"
    );
    assert_eq!(
        render(&Snapshot::read(conn).unwrap()),
        render(&Snapshot::recount(conn).unwrap()),
        "{when}: /metrics from the store"
    );
    conn.execute_batch("COMMIT").unwrap();
    fires
}

/// What a scrape shows from the store (the runner's part read as `Pipeline::status` reads it).
fn scrape(conn: &Connection) -> String {
    let mut snap = Snapshot::read(conn).unwrap();
    snap.runner = Some(RunnerStatus {
        outbox_depth: outbox::depth(conn).unwrap(),
        lanes_used_today: outbox::lanes_used(
            conn,
            &chrono::Utc::now().format("%Y-%m-%d").to_string(),
        )
        .unwrap(),
        submissions_by_answer: outbox::by_answer(conn).unwrap(),
        submissions_by_outcome: outbox::by_outcome(conn).unwrap(),
        lookups_by_result: conduct_walker::store::summary::lookups_by_result(conn).unwrap(),
    });
    render(&snap)
}

/// Every page and scrape of `db` rendered twice: from its summary rows, and from a copy whose
/// summary tables are dropped (so every figure is recounted from the history, as before
/// migration 9). The two must be the same text.
fn pages_and_metrics_equal_recount(db: &Path, when: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.db"), dir.path().join("b.db"));
    {
        // Called on a store nothing writes to: both copies are the same rows.
        // (VACUUM INTO writes its output through the source's connection: not a read-only one.)
        let src = Connection::open(db).unwrap();
        for p in [&a, &b] {
            src.execute("VACUUM INTO ?1", [p.to_str().unwrap()])
                .unwrap();
        }
    }
    {
        let conn = Connection::open(&b).unwrap();
        let objects: Vec<(String, String)> = conn
            .prepare("SELECT type, name FROM sqlite_master WHERE name LIKE 'summary\\_%' ESCAPE '\\' AND type IN ('table', 'trigger')")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(objects.len() >= 6, "{objects:?}");
        for (kind, name) in objects.iter().filter(|(k, _)| k == "trigger") {
            conn.execute_batch(&format!("DROP {kind} {name}")).unwrap();
        }
        for (kind, name) in objects.iter().filter(|(k, _)| k == "table") {
            conn.execute_batch(&format!("DROP {kind} {name}")).unwrap();
        }
    }
    let (sa, sb) = (
        Store::open_read_only(&a).unwrap(),
        Store::open_read_only(&b).unwrap(),
    );
    let (ca, cb) = (sa.connection(), sb.connection());
    assert!(summary::has_summaries(ca).unwrap());
    assert!(!summary::has_summaries(cb).unwrap());
    assert_eq!(scrape(ca), scrape(cb), "{when}: /metrics");
    assert_eq!(
        RecordTally::read(ca).unwrap(),
        RecordTally::recount(ca).unwrap()
    );
    let now = chrono::Utc::now();
    let ctx = Context::default();
    // The store's size is the one figure a dropped table changes.
    let without_size = |s: String| {
        let at = s.find("<dt>size</dt>").unwrap();
        let end = at + s[at..].find("</dd>").unwrap();
        format!("{}{}", &s[..at], &s[end..])
    };
    let overview = |c: &Connection| {
        without_size(
            pages::overview(c, &ctx, &(None, false), 1, now, "t", &Default::default()).unwrap(),
        )
    };
    assert_eq!(overview(ca), overview(cb), "{when}: overview");
    let targets = status::walked_targets(ca, 1000).unwrap();
    assert!(!targets.is_empty());
    for t in &targets {
        assert_eq!(
            pages::target(ca, &ctx, t, None, now, "t").unwrap(),
            pages::target(cb, &ctx, t, None, now, "t").unwrap(),
            "{when}: target page {t}"
        );
    }
}

/// A server whose consent file declines listing.
fn start_decliner(rt: &tokio::runtime::Runtime, ca: &SandboxCa) -> HttpsServer {
    rt.block_on(HttpsServer::start(
        ca,
        handler(move |req| {
            if req.path == "/.well-known/mcp-conduct.json" {
                Resp::bytes(200, "application/json", "{\"listing\": \"decline\"}")
            } else {
                Resp::json(404, &serde_json::json!({"error": "not found"}))
            }
        }),
    ))
    .unwrap()
}

fn count(fires: &[(String, u64)], state: &str) -> u64 {
    fires
        .iter()
        .find(|(s, _)| s == state)
        .map(|(_, n)| *n)
        .unwrap_or(0)
}

#[test]
fn summary_rows_equal_a_full_recount_while_walking_after_kill_9_restart_and_at_rest() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let state = tempfile::tempdir().unwrap();
    let emulator = start_intake(&rt, &ca, state.path(), any_port(), Some(100));
    let honest = rt
        .block_on(SandboxAgent::start(&ca, Default::default()))
        .unwrap();
    let failing = rt
        .block_on(SandboxAgent::start(
            &ca,
            scenario("metadata-missing").unwrap().behaviour,
        ))
        .unwrap();
    let decliner = start_decliner(&rt, &ca);
    let every = "* * * * * *";
    let sc = scenario("metadata-missing").unwrap();
    let targets = [
        target("honest", &honest.origin(), "", every).replace("submit = false", "submit = true"),
        target("honest-local", &honest.origin(), "", every),
        target(
            "failing",
            &failing.origin(),
            &format!(
                "mode = \"{}\"\nwire = \"{}\"\n",
                sc.mode.as_str(),
                sc.wire.as_str()
            ),
            every,
        )
        .replace("submit = false", "submit = true"),
        target("declines", &decliner.base(), "", every),
    ]
    .concat();
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let text = config(listen, 20, &targets).replace(
        "vantage = \"loopback\"\n",
        &format!("vantage = \"loopback\"\nintake = \"{}\"\n", emulator.url()),
    );
    let mut d = Daemon::start(&ca, listen, &text);
    let db = d.path("walker.db");

    // While the daemon walks and files: every read is one snapshot.
    d.wait_for(
        "walks, declines and one in flight",
        Duration::from_secs(90),
        |d| {
            let w = d.walks();
            w.iter().filter(|w| w.state == "done").count() >= 8
                && w.iter().filter(|w| w.state == "declined").count() >= 2
                && w.iter().any(|w| w.state == "running")
        },
    );
    for _ in 0..3 {
        let s = Store::open_read_only(&db).unwrap();
        summaries_equal_recount(s.connection(), "while walking");
        std::thread::sleep(Duration::from_millis(300));
    }

    // kill -9 with walks in flight: the rows left `running` are counted as such.
    d.signal("KILL");
    let _ = d.wait_exit(Duration::from_secs(10));
    let fires = summaries_equal_recount(
        Store::open_read_only(&db).unwrap().connection(),
        "after kill -9",
    );
    let running_at_kill = count(&fires, "running");
    pages_and_metrics_equal_recount(&db, "after kill -9");

    // A restart aborts them (one UPDATE over every leftover) and walks on.
    let mut d = d.restart();
    d.wait_for(
        "more walks after the restart",
        Duration::from_secs(90),
        |d| d.walks().iter().filter(|w| w.state == "done").count() >= 14,
    );
    let fires = summaries_equal_recount(
        Store::open_read_only(&db).unwrap().connection(),
        "after the restart",
    );
    assert!(
        count(&fires, "aborted") >= running_at_kill,
        "{fires:?} (running at kill: {running_at_kill})"
    );
    assert!(count(&fires, "declined") >= 2, "{fires:?}");

    // At rest (a reload with no targets, the outbox drained): the daemon's own /metrics is what
    // a recount of the store says.
    std::fs::write(
        d.path("walker.toml"),
        config(listen, 20, "").replace(
            "vantage = \"loopback\"\n",
            &format!("vantage = \"loopback\"\nintake = \"{}\"\n", emulator.url()),
        ),
    )
    .unwrap();
    d.signal("HUP");
    d.wait_for(
        "the walks to stop and the outbox to drain",
        Duration::from_secs(60),
        |d| {
            let h: serde_json::Value = serde_json::from_str(&d.get_text("/healthz")).unwrap();
            let depth = d
                .store()
                .map(|s| outbox::depth(s.connection()).unwrap())
                .unwrap_or(1);
            h["walks_in_flight"] == 0 && h["targets"] == 0 && depth == 0
        },
    );
    let served = d.get_text("/metrics");
    let recounted = {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("c.db");
        Connection::open(&db)
            .unwrap()
            .execute("VACUUM INTO ?1", [copy.to_str().unwrap()])
            .unwrap();
        let conn = Connection::open(&copy).unwrap();
        conn.execute_batch("DROP TABLE summary_records").unwrap();
        drop(conn);
        scrape(Store::open_read_only(&copy).unwrap().connection())
    };
    for name in [
        "conduct_walker_walks_total",
        "conduct_walker_assertion_failures_total",
        "conduct_walker_scheduled_walks_total",
        "conduct_walker_target_last_success_timestamp_seconds",
        "conduct_walker_consent_declined",
        "conduct_walker_consent_declined_origins",
        "conduct_walker_submissions_total",
        "conduct_walker_submissions",
        "conduct_walker_lane_used_today",
        "conduct_walker_outbox_depth",
    ] {
        assert_eq!(metric(&served, name), metric(&recounted, name), "{name}");
        assert!(!metric(&served, name).is_empty(), "{name}: {served}");
    }
    d.stop();
    summaries_equal_recount(
        Store::open_read_only(&db).unwrap().connection(),
        "after SIGTERM",
    );
    pages_and_metrics_equal_recount(&db, "after SIGTERM");
}

/// A store built as it was before migration 9 (its migrations only, then the rows of a store the
/// real pipeline filled): opening it migrates, and the migration's summary rows equal both a
/// recount and the rows the triggers kept on the source store.
#[tokio::test(flavor = "multi_thread")]
async fn migration_builds_the_summary_rows_of_an_older_store() {
    let w = pages_support::World::start().await;
    for i in 0..3 {
        w.fire("honest", &w.honest, &format!("2026-11-29T10:0{i}:00.000Z"))
            .await;
    }
    for i in 0..2 {
        w.fire(
            "failing",
            &w.failing,
            &format!("2026-11-30T09:0{i}:00.000Z"),
        )
        .await;
    }
    w.fire("hostile", &w.hostile, "2026-11-30T09:05:00.000Z")
        .await;
    let origin = w.honest.origin();
    for (state, at) in [
        ("declined", "2026-11-29T10:03:00.000Z"),
        ("skipped_overlap", "2026-11-29T10:04:00.000Z"),
        ("aborted", "2026-11-29T10:05:00.000Z"),
    ] {
        w.note("honest", &origin, state, at, "noted");
    }
    {
        let store = Store::open(&w.db()).unwrap();
        // A running leftover, and two consent reads of one origin (the latest counts).
        db::begin_walk(
            store.connection(),
            &db::WalkStart {
                target: "failing",
                origin: &w.failing.origin(),
                endpoint: None,
                scheduled_for: "2026-11-30T09:10:00.000Z",
                now: "2026-11-30T09:10:00.000Z",
            },
        )
        .unwrap();
        for (outcome, at) in [
            ("declined", "2026-11-29T10:03:00.000Z"),
            ("silent", "2026-11-30T10:03:00.000Z"),
        ] {
            db::insert_consent(
                store.connection(),
                &db::ConsentRow {
                    origin: origin.clone(),
                    checked_at: at.into(),
                    outcome: outcome.into(),
                    status: Some(200),
                    sha256: None,
                    detail: None,
                    notify: None,
                },
            )
            .unwrap();
        }
        db::insert_consent(
            store.connection(),
            &db::ConsentRow {
                origin: w.failing.origin(),
                checked_at: "2026-11-30T10:04:00.000Z".into(),
                outcome: "declined".into(),
                status: Some(200),
                sha256: Some("ab".repeat(32)),
                detail: None,
                notify: None,
            },
        )
        .unwrap();
    }
    // Some filing moved on: drain what is due.
    let _ = w.pipeline.drain_outbox().await;
    let source = Store::open_read_only(&w.db()).unwrap();
    let src = source.connection();
    summaries_equal_recount(src, "source store");

    // The older store: the migrations before `summaries`, then the source's rows.
    // (Before compression too: a store in the field that meets migration `summaries` was
    // written by a binary that stored its rows raw; the copy below decompresses them.)
    let before = MIGRATIONS
        .iter()
        .position(|m| m.name == "summaries" || m.name == "archive_compress")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.db");
    {
        let conn = Connection::open(&old).unwrap();
        for m in &MIGRATIONS[..before] {
            conn.execute_batch(m.sql).unwrap();
        }
        conn.execute_batch(&format!("PRAGMA user_version = {before}"))
            .unwrap();
        conn.execute("ATTACH ?1 AS src", [w.db().to_str().unwrap()])
            .unwrap();
        let tables: Vec<String> = conn
            .prepare(
                "SELECT name FROM main.sqlite_master WHERE type = 'table' \
                 AND name NOT IN ('sqlite_sequence', 'record_facts') ORDER BY name",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(!tables.iter().any(|t| t.starts_with("summary_")));
        // Copied as stored (the source holds them consistent): no order of tables needed.
        conn.execute_batch("PRAGMA foreign_keys = OFF; BEGIN")
            .unwrap();
        for t in ["records"].into_iter().chain(
            tables
                .iter()
                .map(String::as_str)
                .filter(|t| *t != "records"),
        ) {
            let cols: Vec<String> = conn
                .prepare(&format!("SELECT name FROM pragma_table_info('{t}')"))
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            if t == "records" {
                // The source stores zstd frames; the older schema stores the bytes as they are.
                let canonical = cols.iter().position(|c| c == "canonical").unwrap();
                let n = cols.len();
                let cols = cols.join(", ");
                let rows: Vec<Vec<rusqlite::types::Value>> = conn
                    .prepare(&format!("SELECT {cols} FROM src.records ORDER BY rowid"))
                    .unwrap()
                    .query_map([], |r| (0..n).map(|i| r.get(i)).collect())
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                let marks = vec!["?"; n].join(", ");
                let mut insert = conn
                    .prepare(&format!(
                        "INSERT INTO main.records ({cols}) VALUES ({marks})"
                    ))
                    .unwrap();
                for mut row in rows {
                    if let rusqlite::types::Value::Blob(b) = &row[canonical] {
                        let raw = conduct_walker::store::codec::decode(src, b.clone()).unwrap();
                        row[canonical] = rusqlite::types::Value::Blob(raw);
                    }
                    insert
                        .execute(rusqlite::params_from_iter(row.iter()))
                        .unwrap();
                }
                continue;
            }
            let cols = cols.join(", ");
            conn.execute_batch(&format!(
                // OR REPLACE: rows some trigger already wrote while copying (the ledger's
                // per-intake counters) take the source's values.
                "INSERT OR REPLACE INTO main.{t} ({cols}) SELECT {cols} FROM src.{t} ORDER BY rowid"
            ))
            .unwrap();
        }
        conn.execute_batch("COMMIT; DETACH src").unwrap();
    }
    // Opening migrates it.
    let migrated = Store::open(&old).unwrap();
    let conn = migrated.connection();
    let fires = summaries_equal_recount(conn, "migrated store");
    assert_eq!(count(&fires, "running"), 1, "{fires:?}");
    assert_eq!(count(&fires, "done"), 6, "{fires:?}");
    // And equal to what the triggers kept on the source.
    assert_eq!(
        summary::records_by_endpoint_outcome(conn).unwrap(),
        summary::records_by_endpoint_outcome(src).unwrap()
    );
    let failures = summary::assertion_failures(conn).unwrap();
    assert!(
        !failures.is_empty(),
        "the failing agent's records fail assertions"
    );
    assert_eq!(failures, summary::assertion_failures(src).unwrap());
    assert_eq!(fires, summary::fires_by_state(src).unwrap());
    assert_eq!(
        summary::last_success(conn).unwrap(),
        summary::last_success(src).unwrap()
    );
    assert_eq!(
        summary::fired_endpoints(conn).unwrap(),
        summary::fired_endpoints(src).unwrap()
    );
    let consent = summary::latest_consent(conn).unwrap();
    assert_eq!(consent.len(), 2);
    assert_eq!(
        consent.iter().find(|c| c.origin == origin).unwrap().outcome,
        "silent"
    );
    assert_eq!(consent, summary::latest_consent(src).unwrap());
    assert_eq!(
        summary::submissions(conn).unwrap(),
        summary::submissions(src).unwrap()
    );
    drop(migrated);
    pages_and_metrics_equal_recount(&old, "migrated store");
}
