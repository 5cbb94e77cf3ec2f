//! The card-reading steps beside the conduct walk: the `card_signature` block and its
//! attribution line, and the A2A Terms extension block. One place, used by `walk`, `demo` and
//! the daemon's pipeline, so every record is built the same way. None of it changes an
//! assertion or the verdict; a card without a terms listing gets no `terms` key at all, so
//! such records stay byte-identical to the reference walker's.

use crate::net::Transport;
use crate::walk::record::CardFindings;
use serde_json::Value;

/// Decide the card findings for a walked card.
pub async fn card_findings(transport: &Transport, card: Option<Value>, base: &str) -> CardFindings {
    let mut findings = crate::walk::reference_card_findings(card.as_ref(), base);
    if let Some(card) = &card
        && let Some(report) = crate::terms::verify_for_walk(card, transport).await
    {
        findings.terms = Some(report.record_block());
        findings.terms_establishes = report.establishes();
        findings.terms_does_not_establish = report.does_not_establish();
    }
    findings
}
