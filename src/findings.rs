//! The card-reading steps beside the conduct walk: the record's `card_signature` block (the
//! reference 1.5.0's, byte for byte: conduct-walk.md §4.3), conduct-walker's own richer
//! verification of a signed card (A2A §8.4: every algorithm, pinned keys, profiles; kept beside
//! the record for the store, the pages and MCP, never in it), and the A2A Terms extension
//! block. One place, used by `walk`, `demo` and the daemon's pipeline, so every record is built
//! the same way. None of it changes an assertion or the verdict.

use crate::card_signature::walk_block::JwksAnswer;
use crate::card_signature::{self, TrustStore};
use crate::clock::Clock;
use crate::net::Transport;
use crate::walk::record::CardFindings;
use crate::walk::{self, Card, Privacy, WalkOutcome, WalkRequest};

/// [`walk::run`] with these card findings: the one way the CLI, the daemon and the tests walk.
/// `trust` holds pinned keys and the `jku` cache; share one across walks.
pub async fn walk(
    transport: &Transport,
    trust: &TrustStore,
    request: &WalkRequest,
    clock: &dyn Clock,
    salt: [u8; 32],
) -> WalkOutcome {
    walk_with_steps(transport, trust, request, clock, salt, &|_| {}).await
}

/// [`walk`], telling `on_node` before each of the walk's requests leaves.
pub async fn walk_with_steps(
    transport: &Transport,
    trust: &TrustStore,
    request: &WalkRequest,
    clock: &dyn Clock,
    salt: [u8; 32],
    on_node: walk::OnNode<'_>,
) -> WalkOutcome {
    let (base, privacy) = (request.base(), request.privacy);
    walk::run_with_steps(
        transport,
        request,
        clock,
        salt,
        |card, bytes, jwks| async move {
            card_findings(transport, trust, card, bytes, jwks, &base, privacy).await
        },
        on_node,
    )
    .await
}

/// Decide the card findings for a walked card (`card_bytes`: n1's body when the card parsed;
/// `jwks`: what the walk's request to the first entry's `jku` observed).
pub async fn card_findings(
    transport: &Transport,
    trust: &TrustStore,
    card: Option<Card>,
    card_bytes: Vec<u8>,
    jwks: Option<JwksAnswer>,
    base: &str,
    privacy: Privacy,
) -> CardFindings {
    // The record's block is the reference's, byte for byte (conduct-walk.md §4.3).
    let mut findings = walk::reference_card_findings(card.as_ref(), base, jwks.as_ref());
    // Only a signed card, or one that lists the terms extension, is copied into a `Value`
    // tree (what the verifiers read): every other card, however large or oddly shaped, stays
    // in its compact document (`json::Doc`).
    let signed = walk::signatures_only(card.as_ref()).filter(card_signature::is_signed);
    if let Some(card) = signed.as_ref().and(card.as_ref()) {
        // The verifiers read `Value` trees: a hostile card's tree waits for its turn.
        let _permit = crate::json::large_tree_permit(card).await;
        // Bytes first: a card with duplicate member names has no canonical form. A card our
        // strict reader refuses outright (Python's NaN, say) is checked from the parsed value.
        let verification = match card_signature::verify_card_bytes(
            &card_bytes,
            base,
            Some(transport),
            trust,
        )
        .await
        {
            Ok(v) => v,
            Err(_) => {
                let value = card.root().to_value();
                card_signature::verify_card(&value, base, Some(transport), trust).await
            }
        };
        // Hash-only and commitment privacy withhold the jku here too.
        findings.verification = Some(verification.record_block(privacy != Privacy::Full));
    }
    if let Some(card) = &card
        && walk::card_lists_extension(card, crate::terms::TERMS_EXTENSION_URI)
    {
        let _permit = crate::json::large_tree_permit(card).await;
        let value = card.root().to_value();
        let Some(report) = crate::terms::verify_for_walk(&value, transport).await else {
            return findings;
        };
        // Beside the record, with the lines it would have added to the record's arrays.
        let mut terms = report.record_block();
        if let Some(block) = terms.as_object_mut() {
            block.insert("establishes".into(), report.establishes().into());
            block.insert(
                "does_not_establish".into(),
                report.does_not_establish().into(),
            );
        }
        findings.terms = Some(terms);
    }
    findings
}
