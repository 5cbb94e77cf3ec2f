//! One key for every face: with `$CREDENTIALS_DIRECTORY` holding the `signing-key` credential
//! and no key in the config or on the command line, `conduct-walker walk`, the daemon
//! (`conduct-walker run`) and the MCP server (`conduct-walker mcp`, over stdio) all sign their
//! records with that key (issue 22: the MCP server used to store them unsigned).

mod daemon_support;

use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use conduct_walker::store::Store;
use daemon_support::{BIN, Daemon, free_port};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The public key (standard base64) the first record of a store was signed with.
fn signed_with(db: &Path) -> Option<String> {
    let store = Store::open_read_only(db).unwrap();
    let record = store.get_by_id(1).unwrap();
    // The signature verifies over the stored bytes with that key, not only names it.
    conduct_walker::store::verify::check_signature(
        &record.canonical,
        record.signature_b64.as_deref()?,
        record.public_key_b64.as_deref()?,
    )
    .expect("the stored signature verifies");
    record.public_key_b64
}

fn config_text(origin: &str, database: &str, target: bool) -> String {
    let host = origin.trim_start_matches("https://");
    let target = if target {
        format!(
            "[[target]]\nname = \"agent\"\norigin = \"{origin}\"\nsubmit = false\nschedule = \"* * * * * *\"\n"
        )
    } else {
        String::new()
    };
    let listen = format!("127.0.0.1:{}", free_port());
    format!(
        "[witness]\nname = \"credential test\"\nvantage = \"loopback\"\n\n\
         [network]\nextra_ca = [\"ca.pem\"]\nallow_private_network = true\nallow_hosts = [\"{host}\"]\n\n\
         [daemon]\ndatabase = \"{database}\"\nlisten = \"{listen}\"\njitter_secs = 0\n\n{target}"
    )
}

/// `conduct-walker mcp` over stdio: initialize, then one `witness_walk`; its answer.
fn mcp_walk(config: &Path, credentials: &Path, origin: &str) -> Value {
    let mut child = Command::new(BIN)
        .args(["mcp", "--config"])
        .arg(config)
        .env("CREDENTIALS_DIRECTORY", credentials)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    let mut answer_to = |id: i64| loop {
        let line = lines.next().expect("the server answers").unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == id {
            return v;
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "credential test", "version": "1"}}}),
    );
    answer_to(1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "witness_walk", "arguments": {"origin": origin, "submit": false}}}),
    );
    let answer = answer_to(2);
    let _ = child.kill();
    let _ = child.wait();
    answer
}

#[tokio::test(flavor = "multi_thread")]
async fn walk_the_daemon_and_the_mcp_server_sign_with_the_credential() {
    use std::os::unix::fs::PermissionsExt;
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let origin = agent.origin();
    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let credentials = dir.path().join("credentials");
    std::fs::create_dir(&credentials).unwrap();
    let key =
        conduct_walker::witness::keys::generate_key_file(&credentials.join("signing-key")).unwrap();
    // As systemd >= 254 hands it over: 0440 in a directory only the service reads.
    std::fs::set_permissions(
        credentials.join("signing-key"),
        std::fs::Permissions::from_mode(0o440),
    )
    .unwrap();
    let expected = conduct_walker::witness::keys::public_key_b64(&key);

    // walk: no --key.
    let walk_db = dir.path().join("walk.db");
    let out = tokio::process::Command::new(BIN)
        .args([
            "walk",
            "--origin",
            &origin,
            "--witness-name",
            "credential test",
            "--vantage",
            "loopback",
            "--mode",
            "a2a",
            "--allow-private-network",
            "--ca-cert",
        ])
        .arg(dir.path().join("ca.pem"))
        .arg("--db")
        .arg(&walk_db)
        .arg("--out")
        .arg(dir.path().join("walk.json"))
        .env("CREDENTIALS_DIRECTORY", &credentials)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        signed_with(&walk_db).as_deref(),
        Some(expected.as_str()),
        "walk"
    );

    // mcp: the config names no key.
    let mcp_config = dir.path().join("mcp.toml");
    std::fs::write(&mcp_config, config_text(&origin, "mcp.db", false)).unwrap();
    let (config, creds, o) = (mcp_config.clone(), credentials.clone(), origin.clone());
    let answer = tokio::task::spawn_blocking(move || mcp_walk(&config, &creds, &o))
        .await
        .unwrap();
    let result = &answer["result"]["structuredContent"];
    assert_eq!(result["stored"]["signed"], true, "{answer:#}");
    assert_eq!(
        signed_with(&dir.path().join("mcp.db")).as_deref(),
        Some(expected.as_str()),
        "mcp"
    );

    // The daemon, on the same kind of config with a target.
    let daemon_dir = tempfile::tempdir().unwrap();
    ca.write_pem(&daemon_dir.path().join("ca.pem")).unwrap();
    let text = config_text(&origin, "walker.db", true);
    std::fs::write(daemon_dir.path().join("walker.toml"), &text).unwrap();
    let listen: std::net::SocketAddr = text
        .lines()
        .find_map(|l| l.strip_prefix("listen = "))
        .unwrap()
        .trim_matches('"')
        .parse()
        .unwrap();
    let child = Command::new(BIN)
        .args(["run", "--config"])
        .arg(daemon_dir.path().join("walker.toml"))
        .env("CREDENTIALS_DIRECTORY", &credentials)
        .env_remove("NOTIFY_SOCKET")
        .env_remove("WATCHDOG_USEC")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut daemon = tokio::task::spawn_blocking(move || Daemon::adopt(child, daemon_dir, listen))
        .await
        .unwrap();
    let daemon = tokio::task::spawn_blocking(move || {
        daemon.wait_for("a stored walk", Duration::from_secs(60), |d| {
            d.walks().iter().any(|w| w.state == "done")
        });
        daemon
    })
    .await
    .unwrap();
    assert_eq!(
        signed_with(&daemon.path("walker.db")).as_deref(),
        Some(expected.as_str()),
        "daemon"
    );
    std::fs::set_permissions(&credentials, std::fs::Permissions::from_mode(0o700)).unwrap();
}
