//! Rotating the witness key without losing a record (issue 45, witness-pool.md §8.5), with the
//! real binary: records queue while the intake is down, the key file is replaced, the intake
//! comes back (the emulator fetching `key_url` on every submission, as the real intake does),
//! and `outbox drain --config` files every queued record signed by the new key: none is refused
//! `key_url_mismatch`. The store keeps both signatures of each record.

use conduct_walker::intake_emulator::{Emulator, EmulatorConfig};
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::sandbox::{Behaviour, HttpsServer, Resp, SandboxAgent, SandboxCa, handler};
use conduct_walker::witness::keys::{generate_key_file, public_key_b64};
use conduct_walker::witness_pool::publish::key_document;
use std::process::Output;
use std::sync::{Arc, Mutex};

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

async fn run(args: &[&str]) -> Output {
    tokio::process::Command::new(BIN)
        .args(args)
        .env_remove("STATE_DIRECTORY")
        .env_remove("CREDENTIALS_DIRECTORY")
        .output()
        .await
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn records_queued_before_a_rotation_are_filed_after_it_signed_by_the_new_key() {
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let old = generate_key_file(&dir.path().join("witness.pem")).unwrap();

    // Our key_url, as the operator's web server would serve it: whatever key is current.
    let served = Arc::new(Mutex::new(key_document(&public_key_b64(&old), "localhost")));
    let serving = served.clone();
    let key_server = HttpsServer::start(
        &ca,
        handler(move |_| Resp::json(200, &serving.lock().unwrap())),
    )
    .await
    .unwrap();
    let origin = format!("https://localhost:{}", key_server.addr().port());
    let key_url = format!("{origin}/keys/witness.json");

    // Two agents walked while the intake is down: two records queued, signed by the old key.
    let port = free_port();
    let intake = format!("https://127.0.0.1:{port}/witness");
    let mut shas = Vec::new();
    for n in 0..2 {
        let agent = SandboxAgent::start(&ca, Behaviour::default())
            .await
            .unwrap();
        let out = run(&[
            "walk",
            "--origin",
            &agent.origin(),
            "--mode",
            "a2a",
            "--witness-name",
            "rotation test",
            "--vantage",
            "loopback",
            "--allow-private-network",
            "--ca-cert",
            &path("ca.pem"),
            "--db",
            &path("walker.db"),
            "--key",
            &path("witness.pem"),
            "--key-url",
            &key_url,
            "--submit",
            "--intake",
            &intake,
            "--out",
            &path(&format!("r{n}.json")),
        ])
        .await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(text(&out).contains(": queued"), "{}", text(&out));
        let bytes = std::fs::read(dir.path().join(format!("r{n}.json"))).unwrap();
        shas.push(conduct_walker::digest::sha256_hex(&bytes));
    }

    // Rotate with the command: a new key in the file the config names, served at the same
    // key_url from now on.
    std::fs::write(
        dir.path().join("walker.toml"),
        format!(
            "[witness]\nname = \"rotation test\"\nvantage = \"loopback\"\nkey = \"witness.pem\"\n\
             key_url = \"{key_url}\"\n\n[daemon]\ndatabase = \"walker.db\"\n"
        ),
    )
    .unwrap();
    let rotate = run(&["key", "rotate", "--config", &path("walker.toml")]).await;
    assert_eq!(rotate.status.code(), Some(0), "{}", text(&rotate));
    let new =
        conduct_walker::witness::keys::load_signing_key(&dir.path().join("witness.pem")).unwrap();
    assert_ne!(public_key_b64(&new), public_key_b64(&old));
    *served.lock().unwrap() = key_document(&public_key_b64(&new), "localhost");

    // The intake comes back, fetching key_url for every submission.
    let mut policy = NetPolicy::new(true);
    policy.allow_url(&origin);
    let mut key_fetch = TransportConfig::new(policy);
    key_fetch.extra_roots = vec![ca.cert_der()];
    let emulator = Emulator::start(
        EmulatorConfig::new(
            dir.path().join("intake.sqlite"),
            Transport::new(key_fetch).unwrap(),
        ),
        &ca,
        format!("127.0.0.1:{port}").parse().unwrap(),
    )
    .await
    .unwrap();
    rusqlite::Connection::open(dir.path().join("walker.db"))
        .unwrap()
        .execute("UPDATE submissions SET next_attempt_at = NULL", [])
        .unwrap();
    let allow = format!("127.0.0.1:{port}");
    let drain = run(&[
        "outbox",
        "drain",
        "--config",
        &path("walker.toml"),
        "--allow-private-network",
        "--allow-host",
        &allow,
        "--ca-cert",
        &path("ca.pem"),
    ])
    .await;
    assert_eq!(drain.status.code(), Some(0), "{}", text(&drain));
    assert!(text(&drain).contains("sent 2: 2 filed"), "{}", text(&drain));

    // Every record filed, carrying the new key; nothing refused.
    assert_eq!(emulator.stored_count(), 2);
    for sha in &shas {
        let stored = emulator
            .stored(sha)
            .unwrap_or_else(|| panic!("{sha} not filed"));
        assert_eq!(stored["public_key_ed25519_b64"], public_key_b64(&new));
    }
    let db = rusqlite::Connection::open(dir.path().join("walker.db")).unwrap();
    let answers = |answer: &str| -> i64 {
        db.query_row(
            "SELECT count(*) FROM submission_attempts WHERE answer = ?1",
            [answer],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!((answers("accepted"), answers("refused")), (2, 0));
    let mismatch: i64 = db
        .query_row(
            "SELECT count(*) FROM submission_attempts WHERE body LIKE '%key_url_mismatch%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(mismatch, 0, "no submission refused key_url_mismatch");

    // The store keeps both signatures of each record: the walk's (old key), the filing's (new).
    let mut kept: Vec<(String, String)> = db
        .prepare("SELECT made_at, public_key_b64 FROM record_signatures ORDER BY record_id, made_at DESC")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    kept.dedup();
    let (old_b64, new_b64) = (public_key_b64(&old), public_key_b64(&new));
    assert_eq!(
        kept,
        vec![
            ("walk".to_string(), old_b64.clone()),
            ("filing".to_string(), new_b64.clone()),
            ("walk".to_string(), old_b64),
            ("filing".to_string(), new_b64),
        ]
    );

    // And the store still verifies: the chain covers the bytes, not the signatures.
    let verify = run(&["records", "verify", "--db", &path("walker.db")]).await;
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify));
}

fn run_sync(args: &[&str]) -> Output {
    std::process::Command::new(BIN)
        .args(args)
        .env_remove("STATE_DIRECTORY")
        .env_remove("CREDENTIALS_DIRECTORY")
        .output()
        .unwrap()
}

/// `key rotate`, `key revoke` and `key history`: the history the store keeps lists every key
/// with its status and times, its `history_sha256` recomputes from its members, each change is
/// a key event whose chain verifies, and a key file others can read is still refused.
#[test]
fn rotate_then_revoke_keeps_a_history_that_recomputes() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("witness.pem");
    let first = generate_key_file(&key_file).unwrap();
    let config = dir.path().join("walker.toml");
    std::fs::write(
        &config,
        "[witness]\nname = \"w\"\nvantage = \"v\"\nkey = \"witness.pem\"\n\
         key_url = \"https://witness.example/keys/witness.json\"\n\n\
         [daemon]\ndatabase = \"walker.db\"\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();

    let none = run_sync(&["key", "history", "--config", config]);
    assert_eq!(none.status.code(), Some(2), "{}", text(&none));

    let rotated = run_sync(&["key", "rotate", "--config", config]);
    assert_eq!(rotated.status.code(), Some(0), "{}", text(&rotated));
    let stdout = String::from_utf8_lossy(&rotated.stdout).to_string();
    let document: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    let second = conduct_walker::witness::keys::load_signing_key(&key_file).unwrap();
    assert_eq!(document["public_key_ed25519_b64"], public_key_b64(&second));
    for step in [
        "1. serve",
        "2. reload",
        "3. serve the new key history",
        "4. tell",
    ] {
        assert!(stdout.contains(step), "{step}: {stdout}");
    }
    assert!(
        !stdout.contains("PRIVATE") && !text(&rotated).contains("PRIVATE"),
        "no private key is printed"
    );

    let revoked = run_sync(&[
        "key",
        "revoke",
        "--config",
        config,
        "--compromised-from",
        "2026-11-30T00:00:00Z",
        "--reason",
        "the key file was copied off a backup",
    ]);
    assert_eq!(revoked.status.code(), Some(0), "{}", text(&revoked));
    let third = conduct_walker::witness::keys::load_signing_key(&key_file).unwrap();

    let history = run_sync(&["key", "history", "--config", config, "--json"]);
    assert_eq!(history.status.code(), Some(0), "{}", text(&history));
    let doc: serde_json::Value = serde_json::from_slice(&history.stdout).unwrap();
    let members = serde_json::json!({
        "schema": doc["schema"], "subject": doc["subject"], "keys": doc["keys"], "rule": doc["rule"],
    });
    assert_eq!(
        doc["history_sha256"],
        conduct_walker::digest::sha256_hex(conduct_walker::canonical::to_bytes(&members)),
        "history_sha256 recomputes from its members"
    );
    assert_eq!(doc["subject"], "https://witness.example");
    let keys = doc["keys"].as_array().unwrap();
    let column =
        |name: &str| -> Vec<serde_json::Value> { keys.iter().map(|k| k[name].clone()).collect() };
    assert_eq!(
        column("public_key_ed25519_b64"),
        [&first, &second, &third].map(|k| serde_json::json!(public_key_b64(k)))
    );
    assert_eq!(column("status"), ["retired", "revoked", "active"]);
    assert_eq!(
        column("compromised_from"),
        [
            serde_json::Value::Null,
            "2026-11-30T00:00:00Z".into(),
            serde_json::Value::Null
        ]
    );
    assert!(keys[0]["retired_at"].is_string() && keys[1]["revoked_at"].is_string());
    assert!(
        keys.iter()
            .all(|k| k["since_commit"].as_str().is_some_and(|c| c.len() == 8)),
        "{keys:?}"
    );
    assert_eq!(doc["env_consistency"][0]["matches_active"], true);

    let text_form = run_sync(&["key", "history", "--config", config]);
    let said = String::from_utf8_lossy(&text_form.stdout).to_string();
    assert!(
        said.contains(&format!(
            "history_sha256 {}",
            doc["history_sha256"].as_str().unwrap()
        )) && said.lines().filter(|l| l.contains("witness-")).count() == 3,
        "{said}"
    );

    // Each change is a key event, chained: three events (recorded, rotated, revoked).
    let db = rusqlite::Connection::open(dir.path().join("walker.db")).unwrap();
    let events = conduct_walker::store::key_events::all(&db).unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(kinds, ["recorded", "rotated", "revoked"]);
    assert_eq!(
        conduct_walker::store::key_events::verify(&db).unwrap(),
        Vec::<String>::new()
    );

    // A key file others can read is refused, and nothing changes.
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let open = run_sync(&["key", "rotate", "--config", config]);
    assert_eq!(open.status.code(), Some(2), "{}", text(&open));
    assert_eq!(
        conduct_walker::store::key_events::all(&db).unwrap().len(),
        3
    );
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let garbled = run_sync(&[
        "key",
        "revoke",
        "--config",
        config,
        "--compromised-from",
        "yesterday",
    ]);
    assert_eq!(garbled.status.code(), Some(2), "{}", text(&garbled));
    assert_eq!(
        conduct_walker::store::key_events::all(&db).unwrap().len(),
        3
    );
}

/// A leak: `key revoke --compromised-from T` and `records verify` reports every record the
/// leaked key signed from T on (exit 1), says which key signed each record, and reads an
/// earlier signature by that key as not attributable without a proof of time (not a finding).
#[tokio::test]
async fn records_verify_flags_what_a_revoked_key_signed_after_compromised_from() {
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    ca.write_pem(&dir.path().join("ca.pem")).unwrap();
    let leaked = generate_key_file(&dir.path().join("witness.pem")).unwrap();
    let key_url = "https://witness.example/keys/witness.json";
    std::fs::write(
        dir.path().join("walker.toml"),
        format!(
            "[witness]\nname = \"w\"\nvantage = \"v\"\nkey = \"witness.pem\"\n\
             key_url = \"{key_url}\"\n\n[daemon]\ndatabase = \"walker.db\"\n"
        ),
    )
    .unwrap();
    let mut inserted = Vec::new();
    for n in 0..2 {
        let agent = SandboxAgent::start(&ca, Behaviour::default())
            .await
            .unwrap();
        let out = run(&[
            "walk",
            "--origin",
            &agent.origin(),
            "--mode",
            "a2a",
            "--witness-name",
            "w",
            "--vantage",
            "v",
            "--allow-private-network",
            "--ca-cert",
            &path("ca.pem"),
            "--db",
            &path("walker.db"),
            "--key",
            &path("witness.pem"),
            "--key-url",
            key_url,
            "--out",
            &path(&format!("r{n}.json")),
        ])
        .await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let db = rusqlite::Connection::open(dir.path().join("walker.db")).unwrap();
        let at: String = db
            .query_row("SELECT max(inserted_at) FROM records", [], |r| r.get(0))
            .unwrap();
        inserted.push(at);
        // The two records' times must differ by the clock's whole seconds.
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    }
    assert!(inserted[0] < inserted[1], "{inserted:?}");

    let ok = run(&["records", "verify", "--db", &path("walker.db")]).await;
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));

    // The key leaked from the second record's time on.
    let revoke = run(&[
        "key",
        "revoke",
        "--config",
        &path("walker.toml"),
        "--compromised-from",
        &inserted[1],
    ])
    .await;
    assert_eq!(revoke.status.code(), Some(0), "{}", text(&revoke));
    let verify = run(&["records", "verify", "--db", &path("walker.db")]).await;
    let said = String::from_utf8_lossy(&verify.stdout).to_string();
    assert_eq!(verify.status.code(), Some(1), "{said}");
    let kid = conduct_walker::witness_pool::key_history::witness_kid(&public_key_b64(&leaked));
    let lines: Vec<&str> = said.lines().filter(|l| l.starts_with("record ")).collect();
    assert_eq!(lines.len(), 2, "{said}");
    assert!(
        lines[0].starts_with("record 1 ")
            && lines[0].contains(&format!("signed by {kid}"))
            && lines[0].contains("not attributable without an independent proof of time"),
        "{said}"
    );
    assert!(
        lines[1].starts_with("record 2 ")
            && lines[1].contains(&format!("signed by {kid}"))
            && lines[1].contains("REVOKED: signed at or after compromised_from"),
        "{said}"
    );
    assert!(said.contains("FAILED: 1 key finding"), "{said}");
}

/// The witness face's two documents after rotations (§8.4): `/keys/witness.json` is the
/// active key alone, `/.well-known/key-history.json` the stored history; a face configured
/// with a revoked key does not start (a revoked key is never served).
#[test]
fn the_face_serves_the_stored_history_and_never_a_revoked_key() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("witness.pem");
    let first = generate_key_file(&key_file).unwrap();
    let config_path = dir.path().join("walker.toml");
    let toml = "[witness]\nname = \"w\"\nvantage = \"v\"\nkey = \"witness.pem\"\n\
         key_url = \"https://witness.example.org/keys/witness.json\"\n\n\
         [witness_face]\nlisten = \"127.0.0.1:0\"\norigin = \"https://witness.example.org\"\n\n\
         [daemon]\ndatabase = \"walker.db\"\n";
    std::fs::write(&config_path, toml).unwrap();
    let config = config_path.to_str().unwrap();
    let cfg = || conduct_walker::config::load(&config_path).unwrap();

    let rotated = run_sync(&["key", "rotate", "--config", config]);
    assert_eq!(rotated.status.code(), Some(0), "{}", text(&rotated));
    let second = conduct_walker::witness::keys::load_signing_key(&key_file).unwrap();
    let face = conduct_walker::app::witness_responder(&cfg())
        .unwrap()
        .unwrap();
    assert_eq!(
        face.key_document["public_key_ed25519_b64"],
        public_key_b64(&second)
    );
    let statuses: Vec<&str> = face.key_history["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["retired", "active"]);
    assert_eq!(
        face.key_history["keys"][0]["public_key_ed25519_b64"],
        public_key_b64(&first)
    );
    assert_eq!(face.key_history["subject"], "https://witness.example.org");
    assert_eq!(
        face.key_history["env_consistency"][0]["matches_active"],
        true
    );
    let history = run_sync(&["key", "history", "--config", config, "--json"]);
    let stored: serde_json::Value = serde_json::from_slice(&history.stdout).unwrap();
    assert_eq!(
        face.key_history, stored,
        "the face serves what `key history` prints"
    );

    // The operator revokes, then puts the leaked key back by mistake: the face refuses it.
    let revoked = run_sync(&[
        "key",
        "revoke",
        "--config",
        config,
        "--compromised-from",
        "2026-01-01T00:00:00Z",
    ]);
    assert_eq!(revoked.status.code(), Some(0), "{}", text(&revoked));
    let kept = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(".revoked-"))
        .unwrap();
    std::fs::remove_file(&key_file).unwrap();
    std::fs::copy(&kept, &key_file).unwrap();
    let refused = match conduct_walker::app::witness_responder(&cfg()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a revoked key was served"),
    };
    assert!(
        refused.contains("is revoked in the key history"),
        "{refused}"
    );
    drop(first);
}
