//! The shipped unit (systemd/conduct-walker.service) under a real systemd: a minimal Debian tree
//! (debootstrap --variant=minbase, cached under target/) booted as PID 1 of a systemd-nspawn
//! container, driven from outside with `nsenter -t <PID 1> -a systemctl|journalctl`. The agents
//! are `conduct-walker sandbox`, run inside the container (it has only its own loopback).
//!
//! Checked: READY and the status text, the signing key loaded as a credential, walks stored and
//! signed, reload of a valid and of an invalid config, the watchdog restarting a SIGSTOPped
//! daemon, a missing key stopping after the start limit with systemd's own message (the one
//! docs/operator.md's troubleshooting quotes), and a clean stop leaving a self-contained store.
//!
//! Needs root, debootstrap, systemd-nspawn and nsenter (Debian: `apt-get install
//! --no-install-recommends debootstrap systemd-container`) and the Debian mirror once. Where any of
//! that is missing or the machine cannot boot a container, the test prints why and returns
//! without checking anything; CI sets CONDUCT_WALKER_REQUIRE_NSPAWN=1, which turns that into a
//! failure, so the test cannot be skipped there unnoticed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");
const UNIT: &str = "conduct-walker.service";
/// Packages beyond minbase: systemd as init, dbus for systemctl.
const INCLUDE: &str = "systemd,systemd-sysv,dbus,ca-certificates";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Skip with the reason on stderr, or fail when CI requires the test to run.
fn cannot(reason: &str) {
    if std::env::var_os("CONDUCT_WALKER_REQUIRE_NSPAWN").is_some_and(|v| v == "1") {
        panic!(
            "CONDUCT_WALKER_REQUIRE_NSPAWN=1 but the unit cannot be tested under systemd here: {reason}"
        );
    }
    eprintln!("SKIPPED systemd_unit: {reason}");
}

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The suite of the host when it is Debian (so the test binary's glibc is there), else bookworm.
fn suite() -> String {
    let os = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let field = |k: &str| {
        os.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .map(|v| v.trim_matches('"').to_string())
    };
    match (field("ID").as_deref(), field("VERSION_CODENAME")) {
        (Some("debian"), Some(c)) if !c.is_empty() => c,
        _ => "bookworm".into(),
    }
}

/// The cached tree, built once with debootstrap (about 2 minutes) and never modified: every boot
/// runs on an overlay (`--volatile=overlay`).
fn tree() -> Result<PathBuf, String> {
    let suite = suite();
    let base = repo().join("target/nspawn");
    // The package list is in the name: a changed list builds a new tree.
    let name = format!("{suite}-minbase-{}", INCLUDE.replace(',', "+"));
    let tree = base.join(&name);
    if tree.join("usr/lib/systemd/systemd").exists() || tree.join("lib/systemd/systemd").exists() {
        return Ok(tree);
    }
    std::fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
    let tmp = base.join(format!("{name}.partial"));
    let _ = std::fs::remove_dir_all(&tmp);
    let mirror = std::env::var("CONDUCT_WALKER_DEBIAN_MIRROR")
        .unwrap_or_else(|_| "http://deb.debian.org/debian".into());
    let started = Instant::now();
    let out = Command::new("debootstrap")
        .args(["--variant=minbase", &format!("--include={INCLUDE}"), &suite])
        .arg(&tmp)
        .arg(&mirror)
        .output()
        .map_err(|e| format!("cannot run debootstrap: {e}"))?;
    if !out.status.success() {
        let log = String::from_utf8_lossy(&out.stdout);
        let tail: Vec<&str> = log.lines().rev().take(5).collect();
        return Err(format!(
            "debootstrap {suite} from {mirror} failed ({}): {}",
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ));
    }
    std::fs::rename(&tmp, &tree).map_err(|e| format!("cannot move the tree in place: {e}"))?;
    eprintln!(
        "built {} with debootstrap in {:.0} s",
        tree.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(tree)
}

/// A booted container; powered off (or killed) when dropped.
struct Container {
    nspawn: Child,
    pid1: u32,
    log: PathBuf,
}

impl Container {
    fn boot(tree: &Path, etc: &Path, dropins: &Path, log: &Path) -> Result<Container, String> {
        let logf = std::fs::File::create(log).map_err(|e| e.to_string())?;
        let mut nspawn = Command::new("systemd-nspawn")
            .arg("-D")
            .arg(tree)
            .args([
                "--boot",
                "--register=no",
                "--keep-unit",
                "--private-network",
                "--volatile=overlay",
                "--console=pipe",
            ])
            .arg(format!("--bind-ro={BIN}:/usr/bin/conduct-walker"))
            .arg(format!(
                "--bind-ro={}:/etc/systemd/system/{UNIT}",
                repo().join("systemd/conduct-walker.service").display()
            ))
            .arg(format!("--bind={}:/etc/conduct-walker", etc.display()))
            .arg(format!(
                "--bind={}:/etc/systemd/system/{UNIT}.d",
                dropins.display()
            ))
            .stdin(Stdio::null())
            .stdout(logf.try_clone().map_err(|e| e.to_string())?)
            .stderr(logf)
            .spawn()
            .map_err(|e| format!("cannot run systemd-nspawn: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let pid1 = loop {
            if let Ok(Some(status)) = nspawn.try_wait() {
                let text = std::fs::read_to_string(log).unwrap_or_default();
                return Err(format!(
                    "systemd-nspawn exited ({status}) before the container booted: {}",
                    text.lines().rev().take(5).collect::<Vec<_>>().join(" | ")
                ));
            }
            if let Some(p) = child_systemd(nspawn.id()) {
                break p;
            }
            if Instant::now() > deadline {
                let _ = nspawn.kill();
                return Err("no systemd started in the container within 60 s".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let c = Container {
            nspawn,
            pid1,
            log: log.to_path_buf(),
        };
        // `--wait` returns once boot finished, with running or degraded. Before the bus is up
        // it cannot connect at all (nothing printed), and before PID 1 has made
        // /run/systemd/system it says "offline" (seen once under a loaded full run): ask again.
        let deadline = Instant::now() + Duration::from_secs(90);
        let mut state = c.run(&["systemctl", "is-system-running", "--wait"]);
        while matches!(state.stdout.trim(), "" | "offline") && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            state = c.run(&["systemctl", "is-system-running", "--wait"]);
        }
        if !matches!(state.stdout.trim(), "running" | "degraded") {
            return Err(format!(
                "the container did not finish booting: is-system-running says {:?} {}",
                state.stdout.trim(),
                state.stderr.trim()
            ));
        }
        Ok(c)
    }

    /// A command inside the container (all its namespaces), as root.
    fn run(&self, args: &[&str]) -> Out {
        let out = Command::new("nsenter")
            .args(["-t", &self.pid1.to_string(), "-a", "--"])
            .args(args)
            .output()
            .expect("nsenter runs");
        Out {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn systemctl(&self, args: &[&str]) -> Out {
        let mut all = vec!["systemctl", "--no-pager"];
        all.extend_from_slice(args);
        self.run(&all)
    }

    fn prop(&self, name: &str) -> String {
        self.systemctl(&["show", "-P", name, UNIT])
            .stdout
            .trim()
            .to_string()
    }

    /// Journal of the unit alone (its processes and what PID 1 said about it).
    fn unit_journal(&self) -> String {
        self.run(&["journalctl", "--no-pager", "-o", "cat", "-u", UNIT])
            .stdout
    }

    fn wait_for(&self, what: &str, secs: u64, mut f: impl FnMut(&Container) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !f(self) {
            if Instant::now() > deadline {
                panic!(
                    "waited {secs} s for {what}\nstatus:\n{}\njournal:\n{}",
                    self.systemctl(&["status", UNIT]).stdout,
                    tail(&self.unit_journal(), 40)
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = self.systemctl(&["poweroff"]);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.nspawn.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Killing PID 1 of the container ends every process in its PID namespace.
        let _ = Command::new("kill")
            .args(["-KILL", &self.pid1.to_string()])
            .status();
        let _ = self.nspawn.kill();
        let _ = self.nspawn.wait();
        eprintln!("container log: {}", self.log.display());
    }
}

struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The container's PID 1: the process named systemd whose parent is systemd-nspawn.
fn child_systemd(nspawn: u32) -> Option<u32> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let comm = &stat[stat.find('(').unwrap_or(0) + 1..close];
        let ppid = stat[close + 2..]
            .split(' ')
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(nspawn) && comm == "systemd" {
            return Some(pid);
        }
    }
    None
}

fn records(c: &Container, db: &str) -> Vec<serde_json::Value> {
    let out = c.run(&["conduct-walker", "records", "list", "--json", "--db", db]);
    if !out.ok {
        return Vec::new();
    }
    out.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .flat_map(|v| match v {
            serde_json::Value::Array(a) => a,
            other => vec![other],
        })
        .collect()
}

const STATE_DB: &str = "/var/lib/conduct-walker/walker.db";

#[test]
fn the_unit_under_real_systemd() {
    let euid = unsafe_free_euid();
    if euid != Some(0) {
        return cannot("needs root (systemd-nspawn boots a container)");
    }
    for cmd in ["debootstrap", "systemd-nspawn", "nsenter"] {
        if !have(cmd) {
            return cannot(&format!(
                "{cmd} is not installed (apt-get install --no-install-recommends debootstrap systemd-container)"
            ));
        }
    }
    let tree = match tree() {
        Ok(t) => t,
        Err(e) => return cannot(&e),
    };
    let work = tempfile::tempdir().unwrap();
    let etc = work.path().join("etc");
    let dropins = work.path().join("dropins");
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::create_dir_all(&dropins).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&etc, std::fs::Permissions::from_mode(0o755)).unwrap();
    let key = etc.join("signing-key.pem");
    let keygen = Command::new(BIN)
        .args(["keygen", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(keygen.status.success(), "{keygen:?}");
    let pubkey = Command::new(BIN)
        .args(["pubkey", "--key"])
        .arg(&key)
        .output()
        .unwrap();
    let pubkey: serde_json::Value = serde_json::from_slice(&pubkey.stdout).unwrap();
    let pubkey = pubkey["public_key_ed25519_b64"]
        .as_str()
        .unwrap()
        .to_string();
    // Restart sooner than the shipped 10 s, still slower than systemd's default start limit
    // (5 starts in 10 s) could catch: only the unit's own StartLimit*= can stop the retries.
    std::fs::write(dropins.join("10-test.conf"), "[Service]\nRestartSec=3s\n").unwrap();

    let c = match Container::boot(&tree, &etc, &dropins, &work.path().join("nspawn.log")) {
        Ok(c) => c,
        Err(e) => return cannot(&format!("this machine cannot boot a container: {e}")),
    };
    let version = c.systemctl(&["--version"]).stdout;
    eprintln!("booted: {}", version.lines().next().unwrap_or_default());

    // The sandbox's agents and intake, inside the container, as a transient service.
    let sandbox = c.run(&[
        "systemd-run",
        "--unit=cw-sandbox",
        "/usr/bin/conduct-walker",
        "sandbox",
        "--out-dir",
        "/run/cw-sandbox",
        "--schedule",
        "*/3 * * * * *",
    ]);
    assert!(sandbox.ok, "{}", sandbox.stderr);
    c.wait_for("the sandbox's config", 30, |c| {
        c.run(&["test", "-s", "/run/cw-sandbox/walker.toml"]).ok
    });
    let sandbox_config = c.run(&["cat", "/run/cw-sandbox/walker.toml"]).stdout;
    // The service's store is its StateDirectory, and its key the credential (in place of the
    // key file the sandbox wrote).
    let config: String = sandbox_config
        .lines()
        .filter(|l| !l.starts_with("database = ") && !l.starts_with("key = "))
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .replace(
            "[witness]\n",
            "[witness]\nkey_credential = \"signing-key\"\n",
        )
        .replace(
            "name = \"sandbox trial\"",
            "name = \"systemd test witness\"",
        );
    let config_path = etc.join("walker.toml");
    std::fs::write(&config_path, &config).unwrap();
    std::fs::set_permissions(&config_path, std::fs::Permissions::from_mode(0o644)).unwrap();

    // READY: `systemctl start` of a Type=notify unit returns once the daemon said READY=1.
    let start = c.systemctl(&["start", UNIT]);
    assert!(
        start.ok,
        "start failed: {}\n{}",
        start.stderr,
        tail(&c.unit_journal(), 40)
    );
    assert_eq!(c.prop("ActiveState"), "active");
    assert_eq!(c.prop("SubState"), "running");
    c.wait_for("a STATUS= text naming the next walk", 20, |c| {
        c.prop("StatusText").contains("next walk")
    });
    let journal = c.unit_journal();
    assert!(
        journal.contains(&format!(
            "credential signing-key readable, public key {pubkey}"
        )),
        "ExecStartPre's check did not read the credential:\n{}",
        tail(&journal, 40)
    );
    assert!(journal.contains("conduct-walker daemon ready"), "{journal}");

    // Walks stored, signed by the credential's key.
    c.wait_for("walks stored", 60, |c| records(c, STATE_DB).len() >= 3);
    let stored = records(&c, STATE_DB);
    assert!(stored.iter().all(|r| r["signed"] == true), "{stored:?}");

    // Reload, valid: the daemon re-reads it.
    let pid = c.prop("MainPID");
    std::fs::write(
        &config_path,
        config.replace("drain_interval_secs = 10", "drain_interval_secs = 11"),
    )
    .unwrap();
    let reload = c.systemctl(&["reload", UNIT]);
    assert!(
        reload.ok,
        "{}\n{}",
        reload.stderr,
        tail(&c.unit_journal(), 30)
    );
    c.wait_for("the reload logged", 20, |c| {
        c.unit_journal().contains("configuration reloaded")
    });
    // Reload, invalid: `systemctl reload` fails, and the daemon runs on with the old config.
    std::fs::write(&config_path, format!("{config}bogus_key = 1\n")).unwrap();
    let reload = c.systemctl(&["reload", UNIT]);
    assert!(
        !reload.ok,
        "reload of an invalid config returned 0:\n{}",
        tail(&c.unit_journal(), 20)
    );
    assert!(
        c.unit_journal().contains("unknown field"),
        "{}",
        tail(&c.unit_journal(), 20)
    );
    assert_eq!(c.prop("MainPID"), pid, "the daemon was replaced");
    assert_eq!(c.prop("ActiveState"), "active");
    assert!(
        !c.unit_journal().contains("config reload refused"),
        "the invalid config reached the daemon: ExecReload should have stopped it"
    );
    std::fs::write(&config_path, &config).unwrap();

    // The watchdog: a SIGSTOPped daemon stops sending WATCHDOG=1 and systemd restarts it.
    std::fs::write(
        dropins.join("20-watchdog.conf"),
        "[Service]\nWatchdogSec=3s\n",
    )
    .unwrap();
    assert!(c.systemctl(&["daemon-reload"]).ok);
    assert!(c.systemctl(&["restart", UNIT]).ok);
    let stopped = c.prop("MainPID");
    // The shell's kill: the minimal tree has no /bin/kill.
    assert!(c.run(&["sh", "-c", &format!("kill -STOP {stopped}")]).ok);
    c.wait_for("the watchdog to restart the daemon", 40, |c| {
        let now = c.prop("MainPID");
        now != stopped && now != "0" && c.prop("ActiveState") == "active"
    });
    assert!(
        c.unit_journal().contains("Watchdog timeout"),
        "{}",
        tail(&c.unit_journal(), 30)
    );
    std::fs::remove_file(dropins.join("20-watchdog.conf")).unwrap();
    assert!(c.systemctl(&["daemon-reload"]).ok);

    // A clean stop: exit 0, and the store is whole in walker.db (no records left in the -wal).
    let stop = c.systemctl(&["stop", UNIT]);
    assert!(stop.ok, "{}", stop.stderr);
    assert_eq!(c.prop("Result"), "success");
    assert_eq!(c.prop("ExecMainStatus"), "0");
    assert!(c.unit_journal().contains("stopped"));
    let stored_before = records(&c, STATE_DB).len();
    assert!(
        c.run(&[
            "cp",
            "/var/lib/private/conduct-walker/walker.db",
            "/root/copy.db"
        ])
        .ok
    );
    assert_eq!(
        records(&c, "/root/copy.db").len(),
        stored_before,
        "walker.db alone, copied after a clean stop, does not hold every record"
    );

    // A missing key: systemd refuses before ExecStartPre, and the start limit ends the retries.
    std::fs::rename(&key, etc.join("moved-away.pem")).unwrap();
    c.systemctl(&["reset-failed", UNIT]);
    let before = c.unit_journal();
    let started = Instant::now();
    let start = c.systemctl(&["start", UNIT]);
    assert!(!start.ok, "started without its key");
    let since = |c: &Container| {
        let after = c.unit_journal();
        after
            .strip_prefix(before.as_str())
            .unwrap_or(&after)
            .to_string()
    };
    c.wait_for("the start limit", 90, |c| {
        since(c).contains("Start request repeated too quickly")
    });
    eprintln!(
        "start limit reached {:.1} s after the start without a key",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(c.prop("ActiveState"), "failed");
    // And no more tries after it (RestartSec=3s here: two would have happened).
    let tries = |text: &str| text.matches("Failed at step CREDENTIALS").count();
    let at_limit = tries(&since(&c));
    std::thread::sleep(Duration::from_secs(7));
    let new = since(&c);
    assert_eq!(
        tries(&new),
        at_limit,
        "restarts went on after the start limit"
    );
    assert!(at_limit <= 5, "{at_limit} tries");
    let guide = std::fs::read_to_string(repo().join("docs/operator.md")).unwrap();
    let mut quoted = 0;
    for needle in [
        "Failed to set up credentials",
        "Failed at step CREDENTIALS",
        "Start request repeated too quickly",
    ] {
        if let Some(line) = new.lines().find(|l| l.contains(needle)) {
            quoted += 1;
            assert!(
                guide.contains(needle),
                "systemd says {line:?}, which docs/operator.md's troubleshooting does not quote"
            );
        }
    }
    assert!(
        quoted >= 2,
        "systemd's messages about the missing key were not found:\n{}",
        tail(&new, 40)
    );
    std::fs::rename(etc.join("moved-away.pem"), &key).unwrap();
    assert!(c.systemctl(&["reset-failed", UNIT]).ok);
    assert!(
        c.systemctl(&["start", UNIT]).ok,
        "{}",
        tail(&c.unit_journal(), 20)
    );
    assert!(c.systemctl(&["stop", UNIT]).ok);
}

/// The effective user id, read from /proc (no libc call needed).
fn unsafe_free_euid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|u| u.parse().ok())
}

/// `KEY=value` lines of one `[section]` of the shipped unit.
fn unit_values(section: &str, key: &str) -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("systemd/conduct-walker.service")).unwrap();
    let mut current = String::new();
    let mut found = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            current = line.to_string();
        } else if current == format!("[{section}]")
            && let Some(v) = line.strip_prefix(&format!("{key}="))
        {
            found.push(v.to_string());
        }
    }
    found
}

fn secs(v: &str) -> u64 {
    match v.strip_suffix('s') {
        Some(n) => n.parse().unwrap(),
        None => v.parse().unwrap(),
    }
}

/// Checked without systemd too: a start that keeps failing reaches the start limit (systemd's
/// default, 5 starts in 10 s, is never reached with RestartSec=10s), and a reload checks the file
/// before it signals the daemon.
#[test]
fn the_unit_limits_failing_starts_and_checks_a_reload_first() {
    let interval = unit_values("Unit", "StartLimitIntervalSec");
    let burst = unit_values("Unit", "StartLimitBurst");
    assert_eq!(
        interval.len(),
        1,
        "StartLimitIntervalSec= in [Unit]: {interval:?}"
    );
    assert_eq!(burst.len(), 1, "StartLimitBurst= in [Unit]: {burst:?}");
    let restart = secs(&unit_values("Service", "RestartSec")[0]);
    let burst: u64 = burst[0].parse().unwrap();
    assert!(
        burst * restart < secs(&interval[0]),
        "{burst} starts {restart} s apart must fit in StartLimitIntervalSec={}",
        interval[0]
    );
    let pre = unit_values("Service", "ExecStartPre");
    let reload = unit_values("Service", "ExecReload");
    assert_eq!(reload.len(), 2, "{reload:?}");
    assert_eq!(
        reload[0],
        pre[0].replace("config check", "config check --reload"),
        "ExecReload= must run ExecStartPre='s check first"
    );
    // The shell's kill: /bin/kill is procps', absent from a minimal system.
    assert_eq!(reload[1], r#"/bin/sh -c 'kill -HUP "$$MAINPID"'"#);
}
