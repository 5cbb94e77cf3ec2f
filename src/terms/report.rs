//! What a walk records and says about a card's published terms (seed §7 honesty rules).
//!
//! Every line here follows four rules: a failing entry states no terms; absence states nothing
//! (there is no report at all without the extension); nothing is presented as an endorsement
//! or evidence of conduct; grades are shown exactly as the document gives them.

use super::declaration::{TERMS_EXTENSION_URI, TermsDeclaration};
use super::findings::{self, Finding};
use super::verify::{Outcome, ProposalResult};
use serde_json::{Value, json};

/// The record block's `note`: what the block is and is not.
pub const TERMS_BLOCK_NOTE: &str = "published terms read beside the walk; nothing here changes an assertion or the verdict. A verified proposal is an offer, honestly attributed to the key that signed it and committed to by the card's digest; it is no endorsement of the agent and no evidence of its conduct. An entry that did not verify states no terms. Enforcement grades are the provider's own, as the document gives them.";

/// `establishes` line per verified entry. Placeholders: `{digest}`, `{url}`, `{id}`, `{keys}`.
pub const ESTABLISHES_VERIFIED: &str = "that the card commits by digest {digest} to the Agent SoW standing proposal served at {url} (document id {id}), and that a provider signature by key {keys} verifies over it";
/// `establishes` line per failing entry. Placeholders: `{url}`, `{outcome}`.
pub const ESTABLISHES_FAILED: &str =
    "that the terms proposal the card lists at {url} did not verify at this walk ({outcome})";
/// `establishes` line when the declaration lists nothing to check.
pub const ESTABLISHES_NO_PROPOSALS: &str =
    "that the card declares the terms extension but lists no proposal that can be checked";

/// `does_not_establish` when at least one entry verified.
pub const DNE_TERMS_HONORED: &str = "that any published terms are honored: a verified standing proposal is an offer, honestly attributed, not an endorsement of the agent or evidence of its conduct";
/// `does_not_establish` when at least one entry verified.
pub const DNE_GRADES: &str = "that any clause graded enforced is enforced by a runtime: enforcement grades are the provider's own statements, recorded as the document gives them";
/// `does_not_establish` when at least one entry verified.
pub const DNE_KEY_OWNER: &str = "that the key which signed a terms proposal belongs to the owner the proposal names: the terms extension does not bind keys to owners";
/// `does_not_establish` per failing entry. Placeholders: `{url}`, `{outcome}`.
pub const DNE_FAILED: &str = "any terms through the proposal listed at {url}: it did not verify ({outcome}), and an entry that does not verify states no terms";
/// `does_not_establish` when no entry verified.
pub const DNE_NO_TERMS: &str =
    "any terms for this agent: no proposal the card lists verified, so the card states no terms";

/// Shown where an entry has no usable url.
pub(super) const NO_URL: &str = "(no url)";

/// The terms a card publishes and what became of each listed proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct TermsReport {
    pub declaration: TermsDeclaration,
    /// One per declaration entry, in card order.
    pub results: Vec<ProposalResult>,
    pub findings: Vec<Finding>,
}

fn url_of(result: &ProposalResult) -> &str {
    result.entry.url.as_deref().unwrap_or(NO_URL)
}

impl TermsReport {
    /// Assemble a report from finished results (pure; findings computed from the card).
    pub fn build(
        card: &Value,
        declaration: TermsDeclaration,
        results: Vec<ProposalResult>,
    ) -> Self {
        let findings = findings::collect(card, &declaration, &results);
        TermsReport {
            declaration,
            results,
            findings,
        }
    }

    /// True only when the card lists at least one proposal and every one verified.
    pub fn all_verified(&self) -> bool {
        !self.declaration.has_fatal_problem()
            && !self.results.is_empty()
            && self.results.iter().all(|r| r.outcome == Outcome::Verified)
    }

    pub fn verified(&self) -> impl Iterator<Item = &ProposalResult> {
        self.results
            .iter()
            .filter(|r| r.outcome == Outcome::Verified)
    }

    /// The record's `terms` block. Integers and strings only (the record's canonical form is
    /// NENRIN, which must not meet a float it did not write).
    pub fn record_block(&self) -> Value {
        let d = &self.declaration;
        let proposals: Vec<Value> = self
            .results
            .iter()
            .map(|r| {
                let fetch = r.fetch.as_ref();
                let v = r.verified.as_ref();
                json!({
                    "url": r.entry.url,
                    "digest": r.entry.digest,
                    "sow": r.entry.sow,
                    "offering": r.entry.offering,
                    "outcome": r.outcome.as_str(),
                    "reason": r.reason,
                    "terms_stated": v.is_some(),
                    "http_status": fetch.map(|f| f.http_status),
                    "content_type": fetch.and_then(|f| f.content_type.clone()),
                    "body_sha256": fetch.and_then(|f| f.body_sha256.clone()),
                    // Read from the document only when it verified: a failing entry's bytes
                    // are not the card's terms and must not be quoted as if they were.
                    "document_id": v.and_then(|v| v.id.clone()),
                    "signer_keys": v.map(|v| v.signer_keys.clone()).unwrap_or_default(),
                })
            })
            .collect();
        json!({
            "extension": TERMS_EXTENSION_URI,
            "declared_at": format!("capabilities.extensions[{}]", d.extension_index),
            "required": d.required,
            "required_misdeclared": d.required_misdeclared(),
            "sow_spec": d.sow_spec,
            "declaration_problems": d.problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "proposals": proposals,
            "findings": self.findings.iter().map(Finding::to_json).collect::<Vec<_>>(),
            "note": TERMS_BLOCK_NOTE,
        })
    }

    /// Lines appended to the record's `establishes`.
    pub fn establishes(&self) -> Vec<String> {
        if self.results.is_empty() {
            return vec![ESTABLISHES_NO_PROPOSALS.to_string()];
        }
        self.results
            .iter()
            .map(|r| match &r.verified {
                Some(v) => ESTABLISHES_VERIFIED
                    .replace("{digest}", &v.digest)
                    .replace("{url}", url_of(r))
                    .replace("{id}", v.id.as_deref().unwrap_or("not given"))
                    .replace("{keys}", &v.signer_keys.join(", ")),
                None => ESTABLISHES_FAILED
                    .replace("{url}", url_of(r))
                    .replace("{outcome}", r.outcome.as_str()),
            })
            .collect()
    }

    /// Lines appended to the record's `does_not_establish`.
    pub fn does_not_establish(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.verified().next().is_some() {
            lines.extend([DNE_TERMS_HONORED, DNE_GRADES, DNE_KEY_OWNER].map(String::from));
        } else {
            lines.push(DNE_NO_TERMS.to_string());
        }
        for r in self.results.iter().filter(|r| r.verified.is_none()) {
            lines.push(
                DNE_FAILED
                    .replace("{url}", url_of(r))
                    .replace("{outcome}", r.outcome.as_str()),
            );
        }
        lines
    }
}
