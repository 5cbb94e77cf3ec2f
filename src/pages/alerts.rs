//! The alerts on the status pages (issue 24): the open incidents and the latest deliveries on
//! the overview, and a record's alerts on its page. Each reads an indexed table (the targets
//! with an open incident, the latest outbox rows, the rows about one record), never history.

use super::links::target_href;
use crate::alerts::outbox::{self, AlertRow, OpenIncident};
use crate::store::StoreError;
use maud::{Markup, html};

/// The overview's alerts: the open incidents and the latest deliveries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OverviewAlerts {
    pub open: Vec<OpenIncident>,
    pub latest: Vec<AlertRow>,
}

/// A record's alerts: its target's open incidents and the alerts the record caused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordAlerts {
    pub open: Vec<OpenIncident>,
    pub rows: Vec<AlertRow>,
}

pub fn overview(conn: &rusqlite::Connection) -> Result<OverviewAlerts, StoreError> {
    Ok(OverviewAlerts {
        open: outbox::open_incidents(conn)?,
        latest: outbox::latest(conn, LATEST)?,
    })
}

/// `target`: the target whose fire stored the record, if any.
pub fn for_record(
    conn: &rusqlite::Connection,
    sha256: &str,
    target: Option<&str>,
) -> Result<RecordAlerts, StoreError> {
    Ok(RecordAlerts {
        rows: outbox::for_record(conn, sha256)?,
        open: match target {
            Some(t) => outbox::open_incidents_of(conn, t)?,
            None => Vec::new(),
        },
    })
}

/// How many deliveries the overview lists.
const LATEST: u32 = 20;

fn deliveries(rows: &[AlertRow]) -> Markup {
    html! {
        table class="alerts" {
            tr { th { "planned" } th { "alert" } th { "target" } th { "channel" } th { "state" } th { "attempts" } th { "last answer" } }
            @for r in rows {
                tr class={"alert " (r.state)} {
                    td { (r.created_at) }
                    td { (r.kind) br; code { (r.alert_id) } }
                    td { (r.target.as_deref().unwrap_or("-")) }
                    td { (r.channel) }
                    td class="state" { (r.state) @if let Some(t) = r.next_attempt() { br; "next " (t) } }
                    td { (r.attempts) }
                    td { (r.last_answer.as_deref().unwrap_or("")) }
                }
            }
        }
    }
}

/// The overview's section: open incidents, then the latest deliveries.
pub fn overview_section(a: &OverviewAlerts) -> Markup {
    let (open, rows) = (&a.open, &a.latest);
    html! {
        section class="box" id="alerts" {
            h2 { "Incidents and alerts" }
            @if open.is_empty() {
                p { "No open incident." }
            } @else {
                table class="incidents" {
                    tr { th { "target" } th { "incident" } th { "since" } th { "announced" } }
                    @for i in open {
                        tr class="incident" {
                            td { a href=(target_href(&i.target)) { (i.target) } }
                            td { (i.kind) " #" (i.number) }
                            td { (i.opened_at) }
                            td { @if i.announced { "yes" } @else { "not yet (held by the minimum interval)" } }
                        }
                    }
                }
            }
            @if rows.is_empty() {
                p { "No alert planned." }
            } @else {
                (deliveries(rows))
            }
        }
    }
}

/// A record's page: the target's open incident and the alerts this record caused.
pub fn record_section(a: &RecordAlerts) -> Markup {
    let (open, rows) = (&a.open, &a.rows);
    if rows.is_empty() && open.is_empty() {
        return html! {};
    }
    html! {
        section class="box" id="alerts" {
            h2 { "Alerts" }
            @for i in open {
                p class="incident" { "Open: " (i.target) " " (i.kind) " incident #" (i.number) " since " (i.opened_at) }
            }
            @if !rows.is_empty() { (deliveries(rows)) }
        }
    }
}
