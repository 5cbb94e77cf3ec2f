//! `conduct-walker mcp`: an MCP server (the official Rust SDK, `rmcp`) that lets an AI agent be
//! the witness. Stdio by default; Streamable HTTP on a loopback address with `--listen`.
//!
//! The operator's config file, not the model, decides who signs (identity and key), whether
//! records are filed, which private hosts are reachable, where the store is and how many walks
//! a day a model may start (`[mcp]` in [`crate::config`]). Every tool failure is a tool error
//! (`isError: true` with a text saying what was wrong); the server itself never stops for one.
//! Stdout carries protocol messages only: logs go to stderr.

mod http;
mod jsonrpc;
mod reads;
mod rings;
mod stdio;
mod tools;
mod walk;

use crate::card_signature::TrustStore;
use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::net::Transport;
use crate::pipeline::Pipeline;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

pub use crate::credentials::{Auth, MIN_TOKEN_CHARS, TOKEN_CREDENTIAL, read_token};
pub use http::router;
pub use walk::default_daily_cap;

/// What the model is told when it connects.
pub const INSTRUCTIONS: &str = "conduct-walker witnesses how A2A agents behave in public. \
witness_walk walks an agent (fetches its card twice, sends one request, evaluates the A2A \
Conduct Extension's assertions), signs the record with the operator's key, stores it and files \
it with the witness intake; it answers with the verdict, each assertion, the record and the \
intake's answer. A walk never pays: an endpoint that answers 402 is recorded, never paid. \
Origins that decline listing in /.well-known/mcp-conduct.json are not walked. The operator's \
configuration fixes the witness identity and key, whether records are filed, which hosts are \
reachable and how many walks a day may start. records_list, records_show and records_verify \
read the local store; card_verify and terms_verify check an Agent Card's signatures and the \
terms it offers; ring_verify recomputes a register's monthly ring from its inputs.";

/// How the server runs: the operator's config, and a clock (tests fix it).
pub struct Options {
    pub config: Config,
    pub clock: Arc<dyn Clock>,
}

impl Options {
    pub fn new(config: Config) -> Options {
        Options {
            config,
            clock: Arc::new(SystemClock),
        }
    }
}

/// The MCP server: cheap to clone (one per Streamable HTTP session shares the same state).
#[derive(Clone)]
pub struct WitnessServer {
    state: Arc<State>,
}

struct State {
    config: Config,
    database: PathBuf,
    pipeline: Pipeline,
    transport: Transport,
    /// For `jku` fetches in `card_verify`: the JWKS body cap and deadline.
    jwks_transport: Transport,
    trust: TrustStore,
    signed: bool,
    /// Filing walks a day (the lane's budget unless the config says).
    daily_cap: u32,
    /// Store-only walks a day.
    store_only_cap: u32,
    clock: Arc<dyn Clock>,
}

impl WitnessServer {
    /// Load the key, open the store and build the transports. A config that cannot work fails
    /// here, before the first client connects.
    pub fn new(options: Options) -> anyhow::Result<WitnessServer> {
        use anyhow::Context as _;
        let config = options.config;
        let database = config.database_path()?;
        let transport = crate::app::transport(&config)?;
        let jwks_transport = crate::app::jwks_transport(&config)?;
        // The config's own pipeline, as the daemon and `walk` build it: the same key (the
        // `signing-key` credential included), the same store rules.
        let pipeline = crate::app::pipeline(
            &config,
            transport.clone(),
            database.clone(),
            options.clock.clone(),
        )
        .with_context(|| format!("cannot set up the pipeline over {}", database.display()))?;
        let trust = pipeline.trust().clone();
        let signed = pipeline.public_key_b64().is_some();
        let daily_cap = config
            .file
            .mcp
            .daily_walk_cap
            .as_ref()
            .map(|c| *c.get_ref())
            .unwrap_or_else(|| default_daily_cap(config.witness.key_url.as_deref(), signed));
        let store_only_cap = config
            .file
            .mcp
            .daily_store_only_cap
            .as_ref()
            .map(|c| *c.get_ref())
            .unwrap_or(crate::config::DEFAULT_STORE_ONLY_CAP);
        Ok(WitnessServer {
            state: Arc::new(State {
                config,
                database,
                pipeline,
                transport,
                jwks_transport,
                trust,
                signed,
                daily_cap,
                store_only_cap,
                clock: options.clock,
            }),
        })
    }
}

/// A tool's answer: structured content (matching the tool's `outputSchema`), a one-line summary
/// first, and the JSON as text for clients that do not read `structuredContent`.
fn answer(summary: String, value: Value) -> CallToolResult {
    let mut result = CallToolResult::structured(value);
    result.content.insert(0, ContentBlock::text(summary));
    result
}

/// A tool's answer whose text is written for a model (`texts`, the first a one-line summary)
/// rather than the JSON again: the JSON is in `structuredContent` only.
fn answer_text(texts: Vec<String>, value: Value) -> CallToolResult {
    let mut result = CallToolResult::structured(value);
    result.content = texts.into_iter().map(ContentBlock::text).collect();
    result
}

/// The longest tool error: errors quote bad input clipped ([`tools::quote`]); this bounds
/// whatever else an error carries (an agent's or the network's words).
const ERROR_MAX_CHARS: usize = 2000;

/// A tool error: the model reads the text and can correct itself.
fn tool_error(text: impl Into<String>) -> CallToolResult {
    let mut text: String = text.into();
    if text.chars().count() > ERROR_MAX_CHARS {
        text = format!(
            "{}… (clipped)",
            text.chars().take(ERROR_MAX_CHARS).collect::<String>()
        );
    }
    CallToolResult::error(vec![ContentBlock::text(text)])
}

impl ServerHandler for WitnessServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "conduct-walker",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::all()))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        tools::all().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let state = &self.state;
        let args = request.arguments;
        let result = match request.name.as_ref() {
            tools::WITNESS_WALK => walk::witness_walk(state, args, context).await,
            tools::RECORDS_LIST => reads::records_list(state, args).await,
            tools::RECORDS_SHOW => reads::records_show(state, args).await,
            tools::RECORDS_VERIFY => reads::records_verify(state, args).await,
            tools::CARD_VERIFY => reads::card_verify(state, args).await,
            tools::TERMS_VERIFY => reads::terms_verify(state, args).await,
            tools::RING_VERIFY => rings::ring_verify(args).await,
            tools::INSPECT_DOCUMENT => rings::inspect_document(args).await,
            tools::CANONICAL_FORM => rings::canonical_form(args).await,
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no tool named {}", tools::quote(other)),
                    None,
                ));
            }
        };
        Ok(result.unwrap_or_else(tool_error).into())
    }
}

/// Serve on stdio until the client closes it, or on Streamable HTTP at `listen` (loopback),
/// admitting callers by `auth`.
pub async fn run(options: Options, listen: Option<(SocketAddr, Auth)>) -> anyhow::Result<()> {
    let server = WitnessServer::new(options)?;
    match listen {
        None => stdio::serve(server).await,
        Some((addr, auth)) => http::serve(server, addr, auth).await,
    }
}
