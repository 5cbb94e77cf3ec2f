//! Reading one walk record (the shared sample, written canonically): serde_json's `Value` against
//! the reference-compatible reader's compact document (`json::read`) and `json::parse_lenient`
//! (document, then `Value`), which the store uses to check each record it inserts.
//! `cargo bench --bench json_parse`.

use std::time::Instant;
fn main() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/walks/");
    let mut rec = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(e.unwrap().path()).unwrap();
        let v = conduct_walker::json::parse_lenient(&bytes).unwrap();
        rec = conduct_walker::canonical::to_bytes(&v);
    }
    println!("record {} bytes", rec.len());
    let n = 20000;
    for _ in 0..2 {
        let t = Instant::now();
        for _ in 0..n {
            std::hint::black_box(serde_json::from_slice::<serde_json::Value>(&rec).unwrap());
        }
        let serde = t.elapsed().as_secs_f64() / n as f64 * 1e6;
        let t = Instant::now();
        for _ in 0..n {
            std::hint::black_box(
                conduct_walker::json::read(&rec, conduct_walker::json::ReadOptions::LENIENT)
                    .unwrap(),
            );
        }
        let doc = t.elapsed().as_secs_f64() / n as f64 * 1e6;
        let t = Instant::now();
        for _ in 0..n {
            std::hint::black_box(conduct_walker::json::parse_lenient(&rec).unwrap());
        }
        let lenient = t.elapsed().as_secs_f64() / n as f64 * 1e6;
        println!(
            "serde_json Value {serde:.1} us, Doc {doc:.1} us, parse_lenient (Doc + Value) {lenient:.1} us"
        );
    }
}
