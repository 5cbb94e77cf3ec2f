//! `conduct-walker card ...`.
//!
//! `card verify (--url URL | --file FILE) [--profile NAME] [--origin URL] [--jwks FILE] [--json]
//! [network flags]` prints one line per signature entry and the verdict. The exit code is the
//! verdict (see [`VERIFY_EXIT_CODES`]); 2 is kept for errors, as ripgrep does, so a script never
//! mistakes a failed run for an answer.

use crate::card_signature::{self, CardAudit, CardVerdict, Profile, TrustStore};
use crate::cli::net::NetArgs;
use crate::net::Transport;
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

pub use card_signature::fetch::AGENT_CARD_WELL_KNOWN_PATH;

/// The exit codes of `card verify`, in its `--help` and man page.
pub const VERIFY_EXIT_CODES: &str = "\
Exit codes:
  0  verified: a signature verifies and every member a client acts on (url, supportedInterfaces,
     securitySchemes, a snake_case twin with another value, ...) is inside what it covers
  1  not verified: no signature verifies, the card is unsigned, nothing could be checked, or the
     input is not a card (not JSON)
  2  error: usage, an unreadable file, a card or key that could not be fetched
  3  verified, with uncovered members a client acts on: the signature does not vouch for them

--origin: the origin the card is judged against (pinned keys, same-host jku). With --url it is
the URL's origin; with --file it is the first signature's jku origin (said on the output), and
--jwks with --file needs a card with a jku or an explicit --origin.";

#[derive(Debug, Subcommand)]
pub enum CardCommand {
    /// Verify the JWS signatures of an Agent Card (A2A §8.4): each entry, its key source and the
    /// canonicalisation profile that verified. Exit 0 only if one verifies and covers every
    /// member a client acts on.
    #[command(after_help = VERIFY_EXIT_CODES)]
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
    /// Origin the card is judged against (same-host jku, pinned keys); defaults to the --url
    /// origin, or for --file to the first signature's jku origin.
    #[arg(long, value_name = "URL")]
    pub origin: Option<String>,
    /// A JWK Set file whose keys are pinned for the card's origin (no jku fetch is needed for them).
    #[arg(long, value_name = "FILE")]
    pub jwks: Option<PathBuf>,
    /// Check one canonicalisation profile only (sdk, spec-literal, python-legacy, js-1.0.0,
    /// served-rfc8785) instead of each in turn.
    #[arg(long, value_name = "NAME", value_parser = parse_profile)]
    pub profile: Option<Profile>,
    /// The network flags (private addresses only at the --url host and --allow-host hosts, a
    /// jku host say; --ca-cert roots trusted for the card and jku fetches).
    #[command(flatten)]
    pub net: NetArgs,
    /// Print the verdict as JSON (verdict, reason, acted_on_uncovered, the record's
    /// card_signature block), for every outcome, a card that is not JSON included.
    #[arg(long)]
    pub json: bool,
}

/// A profile by the name records use.
pub fn parse_profile(name: &str) -> Result<Profile, String> {
    Profile::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
        format!("no profile {name:?}: one of {}", names.join(", "))
    })
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

/// The exit code of a verdict.
pub fn verdict_exit(verdict: CardVerdict) -> u8 {
    match verdict {
        CardVerdict::Verified => super::EXIT_OK,
        CardVerdict::VerifiedUncovered => super::EXIT_UNCOVERED,
        CardVerdict::NotVerified
        | CardVerdict::NotChecked
        | CardVerdict::Unsigned
        | CardVerdict::Refused => super::EXIT_FINDING,
    }
}

async fn verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let fetch_url = args.url.as_deref().map(card_url).transpose()?;
    let named: Vec<&str> = fetch_url.iter().map(String::as_str).collect();
    let config = args.net.transport_config(&named)?;
    let mut jwks_config = card_signature::jwks_transport_config(config.policy.clone());
    jwks_config.extra_roots = config.extra_roots.clone();
    let transport = Transport::new(config)?;
    let jwks_transport = Transport::new(jwks_config)?;

    let bytes = match (&fetch_url, &args.file) {
        (Some(u), _) => card_signature::fetch::fetch_card(&transport, u)
            .await
            .map_err(anyhow::Error::msg)?,
        (None, Some(path)) => crate::net::read_file_capped(path, crate::net::BODY_CAP_BYTES)
            .with_context(|| format!("cannot read card file {}", path.display()))?,
        (None, None) => bail!("give --url or --file"),
    };
    let read = match card_signature::read_card_bytes(&bytes) {
        Ok(read) => read,
        Err(refused) => {
            // A verdict, not an error: the bytes were read and are not a card.
            if args.json {
                let answer = serde_json::json!({
                    "verdict": CardVerdict::Refused.code(),
                    "reason": refused.to_string(),
                    "card_signature": null,
                });
                crate::outln!("{}", serde_json::to_string_pretty(&answer)?);
            } else {
                crate::outln!("refused: {refused}\n{}", CardVerdict::Refused.text());
            }
            return Ok(ExitCode::from(verdict_exit(CardVerdict::Refused)));
        }
    };
    let (origin, origin_from) = match (&args.origin, &fetch_url, read.jku_origin()) {
        (Some(o), _, _) => (o.clone(), "--origin"),
        (None, Some(u), _) => (url::Url::parse(u)?.origin().ascii_serialization(), "--url"),
        (None, None, Some(jku)) => (
            jku,
            "the first signature's jku (give --origin to judge another)",
        ),
        (None, None, None) => (String::new(), "none"),
    };

    let mut trust = TrustStore::default();
    if let Some(path) = &args.jwks {
        if origin.is_empty() {
            bail!(
                "--jwks pins keys for the card's origin: this card names no jku, so with --file also give --origin"
            );
        }
        trust.pin_jwks_file(&origin, path)?;
    }
    let profiles: Vec<Profile> = args.profile.into_iter().collect();
    let audit = read
        .audit(&origin, Some(&jwks_transport), &trust, &profiles)
        .await;

    if args.json {
        let mut answer = audit.to_json();
        answer["origin"] = serde_json::json!({"origin": origin, "from": origin_from});
        answer["profiles_tried"] = serde_json::json!(match args.profile {
            Some(p) => vec![p.name()],
            None => Profile::ALL.iter().map(|p| p.name()).collect(),
        });
        crate::outln!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        if origin_from != "--url" && origin_from != "--origin" && !origin.is_empty() {
            crate::outln!("origin: {origin} (from {origin_from})");
        }
        crate::out!("{}", render(&audit));
    }
    Ok(ExitCode::from(verdict_exit(audit.verdict)))
}

/// The human report: one line per entry, then the verdict and what it does not establish.
pub fn render(audit: &CardAudit) -> String {
    let v = &audit.verification;
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
    for g in audit.gaps.iter().take(50) {
        out.push_str(&format!(
            "acted on, not covered: {} ({}): {}\n",
            g.pointer,
            g.why.code(),
            g.matters
        ));
    }
    out.push_str(&format!(
        "{}\n{}\ndoes not establish: {}\n",
        audit.verdict.text(),
        v.verified_reason(false),
        v.attribution_line()
    ));
    out
}
