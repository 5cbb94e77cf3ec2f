//! Random JSON documents for differential tests of the canonical writers (test builds only):
//! strings with controls, escapes, astral and private-use characters in names and values, and
//! numbers of every form, nested a few levels. Deterministic (a fixed xorshift seed).

use serde_json::{Map, Value};

/// `n` documents, the same ones on every run.
pub fn random_json_docs(n: usize) -> Vec<Value> {
    let alphabet: Vec<char> = "aZ09 \"\\/\u{0}\u{1}\u{8}\t\n\u{b}\u{c}\r\u{1f}\u{7f}\u{80}é€\u{2028}\u{e000}\u{fb33}😀😂\u{10ffff}"
        .chars()
        .collect();
    let numbers = [
        "0",
        "-0.0",
        "1",
        "-1",
        "1.5",
        "100.0",
        "1e21",
        "1e-7",
        "123456789012345678901234567890",
        "0.000001",
        "9007199254740993",
        "5e-324",
        "1.7976931348623157e308",
        "333333333.33333329",
    ];
    let mut seed: u64 = 0x9e3779b97f4a7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    fn text(next: &mut dyn FnMut() -> u64, alphabet: &[char]) -> String {
        let n = next() % 5;
        (0..n)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect()
    }
    fn build(
        depth: u32,
        next: &mut dyn FnMut() -> u64,
        alphabet: &[char],
        numbers: &[&str],
    ) -> Value {
        let pick = next() % if depth == 0 { 4 } else { 6 };
        match pick {
            0 => Value::String(text(next, alphabet)),
            1 => serde_json::from_str(numbers[(next() % numbers.len() as u64) as usize]).unwrap(),
            2 => Value::Bool(next().is_multiple_of(2)),
            3 => Value::Null,
            4 => Value::Array(
                (0..next() % 4)
                    .map(|_| build(depth - 1, next, alphabet, numbers))
                    .collect(),
            ),
            _ => {
                let mut map = Map::new();
                for _ in 0..next() % 6 {
                    let k = text(next, alphabet);
                    map.insert(k, build(depth - 1, next, alphabet, numbers));
                }
                Value::Object(map)
            }
        }
    }
    (0..n)
        .map(|_| build(4, &mut next, &alphabet, &numbers))
        .collect()
}
