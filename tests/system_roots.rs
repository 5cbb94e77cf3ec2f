//! Where the real binary finds its trust roots (issue 26): `--ca-cert` alone, the system's
//! bundle file, and a system with only a certificate directory. The "system" is pointed at
//! temporary files through `SSL_CERT_FILE` / `SSL_CERT_DIR` (which rustls-native-certs and
//! openssl-probe honour as well), and each walk goes to a real loopback HTTPS agent whose CA is
//! in exactly one of those places.

use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// One `walk` of `origin` with the roots the environment names, and nothing else: the caller
/// sets (or clears) both variables. The trust roots cache is the layout's own.
async fn walk(
    l: &Layout,
    origin: &str,
    file: Option<&Path>,
    dir: Option<&Path>,
    ca_cert: Option<&Path>,
) -> Output {
    run(walk_command(l, origin, file, dir, ca_cert)).await
}

/// The command [`walk`] runs, for a test that changes its environment further.
fn walk_command(
    l: &Layout,
    origin: &str,
    file: Option<&Path>,
    dir: Option<&Path>,
    ca_cert: Option<&Path>,
) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_conduct-walker"));
    cmd.args([
        "walk",
        "--origin",
        origin,
        "--mode",
        "a2a",
        "--witness-name",
        "roots test",
        "--vantage",
        "loopback",
        "--allow-private-network",
        "--json",
    ]);
    cmd.env_remove("SSL_CERT_FILE").env_remove("SSL_CERT_DIR");
    cmd.env("XDG_CACHE_HOME", l.cache_home());
    if let Some(file) = file {
        cmd.env("SSL_CERT_FILE", file);
    }
    if let Some(dir) = dir {
        cmd.env("SSL_CERT_DIR", dir);
    }
    if let Some(ca) = ca_cert {
        cmd.arg("--ca-cert").arg(ca);
    }
    cmd.arg("--out")
        .arg(l.root.join(format!("rec-{}.json", unique())));
    cmd
}

/// A number no earlier call returned (a record file per walk).
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

async fn run(cmd: Command) -> Output {
    tokio::process::Command::from(cmd).output().await.unwrap()
}

fn passed(out: &Output) -> bool {
    let stdout = String::from_utf8_lossy(&out.stdout);
    out.status.code() == Some(0) && stdout.contains("\"sha256\"")
}

/// Exit 1 and the card fetch (n0) failing on the certificate: the agent was not trusted.
fn untrusted(out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).expect("--json output");
    let n0 = json["transport_errors"]["0"].as_str().unwrap_or_default();
    assert!(
        n0.to_ascii_lowercase().contains("certificate") || n0.contains("UnknownIssuer"),
        "n0 should fail on the certificate: {stdout}"
    );
}

struct Layout {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Layout {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        Layout { _tmp: tmp, root }
    }

    /// `XDG_CACHE_HOME` for every walk of this layout.
    fn cache_home(&self) -> PathBuf {
        self.root.join("cache-home")
    }

    /// The trust roots cache file for the bundle at `bundle` (named by a hash of the path).
    fn cache_file(&self, bundle: &Path) -> PathBuf {
        use std::os::unix::ffi::OsStrExt as _;
        let name = conduct_walker::digest::sha256_hex(bundle.as_os_str().as_bytes());
        self.cache_home()
            .join("conduct-walker")
            .join(format!("trust-roots-v2-{}", &name[..32]))
    }

    /// A bundle file holding these CAs' certificates, one after another.
    fn bundle(&self, name: &str, cas: &[&SandboxCa]) -> PathBuf {
        let path = self.root.join(name);
        let text: String = cas.iter().map(|ca| ca.cert_pem().to_string()).collect();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A directory laid out as `update-ca-certificates`/`c_rehash` leave one: a `.pem` file per
    /// CA and an 8-hex-digit `.0` name linking to it (the name's digits are not OpenSSL's
    /// subject hash, which nothing here looks up by).
    fn directory(&self, name: &str, cas: &[&SandboxCa]) -> PathBuf {
        let dir = self.root.join(name);
        std::fs::create_dir(&dir).unwrap();
        for (i, ca) in cas.iter().enumerate() {
            let pem = dir.join(format!("sandbox-ca-{i}.pem"));
            std::fs::write(&pem, ca.cert_pem()).unwrap();
            let hashed = &conduct_walker::digest::sha256_hex(ca.cert_pem().as_bytes())[..8];
            std::os::unix::fs::symlink(&pem, dir.join(format!("{hashed}.0"))).unwrap();
        }
        dir
    }
}

#[tokio::test]
async fn a_system_with_only_a_certificate_directory_trusts_what_it_holds() {
    let (ca, other) = (SandboxCa::generate(), SandboxCa::generate());
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let l = Layout::new();
    let with_ca = l.directory("certs", &[&other, &ca]);
    let without = l.directory("other-certs", &[&other]);
    let out = walk(&l, &agent.origin(), None, Some(&with_ca), None).await;
    assert!(
        passed(&out),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The control: the same walk with a directory that lacks the CA fails on the certificate,
    // so the directory was what made the agent trusted.
    untrusted(&walk(&l, &agent.origin(), None, Some(&without), None).await);
    // A bundle path that names nothing is no bundle: the directory is read.
    let missing = l.root.join("no-such-bundle.crt");
    let out = walk(&l, &agent.origin(), Some(&missing), Some(&with_ca), None).await;
    assert!(passed(&out), "{}", String::from_utf8_lossy(&out.stdout));
}

#[tokio::test]
async fn a_system_bundle_is_the_whole_set_of_roots() {
    let (ca, other) = (SandboxCa::generate(), SandboxCa::generate());
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let l = Layout::new();
    let bundle = l.bundle("ca-certificates.crt", &[&other, &ca]);
    let out = walk(&l, &agent.origin(), Some(&bundle), None, None).await;
    assert!(
        passed(&out),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // With a directory beside it, as on Debian: the bundle is read, the directory is not
    // (update-ca-certificates puts every root of the directory into the bundle).
    let dir = l.directory("certs", &[&other, &ca]);
    let out = walk(&l, &agent.origin(), Some(&bundle), Some(&dir), None).await;
    assert!(passed(&out), "{}", String::from_utf8_lossy(&out.stdout));
    let other_only = l.bundle("other.crt", &[&other]);
    untrusted(&walk(&l, &agent.origin(), Some(&other_only), Some(&dir), None).await);
}

#[tokio::test]
async fn ca_cert_alone_is_enough_on_a_system_without_roots() {
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let l = Layout::new();
    let ca_pem = l.root.join("ca.pem");
    ca.write_pem(&ca_pem).unwrap();
    let empty = l.directory("empty", &[]);
    let nothing = l.root.join("no-such-bundle.crt");
    untrusted(&walk(&l, &agent.origin(), Some(&nothing), Some(&empty), None).await);
    let out = walk(
        &l,
        &agent.origin(),
        Some(&nothing),
        Some(&empty),
        Some(&ca_pem),
    )
    .await;
    assert!(
        passed(&out),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // And beside the system's own roots (whatever this machine has).
    let out = walk_with_system_roots(&agent.origin(), &ca_pem).await;
    assert!(passed(&out), "{}", String::from_utf8_lossy(&out.stdout));
}

/// A walk with the machine's own roots (the environment as the test runner has it) plus
/// `--ca-cert`.
async fn walk_with_system_roots(origin: &str, ca: &Path) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_conduct-walker"));
    cmd.args([
        "walk",
        "--origin",
        origin,
        "--mode",
        "a2a",
        "--witness-name",
        "roots test",
        "--vantage",
        "loopback",
        "--allow-private-network",
        "--json",
        "--ca-cert",
    ])
    .arg(ca)
    .arg("--out")
    .arg(dir.path().join("rec.json"));
    tokio::process::Command::from(cmd).output().await.unwrap()
}

/// The inode of a file (a rewritten cache file is a new one: written beside, then renamed).
fn inode(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .ino()
}

/// Issue 47: the decoded bundle is cached with a copy of its bytes, and the bundle stays the
/// source of truth. A CA added to the system bundle is trusted on the next walk, a CA removed is
/// not, and a cache entry is never used for other bytes, even when the file keeps its inode,
/// size and modification time.
#[tokio::test]
async fn the_roots_cache_follows_the_bundle_a_ca_added_and_a_ca_removed() {
    let (ca, other) = (SandboxCa::generate(), SandboxCa::generate());
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let l = Layout::new();
    // As update-ca-certificates writes it: a new file renamed over the old one.
    let bundle = l.root.join("ca-certificates.crt");
    let install = |cas: &[&SandboxCa]| {
        let text: String = cas.iter().map(|c| c.cert_pem().to_string()).collect();
        let new = l.root.join("ca-certificates.crt.new");
        std::fs::write(&new, &text).unwrap();
        std::fs::rename(&new, &bundle).unwrap();
    };
    let cached = l.cache_file(&bundle);

    install(&[&other]);
    untrusted(&walk(&l, &agent.origin(), Some(&bundle), None, None).await);
    let first = inode(&cached);
    // The same bundle again: the cache entry is read, not written again.
    untrusted(&walk(&l, &agent.origin(), Some(&bundle), None, None).await);
    assert_eq!(inode(&cached), first, "a hit rewrote the cache file");

    // The operator adds the CA: trusted on the very next walk, and the entry is replaced.
    install(&[&other, &ca]);
    let out = walk(&l, &agent.origin(), Some(&bundle), None, None).await;
    assert!(
        passed(&out),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let with_ca = inode(&cached);
    assert_ne!(with_ca, first, "the entry for the old bytes was replaced");
    // And removes it again: not trusted.
    install(&[&other]);
    untrusted(&walk(&l, &agent.origin(), Some(&bundle), None, None).await);
    assert_ne!(inode(&cached), with_ca);

    // The bundle edited in place to other bytes of the same length, its modification time put
    // back: same inode, size and mtime. The CA it no longer holds is not trusted.
    let pad = |mut text: Vec<u8>, to: usize| {
        text.resize(to, b'\n');
        text
    };
    let ca_only = ca.cert_pem().as_bytes().to_vec();
    let other_only = other.cert_pem().as_bytes().to_vec();
    let len = ca_only.len().max(other_only.len()) + 16;
    std::fs::write(&bundle, pad(ca_only, len)).unwrap();
    let out = walk(&l, &agent.origin(), Some(&bundle), None, None).await;
    assert!(passed(&out), "{}", String::from_utf8_lossy(&out.stdout));
    let (ino, mtime) = (
        inode(&bundle),
        std::fs::metadata(&bundle).unwrap().modified().unwrap(),
    );
    std::fs::write(&bundle, pad(other_only, len)).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&bundle)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let meta = std::fs::metadata(&bundle).unwrap();
    assert_eq!(
        (inode(&bundle), meta.len(), meta.modified().unwrap()),
        (ino, len as u64, mtime)
    );
    untrusted(&walk(&l, &agent.origin(), Some(&bundle), None, None).await);

    // A torn cache file (as a crash mid-write could leave one, were it not renamed into
    // place) is not read: the bundle is decoded again and the entry written whole.
    install(&[&other, &ca]);
    let out = walk(&l, &agent.origin(), Some(&bundle), None, None).await;
    assert!(passed(&out), "{}", String::from_utf8_lossy(&out.stdout));
    let whole = std::fs::read(&cached).unwrap();
    std::fs::write(&cached, &whole[..whole.len() / 2]).unwrap();
    let out = walk(&l, &agent.origin(), Some(&bundle), None, None).await;
    assert!(passed(&out), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(std::fs::read(&cached).unwrap(), whole, "rewritten whole");
}

/// Without a cache directory (no `XDG_CACHE_HOME`, no `HOME`, as for a service user without a
/// home) the bundle is decoded as before and nothing is written.
#[tokio::test]
async fn without_a_cache_directory_the_bundle_is_decoded_every_time() {
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let l = Layout::new();
    let bundle = l.bundle("ca-certificates.crt", &[&ca]);
    let mut cmd = walk_command(&l, &agent.origin(), Some(&bundle), None, None);
    cmd.env_remove("XDG_CACHE_HOME").env_remove("HOME");
    let out = run(cmd).await;
    assert!(
        passed(&out),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Nothing appeared under the layout (where XDG_CACHE_HOME would have pointed).
    assert!(!l.cache_home().exists());
}
