//! Alerts, the pure core (issue 24): what to tell the operator, decided from data, with no I/O
//! and no clock (every time is an argument).
//!
//! - [`incident`]: the per-target state machine. One walk's [`incident::Observation`] and the
//!   target's [`incident::Settings`] turn the stored [`incident::TargetState`] into the next one
//!   and the alerts to plan (incident opened / resolved, an assertion flipped while the verdict
//!   holds, consent declined / allowed again), each with a deterministic id.
//! - [`budget`]: the per-channel daily cap and the digest of what the cap held back.
//! - [`health`]: filing problems and the daemon's own health (intake refusal, a record queued too
//!   long, a lane exhausted for the day, store degraded) and the hook for ledger findings.
//! - [`payload`]: the versioned JSON body of the generic webhook.
//!
//! - [`config`]: the `[alerts]` section (channels, thresholds, secrets by file or credential).
//! - [`outbox`]: the planner over the store's alert tables (`store::alerts`), run in the
//!   transaction of the record (or declined fire) that caused the alert.
//! - [`deliver`]: the channels and the task that drains the alert outbox.
//! - [`hook`]: the planner as the pipeline's on-record hook.
//!
//! ARCHITECTURE.md ("Alerts") draws the state machine and the delivery.

pub mod budget;
pub mod config;
pub mod deliver;
pub mod health;
pub mod hook;
pub mod incident;
pub mod outbox;
pub mod payload;
#[cfg(test)]
mod tests;

use sha2::{Digest, Sha256};

/// The idempotency key of one alert: Standard Webhooks' `webhook-id`, the email's Message-ID and
/// the outbox's unique key, so planning the same transition twice (a replayed walk, a restart)
/// yields one delivery and a resend carries the id of the first send.
///
/// `cwa_` and the first 32 hex digits of the SHA-256 of the witness's identity and the alert's
/// `key` (target, endpoint, incident number, transition, ...; see each planner). The witness's
/// identity is the store's own identifier (`store_identity`, made once when the store is
/// created): two witnesses, or one witness whose store was made anew, never send two different
/// alerts under one id, which a receiver that deduplicates by id would silently drop.
/// Header-safe whatever the target is called, and stable across versions as long as the key's
/// text is.
pub fn alert_id(witness: &str, key: &str) -> String {
    let mut h = Sha256::new();
    h.update(witness.as_bytes());
    h.update([0u8]);
    h.update(key.as_bytes());
    format!("cwa_{}", &hex::encode(h.finalize())[..32])
}

#[cfg(test)]
mod id_tests {
    use super::alert_id;

    #[test]
    fn alert_id_is_stable_header_safe_and_distinct() {
        let key = "alpha\u{0}https://a.example/a2a\u{0}conduct\u{0}1\u{0}opened";
        let a = alert_id("w1", key);
        assert_eq!(a, alert_id("w1", key));
        assert_ne!(a, alert_id("w1", &key.replace("opened", "resolved")));
        // The same incident seen by another witness (or a store made anew) is another alert.
        assert_ne!(a, alert_id("w2", key));
        // The witness and the key cannot trade characters: ("w", "1x") is not ("w1", "x").
        assert_ne!(alert_id("w", "1x"), alert_id("w1", "x"));
        assert_eq!(a.len(), 4 + 32);
        assert!(a.starts_with("cwa_"));
        assert!(a[4..].bytes().all(|b| b.is_ascii_hexdigit()));
        // A target name with newlines or spaces cannot leak into the header.
        let odd = alert_id("w1", "a b\r\nX: y\u{0}conduct\u{0}1\u{0}opened");
        assert!(odd.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
    }
}
