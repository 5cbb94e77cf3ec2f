//! `conduct-walker terms ...`.

use clap::Subcommand;
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum TermsCommand {}

pub async fn run(command: TermsCommand) -> anyhow::Result<ExitCode> {
    match command {}
}
