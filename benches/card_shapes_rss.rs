//! Peak RSS of one-shot `conduct-walker walk` processes against honest agents whose cards have
//! the shapes issue 21 names, each just under the 1 MiB body cap (target: <= 48 MiB for every
//! shape). Each walk is a separate process; its peak RSS is `ru_maxrss` from `wait4`.
//! `cargo bench --bench card_shapes_rss` (the bench profile's binary); BENCHMARKS.md has the table.

#[path = "../tests/support/card_shapes.rs"]
mod card_shapes;
#[path = "support/rss.rs"]
mod rss;

use conduct_walker::sandbox::{Behaviour, CardBytes, SandboxAgent, SandboxCa};
use serde_json::{Value, json};

fn shapes() -> Vec<(&'static str, Option<Value>)> {
    let mut all = vec![("ordinary small card", None)];
    all.extend(
        card_shapes::shapes()
            .into_iter()
            .map(|(what, v)| (what, Some(v))),
    );
    all
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
            rss::run_measured(&args)
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
