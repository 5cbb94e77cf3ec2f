//! Shared test helpers: walk a sandbox scenario over real loopback HTTPS.
#![allow(dead_code)]

use conduct_walker::clock::ManualClock;
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa, Scenario, scenario};
use conduct_walker::walk::assertions::Assertion;
use conduct_walker::walk::{Mode, Privacy, RequestProfile, WalkOutcome, WalkRequest, Wire};
use conduct_walker::wire::Witness;
use std::time::Duration;

pub fn fixed_clock() -> ManualClock {
    ManualClock::new("2026-11-30T12:00:00Z".parse().unwrap())
}

pub fn transport(ca: &SandboxCa, named: &[&str], deadline: Option<Duration>) -> Transport {
    let mut policy = NetPolicy::new(true);
    for url in named {
        policy.allow_url(url);
    }
    let mut config = TransportConfig::new(policy);
    config.extra_roots = vec![ca.cert_der()];
    if let Some(d) = deadline {
        config.deadline = d;
    }
    Transport::new(config).unwrap()
}

pub fn request(origin: &str, endpoint: Option<String>, mode: Mode, wire: Wire) -> WalkRequest {
    WalkRequest {
        origin: origin.to_string(),
        endpoint,
        mode,
        wire,
        witness: Witness {
            name: "test witness".into(),
            vantage: "loopback".into(),
            key_url: None,
        },
        vantage_limitation: None,
        contract_sha256: None,
        privacy: Privacy::Full,
        profile: RequestProfile::Spec,
        caller_card: None,
    }
}

pub async fn walk_with(transport: &Transport, req: &WalkRequest) -> WalkOutcome {
    let trust = conduct_walker::card_signature::TrustStore::default();
    conduct_walker::findings::walk(transport, &trust, req, &fixed_clock(), [7u8; 32]).await
}

/// Start the agent of a scenario and walk it as the scenario says.
pub async fn walk_scenario(name: &str) -> WalkOutcome {
    let sc = scenario(name).unwrap_or_else(|| panic!("no scenario {name}"));
    walk_scenario_value(&sc).await
}

pub async fn walk_scenario_value(sc: &Scenario) -> WalkOutcome {
    let ca = SandboxCa::generate();
    let agent = SandboxAgent::start(&ca, sc.behaviour.clone())
        .await
        .unwrap();
    let origin = agent.origin();
    let endpoint = sc.endpoint_path.map(|p| format!("{origin}{p}"));
    let t = transport(&ca, &[&origin], None);
    walk_with(&t, &request(&origin, endpoint, sc.mode, sc.wire)).await
}

/// Walk an ad-hoc behaviour.
pub async fn walk_behaviour(b: Behaviour, mode: Mode, wire: Wire) -> WalkOutcome {
    let sc = Scenario {
        name: "ad-hoc",
        about: "",
        mode,
        wire,
        endpoint_path: None,
        behaviour: b,
    };
    walk_scenario_value(&sc).await
}

pub fn assertion<'a>(o: &'a WalkOutcome, name: &str) -> &'a Assertion {
    o.assertions
        .iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

pub fn result(o: &WalkOutcome, name: &str) -> Option<bool> {
    assertion(o, name).result
}

pub fn note(o: &WalkOutcome, name: &str) -> Option<String> {
    assertion(o, name).note.clone()
}
