//! The builder (rings.md §2–§6) over inputs already opened: the history as a byte stream, the
//! witness files one at a time in command-line order, the previous ring's bytes.

use super::history::{self, HistoryEndpoint};
use super::witness::{self, Tally};
use super::{Limits, Month, Prev, Ring, RingError, assemble, slug};
use crate::digest::sha256_hex;
use crate::json::{ReadOptions, read};
use std::io::Read;

/// One witness file: a name for errors and its bytes.
#[derive(Debug, Clone)]
pub struct WitnessFile {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// What to build.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// `--month` as given.
    pub month: &'a str,
    /// `--endpoint`, when given (an empty one counts as not given, as in the reference).
    pub endpoint: Option<&'a str>,
    pub limits: Limits,
}

/// A built ring and what names it.
#[derive(Debug, Clone)]
pub struct Built {
    pub ring: Ring,
    pub bytes: Vec<u8>,
    pub sha256: String,
    pub month: Month,
    pub endpoint: String,
    /// `<slug>` of `rings/<slug>/<month>.json`.
    pub slug: String,
}

/// Build a ring. `witnesses` yields each witness file when asked (so only one is held at a
/// time); `prev` is the previous ring's name and bytes.
pub fn build(
    req: &Request<'_>,
    history: impl Read,
    witnesses: impl IntoIterator<Item = Result<WitnessFile, RingError>>,
    prev: Option<(&str, &[u8])>,
) -> Result<Built, RingError> {
    let month = Month::parse(req.month)?;
    let history = history::read(history, &month, &req.limits)?;
    let endpoint = match (req.endpoint.filter(|e| !e.is_empty()), history.endpoint) {
        (Some(e), _) => e.to_string(),
        (None, Some(HistoryEndpoint::Str(e))) => e,
        (None, Some(HistoryEndpoint::NotString(v))) => {
            return Err(RingError::input(
                "history",
                format!("its endpoint is {v}, not a string"),
            ));
        }
        (None, _) => return Err(RingError::NoEndpoint),
    };
    let prev = prev
        .map(|(name, bytes)| Prev::parse(bytes, name, &endpoint, &month))
        .transpose()?;
    let mut tally = Tally::new(&month, &endpoint, &req.limits);
    for file in witnesses {
        let file = file?;
        add_witness(&mut tally, &file)?;
    }
    let columns = tally.finish()?;
    let ring = assemble(
        &month,
        &endpoint,
        &history.instants,
        &columns,
        prev.as_ref(),
    );
    let bytes = ring.to_bytes();
    Ok(Built {
        sha256: sha256_hex(&bytes),
        slug: slug(&endpoint),
        ring,
        bytes,
        month,
        endpoint,
    })
}

/// One witness file: one JSON value, normalised and counted (§2.3, §4).
pub fn add_witness(tally: &mut Tally, file: &WitnessFile) -> Result<(), RingError> {
    let what = || format!("witness file {}", file.name);
    let doc = read(&file.bytes, ReadOptions::LENIENT)
        .map_err(|e| RingError::input(what(), format!("not JSON: {e}")))?;
    let walk = witness::normalise(doc.root()).map_err(|why| RingError::input(what(), why))?;
    if let Some(walk) = walk {
        tally
            .add(&walk)
            .map_err(|why| RingError::input(what(), why))?;
    }
    Ok(())
}
