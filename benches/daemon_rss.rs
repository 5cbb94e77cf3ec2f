//! Daemon memory while 64 walks run at once (issue 6): start 64 sandbox agents in this process,
//! run the real `conduct-walker run` with 64 targets that all fire every second and
//! `concurrency = 64`, and sample the daemon's VmRSS/VmHWM from /proc for a while.
//! `cargo bench --bench daemon_rss` (uses the bench profile's binary).
//! `DAEMON_RSS_CARD=chains` (or `keys`, `numbers`): every agent's card carries about 1 MB of that
//! shape (issue 21: 64 walks of such cards at once stay within 512 MiB).

#[path = "../tests/support/card_shapes.rs"]
mod card_shapes;
#[path = "support/daemon.rs"]
mod daemon;
use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use daemon::status_kb;
use std::process::Command;
use std::time::{Duration, Instant};

const TARGETS: usize = 64;
const SAMPLE_FOR: Duration = Duration::from_secs(20);

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let ca = SandboxCa::generate();
    let shape = std::env::var("DAEMON_RSS_CARD").unwrap_or_default();
    let bulk = match shape.as_str() {
        "" => None,
        "chains" => Some(card_shapes::chains(1_600, 100)),
        "keys" => Some(card_shapes::many_keys(110_000)),
        "numbers" => Some(serde_json::Value::Array(vec![
            serde_json::json!(0);
            450_000
        ])),
        other => panic!("DAEMON_RSS_CARD={other}: chains, keys or numbers"),
    };
    let behaviour = Behaviour {
        card_bytes: if bulk.is_some() {
            conduct_walker::sandbox::CardBytes::Compact
        } else {
            Default::default()
        },
        card_extra: bulk.map(|b| serde_json::json!({ "x-bulk": b })),
        ..Behaviour::default()
    };
    let mut agents = Vec::new();
    for _ in 0..TARGETS {
        agents.push(SandboxAgent::start(&ca, behaviour.clone()).await.unwrap());
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
    let mut child = daemon::spawn(&dir.path().join("walker.toml"));
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
    println!(
        "| card | {} |",
        if shape.is_empty() { "ordinary" } else { &shape }
    );
    println!("| sampled for | {} s |", SAMPLE_FOR.as_secs());
    println!("| records stored meanwhile | {records} |");
    println!("| max VmRSS sampled | {:.1} MiB |", max_rss as f64 / 1024.0);
    println!("| VmHWM (peak) | {:.1} MiB |", hwm as f64 / 1024.0);
}
