//! `conduct-walker inspect`: what a file an auditor meets is, and what holds about it.
//!
//! Pure: the bytes, an optional key and signature in, a [`Report`] out. The kinds are told
//! apart by shape (the `schema` member where there is one): a walk record (`jidec-path-v1`,
//! full or commitment), an intake body line (`record_canonical`), a witness observation
//! (`nenrin-witness-observation-v1`, checked by the pool's §5.5 validator), a ring
//! (`nenrin-ring-v1`, whose identity is the sha256 of its ring-form bytes), a key-history
//! document (`key-history-v1`, whose `history_sha256` is recomputed) and a gate verdict (what
//! the rings count; its `record_sha256` follows the gate's own recipe, not recomputed here).

use crate::witness_pool::{OBSERVATION_SCHEMA, key_history, validate};
use base64::Engine as _;
use serde_json::{Value, json};

/// What a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    WalkRecord,
    CommitmentRecord,
    IntakeBody,
    Observation,
    Ring,
    KeyHistory,
    GateVerdict,
    /// JSON of no shape the bench knows.
    Unknown,
    NotJson,
}

impl Kind {
    pub fn code(self) -> &'static str {
        match self {
            Kind::WalkRecord => "walk_record",
            Kind::CommitmentRecord => "commitment_record",
            Kind::IntakeBody => "intake_body",
            Kind::Observation => "witness_observation",
            Kind::Ring => "ring",
            Kind::KeyHistory => "key_history",
            Kind::GateVerdict => "gate_verdict",
            Kind::Unknown => "unknown",
            Kind::NotJson => "not_json",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Kind::WalkRecord => "a conduct walk record (jidec-path-v1, conduct-walk.md §4.2)",
            Kind::CommitmentRecord => {
                "a commitment-privacy walk record (jidec-path-v1, conduct-walk.md §4.6)"
            }
            Kind::IntakeBody => {
                "an intake body line (POST /witness, conduct-walk.md §5): a record's exact bytes and its signature"
            }
            Kind::Observation => "a witness observation (nenrin-witness-observation-v1)",
            Kind::Ring => "a monthly ring (nenrin-ring-v1, rings.md)",
            Kind::KeyHistory => "a key-history document (key-history-v1)",
            Kind::GateVerdict => {
                "a gate verdict record (an entry of a /history export: what the rings count)"
            }
            Kind::Unknown => "JSON of no shape this bench knows",
            Kind::NotJson => "not JSON",
        }
    }
}

/// One check: `holds` is `None` when it could not be made (no key, no signature).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub holds: Option<bool>,
    pub detail: String,
}

/// Everything the bench says about one file.
#[derive(Debug, Clone)]
pub struct Report {
    pub kind: Kind,
    pub sha256_given: String,
    /// The form whose bytes are the file's identity, when the kind has one.
    pub canonical_form: Option<&'static str>,
    pub sha256_canonical: Option<String>,
    pub checks: Vec<Check>,
    pub establishes: Vec<String>,
    pub does_not_establish: Vec<String>,
    pub notes: Vec<String>,
}

impl Report {
    /// Whether the file is known and nothing checked failed.
    pub fn holds(&self) -> bool {
        !matches!(self.kind, Kind::Unknown | Kind::NotJson)
            && !self.checks.iter().any(|c| c.holds == Some(false))
    }

    /// Whether the bytes as given are the canonical bytes.
    pub fn canonical_agrees(&self) -> Option<bool> {
        self.sha256_canonical
            .as_ref()
            .map(|c| *c == self.sha256_given)
    }

    pub fn to_json(&self) -> Value {
        json!({
            "kind": self.kind.code(),
            "what": self.kind.description(),
            "sha256_given": self.sha256_given,
            "canonical_form": self.canonical_form,
            "sha256_canonical": self.sha256_canonical,
            "canonical_agrees": self.canonical_agrees(),
            "checks": self.checks.iter().map(|c| json!({
                "check": c.name, "holds": c.holds, "detail": c.detail,
            })).collect::<Vec<_>>(),
            "establishes": self.establishes,
            "does_not_establish": self.does_not_establish,
            "notes": self.notes,
            "holds": self.holds(),
        })
    }
}

/// The key and signature an auditor brings.
#[derive(Debug, Clone, Default)]
pub struct Given {
    /// An Ed25519 public key as standard padded base64 (see [`parse_key`]).
    pub public_key: Option<String>,
    /// The parsed key document the key came from, when it came from one.
    pub key_doc: Option<Value>,
    /// A detached signature over a record's canonical bytes (standard base64).
    pub signature: Option<String>,
}

/// An Ed25519 public key as standard padded base64, from base64 (padded or not), base64url,
/// 64 hex digits, or the text of a key_url document (`{"public_key_ed25519_b64": ...}`, what
/// `pubkey` prints). Returns the key and the document when it was one.
pub fn parse_key(text: &str) -> Result<(String, Option<Value>), String> {
    let text = text.trim();
    if text.starts_with('{') {
        let doc = crate::json::parse_lenient(text.as_bytes())
            .map_err(|e| format!("the key document is not JSON: {e}"))?;
        let key = validate::served_key(&doc)
            .ok_or("the key document has no public_key_ed25519_b64 string")?
            .to_string();
        let (key, _) = parse_key(&key)?;
        return Ok((key, Some(doc)));
    }
    let engines = [
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    let raw = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        hex::decode(text).ok()
    } else {
        engines.iter().find_map(|e| e.decode(text).ok())
    };
    match raw {
        Some(raw) if raw.len() == 32 => {
            Ok((base64::engine::general_purpose::STANDARD.encode(raw), None))
        }
        Some(raw) => Err(format!(
            "the key is {} bytes; an Ed25519 public key is 32",
            raw.len()
        )),
        None => {
            Err("the key is not base64, base64url, 64 hex digits or a key_url document".to_string())
        }
    }
}

/// What a parsed document is, by its shape (the `schema` member where there is one). Shared
/// with `records import`, so a file is told apart the same way wherever an auditor hands it.
pub fn kind_of(root: crate::json::JsonRef<'_>) -> Kind {
    let schema = root.get("schema").and_then(|s| s.as_str());
    match schema {
        Some(crate::wire::SCHEMA) if root.get("commitment").is_some() => Kind::CommitmentRecord,
        Some(crate::wire::SCHEMA) => Kind::WalkRecord,
        Some(OBSERVATION_SCHEMA) => Kind::Observation,
        Some(crate::rings::spec::SCHEMA) => Kind::Ring,
        Some(key_history::SCHEMA) => Kind::KeyHistory,
        _ if root.get("record_canonical").is_some_and(|v| v.is_string()) => Kind::IntakeBody,
        _ if root.get("record_sha256").is_some() && root.get("status").is_some() => {
            Kind::GateVerdict
        }
        _ => Kind::Unknown,
    }
}

/// Where the record a file holds says its witness serves its key (`witness.key_url` of a walk
/// record, of an intake body's record, or of an observation), for `inspect --fetch-key`.
pub fn key_url(bytes: &[u8]) -> Option<String> {
    let doc = crate::json::read(bytes, crate::json::ReadOptions::LENIENT).ok()?;
    let root = doc.root();
    let url = |root: crate::json::JsonRef<'_>| {
        root.get("witness")?
            .get("key_url")?
            .as_str()
            .map(String::from)
    };
    match kind_of(root) {
        Kind::IntakeBody => {
            let text = root.get("record_canonical")?.as_str()?;
            let inner =
                crate::json::read(text.as_bytes(), crate::json::ReadOptions::LENIENT).ok()?;
            url(inner.root())
        }
        _ => url(root),
    }
}

/// Inspect one file's bytes.
pub fn inspect(bytes: &[u8], given: &Given) -> Report {
    let mut report = Report {
        kind: Kind::NotJson,
        sha256_given: crate::digest::sha256_hex(bytes),
        canonical_form: None,
        sha256_canonical: None,
        checks: Vec::new(),
        establishes: Vec::new(),
        does_not_establish: Vec::new(),
        notes: Vec::new(),
    };
    let doc = match crate::json::read(bytes, crate::json::ReadOptions::LENIENT) {
        Ok(doc) => doc,
        Err(e) => {
            report.notes.push(format!("not JSON: {e}"));
            return report;
        }
    };
    let root = doc.root();
    report.kind = kind_of(root);
    if doc.has_lone_surrogates() {
        report.notes.push(
            "a string holds a lone surrogate: the NENRIN form has no bytes for it".to_string(),
        );
    }
    let nenrin = || crate::digest::sha256_hex(root.canonical_string().as_bytes());
    match report.kind {
        Kind::WalkRecord | Kind::CommitmentRecord => {
            report.canonical_form = Some("nenrin");
            report.sha256_canonical = Some(nenrin());
            record(
                &mut report,
                &root.to_value(),
                root.canonical_string().as_bytes(),
                given,
                None,
            );
        }
        Kind::IntakeBody => intake_body(&mut report, &root.to_value(), given),
        Kind::Observation => {
            report.canonical_form = Some("nenrin");
            report.sha256_canonical = Some(nenrin());
            observation(&mut report, &root.to_value(), given);
        }
        Kind::Ring => {
            if crate::rings::form::depth(root) <= crate::rings::form::MAX_RING_DEPTH {
                report.canonical_form = Some("ring form (rings.md §6)");
                report.sha256_canonical = Some(crate::digest::sha256_hex(
                    crate::rings::form::doc_bytes(root),
                ));
            }
            report.checks.push(Check {
                name: "ring_form",
                holds: report.canonical_agrees(),
                detail: "a ring's identity is the sha256 of its bytes, which must be the ring form of its own content for the chain (prev_ring_sha256) and the ledger anchor to name it".into(),
            });
            report.establishes.push("what the register counted for this endpoint and month, if the digest is the one the ledger anchors (ledger verify) and `ring verify` rebuilds it from the history".into());
            report.does_not_establish.push(
                "that the counts are right: rebuild it with `conduct-walker ring verify`".into(),
            );
        }
        Kind::KeyHistory => {
            report.canonical_form = Some("nenrin");
            report.sha256_canonical = Some(nenrin());
            let v = root.to_value();
            let hashed = json!({
                "schema": v.get("schema"), "subject": v.get("subject"),
                "keys": v.get("keys"), "rule": v.get("rule"),
            });
            let recomputed = crate::digest::sha256_hex(crate::canonical::to_bytes(&hashed));
            let claimed = v.get("history_sha256").and_then(Value::as_str);
            report.checks.push(Check {
                name: "history_sha256",
                holds: Some(claimed == Some(recomputed.as_str())),
                detail: format!(
                    "recomputed over {} = {recomputed}; the document says {}",
                    key_history::COVERS,
                    claimed.unwrap_or("nothing")
                ),
            });
            report.does_not_establish.push("that the keys listed are the subject's: the document is only as good as the origin serving it and the anchors that pin it".into());
        }
        Kind::GateVerdict => {
            report.notes.push("the gate's record_sha256 covers the gate's full verdict serialised in the key order it served (JSON.stringify), not the NENRIN form, and an exported history entry holds only some members: it is not recomputed here".into());
            report.establishes.push("one gate measurement of the endpoint at `at`, as the rings count it (status, reachable, conditions)".into());
            report.does_not_establish.push("that the gate measured correctly, or that this entry is in the gate's own history: compare with the register's history export".into());
        }
        Kind::Unknown | Kind::NotJson => {
            report.notes.push("expected one of: a walk record (schema jidec-path-v1), an intake body line (record_canonical), a witness observation (schema nenrin-witness-observation-v1), a ring (schema nenrin-ring-v1), a key-history document (schema key-history-v1), a gate verdict (record_sha256 and status)".into());
        }
    }
    report
}

/// A record's checks: the signature over its canonical bytes, and what it says it establishes.
fn record(
    report: &mut Report,
    record: &Value,
    canonical: &[u8],
    given: &Given,
    embedded: Option<(&str, &str)>,
) {
    let key = embedded
        .map(|(_, k)| k.to_string())
        .or(given.public_key.clone());
    let signature = embedded
        .map(|(s, _)| s.to_string())
        .or(given.signature.clone());
    let check = match (&signature, &key) {
        (Some(sig), Some(key)) => {
            let holds = validate::signature_verifies(canonical, sig, key);
            Check {
                name: "signature",
                holds: Some(holds),
                detail: format!(
                    "Ed25519 over the record's canonical bytes with key {key}: {}",
                    if holds { "valid" } else { "INVALID" }
                ),
            }
        }
        (None, _) => Check {
            name: "signature",
            holds: None,
            detail: "no signature to check: give --signature (the intake body line and `records export --with-signatures` carry it)".into(),
        },
        (Some(_), None) => Check {
            name: "signature",
            holds: None,
            detail: "no key to check it with: give --public-key (the witness's key_url document serves it)".into(),
        },
    };
    report.checks.push(check);
    if let (Some((_, embedded)), Some(given)) = (embedded, &given.public_key) {
        report.checks.push(Check {
            name: "expected_key",
            holds: Some(embedded == given),
            detail: format!("the embedded key {embedded} against the key given {given}"),
        });
    }
    (report.establishes, report.does_not_establish) = what_it_says(record);
    if report.establishes.is_empty() {
        report.notes.push("the record lists no establishes / does_not_establish (an older record version): only the bench's lines below apply".into());
    }
    report.establishes.push("(the bench adds) when the signature holds: the holder of that key signed exactly these canonical bytes, whose sha256 is the record's identity".into());
    report.does_not_establish.push("(the bench adds) that the key belongs to the witness the record names: compare it with the witness's key_url document and key history; nor that the record was anchored in a ledger (`ledger verify`)".into());
    if let Some(key_url) = record.pointer("/witness/key_url").and_then(Value::as_str) {
        report
            .notes
            .push(format!("the witness serves its key at {key_url}"));
    }
}

fn intake_body(report: &mut Report, body: &Value, given: &Given) {
    let text = body["record_canonical"].as_str().unwrap_or_default();
    report.canonical_form = Some("nenrin (of record_canonical)");
    let inner = crate::json::read(text.as_bytes(), crate::json::ReadOptions::LENIENT);
    let Ok(inner) = inner else {
        report.checks.push(Check {
            name: "record_canonical",
            holds: Some(false),
            detail: "record_canonical is not JSON".into(),
        });
        return;
    };
    let canonical = inner.root().canonical_string();
    report.sha256_canonical = Some(crate::digest::sha256_hex(canonical.as_bytes()));
    report.notes.push(format!(
        "the record's identity (the intake's sha) is sha256(record_canonical) = {}",
        crate::digest::sha256_hex(text.as_bytes())
    ));
    report.checks.push(Check {
        name: "record_canonical_is_canonical",
        holds: Some(canonical == text),
        detail: "record_canonical must be the NENRIN form of itself: the intake hashes and signs whatever string it is given".into(),
    });
    let sig = body.get("signature_ed25519_b64").and_then(Value::as_str);
    let key = body.get("public_key_ed25519_b64").and_then(Value::as_str);
    let embedded = sig.zip(key);
    let given = Given {
        signature: given.signature.clone().or(sig.map(String::from)),
        ..given.clone()
    };
    record(
        report,
        &inner.root().to_value(),
        text.as_bytes(),
        &given,
        embedded,
    );
}

fn observation(report: &mut Report, record: &Value, given: &Given) {
    let options = validate::Options {
        public_key: given.public_key.as_deref(),
        key_doc: given.key_doc.as_ref(),
    };
    let refusals = validate::validate(record, &options);
    report.checks.push(Check {
        name: "observation",
        holds: Some(refusals.is_empty()),
        detail: if refusals.is_empty() {
            format!(
                "valid under §5.5 (hash, signature{})",
                match (&given.public_key, &given.key_doc) {
                    (_, Some(_)) => ", and the key document's key",
                    (Some(_), None) => ", and the key given",
                    (None, None) => "; no key given, so the embedded key is not tied to anyone",
                }
            )
        } else {
            let codes: Vec<&str> = refusals.iter().map(|r| r.as_str()).collect();
            format!("refused: {}", codes.join(", "))
        },
    });
    (report.establishes, report.does_not_establish) = what_it_says(record);
}

/// A document's own `establishes` and `does_not_establish` lines (its strings only).
fn what_it_says(document: &Value) -> (Vec<String>, Vec<String>) {
    let strings = |name: &str| -> Vec<String> {
        document
            .get(name)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    (strings("establishes"), strings("does_not_establish"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_in_every_spelling() {
        let raw = [7u8; 32];
        let std = base64::engine::general_purpose::STANDARD.encode(raw);
        for text in [
            std.clone(),
            std.trim_end_matches('=').to_string(),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw),
            hex::encode(raw),
            format!(r#"{{"public_key_ed25519_b64": "{std}"}}"#),
        ] {
            assert_eq!(parse_key(&text).unwrap().0, std, "{text}");
        }
        assert!(parse_key("AAAA").unwrap_err().contains("3 bytes"));
    }

    #[test]
    fn kinds_are_told_apart_and_unknown_says_what_was_expected() {
        let given = Given::default();
        let r = inspect(b"[1]", &given);
        assert_eq!(r.kind, Kind::Unknown);
        assert!(!r.holds());
        assert!(r.notes[0].contains("jidec-path-v1"));
        let r = inspect(
            br#"{"at":"x","status":"pass","record_sha256":"ab"}"#,
            &given,
        );
        assert_eq!(r.kind, Kind::GateVerdict);
        assert!(r.holds());
        assert_eq!(inspect(b"{", &given).kind, Kind::NotJson);
    }
}
