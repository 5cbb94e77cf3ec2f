//! Running the real `conduct-walker run` binary on a temp config, and reading what it did.
#![allow(dead_code)]

use conduct_walker::daemon::db;
use conduct_walker::intake_emulator::{Emulator, EmulatorConfig, Limits, RunningEmulator};
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use conduct_walker::store::Store;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

/// A free loopback port (bound and released: the daemon binds it right after).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One `[[target]]` block.
pub fn target(name: &str, origin: &str, extra: &str, schedule: &str) -> String {
    format!(
        "[[target]]\nname = \"{name}\"\norigin = \"{origin}\"\nsubmit = false\nschedule = \"{schedule}\"\n{extra}\n"
    )
}

/// A config with the sandbox CA, private networks admitted at the named hosts, no jitter.
pub fn config(listen: SocketAddr, grace_secs: u64, targets: &str) -> String {
    format!(
        r#"[witness]
name = "daemon test"
vantage = "loopback"

[network]
extra_ca = ["ca.pem"]
allow_private_network = true
request_deadline_secs = 10

[daemon]
database = "walker.db"
listen = "{listen}"
concurrency = 4
jitter_secs = 0
drain_interval_secs = 1
shutdown_grace_secs = {grace_secs}

{targets}"#
    )
}

pub struct Daemon {
    pub child: Child,
    pub dir: tempfile::TempDir,
    pub listen: SocketAddr,
    status: Option<ExitStatus>,
}

impl Daemon {
    /// Write `ca.pem` and `walker.toml` and start the daemon; returns once `/healthz` answers.
    pub fn start(ca: &SandboxCa, listen: SocketAddr, config_text: &str) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        ca.write_pem(&dir.path().join("ca.pem")).unwrap();
        std::fs::write(dir.path().join("walker.toml"), config_text).unwrap();
        Daemon::start_in(dir, listen)
    }

    /// Run the daemon on `dir`'s `walker.toml` (written, with whatever it names, by the
    /// caller), its log appended to `daemon.log`; returns once `/healthz` answers.
    pub fn start_in(dir: tempfile::TempDir, listen: SocketAddr) -> Daemon {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("daemon.log"))
            .unwrap();
        let child = Command::new(BIN)
            .args(["run", "--config"])
            .arg(dir.path().join("walker.toml"))
            .env_remove("CREDENTIALS_DIRECTORY")
            .env_remove("NOTIFY_SOCKET")
            .env_remove("WATCHDOG_USEC")
            .env_remove("JOURNAL_STREAM")
            .env("CONDUCT_WALKER_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        Daemon::adopt(child, dir, listen)
    }

    /// Start the daemon again on this one's directory (config, store, secrets; the log goes
    /// on), after it stopped or was killed (a daemon still running is killed first).
    pub fn restart(mut self) -> Daemon {
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
        let listen = self.listen;
        drop(self);
        Daemon::start_in(dir, listen)
    }

    /// Wrap a daemon started by hand on `dir` (a restart); returns once `/healthz` answers.
    pub fn adopt(child: Child, dir: tempfile::TempDir, listen: SocketAddr) -> Daemon {
        let mut d = Daemon {
            child,
            dir,
            listen,
            status: None,
        };
        d.wait_for("the listener to answer", Duration::from_secs(30), |d| {
            d.get("/healthz").map(|(s, _)| s == 200).unwrap_or(false)
        });
        d
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.path("daemon.log")).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then a clean stop: exit 0 within 60 s (the log in the message otherwise).
    pub fn stop(&mut self) {
        self.signal("TERM");
        let status = self.wait_exit(Duration::from_secs(60));
        assert!(status.success(), "{status}; {}", self.log());
    }

    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{sig} failed");
    }

    /// Poll `cond` until it holds; panics with the daemon's log after `timeout`.
    pub fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        mut cond: impl FnMut(&mut Daemon) -> bool,
    ) {
        let deadline = Instant::now() + timeout;
        loop {
            if cond(self) {
                return;
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "daemon exited ({status}) while waiting for {what}; log:\n{}",
                    self.log()
                );
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; log:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Wait for the process to exit (bounded).
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        if let Some(s) = self.status {
            return s;
        }
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                self.status = Some(status);
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "the daemon did not exit within {timeout:?}; log:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Plain HTTP/1.1 GET on the listener: (status, body).
    pub fn get(&self, path: &str) -> Option<(u16, Vec<u8>)> {
        http_get(self.listen, path)
    }

    pub fn get_text(&self, path: &str) -> String {
        let (status, body) = self.get(path).expect("listener answers");
        assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
        String::from_utf8(body).unwrap()
    }

    pub fn store(&self) -> Option<Store> {
        Store::open_read_only(&self.path("walker.db")).ok()
    }

    pub fn record_count(&self) -> u64 {
        self.store().map(|s| s.count().unwrap()).unwrap_or(0)
    }

    pub fn walks(&self) -> Vec<db::WalkRow> {
        self.store()
            .map(|s| db::walks(s.connection()).unwrap())
            .unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.status.is_none() && self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let split = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buf[..split]).to_string();
    let status: u16 = head.split_whitespace().nth(1)?.parse().ok()?;
    let mut body = buf[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    Some((status, body))
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = b.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + size]);
        b = &b[eol + 2 + size + 2..];
    }
    out
}

/// `name{labels} value` lines of a metric, as (labels text, value).
pub fn metric(text: &str, name: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let (labels, value) = if let Some(r) = rest.strip_prefix('{') {
                let end = r.rfind('}')?;
                (r[..end].to_string(), r[end + 1..].trim())
            } else if rest.starts_with(' ') {
                (String::new(), rest.trim())
            } else {
                return None;
            };
            Some((labels, value.parse().ok()?))
        })
        .collect()
}

pub fn path_exists(p: &Path) -> bool {
    p.exists()
}

// Sandbox agents and the intake emulator for daemon tests that file.

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

pub fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// The intake emulator at `addr`, its state in `state`; `daily_per_ip` raises the address lane.
pub fn start_intake(
    rt: &tokio::runtime::Runtime,
    ca: &SandboxCa,
    state: &Path,
    addr: SocketAddr,
    daily_per_ip: Option<u64>,
) -> RunningEmulator {
    let mut cfg = EmulatorConfig::new(
        state.join("intake.db"),
        Transport::new(TransportConfig::new(NetPolicy::new(false))).unwrap(),
    );
    if let Some(n) = daily_per_ip {
        cfg.limits = Limits {
            daily_per_ip: n,
            ..Limits::default()
        };
    }
    rt.block_on(Emulator::start(cfg, ca, addr)).unwrap()
}

/// `n` honest agents and their `[[target]]`s (`agent0`, `agent1`, ...), walked every second
/// and filed.
pub fn submitting_agents(
    rt: &tokio::runtime::Runtime,
    ca: &SandboxCa,
    n: usize,
) -> (Vec<SandboxAgent>, String) {
    let agents: Vec<SandboxAgent> = (0..n)
        .map(|_| {
            rt.block_on(SandboxAgent::start(ca, Behaviour::default()))
                .unwrap()
        })
        .collect();
    let targets = agents
        .iter()
        .enumerate()
        .map(|(i, a)| {
            target(&format!("agent{i}"), &a.origin(), "", "* * * * * *")
                .replace("submit = false", "submit = true")
        })
        .collect();
    (agents, targets)
}
