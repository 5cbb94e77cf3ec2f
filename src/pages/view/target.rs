//! A target's page markup.

use super::{cells, filing, fire_text, kind_of, layout, short};
use crate::pages::links::{record_href, target_href};
use crate::pages::model::overview::STRIP;
use crate::pages::model::target::{DAYS, TargetView};
use crate::pages::svg::{self, Kind};
use maud::html;
use std::collections::BTreeMap;

pub fn target(v: &TargetView, served_by: &str) -> String {
    let name = &v.name;
    let day = v.day;
    // Oldest → newest: each shown record's failed and not-applicable assertions.
    let timeline: Vec<svg::TimelineColumn> = v
        .history
        .iter()
        .rev()
        .map(|h| {
            let column = h
                .fire
                .record
                .as_ref()
                .map(|r| (r.facts.failed.clone(), h.not_applicable.clone()));
            (h.fire.at.clone(), column)
        })
        .collect();
    let body = html! {
        h1 { "Target " span class="target-name" { (name) } }
        dl class="box" {
            @if let Some(t) = &v.config {
                dt { "origin" } dd { code { (t.origin) } }
                dt { "endpoint" } dd { code { (t.endpoint.as_deref().unwrap_or("the card's first measured endpoint")) } }
                dt { "schedule" } dd { code { (t.schedule) } " (UTC), next fire " (v.next_fire.as_deref().unwrap_or("none")) }
            } @else {
                dt { "configuration" } dd { "not in the configuration this server was given; history from the store" }
            }
        }
        h2 { "Last " (v.latest.len()) " walks" }
        (svg::strip(&cells(v.latest.iter()), STRIP))
        (svg::legend())
        h2 { "Per UTC day, last " (DAYS) " days" }
        (svg::stacked_bars("walks per day by outcome", &daily_bars(&v.daily, &v.chart_days)))
        h2 { "History" @if let Some(d) = day { " of " (d.format("%Y-%m-%d")) } }
        form method="get" action=(target_href(name)) {
            label { "day " input type="date" name="day" value=(day.map(|d| d.format("%Y-%m-%d").to_string()).unwrap_or_default()); }
            " " button type="submit" { "show" }
            @if day.is_some() { " " a href=(target_href(name)) { "latest walks" } }
        }
        h3 { "Which assertion failed when (oldest → newest)" }
        (svg::assertion_timeline(&crate::walk::spec::ASSERTION_NAMES, &timeline))
        table class="history" {
            thead { tr { th { "fired (UTC)" } th { "outcome" } th { "record" } th { "failed assertions" } th { "filed as" } th { "detail" } } }
            tbody {
                @for h in &v.history {
                    @let f = &h.fire;
                    @let k = kind_of(f);
                    tr class="fire" data-kind=(k.slug()) {
                        td { (f.at) }
                        td class={"v " (k.slug())} { (fire_text(f)) }
                        td { @if let Some(r) = &f.record { a href=(record_href(&r.sha256)) { code { (short(&r.sha256)) } } } }
                        td class="failed" { @if let Some(r) = &f.record { (r.facts.failed.join(", ")) } }
                        td { (h.filed.as_deref().map(filing).unwrap_or_default()) }
                        td { (f.detail.as_deref().unwrap_or("")) }
                    }
                }
            }
        }
    };
    layout(&format!("Target {name}"), served_by, body)
}

/// Walks per day by kind over `days` (zeros included), PASS at the bottom, FAIL on it, the
/// rest above.
pub(super) fn daily_bars(
    rows: &[(String, String, u64)],
    days: &[String],
) -> Vec<(String, Vec<(Kind, u64)>)> {
    let mut by_day: BTreeMap<&str, BTreeMap<&'static str, (Kind, u64)>> =
        days.iter().map(|d| (d.as_str(), BTreeMap::new())).collect();
    for (day, kind, n) in rows {
        let k = match kind.as_str() {
            "PASS" => Kind::Pass,
            "FAIL" => Kind::Fail,
            "none" => Kind::NoVerdict,
            "declined" => Kind::Declined,
            "aborted" => Kind::Aborted,
            "skipped_overlap" => Kind::Skipped,
            "running" => Kind::Running,
            _ => Kind::Error,
        };
        if let Some(m) = by_day.get_mut(day.as_str()) {
            m.entry(k.slug()).or_insert((k, 0)).1 += n;
        }
    }
    by_day
        .into_iter()
        .map(|(d, m)| {
            let mut segs: Vec<(Kind, u64)> = m.into_values().collect();
            segs.sort_by_key(|(k, _)| Kind::ALL.iter().position(|x| x == k));
            (d.to_string(), segs)
        })
        .collect()
}
