//! The system's trust roots, read once per process: the bundle file when the system has one,
//! the certificate directory only when it has none.
//!
//! Where they are: `SSL_CERT_FILE`/`SSL_CERT_DIR` when either is set (then only those), else the
//! bundle file and directories that `openssl-probe` finds, as rustls-native-certs decides on
//! Unix. rustls-native-certs then reads the bundle *and* every file of the directory. On
//! Debian-like systems (and on Fedora/RHEL, whose extracted bundle lists the same anchors as its
//! directory) `update-ca-certificates` writes every certificate of `/etc/ssl/certs` into the
//! bundle, so the directory's ~150 files were the same roots a second time: about 150 `openat`,
//! 300 `read` and 450 `statx` calls per process (BENCHMARKS.md, issue 26). So a bundle that
//! yields at least one certificate is the whole set; the directory is read only when there is
//! no bundle, or it is unreadable or holds none (as on systems that ship only hashed files).
//!
//! Reading a directory, a PEM block whose text was already seen is not decoded again: hash-named
//! symlinks and copies hold identical text, identical text is an identical certificate, and
//! rustls-pki-types' constant-time base64 decoder is the costly part (BENCHMARKS.md, note 8).
//!
//! A bundle's decoded certificates and anchors are cached with a copy of the bundle's bytes
//! ([`cache`], issue 47): a process that finds the same bytes takes them without decoding.

use rustls_pki_types::{CertificateDer, TrustAnchor};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub mod cache;

const BEGIN: &[u8] = b"-----BEGIN CERTIFICATE-----";
const END: &[u8] = b"-----END CERTIFICATE-----";

/// The system's trust roots, twice: as certificates (for TLS stacks that take certificates,
/// such as lettre's) and as the rustls trust anchors parsed from them (what a `RootCertStore`
/// holds; parsing 146 certificates was 0.56 M instructions a walk, so they are cached too).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SystemRoots {
    pub certs: Vec<CertificateDer<'static>>,
    pub anchors: Vec<TrustAnchor<'static>>,
}

impl SystemRoots {
    /// The roots of these certificates; one that does not parse as a trust anchor is left out
    /// of `anchors`, as `RootCertStore::add_parsable_certificates` leaves it out.
    pub fn of(certs: Vec<CertificateDer<'static>>) -> SystemRoots {
        let anchors = certs
            .iter()
            .filter_map(|c| webpki::anchor_from_trusted_cert(c).ok())
            .map(|a| a.to_owned())
            .collect();
        SystemRoots { certs, anchors }
    }
}

/// Every trust root of the system (best effort: unreadable files are skipped, as before). Read
/// at the first call and kept for the process: commands that build several transports (`card`,
/// `demo`, `mcp`) read the files once, and the daemon, which builds its transport once at
/// start and keeps it across reloads, reads them at start as before.
pub fn system_roots() -> &'static SystemRoots {
    static ROOTS: OnceLock<SystemRoots> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let (file, dirs) = cert_paths();
        roots_cached(file.as_deref(), &dirs, cache::default_dir().as_deref())
    })
}

/// The roots of a bundle file, or, when there is none (absent, unreadable or without a
/// certificate), of every file of `dirs`. A bundle's roots come from the cache in `cache_dir`
/// when it holds them for the bundle's exact bytes, and are kept there when it did not; roots
/// read from the directories are not cached.
pub fn roots_cached(
    file: Option<&Path>,
    dirs: &[PathBuf],
    cache_dir: Option<&Path>,
) -> SystemRoots {
    file.and_then(|f| bundle_roots(f, cache_dir))
        .unwrap_or_else(|| {
            let mut roots = RootsReader::default();
            roots.read_dirs(dirs);
            SystemRoots::of(roots.finish())
        })
}

/// The roots of the bundle at `path`, from the cache when it holds them for these exact bytes,
/// else decoded (and cached); None when the bundle is absent, unreadable or holds no
/// certificate.
fn bundle_roots(path: &Path, cache_dir: Option<&Path>) -> Option<SystemRoots> {
    let mut reader = RootsReader::default();
    let bytes = reader.read_whole(path)?;
    let bundle = cache::Bundle {
        path,
        bytes: &bytes,
    };
    if let Some(cached) = cache_dir.and_then(|d| cache::load(d, &bundle)) {
        return Some(cached);
    }
    reader.read_pem(&bytes);
    let certs = reader.finish();
    if certs.is_empty() {
        return None;
    }
    let decoded = SystemRoots::of(certs);
    if let Some(dir) = cache_dir
        && let Err(e) = cache::store(dir, &bundle, &decoded)
    {
        tracing::debug!(dir = %dir.display(), "trust roots not cached: {e}");
    }
    Some(decoded)
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
        if let Some(bytes) = self.read_whole(path) {
            self.read_pem(&bytes);
        }
    }

    /// A regular file's bytes, unless it is unreadable or was read already.
    fn read_whole(&mut self, path: &Path) -> Option<Vec<u8>> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        if !meta.is_file() || !self.files.insert((meta.dev(), meta.ino())) {
            return None;
        }
        std::fs::read(path).ok()
    }

    fn read_dirs(&mut self, dirs: &[PathBuf]) {
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                self.read_file(&entry.path());
            }
        }
    }

    /// The certificates read, sorted, each once: differently wrapped copies decode to the same
    /// certificate (as before).
    fn finish(self) -> Vec<CertificateDer<'static>> {
        let mut certs = self.certs;
        certs.sort_unstable_by(|a, b| a.as_ref().cmp(b.as_ref()));
        certs.dedup();
        certs
    }

    fn read_pem(&mut self, text: &[u8]) {
        for block in cert_blocks(text) {
            // Compared as text: the copies are byte-identical files, and a copy wrapped
            // differently is merely decoded again.
            if !self.blocks.insert(block.to_vec()) {
                continue;
            }
            if let Some(der) = decode_block(block) {
                self.certs.push(CertificateDer::from(der));
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

/// The DER inside one certificate block (markers included), or None if its body is not
/// base64. The base64 crate's decoder, not rustls-pki-types' constant-time one (which
/// rustls-native-certs uses): that one guards secrets against timing, these are public
/// certificates, and it cost 8.0 M of a one-shot walk's 19.0 M instructions. The `pem` crate
/// was measured too: its parser and char-wise whitespace filter cost more (18.3 M) than the
/// decoding they wrap (BENCHMARKS.md, issue 26).
fn decode_block(block: &[u8]) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let body = block.get(BEGIN.len()..block.len().checked_sub(END.len())?)?;
    let text: Vec<u8> = body
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD.decode(text).ok()
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
        // A block whose body is not base64 is skipped, as rustls-native-certs skips a bad file.
        r.read_pem(b"-----BEGIN CERTIFICATE-----\n@@not base64@@\n-----END CERTIFICATE-----\n");
        let mut got: Vec<&[u8]> = r.certs.iter().map(|c| c.as_ref()).collect();
        assert_eq!(got.len(), 4, "the identical copy was not decoded again");
        got.dedup();
        assert_eq!(got, vec![&a[..], &b[..], &c[..]]);
    }

    fn sorted(certs: Vec<CertificateDer<'_>>) -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = certs.iter().map(|c| c.to_vec()).collect();
        v.sort();
        v.dedup();
        v
    }

    #[test]
    fn a_bundle_is_the_whole_set_and_the_directory_is_not_read() {
        let (a, b, c) = (vec![0x30u8, 1, 1], vec![0x30u8, 1, 2], vec![0x30u8, 1, 3]);
        let tmp = tempfile::tempdir().unwrap();
        let bundle = tmp.path().join("bundle.crt");
        std::fs::write(&bundle, pem(&[&a, &b])).unwrap();
        let dir = tmp.path().join("certs");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("0badc0de.0"), pem(&[&c])).unwrap();
        let got = sorted(roots_cached(Some(&bundle), std::slice::from_ref(&dir), None).certs);
        assert_eq!(
            got,
            vec![a.clone(), b.clone()],
            "c is only in the directory"
        );
        // The same set rustls-native-certs reads from that bundle alone.
        let theirs = rustls_native_certs::load_certs_from_paths(Some(&bundle), None);
        assert!(theirs.errors.is_empty(), "{:?}", theirs.errors);
        assert_eq!(got, sorted(theirs.certs));
    }

    #[test]
    fn without_a_bundle_every_file_of_the_directory_is_read_once() {
        let (a, b, c) = (vec![0x30u8, 2, 1], vec![0x30u8, 2, 2], vec![0x30u8, 2, 3]);
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("certs");
        std::fs::create_dir(&dir).unwrap();
        // Hash-named files, a symlink to one of them, a CRLF copy and a file that is no PEM.
        std::fs::write(dir.join("11111111.0"), pem(&[&a])).unwrap();
        std::fs::write(dir.join("22222222.0"), pem(&[&b, &c])).unwrap();
        std::os::unix::fs::symlink(dir.join("11111111.0"), dir.join("a.pem")).unwrap();
        std::fs::write(dir.join("b-copy.pem"), pem(&[&b]).replace('\n', "\r\n")).unwrap();
        std::fs::write(dir.join("README"), "not a certificate").unwrap();
        let want = vec![a, b, c];
        let theirs = rustls_native_certs::load_certs_from_paths(None, Some(&dir));
        assert_eq!(sorted(theirs.certs), want);
        // No bundle at all; a bundle path that does not exist; a bundle without a certificate.
        let missing = tmp.path().join("missing.crt");
        let empty = tmp.path().join("empty.crt");
        std::fs::write(&empty, "").unwrap();
        for file in [None, Some(missing.as_path()), Some(empty.as_path())] {
            let got = sorted(roots_cached(file, std::slice::from_ref(&dir), None).certs);
            assert_eq!(got, want, "bundle {file:?}");
        }
    }

    #[test]
    fn the_system_roots_are_what_rustls_native_certs_reads_from_the_same_source() {
        let ours = sorted(system_roots().certs.clone());
        let (file, _) = cert_paths();
        let from_file = file
            .as_deref()
            .map(|f| rustls_native_certs::load_certs_from_paths(Some(f), None).certs)
            .unwrap_or_default();
        let theirs = if from_file.is_empty() {
            // No bundle: the directories, as rustls-native-certs reads them.
            rustls_native_certs::load_native_certs().certs
        } else {
            from_file
        };
        assert_eq!(ours, sorted(theirs));
    }

    #[test]
    fn a_cache_hit_gives_the_roots_and_anchors_that_decoding_gives() {
        let (file, dirs) = cert_paths();
        let tmp = tempfile::tempdir().unwrap();
        let cache_dir = tmp.path().join("conduct-walker");
        let decoded = roots_cached(file.as_deref(), &dirs, None);
        let missed = roots_cached(file.as_deref(), &dirs, Some(&cache_dir));
        let hit = roots_cached(file.as_deref(), &dirs, Some(&cache_dir));
        assert_eq!(missed, decoded);
        assert_eq!(hit, decoded);
        // The anchors are those rustls makes of the same certificates.
        let mut store = rustls::RootCertStore::empty();
        store.add_parsable_certificates(decoded.certs.iter().cloned());
        assert_eq!(hit.anchors, store.roots);
        // Only a bundle is cached (a machine with only a directory writes nothing).
        let with_bundle = file
            .as_deref()
            .and_then(|f| std::fs::read(f).ok())
            .is_some_and(|bytes| {
                let mut r = RootsReader::default();
                r.read_pem(&bytes);
                !r.certs.is_empty()
            });
        assert_eq!(cache_dir.exists(), with_bundle);
    }
}
