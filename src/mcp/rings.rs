//! `ring_verify` (issue 37): rebuild a NENRIN ring from the texts given and compare it with the
//! claimed one; `inspect_document` and `canonical_form` (issue 46): the auditor's bench over a
//! document's text. Read-only and offline: they read no file and no network, only their arguments.

use super::answer;
use super::tools::{self, Args};
use crate::rings::{self, Limits, Request, WitnessFile, compare};
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::json;

pub(super) async fn ring_verify(args: Option<JsonObject>) -> Result<CallToolResult, String> {
    let a = Args::new(args, tools::RING_VERIFY)?;
    let ring = a.required("ring")?;
    let history = a.required("history")?;
    let witnesses = a.strings("witnesses")?;
    let prev = a.string("prev")?;
    // Parsing and hashing a large history blocks: off the async workers.
    tokio::task::spawn_blocking(move || verify(&ring, &history, witnesses, prev.as_deref()))
        .await
        .map_err(|e| format!("the ring_verify task failed: {e}"))?
}

fn verify(
    ring: &str,
    history: &str,
    witnesses: Vec<String>,
    prev: Option<&str>,
) -> Result<CallToolResult, String> {
    use crate::json::bounded::{self, Input, Refused};
    let claimed = bounded::read(
        Input::RingFile,
        ring.as_bytes(),
        crate::json::ReadOptions::LENIENT,
    )
    .map_err(|e| match e {
        Refused::NotJson(e) => format!("ring is not JSON: {e}"),
        over => format!("ring: {over}"),
    })?;
    let text = |k: &str| {
        claimed
            .root()
            .get(k)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .ok_or_else(|| format!("ring has no string {k:?}: not a ring"))
    };
    let (endpoint, month) = (text("endpoint")?, text("ring")?);
    let files = witnesses.into_iter().enumerate().map(|(i, w)| {
        Ok(WitnessFile {
            name: format!("witnesses[{i}]"),
            bytes: w.into_bytes(),
        })
    });
    let built = rings::build(
        &Request {
            month: &month,
            endpoint: Some(&endpoint),
            limits: Limits::default(),
        },
        history.as_bytes(),
        files,
        prev.map(|p| ("prev", p.as_bytes())),
    )
    .map_err(|e| format!("the ring could not be rebuilt: {e}"))?;
    let claimed_sha256 = crate::digest::sha256_hex(ring.as_bytes());
    let diffs = compare::differing_keys(&built.bytes, ring.as_bytes());
    let matched = diffs.is_empty();
    let summary = if matched {
        format!(
            "MATCH: the {month} ring of {endpoint} rebuilds byte for byte (sha256 {claimed_sha256})"
        )
    } else {
        let keys: Vec<&str> = diffs.iter().map(|d| d.key.as_str()).collect();
        format!(
            "MISMATCH: the {month} ring of {endpoint} rebuilds to sha256 {}, the claimed one is {claimed_sha256}; differing: {}",
            built.sha256,
            keys.join(", ")
        )
    };
    Ok(answer(
        summary,
        json!({
            "result": if matched { "MATCH" } else { "MISMATCH" },
            "endpoint": endpoint,
            "month": month,
            "claimed_sha256": claimed_sha256,
            "rebuilt_sha256": built.sha256,
            "differing_keys": diffs,
        }),
    ))
}

/// `inspect_document`: the bench's `inspect` over a document's text (bounded by the schema).
pub(super) async fn inspect_document(args: Option<JsonObject>) -> Result<CallToolResult, String> {
    use crate::audit::inspect;
    let a = Args::new(args, tools::INSPECT_DOCUMENT)?;
    let document = a.required("document")?;
    let mut given = inspect::Given {
        signature: a.string("signature")?,
        ..inspect::Given::default()
    };
    if let Some(key) = a.string("public_key")? {
        let (key, doc) = inspect::parse_key(&key).map_err(|why| format!("public_key: {why}"))?;
        given.public_key = Some(key);
        given.key_doc = doc;
    }
    let report = tokio::task::spawn_blocking(move || inspect::inspect(document.as_bytes(), &given))
        .await
        .map_err(|e| format!("the inspect_document task failed: {e}"))?;
    let summary = format!(
        "{}: {}",
        report.kind.description(),
        if report.holds() { "OK" } else { "NOT OK" }
    );
    Ok(answer(summary, report.to_json()))
}

/// `canonical_form`: a document's canonical bytes under one form.
pub(super) async fn canonical_form(args: Option<JsonObject>) -> Result<CallToolResult, String> {
    use crate::audit::forms;
    let a = Args::new(args, tools::CANONICAL_FORM)?;
    let document = a.required("document")?;
    let form = forms::Form::parse(&a.required("form")?)?;
    let c = tokio::task::spawn_blocking(move || forms::canonicalise(form, document.as_bytes()))
        .await
        .map_err(|e| format!("the canonical_form task failed: {e}"))?
        .map_err(|refusal| refusal.to_string())?;
    let sha256 = crate::digest::sha256_hex(&c.bytes);
    Ok(answer(
        format!("{} form, sha256 {sha256}", form.name()),
        serde_json::json!({
            "form": form.name(),
            "canonical": String::from_utf8_lossy(&c.bytes),
            "sha256": sha256,
            "uncovered": c.uncovered.iter().map(|u| serde_json::json!({"member": u.pointer, "why": u.why.code()})).collect::<Vec<_>>(),
        }),
    ))
}
