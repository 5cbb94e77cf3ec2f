//! The transport against real loopback HTTPS servers: roots, redirects, caps, deadline, policy.

use conduct_walker::net::{HttpRequest, NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::{Body, HttpsServer, Resp, SandboxCa, handler};
use std::time::Duration;

fn transport_for(
    ca: &SandboxCa,
    allowed: &[&str],
    tweak: impl FnOnce(&mut TransportConfig),
) -> Transport {
    let mut policy = NetPolicy::new(true);
    for url in allowed {
        policy.allow_url(url);
    }
    let mut config = TransportConfig::new(policy);
    config.extra_roots = vec![ca.cert_der()];
    tweak(&mut config);
    Transport::new(config).unwrap()
}

#[tokio::test]
async fn fetches_over_https_with_the_extra_root_and_records_everything() {
    let ca = SandboxCa::generate();
    let server = HttpsServer::start(
        &ca,
        handler(|req| {
            let seen = format!(
                "{} {} ua={} ae={}",
                req.method,
                req.path,
                req.header("user-agent").unwrap_or("-"),
                req.header("accept-encoding").unwrap_or("-")
            );
            Resp::bytes(200, "text/plain", seen)
                .with_header("X-Dup", "first")
                .with_header("X-Dup", "second")
        }),
    )
    .await
    .unwrap();
    let t = transport_for(&ca, &[&server.base()], |_| {});
    let ex = t
        .fetch(&HttpRequest::get(format!("{}/a?b=1", server.base()), &[]))
        .await;
    assert_eq!(ex.status, 200, "{:?}", ex.transport_error);
    let body = String::from_utf8(ex.body.clone()).unwrap();
    assert!(body.starts_with("GET /a?b=1 ua=conduct-walker/"), "{body}");
    assert!(body.ends_with("ae=identity"), "{body}");
    assert_eq!(
        ex.header("x-dup"),
        Some("second"),
        "a repeated header keeps its last value"
    );
}

#[tokio::test]
async fn redirects_are_recorded_not_followed() {
    let ca = SandboxCa::generate();
    let server = HttpsServer::start(
        &ca,
        handler(|req| {
            if req.path == "/moved" {
                Resp::empty(302).with_header("location", "/target")
            } else {
                Resp::bytes(200, "text/plain", "target")
            }
        }),
    )
    .await
    .unwrap();
    let t = transport_for(&ca, &[&server.base()], |_| {});
    let ex = t
        .fetch(&HttpRequest::get(format!("{}/moved", server.base()), &[]))
        .await;
    assert_eq!(ex.status, 302);
    assert!(ex.body.is_empty());
}

#[tokio::test]
async fn body_over_the_cap_is_a_transport_error() {
    let ca = SandboxCa::generate();
    let server = HttpsServer::start(
        &ca,
        handler(|_| Resp::bytes(200, "application/json", vec![b' '; 4096])),
    )
    .await
    .unwrap();
    let t = transport_for(&ca, &[&server.base()], |c| c.body_cap = 1024);
    let ex = t.fetch(&HttpRequest::get(server.base(), &[])).await;
    assert_eq!(ex.status, 0);
    let text = ex.header("x-transport-error").unwrap();
    assert!(
        text.contains("too large") && text.contains("1024"),
        "{text}"
    );
    assert!(ex.body.is_empty());
}

#[tokio::test]
async fn a_streamed_body_over_the_cap_is_cut_while_counting() {
    // No Content-Length (chunked, one byte at a time): the cap is enforced on the bytes read.
    let ca = SandboxCa::generate();
    let server = HttpsServer::start(
        &ca,
        handler(|_| Resp {
            status: 200,
            headers: vec![],
            body: Body::Trickle {
                bytes: vec![b' '; 4096],
                every: Duration::ZERO,
            },
        }),
    )
    .await
    .unwrap();
    let t = transport_for(&ca, &[&server.base()], |c| c.body_cap = 1024);
    let ex = t.fetch(&HttpRequest::get(server.base(), &[])).await;
    assert_eq!(ex.status, 0);
    let text = ex.header("x-transport-error").unwrap();
    assert!(text.contains("more than the 1024-byte cap"), "{text}");
    assert!(ex.body.is_empty());
}

#[tokio::test]
async fn deadline_covers_a_trickling_body() {
    let ca = SandboxCa::generate();
    let server = HttpsServer::start(
        &ca,
        handler(|_| Resp {
            status: 200,
            headers: vec![],
            body: Body::Trickle {
                bytes: b"{\"slow\":true}".to_vec(),
                every: Duration::from_millis(200),
            },
        }),
    )
    .await
    .unwrap();
    let t = transport_for(&ca, &[&server.base()], |c| {
        c.deadline = Duration::from_millis(500)
    });
    let ex = t.fetch(&HttpRequest::get(server.base(), &[])).await;
    assert_eq!(ex.status, 0);
    assert!(
        ex.header("x-transport-error")
            .unwrap()
            .contains("timed out")
    );
}

#[tokio::test]
async fn loopback_refused_unless_allowed_at_that_host_and_port() {
    let ca = SandboxCa::generate();
    let server = HttpsServer::start(&ca, handler(|_| Resp::empty(204)))
        .await
        .unwrap();
    // Allowed network, but this port was not named.
    let t = transport_for(&ca, &["https://127.0.0.1:1/"], |_| {});
    let ex = t.fetch(&HttpRequest::get(server.base(), &[])).await;
    assert_eq!(ex.status, 0);
    assert!(ex.header("x-transport-error").unwrap().contains("loopback"));
    // Named via `localhost`: the name resolves to loopback and is admitted.
    let local = format!("https://localhost:{}/", server.addr().port());
    let t = transport_for(&ca, &[&local], |_| {});
    assert_eq!(
        t.fetch(&HttpRequest::get(local.clone(), &[])).await.status,
        204
    );
    // Not allowed at all.
    let mut config = TransportConfig::new(NetPolicy::new(false));
    config.extra_roots = vec![ca.cert_der()];
    let t = Transport::new(config).unwrap();
    let ex = t.fetch(&HttpRequest::get(local, &[])).await;
    assert!(
        ex.header("x-transport-error")
            .unwrap()
            .contains("--allow-private-network")
    );
}

#[tokio::test]
async fn http_scheme_is_refused() {
    let t = Transport::new(TransportConfig::new(NetPolicy::new(true))).unwrap();
    let ex = t.fetch(&HttpRequest::get("http://127.0.0.1:9/", &[])).await;
    assert_eq!(ex.status, 0);
    assert!(
        ex.header("x-transport-error")
            .unwrap()
            .contains("only https://")
    );
}

#[tokio::test]
async fn connection_refused_is_status_zero() {
    // Bind and drop to find a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("https://127.0.0.1:{port}/");
    let ca = SandboxCa::generate();
    let t = transport_for(&ca, &[&url], |_| {});
    let ex = t.fetch(&HttpRequest::get(url, &[])).await;
    assert_eq!(ex.status, 0);
    assert!(ex.transport_error.is_some());
    assert!(ex.body.is_empty());
}

/// Issue 34: whether a failed request may have reached the server, as a submission needs to
/// know before it may be sent again. No connection (nothing listening, the address rules, a
/// TLS handshake that fails) means never; a connection closed after the request was read, or
/// an answer over the cap, means maybe.
#[tokio::test]
async fn a_failed_request_says_whether_it_may_have_reached_the_server() {
    use conduct_walker::net::Reached;
    let ca = SandboxCa::generate();
    let closing = HttpsServer::start(&ca, handler(|_| Resp::close_without_answer()))
        .await
        .unwrap();
    let oversized = HttpsServer::start(
        &ca,
        handler(|_| Resp::bytes(200, "application/json", vec![b' '; 2 * 1024 * 1024])),
    )
    .await
    .unwrap();
    let answering = HttpsServer::start(&ca, handler(|_| Resp::json(201, &serde_json::json!({}))))
        .await
        .unwrap();
    // A server whose certificate no root here signed: the handshake fails.
    let stranger = HttpsServer::start(&SandboxCa::generate(), handler(|_| Resp::empty(200)))
        .await
        .unwrap();
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let nothing = format!("https://127.0.0.1:{free}");
    let t = transport_for(
        &ca,
        &[
            &closing.base(),
            &oversized.base(),
            &answering.base(),
            &stranger.base(),
            &nothing,
        ],
        |_| {},
    );
    let post = |base: &str| HttpRequest::post(format!("{base}/witness"), &[], b"{}".to_vec());
    for (what, base, status, reached) in [
        ("nothing listening", nothing.clone(), 0, Reached::Never),
        ("TLS handshake refused", stranger.base(), 0, Reached::Never),
        (
            "refused by the address rules",
            "https://10.0.0.1".to_string(),
            0,
            Reached::Never,
        ),
        (
            "closed without an answer",
            closing.base(),
            0,
            Reached::Maybe,
        ),
        ("answer over the cap", oversized.base(), 0, Reached::Maybe),
        ("answered", answering.base(), 201, Reached::Maybe),
    ] {
        let (ex, r) = t.fetch_noting_reach(&post(&base)).await;
        assert_eq!(
            (ex.status, r),
            (status, reached),
            "{what}: {:?}",
            ex.transport_error
        );
    }
}
