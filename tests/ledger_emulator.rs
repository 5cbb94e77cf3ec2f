//! The emulator's ledger read side over real loopback HTTPS (ledger.md §8 items 1–6 and 8):
//! the §4.4 entry-2 bytes and the §6.2–§6.4 chain vectors reproduced through its routes, the
//! three `/witness/<sha>` forms with their key order, `responses`, the pool, the operator batch
//! and the scheduled run, every `/ledger` route's shape and headers, and the monitor's client.

mod ledger_support;

use conduct_walker::intake_emulator::BatchOrder;
use conduct_walker::ledger::chain::{ROOT, marker_sha256};
use conduct_walker::ledger::wire::{ExportLine, HeadAnswer, WitnessAnswer};
use ledger_support::*;
use serde_json::{Value, json};

/// ledger.md §4.4, observed entry 2, verbatim.
const ENTRY_2_BYTES: &str = r#"{"schema":"nenrin-witness-batch-v1","anchored_at":"2026-12-01T13:25:30.570Z","count":2,"ledger_head":{"chain":"jidec-chain-v1","n":1,"entry_sha256":"fa548cc57ce7819dfb71e394f2f56f3995f02a18639afb962f04a581d785dd06"},"records":[{"sha":"acc5955cc5d91efb0f55a30e6b4ca6dd9e3c1991ba4be4731245e9731b3d730b","purpose":"a2a-conduct-walk-v1: https://agent-obs2-a.example/a2a","witness_name":"obs-witness-3","vantage":"probe obs2 #2","signed":false},{"sha":"f641bf701f1a7a83219c9c884a96c88eef0bc75ead8e0318c11904a6b3c2eeed","purpose":"a2a-conduct-walk-v1: https://agent-obs2-a.example/a2a","witness_name":"obs-witness-2","vantage":"lab 🧪 \"quoted\"","signed":false}]}"#;
const CLAIM_1: &str = "c85dbef09ad8e4e789f090374efd30abbfd7f64af4a8c644292333094d59fec4";
const HEAD_1: &str = "fa548cc57ce7819dfb71e394f2f56f3995f02a18639afb962f04a581d785dd06";
const CLAIM_2: &str = "05164388fbaced0e9cb721336f8aebedde6b4f755b3683359ca7f9484df4e2d5";
const HEAD_2: &str = "50c188b7ff3e14f52ed74a371742d1fec7f5aa471e01e64f8312461910ea498a";
const HEAD_3: &str = "a786c972cba1babc5b10636c19a642e48794e9bd6eb2eb63b964966daa02f31c";
const MARKER_3: &str = "4f4bb61979f7bc96ed1da14629e4e94d3417b9592dcaa854faf2fe9f4340f9f0";
const OBS2: &str = "https://agent-obs2-a.example/a2a";

/// ledger.md §4.4 and §6.4 through the routes: entry 1 as observed (its claim and time),
/// the two stored records of entry 2, the operator batch at 13:25:30.570Z writes entry 2's 660
/// bytes, the scheduled run at 13:25:30.651Z finds the pool empty and writes the checkpoint
/// (entry 3); head, marker and export rows are the observed ones.
#[tokio::test]
async fn vectors_4_4_and_6_4_through_the_routes() {
    let env = Env::start("2026-12-01T13:25:16.153Z").await;
    env.emu
        .import_entry(
            CLAIM_1,
            json!("v0-plain"),
            json!("2026-12-01T13:25:16.153Z"),
            "{}",
        )
        .unwrap();
    for (sha, name, vantage) in [
        (
            "f641bf701f1a7a83219c9c884a96c88eef0bc75ead8e0318c11904a6b3c2eeed",
            "obs-witness-2",
            "lab 🧪 \"quoted\"",
        ),
        (
            "acc5955cc5d91efb0f55a30e6b4ca6dd9e3c1991ba4be4731245e9731b3d730b",
            "obs-witness-3",
            "probe obs2 #2",
        ),
    ] {
        env.emu
            .insert_stored(&stored(sha, name, vantage, OBS2))
            .unwrap();
    }
    env.clock.set(at("2026-12-01T13:25:30.570Z"));
    let (status, answer) = env.anchor().await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(
        answer,
        json!({"n": 2, "url": format!("{}/ledger/2", env.emu.base()), "anchored": 2,
               "trigger": "operator",
               "note": "the batch anchor covers every record listed in it; the Bitcoin stamp follows on the operator's stamping run"})
    );
    let (status, raw) = env.get("/ledger/2?format=raw").await;
    assert_eq!(status, 200);
    assert_eq!(raw, ENTRY_2_BYTES);
    assert_eq!(raw.len(), 660);

    env.clock.set(at("2026-12-01T13:25:30.651Z"));
    let run = env.hook(json!({"hook": "scheduled_run"})).await;
    assert_eq!(run, (200, json!({"batches": [], "checkpoint": 3})));
    let (_, view) = env.get_json("/ledger/3?format=json").await;
    assert_eq!(view["work"], "NENRIN head checkpoint (entries 1..2)");
    let claim_3 = view["claim_sha256"].as_str().unwrap();
    assert!(
        claim_3.starts_with("95368077") && claim_3.ends_with("5f82e6e1"),
        "{claim_3}"
    );
    assert_eq!(view["anchored_by"], "schedule");

    let (status, head) = env.get_json("/ledger/head").await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            &head["n"],
            &head["head"],
            &head["prev_entry_sha256"],
            &head["entry_sha256"],
            &head["root"]
        ),
        (
            &json!(3),
            &json!(HEAD_3),
            &json!(HEAD_3),
            &json!(MARKER_3),
            &json!(ROOT)
        )
    );
    let (_, export) = env.get("/ledger/export.jsonl").await;
    let lines: Vec<&str> = export.split_terminator('\n').collect();
    assert!(export.ends_with('\n'));
    assert_eq!(lines.len(), 4);
    assert_eq!(
        lines[0],
        format!(
            r#"{{"n":1,"claim_sha256":"{CLAIM_1}","prev_entry_sha256":"{ROOT}","schema":"v0-plain","created_at":"2026-12-01T13:25:16.153Z","entry_sha256":"{HEAD_1}"}}"#
        )
    );
    assert_eq!(
        lines[1],
        format!(
            r#"{{"n":2,"claim_sha256":"{CLAIM_2}","prev_entry_sha256":"{HEAD_1}","schema":"v0-plain","created_at":"2026-12-01T13:25:30.570Z","entry_sha256":"{HEAD_2}"}}"#
        )
    );
    assert!(lines[2].ends_with(&format!(r#""entry_sha256":"{HEAD_3}"}}"#)));
    assert_eq!(
        lines[3],
        format!(
            r#"{{"schema":"jidec-head-v1","n":3,"head":"{HEAD_3}","root":"{ROOT}","chain":"jidec-chain-v1","prev_entry_sha256":"{HEAD_3}","entry_sha256":"{MARKER_3}"}}"#
        )
    );
    // The checkpoint carries (2, head_2, marker_2 686cd402…).
    let (_, cp) = env.get("/ledger/3?format=raw").await;
    assert!(cp.contains(&format!(
        r#""ledger_head":{{"chain":"jidec-chain-v1","n":2,"entry_sha256":"{HEAD_2}","marker_sha256":"686cd402"#
    )));

    // The same through the monitor's client.
    let client = env.client();
    let HeadAnswer::Head(h) = client.head().await.unwrap() else {
        panic!("not a head")
    };
    assert_eq!((h.n, h.head.as_str()), (3, HEAD_3));
    assert_eq!(
        client.entry_raw(2).await.unwrap().unwrap(),
        ENTRY_2_BYTES.as_bytes()
    );
    let e2 = client.entry_json(2).await.unwrap().unwrap();
    assert_eq!(e2.claim_sha256, CLAIM_2);
    assert_eq!(e2.record_canonical.as_deref(), Some(ENTRY_2_BYTES));
    assert_eq!(client.entry_raw(4).await.unwrap(), None);
    let mut reader = client.export().await.unwrap();
    let mut heads = Vec::new();
    while let Some((_, line)) = reader.next().await.unwrap() {
        match line.unwrap() {
            ExportLine::Entry(row) => heads.push(row.entry_sha256),
            ExportLine::End(end) => assert_eq!(end.entry_sha256, MARKER_3),
            ExportLine::Broken { .. } => panic!("broken"),
        }
    }
    assert_eq!(heads, [HEAD_1, HEAD_2, HEAD_3]);
    // The stored records now answer anchored at entry 2.
    let answer = client
        .witness("ACC5955CC5D91EFB0F55A30E6B4CA6DD9E3C1991BA4BE4731245E9731B3D730B")
        .await
        .unwrap();
    assert!(matches!(
        answer,
        WitnessAnswer::Anchored {
            ledger_entry: 2,
            ..
        }
    ));
}

/// ledger.md §6.2 through `/ledger/head`: an entry whose `schema` needs every escape of the
/// chain form; §5.2: the empty ledger's head and marker.
#[tokio::test]
async fn vector_6_2_and_the_empty_head_through_the_routes() {
    let env = Env::start("2026-12-01T00:00:00Z").await;
    let (status, empty) = env.get_json("/ledger/head").await;
    assert_eq!(status, 200);
    assert_eq!((&empty["n"], &empty["head"]), (&json!(0), &json!(ROOT)));
    assert_eq!(
        empty["entry_sha256"],
        "60f4637ad1d175e86399e7aefb51415e9562171938b011fcf6c81fb6c96d1617"
    );
    let (_, export) = env.get("/ledger/export.jsonl").await;
    assert_eq!(export.lines().count(), 1, "only the end line: {export}");

    env.emu
        .import_entry(
            &"0".repeat(64),
            json!("é\u{7f}\u{2028}\u{1F600}\n"),
            json!("2026-12-01T00:00:00.000Z"),
            "{}",
        )
        .unwrap();
    let (_, head) = env.get_json("/ledger/head").await;
    assert_eq!(
        head["head"],
        "84a57f530ff9c8545c89bc929813ab906a26c3e2786f3da65a0a53f90a2f2176"
    );
    assert_eq!(
        head["entry_sha256"],
        marker_sha256(1, head["head"].as_str().unwrap())
    );
}

/// ledger.md §2: the 404, pending (flat, §2.3 order) and anchored (nested, six keys) forms, any
/// case in the path, a trailing slash, `responses` with attached replies sorted by time then
/// sha, and the pool (§3) in sha order with its exact keys.
#[tokio::test]
async fn witness_forms_responses_and_the_pool() {
    let env = Env::start("2026-12-01T13:25:09.865Z").await;
    let a = env
        .file("obs-witness", "https://agent-obs1-a.example/a2a", 1)
        .await;
    let b = env
        .file("obs-witness", "https://agent-obs1-a.example/a2a", 2)
        .await;

    let (status, nf) = env.get(&format!("/witness/{}", "AB".repeat(32))).await;
    assert_eq!(status, 404);
    assert_eq!(
        nf,
        format!(
            "{{\n  \"error\": \"not found\",\n  \"sha\": \"{}\"\n}}",
            "ab".repeat(32)
        )
    );
    // 63 hex characters: the generic 404 with the routes.
    let (status, generic) = env.get_json(&format!("/witness/{}", &a[..63])).await;
    assert_eq!(status, 404);
    assert_eq!(
        generic["routes"],
        json!([
            "/ledger",
            "/ledger/head",
            "/ledger/export.jsonl",
            "/ledger/{n}",
            "/ledger/{n}/ots"
        ])
    );

    let (status, pending) = env.get(&format!("/witness/{}/", a.to_uppercase())).await;
    assert_eq!(status, 200);
    assert!(
        pending.starts_with("{\n  \"status\": \"pending\",\n  \"sha\": "),
        "{pending}"
    );
    assert_key_order(
        &pending,
        &[
            "status",
            "sha",
            "record_canonical",
            "signed",
            "public_key_ed25519_b64",
            "signed_domain",
            "key_url",
            "mode",
            "v11",
            "disclaimer_present",
            "endpoint",
            "counted",
            "count_reason",
            "purpose",
            "witness_name",
            "vantage",
            "submitted_at",
            "responses",
        ],
    );
    let p: Value = serde_json::from_str(&pending).unwrap();
    assert_eq!(p["sha"], a.as_str());
    assert_eq!(p["submitted_at"], "2026-12-01T13:25:09.865Z");
    assert_eq!(p["responses"], json!([]));

    // Two replies, attached out of order (one through the HTTP hook).
    env.emu
        .attach_response(
            &a,
            &"bb".repeat(32),
            "https://agent-obs1-a.example",
            "2026-12-02T08:00:00Z",
        )
        .unwrap();
    let (status, _) = env
        .hook(json!({"hook": "attach_response", "sha": a, "response_sha": "aa".repeat(32),
                     "subject_origin": "https://agent-obs1-a.example", "responded_at": "2026-12-01T20:00:00Z"}))
        .await;
    assert_eq!(status, 200);

    let (_, pool) = env.get("/witness/pending").await;
    assert_key_order(
        &pool,
        &[
            "count",
            "counted",
            "stored_not_counted",
            "pending",
            "caps",
            "note",
        ],
    );
    let pool: Value = serde_json::from_str(&pool).unwrap();
    let mut expected = vec![a.clone(), b.clone()];
    expected.sort();
    assert_eq!(
        pool["pending"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["sha"].as_str().unwrap().to_string())
            .collect::<Vec<_>>(),
        expected
    );
    let element = &pool["pending"][0];
    let keys: Vec<&String> = element.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 9);
    assert_eq!(
        (
            pool["count"].clone(),
            pool["counted"].clone(),
            pool["stored_not_counted"].clone()
        ),
        (json!(2), json!(1), json!(1))
    );

    let (status, answer) = env.anchor().await;
    assert_eq!(status, 201);
    assert_eq!(answer["anchored"], 2);
    // conduct-walk.md §6.2's key order: the 201 body, and the dedupe answer after anchoring.
    let post = |nonce: u64| {
        let body = json!({"record_canonical": record_text("obs-witness", "https://agent-obs1-a.example/a2a", nonce)});
        serde_json::to_vec(&body).unwrap()
    };
    let ex = env
        .send(
            "POST",
            "/witness",
            &[
                ("Content-Type", "application/json"),
                ("CF-Connecting-IP", "203.0.113.9"),
            ],
            Some(post(3)),
        )
        .await;
    assert_eq!(ex.status, 201);
    assert_key_order(
        &String::from_utf8(ex.body).unwrap(),
        &[
            "sha",
            "status",
            "signed",
            "signed_domain",
            "mode",
            "counted",
            "count_reason",
            "url",
            "anchor_policy",
        ],
    );
    let ex = env
        .send(
            "POST",
            "/witness",
            &[
                ("Content-Type", "application/json"),
                ("CF-Connecting-IP", "203.0.113.9"),
            ],
            Some(post(1)),
        )
        .await;
    let dedupe = String::from_utf8(ex.body).unwrap();
    assert_eq!(ex.status, 200);
    assert_key_order(&dedupe, &["sha", "status", "dedup", "url"]);
    assert!(dedupe.contains("\"status\": \"anchored\""), "{dedupe}");
    let (_, anchored) = env.get(&format!("/witness/{a}")).await;
    assert_key_order(
        &anchored,
        &[
            "status",
            "sha",
            "ledger_entry",
            "url",
            "record",
            "responses",
        ],
    );
    let an: Value = serde_json::from_str(&anchored).unwrap();
    assert_eq!(an["url"], format!("{}/ledger/1", env.emu.base()));
    // `record` is the pending answer minus status and responses.
    let mut record = p.as_object().unwrap().clone();
    record.remove("status");
    record.remove("responses");
    assert_eq!(an["record"], Value::Object(record));
    assert_eq!(
        an["responses"],
        json!([
            {"response_sha": "aa".repeat(32), "url": format!("{}/response/{}", env.emu.base(), "aa".repeat(32)),
             "subject_origin": "https://agent-obs1-a.example", "responded_at": "2026-12-01T20:00:00Z"},
            {"response_sha": "bb".repeat(32), "url": format!("{}/response/{}", env.emu.base(), "bb".repeat(32)),
             "subject_origin": "https://agent-obs1-a.example", "responded_at": "2026-12-02T08:00:00Z"},
        ])
    );
    // The client reads the same answer and its replies.
    let parsed = env.client().witness(&a).await.unwrap();
    assert_eq!(parsed.responses().len(), 2);

    // Anchored records leave the pool at once; only the one filed since is left.
    let (_, pool) = env.get_json("/witness/pending").await;
    assert_eq!(pool["count"], 1);
    assert_eq!(env.anchor().await.0, 201);
    // An empty pool: 200 with the observed body.
    assert_eq!(
        env.anchor().await,
        (
            200,
            json!({"ok": true, "anchored": 0, "note": "pool is empty"})
        )
    );
}

/// ledger.md §4.1: the operator route needs the key; GET on it is the generic 404; the
/// scheduled run writes a checkpoint only when the last entry is not one (§4.5); `/ledger`,
/// `/ledger/<n>` in every form, `/ledger/<n>/ots` before and after a stamp, with their headers.
#[tokio::test]
async fn operator_route_checkpoint_rule_and_ledger_routes() {
    let env = Env::start("2026-12-01T00:30:00Z").await;
    let ex = env
        .send(
            "POST",
            "/witness/anchor",
            &[("x-ledger-key", "wrong")],
            None,
        )
        .await;
    assert_eq!(
        (ex.status, String::from_utf8(ex.body).unwrap()),
        (401, "{\n  \"error\": \"unauthorized\"\n}".into())
    );
    let (status, _) = env.get("/witness/anchor").await;
    assert_eq!(status, 404);
    let ex = env
        .send(
            "POST",
            "/emulator/hooks",
            &[],
            Some(b"{\"hook\":\"clear\"}".to_vec()),
        )
        .await;
    assert_eq!(ex.status, 401);

    // Scheduled run on an empty ledger: nothing at all.
    assert_eq!(
        env.hook(json!({"hook": "scheduled_run"})).await.1,
        json!({"batches": [], "checkpoint": null})
    );
    env.file("w", "https://agent.example/a2a", 1).await;
    // Schedule: batch (1) then checkpoint (2); again with an empty pool: nothing (the last
    // entry is a checkpoint); an operator batch, then a schedule with an empty pool: checkpoint.
    assert_eq!(
        env.hook(json!({"hook": "scheduled_run"})).await.1,
        json!({"batches": [1], "checkpoint": 2})
    );
    assert_eq!(
        env.hook(json!({"hook": "scheduled_run"})).await.1,
        json!({"batches": [], "checkpoint": null})
    );
    env.file("w", "https://agent.example/a2a", 2).await;
    assert_eq!(env.anchor().await.0, 201);
    assert_eq!(
        env.hook(json!({"hook": "scheduled_run"})).await.1,
        json!({"batches": [], "checkpoint": 4})
    );

    let ex = env.send("GET", "/ledger/3?format=raw", &[], None).await;
    assert_eq!(ex.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(ex.header("cache-control"), Some("no-store"));
    assert_eq!(ex.header("access-control-allow-origin"), Some("*"));
    let ex = env
        .send("GET", "/ledger/03", &[("Accept", "application/json")], None)
        .await;
    assert_eq!(
        ex.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    assert_eq!(ex.header("vary"), Some("Accept"));
    let view = String::from_utf8(ex.body).unwrap();
    assert_key_order(
        &view,
        &[
            "n",
            "work",
            "claim_sha256",
            "record_canonical",
            "schema",
            "created_at",
            "ots_status",
            "bitcoin_block",
            "block_time",
            "stamped_at",
            "anchored_by",
            "pending_stage",
            "pending_hours",
            "pending_stale_after_hours",
        ],
    );
    let v: Value = serde_json::from_str(&view).unwrap();
    assert_eq!(
        (
            &v["work"],
            &v["schema"],
            &v["ots_status"],
            &v["pending_stage"],
            &v["pending_hours"],
            &v["pending_stale_after_hours"]
        ),
        (
            &json!("NENRIN witness batch (1 records)"),
            &json!("v0-plain"),
            &json!("unstamped"),
            &json!("fresh"),
            &json!(0),
            &json!(6)
        )
    );
    // Hours pass: stale after 6.
    env.clock.advance(chrono::Duration::hours(7));
    let (_, v) = env.get_json("/ledger/3?format=json").await;
    assert_eq!(
        (&v["pending_stage"], &v["pending_hours"]),
        (&json!("stale"), &json!(7))
    );
    let ex = env.send("POST", "/ledger/3", &[], None).await;
    assert_eq!(
        ex.header("content-type"),
        Some("text/html; charset=utf-8"),
        "any method reads; no JSON asked: HTML"
    );
    for missing in ["/ledger/0", "/ledger/5", "/ledger/5?format=raw"] {
        let (status, body) = env.get_json(missing).await;
        assert_eq!(
            (status, body),
            (404, json!({"error": "not found"})),
            "{missing}"
        );
    }

    // The proof: 404 until stamped, then served; `pending_*` go once confirmed.
    let (status, body) = env.get_json("/ledger/1/ots").await;
    assert_eq!(
        (status, body),
        (
            404,
            json!({"error": "proof not yet available", "ots_status": "unstamped"})
        )
    );
    let (status, _) = env
        .hook(
            json!({"hook": "stamp", "n": 1, "ots_status": "confirmed", "bitcoin_block": 925001,
                     "block_time": "2026-12-01T02:00:00Z", "stamped_at": "2026-12-01T01:00:00Z",
                     "proof_b64": "AE9wZW5UaW1lc3RhbXBz"}),
        )
        .await;
    assert_eq!(status, 200);
    let ex = env.send("GET", "/ledger/1/ots", &[], None).await;
    assert_eq!(ex.status, 200);
    assert_eq!(
        ex.header("content-type"),
        Some("application/vnd.opentimestamps.proof")
    );
    assert_eq!(
        ex.header("content-disposition"),
        Some("attachment; filename=\"claim_1.txt.ots\"")
    );
    assert_eq!(ex.body, b"\0OpenTimestamps");
    let (_, v) = env.get_json("/ledger/1?format=json").await;
    assert_eq!(v["bitcoin_block"], 925001);
    assert!(v.get("pending_stage").is_none(), "{v}");

    let ex = env.send("GET", "/ledger/", &[], None).await;
    assert_eq!(ex.header("cache-control"), Some("no-store"));
    let listing: Value = serde_json::from_slice(&ex.body).unwrap();
    assert_eq!(
        (&listing["ledger"], &listing["anchor"], &listing["count"]),
        (
            &json!("JIDEC"),
            &json!("Bitcoin via OpenTimestamps"),
            &json!(4)
        )
    );
    let ns: Vec<i64> = listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["n"].as_i64().unwrap())
        .collect();
    assert_eq!(ns, [4, 3, 2, 1]);
    assert_eq!(listing["entries"][3]["pending_stage"], Value::Null);
    assert_eq!(
        listing["entries"][3]["url"],
        format!("{}/ledger/1", env.emu.base())
    );
    for path in ["/ledger/head", "/ledger/export.jsonl"] {
        let ex = env.send("GET", path, &[], None).await;
        assert_eq!(ex.header("cache-control"), Some("no-store"), "{path}");
    }
    let ex = env.send("GET", "/ledger/export.jsonl", &[], None).await;
    assert_eq!(
        ex.header("content-type"),
        Some("application/x-ndjson; charset=utf-8")
    );
    // /witness/* sends no cache-control; OPTIONS anywhere is 200 and empty.
    let ex = env.send("GET", "/witness/pending", &[], None).await;
    assert_eq!(ex.header("cache-control"), None);
    let ex = env
        .send("OPTIONS", "/ledger/anything/at/all", &[], None)
        .await;
    assert_eq!((ex.status, ex.body.len()), (200, 0));
}

/// ledger.md §4.2: the 200 lowest shas per batch (the highest waits), and behind the switch the
/// oldest submissions first, up to five batches per scheduled run.
#[tokio::test]
async fn batch_selection_lowest_sha_and_oldest_first() {
    let env = Env::start_with(
        "2026-12-01T00:00:00Z",
        conduct_walker::intake_emulator::Limits {
            batch_max: 3,
            ..wide_limits()
        },
    )
    .await;
    let mut shas = Vec::new();
    for i in 0..4 {
        shas.push(env.file("w", "https://agent.example/a2a", i).await);
    }
    let (status, _) = env.anchor().await;
    assert_eq!(status, 201);
    let mut sorted = shas.clone();
    sorted.sort();
    let (_, raw) = env.get("/ledger/1?format=raw").await;
    let batch: Value = serde_json::from_str(&raw).unwrap();
    let listed: Vec<&str> = batch["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["sha"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        sorted[..3].iter().map(String::as_str).collect::<Vec<_>>()
    );
    let (_, pool) = env.get_json("/witness/pending").await;
    assert_eq!(pool["pending"][0]["sha"], sorted[3].as_str());

    // Oldest first: 7 more submitted; the scheduled run makes 3 batches (3 + 3 + 2 with the
    // one waiting) and a checkpoint; each batch's rows are still in sha order.
    env.emu.set_batch_order(BatchOrder::OldestFirst);
    let mut later = Vec::new();
    for i in 10..17 {
        env.clock.advance(chrono::Duration::seconds(1));
        later.push(env.file("w", "https://agent.example/a2a", i).await);
    }
    let run = env.emu.scheduled_run().unwrap();
    assert_eq!(
        run.batches.len(),
        4,
        "three batches and the empty pool that ends the loop"
    );
    assert_eq!(run.checkpoint, Some(5));
    let (_, raw) = env.get("/ledger/2?format=raw").await;
    let batch: Value = serde_json::from_str(&raw).unwrap();
    let mut first: Vec<String> = vec![sorted[3].clone(), later[0].clone(), later[1].clone()];
    first.sort();
    let listed: Vec<String> = batch["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["sha"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        listed, first,
        "the oldest three (the one left waiting, then the first two)"
    );
}
