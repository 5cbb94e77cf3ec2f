//! The ring value (rings.md §5), its bytes and the chain (§6), and the previous ring's checks
//! (§2.4).

use super::form::{self, Out};
use super::history::{Instants, kind};
use super::witness::WitnessColumns;
use super::{Month, RingError, spec};
use crate::digest::sha256_hex;
use crate::json::{ReadOptions, read};

/// A previous ring that may be chained to (§2.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prev {
    /// sha256 of its bytes.
    pub sha256: String,
    /// Its `ring` member as canonical text (None when absent).
    pub ring: Option<String>,
}

impl Prev {
    /// Check a previous ring's bytes for a ring of `endpoint` and `month`. `name` names the
    /// file in errors.
    pub fn parse(
        bytes: &[u8],
        name: &str,
        endpoint: &str,
        month: &Month,
    ) -> Result<Prev, RingError> {
        let doc = read(bytes, ReadOptions::LENIENT)
            .map_err(|e| RingError::input(format!("{name} (--prev)"), format!("not JSON: {e}")))?;
        let root = doc.root();
        if !root.is_object() {
            return Err(RingError::input(
                format!("{name} (--prev)"),
                format!("{}, not a ring", kind(root)),
            ));
        }
        if root.holds_lone_surrogate() || form::doc_bytes(root) != bytes {
            return Err(RingError::PrevNotCanonical(name.to_string()));
        }
        if root.get("endpoint").and_then(|e| e.as_str()) != Some(endpoint) {
            let theirs = root
                .get("endpoint")
                .map_or("(none)".into(), |e| match e.as_str() {
                    Some(s) => s.to_string(),
                    None => e.canonical_string(),
                });
            return Err(RingError::PrevEndpoint(theirs));
        }
        let ring = root.get("ring");
        if let Some(r) = ring.filter(|r| super::py::truthy(*r)) {
            match r.as_str() {
                Some(prev) if prev < month.as_str() => {}
                Some(prev) => {
                    return Err(RingError::PrevNotBefore {
                        prev: prev.to_string(),
                        month: month.as_str().to_string(),
                    });
                }
                None => {
                    return Err(RingError::input(
                        format!("{name} (--prev)"),
                        format!(
                            "its ring is {}, which the reference cannot compare with --month",
                            kind(r)
                        ),
                    ));
                }
            }
        }
        Ok(Prev {
            sha256: sha256_hex(bytes),
            ring: ring.map(|r| r.canonical_string()),
        })
    }
}

/// A built ring: its value, ready to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Ring {
    pub value: Out,
    /// Counts for a one-line summary.
    pub instants_sampled: u64,
    pub instants_reached: u64,
    pub witnesses: u64,
}

impl Ring {
    /// The ring bytes (§6).
    pub fn to_bytes(&self) -> Vec<u8> {
        form::to_bytes(&self.value)
    }
}

fn texts(items: &[String]) -> Out {
    Out::Array(items.iter().map(|t| Out::Json(t.clone())).collect())
}

fn counts(map: &std::collections::BTreeMap<String, u64>) -> Out {
    Out::Object(map.iter().map(|(k, n)| (k.clone(), Out::Int(*n))).collect())
}

/// The limits sentences of §5.3.
fn limits(witnesses: u64, v11: bool, unsigned: u64, n: u64, unmeasured: u64) -> String {
    let mut out: Vec<String> = Vec::new();
    if witnesses == 1 {
        out.push(spec::LIMIT_ONE_WITNESS.into());
    }
    if v11 {
        out.push(spec::LIMIT_V11_COLUMNS.into());
        if unsigned > 0 {
            out.push(spec::LIMIT_UNSIGNED_BY_NAME.into());
        }
    }
    if n == 0 {
        out.push(spec::LIMIT_NO_MEASUREMENT.into());
    }
    if unmeasured > 0 {
        out.push(spec::limit_unmeasured(unmeasured, n));
    }
    out.push(spec::LIMIT_COUNTS_ONLY.into());
    out.join("; ")
}

/// The ring of §5 from its parts.
pub fn assemble(
    month: &Month,
    endpoint: &str,
    instants: &Instants,
    witnesses: &WitnessColumns,
    prev: Option<&Prev>,
) -> Ring {
    let n = instants.sampled();
    let v11 = month.is_v11();
    let first = instants.first();
    let last = instants.last();
    let mut members: Vec<(String, Out)> = vec![
        ("schema".into(), Out::str(spec::SCHEMA)),
        ("ring".into(), Out::str(month.as_str())),
        ("endpoint".into(), Out::str(endpoint)),
        ("witnesses".into(), Out::Int(witnesses.witnesses)),
        ("witness_identities".into(), texts(&witnesses.identities)),
        ("instants_sampled".into(), Out::Int(n)),
        ("instants_reached".into(), Out::Int(instants.reached)),
        ("instants_by_status".into(), counts(&instants.by_status)),
        (
            "instants_by_consent_source".into(),
            counts(&instants.by_consent_source),
        ),
        (
            "manifest_hashes_observed".into(),
            Out::Array(
                instants
                    .manifest_hashes_observed()
                    .into_iter()
                    .map(|t| Out::Json(t.to_string()))
                    .collect(),
            ),
        ),
        (
            "surface_changes".into(),
            Out::Array(
                instants
                    .surface_changes()
                    .into_iter()
                    .map(|c| {
                        Out::Object(vec![
                            ("at".into(), Out::Str(c.at)),
                            ("from".into(), Out::Json(c.from)),
                            ("to".into(), Out::Json(c.to)),
                        ])
                    })
                    .collect(),
            ),
        ),
        ("discrepancies".into(), texts(&witnesses.discrepancies)),
        (
            "first_instant".into(),
            Out::opt_str(first.as_ref().map(|f| f.0)),
        ),
        (
            "last_instant".into(),
            Out::opt_str(last.as_ref().map(|l| l.0)),
        ),
        (
            "record_sha256_first".into(),
            Out::opt_json(first.as_ref().and_then(|f| f.1.as_deref())),
        ),
        (
            "record_sha256_last".into(),
            Out::opt_json(last.as_ref().and_then(|l| l.1.as_deref())),
        ),
        (
            "prev_ring_sha256".into(),
            Out::opt_str(prev.map(|p| p.sha256.as_str())),
        ),
        (
            "prev_ring".into(),
            Out::opt_json(prev.and_then(|p| p.ring.as_deref())),
        ),
        (
            "limits".into(),
            Out::Str(limits(
                witnesses.witnesses,
                v11,
                witnesses.witnesses_unsigned,
                n,
                instants.unmeasured,
            )),
        ),
        ("recompute".into(), Out::str(spec::RECOMPUTE)),
    ];
    if v11 {
        members.extend([
            (
                "witnesses_signed".into(),
                Out::Int(witnesses.witnesses_signed),
            ),
            (
                "witnesses_unsigned".into(),
                Out::Int(witnesses.witnesses_unsigned),
            ),
            (
                "discrepancies_signed".into(),
                texts(&witnesses.discrepancies_signed),
            ),
            (
                "discrepancies_unsigned".into(),
                texts(&witnesses.discrepancies_unsigned),
            ),
            (
                "commitments_unrevealed".into(),
                Out::Int(witnesses.commitments_unrevealed),
            ),
            (
                "walked_as_witness".into(),
                Out::Int(witnesses.walked_as_witness),
            ),
            ("instants_derived".into(), Out::Int(instants.derived)),
            ("instants_legacy".into(), Out::Int(instants.legacy)),
            (
                "instants_no_coordinate_block".into(),
                Out::Int(instants.no_coordinate_block),
            ),
        ]);
    }
    Ring {
        value: Out::Object(members),
        instants_sampled: n,
        instants_reached: instants.reached,
        witnesses: witnesses.witnesses,
    }
}
