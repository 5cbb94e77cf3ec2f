//! systemd credentials (`LoadCredential=NAME:FILE`): the one place that reads
//! `$CREDENTIALS_DIRECTORY`, and the MCP bearer token that may come from there.
//!
//! No crate imports: every layer above (the witness key, the alert secrets, the MCP face) asks
//! here, so the variable's meaning is written down once.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The environment variable systemd sets for a unit with `LoadCredential=`.
pub const CREDENTIALS_DIRECTORY: &str = "CREDENTIALS_DIRECTORY";

/// `$CREDENTIALS_DIRECTORY`, when systemd set it.
pub fn directory() -> Option<PathBuf> {
    std::env::var_os(CREDENTIALS_DIRECTORY).map(PathBuf::from)
}

/// `$CREDENTIALS_DIRECTORY/<name>` when that file exists (a default that may be absent).
pub fn existing(name: &str) -> Option<PathBuf> {
    let path = directory()?.join(name);
    path.exists().then_some(path)
}

/// `$CREDENTIALS_DIRECTORY/<name>` (systemd's `LoadCredential=`); `named` says where the
/// config names it, for the error when the variable is not set.
pub fn path(named: &str, name: &str) -> Result<PathBuf, String> {
    let dir = directory().ok_or_else(|| {
        format!(
            "{named} but $CREDENTIALS_DIRECTORY is not set (LoadCredential={name}:... in the unit provides it)"
        )
    })?;
    Ok(Path::new(&dir).join(name))
}

/// The name of the MCP bearer token file in `$CREDENTIALS_DIRECTORY`.
pub const TOKEN_CREDENTIAL: &str = "mcp-token";

/// The shortest token taken: a guessable one is no lock.
pub const MIN_TOKEN_CHARS: usize = 32;

/// Who may call the MCP Streamable HTTP face: the bearer token, or anyone on this machine
/// (`--no-auth`).
#[derive(Clone)]
pub enum Auth {
    Token(Arc<str>),
    Open,
}

impl std::fmt::Debug for Auth {
    // Never the token itself: it may reach a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::Token(_) => f.write_str("Auth::Token(..)"),
            Auth::Open => f.write_str("Auth::Open"),
        }
    }
}

/// Read a token file: one line of at least [`MIN_TOKEN_CHARS`] visible ASCII characters.
pub fn read_token(path: &Path) -> anyhow::Result<Arc<str>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read the token file {}: {e}", path.display()))?;
    let token = text.trim();
    if token.len() < MIN_TOKEN_CHARS || !token.bytes().all(|b| b.is_ascii_graphic()) {
        anyhow::bail!(
            "the token file {} must hold one token of at least {MIN_TOKEN_CHARS} visible ASCII characters (e.g. `(umask 077 && openssl rand -hex 32 > {})`)",
            path.display(),
            path.display()
        );
    }
    Ok(token.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_or_odd_token_file_is_refused_without_echoing_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        std::fs::write(&p, "short-secret\n").unwrap();
        let e = read_token(&p).unwrap_err().to_string();
        assert!(e.contains("at least 32"), "{e}");
        assert!(!e.contains("short-secret"), "{e}");
        std::fs::write(&p, format!("{}\n", "a".repeat(40))).unwrap();
        assert_eq!(&*read_token(&p).unwrap(), "a".repeat(40));
    }
}
