//! What `walk` prints says what was observed: an assertion that did not pass shows its claim as
//! expected, not as seen, with what its nodes saw (status, or the transport error beside it).

use conduct_walker::sandbox::{SandboxAgent, SandboxCa, scenario};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

fn walk(origin: &str, mode: &str, ca: Option<&std::path::Path>) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["walk", "--origin", origin, "--mode", mode])
        .args([
            "--witness-name",
            "w",
            "--vantage",
            "v",
            "--allow-private-network",
        ])
        .arg("--out")
        .arg(dir.path().join("w.json"));
    if let Some(ca) = ca {
        cmd.arg("--ca-cert").arg(ca);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The line after the one for `assertion`.
fn assertion_lines<'a>(text: &'a str, assertion: &str) -> (&'a str, &'a str) {
    let lines: Vec<&str> = text.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.contains(&format!(" {assertion}: ")))
        .unwrap_or_else(|| panic!("no line for {assertion}:\n{text}"));
    (lines[i], lines.get(i + 1).copied().unwrap_or(""))
}

#[test]
fn a_402_is_printed_as_observed_not_as_the_claimed_200() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ca = SandboxCa::generate();
    let sc = scenario("paid-x402").unwrap();
    let agent = rt.block_on(SandboxAgent::start(&ca, sc.behaviour)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca_path = dir.path().join("ca.pem");
    ca.write_pem(&ca_path).unwrap();
    let (_, text) = walk(&agent.origin(), sc.mode.as_str(), Some(&ca_path));
    let (line, next) = assertion_lines(&text, "measured_endpoint_answered");
    assert!(
        line.starts_with("  n/a   expected measured_endpoint_answered: POST"),
        "{text}"
    );
    assert!(
        next.trim_start().starts_with("observed: ") && next.contains(": http 402"),
        "{text}"
    );
    // A pass is the claim, observed.
    let (line, _) = assertion_lines(&text, "card_bytes_stable");
    assert!(line.starts_with("  pass  card_bytes_stable"), "{text}");
}

#[test]
fn an_unreachable_agent_shows_the_transport_error_beside_each_failed_assertion() {
    // A port nothing listens on (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (code, text) = walk(&format!("https://127.0.0.1:{port}"), "a2a", None);
    assert_eq!(code, Some(1), "{text}");
    let (line, next) = assertion_lines(&text, "card_bytes_stable");
    assert!(
        line.starts_with("  FAIL  expected card_bytes_stable"),
        "{text}"
    );
    assert!(
        next.contains("n0 GET")
            && next.contains("no answer, transport error:")
            && next.contains("onnection refused"),
        "{text}"
    );
    // Nothing was POSTed: the line must not read as if a POST had returned 200.
    let (line, next) = assertion_lines(&text, "measured_endpoint_answered");
    assert!(
        line.contains("expected measured_endpoint_answered: POST (no target)"),
        "{text}"
    );
    assert!(next.contains("was not sent"), "{text}");
    assert!(
        !text.lines().any(|l| l
            .trim_start()
            .starts_with("FAIL  measured_endpoint_answered")),
        "{text}"
    );
}
