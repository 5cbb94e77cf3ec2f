//! The `records` subcommands through the real binary.

mod store_support;

use conduct_walker::digest::sha256_hex;
use conduct_walker::store::Store;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use store_support::*;

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("STATE_DIRECTORY")
        .output()
        .unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// A store with: signed PASS, unsigned FAIL, signed commitment, signed PASS on another endpoint.
fn populated() -> (tempfile::TempDir, PathBuf, Vec<Vec<u8>>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("walker.db");
    let store = Store::open(&path).unwrap();
    let k = key(9);
    let other = conduct_walker::canonical::to_bytes(&record_value(
        4,
        "https://other.example",
        "https://other.example/mcp",
        true,
        &walked_at(86_400 * 3),
    ));
    let recs = vec![
        signed(record_bytes(1, true), &k),
        unsigned(record_bytes(2, false)),
        commitment(3, &k),
        signed(other, &k),
    ];
    for r in &recs {
        store.insert_record(r).unwrap();
    }
    let bytes = recs.into_iter().map(|r| r.canonical).collect();
    (dir, path, bytes)
}

/// `records import FILE --db INTO`.
fn import(file: &Path, into: &Path) -> Output {
    run(&[
        "records",
        "import",
        file.to_str().unwrap(),
        "--db",
        db(into),
    ])
}

fn db(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn list_shows_one_line_per_record_and_filters() {
    let (_d, path, bytes) = populated();
    let o = run(&["records", "list", "--db", db(&path)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert_eq!(
        lines[0],
        format!(
            "2026-09-06T00:01:00Z  https://agent.example/a2a  PASS 8/8  {}  signed",
            &sha256_hex(&bytes[0])[..12]
        )
    );
    assert!(lines[1].contains("FAIL 5/8") && lines[1].ends_with("unsigned"));
    assert!(lines[2].contains("commitment") && lines[2].contains("https://secret.example/a2a"));

    let o = run(&["records", "list", "--db", db(&path), "--outcome", "FAIL"]);
    assert_eq!(stdout(&o).lines().count(), 1);
    let lower = run(&["records", "list", "--db", db(&path), "--outcome", "fail"]);
    assert_eq!(stdout(&lower), stdout(&o), "--outcome takes any case");
    let o = run(&[
        "records",
        "list",
        "--db",
        db(&path),
        "--endpoint",
        "https://other.example/mcp",
    ]);
    assert_eq!(stdout(&o).lines().count(), 1);
    assert!(stdout(&o).contains(&sha256_hex(&bytes[3])[..12]));
    let o = run(&[
        "records",
        "list",
        "--db",
        db(&path),
        "--since",
        "2026-09-07",
    ]);
    assert_eq!(stdout(&o).lines().count(), 1, "{}", stdout(&o));

    let o = run(&["records", "list", "--db", db(&path), "--json"]);
    assert_eq!(code(&o), 0);
    let first: serde_json::Value =
        serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(first["sha256"], sha256_hex(&bytes[0]));
    assert_eq!(first["verdict"]["outcome"], "PASS");
    assert_eq!(first["signed"], true);

    let o = run(&["records", "list", "--db", db(&path), "--since", "soon"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("not a date"), "{}", stderr(&o));
}

#[test]
fn show_and_raw_by_prefix() {
    let (_d, path, bytes) = populated();
    let sha = sha256_hex(&bytes[0]);
    let o = run(&["records", "raw", &sha[..8], "--db", db(&path)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(o.stdout, bytes[0], "raw writes the exact bytes, no newline");

    let o = run(&["records", "show", &sha[..8], "--db", db(&path)]);
    assert_eq!(code(&o), 0);
    let out = stdout(&o);
    assert!(out.contains(&format!("sha256        {sha}")), "{out}");
    assert!(out.contains("verdict       PASS 8/8"));
    assert!(out.contains("signed        yes"));
    assert!(
        out.contains("\"schema\": \"jidec-path-v1\""),
        "pretty record: {out}"
    );

    let o = run(&["records", "show", "zz", "--db", db(&path)]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("not a sha256 prefix"));
    // No stored sha can start with both: pick a two-digit prefix none has.
    let shas: Vec<String> = bytes.iter().map(sha256_hex).collect();
    let unused = (0..=255u8)
        .map(|b| format!("{b:02x}"))
        .find(|p| !shas.iter().any(|s| s.starts_with(p.as_str())))
        .unwrap();
    let o = run(&["records", "raw", &unused, "--db", db(&path)]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("no record has a sha256 starting with"));
    assert!(o.stdout.is_empty());
}

#[test]
fn export_import_round_trip_is_byte_identical() {
    let (dir, path, bytes) = populated();
    for (n, flag) in [None, Some("--with-signatures"), Some("--with-kept")]
        .into_iter()
        .enumerate()
    {
        let mut args = vec!["records", "export", "--db", db(&path)];
        args.extend(flag);
        let o = run(&args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let export = o.stdout;
        assert_eq!(export.iter().filter(|&&b| b == b'\n').count(), 4);
        if flag.is_none() {
            // Plain export: each line is exactly the canonical bytes.
            let lines: Vec<&[u8]> = export.split(|&b| b == b'\n').collect();
            for (line, expected) in lines.iter().zip(&bytes) {
                assert_eq!(line, expected);
            }
        }
        let file = dir.path().join(format!("walks{n}.jsonl"));
        std::fs::write(&file, &export).unwrap();
        let target = dir.path().join(format!("copy{n}.db"));
        let o = import(&file, &target);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(stdout(&o).contains("imported 4 records, 0 already present"));
        // Importing again adds nothing.
        let o = import(&file, &target);
        assert!(stdout(&o).contains("imported 0 records, 4 already present"));

        let mut back_args = vec!["records", "export", "--db", db(&target)];
        back_args.extend(flag);
        let back = run(&back_args).stdout;
        assert_eq!(back, export, "round trip with {flag:?} is byte-identical");

        let copy = Store::open_read_only(&target).unwrap();
        let signed_rows = copy.list(&Default::default()).unwrap();
        let expect_signed = flag.is_some();
        assert_eq!(signed_rows[0].signed, expect_signed);
        let commit = copy.get_by_prefix(&sha256_hex(&bytes[2])).unwrap();
        assert_eq!(commit.kept_full.is_some(), flag == Some("--with-kept"));
        let o = run(&["records", "verify", "--db", db(&target)]);
        assert_eq!(code(&o), 0, "{}", stdout(&o));
    }
}

#[test]
fn import_of_a_bad_line_imports_nothing() {
    let (dir, path, _bytes) = populated();
    let export = run(&["records", "export", "--db", db(&path)]).stdout;
    let mut text = String::from_utf8(export).unwrap();
    text.push_str("{\"schema\":\"jidec-path-v1\", \"base\": 1}\n");
    let file = dir.path().join("bad.jsonl");
    std::fs::write(&file, text).unwrap();
    let target = dir.path().join("t.db");
    let o = import(&file, &target);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("line 5"), "{}", stderr(&o));
    assert!(
        !target.exists(),
        "an import that brings nothing leaves no empty store behind"
    );
    // Into an existing store: nothing changes there either.
    let o = import(&file, &path);
    assert_eq!(code(&o), 2);
    assert_eq!(Store::open_read_only(&path).unwrap().count().unwrap(), 4);
}

#[test]
fn verify_clean_store_and_each_tamper() {
    // Clean.
    let (_d, path, _) = populated();
    let o = run(&["records", "verify", "--db", db(&path)]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(stdout(&o).starts_with("ok: 4 records verified (3 signed)"));
    assert!(
        o.stderr.is_empty(),
        "no progress bar when stderr is not a terminal"
    );

    type Tamper = fn(&rusqlite::Connection);
    let cases: [(&str, Tamper, &[&str]); 4] = [
        (
            "edit bytes",
            |c| {
                assert_eq!(edit_stored_bytes(c, 2, "agent.example", "agent.exampl3"), 1);
            },
            &["row 2: bytes-altered"],
        ),
        (
            "delete middle row",
            |c| {
                c.execute("DELETE FROM records WHERE id = 2", []).unwrap();
            },
            &["row 3: missing-or-reordered", "row 3: row-missing"],
        ),
        (
            "swap two rows",
            |c| swap_rows(c, 1, 2),
            &["row 1: missing-or-reordered", "row 2: missing-or-reordered"],
        ),
        (
            "flip a signature",
            |c| {
                c.execute(
                    "UPDATE records SET signature_b64 = 'A' || substr(signature_b64, 2) WHERE id = 4 AND substr(signature_b64, 1, 1) != 'A'",
                    [],
                )
                .unwrap();
                c.execute(
                    "UPDATE records SET signature_b64 = 'B' || substr(signature_b64, 2) WHERE id = 4 AND substr(signature_b64, 1, 1) = 'A'",
                    [],
                )
                .unwrap();
            },
            &["row 4: signature-invalid"],
        ),
    ];
    for (name, tamper, expected) in cases {
        let (_d, path, _) = populated();
        tamper(&tamper_conn(&path));
        let o = run(&["records", "verify", "--db", db(&path)]);
        let out = stdout(&o);
        assert_eq!(code(&o), 1, "{name}: {out}");
        for e in expected {
            assert!(out.contains(e), "{name}: expected {e:?} in\n{out}");
        }
        assert!(out.lines().last().unwrap().starts_with("FAILED:"), "{out}");
        if name == "flip a signature" {
            // One of each, said in the singular.
            assert!(
                out.lines()
                    .last()
                    .unwrap()
                    .starts_with("FAILED: 1 problem at 1 row, out of"),
                "{out}"
            );
        }
    }
}

#[test]
fn sqlite3_cli_tamper_is_detected_when_available() {
    // The issue's own recipe: an operator with the sqlite3 shell. Skipped where it is absent.
    if Command::new("sqlite3").arg("-version").output().is_err() {
        eprintln!("sqlite3 not installed; covered by the raw SQL cases");
        return;
    }
    let (_d, path, _) = populated();
    let o = Command::new("sqlite3")
        .arg(&path)
        .arg("DROP TRIGGER records_insert_only_delete; DELETE FROM records WHERE id = 3;")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&["records", "verify", "--db", db(&path)]);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("row 4: row-missing"), "{}", stdout(&o));
}

#[test]
fn verify_file_checks_exact_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let k = key(4);
    let bytes = record_bytes(1, true);
    let file = dir.path().join("walk.json");
    std::fs::write(&file, &bytes).unwrap();
    let sig = sign_b64(&k, &bytes);
    let pk = public_key_b64(&k);
    let f = file.to_str().unwrap();

    let o = run(&[
        "records",
        "verify-file",
        f,
        "--signature",
        &sig,
        "--public-key",
        &pk,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with(&sha256_hex(&bytes)));
    assert!(stdout(&o).contains("signature valid"));

    // One byte more (a trailing newline) is a different document.
    let mut nl = bytes.clone();
    nl.push(b'\n');
    std::fs::write(&file, &nl).unwrap();
    let o = run(&[
        "records",
        "verify-file",
        f,
        "--signature",
        &sig,
        "--public-key",
        &pk,
    ]);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("signature INVALID"));
    assert!(stdout(&o).starts_with(&sha256_hex(&nl)));

    let o = run(&[
        "records",
        "verify-file",
        f,
        "--signature",
        "abc",
        "--public-key",
        &pk,
    ]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("signature is not standard padded base64"));
    let missing = dir.path().join("nope.json");
    let o = run(&[
        "records",
        "verify-file",
        missing.to_str().unwrap(),
        "--signature",
        &sig,
        "--public-key",
        &pk,
    ]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cannot read"));
}

#[test]
fn usage_and_missing_database_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.db");
    let o = run(&["records", "list", "--db", db(&missing)]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("no database at"), "{}", stderr(&o));
    assert!(!missing.exists(), "auditor commands never create a store");
    // Neither --db nor STATE_DIRECTORY.
    let o = run(&["records", "verify"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("--db"), "{}", stderr(&o));
    // STATE_DIRECTORY is honoured (first of a colon-separated list).
    let state = dir.path().join("state");
    Store::open(&state.join("walker.db"))
        .unwrap()
        .insert_record(&unsigned(record_bytes(1, true)))
        .unwrap();
    let o = Command::new(BIN)
        .args(["records", "list"])
        .env(
            "STATE_DIRECTORY",
            format!("{}:/nonexistent", state.display()),
        )
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 1);
}

#[test]
fn newer_schema_is_refused_by_the_cli() {
    let (_d, path, _) = populated();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA user_version = 42")
        .unwrap();
    for args in [
        vec!["records", "list", "--db", db(&path)],
        vec!["records", "verify", "--db", db(&path)],
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 2);
        let err = stderr(&o);
        let known = format!("up to {}", conduct_walker::store::SCHEMA_VERSION);
        assert!(
            err.contains("schema version 42") && err.contains(&known),
            "{err}"
        );
    }
}

#[test]
fn auditor_commands_do_not_write() {
    let (_d, path, bytes) = populated();
    // Close every writer, checkpointing the WAL, then fingerprint the file.
    let before = std::fs::read(&path).unwrap();
    let sha = sha256_hex(&bytes[0]);
    for args in [
        vec!["records", "list", "--db", db(&path)],
        vec!["records", "show", &sha[..6], "--db", db(&path)],
        vec!["records", "raw", &sha[..6], "--db", db(&path)],
        vec!["records", "export", "--db", db(&path)],
        vec!["records", "verify", "--db", db(&path)],
    ] {
        assert_eq!(code(&run(&args)), 0, "{args:?}");
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn list_and_verify_while_a_writer_inserts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("walker.db");
    let writer = Store::open(&path).unwrap();
    writer
        .insert_record(&unsigned(record_bytes(0, true)))
        .unwrap();
    const N: u64 = 60;
    let writer_path = path.clone();
    let handle = std::thread::spawn(move || {
        // A second writer connection in this process, inserting while the CLI reads.
        let w = Store::open(&writer_path).unwrap();
        let k = key(2);
        for i in 1..=N {
            w.insert_record(&signed(record_bytes(i, i % 2 == 0), &k))
                .unwrap();
        }
    });
    let mut last = 0;
    let mut rounds = 0;
    loop {
        let finished = handle.is_finished();
        let o = run(&["records", "list", "--db", db(&path)]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let n = stdout(&o).lines().count();
        assert!(n >= last, "rows never disappear: {n} after {last}");
        assert!(n as u64 <= N + 1);
        last = n;
        let o = run(&["records", "verify", "--db", db(&path)]);
        assert_eq!(
            code(&o),
            0,
            "a consistent snapshot verifies: {}",
            stdout(&o)
        );
        rounds += 1;
        if finished {
            break;
        }
    }
    handle.join().unwrap();
    assert!(rounds >= 1);
    assert_eq!(last as u64, N + 1);

    // A writer holding the write lock mid-transaction does not block readers.
    writer
        .connection()
        .execute_batch("BEGIN IMMEDIATE")
        .unwrap();
    let o = run(&["records", "list", "--db", db(&path)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count() as u64, N + 1);
    writer.connection().execute_batch("ROLLBACK").unwrap();
}

/// Every read-only auditor command, over `path`, run as `uid` when given.
fn audit_commands(path: &Path, first_sha: &str, uid: Option<u32>) -> Vec<(String, Output)> {
    use std::os::unix::process::CommandExt;
    let commands: [&[&str]; 5] = [
        &["records", "list"],
        &["records", "show", &first_sha[..12]],
        &["records", "raw", &first_sha[..12]],
        &["records", "verify"],
        &["records", "export", "--with-signatures"],
    ];
    commands
        .iter()
        .map(|args| {
            let mut cmd = Command::new(BIN);
            cmd.args(*args)
                .arg("--db")
                .arg(path)
                .env_remove("STATE_DIRECTORY");
            if let Some(uid) = uid {
                cmd.uid(uid).gid(uid);
            }
            (args.join(" "), cmd.output().unwrap())
        })
        .collect()
}

#[test]
fn auditor_commands_leave_no_files_beside_the_store() {
    let (dir, path, bytes) = populated();
    let before: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    for (name, out) in audit_commands(&path, &sha256_hex(&bytes[0]), None) {
        assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
    }
    let after: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(after.len(), before.len(), "{after:?}");
    assert_eq!(after, vec!["walker.db".to_string()]);
}

#[test]
fn an_auditor_without_write_permission_reads_a_store_on_a_read_only_directory() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, path, bytes) = populated();
    // Readable by everyone, writable by no one but root; the commands run as `nobody` when
    // the tests run as root (as in CI), else as the user running them, who cannot write it.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let uid = (unsafe { libc::geteuid() } == 0).then_some(65534);
    let results = audit_commands(&path, &sha256_hex(&bytes[0]), uid);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for (name, out) in &results {
        assert_eq!(code(out), 0, "{name}: {}", stderr(out));
    }
    assert!(
        stdout(&results[3].1).contains("4 records"),
        "{}",
        stdout(&results[3].1)
    );
    assert_eq!(sha256_hex(&results[2].1.stdout), sha256_hex(&bytes[0]));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_store_with_an_unread_write_ahead_log_in_a_read_only_directory_says_what_to_do() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, path, bytes) = populated();
    // A writer that stays connected keeps its log (and records in it) beside the store.
    let writer = Store::open(&path).unwrap();
    writer
        .insert_record(&unsigned(record_bytes(5, true)))
        .unwrap();
    let copy_dir = tempfile::tempdir().unwrap();
    for name in ["walker.db", "walker.db-wal"] {
        std::fs::copy(dir.path().join(name), copy_dir.path().join(name)).unwrap();
    }
    drop(writer);
    let copy = copy_dir.path().join("walker.db");
    std::fs::set_permissions(copy_dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    let uid = (unsafe { libc::geteuid() } == 0).then_some(65534);
    let results = audit_commands(&copy, &sha256_hex(&bytes[0]), uid);
    std::fs::set_permissions(copy_dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (_, list) = &results[0];
    assert_eq!(code(list), 2, "{}", stderr(list));
    assert!(
        stderr(list).contains("write-ahead log") && stderr(list).contains("walker.db-wal"),
        "{}",
        stderr(list)
    );
}

#[test]
fn import_of_a_line_whose_signature_does_not_check_names_it_and_imports_nothing() {
    let (dir, path, _bytes) = populated();
    let export = run(&["records", "export", "--with-signatures", "--db", db(&path)]).stdout;
    let mut lines: Vec<String> = String::from_utf8(export)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    // Line 4 carries another key's signature over the same bytes: well formed, not valid.
    let mut line: serde_json::Value = serde_json::from_str(&lines[3]).unwrap();
    let record = line["record_canonical"].as_str().unwrap().to_string();
    line["signature_ed25519_b64"] = sign_b64(&key(77), record.as_bytes()).into();
    lines[3] = String::from_utf8(conduct_walker::canonical::to_bytes(&line)).unwrap();
    let file = dir.path().join("forged.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let target = dir.path().join("t.db");
    let o = import(&file, &target);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(err.contains("line 4") && err.contains("signature"), "{err}");
    assert!(err.contains("nothing was imported"), "{err}");
    assert!(!target.exists());
}

#[test]
fn an_import_killed_midway_leaves_a_store_that_verifies() {
    let (dir, path, _bytes) = populated();
    // 20,000 distinct records (unsigned bare lines), enough for the import to be cut off.
    let mut text = String::new();
    for i in 0..20_000u64 {
        let v = record_value(
            100 + i,
            "https://bulk.example",
            "https://bulk.example/a2a",
            i % 2 == 0,
            &walked_at(i),
        );
        text.push_str(std::str::from_utf8(&conduct_walker::canonical::to_bytes(&v)).unwrap());
        text.push('\n');
    }
    let file = dir.path().join("bulk.jsonl");
    std::fs::write(&file, text).unwrap();
    let mut outcomes = Vec::new();
    for delay_ms in [150u64, 400, 900] {
        let mut child = Command::new(BIN)
            .args([
                "records",
                "import",
                file.to_str().unwrap(),
                "--db",
                db(&path),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let killed = child.try_wait().unwrap().is_none();
        if killed {
            child.kill().unwrap(); // SIGKILL
        }
        child.wait().unwrap();
        let o = run(&["records", "verify", "--db", db(&path)]);
        assert_eq!(code(&o), 0, "after a kill at {delay_ms} ms: {}", stdout(&o));
        let count = Store::open_read_only(&path).unwrap().count().unwrap();
        assert!(
            count == 4 || count == 20_004,
            "all or nothing, found {count} records"
        );
        outcomes.push((killed, count));
    }
    assert!(
        outcomes.iter().any(|(killed, _)| *killed),
        "no import was still running when killed: {outcomes:?}"
    );
}

#[test]
fn import_takes_what_inspect_takes_and_a_refusal_names_file_line_and_shape() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("t.db");
    let file = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_str().unwrap().to_string()
    };
    let pretty = |bytes: &[u8]| {
        let v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        serde_json::to_vec_pretty(&v).unwrap()
    };
    let (one, two, three) = (
        record_bytes(1, true),
        record_bytes(2, false),
        record_bytes(3, true),
    );
    let k = key(5);
    // A pretty-printed record enters as its canonical bytes; a pretty intake body with its
    // signature and key enters signed.
    let record = file("record.json", &pretty(&one));
    let body = serde_json::json!({
        "record_canonical": String::from_utf8(two.clone()).unwrap(),
        "signature_ed25519_b64": sign_b64(&k, &two),
        "public_key_ed25519_b64": public_key_b64(&k),
    });
    let body = file("body.json", &serde_json::to_vec_pretty(&body).unwrap());
    // JSON lines whose third non-blank line is a gate verdict: the whole file is refused.
    let mut lines = three.clone();
    lines.extend_from_slice(b"\n\n");
    lines.extend_from_slice(&record_bytes(4, true));
    lines.extend_from_slice(b"\n{\"at\":\"x\",\"record_sha256\":\"ab\",\"status\":\"pass\"}\n");
    let jsonl = file("a.jsonl", &lines);
    let o = run(&[
        "records",
        "import",
        &record,
        &jsonl,
        &body,
        "--db",
        db(&target),
    ]);
    assert_eq!(
        code(&o),
        2,
        "a refused file is said by the exit: {}",
        stdout(&o)
    );
    let err = stderr(&o);
    assert!(
        err.contains(&format!("{jsonl}: line 4: a gate verdict"))
            && err.contains("records import takes jidec-path-v1 walk records or intake bodies")
            && err.contains("1 file of 3 refused"),
        "{err}"
    );
    // The files before and after the refused one are in; nothing of it is.
    let store = Store::open_read_only(&target).unwrap();
    assert_eq!(store.count().unwrap(), 2);
    assert!(store.get_by_sha256(&sha256_hex(&one)).unwrap().is_some());
    let signed = store.get_by_sha256(&sha256_hex(&two)).unwrap().unwrap();
    assert!(signed.signature_b64.is_some());
    assert!(store.get_by_sha256(&sha256_hex(&three)).unwrap().is_none());
    drop(store);
    let o = run(&["records", "verify", "--db", db(&target)]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));

    // More than layout differs (a character escaped): refused by the store's rule, named.
    let text = String::from_utf8(pretty(&three)).unwrap();
    assert!(text.contains("agent.example"));
    let escaped = file(
        "escaped.json",
        text.replace("agent.example", "agent\\u002eexample")
            .as_bytes(),
    );
    let o = run(&["records", "import", &escaped, "--db", db(&target)]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(
        err.contains(&format!("{escaped}: ")) && err.contains("not in NENRIN canonical form"),
        "{err}"
    );
    // An observation is named as one, even as a lone pretty file.
    let obs = file(
        "obs.json",
        b"{\n  \"schema\": \"nenrin-witness-observation-v1\"\n}\n",
    );
    let o = run(&["records", "import", &obs, "--db", db(&target)]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains(&format!("{obs}: a witness observation")),
        "{}",
        stderr(&o)
    );
    assert_eq!(Store::open_read_only(&target).unwrap().count().unwrap(), 2);
}

#[test]
fn verify_file_prints_both_sha256s_without_a_key_and_takes_the_key_as_inspect_does() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let k = key(6);
    let bytes = record_bytes(1, true);
    let sha = sha256_hex(&bytes);
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let pretty = dir.path().join("pretty.json");
    std::fs::write(&pretty, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let pretty_sha = sha256_hex(std::fs::read(&pretty).unwrap());
    // No signature, no key: both sha256s, the canonical one being the record's.
    let o = run(&["records", "verify-file", pretty.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with(&pretty_sha), "{out}");
    assert!(
        out.contains(&format!("{sha}  canonical (NENRIN) form, different")),
        "{out}"
    );
    assert!(out.contains("signature not checked"), "{out}");

    // The key as hex, base64url without padding, or a key_url document file.
    let canonical = dir.path().join("walk.json");
    std::fs::write(&canonical, &bytes).unwrap();
    let raw = k.verifying_key().to_bytes();
    let doc = dir.path().join("key.json");
    let doc_text = serde_json::json!({"public_key_ed25519_b64": public_key_b64(&k)});
    std::fs::write(&doc, doc_text.to_string()).unwrap();
    let sig = sign_b64(&k, &bytes);
    for key in [
        hex::encode(raw),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw),
        doc.to_str().unwrap().to_string(),
    ] {
        let args = ["records", "verify-file", canonical.to_str().unwrap()];
        let o = run(&[&args[..], &["--signature", &sig, "--public-key", &key]].concat());
        assert_eq!(code(&o), 0, "{key}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(
            out.contains("canonical (NENRIN) form, the same") && out.contains("signature valid"),
            "{out}"
        );
    }
    // A signature without a key is a usage error; a key of the wrong length names its length.
    let o = run(&[
        "records",
        "verify-file",
        canonical.to_str().unwrap(),
        "--signature",
        &sig,
    ]);
    assert_eq!(code(&o), 2);
    let o = run(&[
        "records",
        "verify-file",
        canonical.to_str().unwrap(),
        "--signature",
        &sig,
        "--public-key",
        "AAAA",
    ]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("3 bytes"), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "no half answer");
}
