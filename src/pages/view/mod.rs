//! The renderer: view structs ([`super::model`]) to HTML, with no store and no I/O, so each page
//! is tested from hand-built views. maud escapes every string (record strings come from
//! strangers' servers).

pub mod endpoint;
pub mod overview;
pub mod record;
pub mod target;

#[cfg(test)]
mod tests;

pub use endpoint::endpoint;
pub use overview::overview;
pub use record::record;
pub use target::target;

use super::links::record_href;
use super::svg::{Cell, Kind};
use crate::store::outbox::Submission;
use crate::store::status::{Fire, FireRecord};
use maud::{DOCTYPE, Markup, html};

/// A whole page around `body`.
pub fn layout(title: &str, served_by: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                title { (title) " · conduct-walker" }
                link rel="stylesheet" href="/assets/style.css";
            }
            body {
                header {
                    nav { a href="/" { "Overview" } " · " a href="/endpoints" { "Endpoints" } }
                }
                main { (body) }
                footer {
                    "Read-only view of the store, served by " (served_by)
                    ". Every string on these pages was received from the servers walked or from "
                    "the intakes; it is shown as text."
                }
            }
        }
    }
    .into_string()
}

/// How a fire ended.
pub fn kind_of(f: &Fire) -> Kind {
    match f.state.as_str() {
        "done" => match &f.record {
            Some(r) if r.facts.transport_error => Kind::TransportError,
            Some(r) => match r.outcome.as_deref() {
                Some("PASS") => Kind::Pass,
                Some("FAIL") => Kind::Fail,
                _ => Kind::NoVerdict,
            },
            None => Kind::Error,
        },
        "declined" => Kind::Declined,
        "aborted" => Kind::Aborted,
        "skipped_overlap" => Kind::Skipped,
        "running" => Kind::Running,
        _ => Kind::Error,
    }
}

/// A JSON scalar as a cell shows it: strings bare, absent or null as a dash.
fn shown(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "—".into(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn verdict_text(r: &FireRecord) -> String {
    match (&r.outcome, r.n_pass, r.n_total) {
        (Some(o), Some(p), Some(t)) => format!("{o} {p}/{t}"),
        (Some(o), _, _) => o.clone(),
        _ => "no verdict".into(),
    }
}

/// How a fire ended, once: "PASS 4/4", not "PASS PASS 4/4"; the kind is named beside the
/// verdict only when it says more (a transport error behind a FAIL).
fn fire_text(f: &Fire) -> String {
    let kind = kind_of(f);
    match &f.record {
        Some(r) if r.outcome.as_deref() == Some(kind.label()) => verdict_text(r),
        Some(r) => format!("{} ({})", kind.label(), verdict_text(r)),
        None => kind.label().to_string(),
    }
}

/// A strip's cells from fires newest first; the strip reads left to right, oldest first.
fn cells<'a>(fires: impl DoubleEndedIterator<Item = &'a Fire>) -> Vec<Cell> {
    fires
        .rev()
        .map(|f| {
            let kind = kind_of(f);
            let mut title = format!("{} {}", f.at, fire_text(f));
            if let Some(d) = &f.detail
                && f.record.is_none()
            {
                title.push_str(": ");
                title.push_str(d);
            }
            Cell {
                kind,
                title,
                href: f.record.as_ref().map(|r| record_href(&r.sha256)),
            }
        })
        .collect()
}

/// How the intake took a record, in the words an operator uses.
pub fn filing(subs: &[Submission]) -> String {
    if subs.is_empty() {
        return "not filed (no submission)".into();
    }
    subs.iter()
        .map(|s| s.summary().short)
        // Each wording once (several answers for one record often say the same).
        .fold(Vec::<String>::new(), |mut seen, text| {
            if !seen.contains(&text) {
                seen.push(text);
            }
            seen
        })
        .join("; ")
}

/// The first 12 characters of a sha (or all of a shorter one).
fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}
