//! `conduct-walker keygen`, `pubkey` and `key rotate|revoke|history` (witness-pool.md §8).

use crate::witness::keys::{
    KeyError, generate_key_file, key_document, load_signing_key, resolve_key_path,
};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Where to write the new Ed25519 key (PKCS#8 PEM, mode 0600; an existing file is never replaced).
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct PubkeyArgs {
    /// The private key file (default: the systemd credential `signing-key`).
    #[arg(long)]
    pub key: Option<PathBuf>,
}

pub fn keygen(args: KeygenArgs) -> anyhow::Result<ExitCode> {
    let key = generate_key_file(&args.out)?;
    crate::errln!(
        "wrote {} (mode 0600); serve this document at your key_url:",
        args.out.display()
    );
    crate::outln!("{}", key_document(&key));
    Ok(ExitCode::from(super::EXIT_OK))
}

pub fn pubkey(args: PubkeyArgs) -> anyhow::Result<ExitCode> {
    let path = resolve_key_path(args.key.as_deref()).ok_or(KeyError::NoKey)?;
    let key = load_signing_key(&path)?;
    crate::outln!("{}", key_document(&key));
    Ok(ExitCode::from(super::EXIT_OK))
}

/// The config whose key is rotated, and the key file when the config reads a credential.
#[derive(Debug, Args)]
pub struct KeyConfigArgs {
    /// The config file: its `[witness] key`, `key_url` and `[daemon] database`.
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// The key file to rotate, when the config reads the key from a systemd credential (the
    /// file its `LoadCredential=` names; the credential itself is read-only).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
}

#[derive(Debug, clap::Subcommand)]
pub enum KeyCommand {
    /// Rotate the witness key: a new key in the key file, the old one kept beside it (mode
    /// 0600) as retired, and the key history (retired_at, since, status) recorded in the store's
    /// key chain. Prints the new key_url document and what to publish, in order. Records
    /// still queued are signed with the new key when they are filed.
    Rotate(KeyConfigArgs),
    /// Revoke the witness key (a leak): as `rotate`, with the old key revoked from
    /// --compromised-from on. `records verify` reports what it signed from then on.
    Revoke {
        #[command(flatten)]
        args: KeyConfigArgs,
        /// The earliest moment the key could have been exposed (RFC 3339); when in doubt, the
        /// earlier time.
        #[arg(long, value_name = "RFC3339")]
        compromised_from: String,
        /// One sentence for the history's `reason`.
        #[arg(long, value_name = "TEXT", default_value = "revoked by the operator")]
        reason: String,
    },
    /// Print the key history (KEY_HISTORY_v1) the store keeps, with its history_sha256.
    History {
        /// The config file (its `[daemon] database`).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// The document as served at /.well-known/key-history.json instead of text.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: KeyCommand) -> anyhow::Result<ExitCode> {
    use crate::witness_pool::key_history::Retirement;
    match cmd {
        KeyCommand::Rotate(args) => rotate(&args, &Retirement::Retired),
        KeyCommand::Revoke {
            args,
            compromised_from,
            reason,
        } => rotate(
            &args,
            &Retirement::Revoked {
                compromised_from,
                reason,
            },
        ),
        KeyCommand::History { config, json } => history(&config, json),
    }
}

fn rotate(
    args: &KeyConfigArgs,
    retirement: &crate::witness_pool::key_history::Retirement,
) -> anyhow::Result<ExitCode> {
    let cfg = crate::config::load(&args.config)?;
    let place = crate::app::key_place(&cfg, args.key.as_deref())?;
    let store = crate::store::Store::open(&cfg.database_path()?)?;
    let rotated = crate::witness_pool::rotation::rotate(
        store.connection(),
        &place,
        retirement,
        chrono::Utc::now(),
    )?;
    let kid = |b64: &str| crate::witness_pool::key_history::witness_kid(b64);
    let new_b64 = crate::witness::keys::public_key_b64(&rotated.new_key);
    crate::errln!(
        "{} {} is kept at {} (mode 0600); the new key {} is in {}",
        if rotated.event.event == "revoked" {
            "revoked:"
        } else {
            "retired:"
        },
        kid(&rotated.old_public_b64),
        rotated.old_kept_at.display(),
        kid(&new_b64),
        place.key_file.display()
    );
    crate::outln!("{}", key_document(&rotated.new_key));
    crate::outln!();
    crate::outln!("publish, in this order:");
    crate::outln!(
        "  1. serve the document above at {} (the same key_url: it is inside every signed record)",
        place.key_url
    );
    crate::outln!(
        "  2. reload or restart the daemon (systemctl reload conduct-walker; restart when the key is a credential): it signs and files with the new key, and records still queued are signed with it as they are filed"
    );
    crate::outln!(
        "  3. serve the new key history at /.well-known/key-history.json (the witness face does; else `conduct-walker key history --config {} --json`) and anchor its history_sha256 {} (ots stamp over its canonical bytes)",
        args.config.display(),
        rotated.event.history_sha256
    );
    crate::outln!(
        "  4. tell the pools and whoever pinned the old key: their entries carry it until rebuilt"
    );
    Ok(ExitCode::from(super::EXIT_OK))
}

fn history(config: &std::path::Path, as_json: bool) -> anyhow::Result<ExitCode> {
    let cfg = crate::config::load(config)?;
    let Some(history) = crate::app::stored_key_history(&cfg)? else {
        anyhow::bail!(
            "no key history in the store yet: `conduct-walker key rotate --config {}` records the first",
            config.display()
        );
    };
    let configured = crate::app::signing_key(&cfg)
        .ok()
        .flatten()
        .map(|k| crate::witness::keys::public_key_b64(&k));
    let doc = crate::witness_pool::rotation::document(&history, configured.as_deref());
    if as_json {
        crate::outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::from(super::EXIT_OK));
    }
    crate::outln!(
        "{} key history of {}",
        doc["schema"].as_str().unwrap_or_default(),
        doc["subject"].as_str().unwrap_or_default()
    );
    for key in doc["keys"].as_array().into_iter().flatten() {
        let text = |name: &str| key[name].as_str().unwrap_or("-").to_string();
        crate::outln!(
            "  {}  {:<7}  since {} ({})  retired {}  revoked {}  compromised from {}",
            text("kid"),
            text("status"),
            text("since"),
            text("since_commit"),
            text("retired_at"),
            text("revoked_at"),
            text("compromised_from")
        );
    }
    crate::outln!(
        "history_sha256 {}",
        doc["history_sha256"].as_str().unwrap_or_default()
    );
    Ok(ExitCode::from(super::EXIT_OK))
}
