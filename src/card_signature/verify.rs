//! Verifying every signature entry of a card: parse, find a key, check it, verify over the
//! profile payloads in order (SDK profile first, then the labelled fallbacks).

use super::header::{HeaderSummary, signatures_of};
use super::jws::{self, ParsedEntry};
use super::keys::{self, JwksFetchError, KeyProblem, KeySource, TrustStore, UsableKey};
use super::profile::{Canonical, CardInvalid, Profile, canonicalize_card};
use super::{CardVerification, SignatureResult, SignatureStatus};
use crate::net::Transport;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Entries checked per card; later ones are reported `not_checked` (a card is not a work queue).
pub const MAX_SIGNATURES_CHECKED: usize = 16;
/// Distinct `jku` URLs fetched per card.
pub const MAX_JKU_FETCHES: usize = 4;

/// Payloads per profile, computed on first use: most cards verify under the SDK profile, and a
/// card with no usable entry needs no payload at all.
struct Payloads<'a> {
    card: &'a Value,
    /// A refusal that applies to every profile (duplicate member names in the card bytes).
    forced: Option<CardInvalid>,
    computed: HashMap<Profile, Result<Canonical, CardInvalid>>,
}

impl Payloads<'_> {
    fn get(&mut self, profile: Profile) -> &Result<Canonical, CardInvalid> {
        let card = self.card;
        let forced = self.forced.clone();
        self.computed
            .entry(profile)
            .or_insert_with(|| match forced {
                Some(e) => Err(e),
                None => canonicalize_card(card, profile),
            })
    }
}

pub(crate) async fn verify(
    card: &Value,
    origin: &str,
    transport: Option<&Transport>,
    trust: &TrustStore,
    now_unix: i64,
    forced: Option<CardInvalid>,
    profiles: &[Profile],
) -> CardVerification {
    let Some(entries) = signatures_of(Some(card)) else {
        return CardVerification::unsigned();
    };
    let summary = HeaderSummary::read(entries, origin);
    let mut payloads = Payloads {
        card,
        forced,
        computed: HashMap::new(),
    };
    let mut fetched: HashMap<String, Result<Arc<Vec<Value>>, JwksFetchError>> = HashMap::new();
    let mut results = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        if index >= MAX_SIGNATURES_CHECKED {
            results.push(SignatureResult::bare(
                index,
                SignatureStatus::NotChecked,
                format!("only the first {MAX_SIGNATURES_CHECKED} entries are checked"),
            ));
            continue;
        }
        let parsed = match jws::parse_entry(entry) {
            Ok(p) => p,
            Err(refused) => {
                let (e, glimpse) = *refused;
                let status = if e.is_refusal() {
                    SignatureStatus::Refused
                } else {
                    SignatureStatus::Malformed
                };
                let mut r = SignatureResult::bare(index, status, e.to_string());
                r.alg = glimpse.alg;
                r.kid = glimpse.kid;
                r.typ = glimpse.typ;
                r.jku = glimpse.jku;
                results.push(r);
                continue;
            }
        };
        let r = check_entry(
            index,
            &parsed,
            origin,
            transport,
            trust,
            now_unix,
            &mut payloads,
            &mut fetched,
            profiles,
        )
        .await;
        results.push(r);
    }

    // The entry the record names: the first valid under the SDK profile, else the first valid.
    let chosen = results
        .iter()
        .position(|r| r.status == SignatureStatus::Valid && r.profile == Some(Profile::Sdk))
        .or_else(|| {
            results
                .iter()
                .position(|r| r.status == SignatureStatus::Valid)
        });
    let profile = chosen.and_then(|i| results[i].profile);
    let sdk = payloads.get(Profile::Sdk).clone();
    let (card_invalid, payload_sha256) = match &sdk {
        Ok(c) => (None, Some(crate::digest::sha256_hex(&c.bytes))),
        Err(e) => (Some(e.clone()), None),
    };
    let uncovered = match profile {
        Some(p) => payloads
            .get(p)
            .as_ref()
            .map(|c| c.uncovered.clone())
            .unwrap_or_default(),
        // Nothing verified: the first profile asked says what a signature would not cover.
        None => match profiles.first() {
            Some(&Profile::Sdk) | None => sdk.map(|c| c.uncovered).unwrap_or_default(),
            Some(&p) => payloads
                .get(p)
                .as_ref()
                .map(|c| c.uncovered.clone())
                .unwrap_or_default(),
        },
    };
    CardVerification {
        summary: Some(summary),
        valid: chosen.is_some(),
        chosen,
        profile,
        signatures: results,
        card_invalid,
        uncovered,
        payload_sha256,
    }
}

#[allow(clippy::too_many_arguments)]
async fn check_entry(
    index: usize,
    parsed: &ParsedEntry,
    origin: &str,
    transport: Option<&Transport>,
    trust: &TrustStore,
    now_unix: i64,
    payloads: &mut Payloads<'_>,
    fetched: &mut HashMap<String, Result<Arc<Vec<Value>>, JwksFetchError>>,
    profiles: &[Profile],
) -> SignatureResult {
    let mut result = entry_facts(index, parsed);
    // 1. Keys: pinned for this origin first, else the header's jku.
    let (candidates, source) = match candidate_keys(parsed, origin, transport, trust, fetched).await
    {
        Ok(found) => found,
        Err(NoKey { reason, withheld }) => {
            result.reason = reason;
            result.reason_withheld = withheld;
            return result;
        }
    };
    result.key_source = Some(source);
    // 2. Check each key with that kid; verify with the usable ones.
    let usable = match usable_keys(parsed, &candidates, source, now_unix, trust) {
        Ok(usable) => usable,
        Err((status, reason)) => {
            result.status = status;
            result.reason = reason;
            return result;
        }
    };
    verify_over_payloads(parsed, &usable, source, payloads, profiles, result)
}

/// What the entry's header says, before any key is looked for (status `NoKey` until one is).
fn entry_facts(index: usize, parsed: &ParsedEntry) -> SignatureResult {
    let header = &parsed.header;
    let mut result = SignatureResult::bare(index, SignatureStatus::NoKey, String::new());
    result.alg = Some(header.alg_text.clone());
    result.kid = Some(header.kid.clone());
    result.typ = header.typ.clone();
    result.jku = header.jku.clone();
    result.warnings = parsed.warnings.iter().map(|w| w.to_string()).collect();
    result
}

/// Why no key with the entry's kid was found (and the reason without addresses, when it had any).
struct NoKey {
    reason: String,
    withheld: Option<String>,
}

impl NoKey {
    fn because(reason: String) -> Self {
        NoKey {
            reason,
            withheld: None,
        }
    }
}

/// The keys with the entry's kid: pinned for `origin`, else from the header's jku (each distinct
/// jku fetched once per card, at most [`MAX_JKU_FETCHES`] of them).
async fn candidate_keys(
    parsed: &ParsedEntry,
    origin: &str,
    transport: Option<&Transport>,
    trust: &TrustStore,
    fetched: &mut HashMap<String, Result<Arc<Vec<Value>>, JwksFetchError>>,
) -> Result<(Vec<Value>, KeySource), NoKey> {
    let kid = parsed.header.kid.as_str();
    let pinned = trust.pinned_for(origin, kid);
    if !pinned.is_empty() {
        return Ok((pinned, KeySource::Pinned));
    }
    let Some(jku) = parsed.header.jku.as_deref() else {
        return Err(NoKey::because(format!(
            "kid {kid:?} is not pinned for this origin and the header names no jku"
        )));
    };
    let Some(transport) = transport else {
        return Err(NoKey::because(format!(
            "kid {kid:?} is not pinned for this origin and fetching jku is off for this run"
        )));
    };
    if !fetched.contains_key(jku) {
        let outcome = if fetched.len() >= MAX_JKU_FETCHES {
            Err(JwksFetchError::Transport(format!(
                "not fetched: a card may name at most {MAX_JKU_FETCHES} distinct jku URLs"
            )))
        } else {
            keys::fetch_jwks(transport, trust.cache(), jku).await
        };
        fetched.insert(jku.to_string(), outcome);
    }
    let keys = fetched[jku].as_ref().map_err(|e| NoKey {
        reason: e.to_string(),
        withheld: Some(e.without_addresses()),
    })?;
    let same_host = match (keys::host_port(jku), keys::host_port(origin)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    };
    let source = if same_host {
        KeySource::JkuSameHost
    } else {
        KeySource::JkuOtherHost
    };
    let with_kid: Vec<Value> = keys
        .iter()
        .filter(|k| k.get("kid").and_then(Value::as_str) == Some(kid))
        .cloned()
        .collect();
    if with_kid.is_empty() {
        return Err(NoKey::because(format!(
            "the JWK Set at jku has no key with kid {kid:?}"
        )));
    }
    Ok((with_kid, source))
}

/// The candidates usable for the entry's alg; none usable: the first one's problem as status and
/// reason.
fn usable_keys(
    parsed: &ParsedEntry,
    candidates: &[Value],
    source: KeySource,
    now_unix: i64,
    trust: &TrustStore,
) -> Result<Vec<UsableKey>, (SignatureStatus, String)> {
    let kid = parsed.header.kid.as_str();
    let mut problems: Vec<KeyProblem> = Vec::new();
    let mut usable: Vec<UsableKey> = Vec::new();
    for jwk in candidates {
        match keys::check_key(jwk, parsed.alg, kid, now_unix, trust) {
            Ok(k) => usable.push(k),
            Err(p) => problems.push(p),
        }
    }
    if !usable.is_empty() {
        return Ok(usable);
    }
    let first = problems.first().cloned().expect("a candidate was refused");
    let status = match first {
        KeyProblem::Expired { .. } => SignatureStatus::KeyExpired,
        KeyProblem::Revoked(_) => SignatureStatus::KeyRevoked,
        KeyProblem::Unusable { .. } => SignatureStatus::KeyUnusable,
    };
    Err((status, format!("kid {kid:?} ({}): {first}", source.code())))
}

/// Verify the entry with each usable key over each profile's payload, in profile order: the
/// first that verifies makes it valid; none: invalid, saying what was tried.
fn verify_over_payloads(
    parsed: &ParsedEntry,
    usable: &[UsableKey],
    source: KeySource,
    payloads: &mut Payloads<'_>,
    profiles: &[Profile],
    mut result: SignatureResult,
) -> SignatureResult {
    let kid = parsed.header.kid.as_str();
    let mut tried: Vec<&'static str> = Vec::new();
    let mut no_payload: Vec<String> = Vec::new();
    let mut wrong_length = None;
    for &profile in profiles {
        let payload = match payloads.get(profile) {
            Ok(c) => c.bytes.clone(),
            Err(e) => {
                if profile == profiles[0] {
                    no_payload.push(e.to_string());
                }
                continue;
            }
        };
        tried.push(profile.name());
        let input = jws::signing_input(&parsed.protected_b64, &payload);
        for key in usable {
            if parsed.signature.len() != key.signature_len {
                wrong_length = Some(format!(
                    "the signature is {} bytes; {} with this key needs {}",
                    parsed.signature.len(),
                    parsed.alg.name(),
                    key.signature_len
                ));
                continue;
            }
            match jsonwebtoken::crypto::verify(
                &parsed.signature_b64,
                &input,
                &key.decoding,
                parsed.alg.jwt(),
            ) {
                Ok(true) => {
                    result.status = SignatureStatus::Valid;
                    result.profile = Some(profile);
                    result.key_thumbprint = key.thumbprint.clone();
                    result.reason = format!(
                        "verifies over the {} payload with kid {kid:?} ({})",
                        profile.name(),
                        source.code()
                    );
                    return result;
                }
                Ok(false) => {}
                Err(e) => {
                    result.status = SignatureStatus::KeyUnusable;
                    result.reason = format!("kid {kid:?} ({}): key rejected: {e}", source.code());
                    return result;
                }
            }
        }
    }
    result.status = SignatureStatus::Invalid;
    result.reason = invalid_reason(kid, source, wrong_length, &tried, &no_payload);
    result
}

/// Why no usable key verified the entry over any payload.
fn invalid_reason(
    kid: &str,
    source: KeySource,
    wrong_length: Option<String>,
    tried: &[&str],
    no_payload: &[String],
) -> String {
    match (wrong_length, tried) {
        (Some(why), _) => why,
        (None, []) => format!(
            "not checked against kid {kid:?}: the card has no payload under any profile ({})",
            no_payload.first().map_or("", String::as_str)
        ),
        (None, [only]) => format!(
            "does not verify with kid {kid:?} ({}) over the {only} payload",
            source.code()
        ),
        (None, many) => {
            let mut why = format!(
                "does not verify with kid {kid:?} ({}) over any of the {} payloads",
                source.code(),
                many.join(", ")
            );
            if let Some(e) = no_payload.first() {
                why.push_str(&format!("; no sdk payload: {e}"));
            }
            why
        }
    }
}
