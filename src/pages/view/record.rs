//! A record's page markup.

use super::{filing, layout, short, shown};
use crate::pages::links::{endpoint_href, raw_href, record_href, target_href};
use crate::pages::model::key_fingerprint;
use crate::pages::model::record::RecordView;
use crate::pages::{alerts, ledger};
use crate::store::outbox::Submission;
use crate::store::status::Attempt;
use maud::{Markup, html};

pub fn record(v: &RecordView, served_by: &str) -> String {
    let row = &v.stored.row;
    let body = html! {
        h1 { "Record " code { (short(&row.sha256)) } }
        p class="links" {
            a id="raw" href=(raw_href(&row.sha256)) { "the exact bytes (" (v.stored.canonical.len()) " bytes, application/json)" }
        }
        section class="grid" {
            (walk_box(v))
            (checks_box(v))
        }
        (card_signature_section(&v.value["card_signature"], v.own_card_check.as_ref()))
        (commitment_sections(v))
        (alerts::record_section(&v.alerts))
        (intake_section(&v.submissions))
        @if let Some(b) = &v.binding { (task_binding_section(b)) }
        (ledger::record_life_section(&v.ledger))
        (assertions_and_nodes(&v.value))
        section {
            h2 { "The record, pretty-printed" }
            pre class="json" { (serde_json::to_string_pretty(&v.value).unwrap_or_default()) }
        }
    };
    layout(&format!("Record {}", short(&row.sha256)), served_by, body)
}

fn walk_box(v: &RecordView) -> Markup {
    let row = &v.stored.row;
    let value = &v.value;
    html! {
        div class="box" {
            h2 { "Walk" }
            dl {
                dt { "sha256" } dd { code id="sha" { (row.sha256) } }
                dt { "walked at" } dd { (row.meta.walked_at) }
                dt { "endpoint" } dd { a href=(endpoint_href(&row.meta.endpoint)) { (row.meta.endpoint) } }
                dt { "origin" } dd { code { (row.meta.origin) } }
                dt { "mode · privacy" } dd { (row.meta.walker_mode.as_deref().unwrap_or("?")) " · " (row.meta.privacy_mode) }
                dt { "verdict" } dd id="verdict" { @match &row.meta.verdict { Some(v) => { (v.outcome) " " (v.n_pass) "/" (v.n_total) }, None => "none (commitment)" } }
                dt { "stored at" } dd { (row.inserted_at) }
                @if let Some(u) = value["conduct_ext"]["witness_intake"].as_str() { dt { "intake the card names" } dd { code { (u) } } }
                @if let Some(u) = value["conduct_ext"]["conduct_record"].as_str() { dt { "conduct record the card names" } dd { code { (u) } } }
                @if let Some((t, at)) = &v.fire { dt { "fired by" } dd { a href=(target_href(t)) { (t) } " at " (at) } }
                @if let Some(r) = &v.reciprocal { dt { "walk us back (reciprocal)" } dd id="reciprocal" title="the agent's answer to our caller card; kept beside the record, not in it" { code { (r) } } }
                dt { "notify_status" } dd id="notify-status" { code { (notify_status_text(v.notify_status.as_ref())) } }
            }
        }
    }
}

/// `notify_status` as JSON text (`null` when the walk notified nothing, §7.4 guard 1).
pub fn notify_status_text(status: Option<&serde_json::Value>) -> String {
    status.map_or_else(|| "null".to_string(), serde_json::Value::to_string)
}

fn checks_box(v: &RecordView) -> Markup {
    let row = &v.stored.row;
    let c = &v.checks;
    html! {
        div class="box" id="checks" {
            h2 { "Checks" }
            dl {
                dt { "sha256 of the bytes" } dd { @if c.sha_ok { span class="ok" { "matches" } } @else { span class="bad" { "DOES NOT MATCH" } } }
                dt { "signature" } dd id="signature" {
                    @match &c.signature {
                        Ok(Some(())) => span class="ok" { "valid Ed25519 signature over the exact bytes" },
                        Ok(None) => "unsigned",
                        Err(e) => span class="bad" { "INVALID: " (e) },
                    }
                    @if let Some(k) = &v.stored.public_key_b64 { br; "key " code title=(k) { (key_fingerprint(k)) } }
                }
                @if !v.signatures.is_empty() {
                    dt { "signed by" } dd id="signed-by" {
                        @for (sig, listed) in &v.signatures {
                            "key " code title=(sig.public_key_b64) { (key_fingerprint(&sig.public_key_b64)) }
                            " at " (sig.signed_at) " (" (sig.made_at) "): "
                            @match listed { Some(l) => { "key history: " (l) }, None => "not in a key history" }
                            br;
                        }
                    }
                }
                dt { "chain position" } dd id="chain" {
                    "row " (row.id) ", chain hash " code { (row.chain_hash.get(..16).unwrap_or(&row.chain_hash)) } " "
                    @if c.chain_ok { span class="ok" { "follows from the previous row" } } @else { span class="bad" { "does not follow from the previous row" } }
                }
                dt { "previous" } dd { @match &c.prev { Some((id, sha, _)) => { "row " (id) " " a class="prev" href=(record_href(sha)) { code { (short(sha)) } } }, None => "none (first row)" } }
                dt { "next" } dd { @match &c.next { Some((id, sha, _)) => { "row " (id) " " a class="next" href=(record_href(sha)) { code { (short(sha)) } } }, None => "none (last row)" } }
            }
        }
    }
}

fn commitment_sections(v: &RecordView) -> Markup {
    html! {
        @if let Some((sha, stored)) = &v.revealed {
            section class="box" id="commitment" {
                h2 { "Commitment" }
                p { "The full record (sha256 " code { (sha) } ") is kept in this store. "
                    @match stored {
                        Some((id, inserted_at)) => { "Revealed: stored as its own record at " (inserted_at) " (" a href=(record_href(sha)) { "row " (id) } ")." },
                        None => "Not revealed.",
                    }
                }
            }
        }
        @if let Some((sha, id)) = &v.opens {
            section class="box" id="reveals" {
                h2 { "Reveal" }
                p { "This is the full record of the commitment " a href=(record_href(sha)) { "row " (id) } "." }
            }
        }
    }
}

fn intake_section(subs: &[(Submission, Vec<Attempt>)]) -> Markup {
    html! {
        section id="intake" {
            h2 { "Intake answers" }
            @if subs.is_empty() { p { "Never planned for an intake." } }
            @for (s, tries) in subs {
                div class="box submission" {
                    p { code { (s.intake_url) } " · lane " (s.lane) " · " strong { (filing(std::slice::from_ref(s))) } " · state " (s.state) " · " (s.attempts) " attempt(s)" }
                    @if s.state == crate::filing::SubmissionState::Sending {
                        // Why the row waits and for what (issue 34): a lookup, never a blind resend.
                        p class="lookup" { (s.summary().text) }
                    }
                    @if !tries.is_empty() {
                        table class="attempts" {
                            tr { th { "at" } th { "answer" } th { "status" } th { "body" } }
                            @for a in tries {
                                tr class="attempt" { td { (a.attempted_at) } td { (a.answer) } td { (a.status) } td { pre { (a.body.chars().take(2000).collect::<String>()) } } }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn assertions_and_nodes(value: &serde_json::Value) -> Markup {
    html! {
        @if let Some(list) = value["assertions"].as_array() {
            section {
                h2 { "Assertions" }
                table class="assertions" {
                    tr { th { "result" } th { "claim" } th { "note" } }
                    @for a in list {
                        @let word = match a["result"].as_bool() { Some(true) => "pass", Some(false) => "FAIL", None => "n/a" };
                        tr class={"assertion " (word)} { td { (word) } td { (a["claim"].as_str().unwrap_or("")) } td { (a["note"].as_str().unwrap_or("")) } }
                    }
                }
            }
        }
        @if let Some(list) = value["nodes"].as_array() {
            section {
                h2 { "Nodes" }
                table class="nodes" {
                    tr { th { "id" } th { "kind" } th { "request" } th { "status" } }
                    @for n in list {
                        tr {
                            // A compute node has no id of its own and no response.
                            td { (shown(&n["id"])) }
                            td { (n["kind"].as_str().unwrap_or("")) }
                            td { (n["request"]["method"].as_str().unwrap_or("")) " " code { (n["request"]["url"].as_str().or(n["label"].as_str()).unwrap_or("")) } }
                            td { (shown(&n["response"]["status"])) }
                        }
                    }
                }
            }
        }
    }
}

/// The record's task binding (spec §5.1): skipped and why, or the observation's identities and
/// what the task-delegation ledger answered.
fn task_binding_section(b: &crate::store::task_bindings::TaskBinding) -> Markup {
    let answer = b
        .answer_json()
        .map(|a| serde_json::to_string_pretty(&a).unwrap_or_default());
    html! {
        section class="box" id="task-binding" {
            h2 { "Task binding" }
            p { code { (b.ledger_url) } " · " strong { (b.describe()) } }
            dl {
                @if let Some(t) = &b.task_id { dt { "task id" } dd { code { (t) } } }
                @if let Some(e) = &b.evidence_id { dt { "evidence_id" } dd { code { (e) } } }
                @if let Some(w) = &b.witness_id { dt { "witness (W)" } dd { code { (w) } } }
                @if let Some(p) = &b.requester_id { dt { "requester (P, a key made for this binding)" } dd { code { (p) } } }
                @if let Some(at) = &b.sent_at { dt { "sent at" } dd { (at) } }
                @if let Some(at) = &b.answered_at { dt { "settled at" } dd { (at) } }
            }
            @if let Some(a) = &answer { pre class="json" { (a) } }
        }
    }
}

/// `verified` of a card-signature block in words.
fn verified_word(block: &serde_json::Value) -> &'static str {
    match block.get("verified").and_then(serde_json::Value::as_bool) {
        Some(true) => "verified",
        Some(false) => "does not verify",
        None => "not established",
    }
}

/// A signed card's two checks: the record's (the reference walker's, §4.3) and conduct-walker's
/// own, kept beside the record. Nothing for an unsigned card.
fn card_signature_section(
    in_record: &serde_json::Value,
    own: Option<&serde_json::Value>,
) -> Markup {
    if in_record.get("present") != Some(&serde_json::Value::Bool(true)) {
        return html! {};
    }
    let reason = |b: &serde_json::Value| {
        b["verified_reason"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    html! {
        section class="box" id="card-signature" {
            h2 { "Card signature" }
            p id="card-signature-record" {
                "In the record (the reference walker's check: ES256 in two forms, key at the jku): "
                strong { (verified_word(in_record)) } ". " (reason(in_record))
            }
            @if let Some(own) = own {
                p id="card-signature-own" {
                    "conduct-walker's own check (every algorithm, pinned keys, canonicalisation profiles; not in the record): "
                    strong { (verified_word(own)) } ". " (reason(own))
                    @if let Some(p) = own["profile"].as_str() { " Profile: " code { (p) } "." }
                    @if let Some(n) = own["uncovered_count"].as_u64() { " Members the signature does not cover: " (n) "." }
                }
            }
        }
    }
}
