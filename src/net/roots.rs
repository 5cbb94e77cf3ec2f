//! The system's trust roots: the same certificates `rustls_native_certs::load_native_certs`
//! returns (`SSL_CERT_FILE`/`SSL_CERT_DIR` when set, else the bundle file and directory that
//! `openssl-probe` finds), read at about half the cost.
//!
//! On Debian-like systems `/etc/ssl/certs` holds every certificate of the bundle file a second
//! time, one file each. rustls-native-certs skips directory entries that are the bundle file
//! itself but decodes the copies again, and its constant-time base64 decoder made that second
//! pass about a third of a one-shot walk's instructions once aws-lc's jitter start-up was gone
//! (BENCHMARKS.md, note 7). Here a PEM block whose text was already seen is not decoded again:
//! identical text is an identical certificate, so the set of roots is unchanged.

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

const BEGIN: &[u8] = b"-----BEGIN CERTIFICATE-----";
const END: &[u8] = b"-----END CERTIFICATE-----";

/// Every trust root of the system (best effort: unreadable files are skipped, as before).
pub fn system_roots() -> Vec<CertificateDer<'static>> {
    let (file, dirs) = cert_paths();
    let mut roots = RootsReader::default();
    if let Some(file) = &file {
        roots.read_file(file);
    }
    for dir in &dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            roots.read_file(&entry.path());
        }
    }
    let mut certs = roots.certs;
    // Differently wrapped copies decode to the same certificate: keep one (as before).
    certs.sort_unstable_by(|a, b| a.as_ref().cmp(b.as_ref()));
    certs.dedup();
    certs
}

/// Where the roots are: the environment's `SSL_CERT_FILE`/`SSL_CERT_DIR` if either is set (then
/// only those), else what `openssl-probe` finds; as rustls-native-certs decides on Unix.
fn cert_paths() -> (Option<PathBuf>, Vec<PathBuf>) {
    let file = std::env::var_os("SSL_CERT_FILE").map(PathBuf::from);
    let dirs: Vec<PathBuf> = std::env::var_os("SSL_CERT_DIR")
        .map(|d| {
            std::env::split_paths(&d)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    if file.is_some() || !dirs.is_empty() {
        return (file, dirs);
    }
    let probed = openssl_probe::probe();
    (probed.cert_file, probed.cert_dir)
}

#[derive(Default)]
struct RootsReader {
    certs: Vec<CertificateDer<'static>>,
    /// (device, inode) of every file read: hash-named symlinks and a copy of the bundle in the
    /// directory resolve to files already read.
    files: HashSet<(u64, u64)>,
    /// Every certificate block (PEM text, markers included) already decoded.
    blocks: HashSet<Vec<u8>, std::hash::BuildHasherDefault<BlockHasher>>,
}

impl RootsReader {
    fn read_file(&mut self, path: &Path) {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::metadata(path) else {
            return;
        };
        if !meta.is_file() || !self.files.insert((meta.dev(), meta.ino())) {
            return;
        }
        if let Ok(bytes) = std::fs::read(path) {
            self.read_pem(&bytes);
        }
    }

    fn read_pem(&mut self, text: &[u8]) {
        for block in cert_blocks(text) {
            // Compared as text: the copies are byte-identical files, and a copy wrapped
            // differently is merely decoded again.
            if !self.blocks.insert(block.to_vec()) {
                continue;
            }
            // The block alone, through the same PEM reader rustls-native-certs uses.
            if let Ok(cert) = CertificateDer::from_pem_slice(block) {
                self.certs.push(cert.into_owned());
            }
        }
    }
}

/// Each `-----BEGIN CERTIFICATE-----` … `-----END CERTIFICATE-----` block of a PEM text, markers
/// included.
fn cert_blocks(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let start = find(rest, BEGIN)?;
        let end = start + find(&rest[start..], END)? + END.len();
        let block = &rest[start..end];
        rest = &rest[end..];
        Some(block)
    })
}

/// Where `needle` (which starts with `-`) first occurs: look for its first byte, then compare.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = haystack[from..].iter().position(|&b| b == needle[0]) {
        let at = from + at;
        if haystack[at..].starts_with(needle) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// A cheap hash for certificate text read from the system's own files (not attacker-chosen,
/// so no need for SipHash's flooding resistance, which cost more than the lookups saved).
#[derive(Default)]
struct BlockHasher(u64);

impl std::hash::Hasher for BlockHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let word = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pem(ders: &[&[u8]]) -> String {
        use base64::Engine as _;
        ders.iter()
            .map(|d| {
                let b64 = base64::engine::general_purpose::STANDARD.encode(d);
                let lines: Vec<&str> = b64
                    .as_bytes()
                    .chunks(64)
                    .map(|c| std::str::from_utf8(c).unwrap())
                    .collect();
                format!(
                    "junk before\n-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
                    lines.join("\n")
                )
            })
            .collect()
    }

    #[test]
    fn a_certificate_seen_twice_is_decoded_once_and_every_distinct_one_is_kept() {
        let (a, b) = (vec![0x30u8, 3, 1, 2, 3], vec![0x30u8, 4, 9, 9, 9, 9]);
        let mut r = RootsReader::default();
        r.read_pem(pem(&[&a, &b]).as_bytes());
        // A copy in another file; and one wrapped differently (decoded again, kept once).
        r.read_pem(pem(&[&b]).as_bytes());
        r.read_pem(pem(&[&b]).replace('\n', "\r\n").as_bytes());
        let c = vec![0x30u8, 2, 7, 7];
        r.read_pem(pem(&[&c]).as_bytes());
        let mut got: Vec<&[u8]> = r.certs.iter().map(|c| c.as_ref()).collect();
        assert_eq!(got.len(), 4, "the identical copy was not decoded again");
        got.dedup();
        assert_eq!(got, vec![&a[..], &b[..], &c[..]]);
    }

    #[test]
    fn the_same_roots_as_rustls_native_certs() {
        let mut ours: Vec<Vec<u8>> = system_roots().iter().map(|c| c.to_vec()).collect();
        let mut theirs: Vec<Vec<u8>> = rustls_native_certs::load_native_certs()
            .certs
            .iter()
            .map(|c| c.to_vec())
            .collect();
        ours.sort();
        ours.dedup();
        theirs.sort();
        theirs.dedup();
        assert_eq!(ours, theirs);
    }
}
