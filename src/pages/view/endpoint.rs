//! The endpoints page markup.

use super::{cells, fire_text, kind_of, layout, short, verdict_text};
use crate::pages::ledger;
use crate::pages::links::{endpoint_href, record_href};
use crate::pages::model::endpoint::{EndpointView, OneEndpoint, WitnessKey};
use crate::pages::model::overview::STRIP;
use crate::pages::svg::{self, Kind};
use crate::store::status::Fire;
use maud::{Markup, html};
use std::collections::{BTreeMap, BTreeSet};

/// Each witness's last outcome (and failed assertions) on one UTC day.
type DaySeen = BTreeMap<WitnessKey, (Kind, String)>;

/// `extra`: a section the face adds after the ledger's (the rings).
pub fn endpoint(v: &EndpointView, served_by: &str, extra: Markup) -> String {
    match v {
        EndpointView::List(list) => {
            let body = html! {
                h1 { "Endpoints (" (list.len()) ")" }
                ul class="endpoints" { @for e in list { li { a href=(endpoint_href(e)) { (e) } } } }
            };
            layout("Endpoints", served_by, body)
        }
        EndpointView::One(one) => layout(
            &format!("Endpoint {}", one.url),
            served_by,
            one_endpoint(one, extra),
        ),
    }
}

/// Per UTC day, each witness's last outcome that day, newest day first, for the days where
/// they differ.
pub(super) fn disagreements(recs: &[Fire]) -> Vec<(String, DaySeen)> {
    let mut days: BTreeMap<String, DaySeen> = BTreeMap::new();
    for f in recs.iter().rev() {
        let day = f.at.get(..10).unwrap_or(&f.at).to_string();
        let failed = f
            .record
            .as_ref()
            .map(|r| r.facts.failed.join(", "))
            .unwrap_or_default();
        days.entry(day)
            .or_default()
            .insert(WitnessKey::of(f), (kind_of(f), failed));
    }
    days.into_iter()
        .rev()
        .filter(|(_, m)| {
            m.len() > 1
                && m.values()
                    .map(|(k, f)| (k.slug(), f.as_str()))
                    .collect::<BTreeSet<_>>()
                    .len()
                    > 1
        })
        .collect()
}

fn one_endpoint(v: &OneEndpoint, extra: Markup) -> Markup {
    let recs = &v.records;
    let disagreements = disagreements(recs);
    html! {
        h1 { "Endpoint " code class="endpoint-url" { (v.url) } }
        p { (recs.len()) " most recent record(s) of this endpoint in the store, from "
            (v.witnesses.len()) " witness(es)." }
        h2 { "Who saw what" }
        table class="witnesses" {
            thead { tr { th { "witness" } th { "vantage" } th { "key" } th { "records" } th { "first · last walk" } th { "last verdict" } th { "failed then" } th { "strip" } } }
            tbody {
                @for (w, idx) in &v.witnesses {
                    @let last = &recs[idx[0]];
                    @let first = &recs[idx[idx.len() - 1]];
                    tr class="witness" {
                        td { (w.name) } td { (w.vantage) } td { code { (w.key) } }
                        td class="n" { (idx.len()) }
                        td { (first.at) br; (last.at) }
                        td { @if let Some(r) = &last.record { a href=(record_href(&r.sha256)) { (verdict_text(r)) } } }
                        td { @if let Some(r) = &last.record { (r.facts.failed.join(", ")) } }
                        td { (svg::strip(&cells(idx.iter().take(STRIP).map(|i| &recs[*i]).collect::<Vec<_>>().into_iter()), STRIP)) }
                    }
                }
            }
        }
        (ledger::endpoint_foreign(&v.foreign))
        (extra)
        h2 { "Where witnesses disagree" }
        @if disagreements.is_empty() {
            p id="agreement" { "No UTC day on which two witnesses of this endpoint saw different outcomes." }
        } @else {
            table class="disagreements" {
                thead { tr { th { "day (UTC)" } th { "witness (vantage): last outcome that day, failed assertions" } } }
                tbody {
                    @for (day, m) in &disagreements {
                        tr class="disagreement" {
                            td { (day) }
                            td { ul { @for (w, (k, failed)) in m.iter() { li { (w.name) " (" (w.vantage) "): " span class={"v " (k.slug())} { (k.label()) } @if !failed.is_empty() { " — " (failed) } } } } }
                        }
                    }
                }
            }
        }
        h2 { "Records" }
        table class="records" {
            thead { tr { th { "walked at" } th { "witness" } th { "vantage" } th { "outcome" } th { "failed" } th { "record" } } }
            tbody {
                @for f in recs {
                    @if let Some(r) = &f.record {
                        tr { td { (r.walked_at) } td { (r.facts.witness_name.as_deref().unwrap_or("")) } td { (r.facts.vantage.as_deref().unwrap_or("")) }
                             td { (fire_text(f)) } td { (r.facts.failed.join(", ")) }
                             td { a href=(record_href(&r.sha256)) { code { (short(&r.sha256)) } } } }
                    }
                }
            }
        }
    }
}
