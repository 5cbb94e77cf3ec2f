//! Signed Agent Cards (A2A §8.4): reading the header the way the reference does, and verifying
//! every signature entry (card-signature-and-terms.md §1.5–§4, §7).
//!
//! - [`read_header`]: the reference's unverified `card_signature` block (conduct-walk.md §4.3),
//!   byte-identical to what the reference writes.
//! - [`verify_card`]: canonicalise the card ([`profile`]: the SDK profile, then the labelled
//!   fallbacks), read each entry as a detached JWS ([`jws`]), find its key ([`keys`]: pinned, or
//!   `jku`), and report each entry, the profile and the key source.
//! - [`CardVerification::record_block`] and [`CardVerification::attribution_line`]: what the
//!   record says. A signature never changes an assertion or the verdict: nothing here is read by
//!   the assertions.
//!
//! What a valid signature proves is narrow: the holder of the key signed these canonical bytes.
//! It does not bind the key to the organisation in the card's `provider` (A2A leaves that to the
//! client), and it covers nothing the profile dropped; both are said in the record.

pub mod acted_on;
mod es256;
pub mod fetch;
mod header;
pub mod jws;
pub mod keys;
pub mod profile;
mod schema;
pub mod served_form;
pub mod signing;
mod verify;
pub mod walk_block;

pub use acted_on::{ACTED_ON_MEMBERS, ActedOnGap, acted_on_gaps};
pub use header::{REASON_ABSENT, REASON_READ_NOT_VERIFIED, absent_block, read_header};
pub use jws::{EntryError, JwsAlg};
pub use keys::{
    JwksFetchError, KeyProblem, KeySource, PinnedOrigin, TrustConfig, TrustStore, TrustStoreError,
    jwk_thumbprint, jwks_transport_config,
};
pub use profile::{Canonical, CardInvalid, Profile, Uncovered, UncoveredWhy, canonicalize_card};
pub use verify::{MAX_JKU_FETCHES, MAX_SIGNATURES_CHECKED};

use crate::net::Transport;
use header::HeaderSummary;
use serde_json::{Map, Value, json};

/// `does_not_establish` line of an unsigned card (the reference's, unchanged; conduct-walk.md §4.4).
pub const ATTRIBUTION_UNSIGNED: &str = "that the walked operator published this card: it carried no signature, so these bytes are attributable to this walk alone and the operator can repudiate them";
/// The reference's line for a signature it did not verify (§4.4); never written by a walk that
/// verified, kept for reading reference records.
pub const REFERENCE_ATTRIBUTION_NOT_VERIFIED: &str = "that the walked operator published this card: a signature is present but this client does not verify signatures, so these bytes are attributable to this walk alone";
/// `does_not_establish` line of a card with a valid signature.
pub const ATTRIBUTION_VALID: &str = "that the key which signed this card belongs to the organisation named in its provider field: a valid signature shows only that the holder of that key signed the card's canonical bytes, and A2A leaves binding a key to an organisation to the client";
/// `does_not_establish` line when an entry was checked with a key and does not verify.
pub const ATTRIBUTION_INVALID: &str = "that the walked operator published this card: it carries a signature that does not verify over these bytes under any canonicalisation profile tried, so these bytes are attributable to this walk alone";
/// `does_not_establish` line when the card itself cannot be canonicalised (wrong member types).
pub const ATTRIBUTION_CARD_INVALID: &str = "that the walked operator published this card: it carries a signature, but the card is not a valid A2A 1.0 card, so it has no canonical form a signature could cover and these bytes are attributable to this walk alone";
/// `does_not_establish` line when no entry could be checked (no key, refused or unreadable).
pub const ATTRIBUTION_UNCHECKED: &str = "that the walked operator published this card: it carries a signature this client could not check (no usable key was found, or every entry was refused or unreadable), so these bytes are attributable to this walk alone";

/// Tail of every `verified: true` reason.
pub const VERIFIED_REASON_VALID_TAIL: &str = "this shows only that the holder of that key signed these canonical bytes, not who holds the key";
/// Head of every `verified: false` reason.
pub const VERIFIED_REASON_INVALID_HEAD: &str = "not verified: no signature entry verifies";
/// Head of every `verified: null` reason of a signed card: nothing could be checked, which
/// must never read as "bad" in an append-only ledger (conduct-walk.md §4.3).
pub const VERIFIED_REASON_UNCHECKED_HEAD: &str =
    "not checked: no signature entry could be checked against a key";

/// Uncovered members listed in a record at most (the count is always complete).
pub const RECORD_MAX_UNCOVERED: usize = 32;
/// Card-supplied text (kid, alg, typ, pointers, reasons) is cut to this many characters in a record.
pub const RECORD_MAX_TEXT_CHARS: usize = 200;

/// The outcome of one signature entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureStatus {
    /// Verified with a usable key over one profile's payload.
    Valid,
    /// Checked with a usable key; does not verify over any payload.
    Invalid,
    /// The entry or its protected header cannot be read.
    Malformed,
    /// Readable, but not checked on principle (alg none/HS*/unknown, crit, b64:false, no alg/kid).
    Refused,
    /// No key with this kid (not pinned; no jku, jku fetch failed or the set lacks the kid).
    NoKey,
    /// A key with this kid exists but cannot verify this alg (type, curve, use, alg, size).
    KeyUnusable,
    /// The key's `exp` has passed.
    KeyExpired,
    /// The key's kid or thumbprint is on the revocation list.
    KeyRevoked,
    /// Beyond [`MAX_SIGNATURES_CHECKED`].
    NotChecked,
}

impl SignatureStatus {
    pub fn code(self) -> &'static str {
        match self {
            SignatureStatus::Valid => "valid",
            SignatureStatus::Invalid => "invalid",
            SignatureStatus::Malformed => "malformed",
            SignatureStatus::Refused => "refused",
            SignatureStatus::NoKey => "no_key",
            SignatureStatus::KeyUnusable => "key_unusable",
            SignatureStatus::KeyExpired => "key_expired",
            SignatureStatus::KeyRevoked => "key_revoked",
            SignatureStatus::NotChecked => "not_checked",
        }
    }
}

/// One entry's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureResult {
    /// Position in the card's `signatures` array.
    pub index: usize,
    pub alg: Option<String>,
    pub kid: Option<String>,
    pub typ: Option<String>,
    pub jku: Option<String>,
    pub status: SignatureStatus,
    /// The profile whose payload verified (valid entries only).
    pub profile: Option<Profile>,
    /// Where the key came from, once one with the kid was found.
    pub key_source: Option<KeySource>,
    /// RFC 7638 thumbprint of the key that verified.
    pub key_thumbprint: Option<String>,
    pub reason: String,
    /// `reason` without the addresses it may quote (a jku fetch error can name the URL, the
    /// resolved IP, a redirect target), for records whose privacy withholds the jku. `None`
    /// when `reason` quotes none.
    pub reason_withheld: Option<String>,
    /// Spec violations that did not stop verification (typ missing, typ not JOSE, embedded key).
    pub warnings: Vec<String>,
}

impl SignatureResult {
    /// The reason to write: without the addresses it quotes when the record withholds `jku`.
    fn reason_for(&self, privacy_drops_jku: bool) -> &str {
        match (&self.reason_withheld, privacy_drops_jku) {
            (Some(withheld), true) => withheld,
            _ => &self.reason,
        }
    }

    fn bare(index: usize, status: SignatureStatus, reason: String) -> Self {
        SignatureResult {
            index,
            alg: None,
            kid: None,
            typ: None,
            jku: None,
            status,
            profile: None,
            key_source: None,
            key_thumbprint: None,
            reason,
            reason_withheld: None,
            warnings: Vec::new(),
        }
    }
}

/// Everything a card verification found.
#[derive(Debug, Clone)]
pub struct CardVerification {
    /// The §4.3 header reading (first entry); `None` for an unsigned card.
    summary: Option<HeaderSummary>,
    /// At least one entry verifies (the rule of both SDKs).
    pub valid: bool,
    /// Index into `signatures` of the entry the reason names.
    pub chosen: Option<usize>,
    /// The profile of that entry.
    pub profile: Option<Profile>,
    pub signatures: Vec<SignatureResult>,
    /// Why the card has no SDK-profile payload (wrong member type, oneof conflict, not I-JSON).
    pub card_invalid: Option<CardInvalid>,
    /// Members of the raw card outside the payload of `profile` (the SDK profile's when none
    /// verified).
    pub uncovered: Vec<Uncovered>,
    /// SHA-256 of the SDK-profile payload, when there is one.
    pub payload_sha256: Option<String>,
}

/// The unix time now, for key expiry.
fn now_unix() -> i64 {
    chrono::Utc::now().timestamp()
}

/// Verify a parsed card. `origin` is the walk's base (`https://host[:port]`); `transport` `None`
/// turns `jku` fetching off. Prefer [`verify_card_bytes`] when the raw bytes are at hand: a
/// parsed `Value` has already lost duplicate member names, which make a card not I-JSON.
pub async fn verify_card(
    card: &Value,
    origin: &str,
    transport: Option<&Transport>,
    trust: &TrustStore,
) -> CardVerification {
    verify::verify(
        card,
        origin,
        transport,
        trust,
        now_unix(),
        None,
        &Profile::ALL,
    )
    .await
}

/// [`verify_card`] at a given unix time (key expiry is judged against it).
pub async fn verify_card_at(
    card: &Value,
    origin: &str,
    transport: Option<&Transport>,
    trust: &TrustStore,
    now_unix: i64,
) -> CardVerification {
    verify::verify(
        card,
        origin,
        transport,
        trust,
        now_unix,
        None,
        &Profile::ALL,
    )
    .await
}

/// The card bytes are not JSON at all.
#[derive(Debug, thiserror::Error)]
#[error("the card is not JSON: {0}")]
pub struct CardNotJson(pub String);

/// Whether the card carries signatures to verify (a non-empty `signatures` array): exactly
/// when verification says more than "unsigned".
pub fn is_signed(card: &Value) -> bool {
    header::signatures_of(Some(card)).is_some()
}

/// Verify card bytes: a card with duplicate member names is read (last one wins, as the walk
/// reads it) but has no canonical form under any profile, since RFC 8785 needs I-JSON.
pub async fn verify_card_bytes(
    bytes: &[u8],
    origin: &str,
    transport: Option<&Transport>,
    trust: &TrustStore,
) -> Result<CardVerification, CardNotJson> {
    verify_card_bytes_under(bytes, origin, transport, trust, &Profile::ALL).await
}

/// [`verify_card_bytes`] trying only `profiles`, in order (`card verify --profile` asks one
/// reading). An empty list tries every profile.
pub async fn verify_card_bytes_under(
    bytes: &[u8],
    origin: &str,
    transport: Option<&Transport>,
    trust: &TrustStore,
    profiles: &[Profile],
) -> Result<CardVerification, CardNotJson> {
    let read = read_card_bytes(bytes)?;
    Ok(read.verify(origin, transport, trust, profiles).await)
}

/// Card bytes read for verification: the card, and the refusal every profile shares when the
/// bytes are JSON but not I-JSON.
#[derive(Debug, Clone)]
pub struct ReadCard {
    pub card: Value,
    forced: Option<CardInvalid>,
}

/// Read card bytes: a card with duplicate member names is read (last one wins, as the walk
/// reads it) but has no canonical form under any profile, since RFC 8785 needs I-JSON.
pub fn read_card_bytes(bytes: &[u8]) -> Result<ReadCard, CardNotJson> {
    match crate::json::parse_strict(bytes) {
        Ok(card) => Ok(ReadCard { card, forced: None }),
        Err(crate::json::StrictJsonError::DuplicateKey(name)) => {
            let card = crate::json::parse_lenient(bytes).map_err(|e| CardNotJson(e.to_string()))?;
            let why = format!("duplicate member name {name:?}");
            Ok(ReadCard {
                card,
                forced: Some(CardInvalid::NotIJson(why)),
            })
        }
        Err(e) => Err(CardNotJson(e.to_string())),
    }
}

impl ReadCard {
    /// The origin (`https://host[:port]`) of the first entry's `jku`, when it has one: what a
    /// card read from a file is judged against when no origin is given.
    pub fn jku_origin(&self) -> Option<String> {
        let block = read_header(Some(&self.card), "");
        let jku = block.get("jku")?.as_str()?;
        let url = url::Url::parse(jku).ok()?;
        url.has_host().then(|| url.origin().ascii_serialization())
    }

    /// The card's payload under `profile` (none when the bytes are not I-JSON).
    pub fn canonical(&self, profile: Profile) -> Result<Canonical, CardInvalid> {
        match &self.forced {
            Some(e) => Err(e.clone()),
            None => canonicalize_card(&self.card, profile),
        }
    }

    /// Verify every entry, trying `profiles` in order (empty: every profile).
    pub async fn verify(
        &self,
        origin: &str,
        transport: Option<&Transport>,
        trust: &TrustStore,
        profiles: &[Profile],
    ) -> CardVerification {
        let profiles = if profiles.is_empty() {
            &Profile::ALL[..]
        } else {
            profiles
        };
        let forced = self.forced.clone();
        verify::verify(
            &self.card,
            origin,
            transport,
            trust,
            now_unix(),
            forced,
            profiles,
        )
        .await
    }

    /// [`ReadCard::verify`], and the verdict a script can trust: verified only when no member a
    /// client acts on is outside the payload that verified.
    pub async fn audit(
        &self,
        origin: &str,
        transport: Option<&Transport>,
        trust: &TrustStore,
        profiles: &[Profile],
    ) -> CardAudit {
        let verification = self.verify(origin, transport, trust, profiles).await;
        CardAudit::of(&self.card, verification)
    }
}

/// conduct-walker's own answer about a card, beside the record's `card_signature` block (which
/// stays the reference's shape and is not changed by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardVerdict {
    /// A signature verifies and every member a client acts on is inside its payload.
    Verified,
    /// A signature verifies, but members a client acts on are outside its payload.
    VerifiedUncovered,
    /// Entries were checked against a key and none verifies (or the card has no payload).
    NotVerified,
    /// No entry could be checked (no key, refused or unreadable entries).
    NotChecked,
    /// The card carries no signatures.
    Unsigned,
    /// The bytes are not a card at all (not JSON).
    Refused,
}

impl CardVerdict {
    pub fn code(self) -> &'static str {
        match self {
            CardVerdict::Verified => "verified",
            CardVerdict::VerifiedUncovered => "verified_with_uncovered_members",
            CardVerdict::NotVerified => "not_verified",
            CardVerdict::NotChecked => "not_checked",
            CardVerdict::Unsigned => "unsigned",
            CardVerdict::Refused => "refused",
        }
    }

    /// The line a person reads.
    pub fn text(self) -> &'static str {
        match self {
            CardVerdict::Verified => "verified",
            CardVerdict::VerifiedUncovered => {
                "verified, with uncovered members a client acts on: the signature does not vouch for them"
            }
            CardVerdict::NotVerified => "not verified",
            CardVerdict::NotChecked => "not checked",
            CardVerdict::Unsigned => "not verified (unsigned)",
            CardVerdict::Refused => "refused: not a card",
        }
    }
}

/// A verification, the uncovered members that matter, and the verdict.
#[derive(Debug, Clone)]
pub struct CardAudit {
    pub verification: CardVerification,
    pub gaps: Vec<ActedOnGap>,
    pub verdict: CardVerdict,
}

impl CardAudit {
    pub fn of(card: &Value, verification: CardVerification) -> Self {
        let gaps = if verification.valid {
            acted_on_gaps(card, &verification.uncovered)
        } else {
            Vec::new()
        };
        let verdict = if !verification.present() {
            CardVerdict::Unsigned
        } else if verification.valid && gaps.is_empty() {
            CardVerdict::Verified
        } else if verification.valid {
            CardVerdict::VerifiedUncovered
        } else if verification.verified() == Some(false) || verification.card_invalid.is_some() {
            CardVerdict::NotVerified
        } else {
            CardVerdict::NotChecked
        };
        CardAudit {
            verification,
            gaps,
            verdict,
        }
    }

    /// The JSON answer: the verdict, the members that matter, and the record's block as is.
    pub fn to_json(&self) -> Value {
        let v = &self.verification;
        json!({
            "verdict": self.verdict.code(),
            "reason": v.verified_reason(false),
            "profile": v.profile.map(Profile::name),
            "acted_on_uncovered": self.gaps.iter().map(|g| json!({
                "member": g.pointer, "why": g.why.code(), "matters": g.matters,
            })).collect::<Vec<_>>(),
            "does_not_establish": v.attribution_line(),
            "card_signature": v.record_block(false),
        })
    }
}

fn cut(s: &str) -> String {
    if s.chars().count() <= RECORD_MAX_TEXT_CHARS {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(RECORD_MAX_TEXT_CHARS - 1).collect();
        t.push('…');
        t
    }
}

fn opt_cut(v: &Option<String>) -> Value {
    v.as_deref().map_or(Value::Null, |s| Value::String(cut(s)))
}

impl CardVerification {
    fn unsigned() -> Self {
        CardVerification {
            summary: None,
            valid: false,
            chosen: None,
            profile: None,
            signatures: Vec::new(),
            card_invalid: None,
            uncovered: Vec::new(),
            payload_sha256: None,
        }
    }

    /// Whether the card carries a non-empty `signatures` array.
    pub fn present(&self) -> bool {
        self.summary.is_some()
    }

    /// `verified` (conduct-walk.md §4.3): `true` when an entry verified under a key; `false`
    /// only when at least one entry was checked against a key that was obtained and every
    /// checked entry failed; `None` when nothing could be checked (no key, key fetch failed or
    /// refused, malformed entry, unsupported algorithm) or the card is unsigned.
    pub fn verified(&self) -> Option<bool> {
        if self.valid {
            Some(true)
        } else if self
            .signatures
            .iter()
            .any(|r| r.status == SignatureStatus::Invalid)
        {
            Some(false)
        } else {
            None
        }
    }

    /// The `verified_reason` text (addresses a `jku` fetch error quotes are left out when
    /// `privacy_drops_jku`).
    pub fn verified_reason(&self, privacy_drops_jku: bool) -> String {
        let Some(summary) = &self.summary else {
            return REASON_ABSENT.to_string();
        };
        if let Some(i) = self.chosen {
            let r = &self.signatures[i];
            let profile = r.profile.expect("a valid entry has a profile");
            let source = r.key_source.expect("a valid entry has a key source");
            return format!(
                "verified: signatures[{i}] of {} (alg {}, kid {}) verifies over the card's canonical form under {}, with {}{}; {VERIFIED_REASON_VALID_TAIL}",
                summary.count,
                cut(r.alg.as_deref().unwrap_or("")),
                cut(r.kid.as_deref().unwrap_or("")),
                profile.description(),
                source.description(),
                r.key_thumbprint
                    .as_deref()
                    .map(|t| format!(" (RFC 7638 thumbprint {t})"))
                    .unwrap_or_default(),
            );
        }
        let mut counts: Vec<(&'static str, usize)> = Vec::new();
        for r in &self.signatures {
            match counts.iter_mut().find(|(c, _)| *c == r.status.code()) {
                Some((_, n)) => *n += 1,
                None => counts.push((r.status.code(), 1)),
            }
        }
        let counts: Vec<String> = counts.iter().map(|(c, n)| format!("{n} {c}")).collect();
        if self.verified().is_none() {
            // Why per entry: "could not check" names its cause, so nobody reads it as "bad".
            let why: Vec<String> = self
                .signatures
                .iter()
                .map(|r| {
                    format!(
                        "signatures[{}]: {}",
                        r.index,
                        cut(r.reason_for(privacy_drops_jku))
                    )
                })
                .collect();
            return format!(
                "{VERIFIED_REASON_UNCHECKED_HEAD} ({} of {}): {}",
                counts.join(", "),
                summary.count,
                why.join("; ")
            );
        }
        let mut reason = format!(
            "{VERIFIED_REASON_INVALID_HEAD} ({} of {}); each entry's result is under signatures",
            counts.join(", "),
            summary.count
        );
        if let Some(e) = &self.card_invalid {
            reason.push_str(&format!("; the card has no sdk-profile payload: {e}"));
        }
        reason
    }

    /// The record's `card_signature` object: the §4.3 keys (present, count, alg, kid, jku,
    /// jku_same_host, protected_readable), `verified` true or false with a precise reason, the
    /// profile, each entry's result and the members the signature does not cover. An unsigned
    /// card gives the four-key absent form. `privacy_drops_jku` (hash-only and commitment
    /// privacy) nulls every `jku` and keeps `jku_same_host`.
    pub fn record_block(&self, privacy_drops_jku: bool) -> Value {
        let Some(summary) = &self.summary else {
            return absent_block();
        };
        let mut block = Map::new();
        summary.write_into(&mut block, privacy_drops_jku);
        block.insert(
            "verified".into(),
            self.verified().map_or(Value::Null, Value::Bool),
        );
        block.insert(
            "verified_reason".into(),
            Value::String(self.verified_reason(privacy_drops_jku)),
        );
        block.insert(
            "profile".into(),
            self.profile
                .map_or(Value::Null, |p| Value::String(p.name().into())),
        );
        let entries: Vec<Value> = self
            .signatures
            .iter()
            .map(|r| {
                let reason = r.reason_for(privacy_drops_jku);
                json!({
                    "index": r.index,
                    "alg": opt_cut(&r.alg),
                    "kid": opt_cut(&r.kid),
                    "typ": opt_cut(&r.typ),
                    "jku": if privacy_drops_jku { Value::Null } else { opt_cut(&r.jku) },
                    "result": r.status.code(),
                    "profile": r.profile.map_or(Value::Null, |p| Value::String(p.name().into())),
                    "key_source": r.key_source.map_or(Value::Null, |s| Value::String(s.code().into())),
                    "key_thumbprint": opt_cut(&r.key_thumbprint),
                    "reason": cut(reason),
                    "warnings": r.warnings.iter().map(|w| Value::String(cut(w))).collect::<Vec<_>>(),
                })
            })
            .collect();
        block.insert("signatures".into(), Value::Array(entries));
        let uncovered: Vec<Value> = self
            .uncovered
            .iter()
            .take(RECORD_MAX_UNCOVERED)
            .map(|u| json!({"member": cut(&u.pointer), "why": u.why.code()}))
            .collect();
        block.insert("uncovered_members".into(), Value::Array(uncovered));
        block.insert("uncovered_count".into(), Value::from(self.uncovered.len()));
        Value::Object(block)
    }

    /// The card-attribution line of `does_not_establish`, replacing the reference's "does not
    /// verify" line.
    pub fn attribution_line(&self) -> String {
        if !self.present() {
            ATTRIBUTION_UNSIGNED
        } else if self.valid {
            ATTRIBUTION_VALID
        } else if self.card_invalid.is_some() {
            ATTRIBUTION_CARD_INVALID
        } else if self
            .signatures
            .iter()
            .any(|r| r.status == SignatureStatus::Invalid)
        {
            ATTRIBUTION_INVALID
        } else {
            ATTRIBUTION_UNCHECKED
        }
        .to_string()
    }
}
