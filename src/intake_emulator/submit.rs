//! `POST /witness`: §6.2 steps 1–10, in that order. The order is part of the contract (a
//! duplicate can still be refused by a cap or a bad signature, §8.3 item 12), so each step
//! returns its answer before the next one looks at anything.

use super::constants::*;
use super::keys::{KeyOutcome, served_key};
use super::state::{Admission, Admit, LANE_GLOBAL, RecordStatus};
use super::validate::{self, Invalid, Validated};
use super::{Answer, EmulatorError, Shared, signature};
use crate::digest::sha256_hex;
use crate::sandbox::Req;
use crate::wire::IntakeSubmission;
use serde_json::{Map, Value, json};

/// The header the real intake (behind Cloudflare) reads the client address from.
const CLIENT_IP_HEADER: &str = "cf-connecting-ip";
/// The address-lane input when that header is missing.
const UNKNOWN_CLIENT: &str = "unknown";

/// An answer given before the record is stored: the step that refused it.
type Reply = (u16, Value);

pub(super) async fn post_witness(shared: &Shared, req: &Req) -> Answer {
    // Steps 1–3.
    let (submission, record) = match checked_submission(shared, req) {
        Ok(checked) => checked,
        Err(reply) => return Ok(reply),
    };
    // Step 4.
    let today = shared.today();
    let global_cap = shared.limits.daily_global;
    if shared.state().counter(&today, LANE_GLOBAL)? >= global_cap {
        return Ok(cap_full(ERR_GLOBAL_CAP, global_cap));
    }
    // Step 5: only when either value is non-empty.
    let signed = match signature_step(&submission) {
        Ok(signed) => signed,
        Err(reply) => return Ok(reply),
    };
    // Step 6.
    let signed_domain = match key_url_step(shared, &submission, &record, signed).await? {
        Ok(domain) => domain,
        Err(reply) => return Ok(reply),
    };
    // Steps 7–10 happen in one transaction in the state file.
    let signing = Signing {
        signed,
        public_key_b64: submission.public_key_ed25519_b64.as_deref().unwrap_or(""),
        domain: signed_domain,
    };
    store_step(
        shared,
        req,
        &submission.record_canonical,
        &record,
        signing,
        &today,
    )
}

/// Steps 1–3: a body naming a record, within the size cap, that validates.
fn checked_submission(shared: &Shared, req: &Req) -> Result<(IntakeSubmission, Validated), Reply> {
    let help = format!("{}/witness", req.base);
    // Step 1.
    let Some(submission) = read_body(&req.body) else {
        return Err((400, json!({"error": ERR_RECORD_REQUIRED, "help": help})));
    };
    // Step 2: JavaScript string length, i.e. UTF-16 code units.
    let max = shared.limits.max_record_len;
    if submission.record_canonical.encode_utf16().count() > max {
        return Err((413, json!({"error": ERR_TOO_LARGE, "max_bytes": max})));
    }
    // Step 3.
    match validate::validate(&submission.record_canonical) {
        Ok(record) => Ok((submission, record)),
        Err(Invalid { reason_code, why }) => Err((
            422,
            json!({
                "error": ERR_INVALID_RECORD,
                "reason_code": reason_code.as_str(),
                "why": why,
                "help": help,
            }),
        )),
    }
}

/// Step 5: whether the submission is signed; a signature must come with its key and verify.
fn signature_step(submission: &IntakeSubmission) -> Result<bool, Reply> {
    let signature_b64 = submission.signature_ed25519_b64.as_deref().unwrap_or("");
    let public_key_b64 = submission.public_key_ed25519_b64.as_deref().unwrap_or("");
    let signed = !signature_b64.is_empty() || !public_key_b64.is_empty();
    if !signed {
        return Ok(false);
    }
    if signature_b64.is_empty() || public_key_b64.is_empty() {
        return Err((422, json!({"error": ERR_SIG_TOGETHER})));
    }
    let record = submission.record_canonical.as_bytes();
    if !signature::verifies(record, signature_b64, public_key_b64) {
        return Err((
            422,
            json!({
                "error": ERR_SIG_INVALID,
                "reason_code": ERR_SIG_INVALID,
                "note": NOTE_SIG_INVALID,
            }),
        ));
    }
    Ok(true)
}

/// Step 6: the domain a signed record's `key_url` attests (the key it serves must be the
/// submission's), or None for a record without one.
async fn key_url_step(
    shared: &Shared,
    submission: &IntakeSubmission,
    record: &Validated,
    signed: bool,
) -> Result<Result<Option<String>, Reply>, EmulatorError> {
    let Some(key_url) = &record.key_url else {
        return Ok(Ok(None));
    };
    if !signed {
        return Ok(Err((
            422,
            json!({
                "error": ERR_KEY_URL_WITHOUT_SIG,
                "reason_code": REASON_BAD_KEY_URL,
                "note": NOTE_KEY_URL_WITHOUT_SIG,
            }),
        )));
    }
    // Validation guaranteed an https URL, and every https URL has a host.
    let host = validate::https_host(key_url).unwrap_or_default();
    let walked_hosts = [
        validate::https_host(&record.base),
        validate::https_host(&record.endpoint),
    ];
    if walked_hosts.iter().flatten().any(|h| *h == host) {
        return Ok(Err(self_witness(NOTE_SELF_WITNESS_AGENT)));
    }
    if host == shared.ledger_host {
        return Ok(Err(self_witness(NOTE_SELF_WITNESS_LEDGER)));
    }
    let public_key_b64 = submission.public_key_ed25519_b64.as_deref().unwrap_or("");
    Ok(match served_key(shared, key_url).await? {
        KeyOutcome::Unreachable(why) => Err((
            503,
            json!({
                "error": ERR_KEY_URL_UNREACHABLE,
                "reason_code": ERR_KEY_URL_UNREACHABLE,
                "why": why,
                "note": NOTE_KEY_URL_UNREACHABLE,
            }),
        )),
        // Strings are compared, not decoded keys: a re-encoded key is a mismatch.
        KeyOutcome::Served(served) if served != public_key_b64 => Err((
            422,
            json!({
                "error": ERR_KEY_URL_MISMATCH,
                "reason_code": ERR_KEY_URL_MISMATCH,
                "note": NOTE_KEY_URL_MISMATCH,
            }),
        )),
        KeyOutcome::Served(_) => Ok(Some(host)),
    })
}

/// What steps 5 and 6 established about the submission's signature.
struct Signing<'a> {
    signed: bool,
    public_key_b64: &'a str,
    domain: Option<String>,
}

/// Steps 7–10: the lane, the stored object, and the admission in one transaction.
fn store_step(
    shared: &Shared,
    req: &Req,
    record_canonical: &str,
    record: &Validated,
    signing: Signing<'_>,
    today: &str,
) -> Answer {
    let global_cap = shared.limits.daily_global;
    let client = req.header(CLIENT_IP_HEADER).unwrap_or(UNKNOWN_CLIENT);
    let (lane, lane_cap, lane_error) = match &signing.domain {
        Some(domain) => (
            format!("domain:{domain}"),
            shared.limits.daily_per_domain,
            ERR_DOMAIN_CAP,
        ),
        None => (
            format!("ip:{}", &sha256_hex(client)[..16]),
            shared.limits.daily_per_ip,
            ERR_IP_CAP,
        ),
    };
    let sha = sha256_hex(record_canonical);
    let identity = match &signing.domain {
        Some(domain) => format!("domain:{domain}"),
        None => format!("name:{}", record.witness_name),
    };
    let marker = &sha256_hex(format!("{identity}|{}", record.endpoint))[..32];
    let url = format!("{}/witness/{sha}", req.base);
    let stored = stored_object(shared, &sha, record_canonical, record, &signing);
    let admitted = shared.state().admit(Admission {
        day: today,
        sha: &sha,
        lane: &lane,
        lane_cap,
        global_cap,
        marker,
        stored,
        count_reason_when_not_counted: COUNT_REASON_SAME_DAY,
        now_ms: shared.now_ms(),
    })?;
    match admitted {
        Admit::GlobalFull => Ok(cap_full(ERR_GLOBAL_CAP, global_cap)),
        Admit::LaneFull => Ok(cap_full(lane_error, lane_cap)),
        Admit::Duplicate(status) => Ok((
            200,
            json!({
                "sha": sha,
                "status": match status {
                    RecordStatus::Pending => STATUS_PENDING,
                    RecordStatus::Anchored { .. } => STATUS_ANCHORED,
                },
                "dedup": true,
                "url": url,
            }),
        )),
        Admit::Stored { counted } => {
            super::reads::note_network(shared, today, req.header(CLIENT_IP_HEADER))?;
            Ok((
                201,
                json!({
                    "sha": sha,
                    "status": STATUS_PENDING,
                    "signed": signing.signed,
                    "signed_domain": signing.domain,
                    "mode": record.mode.as_str(),
                    "counted": counted,
                    "count_reason": if counted { None } else { Some(COUNT_REASON_SAME_DAY) },
                    "url": url,
                    "anchor_policy": ANCHOR_POLICY,
                }),
            ))
        }
    }
}

/// The object the intake stores for an admitted record, in the worker's key order.
fn stored_object(
    shared: &Shared,
    sha: &str,
    record_canonical: &str,
    record: &Validated,
    signing: &Signing<'_>,
) -> Map<String, Value> {
    let mut stored = Map::new();
    let mut put = |k: &str, v: Value| stored.insert(k.to_string(), v);
    put("sha", json!(sha));
    put("record_canonical", json!(record_canonical));
    put("signed", json!(signing.signed));
    put(
        "public_key_ed25519_b64",
        if signing.signed {
            json!(signing.public_key_b64)
        } else {
            Value::Null
        },
    );
    put("signed_domain", json!(signing.domain));
    put("key_url", json!(record.key_url));
    put("mode", json!(record.mode.as_str()));
    put("v11", json!(record.v11));
    // A v1.1 record only gets here with both disclaimer arrays (§6.3 step 6).
    put("disclaimer_present", json!(record.v11));
    put("endpoint", json!(record.endpoint));
    put("purpose", json!(record.purpose));
    put("witness_name", json!(record.witness_name));
    put("vantage", json!(record.vantage));
    put("submitted_at", json!(shared.now_iso()));
    stored
}

/// Step 1's reading of the body, as `await request.json()` then a `typeof` test would: UTF-8
/// decoded leniently with a leading BOM dropped, a JSON object with a string
/// `record_canonical`. The two signature fields count only as strings; any other value (null
/// included) is treated as absent.
fn read_body(body: &[u8]) -> Option<IntakeSubmission> {
    let text = String::from_utf8_lossy(body);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let value: Value = serde_json::from_str(text).ok()?;
    let object = value.as_object()?;
    let string = |k: &str| object.get(k).and_then(Value::as_str).map(str::to_string);
    Some(IntakeSubmission {
        record_canonical: string("record_canonical")?,
        signature_ed25519_b64: string("signature_ed25519_b64"),
        public_key_ed25519_b64: string("public_key_ed25519_b64"),
    })
}

fn cap_full(error: &str, cap: u64) -> (u16, Value) {
    (429, json!({"error": error, "cap": cap, "note": NOTE_CAP}))
}

fn self_witness(note: &str) -> (u16, Value) {
    (
        422,
        json!({"error": ERR_SELF_WITNESS, "reason_code": ERR_SELF_WITNESS, "note": note}),
    )
}
