//! The in-toto Statement over a ring (rings.md §8.1–8.2), byte-identical to the reference
//! emitter `ring_to_intoto.py`: NENRIN canonical form, no trailing newline.

use super::history::kind;
use super::{RingError, py, spec, statement_slug};
use crate::canonical::write_string;
use crate::digest::sha256_hex;
use crate::json::{JsonRef, ReadOptions, read};

/// A Statement and what it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    pub bytes: Vec<u8>,
    /// `rings/<slug>/<YYYY-MM>.json`.
    pub subject_name: String,
    /// sha256 of the ring file.
    pub subject_sha256: String,
}

/// `rings/<slug>/<YYYY-MM>.json` at the end of `path`, when it ends that way (§8.1).
pub fn name_from_path(path: &str) -> Option<String> {
    let rest = path.strip_suffix(".json")?;
    let (head, month) = rest.rsplit_once('/')?;
    let (head, slug) = head.rsplit_once('/')?;
    let month_ok = month.len() == 7
        && month.bytes().enumerate().all(|(i, b)| {
            if i == 4 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    let slug_ok = !slug.is_empty()
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    (head.ends_with("rings") && month_ok && slug_ok).then(|| format!("rings/{slug}/{month}.json"))
}

/// The Statement of the ring `bytes`, read from `path` (which names the subject when it ends
/// `rings/<slug>/<YYYY-MM>.json`).
pub fn emit(bytes: &[u8], path: Option<&str>) -> Result<Statement, RingError> {
    let doc = read(bytes, ReadOptions::LENIENT)
        .map_err(|e| RingError::input("ring", format!("not JSON: {e}")))?;
    let ring = doc.root();
    if !ring.is_object() {
        return Err(RingError::input(
            "ring",
            format!("{}, not a ring", kind(ring)),
        ));
    }
    if ring.get("schema").and_then(|s| s.as_str()) != Some(spec::SCHEMA)
        || !ring.get("schema").is_some_and(|s| s.is_string())
    {
        return Err(RingError::input(
            "ring",
            format!("its schema is not {}", spec::SCHEMA),
        ));
    }
    let subject_name = path
        .and_then(name_from_path)
        .unwrap_or_else(|| built_name(ring));
    let subject_sha256 = sha256_hex(bytes);
    let counts: Vec<(&str, JsonRef<'_>)> = ring
        .as_object()
        .expect("an object")
        .entries()
        .into_iter()
        .filter(|(k, _)| spec::V1_KEYS.contains(k))
        .collect();
    if counts.iter().any(|(_, v)| v.holds_lone_surrogate()) {
        return Err(RingError::input(
            "ring",
            "it holds a lone surrogate escape, which the emitter cannot write as UTF-8",
        ));
    }
    let mut out = String::with_capacity(bytes.len() + 1024);
    out.push_str("{\"_type\":");
    write_string(&mut out, spec::STATEMENT_TYPE);
    out.push_str(",\"predicate\":{\"counts_are_copied_not_recomputed\":true,\"emitted_by\":");
    write_string(&mut out, spec::EMITTED_BY);
    out.push_str(",\"ledger\":");
    write_string(&mut out, spec::LEDGER_URL);
    out.push_str(",\"no_score\":");
    write_string(&mut out, spec::NO_SCORE);
    out.push_str(",\"recompute\":");
    match ring.get("recompute") {
        Some(r) => r.write_canonical(&mut out),
        None => out.push_str("null"),
    }
    out.push_str(",\"ring_counts\":{");
    for (i, (k, v)) in counts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(&mut out, k);
        out.push(':');
        v.write_canonical(&mut out);
    }
    out.push_str("},\"ring_sha256\":");
    write_string(&mut out, &subject_sha256);
    out.push_str(",\"ring_spec\":");
    write_string(&mut out, spec::RING_SPEC);
    out.push_str(",\"ring_url\":");
    let tail = subject_name.strip_prefix("rings/").unwrap_or(&subject_name);
    write_string(&mut out, &format!("{}{tail}", spec::RING_URL_BASE));
    out.push_str("},\"predicateType\":");
    write_string(&mut out, spec::PREDICATE_TYPE);
    out.push_str(",\"subject\":[{\"digest\":{\"sha256\":");
    write_string(&mut out, &subject_sha256);
    out.push_str("},\"name\":");
    write_string(&mut out, &subject_name);
    out.push_str("}]}");
    Ok(Statement {
        bytes: out.into_bytes(),
        subject_name,
        subject_sha256,
    })
}

/// `rings/<slug>/<ring>.json` from the ring's own `endpoint` and `ring` (§8.1).
fn built_name(ring: JsonRef<'_>) -> String {
    let endpoint = ring
        .get("endpoint")
        .filter(|e| py::truthy(*e))
        .map(py::str_of)
        .unwrap_or_default();
    let month = ring
        .get("ring")
        .filter(|r| py::truthy(*r))
        .map_or_else(|| "unknown".to_string(), py::str_of);
    format!("rings/{}/{month}.json", statement_slug(&endpoint))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_names_from_paths() {
        assert_eq!(
            name_from_path("real/rings/mcp-horizonshield-dev-mcp/2026-08.json").as_deref(),
            Some("rings/mcp-horizonshield-dev-mcp/2026-08.json")
        );
        assert_eq!(
            name_from_path("rings/a/2026-08.json").as_deref(),
            Some("rings/a/2026-08.json")
        );
        assert_eq!(name_from_path("rings/A/2026-08.json"), None);
        assert_eq!(name_from_path("out/a/2026-08.json"), None);
        assert_eq!(name_from_path("rings/a/2026-8.json"), None);
        assert_eq!(name_from_path("expected.json"), None);
    }

    #[test]
    fn a_ring_without_the_schema_is_refused() {
        assert!(emit(br#"{"schema": "other"}"#, None).is_err());
        assert!(emit(b"[]", None).is_err());
        let s = emit(
            br#"{"schema": "nenrin-ring-v1", "x": 1, "witnesses": 3}"#,
            None,
        )
        .unwrap();
        let text = String::from_utf8(s.bytes).unwrap();
        assert!(
            text.contains(r#""ring_counts":{"schema":"nenrin-ring-v1","witnesses":3}"#),
            "{text}"
        );
        assert!(text.contains(r#""name":"rings//unknown.json""#), "{text}");
    }
}
