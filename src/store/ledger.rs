//! The ledger monitor's tables (migration 7, issue 23): the records we follow into the ledger,
//! the heads held per intake, the entries seen, findings with their evidence, the replies as
//! served and other witnesses' records. Plain functions over a connection; none of them
//! writes `records`, `submissions` or the records chain.

use super::StoreError;
use crate::ledger_plan::{self as follow, Bucket, FollowState, HeldHead, Policy};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

/// The time form of these tables (as `submissions`): whole seconds, `Z`; sorts as text.
pub fn ts(t: DateTime<Utc>) -> String {
    crate::clock::walked_at(t)
}

/// Reads a time written by [`ts`] (or any RFC 3339 form).
pub fn parse_ts(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Starts following a submission the intake just accepted: called by the outbox in the
/// transaction that marks it filed, so a filed record is always followed. Idempotent.
pub fn start_following(conn: &Connection, submission_id: i64, now: &str) -> Result<(), StoreError> {
    let Some(at) = parse_ts(now) else {
        return Ok(());
    };
    let sha: Option<String> = conn
        .prepare_cached(
            "SELECT r.sha256 FROM submissions s JOIN records r ON r.id = s.record_id WHERE s.id = ?1",
        )?
        .query_row([submission_id], |r| r.get(0))
        .optional()?;
    let Some(sha) = sha else { return Ok(()) };
    let first = ts(follow::first_poll_at(&sha, at, &Policy::default()));
    conn.prepare_cached(
        "INSERT OR IGNORE INTO ledger_follow (submission_id, record_id, sha256, intake_url, state, \
         filed_at, next_poll_at) SELECT id, record_id, ?2, intake_url, ?3, ?4, ?5 FROM submissions WHERE id = ?1",
    )?
    .execute(params![
        submission_id,
        sha,
        FollowState::Pending.as_str(),
        now,
        first
    ])?;
    Ok(())
}

/// One followed record.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FollowRow {
    pub submission_id: i64,
    pub record_id: i64,
    pub sha256: String,
    pub intake_url: String,
    pub state: String,
    pub filed_at: String,
    pub next_poll_at: Option<String>,
    pub polls: i64,
    pub last_poll_at: Option<String>,
    pub last_seen: Option<String>,
    pub seen: bool,
    pub listed_in: Option<i64>,
    pub ledger_entry: Option<i64>,
    pub claim_sha256: Option<String>,
    pub stored_sha256: Option<String>,
    pub anchored_at: Option<String>,
    pub verified_at: Option<String>,
    pub overdue_at: Option<String>,
}

impl FollowRow {
    pub fn follow_state(&self) -> FollowState {
        FollowState::parse(&self.state).unwrap_or(FollowState::Finding)
    }

    /// One line for the faces: pending / anchored at entry n, inclusion verified / finding.
    pub fn describe(&self) -> String {
        let entry = self.ledger_entry.map(|n| format!("anchored at entry {n}"));
        match (self.follow_state(), entry, &self.verified_at) {
            (FollowState::Anchored, Some(e), Some(v)) => {
                format!("{e}, inclusion verified at {v}")
            }
            (FollowState::Anchored, Some(e), None) => e,
            (FollowState::Finding, Some(e), _) => format!("{e}; finding"),
            (FollowState::Finding, None, _) => "finding".into(),
            (_, _, _) => match self.last_seen.as_deref() {
                Some("pending") => "pending (the intake holds it; not yet in a batch)".into(),
                Some("not_found") => "pending (not yet visible at the intake)".into(),
                _ => "pending (not read yet)".into(),
            },
        }
    }
}

const COLUMNS: &str = "submission_id, record_id, sha256, intake_url, state, filed_at, next_poll_at, \
    polls, last_poll_at, last_seen, seen, listed_in, ledger_entry, claim_sha256, stored_sha256, \
    anchored_at, verified_at, overdue_at";

fn row(r: &rusqlite::Row) -> rusqlite::Result<FollowRow> {
    Ok(from_columns!(r => FollowRow {
        submission_id, record_id, sha256, intake_url, state, filed_at, next_poll_at, polls,
        last_poll_at, last_seen, seen(|v: i64| v != 0), listed_in, ledger_entry, claim_sha256,
        stored_sha256, anchored_at, verified_at, overdue_at,
    }))
}

fn rows(
    conn: &Connection,
    sql: &str,
    p: impl rusqlite::Params,
) -> Result<Vec<FollowRow>, StoreError> {
    let mut stmt = conn.prepare_cached(sql)?;
    let out = stmt.query_map(p, row)?.collect::<Result<Vec<_>, _>>()?;
    Ok(out)
}

/// The intakes with followed records or findings.
pub fn intakes(conn: &Connection) -> Result<Vec<String>, StoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT intake_url FROM ledger_intakes ORDER BY intake_url")?;
    let out = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(out)
}

/// Records of `intake` due for a read at `now`: those listed in a batch first (in entry
/// order, so one entry read serves them all), then by due time; at most `limit`.
pub fn due(
    conn: &Connection,
    intake: &str,
    now: &str,
    limit: usize,
) -> Result<Vec<FollowRow>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM ledger_follow WHERE intake_url = ?1 AND next_poll_at <= ?2 \
         ORDER BY listed_in IS NULL, listed_in, next_poll_at LIMIT ?3"
    );
    rows(conn, &sql, params![intake, now, limit as i64])
}

/// Followed records not anchored, filed at or before `filed_before`, with no overdue finding.
pub fn overdue_candidates(
    conn: &Connection,
    intake: &str,
    filed_before: &str,
) -> Result<Vec<FollowRow>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM ledger_follow WHERE intake_url = ?1 AND state <> ?2 \
         AND filed_at <= ?3 AND overdue_at IS NULL AND anchored_at IS NULL ORDER BY filed_at"
    );
    rows(
        conn,
        &sql,
        params![intake, FollowState::Anchored.as_str(), filed_before],
    )
}

pub fn mark_overdue(conn: &Connection, submission_id: i64, now: &str) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE ledger_follow SET overdue_at = ?2, state = CASE WHEN state = ?3 THEN ?4 ELSE state END \
         WHERE submission_id = ?1 AND overdue_at IS NULL",
    )?
    .execute(params![
        submission_id,
        now,
        FollowState::Pending.as_str(),
        FollowState::Finding.as_str()
    ])?;
    Ok(())
}

/// A followed record of `intake` with this sha is listed in batch entry `n`: read it now.
/// Returns whether one of ours was.
pub fn mark_listed(
    conn: &Connection,
    intake: &str,
    sha: &str,
    n: u64,
    now: &str,
) -> Result<bool, StoreError> {
    let changed = conn
        .prepare_cached(
            "UPDATE ledger_follow SET listed_in = ?3, next_poll_at = ?4 \
             WHERE intake_url = ?1 AND sha256 = ?2 AND next_poll_at IS NOT NULL AND ledger_entry IS NULL",
        )?
        .execute(params![intake, sha, n as i64, now])?;
    Ok(changed > 0)
}

/// What one `/witness/<sha>` read made of a followed record.
#[derive(Debug, Clone, Default)]
pub struct ReadResult<'a> {
    pub state: &'a str,
    pub last_seen: &'a str,
    pub seen: bool,
    pub next_poll_at: Option<String>,
    pub ledger_entry: Option<u64>,
    pub claim_sha256: Option<&'a str>,
    pub stored_sha256: Option<&'a str>,
    pub verified: bool,
    pub overdue: bool,
}

pub fn record_read(
    conn: &Connection,
    submission_id: i64,
    now: &str,
    r: &ReadResult<'_>,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE ledger_follow SET state = ?2, last_seen = ?3, seen = max(seen, ?4), next_poll_at = ?5, \
         polls = polls + 1, last_poll_at = ?6, ledger_entry = coalesce(ledger_entry, ?7), \
         claim_sha256 = coalesce(claim_sha256, ?8), stored_sha256 = coalesce(stored_sha256, ?9), \
         anchored_at = CASE WHEN ?7 IS NOT NULL THEN coalesce(anchored_at, ?6) ELSE anchored_at END, \
         verified_at = CASE WHEN ?10 THEN coalesce(verified_at, ?6) ELSE verified_at END, \
         overdue_at = CASE WHEN ?11 THEN coalesce(overdue_at, ?6) ELSE overdue_at END \
         WHERE submission_id = ?1",
    )?
    .execute(params![
        submission_id,
        r.state,
        r.last_seen,
        r.seen as i64,
        r.next_poll_at,
        now,
        r.ledger_entry.map(|n| n as i64),
        r.claim_sha256,
        r.stored_sha256,
        r.verified,
        r.overdue
    ])?;
    Ok(())
}

/// A finding to open.
#[derive(Debug, Clone)]
pub struct NewFinding<'a> {
    pub intake_url: &'a str,
    pub kind: &'a str,
    pub sha256: Option<&'a str>,
    pub entry_n: Option<u64>,
    pub evidence: serde_json::Value,
}

/// Opens a finding once per (intake, kind, evidence); whether it is new.
pub fn open_finding(conn: &Connection, f: &NewFinding<'_>, now: &str) -> Result<bool, StoreError> {
    let evidence = f.evidence.to_string();
    let mut keyed = evidence.clone();
    if let Some(sha) = f.sha256 {
        keyed.push_str(sha);
    }
    let evidence_sha256 = crate::digest::sha256_hex(keyed.as_bytes());
    let n = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO ledger_findings (intake_url, kind, sha256, entry_n, evidence, \
             evidence_sha256, opened_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![
            f.intake_url,
            f.kind,
            f.sha256,
            f.entry_n.map(|n| n as i64),
            evidence,
            evidence_sha256,
            now
        ])?;
    Ok(n > 0)
}

/// A stored finding.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    pub id: i64,
    pub intake_url: String,
    pub kind: String,
    pub sha256: Option<String>,
    pub entry_n: Option<i64>,
    pub evidence: serde_json::Value,
    pub opened_at: String,
}

fn finding_row(r: &rusqlite::Row) -> rusqlite::Result<Finding> {
    let evidence: String = r.get(5)?;
    Ok(Finding {
        id: r.get(0)?,
        intake_url: r.get(1)?,
        kind: r.get(2)?,
        sha256: r.get(3)?,
        entry_n: r.get(4)?,
        evidence: serde_json::from_str(&evidence).unwrap_or(serde_json::Value::String(evidence)),
        opened_at: r.get(6)?,
    })
}

const FINDING_COLUMNS: &str = "id, intake_url, kind, sha256, entry_n, evidence, opened_at";

/// The findings about one record.
pub fn findings_for(conn: &Connection, sha: &str) -> Result<Vec<Finding>, StoreError> {
    let sql =
        format!("SELECT {FINDING_COLUMNS} FROM ledger_findings WHERE sha256 = ?1 ORDER BY id");
    let mut stmt = conn.prepare_cached(&sql)?;
    let out = stmt
        .query_map([sha], finding_row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(out)
}

/// The findings about records, by the record's sha, oldest first: one read for a listing of
/// every followed record (instead of [`findings_for`] per record).
pub fn findings_by_record(
    conn: &Connection,
) -> Result<std::collections::HashMap<String, Vec<Finding>>, StoreError> {
    let sql = format!(
        "SELECT {FINDING_COLUMNS} FROM ledger_findings WHERE sha256 IS NOT NULL ORDER BY id"
    );
    let mut out: std::collections::HashMap<String, Vec<Finding>> = Default::default();
    for f in conn.prepare(&sql)?.query_map([], finding_row)? {
        let f = f?;
        if let Some(sha) = f.sha256.clone() {
            out.entry(sha).or_default().push(f);
        }
    }
    Ok(out)
}

/// The latest findings, newest first (bounded by `limit`, read by primary key).
pub fn latest_findings(conn: &Connection, limit: usize) -> Result<Vec<Finding>, StoreError> {
    let sql = format!("SELECT {FINDING_COLUMNS} FROM ledger_findings ORDER BY id DESC LIMIT ?1");
    let mut stmt = conn.prepare_cached(&sql)?;
    let out = stmt
        .query_map([limit as i64], finding_row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(out)
}

/// Keeps a version of a record's `responses` as served (by the hash of its JSON); whether it
/// is a version not seen before.
pub fn keep_responses(
    conn: &Connection,
    intake: &str,
    sha: &str,
    responses: &serde_json::Value,
    now: &str,
) -> Result<bool, StoreError> {
    let text = responses.to_string();
    let count = responses.as_array().map_or(0, Vec::len) as i64;
    let n = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO ledger_responses (intake_url, sha256, content_sha256, responses, count, first_seen) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            intake,
            sha,
            crate::digest::sha256_hex(text.as_bytes()),
            text,
            count,
            now
        ])?;
    Ok(n > 0)
}

/// One version of a record's replies.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ResponsesVersion {
    pub intake_url: String,
    pub content_sha256: String,
    pub responses: serde_json::Value,
    pub count: i64,
    pub first_seen: String,
}

/// Every version of a record's replies, oldest first.
pub fn responses_for(conn: &Connection, sha: &str) -> Result<Vec<ResponsesVersion>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT intake_url, content_sha256, responses, count, first_seen FROM ledger_responses \
         WHERE sha256 = ?1 ORDER BY first_seen, content_sha256",
    )?;
    let out = stmt
        .query_map([sha], |r| {
            let text: String = r.get(2)?;
            Ok(ResponsesVersion {
                intake_url: r.get(0)?,
                content_sha256: r.get(1)?,
                responses: serde_json::from_str(&text).unwrap_or_default(),
                count: r.get(3)?,
                first_seen: r.get(4)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(out)
}

/// Each record's reply count in its latest `responses` version (the last of
/// [`responses_for`]): one read for a listing of every followed record.
pub fn latest_reply_counts(
    conn: &Connection,
) -> Result<std::collections::HashMap<String, i64>, StoreError> {
    let mut out = std::collections::HashMap::new();
    let mut stmt = conn.prepare(
        "SELECT sha256, count FROM ledger_responses ORDER BY sha256, first_seen, content_sha256",
    )?;
    for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
        let (sha, count) = row?;
        out.insert(sha, count);
    }
    Ok(out)
}

/// Per intake: the bucket, the held head and the counters.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct IntakeState {
    pub intake_url: String,
    #[serde(skip)]
    pub bucket: Option<(f64, String)>,
    pub head_n: Option<i64>,
    pub head: Option<String>,
    pub head_seen_at: Option<String>,
    pub filed: i64,
    pub pending: i64,
    pub anchored: i64,
    pub with_finding: i64,
    pub verified: i64,
    pub overdue: i64,
    pub findings: i64,
    pub reads: i64,
    pub passes: i64,
    pub last_pass_at: Option<String>,
}

impl IntakeState {
    pub fn held(&self) -> Option<HeldHead> {
        Some(HeldHead {
            n: self.head_n? as u64,
            head: self.head.clone()?,
        })
    }

    /// The bucket as stored, or a full one.
    pub fn bucket(&self, now: DateTime<Utc>, p: &Policy) -> Bucket {
        match &self.bucket {
            Some((tokens, at)) => match parse_ts(at) {
                Some(at) => Bucket {
                    tokens: *tokens,
                    at,
                },
                None => Bucket::full(now, p),
            },
            None => Bucket::full(now, p),
        }
    }
}

const INTAKE_COLUMNS: &str = "intake_url, bucket_tokens, bucket_at, head_n, head, head_seen_at, filed, \
    pending, anchored, with_finding, verified, overdue, findings, reads, passes, last_pass_at";

fn intake_row(r: &rusqlite::Row) -> rusqlite::Result<IntakeState> {
    let tokens: Option<f64> = r.get(1)?;
    let at: Option<String> = r.get(2)?;
    Ok(IntakeState {
        intake_url: r.get(0)?,
        bucket: tokens.zip(at),
        head_n: r.get(3)?,
        head: r.get(4)?,
        head_seen_at: r.get(5)?,
        filed: r.get(6)?,
        pending: r.get(7)?,
        anchored: r.get(8)?,
        with_finding: r.get(9)?,
        verified: r.get(10)?,
        overdue: r.get(11)?,
        findings: r.get(12)?,
        reads: r.get(13)?,
        passes: r.get(14)?,
        last_pass_at: r.get(15)?,
    })
}

/// One intake's state (an empty one if it has none yet).
pub fn intake(conn: &Connection, intake_url: &str) -> Result<IntakeState, StoreError> {
    let sql = format!("SELECT {INTAKE_COLUMNS} FROM ledger_intakes WHERE intake_url = ?1");
    let found = conn
        .prepare_cached(&sql)?
        .query_row([intake_url], intake_row)
        .optional()?;
    Ok(found.unwrap_or_else(|| IntakeState {
        intake_url: intake_url.into(),
        ..IntakeState::default()
    }))
}

/// Every intake's state (a small table: one row per intake).
pub fn all_intakes(conn: &Connection) -> Result<Vec<IntakeState>, StoreError> {
    let sql = format!("SELECT {INTAKE_COLUMNS} FROM ledger_intakes ORDER BY intake_url");
    let mut stmt = conn.prepare_cached(&sql)?;
    let out = stmt
        .query_map([], intake_row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(out)
}

/// Ends a pass: the bucket as left, the reads made.
pub fn end_pass(
    conn: &Connection,
    intake_url: &str,
    bucket: &Bucket,
    reads: u64,
    now: &str,
) -> Result<(), StoreError> {
    conn.prepare_cached("INSERT OR IGNORE INTO ledger_intakes (intake_url) VALUES (?1)")?
        .execute([intake_url])?;
    conn.prepare_cached(
        "UPDATE ledger_intakes SET bucket_tokens = ?2, bucket_at = ?3, reads = reads + ?4, \
         passes = passes + 1, last_pass_at = ?5 WHERE intake_url = ?1",
    )?
    .execute(params![
        intake_url,
        bucket.tokens,
        ts(bucket.at),
        reads as i64,
        now
    ])?;
    Ok(())
}

/// `/ledger/head` was read at `now` (whatever it said): the follower reads it every so often.
pub fn mark_head_read(conn: &Connection, intake_url: &str, now: &str) -> Result<(), StoreError> {
    conn.prepare_cached("INSERT OR IGNORE INTO ledger_intakes (intake_url) VALUES (?1)")?
        .execute([intake_url])?;
    conn.prepare_cached("UPDATE ledger_intakes SET head_seen_at = ?2 WHERE intake_url = ?1")?
        .execute(params![intake_url, now])?;
    Ok(())
}

/// Holds a head the recomputation agreed with (append-only history, and the current one).
pub fn hold_head(
    conn: &Connection,
    intake_url: &str,
    held: &HeldHead,
    now: &str,
) -> Result<(), StoreError> {
    conn.prepare_cached("INSERT OR IGNORE INTO ledger_intakes (intake_url) VALUES (?1)")?
        .execute([intake_url])?;
    let same: bool = conn
        .prepare_cached(
            "SELECT coalesce(head_n = ?2 AND head = ?3, 0) FROM ledger_intakes WHERE intake_url = ?1",
        )?
        .query_row(params![intake_url, held.n as i64, held.head], |r| r.get(0))?;
    conn.prepare_cached(
        "UPDATE ledger_intakes SET head_n = ?2, head = ?3, head_seen_at = ?4 WHERE intake_url = ?1",
    )?
    .execute(params![intake_url, held.n as i64, held.head, now])?;
    if !same {
        conn.prepare_cached(
            "INSERT INTO ledger_heads (intake_url, n, head, seen_at) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![intake_url, held.n as i64, held.head, now])?;
    }
    Ok(())
}

/// The heads held for an intake, oldest first.
pub fn heads(conn: &Connection, intake_url: &str) -> Result<Vec<(HeldHead, String)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT n, head, seen_at FROM ledger_heads WHERE intake_url = ?1 ORDER BY id",
    )?;
    let out = stmt
        .query_map([intake_url], |r| {
            Ok((
                HeldHead {
                    n: r.get::<_, i64>(0)? as u64,
                    head: r.get(1)?,
                },
                r.get(2)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(out)
}

/// An entry seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntrySeen {
    pub n: u64,
    pub claim_sha256: String,
    pub raw_sha256: Option<String>,
    pub entry_sha256: String,
    pub kind: Option<String>,
    pub rows: Option<i64>,
}

/// Keeps the first sighting of an entry (a later, different one is a finding, not an update);
/// a raw hash learnt later fills in a missing one.
pub fn put_entry(
    conn: &Connection,
    intake_url: &str,
    e: &EntrySeen,
    now: &str,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO ledger_entries (intake_url, n, claim_sha256, raw_sha256, entry_sha256, kind, rows, seen_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (intake_url, n) DO UPDATE SET \
         raw_sha256 = coalesce(raw_sha256, excluded.raw_sha256), kind = coalesce(kind, excluded.kind), \
         rows = coalesce(rows, excluded.rows)",
    )?
    .execute(params![
        intake_url,
        e.n as i64,
        e.claim_sha256,
        e.raw_sha256,
        e.entry_sha256,
        e.kind,
        e.rows,
        now
    ])?;
    Ok(())
}

pub fn entry(conn: &Connection, intake_url: &str, n: u64) -> Result<Option<EntrySeen>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT n, claim_sha256, raw_sha256, entry_sha256, kind, rows FROM ledger_entries \
             WHERE intake_url = ?1 AND n = ?2",
        )?
        .query_row(params![intake_url, n as i64], |r| {
            Ok(from_columns!(r => EntrySeen {
                n(|v: i64| v as u64), claim_sha256, raw_sha256, entry_sha256, kind, rows,
            }))
        })
        .optional()?)
}

/// The followed rows of a record (one per intake it was filed with).
pub fn for_record(conn: &Connection, record_id: i64) -> Result<Vec<FollowRow>, StoreError> {
    let sql =
        format!("SELECT {COLUMNS} FROM ledger_follow WHERE record_id = ?1 ORDER BY submission_id");
    rows(conn, &sql, [record_id])
}

/// Every followed record, newest filing first (`ledger status`).
pub fn all(conn: &Connection) -> Result<Vec<FollowRow>, StoreError> {
    let sql =
        format!("SELECT {COLUMNS} FROM ledger_follow ORDER BY filed_at DESC, submission_id DESC");
    rows(conn, &sql, [])
}

/// Another witness's record, checked against its batch.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ForeignRecord {
    pub intake_url: String,
    pub sha256: String,
    pub endpoint: String,
    pub ledger_entry: u64,
    pub record_canonical: String,
    pub witness_name: String,
    pub vantage: String,
    pub signed: bool,
    pub signed_domain: Option<String>,
    pub mode: String,
    pub walked_at: Option<String>,
    pub outcome: Option<String>,
    /// `"ok"`, or what disagreed with the batch.
    pub checked: String,
    pub fetched_at: String,
}

/// Keeps (or refreshes the check of) a foreign record; whether it is new.
pub fn put_foreign(conn: &Connection, f: &ForeignRecord) -> Result<bool, StoreError> {
    let n = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO foreign_records (intake_url, sha256, endpoint, ledger_entry, record_canonical, \
             witness_name, vantage, signed, signed_domain, mode, walked_at, outcome, checked, fetched_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        )?
        .execute(params![
            f.intake_url,
            f.sha256,
            f.endpoint,
            f.ledger_entry as i64,
            f.record_canonical,
            f.witness_name,
            f.vantage,
            f.signed,
            f.signed_domain,
            f.mode,
            f.walked_at,
            f.outcome,
            f.checked,
            f.fetched_at
        ])?;
    Ok(n > 0)
}

/// Whether a foreign record is already kept.
pub fn has_foreign(conn: &Connection, intake_url: &str, sha: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM foreign_records WHERE intake_url = ?1 AND sha256 = ?2")?
        .query_row(params![intake_url, sha], |_| Ok(()))
        .optional()?
        .is_some())
}

/// The foreign records about an endpoint, newest walk first, at most `limit`.
pub fn foreign_for_endpoint(
    conn: &Connection,
    endpoint: &str,
    limit: usize,
) -> Result<Vec<ForeignRecord>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT intake_url, sha256, endpoint, ledger_entry, record_canonical, witness_name, vantage, signed, \
         signed_domain, mode, walked_at, outcome, checked, fetched_at FROM foreign_records \
         WHERE endpoint = ?1 ORDER BY walked_at DESC LIMIT ?2",
    )?;
    let out = stmt
        .query_map(params![endpoint, limit as i64], |r| {
            Ok(from_columns!(r => ForeignRecord {
                intake_url, sha256, endpoint, ledger_entry(|v: i64| v as u64), record_canonical,
                witness_name, vantage, signed, signed_domain, mode, walked_at, outcome, checked,
                fetched_at,
            }))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(out)
}

/// The last entry `ledger pull` read for this intake and endpoint (0: none).
pub fn pulled_upto(conn: &Connection, intake_url: &str, endpoint: &str) -> Result<u64, StoreError> {
    let n: Option<i64> = conn
        .prepare_cached("SELECT upto_n FROM ledger_pulls WHERE intake_url = ?1 AND endpoint = ?2")?
        .query_row(params![intake_url, endpoint], |r| r.get(0))
        .optional()?;
    Ok(n.unwrap_or(0).max(0) as u64)
}

pub fn set_pulled_upto(
    conn: &Connection,
    intake_url: &str,
    endpoint: &str,
    n: u64,
    now: &str,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO ledger_pulls (intake_url, endpoint, upto_n, pulled_at) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (intake_url, endpoint) DO UPDATE SET upto_n = excluded.upto_n, pulled_at = excluded.pulled_at",
    )?
    .execute(params![intake_url, endpoint, n as i64, now])?;
    Ok(())
}

/// The foreign records kept, per endpoint: (endpoint, witnesses, records), a small summary
/// for the endpoints page.
pub fn foreign_witnesses(
    conn: &Connection,
    endpoint: &str,
) -> Result<Vec<(String, i64, String)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT witness_name, count(*), max(coalesce(walked_at, '')) FROM foreign_records WHERE endpoint = ?1 \
         GROUP BY witness_name ORDER BY witness_name",
    )?;
    let out = stmt
        .query_map([endpoint], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(out)
}

/// A record anchored in an intake's ledger that is about an endpoint: ours (followed to its
/// batch) or another witness's (`ledger pull`, its batch check passed). What the intake's
/// stored object held that we keep; `record_canonical` None when our row was archived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnchoredRecord {
    pub intake_url: String,
    pub sha256: String,
    pub ledger_entry: u64,
    pub ours: bool,
    pub record_canonical: Option<String>,
    pub signed: bool,
    pub signed_domain: Option<String>,
    pub mode: Option<String>,
    pub witness_name: Option<String>,
    pub vantage: Option<String>,
    /// The intake's count decision (ours only: `ledger pull` does not keep it).
    pub counted: Option<bool>,
    pub count_reason: Option<String>,
    pub endpoint: String,
}

/// Every anchored record about `endpoint` (trailing `/` ignored, as `ledger pull` matches),
/// ours and others', in no particular order; foreign records whose batch check found a
/// disagreement are left out and counted.
pub fn anchored_for_endpoint(
    store: &super::Store,
    endpoint: &str,
) -> Result<(Vec<AnchoredRecord>, u64), StoreError> {
    let conn = store.connection();
    let endpoint = endpoint.trim_end_matches('/');
    let mut out = Vec::new();
    let mut stmt = conn.prepare_cached(
        "SELECT intake_url, sha256, ledger_entry, record_canonical, signed, signed_domain, mode, \
         witness_name, vantage, endpoint, checked FROM foreign_records WHERE endpoint = ?1",
    )?;
    let mut disagreeing = 0;
    let rows = stmt
        .query_map([endpoint], |r| {
            Ok((
                AnchoredRecord {
                    intake_url: r.get(0)?,
                    sha256: r.get(1)?,
                    ledger_entry: r.get::<_, i64>(2)?.max(0) as u64,
                    ours: false,
                    record_canonical: Some(r.get(3)?),
                    signed: r.get(4)?,
                    signed_domain: r.get(5)?,
                    mode: Some(r.get(6)?),
                    witness_name: Some(r.get(7)?),
                    vantage: Some(r.get(8)?),
                    counted: None,
                    count_reason: None,
                    endpoint: r.get(9)?,
                },
                r.get::<_, String>(10)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    for (rec, checked) in rows {
        if checked == "ok" {
            out.push(rec);
        } else {
            disagreeing += 1;
        }
    }
    let mut stmt = conn.prepare_cached(
        "SELECT f.intake_url, f.sha256, f.ledger_entry, f.record_id, r.signed, s.lane, s.counted, \
         s.count_reason, s.endpoint FROM ledger_follow f JOIN submissions s ON s.id = f.submission_id \
         LEFT JOIN records r ON r.id = f.record_id \
         WHERE f.state = 'anchored' AND f.ledger_entry IS NOT NULL AND rtrim(s.endpoint, '/') = ?1",
    )?;
    let ours = stmt
        .query_map([endpoint], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, Option<bool>>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, Option<bool>>(6)?,
                r.get::<_, Option<String>>(7)?,
                r.get::<_, String>(8)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    for (intake_url, sha256, n, record_id, signed, lane, counted, count_reason, ep) in ours {
        // Archived rows (retention) have no bytes here until `records restore`.
        let canonical = match signed {
            Some(_) => Some(store.get_by_id(record_id)?.canonical),
            None => None,
        };
        out.push(AnchoredRecord {
            intake_url,
            sha256,
            ledger_entry: n.max(0) as u64,
            ours: true,
            record_canonical: canonical.map(|c| String::from_utf8_lossy(&c).into_owned()),
            signed: signed.unwrap_or(false),
            signed_domain: lane.strip_prefix("domain:").map(str::to_owned),
            mode: None,
            witness_name: None,
            vantage: None,
            counted,
            count_reason,
            endpoint: ep,
        });
    }
    Ok((out, disagreeing))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        crate::store::schema::migrate(&conn).unwrap();
        conn
    }

    #[test]
    fn the_tables_exist_and_findings_are_append_only() {
        let conn = conn();
        let f = NewFinding {
            intake_url: "https://i.example/witness",
            kind: "rewound",
            sha256: None,
            entry_n: None,
            evidence: serde_json::json!({"held": 3, "served": 2}),
        };
        assert!(open_finding(&conn, &f, "2026-12-01T13:00:00Z").unwrap());
        assert!(
            !open_finding(&conn, &f, "2026-12-01T14:00:00Z").unwrap(),
            "once per evidence"
        );
        assert!(conn.execute("DELETE FROM ledger_findings", []).is_err());
        assert!(
            conn.execute("UPDATE ledger_findings SET kind = 'x'", [])
                .is_err()
        );
        let st = intake(&conn, "https://i.example/witness").unwrap();
        assert_eq!(st.findings, 1);
    }

    #[test]
    fn held_heads_are_kept_in_order_once_each() {
        let conn = conn();
        let i = "https://i.example/witness";
        let h1 = HeldHead {
            n: 1,
            head: "a".repeat(64),
        };
        let h2 = HeldHead {
            n: 2,
            head: "b".repeat(64),
        };
        hold_head(&conn, i, &h1, "2026-12-01T13:00:00Z").unwrap();
        hold_head(&conn, i, &h1, "2026-12-01T13:05:00Z").unwrap();
        hold_head(&conn, i, &h2, "2026-12-02T00:31:00Z").unwrap();
        let hs: Vec<_> = heads(&conn, i)
            .unwrap()
            .into_iter()
            .map(|(h, _)| h)
            .collect();
        assert_eq!(hs, vec![h1, h2.clone()]);
        assert_eq!(intake(&conn, i).unwrap().held(), Some(h2));
    }

    #[test]
    fn responses_keep_every_version_seen() {
        let conn = conn();
        let i = "https://i.example/witness";
        let empty = serde_json::json!([]);
        let one = serde_json::json!([{"response_sha": "c".repeat(64)}]);
        assert!(keep_responses(&conn, i, "ab", &empty, "2026-12-01T13:00:00Z").unwrap());
        assert!(!keep_responses(&conn, i, "ab", &empty, "2026-12-01T14:00:00Z").unwrap());
        assert!(keep_responses(&conn, i, "ab", &one, "2026-12-01T15:00:00Z").unwrap());
        let v = responses_for(&conn, "ab").unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].count, v[1].count), (0, 1));
    }
}
