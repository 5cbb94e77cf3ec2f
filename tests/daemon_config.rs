//! Config parsing: unknown keys refused with their line, bad cron refused, `config check` and
//! `print-config` through the real binary, and the shipped example stays valid.

use conduct_walker::config::{self, ConfigError};
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

const GOOD: &str = r#"[witness]
name = "w"
vantage = "v"

[daemon]
database = "walker.db"
jitter_secs = 30
jitter_seed = 7

[[target]]
name = "a"
origin = "https://agent.example"
schedule = "0 17 3 * * *"
"#;

fn problems(text: &str) -> Vec<config::Problem> {
    match config::parse(Path::new("/etc/cw/walker.toml"), text) {
        Err(ConfigError::Invalid { problems, .. }) => problems,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn unknown_keys_are_refused_with_line_and_key() {
    // In each table, including a target's.
    for (text, line, key) in [
        (
            GOOD.replace("vantage = \"v\"\n", "vantage = \"v\"\nvantge = \"x\"\n"),
            4,
            "vantge",
        ),
        (
            GOOD.replace("jitter_seed = 7\n", "jitter_seed = 7\nconcurency = 2\n"),
            9,
            "concurency",
        ),
        (format!("{GOOD}shedule = \"x\"\n"), 14, "shedule"),
        (format!("{GOOD}[netwrk]\n"), 14, "[netwrk]"),
    ] {
        let p = problems(&text);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].line, Some(line), "{text}\n{p:?}");
        assert_eq!(p[0].key.as_deref(), Some(key));
        let shown = p[0].to_string();
        assert!(
            shown.contains(&format!("line {line}")) && shown.contains("unknown field"),
            "{shown}"
        );
    }
}

#[test]
fn bad_cron_and_other_values_are_refused_each_with_its_line() {
    let text = GOOD
        .replace("0 17 3 * * *", "61 * * * *")
        .replace("name = \"w\"", "name = \"\"")
        .replace("[daemon]\n", "[daemon]\nlisten = \"192.0.2.1:80\"\n")
        + "[[target]]\norigin = \"http://plain.example\"\nschedule = \"@daily\"\n"
        + "[[target]]\norigin = \"https://feb.example\"\nschedule = \"0 0 30 2 *\"\n";
    let p = problems(&text);
    let find = |needle: &str| {
        p.iter()
            .find(|p| p.message.contains(needle))
            .unwrap_or_else(|| panic!("no problem mentioning {needle}: {p:?}"))
    };
    assert_eq!(find("not a cron pattern").line, Some(14));
    assert_eq!(find("must not be empty").line, Some(2));
    assert_eq!(find("loopback").line, Some(6));
    assert_eq!(find("only https").line, Some(16));
    assert_eq!(find("never fires").line, Some(20));
    assert_eq!(p.len(), 5, "{p:?}");
}

#[test]
fn key_url_needs_a_key_and_duplicate_names_are_refused() {
    let text = GOOD.replace(
        "vantage = \"v\"\n",
        "vantage = \"v\"\nkey_url = \"https://w.example/k.json\"\n",
    ) + "[[target]]\nname = \"a\"\norigin = \"https://b.example\"\nschedule = \"@hourly\"\n";
    let p = problems(&text);
    assert!(
        p.iter()
            .any(|p| p.message.contains("needs a signing key") && p.line == Some(4)),
        "{p:?}"
    );
    assert!(
        p.iter().any(|p| p.message.contains("second target named")),
        "{p:?}"
    );
}

#[test]
fn defaults_and_jitter_are_applied() {
    let c = config::parse(Path::new("/etc/cw/walker.toml"), GOOD).unwrap();
    assert_eq!(c.database.as_deref(), Some(Path::new("/etc/cw/walker.db")));
    let t = &c.targets[0];
    assert_eq!(
        t.schedule.offset,
        config::jitter_offset(7, "a", std::time::Duration::from_secs(30))
    );
    let now: chrono::DateTime<chrono::Utc> = "2026-03-01T00:00:00Z".parse().unwrap();
    let next = t.schedule.next_after(now).unwrap();
    let base: chrono::DateTime<chrono::Utc> = "2026-03-01T03:17:00Z".parse().unwrap();
    assert_eq!((next - base).to_std().unwrap(), t.schedule.offset);
}

#[test]
fn request_profile_defaults_to_spec_and_a_target_may_choose_reference() {
    use conduct_walker::walk::RequestProfile;
    let c = config::parse(Path::new("/etc/cw/walker.toml"), GOOD).unwrap();
    assert_eq!(c.targets[0].request.profile, RequestProfile::Spec);
    let text = GOOD.replace(
        "[[target]]\nname = \"a\"",
        "[[target]]\nname = \"a\"\nrequest_profile = \"reference\"",
    );
    let c = config::parse(Path::new("/etc/cw/walker.toml"), &text).unwrap();
    assert_eq!(c.targets[0].request.profile, RequestProfile::Reference);
    assert!(
        c.effective_toml()
            .contains("request_profile = \"reference\"")
    );
    // The witness-wide default applies to targets that do not say.
    let text = GOOD.replace(
        "vantage = \"v\"",
        "vantage = \"v\"\nrequest_profile = \"reference\"",
    );
    let c = config::parse(Path::new("/etc/cw/walker.toml"), &text).unwrap();
    assert_eq!(c.targets[0].request.profile, RequestProfile::Reference);
    let bad = GOOD.replace("name = \"a\"", "name = \"a\"\nrequest_profile = \"fast\"");
    let found = problems(&bad);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].line, Some(12), "{found:?}");
    assert_eq!(found[0].key.as_deref(), Some("request_profile"));
    assert!(found[0].message.contains("fast"), "{found:?}");
}

#[test]
fn config_check_accepts_the_key_systemd_hands_over_as_a_credential() {
    // systemd >= 254 writes LoadCredential= files root-owned 0400 with an ACL for the service
    // user, so they read back 0440, in a read-only directory (systemd issue #29435).
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let credentials = dir.path().join("credentials");
    std::fs::create_dir(&credentials).unwrap();
    let key = credentials.join("signing-key");
    conduct_walker::witness::keys::generate_key_file(&key).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o440)).unwrap();
    std::fs::set_permissions(&credentials, std::fs::Permissions::from_mode(0o500)).unwrap();
    let config = dir.path().join("walker.toml");
    std::fs::write(
        &config,
        GOOD.replace(
            "vantage = \"v\"\n",
            "vantage = \"v\"\nkey_credential = \"signing-key\"\n",
        ),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["config", "check"])
        .arg(&config)
        .env("CREDENTIALS_DIRECTORY", &credentials)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("signing-key"), "{text}");
    std::fs::set_permissions(&credentials, std::fs::Permissions::from_mode(0o700)).unwrap();
}

#[test]
fn config_check_explains_and_exits_0_or_2() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.toml");
    std::fs::write(&good, GOOD).unwrap();
    let out = Command::new(BIN)
        .args(["config", "check"])
        .arg(&good)
        .env_remove("CREDENTIALS_DIRECTORY")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("a: https://agent.example") && text.contains("next: "),
        "{text}"
    );
    assert!(text.contains("key: none"), "{text}");

    // A key file others can read is refused by the check (the daemon would not start).
    let key = dir.path().join("k.pem");
    conduct_walker::witness::keys::generate_key_file(&key).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let keyed = dir.path().join("keyed.toml");
    std::fs::write(
        &keyed,
        GOOD.replace("vantage = \"v\"\n", "vantage = \"v\"\nkey = \"k.pem\"\n"),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["config", "check"])
        .arg(&keyed)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("chmod 600"), "{text}");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = Command::new(BIN)
        .args(["config", "check"])
        .arg(&keyed)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, format!("{GOOD}typo = 1\n")).unwrap();
    let out = Command::new(BIN)
        .args(["config", "check"])
        .arg(&bad)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text.contains("line 14, `typo`: unknown field `typo`"),
        "{text}"
    );
}

#[test]
fn print_config_fills_defaults_and_follows_configuration_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("walker.toml"), GOOD).unwrap();
    let out = Command::new(BIN)
        .arg("print-config")
        .env("CONFIGURATION_DIRECTORY", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    // Parses back to the same targets, with the defaults spelled out.
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let again = config::parse(&dir.path().join("walker.toml"), &body).unwrap();
    assert_eq!(again.targets.len(), 1);
    for needle in [
        "concurrency = 4",
        "submit = true",
        "privacy = \"full\"",
        "mode = \"mcp\"",
        "request_deadline_secs = 20",
    ] {
        assert!(text.contains(needle), "{needle} missing from\n{text}");
    }
    assert!(text.contains(&dir.path().join("walker.db").display().to_string()));
    let none = Command::new(BIN)
        .arg("print-config")
        .env_remove("CONFIGURATION_DIRECTORY")
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("CONFIGURATION_DIRECTORY"));
}

#[test]
fn the_shipped_example_is_valid() {
    // As shipped (and installed by the package) its targets are commented out: it is valid and
    // the daemon idles on it.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/walker.toml");
    let c = config::load(&path).unwrap();
    assert!(c.targets.is_empty());
    // Its commented `[[target]]` examples are valid once uncommented.
    let text = std::fs::read_to_string(&path).unwrap();
    let mut in_target = false;
    let mut uncommented = String::new();
    for line in text.lines() {
        in_target = line == "# [[target]]" || (in_target && !line.is_empty());
        let line = if in_target {
            line.strip_prefix("# ").unwrap_or(line)
        } else {
            line
        };
        uncommented.push_str(line);
        uncommented.push('\n');
    }
    let c = config::parse(&path, &uncommented).unwrap();
    assert_eq!(c.targets.len(), 2);
}

#[test]
fn card_signature_trust_section_is_read_and_its_unknown_keys_refused() {
    let text = format!(
        "{GOOD}\n[card_signature]\nrevoked_kids = [\"old-1\"]\n[[card_signature.pinned]]\norigin = \"https://agent.example\"\njwks = {{ keys = [] }}\n"
    );
    let c = config::parse(Path::new("/etc/cw/walker.toml"), &text).unwrap();
    assert_eq!(c.file.card_signature.revoked_kids, ["old-1"]);
    assert_eq!(
        c.file.card_signature.pinned[0].origin,
        "https://agent.example"
    );
    let bad = format!("{GOOD}\n[card_signature]\nrevoked = [\"x\"]\n");
    let p = problems(&bad);
    assert!(p.iter().any(|p| p.message.contains("revoked")), "{p:?}");
}

#[test]
fn a_relative_jwks_file_is_read_beside_the_config_whatever_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agent.jwks.json"), r#"{"keys": []}"#).unwrap();
    let pinned = "\n[card_signature]\n[[card_signature.pinned]]\norigin = \"https://agent.example\"\njwks_file = \"agent.jwks.json\"\n";
    let path = dir.path().join("walker.toml");
    std::fs::write(&path, format!("{GOOD}{pinned}")).unwrap();
    let c = config::parse(&path, &format!("{GOOD}{pinned}")).unwrap();
    assert_eq!(
        c.file.card_signature.pinned[0].jwks_file.as_deref(),
        Some(dir.path().join("agent.jwks.json").as_path())
    );
    // `config check` run from elsewhere finds it; a missing file is a problem it names.
    let check = |cfg: &Path| {
        Command::new(BIN)
            .args(["config", "check"])
            .arg(cfg)
            .current_dir("/")
            .env_remove("CREDENTIALS_DIRECTORY")
            .output()
            .unwrap()
    };
    let out = check(&path);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    std::fs::remove_file(dir.path().join("agent.jwks.json")).unwrap();
    let out = check(&path);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("[card_signature]") && text.contains("agent.jwks.json"),
        "{text}"
    );
}

#[test]
fn numbers_that_would_overflow_later_are_refused_with_their_line() {
    // Each of these passed `config check` and then panicked the daemon (at start, reload or
    // shutdown): a date overflow, a semaphore's permit limit, an instant overflow.
    for (key, value) in [
        ("jitter_secs", "9223372036854775807"),
        ("concurrency", "18446744073709551615"),
        ("shutdown_grace_secs", "18446744073709551615"),
        ("drain_interval_secs", "0"),
    ] {
        let line = format!("{key} = {value}");
        let text = if key == "jitter_secs" {
            GOOD.replace("jitter_secs = 30", &line)
        } else {
            GOOD.replace("[daemon]\n", &format!("[daemon]\n{line}\n"))
        };
        let at = text.lines().position(|l| l == line).unwrap() + 1;
        let found = problems(&text);
        assert_eq!(found.len(), 1, "{key}: {found:?}");
        assert_eq!(found[0].line, Some(at), "{key}: {found:?}");
        assert!(
            found[0].message.contains("out of range"),
            "{key}: {found:?}"
        );
    }
    let text = GOOD.replace(
        "[daemon]\n",
        "[network]\nrequest_deadline_secs = 100000\n\n[daemon]\n",
    );
    let found = problems(&text);
    assert_eq!(
        found[0].key.as_deref(),
        Some("network.request_deadline_secs")
    );
}

#[test]
fn every_target_with_a_pattern_that_never_fires_is_refused() {
    // The calendar search behind "never fires" is done once per distinct pattern (measured in
    // the issue note with `time conduct-walker config check`), and every target still says so.
    let mut text = String::from("[witness]\nname = \"w\"\nvantage = \"v\"\n");
    for i in 0..250 {
        text.push_str(&format!(
            "\n[[target]]\nname = \"t{i}\"\norigin = \"https://agent.example\"\nschedule = \"0 0 31 2 *\"\n"
        ));
    }
    let found = problems(&text);
    assert_eq!(found.len(), 250);
    assert!(found.iter().all(|p| p.message.contains("never fires")));
    assert_eq!(found[249].line, Some(4 + 249 * 5 + 4));
}

fn config_check(path: &Path, state_dir: Option<&Path>) -> (Option<i32>, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(["config", "check"])
        .arg(path)
        .env_remove("CREDENTIALS_DIRECTORY")
        .env_remove("STATE_DIRECTORY");
    if let Some(d) = state_dir {
        cmd.env("STATE_DIRECTORY", d);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn the_shipped_placeholder_identity_is_flagged_and_refused_once_a_target_would_sign_it() {
    let dir = tempfile::tempdir().unwrap();
    let shipped =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("config/walker.toml"))
            .unwrap()
            .replace("key_credential = \"signing-key\"", "");
    let path = dir.path().join("walker.toml");
    std::fs::write(&path, &shipped).unwrap();
    // As installed (no target): the check passes, but says what is still a placeholder.
    let (code, text) = config_check(&path, Some(dir.path()));
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains(
            "warning: [witness] name is still the shipped placeholder \"Example Witness\""
        ) && text.contains("warning: [witness] vantage is still the shipped placeholder"),
        "{text}"
    );
    // With a target, every record would carry it: refused.
    std::fs::write(
        &path,
        format!(
            "{shipped}\n[[target]]\norigin = \"https://agent.example\"\nschedule = \"@daily\"\n"
        ),
    )
    .unwrap();
    let (code, text) = config_check(&path, Some(dir.path()));
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("error: [witness] name is still the shipped placeholder"),
        "{text}"
    );
    assert!(text.contains("2 problems"), "{text}");
    // Your own identity: no word about placeholders.
    std::fs::write(
        &path,
        std::fs::read_to_string(&path)
            .unwrap()
            .replace("Example Witness", "Jo's witness")
            .replace(
                "Frankfurt, DE; residential fibre (AS3320)",
                "Lyon, FR; office",
            ),
    )
    .unwrap();
    let (code, text) = config_check(&path, Some(dir.path()));
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("placeholder"), "{text}");
}

#[test]
fn a_config_without_a_store_names_the_config_key_not_a_flag_run_lacks() {
    // `run` has no --db: its hint must be daemon.database (and `config check` says the same).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("walker.toml");
    std::fs::write(&path, GOOD.replace("database = \"walker.db\"\n", "")).unwrap();
    let out = Command::new(BIN)
        .args(["run", "--config"])
        .arg(&path)
        .env_remove("STATE_DIRECTORY")
        .env_remove("CREDENTIALS_DIRECTORY")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("--db"), "{err}");
    assert!(
        err.contains("set `database` under [daemon] in") && err.contains("walker.toml"),
        "{err}"
    );
    let (code, text) = config_check(&path, None);
    assert_eq!(code, Some(2), "{text}");
    assert!(!text.contains("--db"), "{text}");
    assert!(text.contains("set `database` under [daemon]"), "{text}");
    assert!(text.contains("1 problem;"), "{text}");
}

#[test]
fn config_check_reload_leaves_the_credential_unread_and_checks_the_rest() {
    // The unit's ExecReload= runs `config check --reload`: systemd 252 does not let a reload
    // process read the credential, and the running daemon keeps the key it loaded at start.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("walker.toml");
    let keyed = GOOD.replace(
        "vantage = \"v\"\n",
        "vantage = \"v\"\nkey_credential = \"signing-key\"\n",
    );
    std::fs::write(&path, &keyed).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(["config", "check"])
            .args(args)
            .arg(&path)
            .env("CREDENTIALS_DIRECTORY", dir.path().join("unreadable"))
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, text) = run(&[]);
    assert_eq!(code, Some(2), "{text}");
    let (code, text) = run(&["--reload"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("key: credential signing-key, as loaded at start"),
        "{text}"
    );
    // Everything else is still checked.
    std::fs::write(&path, format!("{keyed}typo = 1\n")).unwrap();
    let (code, text) = run(&["--reload"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("unknown field `typo`"), "{text}");
}
