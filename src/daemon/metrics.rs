//! `/metrics` in the Prometheus text format. Every counter is read from the store, so what
//! `/metrics` says and what `records list` shows cannot drift apart, and a restart does not reset
//! them. They come from the summary rows (`store::summary`, migration 9), which triggers keep in
//! the transaction of each record, fire and submission: a scrape reads O(targets) rows, however
//! long the history. New figures go in functions of their own beside [`Snapshot::read`].

use super::db;
use super::runner::RunnerStatus;
use crate::store::{StoreError, summary};
use rusqlite::Connection;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Tallies over the `records` table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordTally {
    /// (endpoint, outcome) → records. Outcome `PASS`, `FAIL`, or `none` (commitment records).
    pub by_endpoint_outcome: BTreeMap<(String, String), u64>,
    /// Assertion name → records in which it failed.
    pub assertion_failures: BTreeMap<String, u64>,
}

impl RecordTally {
    /// From the summary rows (O(endpoints)).
    pub fn read(conn: &Connection) -> Result<RecordTally, StoreError> {
        Ok(RecordTally {
            by_endpoint_outcome: summary::records_by_endpoint_outcome(conn)?,
            assertion_failures: summary::assertion_failures(conn)?,
        })
    }

    /// From every record (what the summary rows must equal).
    pub fn recount(conn: &Connection) -> Result<RecordTally, StoreError> {
        Ok(RecordTally {
            by_endpoint_outcome: summary::recount::records_by_endpoint_outcome(conn)?,
            assertion_failures: summary::recount::assertion_failures(conn)?,
        })
    }
}

/// Names of the assertions whose `result` is false (the name is the claim's text before `:`).
pub fn failed_assertions(canonical: &[u8]) -> Vec<String> {
    use crate::store::record_view::{Outcome, RecordView};
    RecordView::read(canonical)
        .map(|v| v.assertion_names(Outcome::Failed))
        .unwrap_or_default()
}

/// Everything one scrape shows.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub tally: RecordTally,
    pub walks_by_state: Vec<(String, u64)>,
    /// (target, finished_at RFC 3339).
    pub last_success: Vec<(String, String)>,
    pub declined: Vec<db::ConsentRow>,
    pub runner: Option<RunnerStatus>,
    pub targets: usize,
    pub in_flight: usize,
    pub next_fire_unix: Option<i64>,
}

impl Snapshot {
    /// Fill the store-derived parts (summary rows only: O(targets)).
    pub fn read(conn: &Connection) -> Result<Snapshot, StoreError> {
        Ok(Snapshot {
            tally: RecordTally::read(conn)?,
            walks_by_state: db::walks_by_state(conn)?,
            last_success: db::last_success(conn)?,
            declined: db::declined_origins(conn)?,
            ..Snapshot::default()
        })
    }

    /// The same figures recounted from the whole history, as every scrape did before the summary
    /// rows (tests hold [`Snapshot::read`] to it; the metrics bench times it as "before").
    pub fn recount(conn: &Connection) -> Result<Snapshot, StoreError> {
        Ok(Snapshot {
            tally: RecordTally::recount(conn)?,
            walks_by_state: summary::recount::fires_by_state(conn)?,
            last_success: summary::recount::last_success(conn)?,
            declined: summary::recount::latest_consent(conn)?
                .into_iter()
                .filter(|r| r.outcome == "declined")
                .collect(),
            ..Snapshot::default()
        })
    }
}

/// A label value escaped as the text format wants (backslash, quote, newline).
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn unix_seconds(ts: &str) -> Option<f64> {
    chrono::DateTime::parse_from_rfc3339(ts)
        .ok()
        .map(|t| t.timestamp_millis() as f64 / 1000.0)
}

/// Render a snapshot.
pub fn render(s: &Snapshot) -> String {
    let mut out = String::new();
    header(
        &mut out,
        "conduct_walker_walks_total",
        "counter",
        "Stored walk records by endpoint and verdict outcome (none: commitment records).",
    );
    for ((endpoint, outcome), n) in &s.tally.by_endpoint_outcome {
        let _ = writeln!(
            out,
            "conduct_walker_walks_total{{endpoint=\"{}\",outcome=\"{}\"}} {n}",
            esc(endpoint),
            esc(outcome)
        );
    }
    header(
        &mut out,
        "conduct_walker_assertion_failures_total",
        "counter",
        "Stored records in which an assertion failed, by assertion name.",
    );
    for (name, n) in &s.tally.assertion_failures {
        let _ = writeln!(
            out,
            "conduct_walker_assertion_failures_total{{assertion=\"{}\"}} {n}",
            esc(name)
        );
    }
    header(
        &mut out,
        "conduct_walker_scheduled_walks_total",
        "counter",
        "Scheduled fires by how they ended (done, aborted by shutdown, declined by consent, skipped_overlap, error, running).",
    );
    for (state, n) in &s.walks_by_state {
        let _ = writeln!(
            out,
            "conduct_walker_scheduled_walks_total{{state=\"{}\"}} {n}",
            esc(state)
        );
    }
    header(
        &mut out,
        "conduct_walker_target_last_success_timestamp_seconds",
        "gauge",
        "When the target's last scheduled walk finished and stored its record (Unix time).",
    );
    for (target, at) in &s.last_success {
        if let Some(t) = unix_seconds(at) {
            let _ = writeln!(
                out,
                "conduct_walker_target_last_success_timestamp_seconds{{target=\"{}\"}} {t:.3}",
                esc(target)
            );
        }
    }
    header(
        &mut out,
        "conduct_walker_consent_declined",
        "gauge",
        "Origins whose consent file declines listing (1 each; not walked), with the sha256 of the declining bytes.",
    );
    for d in &s.declined {
        let _ = writeln!(
            out,
            "conduct_walker_consent_declined{{origin=\"{}\",sha256=\"{}\"}} 1",
            esc(&d.origin),
            esc(d.sha256.as_deref().unwrap_or(""))
        );
    }
    header(
        &mut out,
        "conduct_walker_consent_declined_origins",
        "gauge",
        "Number of origins whose consent file declines listing.",
    );
    let _ = writeln!(
        out,
        "conduct_walker_consent_declined_origins {}",
        s.declined.len()
    );
    if let Some(r) = &s.runner {
        header(
            &mut out,
            "conduct_walker_submissions_total",
            "counter",
            "Submissions by their last answer (accepted, duplicate, refused, lane_full, retry, unknown, found, lookup_failed).",
        );
        for (answer, n) in &r.submissions_by_answer {
            let _ = writeln!(
                out,
                "conduct_walker_submissions_total{{answer=\"{}\"}} {n}",
                esc(answer)
            );
        }
        header(
            &mut out,
            "conduct_walker_submissions",
            "gauge",
            "Submissions by where they stand, as the CLI, MCP and status pages word it.",
        );
        for (outcome, n) in &r.submissions_by_outcome {
            let _ = writeln!(
                out,
                "conduct_walker_submissions{{outcome=\"{outcome}\"}} {n}"
            );
        }
        header(
            &mut out,
            "conduct_walker_intake_lookups_total",
            "counter",
            "Lookups (GET <intake>/<sha256>) made after an attempt whose answer was lost or a stopped process, by result: found (filed, not sent again), not_found (sent), lookup_failed (asked again later).",
        );
        for (result, n) in &r.lookups_by_result {
            let _ = writeln!(
                out,
                "conduct_walker_intake_lookups_total{{result=\"{result}\"}} {n}"
            );
        }
        header(
            &mut out,
            "conduct_walker_lane_used_today",
            "gauge",
            "Records filed today (UTC) per intake and lane.",
        );
        for (intake, lane, n) in &r.lanes_used_today {
            let _ = writeln!(
                out,
                "conduct_walker_lane_used_today{{intake=\"{}\",lane=\"{}\"}} {n}",
                esc(intake),
                esc(lane)
            );
        }
        header(
            &mut out,
            "conduct_walker_outbox_depth",
            "gauge",
            "Submissions waiting to be filed.",
        );
        let _ = writeln!(out, "conduct_walker_outbox_depth {}", r.outbox_depth);
    }
    header(
        &mut out,
        "conduct_walker_targets",
        "gauge",
        "Configured targets.",
    );
    let _ = writeln!(out, "conduct_walker_targets {}", s.targets);
    header(
        &mut out,
        "conduct_walker_walks_in_flight",
        "gauge",
        "Walks running or waiting for a slot.",
    );
    let _ = writeln!(out, "conduct_walker_walks_in_flight {}", s.in_flight);
    if let Some(t) = s.next_fire_unix {
        header(
            &mut out,
            "conduct_walker_next_walk_timestamp_seconds",
            "gauge",
            "When the next scheduled walk fires (Unix time).",
        );
        let _ = writeln!(out, "conduct_walker_next_walk_timestamp_seconds {t}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_assertion_names_come_from_claims() {
        let rec = br#"{"assertions":[{"claim":"card_bytes_stable: a == b","result":true},{"claim":"endpoint_bound: x","result":false},{"claim":"extension_echoed: y","result":null}]}"#;
        assert_eq!(failed_assertions(rec), vec!["endpoint_bound".to_string()]);
        assert!(failed_assertions(b"not json").is_empty());
    }

    #[test]
    fn labels_are_escaped() {
        assert_eq!(esc("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
