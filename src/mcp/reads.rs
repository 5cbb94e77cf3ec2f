//! The read-only tools: the store (`records_list`, `records_show`, `records_verify`, opened
//! read-only each time so they never write) and the card verifiers (`card_verify`,
//! `terms_verify`, through the operator's network rules).

use super::tools::{self, Args, quote};
use super::{State, answer, answer_text};
use crate::card_signature::fetch::{card_url, fetch_card};
use crate::store::{self, ListFilter, Store, StoreError};
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Value, json};

async fn read_store<T: Send + 'static>(
    state: &State,
    f: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, String> {
    let path = state.database.clone();
    tokio::task::spawn_blocking(move || f(&Store::open_read_only(&path)?))
        .await
        .map_err(|e| format!("the store task failed: {e}"))?
        .map_err(|e| e.to_string())
}

pub(super) async fn records_list(
    state: &State,
    args: Option<JsonObject>,
) -> Result<CallToolResult, String> {
    let a = Args::new(args, tools::RECORDS_LIST)?;
    let filter = ListFilter {
        endpoint: a.string("endpoint")?,
        since: a
            .string("since")?
            .map(|s| store::parse_since(&s))
            .transpose()
            .map_err(|e| format!("since: {e}"))?,
        outcome: a
            .string("outcome")?
            .map(|o| match o.as_str() {
                "PASS" | "FAIL" => Ok(o),
                _ => Err(format!("outcome must be PASS or FAIL, not {}", quote(&o))),
            })
            .transpose()?,
    };
    let limit = a.integer("limit", tools::LIST_DEFAULT, 1, tools::LIST_MAX)? as usize;
    let offset = a.integer("offset", 0, 0, u32::MAX as u64)? as usize;
    let rows = read_store(state, move |s| s.list(&filter)).await?;
    let matched = rows.len();
    // Newest first: a model asking "what did I walk" wants the latest. A page at a time, so an
    // answer stays small however large the store.
    let page: Vec<_> = rows.iter().rev().skip(offset).take(limit).collect();
    let next = offset + page.len();
    let mut lines = vec![if page.is_empty() {
        format!("{matched} records match; none from offset {offset}")
    } else {
        format!(
            "{matched} records match; showing {} to {} of them, newest first{}",
            offset + 1,
            next,
            if next < matched {
                format!("; the next page is offset {next}")
            } else {
                String::new()
            }
        )
    }];
    lines.extend(page.iter().map(|r| {
        format!(
            "{} {} {} sha256 {}{}",
            r.meta.walked_at,
            r.meta
                .verdict
                .as_ref()
                .map(|v| format!("{} {}/{}", v.outcome, v.n_pass, v.n_total))
                .unwrap_or_else(|| r.meta.privacy_mode.clone()),
            r.meta.endpoint,
            r.sha256,
            if r.signed { " signed" } else { "" }
        )
    }));
    let mut value = json!({
        "records": page.iter().map(|r| r.to_json()).collect::<Vec<Value>>(),
        "matched": matched,
        "shown": page.len(),
        "offset": offset,
    });
    if next < matched {
        value["next_offset"] = json!(next);
    }
    Ok(answer_text(vec![lines.join("\n")], value))
}

pub(super) async fn records_show(
    state: &State,
    args: Option<JsonObject>,
) -> Result<CallToolResult, String> {
    let a = Args::new(args, tools::RECORDS_SHOW)?;
    let prefix = a.required("sha_prefix")?;
    if prefix.len() < 4 || !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "sha_prefix must be at least 4 hex characters of a record's sha256, not {}",
            quote(&prefix)
        ));
    }
    let (rec, beside) = read_store(state, move |s| {
        let rec = s.get_by_prefix(&prefix)?;
        let beside = store::beside::get(s.connection(), rec.row.id)?;
        Ok((rec, beside))
    })
    .await?;
    let record = crate::json::parse_lenient(&rec.canonical)
        .map_err(|e| format!("record {} is stored but is not JSON: {e}", rec.row.sha256))?;
    let row = rec.row.to_json();
    let summary = format!(
        "record {} walked {} at {}: {}",
        rec.row.sha256,
        rec.row.meta.endpoint,
        rec.row.meta.walked_at,
        rec.row
            .meta
            .verdict
            .as_ref()
            .map(|v| format!("{} {}/{}", v.outcome, v.n_pass, v.n_total))
            .unwrap_or_else(|| rec.row.meta.privacy_mode.clone())
    );
    Ok(answer(
        summary,
        json!({
            "row": row,
            "record": record,
            "record_canonical": String::from_utf8_lossy(&rec.canonical),
            "signature_ed25519_b64": rec.signature_b64,
            "public_key_ed25519_b64": rec.public_key_b64,
            "kept_full_sha256": rec.kept_full.as_ref().map(|k| crate::digest::sha256_hex(&k.canonical)),
            "reciprocal": beside.reciprocal,
        }),
    ))
}

pub(super) async fn records_verify(
    state: &State,
    args: Option<JsonObject>,
) -> Result<CallToolResult, String> {
    Args::new(args, tools::RECORDS_VERIFY)?;
    let report = read_store(state, |s| store::verify_all(s, |_, _| {})).await?;
    let summary = if report.is_ok() {
        format!(
            "ok: {} records verified ({} signed)",
            report.rows, report.signed
        )
    } else {
        format!(
            "FAILED: {} problems in {} records",
            report.problems.len(),
            report.rows
        )
    };
    Ok(answer(
        summary,
        json!({
            "ok": report.is_ok(),
            "rows": report.rows,
            "signed": report.signed,
            "chain_head": report.head.as_ref().map(|(row, chain)| json!({"row": row, "chain_hash": chain})),
            "problems": report.problems.iter().map(|p| json!({
                "row": p.row,
                "kind": p.kind.name(),
                "detail": p.detail,
            })).collect::<Vec<_>>(),
        }),
    ))
}

/// The card URL from the arguments, its origin, and its bytes (through the operator's rules:
/// a private host is reachable only when the config names it).
async fn card(
    state: &State,
    args: Option<JsonObject>,
    tool: &str,
) -> Result<(String, String, Vec<u8>), String> {
    let a = Args::new(args, tool)?;
    let raw = a.required("url")?;
    crate::net::https_url(&raw).map_err(|why| format!("url {}: {why}", quote(&raw)))?;
    let url = card_url(&raw).map_err(|why| format!("url {why}"))?;
    let origin = url::Url::parse(&url)
        .map_err(|e| format!("url {}: {e}", quote(&url)))?
        .origin()
        .ascii_serialization();
    state
        .transport
        .check_destination(&url)
        .await
        .map_err(|why| format!("url {}: {why}", quote(&url)))?;
    let bytes = fetch_card(&state.transport, &url).await?;
    Ok((url, origin, bytes))
}

pub(super) async fn card_verify(
    state: &State,
    args: Option<JsonObject>,
) -> Result<CallToolResult, String> {
    let (url, origin, bytes) = card(state, args, tools::CARD_VERIFY).await?;
    let read = crate::card_signature::read_card_bytes(&bytes)
        .map_err(|e| format!("the card at {url} cannot be checked: {e}"))?;
    let audit = read
        .audit(&origin, Some(&state.jwks_transport), &state.trust, &[])
        .await;
    let v = &audit.verification;
    // Three-valued like the record's `verified`: "not checked" must not read as "bad".
    let summary = format!("{}: {}", audit.verdict.text(), v.verified_reason(false));
    let audit_json = audit.to_json();
    Ok(answer(
        summary,
        json!({
            "url": url,
            "valid": v.valid,
            "verified": v.verified(),
            "verdict": audit.verdict.code(),
            "acted_on_uncovered": audit_json["acted_on_uncovered"],
            "card_signature": v.record_block(false),
            "verified_reason": v.verified_reason(false),
            "does_not_establish": v.attribution_line(),
        }),
    ))
}

pub(super) async fn terms_verify(
    state: &State,
    args: Option<JsonObject>,
) -> Result<CallToolResult, String> {
    let (url, _, bytes) = card(state, args, tools::TERMS_VERIFY).await?;
    let card = crate::json::parse_lenient(&bytes)
        .map_err(|e| format!("the card at {url} is not JSON: {e}"))?;
    let Some(report) = crate::terms::verify_for_walk(&card, &state.transport).await else {
        return Ok(answer(
            crate::terms::NO_EXTENSION_TEXT.to_string(),
            json!({
                "url": url,
                "listed": false,
                "all_verified": false,
                "terms": null,
                "establishes": [],
                "does_not_establish": [crate::terms::NO_EXTENSION_TEXT],
            }),
        ));
    };
    let summary = crate::terms::summary::render(&report)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    Ok(answer(
        summary,
        json!({
            "url": url,
            "listed": true,
            "all_verified": report.all_verified(),
            "terms": report.record_block(),
            "establishes": report.establishes(),
            "does_not_establish": report.does_not_establish(),
        }),
    ))
}
