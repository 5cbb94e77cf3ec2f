use clap::{Parser, Subcommand};
use conduct_walker::cli;
use std::process::ExitCode;

/// Witnesses how A2A agents behave in public: walks, records, signs and files.
#[derive(Debug, Parser)]
#[command(name = "conduct-walker", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Walk one agent (n0–n3) and write its canonical record.
    Walk(Box<cli::walk::WalkArgs>),
    /// Start loopback sandbox agents and walk an honest one and a few misbehaving ones.
    Demo(cli::walk::DemoArgs),
    /// File the full record a commitment walk kept.
    Reveal(cli::walk::RevealArgs),
    /// Create an Ed25519 witness key (PKCS#8 PEM, mode 0600).
    Keygen(cli::keys::KeygenArgs),
    /// Print the key_url document for a key: {"public_key_ed25519_b64": ...}.
    Pubkey(cli::keys::PubkeyArgs),
    /// Auditor commands over the record store (read-only unless importing).
    #[command(subcommand)]
    Records(cli::records::RecordsCommand),
    /// The submissions a store still has to file: list them, or file what is due.
    #[command(subcommand)]
    Outbox(cli::outbox::OutboxCommand),
    /// Verify an Agent Card's JWS signatures.
    #[command(subcommand)]
    Card(cli::card::CardCommand),
    /// Verify the standing proposals a card publishes (A2A Terms extension).
    #[command(subcommand)]
    Terms(cli::terms::TermsCommand),
    /// Run the daemon: walk every configured target on its schedule (systemd Type=notify).
    Run(cli::daemon::RunArgs),
    /// Daemon config commands.
    #[command(subcommand)]
    Config(cli::daemon::ConfigCommand),
    /// Print the effective daemon config (defaults filled in, paths resolved).
    PrintConfig(cli::daemon::PrintConfigArgs),
    /// Run a local witness intake (spec §6) for tests and demos
    IntakeEmulator(cli::intake::IntakeEmulatorArgs),
    /// Measure end-to-end walk throughput against loopback sandbox agents.
    Bench(cli::bench::BenchArgs),
    /// Serve MCP (stdio, or Streamable HTTP with --listen): let an AI agent be the witness.
    Mcp(cli::mcp::McpArgs),
}

/// Threads for blocking work (SQLite, record checks). The store is one connection behind a lock,
/// so more threads only wait for it; tokio's default of 512 let a daemon with 10,000 targets due
/// at once grow to 72 threads, each keeping its own stack and malloc arena (issue 17, note 10).
const MAX_BLOCKING_THREADS: usize = 16;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                cli::EXIT_ERROR
            } else {
                cli::EXIT_OK
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return cli::fail(&anyhow::anyhow!("cannot start the async runtime: {e}")),
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Walk(args) => cli::walk::run(*args).await,
            Command::Demo(args) => cli::walk::demo(args).await,
            Command::Reveal(args) => cli::walk::reveal(args).await,
            Command::Keygen(args) => cli::keys::keygen(args),
            Command::Pubkey(args) => cli::keys::pubkey(args),
            Command::Records(cmd) => cli::records::run(cmd).await,
            Command::Outbox(cmd) => cli::outbox::run(cmd).await,
            Command::Card(cmd) => cli::card::run(cmd).await,
            Command::Terms(cmd) => cli::terms::run(cmd).await,
            Command::Run(args) => cli::daemon::run(args).await,
            Command::Config(cmd) => cli::daemon::config_command(cmd),
            Command::PrintConfig(args) => cli::daemon::print_config(args),
            Command::IntakeEmulator(args) => cli::intake::run(args).await,
            Command::Bench(args) => cli::bench::run(args).await,
            Command::Mcp(args) => cli::mcp::run(args).await,
        }
    });
    result.unwrap_or_else(|e| cli::fail(&e))
}
