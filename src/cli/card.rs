//! `conduct-walker card ...`.

use clap::Subcommand;
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum CardCommand {}

pub async fn run(command: CardCommand) -> anyhow::Result<ExitCode> {
    match command {}
}
