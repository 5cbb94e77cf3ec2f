//! Walks of honest agents whose cards have unusual shapes (issue 21): every card the reference
//! reads is read, whatever its nesting, size or escapes, and walks to the record the reference
//! writes. The parts of a record that depend on the card's bytes beyond its shape are the
//! canonical form of the conduct extension (hashed into conduct_ext_declared's observed input):
//! those are checked against CPython's `json.dumps(..., sort_keys=True, separators=(",", ":"),
//! ensure_ascii=False)` of the same bytes, read with `json.loads` (the reference's reader).

#[path = "support/card_shapes.rs"]
mod card_shapes;
mod common;

use card_shapes::{nested_arrays, shapes};
use common::*;
use conduct_walker::digest::sha256_hex;
use conduct_walker::sandbox::{Behaviour, CardBytes, SandboxAgent, SandboxCa};
use conduct_walker::walk::{Mode, Wire};
use serde_json::json;

/// CPython's canonical text of the first conduct extension listing in `card`.
fn python_extension_canonical(card: &[u8]) -> String {
    let script = r#"
import json, sys
sys.setrecursionlimit(10000)
card = json.loads(sys.stdin.buffer.read().decode("utf-8"))
ext = card["capabilities"]["extensions"][0]
sys.stdout.write(json.dumps(ext, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
"#;
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(card).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

async fn walk(behaviour: Behaviour) -> (conduct_walker::walk::WalkOutcome, Vec<u8>) {
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, behaviour).await.unwrap();
    let origin = agent.origin();
    let t = transport(&ca, &[&origin], None);
    let req = request(&origin, None, Mode::A2a, Wire::V1_0);
    let outcome = walk_with(&t, &req).await;
    let card = outcome.nodes[1].exchange.body.clone();
    (outcome, card)
}

fn preview(o: &conduct_walker::walk::WalkOutcome) -> String {
    o.record()["nodes"][2]["output_preview"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn honest_cards_of_every_shape_walk_to_a_pass() {
    for (what, bulk) in shapes() {
        let behaviour = Behaviour {
            card_extra: Some(json!({ "x-bulk": bulk })),
            card_bytes: CardBytes::Compact,
            ..Behaviour::default()
        };
        let (o, card) = walk(behaviour).await;
        assert!(card.len() < 1024 * 1024, "{what}: {} bytes", card.len());
        assert_eq!(preview(&o), "declared; well formed", "{what}");
        assert!(o.verdict.ok, "{what}: {:?}", o.verdict);
        assert_eq!(o.verdict.n_total, 7, "{what}");
    }
}

#[tokio::test]
async fn a_declaration_of_any_shape_is_hashed_as_the_reference_hashes_it() {
    for (what, bulk) in shapes() {
        // Inside params the bulk starts five levels down (card, capabilities, extensions, the
        // listing, params): 988 arrays there reach the same 993 levels.
        let bulk = if what == "992 nested arrays" {
            nested_arrays(988)
        } else {
            bulk
        };
        let behaviour = Behaviour {
            params_override: Some(json!({
                "compensation": {"paid_by": "public", "referral_fee": false, "listing_fee": false,
                                 "success_fee_pct": 1E+1, "disclosure_url": null},
                "measured_endpoints": ["{base}/mcp"],
                "conduct_record": "https://gate.horizonshield.dev/history?endpoint=sandbox",
                "witness_intake": "https://ledger.horizonshield.dev/witness",
                "bulk": bulk,
            })),
            card_bytes: CardBytes::Compact,
            ..Behaviour::default()
        };
        let (o, card) = walk(behaviour).await;
        // measured_endpoints was not rewritten ({base} stays), so no target is https-valid:
        // what matters here is the declaration's hash.
        let expected = sha256_hex(python_extension_canonical(&card).as_bytes());
        let observed = &assertion(&o, "conduct_ext_declared");
        assert_eq!(observed.result, Some(true), "{what}");
        assert_eq!(
            sha256_hex(observed.observed_input.as_bytes()),
            expected,
            "{what}: the extension's canonical form differs from CPython's"
        );
    }
}

#[tokio::test]
async fn a_card_nested_994_levels_is_not_json_to_the_reference_nor_to_us() {
    // 993 levels (the card object and 992 arrays) are read; one more is not (§8.3 item 21).
    for (depth, readable) in [(992, true), (993, false)] {
        let behaviour = Behaviour {
            card_extra: Some(json!({ "x-bulk": nested_arrays(depth) })),
            card_bytes: CardBytes::Compact,
            ..Behaviour::default()
        };
        let (o, _) = walk(behaviour).await;
        if readable {
            assert_eq!(preview(&o), "declared; well formed");
        } else {
            assert_eq!(preview(&o), "not declared; card is not a JSON object");
            assert_eq!(result(&o, "conduct_ext_declared"), Some(false));
        }
    }
}

/// Walk a server that serves `card(origin)` as the card and answers POSTs like an A2A agent
/// without metadata.
async fn walk_text(
    card: impl Fn(&str) -> String + Send + Sync + 'static,
) -> conduct_walker::walk::WalkOutcome {
    use conduct_walker::sandbox::{HttpsServer, Req, Resp, handler};
    let ca = SandboxCa::generate();
    let origin = std::sync::Arc::new(std::sync::OnceLock::<String>::new());
    let seen = origin.clone();
    let server = HttpsServer::start(
        &ca,
        handler(move |req: Req| {
            if req.method == "GET" {
                let text = card(seen.get().unwrap());
                Resp::bytes(200, "application/json", text.into_bytes())
            } else {
                Resp::json(200, &json!({"jsonrpc": "2.0", "id": 1}))
            }
        }),
    )
    .await
    .unwrap();
    origin.set(server.base()).unwrap();
    let t = transport(&ca, &[&server.base()], None);
    walk_with(&t, &request(&server.base(), None, Mode::A2a, Wire::V1_0)).await
}

fn extension_text(origin: &str) -> String {
    Behaviour::default().card(origin)["capabilities"]["extensions"][0].to_string()
}

#[tokio::test]
async fn a_lone_surrogate_is_written_as_u_fffd_and_said_only_where_it_is_written() {
    // In prose the record never writes: the reference writes its record, and so do we, the
    // same as for a card without it (no note).
    let o = walk_text(|origin| {
        format!(
            r#"{{"name":"s","description":"a \ud800 b","capabilities":{{"extensions":[{}]}}}}"#,
            extension_text(origin)
        )
    })
    .await;
    assert_eq!(preview(&o), "declared; well formed");

    // Inside the declaration, whose canonical form is hashed: the reference crashes there; we
    // walk, write U+FFFD and say so in node 2.
    let o = walk_text(|origin| {
        let ext = extension_text(origin)
            .replace("conduct pointers (data-only)", r"conduct \ud800 pointers");
        format!(r#"{{"name":"s","capabilities":{{"extensions":[{ext}]}}}}"#)
    })
    .await;
    assert_eq!(
        preview(&o),
        "declared; well formed; the card holds a lone surrogate escape, written as U+FFFD"
    );
    let observed = &assertion(&o, "conduct_ext_declared").observed_input;
    assert!(observed.contains("conduct \u{fffd} pointers"), "{observed}");
    // The record itself is valid UTF-8 JSON that reads back.
    assert!(std::str::from_utf8(&o.canonical).is_ok());
}
