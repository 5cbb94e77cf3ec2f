//! Issue 42: our keys and OpenSSL's are one format. `keygen` writes RFC 8410 PKCS#8 v1, which the
//! real `openssl` CLI reads (Debian 12's OpenSSL 3.0 answered "unsupported" to the v2 form we
//! wrote before), and a key `openssl genpkey` made loads here with the same public key.
//! OpenSSL is on every Debian machine (CI's included); the test says so and stops where the
//! command is missing.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

fn openssl_present() -> bool {
    let found = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("SKIPPED: no `openssl` command on this machine");
    }
    found
}

/// The raw 32-byte public key OpenSSL derives from a private key file.
fn openssl_public_key(key: &Path) -> Vec<u8> {
    let out = Command::new("openssl")
        .args(["pkey", "-in"])
        .arg(key)
        .args(["-pubout", "-outform", "DER"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl pkey refused {}: {}",
        key.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    // SubjectPublicKeyInfo of Ed25519: a 12-byte prefix, then the key.
    assert_eq!(out.stdout.len(), 44, "{:02x?}", out.stdout);
    out.stdout[12..].to_vec()
}

/// The public key `conduct-walker pubkey` prints for a key file.
fn our_public_key(key: &Path) -> Vec<u8> {
    let out = Command::new(BIN)
        .args(["pubkey", "--key"])
        .arg(key)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pubkey: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    STANDARD
        .decode(doc["public_key_ed25519_b64"].as_str().unwrap())
        .unwrap()
}

#[test]
fn openssl_reads_the_key_keygen_writes() {
    if !openssl_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("witness.pem");
    let out = Command::new(BIN)
        .args(["keygen", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // `openssl pkey -in key.pem`, as an operator inspects it, and the text form names the type.
    let text = Command::new("openssl")
        .args(["pkey", "-noout", "-text", "-in"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(
        text.status.success(),
        "openssl pkey: {}",
        String::from_utf8_lossy(&text.stderr)
    );
    assert!(String::from_utf8_lossy(&text.stdout).starts_with("ED25519 Private-Key"));
    assert_eq!(openssl_public_key(&key), our_public_key(&key));
}

#[test]
fn a_key_openssl_generates_loads_with_the_same_public_key() {
    if !openssl_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("openssl.pem");
    let made = Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let theirs = openssl_public_key(&key);
    assert_eq!(our_public_key(&key), theirs);
    // And what we would write for that key is byte for byte what OpenSSL wrote.
    let pem = std::fs::read_to_string(&key).unwrap();
    let loaded = conduct_walker::witness::keys::load_signing_key(&key).unwrap();
    assert_eq!(*conduct_walker::witness::keys::pkcs8_v1_pem(&loaded), pem);
}

/// Issue 45: `key rotate` and `key revoke` write a new key and keep the old one beside it;
/// OpenSSL reads each of them, with the public key the history lists.
#[test]
fn openssl_reads_every_key_rotate_and_revoke_write() {
    if !openssl_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("witness.pem");
    let made = Command::new(BIN)
        .args(["keygen", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(made.status.success());
    let config = dir.path().join("walker.toml");
    std::fs::write(
        &config,
        "[witness]\nname = \"w\"\nvantage = \"v\"\nkey = \"witness.pem\"\n\
         key_url = \"https://witness.example/keys/witness.json\"\n\n\
         [daemon]\ndatabase = \"walker.db\"\n",
    )
    .unwrap();
    let commands: [&[&str]; 2] = [
        &["key", "rotate"],
        &[
            "key",
            "revoke",
            "--compromised-from",
            "2026-01-01T00:00:00Z",
        ],
    ];
    for args in commands {
        let out = Command::new(BIN)
            .args(args)
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("witness.pem"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 3, "the key and the two it replaced: {files:?}");
    let mut publics = Vec::new();
    for file in &files {
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
        let public = openssl_public_key(file);
        assert_eq!(public, our_public_key(file));
        publics.push(STANDARD.encode(public));
    }
    publics.dedup();
    assert_eq!(publics.len(), 3, "three different keys");
}
