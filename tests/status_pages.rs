//! The status pages over a store the real pipeline filled (loopback sandbox agents, the intake
//! emulator): what a person checks on each page, parsed with `scraper`; the hostile record shown
//! as text; the headers; `records serve`.

mod common;
mod pages_support;
mod store_support;

use conduct_walker::daemon::metrics::{Snapshot, failed_assertions, render};
use conduct_walker::pages::Context;
use conduct_walker::store::{ListFilter, Store, status};
use pages_support::*;
use scraper::{Html, Selector};

fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap()
}

fn texts(doc: &Html, s: &str) -> Vec<String> {
    doc.select(&sel(s))
        .map(|e| e.text().collect::<String>().trim().to_string())
        .collect()
}

/// Two targets fired through the pipeline, plus fires that did not walk.
async fn populated() -> (World, Vec<String>, Vec<String>) {
    let w = World::start().await;
    let mut honest = Vec::new();
    let mut failing = Vec::new();
    for i in 0..3 {
        let r = w
            .fire("honest", &w.honest, &format!("2026-11-29T10:0{i}:00.000Z"))
            .await;
        honest.push(r.outcome.sha256);
    }
    let origin = w.honest.origin();
    w.note(
        "honest",
        &origin,
        "declined",
        "2026-11-29T10:03:00.000Z",
        "consent file declined",
    );
    w.note(
        "honest",
        &origin,
        "skipped_overlap",
        "2026-11-29T10:04:00.000Z",
        "still running",
    );
    w.note(
        "honest",
        &origin,
        "aborted",
        "2026-11-29T10:05:00.000Z",
        "shutdown",
    );
    for i in 0..2 {
        let r = w
            .fire(
                "failing",
                &w.failing,
                &format!("2026-11-30T09:0{i}:00.000Z"),
            )
            .await;
        failing.push(r.outcome.sha256);
    }
    (w, honest, failing)
}

#[tokio::test(flavor = "multi_thread")]
async fn overview_shows_each_target_its_verdict_strip_and_counts_that_agree() {
    let (w, honest, failing) = populated().await;
    let base = serve(w.db(), Context::default()).await;
    let (status, _, body) = get_html(&format!("{base}/")).await;
    assert_eq!(status, 200);
    let doc = Html::parse_document(&body);

    let names: Vec<String> = doc
        .select(&sel("tr.target"))
        .map(|e| e.value().attr("data-name").unwrap().to_string())
        .collect();
    assert_eq!(names, ["failing", "honest"]);

    let row = |name: &str| {
        doc.select(&sel(&format!("tr.target[data-name=\"{name}\"]")))
            .next()
            .unwrap()
    };
    // The last verdict links to the newest record of the target.
    let v = row("honest").select(&sel("td.verdict a")).next().unwrap();
    assert_eq!(
        v.value().attr("href").unwrap(),
        format!("/records/{}", honest[2])
    );
    assert!(
        v.text().collect::<String>().starts_with("PASS "),
        "{}",
        v.text().collect::<String>()
    );
    let v = row("failing").select(&sel("td.verdict a")).next().unwrap();
    assert_eq!(
        v.value().attr("href").unwrap(),
        format!("/records/{}", failing[1])
    );
    assert!(v.text().collect::<String>().starts_with("FAIL "));

    // The strip: every fire, oldest first, coloured by how it ended.
    let kinds: Vec<&str> = row("honest")
        .select(&sel("svg.strip rect.cell"))
        .map(|r| r.value().attr("data-kind").unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["pass", "pass", "pass", "declined", "skipped", "aborted"]
    );
    let links: Vec<&str> = row("honest")
        .select(&sel("svg.strip a"))
        .map(|a| a.value().attr("href").unwrap())
        .collect();
    let expect: Vec<String> = honest.iter().map(|s| format!("/records/{s}")).collect();
    assert_eq!(links, expect);

    // The assertions that failed most recently are the failing record's, as /metrics reads them.
    let store = Store::open_read_only(&w.db()).unwrap();
    let last_failing = store.get_by_prefix(&failing[1]).unwrap();
    let failed_names = failed_assertions(&last_failing.canonical);
    assert!(!failed_names.is_empty());
    let shown = row("failing").select(&sel("td.failed")).next().unwrap();
    assert!(
        shown
            .text()
            .collect::<String>()
            .starts_with(&failed_names.join(", ")),
        "{failed_names:?}"
    );

    // How the last record was filed: the newest record's own submission, in an operator's
    // words (the intake counts one per witness, endpoint and day; the rest stay local or are
    // stored uncounted).
    let filed_as = |sha: &str| {
        let id = store.get_by_prefix(sha).unwrap().row.id;
        let subs = conduct_walker::store::outbox::for_record(store.connection(), id).unwrap();
        assert_eq!(subs.len(), 1);
        conduct_walker::pages::render::filing(&subs)
    };
    for (name, sha) in [("honest", &honest[2]), ("failing", &failing[1])] {
        let shown = texts(&doc, &format!("tr.target[data-name=\"{name}\"] td.filing"));
        assert_eq!(shown, [filed_as(sha)], "{name}");
        if name == "honest" {
            // Its third walk of the day: the first took the day's counted place.
            assert_eq!(shown, ["kept local (one counted record per day)"]);
        }
        assert!(
            [
                "counted",
                "kept local",
                "stored, not counted",
                "duplicate",
                "queued"
            ]
            .iter()
            .any(|p| shown[0].starts_with(p)),
            "{shown:?}"
        );
    }

    // Counts agree with `records list` and with /metrics.
    let listed = store.list(&ListFilter::default()).unwrap().len();
    assert_eq!(texts(&doc, "#record-count"), [listed.to_string()]);
    let snap = Snapshot::read(store.connection()).unwrap();
    let metrics = render(&snap);
    let walks_total: u64 = metrics
        .lines()
        .filter(|l| l.starts_with("conduct_walker_walks_total{"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(walks_total as usize, listed);
    let outbox: Vec<(conduct_walker::filing::SubmissionState, u64)> = doc
        .select(&sel("tr.outbox-state"))
        .map(|r| {
            (
                r.value().attr("data-state").unwrap().parse().unwrap(),
                r.select(&sel("td.n"))
                    .next()
                    .unwrap()
                    .text()
                    .collect::<String>()
                    .parse()
                    .unwrap(),
            )
        })
        .collect();
    assert_eq!(outbox.iter().map(|(_, n)| n).sum::<u64>() as usize, listed);
    assert_eq!(status::outbox_by_state(store.connection()).unwrap(), outbox);

    // The facts the pages read (SQL, migration 5) are what the record bytes say.
    for row in store.list(&ListFilter::default()).unwrap() {
        let rec = store.get_by_prefix(&row.sha256).unwrap();
        let fires = status::endpoint_records(store.connection(), &row.meta.endpoint, 100).unwrap();
        let f = fires
            .iter()
            .find(|f| f.record.as_ref().unwrap().sha256 == row.sha256)
            .unwrap();
        assert_eq!(
            f.record.as_ref().unwrap().facts,
            status::facts_from_canonical(&rec.canonical)
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn record_page_has_the_exact_bytes_signature_chain_and_intake_answers() {
    let (w, honest, _) = populated().await;
    let base = serve(w.db(), Context::default()).await;
    let sha = &honest[1];

    // The raw link's bytes are `records raw`'s, byte for byte.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_conduct-walker"))
        .args(["records", "raw", &sha[..12], "--db"])
        .arg(w.db())
        .output()
        .unwrap();
    assert!(out.status.success());
    let (status, ct, bytes) = get_bytes(&format!("{base}/records/{sha}/raw")).await;
    assert_eq!((status, ct.as_str()), (200, "application/json"));
    assert_eq!(bytes, out.stdout);
    // Without a browser's Accept, /records/<prefix> still answers the bytes (the old API).
    let (_, ct, plain) = get_bytes(&format!("{base}/records/{}", &sha[..12])).await;
    assert_eq!((ct.as_str(), &plain), ("application/json", &out.stdout));

    let (status, _, body) = get_html(&format!("{base}/records/{}", &sha[..12])).await;
    assert_eq!(status, 200);
    let doc = Html::parse_document(&body);
    assert_eq!(texts(&doc, "#sha"), [sha.as_str()]);
    assert_eq!(
        doc.select(&sel("a#raw"))
            .next()
            .unwrap()
            .value()
            .attr("href")
            .unwrap(),
        format!("/records/{sha}/raw")
    );
    assert!(texts(&doc, "#signature")[0].starts_with("valid Ed25519 signature"));
    let store = Store::open_read_only(&w.db()).unwrap();
    let rec = store.get_by_prefix(sha).unwrap();
    let chain = &texts(&doc, "#chain")[0];
    assert!(chain.starts_with(&format!("row {}", rec.row.id)), "{chain}");
    assert!(chain.contains("follows from the previous row"), "{chain}");
    // Neighbours in chain order.
    assert_eq!(
        doc.select(&sel("a.prev"))
            .next()
            .unwrap()
            .value()
            .attr("href")
            .unwrap(),
        format!("/records/{}", honest[0])
    );
    assert_eq!(
        doc.select(&sel("a.next"))
            .next()
            .unwrap()
            .value()
            .attr("href")
            .unwrap(),
        format!("/records/{}", honest[2])
    );
    // Every intake answer for it: the second walk of the day was kept local, never sent.
    let subs = conduct_walker::store::outbox::for_record(store.connection(), rec.row.id).unwrap();
    assert_eq!(doc.select(&sel("div.submission")).count(), subs.len());
    let first = store.get_by_prefix(&honest[0]).unwrap();
    let (_, _, body0) = get_html(&format!("{base}/records/{}", honest[0])).await;
    let doc0 = Html::parse_document(&body0);
    let attempts = doc0.select(&sel("tr.attempt")).count();
    let sub0 =
        &conduct_walker::store::outbox::for_record(store.connection(), first.row.id).unwrap()[0];
    assert_eq!(attempts as i64, sub0.attempts);
    assert!(attempts >= 1);
    assert!(texts(&doc0, "div.submission p")[0].contains("counted"));
    // Assertions table: eight rows.
    assert_eq!(doc.select(&sel("tr.assertion")).count(), 8);

    // Unknown and malformed prefixes.
    assert_eq!(
        get_html(&format!("{base}/records/ffffffffffff")).await.0,
        404
    );
    assert_eq!(get_html(&format!("{base}/records/xyz")).await.0, 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn target_page_shows_the_per_assertion_timeline_and_filters_by_day() {
    let (w, _, failing) = populated().await;
    let base = serve(w.db(), Context::default()).await;
    let (status, _, body) = get_html(&format!("{base}/targets/failing")).await;
    assert_eq!(status, 200);
    let doc = Html::parse_document(&body);
    assert_eq!(doc.select(&sel("tr.fire")).count(), 2);
    let store = Store::open_read_only(&w.db()).unwrap();
    let failed = failed_assertions(&store.get_by_prefix(&failing[0]).unwrap().canonical);
    // Every failed assertion is red in both columns; the others never are.
    for name in conduct_walker::walk::spec::ASSERTION_NAMES {
        let states: Vec<&str> = doc
            .select(&sel(&format!("rect.tl[data-assertion=\"{name}\"]")))
            .map(|r| r.value().attr("data-state").unwrap())
            .collect();
        // Not applicable is its own state (issue 25: it looked like a pass).
        let canonical = store.get_by_prefix(&failing[0]).unwrap().canonical;
        let v: serde_json::Value = serde_json::from_slice(&canonical).unwrap();
        let na = v["assertions"].as_array().unwrap().iter().any(|a| {
            a["result"].is_null()
                && a["claim"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{name}:"))
        });
        let want = if failed.iter().any(|f| f == name) {
            "FAILED"
        } else if na {
            "n/a"
        } else {
            "passed"
        };
        assert_eq!(states, [want, want], "{name}");
    }
    // The day chart counts both FAIL walks on their day.
    let bar = doc
        .select(&sel(
            "g.bar[data-day=\"2026-11-30\"] rect[data-kind=\"fail\"]",
        ))
        .next();
    // The chart covers the last 30 days from now; the fixed walk day may be outside it.
    if let Some(bar) = bar {
        assert_eq!(bar.value().attr("data-count"), Some("2"));
    }

    let (_, _, day) = get_html(&format!("{base}/targets/honest?day=2026-11-29")).await;
    let day = Html::parse_document(&day);
    let kinds: Vec<&str> = day
        .select(&sel("tr.fire"))
        .map(|r| r.value().attr("data-kind").unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["aborted", "skipped", "declined", "pass", "pass", "pass"]
    );
    let (_, _, other) = get_html(&format!("{base}/targets/honest?day=2026-11-28")).await;
    assert_eq!(
        Html::parse_document(&other).select(&sel("tr.fire")).count(),
        0
    );
    assert_eq!(
        get_html(&format!("{base}/targets/honest?day=yesterday"))
            .await
            .0,
        400
    );
    assert_eq!(get_html(&format!("{base}/targets/nobody")).await.0, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn endpoints_page_shows_where_witnesses_disagree() {
    // A merged fleet store: two witnesses walked the same endpoint the same day and saw
    // different outcomes; a third agreed with the first on another day.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fleet.db");
    let store = Store::open(&db).unwrap();
    let endpoint = "https://agent.example/a2a";
    let mut recs = Vec::new();
    for (i, (name, vantage, pass, at)) in [
        ("alice", "berlin", true, "2026-09-06T10:00:00Z"),
        ("bob", "tokyo", false, "2026-09-06T11:00:00Z"),
        ("alice", "berlin", true, "2026-09-07T10:00:00Z"),
        ("carol", "lima", true, "2026-09-07T12:00:00Z"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut v =
            store_support::record_value(i as u64, "https://agent.example", endpoint, pass, at);
        v["witness"]["name"] = name.into();
        v["witness"]["vantage"] = vantage.into();
        // One key per witness: alice's two records are one witness.
        let key = store_support::key(name.as_bytes()[0]);
        recs.push(store_support::signed(
            conduct_walker::canonical::to_bytes(&v),
            &key,
        ));
    }
    store.insert_many(&recs).unwrap();
    drop(store);
    let base = serve(db, Context::default()).await;
    let (_, _, list) = get_html(&format!("{base}/endpoints")).await;
    assert_eq!(
        texts(&Html::parse_document(&list), "ul.endpoints a"),
        [endpoint]
    );
    let (status, _, body) = get_html(&format!(
        "{base}/endpoints?url=https%3A%2F%2Fagent.example%2Fa2a"
    ))
    .await;
    assert_eq!(status, 200);
    let doc = Html::parse_document(&body);
    assert_eq!(doc.select(&sel("tr.witness")).count(), 3);
    let days = texts(&doc, "tr.disagreement td:first-child");
    assert_eq!(days, ["2026-09-06"]);
    let who = texts(&doc, "tr.disagreement li");
    assert_eq!(who.len(), 2);
    assert!(who[0].starts_with("alice (berlin): PASS"), "{who:?}");
    assert!(who[1].starts_with("bob (tokyo): FAIL"), "{who:?}");
    assert!(
        who[1].ends_with("extension_echoed, metadata_echoed, endpoint_bound"),
        "{who:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_record_is_shown_as_text_and_nothing_runs() {
    let w = World::start().await;
    let r = w
        .fire(
            "hostile <b>target</b>",
            &w.hostile,
            "2026-11-30T08:00:00.000Z",
        )
        .await;
    w.note(
        "hostile <b>target</b>",
        &w.hostile.origin(),
        "declined",
        "2026-11-30T08:01:00.000Z",
        XSS_SCRIPT,
    );
    let raw = String::from_utf8(r.outcome.canonical.clone()).unwrap();
    let recorded = serde_json::from_str::<serde_json::Value>(&raw).unwrap();
    let intake = recorded["conduct_ext"]["witness_intake"]
        .as_str()
        .unwrap()
        .to_string();
    // The walker recorded the stranger's strings verbatim: the page has something to escape.
    assert!(intake.contains(XSS_SCRIPT) && intake.contains(XSS_IMG) && intake.contains(RTL));

    let base = serve(w.db(), Context::default()).await;
    let pages = [
        format!("{base}/"),
        format!("{base}/records/{}", r.outcome.sha256),
        format!("{base}/targets/hostile%20%3Cb%3Etarget%3C%2Fb%3E"),
        format!(
            "{base}/endpoints?url={}",
            url_escape(&r.outcome.target.clone().unwrap_or_default())
        ),
    ];
    for url in &pages {
        let (status, headers, body) = get_html(url).await;
        assert_eq!(status, 200, "{url}");
        assert_eq!(headers["x-content-type-options"], "nosniff");
        let doc = Html::parse_document(&body);
        // Nothing the strangers sent became markup: no script, no img, no handler, no
        // javascript: link, no <b> from the target's name.
        assert_eq!(doc.select(&sel("script")).count(), 0, "{url}");
        assert_eq!(doc.select(&sel("img")).count(), 0, "{url}");
        assert_eq!(doc.select(&sel("b")).count(), 0, "{url}");
        assert_eq!(doc.select(&sel("[onerror]")).count(), 0, "{url}");
        for a in doc.select(&sel("a[href]")) {
            let href = a.value().attr("href").unwrap();
            assert!(
                href.starts_with('/'),
                "{url}: a link leaves the site: {href:?}"
            );
        }
        assert!(!body.contains("<script"), "{url}");
        assert!(!body.contains("<img"), "{url}");
    }
    // ... and the strings are there, as text, RTL override included.
    let (_, _, page) = get_html(&pages[1]).await;
    let text: String = Html::parse_document(&page).root_element().text().collect();
    assert!(text.contains(XSS_SCRIPT) && text.contains(XSS_IMG) && text.contains(RTL));
    let (_, _, overview) = get_html(&pages[0]).await;
    let doc = Html::parse_document(&overview);
    assert_eq!(
        texts(&doc, "tr.target td.name a"),
        ["hostile <b>target</b>"]
    );
    let titles: String = doc
        .select(&sel("rect.cell title"))
        .flat_map(|t| t.text())
        .collect();
    assert!(titles.contains(XSS_SCRIPT), "{titles}");
}

fn url_escape(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_page_is_read_only_with_a_strict_policy() {
    let (w, honest, _) = populated().await;
    let base = serve(w.db(), Context::default()).await;
    for path in [
        "/".to_string(),
        "/targets/honest".into(),
        format!("/records/{}", honest[0]),
        format!("/records/{}/raw", honest[0]),
        "/endpoints".into(),
        "/assets/style.css".into(),
    ] {
        let r = reqwest::get(format!("{base}{path}")).await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let csp = r.headers()["content-security-policy"].to_str().unwrap();
        assert!(csp.starts_with("default-src 'none'"), "{path}: {csp}");
        assert!(
            !csp.contains("script-src"),
            "no script is allowed at all: {csp}"
        );
        assert_eq!(r.headers()["x-content-type-options"], "nosniff");
        // Nothing changes anything.
        let post = reqwest::Client::new()
            .post(format!("{base}{path}"))
            .send()
            .await
            .unwrap();
        assert_eq!(post.status(), 405, "{path}");
    }
}

#[test]
fn records_serve_serves_a_store_read_only_and_stays_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("walker.db");
    let store = Store::open(&db).unwrap();
    let key = store_support::key(3);
    store
        .insert_many(&[
            store_support::signed(store_support::record_bytes(0, true), &key),
            store_support::signed(store_support::record_bytes(1, false), &key),
        ])
        .unwrap();
    drop(store);
    let before = std::fs::read(&db).unwrap();
    let bin = env!("CARGO_BIN_EXE_conduct-walker");
    let refused = std::process::Command::new(bin)
        .args(["records", "serve", "--listen", "0.0.0.0:0", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not a loopback address"));

    let mut child = std::process::Command::new(bin)
        .args(["records", "serve", "--listen", "127.0.0.1:0", "--db"])
        .arg(&db)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let body = rt.block_on(async { get_html(&url).await.2 });
    child.kill().unwrap();
    let _ = child.wait();
    let doc = Html::parse_document(&body);
    // No daemon in this store: one row per endpoint, with both records in its strip.
    assert_eq!(
        texts(&doc, "tr.target td.name"),
        ["https://agent.example/a2a"]
    );
    let kinds: Vec<&str> = doc
        .select(&sel("rect.cell"))
        .map(|r| r.value().attr("data-kind").unwrap())
        .collect();
    assert_eq!(kinds, ["pass", "fail"]);
    // Opened immutable: the file is unchanged and no -wal or -shm was left.
    assert_eq!(std::fs::read(&db).unwrap(), before);
    assert!(!dir.path().join("walker.db-wal").exists());
    assert!(!dir.path().join("walker.db-shm").exists());
}
