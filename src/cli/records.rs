//! `conduct-walker records ...`.

use clap::Subcommand;
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum RecordsCommand {}

pub async fn run(command: RecordsCommand) -> anyhow::Result<ExitCode> {
    match command {}
}
