//! The `witness_requests` table (migration 15, issue 43): what the witness face was asked and
//! how it answered, for the status pages and the operator. Bounded reads only.

use super::StoreError;
use rusqlite::{Connection, params};

/// One request the face took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessRequest {
    pub received_at: String,
    /// `answered` or `declined`.
    pub outcome: String,
    pub reason: Option<String>,
    pub endpoint: Option<String>,
    pub request_sha256: Option<String>,
    pub record_sha256: Option<String>,
    pub detail: Option<String>,
}

pub fn insert(conn: &Connection, r: &WitnessRequest) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO witness_requests \
         (received_at, outcome, reason, endpoint, request_sha256, record_sha256, detail) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        r.received_at,
        r.outcome,
        r.reason,
        r.endpoint,
        r.request_sha256,
        r.record_sha256,
        r.detail
    ])?;
    Ok(())
}

/// The newest `limit` requests, newest first (none in a store older than migration 15).
pub fn recent(conn: &Connection, limit: usize) -> Result<Vec<WitnessRequest>, StoreError> {
    if !super::schema::has_table(conn, "witness_requests")? {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare_cached(
        "SELECT received_at, outcome, reason, endpoint, request_sha256, record_sha256, detail \
         FROM witness_requests ORDER BY id DESC LIMIT ?1",
    )?;
    let rows = stmt
        .query_map([limit as i64], |r| {
            Ok(from_columns!(r => WitnessRequest {
                received_at, outcome, reason, endpoint, request_sha256, record_sha256, detail,
            }))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_come_back_newest_first_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(&dir.path().join("w.db")).unwrap();
        let conn = store.connection();
        for (i, outcome) in ["answered", "declined", "answered"].iter().enumerate() {
            insert(
                conn,
                &WitnessRequest {
                    received_at: format!("2026-12-06T03:4{i}:00.000Z"),
                    outcome: outcome.to_string(),
                    reason: (*outcome == "declined").then(|| "bad_request".into()),
                    endpoint: Some("https://agent.example.org".into()),
                    request_sha256: Some("ab".repeat(32)),
                    record_sha256: None,
                    detail: None,
                },
            )
            .unwrap();
        }
        let got = recent(conn, 2).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].received_at, "2026-12-06T03:42:00.000Z");
        assert_eq!(got[1].reason.as_deref(), Some("bad_request"));
        // The table refuses an outcome it does not know.
        let bad = WitnessRequest {
            outcome: "maybe".into(),
            ..got[0].clone()
        };
        assert!(insert(conn, &bad).is_err());
    }
}
