//! A cache of the system bundle's decoded certificates and trust anchors, valid only for the
//! exact bundle bytes it was made from (issue 47).
//!
//! Decoding the bundle's PEM and parsing its certificates into trust anchors was 40 % of a
//! one-shot walk's instructions (BENCHMARKS.md). The cache keeps what one decoding produced
//! together with **a copy of the bundle bytes it was decoded from**; a later process reads the
//! bundle and takes the cached roots only if those bytes are identical (a byte comparison:
//! exact, and about 10 µs for the Debian bundle on any CPU, where hashing it took 0.2 ms with
//! SHA-NI and about as long as decoding without). So the system's bundle stays the source of
//! truth: a CA added or removed with `update-ca-certificates` changes the bytes and the bundle
//! is decoded again on the next walk. An entry never trusts what the bundle no longer holds.
//! One file per bundle path (named by a hash of the path), replaced when the bytes change.
//!
//! Where: `$XDG_CACHE_HOME/conduct-walker`, else `$HOME/.cache/conduct-walker` (the XDG base
//! directory rules); with neither (a service user without a home), no cache: the bundle is
//! decoded as before. A cache file whose owner is not this user, or that others may write (or
//! in such a directory), is not read: whoever may write it could add a trust root. The file's
//! own integrity is a CRC-32 (torn writes, bit rot: accidents; adversaries are kept out by the
//! ownership and mode checks). Any failure to read or write the cache is quiet and costs only
//! the decoding it would have saved.

use super::SystemRoots;
use rustls_pki_types::{CertificateDer, TrustAnchor};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

/// The first bytes of every cache file; a change of format or of the decoding rules changes
/// the version, so a file of another version is never read as this one.
const MAGIC: &[u8] = b"conduct-walker trust roots v2\n";
/// File names: `PREFIX` + a hash of the bundle's path.
const PREFIX: &str = "trust-roots-v2-";
/// Cache files kept (the newest by modification time); more are removed when one is written.
/// Bundles differ by path and by content over time; a handful covers a machine's own.
const KEEP: usize = 4;
/// A cache file larger than this is not read (the Debian bundle's is about 430 KiB).
const MAX_FILE: u64 = 16 << 20;
/// Certificates (and anchors) in one file at most (the Debian bundle holds about 150).
const MAX_CERTS: usize = 100_000;

/// The directory cache files live in, by the XDG base directory rules: `$XDG_CACHE_HOME` when
/// it is an absolute path, else `$HOME/.cache`; None without either.
pub fn default_dir() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let base = xdg.or_else(|| {
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .map(|home| home.join(".cache"))
    })?;
    Some(base.join("conduct-walker"))
}

/// The bundle a cache entry stands for: its path and its exact bytes, as read now.
#[derive(Debug, Clone, Copy)]
pub struct Bundle<'a> {
    pub path: &'a Path,
    pub bytes: &'a [u8],
}

impl Bundle<'_> {
    fn path_bytes(&self) -> &[u8] {
        path_bytes(self.path)
    }
}

fn path_bytes(path: &Path) -> &[u8] {
    use std::os::unix::ffi::OsStrExt as _;
    path.as_os_str().as_bytes()
}

/// The cache file for the bundle at `bundle_path`.
pub fn file_for(dir: &Path, bundle_path: &Path) -> PathBuf {
    let name = crate::digest::sha256_hex(path_bytes(bundle_path));
    dir.join(format!("{PREFIX}{}", &name[..32]))
}

/// A cache file's bytes: the magic, the bundle's path and bytes, the certificates, the trust
/// anchors parsed from them (subject, key, name constraints; each field length-prefixed) and a
/// CRC-32 of all of that.
pub fn encode(bundle: &Bundle<'_>, roots: &SystemRoots) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        MAGIC.len()
            + 16
            + bundle.path_bytes().len()
            + bundle.bytes.len()
            + 4096 * roots.certs.len(),
    );
    out.extend_from_slice(MAGIC);
    put_field(&mut out, bundle.path_bytes());
    put_field(&mut out, bundle.bytes);
    put_u32(&mut out, roots.certs.len());
    for cert in &roots.certs {
        put_field(&mut out, cert.as_ref());
    }
    put_u32(&mut out, roots.anchors.len());
    for anchor in &roots.anchors {
        put_field(&mut out, anchor.subject.as_ref());
        put_field(&mut out, anchor.subject_public_key_info.as_ref());
        match &anchor.name_constraints {
            Some(nc) => {
                out.push(1);
                put_field(&mut out, nc.as_ref());
            }
            None => out.push(0),
        }
    }
    let checksum = crc32fast::hash(&out);
    out.extend_from_slice(&checksum.to_le_bytes());
    out
}

fn put_u32(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
}

fn put_field(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u32(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// The roots a cache file holds, if it is whole (magic, checksum, lengths) and was made from
/// exactly `bundle`: the same path and the same bytes. None otherwise.
pub fn decode(bytes: &[u8], bundle: &Bundle<'_>) -> Option<SystemRoots> {
    let (content, checksum) = bytes.split_at_checked(bytes.len().checked_sub(4)?)?;
    if crc32fast::hash(content).to_le_bytes() != checksum {
        return None;
    }
    let mut r = Fields(content.strip_prefix(MAGIC)?);
    if r.field()? != bundle.path_bytes() || r.field()? != bundle.bytes {
        return None;
    }
    let count = r.count()?;
    let mut certs = Vec::with_capacity(count);
    for _ in 0..count {
        certs.push(CertificateDer::from(r.field()?.to_vec()));
    }
    let count = r.count()?;
    let mut anchors = Vec::with_capacity(count);
    for _ in 0..count {
        let subject = r.field()?.to_vec();
        let spki = r.field()?.to_vec();
        let name_constraints = match r.byte()? {
            0 => None,
            1 => Some(r.field()?.to_vec().into()),
            _ => return None,
        };
        anchors.push(TrustAnchor {
            subject: subject.into(),
            subject_public_key_info: spki.into(),
            name_constraints,
        });
    }
    r.0.is_empty().then_some(SystemRoots { certs, anchors })
}

/// A reader of the fields [`encode`] writes.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*b)
    }

    fn u32(&mut self) -> Option<usize> {
        let (n, rest) = self.0.split_first_chunk::<4>()?;
        self.0 = rest;
        usize::try_from(u32::from_le_bytes(*n)).ok()
    }

    /// A count of certificates or anchors, within [`MAX_CERTS`].
    fn count(&mut self) -> Option<usize> {
        self.u32().filter(|&n| n <= MAX_CERTS)
    }

    /// One length-prefixed, non-empty field.
    fn field(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()?;
        let (field, rest) = self.0.split_at_checked(len)?;
        self.0 = rest;
        (!field.is_empty()).then_some(field)
    }
}

/// The roots cached for exactly `bundle`, when `dir` holds a whole cache file for it that only
/// this user may write.
pub fn load(dir: &Path, bundle: &Bundle<'_>) -> Option<SystemRoots> {
    use std::os::unix::fs::OpenOptionsExt as _;
    if !only_ours(&std::fs::metadata(dir).ok()?) {
        return None;
    }
    let path = file_for(dir, bundle.path);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || !only_ours(&meta) || meta.len() > MAX_FILE {
        tracing::debug!(path = %path.display(), "trust roots cache file not read: not a file only this user may write");
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes).ok()?;
    let roots = decode(&bytes, bundle);
    if roots.is_none() {
        tracing::debug!(path = %path.display(), "trust roots cache file not whole or of other bundle bytes; decoding the bundle");
    }
    roots
}

/// Keep `roots` (decoded from exactly `bundle`) in `dir`: written
/// to a new file, then renamed into place, so a reader sees the old file or the whole new one.
/// Older cache files beyond [`KEEP`] are removed. Errors are the caller's to ignore.
pub fn store(dir: &Path, bundle: &Bundle<'_>, roots: &SystemRoots) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    if !only_ours(&std::fs::metadata(dir)?) {
        return Err(std::io::Error::other(
            "the cache directory is not this user's alone",
        ));
    }
    let path = file_for(dir, bundle.path);
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let temp = dir.join(format!(".{PREFIX}{}-{nonce}.tmp", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&temp)?;
        file.write_all(&encode(bundle, roots))?;
        std::fs::rename(&temp, &path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written?;
    prune(dir, &path);
    Ok(())
}

/// Remove all but the newest [`KEEP`] cache files (never `just_written`).
fn prune(dir: &Path, just_written: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(PREFIX))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .filter(|(_, p)| p != just_written)
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    for (_, old) in files.into_iter().skip(KEEP - 1) {
        let _ = std::fs::remove_file(old);
    }
}

/// Owned by this process's effective user and writable by no one else.
fn only_ours(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    meta.uid() == euid && meta.mode() & 0o022 == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    /// Two real certificates (a CA's, one with name constraints) and their anchors.
    fn roots() -> SystemRoots {
        let mut plain = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        plain.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let mut constrained = plain.clone();
        constrained.name_constraints = Some(rcgen::NameConstraints {
            permitted_subtrees: vec![rcgen::GeneralSubtree::DnsName("example.org".into())],
            excluded_subtrees: vec![],
        });
        let certs = [plain, constrained]
            .into_iter()
            .map(|p| {
                let key = rcgen::KeyPair::generate().unwrap();
                p.self_signed(&key).unwrap().der().clone()
            })
            .collect();
        let roots = SystemRoots::of(certs);
        assert_eq!(roots.anchors.len(), 2);
        assert!(roots.anchors[1].name_constraints.is_some());
        roots
    }

    fn bundle() -> Bundle<'static> {
        Bundle {
            path: Path::new("/etc/ssl/certs/ca-certificates.crt"),
            bytes: b"bundle bytes",
        }
    }

    #[test]
    fn a_cache_file_reads_back_only_for_the_bundle_it_was_made_from() {
        let roots = roots();
        let bytes = encode(&bundle(), &roots);
        assert_eq!(decode(&bytes, &bundle()), Some(roots));
        let one_more = Bundle {
            bytes: b"bundle bytes, one CA more",
            ..bundle()
        };
        assert_eq!(decode(&bytes, &one_more), None, "other bytes");
        let one_byte_changed = Bundle {
            bytes: b"bundle bytez",
            ..bundle()
        };
        assert_eq!(decode(&bytes, &one_byte_changed), None, "same length");
        let elsewhere = Bundle {
            path: Path::new("/etc/other.crt"),
            ..bundle()
        };
        assert_eq!(decode(&bytes, &elsewhere), None, "another path");
        // An empty set is a valid file (the caller never writes one, but it reads as empty).
        let empty = SystemRoots::default();
        assert_eq!(decode(&encode(&bundle(), &empty), &bundle()), Some(empty));
    }

    #[test]
    fn a_torn_or_altered_cache_file_is_refused() {
        let bytes = encode(&bundle(), &roots());
        for cut in 0..bytes.len() {
            assert_eq!(decode(&bytes[..cut], &bundle()), None, "cut at {cut}");
        }
        for at in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x01;
            assert_eq!(decode(&flipped, &bundle()), None, "bit flipped at {at}");
        }
        // A whole file (checksum recomputed) of another format version.
        let mut v3 = bytes.clone();
        v3[MAGIC.len() - 2] = b'3';
        let len = v3.len();
        let checksum = crc32fast::hash(&v3[..len - 4]);
        v3[len - 4..].copy_from_slice(&checksum.to_le_bytes());
        assert_eq!(decode(&v3, &bundle()), None, "another version's magic");
    }

    #[test]
    fn store_then_load_and_files_others_may_write_are_not_read() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cache").join("conduct-walker");
        assert_eq!(load(&dir, &bundle()), None, "nothing cached yet");
        let roots = roots();
        store(&dir, &bundle(), &roots).unwrap();
        let file = file_for(&dir, bundle().path);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(load(&dir, &bundle()).as_ref(), Some(&roots));
        // A file others may write is not trusted, nor a file in a directory others may write.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o622)).unwrap();
        assert_eq!(load(&dir, &bundle()), None, "group/other-writable file");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(
            load(&dir, &bundle()),
            None,
            "group/other-writable directory"
        );
        assert!(store(&dir, &bundle(), &roots).is_err());
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        // A symbolic link in the file's place is not followed.
        std::fs::remove_file(&file).unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::write(&elsewhere, encode(&bundle(), &roots)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &file).unwrap();
        assert_eq!(load(&dir, &bundle()), None, "symlink");
    }

    #[test]
    fn only_the_newest_cache_files_are_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let paths: Vec<PathBuf> = (0..7u8)
            .map(|i| PathBuf::from(format!("/b{i}.crt")))
            .collect();
        for (i, path) in paths.iter().enumerate() {
            let bundle = Bundle { path, bytes: b"x" };
            store(&dir, &bundle, &SystemRoots::default()).unwrap();
            // Distinct modification times, oldest first.
            let t = std::time::SystemTime::UNIX_EPOCH
                + std::time::Duration::from_secs(1_000 + i as u64);
            std::fs::File::options()
                .write(true)
                .open(file_for(&dir, path))
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        let mut left: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        left.sort();
        let mut want: Vec<PathBuf> = paths[paths.len() - KEEP..]
            .iter()
            .map(|p| file_for(&dir, p))
            .collect();
        want.sort();
        assert_eq!(left, want);
    }
}
