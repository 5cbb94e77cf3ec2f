//! One subcommand per user task. Each maps its errors to exit codes: 0 success/PASS, 1 a finding
//! (FAIL, a failed verification), 2 usage or I/O errors.

pub mod alerts;
pub mod app;
pub mod bench;
pub mod canonical;
pub mod card;
pub mod daemon;
pub mod docs;
pub mod inspect;
pub mod intake;
pub mod keys;
pub mod ledger;
pub mod ledger_follow;
pub mod mcp;
pub mod net;
pub mod outbox;
pub mod records;
pub mod ring;
pub mod sandbox;
pub mod terms;
pub mod walk;
pub mod witness;

pub use app::{Cli, Command};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// What a subcommand leaves to another face: `run` is the daemon's and `mcp` the MCP server's.
/// Faces never import each other, so the command line parses and checks, and the binary starts
/// the face.
#[derive(Debug)]
pub enum Handoff {
    /// `conduct-walker run`: the daemon, with this config file.
    Daemon { config: PathBuf },
    /// `conduct-walker mcp`: the MCP server with this config, on stdio or on Streamable HTTP
    /// at `listen` admitting callers as the `Auth` says.
    Mcp {
        config: Box<crate::config::Config>,
        listen: Option<(SocketAddr, crate::credentials::Auth)>,
    },
}

/// How a subcommand ended: done here, or handed over.
#[derive(Debug)]
pub enum Ran {
    Exit(ExitCode),
    Handoff(Handoff),
}

/// Run a subcommand, or check what another face needs and hand it over.
pub async fn run(command: Command) -> anyhow::Result<Ran> {
    let code = match command {
        Command::Run(args) => return Ok(Ran::Handoff(daemon::run(args)?)),
        Command::Mcp(args) => return Ok(Ran::Handoff(mcp::run(args)?)),
        Command::Walk(args) => walk::run(*args).await,
        Command::Demo(args) => walk::demo(args).await,
        Command::Sandbox(args) => sandbox::run(args).await,
        Command::Reveal(args) => walk::reveal(args).await,
        Command::Keygen(args) => keys::keygen(args),
        Command::Pubkey(args) => keys::pubkey(args),
        Command::Key(cmd) => keys::run(cmd),
        Command::Records(cmd) => records::run(cmd).await,
        Command::Outbox(cmd) => outbox::run(cmd).await,
        Command::Ledger(cmd) => ledger::run(cmd).await,
        Command::Ring(cmd) => ring::run(cmd).await,
        Command::Alerts(cmd) => alerts::run(cmd).await,
        Command::Card(cmd) => card::run(cmd).await,
        Command::Canonical(args) => canonical::run(args),
        Command::Inspect(args) => inspect::run(args).await,
        Command::Terms(cmd) => terms::run(cmd).await,
        Command::Witness(cmd) => witness::run(cmd).await,
        Command::Config(cmd) => daemon::config_command(cmd),
        Command::PrintConfig(args) => daemon::print_config(args),
        Command::IntakeEmulator(args) => intake::run(args).await,
        Command::Bench(args) => bench::run(args).await,
        Command::Completions(args) => docs::completions(args),
        Command::Man(args) => docs::man(args),
    };
    code.map(Ran::Exit)
}

/// Exit code for a completed run whose answer is "yes" (PASS, verified).
pub const EXIT_OK: u8 = 0;
/// Exit code for a completed run whose answer is "no" (FAIL, not verified).
pub const EXIT_FINDING: u8 = 1;
/// Exit code for usage and I/O errors.
pub const EXIT_ERROR: u8 = 2;
/// Exit code of `card verify` for a card whose signature verifies while members a client acts
/// on are outside what it covers: neither "yes" nor "no", and a script must not read it as
/// either.
pub const EXIT_UNCOVERED: u8 = 3;

/// The exit of a completed run: [`EXIT_OK`] when its answer is "yes", else [`EXIT_FINDING`].
pub fn exit_answer(yes: bool) -> ExitCode {
    ExitCode::from(if yes { EXIT_OK } else { EXIT_FINDING })
}

/// Print a one-line error and return exit code 2.
pub fn fail(err: &anyhow::Error) -> ExitCode {
    crate::errln!("conduct-walker: error: {}", one_line(err));
    ExitCode::from(EXIT_ERROR)
}

/// An error and its causes on one line, each cause once: many errors quote their source in
/// their own text ("cannot read FILE: No such file"), and repeating it reads as two failures.
pub fn one_line(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let cause = cause.to_string();
        if text.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_already_quoted_is_not_repeated() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory");
        let err = anyhow::Error::new(crate::config::ConfigError::Read {
            path: "/tmp/x.toml".into(),
            source: io,
        })
        .context("config check");
        assert_eq!(
            one_line(&err),
            "config check: cannot read the config file /tmp/x.toml: No such file or directory"
        );
        let err = anyhow::anyhow!("outer").context("wrapper");
        assert_eq!(one_line(&err), "wrapper: outer");
    }
}
