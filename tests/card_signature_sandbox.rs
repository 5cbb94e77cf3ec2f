//! Key fetching from `jku` against loopback HTTPS servers: same host, another host (admitted only
//! when named), a redirect (refused), an oversized set (refused), a rotated key, and the cache.

use conduct_walker::card_signature::{
    self, JwsAlg, KeySource, Profile, SignatureStatus, TrustStore, jwks_transport_config,
    signing::sign_entry, signing::with_signature,
};
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::{HttpsServer, Req, Resp, SandboxCa, handler};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const NOW: i64 = 1_796_083_200;
const JWKS_PATH: &str = "/.well-known/jwks.json";

struct Key {
    kid: String,
    jwk: Value,
    signing: jsonwebtoken::EncodingKey,
}

fn key(kid: &str, seed: u8) -> Key {
    use base64::Engine;
    use ed25519_dalek::pkcs8::EncodePrivateKey;
    let sk = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
    let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sk.verifying_key().as_bytes());
    Key {
        kid: kid.to_string(),
        jwk: json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig"}),
        signing: jsonwebtoken::EncodingKey::from_ed_der(sk.to_pkcs8_der().unwrap().as_bytes()),
    }
}

fn card() -> Value {
    json!({"name": "Sandbox Agent", "description": "d", "version": "1",
        "provider": {"organization": "Sandbox Org", "url": "https://sandbox.example"},
        "capabilities": {"streaming": false},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "S", "description": "D", "tags": ["t"]}]})
}

fn sign(card: &Value, key: &Key, jku: &str) -> Value {
    let header = format!(
        r#"{{"alg":"EdDSA","typ":"JOSE","kid":"{}","jku":"{jku}"}}"#,
        key.kid
    );
    let entry = sign_entry(card, Profile::Sdk, &header, &key.signing, JwsAlg::EdDSA).unwrap();
    with_signature(card, entry)
}

fn transport(ca: &SandboxCa, allowed_urls: &[&str], allowed_hosts: &[String]) -> Transport {
    let mut policy = NetPolicy::new(true);
    for u in allowed_urls {
        policy.allow_url(u);
    }
    for h in allowed_hosts {
        policy.allow_host_port(h).unwrap();
    }
    let mut config = TransportConfig::new(policy);
    config.extra_roots = vec![ca.cert_der()];
    Transport::new(config).unwrap()
}

/// A server that answers the JWKS path with `respond` and counts the requests it sees there.
async fn jwks_server(
    ca: &SandboxCa,
    respond: impl Fn(&Req) -> Resp + Send + Sync + 'static,
) -> (HttpsServer, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let server = HttpsServer::start(
        ca,
        handler(move |req| {
            if req.path == JWKS_PATH {
                counter.fetch_add(1, Ordering::SeqCst);
                respond(&req)
            } else {
                Resp::empty(404)
            }
        }),
    )
    .await
    .unwrap();
    (server, hits)
}

#[tokio::test]
async fn jku_on_the_cards_own_host_verifies_and_is_cached() {
    let ca = SandboxCa::generate();
    let k = key("k1", 1);
    let jwks = json!({"keys": [k.jwk.clone()]});
    let (server, hits) = jwks_server(&ca, move |_| {
        Resp::json(200, &jwks).with_header("cache-control", "max-age=300")
    })
    .await;
    let origin = server.base();
    let t = transport(&ca, &[&origin], &[]);
    let signed = sign(&card(), &k, &format!("{origin}{JWKS_PATH}"));
    let trust = TrustStore::default();

    let r = card_signature::verify_card_at(&signed, &origin, Some(&t), &trust, NOW).await;
    assert!(r.valid, "{:?}", r.signatures);
    assert_eq!(r.signatures[0].key_source, Some(KeySource::JkuSameHost));
    let block = r.record_block(false);
    assert_eq!(block["jku_same_host"], true);
    assert_eq!(block["signatures"][0]["key_source"], "jku_same_host");
    assert!(
        block["verified_reason"]
            .as_str()
            .unwrap()
            .contains(card_signature::keys::KEY_SOURCE_JKU_SAME_HOST_TEXT)
    );

    // Fresh for 300 s: a second walk uses the cached set; a store clone shares the cache.
    let again =
        card_signature::verify_card_at(&signed, &origin, Some(&t), &trust.clone(), NOW).await;
    assert!(again.valid);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    // A fresh store has its own (empty) cache.
    let third =
        card_signature::verify_card_at(&signed, &origin, Some(&t), &TrustStore::default(), NOW)
            .await;
    assert!(third.valid);
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn no_store_is_refetched_and_an_etag_is_revalidated() {
    let ca = SandboxCa::generate();
    let k = key("k1", 2);
    let jwks = json!({"keys": [k.jwk.clone()]});
    let conditional = Arc::new(AtomicUsize::new(0));
    let seen = conditional.clone();
    let (server, hits) = jwks_server(&ca, move |req| {
        if req.path == JWKS_PATH && req.header("if-none-match") == Some("\"v1\"") {
            seen.fetch_add(1, Ordering::SeqCst);
            return Resp::empty(304)
                .with_header("etag", "\"v1\"")
                .with_header("cache-control", "no-cache");
        }
        Resp::json(200, &jwks)
            .with_header("etag", "\"v1\"")
            .with_header("cache-control", "no-cache")
    })
    .await;
    let origin = server.base();
    let t = transport(&ca, &[&origin], &[]);
    let signed = sign(&card(), &k, &format!("{origin}{JWKS_PATH}"));
    let trust = TrustStore::default();
    for _ in 0..3 {
        let r = card_signature::verify_card_at(&signed, &origin, Some(&t), &trust, NOW).await;
        assert!(r.valid, "{:?}", r.signatures);
    }
    // no-cache: every use asks again, conditionally after the first.
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    assert_eq!(conditional.load(Ordering::SeqCst), 2);

    let ca2 = SandboxCa::generate();
    let jwks2 = json!({"keys": [k.jwk.clone()]});
    let (server2, hits2) = jwks_server(&ca2, move |_| {
        Resp::json(200, &jwks2).with_header("cache-control", "no-store, max-age=600")
    })
    .await;
    let origin2 = server2.base();
    let t2 = transport(&ca2, &[&origin2], &[]);
    let signed2 = sign(&card(), &k, &format!("{origin2}{JWKS_PATH}"));
    for _ in 0..2 {
        assert!(
            card_signature::verify_card_at(&signed2, &origin2, Some(&t2), &trust, NOW)
                .await
                .valid
        );
    }
    assert_eq!(hits2.load(Ordering::SeqCst), 2, "no-store is never reused");
}

#[tokio::test]
async fn jku_on_another_host_needs_that_host_named() {
    let ca = SandboxCa::generate();
    let k = key("k1", 3);
    let jwks = json!({"keys": [k.jwk.clone()]});
    let (keys_host, hits) = jwks_server(&ca, move |_| Resp::json(200, &jwks)).await;
    // The card's own server: only its origin matters here.
    let (agent, _) = jwks_server(&ca, |_| Resp::empty(404)).await;
    let origin = agent.base();
    let signed = sign(&card(), &k, &format!("{}{JWKS_PATH}", keys_host.base()));

    // Named only the agent: the card alone cannot send us to another private address.
    let t = transport(&ca, &[&origin], &[]);
    let r = card_signature::verify_card_at(&signed, &origin, Some(&t), &TrustStore::default(), NOW)
        .await;
    assert!(!r.valid);
    assert_eq!(r.signatures[0].status, SignatureStatus::NoKey);
    assert!(
        r.signatures[0].reason.contains("refused"),
        "{}",
        r.signatures[0].reason
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    // The refusal quotes the key host's address and port; a record withholding the jku does not.
    let private = serde_json::to_string(&r.record_block(true)).unwrap();
    let port = keys_host.addr().port().to_string();
    assert!(!private.contains(&port), "{private}");
    assert!(private.contains("jku fetch failed"), "{private}");

    // With --allow-host for the key host: verifies, and says the key came from elsewhere.
    let t = transport(&ca, &[&origin], &[keys_host.addr().to_string()]);
    let r = card_signature::verify_card_at(&signed, &origin, Some(&t), &TrustStore::default(), NOW)
        .await;
    assert!(r.valid, "{:?}", r.signatures);
    assert_eq!(r.signatures[0].key_source, Some(KeySource::JkuOtherHost));
    let block = r.record_block(false);
    assert_eq!(block["jku_same_host"], false);
    assert!(
        block["verified_reason"]
            .as_str()
            .unwrap()
            .contains(card_signature::keys::KEY_SOURCE_JKU_OTHER_HOST_TEXT)
    );
    // Hash-only privacy: no jku anywhere in the block.
    let private = r.record_block(true);
    let text = serde_json::to_string(&private).unwrap();
    assert!(!text.contains(&keys_host.base()), "{text}");
    assert_eq!(private["jku_same_host"], false);
}

#[tokio::test]
async fn a_redirecting_jku_is_refused() {
    let ca = SandboxCa::generate();
    let k = key("k1", 4);
    let jwks = json!({"keys": [k.jwk.clone()]});
    let server = HttpsServer::start(
        &ca,
        handler(move |req| match req.path.as_str() {
            JWKS_PATH => Resp::empty(302).with_header("location", "/real-jwks.json"),
            "/real-jwks.json" => Resp::json(200, &jwks),
            _ => Resp::empty(404),
        }),
    )
    .await
    .unwrap();
    let origin = server.base();
    let t = transport(&ca, &[&origin], &[]);
    let signed = sign(&card(), &k, &format!("{origin}{JWKS_PATH}"));
    let r = card_signature::verify_card_at(&signed, &origin, Some(&t), &TrustStore::default(), NOW)
        .await;
    assert!(!r.valid);
    assert_eq!(r.signatures[0].status, SignatureStatus::NoKey);
    assert!(
        r.signatures[0].reason.contains("302") && r.signatures[0].reason.contains("redirect"),
        "{}",
        r.signatures[0].reason
    );
    // Withholding the jku withholds where it redirected to as well.
    let private = serde_json::to_string(&r.record_block(true)).unwrap();
    assert!(
        !private.contains("real-jwks") && !private.contains(&origin),
        "{private}"
    );
    assert!(private.contains("with a redirect"), "{private}");
}

#[tokio::test]
async fn an_oversized_jwks_is_refused() {
    let ca = SandboxCa::generate();
    let k = key("k1", 5);
    let mut keys = vec![k.jwk.clone()];
    // Padding keys push the set past the cap (about 100 KiB).
    for i in 0..1000 {
        keys.push(
            json!({"kty": "OKP", "crv": "Ed25519", "kid": format!("pad-{i}"),
            "x": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}),
        );
    }
    let jwks = json!({"keys": keys});
    assert!(serde_json::to_vec(&jwks).unwrap().len() > card_signature::keys::JWKS_BODY_CAP_BYTES);
    let (server, _) = jwks_server(&ca, move |_| Resp::json(200, &jwks)).await;
    let origin = server.base();
    let signed = sign(&card(), &k, &format!("{origin}{JWKS_PATH}"));

    // Through the walk's own transport (1 MiB cap): the JWKS cap still applies.
    let t = transport(&ca, &[&origin], &[]);
    let r = card_signature::verify_card_at(&signed, &origin, Some(&t), &TrustStore::default(), NOW)
        .await;
    assert_eq!(r.signatures[0].status, SignatureStatus::NoKey);
    assert!(
        r.signatures[0].reason.contains("cap"),
        "{}",
        r.signatures[0].reason
    );

    // Through a dedicated key transport: the transport stops reading at the cap.
    let mut policy = NetPolicy::new(true);
    policy.allow_url(&origin);
    let mut config = jwks_transport_config(policy);
    config.extra_roots = vec![ca.cert_der()];
    let t = Transport::new(config).unwrap();
    let r = card_signature::verify_card_at(&signed, &origin, Some(&t), &TrustStore::default(), NOW)
        .await;
    assert!(!r.valid);
    assert_eq!(r.signatures[0].status, SignatureStatus::NoKey);
    assert!(
        r.signatures[0].reason.contains("jku fetch failed"),
        "{}",
        r.signatures[0].reason
    );
}

#[tokio::test]
async fn a_rotated_key_two_signatures_one_stale() {
    let ca = SandboxCa::generate();
    let old = key("2025-key", 6);
    let new = key("2026-key", 7);
    let mut old_expired = old.jwk.clone();
    old_expired["exp"] = json!(NOW - 86_400);
    let jwks = json!({"keys": [old_expired, new.jwk.clone()]});
    let (server, _) = jwks_server(&ca, move |_| Resp::json(200, &jwks)).await;
    let origin = server.base();
    let jku = format!("{origin}{JWKS_PATH}");
    // Signed first with the old key, then (rotation) with the new one: both entries present.
    let signed = sign(&sign(&card(), &old, &jku), &new, &jku);
    assert_eq!(signed["signatures"].as_array().unwrap().len(), 2);
    let t = transport(&ca, &[&origin], &[]);
    let r = card_signature::verify_card_at(&signed, &origin, Some(&t), &TrustStore::default(), NOW)
        .await;
    assert!(r.valid);
    assert_eq!(r.signatures[0].status, SignatureStatus::KeyExpired);
    assert!(
        r.signatures[0].reason.contains("expired"),
        "{}",
        r.signatures[0].reason
    );
    assert_eq!(r.signatures[1].status, SignatureStatus::Valid);
    assert_eq!(r.chosen, Some(1));
    // The header block still reads the first (stale) entry, as the reference does.
    assert_eq!(r.record_block(false)["kid"], "2025-key");
    assert!(
        r.verified_reason(false)
            .starts_with("verified: signatures[1] of 2")
    );

    // Old key gone from the set altogether: no key for it, the new one still verifies.
    let jwks = json!({"keys": [new.jwk.clone()]});
    let (server, _) = jwks_server(&ca, move |_| Resp::json(200, &jwks)).await;
    let origin = server.base();
    let jku = format!("{origin}{JWKS_PATH}");
    let signed = sign(&sign(&card(), &old, &jku), &new, &jku);
    let t = transport(&ca, &[&origin], &[]);
    let r = card_signature::verify_card_at(&signed, &origin, Some(&t), &TrustStore::default(), NOW)
        .await;
    assert!(r.valid);
    assert_eq!(r.signatures[0].status, SignatureStatus::NoKey);
    assert!(
        r.signatures[0].reason.contains("no key with kid"),
        "{}",
        r.signatures[0].reason
    );
    // And a revocation list entry for the new key leaves nothing valid.
    let mut trust = TrustStore::default();
    trust.revoke_kid("2026-key");
    let r = card_signature::verify_card_at(&signed, &origin, Some(&t), &trust, NOW).await;
    assert!(!r.valid);
    assert_eq!(r.signatures[1].status, SignatureStatus::KeyRevoked);
}

#[tokio::test]
async fn a_plain_http_jku_is_not_fetched() {
    let ca = SandboxCa::generate();
    let k = key("k1", 8);
    let t = transport(&ca, &[], &[]);
    let signed = sign(&card(), &k, "http://127.0.0.1:9/jwks.json");
    let r = card_signature::verify_card_at(
        &signed,
        "https://agent.example",
        Some(&t),
        &TrustStore::default(),
        NOW,
    )
    .await;
    assert_eq!(r.signatures[0].status, SignatureStatus::NoKey);
    assert!(
        r.signatures[0].reason.contains("not an https URL"),
        "{}",
        r.signatures[0].reason
    );
}

/// `verified` is three-valued (conduct-walk.md §4.3): `false` only after a check against a key
/// that was obtained; a card nothing could be checked on is `null`, with the reason per entry,
/// and its does_not_establish line says "could not check", not "does not verify".
#[tokio::test]
async fn verified_is_true_false_or_null_and_null_never_reads_as_bad() {
    let ca = SandboxCa::generate();
    let signer = key("k1", 1);
    let impostor = key("k1", 2); // same kid, another key: a real check that fails
    let published = json!({"keys": [signer.jwk.clone()]});
    let (server, _) = jwks_server(&ca, move |_| Resp::json(200, &published)).await;
    let origin = server.base();
    let jku = format!("{origin}{JWKS_PATH}");
    let t = transport(&ca, &[&origin], &[]);
    let trust = TrustStore::default();
    let check = |card: Value, t: Option<Transport>| {
        let trust = trust.clone();
        let origin = origin.clone();
        async move { card_signature::verify_card_at(&card, &origin, t.as_ref(), &trust, NOW).await }
    };

    let good = check(sign(&card(), &signer, &jku), Some(t.clone())).await;
    assert_eq!(good.verified(), Some(true));
    assert_eq!(good.record_block(false)["verified"], true);

    let bad = check(sign(&card(), &impostor, &jku), Some(t.clone())).await;
    assert_eq!(bad.verified(), Some(false), "{:?}", bad.signatures);
    let block = bad.record_block(false);
    assert_eq!(block["verified"], false);
    assert!(
        block["verified_reason"]
            .as_str()
            .unwrap()
            .starts_with(card_signature::VERIFIED_REASON_INVALID_HEAD)
    );
    assert_eq!(bad.attribution_line(), card_signature::ATTRIBUTION_INVALID);

    // The key server is down: nothing was checked.
    let down = {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dead = format!("https://127.0.0.1:{port}{JWKS_PATH}");
        let t = transport(&ca, &[&origin, &dead], &[]);
        check(sign(&card(), &signer, &dead), Some(t)).await
    };
    // Unsupported algorithm (refused on principle), and no key at all (no jku, not pinned).
    let mut hs256 = sign(&card(), &signer, &jku);
    hs256["signatures"][0]["protected"] = json!(base64_url(r#"{"alg":"HS256","kid":"k1"}"#));
    let refused = check(hs256, Some(t.clone())).await;
    let mut no_jku = sign(&card(), &signer, &jku);
    no_jku["signatures"][0]["protected"] =
        json!(base64_url(r#"{"alg":"EdDSA","typ":"JOSE","kid":"k1"}"#));
    let keyless = check(no_jku, Some(t.clone())).await;
    let mut garbled = sign(&card(), &signer, &jku);
    garbled["signatures"][0]["protected"] = json!("%%% not base64 %%%");
    let malformed = check(garbled, Some(t.clone())).await;

    for (name, r, cause) in [
        ("jku server down", &down, "no_key"),
        ("HS256", &refused, "refused"),
        ("no jku, not pinned", &keyless, "no_key"),
        ("malformed", &malformed, "malformed"),
    ] {
        assert_eq!(r.verified(), None, "{name}: {:?}", r.signatures);
        let block = r.record_block(false);
        assert_eq!(block["verified"], Value::Null, "{name}");
        let reason = block["verified_reason"].as_str().unwrap();
        assert!(
            reason.starts_with(card_signature::VERIFIED_REASON_UNCHECKED_HEAD)
                && reason.contains(cause)
                && reason.contains("signatures[0]: "),
            "{name}: {reason}"
        );
        assert_eq!(
            r.attribution_line(),
            card_signature::ATTRIBUTION_UNCHECKED,
            "{name}"
        );
    }
    let down_reason = down.record_block(false)["verified_reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        down_reason.contains("jku fetch failed"),
        "the transport error is named: {down_reason}"
    );
}

fn base64_url(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
}
