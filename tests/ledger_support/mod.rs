//! A real intake emulator on loopback HTTPS (the sandbox's generated CA), a manual clock, and
//! helpers to file records, run batches and read the ledger's routes (ledger.md).
#![allow(dead_code)]

use chrono::{DateTime, Utc};
use conduct_walker::canonical;
use conduct_walker::clock::ManualClock;
use conduct_walker::intake_emulator::{Emulator, EmulatorConfig, Limits, RunningEmulator};
use conduct_walker::ledger::client::LedgerClient;
use conduct_walker::ledger::wire::StoredRecord;
use conduct_walker::net::{Exchange, HttpRequest, NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::SandboxCa;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use tempfile::TempDir;

pub const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

pub struct Env {
    pub ca: SandboxCa,
    pub dir: TempDir,
    pub clock: Arc<ManualClock>,
    pub emu: RunningEmulator,
    pub http: Transport,
    pub ca_pem: PathBuf,
}

pub fn at(t: &str) -> DateTime<Utc> {
    t.parse().unwrap()
}

/// Caps wide enough for the volumes these tests file.
pub fn wide_limits() -> Limits {
    Limits {
        daily_global: 1_000_000,
        daily_per_ip: 1_000_000,
        daily_per_domain: 1_000_000,
        ..Limits::default()
    }
}

impl Env {
    pub async fn start(now: &str) -> Env {
        Env::start_with(now, wide_limits()).await
    }

    pub async fn start_with(now: &str, limits: Limits) -> Env {
        let ca = SandboxCa::generate();
        let dir = TempDir::new().unwrap();
        let clock = Arc::new(ManualClock::new(at(now)));
        let mut cfg = TransportConfig::new(NetPolicy::new(false));
        cfg.extra_roots = vec![ca.cert_der()];
        let emu = Emulator::start(
            EmulatorConfig {
                limits,
                clock: clock.clone(),
                ..EmulatorConfig::new(dir.path().join("intake.db"), Transport::new(cfg).unwrap())
            },
            &ca,
            "127.0.0.1:0".parse().unwrap(),
        )
        .await
        .unwrap();
        let http = transport(&ca, &emu.base());
        let ca_pem = dir.path().join("ca.pem");
        ca.write_pem(&ca_pem).unwrap();
        Env {
            ca,
            dir,
            clock,
            emu,
            http,
            ca_pem,
        }
    }

    pub fn client(&self) -> LedgerClient {
        LedgerClient::new(&self.emu.url(), self.http.clone()).unwrap()
    }

    pub async fn send(
        &self,
        method: &'static str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Exchange {
        let mut request = HttpRequest::get(format!("{}{path}", self.emu.base()), headers);
        request.method = method;
        request.body = body;
        let ex = self.http.fetch(&request).await;
        assert!(ex.transport_error.is_none(), "{:?}", ex.transport_error);
        ex
    }

    pub async fn get(&self, path: &str) -> (u16, String) {
        let ex = self.send("GET", path, &[], None).await;
        (ex.status, String::from_utf8(ex.body).unwrap())
    }

    pub async fn get_json(&self, path: &str) -> (u16, Value) {
        let (status, body) = self.get(path).await;
        (
            status,
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}")),
        )
    }

    /// Files an unsigned record (walked endpoint `endpoint`, a nonce to make it unique) from
    /// its own address; returns its sha.
    pub async fn file(&self, witness: &str, endpoint: &str, nonce: u64) -> String {
        let text = record_text(witness, endpoint, nonce);
        let ip = format!("198.51.{}.{}", (nonce / 250) % 250, nonce % 250);
        let ex = self
            .send(
                "POST",
                "/witness",
                &[
                    ("Content-Type", "application/json"),
                    ("CF-Connecting-IP", &ip),
                ],
                Some(serde_json::to_vec(&json!({"record_canonical": text})).unwrap()),
            )
            .await;
        assert_eq!(ex.status, 201, "{}", String::from_utf8_lossy(&ex.body));
        let body: Value = serde_json::from_slice(&ex.body).unwrap();
        body["sha"].as_str().unwrap().to_string()
    }

    /// `POST /witness/anchor` with the operator key.
    pub async fn anchor(&self) -> (u16, Value) {
        let key = self.emu.operator_key();
        let ex = self
            .send("POST", "/witness/anchor", &[("x-ledger-key", &key)], None)
            .await;
        (ex.status, serde_json::from_slice(&ex.body).unwrap())
    }

    /// `POST /emulator/hooks` with the operator key.
    pub async fn hook(&self, hook: Value) -> (u16, Value) {
        let key = self.emu.operator_key();
        let ex = self
            .send(
                "POST",
                "/emulator/hooks",
                &[("x-ledger-key", &key), ("Content-Type", "application/json")],
                Some(serde_json::to_vec(&hook).unwrap()),
            )
            .await;
        (ex.status, serde_json::from_slice(&ex.body).unwrap())
    }

    /// Files `batches` × `per_batch` records and runs one operator batch each, with a
    /// scheduled run (batch + checkpoint) after every `checkpoint_every` batches.
    pub async fn grow(&self, batches: u64, per_batch: u64, checkpoint_every: u64, seed: u64) {
        for b in 0..batches {
            for i in 0..per_batch {
                let nonce = seed * 1_000_000 + b * 1000 + i;
                self.file("grow-witness", "https://agent.example/a2a", nonce)
                    .await;
            }
            self.clock.advance(chrono::Duration::milliseconds(1500));
            if checkpoint_every > 0 && (b + 1) % checkpoint_every == 0 {
                self.emu.scheduled_run().unwrap();
            } else {
                let (status, _) = self.anchor().await;
                assert_eq!(status, 201);
            }
        }
    }

    /// `ledger verify` as a process: (exit code, stdout, stderr).
    pub fn verify_cli(&self, extra: &[&str]) -> (i32, String, String) {
        let mut args = vec![
            "ledger".to_string(),
            "verify".into(),
            "--intake".into(),
            self.emu.url(),
            "--allow-private-network".into(),
            "--ca-cert".into(),
            self.ca_pem.display().to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let out = std::process::Command::new(BIN)
            .args(&args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

pub fn transport(ca: &SandboxCa, origin: &str) -> Transport {
    let mut policy = NetPolicy::new(true);
    policy.allow_url(origin);
    let mut config = TransportConfig::new(policy);
    config.extra_roots = vec![ca.cert_der()];
    Transport::new(config).unwrap()
}

/// A valid unsigned v1.1 record text (conduct-walk.md §6.3).
pub fn record_text(witness: &str, endpoint: &str, nonce: u64) -> String {
    let value = json!({
        "schema": "jidec-path-v1",
        "purpose": format!("a2a-conduct-walk-v1: {endpoint}"),
        "walked_at": "2026-12-01T00:00:00Z",
        "walker": {"tool": "conduct-walker", "version": "test"},
        "base": "https://agent.example",
        "nodes": [{"n": 0, "nonce": nonce}],
        "assertions": [{"claim": "c"}],
        "verdict": {"ok": true, "outcome": "PASS"},
        "witness": {"name": witness, "vantage": "loopback"},
        "mode": "full",
        "establishes": ["something"],
        "does_not_establish": ["correctness or quality of any response"],
    });
    String::from_utf8(canonical::to_bytes(&value)).unwrap()
}

/// A stored object as the worker keeps it, for records whose bytes a test does not have.
pub fn stored(sha: &str, witness_name: &str, vantage: &str, endpoint: &str) -> StoredRecord {
    StoredRecord {
        submitted_at: Some("2026-12-01T13:25:20.000Z".into()),
        ..StoredRecord::unsigned(sha, endpoint, witness_name, vantage)
    }
}

/// The positions of `keys` (as `"key":`) in a pretty JSON text must increase: the answer's key
/// order (the crate's `Value` would sort them, so the text is read directly).
pub fn assert_key_order(text: &str, keys: &[&str]) {
    let mut last = 0;
    for k in keys {
        let needle = format!("\n  \"{k}\":");
        let pos = text[last..]
            .find(&needle)
            .map(|p| p + last)
            .unwrap_or_else(|| panic!("key {k} missing or out of order in {text}"));
        last = pos + needle.len();
    }
    // No other top-level key.
    let top_level = text.matches("\n  \"").count();
    assert_eq!(top_level, keys.len(), "extra top-level keys in {text}");
}
