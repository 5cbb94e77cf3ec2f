//! `conduct-walker mcp`: parse and check what the MCP face needs (the operator's config, how
//! callers are admitted); the binary hands it to that face.

use crate::config;
use clap::Args;
use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// The config file: the daemon's TOML (`[witness]`, `[network]`, `[daemon] database`, and an
    /// optional `[mcp]` section). Default: $CONFIGURATION_DIRECTORY/walker.toml.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Serve MCP Streamable HTTP at http://ADDR/mcp instead of stdio (loopback addresses only).
    /// Callers must send `Authorization: Bearer TOKEN` (see --token-file) unless --no-auth.
    #[arg(long, value_name = "127.0.0.1:PORT")]
    pub listen: Option<SocketAddr>,
    /// With --listen: the file holding the bearer token callers must send (one line, at least
    /// 32 characters). Default: $CREDENTIALS_DIRECTORY/mcp-token when systemd passes it.
    #[arg(
        long,
        value_name = "FILE",
        requires = "listen",
        conflicts_with = "no_auth"
    )]
    pub token_file: Option<PathBuf>,
    /// With --listen: serve without a token, so any local user may walk and file under the
    /// operator's key. Only where every local user is trusted.
    #[arg(long, requires = "listen")]
    pub no_auth: bool,
}

/// How `--listen` admits callers: the token from --token-file or the systemd credential, or
/// nobody checked with --no-auth; without either it does not start.
fn auth(args: &McpArgs) -> anyhow::Result<crate::credentials::Auth> {
    use crate::credentials::{Auth, TOKEN_CREDENTIAL, read_token};
    if args.no_auth {
        return Ok(Auth::Open);
    }
    if let Some(path) = &args.token_file {
        return Ok(Auth::Token(read_token(path)?));
    }
    if let Some(path) = crate::credentials::existing(TOKEN_CREDENTIAL) {
        return Ok(Auth::Token(read_token(&path)?));
    }
    anyhow::bail!(
        "--listen needs a bearer token, or else any local user could walk and file under the operator's key: give --token-file FILE (make one with `(umask 077 && openssl rand -hex 32 > FILE)`), or pass it as the systemd credential {TOKEN_CREDENTIAL} (LoadCredential={TOKEN_CREDENTIAL}:FILE), or say --no-auth to serve without one"
    )
}

/// Logs go to stderr only: on stdio, stdout carries nothing but protocol messages. Quiet by
/// default (an MCP client shows stderr to its user); `CONDUCT_WALKER_LOG` sets the filter.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CONDUCT_WALKER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(filter)
        .with_target(false)
        .try_init();
}

/// `mcp`: start logging, admit callers, load the config, and hand them over to the MCP face.
pub fn run(args: McpArgs) -> anyhow::Result<super::Handoff> {
    init_tracing();
    let listen = match args.listen {
        Some(addr) => Some((addr, auth(&args)?)),
        None => None,
    };
    let path = config::default_config_path(args.config.as_deref())?;
    let config = config::load(&path)?;
    Ok(super::Handoff::Mcp {
        config: Box::new(config),
        listen,
    })
}
