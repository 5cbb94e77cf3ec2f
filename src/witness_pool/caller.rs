//! §6.2 steps 4 and 5 of a reciprocal request, the ones that need the network: the caller's
//! host through the witness's name screen and address guard, and its consent file read through
//! the same guard with a 5 s deadline. A stranger names the caller card, so nothing here
//! fetches what a witness measurement would not.

use super::measure::Measurer;
use super::screen;
use crate::consent::{self, Consent};
use crate::reciprocal::{Caller, Decline};
use std::time::Duration;

/// The consent read's deadline while answering (§6.2 step 5).
pub const CONSENT_DEADLINE: Duration = Duration::from_secs(5);

/// Why a caller card was declined at steps 1–5: the reason, the why kept locally, and the
/// origin when the card was read that far.
pub type Declined = (Decline, Option<String>, Option<String>);

/// Steps 1–5 of §6.2 for the raw `EXT/caller_card` value: the caller to queue (steps 6–8 are
/// the store's, `store::reciprocal_walks::queue`), or why not.
pub async fn check(
    measurer: &Measurer,
    value: &serde_json::Value,
    own_hosts: &[String],
) -> Result<Caller, Declined> {
    let caller =
        crate::reciprocal::read_caller_card(value, own_hosts).map_err(|d| (d, None, None))?;
    match public_and_consenting(measurer, &caller).await {
        Ok(()) => Ok(caller),
        Err((reason, why)) => Err((reason, Some(why), Some(caller.origin))),
    }
}

/// Steps 4–5 for a caller that passed steps 1–3: Ok, or the decline with why (kept in the
/// row, shown on the status pages; never sent).
pub async fn public_and_consenting(
    measurer: &Measurer,
    caller: &Caller,
) -> Result<(), (Decline, String)> {
    reachable(measurer, &caller.origin)
        .await
        .map_err(|why| (Decline::NotPublic, why))?;
    match listing(measurer, &caller.origin).await {
        Consent::Declined { sha256 } => Err((
            Decline::ListingDecline,
            format!(
                "{}/.well-known/mcp-conduct.json declines listing (sha256 {sha256})",
                caller.origin
            ),
        )),
        // A missing or unreadable consent file is not a decline (§6.2 step 5).
        _ => Ok(()),
    }
}

/// Step 4: the name screen (skipped when private networks are open, as for a measurement),
/// then every address of the host vetted by the guard.
pub async fn reachable(measurer: &Measurer, origin: &str) -> Result<(), String> {
    if !measurer.allows_private() {
        screen::name_screen(origin)?;
    }
    measurer.transport().session().prepare(origin).await
}

/// The origin's consent file, read through the guard within [`CONSENT_DEADLINE`] (§6.2 step
/// 5, and again when the walk starts, §6.3).
pub async fn listing(measurer: &Measurer, origin: &str) -> Consent {
    match tokio::time::timeout(
        CONSENT_DEADLINE,
        consent::fetch(measurer.transport(), origin),
    )
    .await
    {
        Ok(read) => read,
        Err(_) => Consent::Unreadable {
            status: 0,
            why: format!("no answer within {} s", CONSENT_DEADLINE.as_secs()),
        },
    }
}

/// A reciprocal walk's client and filing rule (§6.3): `config` (the deadlines and caps of a
/// walk) behind the witness's address guard, and the record filed where [`intake_for`] says,
/// `ours` when the caller's card names no usable intake.
pub fn stranger_walk(
    mut config: crate::net::TransportConfig,
    measurer: &Measurer,
    ours: &str,
) -> Result<crate::pipeline::StrangerWalk, crate::net::TransportSetupError> {
    config.address_guard = Some(screen::GUARD);
    let (vetting, ours) = (measurer.clone(), ours.to_string());
    Ok(crate::pipeline::StrangerWalk {
        transport: crate::net::Transport::new(config)?,
        intake: std::sync::Arc::new(move |theirs: Option<String>| {
            let (vetting, ours) = (vetting.clone(), ours.clone());
            Box::pin(async move { intake_for(&vetting, theirs.as_deref(), &ours).await })
        }),
    })
}

/// Where a reciprocal walk's record is filed (§6.3): the caller card's `witness_intake` when it
/// is an https URL whose host passes the screen and the guard, else `ours`. A caller must not
/// be able to make us POST into a network.
pub async fn intake_for(measurer: &Measurer, card_intake: Option<&str>, ours: &str) -> String {
    let Some(theirs) = card_intake else {
        return ours.to_string();
    };
    let https = crate::net::https_url(theirs).is_ok();
    let vetted = https && {
        let screened = measurer.allows_private() || screen::name_screen(theirs).is_ok();
        screened && measurer.transport().session().prepare(theirs).await.is_ok()
    };
    if vetted {
        theirs.to_string()
    } else {
        tracing::info!(intake = %theirs, "reciprocal walk: the caller's intake is not a public https URL; filing to ours");
        ours.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict() -> Measurer {
        Measurer::new(false, Vec::new()).unwrap()
    }

    fn caller(origin: &str) -> Caller {
        Caller {
            card_url: format!("{origin}{}", crate::reciprocal::CARD_PATH),
            origin: origin.to_string(),
            host: crate::reciprocal::host_of(origin).unwrap(),
        }
    }

    /// A stranger cannot make the witness fetch inside a network: refused by name before any
    /// lookup or connection (no server listens here, so a fetch would say so instead).
    #[tokio::test]
    async fn a_caller_inside_a_network_is_not_public_and_nothing_is_fetched() {
        for origin in [
            "https://127.0.0.1",
            "https://[::1]",
            "https://intranet.lan",
            "https://localhost",
            "https://printer",
        ] {
            let refused = public_and_consenting(&strict(), &caller(origin)).await;
            let (reason, why) = refused.expect_err(origin);
            assert_eq!(reason, Decline::NotPublic, "{origin}");
            assert!(
                why.contains("IP literal") || why.contains("not a public DNS name"),
                "{origin}: {why}"
            );
        }
    }

    #[tokio::test]
    async fn an_intake_a_caller_names_inside_a_network_is_replaced_by_ours() {
        let ours = "https://ledger.example.net/witness";
        for theirs in [
            "https://10.0.0.1/witness",
            "http://intake.example.com/witness",
            "https://intake.internal/witness",
            "not a url",
        ] {
            assert_eq!(
                intake_for(&strict(), Some(theirs), ours).await,
                ours,
                "{theirs}"
            );
        }
        assert_eq!(intake_for(&strict(), None, ours).await, ours);
    }
}
