//! The one reader for every document a stranger hands us (issue 36, item 9), with its caps
//! stated once, here, in [`Input::caps`].
//!
//! A card was the first such document and is read whatever its shape (conduct-walk.md §8.3
//! item 22): as a [`Doc`], whose memory follows the text (about 7 bytes per byte at worst),
//! and copied into a `serde_json::Value` only under [`super::large_tree_permit`]. Every other
//! document a stranger writes (an import line, a terms document, a JWKS, an intake's or a
//! ledger's answer, a task ledger's answer, a ring file) is read here instead:
//! - its length is capped before anything is read (a [`Doc`] of `n` bytes then costs at most
//!   about `7 n`);
//! - its nesting is capped at the reference reader's depth (no deeper than the card's);
//! - a `Value` tree is built from it only when the tree is estimated at no more than
//!   [`TREE_BYTES`]: a `Value` costs ~640 bytes per object, so 1 MB of nested one-key objects
//!   is 200+ MiB as a tree (measured: `records import` of a 7 MB line of nested copies took
//!   558 MiB, `terms verify` of a 1 MB proposal nested at `/price/grade` 261 MiB).
//!
//! A refusal names the input and the cap it passed, and nothing else is done with the document.

use super::{Doc, ReadError, ReadOptions, StrictJsonError};
use serde_json::Value;

/// The largest `Value` tree built from a stranger's document (by
/// [`Doc::estimated_value_bytes`]). The same figure as [`super::LARGE_TREE_BYTES`], past which
/// a card's tree waits its turn: below it no document needs to wait, past it no other input
/// is copied into a tree at all. Ordinary documents are far below it (a 1 MiB card of short
/// skills is ~10 MiB as a tree).
pub const TREE_BYTES: usize = super::LARGE_TREE_BYTES;

const MIB: usize = 1024 * 1024;

/// A kind of document read from a stranger, for its caps and its name in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// One line of a `records import` file: a record or a submission body. A record is at most
    /// 65,536 characters to an intake (conduct-walk.md §5); the cap leaves room for a kept
    /// full record beside it.
    ImportLine,
    /// A whole `records import` file read as one document (a pretty-printed record or intake
    /// body): the same cap as a line, which a record's indentation cannot approach.
    ImportDocument,
    /// A standing proposal (Agent SoW document) a card lists: the body cap of any answer.
    TermsDocument,
    /// A witness's key_url document (`{"public_key_ed25519_b64": ...}`), fetched by
    /// `inspect --fetch-key`: a key and a few names.
    KeyDocument,
    /// A JWK Set named by a signed card (`jku`), or pinned from a file.
    Jwks,
    /// An intake's answer to a submission, a lookup or `GET /witness`.
    IntakeAnswer,
    /// A ledger's answer to one request (an export is read line by line under its own caps).
    LedgerAnswer,
    /// A task ledger's answer to a filed observation.
    TaskLedgerAnswer,
    /// A ring to verify or state, or the previous ring.
    RingFile,
    /// A witness file given to a ring build, or a folder's `jwks.json`.
    WitnessFile,
    /// One entry (or other member) of a ring's history file, read as a stream.
    HistoryEntry,
}

/// What a stranger's document may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Longest text read, in bytes.
    pub bytes: usize,
    /// Deepest nesting of objects and arrays.
    pub depth: usize,
    /// Largest estimated `Value` tree built from it.
    pub tree_bytes: usize,
}

impl Input {
    /// Every stranger's document's caps, in one table.
    pub const fn caps(self) -> Caps {
        let bytes = match self {
            Input::ImportLine | Input::ImportDocument => MIB,
            Input::TermsDocument => MIB,
            Input::Jwks | Input::KeyDocument => 64 * 1024,
            Input::IntakeAnswer => MIB,
            Input::LedgerAnswer => MIB,
            Input::TaskLedgerAnswer => MIB,
            Input::RingFile => 4 * MIB,
            Input::WitnessFile => MIB,
            Input::HistoryEntry => MIB,
        };
        Caps {
            bytes,
            depth: super::REFERENCE_MAX_DEPTH,
            tree_bytes: TREE_BYTES,
        }
    }

    /// Its name in messages.
    pub const fn name(self) -> &'static str {
        match self {
            Input::ImportLine => "an import line",
            Input::ImportDocument => "an import document",
            Input::TermsDocument => "a terms document",
            Input::Jwks => "a JWK Set",
            Input::KeyDocument => "a key document",
            Input::IntakeAnswer => "an intake's answer",
            Input::LedgerAnswer => "a ledger's answer",
            Input::TaskLedgerAnswer => "a task ledger's answer",
            Input::RingFile => "a ring file",
            Input::WitnessFile => "a witness file",
            Input::HistoryEntry => "a history entry",
        }
    }
}

impl std::fmt::Display for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a stranger's document was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("{input} of {len} bytes is over the cap of {cap} bytes; not read")]
    TooLong {
        input: Input,
        len: usize,
        cap: usize,
    },
    #[error(
        "{input} would take about {} MiB as a tree (its shape: many nested objects), over the cap of {} MiB; not read",
        .estimate.div_ceil(MIB),
        .cap / MIB
    )]
    TreeTooLarge {
        input: Input,
        estimate: usize,
        cap: usize,
    },
    #[error("{0}")]
    NotJson(ReadError),
}

impl Refused {
    /// Whether the document passed a cap (rather than not being JSON).
    pub fn over_cap(&self) -> bool {
        !matches!(self, Refused::NotJson(_))
    }
}

fn check_len(input: Input, bytes: &[u8]) -> Result<Caps, Refused> {
    let caps = input.caps();
    if bytes.len() > caps.bytes {
        return Err(Refused::TooLong {
            input,
            len: bytes.len(),
            cap: caps.bytes,
        });
    }
    Ok(caps)
}

/// Read a stranger's document as a [`Doc`], within its length and depth caps.
pub fn read(input: Input, bytes: &[u8], options: ReadOptions) -> Result<Doc, Refused> {
    let caps = check_len(input, bytes)?;
    let options = ReadOptions {
        max_depth: options.max_depth.min(caps.depth),
        ..options
    };
    super::read(bytes, options).map_err(Refused::NotJson)
}

/// Refuse a document whose `Value` tree would pass the cap (for a caller that reads the
/// [`Doc`] first and builds the tree later, or lets the store build it).
pub fn check_tree(input: Input, doc: &Doc) -> Result<(), Refused> {
    let estimate = doc.estimated_value_bytes();
    let cap = input.caps().tree_bytes;
    if estimate > cap {
        return Err(Refused::TreeTooLarge {
            input,
            estimate,
            cap,
        });
    }
    Ok(())
}

/// Read a stranger's document into a `Value` tree, within all its caps.
pub fn value(input: Input, bytes: &[u8], options: ReadOptions) -> Result<Value, Refused> {
    let doc = read(input, bytes, options)?;
    check_tree(input, &doc)?;
    Ok(doc.root().to_value())
}

/// [`value`] as Python reads a card ([`super::parse_lenient`]'s rules).
pub fn lenient(input: Input, bytes: &[u8]) -> Result<Value, Refused> {
    value(input, bytes, ReadOptions::LENIENT)
}

/// [`value`] as I-JSON ([`super::parse_strict`]'s rules and errors; a cap passed is
/// [`StrictJsonError::OverCap`]).
pub fn strict(input: Input, bytes: &[u8]) -> Result<Value, StrictJsonError> {
    value(input, bytes, ReadOptions::STRICT).map_err(|e| match e {
        Refused::NotJson(ReadError::DuplicateKey(name)) => StrictJsonError::DuplicateKey(name),
        Refused::NotJson(e) => StrictJsonError::Syntax(e.to_string()),
        over => StrictJsonError::OverCap(over.to_string()),
    })
}

/// For a document another parser reads (a typed `serde` reader): refuse it if it passes a cap
/// of [`Input::caps`]. A body short enough that no shape reaches the tree cap is not read
/// here; a longer one is read once as a [`Doc`] to find out. One that is not JSON is left to
/// the caller's parser, which names the problem in its own words.
pub fn admit(input: Input, bytes: &[u8]) -> Result<(), Refused> {
    check_len(input, bytes)?;
    if !super::may_be_large_tree(bytes.len()) {
        return Ok(());
    }
    match read(input, bytes, ReadOptions::LENIENT) {
        Ok(doc) => check_tree(input, &doc),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` chains of `depth` nested one-key objects in an array.
    fn chains(count: usize, depth: usize) -> Vec<u8> {
        let chain = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
        format!("[{}]", vec![chain; count].join(",")).into_bytes()
    }

    #[test]
    fn every_input_is_capped_below_what_a_card_may_cost() {
        for input in [
            Input::ImportLine,
            Input::ImportDocument,
            Input::KeyDocument,
            Input::TermsDocument,
            Input::Jwks,
            Input::IntakeAnswer,
            Input::LedgerAnswer,
            Input::TaskLedgerAnswer,
            Input::RingFile,
            Input::WitnessFile,
            Input::HistoryEntry,
        ] {
            let caps = input.caps();
            assert!(caps.bytes <= 4 * MIB, "{input}");
            assert_eq!(caps.depth, super::super::REFERENCE_MAX_DEPTH);
            assert_eq!(caps.tree_bytes, super::super::LARGE_TREE_BYTES);
        }
    }

    #[test]
    fn a_long_document_is_refused_before_it_is_read() {
        let long = vec![b' '; MIB + 1];
        let e = read(Input::ImportLine, &long, ReadOptions::LENIENT).unwrap_err();
        assert_eq!(
            e.to_string(),
            "an import line of 1048577 bytes is over the cap of 1048576 bytes; not read"
        );
        assert!(e.over_cap());
        assert!(admit(Input::Jwks, &long).is_err());
    }

    #[test]
    fn a_costly_shape_is_read_but_not_copied_into_a_tree() {
        let hostile = chains(1_600, 100);
        assert!(hostile.len() < MIB);
        assert!(read(Input::TermsDocument, &hostile, ReadOptions::LENIENT).is_ok());
        let e = lenient(Input::TermsDocument, &hostile).unwrap_err();
        assert!(matches!(e, Refused::TreeTooLarge { .. }), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("a terms document would take about ")
                && e.to_string().contains("over the cap of 16 MiB"),
            "{e}"
        );
        assert!(matches!(
            strict(Input::TermsDocument, &hostile),
            Err(StrictJsonError::OverCap(_))
        ));
        assert!(admit(Input::LedgerAnswer, &hostile).is_err());
        // The same count of shallow objects is an ordinary document.
        let ordinary = chains(1_600, 2);
        assert!(lenient(Input::TermsDocument, &ordinary).is_ok());
        assert!(admit(Input::LedgerAnswer, &ordinary).is_ok());
    }

    #[test]
    fn acceptance_and_errors_are_the_unbounded_reader_s() {
        let text = br#"{"a":1,"a":NaN}"#;
        assert_eq!(
            lenient(Input::IntakeAnswer, text).unwrap(),
            super::super::parse_lenient(text).unwrap()
        );
        assert_eq!(
            strict(Input::Jwks, text),
            super::super::parse_strict(text).map(|_| unreachable!())
        );
        assert_eq!(
            lenient(Input::IntakeAnswer, b"[1,]")
                .unwrap_err()
                .to_string(),
            "Expecting value: line 1 column 4 (char 3)"
        );
        // Not JSON to this reader: the caller's own parser says why.
        assert!(admit(Input::LedgerAnswer, &vec![b'['; 60_000]).is_ok());
    }
}
