//! Issue 44, reciprocal as caller (witness-pool.md §6.4): with `[witness] caller_card` set, the
//! daemon's scheduled a2a walks ask the agent to walk us back in n3's message metadata, and the
//! agent's `EXT/reciprocal` answer is kept beside the record; an on-demand walk of the same
//! agent asks nothing.

mod daemon_support;

use conduct_walker::sandbox::{
    Behaviour, Handler, HttpsServer, Req, Resp, SandboxAgent, SandboxCa,
};
use conduct_walker::walk::spec::{BODY_A2A_0_3, BODY_A2A_1_0, CALLER_CARD_KEY, RECIPROCAL_KEY};
use conduct_walker::walk::{Wire, a2a_body};
use daemon_support::{BIN, Daemon, config, free_port, runtime, target};
use serde_json::{Value, json};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const CALLER_CARD: &str = "https://walker.example/.well-known/agent-card.json";

/// An honest sandbox agent that keeps every POST body it receives and, to a message carrying
/// `EXT/caller_card`, answers `EXT/reciprocal: "scheduled"` in its reply message's metadata.
fn reciprocal_agent(received: Arc<Mutex<Vec<Vec<u8>>>>) -> Handler {
    let honest = SandboxAgent::handler(Behaviour::default());
    Arc::new(move |req: Req| {
        let honest = honest.clone();
        let received = received.clone();
        Box::pin(async move {
            if req.method != "POST" {
                return honest(req).await;
            }
            received.lock().unwrap().push(req.body.clone());
            let asked: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
            let carries_card = asked
                .pointer("/params/message/metadata")
                .and_then(|m| m.get(CALLER_CARD_KEY))
                .is_some();
            let resp = honest(req).await;
            if !carries_card {
                return resp;
            }
            let conduct_walker::sandbox::Body::Bytes(bytes) = &resp.body else {
                panic!("the honest agent answers with bytes");
            };
            let mut reply: Value = serde_json::from_slice(bytes).unwrap();
            // 1.0 answers {"message": {...}}, 0.3 the message itself.
            let message = match reply["result"].get("message") {
                Some(_) => &mut reply["result"]["message"],
                None => &mut reply["result"],
            };
            message["metadata"][RECIPROCAL_KEY] = json!("scheduled");
            let mut answered = Resp::json(200, &reply);
            answered.headers = resp.headers;
            answered
        })
    })
}

fn sent_bodies(received: &Mutex<Vec<Vec<u8>>>) -> Vec<String> {
    received
        .lock()
        .unwrap()
        .iter()
        .map(|b| String::from_utf8(b.clone()).unwrap())
        .collect()
}

#[test]
fn scheduled_a2a_walks_send_the_caller_card_and_keep_the_answer_on_demand_walks_do_not() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let received = Arc::new(Mutex::new(Vec::new()));
    let agent = rt
        .block_on(HttpsServer::start(&ca, reciprocal_agent(received.clone())))
        .unwrap();
    let origin = agent.base();
    let targets = target("wire-1.0", &origin, "mode = \"a2a\"", "* * * * * *")
        + &target(
            "wire-0.3",
            &origin,
            "mode = \"a2a\"\nwire = \"0.3\"",
            "* * * * * *",
        );
    let listen = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let text = config(listen, 5, &targets).replace(
        "vantage = \"loopback\"\n",
        &format!("vantage = \"loopback\"\ncaller_card = \"{CALLER_CARD}\"\n"),
    );
    assert!(text.contains("caller_card"));
    let mut daemon = Daemon::start(&ca, listen, &text);
    daemon.wait_for("a record of each wire", Duration::from_secs(60), |d| {
        let bodies = sent_bodies(&received);
        bodies.iter().any(|b| b.contains("\"SendMessage\""))
            && bodies.iter().any(|b| b.contains("\"message/send\""))
            && d.record_count() >= 2
    });
    daemon.stop();

    // Every scheduled n3 carried the card, written as the unit tests hold against CPython.
    let scheduled = sent_bodies(&received);
    assert!(scheduled.len() >= 2);
    for body in &scheduled {
        let expected = if body.contains("\"SendMessage\"") {
            a2a_body(Wire::V1_0, Some(CALLER_CARD))
        } else {
            a2a_body(Wire::V0_3, Some(CALLER_CARD))
        };
        assert_eq!(body, &expected);
    }

    // Each stored record keeps the agent's answer beside it, never in its bytes.
    let store = daemon.store().unwrap();
    let rows = store.list(&Default::default()).unwrap();
    assert!(rows.len() >= 2);
    for row in &rows {
        let beside = conduct_walker::store::beside::get(store.connection(), row.id).unwrap();
        assert_eq!(
            beside.reciprocal.as_deref(),
            Some("scheduled"),
            "{}",
            row.sha256
        );
        let stored = store.get_by_prefix(&row.sha256).unwrap();
        let bytes = String::from_utf8(stored.canonical).unwrap();
        assert!(!bytes.contains("reciprocal"), "{bytes}");
    }
    let shown = Command::new(BIN)
        .args(["records", "show", &rows[0].sha256, "--db"])
        .arg(daemon.path("walker.db"))
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("reciprocal    scheduled (the agent's answer to our caller card"),
        "{shown}"
    );

    // An on-demand walk of the same agent asks nothing: its n3 body is the constant.
    received.lock().unwrap().clear();
    for (wire, constant) in [("1.0", BODY_A2A_1_0), ("0.3", BODY_A2A_0_3)] {
        let out = Command::new(BIN)
            .args(["walk", "--origin", &origin, "--mode", "a2a", "--wire", wire])
            .args([
                "--witness-name",
                "me",
                "--vantage",
                "here",
                "--allow-private-network",
            ])
            .arg("--ca-cert")
            .arg(daemon.path("ca.pem"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let on_demand = sent_bodies(&received);
        assert_eq!(on_demand.last().map(String::as_str), Some(constant));
    }
    assert_eq!(sent_bodies(&received).len(), 2);
}
