//! `conduct-walker completions SHELL` and `conduct-walker man --out DIR`: shell
//! completions (clap_complete) and man pages (clap_mangen) generated from the clap definitions
//! the binary parses, plus `conduct-walker.toml(5)` generated from the config parser's own
//! schema ([`documented_tables`]). Nothing here is written by hand that could drift.

use crate::config;
use anyhow::Context as _;
use clap::{Args, CommandFactory as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to print a completion script for: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// A man directory (such as /usr/local/share/man): the pages go into its man1 and man5
    /// subdirectories, created if missing.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// The name of the config file's man page (section 5).
pub const CONFIG_PAGE: &str = "conduct-walker.toml.5";

pub fn completions(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    use std::io::Write as _;
    crate::output::stdout()
        .write_all(completion_script(args.shell).as_bytes())
        .context("cannot write the completion script")?;
    Ok(ExitCode::from(super::EXIT_OK))
}

/// The completion script for `shell`, as `completions` prints it and the package installs it.
pub fn completion_script(shell: clap_complete::Shell) -> String {
    let mut cmd = super::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "conduct-walker", &mut out);
    let script = String::from_utf8_lossy(&out).into_owned();
    match shell {
        // clap_complete 4.6's bash script names the state of `conduct-walker SUB` twice, in two
        // spellings: the word loop sets `conduct__walker__subcmd__SUB`, while the case that
        // completes it is labelled `conduct__subcmd__walker__subcmd__SUB` (the hyphen in the
        // binary's name escaped a second way). Nothing matched, so everything after the first
        // word fell back to file names. One spelling makes them meet again.
        clap_complete::Shell::Bash => script.replace("conduct__subcmd__walker", "conduct__walker"),
        _ => script,
    }
}

pub fn man(args: ManArgs) -> anyhow::Result<ExitCode> {
    let written = write_man_pages(&args.out)?;
    crate::outln!(
        "wrote {} man pages under {}",
        written.len(),
        args.out.display()
    );
    Ok(ExitCode::from(super::EXIT_OK))
}

/// Write `man1/conduct-walker.1`, one `man1/conduct-walker-SUB[-SUB].1` per visible
/// subcommand, and `man5/conduct-walker.toml.5` under `dir`; returns the pages written.
pub fn write_man_pages(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let (man1, man5) = (dir.join("man1"), dir.join("man5"));
    for d in [&man1, &man5] {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    // clap_mangen walks the subcommand tree itself (hidden ones are skipped).
    clap_mangen::generate_to(super::Cli::command(), &man1)
        .with_context(|| format!("cannot write man pages into {}", man1.display()))?;
    // clap knows options, not how the program meets its environment: the top page and run's
    // get the sections an operator looks for.
    for (page, extra) in [
        ("conduct-walker.1", top_page_sections()),
        ("conduct-walker-run.1", run_page_sections()),
    ] {
        let path = man1.join(page);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let at = text.find(".SH VERSION").unwrap_or(text.len());
        let text = format!("{}{extra}{}", &text[..at], &text[at..]);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let config_page = man5.join(CONFIG_PAGE);
    std::fs::write(&config_page, config_man_page())
        .with_context(|| format!("cannot write {}", config_page.display()))?;
    let mut pages = Vec::new();
    for d in [&man1, &man5] {
        for entry in std::fs::read_dir(d).with_context(|| format!("cannot list {}", d.display()))? {
            let path = entry?.path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if name.starts_with("conduct-walker") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    Ok(pages)
}

/// A man section: a heading, then (term, text) pairs as tagged paragraphs.
fn section(page: &mut clap_mangen::roff::Roff, heading: &str, items: &[(&str, &str)]) {
    use clap_mangen::roff::{bold, roman};
    page.control("SH", [heading]);
    for (term, text) in items {
        page.control("TP", []);
        page.text([bold(*term)]);
        page.text([roman(*text)]);
    }
}

/// The closing SEE ALSO section, and the page's text.
fn see_also(mut page: clap_mangen::roff::Roff, pages: &str) -> String {
    page.control("SH", ["SEE ALSO"]);
    page.text([clap_mangen::roff::roman(pages)]);
    page.render()
}

const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "Success: a walk that passed, a store or signature that verified, a daemon stopped cleanly.",
    ),
    (
        "1",
        "A finding: a walk that failed, a verification that did not hold, a submission not filed.",
    ),
    (
        "2",
        "An error: bad usage, an invalid config, an unreadable key or store, a network or I/O failure. The message names what was wrong.",
    ),
    (
        "3",
        "card verify only: a signature verifies, but members a client acts on are outside what it covers (see conduct-walker-card-verify(1)).",
    ),
];

const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "STATE_DIRECTORY",
        "Set by systemd's StateDirectory=: the store is $STATE_DIRECTORY/walker.db unless daemon.database (or, for the commands that take it, --db) names one.",
    ),
    (
        "CONFIGURATION_DIRECTORY",
        "Set by systemd's ConfigurationDirectory=: the config is $CONFIGURATION_DIRECTORY/walker.toml unless a FILE or --config is given.",
    ),
    (
        "CREDENTIALS_DIRECTORY",
        "Set by systemd's LoadCredential=: the signing key is read from $CREDENTIALS_DIRECTORY/signing-key (witness.key_credential).",
    ),
    (
        "CONDUCT_WALKER_LOG",
        "Log filter (tracing's EnvFilter syntax, e.g. info or debug); RUST_LOG when unset; info by default.",
    ),
    (
        "JOURNAL_STREAM",
        "Set under systemd: log lines carry no timestamp (the journal adds its own).",
    ),
    (
        "NOTIFY_SOCKET, WATCHDOG_USEC",
        "Set by systemd for Type=notify and WatchdogSec=: run reports READY=1, STATUS= and WATCHDOG=1.",
    ),
    (
        "SSL_CERT_FILE, SSL_CERT_DIR",
        "Where the system's trust roots are, when not in the usual places.",
    ),
];

const FILES: &[(&str, &str)] = &[
    (
        "/etc/conduct-walker/walker.toml",
        "The daemon's config (conduct-walker.toml(5)); a conffile of the Debian package.",
    ),
    (
        "/etc/conduct-walker/signing-key.pem",
        "The witness's Ed25519 key (PKCS#8 PEM, mode 0600), handed to the service as the signing-key credential.",
    ),
    (
        "/var/lib/conduct-walker/walker.db",
        "The record store (SQLite, mode 0600). While a writer has it open its newest records are in walker.db-wal beside it; a clean exit folds them into walker.db.",
    ),
    (
        "/lib/systemd/system/conduct-walker.service",
        "The systemd unit that runs conduct-walker run.",
    ),
];

fn top_page_sections() -> String {
    use clap_mangen::roff::Roff;
    let mut page = Roff::new();
    section(&mut page, "EXIT STATUS", EXIT_STATUS);
    section(&mut page, "ENVIRONMENT", ENVIRONMENT);
    section(&mut page, "FILES", FILES);
    section(
        &mut page,
        "EXAMPLES",
        &[
            (
                "conduct-walker demo",
                "Walk loopback sandbox agents, honest and misbehaving, and store, sign and file each record.",
            ),
            (
                "conduct-walker walk --origin https://agent.example --witness-name NAME --vantage WHERE",
                "Walk one agent and write its canonical record.",
            ),
            (
                "conduct-walker sandbox",
                "Keep sandbox agents running and print a config that walks them, to try run without a real agent.",
            ),
            (
                "conduct-walker records verify --db walker.db",
                "Check every record's sha256, signature and the hash chain.",
            ),
            (
                "conduct-walker config check /etc/conduct-walker/walker.toml",
                "Say whether the daemon can start with a config, and what it would do.",
            ),
        ],
    );
    see_also(
        page,
        "conduct-walker-run(1), conduct-walker.toml(5), systemctl(1), journalctl(1)",
    )
}

fn run_page_sections() -> String {
    use clap_mangen::roff::Roff;
    let mut page = Roff::new();
    section(
        &mut page,
        "SIGNALS",
        &[
            (
                "SIGTERM, SIGINT",
                "Stop: walks in flight may finish for daemon.shutdown_grace_secs (30 s by default); the rest are recorded as aborted, never as the agent's failure. The store is checkpointed and the daemon exits 0.",
            ),
            (
                "SIGHUP",
                "Reload the config. An invalid file is refused with its line and key, and the running configuration kept. systemctl reload runs config check --reload first, so an invalid file makes the reload fail visibly.",
            ),
        ],
    );
    section(
        &mut page,
        "EXIT STATUS",
        &[
            ("0", "Stopped by a signal, cleanly."),
            (
                "2",
                "Could not start: an invalid config, an unreadable key, a store that cannot be opened, a listener address in use. The message names it.",
            ),
        ],
    );
    section(&mut page, "ENVIRONMENT", ENVIRONMENT);
    section(&mut page, "FILES", FILES);
    section(
        &mut page,
        "EXAMPLES",
        &[
            (
                "systemctl enable --now conduct-walker",
                "Run it as the packaged service (ExecStartPre= checks the config with the key credential).",
            ),
            (
                "systemctl reload conduct-walker",
                "Check and reload the config.",
            ),
            (
                "journalctl -u conduct-walker -f",
                "One line per walk: target, endpoint, sha256, outcome, submission.",
            ),
            (
                "conduct-walker sandbox --out-dir /tmp/sb; conduct-walker run --config /tmp/sb/walker.toml",
                "Try the daemon on loopback sandbox agents.",
            ),
            (
                "curl -s localhost:9464/metrics",
                "Prometheus metrics; /healthz answers 503 when the loop stalls or the store cannot write.",
            ),
        ],
    );
    see_also(
        page,
        "conduct-walker(1), conduct-walker.toml(5), systemd.service(5), systemd.exec(5)",
    )
}

/// `conduct-walker.toml(5)`: every table and key the parser accepts, with its type, default and
/// meaning, from [`documented_tables`].
pub fn config_man_page() -> String {
    use clap_mangen::roff::{Roff, bold, italic, roman};
    let version = format!("conduct-walker {}", env!("CARGO_PKG_VERSION"));
    let mut page = Roff::new();
    page.control("TH", ["conduct-walker.toml", "5", "", version.as_str()]);
    page.control("SH", ["NAME"]);
    page.text([roman(
        "conduct-walker.toml - configuration of the conduct-walker daemon and MCP server",
    )]);
    page.control("SH", ["SYNOPSIS"]);
    page.text([italic("/etc/conduct-walker/walker.toml")]);
    page.control("SH", ["DESCRIPTION"]);
    page.text([
        roman("The TOML file read by "),
        bold("conduct-walker run"),
        roman(" (the daemon), "),
        bold("conduct-walker config check"),
        roman(", "),
        bold("conduct-walker print-config"),
        roman(" and "),
        bold("conduct-walker mcp"),
        roman(
            ". Under systemd it is $CONFIGURATION_DIRECTORY/walker.toml: \
             /etc/conduct-walker/walker.toml with the packaged unit. Every table refuses keys \
             it does not know and names the line, so a misspelt key never falls back to a \
             default. Relative paths are taken relative to the file's directory.",
        ),
    ]);
    page.control("PP", []);
    page.text([roman(
        "The daemon re-reads the file on SIGHUP (systemctl reload conduct-walker); an invalid \
         file is refused and the running configuration kept. With no [[target]] the daemon \
         starts and idles, walking nothing, until targets are added and the file reloaded.",
    )]);
    page.control("PP", []);
    page.text([
        roman("Check a file with "),
        bold("conduct-walker config check"),
        roman(" FILE, and see every default filled in with "),
        bold("conduct-walker print-config --config"),
        roman(" FILE. The commented example is /etc/conduct-walker/walker.toml as installed."),
    ]);
    page.control("SH", ["TABLES AND KEYS"]);
    for table in documented_tables() {
        let header = match (table.name.as_str(), table.array) {
            ("", _) => "top level".to_string(),
            (name, true) => format!("[[{name}]]"),
            (name, false) => format!("[{name}]"),
        };
        page.control("SS", [header.as_str()]);
        // Struct docs open with their header ("`[daemon]`: how the service runs."): said above.
        let description = table
            .description
            .strip_prefix(&format!("`{header}`: "))
            .unwrap_or(&table.description);
        if !description.is_empty() {
            page.text([roman(one_line(description))]);
        }
        for key in &table.keys {
            let detail = match key.default.as_deref() {
                None => format!(" ({}; required)", key.kind),
                Some("unset") => format!(" ({}; optional)", key.kind),
                Some(d) => format!(" ({}; default {d})", key.kind),
            };
            page.control("TP", []);
            page.text([bold(key.name.as_str()), roman(detail)]);
            page.text([roman(one_line(&key.description))]);
        }
    }
    page.control("SH", ["ENVIRONMENT"]);
    page.text([roman(
        "CREDENTIALS_DIRECTORY holds the key named by witness.key_credential (systemd's \
         LoadCredential=); STATE_DIRECTORY holds the default store, walker.db \
         (StateDirectory=); CONFIGURATION_DIRECTORY is where walker.toml is looked for when no \
         file is given (ConfigurationDirectory=).",
    )]);
    see_also(
        page,
        "conduct-walker(1), conduct-walker-run(1), conduct-walker-config-check(1), \
         conduct-walker-mcp(1), systemd.exec(5)",
    )
}

/// Doc comments wrap lines; a man page reflows them itself.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

// The config file's schema, as its man page documents it.

/// One table of the config file as `conduct-walker.toml(5)` documents it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDoc {
    /// Dotted name: `witness`, `target`, `card_signature.pinned`; empty for top-level keys.
    pub name: String,
    /// An array of tables (`[[target]]`), written once per entry.
    pub array: bool,
    pub description: String,
    pub keys: Vec<KeyDoc>,
}

/// One key of a table: what the parser accepts there and what it means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyDoc {
    /// Dotted full name: `daemon.listen`.
    pub name: String,
    /// `string`, `integer`, `boolean`, `array of string`, `one of "a" | "b"`, ...
    pub kind: String,
    /// `None`: required. Otherwise the default as TOML writes it, or `unset`.
    pub default: Option<String>,
    pub description: String,
}

/// Every table and key of the config file, read from the JSON Schema that `schemars` derives
/// from the very structs (and serde attributes and doc comments) the parser deserializes into:
/// the man page cannot list a key the parser refuses, or miss one it accepts.
pub fn documented_tables() -> Vec<TableDoc> {
    let settings =
        schemars::generate::SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let root = settings
        .into_generator()
        .into_root_schema_for::<config::ConfigFile>();
    let mut out = Vec::new();
    collect_tables(root.as_value(), "", false, &mut out);
    out
}

fn collect_tables(schema: &serde_json::Value, name: &str, array: bool, out: &mut Vec<TableDoc>) {
    use serde_json::Value;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut keys = Vec::new();
    let mut nested = Vec::new();
    for (key, prop) in schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let path = if name.is_empty() {
            key.clone()
        } else {
            format!("{name}.{key}")
        };
        // A struct-valued key is a table of its own (`[daemon]`), a list of structs an array of
        // tables (`[[target]]`).
        let is_table = |s: &Value| s.get("properties").is_some();
        if is_table(prop) {
            nested.push((path, prop, false, description(prop)));
            continue;
        }
        if let Some(items) = prop.get("items").filter(|i| is_table(i)) {
            let d = Some(description(prop)).filter(|d| !d.is_empty());
            nested.push((path, items, true, d.unwrap_or_else(|| description(items))));
            continue;
        }
        let default = match prop.get("default") {
            Some(Value::Null) => Some("unset".to_string()),
            Some(v) => Some(v.to_string()),
            None if required.contains(&key.as_str()) => None,
            None => Some("unset".to_string()),
        };
        keys.push(KeyDoc {
            name: path,
            kind: kind(prop),
            default,
            description: description(prop),
        });
    }
    if !name.is_empty() || !keys.is_empty() {
        out.push(TableDoc {
            name: name.to_string(),
            array,
            description: description(schema),
            keys,
        });
    }
    for (path, s, arr, d) in nested {
        let at = out.len();
        collect_tables(s, &path, arr, out);
        // The field's doc comment says more about this use of the table than the struct's.
        if !d.is_empty() {
            out[at].description = d;
        }
    }
}

fn description(s: &serde_json::Value) -> String {
    s.get("description")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn kind(s: &serde_json::Value) -> String {
    use serde_json::Value;
    // An `Option` is "this or null" in JSON Schema; in TOML it is this, or the key left out.
    let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
    if let Some(alts) = s.get("anyOf").and_then(Value::as_array)
        && let [a, b] = alts.as_slice()
        && (is_null(a) || is_null(b))
    {
        return kind(if is_null(a) { b } else { a });
    }
    if let Some(Value::Array(types)) = s.get("type") {
        let mut s = s.clone();
        let types: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        s["type"] = match types.as_slice() {
            [one] => one.clone(),
            many => {
                let names: Vec<String> = many.iter().map(|t| t.to_string()).collect();
                return names.join(" or ");
            }
        };
        if let Some(Value::Array(values)) = s.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
        return kind(&s);
    }
    if let Some(values) = s.get("enum").and_then(Value::as_array) {
        let v: Vec<String> = values.iter().map(Value::to_string).collect();
        return format!("one of {}", v.join(" | "));
    }
    if let Some(variants) = s.get("oneOf").and_then(Value::as_array) {
        let v: Vec<String> = variants
            .iter()
            .filter_map(|v| v.get("const").map(Value::to_string))
            .collect();
        return format!("one of {}", v.join(" | "));
    }
    match s.get("type") {
        Some(Value::String(t)) if t == "array" => match s.get("items") {
            Some(items) => format!("array of {}", kind(items)),
            None => "array".into(),
        },
        Some(Value::String(t)) if t == "object" => "table".into(),
        Some(Value::String(t)) => t.clone(),
        _ => "any TOML value".into(),
    }
}
