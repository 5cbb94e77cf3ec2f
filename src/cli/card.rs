//! `conduct-walker card ...`.
//!
//! `card verify (--url URL | --file FILE) [--jwks FILE] [--ca-cert FILE] [--allow-private-network]
//! [--allow-host HOST:PORT]...` prints one line per signature entry and the verdict. Exit 0 only
//! when at least one entry verifies, 1 when none does (an unsigned card included), 2 for usage
//! and I/O errors (unreadable file, card not fetched, not JSON).

use crate::card_signature::{self, CardVerification, TrustStore};
use crate::cli::net::NetArgs;
use crate::net::Transport;
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

pub use card_signature::fetch::AGENT_CARD_WELL_KNOWN_PATH;

#[derive(Debug, Subcommand)]
pub enum CardCommand {
    /// Verify the JWS signatures of an Agent Card (A2A §8.4): each entry, its key source and the
    /// canonicalisation profile that verified. Exit 0 only if at least one verifies.
    Verify(VerifyArgs),
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["url", "file"])))]
pub struct VerifyArgs {
    /// Fetch the card from this https URL (a bare origin gets /.well-known/agent-card.json).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Read the card from this file.
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Origin the card is judged against (same-host jku, pinned keys); defaults to the --url origin.
    #[arg(long, value_name = "URL")]
    pub origin: Option<String>,
    /// A JWK Set file whose keys are pinned for the card's origin (no jku fetch is needed for them).
    #[arg(long, value_name = "FILE")]
    pub jwks: Option<PathBuf>,
    /// The network flags (private addresses only at the --url host and --allow-host hosts, a
    /// jku host say; --ca-cert roots trusted for the card and jku fetches).
    #[command(flatten)]
    pub net: NetArgs,
    /// Print the record's card_signature block (JSON) instead of the per-entry lines.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(command: CardCommand) -> anyhow::Result<ExitCode> {
    match command {
        CardCommand::Verify(args) => verify(args).await,
    }
}

/// The URL actually fetched for `--url`: a bare origin means the well-known card path.
pub fn card_url(raw: &str) -> anyhow::Result<String> {
    card_signature::fetch::card_url(raw).map_err(|why| anyhow::anyhow!("--url {why}"))
}

async fn verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let fetch_url = args.url.as_deref().map(card_url).transpose()?;
    let origin = match (&args.origin, &fetch_url) {
        (Some(o), _) => o.clone(),
        (None, Some(u)) => url::Url::parse(u)?.origin().ascii_serialization(),
        (None, None) => String::new(),
    };

    let named: Vec<&str> = fetch_url.iter().map(String::as_str).collect();
    let config = args.net.transport_config(&named)?;
    let mut jwks_config = card_signature::jwks_transport_config(config.policy.clone());
    jwks_config.extra_roots = config.extra_roots.clone();
    let transport = Transport::new(config)?;
    let jwks_transport = Transport::new(jwks_config)?;

    let mut trust = TrustStore::default();
    if let Some(path) = &args.jwks {
        if origin.is_empty() {
            bail!("--jwks pins keys for the card's origin: with --file, also give --origin");
        }
        trust.pin_jwks_file(&origin, path)?;
    }

    let bytes = match (&fetch_url, &args.file) {
        (Some(u), _) => card_signature::fetch::fetch_card(&transport, u)
            .await
            .map_err(anyhow::Error::msg)?,
        (None, Some(path)) => crate::net::read_file_capped(path, crate::net::BODY_CAP_BYTES)
            .with_context(|| format!("cannot read card file {}", path.display()))?,
        (None, None) => bail!("give --url or --file"),
    };
    let result =
        card_signature::verify_card_bytes(&bytes, &origin, Some(&jwks_transport), &trust).await?;

    if args.json {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&result.record_block(false))?
        );
    } else {
        crate::out!("{}", render(&result));
    }
    // Usage and I/O errors (exit 2) are the `?`s above; an unsigned card is a finding.
    Ok(super::exit_answer(result.valid))
}

/// The human report: one line per entry, then the verdict and what it does not establish.
pub fn render(v: &CardVerification) -> String {
    let mut out = String::new();
    if !v.present() {
        out.push_str("unsigned: the card carries no signatures\n");
        out.push_str(&format!(
            "not verified\ndoes not establish: {}\n",
            v.attribution_line()
        ));
        return out;
    }
    if let Some(e) = &v.card_invalid {
        out.push_str(&format!("card: {e}\n"));
    }
    for r in &v.signatures {
        out.push_str(&format!(
            "signature {}: {} alg={} kid={}{}{} - {}\n",
            r.index,
            r.status.code(),
            r.alg.as_deref().unwrap_or("-"),
            r.kid.as_deref().unwrap_or("-"),
            r.profile
                .map(|p| format!(" profile={}", p.name()))
                .unwrap_or_default(),
            r.key_source
                .map(|s| format!(" key={}", s.code()))
                .unwrap_or_default(),
            r.reason
        ));
        for w in &r.warnings {
            out.push_str(&format!("  warning: {w}\n"));
        }
    }
    for u in v.uncovered.iter().take(50) {
        out.push_str(&format!("not covered: {} ({})\n", u.pointer, u.why.code()));
    }
    if v.uncovered.len() > 50 {
        out.push_str(&format!("not covered: … {} more\n", v.uncovered.len() - 50));
    }
    out.push_str(&format!(
        "{}\n{}\ndoes not establish: {}\n",
        match v.verified() {
            Some(true) => "verified",
            Some(false) => "not verified",
            None => "not checked",
        },
        v.verified_reason(false),
        v.attribution_line()
    ));
    out
}
