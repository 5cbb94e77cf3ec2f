//! The ledger's read side as the real worker serves it (ledger.md §2, §4, §5, §8): the three
//! forms of `GET /witness/<sha>`, the operator batch and the scheduled run (batch, then the
//! checkpoint rule), the stored entries of §4.3, `/ledger/<n>` in its raw / JSON / HTML forms,
//! `/ledger/<n>/ots`, `/ledger/head`, `/ledger/export.jsonl` and `/ledger`.
//!
//! Every text and hash comes from `crate::ledger` (batch and checkpoint texts, the chain, the
//! end marker): the emulator and the monitor share one implementation of the recipe, and the
//! tests check both against the spec's observed vectors through these routes. The head is
//! recomputed from the stored entries on every read, as the worker does; a cache of the heads
//! only saves the recomputation on appends, and every fault hook drops it.

use super::constants::*;
use super::{EmulatorError, Shared, json_resp, with_cors};
use crate::ledger::batch::{
    batch_text, batch_work, checkpoint_text, checkpoint_work, claim_sha256, linked_head,
};
use crate::ledger::chain::{self, ChainFields, ROOT};
use crate::ledger::wire::{BatchRow, CarriedHead, EntryText, ResponseRef, StoredRecord};
use crate::sandbox::{Body, Resp};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The largest batch (§4.2) and, in the oldest-first mode, the most batches of one scheduled
/// run.
const OLDEST_FIRST_MAX_BATCHES: usize = 5;
/// `pending_stale_after_hours` (§5.1).
const STALE_AFTER_HOURS: i64 = 6;
/// The routes the generic 404 lists (§1).
pub(super) const ROUTES: [&str; 5] = [
    "/ledger",
    "/ledger/head",
    "/ledger/export.jsonl",
    "/ledger/{n}",
    "/ledger/{n}/ots",
];

/// How the batch selects (§4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BatchOrder {
    /// @00d02cc7, observed: one batch of the 200 lowest shas per run.
    #[default]
    LowestSha,
    /// [newer] @ececf671: the oldest submissions first, up to 5 batches of 200 per scheduled run
    /// (the operator route still makes one).
    OldestFirst,
}

/// The emulator's ledger settings and fault state, kept in memory (a restart clears faults).
pub(super) struct LedgerCtl {
    pub operator_key: String,
    pub order: BatchOrder,
    /// Serve the ledger as it stood at this n (a rewound head, fault hook).
    pub rewind_to: Option<u64>,
    /// Reads of `/witness/<sha>` lag writes by this much (eventual consistency, fault hook).
    pub lag_ms: i64,
    /// head_1..head_n of the stored entries, while the chain is whole; `None` = recompute.
    heads: Option<Vec<String>>,
}

impl LedgerCtl {
    pub fn new(operator_key: String) -> Self {
        LedgerCtl {
            operator_key,
            order: BatchOrder::default(),
            rewind_to: None,
            lag_ms: 0,
            heads: None,
        }
    }

    /// Any change to stored entries other than an append.
    pub fn forget_heads(&mut self) {
        self.heads = None;
    }
}

/// The stored entry (§4.3), keys in the worker's order. `schema`, `created_at` and the stamp
/// fields are kept as any JSON value: the chain takes `schema` / `created_at` only when they
/// are strings (§6.1), which a fault hook may break on purpose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEntry {
    pub n: u64,
    pub work: String,
    pub claim_sha256: String,
    pub record_canonical: String,
    pub schema: Value,
    pub created_at: Value,
    pub ots_status: String,
    pub bitcoin_block: Value,
    pub block_time: Value,
    pub stamped_at: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchored_by: Option<String>,
}

impl StoredEntry {
    pub fn chain_fields(&self) -> ChainFields {
        ChainFields {
            n: self.n,
            claim_sha256: self.claim_sha256.clone(),
            schema: self.schema.as_str().map(str::to_owned),
            created_at: self.created_at.as_str().map(str::to_owned),
        }
    }

    fn new(n: u64, work: String, text: String, created_at: String, by: &str) -> Self {
        StoredEntry {
            n,
            work,
            claim_sha256: claim_sha256(&text),
            record_canonical: text,
            schema: json!(crate::ledger::ENTRY_SCHEMA),
            created_at: json!(created_at),
            ots_status: "unstamped".into(),
            bitcoin_block: Value::Null,
            block_time: Value::Null,
            stamped_at: Value::Null,
            anchored_by: Some(by.into()),
        }
    }
}

pub(super) fn parse_entry(text: &str) -> Result<StoredEntry, EmulatorError> {
    serde_json::from_str(text)
        .map_err(|e| EmulatorError::Corrupt(format!("a ledger entry is not readable: {e}")))
}

/// The chain over the entries a reader is served (1..=count, or fewer when rewound).
pub(super) struct ChainView {
    /// The served count.
    pub count: u64,
    /// head_1..head_k, k = count when whole, else the last linked entry.
    pub heads: Vec<String>,
    /// The first n that does not link (§6.1 step 2).
    pub broken_at: Option<u64>,
}

impl ChainView {
    pub fn head(&self) -> &str {
        self.heads.last().map_or(ROOT, String::as_str)
    }

    pub fn head_at(&self, n: u64) -> &str {
        if n == 0 {
            ROOT
        } else {
            &self.heads[n as usize - 1]
        }
    }
}

/// The stored chain, all of it (the batch's `ledger_head` and the checkpoint rule read this,
/// never the rewound view).
fn stored_chain(shared: &Shared, ctl: &mut LedgerCtl) -> Result<ChainView, EmulatorError> {
    let state = shared.state();
    let count = state.ledger_count()?;
    if let Some(heads) = &ctl.heads
        && heads.len() as u64 == count
    {
        return Ok(ChainView {
            count,
            heads: heads.clone(),
            broken_at: None,
        });
    }
    let mut heads: Vec<String> = Vec::with_capacity(count as usize);
    let mut broken_at = None;
    let mut expected = 1;
    for (n, text) in state.ledger_entries(1, count)? {
        let entry = parse_entry(&text)?;
        if n != expected || entry.n != n {
            broken_at = Some(expected);
            break;
        }
        let prev = heads.last().map_or(ROOT, String::as_str).to_owned();
        heads.push(chain::entry_sha256(&entry.chain_fields(), &prev));
        expected += 1;
    }
    if broken_at.is_none() && expected <= count {
        broken_at = Some(expected);
    }
    ctl.heads = broken_at.is_none().then(|| heads.clone());
    Ok(ChainView {
        count,
        heads,
        broken_at,
    })
}

/// The stored chain's count, last head and break, without copying the heads (the batch and
/// the checkpoint rule need only these).
pub(super) struct Tip {
    pub count: u64,
    pub head: String,
    pub broken_at: Option<u64>,
}

fn stored_tip(shared: &Shared, ctl: &mut LedgerCtl) -> Result<Tip, EmulatorError> {
    let count = shared.state().ledger_count()?;
    if let Some(heads) = &ctl.heads
        && heads.len() as u64 == count
    {
        return Ok(Tip {
            count,
            head: heads.last().map_or(ROOT, String::as_str).to_owned(),
            broken_at: None,
        });
    }
    let view = stored_chain(shared, ctl)?;
    Ok(Tip {
        count: view.count,
        head: view.head().to_owned(),
        broken_at: view.broken_at,
    })
}

/// What a reader is served: the stored chain, cut at the rewound n if a fault says so.
fn served_chain(shared: &Shared) -> Result<ChainView, EmulatorError> {
    let mut ctl = shared.ledger();
    let mut view = stored_chain(shared, &mut ctl)?;
    if let Some(k) = ctl.rewind_to
        && k < view.count
    {
        view.count = k;
        view.heads.truncate(k as usize);
        if view.broken_at.is_some_and(|b| b > k) {
            view.broken_at = None;
        }
    }
    Ok(view)
}

// ---------------------------------------------------------------------------------------------
// GET /witness/<sha> (§2)

/// The flat pending form: `status`, the stored object in its order, `responses`.
#[derive(Serialize)]
struct PendingForm<'a> {
    status: &'static str,
    #[serde(flatten)]
    record: &'a StoredRecord,
    responses: &'a [ResponseRef],
}

/// The nested anchored form: exactly six keys.
#[derive(Serialize)]
struct AnchoredForm<'a> {
    status: &'static str,
    sha: &'a str,
    ledger_entry: i64,
    url: String,
    record: &'a StoredRecord,
    responses: &'a [ResponseRef],
}

/// The stored object as the worker keeps it (§2.3 order); the emulator's state holds it as a
/// JSON object.
pub(super) fn stored_record(stored: &Value) -> Result<StoredRecord, EmulatorError> {
    serde_json::from_value(stored.clone())
        .map_err(|e| EmulatorError::Corrupt(format!("a stored record is not readable: {e}")))
}

pub(super) fn witness(shared: &Shared, origin: &str, sha: &str) -> Result<Resp, EmulatorError> {
    let sha = sha.to_ascii_lowercase();
    let not_found = || json_resp(404, &json!({"error": ERR_NOT_FOUND, "sha": sha}));
    let lag_ms = shared.ledger().lag_ms;
    let (found, times, replies) = {
        let state = shared.state();
        (
            state.stored(&sha)?,
            state.record_times(&sha)?,
            state.responses(&sha)?,
        )
    };
    let Some((stored, status)) = found else {
        return Ok(not_found());
    };
    let responses: Vec<ResponseRef> = replies
        .into_iter()
        .map(|(response_sha, subject_origin, responded_at)| ResponseRef {
            url: format!("{origin}/response/{response_sha}"),
            response_sha,
            subject_origin,
            responded_at,
        })
        .collect();
    let record = stored_record(&stored)?;
    let now = shared.now_ms();
    // Delayed visibility: a read inside the lag sees the state before the write.
    let (stored_ms, anchored_ms) = times;
    if lag_ms > 0 && stored_ms.is_some_and(|t| now < t + lag_ms) {
        return Ok(not_found());
    }
    let lagging_anchor = lag_ms > 0 && anchored_ms.is_some_and(|t| now < t + lag_ms);
    // Anchored wins (a stale pending key does not change this answer).
    match status {
        super::RecordStatus::Anchored { ledger_entry } if !lagging_anchor => Ok(json_resp(
            200,
            &AnchoredForm {
                status: STATUS_ANCHORED,
                sha: &sha,
                ledger_entry,
                url: format!("{origin}/ledger/{ledger_entry}"),
                record: &record,
                responses: &responses,
            },
        )),
        _ => Ok(json_resp(
            200,
            &PendingForm {
                status: STATUS_PENDING,
                record: &record,
                responses: &responses,
            },
        )),
    }
}

// ---------------------------------------------------------------------------------------------
// The batch and the scheduled run (§4)

/// What one batch did.
#[derive(Debug, Clone)]
pub enum BatchOutcome {
    /// The pool was empty.
    Empty,
    /// Every selected key was already anchored; their pending keys were removed.
    Healed(usize),
    /// The text equals entry n's.
    Dedup(u64),
    Appended(super::AnchoredBatch),
}

/// One witness batch (§4.2–§4.4) by `trigger` (`"operator"` or `"schedule"`).
pub(super) fn run_batch(shared: &Shared, trigger: &str) -> Result<BatchOutcome, EmulatorError> {
    let mut ctl = shared.ledger();
    let oldest_first = ctl.order == BatchOrder::OldestFirst;
    let batch_max = shared.limits.batch_max;
    let keys = shared.state().pending_keys(batch_max, oldest_first)?;
    if keys.is_empty() {
        return Ok(BatchOutcome::Empty);
    }
    let (anchored, fresh): (Vec<_>, Vec<_>) = keys.into_iter().partition(|(_, _, a)| *a);
    let healed: Vec<String> = anchored.into_iter().map(|(sha, _, _)| sha).collect();
    shared.state().heal(&healed)?;
    if fresh.is_empty() {
        return Ok(BatchOutcome::Healed(healed.len()));
    }
    let mut records = fresh
        .iter()
        .map(|(_, stored, _)| stored_record(stored))
        .collect::<Result<Vec<_>, _>>()?;
    records.sort_by(|a, b| a.sha.cmp(&b.sha));
    let rows: Vec<BatchRow> = records.iter().map(BatchRow::of).collect();
    let view = stored_tip(shared, &mut ctl)?;
    let carried = carried_head(&view);
    let anchored_at = shared.now_iso();
    let text = batch_text(&anchored_at, &carried, &rows);
    let claim = claim_sha256(&text);
    if let Some(n) = shared.state().entry_with_claim(&claim)? {
        return Ok(BatchOutcome::Dedup(n));
    }
    let n = view.count + 1;
    let entry = StoredEntry::new(n, batch_work(rows.len()), text, shared.now_iso(), trigger);
    let shas: Vec<String> = rows.iter().map(|r| r.sha.clone()).collect();
    append(shared, &mut ctl, &view, &entry, &shas)?;
    Ok(BatchOutcome::Appended(super::AnchoredBatch {
        ledger_entry: n as i64,
        count: shas.len(),
        record_canonical: entry.record_canonical,
        shas,
    }))
}

/// The head written into a batch: (N, head_N) with N the count, or the broken form.
fn carried_head(view: &Tip) -> CarriedHead {
    match view.broken_at {
        None => linked_head(view.count, &view.head, false),
        Some(at) => CarriedHead::Broken {
            chain: crate::ledger::CHAIN.into(),
            broken_at: at,
            last_linked: at - 1,
        },
    }
}

/// Appends `entry` (n = count + 1) and keeps the head cache in step.
fn append(
    shared: &Shared,
    ctl: &mut LedgerCtl,
    view: &Tip,
    entry: &StoredEntry,
    anchored: &[String],
) -> Result<(), EmulatorError> {
    let text = serde_json::to_string(entry).expect("an entry serialises");
    shared.state().append_entry(
        entry.n,
        &text,
        &entry.claim_sha256,
        anchored,
        shared.now_ms(),
    )?;
    match (&mut ctl.heads, view.broken_at) {
        (Some(heads), None) if heads.len() as u64 == view.count => {
            heads.push(chain::entry_sha256(&entry.chain_fields(), &view.head));
        }
        _ => ctl.heads = None,
    }
    Ok(())
}

/// Appends an entry as given, n = count + 1 (test hook: an observed ledger's entries whose
/// bytes the spec does not print). Returns its n.
pub(super) fn import_entry(
    shared: &Shared,
    claim_sha256: &str,
    schema: Value,
    created_at: Value,
    text: &str,
) -> Result<u64, EmulatorError> {
    let mut ctl = shared.ledger();
    let view = stored_tip(shared, &mut ctl)?;
    let mut entry = StoredEntry::new(
        view.count + 1,
        "imported entry".into(),
        text.into(),
        String::new(),
        "operator",
    );
    entry.claim_sha256 = claim_sha256.into();
    entry.schema = schema;
    entry.created_at = created_at;
    append(shared, &mut ctl, &view, &entry, &[])?;
    Ok(entry.n)
}

/// What a scheduled run did.
#[derive(Debug, Clone)]
pub struct ScheduledRun {
    pub batches: Vec<BatchOutcome>,
    /// n of the checkpoint written, if any.
    pub checkpoint: Option<u64>,
}

/// The scheduled run (§4.1): the witness batch (up to 5 in the oldest-first mode), then the
/// head checkpoint rule of §4.5.
pub(super) fn scheduled_run(shared: &Shared) -> Result<ScheduledRun, EmulatorError> {
    let rounds = match shared.ledger().order {
        BatchOrder::LowestSha => 1,
        BatchOrder::OldestFirst => OLDEST_FIRST_MAX_BATCHES,
    };
    let mut batches = Vec::new();
    for _ in 0..rounds {
        let outcome = run_batch(shared, "schedule")?;
        let more = matches!(outcome, BatchOutcome::Appended(_));
        batches.push(outcome);
        if !more {
            break;
        }
    }
    Ok(ScheduledRun {
        batches,
        checkpoint: checkpoint(shared)?,
    })
}

/// §4.5: after the pools, if the ledger is non-empty, its chain whole and its last entry not
/// already a checkpoint, one checkpoint entry over entries 1..N.
fn checkpoint(shared: &Shared) -> Result<Option<u64>, EmulatorError> {
    let mut ctl = shared.ledger();
    let view = stored_tip(shared, &mut ctl)?;
    if view.count == 0 || view.broken_at.is_some() {
        return Ok(None);
    }
    let last = shared
        .state()
        .ledger_entry(view.count)?
        .map(|(text, _)| parse_entry(&text))
        .transpose()?;
    if let Some(last) = last
        && matches!(
            EntryText::parse(last.record_canonical.as_bytes()),
            Ok(EntryText::Checkpoint(_))
        )
    {
        return Ok(None);
    }
    let text = checkpoint_text(&shared.now_iso(), view.count, &view.head);
    let n = view.count + 1;
    let entry = StoredEntry::new(
        n,
        checkpoint_work(view.count),
        text,
        shared.now_iso(),
        "schedule",
    );
    append(shared, &mut ctl, &view, &entry, &[])?;
    Ok(Some(n))
}

/// `POST /witness/anchor` (§4.1): the operator's batch behind `x-ledger-key`.
pub(super) fn anchor_route(
    shared: &Shared,
    origin: &str,
    key: Option<&str>,
) -> Result<Resp, EmulatorError> {
    if !shared.operator_key_matches(key) {
        return Ok(json_resp(401, &json!({"error": "unauthorized"})));
    }
    Ok(match run_batch(shared, "operator")? {
        BatchOutcome::Empty => json_resp(
            200,
            &Ordered(vec![
                ("ok", json!(true)),
                ("anchored", json!(0)),
                ("note", json!("pool is empty")),
            ]),
        ),
        BatchOutcome::Healed(k) => json_resp(
            200,
            &Ordered(vec![
                ("ok", json!(true)),
                ("anchored", json!(0)),
                ("healed", json!(k)),
                (
                    "note",
                    json!(
                        "pool held only records already anchored; their pending keys were removed"
                    ),
                ),
            ]),
        ),
        BatchOutcome::Dedup(n) => json_resp(
            200,
            &Ordered(vec![
                ("n", json!(n)),
                ("url", json!(format!("{origin}/ledger/{n}"))),
                ("dedup", json!(true)),
            ]),
        ),
        BatchOutcome::Appended(batch) => json_resp(
            201,
            &Ordered(vec![
                ("n", json!(batch.ledger_entry)),
                (
                    "url",
                    json!(format!("{origin}/ledger/{}", batch.ledger_entry)),
                ),
                ("anchored", json!(batch.count)),
                ("trigger", json!("operator")),
                (
                    "note",
                    json!(
                        "the batch anchor covers every record listed in it; the Bitcoin stamp follows on the operator's stamping run"
                    ),
                ),
            ]),
        ),
    })
}

/// A JSON object whose keys keep the order given (the crate's `Value` sorts them).
pub(super) struct Ordered(pub Vec<(&'static str, Value)>);

impl Serialize for Ordered {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

// ---------------------------------------------------------------------------------------------
// The ledger's routes (§5)

fn no_store(resp: Resp) -> Resp {
    resp.with_header("cache-control", "no-store")
}

/// `GET /ledger/head` (§5.2).
pub(super) fn head(shared: &Shared, origin: &str) -> Result<Resp, EmulatorError> {
    let view = served_chain(shared)?;
    if let Some(at) = view.broken_at {
        return Ok(no_store(json_resp(
            409,
            &Ordered(vec![
                ("schema", json!(crate::ledger::HEAD_SCHEMA)),
                ("chain", json!(crate::ledger::CHAIN)),
                ("error", json!("chain_broken")),
                ("broken_at", json!(at)),
                ("last_linked", json!(at - 1)),
                ("head_before_break", json!(view.head_at(at - 1))),
            ]),
        )));
    }
    let head = view.head();
    Ok(no_store(json_resp(
        200,
        &Ordered(vec![
            ("schema", json!(crate::ledger::HEAD_SCHEMA)),
            ("n", json!(view.count)),
            ("head", json!(head)),
            ("root", json!(ROOT)),
            ("chain", json!(crate::ledger::CHAIN)),
            ("prev_entry_sha256", json!(head)),
            (
                "entry_sha256",
                json!(chain::marker_sha256(view.count, head)),
            ),
            (
                "recipe",
                json!(
                    "entry_sha256 = sha256(canon({n, schema, claim_sha256, created_at, prev_entry_sha256})); canon = JSON with sorted keys, no whitespace, ensure_ascii; schema and created_at only when strings; prev_entry_sha256 of entry 1 is root"
                ),
            ),
            (
                "fields",
                json!([
                    "n",
                    "schema",
                    "claim_sha256",
                    "created_at",
                    "prev_entry_sha256"
                ]),
            ),
            (
                "marker_recipe",
                json!(
                    "marker entry_sha256 = sha256(canon({n, schema: \"jidec-head-v1\", prev_entry_sha256: head, head})), the same canon"
                ),
            ),
            (
                "marker_fields",
                json!(["n", "schema", "prev_entry_sha256", "head"]),
            ),
            ("export", json!(format!("{origin}/ledger/export.jsonl"))),
            (
                "anchored_in",
                json!(
                    "the head as it stood is written into each daily nenrin-witness-batch-v1 entry (ledger_head) and into each nenrin-head-checkpoint-v1 entry with its end marker"
                ),
            ),
            (
                "does_not_establish",
                json!([
                    "that every submission the ledger received was appended; the chain covers what was appended",
                    "that the head served now equals a head you did not obtain independently; hold one, or read one from a stamped batch"
                ]),
            ),
        ]),
    )))
}

/// An export row (§5.3): `schema` / `created_at` only when strings.
#[derive(Serialize)]
struct ExportRowOut<'a> {
    n: u64,
    claim_sha256: &'a str,
    prev_entry_sha256: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    schema: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    created_at: Option<&'a str>,
    entry_sha256: &'a str,
}

/// `GET /ledger/export.jsonl` (§5.3).
pub(super) fn export(shared: &Shared) -> Result<Resp, EmulatorError> {
    let view = served_chain(shared)?;
    let linked = view.heads.len() as u64;
    let entries = shared.state().ledger_entries(1, linked)?;
    let mut out = String::with_capacity(entries.len() * 280 + 400);
    for (n, text) in &entries {
        let e = parse_entry(text)?;
        let row = ExportRowOut {
            n: *n,
            claim_sha256: &e.claim_sha256,
            prev_entry_sha256: view.head_at(n - 1),
            schema: e.schema.as_str(),
            created_at: e.created_at.as_str(),
            entry_sha256: view.head_at(*n),
        };
        out.push_str(&serde_json::to_string(&row).expect("a row serialises"));
        out.push('\n');
    }
    let end = match view.broken_at {
        Some(at) => serde_json::to_string(&Ordered(vec![
            ("schema", json!("jidec-chain-broken-v1")),
            ("broken_at", json!(at)),
            ("last_linked", json!(at - 1)),
        ])),
        None => {
            let head = view.head();
            serde_json::to_string(&crate::ledger::wire::Head {
                schema: crate::ledger::HEAD_SCHEMA.into(),
                n: view.count,
                head: head.into(),
                root: ROOT.into(),
                chain: crate::ledger::CHAIN.into(),
                prev_entry_sha256: head.into(),
                entry_sha256: chain::marker_sha256(view.count, head),
            })
        }
    }
    .expect("the end line serialises");
    out.push_str(&end);
    out.push('\n');
    Ok(no_store(with_cors(Resp::bytes(
        200,
        "application/x-ndjson; charset=utf-8",
        out,
    ))))
}

/// An entry as its JSON view shows it: the stored entry plus `pending_*` until confirmed.
#[derive(Serialize)]
struct EntryView<'a> {
    #[serde(flatten)]
    entry: &'a StoredEntry,
    #[serde(skip_serializing_if = "Option::is_none")]
    pending_stage: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pending_hours: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pending_stale_after_hours: Option<i64>,
}

/// (`pending_stage`, `pending_hours`) while not confirmed: hours since `stamped_at`, else
/// `created_at`.
fn pending_of(entry: &StoredEntry, now: DateTime<Utc>) -> Option<(&'static str, i64)> {
    if entry.ots_status == "confirmed" {
        return None;
    }
    let since = entry
        .stamped_at
        .as_str()
        .or(entry.created_at.as_str())
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok());
    let hours = since.map_or(0, |t| (now - t.with_timezone(&Utc)).num_hours().max(0));
    Some((
        if hours >= STALE_AFTER_HOURS {
            "stale"
        } else {
            "fresh"
        },
        hours,
    ))
}

/// A served entry and its proof, if stamped.
type ServedEntry = (StoredEntry, Option<Vec<u8>>);

/// The entry served at n, if any (a rewound ledger serves none past its n).
fn served_entry(shared: &Shared, n: u64) -> Result<Option<ServedEntry>, EmulatorError> {
    if shared.ledger().rewind_to.is_some_and(|k| n > k) {
        return Ok(None);
    }
    shared
        .state()
        .ledger_entry(n)?
        .map(|(text, proof)| Ok((parse_entry(&text)?, proof)))
        .transpose()
}

/// `/ledger/<n>` (§5.1): `?format=raw`, `?format=json` or `Accept: application/json`, else the
/// HTML receipt.
pub(super) fn entry(
    shared: &Shared,
    n: &str,
    query: &str,
    accept: Option<&str>,
) -> Result<Resp, EmulatorError> {
    let Some((entry, _)) = n
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .map(|n| served_entry(shared, n))
        .transpose()?
        .flatten()
    else {
        return Ok(no_store(json_resp(404, &json!({"error": ERR_NOT_FOUND}))));
    };
    let format = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("format="))
        .unwrap_or("");
    if format == "raw" {
        return Ok(no_store(with_cors(Resp::bytes(
            200,
            "text/plain; charset=utf-8",
            entry.record_canonical.into_bytes(),
        ))));
    }
    let wants_json = format == "json" || accept.is_some_and(|a| a.contains("application/json"));
    if wants_json {
        let pending = pending_of(&entry, shared.clock.now());
        let view = EntryView {
            entry: &entry,
            pending_stage: pending.map(|p| p.0),
            pending_hours: pending.map(|p| p.1),
            pending_stale_after_hours: pending.map(|_| STALE_AFTER_HOURS),
        };
        return Ok(no_store(json_resp(200, &view)).with_header("vary", "Accept"));
    }
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>ledger entry {n}</title></head><body><h1>JIDEC ledger entry {n}</h1><p>{work}</p><p>claim_sha256 <code>{claim}</code></p><p>ots_status {ots}</p><p>raw bytes: <a href=\"?format=raw\">?format=raw</a>; JSON: <a href=\"?format=json\">?format=json</a></p></body></html>",
        n = entry.n,
        work = html_escape(&entry.work),
        claim = entry.claim_sha256,
        ots = html_escape(&entry.ots_status),
    );
    Ok(no_store(with_cors(Resp::bytes(
        200,
        "text/html; charset=utf-8",
        html,
    )))
    .with_header("vary", "Accept"))
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `GET /ledger/<n>/ots` (§5.1): the proof once stamped.
pub(super) fn ots(shared: &Shared, n: &str) -> Result<Resp, EmulatorError> {
    let found = n
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .map(|n| served_entry(shared, n))
        .transpose()?
        .flatten();
    Ok(no_store(match found {
        None => json_resp(404, &json!({"error": ERR_NOT_FOUND})),
        Some((entry, Some(proof))) => with_cors(Resp {
            status: 200,
            headers: vec![
                (
                    "content-type".into(),
                    "application/vnd.opentimestamps.proof".into(),
                ),
                (
                    "content-disposition".into(),
                    format!("attachment; filename=\"claim_{}.txt.ots\"", entry.n),
                ),
            ],
            body: Body::Bytes(proof),
        }),
        Some((entry, None)) => json_resp(
            404,
            &Ordered(vec![
                ("error", json!("proof not yet available")),
                ("ots_status", json!(entry.ots_status)),
            ]),
        ),
    }))
}

/// `GET /ledger` (§5.4): newest first, at most 100.
pub(super) fn list(shared: &Shared, origin: &str) -> Result<Resp, EmulatorError> {
    let view = served_chain(shared)?;
    let from = view.count.saturating_sub(99).max(1);
    let rows = shared.state().ledger_entries(from, view.count)?;
    let now = shared.clock.now();
    let mut entries = Vec::with_capacity(rows.len());
    for (n, text) in rows.iter().rev() {
        let e = parse_entry(text)?;
        let pending = pending_of(&e, now);
        entries.push(Ordered(vec![
            ("n", json!(n)),
            ("work", json!(e.work)),
            ("claim_sha256", json!(e.claim_sha256)),
            ("ots_status", json!(e.ots_status)),
            ("pending_stage", json!(pending.map(|p| p.0))),
            ("pending_hours", json!(pending.map(|p| p.1))),
            ("bitcoin_block", e.bitcoin_block.clone()),
            ("url", json!(format!("{origin}/ledger/{n}"))),
        ]));
    }
    #[derive(Serialize)]
    struct Listing {
        ledger: &'static str,
        anchor: &'static str,
        count: u64,
        entries: Vec<Ordered>,
    }
    Ok(no_store(json_resp(
        200,
        &Listing {
            ledger: "JIDEC",
            anchor: "Bitcoin via OpenTimestamps",
            count: view.count,
            entries,
        },
    )))
}
