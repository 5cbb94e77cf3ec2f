//! `conduct-walker inspect FILE... [--public-key KEY] [--signature B64] [--json]`: what each
//! file is and what holds about it, offline (see `crate::audit::inspect`).

use crate::audit::inspect::{self, Given, Report};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// The exit codes, in `--help` and the man page.
pub const EXIT_CODES: &str = "\
Kinds: a walk record (jidec-path-v1, full or commitment), an intake body line (record_canonical
and its signature), a witness observation (nenrin-witness-observation-v1), a ring
(nenrin-ring-v1), a key-history document (key-history-v1), a gate verdict (record_sha256 and
status). Pretty or compact: the canonical form's sha256 is printed beside the bytes' own.

Exit codes:
  0  every file is of a known kind and nothing checked failed (a check that could not be made,
     such as a signature without a key, is said and does not fail)
  1  a file is not JSON or of no known kind, or a check failed (a signature, a claimed hash,
     an observation's §5.5 checks, a ring not in ring form)
  2  usage, an unreadable file, a file over 16 MiB, a key that cannot be read or (with
     --fetch-key) fetched";

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The files (each at most 16 MiB).
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// The Ed25519 public key to check signatures with: base64, base64url, 64 hex digits, or a
    /// file holding any of those or the key_url document `pubkey` prints.
    #[arg(long, value_name = "KEY")]
    pub public_key: Option<String>,
    /// A record's detached signature (base64), for a record file that does not carry one.
    #[arg(long, value_name = "B64")]
    pub signature: Option<String>,
    /// Fetch the key each record names (its `witness.key_url`) over HTTPS and check the
    /// signature with the `public_key_ed25519_b64` served there (opt-in: nothing is fetched
    /// otherwise). A key that cannot be fetched exits 2.
    #[arg(long, conflicts_with = "public_key")]
    pub fetch_key: bool,
    #[command(flatten)]
    pub net: super::net::NetArgs,
    /// One JSON report per file, one per line.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let mut given = Given {
        signature: args.signature.map(|s| s.trim().to_string()),
        ..Given::default()
    };
    if let Some(key) = &args.public_key {
        let (key, doc) = public_key(key)?;
        given.public_key = Some(key);
        given.key_doc = doc;
    }
    let mut all_hold = true;
    for path in &args.files {
        let bytes = crate::audit::read_file(path)?;
        let mut report = if args.fetch_key {
            fetched_key_report(&bytes, &given, &args.net).await?
        } else {
            inspect::inspect(&bytes, &given)
        };
        if args.fetch_key && report.notes.iter().all(|n| !n.starts_with("key fetched")) {
            report.notes.push(
                "--fetch-key: the file names no witness.key_url, so no key was fetched".into(),
            );
        }
        all_hold &= report.holds();
        if args.json {
            let mut answer = report.to_json();
            answer["file"] = serde_json::json!(path.display().to_string());
            crate::outln!("{}", serde_json::to_string(&answer)?);
        } else {
            crate::out!("{}", render(&path.display().to_string(), &report));
        }
    }
    Ok(super::exit_answer(all_hold))
}

/// The report of one file with the key its record's `witness.key_url` serves, fetched through
/// the project's transport (https only, no redirects, the caps of `NetArgs`).
async fn fetched_key_report(
    bytes: &[u8],
    given: &Given,
    net: &super::net::NetArgs,
) -> anyhow::Result<Report> {
    let Some(url) = inspect::key_url(bytes) else {
        return Ok(inspect::inspect(bytes, given));
    };
    // The URL is the file's, not the operator's: a private address needs --allow-host.
    let transport = net.transport(&[])?;
    let ex = transport
        .fetch(&crate::net::HttpRequest::get(
            url.clone(),
            &[("Accept", "application/json")],
        ))
        .await;
    if let Some(e) = &ex.transport_error {
        anyhow::bail!("--fetch-key: {url}: {e}");
    }
    if ex.status != 200 {
        anyhow::bail!("--fetch-key: {url}: answered {}, not 200", ex.status);
    }
    use crate::json::bounded::{self, Input};
    let doc = bounded::lenient(Input::KeyDocument, &ex.body)
        .map_err(|e| anyhow::anyhow!("--fetch-key: {url}: {e}"))?;
    let served = crate::witness_pool::validate::served_key(&doc)
        .ok_or_else(|| anyhow::anyhow!("--fetch-key: {url}: no public_key_ed25519_b64 string"))?;
    let (key, _) =
        inspect::parse_key(served).map_err(|why| anyhow::anyhow!("--fetch-key: {url}: {why}"))?;
    let given = Given {
        public_key: Some(key),
        key_doc: Some(doc),
        ..given.clone()
    };
    let mut report = inspect::inspect(bytes, &given);
    report.notes.push(format!("key fetched from {url}"));
    Ok(report)
}

/// A `--public-key` argument: the key as standard padded base64, and the key_url document it
/// came from when it was one. The text, or a file holding it, in any form
/// [`inspect::parse_key`] reads (`records verify-file` takes it the same way).
pub fn public_key(arg: &str) -> anyhow::Result<(String, Option<serde_json::Value>)> {
    let path = std::path::Path::new(arg);
    let text = if path.is_file() {
        String::from_utf8(crate::audit::read_file(path)?)
            .map_err(|_| anyhow::anyhow!("--public-key {arg}: not UTF-8"))?
    } else {
        arg.to_string()
    };
    inspect::parse_key(&text).map_err(|why| anyhow::anyhow!("--public-key: {why}"))
}

/// The human report of one file.
pub fn render(name: &str, r: &Report) -> String {
    let mut out = format!("{name}: {}\n", r.kind.description());
    out.push_str(&format!(
        "  sha256 of the bytes as given: {}\n",
        r.sha256_given
    ));
    if let (Some(form), Some(sha)) = (r.canonical_form, &r.sha256_canonical) {
        out.push_str(&format!(
            "  sha256 of the {form} bytes:   {sha} ({})\n",
            if r.canonical_agrees() == Some(true) {
                "the same: the file is in that form"
            } else {
                "different: the file is not in that form; the canonical sha256 is its identity"
            }
        ));
    }
    for c in &r.checks {
        let verdict = match c.holds {
            Some(true) => "holds",
            Some(false) => "FAILS",
            None => "not checked",
        };
        out.push_str(&format!("  {}: {verdict}: {}\n", c.name, c.detail));
    }
    for e in &r.establishes {
        out.push_str(&format!("  establishes: {e}\n"));
    }
    for e in &r.does_not_establish {
        out.push_str(&format!("  does not establish: {e}\n"));
    }
    for n in &r.notes {
        out.push_str(&format!("  note: {n}\n"));
    }
    out.push_str(&format!("  {}\n", if r.holds() { "OK" } else { "NOT OK" }));
    out
}
