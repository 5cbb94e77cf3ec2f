//! Table tests of the audit fold: the spec's worked vectors (ledger.md §4.4, §6.4) and a small
//! ledger built with the worker's recipes, fed line by line as the shells feed it, with the
//! bytes answered as a shell would answer them (in order, out of order, missing).

use super::*;
use crate::ledger::batch::{batch_text, checkpoint_text, claim_sha256, empty_head, linked_head};
use crate::ledger::chain::{self, ROOT};
use crate::ledger::wire::{BatchRow, StoredRecord};

/// ledger.md §6.4 (observed): entries 1 and 2, their claims, times and heads.
const CLAIM_1: &str = "c85dbef09ad8e4e789f090374efd30abbfd7f64af4a8c644292333094d59fec4";
const HEAD_1: &str = "fa548cc57ce7819dfb71e394f2f56f3995f02a18639afb962f04a581d785dd06";
const CLAIM_2: &str = "05164388fbaced0e9cb721336f8aebedde6b4f755b3683359ca7f9484df4e2d5";
const HEAD_2: &str = "50c188b7ff3e14f52ed74a371742d1fec7f5aa471e01e64f8312461910ea498a";
const AT_1: &str = "2026-12-01T13:25:16.153Z";
const AT_2: &str = "2026-12-01T13:25:30.570Z";
/// ledger.md §4.4: entry 2's bytes, verbatim (660 bytes; sha256 = CLAIM_2).
const ENTRY_2: &str = r#"{"schema":"nenrin-witness-batch-v1","anchored_at":"2026-12-01T13:25:30.570Z","count":2,"ledger_head":{"chain":"jidec-chain-v1","n":1,"entry_sha256":"fa548cc57ce7819dfb71e394f2f56f3995f02a18639afb962f04a581d785dd06"},"records":[{"sha":"acc5955cc5d91efb0f55a30e6b4ca6dd9e3c1991ba4be4731245e9731b3d730b","purpose":"a2a-conduct-walk-v1: https://agent-obs2-a.example/a2a","witness_name":"obs-witness-3","vantage":"probe obs2 #2","signed":false},{"sha":"f641bf701f1a7a83219c9c884a96c88eef0bc75ead8e0318c11904a6b3c2eeed","purpose":"a2a-conduct-walk-v1: https://agent-obs2-a.example/a2a","witness_name":"obs-witness-2","vantage":"lab 🧪 \"quoted\"","signed":false}]}"#;

fn row(n: u64, claim: &str, at: &str, prev: &str) -> ExportRow {
    let fields = ChainFields {
        n,
        claim_sha256: claim.into(),
        schema: Some("v0-plain".into()),
        created_at: Some(at.into()),
    };
    ExportRow {
        n,
        claim_sha256: claim.into(),
        prev_entry_sha256: prev.into(),
        schema: fields.schema.clone(),
        created_at: fields.created_at.clone(),
        entry_sha256: chain::entry_sha256(&fields, prev),
    }
}

fn head(n: u64, head: &str) -> Head {
    Head {
        schema: "jidec-head-v1".into(),
        n,
        head: head.into(),
        root: ROOT.into(),
        chain: "jidec-chain-v1".into(),
        prev_entry_sha256: head.into(),
        entry_sha256: chain::marker_sha256(n, head),
    }
}

fn held(n: u64, h: &str) -> HeldHead {
    HeldHead { n, head: h.into() }
}

fn names(a: &Audited) -> Vec<&'static str> {
    a.findings.iter().map(AuditFinding::name).collect()
}

/// The §6.4 export of entries 1–2 and its end line.
fn vector_lines() -> Vec<ExportLine> {
    vec![
        ExportLine::Entry(row(1, CLAIM_1, AT_1, ROOT)),
        ExportLine::Entry(row(2, CLAIM_2, AT_2, HEAD_1)),
        ExportLine::End(head(2, HEAD_2)),
    ]
}

/// A full audit of the §6.4 export up to head 2, entry 2 served as `entry_2`, entry 1 a 404.
fn audit_vector(entry_2: &str) -> Audited {
    let bytes = |n: u64| match n {
        2 => Fetched::Bytes(entry_2.as_bytes().to_vec()),
        _ => Fetched::Missing,
    };
    let audit = Audit::full(HeadAnswer::Head(head(2, HEAD_2)), None);
    run(audit, &vector_lines(), &bytes)
}

/// Feeds every line, answering byte needs from `bytes` (n → answer) right away.
fn run(mut audit: Audit, lines: &[ExportLine], bytes: &dyn Fn(u64) -> Fetched) -> Audited {
    for l in lines {
        match audit.on_line(Ok(l.clone())) {
            Need::EntryBytes(n) => audit.on_entry(n, bytes(n)),
            Need::Stop => break,
            Need::Nothing | Need::HeldEntry(_) => {}
        }
    }
    audit.finish()
}

#[test]
fn the_6_4_vector_recomputes_head_2_and_checks_the_head_entry_2_carries() {
    assert_eq!(sha256_hex(ENTRY_2.as_bytes()), CLAIM_2, "§4.4 bytes");
    // Entry 1's bytes are not in the spec: served as a 404, which is the only finding.
    let a = audit_vector(ENTRY_2);
    assert_eq!(
        a.findings,
        [AuditFinding::Served(ServedFinding::EntryMissing { n: 1 })]
    );
    assert_eq!(a.heads, [held(1, HEAD_1), held(2, HEAD_2)]);
    assert_eq!(a.hold, None, "a finding holds nothing");
    assert_eq!(
        a.tally,
        Tally {
            entries: 2,
            batches: 1,
            records_listed: 2,
            ..Tally::default()
        }
    );

    // The same bytes claiming another head_1: the claim no longer matches, and the carried
    // head is not the recomputed one.
    let forged = ENTRY_2.replace(HEAD_1, CLAIM_1);
    let a = audit_vector(&forged);
    assert_eq!(
        names(&a),
        [
            "entry_missing",
            "claim_sha256_differs",
            "ledger_head_differs"
        ]
    );
}

#[test]
fn the_6_4_vector_extends_a_held_head_1_without_bytes() {
    let mut audit = Audit::extend(HeadAnswer::Head(head(2, HEAD_2)), Some(held(1, HEAD_1)), 10);
    assert!(audit.export_needed());
    let lines = vector_lines();
    assert_eq!(audit.on_line(Ok(lines[0].clone())), Need::HeldEntry(1));
    let held_1 = SeenEntry {
        n: 1,
        claim_sha256: CLAIM_1.into(),
        raw_sha256: None,
    };
    audit.on_held(1, Some(&held_1));
    assert_eq!(audit.on_line(Ok(lines[1].clone())), Need::Nothing);
    assert_eq!(audit.on_line(Ok(lines[2].clone())), Need::Nothing);
    let a = audit.finish();
    assert_eq!(a.findings, []);
    assert_eq!(a.hold, Some(held(2, HEAD_2)));
    assert_eq!(a.heads, [held(2, HEAD_2)]);
    assert_eq!(a.rows, [row(2, CLAIM_2, AT_2, HEAD_1).chain_fields()]);

    // Held entry 1 was seen with another claim: entry_changed, and nothing is held.
    let mut audit = Audit::extend(HeadAnswer::Head(head(2, HEAD_2)), Some(held(1, HEAD_1)), 10);
    audit.on_line(Ok(lines[0].clone()));
    audit.on_held(
        1,
        Some(&SeenEntry {
            claim_sha256: CLAIM_2.into(),
            ..held_1
        }),
    );
    audit.on_line(Ok(lines[1].clone()));
    audit.on_line(Ok(lines[2].clone()));
    let a = audit.finish();
    assert_eq!(names(&a), ["entry_changed"]);
    assert_eq!(a.hold, None);
}

/// A ledger of three entries made with the worker's recipes: a batch of two records, its
/// checkpoint, a batch of one.
struct Small {
    texts: Vec<String>,
    rows: Vec<ExportRow>,
    heads: Vec<String>,
}

fn record(i: u8) -> BatchRow {
    let sha = format!("{i:02x}").repeat(32);
    BatchRow::of(&StoredRecord::unsigned(
        &sha,
        "https://agent.example/a2a",
        "w",
        "probe",
    ))
}

fn small() -> Small {
    let mut s = Small {
        texts: Vec::new(),
        rows: Vec::new(),
        heads: Vec::new(),
    };
    let times = [
        "2026-12-01T00:30:00.100Z",
        "2026-12-01T00:30:00.200Z",
        "2026-12-02T00:30:00.100Z",
    ];
    for (i, at) in times.iter().enumerate() {
        let n = i as u64;
        let prev = s.heads.last().cloned().unwrap_or_else(|| ROOT.into());
        let text = match i {
            0 => batch_text(at, &empty_head(), &[record(1), record(2)]),
            1 => checkpoint_text(at, n, &prev),
            _ => batch_text(at, &linked_head(n, &prev, false), &[record(3)]),
        };
        let r = row(n + 1, &claim_sha256(&text), at, &prev);
        s.heads.push(r.entry_sha256.clone());
        s.rows.push(r);
        s.texts.push(text);
    }
    s
}

impl Small {
    fn head(&self) -> Head {
        head(3, &self.heads[2])
    }

    fn lines(&self) -> Vec<ExportLine> {
        let mut l: Vec<ExportLine> = self.rows.iter().cloned().map(ExportLine::Entry).collect();
        l.push(ExportLine::End(self.head()));
        l
    }

    fn bytes(&self, n: u64) -> Fetched {
        Fetched::Bytes(self.texts[n as usize - 1].clone().into_bytes())
    }
}

#[test]
fn full_audit_table() {
    type Case = (
        &'static str,
        fn(&Small) -> (Vec<ExportLine>, Option<HeldHead>),
        fn(&Small, u64) -> Fetched,
        &'static [&'static str],
    );
    let honest: fn(&Small, u64) -> Fetched = |s, n| s.bytes(n);
    let cases: [Case; 10] = [
        ("honest", |s| (s.lines(), None), honest, &[]),
        (
            "a held head still in the chain",
            |s| (s.lines(), Some(held(2, &s.heads[1]))),
            honest,
            &[],
        ),
        (
            "a forged held head",
            |s| (s.lines(), Some(held(2, &s.heads[0]))),
            honest,
            &["forked_head"],
        ),
        (
            "a held head ahead of the served one",
            |s| (s.lines(), Some(held(9, &s.heads[0]))),
            honest,
            &["rewound_head"],
        ),
        (
            "no end line",
            |s| (s.lines()[..3].to_vec(), None),
            honest,
            &["export_end_missing"],
        ),
        (
            "a line after the end line",
            |s| {
                let mut l = s.lines();
                l.push(l[0].clone());
                (l, None)
            },
            honest,
            &["export_end_missing"],
        ),
        (
            "the rows stop before the end line's n",
            |s| {
                let mut l = s.lines();
                l.remove(2);
                (l, None)
            },
            honest,
            &["export_end_differs", "hole"],
        ),
        (
            "entry 2 missing",
            |s| (s.lines(), None),
            |s, n| if n == 2 { Fetched::Missing } else { s.bytes(n) },
            &["entry_missing"],
        ),
        (
            "entry 3 miscounted (claim following the bytes is still a finding)",
            |s| (s.lines(), None),
            |s, n| match n {
                3 => {
                    let Fetched::Bytes(b) = s.bytes(3) else {
                        unreachable!()
                    };
                    let t = String::from_utf8(b)
                        .unwrap()
                        .replace("\"count\":1", "\"count\":2");
                    Fetched::Bytes(t.into_bytes())
                }
                _ => s.bytes(n),
            },
            &["batch_count_differs", "claim_sha256_differs"],
        ),
        (
            "the export says its chain broke at 3",
            |s| {
                let mut l = s.lines()[..2].to_vec();
                l.push(ExportLine::Broken {
                    broken_at: 3,
                    last_linked: 2,
                });
                (l, None)
            },
            honest,
            &["export_chain_broken"],
        ),
    ];
    let s = small();
    for (name, lines, bytes, expected) in cases {
        let (lines, held_head) = lines(&s);
        let a = run(
            Audit::full(HeadAnswer::Head(s.head()), held_head),
            &lines,
            &|n| bytes(&s, n),
        );
        assert_eq!(names(&a), expected, "{name}: {:?}", a.findings);
        assert_eq!(
            a.hold.is_some(),
            expected.is_empty(),
            "{name}: held only when nothing was found"
        );
        if expected.is_empty() {
            assert_eq!(a.hold, Some(held(3, &s.heads[2])), "{name}");
            assert_eq!(
                a.tally,
                Tally {
                    entries: 3,
                    batches: 2,
                    checkpoints: 1,
                    other_entries: 0,
                    records_listed: 3
                },
                "{name}"
            );
        }
    }
}

/// Bytes answered in any order (a shell with fetches in flight) judge the same, and the
/// findings stay in export order.
#[test]
fn bytes_answered_out_of_order_judge_the_same() {
    let s = small();
    let mut audit = Audit::full(HeadAnswer::Head(s.head()), None);
    let mut asked = Vec::new();
    for l in s.lines() {
        if let Need::EntryBytes(n) = audit.on_line(Ok(l)) {
            asked.push(n);
        }
    }
    assert_eq!(asked, [1, 2, 3]);
    audit.on_entry(3, Fetched::Unreadable("not JSON".into()));
    audit.on_entry(1, Fetched::Missing);
    audit.on_entry(2, s.bytes(2));
    let a = audit.finish();
    assert_eq!(
        a.findings,
        [
            AuditFinding::Served(ServedFinding::EntryMissing { n: 1 }),
            AuditFinding::Served(ServedFinding::EntryUnreadable {
                n: 3,
                detail: "not JSON".into()
            }),
        ]
    );
    assert_eq!(a.tally.entries, 3);
    assert_eq!(a.heads.len(), 3, "the chain is still recomputed");
}

/// An unreadable line ends the read: its finding comes after the findings of the rows before
/// it (however late their bytes came), and the cut says where.
#[test]
fn an_unreadable_line_cuts_the_export() {
    let s = small();
    let mut audit = Audit::full(HeadAnswer::Head(s.head()), None);
    assert_eq!(
        audit.on_line(Ok(ExportLine::Entry(s.rows[0].clone()))),
        Need::EntryBytes(1)
    );
    assert_eq!(audit.on_line(Err("line too long".into())), Need::Stop);
    assert_eq!(audit.on_line(Ok(s.lines()[1].clone())), Need::Stop);
    audit.on_entry(1, Fetched::Missing);
    let a = audit.finish();
    assert_eq!(
        names(&a),
        ["entry_missing", "export_line_unreadable", "hole"]
    );
    assert_eq!(
        a.cut,
        Some(Cut::UnreadableLine {
            line: 2,
            detail: "line too long".into()
        })
    );
    assert_eq!(a.hold, None);
}

#[test]
fn extend_table() {
    let s = small();
    let served = HeadAnswer::Head(s.head());
    // Held at 3 = served: no export; the marker is still checked and the head held again.
    let audit = Audit::extend(served.clone(), Some(held(3, &s.heads[2])), 10);
    assert!(!audit.export_needed());
    let a = audit.finish();
    assert_eq!((names(&a), a.hold), (vec![], Some(held(3, &s.heads[2]))));
    // Nothing held yet: the root, and the export is read even for an empty ledger.
    let empty = HeadAnswer::Head(head(0, ROOT));
    assert!(Audit::extend(empty, None, 10).export_needed());
    // Held past the served head: rewound, said without the export.
    let audit = Audit::extend(served.clone(), Some(held(5, &s.heads[2])), 10);
    assert!(!audit.export_needed());
    assert_eq!(names(&audit.finish()), ["rewound_head"]);
    // A broken head: no export either.
    let broken = HeadAnswer::Broken(crate::ledger::wire::HeadBroken {
        broken_at: 2,
        last_linked: 1,
        head_before_break: None,
    });
    let audit = Audit::extend(broken, Some(held(1, &s.heads[0])), 10);
    assert!(!audit.export_needed());
    assert_eq!(names(&audit.finish()), ["chain_broken"]);
    // Held at 1, two new rows, room for one: cut, nothing judged as whole.
    let mut audit = Audit::extend(served.clone(), Some(held(1, &s.heads[0])), 1);
    let needs: Vec<Need> = s
        .lines()
        .into_iter()
        .map(|l| audit.on_line(Ok(l)))
        .collect();
    assert_eq!(
        needs,
        [Need::HeldEntry(1), Need::Nothing, Need::Stop, Need::Stop]
    );
    let a = audit.finish();
    assert_eq!(a.cut, Some(Cut::TooManyRows { max_new_rows: 1 }));
    assert_eq!(a.hold, None);
    // Held at 1 with room: the two new rows are linked and kept, with their heads.
    let a = run(
        Audit::extend(served, Some(held(1, &s.heads[0])), 10),
        &s.lines(),
        &|_| unreachable!("extend reads no bytes"),
    );
    assert_eq!(names(&a), Vec::<&str>::new());
    assert_eq!(a.hold, Some(held(3, &s.heads[2])));
    assert_eq!(
        a.heads,
        [held(2, &s.heads[1]), held(3, &s.heads[2])],
        "heads[i] is rows[i]'s"
    );
    assert_eq!(a.rows.iter().map(|r| r.n).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(a.tally, Tally::default());
}
