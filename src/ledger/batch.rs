//! The texts the worker writes into ledger entries (ledger.md §4.4, §4.5) and their
//! `claim_sha256`, built from their parts in `JSON.stringify`'s form (`super::text`).

use super::chain::{ROOT, marker_sha256};
use super::text::js_stringify;
use super::wire::{BatchRow, CarriedHead};
use crate::digest::sha256_hex;
use serde::Serialize;

/// The chain head written into a batch or checkpoint: (N, head_N) with N the entry count before
/// it; a checkpoint also carries marker_N.
pub fn linked_head(n: u64, head: &str, with_marker: bool) -> CarriedHead {
    CarriedHead::Linked {
        chain: super::CHAIN.into(),
        n,
        entry_sha256: head.into(),
        marker_sha256: with_marker.then(|| marker_sha256(n, head)),
    }
}

/// The head an empty ledger carries into its first batch.
pub fn empty_head() -> CarriedHead {
    linked_head(0, ROOT, false)
}

#[derive(Serialize)]
struct BatchObject<'a> {
    schema: &'a str,
    anchored_at: &'a str,
    count: usize,
    ledger_head: &'a CarriedHead,
    records: &'a [BatchRow],
}

/// A `nenrin-witness-batch-v1` text: `rows` in the order given (the worker sorts them by sha,
/// §4.2; the caller decides, since the newer worker orders by submission).
pub fn batch_text(anchored_at: &str, ledger_head: &CarriedHead, rows: &[BatchRow]) -> String {
    js_stringify(&BatchObject {
        schema: super::BATCH_SCHEMA,
        anchored_at,
        count: rows.len(),
        ledger_head,
        records: rows,
    })
}

/// The note every checkpoint carries, verbatim (§4.5).
pub const CHECKPOINT_NOTE: &str = "the jidec-chain-v1 head of entries 1..n and the hash of the bound jidec-head-v1 end marker at n; this entry's claim_sha256 is stamped to Bitcoin, which bounds both from above";

#[derive(Serialize)]
struct CheckpointObject<'a> {
    schema: &'a str,
    anchored_at: &'a str,
    ledger_head: &'a CarriedHead,
    note: &'a str,
}

/// A `nenrin-head-checkpoint-v1` text over entries 1..n with head_n.
pub fn checkpoint_text(anchored_at: &str, n: u64, head: &str) -> String {
    js_stringify(&CheckpointObject {
        schema: super::CHECKPOINT_SCHEMA,
        anchored_at,
        ledger_head: &linked_head(n, head, true),
        note: CHECKPOINT_NOTE,
    })
}

/// The entry's `work` for a batch of `k` records (§4.3; "records" also for k = 1).
pub fn batch_work(k: usize) -> String {
    format!("NENRIN witness batch ({k} records)")
}

/// The entry's `work` for a checkpoint over entries 1..n (§4.5).
pub fn checkpoint_work(n: u64) -> String {
    format!("NENRIN head checkpoint (entries 1..{n})")
}

/// `claim_sha256` of an entry: the sha256 of its text's UTF-8 bytes.
pub fn claim_sha256(text: &str) -> String {
    sha256_hex(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::super::chain::{ChainFields, entry_sha256, extend};
    use super::super::wire::{EntryText, StoredRecord};
    use super::*;

    const HEAD_1: &str = "fa548cc57ce7819dfb71e394f2f56f3995f02a18639afb962f04a581d785dd06";
    const HEAD_2: &str = "50c188b7ff3e14f52ed74a371742d1fec7f5aa471e01e64f8312461910ea498a";
    const CLAIM_2: &str = "05164388fbaced0e9cb721336f8aebedde6b4f755b3683359ca7f9484df4e2d5";

    /// ledger.md §4.4, observed entry 2, verbatim.
    pub(crate) const ENTRY_2_BYTES: &str = r#"{"schema":"nenrin-witness-batch-v1","anchored_at":"2026-12-01T13:25:30.570Z","count":2,"ledger_head":{"chain":"jidec-chain-v1","n":1,"entry_sha256":"fa548cc57ce7819dfb71e394f2f56f3995f02a18639afb962f04a581d785dd06"},"records":[{"sha":"acc5955cc5d91efb0f55a30e6b4ca6dd9e3c1991ba4be4731245e9731b3d730b","purpose":"a2a-conduct-walk-v1: https://agent-obs2-a.example/a2a","witness_name":"obs-witness-3","vantage":"probe obs2 #2","signed":false},{"sha":"f641bf701f1a7a83219c9c884a96c88eef0bc75ead8e0318c11904a6b3c2eeed","purpose":"a2a-conduct-walk-v1: https://agent-obs2-a.example/a2a","witness_name":"obs-witness-2","vantage":"lab 🧪 \"quoted\"","signed":false}]}"#;

    fn stored(sha: &str, witness_name: &str, vantage: &str) -> StoredRecord {
        StoredRecord {
            submitted_at: Some("2026-12-01T13:25:20.000Z".into()),
            ..StoredRecord::unsigned(
                sha,
                "https://agent-obs2-a.example/a2a",
                witness_name,
                vantage,
            )
        }
    }

    /// ledger.md §4.4: entry 2's 660 bytes, rebuilt from its parts (the two stored records, the
    /// head before it, the batch time), byte for byte, and its sha256.
    #[test]
    fn vector_4_4_entry_2_batch_bytes() {
        let rows = [
            BatchRow::of(&stored(
                "acc5955cc5d91efb0f55a30e6b4ca6dd9e3c1991ba4be4731245e9731b3d730b",
                "obs-witness-3",
                "probe obs2 #2",
            )),
            BatchRow::of(&stored(
                "f641bf701f1a7a83219c9c884a96c88eef0bc75ead8e0318c11904a6b3c2eeed",
                "obs-witness-2",
                "lab 🧪 \"quoted\"",
            )),
        ];
        let text = batch_text(
            "2026-12-01T13:25:30.570Z",
            &linked_head(1, HEAD_1, false),
            &rows,
        );
        assert_eq!(text, ENTRY_2_BYTES);
        assert_eq!(text.len(), 660);
        assert_eq!(claim_sha256(&text), CLAIM_2);
        // And it reads back into the same parts.
        let EntryText::Batch(batch) = EntryText::parse(text.as_bytes()).unwrap() else {
            panic!("not a batch")
        };
        assert_eq!(batch.count, 2);
        assert_eq!(batch.records, rows);
        assert_eq!(batch.ledger_head, linked_head(1, HEAD_1, false));
    }

    /// ledger.md §4.4, the observed rows of entry 1: `mode` only if not full, `counted: false`
    /// only if not counted, `signed_domain` only if set, in that order after `signed`; raw UTF-8.
    #[test]
    fn vector_4_4_entry_1_row_shapes() {
        let mut hash_only = stored("212d20ba", "証人-é", "probe obs1 #4");
        hash_only.signed = true;
        hash_only.mode = Some("hash-only".into());
        let row = js_stringify(&BatchRow::of(&hash_only));
        assert!(
            row.ends_with(r#""witness_name":"証人-é","vantage":"probe obs1 #4","signed":true,"mode":"hash-only"}"#),
            "{row}"
        );
        let mut commitment = stored("aa", "w", "v");
        commitment.mode = Some("commitment".into());
        commitment.counted = Some(false);
        assert!(
            js_stringify(&BatchRow::of(&commitment))
                .ends_with(r#""signed":false,"mode":"commitment","counted":false}"#)
        );
        let mut domain = stored("bb", "w", "v");
        domain.signed = true;
        domain.signed_domain = Some("127.5.100.51".into());
        assert!(
            js_stringify(&BatchRow::of(&domain))
                .ends_with(r#""signed":true,"signed_domain":"127.5.100.51"}"#)
        );
    }

    /// ledger.md §6.4 row 3 and §4.5: the checkpoint after entry 2, rebuilt from (2, head_2)
    /// and its time (the spec shortens its claim to `95368077…5f82e6e1`; the checkpoint's
    /// `anchored_at` is the one time whose text hashes to that, 13:25:30.651Z), then head_3.
    #[test]
    fn vector_6_4_entry_3_checkpoint_and_head() {
        let text = checkpoint_text("2026-12-01T13:25:30.651Z", 2, HEAD_2);
        assert!(text.contains(
            r#""ledger_head":{"chain":"jidec-chain-v1","n":2,"entry_sha256":"50c188b7ff3e14f52ed74a371742d1fec7f5aa471e01e64f8312461910ea498a","marker_sha256":"686cd402"#
        ));
        let claim = claim_sha256(&text);
        assert!(
            claim.starts_with("95368077") && claim.ends_with("5f82e6e1"),
            "{claim}"
        );
        let e3 = ChainFields {
            n: 3,
            claim_sha256: claim,
            schema: Some("v0-plain".into()),
            created_at: Some("2026-12-01T13:25:30.651Z".into()),
        };
        assert_eq!(
            entry_sha256(&e3, HEAD_2),
            "a786c972cba1babc5b10636c19a642e48794e9bd6eb2eb63b964966daa02f31c"
        );
        assert!(matches!(
            EntryText::parse(text.as_bytes()).unwrap(),
            EntryText::Checkpoint(_)
        ));
    }

    /// The whole observed chain 1..3 from the root, with entry 2's claim computed from its
    /// bytes rather than copied.
    #[test]
    fn vector_6_4_chain_1_to_3_from_parts() {
        let v0 = |n, claim: String, at: &str| ChainFields {
            n,
            claim_sha256: claim,
            schema: Some("v0-plain".into()),
            created_at: Some(at.into()),
        };
        let entries = [
            v0(
                1,
                "c85dbef09ad8e4e789f090374efd30abbfd7f64af4a8c644292333094d59fec4".into(),
                "2026-12-01T13:25:16.153Z",
            ),
            v0(2, claim_sha256(ENTRY_2_BYTES), "2026-12-01T13:25:30.570Z"),
            v0(
                3,
                claim_sha256(&checkpoint_text("2026-12-01T13:25:30.651Z", 2, HEAD_2)),
                "2026-12-01T13:25:30.651Z",
            ),
        ];
        let heads = extend(0, ROOT, &entries).unwrap();
        assert_eq!(heads[0], HEAD_1);
        assert_eq!(heads[1], HEAD_2);
        assert_eq!(
            heads[2],
            "a786c972cba1babc5b10636c19a642e48794e9bd6eb2eb63b964966daa02f31c"
        );
    }

    /// §4.3, §5.1: the entries' `work` strings as observed.
    #[test]
    fn work_strings() {
        assert_eq!(batch_work(1), "NENRIN witness batch (1 records)");
        assert_eq!(checkpoint_work(2), "NENRIN head checkpoint (entries 1..2)");
    }

    /// The first batch of an empty ledger carries (0, 64 zeros) (§4.4).
    #[test]
    fn first_batch_carries_the_root() {
        let text = batch_text("2026-12-01T00:00:00.000Z", &empty_head(), &[]);
        assert_eq!(
            text,
            format!(
                r#"{{"schema":"nenrin-witness-batch-v1","anchored_at":"2026-12-01T00:00:00.000Z","count":0,"ledger_head":{{"chain":"jidec-chain-v1","n":0,"entry_sha256":"{ROOT}"}},"records":[]}}"#
            )
        );
    }
}
