//! The nine public surfaces a pool member measures (§3.2) and what each answer is observed as
//! (§3.3–§3.5).

use super::js::{self, JsObject, JsValue};
use crate::card_signature::{MAX_JKU_FETCHES, MAX_SIGNATURES_CHECKED, Profile, TrustStore};
use crate::card_signature::{canonicalize_card, jws, keys};
use crate::digest::sha256_hex;
use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Map, Value, json};

/// A surface: its name in requests and observations, and the path appended to the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Surface {
    pub name: &'static str,
    pub path: &'static str,
}

/// The known surfaces, in the order the `no_known_surface` text lists them (§3.2). The first
/// eight are the reference requester's default.
pub const KNOWN: [Surface; 9] = [
    Surface {
        name: "health.gate_commit",
        path: "/health",
    },
    Surface {
        name: "agent-card.signature",
        path: "/.well-known/agent-card.json",
    },
    Surface {
        name: "well-known.jwks",
        path: "/.well-known/jwks.json",
    },
    Surface {
        name: "well-known.openai-apps-challenge",
        path: "/.well-known/openai-apps-challenge",
    },
    Surface {
        name: "ext.conduct-v1.spec",
        path: "/ext/conduct/v1",
    },
    Surface {
        name: "keys.agreement",
        path: "/keys/agreement.json",
    },
    Surface {
        name: "keys.witness",
        path: "/keys/witness.json",
    },
    Surface {
        name: "keys.operator",
        path: "/keys/operator.json",
    },
    Surface {
        name: "well-known.did",
        path: "/.well-known/did.json",
    },
];

/// The known surface of this name.
pub fn known(name: &str) -> Option<&'static Surface> {
    KNOWN.iter().find(|s| s.name == name)
}

// What each answer is observed as (§3.3–§3.5). Every rule takes the HTTP status and the body
// bytes as received, reads the body as the reference does (`js::decode_body`, then
// `JSON.parse`: J, or "none") and writes only strings (the JWKS `thumbprints`: an object of
// strings).

/// Longest error or `why` text written (§3.4: short).
pub const SHORT_TEXT_MAX_CHARS: usize = 120;
/// How much of an unconfigured challenge body is kept, in UTF-16 code units (§3.3 item 4).
pub const CHALLENGE_BODY_UNITS: usize = 200;
/// `why` of a card without signatures (§3.3 item 2).
pub const WHY_UNSIGNED: &str = "card carries no signatures";
/// `why` when no entry verifies: a2a-js's own message, so that witnesses agree where they can.
pub const WHY_NONE_VERIFIES: &str = "No valid signatures found on agent card.";

/// The error object of a surface that could not be measured (§3.4): `{"error": text}` and
/// nothing else. `text` is the caller's short reason and must name no address or secret; it is
/// cut to [`SHORT_TEXT_MAX_CHARS`].
pub fn error_object(text: &str) -> Value {
    json!({ "error": short(text) })
}

fn short(text: &str) -> String {
    text.chars().take(SHORT_TEXT_MAX_CHARS).collect()
}

/// The observed object of surface `name` from its answer, for every known surface but
/// `agent-card.signature`, which needs its keys fetched first ([`agent_card_jkus`],
/// [`agent_card_signature`]). `None` for that surface and for unknown names.
pub fn observe(name: &str, status: u16, body: &[u8]) -> Option<Value> {
    let rule: fn(u16, &[u8]) -> Value = match name {
        "health.gate_commit" => health_gate_commit,
        "well-known.jwks" => well_known_jwks,
        "well-known.openai-apps-challenge" => well_known_openai_apps_challenge,
        "ext.conduct-v1.spec" => ext_conduct_v1_spec,
        "keys.agreement" | "keys.witness" | "keys.operator" => keys_public_key,
        "well-known.did" => well_known_did,
        _ => return None,
    };
    Some(rule(status, body))
}

/// J: the body parsed as JSON, `None` when it does not parse.
fn json_of(body: &[u8]) -> Option<JsValue> {
    js::parse(&js::decode_body(body))
}

/// `J.name`: nothing when J is none or not an object.
fn member<'a>(json: Option<&'a JsValue>, name: &str) -> Option<&'a JsValue> {
    json?.get(name)
}

/// §3.3 item 1.
pub fn health_gate_commit(status: u16, body: &[u8]) -> Value {
    let json = json_of(body);
    let gate_commit = member(json.as_ref(), "gate_commit").and_then(JsValue::as_str);
    json!({
        "status": status.to_string(),
        "gate_commit": gate_commit.unwrap_or_default(),
        "gate_version": js::string_if_truthy(member(json.as_ref(), "gate_version")),
    })
}

/// §3.3 item 3: each key's kid, and the SHA-256 of its thumbprint text by kid (`?` without).
pub fn well_known_jwks(status: u16, body: &[u8]) -> Value {
    let json = json_of(body);
    let keys = member(json.as_ref(), "keys")
        .and_then(JsValue::as_array)
        .unwrap_or_default();
    // (ref) Reading `kid` of a null key throws in the reference.
    if keys.contains(&JsValue::Null) {
        return error_object("a key in keys is null");
    }
    let kids: Vec<String> = keys
        .iter()
        .map(|key| js::string_if_truthy(key.get("kid")))
        .collect();
    let mut thumbprints = Map::new();
    for key in keys {
        let name = match key.get("kid") {
            kid if js::truthy(kid) => js::string(kid),
            _ => "?".to_string(),
        };
        // A later key of the same name replaces the earlier one's value.
        thumbprints.insert(name, sha256_hex(thumbprint_text(key)).into());
    }
    json!({
        "status": status.to_string(),
        "kids": kids.join(","),
        "thumbprints": thumbprints,
    })
}

/// The thumbprint text of a JWKS member (§3.5): its `crv`, `kty`, `x`, `y`, in that order, as
/// `JSON.stringify` writes each value; absent members left out. Not RFC 7638.
pub fn thumbprint_text(key: &JsValue) -> String {
    let members: Vec<String> = ["crv", "kty", "x", "y"]
        .into_iter()
        .filter_map(|name| Some(format!("\"{name}\":{}", js::stringify(key.get(name)?))))
        .collect();
    format!("{{{}}}", members.join(","))
}

/// §3.3 item 4: configured when a 200 body is not JSON (or is JSON `null`) and not blank.
pub fn well_known_openai_apps_challenge(status: u16, body: &[u8]) -> Value {
    let text = js::decode_body(body);
    let not_json = matches!(js::parse(&text), None | Some(JsValue::Null));
    let value = js::trim(&text);
    if status == 200 && not_json && !value.is_empty() {
        json!({
            "status": status.to_string(),
            "configured": "true",
            "value": value,
            "sha256": sha256_hex(value),
        })
    } else {
        json!({
            "status": status.to_string(),
            "configured": "false",
            "body": js::first_code_units(&text, CHALLENGE_BODY_UNITS),
        })
    }
}

/// §3.3 item 5.
pub fn ext_conduct_v1_spec(status: u16, body: &[u8]) -> Value {
    let json = json_of(body);
    json!({
        "status": status.to_string(),
        "served_sha256": js::string_if_truthy(member(json.as_ref(), "spec_markdown_sha256")),
    })
}

/// §3.3 items 6–8 (`keys.agreement`, `keys.witness`, `keys.operator`): the hash of the served
/// base64 text exactly as served, when a 200 answer carries one. (J truthy is implied: only an
/// object has the member.)
pub fn keys_public_key(status: u16, body: &[u8]) -> Value {
    let json = json_of(body);
    match member(json.as_ref(), "public_key_ed25519_b64").and_then(JsValue::as_str) {
        Some(key) if status == 200 => json!({
            "status": status.to_string(),
            "present": "true",
            "key_sha256": sha256_hex(key),
        }),
        _ => json!({ "status": status.to_string(), "present": "false" }),
    }
}

/// §3.3 item 9: the DID's id, its methods' kids in document order, and the hash of its DID text.
pub fn well_known_did(status: u16, body: &[u8]) -> Value {
    let json = json_of(body);
    let id = member(json.as_ref(), "id").and_then(JsValue::as_str);
    let methods = member(json.as_ref(), "verificationMethod").and_then(JsValue::as_array);
    let (Some(id), Some(methods), 200) = (id, methods, status) else {
        return json!({ "status": status.to_string(), "present": "false" });
    };
    // (ref) Reading `id` of a null method throws in the reference.
    if methods.contains(&JsValue::Null) {
        return error_object("a verificationMethod entry is null");
    }
    let kids: Vec<String> = methods
        .iter()
        .map(|method| did_kid(&js::string(method.get("id"))).to_string())
        .collect();
    json!({
        "status": status.to_string(),
        "present": "true",
        "id": id,
        "kids": kids.join(","),
        "did_sha256": sha256_hex(did_text(methods)),
    })
}

/// The text between the first `#` and any second one; `""` without a `#`.
fn did_kid(method_id: &str) -> &str {
    method_id.split('#').nth(1).unwrap_or_default()
}

/// The DID text of a `verificationMethod` list (§3.5): `JSON.stringify` of
/// `[{"id": String(m.id), "jwk": m.publicKeyJwk}, …]` sorted (stably) by `localeCompare` of the
/// ids, `jwk` left out when the method has no `publicKeyJwk`, the key in its served order.
pub fn did_text(methods: &[JsValue]) -> String {
    let mut listed: Vec<JsValue> = methods
        .iter()
        .map(|method| {
            let id = JsValue::String(js::string(method.get("id")));
            let jwk = method.get("publicKeyJwk").cloned();
            let members = std::iter::once(("id".to_string(), id))
                .chain(jwk.map(|jwk| ("jwk".to_string(), jwk)));
            JsValue::Object(JsObject::from_written(members))
        })
        .collect();
    js::sort_by_locale_compare(&mut listed, |entry| js::string(entry.get("id")));
    js::stringify(&JsValue::Array(listed))
}

/// What a GET observed, handed in by the I/O side: an answer (any status), or the short text of
/// why there was none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    Answer { status: u16, body: Vec<u8> },
    Failed(String),
}

/// C of §3.3 item 2: J when it is an object, else `{}` (ours for non-object JSON).
fn card_of(body: &[u8]) -> JsValue {
    match json_of(body) {
        Some(card @ JsValue::Object(_)) => card,
        _ => JsValue::Object(JsObject::default()),
    }
}

/// S: C.signatures when it is an array, else empty.
fn signatures_of(card: &JsValue) -> &[JsValue] {
    card.get("signatures")
        .and_then(JsValue::as_array)
        .unwrap_or_default()
}

/// base64url as the reference's Node decoder reads it: padding optional, trailing bits ignored.
const LENIENT_BASE64URL: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// An entry's protected header: `protected` base64url-decoded, read as UTF-8, `JSON.parse`d.
/// `None` when any step fails (ours: the header members then read as `""`).
fn protected_header(entry: &JsValue) -> Option<JsValue> {
    let encoded = entry.get("protected")?.as_str()?;
    let bytes = LENIENT_BASE64URL.decode(encoded).ok()?;
    js::parse(&js::decode_body(&bytes))
}

/// The entries a2a-js tries, each with its header: those whose header has a truthy `kid`, `typ`
/// and `alg`, in order, among the first [`MAX_SIGNATURES_CHECKED`] (ours: a card is not a
/// work queue; the crate's verifier has the same cap).
fn tried_entries(signatures: &[JsValue]) -> Vec<(&JsValue, JsValue)> {
    signatures
        .iter()
        .take(MAX_SIGNATURES_CHECKED)
        .filter_map(|entry| {
            let header = protected_header(entry)?;
            let complete = ["kid", "typ", "alg"]
                .into_iter()
                .all(|name| js::truthy(header.get(name)));
            complete.then_some((entry, header))
        })
        .collect()
}

/// The header's `jku` when it is a non-empty string (a missing one fails the entry).
fn jku_of(header: &JsValue) -> Option<&str> {
    header.get("jku")?.as_str().filter(|jku| !jku.is_empty())
}

/// Step one of `agent-card.signature`: the `jku` URLs whose JWK Sets verification needs, from
/// the entries a2a-js tries, in order, each once, at most [`MAX_JKU_FETCHES`] (ours). Fetch
/// each through the guarded fetch (§4.4) and hand the answers to [`agent_card_signature`].
pub fn agent_card_jkus(body: &[u8]) -> Vec<String> {
    let card = card_of(body);
    let mut jkus: Vec<String> = Vec::new();
    for (_, header) in tried_entries(signatures_of(&card)) {
        if let Some(jku) = jku_of(&header)
            && !jkus.iter().any(|known| known == jku)
            && jkus.len() < MAX_JKU_FETCHES
        {
            jkus.push(jku.to_string());
        }
    }
    jkus
}

/// Step two, §3.3 item 2: the card answer observed, with `fetched` the answer to each URL
/// [`agent_card_jkus`] listed (a URL missing here fails its entries).
pub fn agent_card_signature(status: u16, body: &[u8], fetched: &[(String, Fetched)]) -> Value {
    let card = card_of(body);
    let signatures = signatures_of(&card);
    let first = signatures.first().and_then(protected_header);
    let first_member = |name: &str| js::string_if_truthy(first.as_ref().and_then(|h| h.get(name)));
    let payload = sdk_payload(&card);
    let verifies = |payload: &[u8]| {
        tried_entries(signatures)
            .iter()
            .any(|(entry, header)| entry_verifies(entry, header, payload, fetched))
    };
    let verdict = match &payload {
        _ if signatures.is_empty() => Err(WHY_UNSIGNED.to_string()),
        Err(why) => Err(short(why)),
        Ok(payload) if verifies(payload) => Ok(()),
        Ok(_) => Err(WHY_NONE_VERIFIES.to_string()),
    };
    let mut observed = json!({
        "status": status.to_string(),
        "verified": verdict.is_ok().to_string(),
        "canonical_sha256": payload.as_ref().map(sha256_hex).unwrap_or_default(),
        "kid": first_member("kid"),
        "alg": first_member("alg"),
        "jku": first_member("jku"),
        "signatures": signatures.len().to_string(),
    });
    if let Err(why) = verdict {
        observed["why"] = why.into();
    }
    observed
}

/// The signing payload: the a2a-js canonical form (the crate's SDK profile) of C without its
/// `signatures`, or why C has none.
fn sdk_payload(card: &JsValue) -> Result<Vec<u8>, String> {
    let mut bare = card.to_json_value();
    if let Some(members) = bare.as_object_mut() {
        members.remove("signatures");
    }
    canonicalize_card(&bare, Profile::Sdk)
        .map(|canonical| canonical.bytes)
        .map_err(|e| e.to_string())
}

/// Whether one entry verifies as a2a-js checks it: the key is the first member of the JWK Set
/// at the entry's `jku` whose `kid` is the header's (`===`), and the detached JWS over
/// `payload` is checked by the crate's card-signature verifier.
fn entry_verifies(
    entry: &JsValue,
    header: &JsValue,
    payload: &[u8],
    fetched: &[(String, Fetched)],
) -> bool {
    let jwk = jku_of(header)
        .and_then(|jku| fetched.iter().find(|(url, _)| url == jku))
        .and_then(|(_, answer)| key_with_kid(answer, header.get("kid")?));
    jwk.is_some_and(|jwk| jws_verifies(&entry.to_json_value(), &jwk.to_json_value(), payload))
}

/// The first key of a fetched JWK Set whose `kid` is `kid`; only a 200 answer is a set (ours).
fn key_with_kid(answer: &Fetched, kid: &JsValue) -> Option<JsValue> {
    let Fetched::Answer { status: 200, body } = answer else {
        return None;
    };
    let jwks = json_of(body)?;
    let keys = jwks.get("keys")?.as_array()?;
    keys.iter()
        .find(|key| key.get("kid").is_some_and(|k| js::strict_equals(k, kid)))
        .cloned()
}

/// The crate's check of a detached JWS entry with one JWK (`card_signature::verify` does the
/// same per key): the entry read, the key fitted to its alg, the signature over
/// `protected.base64url(payload)`.
fn jws_verifies(entry: &Value, jwk: &Value, payload: &[u8]) -> bool {
    let Ok(parsed) = jws::parse_entry(entry) else {
        return false;
    };
    // a2a-js never reads a key's `exp`: no time is before every expiry.
    let no_clock = i64::MIN;
    let kid = &parsed.header.kid;
    let Ok(key) = keys::check_key(jwk, parsed.alg, kid, no_clock, &TrustStore::default()) else {
        return false;
    };
    let input = jws::signing_input(&parsed.protected_b64, payload);
    parsed.signature.len() == key.signature_len
        && jsonwebtoken::crypto::verify(
            &parsed.signature_b64,
            &input,
            &key.decoding,
            parsed.alg.jwt(),
        )
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card_signature::JwsAlg;
    use crate::card_signature::signing::{sign_entry, with_signature};

    fn load(rel: &str) -> Value {
        let path = crate::sandbox::test_vectors(rel);
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
    }

    fn surface_cases() -> Vec<Value> {
        load("witness-pool/surfaces.json")["cases"]
            .as_array()
            .unwrap()
            .clone()
    }

    fn response(case: &Value) -> (u16, Vec<u8>) {
        let status = case["response"]["status"].as_u64().unwrap() as u16;
        let body = case["response"]["body"]
            .as_str()
            .unwrap()
            .as_bytes()
            .to_vec();
        (status, body)
    }

    #[test]
    fn every_surfaces_vector_gives_its_observed_object() {
        let cases = surface_cases();
        for case in &cases {
            let (id, surface) = (&case["id"], case["surface"].as_str().unwrap());
            let (status, body) = response(case);
            let got = observe(surface, status, &body).unwrap();
            assert_eq!(got, case["observed"], "{id}");
        }
        assert_eq!(cases.len(), 35);
    }

    #[test]
    fn hashed_texts_are_the_vectors_byte_for_byte() {
        let mut checked = 0;
        for case in surface_cases() {
            let Some(expected) = case.get("hashed_text") else {
                continue;
            };
            let id = &case["id"];
            let json = json_of(response(&case).1.as_slice());
            match case["surface"].as_str().unwrap() {
                "well-known.jwks" => {
                    let keys = member(json.as_ref(), "keys")
                        .and_then(JsValue::as_array)
                        .unwrap_or_default();
                    let texts: Vec<String> = keys.iter().map(thumbprint_text).collect();
                    assert_eq!(json!(texts), *expected, "{id}");
                }
                "well-known.did" => {
                    let methods = member(json.as_ref(), "verificationMethod").unwrap();
                    let text = did_text(methods.as_array().unwrap());
                    assert_eq!(text, expected.as_str().unwrap(), "{id}");
                    assert_eq!(sha256_hex(&text), case["observed"]["did_sha256"], "{id}");
                }
                other => panic!("{id}: hashed_text for {other}"),
            }
            checked += 1;
        }
        assert_eq!(checked, 11);
    }

    #[test]
    fn a_null_key_or_method_makes_the_surface_an_error_object() {
        let jwks = well_known_jwks(200, br#"{"keys":[{"kid":"a"},null]}"#);
        assert_eq!(jwks, json!({"error": "a key in keys is null"}));
        let did = well_known_did(200, br#"{"id":"did:web:x","verificationMethod":[null]}"#);
        assert_eq!(did, json!({"error": "a verificationMethod entry is null"}));
        // Any other non-object key counts with kid "" and the text {}.
        let jwks = well_known_jwks(200, br#"{"keys":[5,"k",[]]}"#);
        let empty = sha256_hex("{}");
        assert_eq!(jwks["kids"], ",,");
        assert_eq!(jwks["thumbprints"], json!({"?": empty}));
    }

    #[test]
    fn error_texts_are_cut_short() {
        let long = "x".repeat(500);
        let error = error_object(&long);
        assert_eq!(error["error"].as_str().unwrap().len(), SHORT_TEXT_MAX_CHARS);
        assert_eq!(error.as_object().unwrap().len(), 1);
    }

    #[test]
    fn unknown_surfaces_and_the_card_are_not_observed_here() {
        assert_eq!(observe("agent-card.signature", 200, b"{}"), None);
        assert_eq!(observe("nope", 200, b"{}"), None);
        for surface in KNOWN.iter().filter(|s| s.name != "agent-card.signature") {
            assert!(
                observe(surface.name, 500, b"").is_some(),
                "{}",
                surface.name
            );
        }
    }

    /// `{}`'s a2a-js canonical form is `{}` (§3.3 item 2).
    const EMPTY_CARD_SHA256: &str =
        "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";

    fn unsigned_observation(status: u16, canonical_sha256: &str) -> Value {
        json!({
            "status": status.to_string(), "verified": "false", "canonical_sha256": canonical_sha256,
            "kid": "", "alg": "", "jku": "", "signatures": "0", "why": WHY_UNSIGNED,
        })
    }

    #[test]
    fn a_non_object_card_is_the_empty_card() {
        for body in [&b"[1,2]"[..], b"\"card\"", b"not json", b"", b"null"] {
            let got = agent_card_signature(200, body, &[]);
            assert_eq!(got, unsigned_observation(200, EMPTY_CARD_SHA256));
            assert!(agent_card_jkus(body).is_empty());
        }
        assert_eq!(
            agent_card_signature(404, b"{}", &[]),
            unsigned_observation(404, EMPTY_CARD_SHA256)
        );
    }

    #[test]
    fn canonical_sha256_is_the_card_vectors_payload_hash() {
        let vectors = load("card-signature/canonical.json")["vectors"].clone();
        let mut checked = 0;
        for vector in vectors.as_array().unwrap() {
            let body = vector["input_json"].as_str().unwrap().as_bytes();
            let got = agent_card_signature(200, body, &[]);
            let expected = vector["expected_canonical_sha256"].as_str().unwrap_or("");
            assert_eq!(got, unsigned_observation(200, expected), "{}", vector["id"]);
            checked += 1;
        }
        assert_eq!(checked, 8, "V1..V8 (V7 has no canonical form)");
    }

    fn signed_vectors() -> Value {
        load("card-signature/signed.json")
    }

    const STONEWORK_JKU: &str = "https://stonework.example/.well-known/jwks.json";

    fn stonework_jwks(answer: Fetched) -> Vec<(String, Fetched)> {
        vec![(STONEWORK_JKU.to_string(), answer)]
    }

    fn jwks_answer(jwks: &Value) -> Fetched {
        Fetched::Answer {
            status: 200,
            body: jwks.to_string().into_bytes(),
        }
    }

    fn failed_observation(why: &str) -> Value {
        json!({
            "status": "200", "verified": "false",
            "canonical_sha256": "2052606a7b56c783a54e2f1624708ecbb58ddc8d67bb38a2b369e5e07ac3005c",
            "kid": "test-ed25519-1", "alg": "EdDSA", "jku": STONEWORK_JKU, "signatures": "4",
            "why": why,
        })
    }

    #[test]
    fn a_card_signed_by_a2a_js_verifies_with_its_jwks() {
        let vectors = signed_vectors();
        let body = vectors["card"].to_string().into_bytes();
        // Entries 2 and 3 carry `"jku": null`: only the first two name a set, the same one.
        assert_eq!(agent_card_jkus(&body), [STONEWORK_JKU]);
        let fetched = stonework_jwks(jwks_answer(&vectors["jwks"]));
        let mut expected = failed_observation("");
        expected["verified"] = "true".into();
        expected.as_object_mut().unwrap().remove("why");
        assert_eq!(agent_card_signature(200, &body, &fetched), expected);
    }

    #[test]
    fn a_card_whose_jku_fetch_failed_or_lacks_the_kid_does_not_verify() {
        let vectors = signed_vectors();
        let body = vectors["card"].to_string().into_bytes();
        let other_kids = json!({"keys": vectors["jwks"]["keys"].as_array().unwrap().iter()
            .map(|k| { let mut k = k.clone(); k["kid"] = "rotated".into(); k }).collect::<Vec<_>>()});
        for fetched in [
            stonework_jwks(Fetched::Failed("timeout".into())),
            stonework_jwks(jwks_answer(&other_kids)),
            stonework_jwks(Fetched::Answer {
                status: 404,
                body: vectors["jwks"].to_string().into_bytes(),
            }),
            stonework_jwks(Fetched::Answer {
                status: 200,
                body: b"<html>".to_vec(),
            }),
            Vec::new(),
        ] {
            let got = agent_card_signature(200, &body, &fetched);
            assert_eq!(got, failed_observation(WHY_NONE_VERIFIES), "{fetched:?}");
        }
    }

    #[test]
    fn a_card_with_flipped_signatures_does_not_verify() {
        let vectors = signed_vectors();
        let negative = &vectors["negative_cases"][0];
        assert_eq!(negative["id"], "flip_signature_byte");
        let body = negative["card"].to_string().into_bytes();
        let fetched = stonework_jwks(jwks_answer(&vectors["jwks"]));
        let got = agent_card_signature(200, &body, &fetched);
        assert_eq!(got, failed_observation(WHY_NONE_VERIFIES));
    }

    /// An Ed25519 test key (seed `[seed; 32]`) as a public JWK and a signing key.
    fn ed25519_key(kid: &str, seed: u8) -> (Value, jsonwebtoken::EncodingKey) {
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        use ed25519_dalek::pkcs8::EncodePrivateKey;
        let key = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
        let x = URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes());
        let jwk = json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig"});
        let der = key.to_pkcs8_der().unwrap();
        (jwk, jsonwebtoken::EncodingKey::from_ed_der(der.as_bytes()))
    }

    fn plain_card() -> Value {
        json!({"name": "Witnessed Agent", "description": "d", "version": "1",
            "capabilities": {"streaming": false},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "S", "description": "D", "tags": ["t"]}]})
    }

    fn signed(card: &Value, header: &str, key: &jsonwebtoken::EncodingKey) -> Value {
        // The payload leaves `signatures` out, so a second entry signs the same bytes.
        let entry = sign_entry(card, Profile::Sdk, header, key, JwsAlg::EdDSA).unwrap();
        with_signature(card, entry)
    }

    #[test]
    fn the_first_verifying_entry_wins_and_the_header_is_the_first_entrys() {
        let (jwk, key) = ed25519_key("k1", 7);
        let jku = "https://agent.example/jwks.json";
        // Entry 0 lacks typ (skipped by a2a-js, not fetched); entry 1 verifies.
        let no_typ = r#"{"alg":"EdDSA","kid":"k1","jku":"https://skipped.example/x"}"#;
        let good = format!(r#"{{"alg":"EdDSA","typ":"JOSE","kid":"k1","jku":"{jku}"}}"#);
        let card = signed(&signed(&plain_card(), no_typ, &key), &good, &key);
        let body = card.to_string().into_bytes();
        assert_eq!(agent_card_jkus(&body), [jku]);
        let fetched = vec![(jku.to_string(), jwks_answer(&json!({"keys": [jwk]})))];
        let got = agent_card_signature(200, &body, &fetched);
        assert_eq!(got["verified"], "true");
        assert_eq!(got["jku"], "https://skipped.example/x");
        assert_eq!(
            (&got["kid"], &got["alg"], &got["signatures"]),
            (&json!("k1"), &json!("EdDSA"), &json!("2"))
        );
        assert!(got.get("why").is_none());
        let payload = canonicalize_card(&plain_card(), Profile::Sdk)
            .unwrap()
            .bytes;
        assert_eq!(got["canonical_sha256"], sha256_hex(payload));
    }

    #[test]
    fn a_card_changed_after_signing_does_not_verify() {
        let (jwk, key) = ed25519_key("k1", 7);
        let jku = "https://agent.example/jwks.json";
        let header = format!(r#"{{"alg":"EdDSA","typ":"JOSE","kid":"k1","jku":"{jku}"}}"#);
        let mut card = signed(&plain_card(), &header, &key);
        card["description"] = "changed".into();
        let fetched = vec![(jku.to_string(), jwks_answer(&json!({"keys": [jwk]})))];
        let got = agent_card_signature(200, card.to_string().as_bytes(), &fetched);
        assert_eq!(got["verified"], "false");
        assert_eq!(got["why"], WHY_NONE_VERIFIES);
    }

    #[test]
    fn header_members_go_through_js_string_and_jkus_are_deduplicated() {
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let entry =
            |header: &str| json!({"protected": URL_SAFE_NO_PAD.encode(header), "signature": "AA"});
        let card = json!({"signatures": [
            entry(r#"{"alg":"ES256","typ":"JOSE","kid":7,"jku":"https://a.example/j"}"#),
            entry(r#"{"alg":"ES256","typ":"JOSE","kid":"k","jku":"https://a.example/j"}"#),
            entry(r#"{"alg":"ES256","typ":"JOSE","kid":"k","jku":"https://b.example/j"}"#),
            entry(r#"{"alg":"ES256","typ":"JOSE","kid":"k"}"#),
            entry(r#"{"alg":"ES256","typ":"","kid":"k","jku":"https://c.example/j"}"#),
        ]});
        let body = card.to_string().into_bytes();
        assert_eq!(
            agent_card_jkus(&body),
            ["https://a.example/j", "https://b.example/j"]
        );
        let got = agent_card_signature(200, &body, &[]);
        assert_eq!(
            (&got["kid"], &got["alg"], &got["signatures"]),
            (&json!("7"), &json!("ES256"), &json!("5"))
        );
        assert_eq!(got["why"], WHY_NONE_VERIFIES);
        // An unreadable first header reads as empty members.
        let unreadable = json!({"signatures": [{"protected": "%%%", "signature": "AA"}]});
        let got = agent_card_signature(200, unreadable.to_string().as_bytes(), &[]);
        assert_eq!(
            (&got["kid"], &got["alg"], &got["jku"]),
            (&json!(""), &json!(""), &json!(""))
        );
    }

    #[test]
    fn a_signed_card_without_a_canonical_form_says_why() {
        let card = json!({"capabilities": {"streaming": "yes"}, "signatures": [{"protected": "e30", "signature": "AA"}]});
        let got = agent_card_signature(200, card.to_string().as_bytes(), &[]);
        assert_eq!(got["canonical_sha256"], "");
        assert_eq!(got["verified"], "false");
        assert!(
            got["why"]
                .as_str()
                .unwrap()
                .starts_with("invalid card: wrong scalar type"),
            "{got}"
        );
    }

    #[test]
    fn jku_fetches_are_capped() {
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let entries: Vec<Value> = (0..10)
            .map(|i| {
                let header = format!(
                    r#"{{"alg":"ES256","typ":"JOSE","kid":"k","jku":"https://{i}.example/j"}}"#
                );
                json!({"protected": URL_SAFE_NO_PAD.encode(header), "signature": "AA"})
            })
            .collect();
        let body = json!({"signatures": entries}).to_string().into_bytes();
        assert_eq!(agent_card_jkus(&body).len(), MAX_JKU_FETCHES);
    }
}
