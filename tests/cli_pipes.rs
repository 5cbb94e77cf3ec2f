//! Issue 35: every command that writes to standard output ends quietly when its reader goes
//! away (`conduct-walker alerts list | head`): exit 0, or the shell's usual 141 (killed by
//! SIGPIPE), never a panic (101) or an error message. Each listing command runs once into an
//! open pipe (it prints something, so the test means something) and once into a pipe whose
//! reader is already closed.

mod store_support;

use conduct_walker::store::Store;
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

/// A store with records, an open incident and its alert, and a config naming it.
fn fixture(dir: &Path) -> (String, String, String) {
    let db = dir.join("walker.db");
    let store = Store::open(&db).unwrap();
    let mut first = String::new();
    for i in 0..50 {
        let rec = store
            .insert_record(&store_support::unsigned(store_support::record_bytes(
                i,
                i % 2 == 0,
            )))
            .unwrap();
        if i == 0 {
            first = rec.row.sha256.clone();
        }
    }
    std::fs::write(
        dir.join("hook.secret"),
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    )
    .unwrap();
    let config = dir.join("walker.toml");
    std::fs::write(
        &config,
        r#"[witness]
name = "pipes test"
vantage = "loopback"

[daemon]
database = "walker.db"
listen = "off"

[[target]]
name = "alpha"
origin = "https://alpha.example"
schedule = "@daily"

[alerts]
open_after = 1

[[alerts.channel]]
name = "hook"
kind = "webhook"
url = "https://hooks.example/x"
secret_file = "hook.secret"
"#,
    )
    .unwrap();
    let cfg = conduct_walker::config::load(&config).unwrap();
    let tx = store.connection().unchecked_transaction().unwrap();
    let obs = conduct_walker::alerts::incident::Observation {
        at: chrono::Utc::now(),
        record_sha256: Some(first.clone()),
        origin: Some("https://alpha.example".into()),
        endpoint: Some("https://alpha.example/a2a".into()),
        result: conduct_walker::alerts::incident::WalkResult::Conduct {
            ok: false,
            n_pass: 5,
            n_total: 8,
            assertions: Vec::new(),
        },
    };
    conduct_walker::alerts::outbox::observe(&tx, &cfg.alerts, "alpha", &obs).unwrap();
    tx.commit().unwrap();
    store.checkpoint().unwrap();
    (
        db.display().to_string(),
        config.display().to_string(),
        first[..12].to_string(),
    )
}

#[test]
fn every_listing_command_ends_quietly_into_a_closed_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let (db, config, sha) = fixture(dir.path());
    let db = db.as_str();
    let commands: Vec<Vec<&str>> = vec![
        vec!["records", "list", "--db", db],
        vec!["records", "list", "--json", "--db", db],
        vec!["records", "show", &sha, "--db", db],
        vec!["records", "raw", &sha, "--db", db],
        vec!["records", "export", "--db", db],
        vec!["records", "verify", "--db", db],
        vec!["outbox", "list", "--db", db],
        vec!["ledger", "status", "--db", db],
        vec!["alerts", "list", "--db", db],
        vec!["alerts", "list", "--json", "--db", db],
        vec!["completions", "bash"],
        vec!["completions", "zsh"],
        vec!["config", "check", "--config", &config],
        vec!["print-config", "--config", &config],
        vec!["--help"],
        vec!["alerts", "--help"],
    ];
    for args in &commands {
        // Into an open pipe: it prints, and succeeds.
        let open = Command::new(BIN)
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            open.status.success() && !open.stdout.is_empty(),
            "{args:?}: {:?}\n{}",
            open.status,
            String::from_utf8_lossy(&open.stderr)
        );
        // Into a pipe nobody reads any more.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let closed = Command::new(BIN)
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&closed.stderr);
        let quiet = closed.status.code() == Some(0) || closed.status.signal() == Some(13);
        assert!(
            quiet,
            "{args:?} into a closed pipe: {:?}\n{stderr}",
            closed.status
        );
        assert!(stderr.is_empty(), "{args:?} said: {stderr}");
    }
}
