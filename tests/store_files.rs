//! The store's files as an operator handles them: created 0600 (they hold commitment salts and
//! kept full records), whole in walker.db after a clean exit of each face that writes (so a copy
//! of that one file is the store), and a copy that lacks the -wal it needed says so.

use conduct_walker::sandbox::{SandboxAgent, SandboxCa, scenario};
use conduct_walker::store::Store;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

fn list(db: &Path) -> (bool, String) {
    let out = Command::new(BIN)
        .args(["records", "list", "--db"])
        .arg(db)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// Bytes left in `walker.db-wal` (none, or no file, once the log is folded into walker.db).
fn wal_len(db: &Path) -> u64 {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(wal).map_or(0, |m| m.len())
}

/// `walker.db` copied alone (no -wal, no -shm) into a fresh directory.
fn copy_alone(db: &Path, to: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(to).unwrap();
    let copy = to.join("walker.db");
    std::fs::copy(db, &copy).unwrap();
    copy
}

#[test]
fn a_new_store_and_its_log_are_0600_whatever_the_umask() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/walker.db");
    let store = Store::open(&path).unwrap();
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&dir.path().join("sub/walker.db-wal")), 0o600);
    assert_eq!(mode(&dir.path().join("sub/walker.db-shm")), 0o600);
    drop(store);
    // An existing store keeps the mode its operator gave it.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    drop(Store::open(&path).unwrap());
    assert_eq!(mode(&path), 0o640);
}

#[test]
fn the_demo_leaves_a_0600_store_that_is_whole_in_walker_db() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["demo", "--out-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let db = dir.path().join("walker.db");
    assert_eq!(mode(&db), 0o600);
    assert_eq!(
        wal_len(&db),
        0,
        "the demo left transactions in walker.db-wal"
    );
    let (ok, whole) = list(&db);
    assert!(ok, "{whole}");
    let copy = copy_alone(&db, &dir.path().join("copy"));
    let (ok, copied) = list(&copy);
    assert!(ok, "{copied}");
    assert_eq!(copied, whole, "walker.db alone lacks records the -wal held");
    assert_eq!(copied.lines().count(), whole.lines().count());
    assert!(whole.lines().count() >= 9, "{whole}");
}

#[test]
fn walk_with_db_leaves_a_store_whole_in_walker_db() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ca = SandboxCa::generate();
    let agent = rt
        .block_on(SandboxAgent::start(
            &ca,
            scenario("honest-a2a").unwrap().behaviour,
        ))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let db = dir.path().join("walker.db");
    let out = Command::new(BIN)
        .args(["walk", "--origin", &agent.origin(), "--mode", "a2a"])
        .args([
            "--witness-name",
            "w",
            "--vantage",
            "v",
            "--allow-private-network",
        ])
        .arg("--ca-cert")
        .arg(dir.path().join("ca.pem"))
        .arg("--db")
        .arg(&db)
        .arg("--out")
        .arg(dir.path().join("w.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(mode(&db), 0o600);
    assert_eq!(
        wal_len(&db),
        0,
        "walk --db left transactions in walker.db-wal"
    );
    let copy = copy_alone(&db, &dir.path().join("copy"));
    let (ok, copied) = list(&copy);
    assert!(ok, "{copied}");
    assert_eq!(copied.lines().count(), 1, "{copied}");
}

#[test]
fn a_copy_without_the_wal_it_needs_says_so_instead_of_offering_an_empty_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("walker.db");
    // Open, and keep open: the new schema is in walker.db-wal, not yet in walker.db.
    let store = Store::open(&path).unwrap();
    let copy = copy_alone(&path, &dir.path().join("copy"));
    let (ok, text) = list(&copy);
    assert!(!ok, "{text}");
    assert!(
        text.contains("walker.db-wal") && text.contains("is missing"),
        "{text}"
    );
    assert!(text.contains("records export"), "{text}");
    assert!(!text.contains("open it read-write once"), "{text}");
    drop(store);
}
