//! Loopback HTTPS peers that break a connection on purpose (issue 42 item 1): each accepted
//! connection is reset (RST, not FIN) at one chosen point of the exchange. The client then meets
//! `ECONNRESET` on a read, and its next write (a TLS alert, a close_notify) goes into a socket
//! the peer has reset: that `writev` is what raised SIGPIPE.
#![allow(dead_code)]

use conduct_walker::sandbox::SandboxCa;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Where in the exchange the peer resets the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// After reading the ClientHello, before answering it.
    MidHandshake,
    /// After the request head, with part of a response head written.
    MidHeaders,
    /// After a complete `200` head announcing N body bytes and a third of them.
    MidBody,
    /// After a complete `201 Created` head and a third of an acceptance naming the record:
    /// an intake that may have stored the record but whose answer cannot confirm it.
    CutAcceptance,
}

impl Shape {
    /// The three ways every client command meets.
    pub const ALL: [Shape; 3] = [Shape::MidHandshake, Shape::MidHeaders, Shape::MidBody];

    pub fn name(self) -> &'static str {
        match self {
            Shape::MidHandshake => "reset mid-handshake",
            Shape::MidHeaders => "reset mid-headers",
            Shape::MidBody => "reset mid-body",
            Shape::CutAcceptance => "201 cut off by a reset",
        }
    }
}

/// A peer bound on `127.0.0.1:0` that resets every connection the same way. Dropping it stops
/// it.
pub struct HostilePeer {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl HostilePeer {
    pub async fn start(ca: &SandboxCa, shape: Shape) -> HostilePeer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config(&[]));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((tcp, _)) = accepted else { continue };
                        let (acceptor, log) = (acceptor.clone(), log.clone());
                        connections.spawn(serve(tcp, acceptor, shape, log));
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        HostilePeer { addr, seen, task }
    }

    /// `127.0.0.1:<port>`, as `--allow-host` takes it and error messages name it.
    pub fn host_port(&self) -> String {
        self.addr.to_string()
    }

    /// `https://127.0.0.1:<port>`.
    pub fn base(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// What each connection got as far as: its request line, or `handshake` for one reset
    /// before TLS was up. Empty when the client never connected (then the test proved nothing).
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for HostilePeer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An abortive close: SO_LINGER 0 makes the close send RST and discard what is unsent.
fn reset(tcp: &TcpStream) {
    tcp.set_zero_linger().unwrap();
}

async fn serve(
    mut tcp: TcpStream,
    acceptor: tokio_rustls::TlsAcceptor,
    shape: Shape,
    seen: Arc<Mutex<Vec<String>>>,
) {
    let deadline = Duration::from_secs(10);
    if shape == Shape::MidHandshake {
        // The ClientHello (one read is enough: the reset is what matters, not the bytes).
        let mut hello = [0u8; 4096];
        let _ = tokio::time::timeout(deadline, tcp.read(&mut hello)).await;
        seen.lock().unwrap().push("handshake".into());
        reset(&tcp);
        return;
    }
    let Ok(Ok(mut tls)) = tokio::time::timeout(deadline, acceptor.accept(tcp)).await else {
        return;
    };
    // The request head only: a POST's body may still be on its way when the reset comes.
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match tokio::time::timeout(deadline, tls.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => head.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    let line = String::from_utf8_lossy(&head)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    seen.lock().unwrap().push(line);
    let _ = tls.write_all(&partial_answer(shape)).await;
    let _ = tls.flush().await;
    // Let the client read what was sent (so a cut-off 2xx is seen as one), then reset.
    tokio::time::sleep(Duration::from_millis(50)).await;
    reset(tls.get_ref().0);
}

/// What the peer writes before its reset.
fn partial_answer(shape: Shape) -> Vec<u8> {
    let (status, body) = match shape {
        Shape::MidHandshake => return Vec::new(),
        Shape::MidHeaders => {
            return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Le".to_vec();
        }
        Shape::MidBody => ("200 OK", format!(r#"{{"padding":"{}"}}"#, "x".repeat(3000))),
        // The sha is not known here and need not be: a third of the body never reaches it.
        Shape::CutAcceptance => (
            "201 Created",
            format!(
                r#"{{"status":"pending","counted":true,"padding":"{}","sha":"{}"}}"#,
                "x".repeat(600),
                "0".repeat(64)
            ),
        ),
    };
    let third = body.len() / 3;
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body.as_bytes()[..third]);
    out
}
