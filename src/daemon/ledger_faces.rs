//! The ledger follower on `/metrics` and `/healthz` (issue 23): read from `ledger_intakes`, one
//! row per intake kept by the follower and the store's triggers, never a scan of history.

use crate::prometheus_text::{Kind, TextWriter};
use crate::store::StoreError;
use crate::store::ledger as lstore;
use rusqlite::Connection;

/// The follower's gauges and counters, in the Prometheus text format.
pub fn metrics_text(conn: &Connection) -> Result<String, StoreError> {
    let intakes = match lstore::all_intakes(conn) {
        Ok(i) => i,
        // A store older than migration 7 (never migrated by a read-only face): nothing to say.
        Err(_) => return Ok(String::new()),
    };
    let mut out = String::new();
    let mut w = TextWriter::new(&mut out);
    type Get = fn(&lstore::IntakeState) -> i64;
    let series: [(&str, Kind, &str, Get); 9] = [
        (
            "conduct_walker_ledger_filed_total",
            Kind::Counter,
            "Records accepted by the intake and followed into its ledger.",
            |i| i.filed,
        ),
        (
            "conduct_walker_ledger_pending",
            Kind::Gauge,
            "Followed records not yet seen anchored.",
            |i| i.pending,
        ),
        (
            "conduct_walker_ledger_anchored",
            Kind::Gauge,
            "Followed records anchored with inclusion verified.",
            |i| i.anchored,
        ),
        (
            "conduct_walker_ledger_records_with_finding",
            Kind::Gauge,
            "Followed records with a finding (not anchored in time, 404 after 201, inclusion failed).",
            |i| i.with_finding,
        ),
        (
            "conduct_walker_ledger_inclusion_verified_total",
            Kind::Counter,
            "Records whose inclusion in a batch of the chain was verified.",
            |i| i.verified,
        ),
        (
            "conduct_walker_ledger_overdue_total",
            Kind::Counter,
            "Records not anchored within overdue_after_hours of filing.",
            |i| i.overdue,
        ),
        (
            "conduct_walker_ledger_findings_total",
            Kind::Counter,
            "Findings opened about the ledger (each kept with its evidence).",
            |i| i.findings,
        ),
        (
            "conduct_walker_ledger_reads_total",
            Kind::Counter,
            "HTTP reads the follower made of the ledger.",
            |i| i.reads,
        ),
        (
            "conduct_walker_ledger_head_n",
            Kind::Gauge,
            "Entry count of the head held (recomputed and agreed with the served head).",
            |i| i.head_n.unwrap_or(0),
        ),
    ];
    for (name, kind, help, get) in series {
        let rows = intakes.iter().map(|i| ([i.intake_url.as_str()], get(i)));
        w.labelled((name, kind, help), ["intake"], rows);
    }
    Ok(out)
}

/// What `/healthz` says of the ledger: findings named, never a reason to fail the check (a
/// ledger's fault is not the daemon's).
pub fn health(conn: &Connection) -> serde_json::Value {
    let Ok(intakes) = lstore::all_intakes(conn) else {
        return serde_json::Value::Null;
    };
    let findings: i64 = intakes.iter().map(|i| i.findings).sum();
    let latest = lstore::latest_findings(conn, 5).unwrap_or_default();
    serde_json::json!({
        "open_findings": findings,
        "latest_findings": latest.iter().map(|f| serde_json::json!({
            "kind": f.kind, "intake": f.intake_url, "sha256": f.sha256, "entry_n": f.entry_n,
            "opened_at": f.opened_at})).collect::<Vec<_>>(),
        "heads_held": intakes.iter().map(|i| serde_json::json!({
            "intake": i.intake_url, "n": i.head_n, "head": i.head, "read_at": i.head_seen_at}))
            .collect::<Vec<_>>(),
    })
}
