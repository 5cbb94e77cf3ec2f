//! `conduct-walker keygen` and `conduct-walker pubkey`.

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
