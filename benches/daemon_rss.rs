//! Daemon memory while 64 walks run at once (issue 6): start 64 sandbox agents in this process,
//! run the real `conduct-walker run` with 64 targets that all fire every second and
//! `concurrency = 64`, and sample the daemon's VmRSS/VmHWM from /proc for a while.
//! `cargo bench --bench daemon_rss` (uses the bench profile's binary).

use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TARGETS: usize = 64;
const SAMPLE_FOR: Duration = Duration::from_secs(20);

fn status_kb(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let ca = SandboxCa::generate();
    let mut agents = Vec::new();
    for _ in 0..TARGETS {
        agents.push(
            SandboxAgent::start(&ca, Behaviour::default())
                .await
                .unwrap(),
        );
    }
    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let listen = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut text = format!(
        "[witness]\nname = \"rss bench\"\nvantage = \"loopback\"\n\n[network]\nextra_ca = [\"ca.pem\"]\n\
         allow_private_network = true\n\n[daemon]\ndatabase = \"walker.db\"\nlisten = \"{listen}\"\n\
         concurrency = {TARGETS}\njitter_secs = 0\n\n"
    );
    for (i, a) in agents.iter().enumerate() {
        text.push_str(&format!(
            "[[target]]\nname = \"t{i}\"\norigin = \"{}\"\nmode = \"a2a\"\nsubmit = false\nschedule = \"* * * * * *\"\n\n",
            a.origin()
        ));
    }
    std::fs::write(dir.path().join("walker.toml"), text).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_conduct-walker"))
        .args(["run", "--config"])
        .arg(dir.path().join("walker.toml"))
        .env_remove("NOTIFY_SOCKET")
        .env_remove("WATCHDOG_USEC")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let started = Instant::now();
    let mut max_rss = 0;
    while started.elapsed() < SAMPLE_FOR {
        tokio::time::sleep(Duration::from_millis(200)).await;
        max_rss = max_rss.max(status_kb(pid, "VmRSS:").unwrap_or(0));
    }
    let hwm = status_kb(pid, "VmHWM:").unwrap_or(0);
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = child.wait();
    let store =
        conduct_walker::store::Store::open_read_only(&dir.path().join("walker.db")).unwrap();
    let records = store.count().unwrap();
    println!("| what | value |");
    println!("|---|---|");
    println!("| targets firing every second, concurrency | {TARGETS} |");
    println!("| sampled for | {} s |", SAMPLE_FOR.as_secs());
    println!("| records stored meanwhile | {records} |");
    println!("| max VmRSS sampled | {:.1} MiB |", max_rss as f64 / 1024.0);
    println!("| VmHWM (peak) | {:.1} MiB |", hwm as f64 / 1024.0);
}
