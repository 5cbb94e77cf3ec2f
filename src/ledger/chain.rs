//! The hash chain `jidec-chain-v1` (ledger.md §6): head_0 is the root (64 zeros); head_n is the
//! sha256 of the chain text (§6.2, `super::text::ascii_compact`) of `{n, claim_sha256,
//! prev_entry_sha256: head_{n-1}}` plus `schema` and `created_at` when they are strings. The end
//! marker (§6.3) binds (n, head_n) the same way.

use super::text::ascii_compact;
use crate::digest::sha256_hex;
use serde::Serialize;

/// head_0: the root, 64 `0` characters (kept with the held head, which starts there).
pub use crate::ledger_plan::ROOT;

/// What the chain covers of an entry (§6.1 step 5). `schema` / `created_at` are `None` when the
/// entry's value is absent or not a string: omitted, never null.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainFields {
    pub n: u64,
    pub claim_sha256: String,
    pub schema: Option<String>,
    pub created_at: Option<String>,
}

/// The hashed object; fields declared in code-point order, which is the order §6.2 sorts to.
#[derive(Serialize)]
struct EntryObject<'a> {
    claim_sha256: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    created_at: Option<&'a str>,
    n: u64,
    prev_entry_sha256: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    schema: Option<&'a str>,
}

/// The end marker's object, fields in code-point order.
#[derive(Serialize)]
struct MarkerObject<'a> {
    head: &'a str,
    n: u64,
    prev_entry_sha256: &'a str,
    schema: &'a str,
}

/// The chain text of entry `fields` whose predecessor's head is `prev` (§6.1 steps 3–4).
pub fn entry_text(fields: &ChainFields, prev: &str) -> String {
    ascii_compact(&EntryObject {
        claim_sha256: &fields.claim_sha256,
        created_at: fields.created_at.as_deref(),
        n: fields.n,
        prev_entry_sha256: prev,
        schema: fields.schema.as_deref(),
    })
}

/// head_n = entry_sha256(n): lower-case hex sha256 of [`entry_text`].
pub fn entry_sha256(fields: &ChainFields, prev: &str) -> String {
    sha256_hex(entry_text(fields, prev))
}

/// The end marker's text at (n, head_n) (§6.3).
pub fn marker_text(n: u64, head: &str) -> String {
    ascii_compact(&MarkerObject {
        head,
        n,
        prev_entry_sha256: head,
        schema: super::HEAD_SCHEMA,
    })
}

/// marker_n: served as `entry_sha256` of `/ledger/head` and the export's end line, and written
/// as `marker_sha256` into checkpoints.
pub fn marker_sha256(n: u64, head: &str) -> String {
    sha256_hex(marker_text(n, head))
}

/// An entry out of place in the chain: a hole (a missing `n`) or a wrong `n`, never skipped
/// (§6.1 step 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[error("chain broken at entry {at}: expected n = {at}, found {found:?}")]
pub struct Broken {
    pub at: u64,
    pub found: Option<u64>,
}

/// Extends the chain from (n, head_n) over the entries n+1, n+2, … and returns each new head
/// in order (`heads[i]` is head_{n+1+i}). Start from `(0, ROOT)` for the whole chain.
pub fn extend<'a>(
    from_n: u64,
    from_head: &str,
    entries: impl IntoIterator<Item = &'a ChainFields>,
) -> Result<Vec<String>, Broken> {
    let mut heads: Vec<String> = Vec::new();
    for (expected, fields) in (from_n + 1..).zip(entries) {
        if fields.n != expected {
            return Err(Broken {
                at: expected,
                found: Some(fields.n),
            });
        }
        let prev = heads.last().map(String::as_str).unwrap_or(from_head);
        heads.push(entry_sha256(fields, prev));
    }
    Ok(heads)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v0(n: u64, claim: &str, created_at: &str) -> ChainFields {
        ChainFields {
            n,
            claim_sha256: claim.into(),
            schema: Some("v0-plain".into()),
            created_at: Some(created_at.into()),
        }
    }

    const CLAIM_1: &str = "c85dbef09ad8e4e789f090374efd30abbfd7f64af4a8c644292333094d59fec4";
    const HEAD_1: &str = "fa548cc57ce7819dfb71e394f2f56f3995f02a18639afb962f04a581d785dd06";
    const CLAIM_2: &str = "05164388fbaced0e9cb721336f8aebedde6b4f755b3683359ca7f9484df4e2d5";
    const HEAD_2: &str = "50c188b7ff3e14f52ed74a371742d1fec7f5aa471e01e64f8312461910ea498a";
    const HEAD_3: &str = "a786c972cba1babc5b10636c19a642e48794e9bd6eb2eb63b964966daa02f31c";

    /// ledger.md §6.4: entry 1's hashed text, verbatim, and head_1.
    #[test]
    fn vector_6_4_entry_1_hashed_text_and_head() {
        let e1 = v0(1, CLAIM_1, "2026-12-01T13:25:16.153Z");
        assert_eq!(
            entry_text(&e1, ROOT),
            r#"{"claim_sha256":"c85dbef09ad8e4e789f090374efd30abbfd7f64af4a8c644292333094d59fec4","created_at":"2026-12-01T13:25:16.153Z","n":1,"prev_entry_sha256":"0000000000000000000000000000000000000000000000000000000000000000","schema":"v0-plain"}"#
        );
        assert_eq!(entry_sha256(&e1, ROOT), HEAD_1);
    }

    /// ledger.md §6.4 row 2: head_2 from head_1 and entry 2 (the §4.4 batch).
    #[test]
    fn vector_6_4_entry_2_head() {
        let heads = extend(
            0,
            ROOT,
            &[
                v0(1, CLAIM_1, "2026-12-01T13:25:16.153Z"),
                v0(2, CLAIM_2, "2026-12-01T13:25:30.570Z"),
            ],
        )
        .unwrap();
        assert_eq!(heads, [HEAD_1, HEAD_2]);
        // Extending from a held head gives the same head as recomputing from the root.
        let from_held = extend(1, HEAD_1, &[v0(2, CLAIM_2, "2026-12-01T13:25:30.570Z")]).unwrap();
        assert_eq!(from_held, [HEAD_2]);
    }

    /// ledger.md §6.4: the marker at n = 3, its text verbatim and its hash, as `/ledger/head`
    /// served it.
    #[test]
    fn vector_6_4_marker_at_3() {
        assert_eq!(
            marker_text(3, HEAD_3),
            format!(
                r#"{{"head":"{HEAD_3}","n":3,"prev_entry_sha256":"{HEAD_3}","schema":"jidec-head-v1"}}"#
            )
        );
        assert_eq!(
            marker_sha256(3, HEAD_3),
            "4f4bb61979f7bc96ed1da14629e4e94d3417b9592dcaa854faf2fe9f4340f9f0"
        );
    }

    /// ledger.md §5.2: the empty ledger's marker, and the marker at n = 1 (shortened in the
    /// spec: `7f0e7e97…3c74f41d`); §6.4 row 3: the checkpoint carries marker_2 `686cd402…`.
    #[test]
    fn vector_5_2_markers_empty_and_n1_and_6_4_marker_2() {
        assert_eq!(
            marker_sha256(0, ROOT),
            "60f4637ad1d175e86399e7aefb51415e9562171938b011fcf6c81fb6c96d1617"
        );
        let m1 = marker_sha256(1, HEAD_1);
        assert!(
            m1.starts_with("7f0e7e97") && m1.ends_with("3c74f41d"),
            "{m1}"
        );
        assert!(marker_sha256(2, HEAD_2).starts_with("686cd402"));
    }

    /// ledger.md §6.2: the synthetic escaping vector (é, U+007F, U+2028, U+1F600, `\n`) in the
    /// chain form, and the same object in the record form of conduct-walk.md §4.1 (which must
    /// differ: that is why the chain has its own writer).
    #[test]
    fn vector_6_2_chain_form_escapes_and_differs_from_record_form() {
        let fields = ChainFields {
            n: 1,
            claim_sha256: "0".repeat(64),
            schema: Some("é\u{7f}\u{2028}\u{1F600}\n".into()),
            created_at: Some("2026-12-01T00:00:00.000Z".into()),
        };
        let text = entry_text(&fields, ROOT);
        assert!(
            text.ends_with(r#""schema":"\u00e9\u007f\u2028\ud83d\ude00\n"}"#),
            "{text}"
        );
        assert_eq!(
            entry_sha256(&fields, ROOT),
            "84a57f530ff9c8545c89bc929813ab906a26c3e2786f3da65a0a53f90a2f2176"
        );
        let record_form = crate::canonical::to_bytes(&serde_json::json!({
            "n": 1, "claim_sha256": "0".repeat(64), "prev_entry_sha256": ROOT,
            "schema": "é\u{7f}\u{2028}\u{1F600}\n", "created_at": "2026-12-01T00:00:00.000Z",
        }));
        assert_eq!(
            sha256_hex(record_form),
            "7cb7432907c67a26a7415118ca4e4f076010868dc91f5df59ec0c090b7536489"
        );
    }

    /// §6.1 step 3: a missing `schema` / `created_at` is omitted, not written as null.
    #[test]
    fn absent_schema_and_created_at_are_omitted() {
        let bare = ChainFields {
            n: 7,
            claim_sha256: "ab".repeat(32),
            schema: None,
            created_at: None,
        };
        assert_eq!(
            entry_text(&bare, ROOT),
            format!(
                r#"{{"claim_sha256":"{}","n":7,"prev_entry_sha256":"{ROOT}"}}"#,
                "ab".repeat(32)
            )
        );
    }

    /// Extending from any held (k, head_k) gives the heads recomputing from the root gives:
    /// what lets the monitor recompute only the new entries.
    #[test]
    fn extending_from_a_held_head_equals_recomputing_from_the_root() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
        let entry = (
            "[0-9a-f]{64}",
            proptest::option::of(any::<String>()),
            proptest::option::of("[0-9T:.Z-]{0,24}"),
        );
        let mut runner = TestRunner::new_with_rng(
            Config {
                cases: 128,
                failure_persistence: None,
                ..Config::default()
            },
            TestRng::from_seed(RngAlgorithm::ChaCha, &[0xc4; 32]),
        );
        runner
            .run(
                &(
                    proptest::collection::vec(entry, 1..12),
                    any::<prop::sample::Index>(),
                ),
                |(parts, cut)| {
                    let entries: Vec<ChainFields> = parts
                        .into_iter()
                        .enumerate()
                        .map(|(i, (claim_sha256, schema, created_at))| ChainFields {
                            n: i as u64 + 1,
                            claim_sha256,
                            schema,
                            created_at,
                        })
                        .collect();
                    let all = extend(0, ROOT, &entries).unwrap();
                    let k = cut.index(entries.len());
                    let held = if k == 0 { ROOT } else { all[k - 1].as_str() };
                    let rest = extend(k as u64, held, &entries[k..]).unwrap();
                    prop_assert_eq!(&rest[..], &all[k..]);
                    Ok(())
                },
            )
            .unwrap();
    }

    /// §6.1 step 2: a hole or a wrong `n` breaks the chain where it is, never skipped.
    #[test]
    fn a_hole_breaks_the_chain_at_the_missing_n() {
        let e1 = v0(1, CLAIM_1, "2026-12-01T13:25:16.153Z");
        let e3 = v0(3, CLAIM_2, "2026-12-01T13:25:30.570Z");
        assert_eq!(
            extend(0, ROOT, &[e1, e3]),
            Err(Broken {
                at: 2,
                found: Some(3)
            })
        );
    }
}
