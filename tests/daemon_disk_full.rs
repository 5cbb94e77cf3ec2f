//! A full disk under a running daemon (issue 14, section 4). The daemon's file-size limit is
//! lowered to zero while it runs (`prlimit`, RLIMIT_FSIZE): every write to a file then fails as
//! on a full disk (EFBIG; the shell's `trap '' XFSZ` leaves SIGXFSZ ignored across `exec`, as
//! the signal would otherwise kill it), and is raised again later. While it cannot write, the
//! daemon says `degraded` with the reason, stores and sends nothing, and keeps running; once it
//! can, it stores again by itself. No record the intake holds is missing from the store.

mod daemon_support;

use conduct_walker::sandbox::SandboxCa;
use daemon_support::{
    BIN, Daemon, any_port, config, free_port, runtime, start_intake, submitting_agents,
};
use std::io::Read;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn set_file_size_limit(pid: u32, soft: &str) {
    let ok = Command::new("prlimit")
        .args(["--pid", &pid.to_string(), &format!("--fsize={soft}:")])
        .status()
        .expect("prlimit runs")
        .success();
    assert!(ok, "prlimit --fsize={soft}: failed");
}

fn healthz(d: &Daemon) -> (u16, serde_json::Value) {
    let (status, body) = d.get("/healthz").expect("the listener answers");
    (status, serde_json::from_slice(&body).unwrap())
}

#[test]
fn a_full_disk_degrades_the_daemon_loses_nothing_and_it_recovers_by_itself() {
    if Command::new("prlimit").arg("--version").output().is_err() {
        eprintln!("SKIPPED: no prlimit (util-linux) to limit the daemon's file size");
        return;
    }
    let rt = runtime();
    let ca = SandboxCa::generate();
    let state = tempfile::tempdir().unwrap();
    let emulator = start_intake(&rt, &ca, state.path(), any_port(), None);
    // Kept alive (each agent is a server) though not looked at again.
    let (_agents, targets) = submitting_agents(&rt, &ca, 2);
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let text = config(listen, 20, &targets).replace(
        "vantage = \"loopback\"\n",
        &format!("vantage = \"loopback\"\nintake = \"{}\"\n", emulator.url()),
    );

    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let config_path = dir.path().join("walker.toml");
    std::fs::write(&config_path, text).unwrap();
    // The log goes to a pipe: a log file could not be written while the limit holds.
    let mut child = Command::new("sh")
        .args(["-c", "trap '' XFSZ; exec \"$0\" run --config \"$1\""])
        .arg(BIN)
        .arg(&config_path)
        .env_remove("CREDENTIALS_DIRECTORY")
        .env_remove("NOTIFY_SOCKET")
        .env_remove("WATCHDOG_USEC")
        .env("CONDUCT_WALKER_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let mut stderr = child.stderr.take().unwrap();
    let sink = log.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let mut d = Daemon::adopt(child, dir, listen);
    let log_text = || log.lock().unwrap().clone();

    d.wait_for("records of both agents", Duration::from_secs(60), |d| {
        d.record_count() >= 2 && emulator.stored_count() >= 1
    });
    assert_eq!(healthz(&d).1["status"], "ok");

    set_file_size_limit(d.pid(), "0");
    d.wait_for("/healthz to say degraded", Duration::from_secs(30), |d| {
        healthz(d).0 == 503
    });
    let (_, health) = healthz(&d);
    assert_eq!(health["status"], "degraded", "{health}");
    assert_eq!(health["store_writable"], false, "{health}");
    let reason = health["store_fault"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.contains("failed a write") || reason.contains("disk is full"),
        "{reason}"
    );
    // A few seconds of fires every second: nothing stored, nothing sent, still running.
    let (stored, sent) = (d.record_count(), emulator.stored_count());
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(d.record_count(), stored, "stored while the disk was full");
    assert_eq!(
        emulator.stored_count(),
        sent,
        "sent while the disk was full"
    );
    assert!(d.child.try_wait().unwrap().is_none(), "{}", log_text());
    assert_eq!(healthz(&d).1["status"], "degraded");

    set_file_size_limit(d.pid(), "unlimited");
    d.wait_for("records stored again", Duration::from_secs(60), |d| {
        d.record_count() > stored + 2
    });
    d.wait_for("/healthz to say ok", Duration::from_secs(30), |d| {
        healthz(d).0 == 200
    });
    d.signal("TERM");
    assert!(
        d.wait_exit(Duration::from_secs(60)).success(),
        "{}",
        log_text()
    );
    let log = log_text();
    assert!(log.contains("the store cannot write"), "{log}");
    assert!(log.contains("the store takes writes again"), "{log}");

    // No acknowledged record lost: the chain verifies, and every record the intake holds is in
    // the store (records are committed before anything is sent).
    let verify = Command::new(BIN)
        .args(["records", "verify", "--db"])
        .arg(d.path("walker.db"))
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    let store = d.store().unwrap();
    let shas: Vec<String> = store
        .connection()
        .prepare("SELECT sha256 FROM records")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let held = shas
        .iter()
        .filter(|sha| emulator.stored(sha).is_some())
        .count() as u64;
    assert_eq!(
        held,
        emulator.stored_count(),
        "the intake holds a record the store lost"
    );
}
