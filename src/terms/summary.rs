//! The human summary `terms verify` prints: the terms on offer for every verified proposal,
//! the failure word for the others.
//!
//! Grades are printed exactly as the document spells them, beside every clause they belong to;
//! a clause without a grade says so rather than borrowing one (seed §7.2). Money amounts are
//! printed as the integers the document holds, in the smallest unit of its currency: the
//! document does not say how large that unit is, so no conversion is invented.

use super::report::TermsReport;
use super::verify::ProposalResult;
use serde_json::{Map, Value};

/// Write one line, escaping control characters in it. Documents and cards are untrusted: a
/// newline inside a clause could forge a line such as "outcome: verified", and escape
/// sequences could rewrite the terminal.
fn line(out: &mut String, text: &str) {
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out.push('\n');
}

macro_rules! emit {
    ($out:expr, $($arg:tt)*) => {
        line($out, &format!($($arg)*))
    };
}

/// Printed once after the proposals.
pub const SUMMARY_FOOTER: &str = "A verified proposal is an offer, honestly attributed: the card commits to these exact bytes and the key shown signed them. It is no endorsement of the agent and no evidence of its conduct; every grade above is the provider's own statement. An entry that did not verify states no terms.";
/// Printed for each failing entry after its outcome word.
pub const NO_TERMS_STATED: &str = "no terms stated";
/// Printed when a clause carries no `grade`.
const GRADE_NOT_STATED: &str = "grade not stated";

fn grade(v: &Value) -> String {
    match v.get("grade") {
        Some(Value::String(g)) => format!("grade: {g}"),
        Some(other) => format!("grade: {other}"),
        None => GRADE_NOT_STATED.to_string(),
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `k=v` pairs of a clause, nested objects without their own grade flattened with dots.
/// Sub-objects that carry a grade are split clauses and are returned separately.
fn fields<'a>(
    prefix: &str,
    obj: &'a Map<String, Value>,
    out: &mut Vec<String>,
    split: &mut Vec<(String, &'a Value)>,
) {
    for (k, v) in obj {
        if k == "grade" {
            continue;
        }
        let name = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Object(inner) if inner.contains_key("grade") => split.push((name, v)),
            Value::Object(inner) => fields(&name, inner, out, split),
            Value::Array(items) => {
                let parts: Vec<String> = items
                    .iter()
                    .map(|item| match item {
                        Value::Object(o) => {
                            let mut inner = Vec::new();
                            let mut nested = Vec::new();
                            fields("", o, &mut inner, &mut nested);
                            inner.extend(nested.iter().map(|(n, v)| format!("{n}={v}")));
                            format!("{{{}}}", inner.join(", "))
                        }
                        other => scalar(other),
                    })
                    .collect();
                out.push(format!("{name}=[{}]", parts.join(", ")));
            }
            other => out.push(format!("{name}={}", scalar(other))),
        }
    }
}

/// One clause (and its graded sub-clauses) as indented lines.
fn clause(out: &mut String, indent: &str, label: &str, value: &Value) {
    match value.as_object() {
        Some(obj) => {
            let mut flat = Vec::new();
            let mut split = Vec::new();
            fields("", obj, &mut flat, &mut split);
            emit!(
                out,
                "{indent}{label} [{}]: {}",
                grade(value),
                flat.join(", ")
            );
            for (name, sub) in split {
                clause(out, &format!("{indent}  "), &name, sub);
            }
        }
        None => {
            emit!(
                out,
                "{indent}{label} [{}]: {}",
                GRADE_NOT_STATED,
                scalar(value)
            );
        }
    }
}

/// The terms of one verified document.
fn document_terms(out: &mut String, doc: &Value) {
    let provider = doc
        .pointer("/parties/provider/owner")
        .and_then(Value::as_str);
    if let Some(owner) = provider {
        emit!(out, "  provider (as the document names it): {owner}");
    }
    if let Some(price) = doc.get("price") {
        let currency = price.get("currency").and_then(Value::as_str).unwrap_or("?");
        clause(out, "  ", "price", price);
        emit!(
            out,
            "    (amounts are integers in the smallest unit of {currency}, as the document states them)"
        );
    } else {
        emit!(out, "  price: the document states none");
    }
    emit!(out, "  data use:");
    match doc.get("confidentiality").and_then(Value::as_object) {
        Some(conf) => {
            for (name, sub) in conf {
                if name != "grade" {
                    clause(out, "    ", name, sub);
                }
            }
        }
        None => {
            emit!(out, "    the document states no confidentiality clause");
        }
    }
    emit!(out, "  caps:");
    let mut any_cap = false;
    if let Some(volume) = doc.get("volume") {
        clause(out, "    ", "volume", volume);
        any_cap = true;
    }
    if let Some(cap) = doc.pointer("/price/cap") {
        emit!(
            out,
            "    price cap [{} (the price clause's)]: {}",
            grade(&doc["price"]),
            scalar(cap)
        );
        any_cap = true;
    }
    if !any_cap {
        emit!(out, "    the document states none");
    }
    emit!(out, "  refusals:");
    let scope = doc.get("scope").unwrap_or(&Value::Null);
    match scope
        .pointer("/examples/out_of_scope")
        .and_then(Value::as_array)
    {
        Some(list) if !list.is_empty() => {
            for item in list {
                emit!(out, "    out of scope [{}]: {}", grade(scope), scalar(item));
            }
        }
        _ => {
            emit!(out, "    the document names no out-of-scope work");
        }
    }
    emit!(out, "  other clauses:");
    for name in ["scope", "termination", "disputes", "change_control"] {
        if let Some(v) = doc.get(name) {
            clause(out, "    ", name, v);
        }
    }
    if let Some(list) = doc.get("qualifications").and_then(Value::as_array) {
        for q in list {
            let id = q.get("id").map(scalar).unwrap_or_default();
            clause(out, "    ", &format!("qualification {id}"), q);
        }
    }
}

fn proposal(out: &mut String, n: usize, total: usize, r: &ProposalResult) {
    let url = r.entry.url.as_deref().unwrap_or(super::report::NO_URL);
    emit!(out, "proposal {n} of {total}: {url}");
    if let Some(offering) = &r.entry.offering {
        emit!(out, "  offering (card): {offering}");
    }
    match &r.verified {
        Some(v) => {
            emit!(out, "  outcome: {} ({})", r.outcome, r.reason);
            emit!(
                out,
                "  document id: {} (a label; the digest {} is the commitment)",
                v.id.as_deref().unwrap_or("not given"),
                v.digest
            );
            document_terms(out, &v.document);
        }
        None => {
            emit!(
                out,
                "  outcome: {} - {NO_TERMS_STATED} ({})",
                r.outcome,
                r.reason
            );
        }
    }
}

/// The full human summary of a report.
pub fn render(report: &TermsReport) -> String {
    let mut buf = String::new();
    let out = &mut buf;
    let d = &report.declaration;
    emit!(
        out,
        "terms extension declared (sow_spec {}, informational)",
        d.sow_spec.as_deref().unwrap_or("not given")
    );
    for p in &d.problems {
        emit!(out, "  declaration problem: {p}");
    }
    let total = report.results.len();
    if total == 0 {
        emit!(out, "no proposal listed: {NO_TERMS_STATED}");
    }
    for (i, r) in report.results.iter().enumerate() {
        proposal(out, i + 1, total, r);
    }
    if !report.findings.is_empty() {
        emit!(out, "findings (not failures):");
        for f in &report.findings {
            emit!(out, "  - {f}");
        }
    }
    let verified = report.verified().count();
    emit!(out, "{verified} of {total} proposals verified");
    emit!(out, "{SUMMARY_FOOTER}");
    buf
}
