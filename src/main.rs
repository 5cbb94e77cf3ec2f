use clap::Parser as _;
use conduct_walker::cli::records::RecordsCommand;
use conduct_walker::cli::{self, Cli, Command, Handoff, Ran};
use std::process::ExitCode;

/// Threads for blocking work (SQLite, record checks). The store is one connection behind a lock,
/// so more threads only wait for it; tokio's default of 512 let a daemon with 10,000 targets due
/// at once grow to 72 threads, each keeping its own stack and malloc arena (issue 17, note 10).
const MAX_BLOCKING_THREADS: usize = 16;

/// Whether a command serves or runs work side by side (the daemon, the servers, the throughput
/// bench): those get the multi-thread runtime. Every other command is one-shot: a walk's
/// requests go one after another, so a current-thread runtime does the same work without
/// starting a worker per core and handing every wake-up between threads (issue 26: two threads
/// cloned, 84 `futex` and 32 `epoll_wait` calls per walk). `spawn_blocking` (SQLite, record
/// checks) still runs on the blocking pool either way.
fn serves(command: &Command) -> bool {
    match command {
        Command::Run(_)
        | Command::IntakeEmulator(_)
        | Command::Bench(_)
        | Command::Mcp(_)
        | Command::Sandbox(_)
        | Command::Records(RecordsCommand::Serve { .. }) => true,
        Command::Walk(_)
        | Command::Demo(_)
        | Command::Reveal(_)
        | Command::Keygen(_)
        | Command::Pubkey(_)
        | Command::Key(_)
        | Command::Records(_)
        | Command::Outbox(_)
        | Command::Ledger(_)
        | Command::Ring(_)
        | Command::Alerts(_)
        | Command::Card(_)
        | Command::Canonical(_)
        | Command::Inspect(_)
        | Command::Terms(_)
        | Command::Witness(_)
        | Command::Config(_)
        | Command::PrintConfig(_)
        | Command::Completions(_)
        | Command::Man(_) => false,
    }
}

// SIGPIPE stays ignored, as Rust starts it, in every command (issue 42): the TLS stack writes
// to sockets with `writev`, which raises SIGPIPE on a connection the peer reset, so its default
// action would let any server end a walk. A standard output whose reader went away is handled
// where output is written (`conduct_walker::output`): quietly, without ending the work.

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
    let mut builder = if serves(&cli.command) {
        // Before any thread starts (issue 27, `conduct_walker::mem`).
        conduct_walker::mem::bound_malloc_arenas();
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = match builder
        .enable_all()
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return cli::fail(&anyhow::anyhow!("cannot start the async runtime: {e}")),
    };
    let result = runtime.block_on(async move {
        match cli::run(cli.command).await? {
            Ran::Exit(code) => Ok(code),
            Ran::Handoff(handoff) => start(handoff).await,
        }
    });
    result.unwrap_or_else(|e| cli::fail(&e))
}

/// Start the face a subcommand handed over: the daemon, or the MCP server. Here, in the binary,
/// because faces never import each other.
async fn start(handoff: Handoff) -> anyhow::Result<ExitCode> {
    match handoff {
        Handoff::Daemon { config } => conduct_walker::daemon::run(&config).await?,
        Handoff::Mcp { config, listen } => {
            let options = conduct_walker::mcp::Options::new(*config);
            conduct_walker::mcp::run(options, listen).await?
        }
    }
    Ok(ExitCode::from(cli::EXIT_OK))
}
