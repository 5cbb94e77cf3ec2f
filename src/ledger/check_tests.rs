//! Table tests of the monitor's checks over a small ledger built with the worker's recipes
//! (`super::super::batch`, `super::super::chain`). Each fault of ledger.md §8 item 7 that can be
//! expressed as data is applied to that ledger, and must surface as its finding; the honest
//! ledger must give none.

use super::*;
use crate::ledger::batch::{batch_text, checkpoint_text, claim_sha256, linked_head};
use crate::ledger::wire::{ExportLine, HeadBroken, ResponseRef};

/// A matcher for the finding a table row must raise.
type Expect<F> = Box<dyn Fn(&F) -> bool>;

const OURS: &[u8] = br#"{"assertions":[],"mode":"full","purpose":"ours"}"#;

fn stored(bytes: &[u8], witness_name: &str) -> StoredRecord {
    StoredRecord {
        record_canonical: String::from_utf8(bytes.to_vec()).unwrap(),
        signed: true,
        public_key_ed25519_b64: Some("AAAA".into()),
        signed_domain: Some("witness.example".into()),
        key_url: Some("https://witness.example/.well-known/key".into()),
        submitted_at: Some("2026-12-01T10:00:00.000Z".into()),
        ..StoredRecord::unsigned(
            &sha256_hex(bytes),
            "https://agent.example/a2a",
            witness_name,
            "probe 🧪 \"lab\"",
        )
    }
}

/// A ledger as the worker keeps it: entries (JSON view with `record_canonical`) and, on
/// request, the head, export and answers it serves (recomputed from the entries, as it does).
#[derive(Clone)]
struct Ledger {
    entries: Vec<LedgerEntry>,
}

impl Ledger {
    fn head(&self) -> String {
        let fields: Vec<ChainFields> = self.entries.iter().map(LedgerEntry::chain_fields).collect();
        chain::extend(0, chain::ROOT, &fields)
            .unwrap()
            .pop()
            .unwrap_or_else(|| chain::ROOT.into())
    }

    fn append(&mut self, text: String, created_at: &str) {
        self.entries.push(LedgerEntry {
            n: self.entries.len() as u64 + 1,
            work: Some("NENRIN witness batch".into()),
            claim_sha256: claim_sha256(&text),
            record_canonical: Some(text),
            schema: Some(serde_json::Value::String("v0-plain".into())),
            created_at: Some(serde_json::Value::String(created_at.into())),
            ots_status: Some("unstamped".into()),
            bitcoin_block: None,
            block_time: None,
            stamped_at: None,
            anchored_by: Some("operator".into()),
            pending_stage: Some("fresh".into()),
            pending_hours: Some(0),
            pending_stale_after_hours: Some(6),
        });
    }

    fn batch(&mut self, at: &str, records: &[StoredRecord]) {
        let n = self.entries.len() as u64;
        let mut rows: Vec<BatchRow> = records.iter().map(BatchRow::of).collect();
        rows.sort_by(|a, b| a.sha.cmp(&b.sha));
        let text = batch_text(at, &linked_head(n, &self.head(), false), &rows);
        self.append(text, at);
    }

    fn checkpoint(&mut self, at: &str) {
        let text = checkpoint_text(at, self.entries.len() as u64, &self.head());
        self.append(text, at);
    }

    fn served_head(&self) -> HeadAnswer {
        let head = self.head();
        let n = self.entries.len() as u64;
        HeadAnswer::Head(Head {
            schema: "jidec-head-v1".into(),
            n,
            head: head.clone(),
            root: chain::ROOT.into(),
            chain: "jidec-chain-v1".into(),
            prev_entry_sha256: head.clone(),
            entry_sha256: chain::marker_sha256(n, &head),
        })
    }

    fn export_rows(&self) -> Vec<ExportRow> {
        let mut prev = chain::ROOT.to_string();
        self.entries
            .iter()
            .map(|e| {
                let f = e.chain_fields();
                let h = chain::entry_sha256(&f, &prev);
                ExportRow {
                    n: f.n,
                    claim_sha256: f.claim_sha256,
                    prev_entry_sha256: std::mem::replace(&mut prev, h.clone()),
                    schema: f.schema,
                    created_at: f.created_at,
                    entry_sha256: h,
                }
            })
            .collect()
    }

    fn raw(&self, n: u64) -> &str {
        self.entries[n as usize - 1]
            .record_canonical
            .as_deref()
            .unwrap()
    }

    fn new_entries(&self, after: u64) -> Vec<NewEntry> {
        let rows = self.export_rows();
        self.entries
            .iter()
            .skip(after as usize)
            .map(|e| {
                let raw = e.record_canonical.as_deref().unwrap();
                NewEntry {
                    fields: e.chain_fields(),
                    raw_sha256: Some(sha256_hex(raw)),
                    carried: EntryText::parse(raw.as_bytes())
                        .ok()
                        .and_then(|t| t.carried_head().cloned()),
                    export_row: Some(rows[e.n as usize - 1].clone()),
                }
            })
            .collect()
    }

    fn seen(&self, upto: u64) -> Vec<SeenEntry> {
        self.entries
            .iter()
            .take(upto as usize)
            .map(|e| SeenEntry {
                n: e.n,
                claim_sha256: e.claim_sha256.clone(),
                raw_sha256: e.record_canonical.as_deref().map(sha256_hex),
            })
            .collect()
    }
}

/// Entries 1–2 (batch, checkpoint) are held; entry 3 is the batch with our record; entry 4 a
/// checkpoint.
fn world() -> (Ledger, StoredRecord) {
    let ours = stored(OURS, "our-witness");
    let mut ledger = Ledger { entries: vec![] };
    ledger.batch(
        "2026-12-01T00:30:00.100Z",
        &[stored(b"{\"a\":1}", "w-1"), stored(b"{\"b\":2}", "証人-é")],
    );
    ledger.checkpoint("2026-12-01T00:30:00.200Z");
    let mut other = stored(b"{\"c\":3}", "w-3");
    other.mode = Some("commitment".into());
    other.counted = Some(false);
    other.signed_domain = None;
    ledger.batch("2026-12-02T00:30:00.100Z", &[ours.clone(), other]);
    ledger.checkpoint("2026-12-02T00:30:00.200Z");
    (ledger, ours)
}

fn anchored(record: Option<StoredRecord>, entry: u64) -> WitnessAnswer {
    WitnessAnswer::Anchored {
        sha: sha256_hex(OURS),
        ledger_entry: entry,
        url: format!("https://ledger.example/ledger/{entry}"),
        record,
        responses: vec![],
    }
}

fn check_inclusion(ledger: &Ledger, answer: &WitnessAnswer, n: u64) -> Inclusion {
    let rows = ledger.export_rows();
    inclusion(&InclusionInputs {
        sha: &sha256_hex(OURS),
        filed: OURS,
        answer,
        entry: &ledger.entries[n as usize - 1],
        raw: ledger.raw(n).as_bytes(),
        export_row: rows.get(n as usize - 1),
    })
}

#[test]
fn honest_ledger_verifies_inclusion() {
    let (ledger, ours) = world();
    let got = check_inclusion(&ledger, &anchored(Some(ours), 3), 3);
    assert_eq!(got.findings, vec![]);
    assert!(got.verified());
    assert_eq!(got.ledger_entry, Some(3));
    assert_eq!(got.bytes_sha256, ledger.entries[2].claim_sha256);
}

/// Each row: a fault applied to the world (ledger, the intake's copy, the answer's entry), and
/// the finding it must raise.
#[test]
fn inclusion_faults_are_findings() {
    type Fault = fn(&mut Ledger, &mut StoredRecord, &mut u64);
    let ours_sha = sha256_hex(OURS);
    let table: Vec<(&str, Fault, Expect<InclusionFinding>)> = vec![
        (
            "the intake's copy is not our bytes",
            |_, r, _| r.record_canonical.push(' '),
            Box::new(
                |f| matches!(f, InclusionFinding::StoredBytesDiffer { stored_len, .. } if *stored_len == OURS.len() + 1),
            ),
        ),
        (
            "the copy's sha is another",
            |_, r, _| r.sha = "0".repeat(64),
            Box::new(
                |f| matches!(f, InclusionFinding::ShaDiffers { served, .. } if *served == "0".repeat(64)),
            ),
        ),
        (
            "§8.7 rewrite an entry's bytes (claim kept)",
            |l, _, _| {
                let raw = l.entries[2].record_canonical.as_mut().unwrap();
                *raw = raw.replace("our-witness", "our-witnesz");
            },
            Box::new(|f| matches!(f, InclusionFinding::BatchBytesDiffer { n: 3, .. })),
        ),
        (
            "our row rewritten (claim recomputed too)",
            |l, _, _| {
                let raw = l.entries[2]
                    .record_canonical
                    .as_mut()
                    .unwrap()
                    .replace("our-witness", "someone-else");
                l.entries[2].claim_sha256 = claim_sha256(&raw);
                l.entries[2].record_canonical = Some(raw);
            },
            Box::new(
                |f| matches!(f, InclusionFinding::RowDisagrees { field: "witness_name", batch, .. } if batch == "someone-else"),
            ),
        ),
        (
            "our row's signed_domain dropped",
            |_, r, _| r.signed_domain = Some("other.example".into()),
            Box::new(|f| {
                matches!(
                    f,
                    InclusionFinding::RowDisagrees {
                        field: "signed_domain",
                        ..
                    }
                )
            }),
        ),
        (
            "the stored object says not counted, the row says counted",
            |_, r, _| r.counted = Some(false),
            Box::new(
                |f| matches!(f, InclusionFinding::RowDisagrees { field: "counted", stored, .. } if stored == "false"),
            ),
        ),
        (
            "the stored mode differs from the row",
            |_, r, _| r.mode = Some("hash-only".into()),
            Box::new(|f| matches!(f, InclusionFinding::RowDisagrees { field: "mode", .. })),
        ),
        (
            "our sha not in the batch it is said to be in",
            |_, _, e| *e = 1,
            Box::new(|f| matches!(f, InclusionFinding::ListedTimes { n: 1, times: 0 })),
        ),
        (
            "the entry is a checkpoint, not a batch",
            |_, _, e| *e = 2,
            Box::new(|f| matches!(f, InclusionFinding::NotABatch { n: 2, .. })),
        ),
        (
            "our sha listed twice",
            |l, _, _| {
                let mut text: serde_json::Value = serde_json::from_str(l.raw(3)).unwrap();
                let rows = text["records"].as_array_mut().unwrap();
                let ours = rows
                    .iter()
                    .find(|r| r["sha"] == sha256_hex(OURS).as_str())
                    .unwrap()
                    .clone();
                rows.push(ours);
                text["count"] = 3.into();
                let raw = serde_json::to_string(&text).unwrap();
                l.entries[2].claim_sha256 = claim_sha256(&raw);
                l.entries[2].record_canonical = Some(raw);
            },
            Box::new(|f| matches!(f, InclusionFinding::ListedTimes { n: 3, times: 2 })),
        ),
        (
            "count is not the number of rows",
            |l, _, _| {
                let raw = l.raw(3).replace("\"count\":2", "\"count\":5");
                l.entries[2].claim_sha256 = claim_sha256(&raw);
                l.entries[2].record_canonical = Some(raw);
            },
            Box::new(|f| {
                matches!(
                    f,
                    InclusionFinding::CountDiffers {
                        count: 5,
                        rows: 2,
                        ..
                    }
                )
            }),
        ),
        (
            "the bytes are garbage",
            |l, _, _| {
                let raw = "<html>batch</html>".to_string();
                l.entries[2].claim_sha256 = claim_sha256(&raw);
                l.entries[2].record_canonical = Some(raw);
            },
            Box::new(
                |f| matches!(f, InclusionFinding::NotABatch { n: 3, detail } if detail.contains("not JSON")),
            ),
        ),
    ];
    for (name, fault, expect) in table {
        let (mut ledger, mut ours) = world();
        let mut entry = 3;
        fault(&mut ledger, &mut ours, &mut entry);
        let got = check_inclusion(&ledger, &anchored(Some(ours), entry), entry);
        assert!(
            got.findings.iter().any(&*expect),
            "{name}: {:?}",
            got.findings
        );
        assert!(!got.verified(), "{name}");
    }
    // The monitor's sha is the filed bytes' hash; the table never changed it.
    assert_eq!(ours_sha, sha256_hex(OURS));
}

#[test]
fn inclusion_of_missing_copy_and_other_answers() {
    let (ledger, _) = world();
    let got = check_inclusion(&ledger, &anchored(None, 3), 3);
    assert!(got.findings.contains(&InclusionFinding::RecordCopyMissing));
    let pending = WitnessAnswer::NotFound {
        sha: sha256_hex(OURS),
    };
    assert_eq!(
        check_inclusion(&ledger, &pending, 3).findings,
        vec![InclusionFinding::NotAnchored]
    );
    // The answer points at entry 3 but entry 4 was served for it.
    let (ledger, ours) = world();
    let rows = ledger.export_rows();
    let got = inclusion(&InclusionInputs {
        sha: &sha256_hex(OURS),
        filed: OURS,
        answer: &anchored(Some(ours), 3),
        entry: &ledger.entries[3],
        raw: ledger.raw(3).as_bytes(),
        export_row: Some(&rows[2]),
    });
    assert!(
        got.findings
            .contains(&InclusionFinding::EntryNumberDiffers {
                ledger_entry: 3,
                entry_n: 4
            })
    );
    assert!(
        got.findings
            .iter()
            .any(|f| matches!(f, InclusionFinding::JsonViewDiffers { .. }))
    );
    assert!(
        got.findings
            .iter()
            .any(|f| matches!(f, InclusionFinding::ExportClaimDiffers { .. }))
    );
}

fn held_at_2(ledger: &Ledger) -> HeldHead {
    let mut two = ledger.clone();
    two.entries.truncate(2);
    HeldHead {
        n: 2,
        head: two.head(),
    }
}

#[test]
fn honest_growth_extends_the_held_head() {
    let (ledger, _) = world();
    let held = held_at_2(&ledger);
    let rows = ledger.export_rows();
    let got = extension(&held, &ledger.served_head(), &ledger.new_entries(2), None);
    assert_eq!(got.findings, vec![]);
    assert_eq!(got.heads.len(), 2);
    assert_eq!(got.heads[1].head, rows[3].entry_sha256);
    assert_eq!(
        got.hold,
        Some(HeldHead {
            n: 4,
            head: ledger.head()
        })
    );
    assert_eq!(rereads(&ledger.seen(2), &ledger.seen(4)), vec![]);
    // From the root, the whole chain extends too; the same head at the same n also holds.
    let whole = extension(
        &HeldHead::root(),
        &ledger.served_head(),
        &ledger.new_entries(0),
        None,
    );
    assert_eq!((whole.findings, whole.hold), (vec![], got.hold.clone()));
    let same = extension(got.hold.as_ref().unwrap(), &ledger.served_head(), &[], None);
    assert_eq!(same.findings, vec![]);
}

/// ledger.md §8 item 7, each fault as data, against a monitor holding (2, head_2) and the
/// bytes hashes of entries 1–2. `served` is what the ledger then serves (the worker recomputes
/// its head from its entries, so a rewritten old entry changes the served head).
#[test]
fn chain_faults_of_8_7_are_findings() {
    struct Served {
        head: HeadAnswer,
        new: Vec<NewEntry>,
        seen: Vec<SeenEntry>,
    }
    fn served(l: &Ledger) -> Served {
        Served {
            head: l.served_head(),
            new: l.new_entries(2),
            seen: l.seen(l.entries.len() as u64),
        }
    }
    type Fault = fn(&mut Ledger) -> Served;
    let table: Vec<(&str, Fault, Expect<ChainFinding>)> = vec![
        (
            "rewrite a held entry's bytes (claim kept)",
            |l| {
                let raw = l.entries[0].record_canonical.as_mut().unwrap();
                *raw = raw.replace("w-1", "w-X");
                served(l)
            },
            Box::new(
                |f| matches!(f, ChainFinding::EntryChanged { n: 1, held, served } if held.claim_sha256 == served.claim_sha256 && held.raw_sha256 != served.raw_sha256),
            ),
        ),
        (
            "rewrite a held entry's bytes and claim: the served chain forks",
            |l| {
                let raw = l.entries[0]
                    .record_canonical
                    .as_ref()
                    .unwrap()
                    .replace("w-1", "w-X");
                l.entries[0].claim_sha256 = claim_sha256(&raw);
                l.entries[0].record_canonical = Some(raw);
                served(l)
            },
            Box::new(|f| matches!(f, ChainFinding::ForkedAtJunction { held, .. } if held.n == 2)),
        ),
        (
            "rewrite a held entry's created_at: the served head is not our extension",
            |l| {
                l.entries[1].created_at = Some("2026-12-01T00:31:00.000Z".into());
                let mut s = served(l);
                s.new.iter_mut().for_each(|e| e.export_row = None);
                s
            },
            Box::new(|f| {
                matches!(
                    f,
                    ChainFinding::Forked {
                        recomputed: Some(_),
                        ..
                    }
                )
            }),
        ),
        (
            "rewrite a new entry's bytes (claim kept)",
            |l| {
                let raw = l.entries[2].record_canonical.as_mut().unwrap();
                *raw = raw.replace("our-witness", "our-witnesz");
                served(l)
            },
            Box::new(|f| matches!(f, ChainFinding::EntryBytesDiffer { n: 3, .. })),
        ),
        (
            "drop an entry: the head answers 409",
            |l| {
                let mut s = served(l);
                s.head = HeadAnswer::Broken(HeadBroken {
                    broken_at: 3,
                    last_linked: 2,
                    head_before_break: None,
                });
                s
            },
            Box::new(|f| matches!(f, ChainFinding::HeadBroken { broken_at: 3, .. })),
        ),
        (
            "drop an entry: the export skips it",
            |l| {
                let mut s = served(l);
                s.new.remove(0);
                s
            },
            Box::new(|f| {
                matches!(
                    f,
                    ChainFinding::Hole(Broken {
                        at: 3,
                        found: Some(4)
                    })
                )
            }),
        ),
        (
            "the export stops short of the served head",
            |l| {
                let mut s = served(l);
                s.new.pop();
                s
            },
            Box::new(|f| matches!(f, ChainFinding::Hole(Broken { at: 4, found: None }))),
        ),
        (
            "serve a rewound head",
            |l| {
                l.entries.truncate(1);
                served(l)
            },
            Box::new(
                |f| matches!(f, ChainFinding::Rewound { held, served } if held.n == 2 && served.n == 1),
            ),
        ),
        (
            "serve a forked head at the held n",
            |l| {
                l.entries.truncate(2);
                let mut s = served(l);
                if let HeadAnswer::Head(h) = &mut s.head {
                    h.head = "f".repeat(64);
                    h.prev_entry_sha256 = h.head.clone();
                    h.entry_sha256 = chain::marker_sha256(2, &h.head);
                }
                s
            },
            Box::new(
                |f| matches!(f, ChainFinding::Forked { served, recomputed: None, .. } if served.head == "f".repeat(64)),
            ),
        ),
        (
            "serve a forked head past the held n",
            |l| {
                let mut s = served(l);
                if let HeadAnswer::Head(h) = &mut s.head {
                    h.head = "e".repeat(64);
                    h.entry_sha256 = chain::marker_sha256(4, &h.head);
                }
                s
            },
            Box::new(
                |f| matches!(f, ChainFinding::Forked { recomputed: Some(r), .. } if *r != "e".repeat(64)),
            ),
        ),
        (
            "serve a marker that does not bind the head",
            |l| {
                let mut s = served(l);
                if let HeadAnswer::Head(h) = &mut s.head {
                    h.entry_sha256 = "d".repeat(64);
                }
                s
            },
            Box::new(|f| matches!(f, ChainFinding::MarkerDiffers { n: 4, .. })),
        ),
        (
            "a checkpoint carries a marker that is not the head's",
            |l| {
                let mut s = served(l);
                if let Some(CarriedHead::Linked { marker_sha256, .. }) = &mut s.new[1].carried {
                    *marker_sha256 = Some("c".repeat(64));
                }
                s
            },
            Box::new(|f| {
                matches!(
                    f,
                    ChainFinding::CarriedHeadDiffers {
                        in_entry: 4,
                        at_n: 3,
                        field: "marker_sha256",
                        ..
                    }
                )
            }),
        ),
        (
            "a batch carries a head that is not the chain's",
            |l| {
                let mut s = served(l);
                if let Some(CarriedHead::Linked { entry_sha256, .. }) = &mut s.new[0].carried {
                    *entry_sha256 = "b".repeat(64);
                }
                s
            },
            Box::new(|f| {
                matches!(
                    f,
                    ChainFinding::CarriedHeadDiffers {
                        in_entry: 3,
                        at_n: 2,
                        field: "entry_sha256",
                        ..
                    }
                )
            }),
        ),
        (
            "a batch says the chain was broken when it was written",
            |l| {
                let mut s = served(l);
                s.new[0].carried = Some(CarriedHead::Broken {
                    chain: "jidec-chain-v1".into(),
                    broken_at: 2,
                    last_linked: 1,
                });
                s
            },
            Box::new(|f| {
                matches!(
                    f,
                    ChainFinding::CarriedChainBroken {
                        in_entry: 3,
                        broken_at: 2,
                        last_linked: 1,
                    }
                ) && f.name() == "ledger_head_broken"
            }),
        ),
        (
            "an export row's entry_sha256 is not the recomputed head",
            |l| {
                let mut s = served(l);
                s.new[1].export_row.as_mut().unwrap().entry_sha256 = "a".repeat(64);
                s
            },
            Box::new(|f| {
                matches!(
                    f,
                    ChainFinding::ExportRowDiffers {
                        n: 4,
                        field: "entry_sha256",
                        ..
                    }
                )
            }),
        ),
    ];
    for (name, fault, expect) in table {
        let (mut ledger, _) = world();
        let held = held_at_2(&ledger);
        let held_seen = ledger.seen(2);
        let s = fault(&mut ledger);
        let mut findings = extension(&held, &s.head, &s.new, None).findings;
        findings.extend(rereads(&held_seen, &s.seen));
        assert!(findings.iter().any(&*expect), "{name}: {findings:?}");
    }
}

/// §8 item 7: stamping (`ots_status`, `bitcoin_block`, `block_time`, `stamped_at`) is not
/// hashed anywhere, so setting it changes no check.
#[test]
fn stamping_fields_change_nothing() {
    let (mut ledger, ours) = world();
    for e in &mut ledger.entries {
        e.ots_status = Some("confirmed".into());
        e.bitcoin_block = Some(925_000.into());
        e.block_time = Some(1_764_600_000.into());
        e.stamped_at = Some("2026-12-02T06:00:00.000Z".into());
        e.pending_stage = None;
    }
    let held = held_at_2(&ledger);
    let ext = extension(&held, &ledger.served_head(), &ledger.new_entries(2), None);
    assert_eq!(ext.findings, vec![]);
    assert!(check_inclusion(&ledger, &anchored(Some(ours), 3), 3).verified());
}

/// The export's end line must be the served head.
#[test]
fn export_end_line_must_be_the_head() {
    let (ledger, _) = world();
    let HeadAnswer::Head(head) = ledger.served_head() else {
        panic!()
    };
    let held = held_at_2(&ledger);
    let new = ledger.new_entries(2);
    assert_eq!(
        extension(&held, &ledger.served_head(), &new, Some(&head)).findings,
        vec![]
    );
    let mut end = head.clone();
    end.n = 3;
    assert!(matches!(
        extension(&held, &ledger.served_head(), &new, Some(&end)).findings[..],
        [ChainFinding::ExportEndDiffers { .. }]
    ));
}

/// §2.5 and §8 item 7 (stale pending key, delayed visibility): what one answer may follow.
#[test]
fn witness_answer_transitions() {
    let (_, ours) = world();
    let sha = sha256_hex(OURS);
    let not_found = WitnessAnswer::NotFound { sha: sha.clone() };
    let pending = WitnessAnswer::Pending {
        record: ours.clone(),
        responses: vec![ResponseRef {
            response_sha: "ab".repeat(32),
            url: "u".into(),
            subject_origin: "https://agent.example".into(),
            responded_at: "2026-12-02T08:00:00Z".into(),
        }],
    };
    let at3 = anchored(Some(ours.clone()), 3);
    let seen3 = Seen::of(&at3);
    // Delayed visibility: 404 or pending before anchoring is allowed (grace is the caller's).
    assert_eq!(transition(None, &not_found), None);
    assert_eq!(transition(Some(&Seen::Pending), &not_found), None);
    assert_eq!(transition(Some(&Seen::Pending), &at3), None);
    assert_eq!(transition(seen3.as_ref(), &at3), None);
    // A stale pending key that wins over the anchored form.
    assert_eq!(
        transition(seen3.as_ref(), &pending),
        Some(TransitionFinding::AnchoredThenPending { ledger_entry: 3 })
    );
    assert_eq!(
        transition(seen3.as_ref(), &not_found),
        Some(TransitionFinding::AnchoredThenNotFound { ledger_entry: 3 })
    );
    assert_eq!(
        transition(seen3.as_ref(), &anchored(Some(ours.clone()), 5)),
        Some(TransitionFinding::LedgerEntryChanged { was: 3, now: 5 })
    );
    let mut changed = ours;
    changed.record_canonical.push(' ');
    assert!(matches!(
        transition(seen3.as_ref(), &anchored(Some(changed), 3)),
        Some(TransitionFinding::StoredBytesChanged { .. })
    ));
}

/// The ledger grew between the head read and the export read: the extra rows are checked and
/// are no finding; the head held next is the served one.
#[test]
fn export_read_after_a_new_batch_is_no_finding() {
    let (mut ledger, _) = world();
    ledger.entries.truncate(3);
    let served = ledger.served_head();
    let (grown, _) = world();
    let HeadAnswer::Head(end) = grown.served_head() else {
        panic!()
    };
    let got = extension(
        &held_at_2(&grown),
        &served,
        &grown.new_entries(2),
        Some(&end),
    );
    assert_eq!(got.findings, vec![]);
    assert_eq!(got.heads.len(), 2);
    assert_eq!(got.hold.map(|h| h.n), Some(3));
}

/// ledger.md §6.5 `--hold`: a forged held head is reported against an honest ledger.
#[test]
fn a_forged_held_head_is_reported() {
    let (ledger, _) = world();
    let forged = HeldHead {
        n: 2,
        head: "9".repeat(64),
    };
    let got = extension(&forged, &ledger.served_head(), &ledger.new_entries(2), None);
    assert!(got.hold.is_none());
    assert!(
        got.findings
            .iter()
            .any(|f| matches!(f, ChainFinding::ForkedAtJunction { .. }))
    );
    assert!(
        got.findings
            .iter()
            .any(|f| matches!(f, ChainFinding::Forked { .. }))
    );
}

/// `/ledger/head` must agree with itself (§5.2).
#[test]
fn a_self_contradicting_head_is_reported() {
    let (ledger, _) = world();
    let HeadAnswer::Head(mut head) = ledger.served_head() else {
        panic!()
    };
    head.prev_entry_sha256 = chain::ROOT.into();
    head.root = "1".repeat(64);
    let got = extension(
        &held_at_2(&ledger),
        &HeadAnswer::Head(head),
        &ledger.new_entries(2),
        None,
    );
    let fields: Vec<&str> = got
        .findings
        .iter()
        .filter_map(|f| match f {
            ChainFinding::HeadMalformed { field, .. } => Some(*field),
            _ => None,
        })
        .collect();
    assert_eq!(fields, ["prev_entry_sha256", "root"]);
}

/// §8 item 7, drop an entry, as the export shows it: the rows up to k − 1, then the broken
/// line (and the head answers 409).
#[test]
fn a_dropped_entry_ends_the_export_with_the_broken_line() {
    let (ledger, _) = world();
    let new = ledger.new_entries(2);
    let mut x = Extender::new(held_at_2(&ledger));
    match ExportLine::parse(br#"{"schema":"jidec-chain-broken-v1","broken_at":3,"last_linked":2}"#)
        .unwrap()
    {
        ExportLine::Broken {
            broken_at,
            last_linked,
        } => x.export_broken(broken_at, last_linked),
        other => panic!("{other:?}"),
    }
    x.push(&new[1]);
    let head = HeadAnswer::Broken(HeadBroken {
        broken_at: 3,
        last_linked: 2,
        head_before_break: Some(held_at_2(&ledger).head),
    });
    let got = x.finish(&head, None);
    assert_eq!(got.heads, vec![]);
    assert_eq!(got.hold, None);
    assert!(got.findings.contains(&ChainFinding::ExportBroken {
        broken_at: 3,
        last_linked: 2
    }));
    assert!(
        got.findings
            .iter()
            .any(|f| matches!(f, ChainFinding::HeadBroken { broken_at: 3, .. }))
    );
}

/// Fed one entry at a time, the extender stops linking at a hole and reports it once.
#[test]
fn extender_streams_and_stops_at_a_hole() {
    let (ledger, _) = world();
    let new = ledger.new_entries(0);
    let mut x = Extender::new(HeldHead::root());
    for e in [&new[0], &new[2], &new[3]] {
        x.push(e);
    }
    let got = x.finish(&ledger.served_head(), None);
    assert_eq!(
        got.findings,
        vec![ChainFinding::Hole(Broken {
            at: 2,
            found: Some(3)
        })]
    );
    assert_eq!(got.heads.len(), 1);
}
