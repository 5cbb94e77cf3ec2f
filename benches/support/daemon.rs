//! Running the release `conduct-walker run` from a bench and reading its memory.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The binary the benches run: `DAEMON_BENCH_BIN` when set (another build, to interleave runs
/// of two binaries under one harness), else this build's.
pub fn binary() -> std::path::PathBuf {
    std::env::var_os("DAEMON_BENCH_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_conduct-walker").into())
}

/// Start the daemon on `config` (quiet, outside systemd).
pub fn spawn(config: &Path) -> Child {
    Command::new(binary())
        .args(["run", "--config"])
        .arg(config)
        .env_remove("NOTIFY_SOCKET")
        .env_remove("WATCHDOG_USEC")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// A `/proc/PID/status` field in KiB (`VmRSS:`, `VmHWM:`).
pub fn status_kb(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A bench's setting from the environment, or its default.
pub fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `GET path` over plain HTTP (`Connection: close`): how long the whole answer took, or what
/// came back instead of a 200.
pub fn get_timed(addr: std::net::SocketAddr, path: &str) -> Result<std::time::Duration, String> {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    let s = Instant::now();
    let mut c = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| format!("connect: {e}"))?;
    c.set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("write: {e}"))?;
    let mut buf = Vec::new();
    c.read_to_end(&mut buf).map_err(|e| format!("read: {e}"))?;
    if buf.starts_with(b"HTTP/1.1 200") {
        Ok(s.elapsed())
    } else {
        Err(String::from_utf8_lossy(&buf[..buf.len().min(300)]).into_owned())
    }
}
