//! A sandbox A2A/MCP agent whose behaviour is a set of knobs, and the named scenarios built from
//! them (honest, and each way an agent can misbehave that the walk must notice).

use super::https::{Body, Handler, HttpsServer, Req, Resp, SandboxCa, handler};
use crate::walk::spec::{EXT, PERMA};
use crate::walk::{Mode, Wire};
use serde_json::{Value, json};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Which extension listing(s) the card carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Declare {
    #[default]
    Canonical,
    Permanent,
    NextVersion,
    Foreign,
    Nothing,
    /// A well-formed listing followed by a malformed one (the first wins).
    Twice,
}

/// What the card body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CardBytes {
    #[default]
    Json,
    NotJson,
    Utf8Bom,
    /// Served gzip-compressed with `Content-Encoding: gzip` (must be hashed, not decoded).
    Gzip,
    /// Compact JSON, no indentation: a card of a million small values or 992 levels fits the
    /// 1 MiB cap only without the pretty form's whitespace.
    Compact,
}

/// How the endpoint answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reply {
    /// By the request's method: MCP `initialize`, A2A 1.0 or 0.3.
    #[default]
    Honest,
    /// A 1.0 request answered with a 0.3-shaped result, and vice versa.
    OtherWireShape,
    Status(u16),
    /// 302 to another path.
    Redirect,
    /// A 5 MiB body.
    Huge,
}

/// Message or Task, and where the metadata sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplyKind {
    #[default]
    Message,
    Task,
    /// Metadata only on `task.status.message`.
    TaskStatusMessageOnly,
}

/// What the returned metadata says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Metadata {
    #[default]
    Honest,
    Missing,
    UnderPermanentId,
    EndpointNotOnCard,
    ConductRecordDiffers,
    NoServedBy,
    /// `served_by` set to this text, `{base}` and `{port}` replaced by the server's.
    ServedBy(String),
}

/// Which header spellings the agent echoes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Echo {
    /// The caller's spelling (and `A2A-Extensions` always), as §1.6 says.
    #[default]
    Caller,
    NewSpellingOnly,
    OldSpellingOnly,
    Nothing,
}

/// How the MCP endpoint speaks Streamable HTTP (MCP 2025-03-26 and later).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum McpServing {
    /// One JSON body, whatever `Accept` says (the MCP SDK's JSON-response mode, lenient).
    #[default]
    Json,
    /// As the MCP SDKs serve by default: `406` unless `Accept` lists both `application/json`
    /// and `text/event-stream`; the answer is an event stream (a log notification, then the
    /// response) that stays open after the response; `session` hands out `Mcp-Session-Id`.
    EventStream { session: bool },
    /// An event stream that ends without the JSON-RPC response.
    StreamEndsWithoutResponse,
    /// An event stream that sends a notification and then nothing, held open.
    StreamNeverAnswers,
}

/// The session id a stateful sandbox MCP endpoint hands out.
pub const SANDBOX_MCP_SESSION_ID: &str = "sandbox-session-4f1c";
/// How long a sandbox event stream stays open after its last event.
const STREAM_HELD_OPEN: Duration = Duration::from_secs(120);

/// Every knob of a sandbox agent. `Default` is the honest agent.
#[derive(Debug, Clone, Default)]
pub struct Behaviour {
    pub declare: Declare,
    pub card_bytes: CardBytes,
    pub card_status: Option<u16>,
    /// The second card fetch returns different bytes.
    pub card_changes: bool,
    /// The first card fetch trickles one byte per this interval.
    pub card_trickle: Option<Duration>,
    /// Extra top-level card members (paid signals, compensation copies, prose...).
    pub card_extra: Option<Value>,
    /// Replace `params` entirely.
    pub params_override: Option<Value>,
    /// `measured_endpoints` to declare, `{base}` replaced; default `["{base}/mcp"]`.
    pub measured_endpoints: Option<Vec<String>>,
    /// `params.witness_intake` (default the public ledger's URL).
    pub witness_intake: Option<String>,
    pub reply: Reply,
    pub reply_kind: ReplyKind,
    pub metadata: Metadata,
    pub echo: Echo,
    /// The listing says `required: true` (a data-only extension must not).
    pub extension_required: bool,
    pub mcp: McpServing,
    /// Served at `/.well-known/mcp-conduct.json` (the origin's consent file); 404 when `None`.
    pub consent: Option<Value>,
    /// Sign the card (ES256, A2A §8.4) and serve the key at [`SANDBOX_JWKS_PATH`].
    pub card_signing: Option<CardSigning>,
}

/// How a sandbox card is signed: ES256 with [`SANDBOX_CARD_KEY`], kid [`SANDBOX_CARD_KID`],
/// `jku` = the agent's own [`SANDBOX_JWKS_PATH`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardSigning {
    /// Over RFC 8785 of the served card (what the reference walker 1.5.0 checks first).
    ServedForm,
    /// Over the a2a-sdk form (what the SDKs sign; it leaves members outside the schema out).
    SdkForm,
    /// Over the served form, but by another key than the one served at the `jku`.
    WrongKey,
}

/// Where a signing sandbox agent serves its JWK Set.
pub const SANDBOX_JWKS_PATH: &str = "/.well-known/jwks.json";
/// The kid of the sandbox card key.
pub const SANDBOX_CARD_KID: &str = "sandbox-card-es256";
/// The sandbox card key's secret scalar: a published test key, never a real one.
const SANDBOX_CARD_KEY: [u8; 32] = [0x5a; 32];
/// What [`CardSigning::WrongKey`] signs with.
const SANDBOX_OTHER_KEY: [u8; 32] = [0x5b; 32];

fn sandbox_key(secret: &[u8; 32]) -> p256::ecdsa::SigningKey {
    p256::ecdsa::SigningKey::from_slice(secret).expect("a valid P-256 scalar")
}

/// The JWK Set a signing sandbox agent serves.
pub fn sandbox_jwks() -> Value {
    json!({"keys": [crate::card_signature::signing::es256_public_jwk(
        &sandbox_key(&SANDBOX_CARD_KEY),
        SANDBOX_CARD_KID,
    )]})
}

fn sign_card(card: Value, signing: CardSigning, base: &str) -> Value {
    use crate::card_signature::signing::{WalkForm, sign_es256_entry, with_signature};
    let (form, secret) = match signing {
        CardSigning::ServedForm => (WalkForm::ServedRfc8785, &SANDBOX_CARD_KEY),
        CardSigning::SdkForm => (WalkForm::SdkProto, &SANDBOX_CARD_KEY),
        CardSigning::WrongKey => (WalkForm::ServedRfc8785, &SANDBOX_OTHER_KEY),
    };
    let header = format!(
        r#"{{"alg":"ES256","typ":"JOSE","kid":"{SANDBOX_CARD_KID}","jku":"{base}{SANDBOX_JWKS_PATH}"}}"#
    );
    let entry = sign_es256_entry(&card, form, &header, &sandbox_key(secret))
        .expect("a sandbox card can be signed");
    with_signature(&card, entry)
}

pub const DEFAULT_CONDUCT_RECORD: &str = "https://gate.horizonshield.dev/history?endpoint=sandbox";
pub const DEFAULT_WITNESS_INTAKE: &str = "https://ledger.horizonshield.dev/witness";

impl Behaviour {
    fn measured(&self, base: &str) -> Vec<String> {
        self.measured_endpoints
            .clone()
            .unwrap_or_else(|| vec!["{base}/mcp".to_string()])
            .into_iter()
            .map(|m| m.replace("{base}", base))
            .collect()
    }

    fn params(&self, base: &str) -> Value {
        if let Some(p) = &self.params_override {
            return p.clone();
        }
        json!({
            "compensation": {
                "paid_by": "public",
                "referral_fee": false,
                "listing_fee": false,
                "success_fee_pct": 0,
                "disclosure_url": null,
            },
            "measured_endpoints": self.measured(base),
            "conduct_record": DEFAULT_CONDUCT_RECORD,
            "witness_intake": self.witness_intake.as_deref().unwrap_or(DEFAULT_WITNESS_INTAKE),
        })
    }

    /// The card as JSON for this server's base URL.
    pub fn card(&self, base: &str) -> Value {
        let listing = |uri: &str| {
            json!({
                "uri": uri,
                "description": "conduct pointers (data-only)",
                "required": self.extension_required,
                "params": self.params(base),
            })
        };
        let extensions = match self.declare {
            Declare::Canonical => vec![listing(EXT)],
            Declare::Permanent => vec![listing(PERMA)],
            Declare::NextVersion => vec![listing("https://w3id.org/horizonshield/conduct/v2")],
            Declare::Foreign => vec![listing("https://w3id.org/someone-else/conduct/v1")],
            Declare::Nothing => vec![],
            Declare::Twice => vec![listing(EXT), json!({"uri": PERMA, "params": "malformed"})],
        };
        let mut card = json!({
            "name": "Sandbox agent ✓ — démo 🤖",
            "description": "A loopback agent that plays a named scenario for conduct-walker.",
            "version": "1.0.0",
            "supportedInterfaces": [
                {"url": format!("{base}/mcp"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
            "capabilities": {"streaming": false, "extensions": extensions},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "echo", "name": "Echo", "description": "Says what it was told.", "tags": ["demo"]}],
        });
        if let Some(Value::Object(extra)) = &self.card_extra {
            for (k, v) in extra {
                card[k] = v.clone();
            }
        }
        match self.card_signing {
            Some(signing) => sign_card(card, signing, base),
            None => card,
        }
    }
}

/// A running sandbox agent.
pub struct SandboxAgent {
    pub server: HttpsServer,
    counts: Arc<Counts>,
}

#[derive(Default)]
struct Counts {
    card_fetches: AtomicUsize,
    /// A compact card that does not change is serialised once (a 1 MB card of a million values
    /// costs more to write than the walk under test costs to read).
    compact_card: std::sync::OnceLock<Vec<u8>>,
    /// `DELETE`s that ended the session this agent handed out.
    sessions_ended: AtomicUsize,
}

impl SandboxAgent {
    /// The request handler of an agent behaving as `behaviour`, with its own fresh counts: for
    /// a server that wraps it (tests/reference_oracle.rs serves one fixed `date` header and
    /// starts each walk from the agent's first card fetch, so two walkers see the same bytes).
    pub fn handler(behaviour: Behaviour) -> Handler {
        let counts = Arc::new(Counts::default());
        let behaviour = Arc::new(behaviour);
        handler(move |req| respond(&behaviour, &counts, req))
    }

    pub async fn start(ca: &SandboxCa, behaviour: Behaviour) -> std::io::Result<Self> {
        let counts = Arc::new(Counts::default());
        let seen = counts.clone();
        let behaviour = Arc::new(behaviour);
        let server =
            HttpsServer::start(ca, handler(move |req| respond(&behaviour, &seen, req))).await?;
        Ok(SandboxAgent { server, counts })
    }

    /// An agent that behaves as `first` until the returned flag is set, then as `second` (and
    /// back when it is cleared): what the alert tests flip between walks.
    pub async fn start_flipping(
        ca: &SandboxCa,
        first: Behaviour,
        second: Behaviour,
    ) -> std::io::Result<(Self, Arc<std::sync::atomic::AtomicBool>)> {
        // Each behaviour has its own counts: the compact card is cached per behaviour.
        let counts = Arc::new(Counts::default());
        let (seen, seen_second) = (counts.clone(), Arc::new(Counts::default()));
        let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flipped = flag.clone();
        let server = HttpsServer::start(
            ca,
            handler(move |req| {
                if flipped.load(std::sync::atomic::Ordering::SeqCst) {
                    respond(&second, &seen_second, req)
                } else {
                    respond(&first, &seen, req)
                }
            }),
        )
        .await?;
        Ok((SandboxAgent { server, counts }, flag))
    }

    /// An agent whose conduct changes on a schedule: `first` for `period`, then `second` for
    /// `period`, and so on from its start. The sandbox's `changes-conduct` agent: an operator
    /// sees an incident open and resolve without writing an agent of their own.
    pub async fn start_alternating(
        ca: &SandboxCa,
        first: Behaviour,
        second: Behaviour,
        period: std::time::Duration,
    ) -> std::io::Result<Self> {
        let counts = Arc::new(Counts::default());
        let (seen, seen_second) = (counts.clone(), Arc::new(Counts::default()));
        let started = std::time::Instant::now();
        let period_ms = period.as_millis().max(1);
        let server = HttpsServer::start(
            ca,
            handler(move |req| {
                if (started.elapsed().as_millis() / period_ms) % 2 == 1 {
                    respond(&second, &seen_second, req)
                } else {
                    respond(&first, &seen, req)
                }
            }),
        )
        .await?;
        Ok(SandboxAgent { server, counts })
    }

    /// `https://127.0.0.1:<port>`: the origin to walk.
    pub fn origin(&self) -> String {
        self.server.base()
    }

    pub fn card_fetches(&self) -> usize {
        self.counts.card_fetches.load(Ordering::SeqCst)
    }

    /// How many `DELETE`s ended the MCP session this agent handed out.
    pub fn sessions_ended(&self) -> usize {
        self.counts.sessions_ended.load(Ordering::SeqCst)
    }
}

fn respond(b: &Behaviour, counts: &Counts, req: Req) -> Resp {
    if req.method == "GET" && req.path == crate::walk::spec::CARD_PATH {
        let nth = counts.card_fetches.fetch_add(1, Ordering::SeqCst);
        if b.card_bytes == CardBytes::Compact
            && !b.card_changes
            && b.card_status.is_none()
            && b.card_trickle.is_none()
        {
            let bytes = counts
                .compact_card
                .get_or_init(|| serde_json::to_vec(&b.card(&req.base)).expect("card JSON"));
            return Resp::bytes(200, "application/json", bytes.clone());
        }
        return card_response(b, &req.base, nth);
    }
    if let (Some(consent), "GET", crate::consent::CONSENT_PATH) =
        (&b.consent, req.method.as_str(), req.path.as_str())
    {
        return Resp::json(200, consent);
    }
    if b.card_signing.is_some() && req.method == "GET" && req.path == SANDBOX_JWKS_PATH {
        return Resp::json(200, &sandbox_jwks());
    }
    if req.method == "POST" {
        return endpoint_response(b, &req);
    }
    if req.method == "DELETE" && req.header("mcp-session-id") == Some(SANDBOX_MCP_SESSION_ID) {
        counts.sessions_ended.fetch_add(1, Ordering::SeqCst);
        return Resp::empty(200);
    }
    Resp::json(404, &json!({"error": "not found"}))
}

fn card_response(b: &Behaviour, base: &str, nth: usize) -> Resp {
    if let Some(status) = b.card_status {
        return Resp::json(status, &json!({"error": "no card here"}));
    }
    let mut card = b.card(base);
    if b.card_changes {
        card["version"] = json!(format!("1.0.{nth}"));
    }
    let json_bytes = if b.card_bytes == CardBytes::Compact {
        serde_json::to_vec(&card).expect("card JSON")
    } else {
        serde_json::to_vec_pretty(&card).expect("card JSON")
    };
    let mut resp = match b.card_bytes {
        CardBytes::Json | CardBytes::Compact => Resp::bytes(200, "application/json", json_bytes),
        CardBytes::NotJson => Resp::bytes(200, "application/json", "<html>not a card</html>"),
        CardBytes::Utf8Bom => {
            let mut bytes = b"\xef\xbb\xbf".to_vec();
            bytes.extend_from_slice(&json_bytes);
            Resp::bytes(200, "application/json", bytes)
        }
        CardBytes::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(&json_bytes).expect("gzip in memory");
            Resp::bytes(
                200,
                "application/json",
                enc.finish().expect("gzip in memory"),
            )
            .with_header("content-encoding", "gzip")
        }
    };
    if let (Some(every), 0) = (b.card_trickle, nth)
        && let Body::Bytes(bytes) = &resp.body
    {
        resp.body = Body::Trickle {
            bytes: bytes.clone(),
            every,
        };
    }
    resp
}

/// The URL the request arrived at, in the §1.6 `served_by` form.
fn arrived_at(req: &Req) -> String {
    let host = req
        .header("host")
        .unwrap_or("127.0.0.1")
        .to_ascii_lowercase();
    let host = host.strip_suffix(":443").unwrap_or(&host);
    let path = req.path.split(['?', '#']).next().unwrap_or("/");
    format!("https://{host}{path}")
}

fn endpoint_response(b: &Behaviour, req: &Req) -> Resp {
    let resp = endpoint_body(b, req);
    // An activated agent echoes whatever it answers, a 402 included (§1.6).
    let sent_new = req.header("a2a-extensions");
    let sent_old = req.header("x-a2a-extensions");
    let echoed = sent_new.or(sent_old).unwrap_or(EXT).to_string();
    match b.echo {
        Echo::Caller if sent_old.is_some() => resp
            .with_header("A2A-Extensions", &echoed)
            .with_header("X-A2A-Extensions", &echoed),
        Echo::Caller | Echo::NewSpellingOnly => resp.with_header("A2A-Extensions", &echoed),
        Echo::OldSpellingOnly => resp.with_header("X-A2A-Extensions", &echoed),
        Echo::Nothing => resp,
    }
}

fn endpoint_body(b: &Behaviour, req: &Req) -> Resp {
    match b.reply {
        Reply::Status(status) => {
            return Resp::json(
                status,
                &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": format!("http {status}")}}),
            );
        }
        Reply::Redirect => return Resp::empty(302).with_header("location", "/elsewhere"),
        Reply::Huge => return Resp::bytes(200, "application/json", vec![b' '; 5 * 1024 * 1024]),
        Reply::Honest | Reply::OtherWireShape => {}
    }
    let request: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
    let mut wire = match method {
        "initialize" => None,
        "message/send" => Some(Wire::V0_3),
        _ => Some(Wire::V1_0),
    };
    if b.reply == Reply::OtherWireShape {
        wire = wire.map(|w| {
            if w == Wire::V1_0 {
                Wire::V0_3
            } else {
                Wire::V1_0
            }
        });
    }
    let body = match wire {
        None => {
            return mcp_response(
                b.mcp,
                req,
                &json!({"jsonrpc": "2.0", "id": 1, "result": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "serverInfo": {"name": "conduct-walker sandbox", "version": "1"}}}),
            );
        }
        Some(w) => json!({"jsonrpc": "2.0", "id": 1, "result": a2a_result(b, req, w)}),
    };
    Resp::json(200, &body)
}

/// An MCP `initialize` answered the way `serving` says (Streamable HTTP).
fn mcp_response(serving: McpServing, req: &Req, response: &Value) -> Resp {
    let accept = req.header("accept").unwrap_or("");
    let accepts = |media: &str| accept.split(',').any(|item| item.trim() == media);
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "info", "data": "sandbox starting"}});
    let event = |message: &Value| format!("event: message\ndata: {message}\n\n");
    let stream = |events: String| Resp {
        status: 200,
        headers: vec![
            ("content-type".into(), "text/event-stream".into()),
            ("cache-control".into(), "no-cache, no-transform".into()),
        ],
        body: Body::ThenHold {
            bytes: events.into_bytes(),
            hold: STREAM_HELD_OPEN,
        },
    };
    match serving {
        McpServing::Json => Resp::json(200, response),
        McpServing::EventStream { .. }
            if !(accepts("application/json") && accepts("text/event-stream")) =>
        {
            Resp::json(
                406,
                &json!({"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600,
                "message": "Not Acceptable: Client must accept both application/json and text/event-stream"}}),
            )
        }
        McpServing::EventStream { session } => {
            let resp = stream(event(&notification) + &event(response));
            if session {
                resp.with_header("mcp-session-id", SANDBOX_MCP_SESSION_ID)
            } else {
                resp
            }
        }
        McpServing::StreamEndsWithoutResponse => Resp::bytes(
            200,
            "text/event-stream",
            event(&notification) + ": the response never comes\n\n",
        ),
        McpServing::StreamNeverAnswers => stream(event(&notification)),
    }
}

fn metadata(b: &Behaviour, req: &Req) -> Option<Value> {
    let measured = b.measured(&req.base).into_iter().next().unwrap_or_default();
    let prefix = match b.metadata {
        Metadata::Missing => return None,
        Metadata::UnderPermanentId => PERMA,
        _ => EXT,
    };
    let endpoint = match b.metadata {
        Metadata::EndpointNotOnCard => format!("{}/not-listed", req.base),
        _ => measured,
    };
    let conduct_record = match b.metadata {
        Metadata::ConductRecordDiffers => {
            "https://gate.horizonshield.dev/history?endpoint=other".to_string()
        }
        _ => DEFAULT_CONDUCT_RECORD.to_string(),
    };
    let witness_intake = b
        .witness_intake
        .clone()
        .unwrap_or_else(|| DEFAULT_WITNESS_INTAKE.to_string());
    let mut md = serde_json::Map::new();
    md.insert(format!("{prefix}/endpoint"), json!(endpoint));
    md.insert(format!("{prefix}/conduct_record"), json!(conduct_record));
    md.insert(format!("{prefix}/witness_intake"), json!(witness_intake));
    match &b.metadata {
        Metadata::NoServedBy => {}
        Metadata::ServedBy(template) => {
            let port = req.base.rsplit(':').next().unwrap_or_default();
            let text = template
                .replace("{base}", &req.base)
                .replace("{port}", port);
            md.insert(format!("{prefix}/served_by"), json!(text));
        }
        _ => {
            md.insert(format!("{prefix}/served_by"), json!(arrived_at(req)));
        }
    }
    Some(Value::Object(md))
}

fn a2a_result(b: &Behaviour, req: &Req, wire: Wire) -> Value {
    let md = metadata(b, req);
    let text = "conduct pointers are in this message's metadata";
    let mut message = match wire {
        Wire::V1_0 => {
            json!({"messageId": "sandbox-1", "role": "ROLE_AGENT", "parts": [{"text": text}], "extensions": [EXT]})
        }
        Wire::V0_3 => {
            json!({"kind": "message", "messageId": "sandbox-1", "role": "agent", "parts": [{"kind": "text", "text": text}], "extensions": [EXT]})
        }
    };
    let attach = |v: &mut Value| {
        if let Some(md) = &md {
            v["metadata"] = md.clone();
        }
    };
    match (b.reply_kind, wire) {
        (ReplyKind::Message, Wire::V1_0) => {
            attach(&mut message);
            json!({"message": message})
        }
        (ReplyKind::Message, Wire::V0_3) => {
            attach(&mut message);
            message
        }
        (kind, w) => {
            let state = if w == Wire::V1_0 {
                "TASK_STATE_COMPLETED"
            } else {
                "completed"
            };
            let mut task =
                json!({"id": "task-1", "contextId": "ctx-1", "status": {"state": state}});
            if kind == ReplyKind::TaskStatusMessageOnly {
                attach(&mut message);
            } else {
                attach(&mut task);
            }
            task["status"]["message"] = message;
            if w == Wire::V1_0 {
                json!({"task": task})
            } else {
                task["kind"] = json!("task");
                task
            }
        }
    }
}

/// A named scenario: an agent behaviour and how to walk it.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: &'static str,
    pub about: &'static str,
    pub mode: Mode,
    pub wire: Wire,
    /// An explicit `--endpoint` path (relative to the origin), when the scenario needs one.
    pub endpoint_path: Option<&'static str>,
    pub behaviour: Behaviour,
}

fn s(
    name: &'static str,
    about: &'static str,
    mode: Mode,
    wire: Wire,
    behaviour: Behaviour,
) -> Scenario {
    Scenario {
        name,
        about,
        mode,
        wire,
        endpoint_path: None,
        behaviour,
    }
}

/// Every named scenario. The demo walks a few; the tests walk them all.
pub fn scenarios() -> Vec<Scenario> {
    use Mode::{A2a, Mcp};
    use Wire::{V0_3, V1_0};
    let d = Behaviour::default;
    let paid = |extra: Value| Behaviour {
        reply: Reply::Status(402),
        card_extra: Some(extra),
        ..d()
    };
    vec![
        s(
            "honest-mcp",
            "an honest agent answering an MCP initialize with JSON",
            Mcp,
            V1_0,
            d(),
        ),
        s(
            "honest-mcp-streamable",
            "an honest MCP server as the MCP SDKs serve by default: an SSE answer, a session",
            Mcp,
            V1_0,
            Behaviour {
                mcp: McpServing::EventStream { session: true },
                ..d()
            },
        ),
        s("honest-a2a", "an honest A2A 1.0 agent", A2a, V1_0, d()),
        s("honest-a2a-0.3", "an honest A2A 0.3 agent", A2a, V0_3, d()),
        s(
            "task-reply",
            "answers with a Task carrying the metadata",
            A2a,
            V1_0,
            Behaviour {
                reply_kind: ReplyKind::Task,
                ..d()
            },
        ),
        s(
            "task-reply-0.3",
            "answers a 0.3 request with a Task",
            A2a,
            V0_3,
            Behaviour {
                reply_kind: ReplyKind::Task,
                ..d()
            },
        ),
        s(
            "task-status-message-metadata",
            "metadata only on task.status.message",
            A2a,
            V1_0,
            Behaviour {
                reply_kind: ReplyKind::TaskStatusMessageOnly,
                ..d()
            },
        ),
        s(
            "permanent-id",
            "declares the permanent w3id identifier",
            A2a,
            V1_0,
            Behaviour {
                declare: Declare::Permanent,
                ..d()
            },
        ),
        s(
            "next-version-id",
            "declares .../conduct/v2 (not this extension)",
            A2a,
            V1_0,
            Behaviour {
                declare: Declare::NextVersion,
                ..d()
            },
        ),
        s(
            "foreign-id",
            "declares another project's URI",
            A2a,
            V1_0,
            Behaviour {
                declare: Declare::Foreign,
                ..d()
            },
        ),
        s(
            "two-listings",
            "lists the extension twice; the first, well-formed one wins",
            A2a,
            V1_0,
            Behaviour {
                declare: Declare::Twice,
                ..d()
            },
        ),
        s(
            "metadata-missing",
            "answers without metadata",
            A2a,
            V1_0,
            Behaviour {
                metadata: Metadata::Missing,
                ..d()
            },
        ),
        s(
            "metadata-under-permanent-id",
            "writes the metadata keys under the w3id prefix",
            A2a,
            V1_0,
            Behaviour {
                metadata: Metadata::UnderPermanentId,
                ..d()
            },
        ),
        s(
            "endpoint-not-on-card",
            ".../endpoint names a URL the card does not list",
            A2a,
            V1_0,
            Behaviour {
                metadata: Metadata::EndpointNotOnCard,
                ..d()
            },
        ),
        s(
            "conduct-record-differs",
            ".../conduct_record differs from the card",
            A2a,
            V1_0,
            Behaviour {
                metadata: Metadata::ConductRecordDiffers,
                ..d()
            },
        ),
        Scenario {
            endpoint_path: Some("/unmeasured"),
            ..s(
                "unmeasured-no-served-by",
                "served at a URL not measured, no served_by",
                A2a,
                V1_0,
                Behaviour {
                    metadata: Metadata::NoServedBy,
                    ..d()
                },
            )
        },
        Scenario {
            endpoint_path: Some("/unmeasured"),
            ..s(
                "unmeasured-with-served-by",
                "served at a URL not measured, served_by correct",
                A2a,
                V1_0,
                d(),
            )
        },
        s(
            "served-by-upper-case-host",
            "served_by with an upper-case host and a query",
            A2a,
            V1_0,
            Behaviour {
                metadata: Metadata::ServedBy("HTTPS://LOCALHOST:{port}/mcp?from=sandbox".into()),
                ..d()
            },
        ),
        s(
            "served-by-trailing-slash",
            "served_by with a trailing slash",
            A2a,
            V1_0,
            Behaviour {
                metadata: Metadata::ServedBy("{base}/mcp/".into()),
                ..d()
            },
        ),
        s(
            "served-by-other-url",
            "served_by names another URL",
            A2a,
            V1_0,
            Behaviour {
                metadata: Metadata::ServedBy("https://elsewhere.example/mcp".into()),
                ..d()
            },
        ),
        s(
            "paid-x402",
            "answers 402 and declares x402: true",
            A2a,
            V1_0,
            paid(json!({"x402": true})),
        ),
        s(
            "paid-payment-methods",
            "answers 402 and lists paymentMethods",
            A2a,
            V1_0,
            paid(json!({"paymentMethods": ["usdc", "card"]})),
        ),
        s(
            "paid-pricing-model",
            "answers 402 and declares pricing.model pay-per-use",
            A2a,
            V1_0,
            paid(json!({"pricing": {"model": "pay-per-use"}})),
        ),
        s(
            "paid-undeclared",
            "answers 402 and declares no paid model",
            A2a,
            V1_0,
            paid(json!({})),
        ),
        s(
            "paid-top-level-buyer-no-extension",
            "answers 402, no extension, top-level compensation paid_by buyer",
            A2a,
            V1_0,
            Behaviour {
                declare: Declare::Nothing,
                measured_endpoints: None,
                ..paid(
                    json!({"compensation": {"paid_by": "buyer", "referral_fee": false, "listing_fee": false}}),
                )
            },
        ),
        s(
            "server-error",
            "the endpoint answers 500",
            A2a,
            V1_0,
            Behaviour {
                reply: Reply::Status(500),
                ..d()
            },
        ),
        s(
            "redirect",
            "the endpoint answers 302 (recorded, not followed)",
            A2a,
            V1_0,
            Behaviour {
                reply: Reply::Redirect,
                ..d()
            },
        ),
        s(
            "card-changes",
            "the card changes between n0 and n1",
            A2a,
            V1_0,
            Behaviour {
                card_changes: true,
                ..d()
            },
        ),
        s(
            "card-404",
            "no card at the well-known path",
            A2a,
            V1_0,
            Behaviour {
                card_status: Some(404),
                ..d()
            },
        ),
        s(
            "card-bom",
            "the card starts with a UTF-8 BOM",
            A2a,
            V1_0,
            Behaviour {
                card_bytes: CardBytes::Utf8Bom,
                ..d()
            },
        ),
        s(
            "card-not-json",
            "the card is not JSON",
            A2a,
            V1_0,
            Behaviour {
                card_bytes: CardBytes::NotJson,
                ..d()
            },
        ),
        s(
            "card-gzip",
            "the card is served gzip-encoded",
            A2a,
            V1_0,
            Behaviour {
                card_bytes: CardBytes::Gzip,
                ..d()
            },
        ),
        s(
            "compensation-disagrees",
            "top-level compensation says referral, params say public",
            A2a,
            V1_0,
            Behaviour {
                card_extra: Some(
                    json!({"compensation": {"paid_by": "referral", "referral_fee": true, "listing_fee": false}}),
                ),
                ..d()
            },
        ),
        s(
            "wrong-wire-shape",
            "a 1.0 request answered with a 0.3-shaped result",
            A2a,
            V1_0,
            Behaviour {
                reply: Reply::OtherWireShape,
                ..d()
            },
        ),
        s(
            "wrong-wire-shape-0.3",
            "a 0.3 request answered with a 1.0-shaped result",
            A2a,
            V0_3,
            Behaviour {
                reply: Reply::OtherWireShape,
                ..d()
            },
        ),
        s(
            "echo-new-spelling-only-0.3",
            "a 0.3 server echoing only A2A-Extensions",
            A2a,
            V0_3,
            Behaviour {
                echo: Echo::NewSpellingOnly,
                ..d()
            },
        ),
        s(
            "echo-old-spelling-only",
            "a 1.0 server echoing only X-A2A-Extensions",
            A2a,
            V1_0,
            Behaviour {
                echo: Echo::OldSpellingOnly,
                ..d()
            },
        ),
        s(
            "huge-reply",
            "the endpoint answers with 5 MiB",
            A2a,
            V1_0,
            Behaviour {
                reply: Reply::Huge,
                ..d()
            },
        ),
        s(
            "private-endpoint-on-card",
            "the card's measured endpoint is another loopback host",
            A2a,
            V1_0,
            Behaviour {
                measured_endpoints: Some(vec!["https://127.0.0.2:9/mcp".into()]),
                ..d()
            },
        ),
        s(
            "required-true",
            "declares the extension with required: true",
            A2a,
            V1_0,
            Behaviour {
                extension_required: true,
                ..d()
            },
        ),
        s(
            "signed-card",
            "an honest agent whose card is signed (ES256 over RFC 8785 of the served card, key at its own jku)",
            Mcp,
            V1_0,
            Behaviour {
                card_signing: Some(CardSigning::ServedForm),
                ..d()
            },
        ),
        s(
            "signed-card-sdk-form",
            "an honest agent whose card is signed over the a2a-sdk form only",
            A2a,
            V1_0,
            Behaviour {
                card_signing: Some(CardSigning::SdkForm),
                ..d()
            },
        ),
        s(
            "signed-card-wrong-key",
            "an honest agent whose card signature was made by another key than the one at its jku",
            Mcp,
            V1_0,
            Behaviour {
                card_signing: Some(CardSigning::WrongKey),
                ..d()
            },
        ),
    ]
}

/// A scenario by name.
pub fn scenario(name: &str) -> Option<Scenario> {
    scenarios().into_iter().find(|s| s.name == name)
}
