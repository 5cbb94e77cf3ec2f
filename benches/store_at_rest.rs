//! Records at rest (issue 27, item 4) and their archive segments (item 3): bytes per record,
//! write throughput and `records verify` time on a store of real-walk records, with rows stored
//! raw (as before migration 8: the baseline) and compressed (zstd, then the store's trained
//! dictionary).
//!
//!     cargo bench --bench store_at_rest
//!     STORE_AT_REST_N=5000 STORE_AT_REST_REAL=1000 cargo bench --bench store_at_rest
//!
//! Records: `STORE_AT_REST_N` (default 50,000) real walks of three loopback sandbox agents, the
//! soak's kind (honest A2A 1.0, honest MCP, paid x402), round robin, each at its own time (2 s
//! apart on a manual clock), 16 at a time, all signed with Ed25519. `STORE_AT_REST_REAL=M`
//! walks only M and repeats them, each copy with its own `walked_at` (quicker, a little less
//! varied than real walks, which also differ in durations and a response header digest). Written by `insert_many` in batches of 64 (what group commit does under load),
//! `synchronous=FULL`. Stores go under the target directory and are deleted when measured.

#[path = "support/cpu.rs"]
mod cpu;

use conduct_walker::clock::ManualClock;
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::{SandboxAgent, SandboxCa, scenario};
use conduct_walker::store::archive::Retention;
use conduct_walker::store::{NewRecord, Store, codec, verify};
use conduct_walker::walk::{Privacy, RequestProfile, WalkRequest};
use conduct_walker::wire::Witness;
use ed25519_dalek::{Signer as _, SigningKey};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

const AGENTS: [&str; 3] = ["honest-a2a", "honest-mcp", "paid-x402"];
const BATCH: usize = 64;

fn env_n(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn t0() -> chrono::DateTime<chrono::Utc> {
    "2026-11-01T00:00:00Z".parse().unwrap()
}

/// `real` walks of the three agents, round robin, 16 at a time; each record's canonical bytes.
async fn real_walks(real: usize) -> Vec<Vec<u8>> {
    let ca = SandboxCa::generate();
    let mut agents = Vec::new();
    let mut policy = NetPolicy::new(true);
    for name in AGENTS {
        let sc = scenario(name).unwrap();
        let agent = SandboxAgent::start(&ca, sc.behaviour.clone())
            .await
            .unwrap();
        policy.allow_url(&agent.origin());
        let endpoint = sc.endpoint_path.map(|p| format!("{}{p}", agent.origin()));
        agents.push((sc, agent, endpoint));
    }
    let mut config = TransportConfig::new(policy);
    config.extra_roots = vec![ca.cert_der()];
    let transport = Arc::new(Transport::new(config).unwrap());
    let requests: Vec<WalkRequest> = agents
        .iter()
        .map(|(sc, agent, endpoint)| WalkRequest {
            origin: agent.origin(),
            endpoint: endpoint.clone(),
            mode: sc.mode,
            wire: sc.wire,
            witness: Witness {
                name: "soak witness".into(),
                vantage: "loopback sandbox on this machine".into(),
                key_url: Some("https://witness.example/.well-known/witness-key".into()),
            },
            vantage_limitation: None,
            contract_sha256: None,
            privacy: Privacy::Full,
            profile: RequestProfile::Spec,
            caller_card: None,
        })
        .collect();
    let requests = Arc::new(requests);
    let sem = Arc::new(tokio::sync::Semaphore::new(16));
    let mut set = tokio::task::JoinSet::new();
    for i in 0..real {
        let (t, reqs, sem) = (transport.clone(), requests.clone(), sem.clone());
        set.spawn(async move {
            let _permit = sem.acquire_owned().await.unwrap();
            let clock = ManualClock::new(t0() + chrono::Duration::seconds(i as i64 * 2));
            let trust = conduct_walker::card_signature::TrustStore::default();
            let mut salt = [0u8; 32];
            salt[..8].copy_from_slice(&(i as u64).to_le_bytes());
            let o = conduct_walker::findings::walk(&t, &trust, &reqs[i % reqs.len()], &clock, salt)
                .await;
            (i, o.canonical)
        });
    }
    let mut out = vec![Vec::new(); real];
    while let Some(r) = set.join_next().await {
        let (i, bytes) = r.unwrap();
        out[i] = bytes;
    }
    drop(agents);
    out
}

/// `n` distinct records: the real ones, then copies each with its own `walked_at`.
fn records(real: &[Vec<u8>], n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            if i < real.len() {
                return real[i].clone();
            }
            let mut v = conduct_walker::json::parse_lenient(&real[i % real.len()]).unwrap();
            let at = t0() + chrono::Duration::seconds(i as i64 * 2);
            v["walked_at"] = at.format("%Y-%m-%dT%H:%M:%SZ").to_string().into();
            conduct_walker::canonical::to_bytes(&v)
        })
        .collect()
}

fn file_size(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

struct Figures {
    column_per_record: f64,
    file_per_record: f64,
    write_per_s: f64,
    write_cpu_us: f64,
    verify_s: f64,
    verify_per_s: f64,
}

fn measure(dir: &Path, label: &str, recs: &[NewRecord], compress: bool) -> Figures {
    let path = dir.join(format!("store-at-rest-{label}.db"));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let store = Store::open(&path).unwrap();
    store.codec().set_enabled(compress);
    let started = Instant::now();
    let cpu0 = cpu::process_cpu_time();
    for chunk in recs.chunks(BATCH) {
        store.insert_many(chunk).unwrap();
    }
    let wall = started.elapsed();
    let cpu = cpu::process_cpu_time() - cpu0;
    store.checkpoint().unwrap();
    let (n, bytes) = codec::stored_bytes(store.connection()).unwrap();
    assert_eq!(n as usize, recs.len());
    // Rows written once the dictionary was in use (the steady state of a store).
    let dict_rows: (i64, f64) = store
        .connection()
        .query_row(
            "SELECT count(*), coalesce(avg(length(canonical)), 0) FROM records WHERE id > ?1",
            [codec::TRAIN_AFTER + BATCH as i64],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    if compress {
        println!(
            "            rows written with the trained dictionary: {} rows, {:.0} B/record in the canonical column",
            dict_rows.0, dict_rows.1
        );
    }
    drop(store);
    let size = file_size(&path);
    let store = Store::open_read_only(&path).unwrap();
    let v0 = Instant::now();
    let report = verify::verify_all(&store, |_, _| {}).unwrap();
    let verify_s = v0.elapsed().as_secs_f64();
    assert!(report.is_ok(), "{:?}", report.problems.first());
    drop(store);
    if compress {
        archive_figures(dir, &path, recs.len());
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let f = Figures {
        column_per_record: bytes as f64 / n as f64,
        file_per_record: size as f64 / n as f64,
        write_per_s: n as f64 / wall.as_secs_f64(),
        write_cpu_us: cpu.as_secs_f64() * 1e6 / n as f64,
        verify_s,
        verify_per_s: n as f64 / verify_s,
    };
    println!(
        "{label:>10}: at rest {:.0} B/record in the canonical column, {:.0} B/record of file; \
         write {:.0} records/s ({:.0} us CPU/record, batches of {BATCH}, sync FULL); \
         records verify {:.2} s ({:.0} records/s)",
        f.column_per_record,
        f.file_per_record,
        f.write_per_s,
        f.write_cpu_us,
        f.verify_s,
        f.verify_per_s
    );
    f
}

/// Archive every record of the store (a copy), then verify through the segments.
fn archive_figures(dir: &Path, path: &Path, n: usize) {
    let archives = dir.join("store-at-rest-archive");
    let _ = std::fs::remove_dir_all(&archives);
    let store = Store::open(path).unwrap();
    let a0 = Instant::now();
    let report = store
        .archive(
            &archives,
            Retention {
                all_days: Some(1),
                unfiled_days: None,
            },
            t0() + chrono::Duration::days(3650),
            false,
        )
        .unwrap();
    let archive_s = a0.elapsed().as_secs_f64();
    assert_eq!(report.archived() as usize, n);
    store.checkpoint().unwrap();
    drop(store);
    let seg_bytes: u64 = std::fs::read_dir(&archives)
        .unwrap()
        .flatten()
        .map(|e| file_size(&e.path()))
        .sum();
    let store = Store::open_read_only(path).unwrap();
    let v0 = Instant::now();
    let r = verify::verify_all_with(&store, Some(&archives), |_, _| {}).unwrap();
    let verify_s = v0.elapsed().as_secs_f64();
    assert!(r.is_ok(), "{:?}", r.problems.first());
    assert_eq!(r.rows as usize, n);
    println!(
        "   archive: {} segments, {:.0} B/record of segment file, archived in {:.2} s; \
         records verify --archives {:.2} s; live store file after archiving {:.0} KiB",
        report.segments.len(),
        seg_bytes as f64 / n as f64,
        archive_s,
        verify_s,
        file_size(path) as f64 / 1024.0
    );
    let _ = std::fs::remove_dir_all(&archives);
}

fn main() {
    let n = env_n("STORE_AT_REST_N", 50_000);
    let real = env_n("STORE_AT_REST_REAL", n).min(n);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let w0 = Instant::now();
    let walked = rt.block_on(real_walks(real));
    let sizes: Vec<usize> = walked.iter().map(Vec::len).collect();
    println!(
        "{real} real walks in {:.1} s; record sizes {}..{} bytes, mean {:.0}",
        w0.elapsed().as_secs_f64(),
        sizes.iter().min().unwrap(),
        sizes.iter().max().unwrap(),
        sizes.iter().sum::<usize>() as f64 / real as f64
    );
    if let Some(d) = std::env::var_os("STORE_AT_REST_DUMP") {
        for i in [0, 3, 6] {
            std::fs::write(Path::new(&d).join(format!("walk-{i}.json")), &walked[i]).unwrap();
        }
    }
    let key = SigningKey::from_bytes(&[42; 32]);
    let pk = base64_std(&key.verifying_key().to_bytes());
    let recs: Vec<NewRecord> = records(&walked, n)
        .into_iter()
        .map(|canonical| NewRecord {
            signature_b64: Some(base64_std(&key.sign(&canonical).to_bytes())),
            public_key_b64: Some(pk.clone()),
            canonical,
            kept_full: None,
        })
        .collect();
    let mean = recs.iter().map(|r| r.canonical.len()).sum::<usize>() as f64 / n as f64;
    println!("{n} records, mean {mean:.0} canonical bytes");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let before = measure(&dir, "raw", &recs, false);
    let after = measure(&dir, "zstd+dict", &recs, true);
    println!(
        "compressed: {:.1}x smaller column, {:.1}x smaller file; write {:+.0} %, verify {:+.0} %",
        before.column_per_record / after.column_per_record,
        before.file_per_record / after.file_per_record,
        (after.write_per_s / before.write_per_s - 1.0) * 100.0,
        (after.verify_s / before.verify_s - 1.0) * 100.0
    );
    let _ = Duration::ZERO;
}

fn base64_std(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
