//! A loopback HTTPS server for sandbox agents and test fixtures: a CA generated at start
//! (rcgen), a leaf for `localhost`, `127.0.0.1` and `::1`, and a handler that sees plain
//! request data and returns plain response data (including trickled bodies).

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody, combinators::BoxBody};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A throw-away certificate authority; its PEM is what a client passes as `--ca-cert`.
pub struct SandboxCa {
    cert_pem: String,
    cert_der: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
}

impl SandboxCa {
    pub fn generate() -> Self {
        let key = KeyPair::generate().expect("generate CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "conduct-walker sandbox CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key).expect("self-sign CA");
        SandboxCa {
            cert_pem: cert.pem(),
            cert_der: cert.der().clone(),
            issuer: Issuer::new(params, key),
        }
    }

    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    pub fn cert_der(&self) -> CertificateDer<'static> {
        self.cert_der.clone()
    }

    /// Write the CA certificate (PEM) for `--ca-cert`.
    pub fn write_pem(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, &self.cert_pem)
    }

    /// A leaf certificate and its key covering `localhost`, `127.0.0.1`, `::1` and `extra_names`.
    fn issue_leaf(&self, extra_names: &[&str]) -> (rcgen::Certificate, KeyPair) {
        let key = KeyPair::generate().expect("generate leaf key");
        let mut names = vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "::1".to_string(),
        ];
        names.extend(extra_names.iter().map(|s| s.to_string()));
        let params = CertificateParams::new(names).expect("leaf params");
        let leaf = params.signed_by(&key, &self.issuer).expect("sign leaf");
        (leaf, key)
    }

    /// A leaf for a server that is not ours (a Python SDK agent under uvicorn, say): the
    /// certificate chain PEM (leaf, then this CA) and the leaf's PKCS#8 key PEM.
    pub fn leaf_pem(&self, extra_names: &[&str]) -> (String, String) {
        let (leaf, key) = self.issue_leaf(extra_names);
        (
            format!("{}{}", leaf.pem(), self.cert_pem),
            key.serialize_pem(),
        )
    }

    /// A TLS server config whose leaf covers `localhost`, `127.0.0.1`, `::1` and `extra_names`.
    pub fn server_config(&self, extra_names: &[&str]) -> Arc<rustls::ServerConfig> {
        let (leaf, key) = self.issue_leaf(extra_names);
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone(), self.cert_der.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .expect("server certificate");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    }
}

/// A request as the handler sees it.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    /// Path and query, as sent.
    pub path: String,
    /// Header names lower-case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// `https://127.0.0.1:<port>` of this server.
    pub base: String,
}

impl Req {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// How the body is delivered.
#[derive(Debug, Clone)]
pub enum Body {
    Bytes(Vec<u8>),
    /// One byte every `every` (a slow-loris server).
    Trickle {
        bytes: Vec<u8>,
        every: Duration,
    },
    /// `bytes` at once, then the body stays open for `hold` before it ends (an event stream
    /// that a server keeps open after its answer).
    ThenHold {
        bytes: Vec<u8>,
        hold: Duration,
    },
    /// No answer at all: the connection is closed after the request was read (what a proxy
    /// timeout or a reset does after the server did its work). Status and headers are unused.
    CloseWithoutAnswer,
}

/// A response as the handler returns it. Headers are sent as given (repeats allowed).
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

impl Resp {
    pub fn bytes(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Resp {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: Body::Bytes(body.into()),
        }
    }

    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Resp::bytes(
            status,
            "application/json",
            serde_json::to_vec(value).expect("JSON"),
        )
    }

    pub fn empty(status: u16) -> Self {
        Resp {
            status,
            headers: Vec::new(),
            body: Body::Bytes(Vec::new()),
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Close the connection without answering ([`Body::CloseWithoutAnswer`]).
    pub fn close_without_answer() -> Self {
        Resp {
            status: 0,
            headers: Vec::new(),
            body: Body::CloseWithoutAnswer,
        }
    }
}

/// The service's error when a handler chose [`Body::CloseWithoutAnswer`]: hyper then closes the
/// connection without writing a response.
#[derive(Debug)]
struct ClosedWithoutAnswer;

impl std::fmt::Display for ClosedWithoutAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("closed without an answer")
    }
}

impl std::error::Error for ClosedWithoutAnswer {}

pub type HandlerFuture = Pin<Box<dyn Future<Output = Resp> + Send>>;
pub type Handler = Arc<dyn Fn(Req) -> HandlerFuture + Send + Sync>;

/// Wrap a synchronous closure as a [`Handler`].
pub fn handler<F>(f: F) -> Handler
where
    F: Fn(Req) -> Resp + Send + Sync + 'static,
{
    Arc::new(move |req| {
        let resp = f(req);
        Box::pin(async move { resp })
    })
}

/// A running loopback HTTPS server. Dropping it stops it and every connection it holds.
pub struct HttpsServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
    wire_log: WireLog,
}

/// What the server wrote on each connection, in accept order: the server's own access log,
/// taken below HTTP so it includes the headers hyper adds (`date`, `content-length`,
/// `connection`). Only the first [`WIRE_LOG_CAP`] bytes of each connection are kept.
#[derive(Clone, Default)]
pub struct WireLog(Arc<Mutex<Vec<ConnectionBytes>>>);

/// The bytes written on one connection (shared with the connection's [`Tap`]).
type ConnectionBytes = Arc<Mutex<Vec<u8>>>;

/// A response's status and its (lower-case name, value) header lines in the order sent.
pub type ResponseHead = (u16, Vec<(String, String)>);

const WIRE_LOG_CAP: usize = 64 * 1024;

impl WireLog {
    fn open_connection(&self) -> ConnectionBytes {
        let written = Arc::new(Mutex::new(Vec::new()));
        self.0.lock().expect("wire log").push(written.clone());
        written
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.0.lock().expect("wire log").len()
    }

    /// The status and header lines of the first response written on each connection, as
    /// (lower-case name, value) pairs in the order sent; None for a connection that has not
    /// written a whole response head.
    pub fn first_response_heads(&self) -> Vec<Option<ResponseHead>> {
        self.0
            .lock()
            .expect("wire log")
            .iter()
            .map(|written| parse_response_head(&written.lock().expect("wire log")))
            .collect()
    }
}

fn parse_response_head(bytes: &[u8]) -> Option<ResponseHead> {
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    Some((status, headers))
}

/// A stream that copies what the server writes into a [`WireLog`] entry.
struct Tap<S> {
    inner: S,
    written: ConnectionBytes,
}

impl<S: AsyncRead + Unpin> AsyncRead for Tap<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tap<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &poll {
            let mut written = self.written.lock().expect("wire log");
            let room = WIRE_LOG_CAP.saturating_sub(written.len());
            written.extend_from_slice(&buf[..(*n).min(room)]);
        }
        poll
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl HttpsServer {
    /// Bind `127.0.0.1:0` and serve `handler` with a certificate from `ca`.
    pub async fn start(ca: &SandboxCa, handler: Handler) -> std::io::Result<Self> {
        Self::start_on("127.0.0.1:0".parse().expect("addr"), ca, &[], handler).await
    }

    /// Bind a chosen address (port 0 for any) with extra certificate names.
    pub async fn start_on(
        addr: SocketAddr,
        ca: &SandboxCa,
        extra_names: &[&str],
        handler: Handler,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config(extra_names));
        let base = format!("https://{addr}");
        let wire_log = WireLog::default();
        let task = tokio::spawn(accept_loop(
            listener,
            acceptor,
            handler,
            base,
            wire_log.clone(),
        ));
        Ok(HttpsServer {
            addr,
            task,
            wire_log,
        })
    }

    /// What this server wrote, connection by connection.
    pub fn wire_log(&self) -> &WireLog {
        &self.wire_log
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://127.0.0.1:<port>`.
    pub fn base(&self) -> String {
        format!("https://{}", self.addr)
    }
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    handler: Handler,
    base: String,
    wire_log: WireLog,
) {
    // Connections live in this set so aborting the loop ends them too.
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((tcp, _)) = accepted else { continue };
                let acceptor = acceptor.clone();
                let handler = handler.clone();
                let base = base.clone();
                let written = wire_log.open_connection();
                connections.spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let tls = Tap { inner: tls, written };
                    let service = hyper::service::service_fn(move |request| {
                        let handler = handler.clone();
                        let base = base.clone();
                        async move { serve_one(request, handler, base).await }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn serve_one(
    request: hyper::Request<hyper::body::Incoming>,
    handler: Handler,
    base: String,
) -> Result<hyper::Response<BoxBody<Bytes, Infallible>>, ClosedWithoutAnswer> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    let req = Req {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_else(|| "/".into()),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
        base,
    };
    let resp = handler(req).await;
    let mut builder = hyper::Response::builder().status(resp.status);
    for (name, value) in &resp.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let body: BoxBody<Bytes, Infallible> = match resp.body {
        Body::Bytes(bytes) => http_body_util::Full::new(Bytes::from(bytes)).boxed(),
        Body::Trickle { bytes, every } => {
            let stream =
                futures_util::stream::unfold((bytes, 0usize), move |(bytes, i)| async move {
                    if i >= bytes.len() {
                        return None;
                    }
                    tokio::time::sleep(every).await;
                    let frame = Frame::data(Bytes::copy_from_slice(&bytes[i..=i]));
                    Some((Ok::<_, Infallible>(frame), (bytes, i + 1)))
                });
            StreamBody::new(stream).boxed()
        }
        Body::ThenHold { bytes, hold } => {
            let stream = futures_util::stream::unfold(Some(bytes), move |left| async move {
                match left {
                    Some(bytes) => {
                        Some((Ok::<_, Infallible>(Frame::data(Bytes::from(bytes))), None))
                    }
                    None => {
                        tokio::time::sleep(hold).await;
                        None
                    }
                }
            });
            StreamBody::new(stream).boxed()
        }
        Body::CloseWithoutAnswer => return Err(ClosedWithoutAnswer),
    };
    Ok(builder.body(body).unwrap_or_else(|_| {
        hyper::Response::builder()
            .status(500)
            .body(http_body_util::Full::new(Bytes::new()).boxed())
            .expect("static response")
    }))
}
