//! `conduct-walker mcp`: start the MCP face (`crate::mcp`) with the operator's config.

use crate::config;
use clap::Args;
use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// The config file: the daemon's TOML (`[witness]`, `[network]`, `[daemon] database`, and an
    /// optional `[mcp]` section). Default: $CONFIGURATION_DIRECTORY/walker.toml.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Serve MCP Streamable HTTP at http://ADDR/mcp instead of stdio (loopback addresses only).
    #[arg(long, value_name = "127.0.0.1:PORT")]
    pub listen: Option<SocketAddr>,
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

pub async fn run(args: McpArgs) -> anyhow::Result<ExitCode> {
    init_tracing();
    let path = config::default_config_path(args.config.as_deref())?;
    let cfg = config::load(&path)?;
    crate::mcp::run(crate::mcp::Options::new(cfg), args.listen).await?;
    Ok(ExitCode::from(super::EXIT_OK))
}
