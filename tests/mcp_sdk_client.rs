//! `conduct-walker mcp` through an independent client: the official Python MCP SDK (mcp 2.3.0,
//! `tests/sdk/requirements.txt`) spawns the binary as a stdio server, lists the tools and calls
//! `witness_walk` against a sandbox agent, filing with the intake emulator; the answer's
//! structuredContent must validate against the declared outputSchema (`jsonschema`). The SDK
//! reading every line of stdout as a protocol message also checks nothing else is written there.

mod sdk_support;

use conduct_walker::intake_emulator::{Emulator, EmulatorConfig};
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use conduct_walker::store::Store;
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_lists_tools_walks_and_validates_the_output_schema() {
    let python = tokio::task::spawn_blocking(sdk_support::python)
        .await
        .unwrap();
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let emulator_transport = Transport::new(TransportConfig::new(NetPolicy::new(false))).unwrap();
    let emulator = Emulator::start(
        EmulatorConfig::new(dir.path().join("intake.db"), emulator_transport),
        &ca,
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let origin = agent.origin();
    let config = dir.path().join("walker.toml");
    std::fs::write(
        &config,
        format!(
            "[witness]\nname = \"python sdk witness\"\nvantage = \"loopback\"\nintake = \"{}\"\n\n\
             [network]\nextra_ca = [\"ca.pem\"]\nallow_private_network = true\nallow_hosts = [{:?}]\n\n\
             [daemon]\ndatabase = \"walker.db\"\n",
            emulator.url(),
            origin.trim_start_matches("https://"),
        ),
    )
    .unwrap();

    let out = tokio::process::Command::new(python)
        .arg(sdk_support::sdk_dir().join("mcp_stdio_client.py"))
        .arg("--binary")
        .arg(env!("CARGO_BIN_EXE_conduct-walker"))
        .arg("--config")
        .arg(&config)
        .args(["--origin", &origin])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the Python client failed:\n{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(v["server_name"], "conduct-walker");
    assert_eq!(v["server_version"], env!("CARGO_PKG_VERSION"));
    assert!(v["instructions"].as_str().unwrap().contains("never pays"));
    assert_eq!(
        v["tools"],
        serde_json::json!([
            "canonical_form",
            "card_verify",
            "inspect_document",
            "records_list",
            "records_show",
            "records_verify",
            "ring_verify",
            "terms_verify",
            "witness_walk"
        ])
    );
    let s = &v["first"]["structured"];
    assert_eq!(s["verdict"]["outcome"], "PASS", "{s:#}");
    assert_eq!(s["submission"]["answer"], "filed_counted", "{s:#}");
    let sha = s["sha256"].as_str().unwrap();
    assert!(
        v["first"]["summary"]
            .as_str()
            .unwrap()
            .starts_with("PASS 7/7")
    );
    assert!(emulator.stored(sha).is_some(), "filed with the emulator");
    let store = Store::open_read_only(&dir.path().join("walker.db")).unwrap();
    assert_eq!(store.get_by_prefix(sha).unwrap().row.sha256, sha);
}

/// The same SDK over Streamable HTTP against `mcp --listen` with a bearer token: every
/// outputSchema is valid JSON Schema, the answers validate against them, and closing the
/// session (a DELETE) logs no warning ("Session termination failed: 202" before issue 25).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_over_http_with_the_token_walks_and_ends_its_session_cleanly() {
    use tokio::io::AsyncBufReadExt as _;
    let python = tokio::task::spawn_blocking(sdk_support::python)
        .await
        .unwrap();
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let origin = agent.origin();
    let config = dir.path().join("walker.toml");
    std::fs::write(
        &config,
        format!(
            "[witness]\nname = \"python sdk witness\"\nvantage = \"loopback\"\n\n\
             [network]\nextra_ca = [\"ca.pem\"]\nallow_private_network = true\nallow_hosts = [{:?}]\n\n\
             [daemon]\ndatabase = \"walker.db\"\n",
            origin.trim_start_matches("https://"),
        ),
    )
    .unwrap();
    let token = dir.path().join("mcp-token");
    std::fs::write(&token, format!("{}\n", "t0k3n".repeat(8))).unwrap();
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_conduct-walker"))
        .args(["mcp", "--config"])
        .arg(&config)
        .args(["--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token)
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(server.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("the server listens");
        if let Some(rest) = line.split("Streamable HTTP on ").nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    let out = tokio::process::Command::new(python)
        .arg(sdk_support::sdk_dir().join("mcp_http_client.py"))
        .args(["--url", &url, "--origin", &origin, "--token-file"])
        .arg(&token)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the Python client failed:\n{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(v["warnings"], serde_json::json!([]), "{stderr}");
    assert_eq!(
        v["tools"].as_array().unwrap().len(),
        9,
        "the six walker tools, ring_verify, inspect_document and canonical_form"
    );
    let walk = &v["answers"]["legacy witness_walk"];
    assert_eq!(walk["structured"]["verdict"]["outcome"], "PASS");
    assert_eq!(
        walk["structured"]["walks_today"]["counted_as"],
        "store_only"
    );
    assert!(walk["text"].as_str().unwrap().len() < 4096);
    for mode in ["legacy", "auto"] {
        assert_eq!(
            v["answers"][format!("{mode} records_list")]["structured"]["matched"],
            1,
            "{v:#}"
        );
    }
}
