//! The command line as clap sees it: kept in the library so the man pages, the shell
//! completions and the tests that check them walk the same command tree the binary parses.

use clap::{Parser, Subcommand};

/// Witnesses how A2A agents behave in public: walks, records, signs and files.
///
/// Every subcommand has its man page, conduct-walker-SUBCOMMAND(1), and the daemon's config file
/// has conduct-walker.toml(5).
#[derive(Debug, Parser)]
#[command(name = "conduct-walker", version = crate::walk::spec::VERSION_TEXT, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Walk one agent (n0–n3) and write its canonical record.
    Walk(Box<super::walk::WalkArgs>),
    /// Start loopback sandbox agents and walk an honest one and a few misbehaving ones.
    Demo(super::walk::DemoArgs),
    /// Keep the demo's loopback agents and a local intake running, printing their origins and a
    /// ready daemon config: try `run` or `walk` without a real agent.
    Sandbox(super::sandbox::SandboxArgs),
    /// File the full record a commitment walk kept.
    Reveal(super::walk::RevealArgs),
    /// Create an Ed25519 witness key (PKCS#8 PEM, mode 0600).
    Keygen(super::keys::KeygenArgs),
    /// Print the key_url document for a key: {"public_key_ed25519_b64": ...}.
    Pubkey(super::keys::PubkeyArgs),
    /// The witness key over the years: rotate it, revoke it, show its history (KEY_HISTORY_v1).
    #[command(subcommand)]
    Key(super::keys::KeyCommand),
    /// Auditor commands over the record store (read-only unless importing).
    #[command(subcommand)]
    Records(super::records::RecordsCommand),
    /// The submissions a store still has to file: list them, or file what is due.
    #[command(subcommand)]
    Outbox(super::outbox::OutboxCommand),
    /// Alerts: send a test message to each channel, list open incidents and deliveries.
    #[command(subcommand)]
    Alerts(super::alerts::AlertsCommand),
    /// Verify an Agent Card's JWS signatures.
    #[command(subcommand)]
    Card(super::card::CardCommand),
    /// Print the canonical bytes of a JSON file under the NENRIN form, RFC 8785 or a card
    /// signature profile (or their sha256), refusing what the form refuses.
    #[command(after_help = super::canonical::EXIT_CODES)]
    Canonical(super::canonical::CanonicalArgs),
    /// Say what each file is (walk record, intake body line, witness observation, ring, key
    /// history, gate verdict), its sha256 as given and canonical, its signature's verdict and
    /// what it establishes.
    #[command(after_help = super::inspect::EXIT_CODES)]
    Inspect(super::inspect::InspectArgs),
    /// Verify the standing proposals a card publishes (A2A Terms extension).
    #[command(subcommand)]
    Terms(super::terms::TermsCommand),
    /// The witness pool: answer a request, verify an observation, ask a witness, check an
    /// origin against the pool's four conditions.
    #[command(subcommand)]
    Witness(super::witness::WitnessCommand),
    /// Run the daemon: walk every configured target on its schedule (systemd Type=notify).
    Run(super::daemon::RunArgs),
    /// Daemon config commands.
    #[command(subcommand)]
    Config(super::daemon::ConfigCommand),
    /// Print the effective daemon config (defaults filled in, paths resolved).
    PrintConfig(super::daemon::PrintConfigArgs),
    /// Audit a witness ledger (spec ledger.md): recompute its hash chain and check what it
    /// serves.
    #[command(subcommand)]
    Ledger(super::ledger::LedgerCommand),
    /// NENRIN rings (spec rings.md): build an endpoint's monthly ring byte for byte as the
    /// register does, verify a published one from its inputs, and check its signed Statement.
    #[command(subcommand)]
    Ring(super::ring::RingCommand),
    /// Run a local witness intake (spec §6) for tests and demos
    IntakeEmulator(super::intake::IntakeEmulatorArgs),
    /// Measure end-to-end walk throughput against loopback sandbox agents.
    Bench(super::bench::BenchArgs),
    /// Serve MCP (stdio, or Streamable HTTP with --listen): let an AI agent be the witness.
    Mcp(super::mcp::McpArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell) to stdout.
    Completions(super::docs::CompletionsArgs),
    /// Write the man pages: one per subcommand, and conduct-walker.toml(5).
    ///
    /// They go into DIR/man1 and DIR/man5, so `--out /usr/local/share/man` installs them by hand;
    /// packaging/build-deb uses it for the Debian package.
    Man(super::docs::ManArgs),
}
