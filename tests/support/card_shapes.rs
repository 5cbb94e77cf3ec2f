//! The card shapes issue 21 names, as `Value`s a sandbox agent puts under a card member: shared
//! by `tests/card_shapes.rs` and `benches/card_shapes_rss.rs` (and the daemon RSS bench).
#![allow(dead_code)]

use serde_json::{Value, json};

/// `depth` arrays nested in each other, the innermost empty.
pub fn nested_arrays(depth: usize) -> Value {
    let mut v = json!([]);
    for _ in 1..depth {
        v = Value::Array(vec![v]);
    }
    v
}

/// A distinct name of at most three characters for each `i` below 238,328 (62³).
pub fn short_key(i: usize) -> String {
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let (a, b, c) = (i / (62 * 62), (i / 62) % 62, i % 62);
    [a, b, c].iter().map(|&d| ALPHABET[d] as char).collect()
}

/// `count` chains of `depth` nested one-key objects.
pub fn chains(count: usize, depth: usize) -> Value {
    let mut chain = json!(1);
    for _ in 0..depth {
        chain = json!({ "a": chain });
    }
    Value::Array(vec![chain; count])
}

/// An object of `count` small members with short names.
pub fn many_keys(count: usize) -> Value {
    Value::Object((0..count).map(|i| (short_key(i), json!(0))).collect())
}

/// Each shape about 1 MB of compact JSON, so a card holding one stays under the 1 MiB cap.
pub fn shapes() -> Vec<(&'static str, Value)> {
    vec![
        ("many small keys (110,000)", many_keys(110_000)),
        ("nested one-key objects (1,600 x 100)", chains(1_600, 100)),
        // The card object and 992 arrays: the deepest the reference reads (§8.3 item 21).
        ("992 nested arrays", nested_arrays(992)),
        (
            "long array of small numbers (450,000)",
            Value::Array(vec![json!(0); 450_000]),
        ),
        ("a 900 KiB string", json!("x".repeat(900 * 1024))),
        (
            "one-key objects (110,000)",
            Value::Array(vec![json!({"a": 1}); 110_000]),
        ),
    ]
}
