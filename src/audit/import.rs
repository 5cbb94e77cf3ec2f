//! What `records import` reads from one file: the inputs `inspect` takes, as records.
//!
//! Pure: a file's bytes in, its records (each with the line it came from) or the one refusal
//! that names the line and says what was there instead. Framing, told apart without a flag:
//! - JSON lines (what `records export` writes): the first non-blank line is JSON, so every
//!   non-blank line is one record or one submission body;
//! - one document (a pretty-printed record or intake body an auditor copied): the first line
//!   is not JSON on its own, so the whole file is read as one.
//!
//! A record enters the store only as its canonical bytes, and the store refuses any others
//! (their sha256 would be a second identity for the same record). Whitespace between tokens
//! is layout, not content: a record whose bytes differ from its NENRIN form only there (a
//! pretty-printed copy) is taken as that form. Any other difference (key order, escapes, a
//! number's spelling) reaches the store as given and is refused there, as before.

use super::inspect::{Kind, kind_of};
use crate::json::bounded::{self, Input, Refused};
use crate::store::NewRecord;
use crate::store::transfer;

/// The shapes `records import` takes, for every refusal.
pub const EXPECTED: &str = "records import takes jidec-path-v1 walk records or intake bodies";

/// One record read from a file, and the line it starts on (`None` for a one-document file).
#[derive(Debug)]
pub struct Found {
    pub line: Option<usize>,
    pub record: NewRecord,
}

/// Why a file was refused: where, and what was there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub line: Option<usize>,
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(n) => write!(f, "line {n}: {}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

/// Every record of one file, or the first refusal.
pub fn read(bytes: &[u8]) -> Result<Vec<Found>, Refusal> {
    let lines = || {
        bytes
            .split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .enumerate()
            .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
    };
    let Some((_, first)) = lines().next() else {
        return Ok(Vec::new());
    };
    // Only a first line that is not JSON at all (a lone `{`) means one document: a line over
    // the caps is refused as that line, never re-read as a bigger whole.
    let one_document = lines().nth(1).is_some()
        && matches!(
            bounded::read(Input::ImportLine, first, crate::json::ReadOptions::LENIENT),
            Err(Refused::NotJson(_))
        );
    if one_document {
        let record = unit(bytes, Input::ImportDocument).map_err(|reason| Refusal {
            line: None,
            reason: format!(
                "{reason} (read as one JSON document: its first line is not JSON on its own)"
            ),
        })?;
        return Ok(vec![Found { line: None, record }]);
    }
    lines()
        .map(|(i, line)| {
            let line_no = i + 1;
            unit(line, Input::ImportLine)
                .map(|record| Found {
                    line: Some(line_no),
                    record,
                })
                .map_err(|reason| Refusal {
                    line: Some(line_no),
                    reason,
                })
        })
        .collect()
}

/// One line or document as a record, or why it is not one.
fn unit(bytes: &[u8], input: Input) -> Result<NewRecord, String> {
    let doc =
        bounded::read(input, bytes, crate::json::ReadOptions::LENIENT).map_err(|e| match e {
            Refused::NotJson(e) => format!("not JSON ({e}); {EXPECTED}"),
            over => over.to_string(),
        })?;
    // The store builds the record's tree: refuse here what would be too large as one.
    bounded::check_tree(input, &doc).map_err(|e| e.to_string())?;
    let root = doc.root();
    match kind_of(root) {
        Kind::WalkRecord | Kind::CommitmentRecord => {
            let canonical = root.canonical_string().into_bytes();
            let given = bytes.trim_ascii();
            // Layout only: the canonical bytes. Otherwise the bytes as given, for the store to
            // accept (already canonical) or refuse (not canonical) by its own rule.
            let bytes = if given != canonical.as_slice() && without_layout(given) == canonical {
                canonical
            } else {
                given.to_vec()
            };
            Ok(NewRecord {
                canonical: bytes,
                signature_b64: None,
                public_key_b64: None,
                kept_full: None,
            })
        }
        Kind::IntakeBody => {
            let value = root.to_value();
            let obj = value.as_object().ok_or("an intake body is a JSON object")?;
            transfer::record_of_body(obj).map_err(|e| format!("an intake body whose {e}"))
        }
        Kind::Unknown => Err(format!(
            "JSON of no kind `inspect` knows, not a walk record ({EXPECTED})"
        )),
        other => Err(format!(
            "{}, not a walk record ({EXPECTED})",
            other.description()
        )),
    }
}

/// The bytes without JSON's insignificant whitespace (outside strings).
fn without_layout(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let (mut in_string, mut escaped) = (false, false);
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        } else if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            continue;
        }
        out.push(b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &[u8] = br#"{"base":"x y","schema":"jidec-path-v1"}"#;

    #[test]
    fn layout_goes_and_strings_keep_their_spaces() {
        let pretty = b"{\n  \"base\": \"x y\",\n  \"schema\": \"jidec-path-v1\"\n}\n";
        assert_eq!(without_layout(pretty), RECORD);
        assert_eq!(without_layout(br#"{"a":"\" b"}"#), br#"{"a":"\" b"}"#);
    }

    #[test]
    fn framing_is_told_apart_and_refusals_name_the_line() {
        let pretty = b"{\n  \"base\": \"x y\",\n  \"schema\": \"jidec-path-v1\"\n}\n";
        let found = read(pretty).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].line, None);
        assert_eq!(found[0].record.canonical, RECORD);

        let mut lines = RECORD.to_vec();
        lines.extend_from_slice(
            b"\n\n{\"at\":\"x\",\"status\":\"pass\",\"record_sha256\":\"ab\"}\n",
        );
        let refusal = read(&lines).unwrap_err();
        assert_eq!(refusal.line, Some(3));
        assert!(refusal.reason.starts_with("a gate verdict"), "{refusal}");
        assert!(refusal.reason.contains(EXPECTED), "{refusal}");

        // Key order is content: left for the store to refuse, never reordered here.
        let reordered = br#"{"schema":"jidec-path-v1","base":"x y"}"#;
        assert_eq!(read(reordered).unwrap()[0].record.canonical, reordered);
        let broken = b"{\n  \"base\": \n";
        let refusal = read(broken).unwrap_err();
        assert_eq!(refusal.line, None);
        assert!(refusal.reason.contains("not JSON"), "{refusal}");
        assert!(read(b"\n \n").unwrap().is_empty());
    }
}
