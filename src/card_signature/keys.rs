//! Verification keys: the operator's pinned trust store, `jku` JWK Sets fetched over HTTPS, and
//! the checks every key passes before it is used (type and curve match the `alg`, not expired,
//! not revoked, usable for signatures).
//!
//! Provenance is the point (card-signature-and-terms.md §1.6.4, §7.3): A2A binds no key to an
//! origin, so each result says where its key came from: pinned by the operator, a `jku` on the
//! card's own host (the only weak binding available), or a `jku` somewhere else.

use super::jws::JwsAlg;
use crate::net::{HttpRequest, NetPolicy, Transport, TransportConfig};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Largest JWK Set body accepted from a `jku` (a set of a few keys is a few KiB).
pub const JWKS_BODY_CAP_BYTES: usize = crate::json::bounded::Input::Jwks.caps().bytes;
/// Deadline for one `jku` fetch, connect to last byte.
pub const JWKS_DEADLINE: Duration = Duration::from_secs(10);
/// Longest a fetched JWK Set is reused, whatever its headers say.
pub const JWKS_MAX_FRESHNESS: Duration = Duration::from_secs(24 * 3600);
/// JWK Sets kept in the cache at most (the oldest entry goes first).
pub const JWKS_CACHE_ENTRIES: usize = 256;
/// Smallest RSA modulus accepted (RFC 7518 section 3.3: 2048 bits or larger).
pub const RSA_MIN_BITS: usize = 2048;

/// A [`TransportConfig`] with the `jku` caps, for a transport dedicated to key fetches.
/// [`super::verify_card`] enforces the same caps on any transport it is given.
pub fn jwks_transport_config(policy: NetPolicy) -> TransportConfig {
    let mut config = TransportConfig::new(policy);
    config.body_cap = JWKS_BODY_CAP_BYTES;
    config.deadline = JWKS_DEADLINE;
    config
}

/// Where a verification key came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    /// The operator's trust store, pinned for the card's origin.
    Pinned,
    /// A JWK Set at the header's `jku`, on the card's own host and port.
    JkuSameHost,
    /// A JWK Set at the header's `jku`, on another host (or port).
    JkuOtherHost,
}

impl KeySource {
    pub fn code(self) -> &'static str {
        match self {
            KeySource::Pinned => "pinned",
            KeySource::JkuSameHost => "jku_same_host",
            KeySource::JkuOtherHost => "jku_other_host",
        }
    }

    /// The phrase `verified_reason` uses.
    pub fn description(self) -> &'static str {
        match self {
            KeySource::Pinned => KEY_SOURCE_PINNED_TEXT,
            KeySource::JkuSameHost => KEY_SOURCE_JKU_SAME_HOST_TEXT,
            KeySource::JkuOtherHost => KEY_SOURCE_JKU_OTHER_HOST_TEXT,
        }
    }
}

/// [`KeySource::description`] of a pinned key.
pub const KEY_SOURCE_PINNED_TEXT: &str = "a key pinned for this origin in the walker's trust store";
/// [`KeySource::description`] of a key from a `jku` on the card's host.
pub const KEY_SOURCE_JKU_SAME_HOST_TEXT: &str =
    "a key fetched from the header's jku on the card's own host";
/// [`KeySource::description`] of a key from a `jku` elsewhere.
pub const KEY_SOURCE_JKU_OTHER_HOST_TEXT: &str =
    "a key fetched from the header's jku on a host other than the card's";

/// Why the trust store could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TrustStoreError {
    #[error("pinned origin {0:?} is not an https origin (https://host[:port])")]
    BadOrigin(String),
    #[error("cannot read JWK Set file {path}: {source}")]
    FileUnreadable {
        path: String,
        source: std::io::Error,
    },
    #[error("JWK Set {what} is not usable: {why}")]
    BadJwks { what: String, why: String },
    #[error("pinned origin {0:?} names neither jwks nor jwks_file")]
    NoKeys(String),
}

/// The trust store as configuration writes it.
///
/// ```toml
/// [[card_signature.pinned]]
/// origin = "https://agent.example"
/// jwks_file = "/etc/conduct-walker/agent.example.jwks.json"
///
/// [card_signature]
/// revoked_kids = ["old-key-2025"]
/// revoked_thumbprints = ["NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"]
/// ```
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrustConfig {
    /// Keys pinned per origin (`[[card_signature.pinned]]`), used instead of the card's `jku`.
    #[serde(default)]
    pub pinned: Vec<PinnedOrigin>,
    /// `kid` values never to use, whatever set they appear in.
    #[serde(default)]
    pub revoked_kids: Vec<String>,
    /// RFC 7638 SHA-256 thumbprints (base64url) of keys never to use.
    #[serde(default)]
    pub revoked_thumbprints: Vec<String>,
}

/// Keys pinned for one origin: a JWK Set inline, in a file, or both.
#[derive(Debug, Clone, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PinnedOrigin {
    /// The origin whose card signatures these keys verify.
    pub origin: String,
    /// A JWK Set file (relative paths are relative to the config file).
    #[serde(default)]
    pub jwks_file: Option<PathBuf>,
    /// A JWK Set inline, as a TOML table: `{ keys = [ ... ] }`.
    #[serde(default)]
    pub jwks: Option<Value>,
}

/// Pinned keys per origin, the revocation lists, and the `jku` cache.
///
/// Cloning shares the cache, so one store built at start-up serves every walk of the process.
#[derive(Debug, Clone, Default)]
pub struct TrustStore {
    pinned: HashMap<String, Vec<Value>>,
    revoked_kids: HashSet<String>,
    revoked_thumbprints: HashSet<String>,
    cache: JwksCache,
}

impl TrustStore {
    /// Build from configuration, reading every `jwks_file`.
    pub fn from_config(config: &TrustConfig) -> Result<Self, TrustStoreError> {
        let mut store = TrustStore::default();
        for pin in &config.pinned {
            if pin.jwks.is_none() && pin.jwks_file.is_none() {
                return Err(TrustStoreError::NoKeys(pin.origin.clone()));
            }
            if let Some(jwks) = &pin.jwks {
                store.pin_jwks(&pin.origin, jwks)?;
            }
            if let Some(path) = &pin.jwks_file {
                store.pin_jwks_file(&pin.origin, path)?;
            }
        }
        for kid in &config.revoked_kids {
            store.revoke_kid(kid);
        }
        for tp in &config.revoked_thumbprints {
            store.revoke_thumbprint(tp);
        }
        Ok(store)
    }

    /// Pin every key of a JWK Set (`{"keys":[...]}`) for `origin` (`https://host[:port]`).
    pub fn pin_jwks(&mut self, origin: &str, jwks: &Value) -> Result<(), TrustStoreError> {
        let key = normalize_origin(origin)
            .ok_or_else(|| TrustStoreError::BadOrigin(origin.to_string()))?;
        let keys = jwks_keys(jwks).map_err(|why| TrustStoreError::BadJwks {
            what: format!("pinned for {origin}"),
            why,
        })?;
        self.pinned.entry(key).or_default().extend(keys);
        Ok(())
    }

    /// Pin the JWK Set in a file for `origin`.
    pub fn pin_jwks_file(&mut self, origin: &str, path: &Path) -> Result<(), TrustStoreError> {
        let shown = path.display().to_string();
        let bytes = crate::net::read_file_capped(path, JWKS_BODY_CAP_BYTES).map_err(|source| {
            TrustStoreError::FileUnreadable {
                path: shown.clone(),
                source,
            }
        })?;
        let jwks = crate::json::bounded::strict(crate::json::bounded::Input::Jwks, &bytes)
            .map_err(|e| TrustStoreError::BadJwks {
                what: shown.clone(),
                why: e.to_string(),
            })?;
        self.pin_jwks(origin, &jwks)
    }

    pub fn revoke_kid(&mut self, kid: &str) {
        self.revoked_kids.insert(kid.to_string());
    }

    pub fn revoke_thumbprint(&mut self, thumbprint: &str) {
        self.revoked_thumbprints.insert(thumbprint.to_string());
    }

    /// Pinned keys with this `kid` for the card's origin.
    pub(crate) fn pinned_for(&self, origin: &str, kid: &str) -> Vec<Value> {
        let Some(key) = normalize_origin(origin) else {
            return Vec::new();
        };
        self.pinned
            .get(&key)
            .map(|keys| {
                keys.iter()
                    .filter(|k| k.get("kid").and_then(Value::as_str) == Some(kid))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Why a key must not be used, if it is revoked.
    pub(crate) fn revocation(&self, kid: &str, jwk: &Value) -> Option<String> {
        if self.revoked_kids.contains(kid) {
            return Some(format!("kid {kid:?} is on the revocation list"));
        }
        let tp = jwk_thumbprint(jwk)?;
        self.revoked_thumbprints
            .contains(&tp)
            .then(|| format!("key thumbprint {tp} is on the revocation list"))
    }

    pub(crate) fn cache(&self) -> &JwksCache {
        &self.cache
    }
}

/// `https://host[:port]` (lower-case host, default port dropped), or `None`.
pub(crate) fn normalize_origin(raw: &str) -> Option<String> {
    let url = url::Url::parse(raw).ok()?;
    if url.scheme() != "https" || url.host_str().is_none() {
        return None;
    }
    Some(url.origin().ascii_serialization())
}

/// `(host, port)` of a URL, normalised, for the same-host comparison of key provenance.
pub(crate) fn host_port(raw: &str) -> Option<(String, u16)> {
    let url = url::Url::parse(raw).ok()?;
    Some((
        url.host_str()?.to_ascii_lowercase(),
        url.port_or_known_default()?,
    ))
}

/// The `keys` of a JWK Set; each must be an object.
fn jwks_keys(jwks: &Value) -> Result<Vec<Value>, String> {
    let keys = jwks
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("it has no keys array")?;
    if let Some(i) = keys.iter().position(|k| !k.is_object()) {
        return Err(format!("keys[{i}] is not an object"));
    }
    Ok(keys.clone())
}

/// RFC 7638 JWK thumbprint (SHA-256, base64url): the required members in lexicographic order,
/// which is what RFC 8785 produces for an object of strings.
pub fn jwk_thumbprint(jwk: &Value) -> Option<String> {
    let kty = jwk.get("kty")?.as_str()?;
    let members: &[&str] = match kty {
        "EC" => &["crv", "kty", "x", "y"],
        "OKP" => &["crv", "kty", "x"],
        "RSA" => &["e", "kty", "n"],
        _ => return None,
    };
    let mut obj = Map::new();
    for m in members {
        obj.insert(
            (*m).to_string(),
            Value::String(jwk.get(*m)?.as_str()?.into()),
        );
    }
    let bytes = crate::jcs::canonicalize(&Value::Object(obj)).ok()?;
    Some(URL_SAFE_NO_PAD.encode(crate::digest::sha256(bytes)))
}

/// Why a key with the right `kid` cannot check this signature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyProblem {
    #[error("the key expired at {exp} (its exp), before {now}")]
    Expired { exp: i64, now: i64 },
    #[error("{0}")]
    Revoked(String),
    #[error("the key does not fit alg {alg}: {why}")]
    Unusable { alg: &'static str, why: String },
}

fn unusable(alg: JwsAlg, why: impl Into<String>) -> KeyProblem {
    KeyProblem::Unusable {
        alg: alg.name(),
        why: why.into(),
    }
}

/// A key that passed every check, ready to verify.
pub(crate) struct UsableKey {
    pub decoding: jsonwebtoken::DecodingKey,
    /// Signature length the key implies (raw R‖S for ECDSA, modulus length for RSA).
    pub signature_len: usize,
    pub thumbprint: Option<String>,
}

/// Check a JWK against the header's `alg`, the clock and the revocation lists.
pub(crate) fn check_key(
    jwk: &Value,
    alg: JwsAlg,
    kid: &str,
    now_unix: i64,
    trust: &TrustStore,
) -> Result<UsableKey, KeyProblem> {
    if let Some(why) = trust.revocation(kid, jwk) {
        return Err(KeyProblem::Revoked(why));
    }
    if let Some(exp) = jwk.get("exp") {
        let exp = exp
            .as_f64()
            .or_else(|| exp.to_string().parse().ok())
            .filter(|_| exp.is_number())
            .ok_or_else(|| unusable(alg, "its exp is not a number"))?;
        if (exp as i64) <= now_unix {
            return Err(KeyProblem::Expired {
                exp: exp as i64,
                now: now_unix,
            });
        }
    }
    if let Some(use_) = jwk.get("use")
        && use_.as_str() != Some("sig")
    {
        return Err(unusable(alg, format!("its use is {use_}, not \"sig\"")));
    }
    if let Some(ops) = jwk.get("key_ops") {
        let verifies = ops
            .as_array()
            .is_some_and(|ops| ops.iter().any(|o| o.as_str() == Some("verify")));
        if !verifies {
            return Err(unusable(alg, "its key_ops do not include \"verify\""));
        }
    }
    if let Some(key_alg) = jwk.get("alg") {
        let same = match key_alg.as_str() {
            Some("Ed25519") => alg == JwsAlg::EdDSA,
            Some(a) => a == alg.name(),
            None => false,
        };
        if !same {
            return Err(unusable(alg, format!("the key is for alg {key_alg}")));
        }
    }
    let member = |name: &str| -> Result<Vec<u8>, KeyProblem> {
        let text = jwk
            .get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| unusable(alg, format!("member {name} is missing")))?;
        URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|e| unusable(alg, format!("member {name} is not base64url: {e}")))
    };
    let kty = jwk.get("kty").and_then(Value::as_str).unwrap_or("");
    let crv = jwk.get("crv").and_then(Value::as_str).unwrap_or("");
    let (decoding, signature_len) = match alg {
        JwsAlg::EdDSA => {
            if (kty, crv) != ("OKP", "Ed25519") {
                return Err(unusable(
                    alg,
                    format!("kty {kty:?} crv {crv:?}, not OKP Ed25519"),
                ));
            }
            let x = member("x")?;
            if x.len() != 32 {
                return Err(unusable(alg, format!("x is {} bytes, not 32", x.len())));
            }
            (jsonwebtoken::DecodingKey::from_ed_der(&x), 64)
        }
        JwsAlg::ES256 | JwsAlg::ES384 => {
            let (want_crv, n) = if alg == JwsAlg::ES256 {
                ("P-256", 32)
            } else {
                ("P-384", 48)
            };
            if (kty, crv) != ("EC", want_crv) {
                return Err(unusable(
                    alg,
                    format!("kty {kty:?} crv {crv:?}, not EC {want_crv}"),
                ));
            }
            let (x, y) = (member("x")?, member("y")?);
            if x.len() != n || y.len() != n {
                return Err(unusable(alg, format!("x and y must be {n} bytes each")));
            }
            let mut sec1 = Vec::with_capacity(1 + 2 * n);
            sec1.push(0x04);
            sec1.extend_from_slice(&x);
            sec1.extend_from_slice(&y);
            (jsonwebtoken::DecodingKey::from_ec_der(&sec1), 2 * n)
        }
        _ => {
            debug_assert!(alg.is_rsa());
            if kty != "RSA" {
                return Err(unusable(alg, format!("kty {kty:?}, not RSA")));
            }
            let (n, e) = (member("n")?, member("e")?);
            let n_trimmed = &n[n.iter().take_while(|b| **b == 0).count()..];
            let bits =
                n_trimmed.len() * 8 - n_trimmed.first().map_or(8, |b| b.leading_zeros() as usize);
            if bits < RSA_MIN_BITS {
                return Err(unusable(
                    alg,
                    format!("the RSA modulus has {bits} bits, fewer than {RSA_MIN_BITS}"),
                ));
            }
            (
                jsonwebtoken::DecodingKey::from_rsa_raw_components(n_trimmed, &e),
                n_trimmed.len(),
            )
        }
    };
    Ok(UsableKey {
        decoding,
        signature_len,
        thumbprint: jwk_thumbprint(jwk),
    })
}

/// Why a `jku` gave no keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwksFetchError {
    #[error("jku {0:?} is not an https URL")]
    NotHttps(String),
    #[error("jku fetch failed: {0}")]
    Transport(String),
    #[error("jku answered {status} with a redirect to {location:?}; redirects are not followed")]
    Redirect { status: u16, location: String },
    #[error("jku answered http {0}")]
    Status(u16),
    #[error("the JWK Set at jku is {0} bytes, more than the {JWKS_BODY_CAP_BYTES}-byte cap")]
    TooLarge(usize),
    #[error("jku fetch took longer than {} s", JWKS_DEADLINE.as_secs())]
    Timeout,
    #[error("jku did not serve a JWK Set: {0}")]
    NotJwks(String),
}

impl JwksFetchError {
    /// The error without the URL, host, resolved address or redirect target it may quote: what
    /// a record that withholds the jku (hash-only, commitment) says instead.
    pub fn without_addresses(&self) -> String {
        match self {
            JwksFetchError::NotHttps(_) => "jku is not an https URL".into(),
            JwksFetchError::Transport(_) => {
                "jku fetch failed (the transport's message is withheld: it names the address)"
                    .into()
            }
            JwksFetchError::Redirect { status, .. } => {
                format!("jku answered {status} with a redirect; redirects are not followed")
            }
            // These quote no address.
            other => other.to_string(),
        }
    }
}

#[derive(Debug, Clone)]
struct CachedJwks {
    keys: Arc<Vec<Value>>,
    fresh_until: Instant,
    etag: Option<String>,
    stored: Instant,
}

/// `jku` JWK Sets by URL, reused while their HTTP caching headers say they are fresh.
#[derive(Debug, Clone, Default)]
pub(crate) struct JwksCache {
    inner: Arc<Mutex<HashMap<String, CachedJwks>>>,
}

impl JwksCache {
    fn get(&self, url: &str) -> Option<CachedJwks> {
        self.inner
            .lock()
            .expect("jwks cache lock")
            .get(url)
            .cloned()
    }

    fn put(&self, url: &str, entry: CachedJwks) {
        let mut map = self.inner.lock().expect("jwks cache lock");
        if map.len() >= JWKS_CACHE_ENTRIES && !map.contains_key(url) {
            let oldest = map
                .iter()
                .min_by_key(|(_, e)| e.stored)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                map.remove(&k);
            }
        }
        map.insert(url.to_string(), entry);
    }

    fn forget(&self, url: &str) {
        self.inner.lock().expect("jwks cache lock").remove(url);
    }
}

/// The keys at `url`: from the cache while fresh, else fetched (revalidated with the ETag when
/// there is one). Caps: https only, no redirects, [`JWKS_BODY_CAP_BYTES`], [`JWKS_DEADLINE`].
pub(crate) async fn fetch_jwks(
    transport: &Transport,
    cache: &JwksCache,
    url: &str,
) -> Result<Arc<Vec<Value>>, JwksFetchError> {
    if !url.starts_with("https://") {
        return Err(JwksFetchError::NotHttps(url.to_string()));
    }
    let cached = cache.get(url);
    let now = Instant::now();
    if let Some(c) = &cached
        && c.fresh_until > now
    {
        return Ok(c.keys.clone());
    }
    let mut headers = vec![("Accept", "application/jwk-set+json, application/json")];
    let etag = cached.as_ref().and_then(|c| c.etag.clone());
    if let Some(tag) = &etag {
        headers.push(("If-None-Match", tag.as_str()));
    }
    let request = HttpRequest::get(url, &headers);
    let exchange = tokio::time::timeout(JWKS_DEADLINE, transport.fetch(&request))
        .await
        .map_err(|_| JwksFetchError::Timeout)?;
    if let Some(text) = exchange.transport_error {
        // A body cut off mid-read says nothing of where (issue 42): name the jku.
        let text = if text.contains(url) {
            text
        } else {
            format!("{url}: {text}")
        };
        return Err(JwksFetchError::Transport(text));
    }
    let freshness = freshness(&exchange.response_headers);
    match exchange.status {
        304 if cached.is_some() => {
            let c = cached.expect("checked");
            match freshness {
                Some(fresh) => cache.put(
                    url,
                    CachedJwks {
                        fresh_until: now + fresh,
                        stored: now,
                        ..c.clone()
                    },
                ),
                None => cache.forget(url),
            }
            return Ok(c.keys);
        }
        200 => {}
        s @ 300..=399 => {
            return Err(JwksFetchError::Redirect {
                status: s,
                location: exchange.header("location").unwrap_or("").to_string(),
            });
        }
        s => return Err(JwksFetchError::Status(s)),
    }
    if exchange.body.len() > JWKS_BODY_CAP_BYTES {
        return Err(JwksFetchError::TooLarge(exchange.body.len()));
    }
    let jwks = crate::json::bounded::strict(crate::json::bounded::Input::Jwks, &exchange.body)
        .map_err(|e| JwksFetchError::NotJwks(e.to_string()))?;
    let keys = Arc::new(jwks_keys(&jwks).map_err(JwksFetchError::NotJwks)?);
    let etag = exchange.header("etag").map(str::to_owned);
    match freshness {
        // Stored even when stale at once, so the ETag can revalidate it next time.
        Some(fresh) => cache.put(
            url,
            CachedJwks {
                keys: keys.clone(),
                fresh_until: now + fresh,
                etag,
                stored: now,
            },
        ),
        None => cache.forget(url),
    }
    Ok(keys)
}

/// How long a response may be reused (RFC 9111 section 4.2.1), or `None` when it must not be
/// stored. `max-age` wins over `Expires`; `Age` is subtracted; no freshness information means
/// zero (stored only for revalidation when it has an ETag).
fn freshness(headers: &[(String, String)]) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let directives: Vec<(String, Option<String>)> = get("cache-control")
        .unwrap_or("")
        .split(',')
        .filter_map(|d| {
            let d = d.trim();
            if d.is_empty() {
                return None;
            }
            let (name, value) = match d.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim().trim_matches('"').to_string())),
                None => (d, None),
            };
            Some((name.to_ascii_lowercase(), value))
        })
        .collect();
    let has = |name: &str| directives.iter().any(|(n, _)| n == name);
    if has("no-store") {
        return None;
    }
    if has("no-cache") {
        return Some(Duration::ZERO).filter(|_| get("etag").is_some());
    }
    let age: u64 = get("age").and_then(|a| a.trim().parse().ok()).unwrap_or(0);
    let max_age = directives
        .iter()
        .find(|(n, _)| n == "max-age")
        .and_then(|(_, v)| v.as_deref()?.parse::<u64>().ok());
    let lifetime = match max_age {
        Some(secs) => Some(secs),
        None => match (get("expires"), get("date")) {
            (Some(exp), Some(date)) => {
                let exp = chrono::DateTime::parse_from_rfc2822(exp).ok();
                let date = chrono::DateTime::parse_from_rfc2822(date).ok();
                match (exp, date) {
                    (Some(e), Some(d)) => Some((e - d).num_seconds().max(0) as u64),
                    // An unparsable Expires means "already expired" (RFC 9111 section 5.3).
                    _ => Some(0),
                }
            }
            _ => None,
        },
    };
    let fresh = Duration::from_secs(lifetime.unwrap_or(0).saturating_sub(age));
    if fresh.is_zero() && get("etag").is_none() {
        return None;
    }
    Some(fresh.min(JWKS_MAX_FRESHNESS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn freshness_follows_the_caching_headers() {
        assert_eq!(
            freshness(&h(&[
                ("cache-control", "public, max-age=300"),
                ("age", "100")
            ])),
            Some(Duration::from_secs(200))
        );
        assert_eq!(
            freshness(&h(&[("cache-control", "no-store, max-age=300")])),
            None
        );
        assert_eq!(freshness(&h(&[("cache-control", "no-cache")])), None);
        assert_eq!(
            freshness(&h(&[("cache-control", "no-cache"), ("etag", "\"a\"")])),
            Some(Duration::ZERO)
        );
        assert_eq!(
            freshness(&h(&[
                ("date", "Wed, 21 Oct 2026 07:28:00 GMT"),
                ("expires", "Wed, 21 Oct 2026 08:28:00 GMT")
            ])),
            Some(Duration::from_secs(3600))
        );
        assert_eq!(freshness(&h(&[])), None);
        assert_eq!(
            freshness(&h(&[("cache-control", "max-age=9999999")])),
            Some(JWKS_MAX_FRESHNESS)
        );
    }

    #[test]
    fn thumbprint_matches_rfc_7638_example() {
        // RFC 7638 section 3.1.
        let jwk = json!({"kty":"RSA",
            "n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
            "e":"AQAB","alg":"RS256","kid":"2011-04-29"});
        assert_eq!(
            jwk_thumbprint(&jwk).unwrap(),
            "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
        );
    }

    #[test]
    fn origins_normalise() {
        assert_eq!(
            normalize_origin("https://Agent.Example:443/x").as_deref(),
            Some("https://agent.example")
        );
        assert_eq!(
            normalize_origin("https://a.example:8443").as_deref(),
            Some("https://a.example:8443")
        );
        assert_eq!(normalize_origin("http://a.example"), None);
    }
}
