//! `conduct-walker mcp --listen`: the binary serving MCP Streamable HTTP on loopback, asked over
//! real HTTP. Origin (403 unless loopback or absent), the bearer token (401 without it; the
//! server does not start without one unless --no-auth), the JSON-RPC answers to unreadable
//! bodies (400) and bad params (-32602), DELETE of a session (204), and a listening address
//! other than 127.0.0.1 answering requests that name it.

use reqwest::StatusCode;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

const TOKEN: &str = "0123456789abcdef0123456789abcdef-test-token";

struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    fn new() -> Dir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("walker.toml"),
            "[witness]\nname = \"http test witness\"\nvantage = \"loopback\"\n\n[daemon]\ndatabase = \"walker.db\"\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("token"), format!("{TOKEN}\n")).unwrap();
        Dir { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// A running `conduct-walker mcp --listen`, killed on drop.
struct Server {
    child: tokio::process::Child,
    url: String,
    stderr: tokio::task::JoinHandle<String>,
}

impl Server {
    /// Start it with `args` after `mcp --config F --listen LISTEN`; the port is the one the
    /// server prints (LISTEN may say port 0).
    async fn start(dir: &Dir, listen: &str, args: &[&str], env: &[(&str, &Path)]) -> Server {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_conduct-walker"));
        cmd.args(["mcp", "--config"])
            .arg(dir.path("walker.toml"))
            .args(["--listen", listen])
            .args(args)
            .env_remove("CREDENTIALS_DIRECTORY")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = tokio::time::timeout(Duration::from_secs(20), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(rest) = line.split("Streamable HTTP on ").nth(1) {
                    return rest.split_whitespace().next().unwrap().to_string();
                }
            }
            panic!("the server ended before it listened");
        })
        .await
        .expect("the server says where it listens");
        let stderr = tokio::spawn(async move {
            let mut rest = String::new();
            while let Ok(Some(l)) = lines.next_line().await {
                rest.push_str(&l);
                rest.push('\n');
            }
            rest
        });
        Server { child, url, stderr }
    }

    fn post(&self, body: impl Into<reqwest::Body>) -> reqwest::RequestBuilder {
        reqwest::Client::new()
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body)
    }

    /// Stop it with SIGTERM and return what it wrote on stderr after starting.
    async fn stop(mut self) -> String {
        let pid = self.child.id().unwrap() as i32;
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let _ = tokio::time::timeout(Duration::from_secs(20), self.child.wait()).await;
        self.stderr.await.unwrap()
    }
}

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "http test", "version": "0"}}})
    .to_string()
}

/// The JSON-RPC message in a response body: plain JSON, or the data of an SSE event.
fn message(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|_| {
        let data: String = body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .collect();
        serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {body:?}"))
    })
}

/// Initialize a session; its id.
async fn session(s: &Server) -> String {
    let r = s
        .post(initialize())
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let id = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let body = r.text().await.unwrap();
    assert_eq!(
        message(&body)["result"]["serverInfo"]["name"],
        "conduct-walker"
    );
    let r = s
        .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
        .bearer_auth(TOKEN)
        .header("mcp-session-id", &id)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    id
}

#[tokio::test]
async fn an_origin_that_is_not_loopback_is_refused_403() {
    let d = Dir::new();
    let token = d.path("token");
    let s = Server::start(
        &d,
        "127.0.0.1:0",
        &["--token-file", token.to_str().unwrap()],
        &[],
    )
    .await;
    for origin in [
        "http://evil.example",
        "null",
        "https://127.0.0.1.evil.example",
    ] {
        let r = s
            .post(initialize())
            .bearer_auth(TOKEN)
            .header("origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "Origin: {origin}");
        assert!(r.headers().get("mcp-session-id").is_none(), "{origin}");
        // A web page does not know the token: still 403, not 401.
        let r = s
            .post(initialize())
            .header("origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status(),
            StatusCode::FORBIDDEN,
            "Origin: {origin}, no token"
        );
    }
    for origin in [
        Some("http://localhost:6274"),
        Some("http://127.0.0.1:3000"),
        Some("http://[::1]:8080"),
        None,
    ] {
        let mut req = s.post(initialize()).bearer_auth(TOKEN);
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "Origin: {origin:?}");
    }
    s.stop().await;
}

#[tokio::test]
async fn listen_needs_the_bearer_token() {
    let d = Dir::new();
    let token = d.path("token");
    let s = Server::start(
        &d,
        "127.0.0.1:0",
        &["--token-file", token.to_str().unwrap()],
        &[],
    )
    .await;
    let r = s.post(initialize()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(
        r.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer")
    );
    let wrong = format!("{}x", &TOKEN[..TOKEN.len() - 1]);
    for t in [wrong.as_str(), "", &TOKEN[..10]] {
        let r = s.post(initialize()).bearer_auth(t).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "token {t:?}");
    }
    let id = session(&s).await;
    // Every request needs it, not only the first.
    let r = s
        .post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string())
        .header("mcp-session-id", &id)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    s.stop().await;

    // Without a token the server does not start, and says how to give one.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_conduct-walker"))
        .args(["mcp", "--config"])
        .arg(d.path("walker.toml"))
        .args(["--listen", "127.0.0.1:0"])
        .env_remove("CREDENTIALS_DIRECTORY")
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--token-file") && err.contains("--no-auth"),
        "{err}"
    );

    // The systemd credential, and --no-auth.
    let creds = tempfile::tempdir().unwrap();
    std::fs::write(creds.path().join("mcp-token"), TOKEN).unwrap();
    let s = Server::start(
        &d,
        "127.0.0.1:0",
        &[],
        &[("CREDENTIALS_DIRECTORY", creds.path())],
    )
    .await;
    assert_eq!(
        s.post(initialize()).send().await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    session(&s).await;
    s.stop().await;
    let s = Server::start(&d, "127.0.0.1:0", &["--no-auth"], &[]).await;
    assert_eq!(
        s.post(initialize()).send().await.unwrap().status(),
        StatusCode::OK
    );
    let said = s.stop().await;
    assert!(said.contains("stopped: SIGTERM"), "{said}");
}

#[tokio::test]
async fn unreadable_bodies_get_400_bad_params_get_32602_and_delete_answers_204() {
    let d = Dir::new();
    let token = d.path("token");
    let s = Server::start(
        &d,
        "127.0.0.1:0",
        &["--token-file", token.to_str().unwrap()],
        &[],
    )
    .await;
    let id = session(&s).await;
    for (body, code) in [
        ("this is not json", -32700),
        ("{\"jsonrpc\": ", -32700),
        ("[1, 2]", -32600),
    ] {
        let r = s
            .post(body)
            .bearer_auth(TOKEN)
            .header("mcp-session-id", &id)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{body}");
        let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
        assert_eq!(v["error"]["code"], code, "{body}: {v}");
    }
    for params in [
        json!(null),
        json!({"name": "records_list", "arguments": [1]}),
        json!([]),
    ] {
        let mut call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call"});
        if !params.is_null() {
            call["params"] = params.clone();
        }
        let r = s
            .post(call.to_string())
            .bearer_auth(TOKEN)
            .header("mcp-session-id", &id)
            .send()
            .await
            .unwrap();
        let body = r.text().await.unwrap();
        let v = message(&body);
        assert_eq!(v["id"], 7, "{params}: {v}");
        assert_eq!(v["error"]["code"], -32602, "{params}: {v}");
    }
    // A well-formed call still works in the same session.
    let r = s
        .post(
            json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                   "params": {"name": "records_list", "arguments": {}}})
            .to_string(),
        )
        .bearer_auth(TOKEN)
        .header("mcp-session-id", &id)
        .send()
        .await
        .unwrap();
    let v = message(&r.text().await.unwrap());
    assert_eq!(v["result"]["structuredContent"]["matched"], 0, "{v}");
    let r = reqwest::Client::new()
        .delete(&s.url)
        .bearer_auth(TOKEN)
        .header("mcp-session-id", &id)
        .send()
        .await
        .unwrap();
    assert!(
        matches!(r.status(), StatusCode::OK | StatusCode::NO_CONTENT),
        "DELETE answered {}",
        r.status()
    );
    s.stop().await;
}

#[tokio::test]
async fn another_loopback_address_answers_requests_that_name_it() {
    let d = Dir::new();
    let token = d.path("token");
    let s = Server::start(
        &d,
        "127.0.0.2:0",
        &["--token-file", token.to_str().unwrap()],
        &[],
    )
    .await;
    assert!(s.url.starts_with("http://127.0.0.2:"), "{}", s.url);
    // reqwest sends `Host: 127.0.0.2:PORT`.
    let r = s
        .post(initialize())
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // A name that is not this server's is still refused (DNS rebinding).
    let r = s
        .post(initialize())
        .bearer_auth(TOKEN)
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    s.stop().await;
}
