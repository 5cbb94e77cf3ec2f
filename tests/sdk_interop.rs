//! Interop with the official SDKs: the walker against real servers built with a2a-sdk 1.3.0
//! and mcp 2.3.0 (pinned in `tests/sdk/requirements.txt`), served by uvicorn (h11) over
//! loopback HTTPS. Each test starts the one server it needs (`tests/sdk/*.py`); every server
//! keeps an access log taken from the wire, so what the walker recorded is checked against
//! what the server actually received and wrote.
//!
//! The first run builds `target/sdk-venv` (pip, PyPI); later runs reuse it.

mod common;
mod sdk_support;

use common::{assertion, result, walk_with};
use conduct_walker::walk::{Mode, RequestProfile, WalkOutcome, Wire};
use sdk_support::{LogEntry, SdkServer, Tls, expected_headers_sha256, walker_header_map};

const CARD_PATH: &str = "/.well-known/agent-card.json";
const A2A_PATH: &str = "/a2a";
const MCP_PATH: &str = "/mcp";
const JWKS_PATH: &str = "/.well-known/jwks.json";
const SIGNING_KID: &str = "conduct-interop-p256-1";

/// §2.7: `accept: application/json` (n0, n1).
const CARD_REQUEST_HEADERS_SHA256: &str =
    "6ef25204daf0747948b5d550c49e655279e7bf3cded1c74ce45c7958f97d4d47";
/// §2.7: the a2a 1.0 n3 request headers.
const A2A_10_REQUEST_HEADERS_SHA256: &str =
    "bd88e3920f2cfa34ec68d6aafefa60fbeca168fd5a25b023cf112a229ec6e4d3";
/// §2.7: the a2a 0.3 n3 request headers.
const A2A_03_REQUEST_HEADERS_SHA256: &str =
    "386af1803de9c6530ad35d2acf6e80a5cacb607c1513de652d93d8e2e50dcdaa";
/// §2.7: the reference's mcp n3 request headers (`Accept: application/json` only).
const MCP_REFERENCE_REQUEST_HEADERS_SHA256: &str =
    "7b46c49e340f41919f0b4a5c387861af306a10e74818ba12cc9785d4c476edd8";

async fn walk(
    tls: &Tls,
    server: &SdkServer,
    endpoint: Option<String>,
    mode: Mode,
    wire: Wire,
    profile: RequestProfile,
) -> WalkOutcome {
    let transport = common::transport(&tls.ca, &[&server.origin], None);
    let mut request = common::request(&server.origin, endpoint, mode, wire);
    request.profile = profile;
    walk_with(&transport, &request).await
}

/// Every assertion as `name=result (note)`, for failure messages.
fn summary(o: &WalkOutcome) -> String {
    o.assertions
        .iter()
        .map(|a| {
            format!(
                "{}={:?}{}",
                a.name,
                a.result,
                a.note
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("\n  ")
}

fn node(o: &WalkOutcome, n: u8) -> &conduct_walker::walk::ObservedFetch {
    o.nodes.iter().find(|f| f.n == n).unwrap_or_else(|| {
        panic!(
            "no node n{n}; nodes: {:?}",
            o.nodes.iter().map(|f| f.n).collect::<Vec<_>>()
        )
    })
}

/// The log entries of the walk's n0, n1 and n3, matched by order: the walk sends them one
/// after the other; other requests (a `jku` fetch, an MCP `DELETE`) have other paths or methods.
fn walk_entries(log: &[LogEntry], endpoint_path: &str) -> [LogEntry; 3] {
    let cards: Vec<&LogEntry> = log.iter().filter(|e| e.is("GET", CARD_PATH)).collect();
    let posts: Vec<&LogEntry> = log.iter().filter(|e| e.is("POST", endpoint_path)).collect();
    assert_eq!(
        cards.len(),
        2,
        "two card fetches in the access log: {log:#?}"
    );
    assert_eq!(
        posts.len(),
        1,
        "one POST to {endpoint_path} in the access log: {log:#?}"
    );
    let position = |e: &LogEntry| log.iter().position(|x| x.conn == e.conn && x.seq == e.seq);
    assert!(
        position(cards[0]) < position(cards[1]) && position(cards[1]) < position(posts[0]),
        "n0, n1, n3 in order in the access log: {log:#?}"
    );
    [cards[0].clone(), cards[1].clone(), posts[0].clone()]
}

/// What the walker recorded for one node agrees with what the server logged from the wire:
/// status, the `Connection: close` exchange (§2.2), the response header map and its hash.
fn assert_node_matches_wire(o: &WalkOutcome, n: u8, entry: &LogEntry) {
    let f = node(o, n);
    assert_eq!(f.exchange.status, entry.status, "n{n} status");
    assert!(
        entry
            .request_header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close")),
        "n{n}: the request carried Connection: close; received {:?}",
        entry.request_headers
    );
    assert!(
        entry
            .response_header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close")),
        "n{n}: the server answered Connection: close; wrote {:?}",
        entry.response_headers
    );
    let mut walker: Vec<(String, String)> = f.exchange.response_headers.clone();
    let mut wire = walker_header_map(&entry.response_headers);
    walker.sort();
    wire.sort();
    assert_eq!(
        walker, wire,
        "n{n}: the walker's response headers are the wire's"
    );
    assert_eq!(
        f.response_headers_sha256,
        expected_headers_sha256(&entry.response_headers),
        "n{n}: response headers_sha256 over the logged header block {:?}",
        entry.response_headers
    );
}

#[tokio::test]
async fn a2a_sdk_agent_honest_wire_1_0_passes_and_every_node_matches_the_wire() {
    let tls = Tls::new();
    let agent = SdkServer::start(&tls, "a2a_agent.py", &["--variant", "honest"]);
    let o = walk(
        &tls,
        &agent,
        None,
        Mode::A2a,
        Wire::V1_0,
        RequestProfile::Spec,
    )
    .await;

    assert!(
        o.verdict.ok && o.verdict.n_pass == 7 && o.verdict.n_total == 7,
        "verdict {:?}\n  {}",
        o.verdict,
        summary(&o)
    );
    assert_eq!(
        o.target.as_deref(),
        Some(format!("{}{A2A_PATH}", agent.origin).as_str())
    );
    assert_eq!(
        node(&o, 0).request_headers_sha256,
        CARD_REQUEST_HEADERS_SHA256
    );
    assert_eq!(
        node(&o, 3).request_headers_sha256,
        A2A_10_REQUEST_HEADERS_SHA256
    );

    let log = agent.access_log();
    let [n0, n1, n3] = walk_entries(&log, A2A_PATH);
    assert_node_matches_wire(&o, 0, &n0);
    assert_node_matches_wire(&o, 1, &n1);
    assert_node_matches_wire(&o, 3, &n3);
    assert_eq!(
        n3.request_header("a2a-extensions"),
        Some(conduct_walker::walk::spec::EXT)
    );
    assert_eq!(n3.request_header("a2a-version"), Some("1.0"));
}

#[tokio::test]
async fn a2a_sdk_agent_with_v0_3_compat_passes_on_wire_0_3() {
    let tls = Tls::new();
    let agent = SdkServer::start(&tls, "a2a_agent.py", &["--variant", "honest", "--compat03"]);
    let o = walk(
        &tls,
        &agent,
        None,
        Mode::A2a,
        Wire::V0_3,
        RequestProfile::Spec,
    )
    .await;

    assert!(
        o.verdict.ok && o.verdict.n_pass == 7 && o.verdict.n_total == 7,
        "verdict {:?}\n  {}",
        o.verdict,
        summary(&o)
    );
    assert_eq!(
        node(&o, 3).request_headers_sha256,
        A2A_03_REQUEST_HEADERS_SHA256
    );
    let n3 = node(&o, 3);
    assert_eq!(
        n3.x_a2a_extensions.as_deref(),
        Some(conduct_walker::walk::spec::EXT),
        "echoed under the 0.3 spelling"
    );
    let reply: serde_json::Value = serde_json::from_slice(&n3.exchange.body).unwrap();
    assert_eq!(
        reply["result"]["kind"], "message",
        "a 0.3-shaped answer: {reply}"
    );

    let log = agent.access_log();
    let [_, _, post] = walk_entries(&log, A2A_PATH);
    assert_eq!(
        post.request_header("x-a2a-extensions"),
        Some(conduct_walker::walk::spec::EXT)
    );
    assert_eq!(
        post.request_header("a2a-extensions"),
        None,
        "a 0.3 walk sends only the X- spelling"
    );
}

#[tokio::test]
async fn a2a_sdk_agent_bare_answers_but_neither_echoes_nor_binds() {
    let tls = Tls::new();
    let agent = SdkServer::start(&tls, "a2a_agent.py", &["--variant", "bare"]);
    let o = walk(
        &tls,
        &agent,
        None,
        Mode::A2a,
        Wire::V1_0,
        RequestProfile::Spec,
    )
    .await;
    let s = summary(&o);

    for name in [
        "card_bytes_stable",
        "conduct_ext_declared",
        "compensation_well_formed",
        "measured_endpoint_answered",
    ] {
        assert_eq!(result(&o, name), Some(true), "{name}\n  {s}");
    }
    assert_eq!(result(&o, "payment_required_as_declared"), None, "{s}");
    assert_eq!(result(&o, "extension_echoed"), Some(false), "{s}");
    assert_eq!(result(&o, "metadata_echoed"), Some(false), "{s}");
    // §3.8: the reply carries no metadata object, so there is nothing to bind.
    assert_eq!(result(&o, "endpoint_bound"), None, "{s}");
    assert!(
        assertion(&o, "endpoint_bound")
            .note
            .as_deref()
            .is_some_and(|n| n.starts_with("not applicable")),
        "{s}"
    );
    assert!(!o.verdict.ok);
    assert_eq!((o.verdict.n_pass, o.verdict.n_total), (4, 6), "{s}");
}

#[tokio::test]
async fn a2a_sdk_signed_card_verifies_with_the_key_from_its_jku() {
    // With --compat03 the SDK also serves the 0.3 card members (`url`, `protocolVersion`,
    // `preferredTransport`), merged in after signing: outside the signed payload, reported as
    // uncovered, and the signature still verifies.
    for compat03 in [false, true] {
        let tls = Tls::new();
        let mut args = vec!["--variant", "honest", "--sign"];
        if compat03 {
            args.push("--compat03");
        }
        let agent = SdkServer::start(&tls, "a2a_agent.py", &args);
        let o = walk(
            &tls,
            &agent,
            None,
            Mode::A2a,
            Wire::V1_0,
            RequestProfile::Spec,
        )
        .await;
        let record = o.record();
        let block = &record["card_signature"];

        assert_eq!(block["present"], true, "{args:?} {block:#}");
        assert_eq!(block["verified"], true, "{args:?} {block:#}");
        assert_eq!(block["alg"], "ES256", "{args:?} {block:#}");
        assert_eq!(block["kid"], SIGNING_KID, "{args:?} {block:#}");
        assert_eq!(
            block["jku"],
            format!("{}{JWKS_PATH}", agent.origin).as_str(),
            "{args:?} {block:#}"
        );
        assert_eq!(block["jku_same_host"], true, "{args:?} {block:#}");
        // The record's block is the reference 1.5.0's (conduct-walk.md §4.3): the SDK signs its
        // own form, which equals the served form unless the 0.3 members were merged in after
        // signing; then only the SDK form verifies and the compensation is not covered.
        let verified_in: Vec<&str> = block["signatures"][0]["verified_in"]
            .as_array()
            .expect("verified_in")
            .iter()
            .filter_map(|f| f.as_str())
            .collect();
        let expected: &[&str] = if compat03 {
            &["a2a-sdk-proto"]
        } else {
            &["served-rfc8785", "a2a-sdk-proto"]
        };
        assert_eq!(verified_in, expected, "{args:?} {block:#}");
        assert_eq!(
            block["covers_compensation"], !compat03,
            "{args:?} {block:#}"
        );
        // conduct-walker's own check, kept beside the record, says where the key came from
        // and which members the signature leaves out.
        let own = o.card_verification.as_ref().expect("the own check");
        assert_eq!(own["signatures"][0]["result"], "valid", "{args:?} {own:#}");
        assert_eq!(
            own["signatures"][0]["key_source"], "jku_same_host",
            "{args:?} {own:#}"
        );
        let uncovered: Vec<&str> = own["uncovered_members"]
            .as_array()
            .expect("uncovered_members")
            .iter()
            .filter_map(|u| u["member"].as_str())
            .collect();
        for member in ["/url", "/protocolVersion", "/preferredTransport"] {
            assert_eq!(
                uncovered.contains(&member),
                compat03,
                "{args:?}: {member} uncovered: {own:#}"
            );
        }
        // A signature never changes the verdict.
        assert!(o.verdict.ok, "{args:?}\n  {}", summary(&o));

        let log = agent.access_log();
        assert!(
            log.iter()
                .any(|e| e.is("GET", JWKS_PATH) && e.status == 200),
            "{args:?}: the verifier fetched the JWK Set: {log:#?}"
        );
    }
}

/// Walk an MCP SDK server in mcp mode under the spec profile (the default) and check it is
/// answered; a stateful server's session must be ended with a `DELETE` carrying its id.
async fn mcp_case(args: &[&str], stateful: bool) {
    let tls = Tls::new();
    let server = SdkServer::start(&tls, "mcp_server.py", args);
    let endpoint = format!("{}{MCP_PATH}", server.origin);
    let o = walk(
        &tls,
        &server,
        Some(endpoint),
        Mode::Mcp,
        Wire::V1_0,
        RequestProfile::default(),
    )
    .await;
    assert_eq!(
        result(&o, "measured_endpoint_answered"),
        Some(true),
        "{args:?}: n3 status {}\n  {}",
        node(&o, 3).exchange.status,
        summary(&o)
    );

    let log = server.access_log();
    let post = log
        .iter()
        .position(|e| e.is("POST", MCP_PATH))
        .unwrap_or_else(|| panic!("{args:?}: no POST {MCP_PATH} in the access log: {log:#?}"));
    assert_node_matches_wire(&o, 3, &log[post]);
    let session = log[post].response_header("mcp-session-id");
    let deletes: Vec<&LogEntry> = log.iter().filter(|e| e.is("DELETE", MCP_PATH)).collect();
    if stateful {
        let session = session.unwrap_or_else(|| {
            panic!("{args:?}: a stateful server hands out Mcp-Session-Id: {log:#?}")
        });
        let delete = log[post + 1..]
            .iter()
            .find(|e| e.is("DELETE", MCP_PATH))
            .unwrap_or_else(|| panic!("{args:?}: no DELETE after the POST: {log:#?}"));
        assert_eq!(
            delete.request_header("mcp-session-id"),
            Some(session),
            "{args:?}: the DELETE names the session the server handed out"
        );
        assert_eq!(
            delete.status, 200,
            "{args:?}: the server ended the session: {delete:#?}"
        );
        assert_eq!(deletes.len(), 1, "{args:?}: {log:#?}");
    } else {
        assert_eq!(
            session, None,
            "{args:?}: a stateless server hands out no session"
        );
        assert!(deletes.is_empty(), "{args:?}: nothing to end: {log:#?}");
    }
}

#[tokio::test]
async fn mcp_sdk_sse_stateful_is_answered_and_its_session_ended() {
    mcp_case(&[], true).await;
}

#[tokio::test]
async fn mcp_sdk_sse_stateless_is_answered() {
    mcp_case(&["--stateless"], false).await;
}

#[tokio::test]
async fn mcp_sdk_json_stateful_is_answered_and_its_session_ended() {
    mcp_case(&["--json-response"], true).await;
}

#[tokio::test]
async fn mcp_sdk_json_stateless_is_answered() {
    mcp_case(&["--json-response", "--stateless"], false).await;
}

#[tokio::test]
async fn mcp_sdk_default_under_the_reference_profile_is_refused_406() {
    let tls = Tls::new();
    let server = SdkServer::start(&tls, "mcp_server.py", &[]);
    let endpoint = format!("{}{MCP_PATH}", server.origin);
    let o = walk(
        &tls,
        &server,
        Some(endpoint),
        Mode::Mcp,
        Wire::V1_0,
        RequestProfile::Reference,
    )
    .await;
    let n3 = node(&o, 3);
    assert_eq!(n3.exchange.status, 406, "{}", summary(&o));
    assert_eq!(
        result(&o, "measured_endpoint_answered"),
        Some(false),
        "{}",
        summary(&o)
    );
    assert_eq!(
        n3.request_headers_sha256,
        MCP_REFERENCE_REQUEST_HEADERS_SHA256
    );

    let log = server.access_log();
    let post = log
        .iter()
        .find(|e| e.is("POST", MCP_PATH))
        .unwrap_or_else(|| panic!("no POST {MCP_PATH} in the access log: {log:#?}"));
    assert_eq!(post.request_header("accept"), Some("application/json"));
    assert_node_matches_wire(&o, 3, post);
    // mcp 2.3.0 admits a session before it checks `Accept`, then drops it: the 406 still names
    // an Mcp-Session-Id that no session stands behind. Initialize failed, so nothing is ended.
    assert!(
        post.response_header("mcp-session-id").is_some(),
        "the SDK's 406 carries an Mcp-Session-Id: {post:#?}"
    );
    assert!(
        !log.iter().any(|e| e.is("DELETE", MCP_PATH)),
        "no DELETE after a failed initialize: {log:#?}"
    );
}
