//! The n0–n3 conduct walk (conduct-walk.md §1–§4).
//!
//! [`run`] is the only part that does I/O: it sends the three requests through the
//! [`Transport`](crate::net::Transport) and hands what it observed to the pure core
//! ([`declaration`], [`assertions`], [`record`]).

pub mod assertions;
pub mod check;
pub mod declaration;
pub mod observation;
pub mod record;
pub mod spec;
pub mod url_norm;

use crate::card_signature::walk_block::JwksAnswer;
use crate::clock::{Clock, walked_at};
use crate::digest::sha256_hex;
use crate::net::{BodyRead, HttpRequest, Session, Transport};
use crate::wire::{Walker, Witness};
use assertions::{Assertion, Inputs, Verdict};
pub use declaration::Card;
use declaration::Declaration;
pub use observation::{Mode, ObservedFetch, RequestProfile, Wire};
pub use record::Privacy;
use record::{CardFindings, Evaluated, RecordContext};
use serde_json::Value;

/// What to walk and how to sign the record's witness block.
#[derive(Debug, Clone)]
pub struct WalkRequest {
    /// The origin as given; trailing `/` are removed to form `base`.
    pub origin: String,
    pub endpoint: Option<String>,
    pub mode: Mode,
    pub wire: Wire,
    pub witness: Witness,
    pub vantage_limitation: Option<String>,
    pub contract_sha256: Option<String>,
    pub privacy: Privacy,
    /// How n3 is asked and read in mcp mode (§2.6.1).
    pub profile: RequestProfile,
    /// `[witness] caller_card` (witness-pool.md §6.4): added to the n3 message of a2a-mode
    /// walks. Only the daemon's scheduled targets set it; on-demand, MCP and reciprocal walks
    /// leave it None (a reciprocal walk that asked back would start an endless exchange).
    pub caller_card: Option<String>,
}

impl WalkRequest {
    pub fn base(&self) -> String {
        self.origin.trim_end_matches('/').to_string()
    }

    pub fn card_url(&self) -> String {
        format!("{}{}", self.base(), spec::CARD_PATH)
    }
}

/// One finished walk: the bytes to store and file, and what a summary needs.
#[derive(Debug, Clone)]
pub struct WalkOutcome {
    /// The canonical bytes of the record filed (full, hash-only or commitment): the identity
    /// and what gets signed. [`WalkOutcome::record`] parses them.
    pub canonical: Vec<u8>,
    pub sha256: String,
    /// Commitment privacy: the kept full record's canonical bytes and its salt (hex).
    pub kept: Option<(Vec<u8>, String)>,
    pub verdict: Verdict,
    pub assertions: Vec<Assertion>,
    pub nodes: Vec<ObservedFetch>,
    pub target: Option<String>,
    pub card: Option<Card>,
    /// The card's `params.witness_intake` when it is a string: where the record is filed.
    pub witness_intake: Option<String>,
    /// conduct-walker's own verification of a signed card, kept beside the record (store,
    /// pages, MCP), never in it.
    pub card_verification: Option<Value>,
    /// conduct-walker's check of the card's A2A Terms listing, kept beside the record.
    pub terms: Option<Value>,
    /// The agent's `EXT/reciprocal` answer to our `caller_card` (§11.6), clipped; kept beside
    /// the record. None when the walk sent no caller_card or the reply carries no string there.
    pub reciprocal: Option<String>,
}

impl WalkOutcome {
    /// The filed record, parsed from its canonical bytes (numbers keep their exact text).
    pub fn record(&self) -> Value {
        crate::json::parse_lenient(&self.canonical).expect("a record's canonical bytes are JSON")
    }
}

/// §2.6 the n3 request for a mode, wire and (§2.6.1) request profile.
pub fn n3_request(mode: Mode, wire: Wire, profile: RequestProfile, target: &str) -> HttpRequest {
    n3_request_with_caller_card(mode, wire, profile, target, None)
}

/// [`n3_request`], with `caller_card` (witness-pool.md §6.4) in the message's metadata in a2a
/// mode; mcp mode never carries it.
pub fn n3_request_with_caller_card(
    mode: Mode,
    wire: Wire,
    profile: RequestProfile,
    target: &str,
    caller_card: Option<&str>,
) -> HttpRequest {
    let (extensions_header, version) = match wire {
        Wire::V1_0 => ("A2A-Extensions", "1.0"),
        Wire::V0_3 => ("X-A2A-Extensions", "0.3"),
    };
    let accept = if profile.reads_sse(mode) {
        spec::ACCEPT_MCP_STREAMABLE_HTTP
    } else {
        spec::ACCEPT_JSON
    };
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", accept),
        (extensions_header, spec::EXT),
    ];
    let body = match mode {
        // mcp sends no A2A-Version; the extensions spelling follows the wire (ref, §8.3 #13).
        Mode::Mcp => spec::BODY_MCP_INITIALIZE.as_bytes().to_vec(),
        Mode::A2a => {
            headers.push(("A2A-Version", version));
            a2a_body(wire, caller_card).into_bytes()
        }
    };
    let mut request = HttpRequest::post(target, &headers, body);
    if profile.reads_sse(mode) {
        request.read = BodyRead::SseUntilResponse(spec::N3_JSONRPC_ID);
    }
    request
}

/// The a2a-mode n3 body: the §2.6 constant, or, with a caller card, the same object with
/// `"metadata": {EXT/caller_card: url}` as the message's last member, written as Python's
/// `json.dumps` writes it (default separators, ensure_ascii), so only that member differs.
pub fn a2a_body(wire: Wire, caller_card: Option<&str>) -> String {
    let constant = match wire {
        Wire::V1_0 => spec::BODY_A2A_1_0,
        Wire::V0_3 => spec::BODY_A2A_0_3,
    };
    let Some(url) = caller_card else {
        return constant.to_string();
    };
    // Both constants end with the message, params and envelope closing, in that order.
    let open = constant
        .strip_suffix("}}}")
        .expect("the a2a bodies end by closing message, params and envelope");
    let mut body = String::with_capacity(constant.len() + url.len() + 96);
    body.push_str(open);
    body.push_str(", \"metadata\": {");
    crate::canonical::write_ascii_string(&mut body, spec::CALLER_CARD_KEY);
    body.push_str(": ");
    crate::canonical::write_ascii_string(&mut body, url);
    body.push_str("}}}}");
    body
}

/// The agent's `EXT/reciprocal` answer in n3's reply metadata, located as metadata_echoed
/// locates the conduct keys (§2.8), else in `result.metadata` itself (a message sent as the
/// result whatever the wire, as our own witness face answers); a2a mode only. A string only,
/// clipped to [`spec::RECIPROCAL_MAX_CHARS`]: it is a stranger's text.
pub fn reciprocal_answer(inputs: &Inputs) -> Option<String> {
    if inputs.mode != Mode::A2a {
        return None;
    }
    let clip = |text: &str| text.chars().take(spec::RECIPROCAL_MAX_CHARS).collect();
    let reply = assertions::read_reply(inputs);
    if let Some(metadata) = &reply.metadata
        && let Some(text) = metadata
            .object()
            .get(spec::RECIPROCAL_KEY)
            .and_then(|v| v.as_str())
    {
        return Some(clip(text));
    }
    let message = assertions::n3_reply_message(inputs.mode, inputs.profile, inputs.n3?)?;
    let root = message.root();
    let text = root
        .get("result")?
        .get("metadata")?
        .get(spec::RECIPROCAL_KEY)?
        .as_str()?;
    Some(clip(text))
}

/// MCP session management: when the initialize answer opened a session (a JSON-RPC result
/// with `Mcp-Session-Id`), the request that ends it (`DELETE` with that id, and the negotiated
/// protocol version when the answer named one). Sent after n3 and kept out of the record, so
/// walks leave no orphaned sessions on the servers they measure. None in a2a mode, without a
/// session, or when initialize failed (mcp 2.3.0 names a session on its 406, then forgets it).
pub fn mcp_session_end_request(
    mode: Mode,
    profile: RequestProfile,
    n3: &ObservedFetch,
) -> Option<HttpRequest> {
    if mode != Mode::Mcp {
        return None;
    }
    let session_id = n3.exchange.header("mcp-session-id")?;
    let reply = assertions::n3_reply_message(mode, profile, n3)?;
    let result = reply.root().get("result").filter(|r| !r.is_null())?;
    let mut headers = vec![("Mcp-Session-Id", session_id)];
    if let Some(version) = result.get("protocolVersion").and_then(|v| v.as_str()) {
        headers.push(("MCP-Protocol-Version", version));
    }
    Some(HttpRequest {
        method: "DELETE",
        ..HttpRequest::get(n3.exchange.request.url.clone(), &headers)
    })
}

async fn end_mcp_session(session: &Session, request: &WalkRequest, n3: &ObservedFetch) {
    let Some(delete) = mcp_session_end_request(request.mode, request.profile, n3) else {
        return;
    };
    let answer = session.fetch(&delete).await;
    tracing::debug!(
        url = %delete.url,
        status = answer.status,
        error = answer.transport_error.as_deref().unwrap_or(""),
        "ended the MCP session n3 opened"
    );
}

/// §2.3 the card fetch (n0 and n1).
pub fn card_request(card_url: &str) -> HttpRequest {
    HttpRequest::get(card_url, &[("Accept", "application/json")])
}

/// §2.3: the card is n1's body read as the reference reads it (CPython's `json.loads` of the
/// UTF-8 text: `crate::json::read`), only when n1 answered 200. Any shape under the body cap
/// is read, into a document whose size follows the text (§8.3 items 21–22).
pub fn parse_card(n1: &ObservedFetch) -> Option<Card> {
    if n1.status() != 200 {
        return None;
    }
    crate::json::read(&n1.exchange.body, crate::json::ReadOptions::LENIENT)
        .ok()
        .map(std::sync::Arc::new)
}

/// The card findings the reference walker 1.5.0 writes (§4.3): its `card_signature` block with
/// the attribution lines, no terms block. `jwks` is what the walk's request to the first
/// entry's `jku` observed ([`fetch_jwks`]).
pub fn reference_card_findings(
    card: Option<&Card>,
    base: &str,
    jwks: Option<&JwksAnswer>,
) -> CardFindings {
    let built = crate::card_signature::walk_block::build(card.map(|c| c.root()), base, jwks);
    CardFindings {
        card_signature: built.block,
        card_establishes: built.establishes,
        attribution_lines: built.does_not_establish,
        verification: None,
        terms: None,
    }
}

/// §4.3 C.1: GET the first signature entry's https `jku` through the walk's session (a node's
/// rules, caps and headers), after n2 and before n3. Not a node: it never affects an assertion.
/// None when the card names no https `jku`.
pub async fn fetch_jwks(session: &Session, card: Option<&Card>) -> Option<JwksAnswer> {
    use crate::card_signature::walk_block::{jwks_request_url, jwks_url};
    let jku = jwks_url(card.map(|c| c.root()))?;
    // A jku the reference cannot send is not sent: "not fetched", status 0, as it records.
    let Ok(url) = jwks_request_url(&jku) else {
        return Some(JwksAnswer {
            status: 0,
            body: Vec::new(),
        });
    };
    let exchange = session.fetch(&card_request(&url)).await;
    Some(JwksAnswer {
        status: exchange.status,
        body: exchange.body,
    })
}

/// The card reduced to its `signatures` member (all the header reading looks at), as a
/// `Value`; None when the card is not an object.
pub fn signatures_only(card: Option<&Card>) -> Option<Value> {
    let card = card?.root();
    let card = card.as_object()?;
    let mut map = serde_json::Map::new();
    if let Some(signatures) = card.get("signatures") {
        map.insert("signatures".into(), signatures.to_value());
    }
    Some(Value::Object(map))
}

/// Whether the card lists `uri` under `capabilities.extensions[]`.
pub fn card_lists_extension(card: &Card, uri: &str) -> bool {
    card.root()
        .get("capabilities")
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.as_array())
        .is_some_and(|list| {
            list.iter()
                .any(|ext| ext.get("uri").and_then(|u| u.as_str()) == Some(uri))
        })
}

/// Walk one agent: n0, n1, the JWKS of a signed card, n3 over the transport, then the pure
/// core. Never fails: transport trouble is recorded in the nodes (§2.2). `card_findings`
/// decides the card_signature and terms blocks from the parsed card, its bytes and the JWKS
/// answer (`crate::findings::card_findings`, or [`reference_card_findings`] alone).
pub async fn run<F, Fut>(
    transport: &Transport,
    request: &WalkRequest,
    clock: &dyn Clock,
    salt: [u8; 32],
    card_findings: F,
) -> WalkOutcome
where
    F: FnOnce(Option<Card>, Vec<u8>, Option<JwksAnswer>) -> Fut,
    Fut: std::future::Future<Output = CardFindings>,
{
    run_with_steps(transport, request, clock, salt, card_findings, &|_| {}).await
}

/// Called with a node's number (0, 1, 3) just before its request is sent: how a face reports
/// a long walk's progress.
pub type OnNode<'a> = &'a (dyn Fn(u8) + Send + Sync);

/// [`run`], telling `on_node` before each request leaves.
pub async fn run_with_steps<F, Fut>(
    transport: &Transport,
    request: &WalkRequest,
    clock: &dyn Clock,
    salt: [u8; 32],
    card_findings: F,
    on_node: OnNode<'_>,
) -> WalkOutcome
where
    F: FnOnce(Option<Card>, Vec<u8>, Option<JwksAnswer>) -> Fut,
    Fut: std::future::Future<Output = CardFindings>,
{
    let walked_at = walked_at(clock.now());
    let session = transport.session();
    let card_url = request.card_url();
    on_node(0);
    let n0 = ObservedFetch::new(0, session.fetch(&card_request(&card_url)).await);
    on_node(1);
    let n1 = ObservedFetch::new(1, session.fetch(&card_request(&card_url)).await);
    let card = parse_card(&n1);
    let declaration = declaration::locate_and_validate(card.as_ref());
    let target = declaration::choose_target(request.endpoint.as_deref(), &declaration);
    let jwks = fetch_jwks(&session, card.as_ref()).await;
    let n3 = match &target {
        Some(t) => {
            on_node(3);
            Some(ObservedFetch::new(
                3,
                session
                    .fetch(&n3_request_with_caller_card(
                        request.mode,
                        request.wire,
                        request.profile,
                        t,
                        request.caller_card.as_deref(),
                    ))
                    .await,
            ))
        }
        None => None,
    };
    if let Some(n3) = &n3 {
        end_mcp_session(&session, request, n3).await;
    }
    // The card findings get the parsed card and n1's exact bytes (signature checks need both).
    let card_bytes = if card.is_some() {
        n1.exchange.body.clone()
    } else {
        Vec::new()
    };
    let findings = card_findings(card.clone(), card_bytes, jwks).await;
    let observed = Observed {
        walked_at,
        n0,
        n1,
        n3,
        card,
        declaration,
        target,
    };
    finish(request, observed, &findings, salt)
}

/// A walk's observations and what the card said, before evaluation.
#[derive(Debug, Clone)]
pub struct Observed {
    pub walked_at: String,
    pub n0: ObservedFetch,
    pub n1: ObservedFetch,
    pub n3: Option<ObservedFetch>,
    pub card: Option<Card>,
    pub declaration: Declaration,
    pub target: Option<String>,
}

/// Build the outcome from observed nodes (pure; shared by [`run`], tests and benchmarks).
pub fn finish(
    request: &WalkRequest,
    observed: Observed,
    findings: &CardFindings,
    salt: [u8; 32],
) -> WalkOutcome {
    let Observed {
        walked_at,
        n0,
        n1,
        n3,
        card,
        declaration,
        target,
    } = observed;
    let inputs = Inputs {
        mode: request.mode,
        wire: request.wire,
        profile: request.profile,
        n0: &n0,
        n1: &n1,
        n3: n3.as_ref(),
        card: card.as_ref(),
        declaration: &declaration,
        target: target.as_deref(),
    };
    let assertions = assertions::evaluate(&inputs);
    let verdict = assertions::verdict(&assertions);
    // Only an answer to our own ask is kept: without a caller_card the value means nothing.
    let reciprocal = request
        .caller_card
        .as_ref()
        .and_then(|_| reciprocal_answer(&inputs));
    let ctx = RecordContext {
        base: request.base(),
        walked_at,
        mode: request.mode,
        wire: request.wire,
        witness: request.witness.clone(),
        vantage_limitation: request.vantage_limitation.clone(),
        contract_sha256: request.contract_sha256.clone(),
        walker: Walker::this(),
        profile: request.profile,
    };
    let built = record::build(
        &ctx,
        &Evaluated {
            n0: &n0,
            n1: &n1,
            n3: n3.as_ref(),
            declaration: &declaration,
            target: target.as_deref(),
            assertions: &assertions,
            verdict,
        },
        findings,
        request.privacy,
        salt,
    );
    let canonical = built.filed;
    let sha256 = sha256_hex(&canonical);
    let witness_intake = declaration.param_str("witness_intake").map(str::to_string);
    let mut nodes = vec![n0, n1];
    nodes.extend(n3);
    WalkOutcome {
        canonical,
        sha256,
        kept: built.kept,
        verdict,
        assertions,
        nodes,
        target,
        card,
        witness_intake,
        card_verification: findings.verification.clone(),
        terms: findings.terms.clone(),
        reciprocal,
    }
}

#[cfg(test)]
mod caller_card_tests {
    use super::*;
    use crate::net::Exchange;
    use serde_json::json;
    use std::io::Write;
    use std::process::{Command, Stdio};

    const CARD: &str = "https://walker.example/.well-known/agent-card.json";

    /// What CPython's `json.dumps` (default separators, ensure_ascii) writes for each a2a
    /// constant with `metadata: {EXT/caller_card: url}` appended to the message.
    fn cpython_bodies(cases: &[(&str, &str)]) -> Vec<String> {
        const SCRIPT: &str = r#"
import json, sys
for line in sys.stdin:
    constant, key, url = json.loads(line)
    body = json.loads(constant)
    body["params"]["message"]["metadata"] = {key: url}
    print(json.dumps(body))
"#;
        let mut child = Command::new("python3")
            .args(["-c", SCRIPT])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 is this test's oracle");
        let mut input = String::new();
        for (constant, url) in cases {
            input.push_str(&json!([constant, spec::CALLER_CARD_KEY, url]).to_string());
            input.push('\n');
        }
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_caller_card_body_is_what_cpython_writes() {
        let urls = [
            CARD,
            // Not a URL the config takes, but the writer must still match Python byte for byte.
            "https://wälker.example/.well-known/agent-card.json?q=\"\\\u{7f}\u{1}😂",
        ];
        let mut cases = Vec::new();
        for wire in [Wire::V1_0, Wire::V0_3] {
            for url in urls {
                cases.push((wire, url));
            }
        }
        let constants: Vec<(&str, &str)> = cases
            .iter()
            .map(|(wire, url)| (a2a_body(*wire, None).leak() as &str, *url))
            .collect();
        let expected = cpython_bodies(&constants);
        assert_eq!(expected.len(), cases.len());
        for ((wire, url), python) in cases.iter().zip(&expected) {
            let ours = a2a_body(*wire, Some(url));
            assert_eq!(&ours, python, "{wire:?} {url}");
            let sent = n3_request_with_caller_card(
                Mode::A2a,
                *wire,
                RequestProfile::Spec,
                "https://a.example/a2a",
                Some(url),
            );
            assert_eq!(sent.body.as_deref(), Some(python.as_bytes()), "{wire:?}");
            // The headers are the plain request's: only the body changes.
            let plain = n3_request(
                Mode::A2a,
                *wire,
                RequestProfile::Spec,
                "https://a.example/a2a",
            );
            assert_eq!(sent.headers, plain.headers);
        }
    }

    #[test]
    fn without_a_caller_card_and_in_mcp_mode_the_bodies_are_the_constants() {
        for (wire, constant) in [
            (Wire::V1_0, spec::BODY_A2A_1_0),
            (Wire::V0_3, spec::BODY_A2A_0_3),
        ] {
            for profile in [RequestProfile::Spec, RequestProfile::Reference] {
                let plain = n3_request(Mode::A2a, wire, profile, "https://a.example/a2a");
                assert_eq!(plain.body.as_deref(), Some(constant.as_bytes()));
                let none = n3_request_with_caller_card(
                    Mode::A2a,
                    wire,
                    profile,
                    "https://a.example/a2a",
                    None,
                );
                assert_eq!(none.body.as_deref(), Some(constant.as_bytes()));
                let mcp = n3_request_with_caller_card(
                    Mode::Mcp,
                    wire,
                    profile,
                    "https://a.example/mcp",
                    Some(CARD),
                );
                assert_eq!(
                    mcp.body.as_deref(),
                    Some(spec::BODY_MCP_INITIALIZE.as_bytes())
                );
            }
        }
    }

    fn n3_answering(reply: &Value) -> ObservedFetch {
        ObservedFetch::new(
            3,
            Exchange {
                request: n3_request(
                    Mode::A2a,
                    Wire::V1_0,
                    RequestProfile::Spec,
                    "https://a.example/a2a",
                ),
                status: 200,
                response_headers: vec![("content-type".into(), "application/json".into())],
                body: serde_json::to_vec(reply).unwrap(),
                duration_ms: 1,
                transport_error: None,
                cut_answer: None,
            },
        )
    }

    fn reciprocal_of(mode: Mode, wire: Wire, result: Value) -> Option<String> {
        let n3 = n3_answering(&json!({"jsonrpc": "2.0", "id": 1, "result": result}));
        let none = ObservedFetch::new(
            0,
            Exchange {
                request: card_request("https://a.example/.well-known/agent-card.json"),
                status: 404,
                response_headers: Vec::new(),
                body: Vec::new(),
                duration_ms: 1,
                transport_error: None,
                cut_answer: None,
            },
        );
        let declaration = declaration::locate_and_validate(None);
        reciprocal_answer(&Inputs {
            mode,
            wire,
            profile: RequestProfile::Spec,
            n0: &none,
            n1: &none,
            n3: Some(&n3),
            card: None,
            declaration: &declaration,
            target: Some("https://a.example/a2a"),
        })
    }

    #[test]
    fn the_reciprocal_answer_is_read_where_the_reply_metadata_sits() {
        let md = |v: Value| json!({ spec::RECIPROCAL_KEY: v });
        let message =
            |v: Value| json!({"kind": "message", "role": "agent", "parts": [], "metadata": md(v)});
        let scheduled = Some("scheduled".to_string());
        // 1.0: under result.message, under result.task, or the message as the result itself.
        assert_eq!(
            reciprocal_of(
                Mode::A2a,
                Wire::V1_0,
                json!({"message": {"metadata": md(json!("scheduled"))}})
            ),
            scheduled
        );
        assert_eq!(
            reciprocal_of(
                Mode::A2a,
                Wire::V1_0,
                json!({"task": {"metadata": md(json!("declined"))}})
            ),
            Some("declined".to_string())
        );
        assert_eq!(
            reciprocal_of(Mode::A2a, Wire::V1_0, message(json!("scheduled"))),
            scheduled
        );
        // 0.3: the message is the result; a task carries it in its status message.
        assert_eq!(
            reciprocal_of(Mode::A2a, Wire::V0_3, message(json!("scheduled"))),
            scheduled
        );
        assert_eq!(
            reciprocal_of(
                Mode::A2a,
                Wire::V0_3,
                json!({"kind": "task", "status": {"message": {"metadata": md(json!("scheduled"))}}})
            ),
            scheduled
        );
        // Only a string is kept, clipped; nothing in mcp mode or without the key.
        assert_eq!(
            reciprocal_of(Mode::A2a, Wire::V0_3, message(json!(true))),
            None
        );
        let long = "x".repeat(500);
        assert_eq!(
            reciprocal_of(Mode::A2a, Wire::V0_3, message(json!(long))),
            Some("x".repeat(spec::RECIPROCAL_MAX_CHARS))
        );
        assert_eq!(
            reciprocal_of(Mode::Mcp, Wire::V0_3, message(json!("scheduled"))),
            None
        );
        assert_eq!(
            reciprocal_of(
                Mode::A2a,
                Wire::V0_3,
                json!({"kind": "message", "metadata": {}})
            ),
            None
        );
    }
}
