//! The renderer from hand-built views: no store, no SQLite.

use super::*;
use crate::pages::model::endpoint::{EndpointView, OneEndpoint, WitnessKey};
use crate::pages::model::overview::{OverviewView, TargetList, TargetRow};
use crate::pages::model::record::{Checks, RecordView};
use crate::pages::model::target::{HistoryFire, TargetView};
use crate::pages::{NextFire, TargetInfo, VerifySummary};
use crate::store::meta::RecordMeta;
use crate::store::status::Facts;
use crate::store::{RecordRow, StoredRecord};
use std::sync::Arc;

fn fire_record(id: i64, outcome: &str, failed: &[&str], witness: &str) -> FireRecord {
    FireRecord {
        id,
        sha256: format!("{id:0>64}"),
        walked_at: format!("2026-12-01T10:00:{id:02}Z"),
        endpoint: "https://agent.example/a2a".into(),
        outcome: Some(outcome.into()),
        n_pass: Some(8 - failed.len() as i64),
        n_total: Some(8),
        facts: Facts {
            transport_error: false,
            failed: failed.iter().map(|s| s.to_string()).collect(),
            witness_name: Some(witness.into()),
            vantage: Some("ci".into()),
        },
    }
}

fn done(walk_id: i64, at: &str, rec: FireRecord) -> Fire {
    Fire {
        walk_id,
        state: "done".into(),
        at: at.into(),
        record: Some(rec),
        ..Fire::default()
    }
}

fn row(name: &str, fires: Vec<Fire>) -> TargetRow {
    TargetRow {
        name: name.into(),
        is_target: true,
        endpoint: "https://agent.example/a2a".into(),
        schedule: Some("*/5 * * * *".into()),
        next_fire: Some("2026-12-01T10:05:00Z".into()),
        fires: Arc::new(fires),
        last_filed: Some(Vec::new()),
    }
}

#[test]
fn an_overview_row_shows_its_last_verdict_strip_last_failure_and_filing_escaped() {
    let fires = vec![
        Fire {
            walk_id: 3,
            state: "running".into(),
            at: "2026-12-01T10:02:00Z".into(),
            ..Fire::default()
        },
        done(2, "2026-12-01T10:01:00Z", fire_record(2, "PASS", &[], "w")),
        done(
            1,
            "2026-12-01T10:00:00Z",
            fire_record(1, "FAIL", &["endpoint_bound"], "w"),
        ),
    ];
    let v = OverviewView {
        targets: TargetList {
            total: 1,
            page: 1,
            pages: 1,
            rows: vec![row("<script>alert(1)</script>", fires)],
            ..TargetList::default()
        },
        ..OverviewView::default()
    };
    let html = overview(&v, "test");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.contains("<script>"), "a stranger's name is text");
    assert!(html.contains("/targets/%3Cscript%3Ealert%281%29%3C%2Fscript%3E"));
    // The newest record is the verdict, the newest failing one the failure.
    assert!(html.contains(r#"class="v pass">PASS 8/8</a>"#), "{html}");
    assert!(html.contains("endpoint_bound<br><small>2026-12-01T10:00:01Z"));
    assert!(html.contains("not filed (no submission)"));
    assert!(html.contains("*/5 * * * *"));
    // Three cells, oldest first: FAIL, PASS, running.
    let fail = html.find("2026-12-01T10:00:00Z FAIL 7/8").unwrap();
    let pass = html.find("2026-12-01T10:01:00Z PASS 8/8").unwrap();
    let running = html.find("2026-12-01T10:02:00Z running").unwrap();
    assert!(fail < pass && pass < running);
    assert!(
        !html.contains(r#"class="pages""#),
        "one page: no page links"
    );
}

#[test]
fn the_overview_says_how_the_last_verification_went() {
    let mut v = OverviewView {
        verify: (None, true),
        ..OverviewView::default()
    };
    assert!(overview(&v, "t").contains("running…"));
    v.verify = (None, false);
    assert!(overview(&v, "t").contains("not run yet"));
    v.verify = (
        Some(VerifySummary {
            finished_at: "2026-12-01T10:05:00Z".into(),
            full_at: "2026-12-01T10:00:00Z".into(),
            rows: 12,
            signed: 11,
            problems: vec!["row 4: chain: broken".into(), "row 5: sha: <b>".into()],
            head: Some((12, "ab".repeat(32))),
        }),
        true,
    );
    let html = overview(&v, "t");
    assert!(html.contains(r#"<span class="bad">2 problem(s)</span>"#));
    assert!(html.contains("12 rows, 11 signatures"));
    assert!(html.contains("every row read at 2026-12-01T10:00:00Z"));
    assert!(html.contains("head row 12 <code>abababababababab</code>"));
    assert!(html.contains("(re-running)"));
    assert!(html.contains("row 5: sha: &lt;b&gt;"));
}

#[test]
fn reciprocal_walks_are_listed_with_their_state_reason_and_record() {
    let mut v = OverviewView::default();
    assert!(!overview(&v, "t").contains("Reciprocal walks"));
    let row = |state: &str, reason: Option<&str>, sha: Option<String>| {
        crate::store::reciprocal_walks::ReciprocalWalk {
            id: 1,
            requested_at: "2026-12-06T03:40:00.123Z".into(),
            caller_card: "https://caller.example/<x>/.well-known/agent-card.json".into(),
            origin: (state != "declined").then(|| "https://caller.example".into()),
            state: state.into(),
            reason: reason.map(Into::into),
            detail: None,
            walk_by: Some("2026-12-07T03:40:00.123Z".into()),
            started_at: None,
            finished_at: None,
            record_id: None,
            record_sha256: sha,
            intake_url: None,
        }
    };
    v.reciprocal_walks = vec![
        row(
            crate::reciprocal::state::WALKED,
            None,
            Some("ab".repeat(32)),
        ),
        row("declined", Some("not_card_url"), None),
    ];
    let html = overview(&v, "t");
    let cells = row_cells(&html, "#reciprocal-walks tr.reciprocal-walk");
    assert_eq!(cells[0][2], crate::reciprocal::state::WALKED);
    assert_eq!(cells[0][5], "abababababababab");
    assert_eq!(
        cells[1][..4],
        [
            "2026-12-06T03:40:00.123Z",
            "https://caller.example/<x>/.well-known/agent-card.json",
            "declined",
            "not_card_url"
        ]
    );
    assert!(html.contains(&format!(
        "href=\"{}\"",
        crate::pages::links::record_href(&"ab".repeat(32))
    )));
}

#[test]
fn notifications_are_listed_only_when_there_are_any_with_the_url_host_and_status() {
    let mut v = OverviewView::default();
    assert!(!overview(&v, "t").contains("Notifications"));
    v.notifications = vec![crate::store::notifications::NotificationRow {
        id: 2,
        decided_at: "2026-12-06T03:00:00.123Z".into(),
        endpoint: "https://agent.a.org/<mcp>".into(),
        url: "https://Hooks.A.org/conduct?k=1".into(),
        record_sha256: Some("ab".repeat(32)),
        status: Some(
            r#"{"reason":"rate limited: one notification per endpoint per hour","sent":false}"#
                .into(),
        ),
    }];
    let html = overview(&v, "t");
    let page = scraper::Html::parse_document(&html);
    let rows = scraper::Selector::parse("#notifications tr.notification td").unwrap();
    let cells: Vec<String> = page.select(&rows).map(|td| td.text().collect()).collect();
    assert_eq!(
        cells,
        [
            "2026-12-06T03:00:00.123Z",
            "https://agent.a.org/<mcp>",
            "hooks.a.org",
            r#"{"reason":"rate limited: one notification per endpoint per hour","sent":false}"#,
        ]
    );
}

#[test]
fn witness_requests_are_listed_only_when_there_are_any_escaped_and_by_reason() {
    let mut v = OverviewView::default();
    assert!(!overview(&v, "t").contains("Witness requests"));
    let row = |outcome: &str, reason: Option<&str>, record: Option<String>| {
        crate::store::witness_requests::WitnessRequest {
            received_at: "2026-12-06T03:40:00.123Z".into(),
            outcome: outcome.into(),
            reason: reason.map(Into::into),
            endpoint: Some("https://agent.example/<x>".into()),
            request_sha256: Some("cd".repeat(32)),
            record_sha256: record,
            detail: Some("why \"quoted\"".into()),
        }
    };
    v.witness_requests = vec![
        row("declined", Some("self_witness"), None),
        row("answered", None, Some("ab".repeat(32))),
    ];
    let html = overview(&v, "t");
    let cells = row_cells(&html, "#witness-requests tr.witness-request");
    assert_eq!(
        cells,
        [
            [
                "2026-12-06T03:40:00.123Z",
                "declined",
                "self_witness",
                "https://agent.example/<x>",
                ""
            ],
            [
                "2026-12-06T03:40:00.123Z",
                "answered",
                "",
                "https://agent.example/<x>",
                "abababababababab"
            ],
        ]
    );
    assert!(html.contains("https://agent.example/&lt;x&gt;"));
    assert!(html.contains(r#"title="why &quot;quoted&quot;""#));
}

#[test]
fn many_targets_get_page_links_and_a_store_without_a_daemon_is_listed_by_endpoint() {
    let v = OverviewView {
        targets: TargetList {
            total: 250,
            by_endpoint: true,
            page: 2,
            pages: 3,
            rows: Vec::new(),
        },
        ..OverviewView::default()
    };
    let html = overview(&v, "t");
    assert!(html.contains("Endpoints (250)"));
    assert!(
        html.contains(
            r#"page 2 of 3: <a href="/?page=1">1</a> <strong>2</strong> <a href="/?page=3">3</a>"#
        ),
        "{html}"
    );
    assert!(!html.contains("schedule · next fire"));
}

#[test]
fn a_target_page_shows_its_schedule_history_and_a_bar_per_day() {
    let days: Vec<String> = (1..=3).map(|d| format!("2026-12-0{d}")).collect();
    let v = TargetView {
        name: "alpha".into(),
        config: Some(TargetInfo {
            name: "alpha".into(),
            origin: "https://agent.example".into(),
            endpoint: None,
            schedule: "@hourly".into(),
            next_fire: NextFire(Arc::new(|_| None)),
        }),
        next_fire: Some("2026-12-03T11:00:00Z".into()),
        day: None,
        latest: Vec::new(),
        daily: vec![
            ("2026-12-01".into(), "FAIL".into(), 2),
            ("2026-12-01".into(), "PASS".into(), 3),
            ("2026-11-01".into(), "PASS".into(), 9),
        ],
        chart_days: days.clone(),
        history: vec![HistoryFire {
            fire: Fire {
                walk_id: 1,
                state: "declined".into(),
                at: "2026-12-01T09:00:00Z".into(),
                detail: Some("no consent".into()),
                ..Fire::default()
            },
            filed: None,
            not_applicable: Vec::new(),
        }],
    };
    let html = target(&v, "t");
    assert!(html.contains("@hourly</code> (UTC), next fire 2026-12-03T11:00:00Z"));
    assert!(html.contains("the card's first measured endpoint"));
    assert!(html.contains(r#"data-kind="declined""#) && html.contains("no consent"));
    let bars = target::daily_bars(&v.daily, &days);
    assert_eq!(bars.len(), 3, "a bar per day of the chart, none outside it");
    assert_eq!(
        bars[0].1,
        vec![(Kind::Pass, 3), (Kind::Fail, 2)],
        "PASS at the bottom"
    );
    assert!(bars[1].1.is_empty() && bars[2].1.is_empty());
}

#[test]
fn witnesses_disagree_only_on_days_they_saw_different_outcomes() {
    let mut b = done(
        0,
        "2026-12-02T10:00:00Z",
        fire_record(4, "PASS", &[], "beta"),
    );
    b.public_key_b64 = None;
    let recs = vec![
        b,
        done(
            0,
            "2026-12-02T09:00:00Z",
            fire_record(3, "FAIL", &["endpoint_bound"], "alpha"),
        ),
        done(
            0,
            "2026-12-01T10:00:00Z",
            fire_record(2, "PASS", &[], "beta"),
        ),
        done(
            0,
            "2026-12-01T09:00:00Z",
            fire_record(1, "PASS", &[], "alpha"),
        ),
    ];
    let found = endpoint::disagreements(&recs);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, "2026-12-02");
    let mut witnesses: std::collections::BTreeMap<WitnessKey, Vec<usize>> = Default::default();
    for (i, f) in recs.iter().enumerate() {
        witnesses.entry(WitnessKey::of(f)).or_default().push(i);
    }
    let v = EndpointView::One(OneEndpoint {
        url: "https://agent.example/a2a".into(),
        records: recs,
        witnesses,
        foreign: Default::default(),
    });
    let html = endpoint(&v, "t", maud::html! { p id="extra" { "rings" } });
    assert!(
        html.contains("4 most recent record(s) of this endpoint in the store, from 2 witness(es).")
    );
    assert!(
        html.contains(r#"<tr class="disagreement"><td>2026-12-02</td>"#),
        "{html}"
    );
    assert!(html.contains("alpha (ci): <span class=\"v fail\">FAIL</span> — endpoint_bound"));
    assert!(html.contains(r#"<p id="extra">rings</p>"#));
}

#[test]
fn a_record_page_says_which_checks_failed() {
    let sha = "ab".repeat(32);
    let v = RecordView {
        stored: StoredRecord {
            row: RecordRow {
                id: 7,
                sha256: sha.clone(),
                meta: RecordMeta {
                    endpoint: "https://agent.example/a2a".into(),
                    origin: "https://agent.example".into(),
                    walked_at: "2026-12-01T10:00:00Z".into(),
                    walker_mode: None,
                    privacy_mode: "commitment".into(),
                    verdict: None,
                    key_url: None,
                },
                signed: true,
                inserted_at: "2026-12-01T10:00:01Z".into(),
                chain_hash: "cd".repeat(32),
            },
            canonical: b"{}".to_vec(),
            signature_b64: Some("AA==".into()),
            public_key_b64: Some("AA==".into()),
            kept_full: None,
        },
        value: serde_json::json!({"assertions": [{"claim": "x: <i>", "result": null}]}),
        checks: Checks {
            sha_ok: false,
            signature: Err("bad signature".into()),
            chain_ok: false,
            prev: None,
            next: Some((8, "ef".repeat(32), "00".repeat(32))),
        },
        signatures: vec![(
            crate::store::signatures::RecordSignature {
                public_key_b64: "AA==".into(),
                signature_b64: "AA==".into(),
                signed_at: "2026-12-02T09:00:00Z".into(),
                made_at: "filing".into(),
            },
            Some("witness-0123abcd, retired".into()),
        )],
        revealed: Some(("12".repeat(32), None)),
        opens: None,
        fire: Some(("alpha".into(), "2026-12-01T10:00:00Z".into())),
        alerts: Default::default(),
        submissions: Vec::new(),
        binding: None,
        ledger: Default::default(),
        own_card_check: None,
        // The agent's text, escaped like every stranger's.
        reciprocal: Some("sched<uled>".into()),
        notify_status: None,
    };
    let html = record(&v, "t");
    assert!(
        html.contains("<code>sched&lt;uled&gt;</code>") && html.contains(r#"id="reciprocal""#),
        "{html}"
    );
    assert!(html.contains(r#"<dd id="notify-status"><code>null</code></dd>"#));
    assert!(html.contains("DOES NOT MATCH"));
    assert!(html.contains("INVALID: bad signature"));
    assert!(
        html.contains("2026-12-02T09:00:00Z (filing): key history: witness-0123abcd, retired"),
        "the page names every key that signed the record: {html}"
    );
    assert!(html.contains("does not follow from the previous row"));
    assert!(
        html.contains("none (first row)") && html.contains(r#"class="next" href="/records/efef"#)
    );
    assert!(html.contains("none (commitment)") && html.contains("Not revealed."));
    assert!(html.contains(r#"href="/targets/alpha">alpha</a>"#));
    assert!(
        html.contains(r#"<tr class="assertion n/a"><td>n/a</td><td>x: &lt;i&gt;</td>"#),
        "{html}"
    );
    assert!(html.contains("Never planned for an intake."));
    assert!(
        !html.contains(r#"id="ledger""#),
        "a store without the ledger's tables shows none"
    );
}

/// The text of every `td` of each row `rows` selects, row by row.
fn row_cells(html: &str, rows: &str) -> Vec<Vec<String>> {
    let page = scraper::Html::parse_document(html);
    let rows = scraper::Selector::parse(rows).unwrap();
    let cell = scraper::Selector::parse("td").unwrap();
    page.select(&rows)
        .map(|tr| tr.select(&cell).map(|td| td.text().collect()).collect())
        .collect()
}
