//! End-to-end walk + sign + store + submit against the intake emulator on loopback: the median
//! of 100 (issue 3's measurement). `cargo bench --bench submit`.

use conduct_walker::clock::SystemClock;
use conduct_walker::filing::SubmissionState;
use conduct_walker::intake_emulator::{Emulator, EmulatorConfig};
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::pipeline::{Pipeline, PipelineConfig, WalkJob};
use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use conduct_walker::walk::{Mode, Privacy, RequestProfile, WalkRequest, Wire};
use conduct_walker::wire::Witness;
use std::sync::Arc;
use std::time::Instant;

const RUNS: usize = 100;

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, Behaviour::default())
        .await
        .unwrap();
    let mut emulator_net = TransportConfig::new(NetPolicy::new(false));
    emulator_net.extra_roots = vec![ca.cert_der()];
    let mut emulator_config = EmulatorConfig::new(
        dir.path().join("intake.db"),
        Transport::new(emulator_net).unwrap(),
    );
    emulator_config.limits.daily_per_ip = 1_000_000;
    emulator_config.limits.daily_global = 1_000_000;
    let emulator = Emulator::start(emulator_config, &ca, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let mut policy = NetPolicy::new(true);
    policy.allow_url(&agent.origin());
    policy.allow_url(&emulator.url());
    let mut config = TransportConfig::new(policy);
    config.extra_roots = vec![ca.cert_der()];
    let pipeline = Pipeline::new(PipelineConfig {
        transport: Transport::new(config).unwrap(),
        store_path: dir.path().join("walker.db"),
        signing: Some((ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]), None)),
        clock: Arc::new(SystemClock),
        intake_override: Some(emulator.url()),
        file_extra_walks: true,
    })
    .unwrap();
    let request = WalkRequest {
        origin: agent.origin(),
        endpoint: None,
        mode: Mode::A2a,
        wire: Wire::V1_0,
        witness: Witness {
            name: "bench".into(),
            vantage: "loopback".into(),
            key_url: None,
        },
        vantage_limitation: None,
        contract_sha256: None,
        privacy: Privacy::Full,
        profile: RequestProfile::Spec,
        caller_card: None,
    };
    let mut times = Vec::with_capacity(RUNS);
    for i in 0..RUNS {
        let mut req = request.clone();
        // Distinct bytes per run so every submission is a new record, not a dedupe.
        req.vantage_limitation = Some(format!("run {i}"));
        let started = Instant::now();
        let report = pipeline
            .run_job(&WalkJob {
                request: req,
                submit: true,
                bind_task: None,
            })
            .await
            .unwrap();
        times.push(started.elapsed());
        assert_eq!(report.submission.unwrap().state, SubmissionState::Filed);
    }
    times.sort();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    println!("| what | runs | median | p90 | max |");
    println!("|---|---|---|---|---|");
    println!(
        "| walk + sign + store + submit (loopback, emulator) | {RUNS} | {:.2} ms | {:.2} ms | {:.2} ms |",
        ms(times[RUNS / 2]),
        ms(times[RUNS * 9 / 10]),
        ms(times[RUNS - 1])
    );
    assert_eq!(emulator.stored_count(), RUNS as u64);
}
