//! A walked signed card end to end (conduct-walk.md §4.3, reference 1.5.0): the JWKS is fetched
//! once, between n2 and n3, through the walk's transport; the record carries the reference's
//! block and attribution lines; conduct-walker's own, richer check is kept beside the record in
//! the store and shown on the record page; nothing changes an assertion. Real HTTPS on loopback,
//! real ES256 signatures, a real SQLite file.

mod common;

use conduct_walker::card_signature::walk_block::{
    ATTRIBUTION_NONE_VERIFIES, ATTRIBUTION_SDK_FORM_ONLY, REASON_NONE_VERIFIES,
};
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::pipeline::{JobReport, Pipeline, PipelineConfig, WalkJob};
use conduct_walker::sandbox::{
    Behaviour, CardSigning, HttpsServer, Req, Resp, SANDBOX_CARD_KID, SANDBOX_JWKS_PATH,
    SandboxAgent, SandboxCa, handler, sandbox_jwks,
};
use conduct_walker::store::Store;
use conduct_walker::walk::{Mode, Wire};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

struct World {
    _dir: tempfile::TempDir,
    db: std::path::PathBuf,
    pipeline: Pipeline,
}

fn world(ca: &SandboxCa, origins: &[String]) -> World {
    let dir = tempfile::tempdir().unwrap();
    let mut policy = NetPolicy::new(true);
    for o in origins {
        policy.allow_url(o);
    }
    let mut cfg = TransportConfig::new(policy);
    cfg.extra_roots = vec![ca.cert_der()];
    let db = dir.path().join("walker.db");
    let pipeline = Pipeline::new(PipelineConfig {
        transport: Transport::new(cfg).unwrap(),
        store_path: db.clone(),
        signing: Some((ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]), None)),
        clock: Arc::new(common::fixed_clock()),
        intake_override: None,
        file_extra_walks: false,
    })
    .unwrap();
    World {
        _dir: dir,
        db,
        pipeline,
    }
}

async fn walk(w: &World, origin: &str, mode: Mode) -> JobReport {
    let request = common::request(origin, None, mode, Wire::V1_0);
    w.pipeline
        .run_job(&WalkJob {
            request,
            submit: false,
            bind_task: None,
        })
        .await
        .unwrap()
}

async fn signed_agent(ca: &SandboxCa, signing: CardSigning) -> SandboxAgent {
    SandboxAgent::start(
        ca,
        Behaviour {
            card_signing: Some(signing),
            ..Behaviour::default()
        },
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_signing_form_gets_the_reference_block_and_lines_and_the_verdict_stays() {
    let ca = SandboxCa::generate();
    let served = signed_agent(&ca, CardSigning::ServedForm).await;
    let sdk = signed_agent(&ca, CardSigning::SdkForm).await;
    let wrong = signed_agent(&ca, CardSigning::WrongKey).await;
    let w = world(&ca, &[served.origin(), sdk.origin(), wrong.origin()]);

    let r = walk(&w, &served.origin(), Mode::Mcp).await;
    assert!(
        r.outcome.verdict.ok,
        "a signature never changes the verdict"
    );
    let record = r.outcome.record();
    let block = &record["card_signature"];
    assert_eq!(block["verified"], json!(true), "{block}");
    assert_eq!(
        block["verified_reason"],
        "signature[0] verifies in served-rfc8785"
    );
    assert_eq!(block["covers_compensation"], json!(true));
    assert_eq!(block["jwks_status"], json!(200));
    assert_eq!(block["kid"], SANDBOX_CARD_KID);
    assert_eq!(block["jku_same_host"], json!(true));
    let jwks_bytes = serde_json::to_vec(&sandbox_jwks()).unwrap();
    assert_eq!(
        block["jwks_sha256"],
        json!(conduct_walker::digest::sha256_hex(&jwks_bytes))
    );
    assert_eq!(
        block["forms_reproduced"],
        json!(["served-rfc8785", "a2a-sdk-proto"])
    );
    assert_eq!(
        block["signatures"],
        json!([{"index": 0, "kid": SANDBOX_CARD_KID,
            "forms_tried": ["served-rfc8785", "a2a-sdk-proto"], "verified_in": ["served-rfc8785"]}])
    );
    let establishes = record["establishes"].as_array().unwrap();
    assert_eq!(
        establishes.last().unwrap(),
        &json!(format!(
            "that the card bytes were signed by the key served at its jku on the walked host (kid {SANDBOX_CARD_KID}): signature[0] verifies in served-rfc8785"
        ))
    );
    let dne: Vec<&str> = record["does_not_establish"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        !dne.iter().any(|l| l.contains("published this card")),
        "{dne:?}"
    );

    // Over the SDK form only: verified, and the compensation declaration is not covered.
    let r = walk(&w, &sdk.origin(), Mode::A2a).await;
    let record = r.outcome.record();
    assert_eq!(
        record["card_signature"]["verified_reason"],
        "signature[0] verifies in a2a-sdk-proto"
    );
    assert_eq!(
        record["card_signature"]["covers_compensation"],
        json!(false)
    );
    assert_eq!(
        record["does_not_establish"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        ATTRIBUTION_SDK_FORM_ONLY
    );

    // Another key: tried in both forms, none verifies.
    let r = walk(&w, &wrong.origin(), Mode::Mcp).await;
    assert!(r.outcome.verdict.ok);
    let record = r.outcome.record();
    assert_eq!(record["card_signature"]["verified"], json!(false));
    assert_eq!(
        record["card_signature"]["verified_reason"],
        REASON_NONE_VERIFIES
    );
    assert_eq!(
        record["does_not_establish"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        ATTRIBUTION_NONE_VERIFIES
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_own_check_is_kept_beside_the_record_and_shown_on_its_page() {
    let ca = SandboxCa::generate();
    let served = signed_agent(&ca, CardSigning::ServedForm).await;
    let honest = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let w = world(&ca, &[served.origin(), honest.origin()]);
    let signed = walk(&w, &served.origin(), Mode::Mcp).await;
    let unsigned = walk(&w, &honest.origin(), Mode::Mcp).await;
    // The richer check is not in the record's bytes.
    let record = signed.outcome.record();
    assert!(record["card_signature"].get("profile").is_none());
    assert!(record["card_signature"].get("uncovered_count").is_none());

    let store = Store::open(&w.db).unwrap();
    let own = conduct_walker::store::beside::get(store.connection(), signed.record_id)
        .unwrap()
        .card_verification
        .expect("the own check is stored");
    assert_eq!(own["verified"], json!(true), "{own}");
    assert_eq!(own["profile"], "served-rfc8785");
    assert_eq!(
        conduct_walker::store::beside::get(store.connection(), unsigned.record_id)
            .unwrap()
            .card_verification,
        None
    );

    let page = conduct_walker::pages::render::record(&store, &signed.outcome.sha256[..12], "test")
        .unwrap();
    let doc = scraper::Html::parse_document(&page);
    let text = |sel: &str| -> String {
        doc.select(&scraper::Selector::parse(sel).unwrap())
            .map(|e| e.text().collect::<String>())
            .collect()
    };
    assert!(
        text("#card-signature-record")
            .contains("verified. signature[0] verifies in served-rfc8785"),
        "{page}"
    );
    assert!(
        text("#card-signature-own").contains("Profile: served-rfc8785"),
        "{page}"
    );
    let page =
        conduct_walker::pages::render::record(&store, &unsigned.outcome.sha256[..12], "test")
            .unwrap();
    assert!(!page.contains("card-signature-record"));
}

/// A JWKS server with a given answer, counting its requests; the card names it as `jku`.
async fn card_with_jwks_answer(
    ca: &SandboxCa,
    answer: impl Fn(&Req) -> Resp + Send + Sync + 'static,
) -> (SandboxAgent, HttpsServer, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = hits.clone();
    let jwks = HttpsServer::start(
        ca,
        handler(move |req: Req| {
            seen.fetch_add(1, Ordering::SeqCst);
            answer(&req)
        }),
    )
    .await
    .unwrap();
    // The agent's own signed card, with the jku pointing at the other server: the signature
    // covers the served card, whatever the jku says.
    let jku = format!(
        "https://localhost:{}{SANDBOX_JWKS_PATH}",
        jwks.addr().port()
    );
    let header = format!(r#"{{"alg":"ES256","kid":"{SANDBOX_CARD_KID}","jku":"{jku}"}}"#);
    let protected = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        header.as_bytes(),
    );
    let agent = SandboxAgent::start(
        ca,
        Behaviour {
            card_extra: Some(json!({
                "signatures": [{"protected": protected, "signature": "AAAA"}]
            })),
            ..Behaviour::default()
        },
    )
    .await
    .unwrap();
    (agent, jwks, hits)
}

/// How a JWKS server answers.
type Answer = Box<dyn Fn(&Req) -> Resp + Send + Sync>;

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_jwks_is_bounded_like_a_node_and_only_says_not_fetched() {
    let ca = SandboxCa::generate();
    let cases: Vec<(&str, Answer, u16)> = vec![
        (
            "redirect",
            Box::new(|_: &Req| {
                let mut r = Resp::empty(302);
                r.headers
                    .push(("location".into(), "https://example.com/jwks".into()));
                r
            }),
            302,
        ),
        (
            "huge",
            Box::new(|_: &Req| Resp::bytes(200, "application/json", vec![b' '; 16 * 1024 * 1024])),
            0,
        ),
        (
            "missing",
            Box::new(|_: &Req| Resp::json(404, &json!({}))),
            404,
        ),
        (
            "garbage",
            Box::new(|_: &Req| Resp::bytes(200, "application/json", b"{not json".to_vec())),
            200,
        ),
    ];
    for (name, answer, status) in cases {
        let (agent, jwks_server, hits) = card_with_jwks_answer(&ca, answer).await;
        let jwks_origin = format!("https://localhost:{}", jwks_server.addr().port());
        let w = world(&ca, &[agent.origin(), jwks_origin]);
        let r = walk(&w, &agent.origin(), Mode::Mcp).await;
        assert!(
            r.outcome.verdict.ok,
            "{name}: the verdict never depends on the JWKS"
        );
        let block = &r.outcome.record()["card_signature"];
        assert_eq!(block["jwks_status"], json!(status), "{name}: {block}");
        assert_eq!(block["verified"], Value::Null, "{name}");
        let reason = block["verified_reason"].as_str().unwrap();
        assert!(
            reason.contains(&format!(
                "the JWKS at jku was not fetched (status {status})"
            )),
            "{name}: {reason}"
        );
        assert_eq!(
            block["signatures"][0]["note"], "the JWKS at jku was not fetched",
            "{name}"
        );
        // The walk asked once (the own check may ask again, through its cache).
        assert!(hits.load(Ordering::SeqCst) >= 1, "{name}");
    }
}
