use super::policy::{NetPolicy, non_public_kind};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Per-request deadline covering resolution, connect, headers and the whole body (§2.1: 20 s).
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(20);
/// Largest response body read; more is a transport error that says so.
pub const BODY_CAP_BYTES: usize = 1024 * 1024;
/// Transport error texts are cut here, as the reference's curl transport does (§2.2).
const ERROR_TEXT_MAX_CHARS: usize = 200;

/// One request exactly as it will be sent (the listed headers only; the transport adds
/// `User-Agent`, `Accept-Encoding: identity` and `Connection: close`, which are not part of any
/// hashed header set).
#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: &'static str,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    /// How much of the body to read.
    pub read: BodyRead,
}

/// How much of a response body the transport reads (always within the cap and deadline).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BodyRead {
    /// Every byte until the body ends.
    #[default]
    Whole,
    /// A `text/event-stream` answer is read only up to the end of the event carrying the
    /// JSON-RPC response with this id (MCP Streamable HTTP keeps streams open; §2.6.1); any
    /// other answer is read whole.
    SseUntilResponse(i64),
}

impl HttpRequest {
    pub fn get(url: impl Into<String>, headers: &[(&str, &str)]) -> Self {
        HttpRequest {
            method: "GET",
            url: url.into(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: None,
            read: BodyRead::Whole,
        }
    }

    pub fn post(url: impl Into<String>, headers: &[(&str, &str)], body: Vec<u8>) -> Self {
        HttpRequest {
            method: "POST",
            body: Some(body),
            ..HttpRequest::get(url, headers)
        }
    }
}

/// What one request observed. A transport failure is status 0 with a single
/// `x-transport-error` response header and an empty body (§2.2).
#[derive(Debug, Clone)]
pub struct Exchange {
    pub request: HttpRequest,
    pub status: u16,
    /// Lower-case names in arrival order; a repeated name keeps its last value.
    pub response_headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub duration_ms: u64,
    pub transport_error: Option<String>,
    /// A failed exchange whose status line and headers had arrived before the body failed
    /// (over the cap, cut off, timed out). A walk records such an exchange as the failure it
    /// is (status 0, §2.2); an intake's answer is classified by its status line (issue 42).
    pub cut_answer: Option<AnswerHead>,
}

/// The head of an answer: its status line's code and its headers (lower-case names, a repeated
/// name keeps its last value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerHead {
    pub status: u16,
    pub headers: Vec<(String, String)>,
}

impl Exchange {
    /// The value of a response header (name compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.response_headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The code of the answer's status line, also when its body was then cut off (0 when no
    /// status line arrived): what a log of intake attempts shows.
    pub fn heard_status(&self) -> u16 {
        self.cut_answer
            .as_ref()
            .map_or(self.status, |head| head.status)
    }

    /// An answered exchange: what the server sent, no transport error.
    pub fn answered(
        request: HttpRequest,
        status: u16,
        response_headers: Vec<(String, String)>,
        body: Vec<u8>,
        duration_ms: u64,
    ) -> Self {
        Exchange {
            request,
            status,
            response_headers,
            body,
            duration_ms,
            transport_error: None,
            cut_answer: None,
        }
    }

    /// A failed exchange: status 0, `x-transport-error: <text>`, no body.
    pub fn failure(request: HttpRequest, text: impl Into<String>, duration_ms: u64) -> Self {
        let text: String = text.into().chars().take(ERROR_TEXT_MAX_CHARS).collect();
        Exchange {
            request,
            status: 0,
            response_headers: vec![("x-transport-error".to_string(), text.clone())],
            body: Vec::new(),
            duration_ms,
            transport_error: Some(text),
            cut_answer: None,
        }
    }

    /// [`Exchange::failure`] after the answer's head had arrived.
    pub fn cut_off(
        request: HttpRequest,
        head: AnswerHead,
        text: impl Into<String>,
        duration_ms: u64,
    ) -> Self {
        Exchange {
            cut_answer: Some(head),
            ..Exchange::failure(request, text, duration_ms)
        }
    }
}

/// How to build a [`Transport`].
#[derive(Debug, Clone)]
pub struct TransportConfig {
    pub policy: NetPolicy,
    /// Extra trust roots, added to the system's.
    pub extra_roots: Vec<CertificateDer<'static>>,
    pub deadline: Duration,
    pub body_cap: usize,
    pub user_agent: String,
    /// Plain `http://` is fetched too, but only at a loopback host (`localhost`, 127.0.0.0/8,
    /// `[::1]`) the policy names, and only to loopback addresses: an alert relay on the same
    /// machine. Off everywhere else (walks, filing, ledgers are https only).
    pub plain_http_loopback: bool,
    /// A stricter rule for fetches a stranger names (the witness pool's measurement): see
    /// [`AddressGuard`]. None for everything else.
    pub address_guard: Option<AddressGuard>,
}

/// All or nothing: a host is fetched only when **every** address it resolves to passes
/// `blocked` (one blocked address refuses the host, so a name cannot hide an inside address
/// among public ones), and only at `only_port`. The connection goes to those vetted
/// addresses, never to a second lookup's. Under `--allow-private-network` (tests only) every
/// address and port is admitted. The table is the caller's (`witness_pool::screen`).
#[derive(Debug, Clone, Copy)]
pub struct AddressGuard {
    pub blocked: fn(IpAddr) -> bool,
    pub only_port: u16,
}

impl TransportConfig {
    pub fn new(policy: NetPolicy) -> Self {
        TransportConfig {
            policy,
            extra_roots: Vec::new(),
            deadline: REQUEST_DEADLINE,
            body_cap: BODY_CAP_BYTES,
            user_agent: format!(
                "conduct-walker/{} (+https://gate.horizonshield.dev/ext/conduct/v1)",
                env!("CARGO_PKG_VERSION")
            ),
            plain_http_loopback: false,
            address_guard: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TransportSetupError {
    #[error("cannot read CA certificate file {path}: {source}")]
    CaFileUnreadable {
        path: String,
        source: std::io::Error,
    },
    #[error("CA certificate file {path} holds no PEM certificate")]
    CaFileEmpty { path: String },
    #[error("CA certificate file {path} is not valid PEM: {why}")]
    CaFileInvalid { path: String, why: String },
    #[error("TLS setup failed: {0}")]
    Tls(String),
}

/// Read every certificate of a PEM file (it may hold several).
pub fn load_pem_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TransportSetupError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| TransportSetupError::CaFileUnreadable {
        path: shown.clone(),
        source,
    })?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TransportSetupError::CaFileInvalid {
            path: shown.clone(),
            why: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TransportSetupError::CaFileEmpty { path: shown });
    }
    Ok(certs)
}

/// aws-lc's provider with TLS 1.3's mandatory suite, AES-128-GCM with SHA-256, offered first
/// (Mozilla's "modern" order; rustls offers AES-256 with SHA-384 first). Every request opens a
/// connection of its own (§2.2), so every request pays a full handshake: SHA-384 has no
/// hardware instruction on x86 while SHA-256 does, and the key schedule's hashing was about
/// 4 % of the daemon's CPU in a 10,000-target wave.
fn client_crypto() -> rustls::crypto::CryptoProvider {
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    provider
        .cipher_suites
        .sort_by_key(|s| s.suite() != rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
    provider
}

/// The shared HTTP edge: TLS roots loaded once, the address policy, caps and deadline.
#[derive(Clone)]
pub struct Transport {
    inner: Arc<Inner>,
}

struct Inner {
    policy: NetPolicy,
    tls: rustls::ClientConfig,
    deadline: Duration,
    body_cap: usize,
    user_agent: String,
    plain_http_loopback: bool,
    address_guard: Option<AddressGuard>,
}

impl Transport {
    pub fn new(config: TransportConfig) -> Result<Self, TransportSetupError> {
        let mut roots = rustls::RootCertStore::empty();
        // System roots are best effort: a machine without them can still walk operator-trusted
        // hosts through --ca-cert.
        roots
            .roots
            .extend(super::roots::system_roots().anchors.iter().cloned());
        for cert in &config.extra_roots {
            roots.add(cert.clone()).map_err(|e| {
                TransportSetupError::Tls(format!("extra CA certificate refused: {e}"))
            })?;
        }
        let provider = Arc::new(client_crypto());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TransportSetupError::Tls(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Transport {
            inner: Arc::new(Inner {
                policy: config.policy,
                tls,
                deadline: config.deadline,
                body_cap: config.body_cap,
                user_agent: config.user_agent,
                plain_http_loopback: config.plain_http_loopback,
                address_guard: config.address_guard,
            }),
        })
    }

    /// A session resolves and checks each host once and keeps its client for its lifetime
    /// (one walk, say); every request still gets a connection of its own.
    pub fn session(&self) -> Session {
        Session {
            transport: self.clone(),
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// One request in a fresh session.
    pub async fn fetch(&self, request: &HttpRequest) -> Exchange {
        self.session().fetch(request).await
    }

    /// [`Transport::fetch`], also saying whether a failed request may have reached the server
    /// (what a submission needs to know before it may be sent again).
    pub async fn fetch_noting_reach(&self, request: &HttpRequest) -> (Exchange, Reached) {
        self.session().fetch_noting_reach(request).await
    }

    /// Check a URL against the rules without sending anything; returns the addresses a request
    /// would connect to. Used to refuse operator input up front with a clear message.
    pub async fn check_destination(&self, raw_url: &str) -> Result<Vec<SocketAddr>, String> {
        let target = self.parse_target(raw_url)?;
        tokio::time::timeout(self.inner.deadline, self.resolve_checked(&target))
            .await
            .unwrap_or_else(|_| Err(format!("resolving {} timed out", target.host)))
    }

    /// The URL as a target: https, or plain http where [`TransportConfig::plain_http_loopback`]
    /// admits it.
    fn parse_target(&self, raw: &str) -> Result<Target, String> {
        let mut target = parse_https(raw);
        if let Err(why) = &target
            && self.inner.plain_http_loopback
            && let Ok(url) = reqwest::Url::parse(raw)
            && url.scheme() == "http"
            && super::loopback_host(&url)
        {
            let swapped = url.as_str().replacen("http:", "https:", 1);
            let parsed = parse_https(&swapped)?;
            let port = url.port_or_known_default().unwrap_or(80);
            if !self.inner.policy.private_allowed_at(&parsed.host, port) {
                return Err(format!(
                    "{why} (plain http only to a loopback host:port the operator named)"
                ));
            }
            target = Ok(Target {
                url,
                port,
                plain: true,
                ..parsed
            });
        }
        target
    }

    async fn resolve_checked(&self, target: &Target) -> Result<Vec<SocketAddr>, String> {
        let mut candidates: Vec<SocketAddr> = match target.literal {
            Some(ip) => vec![SocketAddr::new(ip, target.port)],
            None => tokio::net::lookup_host((target.host.as_str(), target.port))
                .await
                .map_err(|e| format!("cannot resolve {}: {e}", target.host))?
                .collect(),
        };
        if target.plain {
            // Plain http never leaves the machine, whatever the name resolves to.
            candidates.retain(|a| non_public_kind(a.ip()) == Some("loopback"));
            if candidates.is_empty() {
                return Err(format!(
                    "refused: {} resolves to no loopback address (plain http goes to loopback only)",
                    target.host
                ));
            }
        }
        if candidates.is_empty() {
            return Err(format!("{} resolves to no address", target.host));
        }
        if let Some(guard) = self.inner.address_guard {
            return guarded(
                &guard,
                self.inner.policy.allow_private_network,
                target,
                candidates,
            );
        }
        let private_ok = self
            .inner
            .policy
            .private_allowed_at(&target.host, target.port);
        let mut refused = None;
        let admitted: Vec<SocketAddr> = candidates
            .into_iter()
            .filter(|addr| match non_public_kind(addr.ip()) {
                None => true,
                Some(_) if private_ok => true,
                Some(kind) => {
                    refused.get_or_insert((addr.ip(), kind));
                    false
                }
            })
            .collect();
        if admitted.is_empty() {
            let (ip, kind) = refused.expect("a candidate was refused");
            let why = if self.inner.policy.allow_private_network {
                "--allow-private-network admits only the hosts the operator named"
            } else {
                "private, loopback and link-local destinations need --allow-private-network"
            };
            return Err(format!(
                "refused: {}:{} is {ip}, a {kind} address ({why})",
                target.host, target.port
            ));
        }
        Ok(admitted)
    }
}

/// [`AddressGuard`]'s rule over a host's resolved addresses.
fn guarded(
    guard: &AddressGuard,
    allow_private: bool,
    target: &Target,
    candidates: Vec<SocketAddr>,
) -> Result<Vec<SocketAddr>, String> {
    if allow_private {
        return Ok(candidates);
    }
    if target.port != guard.only_port {
        return Err(format!(
            "refused: only port {} is fetched, not {}",
            guard.only_port, target.port
        ));
    }
    match candidates.iter().find(|a| (guard.blocked)(a.ip())) {
        Some(blocked) => Err(format!(
            "refused: {} resolves to a blocked address {}",
            target.host,
            blocked.ip()
        )),
        None => Ok(candidates),
    }
}

/// One walk's clients: one per (host, port), pinned to the checked addresses. Connections are
/// never reused: like the reference's urllib transport, each request asks `Connection: close`
/// on a connection of its own (§2.2), because servers answer that with a `Connection: close`
/// response header, which enters `headers_sha256`.
pub struct Session {
    transport: Transport,
    clients: Mutex<HashMap<(String, u16), reqwest::Client>>,
}

struct Target {
    url: reqwest::Url,
    host: String,
    port: u16,
    literal: Option<IpAddr>,
    /// Plain http (a named loopback host only).
    plain: bool,
}

fn parse_https(raw: &str) -> Result<Target, String> {
    let url = reqwest::Url::parse(raw).map_err(|e| format!("not a URL ({e}): {raw}"))?;
    if url.scheme() != "https" {
        return Err(format!(
            "refused: only https:// URLs are fetched, not {}://",
            url.scheme()
        ));
    }
    if let Some(why) = super::userinfo_refusal(&url) {
        return Err(why);
    }
    let port = url.port_or_known_default().unwrap_or(443);
    let (host, literal) = match url.host() {
        Some(url::Host::Domain(d)) => (d.to_ascii_lowercase(), None),
        Some(url::Host::Ipv4(ip)) => (ip.to_string(), Some(IpAddr::V4(ip))),
        Some(url::Host::Ipv6(ip)) => (ip.to_string(), Some(IpAddr::V6(ip))),
        None => return Err(format!("URL has no host: {raw}")),
    };
    Ok(Target {
        url,
        host,
        port,
        literal,
        plain: false,
    })
}

/// Whether a request may have reached the server: what a failed exchange leaves unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reached {
    /// Refused by the rules, not resolved, not connected (refused, unreachable, TLS handshake
    /// failed): the request was never written.
    Never,
    /// Connected, so the request may have been written, whatever came back (or did not).
    Maybe,
}

impl Session {
    /// Send one request and observe it. Never fails: refusals, timeouts and errors become a
    /// status-0 exchange whose `x-transport-error` says what happened.
    pub async fn fetch(&self, request: &HttpRequest) -> Exchange {
        self.fetch_noting_reach(request).await.0
    }

    /// [`Session::fetch`], also saying whether the request may have reached the server.
    pub async fn fetch_noting_reach(&self, request: &HttpRequest) -> (Exchange, Reached) {
        let started = Instant::now();
        let deadline = self.transport.inner.deadline;
        let reading_sse = std::sync::atomic::AtomicBool::new(false);
        let sending = std::sync::atomic::AtomicBool::new(false);
        let head = Mutex::new(None);
        let outcome = tokio::time::timeout(
            deadline,
            self.fetch_inner(request, &reading_sse, &sending, &head),
        )
        .await;
        let reached = if sending.load(std::sync::atomic::Ordering::Relaxed) {
            Reached::Maybe
        } else {
            Reached::Never
        };
        let duration_ms = started.elapsed().as_millis() as u64;
        let failed = |text: String| match head.lock().expect("answer head lock").take() {
            Some(head) => Exchange::cut_off(request.clone(), head, text, duration_ms),
            None => Exchange::failure(request.clone(), text, duration_ms),
        };
        let ex = match outcome {
            Ok(Ok((status, headers, body))) => {
                Exchange::answered(request.clone(), status, headers, body, duration_ms)
            }
            Ok(Err(text)) => failed(text),
            Err(_) => {
                let text = match request.read {
                    BodyRead::SseUntilResponse(id)
                        if reading_sse.load(std::sync::atomic::Ordering::Relaxed) =>
                    {
                        format!(
                            "timed out: the event stream delivered no JSON-RPC response with id {id} within {} s",
                            deadline.as_secs()
                        )
                    }
                    _ => format!(
                        "timed out: no complete answer within {} s (the deadline covers connect, headers and body)",
                        deadline.as_secs()
                    ),
                };
                failed(text)
            }
        };
        (ex, reached)
    }

    /// Resolve and vet `raw_url`'s host now, once for this session: later requests to that
    /// host and port reuse the vetted addresses (no lookup of their own). Why not, when the
    /// rules refuse it or it does not resolve.
    pub async fn prepare(&self, raw_url: &str) -> Result<(), String> {
        let target = self.transport.parse_target(raw_url)?;
        tokio::time::timeout(self.transport.inner.deadline, self.client_for(&target))
            .await
            .map_err(|_| format!("resolving {} timed out", target.host))?
            .map(|_| ())
    }

    async fn client_for(&self, target: &Target) -> Result<reqwest::Client, String> {
        let key = (target.host.clone(), target.port);
        if let Some(client) = self.clients.lock().expect("client cache lock").get(&key) {
            return Ok(client.clone());
        }
        let addrs = self.transport.resolve_checked(target).await?;
        let inner = &self.transport.inner;
        let mut builder = reqwest::Client::builder()
            .use_preconfigured_tls(inner.tls.clone())
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .http1_only()
            // One connection per request (§2.2): nothing is kept for a next request.
            .pool_max_idle_per_host(0)
            .user_agent(inner.user_agent.clone());
        match target.literal {
            // The connection goes to the literal we checked.
            Some(_) => {}
            // Pin the name to the checked addresses: no second resolution.
            None => builder = builder.resolve_to_addrs(&target.host, &addrs),
        }
        let client = builder
            .build()
            .map_err(|e| format!("cannot build HTTP client: {}", error_chain(&e)))?;
        self.clients
            .lock()
            .expect("client cache lock")
            .insert(key, client.clone());
        Ok(client)
    }

    /// Check the destination, then send `request` with the headers every exchange carries;
    /// the answer's head (its body is the caller's to read, under the caller's caps).
    /// `sending` is set once the request may be written (cleared again when the connection
    /// was never made).
    async fn send(
        &self,
        request: &HttpRequest,
        sending: &std::sync::atomic::AtomicBool,
    ) -> Result<reqwest::Response, String> {
        let target = self.transport.parse_target(&request.url)?;
        let client = self.client_for(&target).await?;
        let method = reqwest::Method::from_bytes(request.method.as_bytes())
            .map_err(|e| format!("bad method {}: {e}", request.method))?;
        let mut builder = client.request(method, target.url.clone());
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        // Bodies are hashed as received: ask for no content coding and never decode.
        builder = builder.header("Accept-Encoding", "identity");
        // As the reference's urllib does (§2.2): servers answer it with `Connection: close`,
        // which is part of the response header set every witness hashes.
        builder = builder.header("Connection", "close");
        if let Some(body) = &request.body {
            builder = builder.body(body.clone());
        }
        use std::sync::atomic::Ordering::Relaxed;
        sending.store(true, Relaxed);
        builder.send().await.map_err(|e| {
            if e.is_connect() {
                // No connection (refused, unreachable, TLS handshake): nothing was written.
                sending.store(false, Relaxed);
            }
            error_chain(&e)
        })
    }

    async fn fetch_inner(
        &self,
        request: &HttpRequest,
        reading_sse: &std::sync::atomic::AtomicBool,
        sending: &std::sync::atomic::AtomicBool,
        head: &Mutex<Option<AnswerHead>>,
    ) -> Result<(u16, Vec<(String, String)>, Vec<u8>), String> {
        let mut response = self.send(request, sending).await?;
        let status = response.status().as_u16();
        // Held where a failure from here on (the body over the cap, cut off or late) finds it;
        // taken back below when the body arrives whole.
        *head.lock().expect("answer head lock") = Some(AnswerHead {
            status,
            headers: collect_headers(response.headers()),
        });
        let cap = self.transport.inner.body_cap;
        if let Some(len) = response.content_length()
            && len as usize > cap
        {
            return Err(body_cap_text(cap, Some(len)));
        }
        let stop_at_response = match request.read {
            BodyRead::SseUntilResponse(id)
                if response
                    .headers()
                    .get(reqwest::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(crate::sse::is_event_stream) =>
            {
                reading_sse.store(true, std::sync::atomic::Ordering::Relaxed);
                Some(id)
            }
            _ => None,
        };
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| error_chain(&e))? {
            if body.len() + chunk.len() > cap {
                return Err(body_cap_text(cap, None));
            }
            body.extend_from_slice(&chunk);
            if let Some(id) = stop_at_response
                && let Some(event) = crate::sse::find_response(&body, id)
            {
                // The stream may stay open: the body is what was read up to the event's end,
                // the same bytes whatever the chunking.
                body.truncate(event.end);
                break;
            }
        }
        let headers = head
            .lock()
            .expect("answer head lock")
            .take()
            .map(|h| h.headers)
            .unwrap_or_default();
        Ok((status, headers, body))
    }
}

/// A response whose body is read chunk by chunk by the caller rather than kept: see
/// [`Session::open_stream`].
pub struct BodyStream {
    pub status: u16,
    /// Lower-case names in arrival order; a repeated name keeps its last value.
    pub response_headers: Vec<(String, String)>,
    response: reqwest::Response,
    read: u64,
    total_cap: u64,
    deadline: tokio::time::Instant,
    deadline_secs: u64,
}

impl BodyStream {
    /// The next piece of the body (`None` at its end), within the cap and the deadline.
    pub async fn chunk(&mut self) -> Result<Option<bytes::Bytes>, String> {
        let next = tokio::time::timeout_at(self.deadline, self.response.chunk())
            .await
            .map_err(|_| timed_out(self.deadline_secs))?
            .map_err(|e| error_chain(&e))?;
        if let Some(chunk) = &next {
            self.read += chunk.len() as u64;
            if self.read > self.total_cap {
                return Err(format!(
                    "response body too large: more than the {}-byte cap",
                    self.total_cap
                ));
            }
        }
        Ok(next)
    }
}

fn timed_out(secs: u64) -> String {
    format!(
        "timed out: no complete answer within {secs} s (the deadline covers connect, headers and body)"
    )
}

impl Session {
    /// Sends one request and returns its status and headers with the body still unread, for
    /// answers too long to hold (a ledger's export): the same rules as [`Session::fetch`]
    /// (https only, address policy, no redirects), with the caller's `deadline` over the whole
    /// exchange, body included, and `total_cap` over the body.
    pub async fn open_stream(
        &self,
        request: &HttpRequest,
        deadline: Duration,
        total_cap: u64,
    ) -> Result<BodyStream, String> {
        let until = tokio::time::Instant::now() + deadline;
        let sending = std::sync::atomic::AtomicBool::new(false);
        let response = tokio::time::timeout_at(until, self.send(request, &sending))
            .await
            .map_err(|_| timed_out(deadline.as_secs()))??;
        if let Some(len) = response.content_length()
            && len > total_cap
        {
            return Err(body_cap_text(total_cap as usize, Some(len)));
        }
        Ok(BodyStream {
            status: response.status().as_u16(),
            response_headers: collect_headers(response.headers()),
            response,
            read: 0,
            total_cap,
            deadline: until,
            deadline_secs: deadline.as_secs(),
        })
    }
}

fn body_cap_text(cap: usize, announced: Option<u64>) -> String {
    match announced {
        Some(len) => format!("response body too large: {len} bytes announced, cap is {cap} bytes"),
        None => format!("response body too large: more than the {cap}-byte cap"),
    }
}

/// Header map in arrival order with the last value of a repeated name (§2.2). Values are read
/// as ISO-8859-1, as Python's http.client does, so any byte survives.
fn collect_headers(map: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::with_capacity(map.len());
    for (name, value) in map.iter() {
        let text: String = value.as_bytes().iter().map(|&b| b as char).collect();
        match out.iter_mut().find(|(k, _)| k == name.as_str()) {
            Some(slot) => slot.1 = text,
            None => out.push((name.as_str().to_string(), text)),
        }
    }
    out
}

/// An error and its causes on one line.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_offers_aes_128_with_sha_256_first_and_drops_no_suite() {
        let ours: Vec<_> = client_crypto()
            .cipher_suites
            .iter()
            .map(|s| s.suite())
            .collect();
        assert_eq!(ours[0], rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
        let mut all: Vec<_> = (rustls::crypto::aws_lc_rs::default_provider().cipher_suites)
            .iter()
            .map(|s| s.suite())
            .collect();
        let mut sorted = ours.clone();
        all.sort_by_key(|s| u16::from(*s));
        sorted.sort_by_key(|s| u16::from(*s));
        assert_eq!(sorted, all, "the same suites, only reordered");
        assert!(ours[1..].contains(&rustls::CipherSuite::TLS13_AES_256_GCM_SHA384));
    }

    fn transport(plain: bool, named: &[&str]) -> Transport {
        let mut policy = NetPolicy::new(true);
        for h in named {
            policy.allow_host_port(h).unwrap();
        }
        let mut tc = TransportConfig::new(policy);
        tc.plain_http_loopback = plain;
        Transport::new(tc).unwrap()
    }

    /// `Session::prepare` vets a host once for the session, with the session's rules: a
    /// guarded transport refuses a blocked address before any request is written.
    #[tokio::test]
    async fn a_session_prepares_a_host_under_its_rules() {
        let mut config = TransportConfig::new(NetPolicy::new(false));
        config.address_guard = Some(AddressGuard {
            blocked: |ip| ip.is_loopback(),
            only_port: 443,
        });
        let session = Transport::new(config).unwrap().session();
        let why = session
            .prepare("https://127.0.0.1/health")
            .await
            .unwrap_err();
        assert_eq!(
            why,
            "refused: 127.0.0.1 resolves to a blocked address 127.0.0.1"
        );
        let why = session
            .prepare("https://127.0.0.1:8443/")
            .await
            .unwrap_err();
        assert_eq!(why, "refused: only port 443 is fetched, not 8443");
        assert!(session.prepare("http://a.example/").await.is_err());
    }

    /// The witness pool's rule: one blocked address refuses the whole host, only port 443,
    /// and everything under --allow-private-network (tests only).
    #[test]
    fn an_address_guard_refuses_a_host_with_any_blocked_address_and_other_ports() {
        let guard = AddressGuard {
            blocked: |ip| ip.is_loopback(),
            only_port: 443,
        };
        let target = |raw: &str| parse_https(raw).unwrap();
        let addrs = |list: &[&str]| -> Vec<SocketAddr> {
            list.iter().map(|a| a.parse().unwrap()).collect()
        };
        let public = addrs(&["93.184.216.34:443", "[2606:2800:220:1::1]:443"]);
        assert_eq!(
            guarded(&guard, false, &target("https://a.example/"), public.clone()),
            Ok(public)
        );
        let mixed = addrs(&["93.184.216.34:443", "127.0.0.1:443"]);
        assert_eq!(
            guarded(&guard, false, &target("https://a.example/"), mixed.clone()),
            Err("refused: a.example resolves to a blocked address 127.0.0.1".into())
        );
        assert_eq!(
            guarded(
                &guard,
                false,
                &target("https://a.example:8443/"),
                addrs(&["93.184.216.34:8443"])
            ),
            Err("refused: only port 443 is fetched, not 8443".into())
        );
        assert_eq!(
            guarded(
                &guard,
                true,
                &target("https://a.example:8443/"),
                mixed.clone()
            ),
            Ok(mixed)
        );
    }

    #[test]
    fn plain_http_only_to_a_named_loopback_host_and_only_when_enabled() {
        let on = transport(true, &["127.0.0.1:8080", "localhost:80"]);
        let t = on.parse_target("http://127.0.0.1:8080/hook").unwrap();
        assert!(t.plain && t.port == 8080 && t.url.scheme() == "http");
        let t = on.parse_target("http://localhost/x").unwrap();
        assert!(t.plain && t.port == 80 && t.literal.is_none());
        assert!(!on.parse_target("https://127.0.0.1:8080/").unwrap().plain);
        for refused in [
            "http://127.0.0.1:8081/hook",
            "http://hooks.example:8080/",
            "http://u:p@127.0.0.1:8080/",
        ] {
            let why = on.parse_target(refused).err().unwrap();
            assert!(why.starts_with("refused:"), "{refused}: {why}");
        }
        // Everywhere else (walks, filing, ledgers) plain http is refused, named or not.
        let off = transport(false, &["127.0.0.1:8080"]);
        let why = off
            .parse_target("http://127.0.0.1:8080/hook")
            .err()
            .unwrap();
        assert_eq!(why, "refused: only https:// URLs are fetched, not http://");
    }
}
