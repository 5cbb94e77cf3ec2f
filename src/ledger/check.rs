//! The monitor's checks of ledger.md §7, pure: every input is data the edges fetched, every
//! outcome a typed finding that carries its evidence (hashes, both heads, both claims). An
//! empty list of findings is the only "verified".
//!
//! - [`inclusion`]: §7 steps 2–3, for one of our records once `/witness/<sha>` says anchored.
//! - [`Extender`] / [`extension`]: §7 step 5 (and the comparisons of step 4 for the new part):
//!   a served head must extend the head we hold; only the new entries are recomputed, one at a
//!   time. From [`HeldHead::root`] it is the full check of a ledger (every carried head too).
//! - [`rereads`]: every held entry's claim and bytes hash stay what they were.
//! - [`transition`]: §2.5, what one `/witness/<sha>` answer may follow another with.

use super::chain::{self, Broken, ChainFields};
use super::wire::{
    BatchRow, CarriedHead, EntryText, ExportRow, Head, HeadAnswer, LedgerEntry, StoredRecord,
    WitnessAnswer,
};
use crate::digest::sha256_hex;
use std::collections::BTreeMap;

/// A finding about one filed record's inclusion (§7 steps 2–3).
// Serialized as a finding's evidence (the store keeps it); `kind` names the variant.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "finding", rename_all = "snake_case")]
pub enum InclusionFinding {
    /// The answer was not the anchored form.
    NotAnchored,
    /// The answer's `sha` (or its record's) is not the sha we asked about.
    ShaDiffers { ours: String, served: String },
    /// Anchored with `record: null`: the intake's copy is missing.
    RecordCopyMissing,
    /// The intake's copy is not our bytes.
    StoredBytesDiffer {
        ours_sha256: String,
        stored_sha256: String,
        stored_len: usize,
    },
    /// The entry served for `ledger_entry` carries another `n`.
    EntryNumberDiffers { ledger_entry: u64, entry_n: u64 },
    /// The raw bytes do not hash to the entry's `claim_sha256`.
    BatchBytesDiffer {
        n: u64,
        claim_sha256: String,
        bytes_sha256: String,
    },
    /// The JSON view's `record_canonical` is not the raw bytes.
    JsonViewDiffers { n: u64, json_view_sha256: String },
    /// Export row n carries another `claim_sha256` than the JSON view.
    ExportClaimDiffers {
        n: u64,
        entry_claim: String,
        export_claim: String,
    },
    /// The bytes are not a readable `nenrin-witness-batch-v1`.
    NotABatch { n: u64, detail: String },
    /// `count` is not the number of rows.
    CountDiffers { n: u64, count: u64, rows: usize },
    /// Our sha is listed `times` times (0 = not at all; the only good answer is 1).
    ListedTimes { n: u64, times: usize },
    /// Our row disagrees with the stored object on `field`.
    RowDisagrees {
        n: u64,
        field: &'static str,
        stored: String,
        batch: String,
    },
}

/// The outcome of [`inclusion`]: the entry and batch hash to keep, and the findings (none =
/// inclusion verified).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inclusion {
    pub ledger_entry: Option<u64>,
    pub bytes_sha256: String,
    pub findings: Vec<InclusionFinding>,
}

impl Inclusion {
    pub fn verified(&self) -> bool {
        self.findings.is_empty()
    }
}

/// What [`inclusion`] reads: our record, the `/witness/<sha>` answer, entry `ledger_entry`'s
/// JSON view and raw bytes, and (when fetched) its export row.
pub struct InclusionInputs<'a> {
    /// sha256 of `filed`, the identity we filed under.
    pub sha: &'a str,
    /// The exact bytes we filed (`record_canonical`).
    pub filed: &'a [u8],
    pub answer: &'a WitnessAnswer,
    pub entry: &'a LedgerEntry,
    pub raw: &'a [u8],
    pub export_row: Option<&'a ExportRow>,
}

/// §7 steps 2–3.
pub fn inclusion(i: &InclusionInputs<'_>) -> Inclusion {
    let mut findings = Vec::new();
    let n = i.entry.n;
    let bytes_sha256 = sha256_hex(i.raw);
    let WitnessAnswer::Anchored {
        sha,
        ledger_entry,
        record,
        ..
    } = i.answer
    else {
        return Inclusion {
            ledger_entry: None,
            bytes_sha256,
            findings: vec![InclusionFinding::NotAnchored],
        };
    };
    if sha != i.sha {
        findings.push(InclusionFinding::ShaDiffers {
            ours: i.sha.into(),
            served: sha.clone(),
        });
    }
    // Step 2: the intake's copy is our bytes.
    match record {
        None => findings.push(InclusionFinding::RecordCopyMissing),
        Some(r) => {
            if r.sha != i.sha {
                findings.push(InclusionFinding::ShaDiffers {
                    ours: i.sha.into(),
                    served: r.sha.clone(),
                });
            }
            if r.record_canonical.as_bytes() != i.filed {
                findings.push(InclusionFinding::StoredBytesDiffer {
                    ours_sha256: sha256_hex(i.filed),
                    stored_sha256: sha256_hex(r.record_canonical.as_bytes()),
                    stored_len: r.record_canonical.len(),
                });
            }
        }
    }
    // Step 3: the entry's bytes are what its claim says, everywhere it is served.
    if n != *ledger_entry {
        findings.push(InclusionFinding::EntryNumberDiffers {
            ledger_entry: *ledger_entry,
            entry_n: n,
        });
    }
    if bytes_sha256 != i.entry.claim_sha256 {
        findings.push(InclusionFinding::BatchBytesDiffer {
            n,
            claim_sha256: i.entry.claim_sha256.clone(),
            bytes_sha256: bytes_sha256.clone(),
        });
    }
    if let Some(view) = &i.entry.record_canonical
        && view.as_bytes() != i.raw
    {
        findings.push(InclusionFinding::JsonViewDiffers {
            n,
            json_view_sha256: sha256_hex(view.as_bytes()),
        });
    }
    if let Some(row) = i.export_row
        && row.claim_sha256 != i.entry.claim_sha256
    {
        findings.push(InclusionFinding::ExportClaimDiffers {
            n,
            entry_claim: i.entry.claim_sha256.clone(),
            export_claim: row.claim_sha256.clone(),
        });
    }
    match EntryText::parse(i.raw) {
        Ok(EntryText::Batch(batch)) => {
            if batch.count != batch.records.len() as u64 {
                findings.push(InclusionFinding::CountDiffers {
                    n,
                    count: batch.count,
                    rows: batch.records.len(),
                });
            }
            let ours: Vec<&BatchRow> = batch.records.iter().filter(|r| r.sha == i.sha).collect();
            if ours.len() != 1 {
                findings.push(InclusionFinding::ListedTimes {
                    n,
                    times: ours.len(),
                });
            }
            if let (Some(row), Some(stored)) = (ours.first(), record) {
                row_agrees(n, stored, row, &mut findings);
            }
        }
        Ok(other) => findings.push(InclusionFinding::NotABatch {
            n,
            detail: match other {
                EntryText::Checkpoint(_) => "a head checkpoint".into(),
                EntryText::Other { schema } => format!("schema {schema:?}"),
                EntryText::Batch(_) => unreachable!(),
            },
        }),
        Err(e) => findings.push(InclusionFinding::NotABatch {
            n,
            detail: e.to_string(),
        }),
    }
    Inclusion {
        ledger_entry: Some(*ledger_entry),
        bytes_sha256,
        findings,
    }
}

fn row_agrees(n: u64, s: &StoredRecord, row: &BatchRow, out: &mut Vec<InclusionFinding>) {
    let opt = |v: Option<&str>| v.map_or_else(|| "null".to_owned(), str::to_owned);
    let pairs: [(&'static str, String, String); 7] = [
        ("purpose", s.purpose.clone(), row.purpose.clone()),
        (
            "witness_name",
            s.witness_name.clone(),
            row.witness_name.clone(),
        ),
        ("vantage", s.vantage.clone(), row.vantage.clone()),
        ("signed", s.signed.to_string(), row.signed.to_string()),
        (
            "signed_domain",
            opt(s.signed_domain.as_deref()),
            opt(row.signed_domain.as_deref()),
        ),
        ("mode", s.mode_or_full().into(), row.mode_or_full().into()),
        (
            "counted",
            s.is_counted().to_string(),
            row.is_counted().to_string(),
        ),
    ];
    for (field, stored, batch) in pairs {
        if stored != batch {
            out.push(InclusionFinding::RowDisagrees {
                n,
                field,
                stored,
                batch,
            });
        }
    }
}

// The held head is pure state the store keeps too, so it lives below both (`ledger_plan`).
pub use crate::ledger_plan::HeldHead;

/// One entry past the held head, as fetched: what the chain covers, and, when fetched, the
/// hash of its raw bytes, the head its text carries and its export row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEntry {
    pub fields: ChainFields,
    pub raw_sha256: Option<String>,
    pub carried: Option<CarriedHead>,
    pub export_row: Option<ExportRow>,
}

/// A finding about the chain (§7 steps 4–5). Serialized with its name (see
/// [`ChainFinding::name`]) under `finding`, and its evidence.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "finding")]
pub enum ChainFinding {
    /// `/ledger/head` answered 409.
    #[serde(rename = "chain_broken")]
    HeadBroken {
        broken_at: u64,
        last_linked: u64,
        head_before_break: Option<String>,
    },
    /// The export ended with the broken line.
    #[serde(rename = "export_chain_broken")]
    ExportBroken { broken_at: u64, last_linked: u64 },
    /// The served head is behind the held one.
    #[serde(rename = "rewound_head")]
    Rewound { held: HeldHead, served: HeldHead },
    /// The served head does not extend the held one: at the held n it differs, or the
    /// recomputation from the held head over the new entries does not reach it.
    #[serde(rename = "forked_head")]
    Forked {
        held: HeldHead,
        served: HeldHead,
        recomputed: Option<String>,
    },
    /// The export row just past the held head links to another head than the held one.
    #[serde(rename = "forked_at_junction")]
    ForkedAtJunction { held: HeldHead, served_prev: String },
    /// The new entries are not exactly held n + 1, held n + 2, … up to the served n.
    #[serde(rename = "hole")]
    Hole(Broken),
    /// An entry's raw bytes do not hash to its claim.
    #[serde(rename = "claim_sha256_differs")]
    EntryBytesDiffer {
        n: u64,
        claim_sha256: String,
        bytes_sha256: String,
    },
    /// An export row disagrees with the recomputation (or with the JSON view's claim).
    #[serde(rename = "export_row_differs")]
    ExportRowDiffers {
        n: u64,
        field: &'static str,
        served: String,
        recomputed: String,
    },
    /// The served marker (head `entry_sha256`, export end line) is not marker(n, head).
    #[serde(rename = "marker_differs")]
    MarkerDiffers {
        n: u64,
        served: String,
        recomputed: String,
    },
    /// The export's end line is not the head recomputed at its n (or not its marker).
    #[serde(rename = "export_end_differs")]
    ExportEndDiffers { end: Head, recomputed: String },
    /// `/ledger/head` contradicts itself (`prev_entry_sha256` ≠ `head`, a root that is not 64
    /// zeros, another chain or schema name).
    #[serde(rename = "head_malformed")]
    HeadMalformed {
        field: &'static str,
        served: String,
        expected: String,
    },
    /// The `ledger_head` written into entry `in_entry` disagrees with the head recomputed at
    /// its n (`field` is `entry_sha256` or `marker_sha256`).
    #[serde(rename = "ledger_head_differs")]
    CarriedHeadDiffers {
        in_entry: u64,
        at_n: u64,
        field: &'static str,
        carried: String,
        recomputed: String,
    },
    /// Entry `in_entry` says the chain was broken when it was written.
    #[serde(rename = "ledger_head_broken")]
    CarriedChainBroken {
        in_entry: u64,
        broken_at: u64,
        last_linked: u64,
    },
    /// A held entry is served with another claim or other bytes.
    #[serde(rename = "entry_changed")]
    EntryChanged {
        n: u64,
        held: SeenEntry,
        served: SeenEntry,
    },
}

impl ChainFinding {
    /// The finding's name, as commands print it and as `finding` in JSON: the spec's own terms
    /// where it has one (`chain_broken`, `claim_sha256`, `ledger_head`, the end marker).
    pub fn name(&self) -> &'static str {
        match self {
            ChainFinding::HeadBroken { .. } => "chain_broken",
            ChainFinding::ExportBroken { .. } => "export_chain_broken",
            ChainFinding::Rewound { .. } => "rewound_head",
            ChainFinding::Forked { .. } => "forked_head",
            ChainFinding::ForkedAtJunction { .. } => "forked_at_junction",
            ChainFinding::Hole(_) => "hole",
            ChainFinding::EntryBytesDiffer { .. } => "claim_sha256_differs",
            ChainFinding::ExportRowDiffers { .. } => "export_row_differs",
            ChainFinding::MarkerDiffers { .. } => "marker_differs",
            ChainFinding::ExportEndDiffers { .. } => "export_end_differs",
            ChainFinding::HeadMalformed { .. } => "head_malformed",
            ChainFinding::CarriedHeadDiffers { .. } => "ledger_head_differs",
            ChainFinding::CarriedChainBroken { .. } => "ledger_head_broken",
            ChainFinding::EntryChanged { .. } => "entry_changed",
        }
    }
}

/// The outcome of [`extension`]: the recomputed heads of the new entries and the findings; the
/// head to hold next is `hold` (only when nothing was found).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extension {
    pub heads: Vec<HeldHead>,
    pub hold: Option<HeldHead>,
    pub findings: Vec<ChainFinding>,
}

/// §7 step 5 over entries already in memory: [`Extender`] fed with `new_entries`, then
/// finished against the served head.
pub fn extension(
    held: &HeldHead,
    served: &HeadAnswer,
    new_entries: &[NewEntry],
    export_end: Option<&Head>,
) -> Extension {
    let mut x = Extender::new(held.clone());
    for e in new_entries {
        x.push(e);
    }
    x.finish(served, export_end)
}

/// §7 step 5, one entry at a time, so a follower can check a long export line by line: feed
/// the entries held.n + 1, held.n + 2, … in order with [`Extender::push`], then
/// [`Extender::finish`] against `/ledger/head`. Only these entries are recomputed, from the
/// held head. Entries past the served n (the ledger grew between the two reads) are checked
/// too; the head to hold is the served one. Memory: one 64-character head per entry (the
/// carried `ledger_head`s may name any of them), not the entries.
pub struct Extender {
    held: HeldHead,
    known: BTreeMap<u64, String>,
    heads: Vec<HeldHead>,
    findings: Vec<ChainFinding>,
    /// Set at the first hole: nothing after it can be linked.
    stopped: bool,
}

impl Extender {
    pub fn new(held: HeldHead) -> Self {
        Extender {
            known: BTreeMap::from([(held.n, held.head.clone())]),
            held,
            heads: Vec::new(),
            findings: Vec::new(),
            stopped: false,
        }
    }

    fn last(&self) -> (u64, &str) {
        self.heads
            .last()
            .map_or((self.held.n, self.held.head.as_str()), |h| {
                (h.n, h.head.as_str())
            })
    }

    /// Checks and links the next entry.
    pub fn push(&mut self, e: &NewEntry) {
        if self.stopped {
            return;
        }
        let (last_n, prev) = self.last();
        let n = last_n + 1;
        if e.fields.n != n {
            self.findings.push(ChainFinding::Hole(Broken {
                at: n,
                found: Some(e.fields.n),
            }));
            self.stopped = true;
            return;
        }
        let prev = prev.to_owned();
        let head = chain::entry_sha256(&e.fields, &prev);
        if let Some(raw) = &e.raw_sha256
            && *raw != e.fields.claim_sha256
        {
            self.findings.push(ChainFinding::EntryBytesDiffer {
                n,
                claim_sha256: e.fields.claim_sha256.clone(),
                bytes_sha256: raw.clone(),
            });
        }
        if let Some(row) = &e.export_row {
            export_row_agrees(
                &self.held,
                n,
                row,
                &e.fields,
                &prev,
                &head,
                &mut self.findings,
            );
        }
        if let Some(carried) = &e.carried {
            // Heads before the held one are not kept here; those carried heads are checked by
            // a full recomputation (`ledger verify`), not by the extension.
            let at = match carried {
                CarriedHead::Linked { n, .. } => self.known.get(n).map(String::as_str),
                CarriedHead::Broken { .. } => None,
            };
            let found = carried_findings(n, carried, at);
            self.findings.extend(found);
        }
        self.known.insert(n, head.clone());
        self.heads.push(HeldHead { n, head });
    }

    /// The export ended with `{"schema":"jidec-chain-broken-v1", …}` instead of an end line
    /// (§5.3): the ledger says its own chain is broken; nothing after it links.
    pub fn export_broken(&mut self, broken_at: u64, last_linked: u64) {
        self.findings.push(ChainFinding::ExportBroken {
            broken_at,
            last_linked,
        });
        self.stopped = true;
    }

    /// Compares the recomputation with the served head (and the export's end line, if read).
    pub fn finish(mut self, served: &HeadAnswer, export_end: Option<&Head>) -> Extension {
        let head = match served {
            HeadAnswer::Broken(b) => {
                self.findings.push(ChainFinding::HeadBroken {
                    broken_at: b.broken_at,
                    last_linked: b.last_linked,
                    head_before_break: b.head_before_break.clone(),
                });
                return self.outcome(None);
            }
            HeadAnswer::Head(h) => h,
        };
        let served_at = HeldHead {
            n: head.n,
            head: head.head.clone(),
        };
        self.served_head_well_formed(head);
        if let Some(end) = export_end {
            self.end_line_agrees(end);
        }
        if head.n < self.held.n {
            self.findings.push(ChainFinding::Rewound {
                held: self.held.clone(),
                served: served_at,
            });
            return self.outcome(None);
        }
        match self.known.get(&head.n) {
            Some(ours) if *ours == head.head => {}
            Some(ours) => {
                let recomputed = (head.n != self.held.n).then(|| ours.clone());
                self.findings.push(ChainFinding::Forked {
                    held: self.held.clone(),
                    served: served_at.clone(),
                    recomputed,
                });
            }
            None if !self.stopped => {
                let (last_n, _) = self.last();
                self.findings.push(ChainFinding::Hole(Broken {
                    at: last_n + 1,
                    found: None,
                }));
            }
            None => {}
        }
        self.outcome(Some(served_at))
    }

    /// `/ledger/head`'s own consistency: the marker binds (n, head), `prev_entry_sha256` is the
    /// head, the root is 64 zeros, the names are the chain's.
    fn served_head_well_formed(&mut self, head: &Head) {
        let marker = chain::marker_sha256(head.n, &head.head);
        if head.entry_sha256 != marker {
            self.findings.push(ChainFinding::MarkerDiffers {
                n: head.n,
                served: head.entry_sha256.clone(),
                recomputed: marker,
            });
        }
        let expected: [(&'static str, &str, &str); 4] = [
            ("prev_entry_sha256", &head.prev_entry_sha256, &head.head),
            ("root", &head.root, chain::ROOT),
            ("chain", &head.chain, super::CHAIN),
            ("schema", &head.schema, super::HEAD_SCHEMA),
        ];
        for (field, served, want) in expected {
            if served != want {
                self.findings.push(ChainFinding::HeadMalformed {
                    field,
                    served: served.into(),
                    expected: want.into(),
                });
            }
        }
    }

    /// The export's end line must be the head recomputed at its n, with its marker.
    fn end_line_agrees(&mut self, end: &Head) {
        let Some(ours) = self.known.get(&end.n) else {
            return;
        };
        if end.head != *ours
            || end.prev_entry_sha256 != *ours
            || end.entry_sha256 != chain::marker_sha256(end.n, ours)
        {
            self.findings.push(ChainFinding::ExportEndDiffers {
                end: end.clone(),
                recomputed: ours.clone(),
            });
        }
    }

    fn outcome(self, served: Option<HeldHead>) -> Extension {
        let hold = served.filter(|_| self.findings.is_empty());
        Extension {
            heads: self.heads,
            hold,
            findings: self.findings,
        }
    }
}

fn export_row_agrees(
    held: &HeldHead,
    n: u64,
    row: &ExportRow,
    fields: &ChainFields,
    prev: &str,
    head: &str,
    out: &mut Vec<ChainFinding>,
) {
    if row.prev_entry_sha256 != prev {
        if n == held.n + 1 {
            out.push(ChainFinding::ForkedAtJunction {
                held: held.clone(),
                served_prev: row.prev_entry_sha256.clone(),
            });
        } else {
            out.push(ChainFinding::ExportRowDiffers {
                n,
                field: "prev_entry_sha256",
                served: row.prev_entry_sha256.clone(),
                recomputed: prev.into(),
            });
        }
    }
    let mut differs = |field: &'static str, served: &str, ours: &str| {
        if served != ours {
            out.push(ChainFinding::ExportRowDiffers {
                n,
                field,
                served: served.into(),
                recomputed: ours.into(),
            });
        }
    };
    differs("n", &row.n.to_string(), &n.to_string());
    differs("claim_sha256", &row.claim_sha256, &fields.claim_sha256);
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "(absent)".into());
    differs("schema", &opt(&row.schema), &opt(&fields.schema));
    differs(
        "created_at",
        &opt(&row.created_at),
        &opt(&fields.created_at),
    );
    differs("entry_sha256", &row.entry_sha256, head);
}

/// The `ledger_head` entry `in_entry` carries, against `head_at_n`: the head recomputed (or
/// held) at the carried n, `None` when it is not known here (then a linked head is not
/// compared; a broken one is a finding regardless).
pub fn carried_findings(
    in_entry: u64,
    carried: &CarriedHead,
    head_at_n: Option<&str>,
) -> Vec<ChainFinding> {
    let mut out = Vec::new();
    match carried {
        CarriedHead::Broken {
            broken_at,
            last_linked,
            ..
        } => out.push(ChainFinding::CarriedChainBroken {
            in_entry,
            broken_at: *broken_at,
            last_linked: *last_linked,
        }),
        CarriedHead::Linked {
            n,
            entry_sha256,
            marker_sha256,
            ..
        } => {
            let Some(head) = head_at_n else { return out };
            if entry_sha256 != head {
                out.push(ChainFinding::CarriedHeadDiffers {
                    in_entry,
                    at_n: *n,
                    field: "entry_sha256",
                    carried: entry_sha256.clone(),
                    recomputed: head.into(),
                });
            }
            if let Some(marker) = marker_sha256 {
                let ours = chain::marker_sha256(*n, head);
                if *marker != ours {
                    out.push(ChainFinding::CarriedHeadDiffers {
                        in_entry,
                        at_n: *n,
                        field: "marker_sha256",
                        carried: marker.clone(),
                        recomputed: ours,
                    });
                }
            }
        }
    }
    out
}

/// What we keep of an entry we fetched: its claim and, when fetched, its raw bytes' hash.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SeenEntry {
    pub n: u64,
    pub claim_sha256: String,
    pub raw_sha256: Option<String>,
}

/// §7 step 5: every held entry served again keeps its claim and its bytes' hash. `served`
/// entries with no held counterpart are ignored (they are the extension's business).
pub fn rereads(held: &[SeenEntry], served: &[SeenEntry]) -> Vec<ChainFinding> {
    let by_n: BTreeMap<u64, &SeenEntry> = held.iter().map(|e| (e.n, e)).collect();
    served
        .iter()
        .filter_map(|s| {
            let h = by_n.get(&s.n)?;
            let raw_changed =
                matches!((&h.raw_sha256, &s.raw_sha256), (Some(a), Some(b)) if a != b);
            (h.claim_sha256 != s.claim_sha256 || raw_changed).then(|| ChainFinding::EntryChanged {
                n: s.n,
                held: (*h).clone(),
                served: s.clone(),
            })
        })
        .collect()
}

/// What we last saw of one of our records at `/witness/<sha>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    Pending,
    Anchored {
        ledger_entry: u64,
        stored_sha256: Option<String>,
    },
}

impl Seen {
    /// What to remember of an answer (`None` for a 404).
    pub fn of(answer: &WitnessAnswer) -> Option<Seen> {
        match answer {
            WitnessAnswer::NotFound { .. } => None,
            WitnessAnswer::Pending { .. } => Some(Seen::Pending),
            WitnessAnswer::Anchored {
                ledger_entry,
                record,
                ..
            } => Some(Seen::Anchored {
                ledger_entry: *ledger_entry,
                stored_sha256: record
                    .as_ref()
                    .map(|r| sha256_hex(r.record_canonical.as_bytes())),
            }),
        }
    }
}

/// A step of §2.5 that a record's life must not take.
// Serialized as a finding's evidence (the store keeps it); `kind` names the variant.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "finding", rename_all = "snake_case")]
pub enum TransitionFinding {
    /// Anchored, then pending (a lagging read or a stale pending key that won; tolerated only
    /// briefly, the caller decides how long).
    AnchoredThenPending { ledger_entry: u64 },
    /// Anchored, then unknown.
    AnchoredThenNotFound { ledger_entry: u64 },
    /// Anchored at one entry, then at another.
    LedgerEntryChanged { was: u64, now: u64 },
    /// The anchored copy's bytes changed.
    StoredBytesChanged { was: String, now: String },
}

/// §2.5: checks an answer against what was last seen; `None` when the step is allowed
/// (including a brief 404 or pending before the first anchored answer).
pub fn transition(last: Option<&Seen>, now: &WitnessAnswer) -> Option<TransitionFinding> {
    let Some(Seen::Anchored {
        ledger_entry,
        stored_sha256,
    }) = last
    else {
        return None;
    };
    match Seen::of(now) {
        None => Some(TransitionFinding::AnchoredThenNotFound {
            ledger_entry: *ledger_entry,
        }),
        Some(Seen::Pending) => Some(TransitionFinding::AnchoredThenPending {
            ledger_entry: *ledger_entry,
        }),
        Some(Seen::Anchored {
            ledger_entry: now_entry,
            stored_sha256: now_sha,
        }) => {
            if now_entry != *ledger_entry {
                Some(TransitionFinding::LedgerEntryChanged {
                    was: *ledger_entry,
                    now: now_entry,
                })
            } else {
                match (stored_sha256, now_sha) {
                    (Some(was), Some(now)) if *was != now => {
                        Some(TransitionFinding::StoredBytesChanged {
                            was: was.clone(),
                            now,
                        })
                    }
                    _ => None,
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
