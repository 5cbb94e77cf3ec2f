//! The card-reading steps beside the conduct walk: the `card_signature` block and its
//! attribution line. One place, used by `walk`, `demo` and the daemon's pipeline, so every
//! record is built the same way.

use crate::net::Transport;
use crate::walk::record::CardFindings;
use serde_json::Value;

/// Decide the card findings for a walked card.
pub async fn card_findings(
    _transport: &Transport,
    card: Option<Value>,
    base: &str,
) -> CardFindings {
    crate::walk::reference_card_findings(card.as_ref(), base)
}
