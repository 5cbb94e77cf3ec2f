//! `conduct-walker canonical --form FORM FILE [--sha256]`: the canonical bytes of a JSON file,
//! for debugging a hash or a signature that does not match without a signing workaround.
//! Stdout gets the bytes exactly (no newline added), or their sha256 and a newline; a card
//! form's uncovered members go to stderr.

use crate::audit::forms::{self, Form};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// The exit codes, in `--help` and the man page.
pub const EXIT_CODES: &str = "\
Forms: nenrin (records: Python's sorted compact json.dumps, ensure_ascii off; duplicates keep
the last value, NaN is written back, a lone surrogate is refused), rfc8785 (I-JSON only: no
duplicate names, lone surrogates or NaN), card-sdk, card-spec-literal, card-python-legacy,
card-js-1.0.0, card-served-rfc8785 (a card signature's payload under that profile).

Exit codes:
  0  the canonical bytes (or their sha256) were printed
  1  (never)
  2  the form refuses the input (the reason on stderr), or usage or an unreadable file";

#[derive(Debug, Args)]
pub struct CanonicalArgs {
    /// The form: nenrin, rfc8785, or card-PROFILE (sdk, spec-literal, python-legacy, js-1.0.0,
    /// served-rfc8785).
    #[arg(long, value_name = "FORM", value_parser = Form::parse)]
    pub form: Form,
    /// Print the lower-case hex sha256 of the canonical bytes instead of the bytes.
    #[arg(long)]
    pub sha256: bool,
    /// The JSON file (at most 16 MiB).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

pub fn run(args: CanonicalArgs) -> anyhow::Result<ExitCode> {
    let bytes = crate::audit::read_file(&args.file)?;
    let canonical = forms::canonicalise(args.form, &bytes)
        .map_err(|refusal| anyhow::anyhow!("{}: {refusal}", args.file.display()))?;
    for u in &canonical.uncovered {
        crate::errln!("not covered: {} ({})", u.pointer, u.why.code());
    }
    if args.sha256 {
        crate::outln!("{}", crate::digest::sha256_hex(&canonical.bytes));
    } else {
        use std::io::Write as _;
        // Exactly the bytes: no newline, so `| sha256sum` agrees with --sha256.
        let mut out = crate::output::stdout();
        out.write_all(&canonical.bytes)?;
        out.flush()?;
    }
    Ok(ExitCode::from(super::EXIT_OK))
}
