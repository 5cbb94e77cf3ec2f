//! The `notifications` table (migration 17, spec witness-pool.md §7): every notification
//! decided after a scheduled walk, its `notify_status`, and the counts guards 6 and 7 read, so
//! the hour per endpoint and the three per wave hold across restarts.
//!
//! An attempt is written before its POST is sent and settled after; one found unsettled at
//! start was cut off by a stop and is settled as interrupted, never sent again.

use super::StoreError;
use rusqlite::{Connection, OptionalExtension, params};

/// What a POST cut off by a stop is settled as.
pub const INTERRUPTED: &str = "failed: interrupted (the daemon stopped during the POST)";

/// The `result` values, in `/metrics` order.
pub const RESULTS: [&str; 5] = ["sent", "refused", "rate_limited", "deferred", "failed"];

/// What `/metrics` counts a `notify_status` as: `sent`, or the reason's first word.
pub fn result_of(status: &serde_json::Value) -> &'static str {
    if status["sent"] == true {
        return "sent";
    }
    let reason = status["reason"].as_str().unwrap_or_default();
    if reason.starts_with("rate limited") {
        "rate_limited"
    } else if reason.starts_with("deferred") {
        "deferred"
    } else if reason.starts_with("refused") {
        "refused"
    } else {
        "failed"
    }
}

/// A notification about to be stored.
#[derive(Debug, Clone)]
pub struct NewNotification<'a> {
    pub walk_id: i64,
    pub record_id: i64,
    pub record_sha256: &'a str,
    pub endpoint: &'a str,
    pub url: &'a str,
    /// The fire's scheduled time (`daemon_walks.scheduled_for`): its wave.
    pub wave: &'a str,
    pub decided_at: &'a str,
    /// `None`: an attempt whose POST is about to be sent (settled by [`settle`]).
    pub status: Option<&'a serde_json::Value>,
}

/// Store a decision; an attempt (status `None`) counts for guards 6 and 7 from now on.
pub fn insert(conn: &Connection, n: &NewNotification<'_>) -> Result<i64, StoreError> {
    // Guard 8 and step 9 are attempts whatever they end as; guards 2-7 never are.
    let attempted = n.status.is_none();
    conn.prepare_cached(
        "INSERT INTO notifications (walk_id, record_id, record_sha256, endpoint, url, wave, \
         decided_at, attempted, status, result) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        n.walk_id,
        n.record_id,
        n.record_sha256,
        n.endpoint,
        n.url,
        n.wave,
        n.decided_at,
        attempted,
        n.status.map(|s| s.to_string()),
        n.status.map(result_of),
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Give an attempt its status (once: a settled row keeps its first).
pub fn settle(conn: &Connection, id: i64, status: &serde_json::Value) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE notifications SET status = ?2, result = ?3 WHERE id = ?1 AND status IS NULL",
    )?
    .execute(params![id, status.to_string(), result_of(status)])?;
    Ok(())
}

/// At start: attempts a previous run left without a status were cut off during their POST.
/// They are settled as [`INTERRUPTED`] and never sent again (the receiver may have it).
pub fn settle_interrupted(conn: &Connection) -> Result<usize, StoreError> {
    let status = serde_json::json!({"sent": false, "reason": INTERRUPTED});
    Ok(conn.execute(
        "UPDATE notifications SET status = ?1, result = 'failed' WHERE status IS NULL",
        [status.to_string()],
    )?)
}

/// When the last attempt for `endpoint` was decided (guard 6).
pub fn last_attempt(conn: &Connection, endpoint: &str) -> Result<Option<String>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT max(decided_at) FROM notifications WHERE endpoint = ?1 AND attempted = 1",
        )?
        .query_row([endpoint], |r| r.get(0))?)
}

/// Attempts made in `wave` (guard 7).
pub fn attempts_in_wave(conn: &Connection, wave: &str) -> Result<u32, StoreError> {
    Ok(conn
        .prepare_cached("SELECT count(*) FROM notifications WHERE wave = ?1 AND attempted = 1")?
        .query_row([wave], |r| r.get(0))?)
}

/// The record of the scheduled walk before `walk_id` of the same origin and configured
/// endpoint that stored one (what `changed` compares with).
pub fn previous_walk_record(conn: &Connection, walk_id: i64) -> Result<Option<i64>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT p.record_id FROM daemon_walks w JOIN daemon_walks p \
             ON p.origin = w.origin AND p.endpoint IS w.endpoint AND p.id < w.id \
             WHERE w.id = ?1 AND p.state = 'done' AND p.record_id IS NOT NULL \
             ORDER BY p.id DESC LIMIT 1",
        )?
        .query_row([walk_id], |r| r.get(0))
        .optional()?)
}

/// The `notify_status` shown with a record: its latest notification's, `None` (null) when it
/// has none (guard 1, an on-demand walk, a store older than migration 17). An attempt still in
/// flight shows `{"sent": null, "reason": "in flight"}`.
pub fn status_of_record(
    conn: &Connection,
    record_id: i64,
) -> Result<Option<serde_json::Value>, StoreError> {
    if !super::schema::has_table(conn, "notifications")? {
        return Ok(None);
    }
    let status: Option<Option<String>> = conn
        .prepare_cached(
            "SELECT status FROM notifications WHERE record_id = ?1 ORDER BY id DESC LIMIT 1",
        )?
        .query_row([record_id], |r| r.get(0))
        .optional()?;
    Ok(
        status.map(|s| match s.and_then(|s| serde_json::from_str(&s).ok()) {
            Some(v) => v,
            None => serde_json::json!({"sent": null, "reason": "in flight"}),
        }),
    )
}

/// One stored notification, for the status pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationRow {
    pub id: i64,
    pub decided_at: String,
    pub endpoint: String,
    pub url: String,
    pub record_sha256: Option<String>,
    /// The `notify_status` JSON; `None` while the POST is in flight.
    pub status: Option<String>,
}

/// The newest `limit` notifications, newest first.
pub fn recent(conn: &Connection, limit: usize) -> Result<Vec<NotificationRow>, StoreError> {
    if !super::schema::has_table(conn, "notifications")? {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare_cached(
        "SELECT id, decided_at, endpoint, url, record_sha256, status FROM notifications \
         ORDER BY id DESC LIMIT ?1",
    )?;
    let rows = stmt
        .query_map([limit as i64], |r| {
            Ok(from_columns!(r => NotificationRow {
                id, decided_at, endpoint, url, record_sha256, status,
            }))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Settled notifications by result, every result listed (zero included), in [`RESULTS`] order.
pub fn by_result(conn: &Connection) -> Result<Vec<(&'static str, u64)>, StoreError> {
    let mut counts: Vec<(&'static str, u64)> = RESULTS.iter().map(|r| (*r, 0)).collect();
    if !super::schema::has_table(conn, "notifications")? {
        return Ok(counts);
    }
    let mut stmt = conn.prepare_cached(
        "SELECT result, count(*) FROM notifications WHERE result IS NOT NULL GROUP BY result",
    )?;
    let found = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    for (result, n) in found {
        if let Some(slot) = counts.iter_mut().find(|(r, _)| *r == result) {
            slot.1 = n.max(0) as u64;
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use serde_json::json;

    fn walk_row(conn: &Connection, scheduled: &str) -> i64 {
        crate::store::daemon_walks::begin_walk(
            conn,
            &crate::store::daemon_walks::WalkStart {
                target: "t",
                origin: "https://agent.a.example",
                endpoint: None,
                scheduled_for: scheduled,
                now: scheduled,
            },
        )
        .unwrap()
    }

    fn row<'a>(
        walk_id: i64,
        wave: &'a str,
        status: Option<&'a serde_json::Value>,
    ) -> NewNotification<'a> {
        NewNotification {
            walk_id,
            record_id: 7,
            record_sha256: "ab",
            endpoint: "https://agent.a.example/mcp",
            url: "https://hooks.a.example/conduct",
            wave,
            decided_at: wave,
            status,
        }
    }

    #[test]
    fn decisions_round_trip_and_only_attempts_count_for_the_guards() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("walker.db")).unwrap();
        let c = store.connection();
        let wave = "2026-12-06T03:00:00.000Z";
        let walk = walk_row(c, wave);
        let refused = json!({"sent": false, "reason": crate::notify::guard::IP_LITERAL});
        insert(c, &row(walk, wave, Some(&refused))).unwrap();
        assert_eq!(
            last_attempt(c, "https://agent.a.example/mcp").unwrap(),
            None
        );
        assert_eq!(attempts_in_wave(c, wave).unwrap(), 0);
        let id = insert(c, &row(walk, wave, None)).unwrap();
        assert_eq!(
            last_attempt(c, "https://agent.a.example/mcp")
                .unwrap()
                .as_deref(),
            Some(wave)
        );
        assert_eq!(attempts_in_wave(c, wave).unwrap(), 1);
        assert_eq!(
            status_of_record(c, 7).unwrap(),
            Some(json!({"sent": null, "reason": "in flight"}))
        );
        let sent = json!({"sent": true, "status": 204});
        settle(c, id, &sent).unwrap();
        // Settled once: a second settle does not overwrite.
        settle(c, id, &json!({"sent": false, "reason": "failed: x"})).unwrap();
        assert_eq!(status_of_record(c, 7).unwrap(), Some(sent));
        assert_eq!(status_of_record(c, 8).unwrap(), None);
        let recent = recent(c, 10).unwrap();
        assert_eq!(recent.len(), 2);
        assert_eq!(recent[0].id, id);
        assert_eq!(
            by_result(c).unwrap(),
            vec![
                ("sent", 1),
                ("refused", 1),
                ("rate_limited", 0),
                ("deferred", 0),
                ("failed", 0)
            ]
        );
    }

    #[test]
    fn an_attempt_left_in_flight_is_settled_as_interrupted_at_restart_and_still_counts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("walker.db");
        let wave = "2026-12-06T03:00:00.000Z";
        {
            let store = Store::open(&path).unwrap();
            let walk = walk_row(store.connection(), wave);
            insert(store.connection(), &row(walk, wave, None)).unwrap();
            // The daemon is killed here, during the POST.
        }
        let store = Store::open(&path).unwrap();
        let c = store.connection();
        assert_eq!(settle_interrupted(c).unwrap(), 1);
        assert_eq!(settle_interrupted(c).unwrap(), 0, "settled once");
        assert_eq!(
            status_of_record(c, 7).unwrap(),
            Some(json!({"sent": false, "reason": INTERRUPTED}))
        );
        assert_eq!(
            INTERRUPTED,
            "failed: interrupted (the daemon stopped during the POST)"
        );
        // The attempt still holds the endpoint's hour and its place in the wave.
        assert_eq!(attempts_in_wave(c, wave).unwrap(), 1);
        assert!(
            last_attempt(c, "https://agent.a.example/mcp")
                .unwrap()
                .is_some()
        );
        assert_eq!(by_result(c).unwrap()[4], ("failed", 1));
    }

    #[test]
    fn results_are_named_by_the_reasons_first_word() {
        for (status, result) in [
            (json!({"sent": true, "status": 500}), "sent"),
            (
                json!({"sent": false, "reason": "refused: notify URL is not https"}),
                "refused",
            ),
            (
                json!({"sent": false, "reason": crate::notify::guard::RATE_LIMITED}),
                "rate_limited",
            ),
            (
                json!({"sent": false, "reason": crate::notify::guard::DEFERRED}),
                "deferred",
            ),
            (
                json!({"sent": false, "reason": "failed: timeout"}),
                "failed",
            ),
        ] {
            assert_eq!(result_of(&status), result, "{status}");
        }
    }
}
