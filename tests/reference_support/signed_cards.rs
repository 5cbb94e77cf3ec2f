//! Generated signed Agent Cards for the oracle (conduct-walk.md §4.3): card shapes that stress
//! the two payload forms, each signed over each form; then signature, key and JWKS variations
//! over a plain card (wrong key, several entries, other algorithms, unusable keys, unreadable
//! headers, JWKS 404/500/not JSON/no such kid, a `jku` on another host), and the two JWKS cases
//! where our record may say "not fetched" while the reference's does not (§4.3 C.1: a redirect,
//! a body over our cap).
//!
//! Payloads: `served-rfc8785` from our `served_form` (the oracle judges it: a card signed over a
//! wrong form verifies for us and not for the reference), `a2a-sdk-proto` from a2a-sdk 1.3.0
//! itself ([`super::SdkCanonicaliser`]), never from our SDK profile.

use super::{SdkCanonicaliser, SdkForm};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use conduct_walker::card_signature::signing::es256_public_jwk;
use conduct_walker::sandbox::Behaviour;
use p256::ecdsa::SigningKey;
use p256::ecdsa::signature::Signer;
use serde_json::{Value, json};

/// The kid of the card key, and of a second key some JWKS also serve.
pub const KID: &str = "oracle-es256-1";
pub const KID2: &str = "oracle-es256-2";

/// Published test scalars, never real keys.
fn key(byte: u8) -> SigningKey {
    SigningKey::from_slice(&[byte; 32]).expect("a valid P-256 scalar")
}

/// What a route answers.
#[derive(Debug, Clone)]
pub enum Route {
    Body {
        status: u16,
        content_type: &'static str,
        body: Vec<u8>,
    },
    Redirect {
        status: u16,
        location: String,
    },
}

impl Route {
    fn json(v: &Value) -> Route {
        Route::Body {
            status: 200,
            content_type: "application/json",
            body: serde_json::to_vec(v).expect("JSON"),
        }
    }

    fn status(status: u16) -> Route {
        Route::Body {
            status,
            content_type: "application/json",
            body: br#"{"error":"no keys here"}"#.to_vec(),
        }
    }
}

/// The three hosts a case may name: the agent (`own`), the same server under another name
/// (`alias`, `localhost`) and another server (`foreign`, 127.0.0.2).
#[derive(Debug, Clone)]
pub struct Hosts {
    pub own: String,
    pub alias: String,
    pub foreign: String,
}

/// How a case's records must compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    Identical,
    /// §4.3 C.1: our `jwks_status` is this (a redirect's 3xx, or 0 for a body over the cap),
    /// the JWKS "not fetched"; everything outside the signature block and its lines identical.
    JwksDivergence(u16),
    /// The reference crashes on this card and writes no record (§4.3 C.6, §8.3 item 23); ours
    /// writes one whose served form is not reproduced for a lone surrogate.
    ReferenceCrashes,
}

/// One generated card and everything served with it.
#[derive(Debug, Clone)]
pub struct SignedCase {
    pub name: String,
    pub card: Vec<u8>,
    /// Paths on the agent's server (besides the card), then on the foreign server.
    pub own_routes: Vec<(String, Route)>,
    pub foreign_routes: Vec<(String, Route)>,
    pub mode: &'static str,
    pub privacy: &'static str,
    pub expect: Expect,
    /// What the reference's block must say in `verified` (checks the case does what it claims).
    pub reference_verified: Option<Value>,
}

/// A card shape: the card without signatures as text, built from the sandbox card.
struct Shape {
    name: &'static str,
    text: String,
}

/// The sandbox's honest card at `origin` with raw `members` (`"key":value` texts) appended.
fn card_text(origin: &str, members: &[&str]) -> String {
    let card = Behaviour::default().card(origin);
    let mut text = serde_json::to_string(&card).expect("card JSON");
    text.pop();
    for m in members {
        text.push(',');
        text.push_str(m);
    }
    text.push('}');
    text
}

/// `text` (an object) with `"signatures": <signatures>` appended.
fn with_signatures(text: &str, signatures: &str) -> Vec<u8> {
    let mut t = text.to_string();
    t.pop();
    t.push_str(",\"signatures\":");
    t.push_str(signatures);
    t.push('}');
    t.into_bytes()
}

fn shapes(origin: &str) -> Vec<Shape> {
    let own = |members: &[&str]| card_text(origin, members);
    let mut with_params = Behaviour::default().card(origin);
    with_params["capabilities"]["extensions"][0]["params"]["weights"] =
        serde_json::from_str("[1.5, 100.0, 2.5e-5, 1e22, 0.30000000000000004, -0.0, 7]").unwrap();
    let mut snake = Behaviour::default().card(origin);
    let modes = snake
        .as_object_mut()
        .unwrap()
        .remove("defaultInputModes")
        .unwrap();
    snake["default_input_modes"] = modes;
    let mut empties = Behaviour::default().card(origin);
    empties["iconUrl"] = json!("");
    empties["provider"] = json!({});
    empties["skills"][0]["examples"] = json!([]);
    let mut wrong_type = Behaviour::default().card(origin);
    wrong_type["version"] = json!(5);
    let mut string_capabilities = Behaviour::default().card(origin);
    string_capabilities["capabilities"] = json!("none");
    vec![
        Shape {
            name: "plain",
            text: own(&[]),
        },
        Shape {
            name: "floats-unknown-member",
            text: own(&[
                r#""x-metrics":{"rate":1.5,"ratio":0.1,"big":1e21,"bigger":1e22,"tiny":1e-7,"small":0.000001,"neg_zero":-0.0,"hundred":100.0,"exp":1E+2,"pi":3.141592653589793}"#,
            ]),
        },
        Shape {
            name: "floats-in-params",
            text: serde_json::to_string(&with_params).unwrap(),
        },
        Shape {
            name: "big-integers",
            text: own(&[
                r#""x-ints":{"max_safe":9007199254740991,"above":9007199254740993,"neg":-9007199254740993,"u64":12345678901234567890,"wide":123456789012345678901234567890}"#,
            ]),
        },
        Shape {
            name: "integer-beyond-double",
            text: own(&[&format!("\"x-huge\":1{}", "0".repeat(309))]),
        },
        Shape {
            name: "float-infinite",
            text: own(&[r#""x-inf":1e400"#]),
        },
        Shape {
            name: "nan",
            text: own(&[r#""x-nan":NaN"#]),
        },
        Shape {
            name: "lone-surrogate-unknown-member",
            text: own(&[r#""x-note":"half \ud800 a pair""#]),
        },
        Shape {
            name: "lone-surrogate-description",
            text: {
                let mut c = Behaviour::default().card(origin);
                c["description"] = json!("@@");
                serde_json::to_string(&c)
                    .unwrap()
                    .replace("\"@@\"", r#""broken \udfff text""#)
            },
        },
        Shape {
            name: "utf16-key-order",
            text: own(&[
                "\"x-keys\":{\"\u{1F600}\":1,\"\u{FFFF}\":2,\"\u{E000}\":3,\"z\":4,\"é\":5}",
            ]),
        },
        Shape {
            name: "escapes",
            text: own(&[
                r#""x-text":"tab\t nl\n cr\r ctl\u0001\u001f del\u007f slash\/ quote\" bs\\ ls\u2028 ps\u2029 nbsp\u00a0""#,
            ]),
        },
        Shape {
            name: "duplicate-names",
            text: own(&[
                r#""x-dup":1"#,
                r#""version":"9.9.9""#,
                r#""x-dup":{"b":2,"a":1}"#,
            ]),
        },
        Shape {
            name: "snake-case-member",
            text: serde_json::to_string(&snake).unwrap(),
        },
        Shape {
            name: "empty-values",
            text: serde_json::to_string(&empties).unwrap(),
        },
        Shape {
            name: "sdk-refuses-version-number",
            text: serde_json::to_string(&wrong_type).unwrap(),
        },
        Shape {
            name: "capabilities-a-string",
            text: serde_json::to_string(&string_capabilities).unwrap(),
        },
        Shape {
            name: "oneof-both-spellings",
            text: own(&[
                r#""securitySchemes":{"k":{"apiKeySecurityScheme":{"name":"x","location":"header"},"api_key_security_scheme":{"name":"y","location":"query"}}}"#,
            ]),
        },
        Shape {
            name: "only-unknown-members",
            text: r#"{"x-only":1,"x-other":"no AgentCard member at all"}"#.to_string(),
        },
    ]
}

/// The served form of a bare card text (ours; `None` when not reproducible).
fn served_form(text: &str) -> Option<Vec<u8>> {
    let doc =
        conduct_walker::json::read(text.as_bytes(), conduct_walker::json::ReadOptions::LENIENT)
            .ok()?;
    conduct_walker::card_signature::served_form::served_rfc8785_without_signatures(doc.root())
        .ok()
        .map(String::into_bytes)
}

fn b64(bytes: impl AsRef<[u8]>) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// An ES256 signature (base64url r||s) over `protected.b64(payload)`.
fn es256(key: &SigningKey, protected_b64: &str, payload: &[u8]) -> String {
    let input = format!("{protected_b64}.{}", b64(payload));
    let sig: p256::ecdsa::Signature = key.sign(input.as_bytes());
    b64(sig.to_bytes())
}

fn header(alg: &str, kid: &str, jku: &str) -> String {
    format!(r#"{{"alg":"{alg}","kid":"{kid}","jku":"{jku}"}}"#)
}

/// A signatures entry `{"protected","signature"}` as text.
fn entry(protected_json: &str, signature: &str) -> String {
    format!(
        r#"{{"protected":"{}","signature":"{signature}"}}"#,
        b64(protected_json)
    )
}

/// An ES256 entry over `payload` with `key`, header naming `kid` and `jku`.
fn es256_entry(key: &SigningKey, kid: &str, jku: &str, payload: &[u8]) -> String {
    let protected = header("ES256", kid, jku);
    entry(&protected, &es256(key, &b64(&protected), payload))
}

/// Every case, for an agent at `hosts.own`. Starts one a2a-sdk process for the SDK forms.
pub fn cases(hosts: &Hosts) -> Vec<SignedCase> {
    let good = key(0x11);
    let other = key(0x22);
    let second = key(0x33);
    let jwk = es256_public_jwk(&good, KID);
    let jwks = json!({"keys": [jwk.clone()]});
    let shapes = shapes(&hosts.own);
    let mut sdk = SdkCanonicaliser::start(
        shapes
            .iter()
            .map(|s| s.text.clone().into_bytes())
            .collect::<Vec<_>>()
            .into_iter(),
    );
    let sdk_forms: Vec<Option<Vec<u8>>> = shapes
        .iter()
        .map(|_| match sdk.next_form() {
            SdkForm::Form(b) => Some(b),
            _ => None,
        })
        .collect();
    drop(sdk);

    let mut out = Vec::new();
    let mut n = 0usize;
    // Each case serves its JWKS at its own path, so a stale answer cannot pass for another's.
    let mut jku_path = |tag: &str| {
        n += 1;
        format!("/keys/{n:03}-{tag}.json")
    };
    let base_case = |name: String, card: Vec<u8>| SignedCase {
        name,
        card,
        own_routes: Vec::new(),
        foreign_routes: Vec::new(),
        mode: "mcp",
        privacy: "full",
        expect: Expect::Identical,
        reference_verified: None,
    };

    // 1. Every shape signed over each form that exists (ours for served, the SDK's for sdk).
    for (shape, sdk_form) in shapes.iter().zip(&sdk_forms) {
        let served = served_form(&shape.text);
        let forms: [(&str, Option<&Vec<u8>>); 2] =
            [("served", served.as_ref()), ("sdk", sdk_form.as_ref())];
        for (form, payload) in forms {
            let path = jku_path(shape.name);
            let jku = format!("{}{path}", hosts.own);
            // A form that does not exist is signed over the other bytes: what matters is that
            // both walkers record the same gap.
            let bytes = payload.cloned().unwrap_or_else(|| b"no such form".to_vec());
            let card = with_signatures(
                &shape.text,
                &format!("[{}]", es256_entry(&good, KID, &jku, &bytes)),
            );
            let mut c = base_case(format!("{}/{form}", shape.name), card);
            c.own_routes.push((path, Route::json(&jwks)));
            if payload.is_some() && shape.name != "lone-surrogate-key" {
                c.reference_verified = Some(json!(true));
            }
            out.push(c);
        }
    }
    // A lone surrogate in a member name: the reference crashes (§4.3 C.6).
    {
        let text = card_text(&hosts.own, &[r#""x-\udc00-key":1"#]);
        let path = jku_path("lone-surrogate-key");
        let jku = format!("{}{path}", hosts.own);
        let card = with_signatures(
            &text,
            &format!("[{}]", es256_entry(&good, KID, &jku, b"{}")),
        );
        let mut c = base_case("lone-surrogate-in-a-key".into(), card);
        c.own_routes.push((path, Route::json(&jwks)));
        c.expect = Expect::ReferenceCrashes;
        out.push(c);
    }

    // 2. Variations over the plain card.
    let plain = &shapes[0].text;
    let served = served_form(plain).expect("the plain card has a served form");
    let sdk_plain = sdk_forms[0]
        .clone()
        .expect("the plain card has an SDK form");
    // One case: `entries(jku)` gives the signatures array text; the JWKS route at the own host.
    let mut simple = |name: &str,
                      route: Route,
                      verified: Option<Value>,
                      entries: &dyn Fn(&str) -> String|
     -> SignedCase {
        let path = jku_path(name);
        let jku = format!("{}{path}", hosts.own);
        let mut c = base_case(name.to_string(), with_signatures(plain, &entries(&jku)));
        c.own_routes.push((path, route));
        c.reference_verified = verified;
        c
    };
    let one = |e: String| format!("[{e}]");
    let good_served = |jku: &str| es256_entry(&good, KID, jku, &served);
    let good_sdk = |jku: &str| es256_entry(&good, KID, jku, &sdk_plain);

    out.push(simple(
        "wrong-key-served",
        Route::json(&jwks),
        Some(json!(false)),
        &|j| one(es256_entry(&other, KID, j, &served)),
    ));
    out.push(simple(
        "wrong-key-sdk",
        Route::json(&jwks),
        Some(json!(false)),
        &|j| one(es256_entry(&other, KID, j, &sdk_plain)),
    ));
    out.push(simple(
        "jwks-404",
        Route::status(404),
        Some(Value::Null),
        &|j| one(good_served(j)),
    ));
    out.push(simple(
        "jwks-500",
        Route::status(500),
        Some(Value::Null),
        &|j| one(good_served(j)),
    ));
    out.push(simple(
        "jwks-not-json",
        Route::Body {
            status: 200,
            content_type: "text/html",
            body: b"<html>keys</html>".to_vec(),
        },
        Some(Value::Null),
        &|j| one(good_served(j)),
    ));
    out.push(simple(
        "jwks-utf8-bom",
        Route::Body {
            status: 200,
            content_type: "application/json",
            body: [
                b"\xef\xbb\xbf".as_slice(),
                &serde_json::to_vec(&jwks).unwrap(),
            ]
            .concat(),
        },
        Some(Value::Null),
        &|j| one(good_served(j)),
    ));
    out.push(simple(
        "jwks-empty-body",
        Route::Body {
            status: 200,
            content_type: "application/json",
            body: Vec::new(),
        },
        Some(Value::Null),
        &|j| one(good_served(j)),
    ));
    out.push(simple(
        "jwks-an-array",
        Route::json(&json!([jwk])),
        Some(Value::Null),
        &|j| one(good_served(j)),
    ));
    out.push(simple(
        "jwks-keys-not-an-array",
        Route::json(&json!({"keys": {"0": jwk}})),
        Some(Value::Null),
        &|j| one(good_served(j)),
    ));
    out.push(simple(
        "jwks-no-such-kid",
        Route::json(&json!({"keys": [es256_public_jwk(&good, "another-kid")]})),
        Some(Value::Null),
        &|j| one(good_served(j)),
    ));
    {
        let mut keyless = jwk.clone();
        keyless.as_object_mut().unwrap().remove("kid");
        out.push(simple(
            "header-without-kid-matches-keyless-jwk",
            Route::json(&json!({"keys": [keyless.clone()]})),
            Some(json!(true)),
            &|j| {
                let protected = format!(r#"{{"alg":"ES256","jku":"{j}"}}"#);
                one(entry(&protected, &es256(&good, &b64(&protected), &served)))
            },
        ));
        out.push(simple(
            "kid-a-number-matches-keyless-jwk",
            Route::json(&json!({"keys": [keyless.clone()]})),
            Some(json!(true)),
            &|j| {
                let protected = format!(r#"{{"alg":"ES256","kid":7,"jku":"{j}"}}"#);
                one(entry(&protected, &es256(&good, &b64(&protected), &served)))
            },
        ));
        out.push(simple(
            "kid-set-keyless-jwk-only",
            Route::json(&json!({"keys": [keyless]})),
            Some(Value::Null),
            &|j| one(good_served(j)),
        ));
    }
    out.push(simple(
        "duplicate-kid-first-key-wrong",
        Route::json(&json!({"keys": [es256_public_jwk(&other, KID), jwk]})),
        Some(json!(false)),
        &|j| one(good_served(j)),
    ));
    out.push(simple(
        "non-objects-before-the-key",
        Route::json(&json!({"keys": [5, "x", null, [], jwk]})),
        Some(json!(true)),
        &|j| one(good_served(j)),
    ));
    out.push(simple(
        "jwks-with-other-members",
        Route::json(&json!({"keys": [jwk], "x-note": "extra", "n": 1.5})),
        Some(json!(true)),
        &|j| one(good_served(j)),
    ));

    // Several entries.
    let two_keys = json!({"keys": [jwk, es256_public_jwk(&second, KID2)]});
    out.push(simple(
        "entries-sdk-then-served",
        Route::json(&jwks),
        Some(json!(true)),
        &|j| format!("[{},{}]", good_sdk(j), good_served(j)),
    ));
    out.push(simple(
        "entries-wrong-then-good",
        Route::json(&jwks),
        Some(json!(true)),
        &|j| format!("[{},{}]", es256_entry(&other, KID, j, &served), good_sdk(j)),
    ));
    out.push(simple(
        "entries-two-keys",
        Route::json(&two_keys),
        Some(json!(true)),
        &|j| {
            format!(
                "[{},{}]",
                good_served(j),
                es256_entry(&second, KID2, j, &sdk_plain)
            )
        },
    ));
    // Only the first entry's header names the jku (§4.3 B, C): an unreadable first entry
    // means nothing is fetched, whatever the second says.
    out.push(simple(
        "entries-unreadable-then-good",
        Route::json(&jwks),
        Some(Value::Null),
        &|j| {
            format!(
                r#"[{{"protected":"!!!","signature":"AA"}},{}]"#,
                good_served(j)
            )
        },
    ));
    out.push(simple(
        "entries-good-then-unreadable",
        Route::json(&jwks),
        Some(json!(true)),
        &|j| {
            format!(
                r#"[{},{{"protected":"!!!","signature":"AA"}}]"#,
                good_served(j)
            )
        },
    ));
    out.push(simple(
        "entries-rs256-then-good",
        Route::json(&jwks),
        Some(json!(true)),
        &|j| {
            format!(
                "[{},{}]",
                entry(&header("RS256", KID, j), "c2lnbmF0dXJl"),
                good_served(j)
            )
        },
    ));
    out.push(simple(
        "entries-all-bad",
        Route::json(&two_keys),
        Some(json!(false)),
        &|j| {
            format!(
                "[{},{},{}]",
                es256_entry(&other, KID, j, &served),
                es256_entry(&other, KID2, j, &sdk_plain),
                es256_entry(&good, KID, j, b"something else")
            )
        },
    ));
    out.push(simple(
        "entries-second-names-another-jku",
        Route::json(&jwks),
        Some(json!(true)),
        &|j| {
            // Only the first entry's jku is fetched (§4.3 C).
            let elsewhere = format!("{}/keys/never-fetched.json", hosts.own);
            format!(
                "[{},{}]",
                good_served(j),
                es256_entry(&second, KID2, &elsewhere, &served)
            )
        },
    ));

    // Other algorithms, and headers that name none.
    for (name, header_json) in [
        ("alg-rs256", r#"{"alg":"RS256","kid":"K","jku":"J"}"#),
        ("alg-eddsa", r#"{"alg":"EdDSA","kid":"K","jku":"J"}"#),
        ("alg-hs256", r#"{"alg":"HS256","kid":"K","jku":"J"}"#),
        ("alg-none", r#"{"alg":"none","kid":"K","jku":"J"}"#),
        ("alg-es384", r#"{"alg":"ES384","kid":"K","jku":"J"}"#),
        (
            "alg-es256-lower-case",
            r#"{"alg":"es256","kid":"K","jku":"J"}"#,
        ),
        ("alg-missing", r#"{"kid":"K","jku":"J"}"#),
        ("alg-a-number", r#"{"alg":256,"kid":"K","jku":"J"}"#),
        ("alg-null", r#"{"alg":null,"kid":"K","jku":"J"}"#),
        ("alg-a-list", r#"{"alg":["ES256"],"kid":"K","jku":"J"}"#),
    ] {
        out.push(simple(name, Route::json(&jwks), Some(Value::Null), &|j| {
            let h = header_json
                .replace("\"K\"", &format!("\"{KID}\""))
                .replace("\"J\"", &format!("\"{j}\""));
            one(entry(&h, &es256(&good, &b64(&h), &served)))
        }));
    }
    {
        // An HS256 entry "signed" with the public key's bytes: never checked (ES256 only).
        out.push(simple(
            "alg-hs256-key-confusion",
            Route::json(&jwks),
            Some(Value::Null),
            &|j| {
                let h = header("HS256", KID, j);
                one(entry(&h, &b64([7u8; 32])))
            },
        ));
    }

    // jku values that are not fetched (§4.3 B), and one not https.
    for (name, jku_json) in [
        (
            "jku-http",
            Some(format!(
                "\"{}\"",
                hosts.own.replacen("https://", "http://", 1)
            )),
        ),
        (
            "jku-upper-case-scheme",
            Some(format!(
                "\"{}\"",
                hosts.own.replacen("https://", "HTTPS://", 1)
            )),
        ),
        ("jku-empty", Some("\"\"".to_string())),
        ("jku-a-number", Some("443".to_string())),
        ("jku-missing", None),
    ] {
        let protected = match &jku_json {
            Some(j) => format!(r#"{{"alg":"ES256","kid":"{KID}","jku":{j}}}"#),
            None => format!(r#"{{"alg":"ES256","kid":"{KID}"}}"#),
        };
        let card = with_signatures(
            plain,
            &one(entry(&protected, &es256(&good, &b64(&protected), &served))),
        );
        let mut c = base_case(name.into(), card);
        c.reference_verified = Some(Value::Null);
        out.push(c);
    }

    // jku texts the reference's urllib cannot send (issue 42): a space, a control character
    // or a non-ASCII character in the path or query make it refuse the request before any
    // byte leaves, so its record says "not fetched (status 0)"; ours must too. Each JWKS is
    // served where a WHATWG URL parser would send the request (percent-encoded, tab removed),
    // so a walker that sends it anyway verifies the card and differs. Whitespace at either end
    // (Unicode whitespace included) is stripped by urllib and the rest sent.
    for (name, tail, wire_tail, sent) in [
        ("jku-non-ascii-path", "-\u{e9}.json", "-%C3%A9.json", false),
        ("jku-space-in-path", " two.json", "%20two.json", false),
        ("jku-tab-in-path", "\t.json", ".json", false),
        ("jku-control-in-path", "\u{1}.json", "%01.json", false),
        ("jku-del-in-path", "\u{7f}.json", "%7F.json", false),
        (
            "jku-non-ascii-query",
            ".json?v=\u{e9}",
            ".json?v=%C3%A9",
            false,
        ),
        ("jku-trailing-no-break-space", ".json\u{a0}", ".json", true),
        ("jku-trailing-space", ".json ", ".json", true),
    ] {
        let verified = Some(if sent { json!(true) } else { Value::Null });
        let mut c = simple(name, Route::json(&jwks), verified, &|j| {
            let jku = format!("{}{tail}", j.trim_end_matches(".json"));
            let protected = json!({"alg": "ES256", "kid": KID, "jku": jku}).to_string();
            one(entry(&protected, &es256(&good, &b64(&protected), &served)))
        });
        let (path, _) = &mut c.own_routes[0];
        *path = format!("{}{wire_tail}", path.trim_end_matches(".json"));
        out.push(c);
    }

    // Keys and signatures the ES256 check cannot use: skipped silently, or tried and failed.
    let mut variant = |name: &str, f: &dyn Fn(&mut Value)| {
        let mut k = jwk.clone();
        f(&mut k);
        simple(
            name,
            Route::json(&json!({"keys": [k]})),
            Some(Value::Null),
            &|j| one(good_served(j)),
        )
    };
    out.push(variant("jwk-kty-rsa", &|k| k["kty"] = json!("RSA")));
    out.push(variant("jwk-crv-p384", &|k| k["crv"] = json!("P-384")));
    out.push(variant("jwk-missing-y", &|k| {
        k.as_object_mut().unwrap().remove("y");
    }));
    out.push(variant("jwk-point-not-on-curve", &|k| {
        k["y"] = json!(b64([1u8; 32]))
    }));
    out.push(variant("jwk-x-31-bytes", &|k| {
        k["x"] = json!(b64([9u8; 31]))
    }));
    out.push(variant("jwk-x-not-base64url", &|k| k["x"] = json!("***")));
    for (name, verified, make) in [
        (
            "signature-63-bytes",
            Value::Null,
            Box::new(|s: String| {
                let raw = URL_SAFE_NO_PAD.decode(s).unwrap();
                b64(&raw[..63])
            }) as Box<dyn Fn(String) -> String>,
        ),
        (
            "signature-r-zero",
            json!(false),
            Box::new(|s: String| {
                let mut raw = URL_SAFE_NO_PAD.decode(s).unwrap();
                raw[..32].fill(0);
                b64(&raw)
            }),
        ),
        (
            "signature-s-above-order",
            json!(false),
            Box::new(|s: String| {
                let mut raw = URL_SAFE_NO_PAD.decode(s).unwrap();
                raw[32..].fill(0xff);
                b64(&raw)
            }),
        ),
        (
            "signature-not-base64url",
            Value::Null,
            Box::new(|_| "%%%not base64%%%".to_string()),
        ),
        (
            "signature-padded-base64url",
            json!(true),
            Box::new(|s: String| format!("{s}==")),
        ),
    ] {
        out.push(simple(name, Route::json(&jwks), Some(verified), &|j| {
            let h = header("ES256", KID, j);
            let s = es256(&good, &b64(&h), &served);
            one(entry(&h, &make(s)))
        }));
    }
    out.push(simple(
        "signature-missing",
        Route::json(&jwks),
        Some(Value::Null),
        &|j| {
            one(format!(
                r#"{{"protected":"{}"}}"#,
                b64(header("ES256", KID, j))
            ))
        },
    ));
    out.push(simple(
        "signature-a-number",
        Route::json(&jwks),
        Some(Value::Null),
        &|j| {
            one(format!(
                r#"{{"protected":"{}","signature":64}}"#,
                b64(header("ES256", KID, j))
            ))
        },
    ));

    // Protected headers.
    out.push(simple(
        "protected-not-an-object",
        Route::json(&jwks),
        Some(Value::Null),
        &|j| {
            format!(
                r#"[{{"protected":"{}","signature":"AA"}},{}]"#,
                b64("[1]"),
                good_served(j)
            )
        },
    ));
    out.push(simple(
        "protected-padded",
        Route::json(&jwks),
        Some(json!(true)),
        &|j| {
            let h = header("ES256", KID, j);
            let padded = URL_SAFE_NO_PAD.encode(&h) + "==";
            let s = es256(&good, &padded, &served);
            one(format!(r#"{{"protected":"{padded}","signature":"{s}"}}"#))
        },
    ));
    out.push(simple(
        "protected-with-stray-characters",
        Route::json(&jwks),
        None,
        &|j| {
            // Python's lenient decoder drops characters outside the alphabet; the signing input
            // keeps them (the protected value as served).
            let h = header("ES256", KID, j);
            let b = b64(&h);
            let stray = format!("{}*{}", &b[..8], &b[8..]);
            let s = es256(&good, &stray, &served);
            one(format!(r#"{{"protected":"{stray}","signature":"{s}"}}"#))
        },
    ));
    out.push(simple(
        "protected-a-number",
        Route::json(&jwks),
        Some(Value::Null),
        &|_| one(r#"{"protected":5,"signature":"AA"}"#.to_string()),
    ));
    out.push(simple(
        "protected-missing",
        Route::json(&jwks),
        Some(Value::Null),
        &|_| one(r#"{"signature":"AA"}"#.to_string()),
    ));
    out.push(simple(
        "header-extra-members",
        Route::json(&jwks),
        Some(json!(true)),
        &|j| {
            let h = format!(
                r#"{{"typ":"JOSE","alg":"ES256","kid":"{KID}","jku":"{j}","crit":["x"],"x":1.5}}"#
            );
            one(entry(&h, &es256(&good, &b64(&h), &served)))
        },
    ));

    // `signatures` that are not a list of entries.
    for (name, sigs) in [
        (
            "signatures-an-object",
            r#"{"0":{"protected":"e30","signature":"AA"}}"#,
        ),
        ("signatures-empty", "[]"),
        ("signatures-null", "null"),
        (
            "signatures-first-not-an-object",
            r#"[5,{"protected":"e30","signature":"AA"}]"#,
        ),
        ("signatures-a-string", r#""eyJhbGciOiJFUzI1NiJ9..AA""#),
    ] {
        let mut c = base_case(name.into(), with_signatures(plain, sigs));
        c.reference_verified = Some(Value::Null);
        out.push(c);
    }

    // A jku on another host, and on this server under another name.
    {
        let path = jku_path("foreign");
        let jku = format!("{}{path}", hosts.foreign);
        let card = with_signatures(plain, &one(es256_entry(&good, KID, &jku, &served)));
        let mut c = base_case("foreign-jku-verifies".into(), card);
        c.foreign_routes.push((path, Route::json(&jwks)));
        c.reference_verified = Some(json!(true));
        out.push(c.clone());
        let path = jku_path("foreign-sdk");
        let jku = format!("{}{path}", hosts.foreign);
        let mut c = base_case(
            "foreign-jku-sdk-form-only".into(),
            with_signatures(plain, &one(es256_entry(&good, KID, &jku, &sdk_plain))),
        );
        c.foreign_routes.push((path, Route::json(&jwks)));
        c.reference_verified = Some(json!(true));
        out.push(c);
        let path = jku_path("foreign-wrong");
        let jku = format!("{}{path}", hosts.foreign);
        let mut c = base_case(
            "foreign-jku-wrong-key".into(),
            with_signatures(plain, &one(es256_entry(&other, KID, &jku, &served))),
        );
        c.foreign_routes.push((path, Route::json(&jwks)));
        c.reference_verified = Some(json!(false));
        out.push(c);
        let path = jku_path("foreign-404");
        let jku = format!("{}{path}", hosts.foreign);
        let mut c = base_case(
            "foreign-jku-404".into(),
            with_signatures(plain, &one(es256_entry(&good, KID, &jku, &served))),
        );
        c.foreign_routes.push((path, Route::status(404)));
        c.reference_verified = Some(Value::Null);
        out.push(c);
        let path = jku_path("alias");
        let jku = format!("{}{path}", hosts.alias);
        let mut c = base_case(
            "jku-same-server-other-name".into(),
            with_signatures(plain, &one(es256_entry(&good, KID, &jku, &served))),
        );
        c.own_routes.push((path, Route::json(&jwks)));
        c.reference_verified = Some(json!(true));
        out.push(c);
    }

    // Privacy modes and the a2a mode over a verifying card, and over a foreign one.
    for (name, privacy, mode, foreign) in [
        ("served-verifies-hash-only", "hash-only", "mcp", false),
        ("served-verifies-commitment", "commitment", "mcp", false),
        ("foreign-jku-hash-only", "hash-only", "mcp", true),
        ("served-verifies-a2a", "full", "a2a", false),
        ("sdk-verifies-a2a-commitment", "commitment", "a2a", false),
    ] {
        let path = jku_path(name);
        let host = if foreign { &hosts.foreign } else { &hosts.own };
        let jku = format!("{host}{path}");
        let payload = if name.starts_with("sdk") {
            &sdk_plain
        } else {
            &served
        };
        let mut c = base_case(
            name.into(),
            with_signatures(plain, &one(es256_entry(&good, KID, &jku, payload))),
        );
        if foreign {
            c.foreign_routes.push((path, Route::json(&jwks)));
        } else {
            c.own_routes.push((path, Route::json(&jwks)));
        }
        c.privacy = privacy;
        c.mode = mode;
        c.reference_verified = Some(json!(true));
        out.push(c);
    }

    // §4.3 C.1: where our record may say "not fetched" and the reference's does not.
    {
        let path = jku_path("redirect");
        let target = jku_path("redirect-target");
        let jku = format!("{}{path}", hosts.own);
        let mut c = base_case(
            "jwks-redirect".into(),
            with_signatures(plain, &one(es256_entry(&good, KID, &jku, &served))),
        );
        c.own_routes.push((
            path,
            Route::Redirect {
                status: 302,
                location: target.clone(),
            },
        ));
        c.own_routes.push((target, Route::json(&jwks)));
        c.expect = Expect::JwksDivergence(302);
        c.reference_verified = Some(json!(true));
        out.push(c);

        let path = jku_path("redirect-foreign");
        let target = jku_path("redirect-foreign-target");
        let jku = format!("{}{path}", hosts.own);
        let mut c = base_case(
            "jwks-redirect-to-another-host".into(),
            with_signatures(plain, &one(es256_entry(&good, KID, &jku, &served))),
        );
        c.own_routes.push((
            path,
            Route::Redirect {
                status: 307,
                location: format!("{}{target}", hosts.foreign),
            },
        ));
        c.foreign_routes.push((target, Route::json(&jwks)));
        c.expect = Expect::JwksDivergence(307);
        c.reference_verified = Some(json!(true));
        out.push(c);

        // The card key first, then keys enough to pass 1 MiB.
        let mut keys = vec![jwk.clone()];
        let filler = es256_public_jwk(&other, "filler");
        let per = serde_json::to_vec(&filler).unwrap().len() + 1;
        keys.extend(std::iter::repeat_n(filler, (1536 * 1024) / per));
        let path = jku_path("oversized");
        let jku = format!("{}{path}", hosts.own);
        let mut c = base_case(
            "jwks-over-our-body-cap".into(),
            with_signatures(plain, &one(es256_entry(&good, KID, &jku, &served))),
        );
        c.own_routes
            .push((path, Route::json(&json!({"keys": keys}))));
        c.expect = Expect::JwksDivergence(0);
        c.reference_verified = Some(json!(true));
        out.push(c);
    }
    out
}
