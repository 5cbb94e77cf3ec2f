//! §6.6: `GET /witness` (self-description), `GET /witness/pending`, `GET /witness/<sha>`, the
//! operator batch (`POST /witness/anchor`) and the emulator's local ledger entries.

use super::constants::*;
use super::state::{AnchoredBatch, RecordStatus};
use super::{Answer, EmulatorError, Shared};
use crate::digest::sha256_hex;
use serde_json::{Value, json};
use std::net::IpAddr;

/// The only face this emulator counts networks for.
const FACE_WITNESS: &str = "witness";

pub(super) fn describe(shared: &Shared, origin: &str) -> Answer {
    let l = &shared.limits;
    Ok((
        200,
        json!({
            "service": SERVICE,
            "spec": SPEC,
            "what_this_is": "a local emulation of the NENRIN witness intake for tests and demos (conduct-walker intake-emulator, following conduct-walk.md section 6): records are checked, capped, counted and deduplicated as the intake does, kept pending, and bundled into this emulator's own local ledger by POST /witness/anchor; nothing reaches the real ledger or a Bitcoin stamp",
            "limits_stated_not_hidden": {
                "max_bytes": l.max_record_len,
                "daily_global": l.daily_global,
                "daily_per_ip": l.daily_per_ip,
                "daily_per_domain": l.daily_per_domain,
                "batch_max": l.batch_max,
                "note": "max_bytes is the length of record_canonical in UTF-16 code units; days are the server's UTC date at submission, not walked_at; unsigned and address-signed records share the per-address lane, domain-signed records use the per-domain lane, all share the global cap; beyond any cap the answer is 429 and nothing is stored",
            },
            "signature": "optional: signature_ed25519_b64 (Ed25519 over the UTF-8 bytes of record_canonical) with public_key_ed25519_b64 (the raw 32-byte key), both standard base64; a present signature must verify. With witness.key_url in the signed record, the key served there as {\"public_key_ed25519_b64\": ...} (https, redirects refused, 5 s timeout, cached 24 h) must be the identical string, and the witness is then identified by that host",
            "conduct_v1_1": {
                "spec": crate::walk::spec::EXT,
                "record_fields": "mode (full | hash-only | commitment), establishes and does_not_establish (non-empty arrays of non-blank strings), commitment (64 hex, commitment mode), witness.key_url (https, optional)",
                "refusals": REFUSALS,
                "counting": "one counted record per witness identity (domain:<host> when domain-signed, else name:<witness.name>) per walked endpoint per UTC day; later ones are stored, not counted",
                "not_established": "the intake checks shape, signature and key binding only; it does not check assertions, node hashes, canonical form or how recent walked_at is",
            },
            "privacy": "no client address is stored: the per-address lane is keyed by a hash prefix, and network tallies use a per-day salted hash of the /24 or /48",
            "how_to_submit": format!("POST {origin}/witness with Content-Type: application/json and a body {{\"record_canonical\": <the record's canonical JSON text>, \"signature_ed25519_b64\": <optional>, \"public_key_ed25519_b64\": <optional>}}"),
            "pool": format!("{origin}/witness/pending"),
            "distinct_submitter_networks": networks(shared)?,
        }),
    ))
}

fn networks(shared: &Shared) -> Result<Value, EmulatorError> {
    let today = shared.today();
    let days = shared.state().networks_by_day()?;
    let by_day: Vec<Value> = days
        .iter()
        .map(|(day, n)| {
            json!({
                "day": day,
                "networks": n,
                "by_face": {FACE_WITNESS: n},
                "state": if *day == today { "open" } else { "closed" },
            })
        })
        .collect();
    Ok(json!({
        "counting_since": days.first().map(|(d, _)| d.clone()),
        "faces": [FACE_WITNESS],
        "days_counted": days.len(),
        "max_networks_in_a_day": days.iter().map(|(_, n)| *n).max().unwrap_or(0),
        "by_day": by_day,
        "what_this_is": "how many distinct client networks (/24 for IPv4, /48 for IPv6) stored a record each UTC day",
        "what_this_is_not": "a count of witnesses or people: one network may hold many, one witness may use many",
        "privacy": "networks are hashed with a salt that changes every day; no address is kept",
        "accuracy": "only submissions carrying a parseable CF-Connecting-IP header are counted",
    }))
}

/// Tally the client's network for today's distinct-network count (stored records only).
pub(super) fn note_network(
    shared: &Shared,
    day: &str,
    client: Option<&str>,
) -> Result<(), EmulatorError> {
    let Some(ip) = client.and_then(|c| c.trim().parse::<IpAddr>().ok()) else {
        return Ok(());
    };
    let network = match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            format!("{}.{}.{}.0/24", o[0], o[1], o[2])
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}::/48", s[0], s[1], s[2])
        }
    };
    let state = shared.state();
    let salt = state.day_salt(day)?;
    state.note_network(day, &sha256_hex(format!("{salt}|{network}"))[..16])
}

pub(super) fn pending(shared: &Shared) -> Answer {
    let pending = shared.state().pending()?;
    let counted = pending
        .iter()
        .filter(|r| r["counted"] == Value::Bool(true))
        .count();
    let list: Vec<Value> = pending
        .iter()
        .map(|r| {
            let pick = [
                "sha",
                "purpose",
                "witness_name",
                "vantage",
                "signed",
                "signed_domain",
                "mode",
                "counted",
                "submitted_at",
            ];
            Value::Object(
                pick.iter()
                    .map(|k| (k.to_string(), r.get(*k).cloned().unwrap_or(Value::Null)))
                    .collect(),
            )
        })
        .collect();
    let l = &shared.limits;
    Ok((
        200,
        json!({
            "count": pending.len(),
            "counted": counted,
            "stored_not_counted": pending.len() - counted,
            "pending": list,
            "caps": {
                "daily_global": l.daily_global,
                "daily_per_ip": l.daily_per_ip,
                "daily_per_domain": l.daily_per_domain,
            },
            "note": "records waiting for the next nenrin-witness-batch-v1 batch; anchored records are left out",
        }),
    ))
}

pub(super) fn one(shared: &Shared, origin: &str, sha: &str) -> Answer {
    // Anchored wins: the status comes from the same row as the stored object.
    let Some((stored, status)) = shared.state().stored(sha)? else {
        return Ok((404, json!({"error": ERR_NOT_FOUND, "sha": sha})));
    };
    // No measured party's signed replies (record-privacy-v1) reach this emulator.
    let responses = json!([]);
    match status {
        RecordStatus::Pending => {
            let mut body = stored.as_object().cloned().unwrap_or_default();
            body.insert("status".into(), json!(STATUS_PENDING));
            body.insert("responses".into(), responses);
            Ok((200, Value::Object(body)))
        }
        RecordStatus::Anchored { ledger_entry } => Ok((
            200,
            json!({
                "status": STATUS_ANCHORED,
                "sha": sha,
                "ledger_entry": ledger_entry,
                "url": format!("{origin}/ledger/{ledger_entry}"),
                "record": stored,
                "responses": responses,
            }),
        )),
    }
}

pub(super) fn anchor(shared: &Shared, origin: &str) -> Answer {
    match anchor_pool(shared)? {
        None => Ok((
            200,
            json!({"anchored": 0, "note": "the pending pool is empty; nothing anchored"}),
        )),
        Some(batch) => Ok((
            200,
            json!({
                "anchored": batch.count,
                "ledger_entry": batch.ledger_entry,
                "url": format!("{origin}/ledger/{}", batch.ledger_entry),
                "batch_sha256": sha256_hex(&batch.record_canonical),
                "shas": batch.shas,
            }),
        )),
    }
}

pub(super) fn anchor_pool(shared: &Shared) -> Result<Option<AnchoredBatch>, EmulatorError> {
    let anchored_at = shared.now_iso();
    shared
        .state()
        .anchor(shared.limits.batch_max, &anchored_at, |records, head| {
            batch_text(&anchored_at, head, records)
        })
}

/// The `nenrin-witness-batch-v1` text: plain `JSON.stringify` in insertion order, not the
/// sorted canonical form, so it is written field by field. `ledger_head` is the sha of this
/// ledger's previous entry (null for the first).
fn batch_text(anchored_at: &str, head: Option<&str>, records: &[Value]) -> String {
    let items: Vec<String> = records
        .iter()
        .map(|r| {
            let mut fields: Vec<(&str, &Value)> =
                ["sha", "purpose", "witness_name", "vantage", "signed"]
                    .iter()
                    .map(|k| (*k, r.get(*k).unwrap_or(&Value::Null)))
                    .collect();
            if let Some(d) = r.get("signed_domain").filter(|d| !d.is_null()) {
                fields.push(("signed_domain", d));
            }
            if let Some(m) = r.get("mode").filter(|m| m.as_str() != Some(MODE_FULL)) {
                fields.push(("mode", m));
            }
            if r.get("counted") != Some(&Value::Bool(true)) {
                fields.push(("counted", &Value::Bool(false)));
            }
            ordered_object(fields.iter().map(|(k, v)| (*k, json_text(v))))
        })
        .collect();
    ordered_object([
        ("schema", json_text(&json!(SCHEMA_BATCH))),
        ("anchored_at", json_text(&json!(anchored_at))),
        ("count", records.len().to_string()),
        ("ledger_head", json_text(&json!(head))),
        ("records", format!("[{}]", items.join(","))),
    ])
}

fn json_text(v: &Value) -> String {
    serde_json::to_string(v).expect("a JSON value serialises")
}

fn ordered_object<'a>(fields: impl IntoIterator<Item = (&'a str, String)>) -> String {
    let parts: Vec<String> = fields
        .into_iter()
        .map(|(k, v)| format!("{}:{v}", json_text(&json!(k))))
        .collect();
    format!("{{{}}}", parts.join(","))
}

pub(super) fn ledger(shared: &Shared, n: &str) -> Answer {
    let n: i64 = n.parse().unwrap_or(-1);
    match shared.state().ledger_entry(n)? {
        None => Ok((404, json!({"error": ERR_NOT_FOUND, "ledger_entry": n}))),
        Some((sha, record_canonical, created_at)) => Ok((
            200,
            json!({
                "ledger_entry": n,
                "sha256": sha,
                "created_at": created_at,
                "record_canonical": record_canonical,
            }),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_text_keeps_insertion_order_and_optional_fields() {
        let records = vec![
            json!({"sha": "aa", "purpose": "p", "witness_name": "w", "vantage": "v", "signed": false,
                   "signed_domain": null, "mode": "full", "counted": true}),
            json!({"sha": "bb", "purpose": "p", "witness_name": "w", "vantage": "v", "signed": true,
                   "signed_domain": "w.example", "mode": "hash-only", "counted": false}),
        ];
        let text = batch_text("2026-11-30T00:30:00.000Z", None, &records);
        assert_eq!(
            text,
            r#"{"schema":"nenrin-witness-batch-v1","anchored_at":"2026-11-30T00:30:00.000Z","count":2,"ledger_head":null,"records":[{"sha":"aa","purpose":"p","witness_name":"w","vantage":"v","signed":false},{"sha":"bb","purpose":"p","witness_name":"w","vantage":"v","signed":true,"signed_domain":"w.example","mode":"hash-only","counted":false}]}"#
        );
    }
}
