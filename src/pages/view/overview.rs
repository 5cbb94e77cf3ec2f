//! The overview's markup.

use super::{cells, filing, kind_of, layout, verdict_text};
use crate::pages::links::{endpoint_href, overview_page_href, record_href, target_href};
use crate::pages::model::key_fingerprint;
use crate::pages::model::overview::{OverviewView, STRIP, TargetList, TargetRow};
use crate::pages::{VerifySummary, WitnessInfo, alerts, ledger, svg};
use crate::store::notifications::NotificationRow;
use crate::store::reciprocal_walks::ReciprocalWalk;
use crate::store::witness_requests::WitnessRequest;
use maud::{Markup, html};

pub fn overview(v: &OverviewView, served_by: &str) -> String {
    let body = html! {
        h1 { "What the walker saw" }
        (alerts::overview_section(&v.alerts))
        section class="grid" {
            (witness_box(v.witness.as_ref()))
            (lanes_box(v))
            div class="box" id="outbox" {
                h2 { "Outbox" }
                @if v.outbox.is_empty() { p { "No submissions." } }
                @else {
                    table {
                        @for (state, n) in &v.outbox {
                            tr class="outbox-state" data-state=(state) { td { (state) } td class="n" { (n) } }
                        }
                    }
                }
            }
            (ledger::overview_box(&v.ledger))
            div class="box" id="store" {
                h2 { "Store" }
                dl {
                    dt { "records" } dd id="record-count" { (v.records) }
                    dt { "size" } dd { (v.size_bytes / 1024) " KiB" }
                    dt { "last verify" } dd id="verify" { (verify_text(v.verify.0.as_ref(), v.verify.1)) }
                }
            }
        }
        (witness_requests_section(&v.witness_requests))
        (reciprocal_section(&v.reciprocal_walks))
        (notifications_section(&v.notifications))
        (targets_section(&v.targets))
    };
    layout("Overview", served_by, body)
}

/// What the pool asked of this witness and how it answered; nothing without a request.
fn witness_requests_section(rows: &[WitnessRequest]) -> Markup {
    if rows.is_empty() {
        return html! {};
    }
    html! {
        section class="box" id="witness-requests" {
            h2 { "Witness requests" }
            table {
                tr { th { "received (UTC)" } th { "outcome" } th { "reason" } th { "endpoint" } th { "observation" } }
                @for r in rows {
                    tr class={"witness-request " (r.outcome)} title=[r.detail.as_deref()] {
                        td { (r.received_at) }
                        td class="outcome" { (r.outcome) }
                        td class="reason" { (r.reason.as_deref().unwrap_or("")) }
                        td { @if let Some(e) = &r.endpoint { code { (e) } } }
                        td { @if let Some(sha) = &r.record_sha256 { code title=(sha) { (sha.get(..16).unwrap_or(sha)) } } }
                    }
                }
            }
        }
    }
}

/// Callers who asked to be walked back (§11.6): what each was answered, and where the walk
/// stands (declined with why, queued with its promise, filed with its record).
fn reciprocal_section(rows: &[ReciprocalWalk]) -> Markup {
    if rows.is_empty() {
        return html! {};
    }
    html! {
        section class="box" id="reciprocal-walks" {
            h2 { "Reciprocal walks" }
            table {
                tr { th { "asked (UTC)" } th { "caller" } th { "state" } th { "reason" } th { "walk by" } th { "record" } th { "intake" } }
                @for r in rows {
                    tr class={"reciprocal-walk " (r.state)} title=[r.detail.as_deref()] {
                        td { (r.requested_at) }
                        td { code { (r.origin.as_deref().unwrap_or(&r.caller_card)) } }
                        td class="state" { (r.state) }
                        td class="reason" { (r.reason.as_deref().unwrap_or("")) }
                        td { (r.walk_by.as_deref().unwrap_or("")) }
                        td { @if let Some(sha) = &r.record_sha256 { a href=(record_href(sha)) { code title=(sha) { (sha.get(..16).unwrap_or(sha)) } } } }
                        td { @if let Some(i) = &r.intake_url { code { (i) } } }
                    }
                }
            }
        }
    }
}

/// The §11.5 notifications sent (or not, and why) after scheduled walks; nothing without one.
fn notifications_section(rows: &[NotificationRow]) -> Markup {
    if rows.is_empty() {
        return html! {};
    }
    html! {
        section class="box" id="notifications" {
            h2 { "Notifications" }
            table {
                tr { th { "at (UTC)" } th { "endpoint" } th { "URL host" } th { "status" } }
                @for n in rows {
                    tr class="notification" {
                        td { (n.decided_at) }
                        td { code { (n.endpoint) } }
                        td { code { (crate::notify::guard::host_of(&n.url).unwrap_or_default()) } }
                        td class="status" { code { (n.status.as_deref().unwrap_or("in flight")) } }
                    }
                }
            }
        }
    }
}

fn witness_box(witness: Option<&WitnessInfo>) -> Markup {
    html! {
        div class="box" id="witness" {
            h2 { "Witness" }
            @match witness {
                Some(w) => dl {
                    dt { "name" } dd class="witness-name" { (w.name) }
                    dt { "vantage" } dd { (w.vantage) }
                    dt { "key" } dd {
                        @match &w.public_key_b64 {
                            Some(k) => code title=(k) { (key_fingerprint(k)) },
                            None => "unsigned (address lane)",
                        }
                    }
                    dt { "key_url" } dd { @match &w.key_url { Some(u) => code { (u) }, None => "none" } }
                },
                None => p { "No record stored yet and no config given." },
            }
        }
    }
}

fn lanes_box(v: &OverviewView) -> Markup {
    html! {
        div class="box" id="lanes" {
            h2 { "Lanes today (" (v.today) ", UTC)" }
            @if v.lanes_today.is_empty() {
                p { "Nothing accepted by an intake today." }
            } @else {
                table {
                    tr { th { "intake" } th { "lane" } th { "accepted" } th { "cap" } }
                    @for l in &v.lanes_today {
                        tr class="lane" {
                            td { code { (l.intake) } } td { (l.lane) }
                            td class="used" { (l.used) }
                            td { (l.cap) @if !l.stated { " (spec default)" } }
                        }
                    }
                }
            }
            @for c in &v.lane_charts {
                (svg::lane_bars(&format!("lane {}: records accepted per UTC day (cap {})", c.lane, c.cap),
                    &c.per_day, c.cap))
            }
        }
    }
}

fn verify_text(last: Option<&VerifySummary>, running: bool) -> Markup {
    html! {
        @match last {
            None => @if running { "running…" } @else { "not run yet" },
            Some(v) => {
                @if v.problems.is_empty() {
                    span class="ok" { "OK" }
                } @else {
                    span class="bad" { (v.problems.len()) " problem(s)" }
                }
                " at " (v.finished_at) ": " (v.rows) " rows, " (v.signed) " signatures"
                @if v.full_at != v.finished_at { " (every row read at " (v.full_at) ", the rows added since checked after)" }
                @if let Some((id, head)) = &v.head { ", head row " (id) " " code { (head.get(..16).unwrap_or(head)) } }
                @if running { " (re-running)" }
                @if !v.problems.is_empty() {
                    ul { @for p in v.problems.iter().take(5) { li { (p) } } }
                }
            }
        }
    }
}

fn targets_section(t: &TargetList) -> Markup {
    let by_endpoint = t.by_endpoint;
    html! {
        section id="targets" {
            h2 { @if by_endpoint { "Endpoints (" (t.total) ")" } @else { "Targets (" (t.total) ")" } }
            (svg::legend())
            table class="targets" {
                thead { tr {
                    th { @if by_endpoint { "endpoint" } @else { "target" } }
                    @if !by_endpoint { th { "endpoint" } th { "schedule · next fire (UTC)" } }
                    th { "last verdict" } th { "last " (STRIP) " walks (oldest → newest)" }
                    th { "failed most recently" } th { "last record filed as" }
                } }
                tbody { @for r in &t.rows { (target_row(r, by_endpoint)) } }
            }
            @if t.pages > 1 {
                nav class="pages" {
                    "page " (t.page) " of " (t.pages) ": "
                    @for p in 1..=t.pages {
                        @if p == t.page { strong { (p) } " " } @else { a href=(overview_page_href(p)) { (p) } " " }
                    }
                }
            }
        }
    }
}

fn target_row(r: &TargetRow, by_endpoint: bool) -> Markup {
    let last = r.fires.iter().find(|f| f.record.is_some());
    let failed = r
        .fires
        .iter()
        .find_map(|f| f.record.as_ref().filter(|x| !x.facts.failed.is_empty()));
    html! {
        tr class="target" data-name=(r.name) {
            td class="name" {
                @if r.is_target { a href=(target_href(&r.name)) { (r.name) } }
                @else { a href=(endpoint_href(&r.name)) { (r.name) } }
            }
            @if !by_endpoint {
                td class="endpoint" { a href=(endpoint_href(&r.endpoint)) { (r.endpoint) } }
                td { @if let Some(s) = &r.schedule { code { (s) } br; (r.next_fire.as_deref().unwrap_or("none")) } @else { "not configured" } }
            }
            td class="verdict" {
                @match last.and_then(|f| f.record.as_ref().map(|rec| (f, rec))) {
                    Some((f, rec)) => {
                        a href=(record_href(&rec.sha256)) class={"v " (kind_of(f).slug())} { (verdict_text(rec)) }
                        br; small { (rec.walked_at) }
                    },
                    None => "no record",
                }
            }
            td { (svg::strip(&cells(r.fires.iter()), STRIP)) }
            td class="failed" {
                @if let Some(rec) = failed {
                    (rec.facts.failed.join(", ")) br; small { (rec.walked_at) }
                }
            }
            td class="filing" { (r.last_filed.as_deref().map(filing).unwrap_or_default()) }
        }
    }
}
