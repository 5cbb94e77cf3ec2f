//! Support for the SDK interop tests (`tests/sdk_interop.rs`): a Python virtualenv with the
//! official SDKs pinned in `tests/sdk/requirements.txt`, the servers in `tests/sdk/` started
//! over HTTPS with a throw-away CA, and their wire-level access logs.
//!
//! - [`python`]: provisions `target/sdk-venv` once (first use, or when the requirements file
//!   changed; an exclusive `flock` serialises test processes that race for it) and returns the
//!   venv's interpreter. Needs `python3` and PyPI reachable through pip the first time.
//! - [`Tls`]: a [`SandboxCa`] and a leaf for `localhost`, `127.0.0.1`, `::1`, written as PEM.
//! - [`SdkServer`]: one server process (`READY <port>` on stdout), killed and reaped on drop.
//!   The process also exits by itself when this process goes away (`--watch-stdin`: its
//!   standard input is a pipe held here).
//! - [`LogEntry`] and [`expected_headers_sha256`]: what the server wrote on the wire, and the
//!   §2.7 hash of a logged response header block as the walker keeps it (§2.2).
#![allow(dead_code)]

#[path = "../provision_support/mod.rs"]
mod provision_support;

use conduct_walker::sandbox::SandboxCa;
use serde::Deserialize;
use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::Duration;

/// How long a server may take to print `READY <port>`.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/sdk/`: the Python servers and their requirements.
pub fn sdk_dir() -> PathBuf {
    manifest_dir().join("tests").join("sdk")
}

/// The venv's Python, provisioning `target/sdk-venv` first if needed (once per process).
pub fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        provision_support::python_venv(
            "sdk-venv",
            &sdk_dir().join("requirements.txt"),
            &["--only-binary=:all:"],
        )
    })
}

/// A throw-away CA and a leaf for the Python servers, written as PEM into a temp dir.
pub struct Tls {
    pub ca: SandboxCa,
    pub chain: PathBuf,
    pub key: PathBuf,
    dir: tempfile::TempDir,
}

impl Tls {
    pub fn new() -> Self {
        let ca = SandboxCa::generate();
        let (chain_pem, key_pem) = ca.leaf_pem(&[]);
        let dir = tempfile::tempdir().expect("temp dir");
        let chain = dir.path().join("chain.pem");
        let key = dir.path().join("key.pem");
        fs::write(&chain, chain_pem).expect("write chain");
        fs::write(&key, key_pem).expect("write key");
        Tls {
            ca,
            chain,
            key,
            dir,
        }
    }
}

impl Default for Tls {
    fn default() -> Self {
        Self::new()
    }
}

/// One SDK server process on `127.0.0.1:<port>`, HTTPS, with its access log.
pub struct SdkServer {
    child: Child,
    pub port: u16,
    /// `https://127.0.0.1:<port>`
    pub origin: String,
    log: PathBuf,
    stderr: PathBuf,
    dir: tempfile::TempDir,
}

impl SdkServer {
    /// Start `tests/sdk/<script>` with `args` and wait for `READY <port>`.
    pub fn start(tls: &Tls, script: &str, args: &[&str]) -> SdkServer {
        let python = python();
        let dir = tempfile::tempdir().expect("temp dir");
        let log = dir.path().join("access.jsonl");
        let stderr = dir.path().join("stderr.txt");
        let mut child = Command::new(python)
            .arg(sdk_dir().join(script))
            .arg("--cert")
            .arg(&tls.chain)
            .arg("--key")
            .arg(&tls.key)
            .arg("--access-log")
            .arg(&log)
            .arg("--watch-stdin")
            .args(args)
            .env("PYTHONUNBUFFERED", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(File::create(&stderr).expect("stderr file"))
            .spawn()
            .unwrap_or_else(|e| panic!("start {script}: {e}"));

        // Read `READY <port>` on a thread so a silent server cannot hang the test; the thread
        // then keeps draining stdout until the process ends.
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let first = lines.next();
            let _ = tx.send(first.map(|l| l.ok()).unwrap_or(None));
            for _ in lines {}
        });
        let line = rx.recv_timeout(READY_TIMEOUT).ok().flatten();
        let port = line
            .as_deref()
            .and_then(|l| l.strip_prefix("READY "))
            .and_then(|p| p.trim().parse::<u16>().ok());
        let Some(port) = port else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{script} {args:?} did not print READY <port> within {READY_TIMEOUT:?} (got {line:?}); stderr:\n{}",
                fs::read_to_string(&stderr).unwrap_or_default()
            );
        };
        SdkServer {
            child,
            port,
            origin: format!("https://127.0.0.1:{port}"),
            log,
            stderr,
            dir,
        }
    }

    /// Every access-log line written so far, in the order the responses were written.
    pub fn access_log(&self) -> Vec<LogEntry> {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("access log line {l:?} is not an entry: {e}"))
            })
            .collect()
    }

    /// What the server wrote on stderr so far (warnings, tracebacks).
    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for SdkServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One access-log line: a request as received and its response head as written on the wire.
#[derive(Debug, Clone, Deserialize)]
pub struct LogEntry {
    /// Connection number (per server process) and the response's index on it.
    pub conn: u64,
    pub seq: u64,
    pub method: Option<String>,
    pub path: Option<String>,
    /// Lower-case names, in the order received.
    #[serde(default)]
    pub request_headers: Vec<(String, String)>,
    pub status: u16,
    /// Names as written, in the order written.
    pub response_headers: Vec<(String, String)>,
}

impl LogEntry {
    /// The last value of a request header (name compared case-insensitively).
    pub fn request_header(&self, name: &str) -> Option<&str> {
        last_value(&self.request_headers, name)
    }

    /// The last value of a response header (name compared case-insensitively).
    pub fn response_header(&self, name: &str) -> Option<&str> {
        last_value(&self.response_headers, name)
    }

    pub fn is(&self, method: &str, path: &str) -> bool {
        self.method.as_deref() == Some(method) && self.path.as_deref() == Some(path)
    }
}

fn last_value<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .rev()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// A header block as the walker keeps it (§2.2): lower-case names in arrival order, a repeated
/// name keeping its first position and its last value (Python's `dict` over the header list).
pub fn walker_header_map(pairs: &[(String, String)]) -> Vec<(String, String)> {
    let mut map: Vec<(String, String)> = Vec::new();
    for (name, value) in pairs {
        let name = name.to_ascii_lowercase();
        match map.iter_mut().find(|(k, _)| *k == name) {
            Some(entry) => entry.1 = value.clone(),
            None => map.push((name, value.clone())),
        }
    }
    map
}

/// The §2.7 `headers_sha256` the walker should record for a logged response header block.
pub fn expected_headers_sha256(pairs: &[(String, String)]) -> String {
    let map = walker_header_map(pairs);
    conduct_walker::digest::headers_sha256(map.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}
