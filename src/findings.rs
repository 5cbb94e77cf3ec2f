//! The card-reading steps beside the conduct walk: the `card_signature` block (verified, A2A
//! §8.4) with its attribution line, and the A2A Terms extension block. One place, used by
//! `walk`, `demo` and the daemon's pipeline, so every record is built the same way. None of it
//! changes an assertion or the verdict. An unsigned card gets exactly the reference's absent
//! block and line, and a card without a terms listing gets no `terms` key, so such records stay
//! byte-identical to the reference walker's; a signed card's block says more, on purpose
//! (conduct-walk.md "How to read this", item 4).

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
        |card, bytes| async move {
            card_findings(transport, trust, card, bytes, &base, privacy).await
        },
        on_node,
    )
    .await
}

/// Decide the card findings for a walked card (`card_bytes`: n1's body when the card parsed).
pub async fn card_findings(
    transport: &Transport,
    trust: &TrustStore,
    card: Option<Card>,
    card_bytes: Vec<u8>,
    base: &str,
    privacy: Privacy,
) -> CardFindings {
    let drops_jku = privacy != Privacy::Full;
    // Unsigned (or unparsed) cards, the common case, skip the strict re-read of the bytes:
    // verification would answer "unsigned" from the same `signatures` member anyway.
    // Only a signed card, or one that lists the terms extension, is copied into a `Value`
    // tree (what the verifiers read): every other card, however large or oddly shaped, stays
    // in its compact document (`json::Doc`).
    let signed = walk::signatures_only(card.as_ref()).filter(card_signature::is_signed);
    let (card_signature, attribution_line) = match signed.as_ref().and(card.as_ref()) {
        None => (
            card_signature::absent_block(),
            Some(card_signature::ATTRIBUTION_UNSIGNED.to_string()),
        ),
        Some(card) => {
            // The verifiers read `Value` trees: a hostile card's tree waits for its turn.
            let _permit = crate::json::large_tree_permit(card).await;
            // Bytes first: a card with duplicate member names has no canonical form. A card our
            // strict reader refuses outright (Python's NaN, say) is checked from the parsed value.
            let verification =
                match card_signature::verify_card_bytes(&card_bytes, base, Some(transport), trust)
                    .await
                {
                    Ok(v) => v,
                    Err(_) => {
                        let value = card.root().to_value();
                        card_signature::verify_card(&value, base, Some(transport), trust).await
                    }
                };
            (
                verification.record_block(drops_jku),
                Some(verification.attribution_line()),
            )
        }
    };
    let mut findings = CardFindings {
        card_signature,
        attribution_line,
        terms: None,
        terms_establishes: Vec::new(),
        terms_does_not_establish: Vec::new(),
    };
    if let Some(card) = &card
        && walk::card_lists_extension(card, crate::terms::TERMS_EXTENSION_URI)
    {
        let _permit = crate::json::large_tree_permit(card).await;
        let value = card.root().to_value();
        let Some(report) = crate::terms::verify_for_walk(&value, transport).await else {
            return findings;
        };
        findings.terms = Some(report.record_block());
        findings.terms_establishes = report.establishes();
        findings.terms_does_not_establish = report.does_not_establish();
    }
    findings
}
