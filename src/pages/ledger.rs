//! The ledger's part of the status pages (issue 23): a record's life in the ledger, the
//! overview's follower figures, other witnesses' records on the endpoint page. Each reads the
//! ledger tables through their indexes or the one-row-per-intake table, never a scan of
//! history; a store older than migration 7 (pages open read-only) shows nothing here.

use super::links::record_href;
use crate::filing::SubmissionState;
use crate::store::StoreError;
use crate::store::ledger::{self as lstore, Finding, FollowRow, IntakeState, ResponsesVersion};
use maud::{Markup, html};
use rusqlite::Connection;

fn has_ledger_tables(conn: &Connection) -> Result<bool, StoreError> {
    Ok(crate::store::schema::has_table(conn, "ledger_follow")?)
}

/// A record's life in the ledger (`None`: a store without the ledger's tables).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordLife(pub Option<Life>);

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Life {
    pub rows: Vec<FollowRow>,
    pub findings: Vec<Finding>,
    pub replies: Vec<ResponsesVersion>,
}

/// The overview's ledger figures (`None`: a store without the ledger's tables).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LedgerOverview(pub Option<(Vec<IntakeState>, Vec<Finding>)>);

/// Other witnesses' records of an endpoint (`None`: a store without the ledger's tables):
/// `(witness, records, last walk)` and the latest records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Foreign(pub Option<ForeignSeen>);

pub type ForeignSeen = (Vec<(String, i64, String)>, Vec<lstore::ForeignRecord>);

pub fn record_life(conn: &Connection, record_id: i64, sha: &str) -> Result<RecordLife, StoreError> {
    if !has_ledger_tables(conn)? {
        return Ok(RecordLife(None));
    }
    Ok(RecordLife(Some(Life {
        rows: lstore::for_record(conn, record_id)?,
        findings: lstore::findings_for(conn, sha)?,
        replies: lstore::responses_for(conn, sha)?,
    })))
}

pub fn overview(conn: &Connection) -> Result<LedgerOverview, StoreError> {
    if !has_ledger_tables(conn)? {
        return Ok(LedgerOverview(None));
    }
    Ok(LedgerOverview(Some((
        lstore::all_intakes(conn)?,
        lstore::latest_findings(conn, 5)?,
    ))))
}

pub fn foreign(conn: &Connection, url: &str) -> Result<Foreign, StoreError> {
    if !has_ledger_tables(conn)? {
        return Ok(Foreign(None));
    }
    Ok(Foreign(Some((
        lstore::foreign_witnesses(conn, url)?,
        lstore::foreign_for_endpoint(conn, url, 200)?,
    ))))
}

/// A record's ledger life: filed → pending → anchored at entry n → inclusion verified, the
/// findings about it and the measured party's replies.
pub fn record_life_section(life: &RecordLife) -> Markup {
    let Some(Life {
        rows,
        findings,
        replies,
    }) = &life.0
    else {
        return html! {};
    };
    html! {
        section id="ledger" {
            h2 { "In the ledger" }
            @if rows.is_empty() { p { "Not filed with an intake that accepted it, so not followed into a ledger." } }
            @for r in rows {
                div class="box ledger-life" {
                    p { code { (r.intake_url) } " · " strong class={"ledger-state " (r.state)} { (r.describe()) } }
                    ol class="life" {
                        li { "filed (accepted by the intake) at " (r.filed_at) }
                        @if let Some(s) = r.last_seen.as_deref() {
                            li { "read " (r.polls) " time(s), last at " (r.last_poll_at.as_deref().unwrap_or("")) ": " (s) }
                        }
                        @if let (Some(n), Some(at)) = (r.ledger_entry, &r.anchored_at) {
                            li { "anchored in ledger entry " (n) " (seen " (at) ")"
                                @if let Some(c) = &r.claim_sha256 { ", batch claim_sha256 " code { (c.get(..16).unwrap_or(c)) } } }
                        }
                        @if let Some(v) = &r.verified_at {
                            li class="ok" { "inclusion verified at " (v) ": the intake's copy is these bytes, the batch bytes hash to its claim, this sha is listed once with fields that agree" }
                        }
                        @if let Some(next) = &r.next_poll_at { li { "next read at " (next) } }
                    }
                }
            }
            @if !findings.is_empty() {
                table class="ledger-findings" {
                    tr { th { "finding" } th { "opened at" } th { "evidence" } }
                    @for f in findings {
                        tr class="ledger-finding" { td class="bad" { (f.kind) } td { (f.opened_at) } td { pre { (serde_json::to_string_pretty(&f.evidence).unwrap_or_default().chars().take(4000).collect::<String>()) } } }
                    }
                }
            }
            h3 { "Replies of the measured party" }
            @match replies.last() {
                None => p { "Never read." },
                Some(v) if v.count == 0 => p id="replies" { "None as of " (v.first_seen) " (" (replies.len()) " version(s) seen). Replies are not anchored and may change." },
                Some(v) => {
                    p id="replies" { (v.count) " repl(y/ies), this version first seen " (v.first_seen) " (" (replies.len()) " version(s) seen; replies are not anchored and may change):" }
                    ul { @for e in v.responses.as_array().into_iter().flatten() {
                        li { (e["subject_origin"].as_str().unwrap_or("")) " at " (e["responded_at"].as_str().unwrap_or("")) ": " code { (e["url"].as_str().unwrap_or("")) } }
                    } }
                }
            }
        }
    }
}

/// The overview's ledger box: per intake, filed / anchored / overdue / findings and the head
/// held (one row per intake).
pub fn overview_box(o: &LedgerOverview) -> Markup {
    let Some((intakes, latest)) = &o.0 else {
        return html! {};
    };
    html! {
        div class="box" id="ledger-overview" {
            h2 { "Ledger" }
            @if intakes.is_empty() { p { "No filed record followed yet." } }
            @for i in intakes {
                p { code { (i.intake_url) } }
                table {
                    tr { td { (SubmissionState::Filed) } td class="n" data-ledger=(SubmissionState::Filed) { (i.filed) } }
                    tr { td { "pending" } td class="n" data-ledger="pending" { (i.pending) } }
                    tr { td { "anchored, inclusion verified" } td class="n" data-ledger="verified" { (i.verified) } }
                    tr { td { "overdue" } td class="n" data-ledger="overdue" { (i.overdue) } }
                    tr { td { "findings" } td class="n" data-ledger="findings" { (i.findings) } }
                }
                p { "head held: "
                    @match (i.head_n, &i.head) {
                        (Some(n), Some(h)) => { "n = " (n) " " code { (h.get(..16).unwrap_or(h)) } " (read " (i.head_seen_at.as_deref().unwrap_or("")) ")" },
                        _ => "none yet",
                    }
                }
            }
            @if !latest.is_empty() {
                p { "Latest findings:" }
                ul { @for f in latest {
                    li class="bad" { (f.kind) " at " (f.opened_at)
                        @if let Some(s) = &f.sha256 { " · " a href=(record_href(s)) { code { (s.get(..12).unwrap_or(s)) } } }
                        @if let Some(n) = f.entry_n { " · entry " (n) } }
                } }
            }
        }
    }
}

/// Other witnesses' records of an endpoint, read from the ledger (`ledger pull`).
pub fn endpoint_foreign(f: &Foreign) -> Markup {
    let Some((witnesses, recs)) = &f.0 else {
        return html! {};
    };
    html! {
        section id="foreign" {
            h2 { "Other witnesses, from the ledger" }
            @if witnesses.is_empty() {
                p { "No record of other witnesses pulled from a ledger for this endpoint (" code { "conduct-walker ledger pull --endpoint URL" } ", or " code { "pull_ledger = true" } " on the target)." }
            } @else {
                p { "Records any witness filed about this endpoint, read from anchored batches and checked against them (sha, fields). "
                    "The ledger keeps no signature: who signed them cannot be checked here." }
                table class="foreign-witnesses" {
                    thead { tr { th { "witness" } th { "records" } th { "last walk" } } }
                    tbody { @for (name, n, last) in witnesses { tr class="foreign-witness" { td { (name) } td class="n" { (n) } td { (last) } } } }
                }
                table class="foreign-records" {
                    thead { tr { th { "walked at" } th { "witness" } th { "vantage" } th { "outcome" } th { "entry" } th { "checked" } th { "sha256" } } }
                    tbody { @for f in recs {
                        tr { td { (f.walked_at.as_deref().unwrap_or("")) } td { (f.witness_name) } td { (f.vantage) }
                             td { (f.outcome.as_deref().unwrap_or("none")) } td class="n" { (f.ledger_entry) }
                             td { @if f.checked == "ok" { span class="ok" { "agrees with its batch" } } @else { span class="bad" { (f.checked) } } }
                             td { code { (f.sha256.get(..12).unwrap_or(&f.sha256)) } } }
                    } }
                }
            }
        }
    }
}
