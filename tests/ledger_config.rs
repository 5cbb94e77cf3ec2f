//! Issue 23: the `[ledger]` section and `pull_ledger` per target, and `config check` on them.

use conduct_walker::config::{self, ConfigError};
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

const BASE: &str = "[witness]\nname = \"w\"\nvantage = \"v\"\n";

fn parse(text: &str) -> Result<config::Config, ConfigError> {
    config::parse(Path::new("/etc/cw/walker.toml"), text)
}

#[test]
fn defaults_and_per_intake_values() {
    let c = parse(BASE).unwrap();
    assert!(c.ledger.follow);
    assert_eq!(c.ledger.poll_interval.as_secs(), 60);
    let d = c.ledger.policy_for("https://any.example/witness");
    assert_eq!(d.rate_per_minute, 30);
    assert_eq!(d.overdue_after.num_hours(), 50);
    let text = format!(
        "{BASE}[ledger]\nrate_per_minute = 12\noverdue_after_hours = 30\n\
         [[ledger.intake]]\nurl = \"https://ledger.example/witness\"\nrate_per_minute = 5\n\
         [[target]]\norigin = \"https://agent.example\"\nendpoint = \"https://agent.example/a2a\"\n\
         schedule = \"@daily\"\npull_ledger = true\n"
    );
    let c = parse(&text).unwrap();
    let own = c.ledger.policy_for("https://ledger.example/witness/");
    assert_eq!(
        (own.rate_per_minute, own.overdue_after.num_hours()),
        (5, 30)
    );
    let other = c.ledger.policy_for("https://other.example/witness");
    assert_eq!(
        (other.rate_per_minute, other.overdue_after.num_hours()),
        (12, 30)
    );
    assert!(c.targets[0].pull_ledger);
}

#[test]
fn out_of_range_values_and_bad_urls_are_refused_with_their_line() {
    for (extra, _key, what) in [
        (
            "[ledger]\nrate_per_minute = 0\n",
            "rate_per_minute",
            "out of range",
        ),
        (
            "[ledger]\noverdue_after_hours = 100000\n",
            "overdue_after_hours",
            "out of range",
        ),
        (
            "[ledger]\npoll_interval_secs = 1\n",
            "poll_interval_secs",
            "out of range",
        ),
        (
            "[[ledger.intake]]\nurl = \"http://ledger.example/witness\"\n",
            "url",
            "https",
        ),
        (
            "[[ledger.intake]]\nurl = \"https://ledger.example/witness\"\nrate_per_minute = 9999\n",
            "url",
            "rate_per_minute 9999 is out of range",
        ),
        ("[ledger]\nfolow = true\n", "folow", "unknown field"),
        (
            "[[target]]\norigin = \"https://a.example\"\nschedule = \"@daily\"\npull_ledger = true\n",
            "origin",
            "pull_ledger needs the target's endpoint",
        ),
    ] {
        let text = format!("{BASE}{extra}");
        let Err(ConfigError::Invalid { problems, .. }) = parse(&text) else {
            panic!("{extra} was accepted");
        };
        let shown: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        assert!(
            shown.iter().any(|p| p.contains(what) && p.contains("line")),
            "{extra}: {shown:?}"
        );
    }
}

#[test]
fn config_check_refuses_a_bad_ledger_section() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("walker.toml");
    std::fs::write(&path, format!("{BASE}[ledger]\nrate_per_minute = 0\n")).unwrap();
    let out = Command::new(BIN)
        .args(["config", "check", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("line 5, `ledger.rate_per_minute`: 0 is out of range"),
        "{said}"
    );
}
