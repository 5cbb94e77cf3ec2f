//! One JSON document read from a byte stream a value at a time, for documents too large to hold
//! (a ring's history: 100,000 gate records of a few KB each).
//!
//! The stream finds where the next value ends (strings, escapes and bracket depth only) and
//! hands its bytes to [`super::read`], which checks them exactly as it checks a whole document,
//! with the nesting left at that depth. So the document is accepted or refused as a whole
//! [`super::read`] would, while at most one value (capped) and one read buffer are held. The
//! structure around the values (`[`, `,`, `:`, `]`, whitespace) is checked here.

use super::read::{REFERENCE_MAX_DEPTH, ReadError, ReadOptions, read};
use super::{Doc, is_ws_byte};
use std::io::Read;

const CHUNK: usize = 64 * 1024;

/// Why a streamed document was not read.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// The value starting at byte `at` is not JSON (its error's position is within the value).
    #[error("at byte {at}: {source}")]
    Value {
        at: u64,
        #[source]
        source: ReadError,
    },
    #[error("at byte {at}: {what}")]
    Syntax { at: u64, what: &'static str },
    #[error("the value at byte {at} is larger than {cap} bytes")]
    ValueTooLarge { at: u64, cap: usize },
    #[error("larger than {cap} bytes")]
    DocumentTooLarge { cap: u64 },
}

/// A document being read from `src`.
pub struct Stream<R> {
    src: R,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    eof: bool,
    /// Bytes consumed before `buf[0]`.
    base: u64,
    cap: u64,
}

impl<R: Read> Stream<R> {
    /// A stream that refuses a document longer than `cap` bytes.
    pub fn new(src: R, cap: u64) -> Self {
        Stream {
            src,
            buf: vec![0; CHUNK],
            pos: 0,
            len: 0,
            eof: false,
            base: 0,
            cap,
        }
    }

    /// Bytes read so far (the position of the next byte).
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Refill when the buffer is used up; false at the end of the input.
    fn fill(&mut self) -> Result<bool, StreamError> {
        if self.pos < self.len {
            return Ok(true);
        }
        if self.eof {
            return Ok(false);
        }
        self.base += self.len as u64;
        self.pos = 0;
        self.len = 0;
        loop {
            match self.src.read(&mut self.buf) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.len = n;
                    if self.base + n as u64 > self.cap {
                        return Err(StreamError::DocumentTooLarge { cap: self.cap });
                    }
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The next byte that is not whitespace, not consumed; None at the end.
    pub fn peek(&mut self) -> Result<Option<u8>, StreamError> {
        loop {
            if !self.fill()? {
                return Ok(None);
            }
            let b = self.buf[self.pos];
            if is_ws_byte(b) {
                self.pos += 1;
            } else {
                return Ok(Some(b));
            }
        }
    }

    /// Consume `b` (after whitespace), or fail naming what was expected.
    pub fn expect(&mut self, b: u8, what: &'static str) -> Result<(), StreamError> {
        if self.peek()? == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(StreamError::Syntax {
                at: self.offset(),
                what,
            })
        }
    }

    /// After the last value: only whitespace may follow.
    pub fn finish(&mut self) -> Result<(), StreamError> {
        match self.peek()? {
            None => Ok(()),
            Some(_) => Err(StreamError::Syntax {
                at: self.offset(),
                what: "Extra data",
            }),
        }
    }

    /// The next value, at most `cap` bytes of text, nested inside `depth` containers already
    /// open (it may open at most [`REFERENCE_MAX_DEPTH`] − `depth` more).
    pub fn value(&mut self, cap: usize, depth: usize) -> Result<Doc, StreamError> {
        let mut text = Vec::new();
        let at = self.raw_value(cap, depth, &mut text)?;
        let options = ReadOptions {
            max_depth: REFERENCE_MAX_DEPTH.saturating_sub(depth),
            ..ReadOptions::LENIENT
        };
        read(&text, options).map_err(|source| StreamError::Value { at, source })
    }

    /// Call `each` with every item of the array that starts here (its `[` not yet consumed),
    /// each read as [`Stream::value`] one level deeper.
    pub fn array_items(
        &mut self,
        cap: usize,
        depth: usize,
        mut each: impl FnMut(Doc) -> Result<(), StreamError>,
    ) -> Result<(), StreamError> {
        if depth + 1 > REFERENCE_MAX_DEPTH {
            return Err(StreamError::Value {
                at: self.offset(),
                source: ReadError::TooDeep(REFERENCE_MAX_DEPTH),
            });
        }
        self.expect(b'[', "Expecting '['")?;
        if self.peek()? == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            let item = self.value(cap, depth + 1)?;
            each(item)?;
            match self.peek()? {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => {
                    return Err(StreamError::Syntax {
                        at: self.offset(),
                        what: "Expecting ',' delimiter",
                    });
                }
            }
        }
    }

    /// Copy the next value's text into `out`; its start offset.
    fn raw_value(
        &mut self,
        cap: usize,
        depth: usize,
        out: &mut Vec<u8>,
    ) -> Result<u64, StreamError> {
        let Some(first) = self.peek()? else {
            return Err(StreamError::Syntax {
                at: self.offset(),
                what: "Expecting value",
            });
        };
        let at = self.offset();
        let mut scan = Scan::new(first, depth);
        loop {
            if !self.fill()? {
                // The end of the input ends a bare scalar; anything else is cut short, which
                // the reader reports in its own words.
                break;
            }
            let chunk = &self.buf[self.pos..self.len];
            let (used, done) = scan.feed(chunk);
            if out.len() + used > cap {
                return Err(StreamError::ValueTooLarge { at, cap });
            }
            out.extend_from_slice(&chunk[..used]);
            self.pos += used;
            if let Some(problem) = scan.too_deep {
                return Err(StreamError::Value {
                    at,
                    source: ReadError::TooDeep(problem),
                });
            }
            if done {
                break;
            }
        }
        Ok(at)
    }
}

/// Where a value ends: bracket depth outside strings, string ends past escapes, and for a bare
/// scalar the first delimiter.
struct Scan {
    kind: u8,
    depth: usize,
    base: usize,
    in_string: bool,
    escaped: bool,
    started: bool,
    too_deep: Option<usize>,
}

impl Scan {
    fn new(first: u8, base: usize) -> Self {
        Scan {
            kind: first,
            depth: 0,
            base,
            in_string: false,
            escaped: false,
            started: false,
            too_deep: None,
        }
    }

    /// Consume from `chunk`: how many bytes belong to the value, and whether it ended.
    fn feed(&mut self, chunk: &[u8]) -> (usize, bool) {
        for (i, &b) in chunk.iter().enumerate() {
            if !self.started {
                self.started = true;
                match b {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth = 1,
                    _ => {}
                }
                if self.base + self.depth > REFERENCE_MAX_DEPTH {
                    self.too_deep = Some(REFERENCE_MAX_DEPTH);
                    return (i + 1, true);
                }
                continue;
            }
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                    if self.depth == 0 {
                        return (i + 1, true);
                    }
                }
                continue;
            }
            if self.kind != b'{' && self.kind != b'[' {
                // A bare scalar runs to the first delimiter.
                if is_ws_byte(b) || matches!(b, b',' | b']' | b'}' | b':') {
                    return (i, true);
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.depth += 1;
                    if self.base + self.depth > REFERENCE_MAX_DEPTH {
                        self.too_deep = Some(REFERENCE_MAX_DEPTH);
                        return (i + 1, true);
                    }
                }
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        return (i + 1, true);
                    }
                }
                _ => {}
            }
        }
        (chunk.len(), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(text: &str, cap: usize) -> Result<Vec<String>, StreamError> {
        let mut s = Stream::new(text.as_bytes(), u64::MAX);
        let mut out = Vec::new();
        s.array_items(cap, 0, |d| {
            out.push(d.root().canonical_string());
            Ok(())
        })?;
        s.finish()?;
        Ok(out)
    }

    #[test]
    fn items_are_read_one_at_a_time_as_the_whole_reader_reads_them() {
        let got = items(
            r#" [ {"a": "x]}\"", "b": [1, {}]}, 2.50, "s,]", true , null,[[]],-7e2 ] "#,
            1024,
        )
        .unwrap();
        assert_eq!(
            got,
            [
                r#"{"a":"x]}\"","b":[1,{}]}"#,
                "2.5",
                r#""s,]""#,
                "true",
                "null",
                "[[]]",
                "-700.0"
            ]
        );
        assert_eq!(items("[]", 10).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn what_the_whole_reader_refuses_is_refused() {
        for bad in [
            "[1,]",
            "[1 2]",
            "[1,2",
            "[\"x]",
            "[{]",
            "[1] x",
            "[tru]",
            "[01]",
            "[1,,2]",
            "[{\"a\" 1}]",
        ] {
            assert!(items(bad, 1024).is_err(), "{bad}");
            assert!(read(bad.as_bytes(), ReadOptions::LENIENT).is_err(), "{bad}");
        }
    }

    #[test]
    fn caps_hold_for_a_value_the_nesting_and_the_document() {
        let e = items(&format!("[\"{}\"]", "x".repeat(100)), 50).unwrap_err();
        assert!(
            matches!(e, StreamError::ValueTooLarge { cap: 50, .. }),
            "{e}"
        );
        // 993 levels in all, the array counted: its items may nest 992.
        let deep = |n: usize| format!("[{}{}]", "[".repeat(n), "]".repeat(n));
        assert!(items(&deep(992), 1 << 20).is_ok());
        let e = items(&deep(993), 1 << 20).unwrap_err();
        assert!(
            matches!(
                e,
                StreamError::Value {
                    source: ReadError::TooDeep(_),
                    ..
                }
            ),
            "{e}"
        );
        // 10,000 deep is refused as soon as the depth passes, not after reading it all.
        assert!(items(&deep(10_000), 1 << 20).is_err());
        let mut s = Stream::new(&b"[1, 2, 3]"[..], 4);
        assert!(matches!(
            s.array_items(10, 0, |_| Ok(())),
            Err(StreamError::DocumentTooLarge { cap: 4 })
        ));
    }

    #[test]
    fn values_across_buffer_refills() {
        let item = format!("{{\"k\":\"{}\\\"\",\"n\":[1,2,3]}}", "é".repeat(40_000));
        let text = format!("[{}]", [item.as_str(); 5].join(" , "));
        let got = items(&text, 1 << 20).unwrap();
        assert_eq!(got.len(), 5);
        assert!(got[4].ends_with("\\\"\",\"n\":[1,2,3]}"));
    }
}
