//! The status pages of a running daemon in a real browser (Debian's headless Chromium, which
//! `.ci/run` installs): the DOM holds the expected rows, the hostile agent's payloads (which try
//! to change `document.title`) did not run, and the overview's screenshot is taken (the README's
//! `docs/overview.png` with `UPDATE_SCREENSHOT=1`). Skips, saying so, only where no Chromium is installed.

mod common;
mod daemon_support;
mod pages_support;

use conduct_walker::sandbox::agent::Metadata;
use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use daemon_support::{Daemon, config, free_port, target};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const CHROMIUM: &str = "/usr/bin/chromium";
const EVERY_SECOND: &str = "* * * * * *";
const A2A: &str = "mode = \"a2a\"\nwire = \"1.0\"\n";

fn chromium(args: &[&str], url: &str) -> std::process::Output {
    // A fresh profile per run; no network but the page's own origin is ever contacted.
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(CHROMIUM);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(args)
    .arg(url);
    let out = cmd.output().expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium {args:?} {url} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn dump_dom(url: &str) -> scraper::Html {
    // --virtual-time-budget lets any script that could run, run, before the DOM is dumped.
    let out = chromium(&["--dump-dom", "--virtual-time-budget=2000"], url);
    scraper::Html::parse_document(&String::from_utf8(out.stdout).unwrap())
}

fn sel(s: &str) -> scraper::Selector {
    scraper::Selector::parse(s).unwrap()
}

fn title(doc: &scraper::Html) -> String {
    doc.select(&sel("title"))
        .next()
        .map(|t| t.text().collect())
        .unwrap_or_default()
}

#[test]
fn a_browser_renders_the_pages_and_runs_none_of_the_payloads() {
    if !Path::new(CHROMIUM).exists() {
        println!(
            "SKIPPED: no browser at {CHROMIUM}; `apt-get install -y chromium` (as .ci/run does) to run this test"
        );
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ca = SandboxCa::generate();
    let start = |b: Behaviour| rt.block_on(SandboxAgent::start(&ca, b)).unwrap();
    let honest = start(Behaviour::default());
    let failing = start(Behaviour {
        metadata: Metadata::ServedBy("https://elsewhere.example/mcp".into()),
        ..Behaviour::default()
    });
    let hostile = start(pages_support::hostile_behaviour());
    let targets = [
        target("honest-agent", &honest.origin(), A2A, EVERY_SECOND),
        target("misbound-agent", &failing.origin(), A2A, EVERY_SECOND),
        target("hostile-agent", &hostile.origin(), A2A, EVERY_SECOND),
    ]
    .concat();
    let addr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let mut d = Daemon::start(&ca, addr, &config(addr, 10, &targets));
    d.wait_for("four walks per target", Duration::from_secs(90), |d| {
        let walks = d.walks();
        ["honest-agent", "misbound-agent", "hostile-agent"]
            .iter()
            .all(|n| {
                walks
                    .iter()
                    .filter(|w| w.target == *n && w.state == "done")
                    .count()
                    >= 4
            })
    });
    let base = format!("http://{addr}");

    let overview = dump_dom(&format!("{base}/"));
    assert_eq!(
        title(&overview),
        "Overview · conduct-walker",
        "a payload ran"
    );
    let names: Vec<String> = overview
        .select(&sel("tr.target"))
        .map(|r| r.value().attr("data-name").unwrap().to_string())
        .collect();
    assert_eq!(names, ["honest-agent", "hostile-agent", "misbound-agent"]);
    let verdict = |name: &str| -> String {
        overview
            .select(&sel(&format!(
                "tr.target[data-name=\"{name}\"] td.verdict a"
            )))
            .next()
            .unwrap()
            .text()
            .collect()
    };
    assert!(
        verdict("honest-agent").starts_with("PASS"),
        "{}",
        verdict("honest-agent")
    );
    assert!(
        verdict("misbound-agent").starts_with("FAIL"),
        "{}",
        verdict("misbound-agent")
    );
    assert_eq!(overview.select(&sel("script")).count(), 0);
    assert_eq!(overview.select(&sel("img")).count(), 0);

    // The hostile agent's newest record, in the browser.
    let sha = d
        .walks()
        .into_iter()
        .rev()
        .find(|w| w.target == "hostile-agent" && w.state == "done")
        .and_then(|w| w.record_sha256)
        .unwrap();
    let record = dump_dom(&format!("{base}/records/{sha}"));
    assert_eq!(
        title(&record),
        format!("Record {} · conduct-walker", &sha[..12]),
        "a payload ran"
    );
    let text: String = record.root_element().text().collect();
    assert!(text.contains(pages_support::XSS_SCRIPT), "shown as text");
    assert!(text.contains(pages_support::XSS_IMG), "shown as text");
    assert_eq!(record.select(&sel("script")).count(), 0);
    assert_eq!(record.select(&sel("img")).count(), 0);

    // The README's screenshot: written under target/ on every run, and over docs/overview.png
    // only when asked (UPDATE_SCREENSHOT=1), so running the tests leaves the source tree alone.
    let png: PathBuf = if std::env::var_os("UPDATE_SCREENSHOT").is_some() {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/overview.png")
    } else {
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("overview.png")
    };
    std::fs::create_dir_all(png.parent().unwrap()).unwrap();
    let shot = tempfile::tempdir().unwrap();
    let tmp = shot.path().join("overview.png");
    chromium(
        &[
            &format!("--screenshot={}", tmp.display()),
            "--window-size=1280,900",
            "--virtual-time-budget=2000",
        ],
        &format!("{base}/"),
    );
    let bytes = std::fs::read(&tmp).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(bytes.len() > 10_000, "a real page, not a blank one");
    std::fs::write(&png, &bytes).unwrap();
    drop(d);
}
