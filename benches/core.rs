//! The walker's own CPU cost per walk, without the network (issue 6):
//!
//! - `core/finish_a2a`: assertions + record + NENRIN canonical bytes + sha256 for one a2a walk,
//!   from observations captured once from a loopback sandbox agent (target ≤ 30 µs median);
//! - `core/ed25519_sign_record`: Ed25519 signature over that record's canonical bytes
//!   (target ≤ 60 µs median).
//!
//! Each is measured twice: `core/*` in wall-clock time (criterion's default, the figure the
//! targets are stated in) and `core_cpu/*` in this thread's CPU time, which stays meaningful when
//! other jobs share the machine (wall time then also counts the time the bench was not running).
//!
//! Run: `cargo bench --bench core`.

use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use conduct_walker::walk::{
    self, Mode, Observed, ObservedFetch, Privacy, RequestProfile, WalkRequest, Wire,
};
use conduct_walker::wire::Witness;
use criterion::measurement::Measurement;

#[path = "support/cpu.rs"]
mod cpu;
use cpu::ThreadCpuTime;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ed25519_dalek::{Signer, SigningKey};
use serde_json::json;
use std::hint::black_box;

/// A card of realistic size (the sandbox's honest card plus a few more skills and a provider,
/// as published cards carry): about 1.9 KiB pretty-printed.
fn behaviour() -> Behaviour {
    let skill = |id: &str, about: &str| {
        json!({"id": id, "name": id, "description": about, "tags": ["demo", id],
               "examples": [format!("please {id} this")]})
    };
    Behaviour {
        card_extra: Some(json!({
            "provider": {"organization": "Sandbox Labs", "url": "https://sandbox.example"},
            "documentationUrl": "https://sandbox.example/docs/agent",
            "skills": [
                skill("echo", "Says what it was told."),
                skill("summarise", "Summarises a text in three sentences or fewer."),
                skill("translate", "Translates between English, French and German."),
            ],
        })),
        ..Behaviour::default()
    }
}

fn request(origin: &str) -> WalkRequest {
    WalkRequest {
        origin: origin.to_string(),
        endpoint: None,
        mode: Mode::A2a,
        wire: Wire::V1_0,
        witness: Witness {
            name: "conduct-walker bench".into(),
            vantage: "loopback sandbox".into(),
            key_url: None,
        },
        vantage_limitation: Some("a sandbox agent on this machine".into()),
        contract_sha256: None,
        privacy: Privacy::Full,
        profile: RequestProfile::Spec,
        caller_card: None,
    }
}

/// Walk a sandbox agent once over loopback HTTPS and keep what was observed, exactly as
/// `walk::run` gathers it before calling `finish`.
fn capture() -> (WalkRequest, Observed) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let ca = SandboxCa::generate();
        let agent = SandboxAgent::start(&ca, behaviour())
            .await
            .expect("sandbox agent");
        let origin = agent.origin();
        let mut policy = NetPolicy::new(true);
        policy.allow_url(&origin);
        let mut config = TransportConfig::new(policy);
        config.extra_roots = vec![ca.cert_der()];
        let transport = Transport::new(config).expect("transport");
        let request = request(&origin);
        let session = transport.session();
        let card_url = request.card_url();
        let n0 = ObservedFetch::new(0, session.fetch(&walk::card_request(&card_url)).await);
        let n1 = ObservedFetch::new(1, session.fetch(&walk::card_request(&card_url)).await);
        let card = walk::parse_card(&n1);
        let declaration = walk::declaration::locate_and_validate(card.as_ref());
        let target = walk::declaration::choose_target(None, &declaration);
        let n3 = match target.as_deref() {
            Some(t) => {
                let reply = session
                    .fetch(&walk::n3_request(
                        request.mode,
                        request.wire,
                        request.profile,
                        t,
                    ))
                    .await;
                Some(ObservedFetch::new(3, reply))
            }
            None => None,
        };
        let observed = Observed {
            walked_at: "2026-11-30T12:00:00Z".into(),
            n0,
            n1,
            n3,
            card,
            declaration,
            target,
        };
        (request, observed)
    })
}

/// The observations, findings and record every benchmark below works from.
struct Fixture {
    request: WalkRequest,
    observed: Observed,
    findings: walk::record::CardFindings,
    canonical: Vec<u8>,
}

const SALT: [u8; 32] = [7u8; 32];

fn fixture() -> &'static Fixture {
    static FIXTURE: std::sync::OnceLock<Fixture> = std::sync::OnceLock::new();
    FIXTURE.get_or_init(|| {
        let (request, observed) = capture();
        let findings = walk::reference_card_findings(observed.card.as_ref(), &request.base(), None);
        // The bench is only meaningful on the path a healthy agent takes: check it once.
        let outcome = walk::finish(&request, observed.clone(), &findings, SALT);
        assert!(outcome.verdict.ok, "the captured walk must PASS");
        assert!(outcome.nodes.iter().all(|n| n.status() == 200));
        eprintln!(
            "captured walk: card {} bytes, n3 reply {} bytes, record {} canonical bytes",
            observed.n1.exchange.body.len(),
            observed.n3.as_ref().map_or(0, |n| n.exchange.body.len()),
            outcome.canonical.len()
        );
        Fixture {
            request,
            observed,
            findings,
            canonical: outcome.canonical,
        }
    })
}

fn benches<M: Measurement>(c: &mut Criterion<M>, group_name: &str) {
    let fx = fixture();
    let mut group = c.benchmark_group(group_name);
    // Cloning the observations is setup, not the work measured: `finish` takes them by value.
    group.bench_function("finish_a2a", |b| {
        b.iter_batched(
            || fx.observed.clone(),
            |obs| walk::finish(black_box(&fx.request), obs, black_box(&fx.findings), SALT),
            BatchSize::SmallInput,
        )
    });
    let key = SigningKey::from_bytes(&[42u8; 32]);
    group.bench_function("ed25519_sign_record", |b| {
        b.iter(|| key.sign(black_box(&fx.canonical)))
    });
    group.finish();
}

fn wall(c: &mut Criterion) {
    benches(c, "core");
}

fn cpu(c: &mut Criterion<ThreadCpuTime>) {
    benches(c, "core_cpu");
}

criterion_group!(wall_time, wall);
criterion_group! {
    name = cpu_time;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = cpu
}
criterion_main!(wall_time, cpu_time);
