//! The card reader against its oracle (issue 21, item 3): CPython's `json.loads`, which is what
//! the reference walker reads cards with (conduct-walk.md §2.3, §4.1, §8.3 items 18, 21–23).
//!
//! Generated documents, valid and broken, go to one `python3` process over a line protocol (hex
//! of the bytes in, `OK <hex of the canonical bytes>` or `ERR <why>` out). For each one:
//! (a) conduct-walker reads it exactly when Python does, and (b) for every document read, the
//! NENRIN canonical bytes conduct-walker writes equal `json.dumps(json.loads(text),
//! sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()`; where that text holds a
//! lone surrogate (the reference then crashes, §8.3 item 23) the oracle writes U+FFFD in its
//! place, as conduct-walker does.
//!
//! The oracle decodes the bytes as strict UTF-8 first (the reference's reader gets text, so a BOM
//! and invalid UTF-8 are not JSON) and calibrates its recursion limit so that it reads the
//! reference's 993 levels and refuses 994, whatever its own stack holds.
//!
//! 10,000 cases per test run; `JSON_DIFFERENTIAL_CASES=1000000 cargo nextest run --test
//! json_differential` for the long run (BENCHMARKS.md). `JSON_DIFFERENTIAL_SEED` picks the seed.

use conduct_walker::json::{self, ReadOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

const ORACLE: &str = r#"
import json, re, sys
SURROGATE = re.compile('[\ud800-\udfff]')

def read(text):
    return json.loads(text)

def depth_doc(n):
    return '{"x":' + '[' * (n - 1) + ']' * (n - 1) + '}'

# Calibrate: the reference reads 993 nested levels and refuses 994 (spec §8.3 item 21).
limit = None
for candidate in range(900, 1200):
    sys.setrecursionlimit(candidate)
    try:
        read(depth_doc(993))
    except RecursionError:
        continue
    try:
        read(depth_doc(994))
    except RecursionError:
        limit = candidate
    break
if limit is None:
    print('CALIBRATION FAILED', flush=True)
    sys.exit(1)
print('READY %s %d' % (sys.version.split()[0], limit), flush=True)

out = sys.stdout
for line in sys.stdin:
    raw = bytes.fromhex(line.strip())
    sys.setrecursionlimit(limit)
    try:
        value = read(raw.decode('utf-8'))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        out.write('ERR %s\n' % type(e).__name__)
        out.flush()
        continue
    sys.setrecursionlimit(10000)
    text = json.dumps(value, sort_keys=True, separators=(',', ':'), ensure_ascii=False)
    replaced = SURROGATE.sub('\ufffd', text)
    flag = 'S' if replaced != text else '-'
    out.write('OK %s %s\n' % (flag, replaced.encode('utf-8').hex()))
    out.flush()
"#;

struct Oracle {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    version: String,
}

#[derive(Debug, PartialEq)]
enum Verdict {
    Read { canonical: Vec<u8>, surrogate: bool },
    Refused(String),
}

impl Oracle {
    fn start() -> Oracle {
        let mut child = Command::new("python3")
            .args(["-c", ORACLE])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 is on every machine this project runs on (README prerequisites)");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut ready = String::new();
        stdout.read_line(&mut ready).unwrap();
        assert!(ready.starts_with("READY "), "oracle: {ready}");
        let version = ready.split_whitespace().nth(1).unwrap().to_string();
        Oracle {
            child,
            stdin,
            stdout,
            version,
        }
    }

    fn ask(&mut self, doc: &[u8]) -> Verdict {
        writeln!(self.stdin, "{}", hex::encode(doc)).unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let mut parts = line.trim_end().split(' ');
        match parts.next() {
            Some("OK") => {
                let surrogate = parts.next() == Some("S");
                Verdict::Read {
                    canonical: hex::decode(parts.next().unwrap_or("")).unwrap(),
                    surrogate,
                }
            }
            Some("ERR") => Verdict::Refused(parts.next().unwrap_or("").to_string()),
            _ => panic!(
                "oracle said {line:?} for {:?}",
                String::from_utf8_lossy(doc)
            ),
        }
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What conduct-walker makes of a document, in the oracle's terms; both canonical paths (the
/// compact document and the `Value` tree) must agree, except where names differ only in their
/// lone surrogates (a `Value`'s names are Rust strings, which cannot hold one, so such names
/// become one; the walk writes what it reads from a card through the document).
fn ours(doc: &[u8]) -> Verdict {
    match json::read(doc, ReadOptions::LENIENT) {
        Ok(parsed) => {
            let canonical = parsed.root().canonical_string().into_bytes();
            let via_value = conduct_walker::canonical::to_bytes(
                &json::parse_lenient(doc).expect("both paths read the same documents"),
            );
            assert!(
                canonical == via_value || parsed.has_lone_surrogates(),
                "the Doc and the Value tree write {:?} differently",
                String::from_utf8_lossy(doc)
            );
            Verdict::Read {
                canonical,
                surrogate: parsed.root().holds_lone_surrogate(),
            }
        }
        Err(e) => Verdict::Refused(e.to_string()),
    }
}

fn agree(theirs: &Verdict, ours: &Verdict) -> bool {
    match (theirs, ours) {
        (Verdict::Refused(_), Verdict::Refused(_)) => true,
        (a, b) => a == b,
    }
}

// ---- generation ----

fn pick<T: Copy>(rng: &mut StdRng, items: &[T]) -> T {
    items[rng.random_range(0..items.len())]
}

fn whitespace(rng: &mut StdRng, out: &mut String) {
    if rng.random_bool(0.7) {
        return;
    }
    for _ in 0..rng.random_range(1..3) {
        out.push_str(pick(rng, &[" ", "\t", "\n", "\r", "\r\n", "  "]));
    }
}

fn number(rng: &mut StdRng) -> String {
    match rng.random_range(0..14) {
        0 => rng.random_range(-1000i64..1000).to_string(),
        1 => rng.random::<i64>().to_string(),
        2 => format!(
            "{}{}",
            rng.random_range(1..10),
            "0".repeat(rng.random_range(15..40))
        ),
        3 => {
            // Around CPython's 4,300-digit limit for integers.
            let digits = pick(rng, &[4299usize, 4300, 4301, 4400]);
            let sign = if rng.random_bool(0.5) { "-" } else { "" };
            format!("{sign}1{}", "7".repeat(digits - 1))
        }
        4 => pick(
            rng,
            &[
                "-0",
                "0",
                "-0.0",
                "0.0",
                "0e0",
                "-0E-0",
                "1E+2",
                "1e400",
                "-1e400",
                "1e-400",
                "2.5e-5000",
            ],
        )
        .to_string(),
        5 => format!(
            "{}.{}",
            rng.random_range(0..100000),
            rng.random_range(0..100000)
        ),
        6 => format!(
            "{:e}",
            rng.random::<f64>() * 10f64.powi(rng.random_range(-30..30))
        ),
        7 => format!(
            "{}e{}",
            rng.random_range(-99..99),
            rng.random_range(-330..330)
        ),
        8 => format!("{}E+{}", rng.random_range(1..9), rng.random_range(0..25)),
        9 => pick(rng, &["NaN", "Infinity", "-Infinity"]).to_string(),
        10 => pick(
            rng,
            &[
                "1.", ".5", "01", "-", "+1", "1e", "1e+", "0x10", "-NaN", "infinity", "nan",
                "1.5.2", "--1", "1_000",
            ],
        )
        .to_string(),
        11 => format!(
            "{}.{}e{}",
            rng.random_range(0..10),
            "9".repeat(rng.random_range(10..30)),
            rng.random_range(-20..20)
        ),
        12 => "123456789012345678901234567890.5".to_string(),
        _ => format!("{}", rng.random::<f64>()),
    }
}

fn string(rng: &mut StdRng) -> String {
    let mut s = String::from("\"");
    for _ in 0..rng.random_range(0..6) {
        s.push_str(pick(
            rng,
            &[
                "a",
                "key",
                "é",
                "✓",
                "😀",
                "\\n",
                "\\t",
                "\\\"",
                "\\\\",
                "\\/",
                "\\b",
                "\\f",
                "\\r",
                "\\u00e9",
                "\\u00E9",
                "\\u0000",
                "\\u001f",
                "\\ud83d\\ude00",
                "\\uD83D\\uDE00",
                "\\ud800",
                "\\udfff",
                "\\ud800x",
                "\\ud800\\u0041",
                "\\udc00\\ud800",
                "\\uffff",
                "\u{7f}",
                "\u{2028}",
                "\u{feff}",
                " ",
                "\\x",
                "\\u12",
                "\\u12G4",
                "\t",
                "\u{1}",
                "NaN",
                "{",
                "]",
            ],
        ));
    }
    s.push('"');
    s
}

fn value(rng: &mut StdRng, depth: usize, out: &mut String) {
    let kind = if depth > 5 {
        rng.random_range(0..4)
    } else {
        rng.random_range(0..7)
    };
    match kind {
        0 => out.push_str(pick(rng, &["null", "true", "false"])),
        1 => out.push_str(&number(rng)),
        2 | 3 => out.push_str(&string(rng)),
        4 => {
            out.push('[');
            let n = rng.random_range(0..5);
            for i in 0..n {
                if i > 0 {
                    out.push(',');
                }
                whitespace(rng, out);
                value(rng, depth + 1, out);
                whitespace(rng, out);
            }
            out.push(']');
        }
        _ => {
            out.push('{');
            let n = rng.random_range(0..5);
            let keys: Vec<String> = (0..n).map(|_| string(rng)).collect();
            for i in 0..n {
                if i > 0 {
                    out.push(',');
                }
                whitespace(rng, out);
                // Duplicate names now and then: the last one wins.
                let key = if i > 0 && rng.random_bool(0.2) {
                    keys[rng.random_range(0..i)].clone()
                } else {
                    keys[i].clone()
                };
                out.push_str(&key);
                whitespace(rng, out);
                out.push(':');
                whitespace(rng, out);
                value(rng, depth + 1, out);
            }
            out.push('}');
        }
    }
}

/// Nesting around the reference's limit, with objects and arrays mixed.
fn deep(rng: &mut StdRng) -> Vec<u8> {
    let levels = rng.random_range(985..=1000);
    let mut open = String::new();
    let mut close = Vec::new();
    for _ in 0..levels {
        if rng.random_bool(0.3) {
            open.push_str("{\"k\":");
            close.push('}');
        } else {
            open.push('[');
            close.push(']');
        }
    }
    // The innermost container must be closed without a value for a `{"k":` opening.
    if close.last() == Some(&'}') {
        open.push_str("null");
    }
    close.reverse();
    let close: String = close.into_iter().collect();
    format!("{open}{close}").into_bytes()
}

fn mutate(rng: &mut StdRng, doc: &mut Vec<u8>) {
    for _ in 0..rng.random_range(1..3) {
        let at = rng.random_range(0..=doc.len());
        match rng.random_range(0..9) {
            0 if !doc.is_empty() => {
                doc.remove(at.min(doc.len() - 1));
            }
            1 => doc.insert(at, pick(rng, b"{}[],:\"\\ 0-eE.nNtIa\x0c\x00")),
            2 if !doc.is_empty() => {
                let i = at.min(doc.len() - 1);
                doc[i] = rng.random();
            }
            3 => doc.truncate(at),
            4 => doc.splice(0..0, [0xef, 0xbb, 0xbf]).for_each(drop),
            5 => doc
                .splice(
                    at..at,
                    pick(
                        rng,
                        &[
                            &[0xffu8][..],
                            &[0xc0, 0x80][..],
                            &[0xed, 0xa0, 0x80][..],
                            &[0xf4, 0x90, 0x80, 0x80][..],
                            &[0xe2, 0x82][..],
                        ],
                    )
                    .iter()
                    .copied(),
                )
                .for_each(drop),
            6 => doc
                .splice(
                    at..at,
                    pick(rng, &[" ", "\u{a0}", "\u{3000}", "\x0b", "\x0c"]).bytes(),
                )
                .for_each(drop),
            7 => doc.extend_from_slice(pick(
                rng,
                &[&b" "[..], &b"x"[..], &b"{}"[..], &b"\n\n"[..], &b"\x00"[..]],
            )),
            _ => {}
        }
    }
}

fn case(rng: &mut StdRng) -> Vec<u8> {
    match rng.random_range(0..100) {
        0..=1 => deep(rng),
        2..=49 => {
            let mut s = String::new();
            whitespace(rng, &mut s);
            value(rng, 0, &mut s);
            whitespace(rng, &mut s);
            s.into_bytes()
        }
        _ => {
            let mut s = String::new();
            value(rng, 0, &mut s);
            let mut doc = s.into_bytes();
            mutate(rng, &mut doc);
            doc
        }
    }
}

fn cases() -> usize {
    std::env::var("JSON_DIFFERENTIAL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

#[test]
fn conduct_walker_reads_exactly_what_cpython_reads_and_writes_the_same_canonical_bytes() {
    let mut oracle = Oracle::start();
    let seed = std::env::var("JSON_DIFFERENTIAL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x21);
    let mut rng = StdRng::seed_from_u64(seed);
    let total = cases();
    let (mut read, mut refused, mut surrogates) = (0usize, 0usize, 0usize);
    let mut disagreements = Vec::new();
    for _ in 0..total {
        let doc = case(&mut rng);
        let theirs = oracle.ask(&doc);
        let mine = ours(&doc);
        if !agree(&theirs, &mine) {
            disagreements.push((String::from_utf8_lossy(&doc).into_owned(), theirs, mine));
            continue;
        }
        match theirs {
            Verdict::Read { surrogate, .. } => {
                read += 1;
                surrogates += usize::from(surrogate);
            }
            Verdict::Refused(_) => refused += 1,
        }
    }
    eprintln!(
        "oracle CPython {}: {total} cases (seed {seed}), {read} read ({surrogates} with a lone \
         surrogate written as U+FFFD), {refused} refused by both, {} disagreements",
        oracle.version,
        disagreements.len()
    );
    for (doc, theirs, mine) in disagreements.iter().take(10) {
        let shown: String = doc.chars().take(300).collect();
        eprintln!("  {shown:?}\n    python: {theirs:?}\n    ours:   {mine:?}");
    }
    assert!(disagreements.is_empty());
    // The generator must reach both sides of the line for the run to mean anything.
    assert!(
        read > total / 4 && refused > total / 10,
        "{read} read, {refused} refused"
    );
    if total >= 10_000 {
        assert!(
            surrogates > 0,
            "no lone surrogate reached the canonical form"
        );
    }
}

/// Disagreements found while building the reader, kept as named cases.
#[test]
fn named_edges_agree_with_cpython() {
    let mut oracle = Oracle::start();
    let depth = |n: usize| format!("{{\"x\":{}{}}}", "[".repeat(n - 1), "]".repeat(n - 1));
    let edges: Vec<(&str, Vec<u8>)> = vec![
        ("993 levels are read", depth(993).into_bytes()),
        ("994 levels are not", depth(994).into_bytes()),
        ("200 levels", depth(200).into_bytes()),
        ("a lone high surrogate", br#"{"a":"\ud800"}"#.to_vec()),
        (
            "a lone low surrogate then text",
            br#"["\udfff x"]"#.to_vec(),
        ),
        (
            "a high surrogate before a non-surrogate escape",
            br#""\ud800\u0041""#.to_vec(),
        ),
        ("a reversed pair", br#""\udc00\ud800""#.to_vec()),
        (
            "names that differ only in their lone surrogates, sorted among their neighbours",
            br#"{"\ue000":3,"\udfff":2,"\ufffd":4,"\ud800":1,"\ud7ff":0,"\ud800":5}"#.to_vec(),
        ),
        ("a pair in upper case hex", br#""\uD83D\uDE00""#.to_vec()),
        ("4,300 digits", "7".repeat(4300).into_bytes()),
        ("4,301 digits", "7".repeat(4301).into_bytes()),
        (
            "-4,300 digits",
            format!("-{}", "7".repeat(4300)).into_bytes(),
        ),
        (
            "a float of 5,000 digits",
            format!("0.{}", "7".repeat(5000)).into_bytes(),
        ),
        ("a BOM", b"\xef\xbb\xbf{}".to_vec()),
        ("invalid UTF-8", b"{\"a\":\"\xff\"}".to_vec()),
        ("an encoded surrogate", b"\"\xed\xa0\x80\"".to_vec()),
        ("form feed is not whitespace", b"\x0c{}".to_vec()),
        (
            "NaN and the infinities",
            b"[NaN,Infinity,-Infinity]".to_vec(),
        ),
        ("-NaN", b"-NaN".to_vec()),
        ("an exponent without digits", b"[1e]".to_vec()),
        ("1E+2 -0.0 1e400", b"[1E+2,-0.0,1e400,1e-7]".to_vec()),
        (
            "floats exactly between two shortest forms round to even",
            b"[1.1414985069004513e14,8.423467979530893e14,5.997277621255993e14]".to_vec(),
        ),
        (
            "duplicates keep the last",
            br#"{"a":1,"b":2,"a":[3]}"#.to_vec(),
        ),
        ("a raw control character", b"\"a\x01b\"".to_vec()),
        ("DEL is allowed raw", b"\"a\x7fb\"".to_vec()),
        ("a trailing comma", b"[1,]".to_vec()),
        ("empty", b"".to_vec()),
        ("only whitespace", b" \r\n\t".to_vec()),
    ];
    let mut failed = Vec::new();
    for (name, doc) in &edges {
        let (theirs, mine) = (oracle.ask(doc), ours(doc));
        if !agree(&theirs, &mine) {
            failed.push(format!("{name}: python {theirs:?}, ours {mine:?}"));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
    // And the reference's limit is what the oracle was calibrated to.
    assert!(matches!(
        oracle.ask(depth(993).as_bytes()),
        Verdict::Read { .. }
    ));
    assert!(matches!(
        oracle.ask(depth(994).as_bytes()),
        Verdict::Refused(_)
    ));
}
