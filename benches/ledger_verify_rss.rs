//! Peak RSS and wall time of `conduct-walker ledger verify` over emulated ledgers of 1,000 and
//! 10,000 entries (one record per batch, a checkpoint every 100 entries), each verify a separate
//! process whose peak RSS is `ru_maxrss` read by a small python3 launcher (see
//! support/rss.rs for why not straight from this bench). The export is read line by line
//! and at most `--parallel` entries' bytes are in flight, so the figure should barely move from
//! 1,000 to 10,000 entries (what grows is one 64-character head per entry).
//! `cargo bench --bench ledger_verify_rss` (`--profile dev` for the dev binary); BENCHMARKS.md.

#[path = "support/rss.rs"]
mod rss;

use chrono::{DateTime, Utc};
use conduct_walker::clock::ManualClock;
use conduct_walker::intake_emulator::{Emulator, EmulatorConfig, Limits};
use conduct_walker::ledger::wire::StoredRecord;
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::SandboxCa;
use std::sync::Arc;
use std::time::Instant;

fn stored(sha: &str) -> StoredRecord {
    StoredRecord {
        submitted_at: Some("2026-12-01T00:00:00.000Z".into()),
        ..StoredRecord::unsigned(
            sha,
            "https://agent.example/a2a",
            "bench-witness",
            "loopback",
        )
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let sizes: Vec<u64> = std::env::var("LEDGER_SIZES")
        .ok()
        .map(|s| s.split(',').map(|n| n.trim().parse().unwrap()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000]);
    println!("| entries | export bytes | verify exit | peak RSS (MiB) | wall (s) |");
    println!("|---|---|---|---|---|");
    for size in sizes {
        let ca = SandboxCa::generate();
        let dir = tempfile::tempdir().unwrap();
        let ca_path = dir.path().join("ca.pem");
        ca.write_pem(&ca_path).unwrap();
        let start: DateTime<Utc> = "2026-12-01T00:30:00Z".parse().unwrap();
        let clock = Arc::new(ManualClock::new(start));
        let emu = Emulator::start(
            EmulatorConfig {
                limits: Limits {
                    daily_global: u64::MAX,
                    ..Limits::default()
                },
                clock: clock.clone(),
                ..EmulatorConfig::new(
                    dir.path().join("intake.db"),
                    Transport::new(TransportConfig::new(NetPolicy::new(false))).unwrap(),
                )
            },
            &ca,
            "127.0.0.1:0".parse().unwrap(),
        )
        .await
        .unwrap();
        let (mut n, mut i) = (0u64, 0u64);
        while n < size {
            emu.insert_stored(&stored(&conduct_walker::digest::sha256_hex(format!(
                "r{i}"
            ))))
            .unwrap();
            i += 1;
            clock.advance(chrono::Duration::milliseconds(10));
            if (n + 2) % 100 == 0 && n + 2 <= size {
                emu.scheduled_run().unwrap();
                n += 2;
            } else {
                emu.anchor().unwrap().unwrap();
                n += 1;
            }
        }
        let export_bytes = {
            let mut policy = NetPolicy::new(true);
            policy.allow_url(&emu.base());
            let mut cfg = TransportConfig::new(policy);
            cfg.extra_roots = vec![ca.cert_der()];
            cfg.body_cap = 64 * 1024 * 1024;
            let t = Transport::new(cfg).unwrap();
            t.fetch(&conduct_walker::net::HttpRequest::get(
                format!("{}/ledger/export.jsonl", emu.base()),
                &[],
            ))
            .await
            .body
            .len()
        };
        let args: Vec<String> = [
            "ledger",
            "verify",
            "--intake",
            &emu.url(),
            "--allow-private-network",
            "--ca-cert",
            ca_path.to_str().unwrap(),
            "--json",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let began = Instant::now();
        let (code, rss, _) = tokio::task::spawn_blocking(move || rss::run_measured(&args))
            .await
            .unwrap();
        println!(
            "| {size} | {export_bytes} | {code} | {:.1} | {:.1} |",
            rss as f64 / 1024.0,
            began.elapsed().as_secs_f64()
        );
        assert_eq!(code, 0, "verify must hold on a clean ledger");
    }
}
