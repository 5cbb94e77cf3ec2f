//! `conduct-walker intake-emulator` as a process: it prints its URL, writes its CA for a
//! walker's `--ca-cert`, answers over HTTPS, and refuses a non-loopback listen address.

use conduct_walker::net::{HttpRequest, NetPolicy, Transport, TransportConfig, load_pem_certs};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

/// Kills the child it holds when the test ends, pass or fail.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn serves_https_with_the_written_ca() {
    let dir = tempfile::TempDir::new().unwrap();
    let ca_path = dir.path().join("ca.pem");
    let state = dir.path().join("state.sqlite");
    let mut child = Child(
        Command::new(BIN)
            .args(["intake-emulator", "--listen", "127.0.0.1:0", "--tls-ca-out"])
            .arg(&ca_path)
            .arg("--state")
            .arg(&state)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut first = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first
        .trim()
        .strip_prefix("intake emulator: ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();
    assert!(
        url.starts_with("https://127.0.0.1:") && url.ends_with("/witness"),
        "{url}"
    );

    let mut policy = NetPolicy::new(true);
    policy.allow_url(&url);
    let mut config = TransportConfig::new(policy);
    config.extra_roots = load_pem_certs(&ca_path).unwrap();
    let transport = Transport::new(config).unwrap();
    let ex = transport.fetch(&HttpRequest::get(url.clone(), &[])).await;
    assert_eq!(ex.status, 200, "{:?}", ex.transport_error);
    let description: serde_json::Value = serde_json::from_slice(&ex.body).unwrap();
    assert_eq!(description["limits_stated_not_hidden"]["daily_per_ip"], 5);
    assert_eq!(description["pool"], format!("{url}/pending"));
    assert!(state.exists(), "the state file is created at start");
}

#[test]
fn refuses_a_non_loopback_listen_address() {
    let out = Command::new(BIN)
        .args(["intake-emulator", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a loopback address"), "{stderr}");
}
