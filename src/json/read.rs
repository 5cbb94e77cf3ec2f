//! A JSON reader that accepts exactly what the reference walker's reader accepts: CPython 3.11's
//! `json.loads` over the body decoded as strict UTF-8 (conduct-walk.md §2.3, §4.1, §8.3 items 18,
//! 21–23), and builds a compact [`Doc`] rather than a tree of heap objects.
//!
//! Hand-written on purpose, like `crate::canonical`: acceptance is defined by a CPython
//! implementation, and no crate reproduces it. serde_json differs on every edge the spec lists:
//! it stops at 128 levels, refuses lone surrogate escapes and `NaN`, and accepts integers of any
//! length, where CPython 3.11 refuses one of more than 4,300 digits (`int` conversion limit). The
//! rules, each from CPython 3.11's `json` package and its C scanner:
//! - the text is UTF-8 (invalid UTF-8 is refused before reading; a BOM is then an unexpected
//!   character, as `json.loads` of a `str` reports);
//! - whitespace is only space, tab, LF and CR, before and after the value and between tokens;
//! - strings refuse raw control characters below U+0020; escapes are `\" \\ \/ \b \f \n \r \t`
//!   and `\uXXXX` (either case of hex); a high surrogate escape directly followed by a low one
//!   is one character, any other surrogate escape is a lone surrogate, which CPython keeps;
//! - numbers are `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?` and an exponent without digits
//!   is not part of the number; with a fraction or exponent it is a float, else an int;
//! - `NaN`, `Infinity` and `-Infinity` are values (lenient mode);
//! - a duplicate member name: the last value wins, in the first name's place (lenient mode);
//! - every `{` or `[` is one level of recursion; CPython raises `RecursionError` past its limit,
//!   which for the reference reading a card is 993 levels ([`REFERENCE_MAX_DEPTH`]).

use super::doc::{Doc, FLAG_CONSTANT, FLAG_FLOAT, FLAG_LONE_SURROGATE, Node, Tag};

/// The deepest nesting the reference reads: a card whose deepest value sits inside 993 objects
/// or arrays is read, one more level is not JSON (§8.3 item 21, measured on CPython 3.11.7).
pub const REFERENCE_MAX_DEPTH: usize = 993;

/// CPython 3.11's limit on the digits of an integer converted from text
/// (`sys.get_int_max_str_digits()`): `json.loads` raises `ValueError` past it.
pub const PYTHON_INT_MAX_STR_DIGITS: usize = 4300;

/// How a document is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// `NaN`, `Infinity`, `-Infinity` accepted as numbers (Python's reader).
    pub python_constants: bool,
    /// Duplicate member names refused (I-JSON) rather than last-wins.
    pub refuse_duplicates: bool,
    /// Lone surrogate escapes refused (I-JSON) rather than kept (as U+FFFD in the [`Doc`]).
    pub refuse_lone_surrogates: bool,
    /// Deepest nesting of objects and arrays read.
    pub max_depth: usize,
}

impl ReadOptions {
    /// The reference walker's reader (CPython 3.11 `json.loads`).
    pub const LENIENT: ReadOptions = ReadOptions {
        python_constants: true,
        refuse_duplicates: false,
        refuse_lone_surrogates: false,
        max_depth: REFERENCE_MAX_DEPTH,
    };
    /// I-JSON (RFC 7493) as RFC 8785 inputs need: no `NaN`, no duplicates, no lone surrogates.
    pub const STRICT: ReadOptions = ReadOptions {
        python_constants: false,
        refuse_duplicates: true,
        refuse_lone_surrogates: true,
        max_depth: REFERENCE_MAX_DEPTH,
    };
}

/// Why a document was not read, with where (Python's wording and position form where it has
/// one: `Expecting value: line 1 column 1 (char 0)`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("not UTF-8: invalid byte sequence at byte {0}")]
    NotUtf8(usize),
    #[error("{what}: line {line} column {column} (char {char_index})")]
    Syntax {
        what: String,
        line: usize,
        column: usize,
        char_index: usize,
    },
    #[error("nested deeper than {0} levels (the reference's reader raises RecursionError)")]
    TooDeep(usize),
    #[error(
        "an integer of {0} digits: Python's reader refuses more than {PYTHON_INT_MAX_STR_DIGITS}"
    )]
    IntegerTooLong(usize),
    #[error("duplicate member name {0:?}")]
    DuplicateKey(String),
    #[error("lone surrogate escape \\u{0:04x}: {1}")]
    LoneSurrogate(u32, String),
}

/// Read `bytes` as one JSON document.
pub fn read(bytes: &[u8], options: ReadOptions) -> Result<Doc, ReadError> {
    let text = std::str::from_utf8(bytes).map_err(|e| ReadError::NotUtf8(e.valid_up_to()))?;
    Reader::new(text, options).document()
}

struct Reader<'a> {
    src: &'a [u8],
    text: &'a str,
    pos: usize,
    options: ReadOptions,
    doc: Doc,
    /// Node indexes of the containers open around `pos`.
    open: Vec<u32>,
    /// Reused for each string that has escapes.
    scratch: String,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Four hex digits (either case), as CPython's scanner reads a `\u` escape.
fn hex4(bytes: &[u8]) -> Option<u32> {
    let digits = bytes.get(..4)?;
    let mut v = 0u32;
    for &b in digits {
        v = (v << 4) | (b as char).to_digit(16)?;
    }
    Some(v)
}

impl<'a> Reader<'a> {
    fn new(text: &'a str, options: ReadOptions) -> Self {
        Reader {
            src: text.as_bytes(),
            text,
            pos: 0,
            options,
            doc: Doc::with_capacity(text.len()),
            open: Vec::new(),
            scratch: String::new(),
        }
    }

    /// Python's `JSONDecodeError` text for a problem at byte `at`.
    fn error<T>(&self, what: &str, at: usize) -> Result<T, ReadError> {
        let before = &self.text[..at.min(self.text.len())];
        let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Err(ReadError::Syntax {
            what: what.to_string(),
            line,
            column: before[line_start..].chars().count() + 1,
            char_index: before.chars().count(),
        })
    }

    fn skip_ws(&mut self) {
        while self.pos < self.src.len() && is_ws(self.src[self.pos]) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn document(mut self) -> Result<Doc, ReadError> {
        self.skip_ws();
        self.value()?;
        self.skip_ws();
        if self.pos != self.src.len() {
            return self.error("Extra data", self.pos);
        }
        self.doc.shrink();
        Ok(self.doc)
    }

    /// The value at `pos`, iteratively: a container is pushed onto `open` rather than read by
    /// recursion, so nesting costs no native stack.
    fn value(&mut self) -> Result<(), ReadError> {
        loop {
            // One value: a scalar, or a container's opening up to its first item.
            if let Some(open @ (b'{' | b'[')) = self.peek() {
                if self.open.len() >= self.options.max_depth {
                    return Err(ReadError::TooDeep(self.options.max_depth));
                }
                let (tag, close) = if open == b'{' {
                    (Tag::Object, b'}')
                } else {
                    (Tag::Array, b']')
                };
                let at = self.doc.push(Node {
                    tag,
                    flags: 0,
                    a: 0,
                    b: 0,
                });
                self.open.push(at);
                self.pos += 1;
                self.skip_ws();
                if self.peek() != Some(close) {
                    if tag == Tag::Object {
                        self.member_name()?;
                    }
                    continue;
                }
                self.pos += 1;
                self.close_container()?;
            } else {
                self.scalar()?;
            }
            // After a complete value: the innermost open container goes on or closes.
            loop {
                let Some(&at) = self.open.last() else {
                    return Ok(());
                };
                let object = self.doc.tag(at) == Tag::Object;
                self.skip_ws();
                match self.peek() {
                    Some(b'}') if object => {
                        self.pos += 1;
                        self.close_container()?;
                    }
                    Some(b']') if !object => {
                        self.pos += 1;
                        self.close_container()?;
                    }
                    Some(b',') => {
                        self.pos += 1;
                        self.skip_ws();
                        if object {
                            self.member_name()?;
                        }
                        break;
                    }
                    _ => return self.error("Expecting ',' delimiter", self.pos),
                }
            }
        }
    }

    /// Inside an object at a member: its name, the `:` and the whitespace before the value.
    fn member_name(&mut self) -> Result<(), ReadError> {
        if self.peek() != Some(b'"') {
            return self.error(
                "Expecting property name enclosed in double quotes",
                self.pos,
            );
        }
        self.string()?;
        self.skip_ws();
        if self.peek() != Some(b':') {
            return self.error("Expecting ':' delimiter", self.pos);
        }
        self.pos += 1;
        self.skip_ws();
        Ok(())
    }

    fn close_container(&mut self) -> Result<(), ReadError> {
        let at = self.open.pop().expect("a container is open");
        self.doc.close(at);
        if self.options.refuse_duplicates
            && self.doc.tag(at) == Tag::Object
            && let Some(name) = self.doc.duplicate_name(at)
        {
            return Err(ReadError::DuplicateKey(name));
        }
        Ok(())
    }

    fn scalar(&mut self) -> Result<(), ReadError> {
        let rest = &self.src[self.pos..];
        let constants: [(&str, Tag, u8); 6] = [
            ("null", Tag::Null, 0),
            ("true", Tag::True, 0),
            ("false", Tag::False, 0),
            ("NaN", Tag::Number, FLAG_CONSTANT),
            ("Infinity", Tag::Number, FLAG_CONSTANT),
            ("-Infinity", Tag::Number, FLAG_CONSTANT),
        ];
        for (word, tag, flags) in constants {
            if rest.starts_with(word.as_bytes()) {
                if flags == FLAG_CONSTANT && !self.options.python_constants {
                    return self.error("Expecting value", self.pos);
                }
                if tag == Tag::Number {
                    self.doc.push_text(tag, flags, word);
                } else {
                    self.doc.push(Node {
                        tag,
                        flags,
                        a: 0,
                        b: 0,
                    });
                }
                self.pos += word.len();
                return Ok(());
            }
        }
        match self.peek() {
            Some(b'"') => self.string(),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => self.error("Expecting value", self.pos),
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?`, the longest match (CPython's
    /// `_match_number_unicode`): a `.` or an exponent not followed by digits ends the number
    /// before it.
    fn number(&mut self) -> Result<(), ReadError> {
        let src = self.src;
        let start = self.pos;
        let mut i = start;
        let digits_from = |mut i: usize| {
            while i < src.len() && src[i].is_ascii_digit() {
                i += 1;
            }
            i
        };
        if src.get(i) == Some(&b'-') {
            i += 1;
        }
        match src.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = digits_from(i),
            _ => return self.error("Expecting value", start),
        }
        let mut float = false;
        if src.get(i) == Some(&b'.') && src.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i = digits_from(i + 1);
            float = true;
        }
        if matches!(src.get(i), Some(b'e' | b'E')) {
            let mut j = i + 1;
            if matches!(src.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            if src.get(j).is_some_and(u8::is_ascii_digit) {
                i = digits_from(j);
                float = true;
            }
        }
        let text = &self.text[start..i];
        if !float {
            let digits = text.len() - usize::from(text.starts_with('-'));
            if digits > PYTHON_INT_MAX_STR_DIGITS {
                return Err(ReadError::IntegerTooLong(digits));
            }
        }
        self.doc
            .push_text(Tag::Number, if float { FLAG_FLOAT } else { 0 }, text);
        self.pos = i;
        Ok(())
    }

    /// A string at `pos` (its opening quote), as CPython's `scanstring` reads it.
    fn string(&mut self) -> Result<(), ReadError> {
        let start = self.pos;
        let src = self.src;
        let mut i = start + 1;
        // Fast path: no escape, the text is copied as it is.
        let run_end = |mut i: usize| {
            while i < src.len() && !matches!(src[i], b'"' | b'\\' | 0x00..=0x1f) {
                i += 1;
            }
            i
        };
        let end = run_end(i);
        if src.get(end) == Some(&b'"') {
            self.doc
                .push_text(Tag::String, 0, &self.text[start + 1..end]);
            self.pos = end + 1;
            return Ok(());
        }
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        let mut flags = 0;
        // Where the U+FFFD written for each lone surrogate sits in `out`, and which surrogate.
        let mut lone: Vec<(usize, u32)> = Vec::new();
        let result = loop {
            let end = run_end(i);
            out.push_str(&self.text[i..end]);
            i = end;
            match src.get(i) {
                None => break self.error("Unterminated string starting at", start),
                Some(b'"') => {
                    i += 1;
                    break Ok(());
                }
                Some(b'\\') => {}
                Some(_) => break self.error("Invalid control character at", i),
            }
            // An escape.
            let Some(&kind) = src.get(i + 1) else {
                break self.error("Unterminated string starting at", start);
            };
            let simple = match kind {
                b'"' => Some('"'),
                b'\\' => Some('\\'),
                b'/' => Some('/'),
                b'b' => Some('\u{8}'),
                b'f' => Some('\u{c}'),
                b'n' => Some('\n'),
                b'r' => Some('\r'),
                b't' => Some('\t'),
                b'u' => None,
                _ => break self.error("Invalid \\escape", i),
            };
            if let Some(c) = simple {
                out.push(c);
                i += 2;
                continue;
            }
            let Some(unit) = hex4(&src[i + 2..]) else {
                break self.error("Invalid \\uXXXX escape", i + 1);
            };
            i += 6;
            let code = if (0xd800..0xdc00).contains(&unit)
                && src.get(i) == Some(&b'\\')
                && src.get(i + 1) == Some(&b'u')
            {
                match hex4(&src[i + 2..]) {
                    None => break self.error("Invalid \\uXXXX escape", i + 1),
                    Some(low @ 0xdc00..0xe000) => {
                        i += 6;
                        0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00)
                    }
                    Some(_) => unit,
                }
            } else {
                unit
            };
            match char::from_u32(code) {
                Some(c) => out.push(c),
                None => {
                    // A lone surrogate: CPython keeps it; it is written as U+FFFD (§8.3 item 23).
                    if self.options.refuse_lone_surrogates {
                        break Err(ReadError::LoneSurrogate(
                            code,
                            "I-JSON strings are valid Unicode".to_string(),
                        ));
                    }
                    lone.push((out.len(), code));
                    out.push(char::REPLACEMENT_CHARACTER);
                    flags = FLAG_LONE_SURROGATE;
                    self.doc.lone_surrogates = true;
                }
            }
        };
        if result.is_ok() {
            let at = self.doc.push_text(Tag::String, flags, &out);
            if !lone.is_empty() {
                let mut wtf8 = out.clone().into_bytes();
                for (offset, code) in lone {
                    // The generalized UTF-8 of a surrogate: three bytes, as U+FFFD takes.
                    wtf8[offset] = 0xed;
                    wtf8[offset + 1] = 0x80 | ((code >> 6) & 0x3f) as u8;
                    wtf8[offset + 2] = 0x80 | (code & 0x3f) as u8;
                }
                let offset = self.doc.nodes[at as usize].a;
                self.doc.originals.push((offset, wtf8));
            }
            self.pos = i;
        }
        self.scratch = out;
        result
    }
}
