//! The auditor's bench (issue 46): answers about files others wrote, offline.
//!
//! - [`forms`]: the canonical bytes of any JSON under the NENRIN form, RFC 8785, or a card
//!   profile, with the reason when the form has none.
//! - [`inspect`]: what a file is (record, intake body line, observation, ring, key history, gate
//!   verdict), its sha256 as given and canonical, its signature and what it establishes.
//! - [`import`]: the same inputs read as records for `records import`, each refusal naming
//!   the line and what was there instead.
//!
//! Pure except where a function says otherwise: the faces read the files (under
//! [`MAX_FILE_BYTES`]) and print.

pub mod forms;
pub mod import;
pub mod inspect;

/// The largest file the bench reads: a record, ring or card is far smaller, and a parsed tree
/// costs a few times its text, so this bounds memory whatever a stranger hands over.
pub const MAX_FILE_BYTES: usize = 16 * 1024 * 1024;

/// Read a file for the bench, refusing one past [`MAX_FILE_BYTES`] without reading it all.
pub fn read_file(path: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    use anyhow::Context as _;
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES as u64 + 1).read_to_end(&mut bytes))
        .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() > MAX_FILE_BYTES {
        anyhow::bail!(
            "{}: more than {MAX_FILE_BYTES} bytes, the bench's cap for one file",
            path.display()
        );
    }
    Ok(bytes)
}
