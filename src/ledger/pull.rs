//! `ledger pull` (issue 23, item 5): every record any witness filed about an endpoint, read
//! from the anchored batches of an intake's ledger and checked against its batch, kept apart
//! from our own records and chain (`foreign_records`).
//!
//! What is checked: the batch entry is in the chain we hold (the pull extends the held head
//! first, as the follower does), its bytes hash to its claim, the record's bytes hash to the
//! sha its row names, the intake serves it anchored in that entry, and the row's fields agree
//! with the stored object (`check::inclusion`). What cannot be: the witness's signature. The
//! ledger keeps no signature (ledger.md §2.3, §7): `signed` and `signed_domain` are the
//! intake's word, and a foreign record is evidence that the ledger holds these bytes, not that
//! its witness signed them.

use super::check::{self, InclusionInputs};
use super::follow::Policy;
use super::follower::{self, LedgerReads};
use super::wire::{EntryText, WitnessAnswer};
use crate::digest::sha256_hex;
use crate::store::StoreError;
use crate::store::ledger::{self as lstore, ForeignRecord, ts};
use chrono::{DateTime, Utc};

/// Batch entries read per call at most (the daemon pulls a little each pass).
pub const ENTRIES_PER_CALL: u64 = 50;

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PullReport {
    pub head_n: Option<u64>,
    pub entries_read: u64,
    /// Rows of those batches naming the endpoint.
    pub listed: u64,
    /// Foreign records newly kept.
    pub kept: u64,
    /// Of those, how many disagree with their batch (kept, with what disagreed).
    pub disagreeing: u64,
    /// Our own records among the rows (not kept as foreign).
    pub ours: u64,
    pub unreadable: u64,
    /// Entries past `upto` are left for the next call.
    pub upto: u64,
    /// The ledger's head could not be read and none is held: nothing was pulled, and why.
    pub head_unread: Option<String>,
}

/// The `purpose` a conduct walk writes: `a2a-conduct-walk-v1: <endpoint>`.
fn names_endpoint(purpose: &str, endpoint: &str) -> bool {
    crate::store::meta::endpoint_from_purpose(purpose)
        .is_some_and(|e| e.trim_end_matches('/') == endpoint.trim_end_matches('/'))
}

/// One pull: the chain step of a follower pass (so the batches read are in the held chain),
/// then the batches past where the last pull stopped.
pub async fn pull<R: LedgerReads>(
    reads: &R,
    store: &mut crate::store::Store,
    intake: &str,
    endpoint: &str,
    now: DateTime<Utc>,
) -> Result<PullReport, StoreError> {
    // The head first (as a follower pass, with the default rate).
    let pass = follower::pass(reads, store, intake, &Policy::default(), now).await?;
    let mut report = pull_held(reads, store, intake, endpoint, now).await?;
    if pass.head.is_none() && pass.unreadable > 0 {
        report.head_unread = pass.last_unreadable.or(Some("no usable answer".into()));
    }
    Ok(report)
}

/// The batches past where the last pull stopped, up to the head already held: for a caller
/// (the daemon) that has just made its own follower pass over `intake`, so the chain step is
/// not made twice (nor at another rate than the intake's).
pub async fn pull_held<R: LedgerReads>(
    reads: &R,
    store: &mut crate::store::Store,
    intake: &str,
    endpoint: &str,
    now: DateTime<Utc>,
) -> Result<PullReport, StoreError> {
    let mut report = PullReport::default();
    let held = lstore::intake(store.connection(), intake)?.held();
    let Some(held) = held else {
        return Ok(report);
    };
    report.head_n = Some(held.n);
    let from = lstore::pulled_upto(store.connection(), intake, endpoint)?;
    let last = held.n.min(from + ENTRIES_PER_CALL);
    let now_s = ts(now);
    let mut upto = from;
    for n in from + 1..=last {
        let seen = lstore::entry(store.connection(), intake, n)?;
        if seen.as_ref().and_then(|e| e.kind.as_deref()) == Some("checkpoint") {
            upto = n;
            continue;
        }
        let raw = match reads.entry_raw(n).await {
            Ok(Some(r)) => r,
            _ => {
                report.unreadable += 1;
                break;
            }
        };
        report.entries_read += 1;
        let Ok(EntryText::Batch(batch)) = EntryText::parse(&raw) else {
            upto = n;
            continue;
        };
        for row in batch
            .records
            .iter()
            .filter(|r| names_endpoint(&r.purpose, endpoint))
        {
            report.listed += 1;
            if is_ours(store.connection(), &row.sha)? {
                report.ours += 1;
                continue;
            }
            if lstore::has_foreign(store.connection(), intake, &row.sha)? {
                continue;
            }
            let answer = match reads.witness(&row.sha).await {
                Ok(a) => a,
                Err(_) => {
                    report.unreadable += 1;
                    continue;
                }
            };
            let WitnessAnswer::Anchored {
                record: Some(stored),
                ..
            } = &answer
            else {
                report.unreadable += 1;
                continue;
            };
            let bytes = stored.record_canonical.as_bytes();
            let entry = super::wire::LedgerEntry {
                n,
                work: None,
                // The claim held from the chain, when there is one: bytes that do not hash to
                // it are inclusion's batch_bytes_differ.
                claim_sha256: seen
                    .as_ref()
                    .map_or_else(|| sha256_hex(&raw), |e| e.claim_sha256.clone()),
                record_canonical: None,
                schema: None,
                created_at: None,
                ots_status: None,
                bitcoin_block: None,
                block_time: None,
                stamped_at: None,
                anchored_by: None,
                pending_stage: None,
                pending_hours: None,
                pending_stale_after_hours: None,
            };
            let inc = check::inclusion(&InclusionInputs {
                sha: &row.sha,
                filed: bytes,
                answer: &answer,
                entry: &entry,
                raw: &raw,
                export_row: None,
            });
            let mut problems: Vec<String> = inc
                .findings
                .iter()
                .map(|f| {
                    serde_json::to_value(f)
                        .ok()
                        .and_then(|v| v.get("finding").and_then(|k| k.as_str().map(str::to_owned)))
                        .unwrap_or_else(|| format!("{f:?}"))
                })
                .collect();
            if sha256_hex(bytes) != row.sha {
                problems.push("bytes_do_not_hash_to_sha".into());
            }
            let meta = crate::store::meta::derive_from_bytes(bytes).ok();
            let checked = if problems.is_empty() {
                "ok".to_owned()
            } else {
                report.disagreeing += 1;
                problems.join(", ")
            };
            let kept = lstore::put_foreign(
                store.connection(),
                &ForeignRecord {
                    intake_url: intake.into(),
                    sha256: row.sha.clone(),
                    endpoint: endpoint.trim_end_matches('/').into(),
                    ledger_entry: n,
                    record_canonical: stored.record_canonical.clone(),
                    witness_name: row.witness_name.clone(),
                    vantage: row.vantage.clone(),
                    signed: row.signed,
                    signed_domain: row.signed_domain.clone(),
                    mode: row.mode_or_full().into(),
                    walked_at: meta.as_ref().map(|m| m.walked_at.clone()),
                    outcome: meta
                        .as_ref()
                        .and_then(|m| m.verdict.as_ref())
                        .map(|v| v.outcome.clone()),
                    checked,
                    fetched_at: now_s.clone(),
                },
            )?;
            if kept {
                report.kept += 1;
            }
        }
        upto = n;
    }
    lstore::set_pulled_upto(store.connection(), intake, endpoint, upto, &now_s)?;
    report.upto = upto;
    Ok(report)
}

fn is_ours(conn: &rusqlite::Connection, sha: &str) -> Result<bool, StoreError> {
    use rusqlite::OptionalExtension;
    Ok(conn
        .prepare_cached("SELECT 1 FROM records WHERE sha256 = ?1")?
        .query_row([sha], |_| Ok(()))
        .optional()?
        .is_some())
}
