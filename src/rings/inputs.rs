//! Witness files from the ledger records a store keeps (`ring inputs`): the proposal of
//! rings.md §9 item 1, which is ours and not the register's: anchored records only, each as
//! the stored object (the anchored answer's `.record`, §2.3 "unwrap `.record` first"), ordered
//! by ledger entry, then by position in the batch. A batch lists its rows in sha order
//! (ledger.md §4.4), so position is sha order.

use super::Month;
use crate::json::{ReadOptions, read};
use serde::Serialize;

/// What the store holds of one anchored record (see `store::ledger::AnchoredRecord`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchored {
    pub sha256: String,
    pub ledger_entry: u64,
    pub ours: bool,
    pub record_canonical: String,
    pub signed: bool,
    pub signed_domain: Option<String>,
    /// The intake's mode; None: the record's own (`mode`, default `full`).
    pub mode: Option<String>,
    /// None: the record's `witness.name` / `witness.vantage`.
    pub witness_name: Option<String>,
    pub vantage: Option<String>,
    /// None: unknown (written without the key, which a builder reads as counted).
    pub counted: Option<bool>,
    pub count_reason: Option<String>,
    pub endpoint: String,
}

/// The stored object, in the field order of ledger.md §2.3, with the fields the store has.
#[derive(Serialize)]
struct StoredObject<'a> {
    sha: &'a str,
    record_canonical: &'a str,
    signed: bool,
    signed_domain: Option<&'a str>,
    mode: &'a str,
    endpoint: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    counted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    count_reason: Option<&'a str>,
    witness_name: &'a str,
    vantage: &'a str,
}

/// One witness file to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    /// `NNNNNN-e<entry>-<sha16>.json`: the glob `DIR/*` lists them in ledger order.
    pub name: String,
    pub bytes: Vec<u8>,
    pub ledger_entry: u64,
    pub sha256: String,
    pub ours: bool,
}

/// What was left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Left {
    /// Walked in another month.
    pub other_month: u64,
    /// No `walked_at` in the record (the builder would date it by the intake's
    /// `submitted_at`, which the store does not keep).
    pub undated: u64,
}

/// The witness files of `month`, in ledger order.
pub fn witness_files(mut records: Vec<Anchored>, month: &Month) -> (Vec<InputFile>, Left) {
    records.sort_by(|a, b| (a.ledger_entry, &a.sha256).cmp(&(b.ledger_entry, &b.sha256)));
    records.dedup_by(|a, b| a.sha256 == b.sha256);
    let mut left = Left::default();
    let mut out = Vec::new();
    for r in &records {
        let doc = read(r.record_canonical.as_bytes(), ReadOptions::LENIENT).ok();
        let walk = doc.as_ref().map(|d| d.root());
        let text = |k: &str| {
            walk.and_then(|w| w.get(k))
                .and_then(|v| v.as_str().map(str::to_owned))
        };
        let witness = |k: &str| {
            walk.and_then(|w| w.get("witness"))
                .and_then(|w| w.get(k))
                .and_then(|v| v.as_str().map(str::to_owned))
        };
        match text("walked_at") {
            Some(at) if month.holds(&at) => {}
            Some(_) => {
                left.other_month += 1;
                continue;
            }
            None => {
                left.undated += 1;
                continue;
            }
        }
        let mode = r
            .mode
            .clone()
            .or_else(|| text("mode"))
            .unwrap_or_else(|| "full".into());
        let name = r
            .witness_name
            .clone()
            .or_else(|| witness("name"))
            .unwrap_or_default();
        let vantage = r
            .vantage
            .clone()
            .or_else(|| witness("vantage"))
            .unwrap_or_default();
        let object = StoredObject {
            sha: &r.sha256,
            record_canonical: &r.record_canonical,
            signed: r.signed,
            signed_domain: r.signed_domain.as_deref(),
            mode: &mode,
            endpoint: &r.endpoint,
            counted: r.counted,
            count_reason: r.count_reason.as_deref().filter(|_| r.counted.is_some()),
            witness_name: &name,
            vantage: &vantage,
        };
        let bytes = serde_json::to_vec(&object).expect("strings and booleans serialise");
        out.push(InputFile {
            name: format!(
                "{:06}-e{}-{}.json",
                out.len() + 1,
                r.ledger_entry,
                &r.sha256[..r.sha256.len().min(16)]
            ),
            bytes,
            ledger_entry: r.ledger_entry,
            sha256: r.sha256.clone(),
            ours: r.ours,
        });
    }
    (out, left)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(sha: &str, entry: u64, walked_at: &str) -> Anchored {
        Anchored {
            sha256: sha.into(),
            ledger_entry: entry,
            ours: false,
            record_canonical: format!(
                r#"{{"walked_at":"{walked_at}","witness":{{"name":"w","vantage":"v"}},"mode":"hash-only"}}"#
            ),
            signed: true,
            signed_domain: Some("d.example".into()),
            mode: None,
            witness_name: None,
            vantage: None,
            counted: None,
            count_reason: None,
            endpoint: "https://e.example/mcp".into(),
        }
    }

    #[test]
    fn ledger_entry_then_batch_position_and_the_month_by_walked_at() {
        let m = Month::parse("2026-09").unwrap();
        let records = vec![
            rec("cc", 2, "2026-09-02"),
            rec("bb", 1, "2026-09-03"),
            rec("aa", 2, "2026-09-01"),
            rec("dd", 1, "2026-08-31"),
            rec("bb", 1, "2026-09-03"),
        ];
        let (files, left) = witness_files(records, &m);
        let order: Vec<_> = files
            .iter()
            .map(|f| (f.ledger_entry, f.sha256.as_str()))
            .collect();
        assert_eq!(order, [(1, "bb"), (2, "aa"), (2, "cc")]);
        assert_eq!(files[0].name, "000001-e1-bb.json");
        assert_eq!(
            left,
            Left {
                other_month: 1,
                undated: 0
            }
        );
        let text = String::from_utf8(files[0].bytes.clone()).unwrap();
        assert!(
            text.starts_with(r#"{"sha":"bb","record_canonical":"{\"walked_at\""#),
            "{text}"
        );
        assert!(text.ends_with(r#""signed":true,"signed_domain":"d.example","mode":"hash-only","endpoint":"https://e.example/mcp","witness_name":"w","vantage":"v"}"#), "{text}");
    }

    #[test]
    fn the_files_are_ledger_form_values_the_builder_reads() {
        let m = Month::parse("2026-09").unwrap();
        let mut r = rec("aa", 1, "2026-09-01");
        r.counted = Some(false);
        r.count_reason = Some("same witness, same endpoint, same day; stored, not counted".into());
        let (files, _) = witness_files(vec![r], &m);
        let doc = read(&files[0].bytes, ReadOptions::LENIENT).unwrap();
        let w = super::super::witness::normalise(doc.root())
            .unwrap()
            .unwrap();
        assert_eq!(w.at.as_deref(), Some("2026-09-01"));
        assert!(!w.counted);
        assert_eq!(w.identity.text, r#"{"name":"w","vantage":"v"}"#);
    }
}
