//! Running the release `conduct-walker run` from a bench and reading its memory.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Start the daemon on `config` (quiet, outside systemd).
pub fn spawn(config: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_conduct-walker"))
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
