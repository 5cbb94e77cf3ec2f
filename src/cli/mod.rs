//! One subcommand per user task. Each maps its errors to exit codes: 0 success/PASS, 1 a finding
//! (FAIL, a failed verification), 2 usage or I/O errors.

pub mod bench;
pub mod card;
pub mod daemon;
pub mod intake;
pub mod keys;
pub mod mcp;
pub mod outbox;
pub mod records;
pub mod terms;
pub mod walk;

use std::process::ExitCode;

/// Exit code for a completed run whose answer is "yes" (PASS, verified).
pub const EXIT_OK: u8 = 0;
/// Exit code for a completed run whose answer is "no" (FAIL, not verified).
pub const EXIT_FINDING: u8 = 1;
/// Exit code for usage and I/O errors.
pub const EXIT_ERROR: u8 = 2;

/// Print a one-line error and return exit code 2.
pub fn fail(err: &anyhow::Error) -> ExitCode {
    eprintln!("conduct-walker: error: {err:#}");
    ExitCode::from(EXIT_ERROR)
}
