//! Canonical forms an auditor compares bytes against (`conduct-walker canonical`):
//!
//! - `nenrin` (conduct-walk.md §4.1): what records are hashed in, Python's
//!   `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)` of what Python's
//!   `json.loads` reads. As Python: a duplicate member name keeps the last value, `NaN` and
//!   `Infinity` are read and written back. A lone surrogate has no UTF-8 bytes (Python's
//!   `.encode()` raises), so it is refused.
//! - `rfc8785`: RFC 8785 of an I-JSON document (RFC 7493): duplicates, lone surrogates and
//!   `NaN`/`Infinity` are refused.
//! - `card-PROFILE`: the payload a card signature is made over under one profile
//!   (card-signature-and-terms.md §2.7), with the members it leaves out.

use crate::card_signature::{self, Profile, Uncovered};

/// A canonical form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Nenrin,
    Rfc8785,
    Card(Profile),
}

impl Form {
    /// Every form's name, for help and refusals.
    pub fn names() -> Vec<String> {
        let mut names = vec!["nenrin".to_string(), "rfc8785".to_string()];
        names.extend(Profile::ALL.iter().map(|p| format!("card-{}", p.name())));
        names
    }

    pub fn parse(name: &str) -> Result<Form, String> {
        match name {
            "nenrin" => Ok(Form::Nenrin),
            "rfc8785" => Ok(Form::Rfc8785),
            _ => name
                .strip_prefix("card-")
                .and_then(Profile::from_name)
                .map(Form::Card)
                .ok_or_else(|| format!("no form {name:?}: one of {}", Form::names().join(", "))),
        }
    }

    pub fn name(self) -> String {
        match self {
            Form::Nenrin => "nenrin".into(),
            Form::Rfc8785 => "rfc8785".into(),
            Form::Card(p) => format!("card-{}", p.name()),
        }
    }
}

/// The canonical bytes, and for a card form what they leave out.
#[derive(Debug, Clone)]
pub struct Canonicalised {
    pub bytes: Vec<u8>,
    pub uncovered: Vec<Uncovered>,
}

/// Why a form has no bytes for a document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {form} form refuses this input: {reason}")]
pub struct FormRefusal {
    pub form: String,
    pub reason: String,
}

/// The canonical bytes of `bytes` under `form`.
pub fn canonicalise(form: Form, bytes: &[u8]) -> Result<Canonicalised, FormRefusal> {
    let refuse = |reason: String| FormRefusal {
        form: form.name(),
        reason,
    };
    match form {
        Form::Nenrin => {
            let doc = crate::json::read(bytes, crate::json::ReadOptions::LENIENT)
                .map_err(|e| refuse(format!("not JSON as Python reads it: {e}")))?;
            if doc.has_lone_surrogates() {
                return Err(refuse(
                    "a string holds a lone surrogate escape, which has no UTF-8 bytes (Python's writer raises UnicodeEncodeError)".into(),
                ));
            }
            Ok(Canonicalised {
                bytes: doc.root().canonical_string().into_bytes(),
                uncovered: Vec::new(),
            })
        }
        Form::Rfc8785 => {
            let bytes = crate::jcs::canonicalize_bytes(bytes).map_err(|e| refuse(e.to_string()))?;
            Ok(Canonicalised {
                bytes,
                uncovered: Vec::new(),
            })
        }
        Form::Card(profile) => {
            let read = card_signature::read_card_bytes(bytes).map_err(|e| refuse(e.to_string()))?;
            let c = read.canonical(profile).map_err(|e| refuse(e.to_string()))?;
            Ok(Canonicalised {
                bytes: c.bytes,
                uncovered: c.uncovered,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(form: &str, input: &str) -> Result<String, FormRefusal> {
        canonicalise(Form::parse(form).unwrap(), input.as_bytes())
            .map(|c| String::from_utf8(c.bytes).unwrap())
    }

    #[test]
    fn the_forms_differ_where_their_specs_do() {
        let input = r#"{"b":1e21,"a":[1.0,"é"]}"#;
        assert_eq!(
            text("nenrin", input).unwrap(),
            r#"{"a":[1.0,"é"],"b":1e+21}"#
        );
        assert_eq!(
            text("rfc8785", input).unwrap(),
            r#"{"a":[1,"é"],"b":1e+21}"#
        );
    }

    #[test]
    fn each_form_refuses_what_it_cannot_write() {
        let dup = r#"{"a":1,"a":2}"#;
        assert_eq!(text("nenrin", dup).unwrap(), r#"{"a":2}"#);
        assert!(
            text("rfc8785", dup)
                .unwrap_err()
                .reason
                .contains("duplicate")
        );
        assert_eq!(text("nenrin", "[NaN]").unwrap(), "[NaN]");
        assert!(text("rfc8785", "[NaN]").is_err());
        let lone = r#"["\ud800"]"#;
        assert!(
            text("nenrin", lone)
                .unwrap_err()
                .reason
                .contains("lone surrogate")
        );
        assert!(text("rfc8785", lone).is_err());
        assert!(
            text("card-sdk", "[1]")
                .unwrap_err()
                .reason
                .contains("not a JSON object")
        );
        assert!(Form::parse("card-nope").unwrap_err().contains("card-sdk"));
    }
}
