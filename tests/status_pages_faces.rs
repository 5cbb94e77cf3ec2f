//! What operators read on the status pages, as issue 25 found it in a real browser: each fire's
//! verdict said once, filing reasons not repeated, no `null` in the nodes table, n/a apart from
//! pass in the assertion grid (with a legend), one lane chart per lane under its own cap, a 404
//! with a body, and `records serve --config` over a merged store showing every endpoint and the
//! witness's key.

mod common;
mod pages_support;

use conduct_walker::pages::Context;
use conduct_walker::pipeline::WalkJob;
use conduct_walker::walk::{Mode, Wire};
use pages_support::*;
use scraper::{Html, Selector};

fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_verdict_once_no_null_cells_na_apart_from_pass_and_a_legend() {
    let w = World::start().await;
    let mut shas = Vec::new();
    for i in 0..2 {
        let r = w
            .fire("honest", &w.honest, &format!("2026-11-29T10:0{i}:00.000Z"))
            .await;
        shas.push(r.outcome.sha256);
    }
    // The intake's own reason ends with the words the page puts before it (the emulator's
    // COUNT_REASON_SAME_DAY): as if the second walk had been filed and not counted.
    let conn = rusqlite::Connection::open(w.db()).unwrap();
    let changed = conn
        .execute(
            "UPDATE submissions SET state = 'filed', last_answer = 'accepted', counted = 0, \
             count_reason = 'same witness, same endpoint, same day; stored, not counted' \
             WHERE id = (SELECT max(id) FROM submissions)",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(conn);
    let base = serve(w.db(), Context::default()).await;
    for page in ["/", "/targets/honest"] {
        let (status, _, body) = get_html(&format!("{base}{page}")).await;
        assert_eq!(status, 200);
        for twice in ["PASS PASS", "PASS (PASS", "FAIL FAIL", "FAIL (FAIL"] {
            assert!(!body.contains(twice), "{page} says {twice:?}");
        }
    }
    let (_, _, body) = get_html(&format!("{base}/targets/honest")).await;
    let doc = Html::parse_document(&body);
    let outcome: Vec<String> = doc
        .select(&sel("tr.fire td.v"))
        .map(|e| e.text().collect::<String>())
        .collect();
    assert!(
        outcome
            .iter()
            .all(|t| t.starts_with("PASS ") && t.matches("PASS").count() == 1),
        "{outcome:?}"
    );
    let filed: Vec<String> = doc
        .select(&sel("tr.fire td:nth-child(5)"))
        .map(|e| e.text().collect::<String>())
        .collect();
    assert!(
        filed.contains(&"stored, not counted (same witness, same endpoint, same day)".to_string()),
        "{filed:?}"
    );
    // The honest A2A agent's walk has n/a assertions (no compensation, no paid model): they are
    // told apart from the passes, and the legend names all four states.
    let states: Vec<&str> = doc
        .select(&sel("rect.tl"))
        .map(|r| r.value().attr("data-state").unwrap())
        .collect();
    assert!(
        states.contains(&"n/a") && states.contains(&"passed"),
        "{states:?}"
    );
    let na = doc
        .select(&sel("rect.tl[data-state=\"n/a\"]"))
        .next()
        .unwrap();
    let pass = doc
        .select(&sel("rect.tl[data-state=\"passed\"]"))
        .next()
        .unwrap();
    assert_ne!(na.value().attr("fill"), pass.value().attr("fill"));
    let legend: Vec<&str> = doc
        .select(&sel("p.legend .key"))
        .map(|k| k.value().attr("data-state").unwrap())
        .collect();
    assert_eq!(legend, ["FAILED", "passed", "n/a", "no record"]);

    // The nodes table: the compute node has no id and no status, shown as a dash.
    let (_, _, body) = get_html(&format!("{base}/records/{}", shas[0])).await;
    let doc = Html::parse_document(&body);
    let cells: Vec<String> = doc
        .select(&sel("table.nodes td"))
        .map(|e| e.text().collect::<String>())
        .collect();
    assert!(!cells.is_empty());
    assert!(!cells.iter().any(|c| c.trim() == "null"), "{cells:?}");

    // One lane chart per lane, under that lane's cap.
    let (_, _, body) = get_html(&format!("{base}/")).await;
    let doc = Html::parse_document(&body);
    let captions: Vec<String> = doc
        .select(&sel("#lanes figcaption"))
        .map(|e| e.text().collect::<String>())
        .collect();
    assert_eq!(
        captions,
        ["lane address: records accepted per UTC day (cap 5)"],
        "{captions:?}"
    );

    // A path with no page: 404 with a body that says so.
    let (status, headers, body) = get_html(&format!("{base}/no/such/page")).await;
    assert_eq!(status, 404);
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(
        body.contains("Not found") && body.contains("/no/such/page"),
        "{body}"
    );
    assert!(headers.contains_key("content-security-policy"));
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_with_a_config_over_a_merged_store_shows_every_endpoint_and_the_key() {
    let w = World::start().await;
    w.fire("honest", &w.honest, "2026-11-29T10:00:00.000Z")
        .await;
    // A record that came from elsewhere (an import, a walk with --db): no daemon fire for it.
    w.clock.advance(chrono::Duration::seconds(60));
    let bare = w
        .pipeline
        .run_job(&WalkJob {
            request: common::request(&w.failing.origin(), None, Mode::A2a, Wire::V1_0),
            submit: false,
            bind_task: None,
        })
        .await
        .unwrap();
    let config = format!(
        "[witness]\nname = \"test witness\"\nvantage = \"loopback\"\n\n[daemon]\ndatabase = \"walker.db\"\n\n\
         [[target]]\nname = \"honest\"\norigin = \"{}\"\nschedule = \"@daily\"\n",
        w.honest.origin()
    );
    let cfg = conduct_walker::config::parse(&w.dir.path().join("walker.toml"), &config).unwrap();
    // As `records serve --config` builds it: the key is a credential it cannot read.
    let base = serve(w.db(), conduct_walker::app::page_context(&cfg, None)).await;
    let (status, _, body) = get_html(&format!("{base}/")).await;
    assert_eq!(status, 200);
    let doc = Html::parse_document(&body);
    let rows: Vec<String> = doc
        .select(&sel("tr.target"))
        .map(|e| e.value().attr("data-name").unwrap().to_string())
        .collect();
    assert!(rows.contains(&"honest".to_string()), "{rows:?}");
    assert!(
        rows.contains(&bare.outcome_endpoint()),
        "the imported endpoint is hidden: {rows:?}"
    );
    // The records are signed: the witness box shows the key, not "unsigned".
    let key: String = doc
        .select(&sel("#witness dd code"))
        .map(|e| e.text().collect::<String>())
        .collect();
    assert!(key.contains("sha256:"), "{key:?}\n{body}");
    assert!(!body.contains("unsigned (address lane)"));
}

trait Endpoint {
    fn outcome_endpoint(&self) -> String;
}

impl Endpoint for conduct_walker::pipeline::JobReport {
    /// The endpoint the store derives from the record (§6.5).
    fn outcome_endpoint(&self) -> String {
        conduct_walker::store::meta::derive_from_bytes(&self.outcome.canonical)
            .unwrap()
            .endpoint
    }
}
