//! A2A Terms extension: standing proposals verified by digest and signature.
//!
//! A card may list, in `capabilities.extensions[]` under [`TERMS_EXTENSION_URI`], signed Agent
//! SoW standing proposals committed to by digest (seed `000_270660e7158eb36b.txt`, spec §5).
//! This module locates and validates that declaration ([`declaration`]), fetches and verifies
//! each proposal into one of eight [`Outcome`]s ([`verify`], [`sow`], [`nkey`]), reports card
//! claims the proposals do not back ([`findings`]), and says what that does and does not
//! establish ([`report`], [`summary`]). It never touches an assertion or a verdict.
//!
//! Everything except [`verify_for_walk`] and [`verify::fetch_and_verify`] is pure.

pub mod declaration;
pub mod findings;
pub mod nkey;
pub mod report;
pub mod sow;
pub mod summary;
pub mod verify;

pub use declaration::{
    DeclarationProblem, ProposalEntry, TERMS_EXTENSION_URI, TermsDeclaration, locate,
};
pub use findings::Finding;
pub use report::TermsReport;
pub use verify::{
    FetchFacts, Outcome, ProposalResult, VerifiedProposal, VerifyError, verify_document,
};

use crate::net::Transport;
use futures_util::StreamExt;

/// What `terms verify` (and the MCP server's `terms_verify`) say when the card does not list the
/// extension. Absence states nothing (seed §7.3), so the text says exactly that and no more.
pub const NO_EXTENSION_TEXT: &str = "the card does not list the terms extension: it is silent about terms, which states nothing (not free, not unencumbered); there is no proposal to verify";

/// Proposals fetched per card. A card is untrusted input: without a bound, a card listing
/// thousands of slow URLs would hold a walk for hours. Entries past it are `fetch_failed`.
pub const MAX_PROPOSALS_FETCHED: usize = 16;
/// Proposal fetches in flight at once for one card.
const FETCH_CONCURRENCY: usize = 4;

/// Verify every proposal the card lists. `None` when the card does not list the terms
/// extension: absence states nothing, so there is nothing to record (seed §7.3).
///
/// The transport's policy decides which hosts are reachable: a proposal on a private address
/// that only the card names is refused (and reported as `fetch_failed`).
pub async fn verify_for_walk(
    card: &serde_json::Value,
    transport: &Transport,
) -> Option<TermsReport> {
    let declaration = locate(card)?;
    let session = transport.session();
    let session = &session;
    let results: Vec<ProposalResult> =
        futures_util::stream::iter(declaration.entries.iter().cloned().enumerate())
            .map(|(i, entry)| async move {
                if i >= MAX_PROPOSALS_FETCHED {
                    let why = format!(
                        "not fetched: the card lists more than {MAX_PROPOSALS_FETCHED} proposals and only the first {MAX_PROPOSALS_FETCHED} are fetched"
                    );
                    return ProposalResult::failed(entry, VerifyError::FetchFailed(why), None);
                }
                verify::fetch_and_verify(session, entry).await
            })
            .buffered(FETCH_CONCURRENCY)
            .collect()
            .await;
    Some(TermsReport::build(card, declaration, results))
}
