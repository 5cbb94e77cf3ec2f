//! `conduct-walker intake-emulator`: a local witness intake (spec §6) for tests and demos.

use crate::cli::EXIT_OK;
use crate::cli::net::NetArgs;
use crate::intake_emulator::constants::{DEFAULT_LEDGER_HOST, KEY_FETCH_TIMEOUT_SECS};
use crate::intake_emulator::{Emulator, EmulatorConfig};
use crate::net::Transport;
use crate::sandbox::SandboxCa;
use anyhow::{Context, bail};
use clap::Args;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct IntakeEmulatorArgs {
    /// Loopback address to serve HTTPS on, e.g. 127.0.0.1:8443 (port 0 picks a free port).
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: SocketAddr,
    /// The emulator's own SQLite state file (created when missing, reused across restarts).
    #[arg(long, value_name = "FILE", default_value = "intake-emulator.sqlite")]
    pub state: PathBuf,
    /// Write the emulator's CA certificate (PEM) here, for a walker's --ca-cert.
    #[arg(long, value_name = "FILE")]
    pub tls_ca_out: Option<PathBuf>,
    /// The host treated as the ledger's own for the self_witness rule.
    #[arg(long, value_name = "HOST", default_value = DEFAULT_LEDGER_HOST)]
    pub ledger_host: String,
    /// The operator secret for `POST /witness/anchor` and the emulator-only fault hooks at
    /// `POST /emulator/hooks` (header x-ledger-key). Read from FILE when it exists, else a
    /// random one is written there (mode 0600). Without it the key is random and unknown, and
    /// both routes answer 401.
    #[arg(long, value_name = "FILE")]
    pub ledger_key_file: Option<PathBuf>,
    /// Lose this share (0 to 1) of the answers to `POST /witness`: the record is processed
    /// (stored, when valid), then the connection is closed without an answer, as a flaky
    /// network or a proxy timeout does. POSTs per record are counted at `GET /emulator/posts`.
    #[arg(long, value_name = "RATE", value_parser = drop_rate)]
    pub drop_answers: Option<f64>,
    /// Seed of the choice of which answers --drop-answers loses (the same seed drops the same
    /// POSTs in the same order).
    #[arg(long, value_name = "S", default_value_t = 0, requires = "drop_answers")]
    pub seed: u64,
    /// Trust roots and address rules for key_url fetches.
    #[command(flatten)]
    pub net: NetArgs,
}

/// A share from 0 to 1 (`--drop-answers`).
pub(crate) fn drop_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(format!(
            "{text:?} is not a share from 0 to 1 (0.1 drops one answer in ten)"
        )),
    }
}

pub async fn run(args: IntakeEmulatorArgs) -> anyhow::Result<ExitCode> {
    // The generated certificate names only loopback, and an emulator is not a public service.
    if !args.listen.ip().is_loopback() {
        bail!(
            "--listen {} is not a loopback address; the intake emulator serves 127.0.0.1 or ::1 only",
            args.listen
        );
    }
    let transport = key_transport(&args.net)?;
    let ca = SandboxCa::generate();
    if let Some(path) = &args.tls_ca_out {
        ca.write_pem(path)
            .with_context(|| format!("cannot write the CA certificate to {}", path.display()))?;
    }
    let mut config = EmulatorConfig::new(args.state.clone(), transport);
    config.ledger_host = args.ledger_host.clone();
    let running = Emulator::start(config, &ca, args.listen).await?;
    if let Some(path) = &args.ledger_key_file {
        running.set_operator_key(&operator_key(path)?);
    }
    if let Some(rate) = args.drop_answers {
        running.drop_answers(rate, args.seed);
    }

    // Best effort: a closed stdout (a parent that read only the URL) must not stop the server.
    let ca_line = match &args.tls_ca_out {
        Some(path) => format!("CA certificate: {} (pass it as --ca-cert)", path.display()),
        None => {
            "CA certificate: not written (use --tls-ca-out FILE so a walker can trust this server)"
                .to_string()
        }
    };
    let mut out = crate::output::stdout();
    let drop_line = match args.drop_answers {
        Some(rate) => format!(
            "dropping answers: {rate} of POST /witness stored, then closed without an answer (seed {}); POSTs per record at {}/emulator/posts",
            args.seed,
            running.base()
        ),
        None => "dropping answers: none".to_string(),
    };
    let _ = writeln!(out, "intake emulator: {}", running.url())
        .and_then(|_| writeln!(out, "state: {}", args.state.display()))
        .and_then(|_| writeln!(out, "{ca_line}"))
        .and_then(|_| writeln!(out, "{drop_line}"))
        .and_then(|_| out.flush());

    shutdown_signal().await;
    drop(running);
    Ok(ExitCode::from(EXIT_OK))
}

/// The operator key in `path`, or a new random one written there (owner-only).
fn operator_key(path: &std::path::Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) if !text.trim().is_empty() => return Ok(text.trim().to_string()),
        Ok(_) => bail!("--ledger-key-file {} is empty", path.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => bail!("cannot read --ledger-key-file {}: {e}", path.display()),
    }
    let key = hex::encode(rand::random::<[u8; 32]>());
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot create --ledger-key-file {}", path.display()))?;
    file.write_all(key.as_bytes())?;
    Ok(key)
}

/// The transport for key_url fetches: the operator's roots and address rules, and the spec's
/// 5 s deadline (§6.1).
fn key_transport(net: &NetArgs) -> anyhow::Result<Transport> {
    let mut config = net.transport_config(&[])?;
    config.deadline = Duration::from_secs(KEY_FETCH_TIMEOUT_SECS);
    Ok(Transport::new(config)?)
}

/// Ctrl-C, or SIGTERM on Unix (systemd, `kill`).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
