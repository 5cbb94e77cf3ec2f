//! `POST /witness/task`: the task-delegation ledger's intake as conduct-walk.md §5.1 describes
//! what it relies on. The spec documents no answer format and no dedupe for this route, so this
//! emulator answers in the witness intake's style (§6: pretty JSON, `error` / `reason_code` /
//! `why`), stores every observation it accepts (duplicates included, each counted in
//! `received`) and says so in `GET /witness/task`.
//!
//! Checks, in order: a JSON object no larger than [`MAX_OBSERVATION_BYTES`] (400 / 413); the
//! observation's fields and types (422 `schema`); then `task_bind::check`: W and P are Ed25519
//! `did:key`s, R1 (W ≠ P, W ≠ B), B an https origin, `evidence_id` recomputed from the
//! canonical preimage, `witness_sig` by W, `edge_sig` by P, and P's consent (422 with the
//! check's own code).

use super::{Answer, Shared};
use crate::sandbox::Req;
use crate::witness::task_bind::{self, Observation};
use serde_json::json;

/// Largest observation body taken (an observation is well under 2 KB; a task id is a stranger's
/// string, so some room is left).
pub const MAX_OBSERVATION_BYTES: usize = 64 * 1024;
pub const ERR_OBSERVATION_REQUIRED: &str = "observation (JSON object) required";
pub const ERR_TOO_LARGE: &str = "too_large";
pub const ERR_INVALID_OBSERVATION: &str = "invalid_task_observation";
pub const STATUS_STORED: &str = "stored";

pub(super) fn post(shared: &Shared, req: &Req) -> Answer {
    let help = format!("{}/witness/task", req.base);
    if req.body.len() > MAX_OBSERVATION_BYTES {
        return Ok((
            413,
            json!({"error": ERR_TOO_LARGE, "max_bytes": MAX_OBSERVATION_BYTES}),
        ));
    }
    let value: serde_json::Value = match serde_json::from_slice(&req.body) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        _ => {
            return Ok((
                400,
                json!({"error": ERR_OBSERVATION_REQUIRED, "help": help}),
            ));
        }
    };
    let obs: Observation = match serde_json::from_value(value) {
        Ok(o) => o,
        Err(e) => return Ok(refused("schema", &e.to_string(), &help)),
    };
    if let Err(r) = task_bind::check(&obs) {
        return Ok(refused(r.code, &r.why, &help));
    }
    let body = String::from_utf8_lossy(&req.body);
    let received = shared.state().store_task_observation(
        &obs.evidence_id,
        &obs.task_id,
        &obs.witness_id,
        &body,
        &shared.now_iso(),
    )?;
    Ok((
        201,
        json!({
            "evidence_id": obs.evidence_id,
            "status": STATUS_STORED,
            "task_id": obs.task_id,
            "witness_id": obs.witness_id,
            "received": received,
        }),
    ))
}

fn refused(code: &str, why: &str, help: &str) -> (u16, serde_json::Value) {
    (
        422,
        json!({"error": ERR_INVALID_OBSERVATION, "reason_code": code, "why": why, "help": help}),
    )
}

pub(super) fn describe(shared: &Shared, origin: &str) -> Answer {
    Ok((
        200,
        json!({
            "service": "NENRIN task-delegation ledger intake (local emulation)",
            "what_this_is": "conduct-walker intake-emulator's POST /witness/task, following conduct-walk.md section 5.1: a task-bound observation is checked as that section says the ledger relies on it and stored; nothing reaches the real ledger",
            "checks": "W (witness_id) and P (hop.from) are Ed25519 did:keys; R1: W differs from P and from B (hop.to, an https origin); evidence_id is sha256 of the canonical preimage (keys sorted, no whitespace, Python json.dumps ensure_ascii=False strings); witness_sig is W's Ed25519 signature over it; edge_sig is P's over {task_id, hop}; consent holds P's signature over {purpose: nenrin-task-publication-consent-v0, task_id, hop, publication: public}",
            "dedupe": "not specified for the real ledger; this emulator stores every accepted POST and counts repeats of an evidence_id in received",
            "stored": shared.state().task_observation_count()?,
            "how_to_submit": format!("POST {origin}/witness/task with content-type: application/json and the observation as the body"),
        }),
    ))
}
