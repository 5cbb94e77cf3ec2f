//! The Python side of the alert tests: `target/alerts-venv` (PyPI: the official
//! `standardwebhooks` library and `aiosmtpd`), provisioned on first use, and the receivers.
#![allow(dead_code)]

#[path = "../provision_support/mod.rs"]
mod provision_support;

use conduct_walker::sandbox::SandboxCa;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// The venv's Python, provisioning `target/alerts-venv` on first use.
pub fn python() -> &'static Path {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let req = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/alerts/requirements.txt");
        provision_support::python_venv("alerts-venv", &req, &[])
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
