//! `conduct-walker sandbox`: the demo's agents kept running for an operator to try `walk` and
//! the daemon against, with the origins printed and a config that `config check` accepts.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

#[test]
fn sandbox_prints_origins_and_a_config_the_daemon_and_walk_accept() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["sandbox", "--out-dir"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = String::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    for line in lines.by_ref() {
        let line = line.unwrap();
        printed.push_str(&line);
        printed.push('\n');
        if line.starts_with("Serving until") || Instant::now() > deadline {
            break;
        }
    }
    assert!(printed.contains("Serving until"), "{printed}");
    // Every demo agent with its origin and what a walk of it should give.
    let honest = printed
        .lines()
        .find(|l| l.trim_start().starts_with("honest-a2a "))
        .unwrap_or_else(|| panic!("{printed}"));
    let origin = honest
        .split_whitespace()
        .find(|w| w.starts_with("https://127.0.0.1:"))
        .unwrap()
        .to_string();
    assert!(honest.contains("expect PASS"), "{honest}");
    assert!(printed.contains("paid-undeclared") && printed.contains("expect FAIL"));
    // The snippet for an existing config is printed too.
    assert!(printed.contains("[[target]]") && printed.contains("allow_private_network = true"));

    let config = dir.path().canonicalize().unwrap().join("walker.toml");
    let ca = dir.path().canonicalize().unwrap().join("ca.pem");
    assert!(printed.contains(&format!("conduct-walker run --config {}", config.display())));
    let check = Command::new(BIN)
        .args(["config", "check"])
        .arg(&config)
        .env_remove("CREDENTIALS_DIRECTORY")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "{text}");
    // The demo's ten agents, and the one whose conduct changes on a schedule.
    assert!(text.contains("targets: 11"), "{text}");
    let changing = printed
        .lines()
        .find(|l| l.trim_start().starts_with("changes-conduct "))
        .unwrap_or_else(|| panic!("{printed}"));
    assert!(
        changing.contains("expect PASS for 300 s, then FAIL as long"),
        "{changing}"
    );
    assert!(text.contains(&format!("  honest-a2a: {origin}")), "{text}");

    // The printed walk command works as printed (an a2a agent: --mode a2a).
    let walk = Command::new(BIN)
        .args(["walk", "--origin", &origin, "--mode", "a2a"])
        .args(["--witness-name", "me", "--vantage", "here", "--ca-cert"])
        .arg(&ca)
        .arg("--allow-private-network")
        .arg("--out")
        .arg(dir.path().join("w.json"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&walk.stdout);
    assert_eq!(
        walk.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&walk.stderr)
    );
    assert!(text.starts_with("PASS"), "{text}");

    // SIGTERM ends it cleanly.
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

/// `sandbox --drop-answers`: the demo's intake loses that share of its answers (issue 34), and
/// says so with where the POSTs are counted.
#[test]
fn sandbox_drop_answers_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args([
            "sandbox",
            "--drop-answers",
            "0.1",
            "--seed",
            "3",
            "--out-dir",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut printed = String::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        printed.push_str(&line);
        printed.push('\n');
        if line.starts_with("Serving until") {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        printed.contains("answers dropped:  0.1 of POST /witness (seed 3)")
            && printed.contains("/emulator/posts"),
        "{printed}"
    );
}
