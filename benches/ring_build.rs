//! Wall time and peak RSS of `conduct-walker ring build` over a month of 100,000 gate
//! measurements (register-like entries of about 1.1 KB: 113 MB of history) and 10,000 witness
//! files (stored objects with a walk record inside, pending answers and plain forms, a few KB
//! each), issue 37's target: under 2 s and 256 MiB. Each build is its own process, measured
//! with `ru_maxrss` (support/rss.rs).
//! `cargo bench --bench ring_build` (`--profile dev` for the dev binary; `RING_BENCH_RUNS`,
//! `RING_BENCH_ENTRIES`, `RING_BENCH_WITNESSES` change the sizes); BENCHMARKS.md.

#[path = "support/rss.rs"]
mod rss;

use std::io::Write;
use std::path::Path;
use std::time::Instant;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A gate verdict record like the register's archive holds.
fn entry(i: usize) -> String {
    format!(
        r#"{{"at":"2026-09-{:02}T{:02}:{:02}:{:02}.{:03}Z","status":"{}","reachable":{},"record_sha256":"{:064x}","consent_source":"{}","conditions":{{"mcp_endpoint":{{"pass":true,"measured":true,"transport":false,"reason":"MCP endpoint responds to initialize and tools/list"}},"agent_card":{{"pass":true,"measured":true,"transport":false,"reason":"agent-card published and well-formed"}},"determinism":{{"pass":false,"measured":{},"transport":false,"reason":"not measured: measuring determinism requires calling one of your tools, and this gate does not call tools on a server without the owner's consent"}}}},"surface":{{"manifest_hash":"{:064x}"}},"coordinate_derivation":{{"derived":{}}},"fingerprint":"pending|agent_card=1,compensation_disclosure=1,determinism=0,mcp_endpoint=1"}}"#,
        1 + i % 30,
        i / 3600 % 24,
        i / 60 % 60,
        i % 60,
        i % 1000,
        ["pass", "pending", "fail"][i % 3],
        !i.is_multiple_of(7),
        i,
        if i.is_multiple_of(4) { "owner" } else { "none" },
        i.is_multiple_of(2),
        i / 5000,
        i.is_multiple_of(3),
    )
}

/// A walk record (canonical text) of witness `w` about the endpoint, walked on day `day`.
fn walk(i: usize, w: usize, day: usize, ok: bool) -> String {
    let nodes: Vec<String> = (0..4)
        .map(|n| {
            format!(
                r#"{{"id":{n},"kind":"fetch","request":{{"headers_sha256":"{:064x}","method":"GET","url":"https://target.example/{}"}},"response":{{"body_sha256":"{:064x}","headers_sha256":"{:064x}","status":200}}}}"#,
                i * 10 + n,
                if n == 3 { "mcp" } else { ".well-known/agent-card.json" },
                i * 20 + n,
                i * 30 + n
            )
        })
        .collect();
    format!(
        r#"{{"base":"https://target.example","nodes":[{}],"verdict":{{"n_pass":{},"n_total":8,"ok":{ok},"outcome":"{}"}},"walked_at":"2026-09-{:02}T10:{:02}:00Z","witness":{{"key_url":"https://w{w}.example/key.json","name":"witness-{w}","vantage":"vantage {}"}}}}"#,
        nodes.join(","),
        if ok { 8 } else { 6 },
        if ok { "PASS" } else { "FAIL" },
        1 + day % 30,
        i % 60,
        w % 3
    )
}

/// The i-th witness file: 80% stored objects, 10% pending answers, 10% plain forms.
fn witness_file(i: usize) -> String {
    let w = i % 400;
    let text = walk(i, w, i, !i.is_multiple_of(9));
    let rc = serde_json::to_string(&text).unwrap();
    let signed_domain = if w.is_multiple_of(2) {
        format!("\"w{w}.example\"")
    } else {
        "null".into()
    };
    match i % 10 {
        0 => format!(
            r#"{{"at":"2026-09-{:02}T11:00:00Z","witness":{{"name":"plain-{w}","vantage":"v"}},"endpoint":"https://target.example/mcp","counted":true,"signed_domain":{signed_domain}}}"#,
            1 + i % 30
        ),
        1 => format!(
            r#"{{"status":"pending","sha":"{:064x}","record_canonical":{rc},"signed":true,"signed_domain":{signed_domain},"mode":"full","counted":true,"witness_name":"witness-{w}","vantage":"vantage","submitted_at":"2026-09-30T00:00:00.000Z","responses":[]}}"#,
            i
        ),
        _ => format!(
            r#"{{"sha":"{:064x}","record_canonical":{rc},"signed":true,"signed_domain":{signed_domain},"mode":"full","counted":{},"witness_name":"witness-{w}","vantage":"vantage","submitted_at":"2026-09-30T00:00:00.000Z"}}"#,
            i,
            !i.is_multiple_of(13)
        ),
    }
}

fn write_inputs(dir: &Path, entries: usize, witnesses: usize) -> (u64, u64) {
    let history = dir.join("h.json");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&history).unwrap());
    write!(
        f,
        r#"{{"endpoint":"https://target.example/mcp","entries":["#
    )
    .unwrap();
    for i in 0..entries {
        if i > 0 {
            f.write_all(b",").unwrap();
        }
        f.write_all(entry(i).as_bytes()).unwrap();
    }
    f.write_all(b"]}").unwrap();
    drop(f);
    std::fs::create_dir_all(dir.join("w")).unwrap();
    let mut witness_bytes = 0u64;
    for i in 0..witnesses {
        let text = witness_file(i);
        witness_bytes += text.len() as u64;
        std::fs::write(dir.join(format!("w/{i:05}.json")), text).unwrap();
    }
    (std::fs::metadata(&history).unwrap().len(), witness_bytes)
}

fn main() {
    let entries = env("RING_BENCH_ENTRIES", 100_000);
    let witnesses = env("RING_BENCH_WITNESSES", 10_000);
    let runs = env("RING_BENCH_RUNS", 3);
    let dir = tempfile::tempdir().unwrap();
    let (history_bytes, witness_bytes) = write_inputs(dir.path(), entries, witnesses);
    let mut args: Vec<String> = vec![
        "ring".into(),
        "build".into(),
        "--month".into(),
        "2026-09".into(),
        "--history".into(),
        dir.path().join("h.json").display().to_string(),
        "--force".into(),
        "--out".into(),
        dir.path().join("ring.json").display().to_string(),
    ];
    for i in 0..witnesses {
        args.push("--witness".into());
        args.push(
            dir.path()
                .join(format!("w/{i:05}.json"))
                .display()
                .to_string(),
        );
    }
    println!(
        "history: {entries} entries, {history_bytes} bytes; witnesses: {witnesses} files, {witness_bytes} bytes"
    );
    println!("| run | exit | peak RSS (MiB) | wall (s) | ring |");
    println!("|---|---|---|---|---|");
    for run in 1..=runs {
        let began = Instant::now();
        let (code, rss, first) = rss::run_measured(&args);
        let wall = began.elapsed().as_secs_f64();
        let ring = std::fs::read_to_string(dir.path().join("ring.json")).unwrap_or_default();
        let summary: serde_json::Value = serde_json::from_str(&ring).unwrap_or_default();
        println!(
            "| {run} | {code} | {:.1} | {wall:.2} | {} instants, {} witnesses, {} discrepancies ({first}) |",
            rss as f64 / 1024.0,
            summary["instants_sampled"],
            summary["witnesses"],
            summary["discrepancies"].as_array().map_or(0, Vec::len),
        );
        assert_eq!(code, 0, "the build must succeed");
    }
}
