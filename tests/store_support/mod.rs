//! Synthetic walk records shaped like conduct-walk.md §4.2, real Ed25519 signatures, and raw SQL
//! access for tamper tests. Shared by the store/records tests and `benches/store.rs`.
#![allow(dead_code)]

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use conduct_walker::canonical;
use conduct_walker::digest::sha256_hex;
use conduct_walker::store::{KeptFull, NewRecord};
use ed25519_dalek::{Signer as _, SigningKey};
use serde_json::{Value, json};
use std::path::Path;

pub const EXT: &str = "https://gate.horizonshield.dev/ext/conduct/v1";

/// A deterministic signing key.
pub fn key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

pub fn public_key_b64(key: &SigningKey) -> String {
    STANDARD.encode(key.verifying_key().to_bytes())
}

pub fn sign_b64(key: &SigningKey, bytes: &[u8]) -> String {
    STANDARD.encode(key.sign(bytes).to_bytes())
}

/// A full-mode record value: `i` varies the hashes, `endpoint` the target, `pass` the verdict.
pub fn record_value(i: u64, origin: &str, endpoint: &str, pass: bool, walked_at: &str) -> Value {
    let h = |tag: &str| sha256_hex(format!("{tag}:{i}"));
    let n_pass = if pass { 8 } else { 5 };
    let assertions: Vec<Value> = [
        "card_bytes_stable",
        "conduct_ext_declared",
        "compensation_well_formed",
        "measured_endpoint_answered",
        "payment_required_as_declared",
        "extension_echoed",
        "metadata_echoed",
        "endpoint_bound",
    ]
    .iter()
    .enumerate()
    .map(|(k, name)| {
        json!({
            "claim": format!("{name}: synthetic claim number {k} for é ✓ walk {i}"),
            "evidence_nodes": [k % 4],
            "observed_sha256": h(name),
            "op": "eq",
            "result": (k as u64) < n_pass,
        })
    })
    .collect();
    let node = |n: u64, url: &str, method: &str| {
        json!({
            "id": n,
            "kind": "fetch",
            "request": {"url": url, "method": method, "headers_sha256": h(&format!("rq{n}"))},
            "response": {"status": 200, "headers_sha256": h(&format!("rh{n}")), "body_sha256": h(&format!("rb{n}"))},
            "duration_ms": 100 + n,
        })
    };
    let card = format!("{origin}/.well-known/agent-card.json");
    json!({
        "schema": "jidec-path-v1",
        "purpose": format!("a2a-conduct-walk-v1: {endpoint}"),
        "walked_at": walked_at,
        "walker": {"tool": "conduct-walker", "version": "1"},
        "base": origin,
        "nodes": [
            node(0, &card, "GET"),
            node(1, &card, "GET"),
            {"id": 2, "kind": "compute", "label": "extension declaration", "output_preview": "declared, compensation well formed", "output_sha256": h("n2")},
            node(3, endpoint, "POST"),
        ],
        "assertions": assertions,
        "verdict": {"ok": pass, "outcome": if pass { "PASS" } else { "FAIL" }, "n_pass": n_pass, "n_total": 8},
        "replay": {
            "how": "re-run a2a_conduct_walk.py against base with the same mode; recompute every node body_sha256 and re-evaluate assertions",
            "match_means": "the card and the endpoint answer the same bytes as when this walk was anchored",
            "mismatch_means": "the live agent now differs from the anchored observation; a changed card is a finding, not an error in the walk",
        },
        "witness": {"name": "store-test", "vantage": "ci", "key_url": "https://witness.example/.well-known/nenrin-witness-key.json"},
        "card_signature": {"present": false, "count": 0, "verified": null, "verified_reason": "the card carries no signatures field; this extension does not require one, so this is not a finding"},
        "conduct_ext": {"uri": EXT, "declared_uri": EXT, "mode": "a2a", "wire": "1.0", "conduct_record": null, "witness_intake": null, "target": endpoint},
        "prev_path_refs": [],
        "mode": "full",
        "establishes": [format!("agent card at {origin} fetched twice at {walked_at}")],
        "does_not_establish": ["correctness or quality of any response", "truth of the compensation declaration"],
    })
}

/// Walk time `i` seconds after 2026-09-06T00:00:00Z, in the §2.1 form.
pub fn walked_at(i: u64) -> String {
    let base = chrono::DateTime::parse_from_rfc3339("2026-09-06T00:00:00Z").unwrap();
    (base + chrono::Duration::seconds(i as i64))
        .with_timezone(&chrono::Utc)
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Canonical bytes of the `i`th synthetic record.
pub fn record_bytes(i: u64, pass: bool) -> Vec<u8> {
    canonical::to_bytes(&record_value(
        i,
        "https://agent.example",
        "https://agent.example/a2a",
        pass,
        &walked_at(i * 60),
    ))
}

pub fn unsigned(canonical: Vec<u8>) -> NewRecord {
    NewRecord {
        canonical,
        signature_b64: None,
        public_key_b64: None,
        kept_full: None,
    }
}

pub fn signed(canonical: Vec<u8>, key: &SigningKey) -> NewRecord {
    NewRecord {
        signature_b64: Some(sign_b64(key, &canonical)),
        public_key_b64: Some(public_key_b64(key)),
        canonical,
        kept_full: None,
    }
}

/// A commitment-mode pair (§4.6): the filed record, signed, with the full record and salt kept.
pub fn commitment(i: u64, key: &SigningKey) -> NewRecord {
    let at = walked_at(i * 60);
    let full = canonical::to_bytes(&record_value(
        i,
        "https://secret.example",
        "https://secret.example/a2a",
        true,
        &at,
    ));
    let salt = [i as u8 ^ 0x5a; 32];
    let mut committed = full.clone();
    committed.extend_from_slice(&salt);
    let filed = canonical::to_bytes(&json!({
        "schema": "jidec-path-v1",
        "purpose": "a2a-conduct-walk-v1: https://secret.example/a2a",
        "walked_at": at,
        "walker": {"tool": "conduct-walker", "version": "1"},
        "base": "https://secret.example",
        "witness": {"name": "store-test", "vantage": "ci"},
        "mode": "commitment",
        "commitment": sha256_hex(&committed),
        "commitment_recipe": "sha256(canonical(full record) || salt); salt is 32 bytes, kept by the witness",
        "establishes": [format!("a record with the stated commitment existed at {at}")],
        "does_not_establish": ["anything about the walked agent until the committed record is revealed"],
    }));
    let mut rec = signed(filed, key);
    rec.kept_full = Some(KeptFull {
        canonical: full,
        salt_hex: hex::encode(salt),
    });
    rec
}

/// A raw read-write connection with the insert-only triggers dropped, as an attacker would.
pub fn tamper_conn(db: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch(
        "DROP TRIGGER records_insert_only_update; DROP TRIGGER records_insert_only_delete;",
    )
    .unwrap();
    conn
}

/// Edit row `id`'s stored record bytes as an attacker with the file would: read them back
/// (they may be stored compressed), replace `from` by `to`, and write the edited bytes raw (a
/// form the store reads too). Returns how many rows changed.
pub fn edit_stored_bytes(conn: &rusqlite::Connection, id: i64, from: &str, to: &str) -> usize {
    let blob: Vec<u8> = conn
        .query_row("SELECT canonical FROM records WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .unwrap();
    let raw = conduct_walker::store::codec::decode(conn, blob).unwrap();
    let edited = String::from_utf8(raw).unwrap().replace(from, to);
    conn.execute(
        "UPDATE records SET canonical = ?1 WHERE id = ?2",
        rusqlite::params![edited.into_bytes(), id],
    )
    .unwrap()
}

/// Swap the full contents of rows `a` and `b` (ids stay, everything else moves).
pub fn swap_rows(conn: &rusqlite::Connection, a: i64, b: i64) {
    conn.execute_batch(&format!(
        "UPDATE records SET id = -1 WHERE id = {a};
         UPDATE records SET id = {a} WHERE id = {b};
         UPDATE records SET id = {b} WHERE id = -1;"
    ))
    .unwrap();
}

/// Queues `record_id` for `intake` in the address lane as `identity` and records the intake's
/// 201 at `filed_at` (its UTC day the filed day): a record filed as the outbox files it.
/// Returns the submission's id.
pub fn file_accepted(
    conn: &rusqlite::Connection,
    record_id: i64,
    intake: &str,
    identity: &str,
    filed_at: &str,
) -> i64 {
    use conduct_walker::filing::{AnswerKind, SubmissionState};
    use conduct_walker::store::outbox::{self, AttemptResult, NewSubmission};
    let sub = outbox::insert(
        conn,
        &NewSubmission {
            record_id,
            intake_url: intake,
            lane: "address",
            identity,
            endpoint: "https://agent.example/a2a",
            state: SubmissionState::Queued,
            next_attempt_at: None,
            last_error: None,
            now: filed_at,
        },
    )
    .unwrap();
    outbox::record_attempt(
        conn,
        sub.id,
        filed_at,
        &AttemptResult {
            state: SubmissionState::Filed,
            answer: AnswerKind::Accepted,
            status: 201,
            body: "{}",
            error: None,
            reason_code: None,
            counted: Some(true),
            count_reason: None,
            filed_day: Some(&filed_at[..10]),
            next_attempt_at: None,
        },
    )
    .unwrap();
    sub.id
}
