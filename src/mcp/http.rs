//! `--listen`: MCP Streamable HTTP on a loopback address, in front of rmcp's service:
//!
//! - `Host` must name the listening address (or `localhost`): DNS rebinding (rmcp checks it);
//! - an `Origin` header must be a loopback origin (http or https at `localhost` or a loopback
//!   address), else 403 before anything else (the MCP transport spec); a request without one
//!   (not a browser) passes;
//! - `Authorization: Bearer TOKEN` must carry the operator's token unless they chose
//!   `--no-auth`, else 401 (compared in constant time);
//! - a POST body that is not JSON, or no JSON-RPC message, is answered 400 with the JSON-RPC
//!   error (rmcp says 415, which is about the `Content-Type`), and a known method with params
//!   rmcp cannot read gets -32602 ([`super::jsonrpc`]);
//! - `DELETE` of a session answers 204 (rmcp says 202, which the SDK clients log as a failed
//!   termination).

use super::{WitnessServer, jsonrpc};
use crate::credentials::Auth;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Method, StatusCode, header};
use std::net::SocketAddr;
use std::sync::Arc;
use subtle::ConstantTimeEq as _;

/// The largest POST body read: rmcp's own default limit.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// The `Host` names accepted: rmcp's loopback defaults and the listening address (so
/// `--listen 127.0.0.2:PORT` answers requests to that address).
fn allowed_hosts(addr: SocketAddr) -> Vec<String> {
    let mut hosts = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    let ip = addr.ip().to_string();
    if !hosts.contains(&ip) {
        hosts.push(ip);
    }
    hosts
}

/// The router serving `/mcp` for `server` bound at `addr`.
pub fn router(server: WitnessServer, addr: SocketAddr, auth: Auth) -> axum::Router {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts(addr))
        .with_max_request_body_bytes(MAX_BODY);
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(Arc::new(auth), guard))
}

/// Serve until SIGTERM or SIGINT; say on stderr where, and why it stopped.
pub async fn serve(server: WitnessServer, addr: SocketAddr, auth: Auth) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    if !addr.ip().is_loopback() {
        anyhow::bail!(
            "--listen {addr}: not a loopback address; the MCP server walks and files under the operator's key, so it listens on loopback only"
        );
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("--listen {addr}: cannot bind: {e}"))?;
    let bound = listener.local_addr()?;
    let mode = match &auth {
        Auth::Token(_) => "bearer token required",
        Auth::Open => "NO authentication (--no-auth): any local user may walk and file",
    };
    tracing::info!("MCP Streamable HTTP on http://{bound}/mcp ({mode})");
    crate::errln!("conduct-walker mcp: Streamable HTTP on http://{bound}/mcp ({mode})");
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let (tx, rx) = tokio::sync::oneshot::channel::<&'static str>();
    let stop = async move {
        let why = tokio::select! {
            _ = sigterm.recv() => "SIGTERM",
            _ = sigint.recv() => "SIGINT",
        };
        let _ = tx.send(why);
    };
    let served = axum::serve(listener, router(server, bound, auth))
        .with_graceful_shutdown(stop)
        .await;
    let why = match (&served, rx.await) {
        (Err(e), _) => format!("serving failed: {e}"),
        (Ok(()), Ok(signal)) => signal.to_string(),
        (Ok(()), Err(_)) => "the listener closed".to_string(),
    };
    crate::errln!("conduct-walker mcp: stopped: {why}");
    tracing::info!("conduct-walker mcp stopped: {why}");
    served.map_err(Into::into)
}

fn plain(status: StatusCode, text: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text.to_string(),
    )
        .into_response()
}

fn json_rpc(status: StatusCode, body: serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn authorised(auth: &Auth, req: &Request) -> bool {
    let Auth::Token(token) = auth else {
        return true;
    };
    let Some(given) = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
    else {
        return false;
    };
    // Constant time over the bytes (a length difference is answered at once: the length
    // is no secret worth the cost of hiding).
    given.trim().as_bytes().ct_eq(token.as_bytes()).into()
}

/// Whether an `Origin` header names a loopback origin (http or https at `localhost` or a
/// loopback address, any port). Checked here rather than by rmcp (which takes a list of exact
/// hosts) so that all of 127/8 passes and a web page gets 403 before the token is looked at.
fn loopback_origin(value: &HeaderValue) -> bool {
    let Some(url) = value.to_str().ok().and_then(|v| url::Url::parse(v).ok()) else {
        return false; // "null", or not an origin at all
    };
    matches!(url.scheme(), "http" | "https")
        && match url.host() {
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        }
}

async fn guard(State(auth): State<Arc<Auth>>, req: Request, next: Next) -> Response {
    if let Some(origin) = req.headers().get(header::ORIGIN)
        && !loopback_origin(origin)
    {
        return plain(
            StatusCode::FORBIDDEN,
            "Forbidden: the Origin is not a loopback origin (this MCP server answers local clients only)",
        );
    }
    if !authorised(&auth, &req) {
        let mut r = plain(
            StatusCode::UNAUTHORIZED,
            "Unauthorized: this MCP server needs `Authorization: Bearer <token>`, the token the operator gave it (--token-file, or the mcp-token credential)",
        );
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"conduct-walker mcp\""),
        );
        return r;
    }
    let method = req.method().clone();
    let req = if method == Method::POST && is_json(&req) {
        let (parts, body) = req.into_parts();
        let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
            Ok(b) => b,
            Err(_) => {
                return plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("Payload Too Large: at most {MAX_BODY} bytes"),
                );
            }
        };
        if let Some(answer) = jsonrpc::check(&bytes) {
            // Unreadable messages are a bad request; readable ones with bad params are answered
            // like any JSON-RPC error, 200 with the error object.
            let status = match answer["error"]["code"].as_i64() {
                Some(jsonrpc::INVALID_PARAMS) => StatusCode::OK,
                _ => StatusCode::BAD_REQUEST,
            };
            return json_rpc(status, answer);
        }
        Request::from_parts(parts, Body::from(bytes))
    } else {
        req
    };
    let response = next.run(req).await;
    if method == Method::DELETE && response.status() == StatusCode::ACCEPTED {
        return StatusCode::NO_CONTENT.into_response();
    }
    response
}

fn is_json(req: &Request) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_hosts_include_the_listening_address() {
        let h = allowed_hosts("127.0.0.2:9000".parse().unwrap());
        assert_eq!(h, ["localhost", "127.0.0.1", "::1", "127.0.0.2"]);
        let h = allowed_hosts("[::1]:9000".parse().unwrap());
        assert_eq!(h, ["localhost", "127.0.0.1", "::1"]);
    }

    #[test]
    fn only_loopback_origins_pass() {
        for good in [
            "http://localhost:6274",
            "https://127.0.0.2",
            "http://[::1]:8080",
        ] {
            assert!(loopback_origin(&HeaderValue::from_static(good)), "{good}");
        }
        for bad in [
            "null",
            "http://evil.example",
            "http://127.0.0.1.evil.example",
            "file://",
            "x",
        ] {
            assert!(!loopback_origin(&HeaderValue::from_static(bad)), "{bad}");
        }
    }
}
