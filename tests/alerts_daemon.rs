//! Alerts through the real daemon: a failing agent and an unreachable one open incidents, whose
//! alerts are delivered to a loopback HTTPS receiver that verifies each webhook with the
//! official `standardwebhooks` Python library (PyPI), and to Slack- and ntfy-shaped endpoints
//! that check their requests; and a kill -9 loop while alerts are planned and delivered loses
//! none (every planned alert reaches the receiver, counted by webhook-id).
//!
//! The first run builds `target/alerts-venv` (pip, PyPI); later runs reuse it.

mod alerts_support;
mod daemon_support;

use alerts_support::{Receiver, SECRET};

use conduct_walker::sandbox::{SandboxAgent, SandboxCa, scenario};
use daemon_support::{Daemon, config, free_port, runtime, target};
use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

const EVERY_SECOND: &str = "* * * * * *";

/// A sandbox agent playing one of the sandbox's scenarios.
fn agent(rt: &tokio::runtime::Runtime, ca: &SandboxCa, name: &str) -> SandboxAgent {
    rt.block_on(SandboxAgent::start(ca, scenario(name).unwrap().behaviour))
        .unwrap()
}

fn listen() -> SocketAddr {
    format!("127.0.0.1:{}", free_port()).parse().unwrap()
}

fn alerts_section(port: u16, extra: &str) -> String {
    format!(
        r#"
[alerts]
allow_hosts = ["127.0.0.1:{port}"]
{extra}

[[alerts.channel]]
name = "hook"
kind = "webhook"
url = "https://127.0.0.1:{port}/hook"
secret_file = "hook.secret"

[[alerts.channel]]
name = "slack"
kind = "slack"
url_file = "slack.url"

[[alerts.channel]]
name = "ntfy"
kind = "ntfy"
url = "https://127.0.0.1:{port}/ntfy"
pages_url = "https://walker.example"
"#
    )
}

/// The daemon walking `targets` with the receiver's three channels and `settings` in `[alerts]`.
fn start_alerting(ca: &SandboxCa, targets: &str, recv: &Receiver, settings: &str) -> Daemon {
    let text = format!(
        "{}{}",
        config(listen(), 5, targets),
        alerts_section(recv.port, settings)
    );
    start_daemon(ca, &text, recv.port)
}

/// A target walked every second in A2A mode, wire 1.0.
fn a2a_target(name: &str, agent: &SandboxAgent) -> String {
    target(
        name,
        &agent.origin(),
        "mode = \"a2a\"\nwire = \"1.0\"\n",
        EVERY_SECOND,
    )
}

fn start_daemon(ca: &SandboxCa, text: &str, port: u16) -> Daemon {
    // The secrets are files beside the config, written before the daemon starts.
    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    fs::write(dir.path().join("walker.toml"), text).unwrap();
    fs::write(dir.path().join("hook.secret"), format!("{SECRET}\n")).unwrap();
    fs::write(
        dir.path().join("slack.url"),
        format!("https://127.0.0.1:{port}/slack\n"),
    )
    .unwrap();
    Daemon::start_in(dir, listen_of(text))
}

fn listen_of(text: &str) -> SocketAddr {
    let l = text
        .lines()
        .find_map(|l| l.strip_prefix("listen = \""))
        .unwrap();
    l.trim_end_matches('"').parse().unwrap()
}

/// (alert id, channel, state, kind) of every outbox row.
fn outbox(d: &Daemon) -> Vec<(String, String, String, String)> {
    let Some(store) = d.store() else {
        return Vec::new();
    };
    let mut stmt = store
        .connection()
        .prepare("SELECT alert_id, channel, state, kind FROM alert_outbox ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap_or_default()
}

#[test]
fn failing_and_unreachable_targets_alert_every_channel_verified_by_the_official_library() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let recv = Receiver::start(&ca, "ok");
    let bad = agent(&rt, &ca, "metadata-missing");
    let good = agent(&rt, &ca, "honest-mcp");
    let closed = format!("https://127.0.0.1:{}", free_port());
    let targets = format!(
        "{}{}{}",
        a2a_target("bad", &bad),
        target("good", &good.origin(), "", EVERY_SECOND),
        target("gone", &closed, "", EVERY_SECOND),
    );
    let mut d = start_alerting(
        &ca,
        &targets,
        &recv,
        "open_after = 2\nunreachable_after = 2\nmin_interval_secs = 3600",
    );
    d.wait_for(
        "both incidents delivered on the three channels",
        Duration::from_secs(90),
        |_| {
            let e = recv.entries();
            let hooks: Vec<_> = e.iter().filter(|x| x["path"] == "/hook").collect();
            hooks.len() >= 2
                && e.iter().filter(|x| x["path"] == "/slack").count() >= 2
                && e.iter().filter(|x| x["path"] == "/ntfy").count() >= 2
        },
    );
    // A few more walks: the thresholds and the interval keep everything else quiet.
    std::thread::sleep(Duration::from_secs(3));
    let entries = recv.entries();
    for e in &entries {
        assert_eq!(e["ok"], true, "the receiver refused a delivery: {e}");
    }
    let hooks: BTreeMap<String, &serde_json::Value> = entries
        .iter()
        .filter(|x| x["path"] == "/hook")
        .map(|x| (x["id"].as_str().unwrap().to_string(), x))
        .collect();
    let kinds: Vec<(&str, &str)> = hooks
        .values()
        .map(|x| {
            (
                x["payload"]["data"]["target"].as_str().unwrap(),
                x["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(hooks.len(), 2, "one alert per incident: {kinds:?}");
    assert!(kinds.contains(&("bad", "incident.opened")), "{kinds:?}");
    assert!(kinds.contains(&("gone", "unreachable.opened")), "{kinds:?}");
    assert!(
        !kinds.iter().any(|(t, _)| *t == "good"),
        "a passing first walk opens nothing"
    );
    // The conduct alert says what failed and links the record.
    let opened = hooks
        .values()
        .find(|x| x["type"] == "incident.opened")
        .unwrap();
    let data = &opened["payload"]["data"];
    assert_eq!(data["verdict"]["outcome"], "FAIL");
    assert_eq!(opened["payload"]["schema_version"], 1);
    let sha = data["record"]["sha256"].as_str().unwrap();
    assert_eq!(data["record"]["page"], format!("/records/{sha}"));
    // ntfy: the opened incident at the channel's priority, with a link to the record page.
    let ntfy: Vec<_> = entries.iter().filter(|x| x["path"] == "/ntfy").collect();
    assert!(
        ntfy.iter()
            .all(|x| x["priority"] == "4" && x["tags"] == "rotating_light")
    );
    assert!(ntfy.iter().any(|x| {
        x["body"]
            .as_str()
            .unwrap()
            .contains("https://walker.example/records/")
    }));
    // Every channel names the target, its origin and the endpoint measured (issue 35).
    let bad_origin = bad.origin();
    let bad_origin = bad_origin.trim_end_matches('/');
    assert!(
        data["endpoint"].as_str().unwrap().starts_with(bad_origin),
        "{data}"
    );
    assert_eq!(data["origin"], bad_origin);
    let endpoint = data["endpoint"].as_str().unwrap();
    let slack = entries
        .iter()
        .find(|x| x["path"] == "/slack" && x["text"].as_str().unwrap().starts_with("bad "))
        .expect("the slack alert of bad");
    assert!(
        slack["text"].as_str().unwrap().contains(endpoint),
        "{slack}"
    );
    let ntfy_bad = ntfy
        .iter()
        .find(|x| x["title"].as_str().unwrap().starts_with("bad "))
        .expect("the ntfy alert of bad");
    let body = ntfy_bad["body"].as_str().unwrap();
    for line in [
        "target: bad\n".to_string(),
        format!("origin: {bad_origin}\n"),
        format!("endpoint: {endpoint}\n"),
    ] {
        assert!(body.contains(&line), "{line:?} in {body}");
    }
    // Every outbox row is delivered, once per channel.
    let rows = outbox(&d);
    assert_eq!(rows.len(), 6, "{rows:?}");
    assert!(rows.iter().all(|r| r.2 == "delivered"), "{rows:?}");
    // /metrics counts them; /healthz says alerting is fine.
    let m = d.get_text("/metrics");
    assert!(m.contains("conduct_walker_alerts_delivered_total 6"), "{m}");
    let h = d.get_text("/healthz");
    assert!(
        h.contains(r#""alerting":{"failing_channels":[],"status":"ok"}"#),
        "{h}"
    );
    // The secret is nowhere in the log.
    assert!(!d.log().contains(&SECRET[6..]));

    // A restart announces nothing already known.
    d.stop();
    let before = recv.entries().len();
    let mut d2 = d.restart();
    d2.wait_for(
        "more walks after the restart",
        Duration::from_secs(30),
        |d| d.record_count() > 12,
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(recv.entries().len(), before, "nothing re-announced");
    d2.stop();
}

#[test]
fn a_receiver_failing_forever_delays_no_walk_and_shows_degraded_alerting() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let recv = Receiver::start(&ca, "fail");
    let bad = agent(&rt, &ca, "metadata-missing");
    let closed = format!("https://127.0.0.1:{}", free_port());
    let targets = format!(
        "{}{}",
        a2a_target("bad", &bad),
        target("gone", &closed, "", EVERY_SECOND),
    );
    let mut d = start_alerting(
        &ca,
        &targets,
        &recv,
        "open_after = 1\nunreachable_after = 1",
    );
    d.wait_for("alerting degraded", Duration::from_secs(60), |d| {
        d.get_text("/healthz").contains(r#""status":"degraded""#)
    });
    let h: serde_json::Value = serde_json::from_str(&d.get_text("/healthz")).unwrap();
    // The daemon itself is fine: only the alerting part is degraded.
    assert_eq!(h["status"], "ok", "{h}");
    assert_eq!(h["alerting"]["status"], "degraded", "{h}");
    let failing = h["alerting"]["failing_channels"].as_array().unwrap();
    assert!(!failing.is_empty(), "{h}");
    assert_eq!(h["store_writable"], true, "{h}");
    // Walks go on at their pace while every delivery fails.
    let n0 = d.record_count();
    std::thread::sleep(Duration::from_secs(4));
    assert!(d.record_count() >= n0 + 4, "walks kept going");
    // The rows back off: each was tried a few times at most, none delivered.
    let rows = outbox(&d);
    assert!(rows.iter().all(|r| r.2 == "queued"), "{rows:?}");
    let m = d.get_text("/metrics");
    assert!(m.contains("conduct_walker_alerts_delivered_total 0"), "{m}");
    d.stop();
}

#[test]
fn kill_9_while_alerts_are_planned_and_delivered_loses_none() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let recv = Receiver::start(&ca, "ok");
    let bad = agent(&rt, &ca, "metadata-missing");
    // Many failing targets, one incident each: alerts are planned and delivered throughout.
    let targets: String = (0..16)
        .map(|i| a2a_target(&format!("bad{i:02}"), &bad))
        .collect();
    let addr = listen();
    let text = format!(
        "{}{}",
        config(addr, 5, &targets),
        // Only the webhook channel: the receiver counts it by webhook-id.
        format_args!(
            "\n[alerts]\nallow_hosts = [\"127.0.0.1:{p}\"]\nopen_after = 2\n\n[[alerts.channel]]\nname = \"hook\"\nkind = \"webhook\"\nurl = \"https://127.0.0.1:{p}/hook\"\nsecret_file = \"hook.secret\"\n",
            p = recv.port
        )
    );
    let mut d = start_daemon(&ca, &text, recv.port);
    let mut kills = 0;
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..5 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_millis(300 + seed % 1500));
        d.signal("KILL");
        d.wait_exit(Duration::from_secs(10));
        kills += 1;
        d = d.restart();
    }
    d.wait_for(
        "every target's incident delivered",
        Duration::from_secs(120),
        |d| {
            let rows = outbox(d);
            rows.len() == 16 && rows.iter().all(|r| r.2 == "delivered")
        },
    );
    let rows = outbox(&d);
    let planned: std::collections::BTreeSet<String> = rows.iter().map(|r| r.0.clone()).collect();
    assert_eq!(planned.len(), 16, "one incident per target: {rows:?}");
    let entries = recv.entries();
    assert!(entries.iter().all(|e| e["ok"] == true), "{entries:?}");
    let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
    for e in &entries {
        *by_id
            .entry(e["id"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    let received: std::collections::BTreeSet<String> = by_id.keys().cloned().collect();
    assert_eq!(received, planned, "0 lost, nothing unplanned");
    // A resend happens only when a kill cut a send before its 2xx was stored; receivers
    // dedupe those by webhook-id. At most one per kill per delivery slot.
    let resent: usize = by_id.values().map(|n| n - 1).sum();
    eprintln!("kills {kills}, alerts {}, resent {resent}", planned.len());
    assert!(resent <= kills * 4, "resent {resent} after {kills} kills");
    // Once delivered, never again: a further restart sends nothing.
    let before = recv.entries().len();
    d.signal("KILL");
    d.wait_exit(Duration::from_secs(10));
    let mut d = d.restart();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        recv.entries().len(),
        before,
        "a delivered alert is never resent"
    );
    d.stop();
}

/// Issue 35, docs/operator.md "Alerts": the sandbox's agent whose conduct changes on a schedule
/// opens an incident and resolves it, alerted to a receiver whose certificate comes from a CA of
/// its own, trusted through `[network] extra_ca` as the operator's guide says.
#[test]
fn the_changing_sandbox_agent_opens_and_resolves_an_incident_at_a_receiver_on_its_own_ca() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let receiver_ca = SandboxCa::generate();
    let recv = Receiver::start(&receiver_ca, "ok");
    let sc = |name| scenario(name).unwrap().behaviour;
    let agent = rt
        .block_on(SandboxAgent::start_alternating(
            &ca,
            sc("honest-a2a"),
            sc("metadata-missing"),
            Duration::from_secs(4),
        ))
        .unwrap();
    let addr = listen();
    let text = format!(
        "{}{}",
        config(addr, 5, &a2a_target("changes-conduct", &agent)),
        alerts_section(
            recv.port,
            "open_after = 2\nresolve_after = 2\nmin_interval_secs = 0"
        )
    )
    .replace(
        r#"extra_ca = ["ca.pem"]"#,
        r#"extra_ca = ["ca.pem", "receiver-ca.pem"]"#,
    );
    let dir = tempfile::tempdir().unwrap();
    receiver_ca
        .write_pem(&dir.path().join("receiver-ca.pem"))
        .unwrap();
    // Without the receiver's CA the same config cannot deliver: the guide's step matters.
    let untrusted = text.replace(
        r#"extra_ca = ["ca.pem", "receiver-ca.pem"]"#,
        r#"extra_ca = ["ca.pem"]"#,
    );
    fs::write(dir.path().join("untrusted.toml"), &untrusted).unwrap();
    fs::write(dir.path().join("hook.secret"), format!("{SECRET}\n")).unwrap();
    fs::write(
        dir.path().join("slack.url"),
        format!("https://127.0.0.1:{}/slack\n", recv.port),
    )
    .unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let test = Command::new(daemon_support::BIN)
        .args(["alerts", "test", "--channel", "hook", "--config"])
        .arg(dir.path().join("untrusted.toml"))
        .output()
        .unwrap();
    assert_eq!(test.status.code(), Some(1), "{test:?}");
    fs::write(dir.path().join("walker.toml"), &text).unwrap();
    let mut d = Daemon::start_in(dir, addr);
    let hooks = || -> Vec<serde_json::Value> {
        recv.entries()
            .into_iter()
            .filter(|e| e["path"] == "/hook")
            .collect()
    };
    d.wait_for(
        "the incident opened and resolved",
        Duration::from_secs(60),
        |_| hooks().iter().any(|e| e["type"] == "incident.resolved"),
    );
    let sent = hooks();
    assert!(sent.iter().all(|e| e["ok"] == true), "{sent:?}");
    let opened = sent
        .iter()
        .find(|e| e["type"] == "incident.opened")
        .unwrap();
    let resolved = sent
        .iter()
        .find(|e| e["type"] == "incident.resolved")
        .unwrap();
    for e in [opened, resolved] {
        let data = &e["payload"]["data"];
        assert_eq!(data["target"], "changes-conduct");
        assert!(
            data["endpoint"]
                .as_str()
                .unwrap()
                .starts_with(agent.origin().trim_end_matches('/')),
            "{data}"
        );
    }
    assert_eq!(
        opened["payload"]["data"]["incident"]["number"],
        resolved["payload"]["data"]["incident"]["number"]
    );
    d.stop();
}

/// Issue 35: alert ids belong to the witness. Two daemons with their own stores watch one
/// failing agent under the same target name and alert one receiver: their "incident #1 opened"
/// alerts carry distinct ids, both verify with the official library, and both name the origin
/// and the endpoint measured. A send cut by `kill -9` before its answer is resent after the
/// restart under the same id (the receiver's dedupe key), and the outbox keeps one row for it.
#[test]
fn two_witnesses_send_distinct_ids_and_a_resend_after_a_kill_keeps_its_id() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    // The first delivery is taken and never answered: the sender is killed mid-request.
    let recv = Receiver::start(&ca, "hang_first");
    let bad = agent(&rt, &ca, "metadata-missing");
    let text = |addr| {
        format!(
            "{}{}",
            config(addr, 5, &a2a_target("flip1", &bad)),
            format_args!(
                "\n[alerts]\nallow_hosts = [\"127.0.0.1:{p}\"]\n\n[[alerts.channel]]\nname = \"hook\"\nkind = \"webhook\"\nurl = \"https://127.0.0.1:{p}/hook\"\nsecret_file = \"hook.secret\"\n",
                p = recv.port
            )
        )
    };
    let hooks = || -> Vec<serde_json::Value> {
        recv.entries()
            .into_iter()
            .filter(|e| e["path"] == "/hook")
            .collect()
    };
    let wait = |what: &str, ok: &dyn Fn() -> bool| {
        let until = std::time::Instant::now() + Duration::from_secs(60);
        while !ok() {
            assert!(std::time::Instant::now() < until, "timed out: {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let mut a = start_daemon(&ca, &text(listen()), recv.port);
    wait("the first send reaches the receiver", &|| {
        !hooks().is_empty()
    });
    a.signal("KILL");
    a.wait_exit(Duration::from_secs(10));
    let a = a.restart();
    wait("the resend after the restart", &|| hooks().len() >= 2);
    let sent = hooks();
    assert_eq!(sent[0]["id"], sent[1]["id"], "a resend keeps its id");
    assert_eq!(sent[0]["type"], "incident.opened");
    let rows = outbox(&a);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(sent[0]["id"], rows[0].0.as_str());

    // A second witness, its own store, the same agent under the same name.
    let b = start_daemon(&ca, &text(listen()), recv.port);
    wait("the second witness's alert", &|| {
        hooks().iter().any(|e| e["id"] != sent[0]["id"])
    });
    let all = hooks();
    let ids: std::collections::BTreeSet<&str> =
        all.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2, "one id per witness: {all:?}");
    assert!(all.iter().all(|e| e["ok"] == true), "{all:?}");
    let endpoint: String = a
        .store()
        .unwrap()
        .connection()
        .query_row("SELECT endpoint FROM records LIMIT 1", [], |r| r.get(0))
        .unwrap();
    let witnesses: std::collections::BTreeSet<&str> = all
        .iter()
        .map(|e| e["payload"]["data"]["witness"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(witnesses.len(), 2, "{all:?}");
    for e in &all {
        let d = &e["payload"]["data"];
        assert_eq!(e["type"], "incident.opened");
        assert_eq!(d["target"], "flip1");
        assert_eq!(d["incident"]["number"], 1);
        assert_eq!(d["endpoint"], endpoint.as_str(), "{e}");
        assert_eq!(d["origin"], bad.origin().trim_end_matches('/'), "{e}");
        assert_eq!(d["witness"]["name"], "daemon test");
    }
    let (mut a, mut b) = (a, b);
    a.stop();
    b.stop();
}

#[test]
fn an_agent_that_flips_opens_then_resolves_its_incident_and_a_decline_is_alerted() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let recv = Receiver::start(&ca, "ok");
    let (agent, flag) = rt
        .block_on(SandboxAgent::start_flipping(
            &ca,
            scenario("honest-a2a").unwrap().behaviour,
            scenario("metadata-missing").unwrap().behaviour,
        ))
        .unwrap();
    // An origin whose consent file declines listing: nothing is walked, the decline is alerted.
    let decliner = rt
        .block_on(conduct_walker::sandbox::HttpsServer::start(
            &ca,
            conduct_walker::sandbox::handler(|req| {
                if req.path == "/.well-known/mcp-conduct.json" {
                    conduct_walker::sandbox::Resp::bytes(
                        200,
                        "application/json",
                        "{\"listing\": \"decline\"}",
                    )
                } else {
                    conduct_walker::sandbox::Resp::empty(404)
                }
            }),
        ))
        .unwrap();
    let targets = format!(
        "{}{}",
        a2a_target("flip", &agent),
        target("declines", &decliner.base(), "", EVERY_SECOND),
    );
    let mut d = start_alerting(
        &ca,
        &targets,
        &recv,
        "open_after = 2\nresolve_after = 2\nmin_interval_secs = 0",
    );
    let hooks = |kind: &str, target: &str| {
        recv.entries()
            .iter()
            .filter(|x| {
                x["path"] == "/hook"
                    && x["type"] == kind
                    && x["payload"]["data"]["target"] == target
            })
            .count()
    };
    d.wait_for("a few passing walks", Duration::from_secs(30), |d| {
        d.walks()
            .iter()
            .filter(|w| w.target == "flip" && w.state == "done")
            .count()
            >= 3
    });
    assert_eq!(
        hooks("incident.opened", "flip"),
        0,
        "passing walks open nothing"
    );
    flag.store(true, std::sync::atomic::Ordering::SeqCst);
    d.wait_for("the incident opened", Duration::from_secs(30), |_| {
        hooks("incident.opened", "flip") == 1
    });
    flag.store(false, std::sync::atomic::Ordering::SeqCst);
    d.wait_for("the incident resolved", Duration::from_secs(30), |_| {
        hooks("incident.resolved", "flip") == 1
    });
    d.wait_for("the decline alerted", Duration::from_secs(30), |_| {
        hooks("consent.declined", "declines") == 1
    });
    std::thread::sleep(Duration::from_secs(2));
    let e = recv.entries();
    assert!(e.iter().all(|x| x["ok"] == true), "{e:?}");
    // The opened alert names the assertions that flipped, with their claims.
    let opened = e.iter().find(|x| x["type"] == "incident.opened").unwrap();
    let flipped = opened["payload"]["data"]["assertions_flipped"]
        .as_array()
        .unwrap();
    assert!(!flipped.is_empty(), "{opened}");
    assert!(
        flipped
            .iter()
            .all(|f| f["claim"].as_str().is_some_and(|c| !c.is_empty()))
    );
    // Each announced once: one open, one resolve, one decline (per channel).
    assert_eq!(hooks("incident.opened", "flip"), 1);
    assert_eq!(hooks("incident.resolved", "flip"), 1);
    assert_eq!(hooks("consent.declined", "declines"), 1);
    // `alerts list` shows them delivered and no open incident.
    let out = Command::new(daemon_support::BIN)
        .args(["alerts", "list", "--db"])
        .arg(d.path("walker.db"))
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(t.contains("no open incident"), "{t}");
    assert!(
        t.contains("incident.resolved flip -> hook delivered"),
        "{t}"
    );
    // `--json` says the same, and a delivered alert has no next attempt.
    let out = Command::new(daemon_support::BIN)
        .args(["alerts", "list", "--json", "--db"])
        .arg(d.path("walker.db"))
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["open_incidents"], serde_json::json!([]), "{doc}");
    let delivered: Vec<_> = doc["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["state"] == "delivered")
        .collect();
    assert!(delivered.len() >= 3, "{doc}");
    assert!(
        delivered.iter().all(|a| a["next_attempt_at"].is_null()),
        "{doc}"
    );
    // The overview lists the deliveries; the record page of the walk that opened the incident
    // lists its alerts.
    let page = d.get_text("/");
    assert!(
        page.contains(r#"id="alerts""#) && page.contains("No open incident."),
        "{page}"
    );
    assert!(page.contains("incident.resolved") && page.contains("consent.declined"));
    let sha = opened["payload"]["data"]["record"]["sha256"]
        .as_str()
        .unwrap();
    let page = html_get(d.listen, &format!("/records/{sha}"));
    assert!(
        page.contains(r#"<section class="box" id="alerts">"#),
        "{page}"
    );
    assert!(
        page.contains("incident.opened") && page.contains("delivered"),
        "{page}"
    );
    d.stop();
}

/// GET a status page as a browser asks for it.
fn html_get(addr: SocketAddr, path: &str) -> String {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/html\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    String::from_utf8_lossy(&buf).into_owned()
}

#[test]
fn an_intake_refusal_is_alerted_once_per_record() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let recv = Receiver::start(&ca, "ok");
    let agent = agent(&rt, &ca, "honest-mcp");
    // An intake that refuses every record (400 with its reason) and knows nothing else.
    let intake = rt
        .block_on(conduct_walker::sandbox::HttpsServer::start(
            &ca,
            conduct_walker::sandbox::handler(|req| {
                if req.method == "POST" {
                    conduct_walker::sandbox::Resp::json(
                        400,
                        &serde_json::json!({"error": "vantage is not a place", "reason_code": "bad_vantage"}),
                    )
                } else {
                    conduct_walker::sandbox::Resp::empty(404)
                }
            }),
        ))
        .unwrap();
    let targets = target("filed", &agent.origin(), "", "*/2 * * * * *")
        .replace("submit = false", "submit = true");
    let addr = listen();
    let text = format!(
        "{}{}",
        config(addr, 5, &targets).replace(
            "[network]",
            &format!(
                "intake = \"{}/witness\"\nfile_extra_walks = true\n\n[network]",
                intake.base()
            )
        ),
        alerts_section(recv.port, "")
    );
    let mut d = start_daemon(&ca, &text, recv.port);
    d.wait_for("two refusals alerted", Duration::from_secs(60), |_| {
        recv.entries()
            .iter()
            .filter(|x| x["path"] == "/hook" && x["type"] == "filing.refused")
            .count()
            >= 2
    });
    let e = recv.entries();
    let refused: Vec<_> = e
        .iter()
        .filter(|x| x["path"] == "/hook" && x["type"] == "filing.refused")
        .collect();
    let shas: std::collections::BTreeSet<&str> = refused
        .iter()
        .map(|x| {
            x["payload"]["data"]["filing"]["record_sha256"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(shas.len(), refused.len(), "one alert per refused record");
    let reason = refused[0]["payload"]["data"]["filing"]["reason"]
        .as_str()
        .unwrap();
    assert!(reason.contains("bad_vantage"), "{reason}");
    d.stop();
}

/// One assertion changes while the verdict holds (FAIL both ways): the daemon sends one
/// `assertion.flipped` alert naming it, with from, to and its claim, and no incident alert.
#[test]
fn an_assertion_that_flips_while_the_verdict_holds_is_alerted_once_on_its_own() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let recv = Receiver::start(&ca, "ok");
    // Both FAIL on compensation_well_formed; the second also stops echoing the extension
    // (it echoes only the old X- spelling, which a 1.0 walk does not take).
    let failing = scenario("compensation-disagrees").unwrap().behaviour;
    let no_echo = conduct_walker::sandbox::Behaviour {
        echo: conduct_walker::sandbox::agent::Echo::OldSpellingOnly,
        ..failing.clone()
    };
    let (agent, flag) = rt
        .block_on(SandboxAgent::start_flipping(&ca, failing, no_echo))
        .unwrap();
    let targets = a2a_target("echo", &agent);
    let mut d = start_alerting(
        &ca,
        &targets,
        &recv,
        "open_after = 2\nmin_interval_secs = 0",
    );
    let hooks = |kind: &str| {
        recv.entries()
            .into_iter()
            .filter(|x| x["path"] == "/hook" && x["type"] == kind)
            .collect::<Vec<_>>()
    };
    d.wait_for("the FAIL incident opened", Duration::from_secs(30), |_| {
        hooks("incident.opened").len() == 1
    });
    let done = |d: &Daemon| {
        d.walks()
            .iter()
            .filter(|w| w.target == "echo" && w.state == "done")
            .count()
    };
    // A walk more with the same results: nothing flips.
    let before = done(&d);
    d.wait_for(
        "a walk with the same results",
        Duration::from_secs(30),
        |d| done(d) >= before + 2,
    );
    assert!(hooks("assertion.flipped").is_empty());
    flag.store(true, std::sync::atomic::Ordering::SeqCst);
    d.wait_for("the flip alerted", Duration::from_secs(30), |_| {
        !hooks("assertion.flipped").is_empty()
    });
    // More walks of the new behaviour: the flip is not announced again.
    let before = done(&d);
    d.wait_for("more walks after the flip", Duration::from_secs(30), |d| {
        done(d) >= before + 3
    });
    std::thread::sleep(Duration::from_secs(1));
    let e = recv.entries();
    assert!(e.iter().all(|x| x["ok"] == true), "{e:?}");
    let flipped = hooks("assertion.flipped");
    assert_eq!(flipped.len(), 1, "{flipped:?}");
    let data = &flipped[0]["payload"]["data"];
    assert_eq!(data["target"], "echo");
    assert_eq!(data["verdict"]["outcome"], "FAIL", "{data}");
    let flips = data["assertions_flipped"].as_array().unwrap();
    assert_eq!(flips.len(), 1, "only the echo changed: {flips:?}");
    let f = &flips[0];
    assert_eq!(f["name"], "extension_echoed");
    assert_eq!(
        (f["from"].clone(), f["to"].clone()),
        (true.into(), false.into())
    );
    assert!(
        f["claim"]
            .as_str()
            .is_some_and(|c| c.starts_with("extension_echoed: response header")),
        "{f}"
    );
    // No incident alert for it: the incident opened once and stays open.
    assert_eq!(hooks("incident.opened").len(), 1);
    assert!(hooks("incident.resolved").is_empty());
    // The other channels got the same one alert.
    for path in ["/slack", "/ntfy"] {
        let n = e.iter().filter(|x| x["path"] == path).count();
        assert_eq!(n, 2, "{path}: the opened incident and the flip");
    }
    assert!(
        e.iter().any(|x| x["path"] == "/ntfy"
            && x["title"]
                .as_str()
                .is_some_and(|t| t.contains("assertions changed"))),
        "{e:?}"
    );
    d.stop();
}

/// An SMTP channel with a wrong password: aiosmtpd answers 535 at once, the row is refused (not
/// retried) with that answer, nothing reaches the mailbox from it, and the deliverer goes on:
/// the same alerts go through the channel with the right password, and so does a later one.
#[test]
fn a_wrong_smtp_password_is_refused_with_the_servers_answer_and_blocks_nothing() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let secrets = tempfile::tempdir().unwrap();
    let server = alerts_support::smtp(&ca, secrets.path(), "starttls");
    let wrong = secrets.path().join("wrong.password");
    let right = secrets.path().join("right.password");
    fs::write(&wrong, "not the password\n").unwrap();
    fs::write(&right, "s3cret pass\n").unwrap();
    let (agent, flag) = rt
        .block_on(SandboxAgent::start_flipping(
            &ca,
            scenario("metadata-missing").unwrap().behaviour,
            scenario("honest-a2a").unwrap().behaviour,
        ))
        .unwrap();
    let targets = a2a_target("mailed", &agent);
    let channel = |name: &str, secret: &std::path::Path| {
        format!(
            r#"
[[alerts.channel]]
name = "{name}"
kind = "email"
smtp_host = "127.0.0.1"
smtp_port = {p}
username = "walker"
secret_file = "{s}"
from = "walker@example.org"
to = ["ops@example.org"]
"#,
            p = server.port,
            s = secret.display()
        )
    };
    let addr = listen();
    let text = format!(
        "{}\n[alerts]\nopen_after = 1\nresolve_after = 1\nmin_interval_secs = 0\nallow_hosts = [\"127.0.0.1:{}\"]\n{}{}",
        config(addr, 5, &targets),
        server.port,
        channel("mail-wrong", &wrong),
        channel("mail", &right),
    );
    let mut d = start_daemon(&ca, &text, server.port);
    let rows = |d: &Daemon, kind: &str| {
        outbox(d)
            .into_iter()
            .filter(|r| r.3 == kind)
            .map(|r| (r.1, r.2))
            .collect::<BTreeMap<String, String>>()
    };
    let settled = |d: &Daemon, kind: &str| {
        let r = rows(d, kind);
        r.get("mail").is_some_and(|s| s == "delivered")
            && r.get("mail-wrong").is_some_and(|s| s == "refused")
    };
    d.wait_for(
        "the opened incident refused on one channel, delivered on the other",
        Duration::from_secs(60),
        |d| settled(d, "incident.opened"),
    );
    // A later alert goes through the same deliverer.
    flag.store(true, std::sync::atomic::Ordering::SeqCst);
    d.wait_for(
        "the resolution refused on one channel, delivered on the other",
        Duration::from_secs(60),
        |d| settled(d, "incident.resolved"),
    );
    // The refused rows carry the server's answer and were tried once.
    let store = d.store().unwrap();
    let mut stmt = store
        .connection()
        .prepare(
            "SELECT kind, attempts, last_status, last_answer, next_attempt_at FROM alert_outbox \
             WHERE channel = 'mail-wrong' ORDER BY id",
        )
        .unwrap();
    // (kind, attempts, last_status, last_answer, next_attempt_at)
    type Row = (String, i64, Option<i64>, String, Option<String>);
    let refused: Vec<Row> = stmt
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(refused.len(), 2, "{refused:?}");
    for (kind, attempts, status, answer, next) in &refused {
        assert_eq!(*attempts, 1, "{kind}: a refusal is not retried");
        assert_eq!(*status, Some(535), "{kind}: {answer}");
        assert!(
            answer.starts_with("refused: ")
                && answer.contains("5.7.8 Authentication credentials invalid"),
            "{kind}: {answer}"
        );
        assert_eq!(*next, None, "{kind}");
    }
    // The mailbox holds the two alerts of the right channel only, each authenticated.
    let msgs = server.messages();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert!(msgs.iter().all(|m| m["authenticated"] == true));
    let subjects: Vec<&str> = msgs.iter().map(|m| m["data"].as_str().unwrap()).collect();
    assert!(
        subjects[0].contains("conduct incident #1 opened"),
        "{}",
        subjects[0]
    );
    assert!(
        subjects[1].contains("conduct incident #1 resolved"),
        "{}",
        subjects[1]
    );
    // `alerts list` says so.
    let out = Command::new(daemon_support::BIN)
        .args(["alerts", "list", "--db"])
        .arg(d.path("walker.db"))
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(
        t.lines().any(|l| l.contains(
            "incident.opened mailed -> mail-wrong refused 1 attempt(s); last: refused: "
        ) && l.contains("Authentication credentials invalid")),
        "{t}"
    );
    // The password is nowhere in the log.
    assert!(!d.log().contains("s3cret pass") && !d.log().contains("not the password"));
    d.stop();
}
