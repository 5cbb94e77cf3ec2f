//! The rings' I/O shell: files in (each read with its cap, the history streamed, witness files
//! one at a time), rings out (written once, atomically), and a rings folder read back for the
//! pages. Everything it decides is `crate::rings`'.

use crate::rings::{self, Built, Limits, Request, RingError, WitnessFile};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// A file's bytes, refused past `cap` without reading more than `cap + 1` bytes.
pub fn read_capped(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>, RingError> {
    let file = File::open(path).map_err(|e| {
        RingError::input(
            format!("{what} {}", path.display()),
            format!("cannot open: {e}"),
        )
    })?;
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes).map_err(|e| {
        RingError::input(
            format!("{what} {}", path.display()),
            format!("cannot read: {e}"),
        )
    })?;
    if bytes.len() as u64 > cap {
        return Err(RingError::TooLarge {
            what: format!("{what} {}", path.display()),
            why: format!("larger than {cap} bytes"),
        });
    }
    Ok(bytes)
}

/// The witness files, each read when the builder asks for it.
pub fn witness_files<'a>(
    paths: &'a [PathBuf],
    limits: &'a Limits,
) -> impl Iterator<Item = Result<WitnessFile, RingError>> + 'a {
    paths.iter().map(|p| {
        Ok(WitnessFile {
            name: p.display().to_string(),
            bytes: read_capped(p, limits.witness_file_bytes, "witness file")?,
        })
    })
}

/// The inputs of a build, as paths.
#[derive(Debug, Clone)]
pub struct Inputs<'a> {
    pub month: &'a str,
    pub endpoint: Option<&'a str>,
    pub history: &'a Path,
    pub witnesses: &'a [PathBuf],
    pub prev: Option<&'a Path>,
    pub limits: Limits,
}

/// Build a ring from files (rings.md §2–§6).
pub fn build(inputs: &Inputs<'_>) -> Result<Built, RingError> {
    let limits = inputs.limits;
    // The month is checked before the history is opened: a wrong one costs nothing.
    rings::Month::parse(inputs.month)?;
    let history = File::open(inputs.history).map_err(|e| {
        RingError::input(
            format!("history {}", inputs.history.display()),
            format!("cannot open: {e}"),
        )
    })?;
    let prev = inputs
        .prev
        .map(|p| read_capped(p, limits.ring_file_bytes, "previous ring").map(|b| (p, b)))
        .transpose()?;
    let prev_name = prev.as_ref().map(|(p, _)| p.display().to_string());
    rings::build(
        &Request {
            month: inputs.month,
            endpoint: inputs.endpoint,
            limits,
        },
        history,
        witness_files(inputs.witnesses, &limits),
        prev.as_ref()
            .zip(prev_name.as_deref())
            .map(|((_, bytes), name)| (name, bytes.as_slice())),
    )
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Where `--out` puts a ring (rings.md §2.5, §10): the file itself when it names a `.json` file
/// that is not a folder; otherwise `<out>/<slug>/<month>.json`.
pub fn out_path(out: &Path, built: &Built) -> PathBuf {
    let is_file = !out.is_dir()
        && !out.as_os_str().to_string_lossy().ends_with('/')
        && out.extension().is_some_and(|e| e == "json");
    if is_file {
        out.to_path_buf()
    } else {
        out.join(&built.slug)
            .join(format!("{}.json", built.month.as_str()))
    }
}

/// Why a file was not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{0} exists; a ring is written once (--force replaces it)")]
    Exists(PathBuf),
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Write `bytes` at `path` whole or not at all: a temporary file beside it, synced, renamed
/// over. Refuses an existing file unless `force`.
pub fn write_once(path: &Path, bytes: &[u8], force: bool) -> Result<(), WriteError> {
    if path.exists() && !force {
        return Err(WriteError::Exists(path.to_path_buf()));
    }
    let io = |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let tmp = dir.join(format!(".{}.{}.tmp", file_name(path), std::process::id()));
    let result = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io)
}

/// One ring file of a rings folder and what sits beside it.
#[derive(Debug, Clone)]
pub struct HeldRing {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    /// `<month>.intoto.dsse.json` beside it.
    pub envelope: Option<Vec<u8>>,
}

/// The rings a folder holds for an endpoint (`<dir>/<slug>/<YYYY-MM>.json`, in month order)
/// and the folder's `jwks.json`. Files past the ring cap are skipped.
pub fn held_rings(dir: &Path, endpoint: &str) -> std::io::Result<(Vec<HeldRing>, Option<Vec<u8>>)> {
    let limits = Limits::default();
    let folder = dir.join(rings::slug(endpoint));
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(&folder) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((out, jwks(dir, &limits))),
        Err(e) => return Err(e),
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".json"))
                .is_some_and(|m| rings::Month::parse(m).is_ok() && !m.ends_with('\n'))
        })
        .collect();
    paths.sort();
    for path in paths {
        let Ok(bytes) = read_capped(&path, limits.ring_file_bytes, "ring") else {
            continue;
        };
        let envelope = read_capped(
            &path.with_extension("intoto.dsse.json"),
            limits.ring_file_bytes,
            "envelope",
        )
        .ok();
        out.push(HeldRing {
            path,
            bytes,
            envelope,
        });
    }
    Ok((out, jwks(dir, &limits)))
}

fn jwks(dir: &Path, limits: &Limits) -> Option<Vec<u8>> {
    read_capped(&dir.join("jwks.json"), limits.witness_file_bytes, "jwks").ok()
}
