//! §6.6: `GET /witness` (self-description) and `GET /witness/pending` (ledger.md §3). The
//! per-record reads, the batch and the ledger's routes are in `super::ledger`.

use super::constants::*;
use super::{Answer, EmulatorError, Shared};
use crate::digest::sha256_hex;
use crate::ledger::wire::PoolEntry;
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
            "signature": "optional: signature_ed25519_b64 (Ed25519 over the UTF-8 bytes of record_canonical) with public_key_ed25519_b64 (the raw 32-byte key), both standard base64; a present signature must verify. With witness.key_url in the signed record, the key served there as {\"public_key_ed25519_b64\": ...} (https, redirects refused, 5 s timeout, fetched on every submission) must be the identical string, and the witness is then identified by that host",
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

/// `GET /witness/pending` (ledger.md §3): elements with exactly the pool's keys in its order,
/// `mode` defaulting to `"full"`, `counted` true unless stored false.
pub(super) fn pending(shared: &Shared) -> Result<crate::sandbox::Resp, EmulatorError> {
    let stored = shared.state().pending()?;
    let mut list = Vec::with_capacity(stored.len());
    for value in &stored {
        let r = super::ledger::stored_record(value)?;
        list.push(PoolEntry {
            mode: r.mode_or_full().to_string(),
            counted: r.is_counted(),
            submitted_at: r.submitted_at.clone().unwrap_or_default(),
            sha: r.sha,
            purpose: r.purpose,
            witness_name: r.witness_name,
            vantage: r.vantage,
            signed: r.signed,
            signed_domain: r.signed_domain,
        });
    }
    let counted = list.iter().filter(|e| e.counted).count() as u64;
    let l = &shared.limits;
    #[derive(serde::Serialize)]
    struct Pool {
        count: u64,
        counted: u64,
        stored_not_counted: u64,
        pending: Vec<PoolEntry>,
        caps: super::ledger::Ordered,
        note: &'static str,
    }
    Ok(super::json_resp(
        200,
        &Pool {
            count: list.len() as u64,
            counted,
            stored_not_counted: list.len() as u64 - counted,
            pending: list,
            caps: super::ledger::Ordered(vec![
                ("daily_global", json!(l.daily_global)),
                ("daily_per_ip", json!(l.daily_per_ip)),
                ("daily_per_domain", json!(l.daily_per_domain)),
            ]),
            note: "public pool; bundled into a ledger entry daily at 00:30 UTC by schedule when not empty; this emulator bundles on POST /witness/anchor (x-ledger-key) and on its scheduled-run hook",
        },
    ))
}
