//! The follower (issue 23, item 1 and 2): one pass over an intake's ledger for the records we
//! filed there. The decisions are the pure parts' (`follow` plans the reads, `check` judges
//! the answers); this carries them out and keeps the outcome in the store's ledger tables.
//!
//! One pass, per intake, within the intake's read bucket:
//! 1. Overdue records become findings (no read).
//! 2. `GET /ledger/head`. If it moved from the head held: stream `/ledger/export.jsonl` once,
//!    extend the held head over the new lines only (`audit::Audit::extend`, the fold `ledger
//!    verify` runs too), compare the served head,
//!    its marker and the end line; rows at or before the held head must keep their claims. The
//!    new head is held only when nothing was found.
//! 3. Each new entry's raw bytes are read once (oldest first, as the bucket allows): they must
//!    hash to the claim, the `ledger_head` they carry must be the head recomputed at its n, and
//!    a batch's rows name which of our records it took: those are read next, so one entry read
//!    covers every record of its batch.
//! 4. Due records: `GET /witness/<sha>`; the replies are kept as versions; the answer must be a
//!    step §2.5 allows (`check::transition`); anchored → inclusion (`check::inclusion`, one
//!    entry read per batch). Everything wrong is a finding with its evidence; nothing here
//!    writes a record, an outbox row or the records chain.
//!
//! Memory: one entry's bytes at a time, and the new export rows of this pass (a claim and a
//! head each, as the `Extender` keeps).

use super::audit::{Audit, AuditFinding, Audited, Cut, EntryKind, Need, read_entry};
use super::check::{self, HeldHead, InclusionInputs, Seen};
use super::follow::{self, Answered, Bucket, FollowState, Followed, Policy};
use super::wire::{CarriedHead, ExportLine, HeadAnswer, LedgerEntry, WireError, WitnessAnswer};
use crate::digest::sha256_hex;
use crate::store::StoreError;
use crate::store::ledger::{self as lstore, EntrySeen, NewFinding, ReadResult, ts};
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use serde_json::{Value, json};
use std::future::Future;

/// Why a read gave no typed answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// The ledger answered, with something that is not the route's answer (garbage: a
    /// finding); otherwise it did not answer usefully (down, cut off, 5xx: read again later).
    pub served: bool,
    pub detail: String,
    /// What was served, when there was a body (kept as evidence).
    pub body: Option<Vec<u8>>,
}

impl ReadError {
    pub fn down(detail: impl Into<String>) -> Self {
        ReadError {
            served: false,
            detail: detail.into(),
            body: None,
        }
    }
}

/// The ledger reads a pass makes, typed by `super::wire` (the bounded HTTP client,
/// `super::client::LedgerClient`, in production; anything in tests). A pass holds the store's
/// connection across its reads, so its future is not `Send`: the daemon runs the follower on a
/// thread of its own.
pub trait LedgerReads {
    fn witness(&self, sha: &str) -> impl Future<Output = Result<WitnessAnswer, ReadError>>;
    fn head(&self) -> impl Future<Output = Result<HeadAnswer, ReadError>>;
    /// `None`: 404.
    fn entry_raw(&self, n: u64) -> impl Future<Output = Result<Option<Vec<u8>>, ReadError>>;
    fn entry_json(&self, n: u64) -> impl Future<Output = Result<Option<LedgerEntry>, ReadError>>;
    /// Streams `/ledger/export.jsonl`, one line at a time (a line that does not read is handed
    /// over as its error); a line the callback refuses (`false`) ends the read.
    fn export(
        &self,
        line: &mut dyn FnMut(Result<ExportLine, WireError>) -> bool,
    ) -> impl Future<Output = Result<(), ReadError>>;
}

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PassReport {
    pub intake_url: String,
    /// HTTP reads made.
    pub reads: u64,
    /// The head held after the pass.
    pub head: Option<HeldHead>,
    pub new_entries: u64,
    pub entries_read: u64,
    pub polled: u64,
    pub anchored: u64,
    pub verified: u64,
    pub findings_opened: u64,
    /// Reads that got no usable answer (down, cap, deadline): read again later, not findings.
    pub unreadable: u64,
    /// What the last of those reads met (`<route>: <detail>`), for the operator.
    pub last_unreadable: Option<String>,
    /// The pass stopped because the bucket was empty; the rest waits for the next pass.
    pub out_of_budget: bool,
}

struct Pass<'a, R> {
    reads: &'a R,
    intake: &'a str,
    policy: &'a Policy,
    now: DateTime<Utc>,
    now_s: String,
    bucket: Bucket,
    report: PassReport,
}

impl<R: LedgerReads> Pass<'_, R> {
    fn take(&mut self) -> bool {
        if self.bucket.take() {
            self.report.reads += 1;
            true
        } else {
            self.report.out_of_budget = true;
            false
        }
    }

    fn finding(
        &mut self,
        conn: &Connection,
        kind: &str,
        sha: Option<&str>,
        entry_n: Option<u64>,
        evidence: Value,
    ) -> Result<(), StoreError> {
        let f = NewFinding {
            intake_url: self.intake,
            kind,
            sha256: sha,
            entry_n,
            evidence,
        };
        if lstore::open_finding(conn, &f, &self.now_s)? {
            self.report.findings_opened += 1;
            tracing::warn!(
                intake = self.intake,
                kind,
                sha,
                entry = entry_n,
                "ledger finding"
            );
        }
        Ok(())
    }

    fn typed_finding<T: serde::Serialize>(
        &mut self,
        conn: &Connection,
        f: &T,
        sha: Option<&str>,
        entry_n: Option<u64>,
    ) -> Result<(), StoreError> {
        let evidence = serde_json::to_value(f).unwrap_or(Value::Null);
        let kind = evidence
            .get("finding")
            .and_then(Value::as_str)
            .unwrap_or("finding")
            .to_owned();
        self.finding(conn, &kind, sha, entry_n, evidence)
    }

    /// A read that failed: garbage served is a finding, anything else is read again later.
    fn failed(&mut self, conn: &Connection, route: &str, e: &ReadError) -> Result<(), StoreError> {
        self.report.unreadable += 1;
        self.report.last_unreadable = Some(format!("{route}: {}", e.detail));
        if !e.served {
            return Ok(());
        }
        let body = e.body.as_deref().unwrap_or_default();
        let shown: String = String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned();
        self.finding(
            conn,
            "garbage_answer",
            None,
            None,
            json!({"route": route, "detail": e.detail, "body_sha256": sha256_hex(body),
                   "body_len": body.len(), "body_start": shown}),
        )
    }

    /// An entry read's answer; `None` (counted unreadable, garbage kept as a finding) when
    /// there is none to check now.
    fn answer<T>(
        &mut self,
        conn: &Connection,
        route: &str,
        read: Result<Option<T>, ReadError>,
    ) -> Result<Option<T>, StoreError> {
        match read {
            Ok(Some(x)) => Ok(Some(x)),
            Ok(None) => {
                self.report.unreadable += 1;
                Ok(None)
            }
            Err(e) => self.failed(conn, route, &e).map(|()| None),
        }
    }
}

/// One pass over `intake`'s ledger for our records there. Only database errors are `Err`;
/// whatever the ledger does ends as findings or as reads to make again.
pub async fn pass<R: LedgerReads>(
    reads: &R,
    store: &mut crate::store::Store,
    intake: &str,
    policy: &Policy,
    now: DateTime<Utc>,
) -> Result<PassReport, StoreError> {
    pass_cached(reads, store, intake, policy, now, &mut Cache::default()).await
}

/// What a long-lived follower keeps between its passes over one intake: the last batch entry
/// read for inclusion checks (one entry, at most the body cap), so a batch whose records take
/// several passes at the read rate is read once, not once per pass.
#[derive(Default)]
pub struct Cache {
    entry: Option<EntryCache>,
}

/// How long an entry read for inclusion is reused.
const CACHE_FOR: chrono::Duration = chrono::Duration::hours(1);

/// [`pass`] with the cache a long-lived follower keeps per intake.
pub async fn pass_cached<R: LedgerReads>(
    reads: &R,
    store: &mut crate::store::Store,
    intake: &str,
    policy: &Policy,
    now: DateTime<Utc>,
    cache: &mut Cache,
) -> Result<PassReport, StoreError> {
    if cache
        .entry
        .as_ref()
        .is_some_and(|c| now - c.read_at > CACHE_FOR || c.read_at > now)
    {
        cache.entry = None;
    }
    let state = lstore::intake(store.connection(), intake)?;
    let mut bucket = state.bucket(now, policy);
    bucket.refill(now, policy);
    let mut p = Pass {
        reads,
        intake,
        policy,
        now,
        now_s: ts(now),
        bucket,
        report: PassReport {
            intake_url: intake.into(),
            head: state.held(),
            ..PassReport::default()
        },
    };
    overdue(&mut p, store.connection())?;
    chain_step(&mut p, store, state.held()).await?;
    entries_step(&mut p, store).await?;
    witness_step(&mut p, store, &mut cache.entry).await?;
    lstore::end_pass(
        store.connection(),
        intake,
        &p.bucket,
        p.report.reads,
        &p.now_s,
    )?;
    Ok(p.report)
}

fn overdue<R: LedgerReads>(p: &mut Pass<'_, R>, conn: &Connection) -> Result<(), StoreError> {
    let before = ts(p.now - p.policy.overdue_after);
    for row in lstore::overdue_candidates(conn, p.intake, &before)? {
        let filed = lstore::parse_ts(&row.filed_at).unwrap_or(p.now);
        let r = followed(&row, filed);
        if let Some(f) = follow::overdue(&r, p.now, p.policy) {
            let evidence = planner_evidence(f.kind(), &row.filed_at, p.policy);
            p.finding(conn, f.kind(), Some(&row.sha256), None, evidence)?;
            lstore::mark_overdue(conn, row.submission_id, &p.now_s)?;
        }
    }
    Ok(())
}

/// A planner finding's evidence: what it is about and the limit it passed (when it was found
/// is the finding's `opened_at`).
fn planner_evidence(kind: &str, filed_at: &str, p: &Policy) -> Value {
    json!({"kind": kind, "filed_at": filed_at,
        "not_found_grace_secs": p.not_found_grace.num_seconds(),
        "overdue_after_secs": p.overdue_after.num_seconds()})
}

fn followed(row: &lstore::FollowRow, filed_at: DateTime<Utc>) -> Followed<'_> {
    Followed {
        sha: &row.sha256,
        filed_at,
        polls: row.polls.max(0) as u32,
        seen: row.seen,
        overdue_found: row.overdue_at.is_some(),
    }
}

/// §7 steps 4–5 for the part of the chain past the held head: the audit
/// ([`Audit::extend`]) judges; this reads the head and the export and keeps what it says.
async fn chain_step<R: LedgerReads>(
    p: &mut Pass<'_, R>,
    store: &mut crate::store::Store,
    held: Option<HeldHead>,
) -> Result<(), StoreError> {
    let Some(served) = read_head(p, store).await? else {
        return Ok(());
    };
    let first_sync = held.is_none();
    let mut audit = Audit::extend(served, held, p.policy.max_new_rows);
    if audit.export_needed() {
        if !p.take() {
            return Ok(());
        }
        if let Err(e) = stream_export(p, store.connection(), &mut audit).await {
            // Down or cut off mid-stream: nothing is judged from half an export.
            return p.failed(store.connection(), "/ledger/export.jsonl", &e);
        }
    }
    let audited = audit.finish();
    let conn = store.connection();
    match &audited.cut {
        Some(Cut::UnreadableLine { detail, .. }) => {
            let e = ReadError {
                served: true,
                detail: detail.clone(),
                body: None,
            };
            return p.failed(conn, "/ledger/export.jsonl", &e);
        }
        Some(Cut::TooManyRows { max_new_rows }) => {
            let evidence = json!({"new_rows_over": max_new_rows});
            return p.finding(conn, "export_too_long", None, None, evidence);
        }
        None => {}
    }
    keep_audited(p, conn, audited, first_sync)
}

/// `GET /ledger/head` when it is due and the bucket allows; `None` when not read (a failed
/// read is kept as such).
async fn read_head<R: LedgerReads>(
    p: &mut Pass<'_, R>,
    store: &mut crate::store::Store,
) -> Result<Option<HeadAnswer>, StoreError> {
    let last = lstore::intake(store.connection(), p.intake)?
        .head_seen_at
        .and_then(|s| lstore::parse_ts(&s));
    if !follow::head_due(last, p.now, p.policy) || !p.take() {
        return Ok(None);
    }
    match p.reads.head().await {
        Ok(h) => {
            lstore::mark_head_read(store.connection(), p.intake, &p.now_s)?;
            Ok(Some(h))
        }
        Err(e) => {
            if e.served {
                lstore::mark_head_read(store.connection(), p.intake, &p.now_s)?;
            }
            p.failed(store.connection(), "/ledger/head", &e)
                .map(|()| None)
        }
    }
}

/// Streams the export into the audit, answering what it asks of the entries held.
async fn stream_export<R: LedgerReads>(
    p: &Pass<'_, R>,
    conn: &Connection,
    audit: &mut Audit,
) -> Result<(), ReadError> {
    let intake = p.intake;
    p.reads
        .export(
            &mut |line| match audit.on_line(line.map_err(|e| e.to_string())) {
                Need::HeldEntry(n) => {
                    let held = lstore::entry(conn, intake, n).ok().flatten();
                    audit.on_held(n, held.as_ref().map(seen).as_ref());
                    true
                }
                Need::Stop => false,
                Need::Nothing | Need::EntryBytes(_) => true,
            },
        )
        .await
}

/// Keeps the audit's findings and, when it holds, the new entries with their heads and the
/// head to hold, in one transaction.
fn keep_audited<R: LedgerReads>(
    p: &mut Pass<'_, R>,
    conn: &Connection,
    audited: Audited,
    first_sync: bool,
) -> Result<(), StoreError> {
    for f in &audited.findings {
        p.typed_finding(conn, f, None, check_n(f))?;
    }
    p.report.new_entries = audited.heads.len() as u64;
    let Some(hold) = audited.hold else {
        return Ok(());
    };
    // On the first sync, entries written a day or more before the first record we follow
    // cannot list ours: their bytes are not read (the chain over them is still recomputed).
    let read_from: Option<String> = if first_sync {
        Some(
            oldest_pending_filed(conn, p.intake)?
                .and_then(|f| lstore::parse_ts(&f))
                .map_or_else(|| "9999".to_owned(), |f| ts(f - chrono::Duration::days(1))),
        )
    } else {
        None
    };
    let tx = crate::store::write_transaction(conn)?;
    for (fields, head) in audited.rows.iter().zip(&audited.heads) {
        // Times sort as text (ISO 8601 UTC); an entry without one is read.
        let skip = read_from.as_ref().is_some_and(|from| {
            fields
                .created_at
                .as_ref()
                .is_some_and(|c| c.as_str() < from.as_str())
        });
        let row = EntrySeen {
            n: fields.n,
            claim_sha256: fields.claim_sha256.clone(),
            raw_sha256: None,
            entry_sha256: head.head.clone(),
            kind: skip.then(|| "not_read".to_owned()),
            rows: None,
        };
        lstore::put_entry(conn, p.intake, &row, &p.now_s)?;
    }
    lstore::hold_head(conn, p.intake, &hold, &p.now_s)?;
    tx.commit()?;
    p.report.head = Some(hold);
    Ok(())
}

fn check_n(f: &AuditFinding) -> Option<u64> {
    match f {
        AuditFinding::Chain(check::ChainFinding::EntryChanged { n, .. }) => Some(*n),
        _ => None,
    }
}

fn oldest_pending_filed(conn: &Connection, intake: &str) -> Result<Option<String>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT min(filed_at) FROM ledger_follow WHERE intake_url = ?1 AND next_poll_at IS NOT NULL",
        )?
        .query_row([intake], |r| r.get(0))?)
}

/// Entries held but not yet read: read their bytes once, oldest first.
async fn entries_step<R: LedgerReads>(
    p: &mut Pass<'_, R>,
    store: &mut crate::store::Store,
) -> Result<(), StoreError> {
    loop {
        let next: Option<EntrySeen> = {
            let conn = store.connection();
            let n: Option<i64> = conn
                .prepare_cached(
                    "SELECT min(n) FROM ledger_entries WHERE intake_url = ?1 AND raw_sha256 IS NULL AND kind IS NULL",
                )?
                .query_row([p.intake], |r| r.get(0))?;
            match n {
                Some(n) => lstore::entry(conn, p.intake, n as u64)?,
                None => None,
            }
        };
        let Some(e) = next else { return Ok(()) };
        if !p.take() {
            return Ok(());
        }
        let raw = match p.reads.entry_raw(e.n).await {
            Ok(Some(body)) => body,
            Ok(None) => {
                let conn = store.connection();
                p.finding(
                    conn,
                    "entry_missing",
                    None,
                    Some(e.n),
                    json!({"n": e.n, "status": 404, "claim_sha256": e.claim_sha256}),
                )?;
                mark_entry_read(conn, p, &e, None, Some("missing"), None)?;
                continue;
            }
            Err(err) => {
                return p.failed(store.connection(), "/ledger/<n>?format=raw", &err);
            }
        };
        p.report.entries_read += 1;
        let conn = store.connection();
        let reading = read_entry(e.n, &raw);
        if reading.raw_sha256 != e.claim_sha256 {
            let f = check::ChainFinding::EntryBytesDiffer {
                n: e.n,
                claim_sha256: e.claim_sha256.clone(),
                bytes_sha256: reading.raw_sha256.clone(),
            };
            let mut evidence = serde_json::to_value(&f).unwrap_or(Value::Null);
            evidence["bytes"] = Value::String(bytes_evidence(&raw));
            p.finding(conn, "entry_bytes_differ", None, Some(e.n), evidence)?;
        }
        for f in &reading.findings {
            p.typed_finding(conn, f, None, Some(e.n))?;
        }
        for sha in &reading.listed {
            lstore::mark_listed(conn, p.intake, sha, e.n, &p.now_s)?;
        }
        if let Some(c) = &reading.carried {
            carried(p, conn, e.n, c)?;
        }
        let rows = (reading.kind == EntryKind::Batch).then_some(reading.listed.len() as i64);
        let (raw_sha, kind) = (reading.raw_sha256, reading.kind.name());
        mark_entry_read(conn, p, &e, Some(raw_sha), Some(kind), rows)?;
    }
}

fn mark_entry_read<R: LedgerReads>(
    conn: &Connection,
    p: &Pass<'_, R>,
    e: &EntrySeen,
    raw_sha: Option<String>,
    kind: Option<&str>,
    rows: Option<i64>,
) -> Result<(), StoreError> {
    lstore::put_entry(
        conn,
        p.intake,
        &EntrySeen {
            raw_sha256: raw_sha,
            kind: kind.map(str::to_owned),
            rows,
            ..e.clone()
        },
        &p.now_s,
    )
}

/// The `ledger_head` an entry carries must be the head we recomputed (and hold) at its n.
fn carried<R: LedgerReads>(
    p: &mut Pass<'_, R>,
    conn: &Connection,
    in_entry: u64,
    c: &CarriedHead,
) -> Result<(), StoreError> {
    let at = match c {
        CarriedHead::Linked { n: 0, .. } => Some(super::chain::ROOT.to_owned()),
        CarriedHead::Linked { n, .. } => lstore::entry(conn, p.intake, *n)?.map(|e| e.entry_sha256),
        CarriedHead::Broken { .. } => None,
    };
    for f in check::carried_findings(in_entry, c, at.as_deref()) {
        p.typed_finding(conn, &f, None, Some(in_entry))?;
    }
    Ok(())
}

/// What the store holds of an entry, as `check::rereads` compares it.
fn seen(h: &lstore::EntrySeen) -> check::SeenEntry {
    check::SeenEntry {
        n: h.n,
        claim_sha256: h.claim_sha256.clone(),
        raw_sha256: h.raw_sha256.clone(),
    }
}

/// The bytes themselves, as evidence (capped: a 1 MiB batch keeps its first 64 KiB).
fn bytes_evidence(raw: &[u8]) -> String {
    let cut = raw.len().min(64 * 1024);
    String::from_utf8_lossy(&raw[..cut]).into_owned()
}

/// The entry read for inclusion checks, kept while consecutive records share it.
struct EntryCache {
    n: u64,
    entry: LedgerEntry,
    raw: Vec<u8>,
    read_at: DateTime<Utc>,
}

/// §7 steps 1–3 for the due records.
async fn witness_step<R: LedgerReads>(
    p: &mut Pass<'_, R>,
    store: &mut crate::store::Store,
    cache: &mut Option<EntryCache>,
) -> Result<(), StoreError> {
    let limit = p.bucket.tokens.max(0.0) as usize;
    if limit == 0 {
        return Ok(());
    }
    let due = lstore::due(store.connection(), p.intake, &p.now_s, limit)?;
    if due.len() == limit {
        // More may be due than the bucket holds: they wait for the next pass.
        p.report.out_of_budget = true;
    }
    for row in due {
        if !p.take() {
            break;
        }
        p.report.polled += 1;
        let filed = lstore::parse_ts(&row.filed_at).unwrap_or(p.now);
        match p.reads.witness(&row.sha256).await {
            Ok(answer) => read_answer(p, store, &row, filed, &answer, cache).await?,
            Err(e) => {
                p.failed(store.connection(), "/witness/<sha>", &e)?;
                unreadable_read(p, store.connection(), &row, filed)?;
            }
        }
    }
    Ok(())
}

/// No usable answer: read again later. A record already in `finding` stays there.
fn unreadable_read<R: LedgerReads>(
    p: &Pass<'_, R>,
    conn: &Connection,
    row: &lstore::FollowRow,
    filed: DateTime<Utc>,
) -> Result<(), StoreError> {
    let plan = follow::after_answer(&followed(row, filed), Answered::Unreadable, p.now, p.policy);
    let state = if row.follow_state() == FollowState::Pending {
        plan.state
    } else {
        row.follow_state()
    };
    lstore::record_read(
        conn,
        row.submission_id,
        &p.now_s,
        &ReadResult {
            state: state.as_str(),
            last_seen: "unreadable",
            seen: false,
            next_poll_at: plan.next_poll_at.map(ts),
            ..ReadResult::default()
        },
    )
}

/// One `/witness/<sha>` answer: its replies kept, the §2.5 step checked, inclusion once
/// anchored, the planner's findings, and the record's row updated.
async fn read_answer<R: LedgerReads>(
    p: &mut Pass<'_, R>,
    store: &mut crate::store::Store,
    row: &lstore::FollowRow,
    filed: DateTime<Utc>,
    answer: &WitnessAnswer,
    cache: &mut Option<EntryCache>,
) -> Result<(), StoreError> {
    // Replies: every version seen.
    let responses = serde_json::to_value(answer.responses()).unwrap_or(Value::Null);
    lstore::keep_responses(
        store.connection(),
        p.intake,
        &row.sha256,
        &responses,
        &p.now_s,
    )?;
    // §2.5: the steps a record's life may not take.
    if let Some(t) = check::transition(last_seen(row).as_ref(), answer) {
        let entry = row.ledger_entry.map(|n| n as u64);
        p.typed_finding(store.connection(), &t, Some(&row.sha256), entry)?;
    }
    let inclusion = match answer {
        WitnessAnswer::Anchored { ledger_entry, .. } => {
            inclusion(p, store, row, answer, *ledger_entry, cache).await?
        }
        _ => None,
    };
    let conn = store.connection();
    let plan = follow::after_answer(
        &followed(row, filed),
        answered(answer, inclusion.as_ref()),
        p.now,
        p.policy,
    );
    for f in &plan.findings {
        // Stable evidence: the same finding read again is not opened again.
        let evidence = planner_evidence(f.kind(), &row.filed_at, p.policy);
        p.finding(conn, f.kind(), Some(&row.sha256), None, evidence)?;
    }
    let anchored = Anchored::of(answer, inclusion.as_ref(), cache.as_ref());
    let read = settled(row, answer, &plan, inclusion.as_ref(), &anchored);
    if let Some(inc) = &inclusion {
        p.report.anchored += 1;
        p.report.verified += u64::from(read.verified);
        for f in &inc.findings {
            p.typed_finding(conn, f, Some(&row.sha256), read.ledger_entry)?;
        }
    }
    lstore::record_read(conn, row.submission_id, &p.now_s, &read)
}

/// What the planner makes of an answer (an anchored one whose entry could not be read now is
/// read again later).
fn answered(answer: &WitnessAnswer, inclusion: Option<&check::Inclusion>) -> Answered {
    match (answer, inclusion) {
        (WitnessAnswer::NotFound { .. }, _) => Answered::NotFound,
        (WitnessAnswer::Pending { .. }, _) => Answered::Pending,
        (WitnessAnswer::Anchored { .. }, Some(inc)) => Answered::Anchored {
            verified: inc.verified(),
        },
        (WitnessAnswer::Anchored { .. }, None) => Answered::Unreadable,
    }
}

/// What is kept of an anchored answer whose inclusion was checked: its entry, the entry's
/// claim (as read for the check) and the hash of the intake's copy.
#[derive(Default)]
struct Anchored {
    entry: Option<u64>,
    claim: Option<String>,
    stored: Option<String>,
}

impl Anchored {
    fn of(
        answer: &WitnessAnswer,
        inclusion: Option<&check::Inclusion>,
        cache: Option<&EntryCache>,
    ) -> Self {
        let (
            WitnessAnswer::Anchored {
                ledger_entry,
                record,
                ..
            },
            Some(_),
        ) = (answer, inclusion)
        else {
            return Anchored::default();
        };
        Anchored {
            entry: Some(*ledger_entry),
            claim: cache
                .filter(|c| c.n == *ledger_entry)
                .map(|c| c.entry.claim_sha256.clone()),
            stored: record
                .as_ref()
                .map(|r| sha256_hex(r.record_canonical.as_bytes())),
        }
    }
}

/// The record's row after an answer (pure): its state (an open finding keeps it in `finding`
/// until it is anchored and verified), what was seen, and when to read it next.
fn settled<'a>(
    row: &lstore::FollowRow,
    answer: &WitnessAnswer,
    plan: &follow::Plan,
    inclusion: Option<&check::Inclusion>,
    anchored: &'a Anchored,
) -> ReadResult<'a> {
    let verified = inclusion.is_some_and(check::Inclusion::verified);
    let mut state = plan.state;
    if row.follow_state() == FollowState::Finding && state == FollowState::Pending {
        state = FollowState::Finding;
    }
    if inclusion.is_some() && !verified {
        state = FollowState::Finding;
    }
    if (!plan.findings.is_empty() || row.overdue_at.is_some()) && !verified {
        state = FollowState::Finding;
    }
    let (last_seen, seen) = match answer {
        WitnessAnswer::NotFound { .. } => ("not_found", false),
        WitnessAnswer::Pending { .. } => ("pending", true),
        WitnessAnswer::Anchored { .. } => ("anchored", true),
    };
    ReadResult {
        state: state.as_str(),
        last_seen,
        seen,
        next_poll_at: plan.next_poll_at.map(ts),
        ledger_entry: anchored.entry,
        claim_sha256: anchored.claim.as_deref(),
        stored_sha256: anchored.stored.as_deref(),
        verified,
        overdue: plan.findings.iter().any(|f| f.kind() == "overdue"),
    }
}

fn last_seen(row: &lstore::FollowRow) -> Option<Seen> {
    match (row.last_seen.as_deref(), row.ledger_entry) {
        (_, Some(n)) => Some(Seen::Anchored {
            ledger_entry: n as u64,
            stored_sha256: row.stored_sha256.clone(),
        }),
        (Some("pending"), None) => Some(Seen::Pending),
        _ => None,
    }
}

/// §7 steps 2–3, reading entry `n` (JSON view and raw bytes) unless the last record's check
/// read it. `None` when the entry could not be read now.
async fn inclusion<R: LedgerReads>(
    p: &mut Pass<'_, R>,
    store: &mut crate::store::Store,
    row: &lstore::FollowRow,
    answer: &WitnessAnswer,
    n: u64,
    cache: &mut Option<EntryCache>,
) -> Result<Option<check::Inclusion>, StoreError> {
    if cache.as_ref().is_none_or(|c| c.n != n) {
        *cache = None;
        if !p.take() {
            return Ok(None);
        }
        let read = p.reads.entry_json(n).await;
        let Some(entry) = p.answer(store.connection(), "/ledger/<n>?format=json", read)? else {
            return Ok(None);
        };
        if !p.take() {
            return Ok(None);
        }
        let read = p.reads.entry_raw(n).await;
        let Some(raw) = p.answer(store.connection(), "/ledger/<n>?format=raw", read)? else {
            return Ok(None);
        };
        p.report.entries_read += 1;
        // A held entry is still what it was (§7 step 5).
        if let Some(h) = lstore::entry(store.connection(), p.intake, n)? {
            let served = check::SeenEntry {
                n,
                claim_sha256: entry.claim_sha256.clone(),
                raw_sha256: Some(sha256_hex(&raw)),
            };
            for f in check::rereads(&[seen(&h)], &[served]) {
                let mut evidence = serde_json::to_value(&f).unwrap_or(Value::Null);
                evidence["bytes"] = Value::String(bytes_evidence(&raw));
                p.finding(store.connection(), "entry_changed", None, Some(n), evidence)?;
            }
        }
        *cache = Some(EntryCache {
            n,
            entry,
            raw,
            read_at: p.now,
        });
    }
    let c = cache.as_ref().expect("filled above");
    let filed = {
        let conn = store.connection();
        let bytes: Vec<u8> = conn
            .prepare_cached("SELECT canonical FROM records WHERE id = ?1")?
            // Rows are zstd frames at rest (store::codec): inclusion compares the exact bytes.
            .query_row([row.record_id], |r| {
                Ok(crate::store::codec::decode(conn, r.get(0)?)?)
            })?;
        bytes
    };
    Ok(Some(check::inclusion(&InclusionInputs {
        sha: &row.sha256,
        filed: &filed,
        answer,
        entry: &c.entry,
        raw: &c.raw,
        export_row: None,
    })))
}

fn read_error(e: super::client::ClientError) -> ReadError {
    use super::client::ClientError as E;
    let served = match &e {
        E::Fetch { .. } | E::BadUrl { .. } | E::PartialLine { .. } => false,
        // An overloaded or failing server is down for now, not lying.
        E::Status { status, .. } => !(*status >= 500 || *status == 429),
        E::Wire { .. } | E::LineTooLong { .. } => true,
    };
    let body = match &e {
        E::Status { excerpt, .. } => Some(excerpt.as_bytes().to_vec()),
        _ => None,
    };
    ReadError {
        served,
        detail: e.to_string(),
        body,
    }
}

/// The production reads: the bounded client (https only, no redirects, caps and deadlines).
impl LedgerReads for super::client::LedgerClient {
    async fn witness(&self, sha: &str) -> Result<WitnessAnswer, ReadError> {
        super::client::LedgerClient::witness(self, sha)
            .await
            .map_err(read_error)
    }

    async fn head(&self) -> Result<HeadAnswer, ReadError> {
        super::client::LedgerClient::head(self)
            .await
            .map_err(read_error)
    }

    async fn entry_raw(&self, n: u64) -> Result<Option<Vec<u8>>, ReadError> {
        super::client::LedgerClient::entry_raw(self, n)
            .await
            .map_err(read_error)
    }

    async fn entry_json(&self, n: u64) -> Result<Option<LedgerEntry>, ReadError> {
        super::client::LedgerClient::entry_json(self, n)
            .await
            .map_err(read_error)
    }

    async fn export(
        &self,
        line: &mut dyn FnMut(Result<ExportLine, WireError>) -> bool,
    ) -> Result<(), ReadError> {
        let mut reader = super::client::LedgerClient::export(self)
            .await
            .map_err(read_error)?;
        while let Some((_, l)) = reader.next().await.map_err(read_error)? {
            if !line(l) {
                break;
            }
        }
        Ok(())
    }
}
