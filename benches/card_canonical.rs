//! RFC 8785 + SDK-profile canonicalisation of a 10 KiB card (target: median <= 50 us).

use conduct_walker::card_signature::{Profile, canonicalize_card};
use criterion::{Criterion, criterion_group};
use serde_json::{Value, json};
use std::hint::black_box;
use std::time::Duration;

#[path = "support/cpu.rs"]
mod cpu;
use cpu::thread_cpu_time;

/// A realistic card grown to about 10 KiB: interfaces, a terms extension with params, security
/// schemes, and skills with tags, examples and empties the profile drops.
fn ten_kib_card() -> Value {
    let mut card = json!({
        "name": "Stonework Reconciler",
        "description": "Reconciles bank statements against a ledger, with published terms",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": "https://stonework.example/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": ""},
            {"url": "https://stonework.example/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
        ],
        "provider": {"organization": "Stonework Analytics", "url": "https://stonework.example"},
        "capabilities": {"streaming": false, "pushNotifications": true, "extensions": [
            {"uri": "https://agentsow.com/extensions/a2a-terms/v1", "description": "Published terms", "required": false,
             "params": {"sow_spec": "0.18.0-draft", "proposals": [
                {"url": "https://stonework.example/terms/a.sow.json", "digest": "sha256:680778318c7ab734223d73f4145884321856d656340dfe508c159692fd81dc6e", "sow": "sow_k7m2q4x9w3e6r8t1", "offering": "reconcile-statement", "price": 12.5, "empty": ""}
             ]}}
        ]},
        "securitySchemes": {"google": {"openIdConnectSecurityScheme": {"openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"}}},
        "securityRequirements": [{"schemes": {"google": {"list": ["openid", "profile"]}}}],
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["application/json"],
        "skills": [],
        "signatures": [{"protected": "eyJhbGciOiJFZERTQSJ9", "signature": "AAAA"}],
        "url": "https://stonework.example/legacy"
    });
    let mut i = 0;
    while serde_json::to_vec(&card).unwrap().len() < 10 * 1024 {
        let skill = json!({
            "id": format!("skill-{i}"),
            "name": format!("Reconcile statement variant {i}"),
            "description": "Reconcile a bank statement against the ledger and report every difference, café €",
            "tags": ["finance", "reconciliation", "ledger"],
            "examples": ["Reconcile March", ""],
            "inputModes": ["text/plain"],
            "outputModes": []
        });
        card["skills"].as_array_mut().unwrap().push(skill);
        i += 1;
    }
    card
}

fn bench(c: &mut Criterion) {
    let card = ten_kib_card();
    let size = serde_json::to_vec(&card).unwrap().len();
    assert!((10 * 1024..11 * 1024).contains(&size), "{size}");
    c.bench_function("sdk_profile_rfc8785_10kib_card", |b| {
        b.iter(|| canonicalize_card(black_box(&card), Profile::Sdk).unwrap())
    });
    // For comparison: serde_jcs alone over the same card (no profile, nothing dropped), which is
    // what the card writer would cost if it handed the projected card to serde_jcs.
    c.bench_function("serde_jcs_only_10kib_card", |b| {
        b.iter(|| conduct_walker::jcs::canonicalize(black_box(&card)).unwrap())
    });
}

/// `CARD_CANONICAL_CPU=1 cargo bench --bench card_canonical`: run 20,000 canonicalisations and
/// print the median CPU time per call over 20 batches (wall time on a shared machine is not it).
fn cpu_report() {
    let card = ten_kib_card();
    let mut per_call: Vec<Duration> = (0..20)
        .map(|_| {
            let start = thread_cpu_time();
            for _ in 0..1000 {
                black_box(canonicalize_card(black_box(&card), Profile::Sdk).unwrap());
            }
            (thread_cpu_time() - start) / 1000
        })
        .collect();
    per_call.sort();
    println!(
        "sdk_profile_rfc8785_10kib_card cpu time per call: median {:?}, min {:?}, max {:?}",
        per_call[per_call.len() / 2],
        per_call[0],
        per_call[per_call.len() - 1]
    );
}

criterion_group!(benches, bench);

fn main() {
    if std::env::var_os("CARD_CANONICAL_CPU").is_some() {
        cpu_report();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
