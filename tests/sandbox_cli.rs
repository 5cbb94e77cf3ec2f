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
    // ... and the one whose consent file asks to be told of its walks (§11.5).
    assert!(text.contains("targets: 12"), "{text}");
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

/// The sandbox's config run by the daemon (issue 44): its caller agent asks the daemon's
/// witness face to walk it back and is walked and filed; its asking origin is told of its
/// first scheduled walk, once. Both printed by the sandbox as they happen.
#[test]
fn the_sandbox_daemon_walks_its_caller_back_and_tells_the_asking_origin() {
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    };
    let (face, listen) = (free(), free());
    let dir = tempfile::tempdir().unwrap();
    let mut sandbox = Command::new(BIN)
        .args(["sandbox", "--schedule", "*/2 * * * * *", "--face-listen"])
        .arg(face.to_string())
        .arg("--out-dir")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (lines, seen) = std::sync::mpsc::channel::<String>();
    let stdout = sandbox.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut printed = String::new();
    let wait_for = |printed: &mut String, what: &str, until: Instant| {
        while !printed.contains(what) {
            let left = until.saturating_duration_since(Instant::now());
            match seen.recv_timeout(left) {
                Ok(line) => {
                    printed.push_str(&line);
                    printed.push('\n');
                }
                Err(_) => panic!("no {what:?} in\n{printed}"),
            }
        }
    };
    wait_for(
        &mut printed,
        "Serving until",
        Instant::now() + Duration::from_secs(60),
    );
    let config = dir.path().join("walker.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("127.0.0.1:9464", &listen.to_string());
    std::fs::write(&config, text).unwrap();
    let mut daemon = Command::new(BIN)
        .args(["run", "--config"])
        .arg(&config)
        .env_remove("CREDENTIALS_DIRECTORY")
        .env_remove("NOTIFY_SOCKET")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(90);
    wait_for(&mut printed, "reciprocal walk: scheduled", until);
    wait_for(&mut printed, "asks-notify: notification received", until);
    let db = dir.path().canonicalize().unwrap().join("walker.db");
    let filed = loop {
        let store = conduct_walker::store::Store::open_read_only(&db).unwrap();
        let rows = conduct_walker::store::reciprocal_walks::recent(store.connection(), 10).unwrap();
        if let Some(row) = rows.into_iter().find(|r| r.state == "walked") {
            break row;
        }
        assert!(Instant::now() < until, "the caller was not walked back");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        filed
            .intake_url
            .as_deref()
            .is_some_and(|u| u.starts_with("https://127.0.0.1:")),
        "filed to the sandbox's intake, which the caller's card names: {filed:?}"
    );
    let told = printed
        .lines()
        .find(|l| l.starts_with("asks-notify: notification received"))
        .unwrap();
    assert!(
        told.contains(r#"event "measured""#) && told.contains(r#"status "PASS""#),
        "{told}"
    );
    // Two more scheduled walks of the asking origin, inside its hour: nothing more is sent.
    std::thread::sleep(Duration::from_secs(4));
    while let Ok(line) = seen.recv_timeout(Duration::from_millis(500)) {
        printed.push_str(&line);
        printed.push('\n');
    }
    for child in [&mut daemon, &mut sandbox] {
        let pid = child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let _ = child.wait();
    }
    // Told once: the walks every two seconds after the first are inside its hour.
    let notifications = printed
        .matches("asks-notify: notification received")
        .count();
    assert_eq!(notifications, 1, "{printed}");
}
