//! One audit of a ledger export (ledger.md §7 steps 4–5), pure: the fold that `ledger verify`
//! and the follower's chain step both run. The shells read `/ledger/head`, stream
//! `/ledger/export.jsonl` into [`Audit::on_line`] and fetch only what it answers it [`Need`]s;
//! [`Audit::finish`] gives the findings, the head to hold and the recomputed heads.
//!
//! Two ways to start it:
//! - [`Audit::full`] (`ledger verify`): from the root; every entry's bytes are fetched and
//!   checked (claim, batch count, the `ledger_head` it carries); a head held from an earlier
//!   run must still be in the chain (never rewound, never forked).
//! - [`Audit::extend`] (the follower): from the head held; rows at or before it are compared
//!   with what is held of them, the new rows are linked one by one (their bytes are read later,
//!   as the read budget allows) and kept, at most `max_new_rows`.
//!
//! Memory: one 64-character head per new entry (the carried `ledger_head`s may name any of
//! them), the rows still waiting for their bytes, and in `extend` the new rows' chain fields.

use super::chain::ChainFields;
use super::check::{self, ChainFinding, Extender, HeldHead, NewEntry, SeenEntry};
use super::wire::{CarriedHead, EntryText, ExportLine, ExportRow, Head, HeadAnswer};
use crate::digest::sha256_hex;
use serde::Serialize;
use std::collections::VecDeque;

/// A finding of the audit: the chain's own ([`ChainFinding`]) or one about what the ledger
/// served around it. Each has a name (`finding` in JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum AuditFinding {
    Chain(ChainFinding),
    Served(ServedFinding),
}

impl AuditFinding {
    pub fn name(&self) -> &'static str {
        match self {
            AuditFinding::Chain(f) => f.name(),
            AuditFinding::Served(f) => f.name(),
        }
    }
}

/// What the ledger served that is not an answer of its route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "finding")]
pub enum ServedFinding {
    /// The export lists entry n, `/ledger/<n>?format=raw` answers 404.
    #[serde(rename = "entry_missing")]
    EntryMissing { n: u64 },
    /// Entry n's bytes (or its answer) do not read.
    #[serde(rename = "entry_unreadable")]
    EntryUnreadable { n: u64, detail: String },
    /// A batch whose `count` is not its number of rows (§4.4).
    #[serde(rename = "batch_count_differs")]
    BatchCountDiffers { n: u64, count: u64, rows: usize },
    /// An export line that is not a row, an end line or a broken line.
    #[serde(rename = "export_line_unreadable")]
    ExportLineUnreadable { line: u64, detail: String },
    /// The export ended without its end line (or went on after it).
    #[serde(rename = "export_end_missing")]
    ExportEndMissing { lines: u64, detail: String },
    /// `/ledger/head` or the export answered something that is not their answer.
    #[serde(rename = "answer_unreadable")]
    AnswerUnreadable { detail: String },
}

impl ServedFinding {
    pub fn name(&self) -> &'static str {
        match self {
            ServedFinding::EntryMissing { .. } => "entry_missing",
            ServedFinding::EntryUnreadable { .. } => "entry_unreadable",
            ServedFinding::BatchCountDiffers { .. } => "batch_count_differs",
            ServedFinding::ExportLineUnreadable { .. } => "export_line_unreadable",
            ServedFinding::ExportEndMissing { .. } => "export_end_missing",
            ServedFinding::AnswerUnreadable { .. } => "answer_unreadable",
        }
    }
}

/// What the audit needs before it can judge the line it was just fed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Nothing: feed the next line.
    Nothing,
    /// Entry n's bytes (`/ledger/<n>?format=raw`): answer with [`Audit::on_entry`], in any
    /// order, any time before [`Audit::finish`] (later lines may be fed meanwhile).
    EntryBytes(u64),
    /// What is held of entry n (its claim, its bytes' hash): answer with [`Audit::on_held`]
    /// before the next line.
    HeldEntry(u64),
    /// Stop reading the export: nothing after this line is judged.
    Stop,
}

/// The answer to [`Need::EntryBytes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    Bytes(Vec<u8>),
    /// 404.
    Missing,
    /// Served, but not an answer of the route (the detail says what).
    Unreadable(String),
}

/// Why the export was not read to its end (the findings after the cut judge only what was
/// read; the follower keeps nothing of such a read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cut {
    /// Line `line` does not read.
    UnreadableLine { line: u64, detail: String },
    /// More new rows than `max_new_rows`: a hostile export cannot grow memory without bound.
    TooManyRows { max_new_rows: usize },
}

/// What the entries' bytes were.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Entries whose bytes were asked for (read, missing or not).
    pub entries: u64,
    pub batches: u64,
    pub checkpoints: u64,
    pub other_entries: u64,
    pub records_listed: u64,
}

/// The outcome of [`Audit::finish`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audited {
    /// In the order the export showed them; the chain's comparisons with the served head last.
    pub findings: Vec<AuditFinding>,
    /// The served head, when nothing was found and the export was read whole.
    pub hold: Option<HeldHead>,
    /// The recomputed heads of the entries linked (from the root or past the held head).
    pub heads: Vec<HeldHead>,
    /// [`Audit::extend`]: the new rows' chain fields, in order (`heads[i]` is `rows[i]`'s).
    pub rows: Vec<ChainFields>,
    pub tally: Tally,
    pub cut: Option<Cut>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    /// From the root, every entry's bytes; `held` must still be in the chain.
    Full { held: Option<HeldHead> },
    /// From the held head (`held`: one was held, not the root by default).
    Extend { held: bool, max_new_rows: usize },
}

/// What one entry's bytes said, kept (instead of the bytes) until its row's turn.
#[derive(Debug, Clone, PartialEq, Eq)]
struct EntryFacts {
    raw_sha256: Option<String>,
    carried: Option<CarriedHead>,
    tally: Tally,
    findings: Vec<ServedFinding>,
}

/// A line's judgement, in export order: a row may wait for its bytes, and what follows it waits
/// with it, so the findings come in line order however many fetches are in flight.
#[derive(Debug)]
enum Step {
    /// Boxed: a row and its facts are most of a step's size, and few wait at once.
    Row(Box<(ExportRow, Option<EntryFacts>)>),
    Broken {
        broken_at: u64,
        last_linked: u64,
    },
    Served(ServedFinding),
}

/// The fold (module docs).
pub struct Audit {
    mode: Mode,
    from: HeldHead,
    served: HeadAnswer,
    extender: Extender,
    waiting: VecDeque<Step>,
    /// The row whose held counterpart was asked for ([`Need::HeldEntry`]).
    asked_held: Option<SeenEntry>,
    findings: Vec<AuditFinding>,
    lines: u64,
    /// The end line or the broken line was read, or a line did not read.
    closed: bool,
    end: Option<Head>,
    last_row_n: u64,
    rows: Vec<ChainFields>,
    tally: Tally,
    cut: Option<Cut>,
}

impl Audit {
    /// `ledger verify`: the whole chain from the root, against `served` (`/ledger/head`), and
    /// `held` (a head saved earlier) must still be in it.
    pub fn full(served: HeadAnswer, held: Option<HeldHead>) -> Self {
        Self::new(Mode::Full { held }, HeldHead::root(), served)
    }

    /// The follower: extends `held` (none yet: the root) to `served`, keeping at most
    /// `max_new_rows` new rows.
    pub fn extend(served: HeadAnswer, held: Option<HeldHead>, max_new_rows: usize) -> Self {
        let mode = Mode::Extend {
            held: held.is_some(),
            max_new_rows,
        };
        Self::new(mode, held.unwrap_or_else(HeldHead::root), served)
    }

    fn new(mode: Mode, from: HeldHead, served: HeadAnswer) -> Self {
        Audit {
            mode,
            extender: Extender::new(from.clone()),
            from,
            served,
            waiting: VecDeque::new(),
            asked_held: None,
            findings: Vec::new(),
            lines: 0,
            closed: false,
            end: None,
            last_row_n: 0,
            rows: Vec::new(),
            tally: Tally::default(),
            cut: None,
        }
    }

    /// Whether the export must be read at all. The follower needs no export when the served
    /// head is the held one (only the marker is checked) or is behind it or broken (that is
    /// said without it); `ledger verify` always reads it.
    pub fn export_needed(&self) -> bool {
        let Mode::Extend { held, .. } = self.mode else {
            return true;
        };
        match &self.served {
            HeadAnswer::Head(h) if h.n > self.from.n => true,
            HeadAnswer::Head(h) if h.n == self.from.n => !(held && h.head == self.from.head),
            _ => false,
        }
    }

    /// Feeds the next export line (`Err`: the line, or the read of it, did not read; the
    /// detail says why).
    pub fn on_line(&mut self, line: Result<ExportLine, String>) -> Need {
        if self.cut.is_some() {
            return Need::Stop;
        }
        self.lines += 1;
        self.asked_held = None;
        if self.closed {
            self.step(Step::Served(ServedFinding::ExportEndMissing {
                lines: self.lines,
                detail: format!("line {} follows the end line", self.lines),
            }));
            return Need::Stop;
        }
        match line {
            Ok(ExportLine::Entry(row)) => self.on_row(row),
            Ok(ExportLine::End(head)) => {
                self.end = Some(head);
                self.closed = true;
                Need::Nothing
            }
            Ok(ExportLine::Broken {
                broken_at,
                last_linked,
            }) => {
                self.step(Step::Broken {
                    broken_at,
                    last_linked,
                });
                self.closed = true;
                Need::Nothing
            }
            Err(detail) => {
                self.step(Step::Served(ServedFinding::ExportLineUnreadable {
                    line: self.lines,
                    detail: detail.clone(),
                }));
                self.closed = true;
                self.cut = Some(Cut::UnreadableLine {
                    line: self.lines,
                    detail,
                });
                Need::Stop
            }
        }
    }

    fn on_row(&mut self, row: ExportRow) -> Need {
        self.last_row_n = row.n;
        let n = row.n;
        match self.mode {
            Mode::Full { .. } => {
                self.waiting.push_back(Step::Row(Box::new((row, None))));
                Need::EntryBytes(n)
            }
            Mode::Extend { .. } if n <= self.from.n => {
                self.asked_held = Some(SeenEntry {
                    n,
                    claim_sha256: row.claim_sha256,
                    raw_sha256: None,
                });
                Need::HeldEntry(n)
            }
            Mode::Extend { max_new_rows, .. } => {
                if self.rows.len() >= max_new_rows {
                    self.cut = Some(Cut::TooManyRows { max_new_rows });
                    return Need::Stop;
                }
                self.rows.push(row.chain_fields());
                self.step(Step::Row(Box::new((row, Some(EntryFacts::not_fetched())))));
                Need::Nothing
            }
        }
    }

    /// The answer to [`Need::HeldEntry`]: what is held of entry `n` (none: nothing to compare).
    /// A held entry must keep its claim (§7 step 5).
    pub fn on_held(&mut self, n: u64, held: Option<&SeenEntry>) {
        let Some(served) = self.asked_held.take().filter(|s| s.n == n) else {
            return;
        };
        if let Some(h) = held {
            let changed = check::rereads(std::slice::from_ref(h), &[served]);
            self.findings
                .extend(changed.into_iter().map(AuditFinding::Chain));
        }
    }

    /// The answer to [`Need::EntryBytes`] for entry `n` (the earliest row of that n still
    /// waiting).
    pub fn on_entry(&mut self, n: u64, fetched: Fetched) {
        let facts = EntryFacts::of(n, fetched);
        let slot = self.waiting.iter_mut().find_map(|s| match s {
            Step::Row(waiting) if waiting.0.n == n && waiting.1.is_none() => Some(&mut waiting.1),
            _ => None,
        });
        if let Some(slot) = slot {
            *slot = Some(facts);
        }
        self.settle();
    }

    /// Queues a step behind the rows still waiting for their bytes, and judges what it can.
    fn step(&mut self, s: Step) {
        self.waiting.push_back(s);
        self.settle();
    }

    fn settle(&mut self) {
        while let Some(front) = self.waiting.front() {
            if matches!(front, Step::Row(waiting) if waiting.1.is_none()) {
                return;
            }
            let step = self.waiting.pop_front().expect("a front");
            self.judge(step);
        }
    }

    fn judge(&mut self, step: Step) {
        match step {
            Step::Row(waiting) => {
                let (row, facts) = *waiting;
                let facts = facts.unwrap_or_else(EntryFacts::not_fetched);
                self.tally.add(&facts.tally);
                self.findings
                    .extend(facts.findings.into_iter().map(AuditFinding::Served));
                self.extender.push(&NewEntry {
                    fields: row.chain_fields(),
                    raw_sha256: facts.raw_sha256,
                    carried: facts.carried,
                    export_row: Some(row),
                });
            }
            Step::Broken {
                broken_at,
                last_linked,
            } => self.extender.export_broken(broken_at, last_linked),
            Step::Served(f) => self.findings.push(AuditFinding::Served(f)),
        }
    }

    /// Compares the recomputation with the served head, the export's end line and the head
    /// held; rows still waiting for bytes that never came are linked without them.
    pub fn finish(mut self) -> Audited {
        while let Some(step) = self.waiting.pop_front() {
            self.judge(step);
        }
        let export_read = self.export_needed();
        if export_read && !self.closed && self.cut.is_none() {
            self.findings
                .push(AuditFinding::Served(ServedFinding::ExportEndMissing {
                    lines: self.lines,
                    detail: "the export has no end line".into(),
                }));
        }
        if let Some(end) = self.end.as_ref().filter(|e| e.n != self.last_row_n) {
            // The end line names another n than the rows reach: the extender compares the end
            // line only with a head it recomputed, so say it here.
            self.findings
                .push(AuditFinding::Chain(ChainFinding::ExportEndDiffers {
                    end: end.clone(),
                    recomputed: format!("the export's rows end at n = {}", self.last_row_n),
                }));
        }
        let ext = self.extender.finish(&self.served, self.end.as_ref());
        let mut findings = self.findings;
        findings.extend(ext.findings.into_iter().map(AuditFinding::Chain));
        if let Mode::Full { held: Some(held) } = &self.mode {
            findings.extend(still_held(held, &self.served, &ext.heads).map(AuditFinding::Chain));
        }
        let whole = findings.is_empty() && self.cut.is_none();
        Audited {
            findings,
            hold: ext.hold.filter(|_| whole),
            heads: ext.heads,
            rows: self.rows,
            tally: self.tally,
            cut: self.cut,
        }
    }
}

/// §7 step 5 after a full recomputation: the held head is not ahead of the served one, and the
/// chain recomputed from the root passes through it.
fn still_held(held: &HeldHead, served: &HeadAnswer, heads: &[HeldHead]) -> Option<ChainFinding> {
    let HeadAnswer::Head(h) = served else {
        return None;
    };
    let served = HeldHead {
        n: h.n,
        head: h.head.clone(),
    };
    if served.n < held.n {
        return Some(ChainFinding::Rewound {
            held: held.clone(),
            served,
        });
    }
    let ours = held
        .n
        .checked_sub(1)
        .and_then(|i| heads.get(i as usize))
        .map(|x| x.head.clone())?;
    (ours != held.head).then(|| ChainFinding::Forked {
        held: held.clone(),
        served,
        recomputed: Some(ours),
    })
}

impl Tally {
    fn add(&mut self, t: &Tally) {
        self.entries += t.entries;
        self.batches += t.batches;
        self.checkpoints += t.checkpoints;
        self.other_entries += t.other_entries;
        self.records_listed += t.records_listed;
    }
}

impl EntryFacts {
    /// A row linked without its bytes (read later, or never).
    fn not_fetched() -> Self {
        EntryFacts {
            raw_sha256: None,
            carried: None,
            tally: Tally::default(),
            findings: Vec::new(),
        }
    }

    /// Entry n's bytes: what kind of text, the head it carries, a batch's count.
    fn of(n: u64, fetched: Fetched) -> Self {
        let bytes = match fetched {
            Fetched::Bytes(b) => b,
            Fetched::Missing => return EntryFacts::refused(ServedFinding::EntryMissing { n }),
            Fetched::Unreadable(detail) => {
                return EntryFacts::refused(ServedFinding::EntryUnreadable { n, detail });
            }
        };
        let reading = read_entry(n, &bytes);
        let mut tally = Tally {
            entries: 1,
            ..Tally::default()
        };
        match reading.kind {
            EntryKind::Batch => {
                tally.batches = 1;
                tally.records_listed = reading.listed.len() as u64;
            }
            EntryKind::Checkpoint => tally.checkpoints = 1,
            EntryKind::Other => tally.other_entries = 1,
            EntryKind::Unreadable => {}
        }
        EntryFacts {
            raw_sha256: Some(reading.raw_sha256),
            carried: reading.carried,
            tally,
            findings: reading.findings,
        }
    }

    /// An entry whose bytes were not served: counted, with the finding that says why.
    fn refused(finding: ServedFinding) -> Self {
        EntryFacts {
            tally: Tally {
                entries: 1,
                ..Tally::default()
            },
            findings: vec![finding],
            ..EntryFacts::not_fetched()
        }
    }
}

/// What kind of text an entry's bytes are (§4.4, §4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Batch,
    Checkpoint,
    /// Another pool's text: read, not judged.
    Other,
    Unreadable,
}

impl EntryKind {
    /// As the store keeps it (`ledger_entries.kind`).
    pub fn name(self) -> &'static str {
        match self {
            EntryKind::Batch => "batch",
            EntryKind::Checkpoint => "checkpoint",
            EntryKind::Other => "other",
            EntryKind::Unreadable => "unreadable",
        }
    }
}

/// What one entry's bytes say, whoever read them: `ledger verify`'s fold and the follower's
/// entry reads judge an entry the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryReading {
    pub raw_sha256: String,
    pub kind: EntryKind,
    /// The `ledger_head` a batch or checkpoint carries (judged against the chain by
    /// [`check::carried_findings`]).
    pub carried: Option<CarriedHead>,
    /// A batch's rows' record shas, in its order; empty for any other entry.
    pub listed: Vec<String>,
    pub findings: Vec<ServedFinding>,
}

/// Entry n's bytes read: their kind, the head they carry, a batch's rows and whether its
/// `count` agrees with them.
pub fn read_entry(n: u64, bytes: &[u8]) -> EntryReading {
    let mut reading = EntryReading {
        raw_sha256: sha256_hex(bytes),
        kind: EntryKind::Unreadable,
        carried: None,
        listed: Vec::new(),
        findings: Vec::new(),
    };
    match EntryText::parse(bytes) {
        Ok(EntryText::Batch(b)) => {
            reading.kind = EntryKind::Batch;
            if b.count != b.records.len() as u64 {
                reading.findings.push(ServedFinding::BatchCountDiffers {
                    n,
                    count: b.count,
                    rows: b.records.len(),
                });
            }
            reading.listed = b.records.into_iter().map(|row| row.sha).collect();
            reading.carried = Some(b.ledger_head);
        }
        Ok(EntryText::Checkpoint(c)) => {
            reading.kind = EntryKind::Checkpoint;
            reading.carried = Some(c.ledger_head);
        }
        Ok(EntryText::Other { .. }) => reading.kind = EntryKind::Other,
        Err(e) => reading.findings.push(ServedFinding::EntryUnreadable {
            n,
            detail: e.to_string(),
        }),
    }
    reading
}

#[cfg(test)]
#[path = "audit_tests.rs"]
mod tests;
