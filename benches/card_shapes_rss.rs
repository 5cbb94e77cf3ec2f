//! Peak RSS of one-shot `conduct-walker walk` processes against honest agents whose cards have
//! the shapes issue 21 names, each just under the 1 MiB body cap (target: <= 48 MiB for every
//! shape). Each walk is a separate process; its peak RSS is `ru_maxrss` from `wait4`.
//! `cargo bench --bench card_shapes_rss` (the bench profile's binary); BENCHMARKS.md has the table.

#[path = "../tests/support/card_shapes.rs"]
mod card_shapes;

use conduct_walker::sandbox::{Behaviour, CardBytes, SandboxAgent, SandboxCa};
use serde_json::{Value, json};
use std::process::{Command, Stdio};

fn shapes() -> Vec<(&'static str, Option<Value>)> {
    let mut all = vec![("ordinary small card", None)];
    all.extend(
        card_shapes::shapes()
            .into_iter()
            .map(|(what, v)| (what, Some(v))),
    );
    all
}

/// Run the walker with `args` and return (exit code, peak RSS in KiB, stdout's first line).
///
/// The walker is started by a small `python3` that reports its child's `ru_maxrss`: Linux keeps
/// the high-water mark a process had before `exec`, so a walker forked straight from this bench
/// (which holds the cards as `Value`s, hundreds of MiB) would report the bench's size, not its
/// own. Forked from python3 (about 10 MiB), the figure is the walker's.
fn run_measured(args: &[std::ffi::OsString]) -> (i32, i64, String) {
    const LAUNCHER: &str = "import resource, subprocess, sys\n\
r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n\
first = (r.stdout.decode('utf-8', 'replace').splitlines() or [''])[0]\n\
print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, first)\n";
    let out = Command::new("python3")
        .args(["-c", LAUNCHER])
        .arg(env!("CARGO_BIN_EXE_conduct-walker"))
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut parts = text.trim_end().splitn(3, ' ');
    let code = parts.next().unwrap_or("-1").parse().unwrap_or(-1);
    let rss = parts.next().unwrap_or("0").parse().unwrap_or(0);
    (code, rss, parts.next().unwrap_or_default().to_string())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    let ca_path = dir.path().join("ca.pem");
    ca.write_pem(&ca_path).unwrap();
    println!("| card shape | card bytes | peak RSS (MiB) | walk |");
    println!("|---|---|---|---|");
    let mut worst = 0i64;
    for (what, bulk) in shapes() {
        let behaviour = Behaviour {
            card_extra: bulk.map(|b| json!({ "x-bulk": b })),
            card_bytes: CardBytes::Compact,
            ..Behaviour::default()
        };
        let card_bytes = serde_json::to_vec(&behaviour.card("https://127.0.0.1:1"))
            .unwrap()
            .len();
        let agent = SandboxAgent::start(&ca, behaviour).await.unwrap();
        let out = dir.path().join("walk.json");
        let origin = agent.origin();
        let ca_path = ca_path.clone();
        let (code, rss_kib, first) = tokio::task::spawn_blocking(move || {
            let args: Vec<std::ffi::OsString> = [
                "walk",
                "--origin",
                &origin,
                "--mode",
                "a2a",
                "--witness-name",
                "rss bench",
                "--vantage",
                "loopback",
                "--allow-private-network",
                "--ca-cert",
            ]
            .iter()
            .map(Into::into)
            .chain([
                ca_path.into_os_string(),
                "--out".into(),
                out.into_os_string(),
            ])
            .collect();
            run_measured(&args)
        })
        .await
        .unwrap();
        worst = worst.max(rss_kib);
        println!(
            "| {what} | {card_bytes} | {:.1} | exit {code}: {} |",
            rss_kib as f64 / 1024.0,
            first.chars().take(24).collect::<String>()
        );
    }
    println!(
        "\nworst peak RSS {:.1} MiB (target 48 MiB)",
        worst as f64 / 1024.0
    );
    drop(dir);
}
