//! How a walk talks HTTP to a real server (conduct-walk.md §2.2, §2.6.1): `Connection: close`
//! and one connection per request, the response's connection headers in `headers_sha256`,
//! and MCP Streamable HTTP under the `spec` and `reference` request profiles. The sandbox
//! server's wire log is what it wrote below HTTP, so the headers hyper adds are in it.

mod common;

use common::*;
use conduct_walker::digest::headers_sha256;
use conduct_walker::sandbox::agent::SANDBOX_MCP_SESSION_ID;
use conduct_walker::sandbox::{
    Behaviour, HttpsServer, McpServing, Req, Resp, SandboxAgent, SandboxCa, handler,
};
use conduct_walker::walk::assertions::NOTE_ANSWERED_SSE_WITHOUT_RESPONSE;
use conduct_walker::walk::spec::{REPLAY_HOW_REFERENCE, REPLAY_HOW_SPEC};
use conduct_walker::walk::{Mode, RequestProfile, WalkOutcome, Wire};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// §2.2's header map: lower-case names in arrival order, a repeated name keeps its last value.
fn hash_as_walker_keeps(headers: &[(String, String)]) -> String {
    let mut kept: Vec<(&str, &str)> = Vec::new();
    for (name, value) in headers {
        match kept.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = value,
            None => kept.push((name, value)),
        }
    }
    headers_sha256(kept)
}

async fn walk_agent(
    ca: &SandboxCa,
    agent: &SandboxAgent,
    mode: Mode,
    profile: RequestProfile,
    deadline: Option<Duration>,
) -> WalkOutcome {
    let origin = agent.origin();
    let t = transport(ca, &[&origin], deadline);
    let mut req = request(&origin, None, mode, Wire::V1_0);
    req.profile = profile;
    walk_with(&t, &req).await
}

#[tokio::test]
async fn every_walk_request_asks_connection_close_on_a_connection_of_its_own() {
    let ca = SandboxCa::generate();
    // A server that records the headers of each request it gets, serving a sandbox card.
    // (method and path, the Connection header) of each request, in arrival order.
    type Seen = Vec<(String, Option<String>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let log = seen.clone();
    let card = Behaviour::default();
    let recorder = HttpsServer::start(
        &ca,
        handler(move |req: Req| {
            log.lock().unwrap().push((
                format!("{} {}", req.method, req.path),
                req.header("connection").map(str::to_string),
            ));
            if req.method == "GET" {
                Resp::json(200, &card.card(&req.base))
            } else {
                Resp::json(
                    200,
                    &serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
                )
            }
        }),
    )
    .await
    .unwrap();
    let origin = recorder.base();
    let t = transport(&ca, &[&origin], None);
    let o = walk_with(&t, &request(&origin, None, Mode::Mcp, Wire::V1_0)).await;
    assert_eq!(o.nodes.len(), 3);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            (
                "GET /.well-known/agent-card.json".to_string(),
                Some("close".to_string())
            ),
            (
                "GET /.well-known/agent-card.json".to_string(),
                Some("close".to_string())
            ),
            ("POST /mcp".to_string(), Some("close".to_string())),
        ]
    );
    assert_eq!(
        recorder.wire_log().connections(),
        3,
        "one connection per request"
    );
    // Connection is a transport header: not in the request-side hashed set (§2.2).
    for node in &o.nodes {
        assert!(
            node.exchange
                .request
                .headers
                .iter()
                .all(|(k, _)| !k.eq_ignore_ascii_case("connection"))
        );
    }
}

#[tokio::test]
async fn response_headers_sha256_covers_the_connection_close_the_server_sent() {
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let o = walk_agent(&ca, &agent, Mode::A2a, RequestProfile::Spec, None).await;
    assert!(o.verdict.ok, "{:?}", o.assertions);
    let heads = agent.server.wire_log().first_response_heads();
    assert_eq!(heads.len(), 3, "n0, n1 and n3 each on its own connection");
    for (node, head) in o.nodes.iter().zip(&heads) {
        let (status, sent) = head.clone().expect("a whole response head was written");
        assert_eq!(status, node.status());
        assert!(
            sent.iter().any(|(k, v)| k == "connection" && v == "close"),
            "n{}: the server answered Connection: close ({sent:?})",
            node.n
        );
        assert_eq!(
            node.response_headers_sha256,
            hash_as_walker_keeps(&sent),
            "n{}: headers_sha256 is over every header the server sent",
            node.n
        );
        let without_connection: Vec<(String, String)> = sent
            .iter()
            .filter(|(k, _)| k != "connection")
            .cloned()
            .collect();
        assert_ne!(
            node.response_headers_sha256,
            hash_as_walker_keeps(&without_connection)
        );
    }
}

#[tokio::test]
async fn sandbox_keeps_a_connection_alive_when_not_asked_to_close() {
    // The sandbox answers like a real server: keep-alive unless the client says close.
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let client = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_der(ca.cert_der().as_ref()).unwrap()])
        .build()
        .unwrap();
    let url = format!("{}/.well-known/agent-card.json", agent.origin());
    for _ in 0..2 {
        let resp = client.get(&url).send().await.unwrap();
        assert!(resp.headers().get("connection").is_none());
        resp.bytes().await.unwrap();
    }
    assert_eq!(agent.server.wire_log().connections(), 1);
}

fn streamable(session: bool) -> Behaviour {
    Behaviour {
        mcp: McpServing::EventStream { session },
        ..Behaviour::default()
    }
}

#[tokio::test]
async fn spec_profile_reads_the_sse_answer_up_to_the_response_and_ends_the_session() {
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, streamable(true)).await.unwrap();
    // The stream stays open for minutes after the response: a reader that waited for its end
    // would hit this deadline and record status 0.
    let o = walk_agent(
        &ca,
        &agent,
        Mode::Mcp,
        RequestProfile::Spec,
        Some(Duration::from_secs(5)),
    )
    .await;
    assert_eq!((o.verdict.n_pass, o.verdict.n_total), (4, 4));
    assert_eq!(result(&o, "measured_endpoint_answered"), Some(true));
    let n3 = &o.nodes[2];
    assert_eq!(n3.status(), 200);
    let body = String::from_utf8(n3.exchange.body.clone()).unwrap();
    assert!(
        body.starts_with(
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\""
        ),
        "{body}"
    );
    assert!(
        body.ends_with(
            "\"serverInfo\":{\"name\":\"conduct-walker sandbox\",\"version\":\"1\"}}}\n\n"
        ),
        "the body ends where the response event ends: {body}"
    );
    assert_eq!(
        n3.exchange.request.headers[1],
        (
            "Accept".to_string(),
            "application/json, text/event-stream".to_string()
        )
    );
    assert_eq!(o.record()["replay"]["how"], REPLAY_HOW_SPEC);
    assert_eq!(
        o.nodes[2].exchange.header("mcp-session-id"),
        Some(SANDBOX_MCP_SESSION_ID)
    );
    assert_eq!(agent.sessions_ended(), 1, "the session n3 opened was ended");
}

#[tokio::test]
async fn reference_profile_is_refused_406_by_an_sdk_default_server() {
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, streamable(true)).await.unwrap();
    let o = walk_agent(&ca, &agent, Mode::Mcp, RequestProfile::Reference, None).await;
    assert_eq!(o.nodes[2].status(), 406);
    assert_eq!(result(&o, "measured_endpoint_answered"), Some(false));
    assert_eq!(note(&o, "measured_endpoint_answered"), None);
    assert_eq!(
        o.nodes[2].request_headers_sha256,
        "7b46c49e340f41919f0b4a5c387861af306a10e74818ba12cc9785d4c476edd8"
    );
    assert_eq!(o.record()["replay"]["how"], REPLAY_HOW_REFERENCE);
    assert_eq!(agent.sessions_ended(), 0, "no session was opened");
}

#[tokio::test]
async fn stateless_streamable_server_is_answered_and_nothing_is_deleted() {
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, streamable(false)).await.unwrap();
    let o = walk_agent(&ca, &agent, Mode::Mcp, RequestProfile::Spec, None).await;
    assert_eq!(result(&o, "measured_endpoint_answered"), Some(true));
    assert_eq!(
        agent.server.wire_log().connections(),
        3,
        "no DELETE was sent"
    );
}

#[tokio::test]
async fn a_stream_that_ends_without_the_response_is_not_answered_and_says_why() {
    let ca = SandboxCa::generate();
    let behaviour = Behaviour {
        mcp: McpServing::StreamEndsWithoutResponse,
        ..Behaviour::default()
    };
    let agent = SandboxAgent::start(&ca, behaviour).await.unwrap();
    let o = walk_agent(&ca, &agent, Mode::Mcp, RequestProfile::Spec, None).await;
    assert_eq!(o.nodes[2].status(), 200);
    assert_eq!(result(&o, "measured_endpoint_answered"), Some(false));
    assert_eq!(
        note(&o, "measured_endpoint_answered").as_deref(),
        Some(NOTE_ANSWERED_SSE_WITHOUT_RESPONSE)
    );
}

#[tokio::test]
async fn a_stream_that_never_answers_is_cut_at_the_deadline_with_a_clear_error() {
    let ca = SandboxCa::generate();
    let behaviour = Behaviour {
        mcp: McpServing::StreamNeverAnswers,
        ..Behaviour::default()
    };
    let agent = SandboxAgent::start(&ca, behaviour).await.unwrap();
    let o = walk_agent(
        &ca,
        &agent,
        Mode::Mcp,
        RequestProfile::Spec,
        Some(Duration::from_secs(2)),
    )
    .await;
    let n3 = &o.nodes[2];
    assert_eq!(n3.status(), 0);
    assert_eq!(
        n3.exchange.transport_error.as_deref(),
        Some("timed out: the event stream delivered no JSON-RPC response with id 1 within 2 s")
    );
    assert_eq!(result(&o, "measured_endpoint_answered"), Some(false));
}

#[tokio::test]
async fn a2a_walks_are_the_same_under_both_profiles() {
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let spec = walk_agent(&ca, &agent, Mode::A2a, RequestProfile::Spec, None).await;
    let reference = walk_agent(&ca, &agent, Mode::A2a, RequestProfile::Reference, None).await;
    let digests = |o: &WalkOutcome| -> Vec<(String, Option<String>, String, String)> {
        o.nodes
            .iter()
            .map(|n| {
                (
                    n.request_headers_sha256.clone(),
                    n.request_body_sha256.clone(),
                    n.body_sha256.clone(),
                    n.exchange.request.url.clone(),
                )
            })
            .collect()
    };
    assert_eq!(digests(&spec), digests(&reference));
    assert_eq!(spec.assertions, reference.assertions);
}
