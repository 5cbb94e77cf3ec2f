//! `config check` on `[alerts]`, `alerts test` against real receivers (the webhook verified by
//! the official `standardwebhooks` library; email through `aiosmtpd` with STARTTLS and with
//! implicit TLS, authentication required), and `alerts list`.

mod alerts_support;

use alerts_support::{Receiver, SECRET, smtp};
use conduct_walker::sandbox::SandboxCa;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

fn base_config(dir: &Path, alerts: &str) -> std::path::PathBuf {
    let text = format!(
        r#"[witness]
name = "alerts test"
vantage = "loopback"

[network]
extra_ca = ["ca.pem"]

[daemon]
database = "walker.db"
listen = "off"

[[target]]
name = "alpha"
origin = "https://alpha.example"
schedule = "@daily"
{alerts}"#
    );
    let p = dir.join("walker.toml");
    fs::write(&p, text).unwrap();
    p
}

fn cw(args: &[&str], config: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .arg(config)
        .env_remove("CREDENTIALS_DIRECTORY")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn config_check_validates_each_channel_without_reaching_it() {
    let dir = tempfile::tempdir().unwrap();
    SandboxCa::generate()
        .write_pem(&dir.path().join("ca.pem"))
        .unwrap();
    // An http URL, a webhook without its secret, a secret file that is not there, an unknown
    // target, and a bad address: each is named.
    let cfg = base_config(
        dir.path(),
        r#"
[[alerts.channel]]
name = "plain"
kind = "slack"
url = "http://hooks.example/x"

[[alerts.channel]]
name = "unsigned"
kind = "webhook"
url = "https://hooks.example/y"

[[alerts.channel]]
name = "mail"
kind = "email"
smtp_host = "smtp.example"
from = "not an address"
to = ["ops@example.org"]

[[alerts.target]]
name = "nobody"
open_after = 0
"#,
    );
    let o = cw(&["config", "check"], &cfg);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    for needle in [
        r#"alerts.channel "plain": url: must be https (plain http only for a loopback host named in alerts.allow_hosts)"#,
        r#"alerts.channel "unsigned": a webhook is signed"#,
        r#"alerts.channel "mail": from: "not an address" is not an email address"#,
        r#"alerts.target "nobody": no [[target]] has this name"#,
        r#"alerts.target "nobody": alerts: open_after must be at least 1, not 0"#,
    ] {
        assert!(t.contains(needle), "missing {needle:?} in\n{t}");
    }

    // Valid text, but the secret file cannot be read: a problem naming the channel, not the
    // secret; once it exists, OK (and print-config shows only the file's name).
    let cfg = base_config(
        dir.path(),
        r#"
[alerts]
open_after = 3

[[alerts.channel]]
name = "hook"
kind = "webhook"
url = "https://hooks.example/y"
secret_file = "hook.secret"

[[alerts.channel]]
name = "mail"
kind = "email"
smtp_host = "smtp.example"
from = "walker@example.org"
to = ["ops@example.org"]

[[alerts.channel]]
name = "linked"
kind = "email"
smtp_host = "smtp.example"
from = "walker@example.org"
to = ["ops@example.org"]
pages_url = "https://walker.example"
"#,
    );
    let o = cw(&["config", "check"], &cfg);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains(r#"alerts.channel "hook": cannot read"#), "{t}");
    fs::write(dir.path().join("hook.secret"), SECRET).unwrap();
    let o = cw(&["config", "check"], &cfg);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("alerts: channel hook (webhook), daily cap 50, secrets readable"),
        "{t}"
    );
    assert!(t.contains("alerts: open after 3 failing walk(s)"), "{t}");
    // An email channel without pages_url cannot link a record: said, but not refused.
    assert!(
        t.contains(r#"warning: alerts.channel "mail" (email) has no pages_url"#),
        "{t}"
    );
    assert!(
        !t.contains(r#"alerts.channel "linked" (email) has no"#),
        "{t}"
    );
    assert!(
        !t.contains(r#"alerts.channel "hook" (webhook) has no"#),
        "{t}"
    );
    let o = cw(&["print-config"], &cfg);
    let t = text(&o);
    assert!(
        t.contains("hook.secret") && !t.contains(&SECRET[6..]),
        "{t}"
    );
}

/// Plain http is taken only for a loopback host the operator named in `alerts.allow_hosts`
/// (a relay on the same machine); delivered over plain HTTP and verified by the official
/// `standardwebhooks` library.
#[test]
fn plain_http_only_for_a_named_loopback_receiver_and_delivered_over_it() {
    let ca = SandboxCa::generate();
    let plain = Receiver::start(&ca, "plain");
    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    fs::write(dir.path().join("hook.secret"), format!("{SECRET}\n")).unwrap();
    let p = plain.port;
    let config = |allow: &str, url: &str| {
        base_config(
            dir.path(),
            &format!(
                r#"
[alerts]
allow_hosts = [{allow}]

[[alerts.channel]]
name = "hook"
kind = "webhook"
url = "{url}"
secret_file = "hook.secret"
"#
            ),
        )
    };
    let must = r#"alerts.channel "hook": url: must be https (plain http only for a loopback host named in alerts.allow_hosts)"#;
    // Not named (no allow_hosts, another port) or not loopback: refused, naming the channel.
    for (allow, url) in [
        (String::new(), format!("http://127.0.0.1:{p}/hook")),
        (
            format!(r#""127.0.0.1:{}""#, p + 1),
            format!("http://127.0.0.1:{p}/hook"),
        ),
        (
            r#""public.example:80""#.to_string(),
            "http://public.example/hook".to_string(),
        ),
    ] {
        let cfg = config(&allow, &url);
        let o = cw(&["config", "check"], &cfg);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{url} {allow}: {t}");
        assert!(t.contains(must), "{url} {allow}: {t}");
        assert!(plain.entries().is_empty());
    }
    let cfg = config(
        &format!(r#""127.0.0.1:{p}""#),
        &format!("http://127.0.0.1:{p}/hook"),
    );
    let o = cw(&["config", "check"], &cfg);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let o = cw(&["alerts", "test", "--config"], &cfg);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("hook (webhook): delivered (204"), "{t}");
    let e = plain.entries();
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0]["ok"], true, "verified by standardwebhooks: {e:?}");
    assert_eq!(e[0]["path"], "/hook");
    assert_eq!(e[0]["type"], "alerts.test");
    assert_eq!(e[0]["payload"]["id"], e[0]["id"]);
    assert!(e[0]["id"].as_str().unwrap().starts_with("cwa_"), "{e:?}");
}

#[test]
fn alerts_test_says_what_each_channel_answered() {
    let ca = SandboxCa::generate();
    let ok = Receiver::start(&ca, "ok");
    let failing = Receiver::start(&ca, "fail");
    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    fs::write(dir.path().join("hook.secret"), format!("{SECRET}\n")).unwrap();
    let cfg = base_config(
        dir.path(),
        &format!(
            r#"
[alerts]
allow_hosts = ["127.0.0.1:{a}", "127.0.0.1:{b}"]

[[alerts.channel]]
name = "hook"
kind = "webhook"
url = "https://127.0.0.1:{a}/hook"
secret_file = "hook.secret"

[[alerts.channel]]
name = "down"
kind = "ntfy"
url = "https://127.0.0.1:{b}/ntfy"
"#,
            a = ok.port,
            b = failing.port
        ),
    );
    let o = cw(&["alerts", "test", "--channel", "hook", "--config"], &cfg);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("hook (webhook): delivered (204"), "{t}");
    let e = ok.entries();
    assert_eq!(e.len(), 1);
    assert_eq!(e[0]["ok"], true, "verified by standardwebhooks: {e:?}");
    assert_eq!(e[0]["type"], "alerts.test");

    let o = cw(&["alerts", "test", "--config"], &cfg);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("down (ntfy): failed, will retry (500"), "{t}");
    assert_eq!(ok.entries().len(), 2, "each test message is new");
    assert_ne!(ok.entries()[0]["id"], ok.entries()[1]["id"]);

    let o = cw(&["alerts", "test", "--channel", "nope", "--config"], &cfg);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains(r#"no alert channel named "nope""#));

    // A store with no alert yet lists nothing.
    let db = dir.path().join("walker.db");
    conduct_walker::store::Store::open(&db).unwrap();
    let o = Command::new(BIN)
        .args(["alerts", "list", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("no open incident") && t.contains("alerts: none"),
        "{t}"
    );
}

#[test]
fn email_goes_through_aiosmtpd_with_starttls_and_with_implicit_tls() {
    let ca = SandboxCa::generate();
    for mode in ["starttls", "implicit"] {
        let dir = tempfile::tempdir().unwrap();
        ca.write_pem(&dir.path().join("ca.pem")).unwrap();
        let server = smtp(&ca, dir.path(), mode);
        fs::write(dir.path().join("smtp.password"), "s3cret pass\n").unwrap();
        let cfg = base_config(
            dir.path(),
            &format!(
                r#"
[alerts]
allow_hosts = ["127.0.0.1:{p}"]

[[alerts.channel]]
name = "mail"
kind = "email"
smtp_host = "127.0.0.1"
smtp_port = {p}
smtp_tls = "{mode}"
username = "walker"
secret_file = "smtp.password"
from = "walker@example.org"
to = ["ops@example.org", "oncall@example.org"]
"#,
                p = server.port
            ),
        );
        let o = cw(&["alerts", "test", "--config"], &cfg);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "{mode}: {t}");
        assert!(t.contains("mail (email): delivered (250"), "{mode}: {t}");
        let msgs = server.messages();
        assert_eq!(msgs.len(), 1, "{mode}: {msgs:?}");
        let m = &msgs[0];
        assert_eq!(m["authenticated"], true);
        assert_eq!(m["from"], "walker@example.org");
        assert_eq!(
            m["to"],
            serde_json::json!(["ops@example.org", "oncall@example.org"])
        );
        let data = m["data"].as_str().unwrap();
        assert!(
            data.contains("Subject: conduct-walker: test alert"),
            "{data}"
        );
        assert!(data.contains("Message-ID: <cwa_"), "{data}");
        assert!(data.contains("@conduct-walker>"), "{data}");
        assert!(data.contains("alert id: cwa_"), "{data}");
        assert!(data.contains("Content-Type: text/plain"), "{data}");

        // A wrong password: the server's 535 is the answer, at once (not the SMTP deadline),
        // a refusal that is not retried, and nothing is delivered.
        fs::write(dir.path().join("smtp.password"), "not the password\n").unwrap();
        let started = std::time::Instant::now();
        let o = cw(&["alerts", "test", "--config"], &cfg);
        let took = started.elapsed();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{mode}: {t}");
        assert!(
            t.contains("mail (email): refused (535 ")
                && t.contains("5.7.8 Authentication credentials invalid"),
            "{mode}: {t}"
        );
        assert!(
            took < conduct_walker::alerts::deliver::DEADLINE,
            "{mode}: the refusal took {took:?}"
        );
        assert_eq!(server.messages().len(), 1, "{mode}: nothing more delivered");
    }
}

/// The operator's guide's "Alerts" example (docs/operator.md, the README's until issue 42) is a
/// config the parser takes, one channel of each kind.
#[test]
fn the_readme_alerts_example_parses() {
    let guide =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/operator.md")).unwrap();
    let section = &guide[guide.find("## Alerts").expect("an Alerts section")..];
    let start = section.find("```toml\n").unwrap() + 8;
    let example = &section[start..start + section[start..].find("```").unwrap()];
    let text = format!(
        "[witness]\nname = \"w\"\nvantage = \"v\"\n\n[[target]]\nname = \"flaky-agent\"\norigin = \"https://a.example\"\nschedule = \"@daily\"\n\n{example}"
    );
    let cfg = conduct_walker::config::parse(Path::new("/etc/conduct-walker/walker.toml"), &text)
        .unwrap_or_else(|e| panic!("{e}"));
    let kinds: Vec<&str> = cfg
        .alerts
        .channels
        .iter()
        .map(|c| c.kind.as_str())
        .collect();
    assert_eq!(kinds, ["webhook", "slack", "ntfy", "email"]);
    let flaky = cfg.alerts.settings_for("flaky-agent");
    assert_eq!(flaky.open_after, 4);
    assert!(!flaky.triggers.assertion && flaky.triggers.verdict);
    assert_eq!(
        (flaky.window_failures, flaky.window_walks),
        (3, 6),
        "the target inherits the windowed rule"
    );
    assert_eq!((flaky.flap_opens, flaky.flap_window), (3, 20));

    // "Try it": the lines added to the sandbox's config parse, the receiver's CA beside the
    // sandbox's.
    let trial = &section[section.find("### Try it").expect("a Try it section")..];
    let start = trial.find("```toml\n").unwrap() + 8;
    let lines = &trial[start..start + trial[start..].find("```").unwrap()];
    let text = format!(
        "[witness]\nname = \"w\"\nvantage = \"v\"\n\n[[target]]\nname = \"changes-conduct\"\norigin = \"https://127.0.0.1:4433\"\nschedule = \"@daily\"\n\n{lines}"
    );
    let cfg = conduct_walker::config::parse(Path::new("/tmp/sb/walker.toml"), &text)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cfg.extra_ca.len(), 2);
    assert_eq!(cfg.alerts.channels[0].name, "trial");
    assert!(cfg.alerts.channels[0].pages_url.is_some());
    assert_eq!(cfg.alerts.defaults.min_interval_secs, 0);
}
