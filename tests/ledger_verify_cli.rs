//! `conduct-walker ledger verify` against a real emulator on loopback HTTPS: it holds on a clean
//! ledger after several batches and checkpoints, and each fault hook of ledger.md §8 item 7 is
//! caught and named (by the stateless check, or by `--hold` where only a held head can see it),
//! with exit 0 / 1 / 2.

mod ledger_support;

use ledger_support::*;
use serde_json::{Value, json};

fn findings(stdout: &str) -> Vec<String> {
    let report: Value = serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["finding"].as_str().unwrap().to_string())
        .collect()
}

/// Six batches (two of them by schedule, each followed by its checkpoint): verify recomputes
/// the chain and holds, in text and in JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_holds_on_a_clean_ledger() {
    let env = Env::start("2026-12-01T00:30:00Z").await;
    env.grow(6, 3, 3, 1).await;
    let (_, head) = env.get_json("/ledger/head").await;
    assert_eq!(head["n"], 8, "6 batches and 2 checkpoints");

    let (code, out, err) = env.verify_cli(&[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("checked: 8 entries (6 batches listing 18 records, 2 checkpoints, 0 other)"),
        "{out}"
    );
    assert!(
        out.trim_end()
            .ends_with("holds: the chain, head, end marker, export and every entry's bytes agree"),
        "{out}"
    );
    assert!(err.is_empty(), "no progress bar off a terminal: {err}");

    let (code, out, _) = env.verify_cli(&["--json"]);
    assert_eq!(code, 0);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["holds"], true);
    assert_eq!(report["served"], json!({"n": 8, "head": head["head"]}));
    assert_eq!(report["recomputed"], report["served"]);
    assert_eq!(
        (
            &report["batches"],
            &report["checkpoints"],
            &report["records_listed"]
        ),
        (&json!(6), &json!(2), &json!(18))
    );
    assert_eq!(findings(&out), Vec::<String>::new());
}

/// A clean ledger of 7 entries: 5 batches of 2 records (the 3rd and 5th by schedule, each
/// followed by its checkpoint).
async fn clean_ledger() -> Env {
    let env = Env::start("2026-12-01T00:30:00Z").await;
    env.grow(5, 2, 3, 7).await;
    env.clock.advance(chrono::Duration::seconds(10));
    env.emu.scheduled_run().unwrap();
    let (_, head) = env.get_json("/ledger/head").await;
    assert_eq!(head["n"], 7, "5 batches and 2 checkpoints");
    env
}

fn assert_finds(env: &Env, extra: &[&str], expected: &[&str]) -> Value {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let (code, out, err) = env.verify_cli(&args);
    assert_eq!(code, 1, "{out}{err}");
    let names = findings(&out);
    for name in expected {
        assert!(
            names.iter().any(|n| n == name),
            "{name} not in {names:?}: {out}"
        );
    }
    // The text form names them too.
    let (code, text, _) = env.verify_cli(extra);
    assert_eq!(code, 1);
    for name in expected {
        assert!(text.contains(&format!("finding: {name}: ")), "{text}");
    }
    serde_json::from_str(&out).unwrap()
}

fn assert_holds(env: &Env, extra: &[&str]) -> Value {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let (code, out, err) = env.verify_cli(&args);
    assert_eq!(code, 0, "{out}{err}");
    serde_json::from_str(&out).unwrap()
}

/// §8 item 7, rewrite an entry's bytes: without its claim following, the bytes no longer hash
/// to `claim_sha256`; with it (a consistent rewrite), the chain changes and every later batch
/// or checkpoint carries a `ledger_head` that is no longer the recomputed one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewritten_bytes_are_caught() {
    let env = clean_ledger().await;
    let (_, raw) = env.get("/ledger/2?format=raw").await;
    let forged = raw.replacen("\"signed\":false", "\"signed\":true", 1);
    env.emu.rewrite_entry_bytes(2, &forged, false).unwrap();
    let report = assert_finds(&env, &[], &["claim_sha256_differs"]);
    assert_eq!(report["findings"][0]["n"], 2);
    assert_eq!(
        report["findings"][0]["bytes_sha256"],
        conduct_walker::digest::sha256_hex(&forged)
    );

    env.emu.rewrite_entry_bytes(2, &forged, true).unwrap();
    let report = assert_finds(&env, &[], &["ledger_head_differs"]);
    let names = findings(&serde_json::to_string(&report).unwrap());
    assert!(
        !names.contains(&"claim_sha256_differs".to_string()),
        "{names:?}"
    );
    assert_eq!(report["findings"][0]["in_entry"], 3);
    assert_eq!(report["findings"][0]["at_n"], 2);
}

/// A batch whose `count` is not its number of rows (§4.4), and an entry whose bytes are not a
/// ledger text, are named even when the claim follows the bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_miscounted_batch_and_unreadable_bytes_are_named() {
    let env = clean_ledger().await;
    let (_, raw) = env.get("/ledger/2?format=raw").await;
    let miscounted = raw.replacen("\"count\":2,", "\"count\":3,", 1);
    assert_ne!(miscounted, raw, "entry 2 is a batch of 2: {raw}");
    env.emu.rewrite_entry_bytes(2, &miscounted, true).unwrap();
    let report = assert_finds(&env, &[], &["batch_count_differs"]);
    let found = |report: &Value, name: &str| {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["finding"] == name)
            .cloned()
            .unwrap()
    };
    let f = found(&report, "batch_count_differs");
    assert_eq!(
        (&f["n"], &f["count"], &f["rows"]),
        (&json!(2), &json!(3), &json!(2))
    );

    env.emu
        .rewrite_entry_bytes(2, "not a ledger text", true)
        .unwrap();
    let report = assert_finds(&env, &[], &["entry_unreadable"]);
    assert_eq!(found(&report, "entry_unreadable")["n"], 2);
    let names = findings(&serde_json::to_string(&report).unwrap());
    assert!(!names.contains(&"entry_missing".to_string()), "{names:?}");
}

/// §8 item 7, rewrite `created_at`: inside the ledger the later carried heads expose it; on
/// the last entry nothing carries it, so the stateless check holds and only a held head sees
/// the change (`--hold`: forked_head). A non-string `created_at` leaves the chain (§6.1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewritten_created_at_is_caught() {
    let env = clean_ledger().await;
    let hold = env.dir.path().join("held.json");
    let hold_arg = hold.to_str().unwrap();
    let first = assert_holds(&env, &["--hold", hold_arg]);
    assert_eq!(first["hold"]["held"], Value::Null);
    assert_eq!(first["hold"]["saved"]["n"], 7);

    env.emu
        .rewrite_created_at(4, json!("2026-12-01T00:31:00.000Z"))
        .unwrap();
    assert_finds(&env, &[], &["ledger_head_differs"]);
    env.emu.rewrite_created_at(4, json!(12345)).unwrap();
    assert_finds(&env, &[], &["ledger_head_differs"]);

    let env = clean_ledger().await;
    let hold = env.dir.path().join("held.json");
    let hold_arg = hold.to_str().unwrap();
    assert_holds(&env, &["--hold", hold_arg]);
    let saved = std::fs::read_to_string(&hold).unwrap();
    env.emu
        .rewrite_created_at(7, json!("2026-12-01T09:00:00.000Z"))
        .unwrap();
    assert_holds(&env, &[]);
    let report = assert_finds(&env, &["--hold", hold_arg], &["forked_head"]);
    assert_eq!(report["hold"]["saved"], Value::Null);
    assert_eq!(
        std::fs::read_to_string(&hold).unwrap(),
        saved,
        "a finding never overwrites the held head"
    );
}

/// §8 item 7, drop an entry: `/ledger/head` answers 409 chain_broken, the export ends with the
/// broken line, and a batch written afterwards carries the broken head.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_entry_is_caught() {
    let env = clean_ledger().await;
    env.emu.drop_entry(3).unwrap();
    let (status, head) = env.get_json("/ledger/head").await;
    assert_eq!(status, 409);
    assert_eq!(
        (&head["error"], &head["broken_at"], &head["last_linked"]),
        (&json!("chain_broken"), &json!(3), &json!(2))
    );
    let (_, export) = env.get("/ledger/export.jsonl").await;
    assert_eq!(
        export.lines().last().unwrap(),
        r#"{"schema":"jidec-chain-broken-v1","broken_at":3,"last_linked":2}"#
    );
    assert_eq!(export.lines().count(), 3);
    let report = assert_finds(&env, &[], &["chain_broken", "export_chain_broken"]);
    assert_eq!(report["entries"], 2);

    env.file("late", "https://agent.example/a2a", 99).await;
    let (status, _) = env.anchor().await;
    assert_eq!(status, 201);
    let (_, raw) = env.get("/ledger/8?format=raw").await;
    assert!(
        raw.contains(r#""ledger_head":{"chain":"jidec-chain-v1","broken_at":3,"last_linked":2}"#),
        "{raw}"
    );
}

/// §8 item 7, a rewound head: the ledger serves itself as it stood at n = 4 (head, export,
/// entries). Self-consistent, so the stateless check holds; a head held at n = 7 catches it.
/// A forked head (entries 5.. rewritten into another consistent history): the stateless check
/// holds, `--hold` at 7 finds forked_head, a head held at 4 (before the fork) is still extended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewound_and_forked_heads_are_caught_by_a_held_head() {
    let env = clean_ledger().await;
    let hold = env.dir.path().join("held.json");
    let hold_arg = hold.to_str().unwrap();
    let early = env.dir.path().join("held-at-4.json");
    let early_arg = early.to_str().unwrap();
    assert_holds(&env, &["--hold", hold_arg]);

    env.emu.rewind_head(Some(4));
    let (status, _) = env.get("/ledger/5?format=raw").await;
    assert_eq!(status, 404);
    let report = assert_holds(&env, &["--hold", early_arg]);
    assert_eq!(report["served"]["n"], 4);
    let report = assert_finds(&env, &["--hold", hold_arg], &["rewound_head"]);
    assert_eq!(report["findings"][0]["held"]["n"], 7);
    assert_eq!(report["findings"][0]["served"]["n"], 4);
    // Through the CLI emulator's hook route as well: stop the rewind.
    assert_eq!(
        env.hook(json!({"hook": "rewind_head", "n": null})).await.0,
        200
    );
    assert_holds(&env, &["--hold", hold_arg]);

    env.emu.fork_from(5).unwrap();
    assert_holds(&env, &[]);
    let report = assert_finds(&env, &["--hold", hold_arg], &["forked_head"]);
    assert_eq!(report["findings"][0]["held"]["n"], 7);
    assert_ne!(
        report["findings"][0]["recomputed"],
        report["findings"][0]["held"]["head"]
    );
    // A head held from before the fork is still in the chain: holds, and moves to 7.
    let report = assert_holds(&env, &["--hold", early_arg]);
    assert_eq!(
        (&report["hold"]["held"]["n"], &report["hold"]["saved"]["n"]),
        (&json!(4), &json!(7))
    );
}

/// §8 item 7, a stale pending key: anchored still wins at `/witness/<sha>`, the pool skips it,
/// the next batch removes it ("healed"); the chain is untouched, so verify holds (there is
/// nothing false in what the ledger serves). Stamp fields and a proof are not hashed anywhere
/// (§6.1 step 5): verify holds and the proof is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_pending_keys_and_stamps_change_no_verdict() {
    let env = clean_ledger().await;
    let sha = env.file("w", "https://agent.example/a2a", 5).await;
    assert_eq!(env.anchor().await.0, 201);
    env.emu.stale_pending(&sha).unwrap();
    let (_, answer) = env.get_json(&format!("/witness/{sha}")).await;
    assert_eq!(
        (&answer["status"], &answer["ledger_entry"]),
        (&json!("anchored"), &json!(8))
    );
    let (_, pool) = env.get_json("/witness/pending").await;
    assert_eq!(pool["count"], 0);
    assert_eq!(
        env.anchor().await,
        (
            200,
            json!({"ok": true, "anchored": 0, "healed": 1, "note": "pool held only records already anchored; their pending keys were removed"})
        )
    );
    assert_holds(&env, &[]);

    let (status, _) = env
        .hook(json!({"hook": "stamp", "n": 2, "ots_status": "pending", "stamped_at": "2026-12-01T01:00:00Z", "proof_b64": "AAEC"}))
        .await;
    assert_eq!(status, 200);
    let ex = env.send("GET", "/ledger/2/ots", &[], None).await;
    assert_eq!((ex.status, ex.body), (200, vec![0, 1, 2]));
    assert_holds(&env, &[]);
}

/// §8 item 7, delayed visibility (eventual consistency): a 404 right after the 201 and a
/// pending read after anchoring. A stateless audit of the chain cannot see reads lag (it holds);
/// `check::transition` names what a follower must not accept as final: anchored, then pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_visibility_is_caught_by_the_transition_check() {
    use conduct_walker::ledger::check::{Seen, TransitionFinding, transition};
    let env = clean_ledger().await;
    let client = env.client();
    let (status, _) = env
        .hook(json!({"hook": "delay_visibility", "ms": 60_000}))
        .await;
    assert_eq!(status, 200);
    let sha = env.file("w", "https://agent.example/a2a", 6).await;
    let first = client.witness(&sha).await.unwrap();
    assert!(
        matches!(
            first,
            conduct_walker::ledger::wire::WitnessAnswer::NotFound { .. }
        ),
        "a 404 right after the 201"
    );
    assert_eq!(
        transition(None, &first),
        None,
        "tolerated before anything was seen"
    );
    env.clock.advance(chrono::Duration::seconds(61));
    assert_eq!(env.anchor().await.0, 201);
    env.emu.delay_visibility(std::time::Duration::ZERO);
    let anchored = client.witness(&sha).await.unwrap();
    let seen = Seen::of(&anchored).unwrap();
    assert!(matches!(
        seen,
        Seen::Anchored {
            ledger_entry: 8,
            ..
        }
    ));
    env.emu.delay_visibility(std::time::Duration::from_secs(60));
    let lagging = client.witness(&sha).await.unwrap();
    assert_eq!(
        transition(Some(&seen), &lagging),
        Some(TransitionFinding::AnchoredThenPending { ledger_entry: 8 })
    );
    assert_holds(&env, &[]);
    env.clock.advance(chrono::Duration::seconds(61));
    assert_eq!(
        transition(Some(&seen), &client.witness(&sha).await.unwrap()),
        None
    );
}

/// Exit 2 says what could not be checked: a ledger that does not answer, an unreadable held
/// head. A ledger whose head is not the head's answer is a finding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn could_not_check_is_exit_2_and_says_what() {
    let env = clean_ledger().await;
    let bad = env.dir.path().join("bad.json");
    std::fs::write(&bad, "{\"chain\": \"other\"}").unwrap();
    let (code, _, err) = env.verify_cli(&["--hold", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("could not check: the held head in"), "{err}");
    let (code, out, _) = env.verify_cli(&["--hold", bad.to_str().unwrap(), "--json"]);
    assert_eq!(code, 2);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["holds"], Value::Null);

    // Nothing listens there (a port that was just free).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = std::process::Command::new(BIN)
        .args([
            "ledger",
            "verify",
            "--intake",
            &format!("https://127.0.0.1:{port}/witness"),
            "--allow-private-network",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("could not check: GET https://127.0.0.1:"),
        "{err}"
    );
    // Loopback needs the operator's --allow-private-network.
    let out = std::process::Command::new(BIN)
        .args([
            "ledger",
            "verify",
            "--intake",
            &env.emu.url(),
            "--ca-cert",
            env.ca_pem.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-private-network"));
    // http:// is refused before anything is sent.
    let out = std::process::Command::new(BIN)
        .args(["ledger", "verify", "--intake", "http://127.0.0.1:1/witness"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("https"));
}

/// Appends `entries` entries in-process: batches of one stored record each, and a scheduled run
/// (batch + checkpoint) every 100th.
pub fn seed_entries(env: &Env, entries: u64) {
    let mut n = 0;
    let mut i = 0u64;
    while n < entries {
        let sha = conduct_walker::digest::sha256_hex(format!("seeded record {i}"));
        i += 1;
        env.emu
            .insert_stored(&stored(
                &sha,
                "seed-witness",
                "loopback",
                "https://agent.example/a2a",
            ))
            .unwrap();
        env.clock.advance(chrono::Duration::milliseconds(10));
        if (n + 2) % 100 == 0 && n + 2 <= entries {
            env.emu.scheduled_run().unwrap();
            n += 2;
        } else {
            env.emu.anchor().unwrap().unwrap();
            n += 1;
        }
    }
}

/// ledger.md §5.3 at scale: a 10,000-entry ledger (100 checkpoints) is checked in full, its
/// export read line by line; then one entry's bytes are rewritten deep inside and named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_thousand_entry_ledger_is_checked() {
    let env = Env::start("2026-12-01T00:30:00Z").await;
    let started = std::time::Instant::now();
    seed_entries(&env, 10_000);
    eprintln!("seeded 10,000 entries in {:?}", started.elapsed());
    let (_, head) = env.get_json("/ledger/head").await;
    assert_eq!(head["n"], 10_000);
    let started = std::time::Instant::now();
    let report = assert_holds(&env, &["--parallel", "16"]);
    eprintln!("verified 10,000 entries in {:?}", started.elapsed());
    assert_eq!(
        (&report["entries"], &report["checkpoints"]),
        (&json!(10_000), &json!(100))
    );
    let (_, raw) = env.get("/ledger/7321?format=raw").await;
    env.emu
        .rewrite_entry_bytes(7321, &raw.replace("seed-witness", "seed-witnesz"), false)
        .unwrap();
    let report = assert_finds(&env, &["--parallel", "16"], &["claim_sha256_differs"]);
    assert_eq!(report["findings"][0]["n"], 7321);
}

/// A hostile ledger (a plain sandbox server, not the emulator): a garbage head, an export line
/// over the line cap, an export that stops inside a line, an endless export. Each is a named
/// finding or, for the endless one, a bounded failure to check; nothing is held whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_ledger_is_read_in_bounded_memory() {
    use conduct_walker::cli::ledger::{Quiet, verify};
    use conduct_walker::ledger::chain::{ChainFields, ROOT, entry_sha256, marker_sha256};
    use conduct_walker::ledger::client::{ExportLimits, LedgerClient};
    use conduct_walker::sandbox::{Body, HttpsServer, Resp, SandboxCa, handler};
    use std::sync::{Arc, Mutex};

    let ca = SandboxCa::generate();
    let export: Arc<Mutex<Body>> = Arc::new(Mutex::new(Body::Bytes(Vec::new())));
    let head_body: Arc<Mutex<String>> = Arc::new(Mutex::new(String::new()));
    let (e, h) = (export.clone(), head_body.clone());
    let server = HttpsServer::start(
        &ca,
        handler(move |req| match req.path.as_str() {
            "/ledger/head" => Resp::bytes(200, "application/json", h.lock().unwrap().clone()),
            "/ledger/export.jsonl" => Resp {
                status: 200,
                headers: vec![("content-type".into(), "application/x-ndjson".into())],
                body: e.lock().unwrap().clone(),
            },
            _ => Resp::empty(404),
        }),
    )
    .await
    .unwrap();
    let client = LedgerClient::new(&server.base(), transport(&ca, &server.base()))
        .unwrap()
        .with_export_limits(ExportLimits {
            line_cap: 4096,
            total_cap: 1024 * 1024,
            deadline: std::time::Duration::from_secs(3),
        });
    let empty_head = json!({"schema": "jidec-head-v1", "n": 0, "head": ROOT, "root": ROOT,
        "chain": "jidec-chain-v1", "prev_entry_sha256": ROOT, "entry_sha256": marker_sha256(0, ROOT)});
    let names = |r: &conduct_walker::cli::ledger::VerifyReport| {
        r.findings.iter().map(|f| f.name()).collect::<Vec<_>>()
    };

    *head_body.lock().unwrap() = "<html>".into();
    let r = verify(&client, None, 4, &Quiet).await.unwrap();
    assert_eq!(names(&r), ["answer_unreadable"]);

    *head_body.lock().unwrap() = empty_head.to_string();
    *export.lock().unwrap() = Body::Bytes(vec![b'x'; 10_000]);
    let r = verify(&client, None, 4, &Quiet).await.unwrap();
    assert_eq!(names(&r), ["export_line_unreadable"], "a line over the cap");

    *export.lock().unwrap() = Body::Bytes(format!("{empty_head}").into_bytes());
    let r = verify(&client, None, 4, &Quiet).await.unwrap();
    assert_eq!(names(&r), ["export_line_unreadable"], "no final newline");

    *export.lock().unwrap() = Body::Bytes(format!("{empty_head}\n").into_bytes());
    let r = verify(&client, None, 4, &Quiet).await.unwrap();
    assert!(r.holds, "{:?}", r.findings);

    // No end line at all, and a line after the end line: export_end_missing.
    *export.lock().unwrap() = Body::Bytes(Vec::new());
    let r = verify(&client, None, 4, &Quiet).await.unwrap();
    assert_eq!(names(&r), ["export_end_missing"], "an empty export");
    *export.lock().unwrap() = Body::Bytes(format!("{empty_head}\n{empty_head}\n").into_bytes());
    let r = verify(&client, None, 4, &Quiet).await.unwrap();
    assert_eq!(
        names(&r),
        ["export_end_missing"],
        "a line after the end line"
    );

    // The export lists entry 1, whose raw route answers 404: entry_missing, nothing else.
    let fields = ChainFields {
        n: 1,
        claim_sha256: "c".repeat(64),
        schema: Some("v0-plain".into()),
        created_at: Some("2026-12-01T00:00:00Z".into()),
    };
    let head_1 = entry_sha256(&fields, ROOT);
    let row = json!({"n": 1, "claim_sha256": fields.claim_sha256, "prev_entry_sha256": ROOT,
        "schema": fields.schema, "created_at": fields.created_at, "entry_sha256": head_1});
    let one_head = json!({"schema": "jidec-head-v1", "n": 1, "head": head_1, "root": ROOT,
        "chain": "jidec-chain-v1", "prev_entry_sha256": head_1, "entry_sha256": marker_sha256(1, &head_1)});
    *head_body.lock().unwrap() = one_head.to_string();
    *export.lock().unwrap() = Body::Bytes(format!("{row}\n{one_head}\n").into_bytes());
    let r = verify(&client, None, 4, &Quiet).await.unwrap();
    assert_eq!(names(&r), ["entry_missing"], "{:?}", r.findings);
    *head_body.lock().unwrap() = empty_head.to_string();

    // More than the export's total cap: refused before it is read, and said.
    *export.lock().unwrap() = Body::Bytes(format!("{empty_head}\n").repeat(10_000).into_bytes());
    let err = verify(&client, None, 4, &Quiet).await.unwrap_err();
    assert!(err.to_string().contains("response body too large"), "{err}");
    // A trickling export hits the whole-export deadline (3 s), not a per-read one.
    *export.lock().unwrap() = Body::Trickle {
        bytes: format!("{empty_head}\n").into_bytes(),
        every: std::time::Duration::from_millis(50),
    };
    let err = verify(&client, None, 4, &Quiet).await.unwrap_err();
    assert!(err.to_string().contains("timed out"), "{err}");
}
