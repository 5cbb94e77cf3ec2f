//! Reciprocal walks as the receiver (issue 44; witness-pool.md §6.2, §6.3), with the real
//! `conduct-walker run`: a caller asks over the face's `/a2a` to be walked back, the daemon is
//! killed while that walk hangs on the caller's card, and after the restart the walk is made and
//! filed to the intake the caller's card names (the intake emulator, which fetches our key from
//! the `key_url` before it stores anything). A caller whose consent file declines listing is
//! declined; a caller whose consent file declines listing by the time its queued walk starts is
//! not walked (cancelled); a caller that is ourselves is declined beside a witness request's
//! answer.

mod daemon_support;

use conduct_walker::intake_emulator::{Emulator, EmulatorConfig};
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::HttpsServer;
use conduct_walker::sandbox::notify::NotifyReceiver;
use conduct_walker::sandbox::{Behaviour, Resp, SandboxAgent, SandboxCa, handler};
use conduct_walker::store::reciprocal_walks::{self, ReciprocalWalk};
use daemon_support::{Daemon, free_port, metric, runtime};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

const EXT: &str = "https://gate.horizonshield.dev/ext/conduct/v1";
/// How soon a caller must be walked back in this test.
const WITHIN_SECS: i64 = 60;

/// `intake`: the caller's intake, named in `allow_hosts` as an operator's public intake needs
/// no naming: filing goes through the daemon's own transport, which refuses a private address
/// it was not told of (the reciprocal checks vetted the intake through the witness's guard,
/// which admits everything under `allow_private_network`).
fn face_config(
    listen: SocketAddr,
    face: SocketAddr,
    origin: &str,
    intake: SocketAddr,
    scheduled: &str,
) -> String {
    format!(
        r#"[witness]
name = "reciprocal test"
vantage = "loopback"
key = "witness.pem"
key_url = "{origin}/keys/witness.json"

[witness_face]
listen = "{face}"
origin = "{origin}"
reciprocal = true
reciprocal_within = "{WITHIN_SECS}s"

[network]
extra_ca = ["ca.pem"]
allow_private_network = true
allow_hosts = ["{intake}"]
request_deadline_secs = 10

[daemon]
database = "walker.db"
listen = "{listen}"
jitter_secs = 0
drain_interval_secs = 1
shutdown_grace_secs = 2

[[target]]
name = "scheduled"
origin = "{scheduled}"
schedule = "* * * * * *"
"#
    )
}

/// Scheduled fires of `target` that started after `after` (UTC text), as (scheduled_for,
/// started_at) in milliseconds.
fn fires_after(d: &Daemon, target: &str, after: &str) -> Vec<(i64, i64)> {
    let store = d.store().expect("the store");
    let mut stmt = store
        .connection()
        .prepare(
            "SELECT scheduled_for, started_at FROM daemon_walks \
             WHERE target = ?1 AND state = 'done' AND started_at > ?2 ORDER BY id",
        )
        .unwrap();
    stmt.query_map([target, after], |r| {
        Ok((
            millis(&r.get::<_, String>(0)?),
            millis(&r.get::<_, String>(1)?),
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// POST `body` to the face's `/a2a`; the JSON-RPC answer.
fn post_a2a(rt: &tokio::runtime::Runtime, face: SocketAddr, body: &Value) -> (u16, Value) {
    rt.block_on(async {
        let answer = reqwest::Client::new()
            .post(format!("http://{face}/a2a"))
            .header("content-type", "application/json")
            .body(serde_json::to_vec(body).unwrap())
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .unwrap();
        let status = answer.status().as_u16();
        let bytes = answer.bytes().await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    })
}

/// A `message/send` carrying only `caller_card` (§6.2: answered with the decision alone).
fn caller_card_message(card: &str) -> Value {
    json!({
        "jsonrpc": "2.0", "id": "r-1", "method": "message/send",
        "params": {"message": {
            "role": "user", "messageId": "r-1",
            "parts": [{"kind": "text", "text": "walk me back"}],
            "metadata": {format!("{EXT}/caller_card"): card},
        }},
    })
}

fn card_url(origin: &str) -> String {
    format!("{origin}/.well-known/agent-card.json")
}

fn rows(d: &Daemon) -> Vec<ReciprocalWalk> {
    let store = d.store().expect("the store");
    reciprocal_walks::recent(store.connection(), 50).unwrap()
}

/// The first request's row for `origin` (a later one may have joined it).
fn row_for(d: &Daemon, origin: &str) -> Option<ReciprocalWalk> {
    rows(d)
        .into_iter()
        .rev()
        .find(|r| r.origin.as_deref() == Some(origin))
}

fn millis(t: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(t)
        .unwrap()
        .timestamp_millis()
}

#[test]
fn a_caller_is_walked_back_and_filed_to_its_intake_across_a_restart() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let key =
        conduct_walker::witness::keys::generate_key_file(&dir.path().join("witness.pem")).unwrap();

    // Our origin as the operator's proxy would serve it: here only the key document, which the
    // intake fetches for every record. `localhost`, so the callers at 127.0.0.1 are not us.
    let public_b64 = conduct_walker::witness::keys::public_key_b64(&key);
    let key_doc = conduct_walker::witness_pool::publish::key_document(&public_b64, "localhost");
    let key_server = rt
        .block_on(HttpsServer::start(
            &ca,
            handler(move |_| Resp::json(200, &key_doc)),
        ))
        .unwrap();
    let origin = format!("https://localhost:{}", key_server.addr().port());

    // The caller's intake: the emulator, reaching our key server through the sandbox CA.
    let state = tempfile::tempdir().unwrap();
    let mut policy = NetPolicy::new(true);
    policy.allow_url(&origin);
    let mut key_fetch = TransportConfig::new(policy);
    key_fetch.extra_roots = vec![ca.cert_der()];
    let emulator = rt
        .block_on(Emulator::start(
            EmulatorConfig::new(
                state.path().join("intake.db"),
                Transport::new(key_fetch).unwrap(),
            ),
            &ca,
            "127.0.0.1:0".parse().unwrap(),
        ))
        .unwrap();

    // The caller: its card trickles (the walk hangs on it) until the flag flips. Its consent
    // file asks to be told of measurements (§11.5): a reciprocal walk never tells (§6.3).
    let receiver = rt.block_on(NotifyReceiver::start(&ca)).unwrap();
    let honest = Behaviour {
        witness_intake: Some(emulator.url()),
        consent: Some(json!({"notify": receiver.url()})),
        ..Behaviour::default()
    };
    let hanging = Behaviour {
        card_trickle: Some(Duration::from_secs(2)),
        ..honest.clone()
    };
    let (caller, recovered) = rt
        .block_on(SandboxAgent::start_flipping(&ca, hanging, honest))
        .unwrap();
    let caller_origin = caller.origin();
    // A caller that consents when it asks and declines listing by the time its walk is to start
    // (§6.3: the consent file is read again then).
    let (changing, now_declines) = rt
        .block_on(SandboxAgent::start_flipping(
            &ca,
            Behaviour {
                witness_intake: Some(emulator.url()),
                ..Behaviour::default()
            },
            Behaviour {
                consent: Some(json!({"listing": "decline"})),
                ..Behaviour::default()
            },
        ))
        .unwrap();
    // A second caller whose consent file declines listing.
    let declining = rt
        .block_on(SandboxAgent::start(
            &ca,
            Behaviour {
                consent: Some(json!({"listing": "decline"})),
                ..Behaviour::default()
            },
        ))
        .unwrap();

    // A configured target walked every second: a stranger's walk must never hold it up.
    let scheduled = rt
        .block_on(SandboxAgent::start(&ca, Behaviour::default()))
        .unwrap();
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let face: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    std::fs::write(
        dir.path().join("walker.toml"),
        face_config(listen, face, &origin, emulator.addr(), &scheduled.origin()),
    )
    .unwrap();
    let mut d = Daemon::start_in(dir, listen);
    d.wait_for("the witness face", Duration::from_secs(30), |_| {
        daemon_support::http_get(face, "/.well-known/agent-card.json")
            .is_some_and(|(s, _)| s == 200)
    });

    // Asked: scheduled, stored before the answer left.
    let (status, answer) = post_a2a(&rt, face, &caller_card_message(&card_url(&caller_origin)));
    assert_eq!(status, 200, "{answer}");
    let message = &answer["result"];
    assert_eq!(
        message["metadata"][format!("{EXT}/reciprocal")],
        "scheduled",
        "{answer}"
    );
    assert_eq!(message["parts"][0]["text"], "reciprocal walk: scheduled");
    assert!(
        message["messageId"]
            .as_str()
            .unwrap()
            .starts_with("reciprocal-")
    );
    let asked = row_for(&d, &caller_origin).expect("the request's row");
    assert!(
        ["queued", "running"].contains(&asked.state.as_str()),
        "{asked:?}"
    );

    // Asked again while it is pending: the same walk, nothing more queued.
    let (_, again) = post_a2a(&rt, face, &caller_card_message(&card_url(&caller_origin)));
    assert_eq!(
        again["result"]["metadata"][format!("{EXT}/reciprocal")],
        "scheduled"
    );

    // The walk starts and hangs on the card; the daemon is killed under it.
    d.wait_for("the walk to start", Duration::from_secs(30), |d| {
        row_for(d, &caller_origin).is_some_and(|r| r.state == "running")
    });
    // While it hangs, the scheduled walks keep their seconds (no jitter is configured).
    let hanging_since = rows(&d)
        .into_iter()
        .rev()
        .find(|r| r.state == "running")
        .and_then(|r| r.started_at)
        .unwrap();
    d.wait_for(
        "two scheduled walks beside it",
        Duration::from_secs(8),
        |d| fires_after(d, "scheduled", &hanging_since).len() >= 2,
    );
    for (due, started) in fires_after(&d, "scheduled", &hanging_since) {
        assert!(
            started - due < 1000,
            "a fire started {} ms late",
            started - due
        );
    }
    assert_eq!(
        row_for(&d, &caller_origin).unwrap().state,
        "running",
        "the reciprocal walk was still hanging meanwhile"
    );
    // The changing caller asks meanwhile: scheduled behind the hanging walk (one at a time),
    // then its consent file declines listing before its turn comes.
    let (_, queued) = post_a2a(
        &rt,
        face,
        &caller_card_message(&card_url(&changing.origin())),
    );
    assert_eq!(
        queued["result"]["metadata"][format!("{EXT}/reciprocal")],
        "scheduled",
        "{queued}"
    );
    assert_eq!(row_for(&d, &changing.origin()).unwrap().state, "queued");
    now_declines.store(true, Ordering::SeqCst);
    d.signal("KILL");
    d.wait_exit(Duration::from_secs(10));
    recovered.store(true, Ordering::SeqCst);
    let mut d = d.restart();

    d.wait_for(
        "the walk filed",
        Duration::from_secs(WITHIN_SECS as u64),
        |d| row_for(d, &caller_origin).is_some_and(|r| r.state == "walked"),
    );
    let walked = rows(&d);
    let filed: Vec<_> = walked.iter().filter(|r| r.state == "walked").collect();
    assert_eq!(
        filed.len(),
        1,
        "one walk, however often it was asked: {walked:?}"
    );
    let filed = filed[0];
    assert!(
        walked.iter().any(|r| r.state == "joined"),
        "the second request joined the first: {walked:?}"
    );
    assert_eq!(filed.intake_url.as_deref(), Some(emulator.url().as_str()));
    let late = millis(filed.finished_at.as_deref().unwrap()) - millis(&filed.requested_at);
    assert!(
        late < WITHIN_SECS * 1000,
        "walked back {late} ms after the request"
    );
    assert!(
        filed
            .detail
            .as_deref()
            .is_some_and(|t| t.contains("interrupted"))
            || filed.started_at.is_some(),
        "{filed:?}"
    );

    // Filed at the caller's intake: the emulator stored the record after checking our key.
    let sha = filed.record_sha256.clone().unwrap();
    d.wait_for("the intake to store it", Duration::from_secs(30), |_| {
        emulator.stored(&sha).is_some()
    });
    let at_intake = emulator.stored(&sha).unwrap();
    assert_eq!(at_intake["key_url"], format!("{origin}/keys/witness.json"));
    assert_eq!(
        (&at_intake["signed"], &at_intake["signed_domain"]),
        (&json!(true), &json!("localhost")),
        "signed under our domain key: {at_intake}"
    );
    // A reciprocal walk never asks to be walked back itself (§6.3: no ping-pong): its n3
    // request is the plain A2A 1.0 body, byte for byte.
    let record: Value =
        serde_json::from_str(at_intake["record_canonical"].as_str().unwrap()).unwrap();
    let n3 = record["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["n"] == 3)
        .expect("an n3 node");
    let plain = hex::encode(Sha256::digest(
        conduct_walker::walk::spec::BODY_A2A_1_0.as_bytes(),
    ));
    assert_eq!(n3["request"]["body_sha256"], plain.as_str(), "{n3}");

    // The changing caller's walk, taken after the restart: its consent read again, declined,
    // so it is cancelled and nothing of it is walked or stored.
    d.wait_for("the changed caller's turn", Duration::from_secs(30), |d| {
        row_for(d, &changing.origin()).is_some_and(|r| r.state != "queued" && r.state != "running")
    });
    let cancelled = row_for(&d, &changing.origin()).unwrap();
    assert_eq!(
        (cancelled.state.as_str(), cancelled.reason.as_deref()),
        ("cancelled", Some("listing_decline")),
        "{cancelled:?}"
    );
    assert!(
        cancelled
            .detail
            .as_deref()
            .is_some_and(|t| t.contains("declined listing when the walk was to start")),
        "{cancelled:?}"
    );
    assert_eq!(cancelled.record_sha256, None);

    // Never a notification after a reciprocal walk, though the caller's consent asks for them.
    assert!(receiver.received().is_empty(), "{:?}", receiver.received());
    let store = d.store().unwrap();
    assert!(
        conduct_walker::store::notifications::recent(store.connection(), 10)
            .unwrap()
            .is_empty()
    );

    // A caller whose consent file declines listing is declined, and nothing is walked.
    let (_, declined) = post_a2a(
        &rt,
        face,
        &caller_card_message(&card_url(&declining.origin())),
    );
    let message = &declined["result"];
    assert_eq!(message["metadata"][format!("{EXT}/reciprocal")], "declined");
    assert_eq!(
        message["parts"][0]["text"],
        "reciprocal walk: declined: listing_decline"
    );
    let row = row_for(&d, &declining.origin()).unwrap();
    assert_eq!(
        (row.state.as_str(), row.reason.as_deref()),
        ("declined", Some("listing_decline"))
    );
    assert_eq!(
        declining.card_fetches(),
        0,
        "a declined caller is never walked"
    );

    // Ourselves: declined before anything is fetched.
    let (_, ours) = post_a2a(&rt, face, &caller_card_message(&card_url(&origin)));
    assert_eq!(
        ours["result"]["parts"][0]["text"],
        "reciprocal walk: declined: own_host"
    );

    let metrics = d.get_text("/metrics");
    let requests = metric(&metrics, "conduct_walker_reciprocal_requests_total");
    let count = |labels: &str| {
        requests
            .iter()
            .find(|(l, _)| l == labels)
            .map_or(0.0, |(_, v)| *v)
    };
    // Counted since this start: the two declines.
    assert_eq!(
        count("answer=\"declined\",reason=\"listing_decline\""),
        1.0,
        "{metrics}"
    );
    assert_eq!(count("answer=\"declined\",reason=\"own_host\""), 1.0);
    let ends = metric(&metrics, "conduct_walker_reciprocal_walks_total");
    assert!(
        ends.iter()
            .any(|(l, v)| l == "state=\"walked\"" && *v == 1.0),
        "{ends:?}"
    );
    assert!(
        ends.iter()
            .any(|(l, v)| l == "state=\"cancelled\"" && *v == 1.0),
        "{ends:?}"
    );
    d.stop();
}
