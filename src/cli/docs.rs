//! `conduct-walker completions SHELL` and `conduct-walker man --out DIR`: shell
//! completions (clap_complete) and man pages (clap_mangen) generated from the clap definitions
//! the binary parses, plus `conduct-walker.toml(5)` generated from the config parser's own
//! schema (`config::documented_tables`). Nothing here is written by hand that could drift.

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
    std::io::stdout()
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
    println!(
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

/// `conduct-walker.toml(5)`: every table and key the parser accepts, with its type, default and
/// meaning, from `config::documented_tables`.
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
    for table in config::documented_tables() {
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
    page.control("SH", ["SEE ALSO"]);
    page.text([roman(
        "conduct-walker(1), conduct-walker-run(1), conduct-walker-config-check(1), \
         conduct-walker-mcp(1), systemd.exec(5)",
    )]);
    page.render()
}

/// Doc comments wrap lines; a man page reflows them itself.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
