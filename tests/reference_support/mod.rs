//! The published reference walker (`a2a-conduct-walk` 1.5.0 with `a2a-sdk` 1.3.0, pinned in
//! `tests/reference/requirements.txt`) as a test oracle: provisioning, running it and our
//! walker with the same inputs, and comparing their records (conduct-walk.md "How to read this").
//!
//! The reference is a black box: only its command `a2a-conduct-walk` is run, with the flags its
//! `--help` documents; its code is never read.
//!
//! - [`venv_bin`]: provisions `target/reference-venv` once (first use, or when the requirements
//!   file changed; see `provision_support`) and returns its `bin/`.
//! - [`Stage`]: a loopback HTTPS server whose handler is swapped between walks and whose
//!   responses carry one fixed `date` header, so two walkers walking one after the other see the
//!   same bytes (hyper writes the current second otherwise, and `headers_sha256` covers it).
//! - [`Inputs`], [`run_reference`], [`run_ours`]: one walk each, the same flags for both.
//! - [`compare`]: the records byte for byte after the allowed normalisation, or the first
//!   differing JSON path with both values.
#![allow(dead_code)]

#[path = "../provision_support/mod.rs"]
mod provision_support;

pub mod cards;
pub mod signed_cards;

use conduct_walker::sandbox::{Handler, HttpsServer, SandboxCa};
use serde_json::Value;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// How long one walk (either walker, one process) may take before the test gives up on it.
pub const WALK_TIMEOUT: Duration = Duration::from_secs(120);

/// The `date` every [`Stage`] response carries.
pub const FIXED_DATE: &str = "Thu, 03 Dec 2026 12:00:00 GMT";

/// `tests/reference/`: the pinned requirements and the SDK helper script.
pub fn reference_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("reference")
}

/// `target/reference-venv/bin`, provisioning the virtualenv first if needed (once per process).
pub fn venv_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let python = provision_support::python_venv(
            "reference-venv",
            &reference_dir().join("requirements.txt"),
            &["--only-binary=:all:"],
        );
        python
            .parent()
            .expect("the venv's python sits in bin/")
            .to_path_buf()
    })
}

/// The reference walker's command.
pub fn reference_walker() -> PathBuf {
    venv_bin().join("a2a-conduct-walk")
}

/// The venv's Python (for the SDK helper).
pub fn python() -> PathBuf {
    venv_bin().join("python")
}

/// Our walker's binary.
pub fn our_walker() -> &'static str {
    env!("CARGO_BIN_EXE_conduct-walker")
}

/// A loopback HTTPS server playing whatever handler was last [`Stage::set`], every response
/// with `date: FIXED_DATE`.
pub struct Stage {
    server: HttpsServer,
    current: Arc<Mutex<Handler>>,
}

impl Stage {
    /// Serve on `addr` (port 0 for any) with a leaf for `localhost`, `127.0.0.1`, `::1` and
    /// `extra_names`; 404 until a handler is set.
    pub async fn start(ca: &SandboxCa, addr: SocketAddr, extra_names: &[&str]) -> Stage {
        let not_yet: Handler =
            conduct_walker::sandbox::handler(|_| conduct_walker::sandbox::Resp::empty(404));
        let current = Arc::new(Mutex::new(not_yet));
        let playing = current.clone();
        let handler: Handler = Arc::new(move |req| {
            let h = playing.lock().expect("stage handler").clone();
            Box::pin(async move {
                let resp = h(req).await;
                if resp
                    .headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("date"))
                {
                    resp
                } else {
                    resp.with_header("date", FIXED_DATE)
                }
            })
        });
        let server = HttpsServer::start_on(addr, ca, extra_names, handler)
            .await
            .unwrap_or_else(|e| panic!("start a stage on {addr}: {e}"));
        Stage { server, current }
    }

    /// Play `handler` from the next request on.
    pub fn set(&self, handler: Handler) {
        *self.current.lock().expect("stage handler") = handler;
    }

    /// `https://<addr>`.
    pub fn origin(&self) -> String {
        self.server.base()
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }
}

/// What both walkers are given: the reference's flags, one for one.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub origin: String,
    pub endpoint: Option<String>,
    /// `mcp` or `a2a`.
    pub mode: &'static str,
    /// `1.0` or `0.3`.
    pub wire: &'static str,
    /// `full`, `hash-only` or `commitment`.
    pub privacy: &'static str,
    pub witness_name: String,
    pub vantage: String,
    pub vantage_limitation: Option<String>,
    /// `--key FILE --key-url URL` (Ed25519 PKCS#8 PEM).
    pub key: Option<(PathBuf, String)>,
}

impl Inputs {
    pub fn new(origin: &str, mode: &'static str, wire: &'static str) -> Inputs {
        Inputs {
            origin: origin.to_string(),
            endpoint: None,
            mode,
            wire,
            privacy: "full",
            witness_name: "oracle witness ✓".into(),
            vantage: "loopback, the test's own machine".into(),
            vantage_limitation: None,
            key: None,
        }
    }

    fn args(&self) -> Vec<String> {
        let mut a: Vec<String> = vec![
            "--origin".into(),
            self.origin.clone(),
            "--mode".into(),
            self.mode.into(),
            "--wire".into(),
            self.wire.into(),
            "--witness-name".into(),
            self.witness_name.clone(),
            "--vantage".into(),
            self.vantage.clone(),
            "--privacy".into(),
            self.privacy.into(),
        ];
        if let Some(e) = &self.endpoint {
            a.extend(["--endpoint".into(), e.clone()]);
        }
        if let Some(v) = &self.vantage_limitation {
            a.extend(["--vantage-limitation".into(), v.clone()]);
        }
        if let Some((key, url)) = &self.key {
            a.extend([
                "--key".into(),
                key.display().to_string(),
                "--key-url".into(),
                url.clone(),
            ]);
        }
        a
    }
}

/// What one walker wrote and said.
#[derive(Debug)]
pub struct Run {
    pub walker: &'static str,
    pub exit: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// The record file (`--out`): the full or hash-only record; for commitment privacy the
    /// record that is filed (ours writes it to `--out`; the reference's is taken from its
    /// `--submit`, see [`run_reference`]).
    pub record: Option<Vec<u8>>,
    /// Commitment privacy: the kept full record and its salt (32 bytes).
    pub kept: Option<(Vec<u8>, [u8; 32])>,
}

impl Run {
    /// The run as text, for failure messages.
    pub fn explain(&self) -> String {
        format!(
            "{} exited {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.walker,
            self.exit,
            tail(&self.stdout),
            tail(&self.stderr)
        )
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// A fixed commitment salt for the reference (`--salt-file`); ours draws its own.
pub const REFERENCE_SALT_HEX: &str =
    "5a17c0ffee5a17c0ffee5a17c0ffee5a17c0ffee5a17c0ffee5a17c0ffee5a17";

async fn run(
    walker: &'static str,
    mut command: tokio::process::Command,
) -> (Option<i32>, String, String) {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for proxy in [
        "http_proxy",
        "https_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ] {
        command.env_remove(proxy);
    }
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("start {walker}: {e} ({command:?})"));
    let out = tokio::time::timeout(WALK_TIMEOUT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{walker} did not finish within {WALK_TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("wait for {walker}: {e}"));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Walk with the reference, trusting `ca_pem` (Python's urllib reads `SSL_CERT_FILE`). For
/// commitment privacy it files with `intake` (`--submit --intake`), where the caller captures
/// the filed record: the reference writes only the kept full record and its salt to disk.
pub async fn run_reference(
    inputs: &Inputs,
    ca_pem: &Path,
    dir: &Path,
    intake: Option<&str>,
) -> Run {
    std::fs::create_dir_all(dir).expect("run dir");
    let out = dir.join("reference.json");
    let mut c = tokio::process::Command::new(reference_walker());
    c.current_dir(dir)
        .args(inputs.args())
        .arg("--out")
        .arg(&out)
        .env("SSL_CERT_FILE", ca_pem)
        .env_remove("SSL_CERT_DIR")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let salt_file = dir.join("reference-salt.hex");
    if inputs.privacy == "commitment" {
        std::fs::write(&salt_file, format!("{REFERENCE_SALT_HEX}\n")).expect("salt file");
        c.arg("--salt-file").arg(&salt_file);
        if let Some(intake) = intake {
            c.args(["--submit", "--intake", intake]);
        }
    }
    let (exit, stdout, stderr) = run("the reference walker", c).await;
    let written = std::fs::read(&out).ok();
    let (record, kept) = if inputs.privacy == "commitment" {
        let kept = written.map(|full| {
            let salt = std::fs::read_to_string(dir.join("reference.salt"))
                .unwrap_or_else(|e| panic!("the reference's salt beside its kept record: {e}"));
            (full, salt_bytes(&salt))
        });
        (None, kept)
    } else {
        (written, None)
    };
    Run {
        walker: "reference",
        exit,
        stdout,
        stderr,
        record,
        kept,
    }
}

/// Walk with our CLI (`--request-profile reference`: the reference's n3 request in mcp mode),
/// trusting `ca_pem`, admitting the loopback origin and `allow_hosts` (HOST:PORT). For commitment
/// privacy the kept record and salt are the `walk_<sha12>.json`/`.salt` beside `--out`.
pub async fn run_ours(inputs: &Inputs, ca_pem: &Path, allow_hosts: &[String], dir: &Path) -> Run {
    std::fs::create_dir_all(dir).expect("run dir");
    let ours_dir = dir.join("ours");
    std::fs::create_dir_all(&ours_dir).expect("run dir");
    let out = ours_dir.join("ours.json");
    let mut c = tokio::process::Command::new(our_walker());
    c.current_dir(&ours_dir)
        .arg("walk")
        .args(inputs.args())
        .arg("--out")
        .arg(&out)
        .args(["--request-profile", "reference", "--allow-private-network"])
        .arg("--ca-cert")
        .arg(ca_pem);
    for host in allow_hosts {
        c.args(["--allow-host", host]);
    }
    let (exit, stdout, stderr) = run("conduct-walker", c).await;
    let record = std::fs::read(&out).ok();
    let kept = if inputs.privacy == "commitment" {
        let kept_path = std::fs::read_dir(&ours_dir)
            .expect("read our run dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("walk_") && n.ends_with(".json"))
            });
        kept_path.map(|p| {
            let salt = std::fs::read_to_string(p.with_extension("salt"))
                .unwrap_or_else(|e| panic!("our salt beside {}: {e}", p.display()));
            (
                std::fs::read(&p).expect("our kept record"),
                salt_bytes(&salt),
            )
        })
    } else {
        None
    };
    Run {
        walker: "conduct-walker",
        exit,
        stdout,
        stderr,
        record,
        kept,
    }
}

fn salt_bytes(hex_text: &str) -> [u8; 32] {
    let bytes = hex::decode(hex_text.trim()).expect("a salt file holds hex");
    bytes.try_into().expect("a salt is 32 bytes")
}

/// Where two records differ after normalisation: a JSON Pointer and both values (canonical text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    pub path: String,
    pub ours: String,
    pub reference: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "at {}: ours {} | reference {}",
            if self.path.is_empty() {
                "(the whole record)"
            } else {
                &self.path
            },
            self.ours,
            self.reference
        )
    }
}

/// Placeholders of the normalised fields.
pub const NORMALISED_WALKER: &str = "<walker>";
pub const NORMALISED_HOW: &str = "<replay.how>";
pub const NORMALISED_WALKED_AT: &str = "<walked_at>";

/// The record with only what the spec lets two walkers write differently ("How to read this"
/// item 2) set to placeholders: `walker`, `replay.how`, `walked_at` (the field and its text in
/// the lines that quote it) and every `duration_ms`.
pub fn normalise(record: &Value) -> Value {
    let walked_at = record
        .get("walked_at")
        .and_then(Value::as_str)
        .filter(|w| !w.is_empty())
        .map(str::to_string);
    let mut v = record.clone();
    fn visit(v: &mut Value, walked_at: Option<&str>) {
        match v {
            Value::String(s) => {
                if let Some(w) = walked_at
                    && s.contains(w)
                {
                    *s = s.replace(w, NORMALISED_WALKED_AT);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| visit(i, walked_at)),
            Value::Object(map) => {
                for (k, item) in map.iter_mut() {
                    if k == "duration_ms" {
                        *item = Value::from(0);
                    } else {
                        visit(item, walked_at);
                    }
                }
            }
            _ => {}
        }
    }
    visit(&mut v, walked_at.as_deref());
    if let Some(map) = v.as_object_mut() {
        if map.contains_key("walker") {
            map.insert("walker".into(), Value::from(NORMALISED_WALKER));
        }
        if let Some(Value::Object(replay)) = map.get_mut("replay")
            && replay.contains_key("how")
        {
            replay.insert("how".into(), Value::from(NORMALISED_HOW));
        }
    }
    v
}

/// A record file read as the walkers' reader reads JSON, and checked to be in canonical form
/// (§4.1), so that comparing normalised values is comparing bytes.
pub fn read_record(bytes: &[u8], who: &str) -> Result<Value, Difference> {
    let fail = |why: String| Difference {
        path: String::new(),
        ours: if who == "ours" {
            why.clone()
        } else {
            "(not compared)".into()
        },
        reference: if who == "ours" {
            "(not compared)".into()
        } else {
            why
        },
    };
    let value =
        conduct_walker::json::parse_lenient(bytes).map_err(|e| fail(format!("not JSON: {e}")))?;
    let canonical = conduct_walker::canonical::to_bytes(&value);
    if canonical != bytes {
        let at = canonical
            .iter()
            .zip(bytes)
            .position(|(a, b)| a != b)
            .unwrap_or(canonical.len().min(bytes.len()));
        return Err(fail(format!(
            "not in canonical form (first differing byte at offset {at} of {})",
            bytes.len()
        )));
    }
    Ok(value)
}

/// Ours against the reference's record: `Ok` when byte-identical after [`normalise`], else the
/// first difference in canonical (code-point key) order.
pub fn compare(ours: &[u8], reference: &[u8]) -> Result<(), Difference> {
    let a = normalise(&read_record(ours, "ours")?);
    let b = normalise(&read_record(reference, "reference")?);
    if let Some(d) = first_difference(&a, &b, String::new()) {
        return Err(d);
    }
    let (ca, cb) = (
        conduct_walker::canonical::to_bytes(&a),
        conduct_walker::canonical::to_bytes(&b),
    );
    if ca != cb {
        return Err(Difference {
            path: String::new(),
            ours: shown(&a),
            reference: shown(&b),
        });
    }
    Ok(())
}

/// Canonical text of a value, cut to 400 characters.
pub fn shown(v: &Value) -> String {
    let text = conduct_walker::canonical::to_string(v);
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(400).collect();
    if chars.next().is_some() {
        format!("{head}… ({} chars)", text.chars().count())
    } else {
        head
    }
}

const ABSENT: &str = "(absent)";

/// The first place where `a` (ours) and `b` (the reference's) differ, as a JSON Pointer.
pub fn first_difference(a: &Value, b: &Value, path: String) -> Option<Difference> {
    let differ = |path: String| {
        Some(Difference {
            path,
            ours: shown(a),
            reference: shown(b),
        })
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let here = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => {
                        if let Some(d) = first_difference(u, v, here) {
                            return Some(d);
                        }
                    }
                    (u, v) => {
                        return Some(Difference {
                            path: here,
                            ours: u.map(shown).unwrap_or_else(|| ABSENT.into()),
                            reference: v.map(shown).unwrap_or_else(|| ABSENT.into()),
                        });
                    }
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_difference(u, v, format!("{path}/{i}")) {
                    return Some(d);
                }
            }
            if x.len() != y.len() {
                let i = x.len().min(y.len());
                return Some(Difference {
                    path: format!("{path}/{i}"),
                    ours: x.get(i).map(shown).unwrap_or_else(|| ABSENT.into()),
                    reference: y.get(i).map(shown).unwrap_or_else(|| ABSENT.into()),
                });
            }
            None
        }
        _ if a == b => None,
        _ => differ(path),
    }
}

/// Every place where `a` (ours) and `b` (the reference's) differ, in canonical order (leaves and
/// members present on one side only).
pub fn all_differences(a: &Value, b: &Value, path: String, out: &mut Vec<Difference>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let here = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => all_differences(u, v, here, out),
                    (u, v) => out.push(Difference {
                        path: here,
                        ours: u.map(shown).unwrap_or_else(|| ABSENT.into()),
                        reference: v.map(shown).unwrap_or_else(|| ABSENT.into()),
                    }),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for i in 0..x.len().max(y.len()) {
                let here = format!("{path}/{i}");
                match (x.get(i), y.get(i)) {
                    (Some(u), Some(v)) => all_differences(u, v, here, out),
                    (u, v) => out.push(Difference {
                        path: here,
                        ours: u.map(shown).unwrap_or_else(|| ABSENT.into()),
                        reference: v.map(shown).unwrap_or_else(|| ABSENT.into()),
                    }),
                }
            }
        }
        _ if a == b => {}
        _ => out.push(Difference {
            path,
            ours: shown(a),
            reference: shown(b),
        }),
    }
}

/// [`all_differences`] of two record files after [`normalise`].
pub fn differences(ours: &[u8], reference: &[u8]) -> Result<Vec<Difference>, Difference> {
    let a = normalise(&read_record(ours, "ours")?);
    let b = normalise(&read_record(reference, "reference")?);
    let mut out = Vec::new();
    all_differences(&a, &b, String::new(), &mut out);
    Ok(out)
}

/// How a compared case came out when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identical {
    Yes,
    /// Differs exactly as a stated, checked divergence says (the reason).
    ExceptAsStated(&'static str),
}

/// One compared case, for the summary a test prints and asserts on.
#[derive(Debug)]
pub struct Outcome {
    pub case: String,
    pub result: Result<Identical, String>,
}

/// Print every outcome and panic listing the differing ones.
pub fn assert_no_differences(what: &str, outcomes: &[Outcome]) {
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| o.result.is_err()).collect();
    let stated: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| matches!(o.result, Ok(Identical::ExceptAsStated(_))))
        .collect();
    for o in &stated {
        if let Ok(Identical::ExceptAsStated(why)) = o.result {
            eprintln!("{}: differs as stated: {why}", o.case);
        }
    }
    eprintln!(
        "{what}: {} compared, {} identical, {} differ as stated, {} differ",
        outcomes.len(),
        outcomes.len() - failed.len() - stated.len(),
        stated.len(),
        failed.len()
    );
    if !failed.is_empty() {
        let list: Vec<String> = failed
            .iter()
            .map(|o| format!("- {}: {}", o.case, o.result.as_ref().unwrap_err()))
            .collect();
        panic!(
            "{what}: {} of {} differ from the reference\n{}",
            failed.len(),
            outcomes.len(),
            list.join("\n")
        );
    }
}

/// What a canonicaliser made of one card text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SdkForm {
    /// The form's UTF-8 bytes.
    Form(Vec<u8>),
    /// The card is JSON but has no form (the SDK refuses to parse it into an AgentCard).
    Refused(String),
    /// The text is not JSON to Python's reader (or ours).
    NotJson(String),
}

impl SdkForm {
    /// Whether two outcomes agree: the same bytes, or both without a form for the same cause
    /// class (the texts of a refusal are each side's own).
    pub fn agrees(&self, other: &SdkForm) -> bool {
        match (self, other) {
            (SdkForm::Form(a), SdkForm::Form(b)) => a == b,
            (SdkForm::Refused(_), SdkForm::Refused(_)) => true,
            (SdkForm::NotJson(_), SdkForm::NotJson(_)) => true,
            _ => false,
        }
    }

    /// A short class of the outcome, for counting differences by kind.
    pub fn class(&self) -> String {
        match self {
            SdkForm::Form(b) if b.as_slice() == b"null" => "the form null".into(),
            SdkForm::Form(b) if b.as_slice() == b"{}" => "the form {}".into(),
            SdkForm::Form(_) => "a form".into(),
            SdkForm::NotJson(_) => "not JSON".into(),
            SdkForm::Refused(why) => {
                let head = why.split([':', '(']).next().unwrap_or(why);
                // "invalid card: wrong scalar type at <pointer>: <what>" → "<what>".
                let head = if head.starts_with("ParseError") {
                    // The innermost cause, without the field path or the value quoted.
                    let inner = why.rsplit("field: ").next().unwrap_or(why);
                    let inner = inner.split(" at ").next().unwrap_or(inner);
                    let inner = inner.split(" which is ").next().unwrap_or(inner);
                    format!("ParseError: {}", inner.chars().take(90).collect::<String>())
                } else if head.starts_with("invalid card") {
                    why.splitn(3, ": ").nth(2).unwrap_or(why).to_string()
                } else {
                    head.to_string()
                };
                format!("no form ({})", head.trim())
            }
        }
    }

    pub fn shown(&self) -> String {
        match self {
            SdkForm::Form(b) => format!("form {}", String::from_utf8_lossy(b)),
            SdkForm::Refused(why) => format!("no form ({why})"),
            SdkForm::NotJson(why) => format!("not JSON ({why})"),
        }
    }
}

/// Our `a2a-sdk-proto` form of a card text, exactly as the walk computes it (conduct-walk.md
/// §4.3 C.2): the text read as the reference reads a card, then `walk_block::sdk_form`.
pub fn our_sdk_form(text: &[u8]) -> SdkForm {
    let doc = match conduct_walker::json::read(text, conduct_walker::json::ReadOptions::LENIENT) {
        Ok(doc) => doc,
        Err(e) => return SdkForm::NotJson(e.to_string()),
    };
    let root = doc.root();
    if !root.is_object() {
        return SdkForm::Refused("not an object".into());
    }
    match conduct_walker::card_signature::walk_block::sdk_form(root) {
        Some(form) => SdkForm::Form(form.into_bytes()),
        None => SdkForm::Refused("the walk computes no form".into()),
    }
}

/// The SDK's side of the differential: one `tests/reference/sdk_canonical.py` process that is
/// fed card texts on a writer thread while the caller reads the answers in order.
pub struct SdkCanonicaliser {
    child: std::process::Child,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl SdkCanonicaliser {
    /// Start the helper and a thread writing every text `texts` yields (as hex lines).
    pub fn start(texts: impl Iterator<Item = Vec<u8>> + Send + 'static) -> SdkCanonicaliser {
        use std::io::{BufRead, Write};
        let mut child = std::process::Command::new(python())
            .arg(reference_dir().join("sdk_canonical.py"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("start sdk_canonical.py: {e}"));
        let stdin = child.stdin.take().expect("piped stdin");
        let writer = std::thread::spawn(move || {
            let mut w = std::io::BufWriter::with_capacity(1 << 20, stdin);
            for text in texts {
                if w.write_all(hex::encode(&text).as_bytes()).is_err()
                    || w.write_all(b"\n").is_err()
                {
                    return;
                }
            }
            let _ = w.flush();
        });
        let lines = std::io::BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        SdkCanonicaliser {
            child,
            lines,
            writer: Some(writer),
        }
    }

    /// The SDK's answer for the next text.
    pub fn next_form(&mut self) -> SdkForm {
        let line = self
            .lines
            .next()
            .expect("sdk_canonical.py ended early (its stderr is above)")
            .expect("read sdk_canonical.py");
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("sdk_canonical.py wrote {line:?}: {e}"));
        if let Some(h) = v.get("form_hex").and_then(Value::as_str) {
            return SdkForm::Form(hex::decode(h).expect("hex form"));
        }
        if let Some(why) = v.get("refused").and_then(Value::as_str) {
            return SdkForm::Refused(why.to_string());
        }
        SdkForm::NotJson(v["not_json"].as_str().unwrap_or("?").to_string())
    }
}

impl Drop for SdkCanonicaliser {
    fn drop(&mut self) {
        // Kill first: a writer blocked on a full pipe then fails and ends, so the join cannot hang.
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(w) = self.writer.take()
            && !std::thread::panicking()
        {
            let _ = w.join();
        }
    }
}
