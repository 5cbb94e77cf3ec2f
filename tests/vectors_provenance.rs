//! Issue 42: the test vectors live in the repository (`tests/vectors/`), copied unchanged from
//! where `tests/vectors/PROVENANCE.md` says. Every file there is listed with its SHA-256, and
//! the bytes still match: a vector edited in place, added without its source, or lost fails here.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors")
}

/// `| `file` | bytes | `sha256` |` rows of PROVENANCE.md.
fn listed() -> BTreeMap<String, (u64, String)> {
    let text = std::fs::read_to_string(vectors().join("PROVENANCE.md")).unwrap();
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() == 5
            && let (Some(file), Ok(bytes), Some(sha)) = (
                cells[1].strip_prefix('`').and_then(|c| c.strip_suffix('`')),
                cells[2].parse::<u64>(),
                cells[3].strip_prefix('`').and_then(|c| c.strip_suffix('`')),
            )
        {
            rows.insert(file.to_string(), (bytes, sha.to_string()));
        }
    }
    rows
}

fn files(dir: &Path, root: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, root, out);
        } else {
            out.push(path.strip_prefix(root).unwrap().display().to_string());
        }
    }
}

#[test]
fn every_vector_is_listed_with_its_source_and_unchanged() {
    let listed = listed();
    let mut present = Vec::new();
    files(&vectors(), &vectors(), &mut present);
    present.retain(|f| f != "PROVENANCE.md");
    present.sort();
    assert!(present.len() >= 175, "{} vector files", present.len());
    let unlisted: Vec<&String> = present
        .iter()
        .filter(|f| !listed.contains_key(*f))
        .collect();
    let missing: Vec<&String> = listed.keys().filter(|f| !present.contains(f)).collect();
    assert!(
        unlisted.is_empty() && missing.is_empty(),
        "PROVENANCE.md and tests/vectors/ disagree: not listed {unlisted:?}, listed but gone {missing:?}"
    );
    let mut changed = Vec::new();
    for (file, (bytes, sha)) in &listed {
        let data = std::fs::read(vectors().join(file)).unwrap();
        let got = hex::encode(Sha256::digest(&data));
        if data.len() as u64 != *bytes || &got != sha {
            changed.push(format!("{file}: {} bytes, sha256 {got}", data.len()));
        }
    }
    assert!(
        changed.is_empty(),
        "vectors whose bytes are not the ones PROVENANCE.md lists (replace a vector whole, with \
         its source):\n{}",
        changed.join("\n")
    );
}
