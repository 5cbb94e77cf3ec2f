//! `conduct-walker terms ...`: verify the standing proposals a card publishes.

use crate::cli::EXIT_FINDING;
use crate::cli::net::NetArgs;
use crate::terms::{self, TERMS_EXTENSION_URI, summary};
use anyhow::{Context, bail};
use clap::{ArgGroup, Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

pub use crate::terms::NO_EXTENSION_TEXT;

#[derive(Debug, Subcommand)]
pub enum TermsCommand {
    /// Fetch and verify every standing proposal a card lists, and summarise the terms on offer.
    ///
    /// Exit 0 only when every listed proposal verifies; 1 otherwise (including a card without
    /// the extension: there is nothing verified to report); 2 on usage or I/O errors.
    Verify(VerifyArgs),
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("card").required(true).args(["url", "file"])))]
pub struct VerifyArgs {
    /// Fetch the card from this https URL (its host counts as named by the operator).
    #[arg(long, value_name = "CARD_URL")]
    pub url: Option<String>,
    /// Read the card from a file (treated as a card served to the public).
    #[arg(long, value_name = "CARD")]
    pub file: Option<PathBuf>,
    /// --ca-cert, --allow-private-network, --allow-host, exactly as in `walk`. A proposal host
    /// that only the card names is never admitted to a private address.
    #[command(flatten)]
    pub net: NetArgs,
    /// Print the record's `terms` block with its establishes/does_not_establish lines as JSON
    /// instead of the human summary.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(command: TermsCommand) -> anyhow::Result<ExitCode> {
    match command {
        TermsCommand::Verify(args) => verify(args).await,
    }
}

async fn verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    // The card URL is the operator's choice; proposal hosts are named only via --allow-host.
    let named: Vec<&str> = args.url.iter().map(String::as_str).collect();
    let transport = args.net.transport(&named)?;
    let card_bytes = match (&args.url, &args.file) {
        (Some(url), _) => crate::card_signature::fetch::fetch_card(&transport, url)
            .await
            .map_err(anyhow::Error::msg)?,
        (None, Some(path)) => crate::net::read_file_capped(path, crate::net::BODY_CAP_BYTES)
            .with_context(|| format!("cannot read the card file {}", path.display()))?,
        (None, None) => bail!("give --url CARD_URL or --file CARD"),
    };
    let card = crate::json::parse_lenient(&card_bytes).context("the card is not JSON")?;
    let Some(report) = terms::verify_for_walk(&card, &transport).await else {
        if args.json {
            crate::outln!(
                "{}",
                serde_json::json!({ "terms": null, "extension": TERMS_EXTENSION_URI })
            );
        } else {
            crate::outln!("{NO_EXTENSION_TEXT}");
        }
        return Ok(ExitCode::from(EXIT_FINDING));
    };
    if args.json {
        let out = serde_json::json!({
            "terms": report.record_block(),
            "establishes": report.establishes(),
            "does_not_establish": report.does_not_establish(),
        });
        crate::outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        crate::out!("{}", summary::render(&report));
    }
    Ok(super::exit_answer(report.all_verified()))
}
