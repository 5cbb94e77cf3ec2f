//! `conduct-walker ledger verify` against a real emulator on loopback HTTPS: it holds on a clean
//! ledger after several batches and checkpoints, and each fault hook of ledger.md §8 item 7 is
//! caught and named (by the stateless check, or by `--hold` where only a held head can see it),
//! with exit 0 / 1 / 2.

mod ledger_support;

use ledger_support::*;
use serde_json::{Value, json};

fn findings(stdout: &str) -> Vec<String> {
    let report: Value = serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["finding"].as_str().unwrap().to_string())
        .collect()
}

/// Six batches (two of them by schedule, each followed by its checkpoint): verify recomputes
/// the chain and holds, in text and in JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_holds_on_a_clean_ledger() {
    let env = Env::start("2026-12-01T00:30:00Z").await;
    env.grow(6, 3, 3, 1).await;
    let (_, head) = env.get_json("/ledger/head").await;
    assert_eq!(head["n"], 8, "6 batches and 2 checkpoints");

    let (code, out, err) = env.verify_cli(&[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("checked: 8 entries (6 batches listing 18 records, 2 checkpoints, 0 other)"),
        "{out}"
    );
    assert!(
        out.trim_end()
            .ends_with("holds: the chain, head, end marker, export and every entry's bytes agree"),
        "{out}"
    );
    assert!(err.is_empty(), "no progress bar off a terminal: {err}");

    let (code, out, _) = env.verify_cli(&["--json"]);
    assert_eq!(code, 0);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["holds"], true);
    assert_eq!(report["served"], json!({"n": 8, "head": head["head"]}));
    assert_eq!(report["recomputed"], report["served"]);
    assert_eq!(
        (
            &report["batches"],
            &report["checkpoints"],
            &report["records_listed"]
        ),
        (&json!(6), &json!(2), &json!(18))
    );
    assert_eq!(findings(&out), Vec::<String>::new());
}
