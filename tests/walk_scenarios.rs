//! The walk against sandbox agents over real loopback HTTPS: every expectation of spec §3.9 and
//! the issue's list, each its own test asserting results and notes.

mod common;

use common::*;
use conduct_walker::sandbox::agent::Metadata;
use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use conduct_walker::walk::assertions::*;
use conduct_walker::walk::spec::{EXT, PERMA};
use conduct_walker::walk::{Mode, RequestProfile, Wire};
use serde_json::json;
use std::time::Duration;

const NAMES: [&str; 8] = [
    "card_bytes_stable",
    "conduct_ext_declared",
    "compensation_well_formed",
    "measured_endpoint_answered",
    "payment_required_as_declared",
    "extension_echoed",
    "metadata_echoed",
    "endpoint_bound",
];

fn results(o: &conduct_walker::walk::WalkOutcome) -> Vec<Option<bool>> {
    NAMES.iter().map(|n| result(o, n)).collect()
}

#[tokio::test]
async fn honest_mcp_scores_four_of_four() {
    let o = walk_scenario("honest-mcp").await;
    assert_eq!(
        (o.verdict.n_pass, o.verdict.n_total, o.verdict.ok),
        (4, 4, true)
    );
    assert_eq!(
        results(&o),
        [
            Some(true),
            Some(true),
            Some(true),
            Some(true),
            None,
            None,
            None,
            None
        ]
    );
    assert_eq!(note(&o, "extension_echoed").as_deref(), Some(NOTE_ECHO_MCP));
    assert_eq!(
        note(&o, "metadata_echoed").as_deref(),
        Some(NOTE_METADATA_MCP)
    );
    assert_eq!(
        note(&o, "endpoint_bound").as_deref(),
        Some(NOTE_METADATA_MCP)
    );
    assert_eq!(
        note(&o, "payment_required_as_declared").as_deref(),
        Some(NOTE_PAYMENT_NONE_NOT_402)
    );
    assert_eq!(assertion(&o, "extension_echoed").claim, "extension_echoed");
    assert_eq!(o.record()["conduct_ext"]["wire"], json!(null));
    assert_eq!(o.record()["mode"], "full");
}

#[tokio::test]
async fn honest_a2a_1_0_scores_seven_of_seven() {
    let o = walk_scenario("honest-a2a").await;
    assert_eq!((o.verdict.n_pass, o.verdict.n_total), (7, 7));
    assert_eq!(
        note(&o, "metadata_echoed").as_deref(),
        Some("read from message.metadata")
    );
    assert_eq!(
        note(&o, "endpoint_bound").as_deref(),
        Some(NOTE_BOUND_BY_SERVED_BY)
    );
    assert!(
        assertion(&o, "measured_endpoint_answered")
            .claim
            .ends_with("of the A2A 1.0 shape")
    );
    assert_eq!(o.record()["conduct_ext"]["wire"], "1.0");
}

#[tokio::test]
async fn honest_a2a_0_3_scores_seven_of_seven() {
    let o = walk_scenario("honest-a2a-0.3").await;
    assert_eq!((o.verdict.n_pass, o.verdict.n_total), (7, 7));
    assert!(
        assertion(&o, "extension_echoed")
            .claim
            .contains("header X-A2A-Extensions")
    );
    // A 0.3 request carries only the X- spelling.
    let n3 = &o.nodes[2].exchange.request;
    assert!(n3.headers.iter().any(|(k, _)| k == "X-A2A-Extensions"));
    assert!(!n3.headers.iter().any(|(k, _)| k == "A2A-Extensions"));
}

#[tokio::test]
async fn task_reply_with_metadata_on_the_task() {
    for name in ["task-reply", "task-reply-0.3"] {
        let o = walk_scenario(name).await;
        assert_eq!(result(&o, "metadata_echoed"), Some(true), "{name}");
        assert_eq!(result(&o, "endpoint_bound"), Some(true), "{name}");
        assert_eq!(
            note(&o, "metadata_echoed").as_deref(),
            Some("read from task.metadata"),
            "{name}"
        );
    }
}

#[tokio::test]
async fn metadata_only_on_task_status_message() {
    let o = walk_scenario("task-status-message-metadata").await;
    assert_eq!(result(&o, "metadata_echoed"), Some(true));
    assert_eq!(result(&o, "endpoint_bound"), Some(true));
    assert_eq!(
        note(&o, "metadata_echoed").as_deref(),
        Some("read from task.status.message.metadata")
    );
}

#[tokio::test]
async fn unmeasured_url_without_served_by_is_not_bound() {
    let o = walk_scenario("unmeasured-no-served-by").await;
    assert_eq!(result(&o, "metadata_echoed"), Some(true));
    assert_eq!(result(&o, "endpoint_bound"), Some(false));
    assert_eq!(
        note(&o, "endpoint_bound").as_deref(),
        Some(NOTE_UNBOUND_BY_ENDPOINT)
    );
}

#[tokio::test]
async fn unmeasured_url_with_correct_served_by_is_bound() {
    let o = walk_scenario("unmeasured-with-served-by").await;
    assert_eq!(result(&o, "metadata_echoed"), Some(true));
    assert_eq!(result(&o, "endpoint_bound"), Some(true));
    assert!(o.target.as_deref().unwrap().ends_with("/unmeasured"));
}

#[tokio::test]
async fn served_by_with_upper_case_host_and_query_is_bound() {
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(
        &ca,
        Behaviour {
            metadata: Metadata::ServedBy("HTTPS://LOCALHOST:{port}/mcp?from=sandbox".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let local = format!("https://localhost:{}", agent.server.addr().port());
    let t = transport(&ca, &[&local, &agent.origin()], None);
    let req = request(
        &agent.origin(),
        Some(format!("{local}/mcp")),
        Mode::A2a,
        Wire::V1_0,
    );
    let o = walk_with(&t, &req).await;
    assert_eq!(
        result(&o, "endpoint_bound"),
        Some(true),
        "{:?}",
        note(&o, "endpoint_bound")
    );
}

#[tokio::test]
async fn served_by_trailing_slash_is_another_url() {
    let o = walk_scenario("served-by-trailing-slash").await;
    assert_eq!(result(&o, "endpoint_bound"), Some(false));
    assert_eq!(
        note(&o, "endpoint_bound").as_deref(),
        Some(NOTE_UNBOUND_BY_SERVED_BY)
    );
}

#[tokio::test]
async fn served_by_naming_another_url_is_false_whatever_endpoint_says() {
    let o = walk_scenario("served-by-other-url").await;
    assert_eq!(result(&o, "metadata_echoed"), Some(true));
    assert_eq!(result(&o, "endpoint_bound"), Some(false));
    assert_eq!(
        note(&o, "endpoint_bound").as_deref(),
        Some(NOTE_UNBOUND_BY_SERVED_BY)
    );
}

#[tokio::test]
async fn metadata_missing_fails_and_nothing_to_bind() {
    let o = walk_scenario("metadata-missing").await;
    assert_eq!(result(&o, "metadata_echoed"), Some(false));
    assert_eq!(
        note(&o, "metadata_echoed").as_deref(),
        Some(
            "read from message.metadata; the returned message.metadata carries no metadata object"
        )
    );
    assert_eq!(result(&o, "endpoint_bound"), None);
    assert_eq!(
        note(&o, "endpoint_bound").as_deref(),
        Some(NOTE_BOUND_NOTHING_TO_BIND)
    );
}

#[tokio::test]
async fn metadata_under_the_permanent_id_does_not_count() {
    let o = walk_scenario("metadata-under-permanent-id").await;
    assert_eq!(result(&o, "metadata_echoed"), Some(false));
    let n = note(&o, "metadata_echoed").unwrap();
    assert!(
        n.contains(".../endpoint absent") && n.contains(".../conduct_record absent"),
        "{n}"
    );
    assert_eq!(result(&o, "endpoint_bound"), None);
}

#[tokio::test]
async fn endpoint_not_on_card_fails_metadata_but_binds() {
    let o = walk_scenario("endpoint-not-on-card").await;
    assert_eq!(result(&o, "metadata_echoed"), Some(false));
    assert!(
        note(&o, "metadata_echoed")
            .unwrap()
            .contains(".../endpoint is not an entry of the card's measured_endpoints")
    );
    assert_eq!(result(&o, "endpoint_bound"), Some(true));
}

#[tokio::test]
async fn conduct_record_differing_fails_metadata_but_binds() {
    let o = walk_scenario("conduct-record-differs").await;
    assert_eq!(result(&o, "metadata_echoed"), Some(false));
    assert!(
        note(&o, "metadata_echoed")
            .unwrap()
            .ends_with(".../conduct_record differs from params.conduct_record")
    );
    assert_eq!(result(&o, "endpoint_bound"), Some(true));
}

#[tokio::test]
async fn paid_402_with_x402_passes() {
    let o = walk_scenario("paid-x402").await;
    assert_eq!(result(&o, "measured_endpoint_answered"), None);
    assert_eq!(
        note(&o, "measured_endpoint_answered").as_deref(),
        Some(NOTE_ANSWERED_402)
    );
    assert_eq!(result(&o, "payment_required_as_declared"), Some(true));
    assert!(
        assertion(&o, "payment_required_as_declared")
            .claim
            .ends_with("exact keys): x402=true")
    );
    assert_eq!(
        assertion(&o, "payment_required_as_declared").observed_input,
        "[\"x402=true\"]:402"
    );
    assert_eq!(result(&o, "metadata_echoed"), None);
    assert_eq!(
        note(&o, "metadata_echoed").as_deref(),
        Some(NOTE_METADATA_402)
    );
    assert_eq!(result(&o, "endpoint_bound"), None);
    assert!(o.verdict.ok);
    let record = o.record();
    let dne = record["does_not_establish"].as_array().unwrap();
    assert!(
        dne.iter()
            .any(|l| l.as_str().unwrap().starts_with("that the amount charged"))
    );
}

#[tokio::test]
async fn paid_402_with_each_other_signal_passes() {
    for (name, signal) in [
        ("paid-payment-methods", "paymentMethods=card,usdc"),
        ("paid-pricing-model", "pricing.model=pay-per-use"),
    ] {
        let o = walk_scenario(name).await;
        assert_eq!(
            result(&o, "payment_required_as_declared"),
            Some(true),
            "{name}"
        );
        assert!(
            assertion(&o, "payment_required_as_declared")
                .claim
                .ends_with(signal),
            "{name}"
        );
    }
}

#[tokio::test]
async fn paid_402_undeclared_fails() {
    let o = walk_scenario("paid-undeclared").await;
    assert_eq!(result(&o, "payment_required_as_declared"), Some(false));
    assert_eq!(
        note(&o, "payment_required_as_declared").as_deref(),
        Some(NOTE_PAYMENT_NONE_402)
    );
    assert!(!o.verdict.ok);
}

#[tokio::test]
async fn paid_402_with_top_level_buyer_and_no_extension() {
    let o = walk_scenario("paid-top-level-buyer-no-extension").await;
    assert_eq!(result(&o, "conduct_ext_declared"), Some(false));
    // No extension: no measured endpoint; walk it explicitly.
    assert!(o.target.is_none());
    let sc = conduct_walker::sandbox::scenario("paid-top-level-buyer-no-extension").unwrap();
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, sc.behaviour).await.unwrap();
    let t = transport(&ca, &[&agent.origin()], None);
    let o = walk_with(
        &t,
        &request(
            &agent.origin(),
            Some(format!("{}/mcp", agent.origin())),
            Mode::A2a,
            Wire::V1_0,
        ),
    )
    .await;
    assert_eq!(result(&o, "conduct_ext_declared"), Some(false));
    assert_eq!(result(&o, "payment_required_as_declared"), Some(true));
    assert_eq!(result(&o, "compensation_well_formed"), Some(true));
    assert_eq!(
        note(&o, "compensation_well_formed").as_deref(),
        Some(NOTE_COMPENSATION_TOP_LEVEL)
    );
}

#[tokio::test]
async fn server_error_500_is_a_failure_not_a_payment() {
    let o = walk_scenario("server-error").await;
    assert_eq!(result(&o, "measured_endpoint_answered"), Some(false));
    assert_eq!(result(&o, "payment_required_as_declared"), None);
    assert_eq!(o.nodes[2].status(), 500);
}

#[tokio::test]
async fn redirect_is_recorded_not_followed() {
    let o = walk_scenario("redirect").await;
    assert_eq!(o.nodes[2].status(), 302);
    assert_eq!(
        o.record()["nodes"][3]["request"]["url"],
        json!(o.target.clone().unwrap())
    );
    assert_eq!(result(&o, "measured_endpoint_answered"), Some(false));
}

#[tokio::test]
async fn card_changing_between_n0_and_n1_is_unstable() {
    let o = walk_scenario("card-changes").await;
    assert_eq!(result(&o, "card_bytes_stable"), Some(false));
    assert_ne!(o.nodes[0].body_sha256, o.nodes[1].body_sha256);
}

#[tokio::test]
async fn card_404_means_no_card_and_no_target() {
    let o = walk_scenario("card-404").await;
    assert_eq!(result(&o, "card_bytes_stable"), Some(false));
    assert_eq!(result(&o, "conduct_ext_declared"), Some(false));
    assert_eq!(result(&o, "measured_endpoint_answered"), Some(false));
    assert_eq!(
        assertion(&o, "measured_endpoint_answered").evidence_nodes,
        [2]
    );
    assert!(
        assertion(&o, "measured_endpoint_answered")
            .claim
            .contains("POST (no target)")
    );
    assert_eq!(
        assertion(&o, "measured_endpoint_answered").observed_input,
        "no-node:False"
    );
    assert_eq!(o.nodes.len(), 2);
    assert_eq!(
        o.record()["nodes"][2]["output_preview"],
        "not declared; card is not a JSON object"
    );
    assert_eq!(
        o.record()["purpose"],
        json!(format!(
            "a2a-conduct-walk-v1: {}",
            o.record()["base"].as_str().unwrap()
        ))
    );
}

#[tokio::test]
async fn card_with_utf8_bom_is_not_a_card() {
    let o = walk_scenario("card-bom").await;
    assert_eq!(result(&o, "card_bytes_stable"), Some(true));
    assert_eq!(result(&o, "conduct_ext_declared"), Some(false));
    assert!(o.nodes[0].exchange.body.starts_with(b"\xef\xbb\xbf"));
}

#[tokio::test]
async fn card_that_is_not_json() {
    let o = walk_scenario("card-not-json").await;
    assert_eq!(result(&o, "conduct_ext_declared"), Some(false));
    assert_eq!(result(&o, "compensation_well_formed"), None);
    assert_eq!(
        note(&o, "compensation_well_formed").as_deref(),
        Some(NOTE_COMPENSATION_NEITHER)
    );
}

#[tokio::test]
async fn gzip_card_is_hashed_as_received_not_decompressed() {
    let o = walk_scenario("card-gzip").await;
    let n0 = &o.nodes[0];
    assert_eq!(&n0.exchange.body[..2], &[0x1f, 0x8b], "gzip magic kept");
    assert_eq!(
        n0.body_sha256,
        conduct_walker::digest::sha256_hex(&n0.exchange.body)
    );
    assert_eq!(n0.exchange.header("content-encoding"), Some("gzip"));
    assert_eq!(result(&o, "conduct_ext_declared"), Some(false));
}

#[tokio::test]
async fn non_ascii_and_emoji_in_the_card_survive_raw() {
    let params = json!({
        "compensation": {"paid_by": "public", "referral_fee": false, "listing_fee": false},
        "measured_endpoints": ["https://a.example/mcp"],
        "conduct_record": "https://gate.example/r",
        "witness_intake": "https://ledger.example/w",
        "note": "héllo ✓ 🤖 \u{2028}",
    });
    let o = walk_behaviour(
        Behaviour {
            params_override: Some(params),
            ..Default::default()
        },
        Mode::Mcp,
        Wire::V1_0,
    )
    .await;
    let observed = &assertion(&o, "conduct_ext_declared").observed_input;
    assert!(observed.contains("héllo ✓ 🤖 \u{2028}"), "{observed}");
    assert_eq!(result(&o, "conduct_ext_declared"), Some(true));
    assert!(
        o.card
            .as_ref()
            .unwrap()
            .root()
            .get("name")
            .unwrap()
            .as_str()
            .unwrap()
            .contains('🤖')
    );
}

#[tokio::test]
async fn two_listings_first_wins() {
    let o = walk_scenario("two-listings").await;
    assert_eq!(result(&o, "compensation_well_formed"), Some(true));
    assert_eq!(o.record()["conduct_ext"]["declared_uri"], EXT);
}

#[tokio::test]
async fn permanent_identifier_is_declared_and_recorded() {
    let o = walk_scenario("permanent-id").await;
    assert_eq!(result(&o, "conduct_ext_declared"), Some(true));
    assert_eq!(o.record()["conduct_ext"]["declared_uri"], PERMA);
    assert_eq!(o.record()["conduct_ext"]["uri"], EXT);
    assert_eq!(o.verdict.n_pass, 7);
}

#[tokio::test]
async fn next_version_and_foreign_uris_are_not_declared() {
    for name in ["next-version-id", "foreign-id"] {
        let o = walk_scenario(name).await;
        assert_eq!(result(&o, "conduct_ext_declared"), Some(false), "{name}");
        assert_eq!(
            assertion(&o, "conduct_ext_declared").observed_input,
            "absent"
        );
        assert_eq!(o.record()["conduct_ext"]["declared_uri"], json!(null));
    }
}

#[tokio::test]
async fn top_level_compensation_disagreeing_fails() {
    let o = walk_scenario("compensation-disagrees").await;
    assert_eq!(result(&o, "compensation_well_formed"), Some(false));
    assert_eq!(
        assertion(&o, "compensation_well_formed").observed_input,
        "[\"top-level compensation disagrees with params.compensation\"]"
    );
}

#[tokio::test]
async fn declared_required_true_fails_compensation() {
    let o = walk_scenario("required-true").await;
    assert_eq!(result(&o, "compensation_well_formed"), Some(false));
}

#[tokio::test]
async fn wrong_wire_shape_is_not_answered() {
    for name in ["wrong-wire-shape", "wrong-wire-shape-0.3"] {
        let o = walk_scenario(name).await;
        assert_eq!(
            result(&o, "measured_endpoint_answered"),
            Some(false),
            "{name}"
        );
        assert_eq!(
            note(&o, "metadata_echoed").as_deref(),
            Some(NOTE_METADATA_NOT_ANSWERED),
            "{name}"
        );
    }
}

#[tokio::test]
async fn echo_under_the_other_spelling_fails() {
    for name in ["echo-new-spelling-only-0.3", "echo-old-spelling-only"] {
        let o = walk_scenario(name).await;
        assert_eq!(result(&o, "extension_echoed"), Some(false), "{name}");
    }
}

#[tokio::test]
async fn five_mib_reply_hits_the_cap() {
    let o = walk_scenario("huge-reply").await;
    let n3 = &o.nodes[2];
    assert_eq!(n3.status(), 0);
    assert!(
        n3.exchange
            .transport_error
            .as_ref()
            .unwrap()
            .contains("too large")
    );
    assert_eq!(
        o.record()["nodes"][3]["response"]["body_sha256"],
        conduct_walker::digest::EMPTY_SHA256
    );
    assert_eq!(result(&o, "measured_endpoint_answered"), Some(false));
}

#[tokio::test]
async fn measured_endpoint_on_another_private_host_is_refused_even_when_allowed() {
    let o = walk_scenario("private-endpoint-on-card").await;
    let n3 = &o.nodes[2];
    assert_eq!(n3.status(), 0);
    let err = n3.exchange.transport_error.as_ref().unwrap();
    assert!(
        err.contains("refused") && err.contains("127.0.0.2"),
        "{err}"
    );
}

#[tokio::test]
async fn connection_refused_is_recorded_as_status_zero() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let origin = format!("https://127.0.0.1:{port}");
    let ca = SandboxCa::generate();
    let t = transport(&ca, &[&origin], None);
    let o = walk_with(&t, &request(&origin, None, Mode::Mcp, Wire::V1_0)).await;
    assert_eq!(o.nodes[0].status(), 0);
    assert_eq!(o.nodes[1].status(), 0);
    assert_eq!(o.record()["nodes"][0]["response"]["status"], 0);
    assert_eq!(
        o.record()["nodes"][0]["response"]["body_sha256"],
        conduct_walker::digest::EMPTY_SHA256
    );
    assert_eq!(result(&o, "card_bytes_stable"), Some(false));
}

#[tokio::test]
async fn trickled_card_is_cut_at_the_deadline() {
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(
        &ca,
        Behaviour {
            card_trickle: Some(Duration::from_millis(100)),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let t = transport(&ca, &[&agent.origin()], Some(Duration::from_millis(800)));
    let started = std::time::Instant::now();
    let o = walk_with(&t, &request(&agent.origin(), None, Mode::Mcp, Wire::V1_0)).await;
    assert_eq!(o.nodes[0].status(), 0);
    assert!(
        o.nodes[0]
            .exchange
            .transport_error
            .as_ref()
            .unwrap()
            .contains("timed out")
    );
    // The trickled body was ~1.3 KB at 10 bytes/s: only the deadline can have ended it.
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(o.nodes[1].status(), 200, "only the first fetch trickles");
    assert_eq!(result(&o, "card_bytes_stable"), Some(false));
}

#[tokio::test]
async fn hash_only_privacy_redacts_requests_and_claims() {
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let t = transport(&ca, &[&agent.origin()], None);
    let mut req = request(&agent.origin(), None, Mode::A2a, Wire::V1_0);
    req.privacy = conduct_walker::walk::Privacy::HashOnly;
    let o = walk_with(&t, &req).await;
    let r = &o.record();
    assert_eq!(r["mode"], "hash-only");
    let origin_form = format!("{}/", agent.origin());
    for node in [0, 1, 3] {
        let request = r["nodes"][node]["request"].as_object().unwrap();
        assert_eq!(request["url"], json!(origin_form));
        assert_eq!(request["method"], "REDACTED");
        assert!(!request.contains_key("headers_sha256") && !request.contains_key("body_sha256"));
    }
    let claim = r["assertions"][3]["claim"].as_str().unwrap();
    assert!(
        claim.contains(&format!("POST {origin_form}(redacted path) returned")),
        "{claim}"
    );
    let dne: Vec<&str> = r["does_not_establish"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(dne.contains(&"which tool or method was called"));
    assert!(r["establishes"][2].as_str().unwrap().starts_with(&format!(
        "one request answered by {origin_form} with http 200"
    )));
    assert_eq!(
        r["purpose"],
        json!(format!("a2a-conduct-walk-v1: {}/mcp", agent.origin()))
    );
}

#[tokio::test]
async fn commitment_privacy_files_only_the_commitment() {
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let t = transport(&ca, &[&agent.origin()], None);
    let mut req = request(&agent.origin(), None, Mode::A2a, Wire::V1_0);
    req.privacy = conduct_walker::walk::Privacy::Commitment;
    let o = walk_with(&t, &req).await;
    let record = o.record();
    let keys: Vec<&String> = record.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "base",
            "commitment",
            "commitment_recipe",
            "does_not_establish",
            "establishes",
            "mode",
            "purpose",
            "schema",
            "walked_at",
            "walker",
            "witness"
        ]
    );
    let (kept, salt_hex) = o.kept.clone().unwrap();
    let mut preimage = kept.clone();
    preimage.extend(hex::decode(&salt_hex).unwrap());
    assert_eq!(
        o.record()["commitment"],
        conduct_walker::digest::sha256_hex(&preimage)
    );
    let kept: serde_json::Value = serde_json::from_slice(&kept).unwrap();
    assert_eq!(kept["mode"], "full");
    assert_eq!(
        kept["establishes"],
        json!([format!(
            "a record with the stated commitment existed at {}",
            kept["walked_at"].as_str().unwrap()
        )])
    );
    assert_eq!(
        kept["does_not_establish"][0],
        "anything about the walked agent until the committed record is revealed"
    );
}

/// Evaluate the eight assertions on recorded observations (spec §3.9 self-test style): the
/// card (served twice), and node 3's status, reply and response headers at `target`.
fn recorded(
    card: &serde_json::Value,
    target: &str,
    n3: (u16, serde_json::Value, &[(&str, &str)]),
) -> Vec<Assertion> {
    use conduct_walker::net::{Exchange, HttpRequest};
    use conduct_walker::walk::{ObservedFetch, declaration, n3_request};
    let fetch = |n, status, body: Vec<u8>, req: HttpRequest, headers: &[(&str, &str)]| {
        ObservedFetch::new(
            n,
            Exchange {
                request: req,
                status,
                response_headers: headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                body,
                duration_ms: 1,
                transport_error: None,
                cut_answer: None,
            },
        )
    };
    let card_bytes = serde_json::to_vec(card).unwrap();
    let card_req = conduct_walker::walk::card_request(
        "https://agent.selftest.invalid/.well-known/agent-card.json",
    );
    let n0 = fetch(0, 200, card_bytes.clone(), card_req.clone(), &[]);
    let n1 = fetch(1, 200, card_bytes, card_req, &[]);
    let (status, reply, headers) = n3;
    let n3 = fetch(
        3,
        status,
        serde_json::to_vec(&reply).unwrap(),
        n3_request(Mode::A2a, Wire::V1_0, RequestProfile::Spec, target),
        headers,
    );
    let card = conduct_walker::walk::parse_card(&n1).expect("the card is JSON");
    let decl = declaration::locate_and_validate(Some(&card));
    evaluate(&Inputs {
        mode: Mode::A2a,
        wire: Wire::V1_0,
        profile: RequestProfile::Spec,
        n0: &n0,
        n1: &n1,
        n3: Some(&n3),
        card: Some(&card),
        declaration: &decl,
        target: Some(target),
    })
}

fn named<'a>(all: &'a [Assertion], name: &str) -> &'a Assertion {
    all.iter().find(|a| a.name == name).unwrap()
}

const SELFTEST_TARGET: &str = "https://agent.selftest.invalid/mcp";

fn selftest_card() -> serde_json::Value {
    json!({"capabilities": {"extensions": [{"uri": EXT, "params": {
        "compensation": {"paid_by": "public", "referral_fee": false, "listing_fee": false},
        "measured_endpoints": [SELFTEST_TARGET], "conduct_record": "https://g/r",
        "witness_intake": "https://l/w"}}]}})
}

/// The section 3 metadata of an honest reply, plus `extra` keys under the extension.
fn selftest_reply(extra: &[(&str, &str)]) -> serde_json::Value {
    let mut metadata = json!({
        format!("{EXT}/endpoint"): SELFTEST_TARGET,
        format!("{EXT}/conduct_record"): "https://g/r",
        format!("{EXT}/witness_intake"): "https://l/w"});
    for (k, v) in extra {
        metadata[format!("{EXT}/{k}")] = json!(v);
    }
    json!({"jsonrpc": "2.0", "id": 1, "result": {"message": {"metadata": metadata}}})
}

#[test]
fn served_by_with_port_443_and_upper_case_host_binds_from_recorded_observations() {
    // The agent cannot listen on 443 here, so the pure core evaluates a recorded exchange.
    for (served_by, bound) in [
        ("https://AGENT.Selftest.invalid:443/mcp", true),
        ("https://agent.selftest.invalid/mcp/", false),
    ] {
        let all = recorded(
            &selftest_card(),
            SELFTEST_TARGET,
            (
                200,
                selftest_reply(&[("served_by", served_by)]),
                &[("a2a-extensions", EXT)],
            ),
        );
        assert_eq!(
            named(&all, "endpoint_bound").result,
            Some(bound),
            "{served_by}"
        );
        assert_eq!(verdict(&all).ok, bound);
    }
}

#[test]
fn endpoint_binds_when_served_by_is_absent() {
    let all = recorded(
        &selftest_card(),
        SELFTEST_TARGET,
        (200, selftest_reply(&[]), &[("a2a-extensions", EXT)]),
    );
    let bound = named(&all, "endpoint_bound");
    assert_eq!(bound.result, Some(true));
    assert_eq!(bound.note.as_deref(), Some(NOTE_BOUND_BY_ENDPOINT));
    assert!(verdict(&all).ok);
}

#[test]
fn echo_is_read_from_a_comma_list_and_accepts_the_permanent_id() {
    let reply = selftest_reply(&[]);
    for (header, echoed) in [
        (format!("https://other.example/ext , {PERMA}"), Some(true)),
        (format!(" {EXT},https://other.example/ext"), Some(true)),
        ("https://other.example/ext".to_string(), Some(false)),
    ] {
        let all = recorded(
            &selftest_card(),
            SELFTEST_TARGET,
            (200, reply.clone(), &[("a2a-extensions", header.as_str())]),
        );
        assert_eq!(named(&all, "extension_echoed").result, echoed, "{header}");
    }
    // No header at all.
    let all = recorded(&selftest_card(), SELFTEST_TARGET, (200, reply, &[]));
    assert_eq!(named(&all, "extension_echoed").result, Some(false));
}

#[test]
fn a_paid_model_answered_without_a_charge_is_not_applicable() {
    // A §1.5 signal at the card's top level; node 3 answers 200, not 402.
    let mut card = selftest_card();
    card["x402"] = json!(true);
    let all = recorded(
        &card,
        SELFTEST_TARGET,
        (200, selftest_reply(&[]), &[("a2a-extensions", EXT)]),
    );
    let paid = named(&all, "payment_required_as_declared");
    assert_eq!(paid.result, None, "{:?}", paid.note);
    assert_eq!(paid.note.as_deref(), Some(NOTE_PAYMENT_SOME_NOT_402));
}

#[test]
fn metadata_is_not_required_of_a_card_that_does_not_declare_the_extension() {
    // The card has no conduct extension; its top-level compensation is read instead.
    let card = json!({"compensation": {"paid_by": "public", "referral_fee": false,
        "listing_fee": false}});
    let all = recorded(
        &card,
        SELFTEST_TARGET,
        (200, selftest_reply(&[]), &[("a2a-extensions", EXT)]),
    );
    let metadata = named(&all, "metadata_echoed");
    assert_eq!(metadata.result, None);
    assert_eq!(metadata.note.as_deref(), Some(NOTE_METADATA_NOT_DECLARED));
    assert_eq!(named(&all, "conduct_ext_declared").result, Some(false));
}

#[tokio::test]
async fn every_scenario_walks_to_a_record_the_intake_would_accept() {
    // Shape checks of spec §6.3 on every scenario's record.
    for sc in conduct_walker::sandbox::scenarios() {
        let o = walk_scenario_value(&sc).await;
        let record = o.record();
        let r = record.as_object().unwrap();
        assert_eq!(r["schema"], "jidec-path-v1", "{}", sc.name);
        for key in ["purpose", "walked_at", "base"] {
            assert!(!r[key].as_str().unwrap().is_empty(), "{} {key}", sc.name);
        }
        assert!(
            r["purpose"]
                .as_str()
                .unwrap()
                .starts_with("a2a-conduct-walk-v1: https://")
        );
        assert!(!r["establishes"].as_array().unwrap().is_empty());
        assert!(!r["does_not_establish"].as_array().unwrap().is_empty());
        let names: Vec<&str> = o.assertions.iter().map(|a| a.name).collect();
        assert_eq!(
            names,
            conduct_walker::walk::spec::ASSERTION_NAMES,
            "{}: the record's order is the spec's, which the status pages read by",
            sc.name
        );
        assert_eq!(r["assertions"].as_array().unwrap().len(), 8, "{}", sc.name);
        assert_eq!(r["walked_at"], "2026-11-30T12:00:00Z");
        assert_eq!(o.sha256, conduct_walker::digest::sha256_hex(&o.canonical));
        let reparsed = conduct_walker::json::parse_lenient(&o.canonical).unwrap();
        assert_eq!(
            conduct_walker::canonical::to_bytes(&reparsed),
            o.canonical,
            "{}",
            sc.name
        );
    }
}

#[tokio::test]
async fn terms_listed_on_the_card_enter_the_record_without_touching_the_verdict() {
    use conduct_walker::terms::TERMS_EXTENSION_URI;
    let standing = std::fs::read(conduct_walker::sandbox::test_vectors(
        "sow/standing-proposal.signed.json",
    ))
    .unwrap();
    let digest = std::fs::read_to_string(conduct_walker::sandbox::test_vectors(
        "sow/standing-proposal.digest",
    ))
    .unwrap();
    let ca = SandboxCa::generate();
    let docs = conduct_walker::sandbox::HttpsServer::start(
        &ca,
        conduct_walker::sandbox::handler(move |_| {
            conduct_walker::sandbox::Resp::bytes(200, "application/json", standing.clone())
        }),
    )
    .await
    .unwrap();
    let proposal_url = format!("{}/terms/standing.json", docs.base());
    let mut behaviour = Behaviour::default();
    let honest = behaviour.card("https://x");
    let mut extensions = honest["capabilities"]["extensions"]
        .as_array()
        .unwrap()
        .clone();
    extensions.push(json!({
        "uri": TERMS_EXTENSION_URI,
        "required": false,
        "params": {"sow_spec": "https://agentsow.com/spec", "proposals": [
            {"url": proposal_url, "digest": digest.trim(), "sow": "standing"}
        ]}
    }));
    behaviour.card_extra =
        Some(json!({"capabilities": {"streaming": false, "extensions": extensions}}));
    let agent = SandboxAgent::start(&ca, behaviour).await.unwrap();
    // The extensions above name https://x/mcp; walk the agent's own endpoint explicitly.
    let t = transport(&ca, &[&agent.origin(), &docs.base()], None);
    let plain = walk_with(
        &t,
        &request(
            &agent.origin(),
            Some(format!("{}/mcp", agent.origin())),
            Mode::A2a,
            Wire::V1_0,
        ),
    )
    .await;
    // The terms check is kept beside the record: the reference writes no terms key.
    let terms = plain.terms.as_ref().expect("the terms listing was checked");
    assert_eq!(terms["proposals"][0]["outcome"], "verified", "{terms}");
    assert!(
        terms["establishes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().contains(&proposal_url))
    );
    let record = plain.record();
    assert!(record.get("terms").is_none());
    assert!(
        !record["establishes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().contains(&proposal_url))
    );
    // The conduct assertions are what they would be without the terms listing.
    assert_eq!(result(&plain, "conduct_ext_declared"), Some(true));
    assert_eq!(plain.verdict.n_total, 7);
}
