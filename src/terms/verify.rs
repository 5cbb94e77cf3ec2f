//! The per-proposal verification of seed §6, from fetched bytes to one of eight outcomes.
//!
//! Order (spec §5.7): fetch → I-JSON parse → RFC 8785 → SHA-256 compared exactly with the card's
//! digest → standing-proposal shape → provider signature. The first failing step decides the
//! outcome, so a mismatched document is never read for its shape or signature: it is not the
//! document the card committed to, and seed §8 forbids using it.

use super::declaration::ProposalEntry;
use super::sow::{self, ShapeError, SignatureError};
use crate::digest::sha256_hex;
use crate::jcs::JcsError;
use crate::net::{Exchange, HttpRequest, Session};
use serde_json::Value;
use std::fmt;

/// The outcome of one listed proposal, spelled exactly as records and the CLI print it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    Verified,
    FetchFailed,
    Unparseable,
    DigestMismatch,
    NotStandingProposal,
    DirectedInPublicCard,
    Unsigned,
    BadSignature,
}

impl Outcome {
    pub const ALL: [Outcome; 8] = [
        Outcome::Verified,
        Outcome::FetchFailed,
        Outcome::Unparseable,
        Outcome::DigestMismatch,
        Outcome::NotStandingProposal,
        Outcome::DirectedInPublicCard,
        Outcome::Unsigned,
        Outcome::BadSignature,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Verified => "verified",
            Outcome::FetchFailed => "fetch_failed",
            Outcome::Unparseable => "unparseable",
            Outcome::DigestMismatch => "digest_mismatch",
            Outcome::NotStandingProposal => "not_standing_proposal",
            Outcome::DirectedInPublicCard => "directed_in_public_card",
            Outcome::Unsigned => "unsigned",
            Outcome::BadSignature => "bad_signature",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a proposal failed; its message is the record's `reason`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VerifyError {
    #[error("{0}")]
    FetchFailed(String),
    #[error("the served body is not I-JSON: {0}")]
    Unparseable(JcsError),
    #[error(
        "the card lists {listed} but the served document's RFC 8785 bytes hash to {computed}: not the document the card committed to"
    )]
    DigestMismatch { listed: String, computed: String },
    #[error("{0}")]
    Shape(#[from] ShapeError),
    #[error("no provider signature verifies: {}", join_errors(.0))]
    BadSignature(Vec<SignatureError>),
}

fn join_errors(errors: &[SignatureError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl VerifyError {
    pub fn outcome(&self) -> Outcome {
        match self {
            VerifyError::FetchFailed(_) => Outcome::FetchFailed,
            VerifyError::Unparseable(_) => Outcome::Unparseable,
            VerifyError::DigestMismatch { .. } => Outcome::DigestMismatch,
            VerifyError::Shape(ShapeError::Directed) => Outcome::DirectedInPublicCard,
            VerifyError::Shape(ShapeError::Unsigned(_)) => Outcome::Unsigned,
            VerifyError::Shape(_) => Outcome::NotStandingProposal,
            VerifyError::BadSignature(_) => Outcome::BadSignature,
        }
    }
}

/// A proposal that passed all four steps. Only this carries the document: a failing entry's
/// bytes must not be used (seed §7.4).
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedProposal {
    pub document: Value,
    /// The terms digest, equal to the card's.
    pub digest: String,
    /// The document's own `id`, a label only.
    pub id: Option<String>,
    /// Keys whose provider signatures verified (at least one).
    pub signer_keys: Vec<String>,
}

/// Verify a fetched body against the digest a card lists (steps 1b–4). Pure.
pub fn verify_document(
    body: &[u8],
    listed_digest: Option<&str>,
) -> Result<VerifiedProposal, VerifyError> {
    let document =
        crate::jcs::parse_i_json_bounded(crate::json::bounded::Input::TermsDocument, body)
            .map_err(VerifyError::Unparseable)?;
    let computed = sow::terms_digest(&document).map_err(VerifyError::Unparseable)?;
    // Exact byte comparison (seed §5): an upper-case or otherwise re-spelled digest fails.
    if listed_digest != Some(computed.as_str()) {
        return Err(VerifyError::DigestMismatch {
            listed: listed_digest.unwrap_or("no digest").to_string(),
            computed,
        });
    }
    let (doc, provider_records) = sow::check_standing_shape(&document)?;
    let mut signer_keys = Vec::new();
    let mut errors = Vec::new();
    for record in provider_records {
        match sow::verify_signature_record(doc, record) {
            Ok(key) => signer_keys.push(key),
            Err(e) => errors.push(e),
        }
    }
    if signer_keys.is_empty() {
        return Err(VerifyError::BadSignature(errors));
    }
    let id = doc.get("id").and_then(Value::as_str).map(str::to_owned);
    Ok(VerifiedProposal {
        document,
        digest: computed,
        id,
        signer_keys,
    })
}

/// What the fetch saw, kept as evidence whatever the outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchFacts {
    /// 0 when the transport failed.
    pub http_status: u16,
    pub content_type: Option<String>,
    /// Lower-case hex SHA-256 of the body as received (not canonicalised).
    pub body_sha256: Option<String>,
}

/// One listed proposal and what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposalResult {
    pub entry: ProposalEntry,
    pub outcome: Outcome,
    pub reason: String,
    pub fetch: Option<FetchFacts>,
    pub verified: Option<VerifiedProposal>,
}

impl ProposalResult {
    pub fn failed(entry: ProposalEntry, error: VerifyError, fetch: Option<FetchFacts>) -> Self {
        ProposalResult {
            entry,
            outcome: error.outcome(),
            reason: error.to_string(),
            fetch,
            verified: None,
        }
    }

    /// Judge a finished exchange for this entry (everything after the network). Pure.
    pub fn from_exchange(entry: ProposalEntry, exchange: &Exchange) -> Self {
        let facts = FetchFacts {
            http_status: exchange.status,
            content_type: exchange.header("content-type").map(str::to_owned),
            body_sha256: (exchange.status != 0).then(|| sha256_hex(&exchange.body)),
        };
        if let Some(text) = &exchange.transport_error {
            let error = VerifyError::FetchFailed(format!("fetch failed: {text}"));
            return ProposalResult::failed(entry, error, Some(facts));
        }
        if (300..400).contains(&exchange.status) {
            let to = exchange.header("location").unwrap_or("no location given");
            let error = VerifyError::FetchFailed(format!(
                "http {}: a redirect (to {to}) is not followed; the listed url must serve the proposal itself",
                exchange.status
            ));
            return ProposalResult::failed(entry, error, Some(facts));
        }
        if exchange.status != 200 {
            let error = VerifyError::FetchFailed(format!(
                "http {}: the listed url did not serve the proposal",
                exchange.status
            ));
            return ProposalResult::failed(entry, error, Some(facts));
        }
        match verify_document(&exchange.body, entry.digest.as_deref()) {
            Ok(verified) => ProposalResult {
                reason: format!(
                    "digest matches and the provider signature by {} verifies",
                    verified.signer_keys.join(", ")
                ),
                entry,
                outcome: Outcome::Verified,
                fetch: Some(facts),
                verified: Some(verified),
            },
            Err(error) => ProposalResult::failed(entry, error, Some(facts)),
        }
    }
}

/// Fetch one listed proposal and verify it. Never fails: every problem is an outcome.
pub async fn fetch_and_verify(session: &Session, entry: ProposalEntry) -> ProposalResult {
    let Some(url) = entry.url.clone() else {
        let error = VerifyError::FetchFailed("not fetched: the entry carries no url".into());
        return ProposalResult::failed(entry, error, None);
    };
    let request = HttpRequest::get(url, &[("Accept", "application/json")]);
    let exchange = session.fetch(&request).await;
    // Verification reads a `Value` tree, one no larger than `json::bounded::TREE_BYTES` (a
    // larger one is refused), so it never waits for `json::large_tree_permit`.
    ProposalResult::from_exchange(entry, &exchange)
}
