//! Locating and validating the terms extension declaration in a card (seed §3, spec §5.6).
//!
//! Validation never stops verification: every listed entry is still checked on its own, so a
//! misdeclared card is reported as such *and* its proposals get their outcomes. Problems are
//! recorded, not fatal, except that a declaration without proposals has nothing to verify.

use serde_json::Value;

/// The extension URI, matched byte for byte (seed §2: consumers match the URI exactly).
pub const TERMS_EXTENSION_URI: &str = "https://agentsow.com/extensions/a2a-terms/v1";
/// The digest spelling: this prefix followed by 64 lower-case hex characters.
pub const DIGEST_PREFIX: &str = "sha256:";

/// One `params.proposals[]` entry as the card wrote it. Fields that are absent or not strings
/// are `None` (and a problem says so).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProposalEntry {
    pub url: Option<String>,
    pub digest: Option<String>,
    /// The document's Agent SoW id as the card labels it: a human handle, never the commitment.
    pub sow: Option<String>,
    /// The offering the proposal prices; should equal a skill id.
    pub offering: Option<String>,
}

/// What is wrong with a declaration. Only [`DeclarationProblem::is_fatal`] problems leave
/// nothing to verify; the rest are reported beside the outcomes.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum DeclarationProblem {
    #[error(
        "required is true: a data-only extension must not be required (misdeclared; ignored, the agent is not refused)"
    )]
    RequiredTrue,
    #[error("required is {0}, not a boolean")]
    RequiredNotBoolean(String),
    #[error("the card declares the terms extension {0} times; only the first declaration is read")]
    DeclaredMoreThanOnce(usize),
    #[error("params is missing or not an object")]
    ParamsNotObject,
    #[error("params.sow_spec is missing (required; informational only, never a gate)")]
    SowSpecMissing,
    #[error("params.sow_spec is not a string")]
    SowSpecNotString,
    #[error("params.proposals is missing or not an array")]
    ProposalsNotArray,
    #[error("params.proposals is empty: at least one proposal is required")]
    ProposalsEmpty,
    #[error("proposals[{0}] is not an object")]
    EntryNotObject(usize),
    #[error("proposals[{0}].url is missing or not a string")]
    UrlMissing(usize),
    #[error("proposals[{index}].url {url:?} is not an https URL")]
    UrlNotHttps { index: usize, url: String },
    #[error("proposals[{0}].digest is missing or not a string")]
    DigestMissing(usize),
    #[error(
        "proposals[{index}].digest {digest:?} is not \"sha256:\" followed by 64 lower-case hex characters"
    )]
    DigestMalformed { index: usize, digest: String },
    #[error("proposals[{index}].{field} is not a string")]
    FieldNotString { index: usize, field: &'static str },
}

impl DeclarationProblem {
    /// A problem that leaves no proposal to verify.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            DeclarationProblem::ParamsNotObject
                | DeclarationProblem::ProposalsNotArray
                | DeclarationProblem::ProposalsEmpty
        )
    }
}

/// The card's terms extension declaration, as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermsDeclaration {
    /// Position in `capabilities.extensions[]`.
    pub extension_index: usize,
    /// `required` as written (`None` when absent).
    pub required: Option<bool>,
    pub sow_spec: Option<String>,
    /// One per `params.proposals[]` element, in card order (non-objects included, all `None`).
    pub entries: Vec<ProposalEntry>,
    pub problems: Vec<DeclarationProblem>,
}

impl TermsDeclaration {
    /// `required: true` was written: misdeclared, flagged, not fatal.
    pub fn required_misdeclared(&self) -> bool {
        self.required == Some(true)
    }

    pub fn has_fatal_problem(&self) -> bool {
        self.problems.iter().any(DeclarationProblem::is_fatal)
    }
}

/// `sha256:` + exactly 64 lower-case hex characters.
pub fn digest_well_formed(digest: &str) -> bool {
    digest.strip_prefix(DIGEST_PREFIX).is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

fn url_is_https(raw: &str) -> bool {
    url::Url::parse(raw).is_ok_and(|u| u.scheme() == "https" && u.host().is_some())
}

/// Find the terms extension in `capabilities.extensions[]` (exact URI match) and validate it.
/// `None` when the card does not list it: absence states nothing about terms (seed §7.3).
pub fn locate(card: &Value) -> Option<TermsDeclaration> {
    let extensions = card.get("capabilities")?.get("extensions")?.as_array()?;
    let mut matches = extensions
        .iter()
        .enumerate()
        .filter(|(_, ext)| ext.get("uri").and_then(Value::as_str) == Some(TERMS_EXTENSION_URI));
    let (extension_index, ext) = matches.next()?;
    let others = matches.count();
    let mut problems = Vec::new();
    if others > 0 {
        problems.push(DeclarationProblem::DeclaredMoreThanOnce(others + 1));
    }
    let required = match ext.get("required") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => {
            problems.push(DeclarationProblem::RequiredNotBoolean(other.to_string()));
            None
        }
    };
    if required == Some(true) {
        problems.push(DeclarationProblem::RequiredTrue);
    }
    let mut declaration = TermsDeclaration {
        extension_index,
        required,
        sow_spec: None,
        entries: Vec::new(),
        problems,
    };
    let Some(params) = ext.get("params").and_then(Value::as_object) else {
        declaration
            .problems
            .push(DeclarationProblem::ParamsNotObject);
        return Some(declaration);
    };
    match params.get("sow_spec") {
        None => declaration
            .problems
            .push(DeclarationProblem::SowSpecMissing),
        Some(Value::String(s)) => declaration.sow_spec = Some(s.clone()),
        Some(_) => declaration
            .problems
            .push(DeclarationProblem::SowSpecNotString),
    }
    let Some(proposals) = params.get("proposals").and_then(Value::as_array) else {
        declaration
            .problems
            .push(DeclarationProblem::ProposalsNotArray);
        return Some(declaration);
    };
    if proposals.is_empty() {
        declaration
            .problems
            .push(DeclarationProblem::ProposalsEmpty);
    }
    for (index, item) in proposals.iter().enumerate() {
        let (entry, mut entry_problems) = read_entry(index, item);
        declaration.entries.push(entry);
        declaration.problems.append(&mut entry_problems);
    }
    Some(declaration)
}

fn read_entry(index: usize, item: &Value) -> (ProposalEntry, Vec<DeclarationProblem>) {
    let mut problems = Vec::new();
    let Some(obj) = item.as_object() else {
        problems.push(DeclarationProblem::EntryNotObject(index));
        return (ProposalEntry::default(), problems);
    };
    // A required string member: missing, or present and checked by `sound`.
    let mut required = |key: &str,
                        missing: fn(usize) -> DeclarationProblem,
                        sound: fn(&str) -> bool,
                        unsound: fn(usize, String) -> DeclarationProblem| {
        let value = obj.get(key).and_then(Value::as_str).map(str::to_owned);
        match &value {
            None => problems.push(missing(index)),
            Some(v) if !sound(v) => problems.push(unsound(index, v.clone())),
            Some(_) => {}
        }
        value
    };
    let url = required(
        "url",
        DeclarationProblem::UrlMissing,
        url_is_https,
        |index, url| DeclarationProblem::UrlNotHttps { index, url },
    );
    let digest = required(
        "digest",
        DeclarationProblem::DigestMissing,
        digest_well_formed,
        |index, digest| DeclarationProblem::DigestMalformed { index, digest },
    );
    let mut optional = |field: &'static str| match obj.get(field) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            problems.push(DeclarationProblem::FieldNotString { index, field });
            None
        }
    };
    let sow = optional("sow");
    let offering = optional("offering");
    (
        ProposalEntry {
            url,
            digest,
            sow,
            offering,
        },
        problems,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn card(ext: Value) -> Value {
        json!({"capabilities": {"extensions": [{"uri": "https://example.com/other"}, ext]}})
    }

    const D: &str = "sha256:cf1dfeb9556d3034cc0acc15bdbc5acf72cab061adb553be2be51bc5cb65ff24";

    #[test]
    fn absent_when_no_exact_uri() {
        assert_eq!(locate(&json!({})), None);
        let near = card(json!({"uri": "https://agentsow.com/extensions/a2a-terms/v1/"}));
        assert_eq!(locate(&near), None);
        let case = card(json!({"uri": "HTTPS://agentsow.com/extensions/a2a-terms/v1"}));
        assert_eq!(locate(&case), None);
    }

    #[test]
    fn reads_a_well_formed_declaration() {
        let d = locate(&card(json!({
            "uri": TERMS_EXTENSION_URI, "required": false,
            "params": {"sow_spec": "0.18.0-draft", "proposals": [
                {"url": "https://a.example/p.json", "digest": D, "sow": "sow_x", "offering": "o"}
            ]}
        })))
        .unwrap();
        assert_eq!(d.extension_index, 1);
        assert!(d.problems.is_empty(), "{:?}", d.problems);
        assert_eq!(d.sow_spec.as_deref(), Some("0.18.0-draft"));
        assert_eq!(d.entries[0].offering.as_deref(), Some("o"));
        assert!(!d.required_misdeclared());
    }

    #[test]
    fn flags_problems_without_dropping_entries() {
        let d = locate(&card(json!({
            "uri": TERMS_EXTENSION_URI, "required": true,
            "params": {"proposals": [
                {"url": "http://a.example/p.json", "digest": D.to_uppercase()},
                "nonsense",
                {"digest": D, "offering": 7}
            ]}
        })))
        .unwrap();
        assert!(d.required_misdeclared());
        assert!(!d.has_fatal_problem());
        assert_eq!(d.entries.len(), 3);
        for expected in [
            DeclarationProblem::RequiredTrue,
            DeclarationProblem::SowSpecMissing,
            DeclarationProblem::UrlNotHttps {
                index: 0,
                url: "http://a.example/p.json".into(),
            },
            DeclarationProblem::DigestMalformed {
                index: 0,
                digest: D.to_uppercase(),
            },
            DeclarationProblem::EntryNotObject(1),
            DeclarationProblem::UrlMissing(2),
            DeclarationProblem::FieldNotString {
                index: 2,
                field: "offering",
            },
        ] {
            assert!(d.problems.contains(&expected), "missing {expected:?}");
        }
    }

    #[test]
    fn empty_proposals_is_fatal() {
        let d = locate(&card(json!({
            "uri": TERMS_EXTENSION_URI, "params": {"sow_spec": "x", "proposals": []}
        })))
        .unwrap();
        assert!(d.has_fatal_problem());
        let d = locate(&card(json!({"uri": TERMS_EXTENSION_URI}))).unwrap();
        assert_eq!(d.problems, vec![DeclarationProblem::ParamsNotObject]);
    }

    #[test]
    fn digest_spelling() {
        assert!(digest_well_formed(D));
        assert!(!digest_well_formed(&D.to_uppercase()));
        assert!(!digest_well_formed(&D[..70]));
        assert!(!digest_well_formed(&D.replace("sha256:", "sha-256:")));
    }
}
