//! Witness signing keys: Ed25519, PKCS#8 PEM on disk (`openssl genpkey -algorithm ed25519`
//! compatible), created 0600, never overwritten, refused when group or others can read them
//! (inside systemd's `$CREDENTIALS_DIRECTORY`, only when others can).
//! Private key bytes never reach a log or an error message.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey, spki::der::pem::LineEnding};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The systemd credential name `LoadCredential=signing-key:...` gives the key.
pub const CREDENTIAL_NAME: &str = "signing-key";

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("key file {path} already exists; refusing to overwrite it")]
    Exists { path: String },
    #[error("cannot create key file {path}: {source}")]
    Create {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot read key file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "key file {path} has mode {mode:04o}: group or others can read it; run `chmod 600 {path}`"
    )]
    TooOpen { path: String, mode: u32 },
    #[error(
        "credential {path} has mode {mode:04o}: others can read it; check the unit's LoadCredential= source file"
    )]
    CredentialTooOpen { path: String, mode: u32 },
    #[error("key file {path} is not an Ed25519 PKCS#8 PEM private key")]
    NotEd25519Pkcs8 { path: String },
    #[error("no signing key: pass --key FILE or provide the systemd credential `signing-key`")]
    NoKey,
    #[error("key_url {0} needs a signing key: the intake refuses key_url on an unsigned record")]
    KeyUrlWithoutKey(String),
}

/// What a pipeline signs with: the key and the `key_url` serving its public half (written into
/// every record before signing). A `key_url` without a key is refused: the intake refuses it.
pub fn signing_pair(
    key: Option<SigningKey>,
    key_url: Option<String>,
) -> Result<Option<(SigningKey, Option<String>)>, KeyError> {
    match (key, key_url) {
        (Some(key), url) => Ok(Some((key, url))),
        (None, Some(url)) => Err(KeyError::KeyUrlWithoutKey(url)),
        (None, None) => Ok(None),
    }
}

/// A key as RFC 8410 PKCS#8 v1 PEM, what `openssl genpkey -algorithm ed25519` writes (issue 42):
/// the seed alone. The v2 form with the public key attached is what ed25519-dalek writes by
/// default, and OpenSSL 3.0 (Debian 12) and Python's `cryptography` refuse it.
pub fn pkcs8_v1_pem(key: &SigningKey) -> impl std::ops::Deref<Target = String> + use<> {
    ed25519_dalek::pkcs8::KeypairBytes {
        secret_key: key.to_bytes(),
        public_key: None,
    }
    .to_pkcs8_pem(LineEnding::LF)
    .expect("an Ed25519 seed always encodes as PKCS#8")
}

/// Generate a key and write it as PKCS#8 v1 PEM ([`pkcs8_v1_pem`]), mode 0600, never
/// replacing a file.
pub fn generate_key_file(path: &Path) -> Result<SigningKey, KeyError> {
    let shown = path.display().to_string();
    let key = SigningKey::from_bytes(&rand::random::<[u8; 32]>());
    let pem = pkcs8_v1_pem(&key);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|source| match source.kind() {
            std::io::ErrorKind::AlreadyExists => KeyError::Exists {
                path: shown.clone(),
            },
            _ => KeyError::Create {
                path: shown.clone(),
                source,
            },
        })?;
    file.write_all(pem.as_bytes())
        .and_then(|_| file.sync_all())
        .map_err(|source| KeyError::Create {
            path: shown,
            source,
        })?;
    Ok(key)
}

/// Where the key comes from: `--key`, else `$CREDENTIALS_DIRECTORY/signing-key` when present.
pub fn resolve_key_path(cli: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = cli {
        return Some(p.to_path_buf());
    }
    crate::credentials::existing(CREDENTIAL_NAME)
}

/// Load a PKCS#8 PEM Ed25519 key, refusing one that group or others can read, except that a
/// key inside `$CREDENTIALS_DIRECTORY` may be group-readable (see [`load_signing_key_in`]).
pub fn load_signing_key(path: &Path) -> Result<SigningKey, KeyError> {
    load_signing_key_in(path, crate::credentials::directory().as_deref())
}

/// Whether `path` is a file directly inside systemd's credentials directory.
fn is_systemd_credential(path: &Path, credentials_dir: Option<&Path>) -> bool {
    let Some(dir) = credentials_dir.and_then(|d| d.canonicalize().ok()) else {
        return false;
    };
    path.canonicalize()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .is_some_and(|parent| parent == dir)
}

/// [`load_signing_key`] with the credentials directory given. systemd ≥ 254 writes a
/// credential root-owned 0400 plus an ACL entry for the service's (dynamic) user, so `stat`
/// reads 0440 (systemd issue #29435), on a read-only mount nobody can chmod; systemd confines
/// that directory to the service, so group bits there are not a leak. Others-readable still is.
pub fn load_signing_key_in(
    path: &Path,
    credentials_dir: Option<&Path>,
) -> Result<SigningKey, KeyError> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|source| KeyError::Read {
        path: shown.clone(),
        source,
    })?;
    let mode = meta.permissions().mode() & 0o7777;
    if is_systemd_credential(path, credentials_dir) {
        if mode & 0o004 != 0 {
            return Err(KeyError::CredentialTooOpen { path: shown, mode });
        }
    } else if mode & 0o044 != 0 {
        return Err(KeyError::TooOpen { path: shown, mode });
    }
    let pem = std::fs::read_to_string(path).map_err(|source| KeyError::Read {
        path: shown.clone(),
        source,
    })?;
    SigningKey::from_pkcs8_pem(pem.trim()).map_err(|_| KeyError::NotEd25519Pkcs8 { path: shown })
}

/// The raw 32-byte public key, standard padded base64 (44 characters), as the intake wants.
pub fn public_key_b64(key: &SigningKey) -> String {
    STANDARD.encode(key.verifying_key().as_bytes())
}

/// The document to serve at `key_url` (§5).
pub fn key_document(key: &SigningKey) -> serde_json::Value {
    serde_json::json!({ "public_key_ed25519_b64": public_key_b64(key) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keygen_writes_0600_and_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.pem");
        let key = generate_key_file(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let loaded = load_signing_key(&path).unwrap();
        assert_eq!(loaded.to_bytes(), key.to_bytes());
        assert!(matches!(
            generate_key_file(&path),
            Err(KeyError::Exists { .. })
        ));
        assert_eq!(public_key_b64(&key).len(), 44);
    }

    /// RFC 8410 §7's layout, version 0 and the seed alone (48 bytes of DER): what OpenSSL
    /// writes; and a v2 key (public key attached, ed25519-dalek's default) still loads.
    #[test]
    fn keygen_writes_pkcs8_v1_and_both_versions_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.pem");
        let key = generate_key_file(&path).unwrap();
        let pem = std::fs::read_to_string(&path).unwrap();
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = STANDARD.decode(body).unwrap();
        let mut want = hex::decode("302e020100300506032b657004220420").unwrap();
        want.extend_from_slice(&key.to_bytes());
        assert_eq!(der, want);
        let v2 = dir.path().join("v2.pem");
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&v2)
            .unwrap();
        file.write_all(key.to_pkcs8_pem(LineEnding::LF).unwrap().as_bytes())
            .unwrap();
        assert_eq!(load_signing_key(&v2).unwrap().to_bytes(), key.to_bytes());
    }

    #[test]
    fn refuses_a_key_others_can_read_naming_file_and_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.pem");
        generate_key_file(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let err = load_signing_key(&path).unwrap_err().to_string();
        assert!(err.contains("0640") && err.contains("k.pem"), "{err}");
        assert!(!err.contains("PRIVATE KEY"));
    }

    /// A credential as systemd ≥ 254 writes it: 0400 plus an ACL entry granting the service
    /// user read access (so the group bits, which show the ACL mask, read 0440), in a
    /// directory made read-only afterwards. Returns the directory and the key's path.
    fn systemd_style_credential() -> (tempfile::TempDir, PathBuf, SigningKey) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CREDENTIAL_NAME);
        let key = generate_key_file(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        if !set_user_read_acl(&path, 61_234) {
            // A filesystem without POSIX ACLs: the mode systemd's ACL shows, set directly.
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o440)).unwrap();
        }
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o500)).unwrap();
        (dir, path, key)
    }

    /// Set `user:UID:r--` as an access ACL through its xattr (the `setfacl -m` systemd does),
    /// which makes `stat` report the ACL mask (r) as the group bits.
    fn set_user_read_acl(path: &Path, uid: u32) -> bool {
        use std::os::unix::ffi::OsStrExt;
        const VERSION: u32 = 2;
        // (tag, permissions, id): USER_OBJ r, USER r, GROUP_OBJ -, MASK r, OTHER -.
        let entries: [(u16, u16, u32); 5] = [
            (0x01, 4, u32::MAX),
            (0x02, 4, uid),
            (0x04, 0, u32::MAX),
            (0x10, 4, u32::MAX),
            (0x20, 0, u32::MAX),
        ];
        let mut value = VERSION.to_le_bytes().to_vec();
        for (tag, perm, id) in entries {
            value.extend_from_slice(&tag.to_le_bytes());
            value.extend_from_slice(&perm.to_le_bytes());
            value.extend_from_slice(&id.to_le_bytes());
        }
        let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        let name = c"system.posix_acl_access";
        // SAFETY: both strings are NUL-terminated and `value` outlives the call.
        let rc = unsafe {
            libc::setxattr(
                c_path.as_ptr(),
                name.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                0,
            )
        };
        rc == 0
    }

    #[test]
    fn a_systemd_credential_readable_through_its_acl_is_accepted() {
        let (dir, path, key) = systemd_style_credential();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o440, "made the way systemd makes it");
        let loaded = load_signing_key_in(&path, Some(dir.path())).unwrap();
        assert_eq!(loaded.to_bytes(), key.to_bytes());
        // The same file outside the credentials directory is refused as before.
        let err = load_signing_key_in(&path, None).unwrap_err();
        assert!(
            matches!(err, KeyError::TooOpen { mode: 0o440, .. }),
            "{err}"
        );
        let elsewhere = tempfile::tempdir().unwrap();
        let err = load_signing_key_in(&path, Some(elsewhere.path())).unwrap_err();
        assert!(matches!(err, KeyError::TooOpen { .. }), "{err}");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    }

    #[test]
    fn a_credential_others_can_read_is_still_refused() {
        let (dir, path, _) = systemd_style_credential();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        let err = load_signing_key_in(&path, Some(dir.path())).unwrap_err();
        assert!(
            matches!(err, KeyError::CredentialTooOpen { mode: 0o444, .. }),
            "{err}"
        );
    }

    #[test]
    fn refuses_something_that_is_not_a_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.pem");
        std::fs::write(&path, "hello").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(
            load_signing_key(&path),
            Err(KeyError::NotEd25519Pkcs8 { .. })
        ));
    }
}
