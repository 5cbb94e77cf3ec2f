//! The Python side of the alert tests: `target/alerts-venv` (PyPI: the official
//! `standardwebhooks` library and `aiosmtpd`), provisioned on first use, and the receivers.
#![allow(dead_code)]

use conduct_walker::sandbox::SandboxCa;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

pub fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap()
}

/// The venv's Python, provisioning `target/alerts-venv` on first use (one process at a time).
pub fn python() -> &'static Path {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let target = target_dir();
        fs::create_dir_all(&target).unwrap();
        let venv = target.join("alerts-venv");
        let python = venv.join("bin/python");
        let req = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/alerts/requirements.txt");
        let wanted = conduct_walker::digest::sha256_hex(fs::read(&req).unwrap());
        let stamp = venv.join(".requirements-sha256");
        let lock = fs::File::create(target.join("alerts-venv.lock")).unwrap();
        // SAFETY: flock on a file descriptor we own; released when `lock` is dropped.
        unsafe {
            use std::os::fd::AsRawFd;
            libc::flock(lock.as_raw_fd(), libc::LOCK_EX);
        }
        if python.exists() && fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == wanted) {
            return python;
        }
        let _ = fs::remove_dir_all(&venv);
        let ok = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .unwrap();
        assert!(ok.success(), "python3 -m venv failed");
        let ok = Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                "-r",
            ])
            .arg(&req)
            .status()
            .unwrap();
        assert!(ok.success(), "pip install {} failed", req.display());
        fs::write(&stamp, format!("{wanted}\n")).unwrap();
        drop(lock);
        python
    })
}

/// The Python receiver on a loopback port, with a leaf from the sandbox CA.
pub struct Receiver {
    _child: KillOnDrop,
    pub port: u16,
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Receiver {
    pub fn start(ca: &SandboxCa, mode: &str) -> Receiver {
        let dir = tempfile::tempdir().unwrap();
        let (chain, key) = ca.leaf_pem(&[]);
        fs::write(dir.path().join("cert.pem"), chain).unwrap();
        fs::write(dir.path().join("key.pem"), key).unwrap();
        let log = dir.path().join("log.jsonl");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/alerts/receiver.py");
        let (child, line) = start_script(
            Command::new(python())
                .arg(script)
                .arg(dir.path().join("cert.pem"))
                .arg(dir.path().join("key.pem"))
                .arg(SECRET)
                .arg(&log)
                .arg(mode),
        );
        let port = line.parse().expect("the receiver's port");
        Receiver {
            _child: KillOnDrop(child),
            port,
            log,
            _dir: dir,
        }
    }

    pub fn entries(&self) -> Vec<serde_json::Value> {
        json_lines(&self.log)
    }
}

/// A JSON-lines log a Python receiver wrote (empty until it wrote one).
fn json_lines(log: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Start a receiver script and wait for the first line it prints (its port, or "ready").
fn start_script(cmd: &mut Command) -> (Child, String) {
    let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line.trim().to_string())
}

/// A receiver's process, killed when the test lets go of it.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `tests/alerts/smtp_server.py` (aiosmtpd) on a loopback port: TLS (`starttls` or `implicit`),
/// login `walker` / `s3cret pass` required.
pub struct Smtp {
    _child: KillOnDrop,
    pub port: u16,
    pub log: PathBuf,
}

impl Smtp {
    /// The messages the server took, in order.
    pub fn messages(&self) -> Vec<serde_json::Value> {
        json_lines(&self.log)
    }
}

pub fn smtp(ca: &SandboxCa, dir: &Path, mode: &str) -> Smtp {
    let (chain, key) = ca.leaf_pem(&[]);
    fs::write(dir.join("smtp-cert.pem"), chain).unwrap();
    fs::write(dir.join("smtp-key.pem"), key).unwrap();
    let log = dir.join(format!("smtp-{mode}.jsonl"));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/alerts/smtp_server.py");
    let (child, line) = start_script(
        Command::new(python())
            .arg(script)
            .arg(dir.join("smtp-cert.pem"))
            .arg(dir.join("smtp-key.pem"))
            .arg(&log)
            .arg(mode)
            .args(["walker", "s3cret pass"])
            .arg(port.to_string()),
    );
    assert_eq!(line, "ready");
    Smtp {
        _child: KillOnDrop(child),
        port,
        log,
    }
}
