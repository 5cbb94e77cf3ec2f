//! Rotating the witness key under the running daemon (issue 45): records queue while the
//! intake is down, `key rotate` replaces the key file, SIGHUP reloads the daemon, and when the
//! intake comes back (the emulator fetching `key_url` on every submission) the daemon files
//! every queued record signed by the new key, none refused `key_url_mismatch`.

mod daemon_support;

use conduct_walker::intake_emulator::{Emulator, EmulatorConfig};
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::{HttpsServer, Resp, SandboxCa, handler};
use conduct_walker::witness::keys::{generate_key_file, load_signing_key, public_key_b64};
use conduct_walker::witness_pool::publish::key_document;
use daemon_support::{Daemon, config, free_port, runtime, submitting_agents};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[test]
fn a_sighup_after_key_rotate_files_the_queued_records_with_the_new_key() {
    let rt = runtime();
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let old = generate_key_file(&dir.path().join("witness.pem")).unwrap();

    // key_url, as the operator's web server serves it: whatever key is current.
    let served = Arc::new(Mutex::new(key_document(&public_key_b64(&old), "localhost")));
    let serving = served.clone();
    let key_server = rt
        .block_on(HttpsServer::start(
            &ca,
            handler(move |_| Resp::json(200, &serving.lock().unwrap())),
        ))
        .unwrap();
    let origin = format!("https://localhost:{}", key_server.addr().port());

    let intake_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let (_agents, targets) = submitting_agents(&rt, &ca, 2);
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let text = config(listen, 5, &targets).replace(
        "vantage = \"loopback\"\n",
        &format!(
            "vantage = \"loopback\"\nintake = \"https://{intake_addr}/witness\"\n\
             key = \"witness.pem\"\nkey_url = \"{origin}/keys/witness.json\"\n"
        ),
    );
    std::fs::write(dir.path().join("walker.toml"), text).unwrap();
    let mut d = Daemon::start_in(dir, listen);
    let queued = |d: &Daemon| -> i64 {
        d.store()
            .unwrap()
            .connection()
            .query_row(
                "SELECT count(*) FROM submissions WHERE state = 'queued'",
                [],
                |r| r.get(0),
            )
            .unwrap()
    };
    d.wait_for(
        "a record of each agent queued",
        Duration::from_secs(60),
        |d| queued(d) == 2,
    );

    let rotate = std::process::Command::new(env!("CARGO_BIN_EXE_conduct-walker"))
        .args(["key", "rotate", "--config"])
        .arg(d.path("walker.toml"))
        .output()
        .unwrap();
    assert!(
        rotate.status.success(),
        "{}",
        String::from_utf8_lossy(&rotate.stderr)
    );
    let new = load_signing_key(&d.path("witness.pem")).unwrap();
    *served.lock().unwrap() = key_document(&public_key_b64(&new), "localhost");
    d.signal("HUP");
    d.wait_for("the reload", Duration::from_secs(30), |d| {
        d.log().contains("configuration reloaded")
    });

    // The intake comes back; the queued rows are due at once.
    let mut policy = NetPolicy::new(true);
    policy.allow_url(&origin);
    let mut key_fetch = TransportConfig::new(policy);
    key_fetch.extra_roots = vec![ca.cert_der()];
    let state = tempfile::tempdir().unwrap();
    let emulator = rt
        .block_on(Emulator::start(
            EmulatorConfig::new(
                state.path().join("intake.db"),
                Transport::new(key_fetch).unwrap(),
            ),
            &ca,
            intake_addr,
        ))
        .unwrap();
    rusqlite::Connection::open(d.path("walker.db"))
        .unwrap()
        .execute(
            "UPDATE submissions SET next_attempt_at = NULL WHERE state = 'queued'",
            [],
        )
        .unwrap();
    d.wait_for("both queued records filed", Duration::from_secs(60), |_| {
        emulator.stored_count() >= 2
    });
    d.stop();

    let db = rusqlite::Connection::open(d.path("walker.db")).unwrap();
    let mut filed = db
        .prepare(
            "SELECT r.sha256 FROM submissions s JOIN records r ON r.id = s.record_id \
             WHERE s.state = 'filed'",
        )
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    filed.sort();
    assert_eq!(filed.len(), 2, "{}", d.log());
    for sha in &filed {
        // Walked (and signed) before the rotation, filed after it with the new key.
        let walk_key: String = db
            .query_row(
                "SELECT public_key_b64 FROM records WHERE sha256 = ?1",
                [sha],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(walk_key, public_key_b64(&old));
        let stored = emulator.stored(sha).unwrap();
        assert_eq!(stored["public_key_ed25519_b64"], public_key_b64(&new));
    }
    let (refused, mismatch): (i64, i64) = db
        .query_row(
            "SELECT sum(answer = 'refused'), sum(body LIKE '%key_url_mismatch%') \
             FROM submission_attempts",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((refused, mismatch), (0, 0), "{}", d.log());
}
