//! `/metrics` in the Prometheus text format. Every counter is read from the store, so what
//! `/metrics` says and what `records list` shows cannot drift apart, and a restart does not reset
//! them. They come from the summary rows (`store::summary`, migration 9), which triggers keep in
//! the transaction of each record, fire and submission: a scrape reads O(targets) rows, however
//! long the history. New figures go in functions of their own beside [`Snapshot::read`].

use super::db;
use super::runner::RunnerStatus;
use crate::prometheus_text::{Kind, TextWriter};
use crate::store::{StoreError, summary};
use crate::witness_pool::request::DeclineReason;
use rusqlite::Connection;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

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
    /// Settled §11.5 notifications by result (every result, zero included).
    pub notifications: Vec<(&'static str, u64)>,
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
            notifications: crate::store::notifications::by_result(conn)?,
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
            notifications: crate::store::notifications::by_result(conn)?,
            ..Snapshot::default()
        })
    }
}

fn unix_seconds(ts: &str) -> Option<f64> {
    chrono::DateTime::parse_from_rfc3339(ts)
        .ok()
        .map(|t| t.timestamp_millis() as f64 / 1000.0)
}

/// Render a snapshot: the stored records, the scheduled fires, consent, the submissions (when
/// the runner answered) and the scheduling loop, in that order.
pub fn render(s: &Snapshot) -> String {
    let mut out = String::new();
    let mut w = TextWriter::new(&mut out);
    render_records(&mut w, &s.tally);
    render_fires(&mut w, s);
    render_consent(&mut w, &s.declined);
    render_notifications(&mut w, &s.notifications);
    if let Some(r) = &s.runner {
        render_submissions(&mut w, r);
    }
    render_schedule(&mut w, s);
    out
}

/// What the stored records say: verdicts by endpoint, failed assertions by name.
fn render_records(w: &mut TextWriter, tally: &RecordTally) {
    w.labelled(
        (
            "conduct_walker_walks_total",
            Kind::Counter,
            "Stored walk records by endpoint and verdict outcome (none: commitment records).",
        ),
        ["endpoint", "outcome"],
        tally
            .by_endpoint_outcome
            .iter()
            .map(|((e, o), n)| ([e, o], n)),
    );
    w.labelled(
        (
            "conduct_walker_assertion_failures_total",
            Kind::Counter,
            "Stored records in which an assertion failed, by assertion name.",
        ),
        ["assertion"],
        tally.assertion_failures.iter().map(|(a, n)| ([a], n)),
    );
}

/// How the scheduled fires ended, and each target's last success.
fn render_fires(w: &mut TextWriter, s: &Snapshot) {
    w.labelled(
        (
            "conduct_walker_scheduled_walks_total",
            Kind::Counter,
            "Scheduled fires by how they ended (done, aborted by shutdown, declined by consent, skipped_overlap, error, running).",
        ),
        ["state"],
        s.walks_by_state.iter().map(|(state, n)| ([state], n)),
    );
    w.labelled(
        (
            "conduct_walker_target_last_success_timestamp_seconds",
            Kind::Gauge,
            "When the target's last scheduled walk finished and stored its record (Unix time).",
        ),
        ["target"],
        s.last_success
            .iter()
            .filter_map(|(target, at)| Some(([target], format!("{:.3}", unix_seconds(at)?)))),
    );
}

/// Origins whose consent file declines listing.
fn render_consent(w: &mut TextWriter, declined: &[db::ConsentRow]) {
    w.labelled(
        (
            "conduct_walker_consent_declined",
            Kind::Gauge,
            "Origins whose consent file declines listing (1 each; not walked), with the sha256 of the declining bytes.",
        ),
        ["origin", "sha256"],
        declined
            .iter()
            .map(|d| ([d.origin.as_str(), d.sha256.as_deref().unwrap_or("")], 1)),
    );
    w.single(
        "conduct_walker_consent_declined_origins",
        Kind::Gauge,
        "Number of origins whose consent file declines listing.",
        declined.len(),
    );
}

/// §11.5 notifications by how they ended.
fn render_notifications(w: &mut TextWriter, by_result: &[(&'static str, u64)]) {
    w.labelled(
        (
            "conduct_walker_notifications_total",
            Kind::Counter,
            "Notifications (§11.5 notify) after scheduled walks, by result: sent (any HTTP answer), refused, rate_limited, deferred, failed.",
        ),
        ["result"],
        by_result.iter().map(|(result, n)| ([*result], n)),
    );
}

/// The submissions, lookups, lanes and outbox, as the runner reports them.
fn render_submissions(w: &mut TextWriter, r: &RunnerStatus) {
    w.labelled(
        (
            "conduct_walker_submissions_total",
            Kind::Counter,
            "Submissions by their last answer (accepted, duplicate, refused, lane_full, retry, unknown, found, lookup_failed).",
        ),
        ["answer"],
        r.submissions_by_answer.iter().map(|(answer, n)| ([answer], n)),
    );
    w.labelled(
        (
            "conduct_walker_submissions",
            Kind::Gauge,
            "Submissions by where they stand, as the CLI, MCP and status pages word it.",
        ),
        ["outcome"],
        (r.submissions_by_outcome.iter()).map(|(outcome, n)| ([outcome.to_string()], n)),
    );
    w.labelled(
        (
            "conduct_walker_intake_lookups_total",
            Kind::Counter,
            "Lookups (GET <intake>/<sha256>) made after an attempt whose answer was lost or a stopped process, by result: found (filed, not sent again), not_found (sent), lookup_failed (asked again later).",
        ),
        ["result"],
        (r.lookups_by_result.iter()).map(|(result, n)| ([result.to_string()], n)),
    );
    w.labelled(
        (
            "conduct_walker_lane_used_today",
            Kind::Gauge,
            "Records filed today (UTC) per intake and lane.",
        ),
        ["intake", "lane"],
        (r.lanes_used_today.iter()).map(|(intake, lane, n)| ([intake, lane], n)),
    );
    w.single(
        "conduct_walker_outbox_depth",
        Kind::Gauge,
        "Submissions waiting to be filed.",
        r.outbox_depth,
    );
}

/// What the scheduling loop publishes: targets, walks in flight, the next fire.
fn render_schedule(w: &mut TextWriter, s: &Snapshot) {
    w.single(
        "conduct_walker_targets",
        Kind::Gauge,
        "Configured targets.",
        s.targets,
    );
    w.single(
        "conduct_walker_walks_in_flight",
        Kind::Gauge,
        "Walks running or waiting for a slot.",
        s.in_flight,
    );
    if let Some(t) = s.next_fire_unix {
        w.single(
            "conduct_walker_next_walk_timestamp_seconds",
            Kind::Gauge,
            "When the next scheduled walk fires (Unix time).",
            t,
        );
    }
}

/// How the witness face ended one `POST /a2a` (spec §4.6): the answered and declined ones are
/// also rows of `witness_requests`; the rest never reached a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaceOutcome {
    Answered,
    Declined(DeclineReason),
    /// 429: every measurement slot was taken.
    Busy,
    /// 413: the body was over 1,000,000 bytes.
    TooLarge,
    /// 408: the body did not arrive within the face's deadline.
    BodyTimeout,
    /// -32700, -32601, -32602.
    ParseError,
    MethodNotServed,
    NoRequestPart,
    /// 500: our own observation failed a reader's check (a bug, never sent).
    Internal,
    /// A message with `caller_card` and no request, answered with the reciprocal decision
    /// alone (§6.2).
    ReciprocalOnly,
}

/// Every (outcome, reason) pair the face counts, in the order `/metrics` writes them.
const FACE_LABELS: [(&str, &str); 13] = [
    ("answered", ""),
    ("declined", "bad_request"),
    ("declined", "self_witness"),
    ("declined", "target_not_public"),
    ("declined", "no_known_surface"),
    ("busy", ""),
    ("too_large", ""),
    ("body_timeout", ""),
    ("bad_jsonrpc", "parse_error"),
    ("bad_jsonrpc", "method_not_served"),
    ("bad_jsonrpc", "no_request_part"),
    ("internal", ""),
    ("reciprocal_only", ""),
];

/// Every (answer, reason) pair of a reciprocal request (§6.2), in `/metrics` order.
const RECIPROCAL_LABELS: [(&str, &str); 8] = [
    ("scheduled", ""),
    ("declined", "not_https"),
    ("declined", "not_card_url"),
    ("declined", "own_host"),
    ("declined", "not_public"),
    ("declined", "listing_decline"),
    ("declined", "already_walked"),
    ("declined", "budget"),
];

/// How a reciprocal walk ended (`reciprocal::state`), in `/metrics` order.
const RECIPROCAL_ENDS: [&str; 3] = [
    crate::reciprocal::state::WALKED,
    crate::reciprocal::state::CANCELLED,
    crate::reciprocal::state::FAILED,
];

impl FaceOutcome {
    pub fn labels(self) -> (&'static str, &'static str) {
        match self {
            FaceOutcome::Answered => ("answered", ""),
            FaceOutcome::Declined(reason) => ("declined", reason.as_str()),
            FaceOutcome::Busy => ("busy", ""),
            FaceOutcome::TooLarge => ("too_large", ""),
            FaceOutcome::BodyTimeout => ("body_timeout", ""),
            FaceOutcome::ParseError => ("bad_jsonrpc", "parse_error"),
            FaceOutcome::MethodNotServed => ("bad_jsonrpc", "method_not_served"),
            FaceOutcome::NoRequestPart => ("bad_jsonrpc", "no_request_part"),
            FaceOutcome::Internal => ("internal", ""),
            FaceOutcome::ReciprocalOnly => ("reciprocal_only", ""),
        }
    }
}

/// The witness face's counters, shared by the face (which counts) and the listener (which
/// renders them), like the alert deliveries'. Counted since the daemon started: the stored
/// rows are the history.
#[derive(Debug, Default)]
pub struct WitnessMetrics {
    /// Whether a face is serving: the families are written only for a daemon that has one.
    pub serving: AtomicBool,
    counts: [AtomicU64; FACE_LABELS.len()],
    /// Whether `reciprocal = true`: the reciprocal families are written only then.
    pub reciprocal_on: AtomicBool,
    reciprocal: [AtomicU64; RECIPROCAL_LABELS.len()],
    reciprocal_ends: [AtomicU64; RECIPROCAL_ENDS.len()],
}

impl WitnessMetrics {
    pub fn count(&self, outcome: FaceOutcome) {
        if let Some(i) = FACE_LABELS.iter().position(|l| *l == outcome.labels()) {
            self.counts[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn get(&self, outcome: FaceOutcome) -> u64 {
        FACE_LABELS
            .iter()
            .position(|l| *l == outcome.labels())
            .map_or(0, |i| self.counts[i].load(Ordering::Relaxed))
    }

    /// A reciprocal request answered: `None` scheduled, else the decline's reason.
    pub fn count_reciprocal(&self, declined: Option<crate::reciprocal::Decline>) {
        let labels = match declined {
            None => ("scheduled", ""),
            Some(d) => ("declined", d.as_str()),
        };
        if let Some(i) = RECIPROCAL_LABELS.iter().position(|l| *l == labels) {
            self.reciprocal[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A reciprocal walk ended in `state` (filed, cancelled, failed).
    pub fn count_reciprocal_end(&self, state: &str) {
        if let Some(i) = RECIPROCAL_ENDS.iter().position(|s| *s == state) {
            self.reciprocal_ends[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Prometheus text lines: every pair, zeros included, so a rate has a start.
    pub fn render(&self, out: &mut String) {
        self.render_face(out);
        self.render_reciprocal(out);
    }

    fn render_reciprocal(&self, out: &mut String) {
        let counted = (self.reciprocal.iter().chain(&self.reciprocal_ends))
            .any(|c| c.load(Ordering::Relaxed) > 0);
        if !self.reciprocal_on.load(Ordering::Relaxed) && !counted {
            return;
        }
        let mut w = TextWriter::new(out);
        w.labelled(
            (
                "conduct_walker_reciprocal_requests_total",
                Kind::Counter,
                "Messages to the witness face asking for a reciprocal walk (caller_card), by answer (scheduled, declined) and decline reason, since the daemon started.",
            ),
            ["answer", "reason"],
            RECIPROCAL_LABELS
                .iter()
                .zip(&self.reciprocal)
                .map(|((answer, reason), n)| ([*answer, *reason], n.load(Ordering::Relaxed))),
        );
        w.labelled(
            (
                "conduct_walker_reciprocal_walks_total",
                Kind::Counter,
                "Reciprocal walks that ended, by state (walked: record stored and queued for the caller's intake; cancelled: the consent file declined when the walk was to start; failed: no record), since the daemon started.",
            ),
            ["state"],
            RECIPROCAL_ENDS
                .iter()
                .zip(&self.reciprocal_ends)
                .map(|(state, n)| ([*state], n.load(Ordering::Relaxed))),
        );
    }

    fn render_face(&self, out: &mut String) {
        let counted = self.counts.iter().any(|c| c.load(Ordering::Relaxed) > 0);
        if !self.serving.load(Ordering::Relaxed) && !counted {
            return;
        }
        TextWriter::new(out).labelled(
            (
                "conduct_walker_witness_requests_total",
                Kind::Counter,
                "POST /a2a on the witness face by outcome (answered, declined, busy, too_large, body_timeout, bad_jsonrpc, internal) and reason, since the daemon started.",
            ),
            ["outcome", "reason"],
            FACE_LABELS
                .iter()
                .zip(&self.counts)
                .map(|((outcome, reason), n)| ([*outcome, *reason], n.load(Ordering::Relaxed))),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_face_counts_render_every_pair_once_serving() {
        let m = WitnessMetrics::default();
        let mut quiet = String::new();
        m.render(&mut quiet);
        assert_eq!(quiet, "", "no face, nothing counted: no family");
        m.serving.store(true, Ordering::Relaxed);
        m.count(FaceOutcome::Declined(DeclineReason::SelfWitness));
        m.count(FaceOutcome::Declined(DeclineReason::SelfWitness));
        m.count(FaceOutcome::Busy);
        let mut text = String::new();
        m.render(&mut text);
        assert!(text.contains(
            "conduct_walker_witness_requests_total{outcome=\"declined\",reason=\"self_witness\"} 2\n"
        ));
        assert!(
            text.contains(
                "conduct_walker_witness_requests_total{outcome=\"busy\",reason=\"\"} 1\n"
            )
        );
        assert!(text.contains("{outcome=\"answered\",reason=\"\"} 0\n"));
        assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), 13);
        assert!(
            !text.contains("reciprocal_requests"),
            "reciprocal off and nothing counted: no reciprocal family"
        );
        assert_eq!(m.get(FaceOutcome::Busy), 1);
    }

    #[test]
    fn reciprocal_answers_and_walk_ends_are_counted_by_label() {
        let m = WitnessMetrics::default();
        m.reciprocal_on.store(true, Ordering::Relaxed);
        m.count_reciprocal(None);
        m.count_reciprocal(Some(crate::reciprocal::Decline::Budget));
        m.count_reciprocal(Some(crate::reciprocal::Decline::Budget));
        m.count_reciprocal_end(crate::reciprocal::state::WALKED);
        let mut text = String::new();
        m.render(&mut text);
        assert!(text.contains(
            "conduct_walker_reciprocal_requests_total{answer=\"declined\",reason=\"budget\"} 2\n"
        ));
        assert!(text.contains(
            "conduct_walker_reciprocal_requests_total{answer=\"scheduled\",reason=\"\"} 1\n"
        ));
        assert!(text.contains("conduct_walker_reciprocal_walks_total{state=\"walked\"} 1\n"));
        assert!(text.contains("conduct_walker_reciprocal_walks_total{state=\"failed\"} 0\n"));
    }

    #[test]
    fn failed_assertion_names_come_from_claims() {
        let rec = br#"{"assertions":[{"claim":"card_bytes_stable: a == b","result":true},{"claim":"endpoint_bound: x","result":false},{"claim":"extension_echoed: y","result":null}]}"#;
        assert_eq!(failed_assertions(rec), vec!["endpoint_bound".to_string()]);
        assert!(failed_assertions(b"not json").is_empty());
    }
}
