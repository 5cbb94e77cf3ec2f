//! The generated documentation keeps up with the code: `conduct-walker.toml(5)` and the example
//! config name every key the parser accepts (and nothing it refuses), every subcommand has its
//! man page, and the shell completions name every subcommand.
//!
//! The parser's accepted keys are read from the parser itself, not from the schema the page is
//! generated from: each table is given an unknown key, and serde's refusal lists every key the
//! table expected. A key added to a config struct without reaching the page fails here.

use clap::CommandFactory as _;
use conduct_walker::cli::{Cli, docs};
use conduct_walker::config::{self, ConfigError};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");
const UNKNOWN: &str = "zz_not_a_key";

/// A table path: each step's key and whether it is an array of tables (`[[target]]`).
type TablePath = Vec<(String, bool)>;

fn dotted(path: &[(String, bool)]) -> String {
    path.iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(".")
}

/// The TOML headers that open the table at `path` (arrays of tables on the way opened too).
fn headers(path: &[(String, bool)]) -> String {
    let mut out = String::new();
    for i in 0..path.len() {
        let name = dotted(&path[..=i]);
        let last = i + 1 == path.len();
        match (path[i].1, last) {
            (true, _) => out.push_str(&format!("[[{name}]]\n")),
            (false, true) => out.push_str(&format!("[{name}]\n")),
            (false, false) => {}
        }
    }
    out
}

/// The keys the parser accepts in the table at `path`, from its refusal of an unknown key;
/// `None` when `path` is not a table (or not this kind of table).
fn accepted_fields(path: &[(String, bool)]) -> Option<Vec<String>> {
    let text = format!("{}{UNKNOWN} = 1\n", headers(path));
    let problems = match config::parse(Path::new("/tmp/probe.toml"), &text) {
        Err(ConfigError::Invalid { problems, .. }) => problems,
        _ => return None,
    };
    problems.iter().find_map(|p| {
        let rest = p
            .message
            .strip_prefix(&format!("unknown field `{UNKNOWN}`, "))?;
        if rest.starts_with("there are no fields") {
            return Some(Vec::new());
        }
        let list = rest
            .strip_prefix("expected one of ")
            .or_else(|| rest.strip_prefix("expected "))?;
        Some(
            list.split(", ")
                .map(|f| f.trim().trim_matches('`').to_string())
                .collect(),
        )
    })
}

/// Every table and key the parser accepts, as dotted paths; tables also listed in `tables`
/// with whether they are arrays of tables.
fn parser_keys() -> (BTreeSet<String>, Vec<(String, bool)>) {
    fn walk(path: TablePath, keys: &mut BTreeSet<String>, tables: &mut Vec<(String, bool)>) {
        let fields = accepted_fields(&path).expect("a table");
        assert!(!fields.is_empty(), "{} accepts no keys", dotted(&path));
        for field in fields {
            let mut child = path.clone();
            child.push((field, false));
            keys.insert(dotted(&child));
            for array in [false, true] {
                child.last_mut().unwrap().1 = array;
                if accepted_fields(&child).is_some() {
                    tables.push((dotted(&child), array));
                    walk(child, keys, tables);
                    break;
                }
            }
        }
    }
    let mut keys = BTreeSet::new();
    let mut tables = Vec::new();
    walk(Vec::new(), &mut keys, &mut tables);
    (keys, tables)
}

/// The tables and keys the example config shows, commented-out ones included (`#key = ...`).
fn example_keys() -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/walker.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let is_name = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c == '_' || c == '.')
    };
    let mut table = String::new();
    let mut keys = BTreeSet::new();
    for line in text.lines() {
        let l = line.trim_start_matches('#').trim();
        let header = l
            .strip_prefix("[[")
            .and_then(|h| h.strip_suffix("]]"))
            .or_else(|| l.strip_prefix('[').and_then(|h| h.strip_suffix(']')));
        if let Some(h) = header.filter(|h| is_name(h)) {
            table = h.to_string();
            keys.insert(table.clone());
            continue;
        }
        if let Some((k, _)) = l.split_once('=')
            && is_name(k.trim())
        {
            let k = k.trim();
            keys.insert(if table.is_empty() {
                k.to_string()
            } else {
                format!("{table}.{k}")
            });
        }
    }
    keys
}

#[test]
fn every_key_the_parser_accepts_is_on_the_config_man_page() {
    let (keys, tables) = parser_keys();
    // Sanity of the probe itself: it found the tables and keys we know of.
    assert!(tables.contains(&("target".into(), true)), "{tables:?}");
    assert!(tables.contains(&("card_signature.pinned".into(), true)));
    assert!(keys.contains("daemon.listen") && keys.contains("target.schedule"));

    let page = docs::config_man_page();
    let table_names: BTreeSet<&str> = tables.iter().map(|(t, _)| t.as_str()).collect();
    for (table, array) in &tables {
        let header = if *array {
            format!(".SS [[{table}]]\n")
        } else {
            format!(".SS [{table}]\n")
        };
        assert!(page.contains(&header), "{header:?} missing from the page");
    }
    for key in keys.iter().filter(|k| !table_names.contains(k.as_str())) {
        assert!(
            page.contains(&format!("\\fB{key}\\fR")),
            "{key} is accepted by the parser but missing from conduct-walker.toml(5)"
        );
    }
    // And the page documents nothing the parser would refuse.
    for table in conduct_walker::cli::docs::documented_tables() {
        for key in &table.keys {
            assert!(
                keys.contains(&key.name),
                "{} is documented but refused",
                key.name
            );
            assert!(
                !key.description.is_empty(),
                "{} has no description",
                key.name
            );
        }
    }
}

#[test]
fn the_example_config_shows_every_key_and_only_accepted_ones() {
    let (keys, _) = parser_keys();
    let example = example_keys();
    let missing: Vec<_> = keys.difference(&example).collect();
    assert!(
        missing.is_empty(),
        "config/walker.toml does not show {missing:?}"
    );
    let refused: Vec<_> = example.difference(&keys).collect();
    assert!(
        refused.is_empty(),
        "config/walker.toml shows keys the parser refuses: {refused:?}"
    );
}

/// Every visible subcommand at any depth, as the words typed: ["records", "list"].
fn subcommand_paths() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_string());
            walk(sub, &path, out);
            out.push(path);
        }
    }
    let mut out = Vec::new();
    walk(&Cli::command(), &[], &mut out);
    out
}

#[test]
fn every_subcommand_has_a_man_page() {
    let dir = tempfile::tempdir().unwrap();
    let written = docs::write_man_pages(dir.path()).unwrap();
    let paths = subcommand_paths();
    assert!(paths.contains(&vec!["records".to_string(), "list".to_string()]));
    assert!(paths.contains(&vec!["outbox".to_string(), "drain".to_string()]));
    assert!(paths.contains(&vec!["mcp".to_string()]));
    let mut expected: Vec<_> = paths
        .iter()
        .map(|p| {
            dir.path()
                .join(format!("man1/conduct-walker-{}.1", p.join("-")))
        })
        .collect();
    expected.push(dir.path().join("man1/conduct-walker.1"));
    expected.push(dir.path().join("man5").join(docs::CONFIG_PAGE));
    for path in &expected {
        let page = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("no man page {}: {e}", path.display()));
        assert!(
            page.contains(".TH "),
            "{} is not a man page",
            path.display()
        );
    }
    expected.sort();
    assert_eq!(written, expected, "pages written vs expected");
}

#[test]
fn shell_completions_name_every_subcommand() {
    let run = |shell: &str| {
        let out = Command::new(BIN)
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let bash = run("bash");
    for path in subcommand_paths() {
        // clap_complete's bash script moves to a subcommand's state on a case pattern
        // `PARENT,NAME)`: every subcommand needs one.
        let pattern = format!(",{})", path.last().unwrap());
        assert!(
            bash.contains(&pattern),
            "bash completion does not name `{}` (no {pattern:?})",
            path.join(" ")
        );
    }
    assert!(run("zsh").contains("#compdef conduct-walker"));
    assert!(run("fish").contains("complete -c conduct-walker"));
    let bad = Command::new(BIN)
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// "Use it from an MCP client" (docs/mcp.md since issue 42 slimmed the README): every client
/// config named in issue 25 is there, in the form that client reads, and each
/// `conduct-walker mcp` command line uses flags the binary has.
#[test]
fn readme_shows_each_mcp_client_its_own_config() {
    let guide =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/mcp.md")).unwrap();
    let start = guide
        .find("## Use it from an MCP client")
        .expect("the MCP section");
    let section = &guide[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    // Every JSON block parses.
    let blocks: Vec<serde_json::Value> = section
        .split("```json\n")
        .skip(1)
        .map(|b| {
            let body = &b[..b.find("```").unwrap()];
            serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}:\n{body}"))
        })
        .collect();
    let stdio_args = serde_json::json!([
        "mcp",
        "--config",
        "/home/you/.config/conduct-walker/walker.toml"
    ]);
    // VS Code: `servers`, with a type.
    assert!(
        blocks
            .iter()
            .any(|b| b["servers"]["conduct-walker"]["type"] == "stdio"
                && b["servers"]["conduct-walker"]["args"] == stdio_args),
        "a VS Code stdio block"
    );
    assert!(
        blocks
            .iter()
            .any(|b| b["servers"]["conduct-walker"]["type"] == "http"
                && b["servers"]["conduct-walker"]["headers"]["Authorization"]
                    .as_str()
                    .is_some_and(|h| h.starts_with("Bearer "))),
        "a VS Code HTTP block with the token"
    );
    // Claude Desktop and Cursor: `mcpServers`.
    assert!(
        blocks
            .iter()
            .any(|b| b["mcpServers"]["conduct-walker"]["args"] == stdio_args),
        "an mcpServers block"
    );
    for place in [
        "claude_desktop_config.json",
        ".cursor/mcp.json",
        ".vscode/mcp.json",
    ] {
        assert!(section.contains(place), "{place}");
    }
    // The Inspector: its options, then `--`, then the server's command with --config.
    let joined = section.replace("\\\n", " ");
    let inspector: Vec<&str> = joined
        .lines()
        .filter(|l| l.contains("@modelcontextprotocol/inspector --cli"))
        .collect();
    assert!(inspector.len() >= 2, "{inspector:?}");
    let stdio = inspector
        .iter()
        .find(|l| !l.contains("http://"))
        .expect("an Inspector stdio line");
    let words: Vec<&str> = stdio.split_whitespace().collect();
    let dashdash = words.iter().position(|w| *w == "--").expect("`--`");
    assert!(
        words[dashdash + 1].ends_with("conduct-walker")
            && words[dashdash + 2..].starts_with(&["mcp", "--config"]),
        "{stdio}"
    );
    assert!(
        !words[..dashdash].contains(&"--config"),
        "the Inspector would take --config as its own: {stdio}"
    );
    // Every flag given to `conduct-walker mcp` exists.
    let help = Command::new(BIN).args(["mcp", "--help"]).output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    for line in joined.lines().filter(|l| l.contains("conduct-walker mcp ")) {
        let after = &line[line.find("conduct-walker mcp ").unwrap()..];
        for flag in after.split_whitespace().filter(|w| w.starts_with("--")) {
            let flag = flag.trim_end_matches(['`', ')', ',']);
            assert!(
                help.contains(flag),
                "`{flag}` ({line}) is not in `mcp --help`"
            );
        }
    }
    for flag in ["--token-file", "--no-auth", "--listen"] {
        assert!(section.contains(flag), "{flag}");
    }
    assert!(section.contains("Authorization: Bearer"));
}

#[test]
fn completions_help_names_every_shell_it_accepts() {
    use clap::ValueEnum as _;
    let help = Command::new(BIN)
        .args(["completions", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    let top = Command::new(BIN).arg("--help").output().unwrap();
    let top = String::from_utf8_lossy(&top.stdout);
    let line = top
        .lines()
        .find(|l| l.trim_start().starts_with("completions"))
        .unwrap();
    for shell in clap_complete::Shell::value_variants() {
        let name = shell.to_possible_value().unwrap().get_name().to_string();
        assert!(
            help.contains(&name),
            "completions --help omits {name}:\n{help}"
        );
        assert!(
            line.contains(&name),
            "--help's completions line omits {name}: {line}"
        );
        let out = Command::new(BIN)
            .args(["completions", &name])
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}");
    }
}

/// Every `--flag` a message in the code names (hints such as "pass --db PATH") is a flag some
/// subcommand takes: a hint must name something that exists.
#[test]
fn every_flag_a_message_names_exists() {
    fn flags(cmd: &clap::Command, out: &mut BTreeSet<String>) {
        for a in cmd.get_arguments() {
            if let Some(l) = a.get_long() {
                out.insert(format!("--{l}"));
            }
        }
        for sub in cmd.get_subcommands() {
            flags(sub, out);
        }
    }
    // Other programs' flags the pages quote: systemctl enable --now; the reference ring
    // builder's make_ring.py --verify, quoted in every ring's `recompute` (rings.md §5.1).
    let mut known = BTreeSet::from(["--help", "--version", "--now", "--verify"].map(String::from));
    flags(&Cli::command(), &mut known);
    let mut unknown = Vec::new();
    let mut stack = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                // Only string literals: the text between quotes on a line of code.
                if line.trim_start().starts_with("//") {
                    continue;
                }
                for (i, literal) in line.split('"').enumerate() {
                    if i % 2 == 0 {
                        continue;
                    }
                    for word in literal.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
                        if word.starts_with("--")
                            && word.len() > 2
                            && word.as_bytes()[2].is_ascii_lowercase()
                            && !known.contains(word)
                        {
                            unknown.push(format!("{}:{}: {word}", path.display(), n + 1));
                        }
                    }
                }
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "flags named in messages that no subcommand takes: {unknown:#?}"
    );
}

/// The Markdown a reader is pointed to: README.md, then every `docs/**/*.md`, each file's path
/// and text, in a stable order.
fn guide_files() -> Vec<(std::path::PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    walk(&root.join("docs"), &mut paths);
    paths.sort();
    paths.insert(0, root.join("README.md"));
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// The README and the guides it links state `walk --mode`'s default as clap has it, and the
/// notes a newcomer needed (each in whichever file now holds it).
#[test]
fn readme_states_what_a_newcomer_ran_into() {
    let readme: String = guide_files()
        .into_iter()
        .map(|(_, text)| text + "\n")
        .collect();
    let cli = Cli::command();
    let walk = cli.find_subcommand("walk").unwrap();
    let mode = walk
        .get_arguments()
        .find(|a| a.get_long() == Some("mode"))
        .unwrap();
    let default = mode.get_default_values()[0].to_string_lossy().into_owned();
    assert!(
        readme.contains(&format!("`--mode` defaults to `{default}`")),
        "neither README nor docs/ says walk --mode defaults to {default}"
    );
    for needle in [
        "about 12 minutes\non 2 cores",
        "ssh -L 9464:127.0.0.1:9464",
        "cargo install cargo-deb --locked --version 3.8.0",
        "dpkg-dev",
        "### Troubleshooting the service",
        "Failed at step CREDENTIALS",
        "`records export --with-signatures`",
        "conduct-walker sandbox",
    ] {
        assert!(readme.contains(needle), "README and docs/ lack {needle:?}");
    }
}

/// Issue 42 moved most of the README into guides under docs/: every section the README had then
/// is still a heading somewhere a reader is sent, the README stays short enough to read in ten
/// minutes (that no page links outside the repository is `tests/architecture.rs`'s check).
#[test]
fn every_guide_section_is_findable_in_docs() {
    // The README's `##` and `###` titles before the move.
    const SECTIONS: &[&str] = &[
        "Try it (fresh machine, no internet needed)",
        "Install",
        "Walk a real agent",
        "Which request profile (`--request-profile spec|reference`, mcp mode only)",
        "Keep, sign and file records",
        "Filing",
        "Follow filed records into the ledger",
        "Audit a store",
        "Records at rest",
        "Retention: shedding old records without losing the audit",
        "Auditing a ledger",
        "Auditing a ring",
        "Use it from an MCP client",
        "Clients, on stdio",
        "Over HTTP, with a token",
        "Tools",
        "What is where",
        "Differences from the reference walker",
        "Conformance",
        "Status pages",
        "Alerts",
        "Try it: one alert opening and resolving",
        "Run as a systemd service",
        "Troubleshooting the service",
    ];
    let files = guide_files();
    // Headings outside code blocks (a `# comment` in a shell block is not one).
    let mut headings = BTreeSet::new();
    for (_, text) in &files {
        let mut in_code = false;
        for line in text.lines() {
            if line.trim_start().starts_with("```") {
                in_code = !in_code;
            } else if !in_code && line.starts_with('#') {
                let title = line.trim_start_matches('#');
                if let Some(title) = title.strip_prefix(' ') {
                    headings.insert(title.trim().to_string());
                }
            }
        }
    }
    let missing: Vec<&&str> = SECTIONS
        .iter()
        .filter(|s| !headings.contains(**s))
        .collect();
    assert!(
        missing.is_empty(),
        "sections of the old README that are a heading nowhere in README.md or docs/: {missing:#?}"
    );

    let lines = files[0].1.lines().count();
    assert!(
        lines < 300,
        "README.md has {lines} lines; keep it under 300"
    );
}

/// The top page and run's page have the sections an operator looks for.
#[test]
fn man_pages_have_signals_environment_files_exit_status_and_examples() {
    let dir = tempfile::tempdir().unwrap();
    docs::write_man_pages(dir.path()).unwrap();
    let top = std::fs::read_to_string(dir.path().join("man1/conduct-walker.1")).unwrap();
    let run = std::fs::read_to_string(dir.path().join("man1/conduct-walker-run.1")).unwrap();
    for (name, page, sections) in [
        (
            "conduct-walker(1)",
            &top,
            &["EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES"][..],
        ),
        (
            "conduct-walker-run(1)",
            &run,
            &["SIGNALS", "EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES"][..],
        ),
    ] {
        for s in sections {
            assert!(
                page.contains(&format!(".SH \"{s}\"")) || page.contains(&format!(".SH {s}")),
                "{name} has no {s} section"
            );
        }
    }
    for needle in ["SIGHUP", "SIGTERM", "shutdown_grace_secs"] {
        assert!(run.contains(needle), "run's page does not mention {needle}");
    }
    // Every environment variable the code reads is on the page.
    for var in [
        "STATE_DIRECTORY",
        "CONFIGURATION_DIRECTORY",
        "CREDENTIALS_DIRECTORY",
        "CONDUCT_WALKER_LOG",
        "JOURNAL_STREAM",
        "SSL_CERT_FILE",
    ] {
        assert!(top.contains(var) && run.contains(var), "{var} missing");
    }
}

/// README's "Join the witness pool" config is one the parser takes, face included, and the
/// steps name the commands the binary has.
#[test]
fn the_readme_witness_pool_example_parses_and_its_commands_exist() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = &readme[readme
        .find("## Join the witness pool")
        .expect("a Join the witness pool section")..];
    let start = section.find("```toml\n").unwrap() + 8;
    let block = &section[start..start + section[start..].find("```").unwrap()];
    let text: String = block
        .lines()
        .map(str::trim_start)
        .collect::<Vec<_>>()
        .join("\n");
    let cfg = conduct_walker::config::parse(Path::new("/etc/conduct-walker/walker.toml"), &text)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let face = cfg.witness_face.expect("the face is on");
    assert_eq!(face.member.origin, "https://witness.example.org");
    assert!(face.member.reciprocal);
    let cli = Cli::command();
    let witness = cli.find_subcommand("witness").unwrap();
    for sub in ["selfcheck", "ask", "answer", "verify"] {
        assert!(witness.find_subcommand(sub).is_some(), "witness {sub}");
        assert!(
            section.contains(&format!("witness {sub}")) || sub == "answer" || sub == "verify",
            "README names witness {sub}"
        );
    }
}
