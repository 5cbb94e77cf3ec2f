//! NENRIN rings (spec rings.md): one JSON file per measured endpoint per month that counts the
//! gate's own measurements and the third-party witness walks of that endpoint, chained to the
//! previous month's ring by its sha256, and the in-toto Statement and DSSE envelope over it.
//!
//! The pure core, no I/O and no clock: inputs → ring value → bytes, byte-identical to the
//! reference builder `make_ring.py` v1.1 with every quirk rings.md §7 lists.
//!
//! ```text
//! history bytes ──► history::read (streamed: one entry at a time)  ──► Instants (§3, §5 counts)
//! witness values ──► witness::normalise (§4.1–4.2) ──► Tally::add (§4.3–4.4, input order)
//! prev ring bytes ──► ring::Prev::parse (§2.4)
//!                     ring::assemble(month, endpoint, instants, tally, prev) ──► Ring ──► bytes (§6)
//! ring bytes ──► statement::emit (§8.1–8.2);  envelope + JWKS ──► dsse::verify (§8.3)
//! ```
//!
//! Stranger-sized values (a witness's identity, a manifest hash, a discrepancy) are kept as
//! their canonical text, never as `serde_json::Value` trees, and the caps of [`Limits`] bound
//! what a hostile input can make the builder hold. Reading files and writing rings is
//! `crate::ring_files`; the faces (`cli::ring`, the endpoint page, the MCP `ring_verify` tool)
//! sit on both.

pub mod audit;
pub mod build;
pub mod compare;
pub mod dsse;
pub mod form;
pub mod history;
pub mod inputs;
pub mod py;
pub mod ring;
pub mod spec;
pub mod statement;
pub mod witness;

pub use build::{Built, Request, WitnessFile, build};

use crate::json::bounded::Input;
pub use ring::{Prev, Ring, assemble};

/// The cap on a card, and on any answer the transport reads (`net`'s body cap): the same cap
/// holds for each witness file and each history entry.
pub const CARD_CAP_BYTES: usize = 1024 * 1024;

/// What a builder will hold for a stranger's inputs. The reference has no caps; these refuse,
/// with a clear message, inputs far past any real register's (rings.md §2: the gate keeps 400
/// records per endpoint) instead of exhausting memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// One history entry, or one other member of the history object: the card cap.
    pub history_value_bytes: usize,
    /// The whole history file.
    pub history_bytes: u64,
    /// Measurements of the month kept after de-duplication.
    pub instants: usize,
    /// One witness file: the card cap (and the transport's cap on any ledger answer).
    pub witness_file_bytes: u64,
    /// A ring file (`--prev`, a ring to verify or state).
    pub ring_file_bytes: u64,
    /// Stranger text the ring would carry (identities, hashes, statuses, discrepancies).
    pub carried_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            history_value_bytes: Input::HistoryEntry.caps().bytes,
            history_bytes: 1 << 30,
            instants: 400_000,
            witness_file_bytes: Input::WitnessFile.caps().bytes as u64,
            ring_file_bytes: Input::RingFile.caps().bytes as u64,
            carried_bytes: 32 << 20,
        }
    }
}

/// Why no ring was built. Every case the reference refuses (§2) or crashes on (§7 item 11)
/// ends here, and so do inputs past [`Limits`]: nothing is written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    /// §2.2: `--month` is not `YYYY-MM`.
    #[error("--month YYYY-MM required, not {0:?}")]
    MonthForm(String),
    /// §2.2: neither `--endpoint` nor the history names the endpoint.
    #[error("no endpoint: give --endpoint or a history with an \"endpoint\"")]
    NoEndpoint,
    /// §2.1.
    #[error("history has no entries list: {0}")]
    NoEntries(String),
    /// §2.4: the previous ring's bytes are not the ring form of its content.
    #[error(
        "{0} is not in canonical ring form (its bytes are not the ring form of its own content, so its sha256 is not the one a chain carries)"
    )]
    PrevNotCanonical(String),
    /// §2.4.
    #[error("prev ring is for a different endpoint: {0}")]
    PrevEndpoint(String),
    /// §2.4.
    #[error("prev ring {prev} is not before {month}; chains only run forward")]
    PrevNotBefore { prev: String, month: String },
    /// An input the builder cannot use: not JSON, not the form it must have, or a value the
    /// reference crashes on (§7 item 11).
    #[error("{what}: {why}")]
    Input { what: String, why: String },
    /// Past one of [`Limits`].
    #[error("{what}: {why}")]
    TooLarge { what: String, why: String },
}

impl RingError {
    pub fn input(what: impl Into<String>, why: impl Into<String>) -> Self {
        RingError::Input {
            what: what.into(),
            why: why.into(),
        }
    }
}

/// A month as `--month` gives it, checked as the reference checks it: Python's
/// `re.match(r"^\d{4}-\d{2}$", m)`, so `2026-13` passes, and so does a trailing newline (`$`
/// matches before one). Only ASCII digits are taken (Python's `\d` would also take other
/// scripts' digits: refused here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Month(String);

impl Month {
    pub fn parse(text: &str) -> Result<Month, RingError> {
        let core = text.strip_suffix('\n').unwrap_or(text);
        let b = core.as_bytes();
        let ok = b.len() == 7
            && b[..4].iter().all(u8::is_ascii_digit)
            && b[4] == b'-'
            && b[5..].iter().all(u8::is_ascii_digit);
        if ok {
            Ok(Month(text.to_string()))
        } else {
            Err(RingError::MonthForm(text.to_string()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the month has the v1.1 columns (a string comparison, so `2027-01` has them).
    pub fn is_v11(&self) -> bool {
        self.0.as_str() >= spec::V11_FROM
    }

    /// Whether a text's first 7 characters are this month (rings.md §3.1: a text prefix, not a
    /// UTC date).
    pub fn holds(&self, at: &str) -> bool {
        first_chars(at, 7) == self.0
    }
}

/// The first `n` characters (Python's `s[:n]`).
pub fn first_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The register's slug of an endpoint (§2.5): every `https://` removed, lower-cased, each run
/// of characters outside `[a-z0-9]` made one `-`, and `-` stripped from both ends.
pub fn slug(endpoint: &str) -> String {
    slug_of(&endpoint.replace("https://", "").to_lowercase())
}

fn slug_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut dash = false;
    for c in text.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
            dash = false;
        } else if !dash {
            out.push('-');
            dash = true;
        }
    }
    out.trim_matches('-').to_string()
}

/// The slug the Statement emitter builds when the ring's path does not name it (§8.1):
/// lower-cased **then** `https://` removed, so `HTTPS://` goes too.
pub fn statement_slug(endpoint: &str) -> String {
    slug_of(&endpoint.to_lowercase().replace("https://", ""))
}

/// Python's `urlsplit(endpoint).hostname`: the host of the network location, lower-cased,
/// without user info, port or IPv6 brackets; None when there is none.
pub fn hostname(endpoint: &str) -> Option<String> {
    // urlsplit removes tabs and newlines anywhere and strips leading C0 controls and spaces.
    let url: String = endpoint
        .trim_start_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\r' | '\n'))
        .collect();
    let rest = match url.find(':') {
        Some(i)
            if i > 0
                && url.as_bytes()[0].is_ascii_alphabetic()
                && url[..i]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')) =>
        {
            &url[i + 1..]
        }
        _ => url.as_str(),
    };
    let netloc = rest.strip_prefix("//")?;
    let netloc = &netloc[..netloc.find(['/', '?', '#']).unwrap_or(netloc.len())];
    let hostinfo = netloc.rsplit_once('@').map_or(netloc, |(_, h)| h);
    let host = match hostinfo.split_once('[') {
        Some((_, bracketed)) => bracketed.split_once(']').map_or(bracketed, |(h, _)| h),
        None => hostinfo.split_once(':').map_or(hostinfo, |(h, _)| h),
    };
    if host.is_empty() {
        return None;
    }
    // Lower-cased before a zone id (`%eth0`), which keeps its case.
    Some(match host.split_once('%') {
        Some((h, zone)) => format!("{}%{zone}", h.to_lowercase()),
        None => host.to_lowercase(),
    })
}

/// The coverage origin (§4.3): the endpoint cut at its first `/mcp` (case-sensitive), or the
/// whole endpoint.
pub fn coverage_origin(endpoint: &str) -> &str {
    endpoint.split("/mcp").next().unwrap_or(endpoint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_as_python_s_re_match() {
        for ok in ["2026-08", "2026-13", "0000-00", "2026-09\n"] {
            assert!(Month::parse(ok).is_ok(), "{ok:?}");
        }
        for bad in [
            "2026-8",
            "2026-08-01",
            " 2026-08",
            "2026_08",
            "",
            "2026-08\n\n",
            "２０２６-08",
        ] {
            assert_eq!(
                Month::parse(bad),
                Err(RingError::MonthForm(bad.into())),
                "{bad:?}"
            );
        }
        assert!(!Month::parse("2026-08").unwrap().is_v11());
        assert!(Month::parse("2026-09").unwrap().is_v11());
        assert!(Month::parse("2027-01").unwrap().is_v11());
        // A newline month is later than 2026-09 as a string and holds no instant.
        let m = Month::parse("2026-09\n").unwrap();
        assert!(m.is_v11() && !m.holds("2026-09-01T00:00:00Z"));
        assert!(
            Month::parse("2026-09")
                .unwrap()
                .holds("2026-09-30T23:30:00-05:00")
        );
        assert!(
            !Month::parse("2026-09")
                .unwrap()
                .holds("2026-10-01T01:00:00+09:00")
        );
    }

    #[test]
    fn slugs_as_the_register_writes_them() {
        assert_eq!(
            slug("https://mcp.horizonshield.dev/mcp"),
            "mcp-horizonshield-dev-mcp"
        );
        assert_eq!(
            slug("https://Upper.Example:8443/MCP"),
            "upper-example-8443-mcp"
        );
        assert_eq!(slug("HTTPS://X.example/"), "https-x-example");
        assert_eq!(statement_slug("HTTPS://X.example/"), "x-example");
        assert_eq!(slug("--é-a"), "a");
    }

    #[test]
    fn hostnames_as_urlsplit() {
        let cases = [
            ("https://Upper.Example:8443/MCP", Some("upper.example")),
            ("https://u:p@Host.example/x", Some("host.example")),
            ("https://[::1]:8443/mcp", Some("::1")),
            ("https://host.example?x=1", Some("host.example")),
            ("host.example/mcp", None),
            ("https:///mcp", None),
            ("  https://h.example/\n", Some("h.example")),
        ];
        for (url, want) in cases {
            assert_eq!(hostname(url).as_deref(), want, "{url}");
        }
    }

    #[test]
    fn coverage_origin_cuts_at_the_first_mcp() {
        assert_eq!(
            coverage_origin("https://target.example/mcp"),
            "https://target.example"
        );
        assert_eq!(coverage_origin("https://mcp.example/mcp"), "https:/");
        assert_eq!(
            coverage_origin("https://agent.example/a2a"),
            "https://agent.example/a2a"
        );
    }
}
