//! Tool-call latency of `witness_walk` (issue 15): an rmcp client calls the MCP server over an
//! in-memory transport; each call walks a loopback sandbox agent over HTTPS, signs, stores
//! (fsync) and files with the intake emulator. Prints the median of 20 and every call's time.
//! `cargo bench --bench mcp_latency` (or `--profile dev` to reuse the test build).

use conduct_walker::intake_emulator::{Emulator, EmulatorConfig};
use conduct_walker::mcp::{Options, WitnessServer};
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use std::time::Instant;

const RUNS: usize = 20;

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let ca = SandboxCa::generate();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let mut emulator_config = EmulatorConfig::new(
        dir.path().join("intake.db"),
        Transport::new(TransportConfig::new(NetPolicy::new(false))).unwrap(),
    );
    // Every walk is filed and counted against lanes wide enough for the run.
    emulator_config.limits.daily_per_ip = 1_000_000;
    emulator_config.limits.daily_global = 1_000_000;
    let emulator = Emulator::start(emulator_config, &ca, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    conduct_walker::witness::keys::generate_key_file(&dir.path().join("witness.pem")).unwrap();
    let path = dir.path().join("walker.toml");
    std::fs::write(
        &path,
        format!(
            "[witness]\nname = \"bench\"\nvantage = \"loopback\"\nkey = \"witness.pem\"\n\
             intake = \"{}\"\nfile_extra_walks = true\n\n\
             [network]\nextra_ca = [\"ca.pem\"]\nallow_private_network = true\nallow_hosts = [{:?}]\n\n\
             [daemon]\ndatabase = \"walker.db\"\n\n[mcp]\ndaily_walk_cap = 1000\n",
            emulator.url(),
            agent.origin().trim_start_matches("https://")
        ),
    )
    .unwrap();
    let config = conduct_walker::config::load(&path).unwrap();
    let server = WitnessServer::new(Options::new(config)).unwrap();
    let (server_side, client_side) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let running = server.serve(server_side).await.unwrap();
        let _ = running.waiting().await;
    });
    let client = ().serve(client_side).await.unwrap();
    let arguments = match json!({"origin": agent.origin(), "mode": "a2a"}) {
        serde_json::Value::Object(m) => m,
        _ => unreachable!(),
    };
    let mut ms = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        let r = client
            .call_tool(CallToolRequestParams::new("witness_walk").with_arguments(arguments.clone()))
            .await
            .unwrap();
        ms.push(started.elapsed().as_secs_f64() * 1000.0);
        let s = r.structured_content.expect("structured");
        assert_eq!(s["verdict"]["outcome"], "PASS");
        // The intake counts the first walk of an endpoint per day; the rest are filed uncounted.
        let answer = s["submission"]["answer"].as_str().unwrap_or_default();
        assert!(answer.starts_with("filed_"), "{s}");
    }
    let mut sorted = ms.clone();
    sorted.sort_by(f64::total_cmp);
    let median = (sorted[RUNS / 2 - 1] + sorted[RUNS / 2]) / 2.0;
    println!(
        "witness_walk tool-call latency over {RUNS} calls (walk + sign + store + file, loopback): median {median:.1} ms, min {:.1} ms, max {:.1} ms",
        sorted[0],
        sorted[RUNS - 1]
    );
    println!(
        "each: {}",
        ms.iter()
            .map(|m| format!("{m:.1}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
}
