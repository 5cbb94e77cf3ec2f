//! What a reader of held rings can check without their inputs (the endpoint page, rings.md
//! §1, §6, §8.3): each ring's counts with their denominators, its link to the previous ring
//! held (`prev_ring_sha256` against that file's sha256), and its signed Statement.

use super::{dsse, spec};
use crate::digest::sha256_hex;
use crate::json::{JsonRef, ReadOptions, read};

/// A ring file as held, and the envelope beside it.
#[derive(Debug, Clone)]
pub struct Held<'a> {
    pub name: String,
    pub bytes: &'a [u8],
    pub envelope: Option<&'a [u8]>,
}

/// A ring's counts: numbers with their denominators, never a rate (§1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub instants_sampled: u64,
    pub instants_reached: u64,
    pub witnesses: u64,
    pub discrepancies: u64,
    /// `instants_by_status`, as written.
    pub by_status: Vec<(String, u64)>,
    /// The v1.1 columns, when the ring has them.
    pub v11: Option<V11Counts>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct V11Counts {
    pub witnesses_signed: u64,
    pub witnesses_unsigned: u64,
    pub discrepancies_signed: u64,
    pub discrepancies_unsigned: u64,
    pub commitments_unrevealed: u64,
    pub walked_as_witness: u64,
    pub instants_derived: u64,
    pub instants_legacy: u64,
    pub instants_no_coordinate_block: u64,
}

/// How a ring links to the one before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    /// `prev_ring_sha256` is null: a chain starts here (after a gap, if earlier rings are held).
    Starts,
    /// It names the sha256 of the held ring of this month.
    Linked(String),
    /// It names a month held here, whose file has another sha256.
    Broken {
        month: String,
        held: String,
        named: String,
    },
    /// The ring it names is not held here.
    NotHeld {
        month: Option<String>,
        named: String,
    },
}

/// What became of the ring's signed Statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signed {
    NoEnvelope,
    /// An envelope, but no key to check it with.
    NoKey,
    Verified {
        keyid: String,
    },
    NotVerified {
        check: String,
        reason: String,
    },
}

/// One held ring as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audited {
    pub name: String,
    pub month: String,
    pub sha256: String,
    /// Some: the file is not a ring (why), and nothing else is read from it.
    pub unreadable: Option<String>,
    pub counts: Counts,
    pub link: Link,
    pub signed: Signed,
}

fn n(v: JsonRef<'_>, k: &str) -> u64 {
    v.get(k)
        .and_then(|x| x.number_text())
        .and_then(|t| t.parse().ok())
        .unwrap_or(0)
}

fn len(v: JsonRef<'_>, k: &str) -> u64 {
    v.get(k)
        .and_then(|x| x.as_array())
        .map_or(0, |a| a.len() as u64)
}

fn counts(r: JsonRef<'_>) -> Counts {
    let by_status = r
        .get("instants_by_status")
        .and_then(|s| s.as_object())
        .map(|o| {
            o.entries()
                .into_iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        v.number_text().and_then(|t| t.parse().ok()).unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let v11 = r.get("walked_as_witness").is_some().then(|| V11Counts {
        witnesses_signed: n(r, "witnesses_signed"),
        witnesses_unsigned: n(r, "witnesses_unsigned"),
        discrepancies_signed: len(r, "discrepancies_signed"),
        discrepancies_unsigned: len(r, "discrepancies_unsigned"),
        commitments_unrevealed: n(r, "commitments_unrevealed"),
        walked_as_witness: n(r, "walked_as_witness"),
        instants_derived: n(r, "instants_derived"),
        instants_legacy: n(r, "instants_legacy"),
        instants_no_coordinate_block: n(r, "instants_no_coordinate_block"),
    });
    Counts {
        instants_sampled: n(r, "instants_sampled"),
        instants_reached: n(r, "instants_reached"),
        witnesses: n(r, "witnesses"),
        discrepancies: len(r, "discrepancies"),
        by_status,
        v11,
    }
}

/// Audit held rings (in month order) with the register's JWKS, when there is one.
pub fn audit(held: &[Held<'_>], jwks: Option<&[u8]>) -> Vec<Audited> {
    let keys = jwks.and_then(|j| dsse::parse_jwks(j).ok()).map(|(k, _)| k);
    let shas: Vec<String> = held.iter().map(|h| sha256_hex(h.bytes)).collect();
    let months: Vec<Option<String>> = held
        .iter()
        .map(|h| {
            read(h.bytes, ReadOptions::LENIENT).ok().and_then(|d| {
                d.root()
                    .get("ring")
                    .and_then(|r| r.as_str().map(str::to_owned))
            })
        })
        .collect();
    held.iter()
        .zip(&shas)
        .map(|(h, sha)| {
            let mut a = Audited {
                name: h.name.clone(),
                month: String::new(),
                sha256: sha.clone(),
                unreadable: None,
                counts: Counts::default(),
                link: Link::Starts,
                signed: Signed::NoEnvelope,
            };
            let doc = match read(h.bytes, ReadOptions::LENIENT) {
                Ok(d) if d.root().get("schema").and_then(|s| s.as_str()) == Some(spec::SCHEMA) => d,
                Ok(_) => {
                    a.unreadable = Some(format!("not a ring: its schema is not {}", spec::SCHEMA));
                    return a;
                }
                Err(e) => {
                    a.unreadable = Some(format!("not JSON: {e}"));
                    return a;
                }
            };
            let r = doc.root();
            a.month = r
                .get("ring")
                .and_then(|m| m.as_str())
                .unwrap_or("")
                .to_string();
            a.counts = counts(r);
            a.link = link(r, &shas, &months);
            a.signed = match (h.envelope, &keys) {
                (None, _) => Signed::NoEnvelope,
                (Some(_), None) => Signed::NoKey,
                (Some(env), Some(keys)) => {
                    let report = dsse::verify(env, keys, Some(h.bytes));
                    match report.failure() {
                        None => Signed::Verified {
                            keyid: report.keyid.clone().unwrap_or_default(),
                        },
                        Some(f) => Signed::NotVerified {
                            check: f.name.to_string(),
                            reason: f.detail.clone(),
                        },
                    }
                }
            };
            a
        })
        .collect()
}

fn link(r: JsonRef<'_>, shas: &[String], months: &[Option<String>]) -> Link {
    let Some(named) = r.get("prev_ring_sha256").and_then(|s| s.as_str()) else {
        return Link::Starts;
    };
    let prev_month = r
        .get("prev_ring")
        .and_then(|m| m.as_str())
        .map(str::to_owned);
    if let Some(i) = shas.iter().position(|s| s == named) {
        return Link::Linked(months[i].clone().unwrap_or_default());
    }
    match prev_month
        .as_ref()
        .and_then(|m| months.iter().position(|x| x.as_ref() == Some(m)))
    {
        Some(i) => Link::Broken {
            month: prev_month.unwrap_or_default(),
            held: shas[i].clone(),
            named: named.to_string(),
        },
        None => Link::NotHeld {
            month: prev_month,
            named: named.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(month: &str, prev: Option<(&str, &str)>) -> Vec<u8> {
        let (sha, m) = prev.map_or(("null".to_string(), "null".to_string()), |(s, m)| {
            (format!("\"{s}\""), format!("\"{m}\""))
        });
        format!(
            r#"{{"schema":"nenrin-ring-v1","ring":"{month}","instants_sampled":4,"instants_reached":3,"witnesses":1,"discrepancies":[],"instants_by_status":{{"pass":3,"unknown":1}},"prev_ring_sha256":{sha},"prev_ring":{m}}}"#
        )
        .into_bytes()
    }

    #[test]
    fn links_starts_breaks_and_missing_rings() {
        let july = ring("2026-07", None);
        let july_sha = sha256_hex(&july);
        let august = ring("2026-08", Some((&july_sha, "2026-07")));
        let sept = ring("2026-09", Some((&"0".repeat(64), "2026-08")));
        let oct = ring("2026-10", Some((&"1".repeat(64), "2026-06")));
        let held: Vec<Held<'_>> = [&july, &august, &sept, &oct]
            .iter()
            .map(|b| Held {
                name: "x".into(),
                bytes: b,
                envelope: None,
            })
            .collect();
        let a = audit(&held, None);
        assert_eq!(a[0].link, Link::Starts);
        assert_eq!(a[1].link, Link::Linked("2026-07".into()));
        assert!(matches!(&a[2].link, Link::Broken { month, .. } if month == "2026-08"));
        assert!(matches!(&a[3].link, Link::NotHeld { month: Some(m), .. } if m == "2026-06"));
        assert_eq!(a[0].counts.instants_reached, 3);
        assert_eq!(
            a[0].counts.by_status,
            [("pass".into(), 3), ("unknown".into(), 1)]
        );
        assert_eq!(a[0].counts.v11, None);
        assert_eq!(a[0].signed, Signed::NoEnvelope);
        let junk = audit(
            &[Held {
                name: "j".into(),
                bytes: b"[]",
                envelope: None,
            }],
            None,
        );
        assert!(junk[0].unreadable.is_some());
    }
}
