//! `conduct-walker mcp` through rmcp's own client, in process, against sandbox agents and the
//! intake emulator over loopback HTTPS: the tools and their schemas, records byte-identical to
//! `conduct-walker walk`'s, storing and filing, the operator's rules (consent, private hosts,
//! the daily cap, identity, submit), tool errors, progress and cancellation.

mod common;

use conduct_walker::clock::{Clock, ManualClock};
use conduct_walker::intake_emulator::{Emulator, EmulatorConfig, RunningEmulator};
use conduct_walker::mcp::{Options, WitnessServer};
use conduct_walker::sandbox::{Behaviour, HttpsServer, Resp, SandboxAgent, SandboxCa, handler};
use conduct_walker::store::Store;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, ProgressNotificationParam, Request,
};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A client that keeps every progress notification it gets.
#[derive(Clone, Default)]
struct Client {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    arrived: Arc<tokio::sync::Notify>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
        self.arrived.notify_one();
    }
}

/// The agents, the emulator and a config naming them.
struct World {
    ca: SandboxCa,
    dir: tempfile::TempDir,
    emulator: RunningEmulator,
    clock: Arc<ManualClock>,
}

impl World {
    async fn new() -> World {
        let ca = SandboxCa::generate();
        let dir = tempfile::tempdir().unwrap();
        ca.write_pem(&dir.path().join("ca.pem")).unwrap();
        let clock = Arc::new(common::fixed_clock());
        let emulator_transport = common::transport(&ca, &[], None);
        let mut config = EmulatorConfig::new(dir.path().join("intake.db"), emulator_transport);
        config.clock = clock.clone();
        let emulator = Emulator::start(config, &ca, "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        World {
            ca,
            dir,
            emulator,
            clock,
        }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("walker.db")
    }

    /// Write the config: the emulator as intake, `named` origins admitted on loopback.
    fn config(&self, named: &[&str], mcp: &str) -> conduct_walker::config::Config {
        let hosts: Vec<String> = named
            .iter()
            .map(|o| format!("{:?}", o.trim_start_matches("https://")))
            .collect();
        let text = format!(
            "[witness]\nname = \"mcp test witness\"\nvantage = \"loopback\"\nintake = \"{}\"\n\n\
             [network]\nextra_ca = [\"ca.pem\"]\nallow_private_network = true\nallow_hosts = [{}]\n\n\
             [daemon]\ndatabase = \"walker.db\"\n\n[mcp]\n{mcp}\n",
            self.emulator.url(),
            hosts.join(", ")
        );
        let path = self.dir.path().join("walker.toml");
        std::fs::write(&path, text).unwrap();
        conduct_walker::config::load(&path).unwrap()
    }

    async fn connect(&self, named: &[&str], mcp: &str) -> RunningService<RoleClient, Client> {
        let clock: Arc<dyn Clock> = self.clock.clone();
        let server = WitnessServer::new(Options {
            config: self.config(named, mcp),
            clock,
        })
        .unwrap();
        connect(server).await
    }

    fn records_in_store(&self) -> u64 {
        match Store::open_read_only(&self.db()) {
            Ok(s) => s.count().unwrap(),
            Err(_) => 0,
        }
    }
}

async fn connect(server: WitnessServer) -> RunningService<RoleClient, Client> {
    let (server_side, client_side) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let running = server.serve(server_side).await.unwrap();
        let _ = running.waiting().await;
    });
    Client::default().serve(client_side).await.unwrap()
}

fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("arguments are an object"),
    }
}

async fn call(client: &RunningService<RoleClient, Client>, tool: &str, a: Value) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args(a)))
        .await
        .unwrap_or_else(|e| panic!("{tool}: protocol error {e}"))
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ok(r: &CallToolResult) -> &Value {
    assert_eq!(r.is_error, Some(false), "tool error: {}", text(r));
    r.structured_content.as_ref().expect("structuredContent")
}

fn error_text(r: &CallToolResult) -> String {
    assert_eq!(r.is_error, Some(true), "expected a tool error: {}", text(r));
    text(r)
}

/// Remove what differs between two walks of the same agent: the spec's allowed edges
/// (`walked_at`, also quoted in the `establishes` lines, and `duration_ms`) and each response's
/// `headers_sha256`, which covers the `date` header hyper adds (it changes every second). Every
/// body hash, request header hash and assertion must still be identical.
fn normalised(record: &Value) -> Value {
    let at = record["walked_at"].as_str().expect("walked_at").to_string();
    without_time(record, &at)
}

fn without_time(v: &Value, at: &str) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "walked_at" && *k != "duration_ms")
                .filter(|(k, _)| !(*k == "headers_sha256" && m.contains_key("status")))
                .map(|(k, v)| (k.clone(), without_time(v, at)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|v| without_time(v, at)).collect()),
        Value::String(s) => Value::String(s.replace(at, "WALKED_AT")),
        other => other.clone(),
    }
}

/// Where two JSON values first differ, for a readable failure.
fn first_difference(a: &Value, b: &Value, at: &str) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                if x.get(k) != y.get(k) {
                    return match (x.get(k), y.get(k)) {
                        (Some(p), Some(q)) => first_difference(p, q, &format!("{at}.{k}")),
                        (p, q) => format!("{at}.{k}: {p:?} vs {q:?}"),
                    };
                }
            }
            String::new()
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find(|(_, (p, q))| p != q)
            .map(|(i, (p, q))| first_difference(p, q, &format!("{at}[{i}]")))
            .unwrap_or_default(),
        _ => format!("{at}: {a} vs {b}"),
    }
}

/// What `conduct-walker walk` writes for the same agent, witness and options. (Awaited, not
/// blocking: the agents run on this test's runtime.)
async fn cli_record(w: &World, origin: &str, mode: &str, endpoint: Option<&str>) -> Value {
    let out = w.dir.path().join(format!("cli-{}.json", rand_suffix()));
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_conduct-walker"));
    cmd.args(["walk", "--origin", origin, "--mode", mode])
        .args([
            "--witness-name",
            "mcp test witness",
            "--vantage",
            "loopback",
        ])
        .args(["--allow-private-network", "--ca-cert"])
        .arg(w.dir.path().join("ca.pem"))
        .arg("--out")
        .arg(&out);
    if let Some(e) = endpoint {
        cmd.args(["--endpoint", e]);
    }
    let status = cmd.output().await.unwrap();
    assert!(
        matches!(status.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    conduct_walker::json::parse_lenient(&std::fs::read(&out).unwrap()).unwrap()
}

fn rand_suffix() -> u64 {
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::SeqCst) as u64
}

#[tokio::test]
async fn tools_are_listed_with_input_and_output_schemas() {
    let w = World::new().await;
    let client = w.connect(&[], "").await;
    let info = client.peer_info().expect("server info");
    let implementation = info.server_info.as_ref().expect("serverInfo");
    assert_eq!(implementation.name, "conduct-walker");
    assert_eq!(implementation.version, env!("CARGO_PKG_VERSION"));
    assert!(info.instructions.as_deref().unwrap().contains("never pays"));
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "witness_walk",
            "records_list",
            "records_show",
            "records_verify",
            "card_verify",
            "terms_verify",
            "ring_verify",
            "inspect_document",
            "canonical_form"
        ]
    );
    for t in &tools {
        let out = t
            .output_schema
            .as_ref()
            .expect("every tool declares its output");
        assert_eq!(out["type"], "object", "{}", t.name);
        assert_eq!(t.input_schema["type"], "object", "{}", t.name);
    }
    let walk = &tools[0];
    assert_eq!(walk.input_schema["required"], json!(["origin"]));
    let props = &walk.input_schema["properties"];
    // The reference tool's inputs, so existing prompts keep working, plus ours.
    for name in [
        "origin",
        "witness_name",
        "vantage",
        "mode",
        "wire",
        "endpoint",
        "submit",
        "privacy",
        "request_profile",
    ] {
        assert!(props.get(name).is_some(), "input {name} missing");
    }
    assert_eq!(props["mode"]["enum"], json!(["a2a", "mcp"]));
    assert_eq!(props["mode"]["default"], "a2a");
    assert_eq!(props["submit"]["default"], true);
    assert_eq!(
        props["privacy"]["enum"],
        json!(["full", "hash-only", "commitment"])
    );
}

#[tokio::test]
async fn witness_walk_stores_files_and_writes_the_cli_record_bytes() {
    let w = World::new().await;
    let honest = SandboxAgent::start(&w.ca, Behaviour::default())
        .await
        .unwrap();
    let bad = conduct_walker::sandbox::scenario("paid-undeclared").unwrap();
    let misbehaving = SandboxAgent::start(&w.ca, bad.behaviour.clone())
        .await
        .unwrap();
    let (ho, mo) = (honest.origin(), misbehaving.origin());
    let client = w.connect(&[&ho, &mo], "").await;
    let bad_mode = bad.mode.as_str();
    for (origin, mode, pass) in [(&ho, "a2a", true), (&mo, bad_mode, false)] {
        let endpoint = bad
            .endpoint_path
            .filter(|_| origin == &mo)
            .map(|p| format!("{origin}{p}"));
        let mut a = json!({"origin": origin, "mode": mode});
        if let Some(e) = &endpoint {
            a["endpoint"] = json!(e);
        }
        let r = call(&client, "witness_walk", a).await;
        let v = ok(&r).clone();
        assert_eq!(v["verdict"]["ok"], pass, "{}", text(&r));
        let sha = v["sha256"].as_str().unwrap();
        let canonical = v["record_canonical"].as_str().unwrap();
        assert_eq!(
            conduct_walker::digest::sha256_hex(canonical.as_bytes()),
            sha
        );
        // The first content block is the one-line summary.
        let summary = r.content[0].as_text().unwrap().text.clone();
        assert!(
            summary.starts_with(if pass { "PASS" } else { "FAIL" }),
            "{summary}"
        );
        assert!(!summary.contains('\n'), "{summary}");
        // Stored, byte for byte, before the answer.
        let stored = Store::open_read_only(&w.db())
            .unwrap()
            .get_by_prefix(sha)
            .unwrap();
        assert_eq!(stored.canonical, canonical.as_bytes());
        // Filed with the emulator and classified.
        assert_eq!(v["submission"]["answer"], "filed_counted", "{v:#}");
        let filed = w.emulator.stored(sha).expect("the emulator has the record");
        assert_eq!(filed["record_canonical"], json!(canonical));
        // The same bytes `conduct-walker walk` writes for the same traffic (walked_at and
        // duration_ms are the walk's own).
        let cli = cli_record(&w, origin, mode, endpoint.as_deref()).await;
        let (ours, theirs) = (normalised(&v["record"]), normalised(&cli));
        assert!(ours == theirs, "{}", first_difference(&ours, &theirs, "$"));
        assert_eq!(v["nodes"][0]["status"], 200);
        assert_eq!(v["identity"]["source"], "config");
        assert_eq!(v["assertions"].as_array().unwrap().len(), 8);
    }
}

#[tokio::test]
async fn submit_false_files_nothing_and_allow_submit_false_overrides_the_model() {
    let w = World::new().await;
    let agent = SandboxAgent::start(&w.ca, Behaviour::default())
        .await
        .unwrap();
    let o = agent.origin();
    let client = w.connect(&[&o], "").await;
    let r = call(
        &client,
        "witness_walk",
        json!({"origin": o, "submit": false}),
    )
    .await;
    let v = ok(&r);
    assert_eq!(v["submission"], Value::Null);
    assert!(
        v["submit_note"]
            .as_str()
            .unwrap()
            .contains("submit was false")
    );
    assert!(w.emulator.stored(v["sha256"].as_str().unwrap()).is_none());
    assert_eq!(w.emulator.stored_count(), 0);
    assert_eq!(w.records_in_store(), 1);
    drop(client);

    // The clock is fixed: a second walk at the same instant would be the same record.
    w.clock.advance(chrono::Duration::minutes(1));
    let client = w.connect(&[&o], "allow_submit = false").await;
    let r = call(
        &client,
        "witness_walk",
        json!({"origin": o, "submit": true}),
    )
    .await;
    let v = ok(&r);
    assert_eq!(v["submission"], Value::Null);
    assert!(
        v["submit_note"]
            .as_str()
            .unwrap()
            .contains("mcp.allow_submit = false")
    );
    assert_eq!(w.emulator.stored_count(), 0);
    assert_eq!(w.records_in_store(), 2);
}

#[tokio::test]
async fn a_declined_origin_is_not_walked() {
    let w = World::new().await;
    let others = Arc::new(AtomicUsize::new(0));
    let seen = others.clone();
    let decliner = HttpsServer::start(
        &w.ca,
        handler(move |req| {
            if req.path == "/.well-known/mcp-conduct.json" {
                Resp::bytes(200, "application/json", r#"{"listing": "decline"}"#)
            } else {
                seen.fetch_add(1, Ordering::SeqCst);
                Resp::json(404, &json!({"error": "not found"}))
            }
        }),
    )
    .await
    .unwrap();
    let o = decliner.base();
    let client = w.connect(&[&o], "").await;
    let r = call(&client, "witness_walk", json!({"origin": o})).await;
    let why = error_text(&r);
    assert!(why.contains("\"listing\": \"decline\""), "{why}");
    assert!(why.contains("not walked"), "{why}");
    assert_eq!(
        others.load(Ordering::SeqCst),
        0,
        "nothing but the consent file was read"
    );
    assert_eq!(w.records_in_store(), 0);
}

#[tokio::test]
async fn a_private_host_the_config_does_not_name_is_refused() {
    let w = World::new().await;
    let named = SandboxAgent::start(&w.ca, Behaviour::default())
        .await
        .unwrap();
    let unnamed = SandboxAgent::start(&w.ca, Behaviour::default())
        .await
        .unwrap();
    let client = w.connect(&[&named.origin()], "").await;
    let r = call(&client, "witness_walk", json!({"origin": unnamed.origin()})).await;
    let why = error_text(&r);
    assert!(why.contains(&unnamed.origin()), "{why}");
    assert!(why.contains("private") || why.contains("loopback"), "{why}");
    assert_eq!(unnamed.card_fetches(), 0);
    // The same rule for the verifiers.
    let r = call(&client, "card_verify", json!({"url": unnamed.origin()})).await;
    error_text(&r);
    assert_eq!(unnamed.card_fetches(), 0);
    assert_eq!(w.records_in_store(), 0);
}

#[tokio::test]
async fn the_daily_cap_is_enforced_across_server_restarts() {
    let w = World::new().await;
    let agent = SandboxAgent::start(&w.ca, Behaviour::default())
        .await
        .unwrap();
    let o = agent.origin();
    let client = w.connect(&[&o], "daily_walk_cap = 2").await;
    for used in 1..=2 {
        let r = call(&client, "witness_walk", json!({"origin": o})).await;
        assert_eq!(
            ok(&r)["walks_today"],
            json!({"used": used, "cap": 2, "counted_as": "filing",
                   "resets_at": "2026-12-01T00:00:00Z"})
        );
        // Each walk its own record (the clock is fixed), within the same UTC day.
        w.clock.advance(chrono::Duration::minutes(1));
    }
    drop(client);
    // A new session (a new server process, for a stdio client) counts the same day.
    let client = w.connect(&[&o], "daily_walk_cap = 2").await;
    let fetches = agent.card_fetches();
    let r = call(&client, "witness_walk", json!({"origin": o})).await;
    let why = error_text(&r);
    assert!(why.contains("walks that file with the intake"), "{why}");
    assert!(why.contains("2 of 2 today"), "{why}");
    assert!(why.contains("mcp.daily_walk_cap"), "{why}");
    assert!(why.contains("resets at 2026-12-01T00:00:00Z"), "{why}");
    assert_eq!(agent.card_fetches(), fetches, "a capped walk sends nothing");
    assert_eq!(w.records_in_store(), 2);
    // The next UTC day opens new places.
    w.clock.advance(chrono::Duration::days(1));
    let r = call(&client, "witness_walk", json!({"origin": o})).await;
    assert_eq!(ok(&r)["walks_today"]["used"], 1);
}

#[tokio::test]
async fn store_only_walks_have_their_own_larger_cap() {
    let w = World::new().await;
    let agent = SandboxAgent::start(&w.ca, Behaviour::default())
        .await
        .unwrap();
    let o = agent.origin();
    // The default filing cap of an unsigned witness is its lane's 5; exploring with
    // submit: false goes past it.
    let client = w.connect(&[&o], "").await;
    for used in 1..=6 {
        let r = call(
            &client,
            "witness_walk",
            json!({"origin": o, "submit": false}),
        )
        .await;
        let v = ok(&r);
        assert_eq!(v["walks_today"]["used"], used, "{}", text(&r));
        assert_eq!(v["walks_today"]["cap"], 100);
        assert_eq!(v["walks_today"]["counted_as"], "store_only");
        w.clock.advance(chrono::Duration::minutes(1));
    }
    // Filing walks are counted apart: the first of the day.
    let r = call(&client, "witness_walk", json!({"origin": o})).await;
    assert_eq!(
        ok(&r)["walks_today"],
        json!({"used": 1, "cap": 5, "counted_as": "filing", "resets_at": "2026-12-01T00:00:00Z"})
    );
    w.clock.advance(chrono::Duration::minutes(1));
    drop(client);
    // The store-only cap is the operator's to set, and its refusal names it; a model that
    // files may still walk. allow_submit = false makes every walk store-only.
    let client = w
        .connect(&[&o], "daily_store_only_cap = 6\ndaily_walk_cap = 3")
        .await;
    let r = call(
        &client,
        "witness_walk",
        json!({"origin": o, "submit": false}),
    )
    .await;
    let why = error_text(&r);
    assert!(why.contains("store-only walks"), "{why}");
    assert!(why.contains("6 of 6 today"), "{why}");
    assert!(why.contains("mcp.daily_store_only_cap"), "{why}");
    assert!(
        why.contains("2026-12-01T00:00:00Z (in 11 h 53 min)"),
        "{why}"
    );
    let r = call(&client, "witness_walk", json!({"origin": o})).await;
    assert_eq!(ok(&r)["walks_today"]["used"], 2);
    drop(client);
    let client = w
        .connect(&[&o], "daily_store_only_cap = 6\nallow_submit = false")
        .await;
    let r = call(&client, "witness_walk", json!({"origin": o})).await;
    assert!(error_text(&r).contains("mcp.daily_store_only_cap"));
    assert_eq!(w.records_in_store(), 8);
}

#[tokio::test]
async fn malformed_arguments_are_tool_errors_and_the_server_keeps_serving() {
    let w = World::new().await;
    let client = w.connect(&[], "").await;
    for (a, expect) in [
        (json!({}), "origin is required"),
        (json!({"origin": "http://agent.example"}), "https"),
        (json!({"origin": "not a url"}), "not a URL"),
        (
            json!({"origin": "https://agent.example", "mode": "smtp"}),
            "mode must be one of a2a, mcp",
        ),
        (
            json!({"origin": "https://agent.example", "submit": "yes"}),
            "submit must be true or false",
        ),
        (
            json!({"origin": "https://agent.example", "key": "/etc/shadow"}),
            "unknown argument \"key\"",
        ),
    ] {
        let r = call(&client, "witness_walk", a.clone()).await;
        let why = error_text(&r);
        assert!(why.contains(expect), "{a}: {why}");
    }
    let r = call(&client, "records_show", json!({"sha_prefix": "zz"})).await;
    assert!(error_text(&r).contains("hex"));
    // Still serving, and nothing was stored.
    let r = call(&client, "records_list", json!({})).await;
    assert_eq!(ok(&r)["matched"], 0);
    let r = call(&client, "records_list", json!({"outcome": "MAYBE"})).await;
    assert!(error_text(&r).contains("outcome must be PASS or FAIL"));
    let r = client
        .call_tool(CallToolRequestParams::new("no_such_tool"))
        .await;
    assert!(r.is_err(), "an unknown tool is a protocol error");
}

#[tokio::test]
async fn identity_from_the_model_is_used_only_when_the_config_allows_it() {
    let w = World::new().await;
    let agent = SandboxAgent::start(&w.ca, Behaviour::default())
        .await
        .unwrap();
    let o = agent.origin();
    let a = json!({"origin": o, "witness_name": "model", "vantage": "elsewhere", "submit": false});
    let client = w.connect(&[&o], "").await;
    let r = call(&client, "witness_walk", a.clone()).await;
    let v = ok(&r);
    assert_eq!(v["identity"]["source"], "config");
    assert!(
        v["identity"]["note"]
            .as_str()
            .unwrap()
            .contains("allow_model_identity")
    );
    assert_eq!(v["record"]["witness"]["name"], "mcp test witness");
    drop(client);
    let client = w.connect(&[&o], "allow_model_identity = true").await;
    let r = call(&client, "witness_walk", a).await;
    let v = ok(&r);
    assert_eq!(v["identity"]["source"], "model");
    assert_eq!(v["record"]["witness"]["name"], "model");
    assert_eq!(v["record"]["witness"]["vantage"], "elsewhere");
}

#[tokio::test]
async fn progress_notifications_name_each_stage_and_read_tools_see_the_record() {
    let w = World::new().await;
    let agent = SandboxAgent::start(&w.ca, Behaviour::default())
        .await
        .unwrap();
    let o = agent.origin();
    let client = w.connect(&[&o], "").await;
    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(
                CallToolRequestParams::new("witness_walk")
                    .with_arguments(args(json!({"origin": o}))),
            )),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    handle.await_response().await.unwrap();
    let messages: Vec<String> = client
        .service()
        .progress
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.message.clone().unwrap_or_default())
        .collect();
    let stages: Vec<&str> = messages
        .iter()
        .map(|m| m.split([':', ' ']).next().unwrap())
        .collect();
    assert_eq!(
        stages,
        ["n0", "n1", "n3", "signing", "storing", "filing"],
        "{messages:?}"
    );

    let list = call(&client, "records_list", json!({})).await;
    let l = ok(&list);
    assert_eq!(l["matched"], 1);
    let sha = l["records"][0]["sha256"].as_str().unwrap().to_string();
    let show = call(&client, "records_show", json!({"sha_prefix": &sha[..8]})).await;
    assert_eq!(ok(&show)["row"]["sha256"], json!(sha));
    // An MCP walk never sends a caller card (witness-pool.md §6.4): the answer's slot is null.
    assert_eq!(ok(&show).get("reciprocal"), Some(&Value::Null));
    let verify = call(&client, "records_verify", json!({})).await;
    assert_eq!(ok(&verify)["ok"], true);
    assert_eq!(ok(&verify)["rows"], 1);
    let card = call(&client, "card_verify", json!({"url": o})).await;
    assert_eq!(ok(&card)["valid"], false, "the sandbox card is unsigned");
    let terms = call(&client, "terms_verify", json!({"url": o})).await;
    assert_eq!(ok(&terms)["listed"], false);
}

#[tokio::test]
async fn cancellation_mid_walk_stores_nothing() {
    let w = World::new().await;
    // n0 trickles its body, so the walk is still at n0 when the client cancels.
    let slow = Behaviour {
        card_trickle: Some(Duration::from_millis(20)),
        ..Behaviour::default()
    };
    let agent = SandboxAgent::start(&w.ca, slow).await.unwrap();
    let o = agent.origin();
    let client = w.connect(&[&o], "").await;
    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(
                CallToolRequestParams::new("witness_walk")
                    .with_arguments(args(json!({"origin": o}))),
            )),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    // Wait until the walk has started (the n0 notification), then cancel.
    tokio::time::timeout(Duration::from_secs(10), client.service().arrived.notified())
        .await
        .expect("a progress notification for n0");
    handle.cancel(Some("test".into())).await.unwrap();
    // The server notes the cancelled walk once its future is dropped.
    let mut state = String::new();
    for _ in 0..50 {
        let store = Store::open_read_only(&w.db()).unwrap();
        state = store
            .connection()
            .query_row("SELECT state FROM mcp_walks", [], |r| r.get(0))
            .unwrap();
        if state != "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(state, "cancelled");
    assert_eq!(w.records_in_store(), 0);
    assert_eq!(w.emulator.stored_count(), 0);
    // The server is still there.
    let r = call(&client, "records_verify", json!({})).await;
    assert_eq!(ok(&r)["rows"], 0);
}

#[tokio::test]
async fn on_stdio_a_line_that_is_not_json_gets_the_parse_error_and_stdout_stays_protocol_only() {
    use tokio::io::AsyncWriteExt;
    let w = World::new().await;
    w.config(&[], "");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_conduct-walker"))
        .args(["mcp", "--config"])
        .arg(w.dir.path().join("walker.toml"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "witness_walk", "arguments": {"origin": "http://agent.example"}}});
    let input = format!(
        "{init}\n{}\nthis is not json\n{call}\n",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    );
    stdin.write_all(input.as_bytes()).await.unwrap();
    // Give the server time to answer before its input ends.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("the server exits when its input ends")
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a message: {l:?}: {e}")))
        .collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    // Answers may come in any order (JSON-RPC matches them by id).
    let init = lines
        .iter()
        .find(|m| m["id"] == 1)
        .expect("initialize's answer");
    assert_eq!(init["result"]["serverInfo"]["name"], "conduct-walker");
    let parse_error = lines.iter().find(|m| m["id"].is_null()).expect("-32700");
    assert_eq!(parse_error["error"]["code"], -32700);
    let answer = lines
        .iter()
        .find(|m| m["id"] == 2)
        .expect("the tool call's answer");
    assert_eq!(answer["result"]["isError"], true);
}

#[tokio::test]
async fn long_inputs_are_refused_and_errors_quote_at_most_200_characters() {
    let w = World::new().await;
    let agent = SandboxAgent::start(&w.ca, Behaviour::default())
        .await
        .unwrap();
    let o = agent.origin();
    let client = w.connect(&[&o], "allow_model_identity = true").await;
    let mega = "x".repeat(1 << 20);
    let long_url = format!("https://agent.example/{}", "a".repeat(5000));
    for (tool, a, expect) in [
        (
            "witness_walk",
            json!({"origin": mega}),
            "origin is 1048576 characters long",
        ),
        ("witness_walk", json!({"origin": long_url}), "at most 4096"),
        (
            "witness_walk",
            json!({"origin": o, "witness_name": mega}),
            "witness_name is 1048576 characters long; at most 200",
        ),
        (
            "witness_walk",
            json!({"origin": o, "vantage": "v".repeat(201)}),
            "at most 200",
        ),
        ("witness_walk", json!({"origin": o, "mode": mega}), "mode"),
        (
            "witness_walk",
            json!({"origin": o, "submit": [mega]}),
            "submit",
        ),
        (
            "witness_walk",
            json!({"origin": "https://x.example", mega.clone(): 1}),
            "unknown argument",
        ),
        ("records_list", json!({"since": mega}), "since"),
        ("records_list", json!({"endpoint": mega}), "endpoint"),
        ("records_show", json!({"sha_prefix": mega}), "sha_prefix"),
        ("card_verify", json!({"url": mega}), "url"),
        (
            "terms_verify",
            json!({"url": format!("http://{mega}")}),
            "url",
        ),
    ] {
        let r = call(&client, tool, a).await;
        let why = error_text(&r);
        assert!(
            why.contains(expect),
            "{tool}: {}",
            &why[..why.len().min(400)]
        );
        assert!(
            why.len() < 1000,
            "{tool} {expect}: a {}-byte error",
            why.len()
        );
        assert!(
            !why.contains(&"x".repeat(201)),
            "{tool}: quotes more than 200 characters"
        );
    }
    assert_eq!(w.records_in_store(), 0, "nothing was walked or stored");
    assert_eq!(agent.card_fetches(), 0);
    // The config's own limit for names is the same.
    let text = format!(
        "[witness]\nname = \"{}\"\nvantage = \"here\"\n",
        "n".repeat(201)
    );
    let path = w.dir.path().join("long.toml");
    std::fs::write(&path, text).unwrap();
    let err = conduct_walker::config::load(&path).unwrap_err().to_string();
    assert!(err.contains("201 characters long; at most 200"), "{err}");
}

#[tokio::test]
async fn a_walk_answers_a_few_kb_of_text_and_the_whole_record_in_structured_content() {
    let w = World::new().await;
    let bad = conduct_walker::sandbox::scenario("paid-undeclared").unwrap();
    let agent = SandboxAgent::start(&w.ca, bad.behaviour.clone())
        .await
        .unwrap();
    let o = agent.origin();
    let client = w.connect(&[&o], "").await;
    let mut a = json!({"origin": o, "mode": bad.mode.as_str()});
    if let Some(p) = bad.endpoint_path {
        a["endpoint"] = json!(format!("{o}{p}"));
    }
    let r = call(&client, "witness_walk", a).await;
    let v = ok(&r).clone();
    let all = text(&r);
    let sha = v["sha256"].as_str().unwrap();
    assert!(all.len() < 4096, "{} bytes of text:\n{all}", all.len());
    assert!(all.starts_with("FAIL"), "{all}");
    assert!(all.contains(sha), "{all}");
    assert!(
        all.contains(w.db().to_str().unwrap()),
        "where the record is: {all}"
    );
    assert!(all.contains("records_show"), "{all}");
    // Every assertion that did not pass, by name, with its note.
    for x in v["assertions"].as_array().unwrap() {
        let name = x["name"].as_str().unwrap();
        match x["result"].as_bool() {
            Some(true) => assert!(!all.contains(&format!(" {name}:")), "{name} passed: {all}"),
            _ => {
                assert!(
                    all.contains(&format!(" {name}:")),
                    "{name} is missing: {all}"
                );
                if let Some(note) = x["note"].as_str() {
                    let head: String = note.chars().take(60).collect();
                    assert!(all.contains(&head), "{name}'s note is missing: {all}");
                }
            }
        }
    }
    // The record is not in the text, and is whole in structuredContent.
    assert!(!all.contains("\"record_canonical\""), "{all}");
    let canonical = v["record_canonical"].as_str().unwrap();
    assert!(!all.contains(canonical));
    assert_eq!(
        conduct_walker::digest::sha256_hex(canonical.as_bytes()),
        sha
    );
    assert_eq!(v["record"]["verdict"]["ok"], false);
}

#[tokio::test]
async fn records_list_answers_a_page_at_a_time() {
    let w = World::new().await;
    let agent = SandboxAgent::start(&w.ca, Behaviour::default())
        .await
        .unwrap();
    let o = agent.origin();
    let client = w.connect(&[&o], "").await;
    let mut shas = Vec::new();
    for _ in 0..3 {
        let r = call(
            &client,
            "witness_walk",
            json!({"origin": o, "submit": false}),
        )
        .await;
        shas.push(ok(&r)["sha256"].as_str().unwrap().to_string());
        w.clock.advance(chrono::Duration::minutes(1));
    }
    let r = call(&client, "records_list", json!({"limit": 2})).await;
    let v = ok(&r);
    assert_eq!(
        (v["matched"].as_u64(), v["shown"].as_u64()),
        (Some(3), Some(2))
    );
    assert_eq!(v["records"][0]["sha256"], json!(shas[2]), "newest first");
    assert_eq!(v["next_offset"], 2);
    let page = text(&r);
    assert!(
        page.contains(&shas[1]) && !page.contains(&shas[0]),
        "{page}"
    );
    assert!(
        !page.contains("chain_hash"),
        "the text is a list, not the JSON: {page}"
    );
    let r = call(&client, "records_list", json!({"limit": 2, "offset": 2})).await;
    let v = ok(&r);
    assert_eq!(v["shown"], 1);
    assert_eq!(v["records"][0]["sha256"], json!(shas[0]));
    assert!(v.get("next_offset").is_none(), "{v}");
    // The default page is 20, the largest 100.
    let r = call(&client, "records_list", json!({"limit": 101})).await;
    assert!(error_text(&r).contains("from 1 to 100"));
}

/// Run `conduct-walker mcp` on stdio with `input`; its stdout messages and stderr.
async fn stdio_session(w: &World, input: Vec<u8>) -> (Vec<Value>, String, Option<i32>) {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_conduct-walker"))
        .args(["mcp", "--config"])
        .arg(w.dir.path().join("walker.toml"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = tokio::spawn(async move {
        stdin.write_all(&input).await.unwrap();
        // Give the server time to answer before its input ends.
        tokio::time::sleep(Duration::from_millis(2000)).await;
        drop(stdin);
    });
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the server exits when its input ends")
        .unwrap();
    writer.await.unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let messages = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a message: {l:?}: {e}")))
        .collect();
    (
        messages,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

#[tokio::test]
async fn on_stdio_invalid_utf8_and_overlong_lines_get_the_parse_error_and_serving_goes_on() {
    let w = World::new().await;
    w.config(&[], "");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}});
    let list = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "records_list", "arguments": {}}})
    };
    let mut input = format!(
        "{init}\n{}\n",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .into_bytes();
    input.extend_from_slice(b"{\"jsonrpc\": \"2.0\", \"id\": 9, \"method\": \"\xff\xfe\"}\n");
    input.extend_from_slice(format!("{}\n", list(2)).as_bytes());
    // 16 MiB and one byte more, as a JSON string: a line rmcp would drop without an answer.
    input.extend_from_slice(b"\"");
    input.extend(std::iter::repeat_n(b'z', 16 * 1024 * 1024));
    input.extend_from_slice(b"\"\n");
    input.extend_from_slice(format!("{}\n", list(3)).as_bytes());
    // Malformed tools/call: -32602, not "method not found".
    input.extend_from_slice(
        format!(
            "{}\n{}\n",
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call"}),
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                   "params": {"name": "records_list", "arguments": [1]}})
        )
        .as_bytes(),
    );
    let (messages, stderr, code) = stdio_session(&w, input).await;
    let by_id = |id: u64| {
        messages
            .iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {messages:#?}"))
    };
    let parse_errors: Vec<&Value> = messages.iter().filter(|m| m["id"].is_null()).collect();
    assert_eq!(parse_errors.len(), 2, "{messages:#?}");
    for e in &parse_errors {
        assert_eq!(e["error"]["code"], -32700);
    }
    assert!(
        parse_errors
            .iter()
            .any(|e| e["error"]["message"].as_str().unwrap().contains("UTF-8")),
        "{parse_errors:#?}"
    );
    assert!(
        parse_errors.iter().any(|e| e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than")),
        "{parse_errors:#?}"
    );
    for id in [2, 3] {
        assert_eq!(by_id(id)["result"]["structuredContent"]["matched"], 0);
    }
    for id in [4, 5] {
        assert_eq!(by_id(id)["error"]["code"], -32602, "{:#}", by_id(id));
    }
    assert_eq!(code, Some(0));
    assert!(stderr.contains("stopped: its input ended"), "{stderr}");
}

/// `ring_verify` (issue 37): the published August ring rebuilt from the register's archive,
/// from texts only (read-only, offline); a forged count named with both values; bounds refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ring_verify_rebuilds_a_published_ring_from_its_texts() {
    let w = World::new().await;
    let client = w.connect(&[], "").await;
    let dir = conduct_walker::sandbox::test_vectors("rings").join("real");
    let ring =
        std::fs::read_to_string(dir.join("rings/mcp-horizonshield-dev-mcp/2026-08.json")).unwrap();
    let history =
        std::fs::read_to_string(dir.join("history/mcp-horizonshield-dev-mcp.json")).unwrap();
    let r = call(
        &client,
        "ring_verify",
        json!({"ring": ring, "history": history}),
    )
    .await;
    let v = ok(&r);
    assert_eq!(v["result"], "MATCH", "{v:#}");
    assert_eq!(
        v["rebuilt_sha256"],
        "9ca61125dcb3e566a34e4542641324987b1fa2a3f1f5f8c5086126f45aa4b953"
    );
    assert!(text(&r).starts_with("MATCH: the 2026-08 ring of https://mcp.horizonshield.dev/mcp"));

    let forged = ring.replacen("\"witnesses\": 1", "\"witnesses\": 2", 1);
    let v = call(
        &client,
        "ring_verify",
        json!({"ring": forged, "history": history, "witnesses": []}),
    )
    .await;
    let v = ok(&v);
    assert_eq!(v["result"], "MISMATCH");
    assert_eq!(
        v["differing_keys"],
        json!([{"key": "witnesses", "rebuilt": "1", "claimed": "2"}])
    );

    let junk = call(
        &client,
        "ring_verify",
        json!({"ring": ring, "history": history, "witnesses": ["not json"]}),
    )
    .await;
    assert!(
        error_text(&junk).contains("witnesses[0]: not JSON"),
        "{}",
        text(&junk)
    );
    let many = call(
        &client,
        "ring_verify",
        json!({"ring": ring, "history": history, "witnesses": vec!["{}"; 1001]}),
    )
    .await;
    assert!(error_text(&many).contains("at most 1000"));
    let odd = call(
        &client,
        "ring_verify",
        json!({"ring": ring, "history": history, "witnesses": [5]}),
    )
    .await;
    assert!(error_text(&odd).contains("witnesses[0] must be a string"));
    // Nothing was written: the tool reads its arguments only.
    assert_eq!(w.records_in_store(), 0);
}

/// `inspect_document` and `canonical_form` (issue 46): the bench's checks over texts, offline;
/// a refusal is a tool error naming the reason; a document past the bound is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_auditors_bench_tools_answer_from_texts() {
    let w = World::new().await;
    let client = w.connect(&[], "").await;
    let dir = conduct_walker::sandbox::test_vectors("rings").join("real");
    let ring =
        std::fs::read_to_string(dir.join("rings/mcp-horizonshield-dev-mcp/2026-08.json")).unwrap();
    let r = call(&client, "inspect_document", json!({"document": ring})).await;
    let v = ok(&r);
    assert_eq!(v["kind"], "ring", "{v:#}");
    assert_eq!(v["canonical_agrees"], true);
    assert_eq!(v["holds"], true);
    let r = call(
        &client,
        "inspect_document",
        json!({"document": "{}", "public_key": "AAAA"}),
    )
    .await;
    assert!(error_text(&r).contains("32"));

    let r = call(
        &client,
        "canonical_form",
        json!({"document": "{\"b\":1.0,\"a\":\"é\"}", "form": "nenrin"}),
    )
    .await;
    assert_eq!(ok(&r)["canonical"], "{\"a\":\"é\",\"b\":1.0}");
    let r = call(
        &client,
        "canonical_form",
        json!({"document": "[NaN]", "form": "rfc8785"}),
    )
    .await;
    assert!(error_text(&r).contains("the rfc8785 form refuses"));
    let huge = "x".repeat(4 * 1024 * 1024 + 1);
    let r = call(
        &client,
        "canonical_form",
        json!({"document": huge, "form": "nenrin"}),
    )
    .await;
    assert!(error_text(&r).contains("document"));
    assert_eq!(w.records_in_store(), 0);
}
