//! Test hooks and the fault hooks of ledger.md §8 item 7: make the emulated ledger lie, stall
//! or lag in each way a monitor must notice. In-process tests call them as methods of
//! [`super::RunningEmulator`]; a CLI-run emulator (`conduct-walker intake-emulator`) takes them
//! at `POST /emulator/hooks` behind the operator's `x-ledger-key`. That route is the
//! emulator's own: the real worker has nothing like it.

use super::ledger::{self, StoredEntry, parse_entry};
use super::{EmulatorError, Shared, json_resp};
use crate::ledger::batch::{batch_text, checkpoint_text, claim_sha256, linked_head};
use crate::ledger::chain::{self, ROOT};
use crate::ledger::wire::{EntryText, StoredRecord};
use crate::sandbox::Resp;
use serde::Deserialize;
use serde_json::{Value, json};

/// The stamp fields the operator's stamping run sets (§4.3), and the proof it stores. None of
/// these is hashed anywhere.
#[derive(Debug, Clone, Default)]
pub struct Stamp {
    pub ots_status: String,
    pub bitcoin_block: Option<u64>,
    pub block_time: Option<String>,
    pub stamped_at: Option<String>,
    /// The proof served at `/ledger/<n>/ots`.
    pub proof: Option<Vec<u8>>,
}

/// One hook call, as `POST /emulator/hooks` takes it: `{"hook": <name>, ...arguments}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "hook", rename_all = "snake_case")]
pub enum Hook {
    /// The scheduled run (§4.1): batch, then the checkpoint rule (§4.5).
    ScheduledRun,
    /// §4.2: `true` for the [newer] oldest-first selection.
    OldestFirst { on: bool },
    /// Attach a reply element to a record's `responses` (§2.4).
    AttachResponse {
        sha: String,
        response_sha: String,
        subject_origin: String,
        responded_at: String,
    },
    /// Replace entry n's bytes; with `update_claim` its `claim_sha256` follows (a consistent
    /// rewrite that changes the chain), else the bytes no longer hash to the claim.
    RewriteBytes {
        n: u64,
        text: String,
        #[serde(default)]
        update_claim: bool,
    },
    /// Replace entry n's `created_at` (any JSON value).
    RewriteCreatedAt { n: u64, created_at: Value },
    /// Remove entry n: `/ledger/head` answers 409, the export ends with the broken line.
    DropEntry { n: u64 },
    /// Serve the ledger as it stood at n (`null` to stop).
    RewindHead { n: Option<u64> },
    /// Rewrite entries n.. into a self-consistent other history (new times, new texts with
    /// the new heads carried): every stateless check passes; only a held head sees it.
    ForkFrom { n: u64 },
    /// Leave an anchored record's pending key in place (anchored must still win).
    StalePending { sha: String },
    /// Set the stamp fields of entry n and its proof (`proof_b64`).
    Stamp {
        n: u64,
        ots_status: String,
        #[serde(default)]
        bitcoin_block: Option<u64>,
        #[serde(default)]
        block_time: Option<String>,
        #[serde(default)]
        stamped_at: Option<String>,
        #[serde(default)]
        proof_b64: Option<String>,
    },
    /// `/witness/<sha>` reads lag writes by this many milliseconds (0 to stop).
    DelayVisibility { ms: i64 },
    /// Stop every served fault that is not a rewrite of stored data (rewind, lag).
    Clear,
}

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Emulator(#[from] EmulatorError),
}

fn refused(why: impl Into<String>) -> HookError {
    HookError::Refused(why.into())
}

fn stored_entry(shared: &Shared, n: u64) -> Result<StoredEntry, HookError> {
    let (text, _) = shared
        .state()
        .ledger_entry(n)?
        .ok_or_else(|| refused(format!("no ledger entry {n}")))?;
    Ok(parse_entry(&text)?)
}

fn put(shared: &Shared, entry: &StoredEntry) -> Result<(), HookError> {
    let text = serde_json::to_string(entry).expect("an entry serialises");
    shared
        .state()
        .put_entry(entry.n, &text, &entry.claim_sha256)?;
    shared.ledger().forget_heads();
    Ok(())
}

/// Runs one hook; the answer is what the HTTP route returns as JSON.
pub(super) fn run(shared: &Shared, hook: Hook) -> Result<Value, HookError> {
    match hook {
        Hook::ScheduledRun => {
            let run = ledger::scheduled_run(shared)?;
            let appended: Vec<i64> = run
                .batches
                .iter()
                .filter_map(|b| match b {
                    ledger::BatchOutcome::Appended(a) => Some(a.ledger_entry),
                    _ => None,
                })
                .collect();
            Ok(json!({"batches": appended, "checkpoint": run.checkpoint}))
        }
        Hook::OldestFirst { on } => {
            shared.ledger().order = if on {
                ledger::BatchOrder::OldestFirst
            } else {
                ledger::BatchOrder::LowestSha
            };
            Ok(json!({"oldest_first": on}))
        }
        Hook::AttachResponse {
            sha,
            response_sha,
            subject_origin,
            responded_at,
        } => {
            let sha = sha.to_ascii_lowercase();
            if shared.state().status(&sha)?.is_none() {
                return Err(refused(format!("no stored record {sha}")));
            }
            shared
                .state()
                .add_response(&sha, &response_sha, &subject_origin, &responded_at)?;
            Ok(json!({"attached": response_sha}))
        }
        Hook::RewriteBytes {
            n,
            text,
            update_claim,
        } => {
            let mut e = stored_entry(shared, n)?;
            if update_claim {
                e.claim_sha256 = claim_sha256(&text);
            }
            e.record_canonical = text;
            put(shared, &e)?;
            Ok(json!({"n": n, "claim_sha256": e.claim_sha256}))
        }
        Hook::RewriteCreatedAt { n, created_at } => {
            let mut e = stored_entry(shared, n)?;
            e.created_at = created_at;
            put(shared, &e)?;
            Ok(json!({"n": n}))
        }
        Hook::DropEntry { n } => {
            if !shared.state().delete_entry(n)? {
                return Err(refused(format!("no ledger entry {n}")));
            }
            shared.ledger().forget_heads();
            Ok(json!({"dropped": n}))
        }
        Hook::RewindHead { n } => {
            shared.ledger().rewind_to = n;
            Ok(json!({"rewind_to": n}))
        }
        Hook::ForkFrom { n } => fork_from(shared, n),
        Hook::StalePending { sha } => {
            if !shared
                .state()
                .set_stale_pending(&sha.to_ascii_lowercase())?
            {
                return Err(refused(format!("{sha} is not an anchored record")));
            }
            Ok(json!({"stale_pending": sha}))
        }
        Hook::Stamp {
            n,
            ots_status,
            bitcoin_block,
            block_time,
            stamped_at,
            proof_b64,
        } => {
            use base64::Engine;
            let proof = proof_b64
                .map(|b| base64::engine::general_purpose::STANDARD.decode(b))
                .transpose()
                .map_err(|e| refused(format!("proof_b64 is not base64: {e}")))?;
            stamp(
                shared,
                n,
                Stamp {
                    ots_status,
                    bitcoin_block,
                    block_time,
                    stamped_at,
                    proof,
                },
            )?;
            Ok(json!({"n": n}))
        }
        Hook::DelayVisibility { ms } => {
            shared.ledger().lag_ms = ms.max(0);
            Ok(json!({"lag_ms": ms.max(0)}))
        }
        Hook::Clear => {
            let mut ctl = shared.ledger();
            ctl.rewind_to = None;
            ctl.lag_ms = 0;
            Ok(json!({"cleared": true}))
        }
    }
}

pub(super) fn stamp(shared: &Shared, n: u64, s: Stamp) -> Result<(), HookError> {
    let mut e = stored_entry(shared, n)?;
    e.ots_status = s.ots_status;
    e.bitcoin_block = json!(s.bitcoin_block);
    e.block_time = json!(s.block_time);
    e.stamped_at = json!(s.stamped_at);
    put(shared, &e)?;
    shared.state().set_proof(n, s.proof.as_deref())?;
    Ok(())
}

/// Rebuilds entries n..=count as another history: each batch or checkpoint text gets a new
/// time and the new head before it, so texts, claims, carried heads, the export and the head
/// all agree with one another, and only someone holding an old head can tell.
fn fork_from(shared: &Shared, from: u64) -> Result<Value, HookError> {
    let count = shared.state().ledger_count()?;
    if from == 0 || from > count {
        return Err(refused(format!("no ledger entry {from}")));
    }
    let mut prev = ROOT.to_owned();
    for n in 1..from {
        prev = chain::entry_sha256(&stored_entry(shared, n)?.chain_fields(), &prev);
    }
    let base = shared.clock.now() + chrono::Duration::seconds(1);
    for n in from..=count {
        let mut e = stored_entry(shared, n)?;
        let at = crate::clock::utc_millis(base + chrono::Duration::milliseconds((n - from) as i64));
        let text = match EntryText::parse(e.record_canonical.as_bytes()) {
            Ok(EntryText::Batch(b)) => Some(batch_text(
                &at,
                &linked_head(n - 1, &prev, false),
                &b.records,
            )),
            Ok(EntryText::Checkpoint(_)) => Some(checkpoint_text(&at, n - 1, &prev)),
            _ => None,
        };
        if let Some(text) = text {
            e.claim_sha256 = claim_sha256(&text);
            e.record_canonical = text;
        }
        e.created_at = json!(at);
        put(shared, &e)?;
        prev = chain::entry_sha256(&e.chain_fields(), &prev);
    }
    Ok(json!({"forked_from": from, "head": prev}))
}

/// Stores a record object as given, pending (test hook; its sha is taken as given).
pub(super) fn insert_stored(shared: &Shared, record: &StoredRecord) -> Result<(), HookError> {
    let value = serde_json::to_value(record).expect("a stored record serialises");
    shared
        .state()
        .insert_stored(&record.sha, &value, shared.now_ms())?;
    Ok(())
}

/// `POST /emulator/hooks` (emulator only): the operator key, then one hook.
pub(super) fn route(
    shared: &Shared,
    key: Option<&str>,
    body: &[u8],
) -> Result<Resp, EmulatorError> {
    if !shared.operator_key_matches(key) {
        return Ok(json_resp(401, &json!({"error": "unauthorized"})));
    }
    let hook: Hook = match serde_json::from_slice(body) {
        Ok(h) => h,
        Err(e) => {
            return Ok(json_resp(
                400,
                &json!({"error": "bad hook", "why": e.to_string()}),
            ));
        }
    };
    match run(shared, hook) {
        Ok(answer) => Ok(json_resp(200, &answer)),
        Err(HookError::Refused(why)) => Ok(json_resp(409, &json!({"error": why}))),
        Err(HookError::Emulator(e)) => Err(e),
    }
}
