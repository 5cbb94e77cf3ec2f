//! Task binding (conduct-walk.md §5.1, `--bind-task`): after an a2a-mode walk whose n3 answer
//! carried an A2A Task, an observation that binds that task to the NENRIN task-delegation ledger
//! (`POST <ledger>/witness/task`). It never changes the walk record.
//!
//! Pure: no I/O, no clock, no randomness. The caller passes the time (`observed_at`) and both
//! keys: W, the walk's own signing key, and P, a key made fresh for this one binding (never the
//! record's key: P stands for the requester, a different party from the witness).
//!
//! Two byte forms, neither of them the record's (§4.1, `crate::canonical`) by definition, though
//! the first one writes the same bytes:
//! - what is hashed and signed: keys sorted by code point at every level, no whitespace, strings
//!   and numbers as Python's `json.dumps(ensure_ascii=False)` writes them ([`canonical`]);
//! - what is sent: Python's default `json.dumps(observation)`, keys in insertion order, ASCII
//!   escapes, separators `", "` and `": "` ([`Binding::body`]).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Where observations go unless the operator names another ledger (`--task-ledger`).
pub const DEFAULT_TASK_LEDGER: &str = "https://ledger.horizonshield.dev/witness/task";
/// The reference's `user-agent` on the binding's POST.
pub const USER_AGENT: &str = "HORIZON-SHIELD-NENRIN/1.0 (task-delegation-bind-v0)";
/// `consent[].sig` signs this purpose (record-privacy-v1).
pub const CONSENT_PURPOSE: &str = "nenrin-task-publication-consent-v0";
/// `consent[].sig` signs this publication level: B is a public https origin.
pub const CONSENT_PUBLICATION: &str = "public";
/// The multicodec prefix of an Ed25519 public key (varint of 0xed).
const ED25519_MULTICODEC: [u8; 2] = [0xed, 0x01];
const DID_KEY_PREFIX: &str = "did:key:z";
/// How much of an answer that is not JSON is kept (`{"raw": …}`), in characters.
pub const RAW_ANSWER_CHARS: usize = 500;

/// `did:key` of an Ed25519 public key: `did:key:z` + base58btc(0xED 0x01 ‖ raw 32 bytes), the
/// Bitcoin alphabet (the `bs58` crate's default), leading zero bytes written as `1`.
pub fn did_key(key: &VerifyingKey) -> String {
    let mut bytes = Vec::with_capacity(34);
    bytes.extend_from_slice(&ED25519_MULTICODEC);
    bytes.extend_from_slice(key.as_bytes());
    format!("{DID_KEY_PREFIX}{}", bs58::encode(bytes).into_string())
}

/// The Ed25519 public key a `did:key` names, or why it names none (a ledger reads W and P this
/// way to check their signatures).
pub fn key_of_did(did: &str) -> Result<VerifyingKey, String> {
    let encoded = did
        .strip_prefix(DID_KEY_PREFIX)
        .ok_or_else(|| format!("{did:?} is not a did:key in base58btc (did:key:z…)"))?;
    let bytes = bs58::decode(encoded)
        .into_vec()
        .map_err(|e| format!("{did:?}: not base58btc: {e}"))?;
    let raw = bytes
        .strip_prefix(&ED25519_MULTICODEC)
        .ok_or_else(|| format!("{did:?} does not name an Ed25519 key (multicodec 0xed 0x01)"))?;
    let raw: [u8; 32] = raw
        .try_into()
        .map_err(|_| format!("{did:?}: an Ed25519 key is 32 bytes, this is {}", raw.len()))?;
    VerifyingKey::from_bytes(&raw).map_err(|e| format!("{did:?}: not an Ed25519 point: {e}"))
}

/// Why a walk binds no task: each is the one-line "skipped" message of §5.1, and nothing is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// Only an A2A walk can return an A2A Task.
    NotA2a,
    /// W signs the observation: without the walk's signing key there is no witness.
    NoSigningKey,
    /// n3 was not sent, did not answer 200, or its answer is not JSON.
    NoReply,
    /// n3's JSON-RPC `result` is not a task (a message-shaped answer binds nothing).
    NotATask,
    /// The task has no non-empty string `id`.
    NoTaskId,
    /// The task id holds a lone surrogate escape: no UTF-8 text can carry it, so no canonical
    /// form exists to sign.
    TaskIdNotText,
    /// R1: the witness must differ from the requester and from the walked origin.
    SameParty(&'static str),
}

impl Skip {
    /// The stored and printed reason (after "task binding skipped: ").
    pub fn reason(&self) -> String {
        match self {
            Skip::NotA2a => "the walk is not in a2a mode (only an A2A agent returns an A2A Task)".into(),
            Skip::NoSigningKey => "no signing key: the witness (W) signs the observation, so binding needs --key".into(),
            Skip::NoReply => "n3 gave no JSON answer with status 200, so there is no task to bind".into(),
            Skip::NotATask => "n3's JSON-RPC result holds no task (A2A 1.0: result.task an object; 0.3: result.kind \"task\"); a message-shaped answer binds nothing".into(),
            Skip::NoTaskId => "the task returned has no non-empty string id".into(),
            Skip::TaskIdNotText => "the task id holds a lone surrogate escape, which no canonical UTF-8 form can carry".into(),
            Skip::SameParty(which) => format!("R1: the witness (W) must differ from {which}"),
        }
    }
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "task binding skipped: {}", self.reason())
    }
}

/// The id of the A2A Task in n3's JSON-RPC answer (§5.1 preconditions): A2A 1.0 `result.task`
/// an object, or 0.3 `result` itself with `kind == "task"`; its `id` a non-empty string.
/// `reply` is n3's message as §2.8 reads it (only a 200 answer that is JSON), or `None`.
pub fn task_id(reply: Option<crate::json::JsonRef<'_>>) -> Result<String, Skip> {
    let result = reply
        .ok_or(Skip::NoReply)?
        .get("result")
        .ok_or(Skip::NotATask)?;
    let task = match result.get("task") {
        Some(t) if t.is_object() => t,
        _ if result.get("kind").and_then(|k| k.as_str()) == Some("task") => result,
        _ => return Err(Skip::NotATask),
    };
    let id = task.get("id").ok_or(Skip::NoTaskId)?;
    match id.as_str() {
        Some(s) if !s.is_empty() && id.holds_lone_surrogate() => Err(Skip::TaskIdNotText),
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        _ => Err(Skip::NoTaskId),
    }
}

/// `hop`: the one delegation step observed, requester P to the walked origin B.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hop {
    pub seq: u64,
    pub from: String,
    pub to: String,
}

/// `conduct`: the walk's verdict, pointing at nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conduct {
    pub verdict: String,
    pub detail_ref: Option<String>,
}

/// `consent[]`: one hop party's signed consent to publication.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Consent {
    pub party: String,
    pub sig: String,
}

/// The observation as sent. Fields are declared in the order the reference inserts them, so
/// serde writes the body's keys in that order (the hashed and signed forms sort them anyway).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    pub task_id: String,
    pub hop: Hop,
    pub prev_evidence_id: Option<String>,
    pub conduct: Conduct,
    pub witness_id: String,
    pub observed_at: String,
    pub evidence_id: String,
    pub witness_sig: String,
    pub edge_sig: String,
    pub consent: Vec<Consent>,
}

impl Observation {
    /// The preimage: the observation without `evidence_id`, `witness_sig`, `edge_sig` and
    /// `consent` (so adding them never changes `evidence_id`).
    pub fn preimage(&self) -> Value {
        json!({
            "task_id": self.task_id,
            "hop": self.hop,
            "prev_evidence_id": self.prev_evidence_id,
            "conduct": self.conduct,
            "witness_id": self.witness_id,
            "observed_at": self.observed_at,
        })
    }

    /// What P's `edge_sig` signs: `{"task_id", "hop"}`.
    pub fn edge(&self) -> Value {
        json!({"task_id": self.task_id, "hop": self.hop})
    }

    /// What P's consent signature signs.
    pub fn consent_statement(&self) -> Value {
        json!({
            "purpose": CONSENT_PURPOSE,
            "task_id": self.task_id,
            "hop": self.hop,
            "publication": CONSENT_PUBLICATION,
        })
    }

    /// The body sent: Python's `json.dumps(observation)`.
    pub fn body(&self) -> String {
        python_dumps(self)
    }
}

/// The ledger's canonical form of a value: keys sorted by code point at every level, no
/// whitespace, Python's `ensure_ascii=False` strings and numbers. The record's canonical writer
/// (§4.1) is defined the same way, so it writes these bytes.
pub fn canonical(value: &Value) -> Vec<u8> {
    crate::canonical::to_bytes(value)
}

/// `evidence_id`: sha256 (lower-case hex) of canonical(preimage).
pub fn evidence_id(preimage: &Value) -> String {
    crate::digest::sha256_hex(canonical(preimage))
}

fn sign_b64(key: &SigningKey, value: &Value) -> String {
    STANDARD.encode(key.sign(&canonical(value)).to_bytes())
}

/// What a walk contributes to its binding.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub task_id: &'a str,
    /// B: the walked origin string as given (an https URL).
    pub origin: &'a str,
    /// The record's `verdict.outcome` (`PASS` / `FAIL`).
    pub verdict: &'a str,
    /// UTC now, `%Y-%m-%dT%H:%M:%SZ`.
    pub observed_at: &'a str,
}

/// Build and sign the observation. `witness` is W (the walk's key); `requester` is P, a key
/// made for this binding alone.
pub fn bind(
    inputs: &Inputs,
    witness: &SigningKey,
    requester: &SigningKey,
) -> Result<Observation, Skip> {
    let w = did_key(&witness.verifying_key());
    let p = did_key(&requester.verifying_key());
    if w == p {
        return Err(Skip::SameParty("the requester (P)"));
    }
    if w == inputs.origin {
        return Err(Skip::SameParty("the walked origin (B)"));
    }
    let mut obs = Observation {
        task_id: inputs.task_id.to_string(),
        hop: Hop {
            seq: 0,
            from: p.clone(),
            to: inputs.origin.to_string(),
        },
        prev_evidence_id: None,
        conduct: Conduct {
            verdict: inputs.verdict.to_string(),
            detail_ref: None,
        },
        witness_id: w,
        observed_at: inputs.observed_at.to_string(),
        evidence_id: String::new(),
        witness_sig: String::new(),
        edge_sig: String::new(),
        consent: Vec::new(),
    };
    let preimage = obs.preimage();
    obs.evidence_id = evidence_id(&preimage);
    obs.witness_sig = sign_b64(witness, &preimage);
    obs.edge_sig = sign_b64(requester, &obs.edge());
    obs.consent = vec![Consent {
        party: p,
        sig: sign_b64(requester, &obs.consent_statement()),
    }];
    Ok(obs)
}

/// What a ledger finds wrong with an observation it was sent (what §5.1 says it relies on), in
/// the order it checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Short machine name (`evidence_id_mismatch`, `witness_sig_invalid`, …).
    pub code: &'static str,
    pub why: String,
}

fn refuse(code: &'static str, why: impl Into<String>) -> Refusal {
    Refusal {
        code,
        why: why.into(),
    }
}

/// Check an observation as the ledger relies on it: W and P are Ed25519 `did:key`s, R1 holds,
/// B is an https origin, `evidence_id` is sha(canonical(preimage)), `witness_sig` is W's over
/// it, `edge_sig` is P's over `{"task_id", "hop"}`, and `consent` holds P's signature over the
/// publication statement.
pub fn check(obs: &Observation) -> Result<(), Refusal> {
    if obs.task_id.is_empty() {
        return Err(refuse("schema", "task_id must be a non-empty string"));
    }
    let w =
        key_of_did(&obs.witness_id).map_err(|e| refuse("bad_did", format!("witness_id: {e}")))?;
    let p = key_of_did(&obs.hop.from).map_err(|e| refuse("bad_did", format!("hop.from: {e}")))?;
    if obs.witness_id == obs.hop.from {
        return Err(refuse(
            "r1_same_party",
            "R1: witness_id equals hop.from (the witness cannot be the requester)",
        ));
    }
    if obs.witness_id == obs.hop.to {
        return Err(refuse(
            "r1_same_party",
            "R1: witness_id equals hop.to (the witness cannot be the walked agent)",
        ));
    }
    if crate::net::https_url(&obs.hop.to).is_err() {
        return Err(refuse(
            "schema",
            "hop.to must be the walked agent's https origin",
        ));
    }
    let preimage = obs.preimage();
    let expected = evidence_id(&preimage);
    if obs.evidence_id != expected {
        return Err(refuse(
            "evidence_id_mismatch",
            format!("evidence_id is not sha256 of the canonical preimage (expected {expected})"),
        ));
    }
    verify_b64(&w, &preimage, &obs.witness_sig)
        .map_err(|e| refuse("witness_sig_invalid", format!("witness_sig: {e}")))?;
    verify_b64(&p, &obs.edge(), &obs.edge_sig)
        .map_err(|e| refuse("edge_sig_invalid", format!("edge_sig: {e}")))?;
    let consent = obs
        .consent
        .iter()
        .find(|c| c.party == obs.hop.from)
        .ok_or_else(|| refuse("consent_missing", "consent holds no entry for hop.from (P)"))?;
    verify_b64(&p, &obs.consent_statement(), &consent.sig)
        .map_err(|e| refuse("consent_invalid", format!("consent of hop.from: {e}")))?;
    Ok(())
}

fn verify_b64(key: &VerifyingKey, value: &Value, sig_b64: &str) -> Result<(), String> {
    let bytes = STANDARD
        .decode(sig_b64)
        .map_err(|e| format!("not standard base64: {e}"))?;
    let sig = Signature::from_slice(&bytes)
        .map_err(|_| format!("an Ed25519 signature is 64 bytes, this is {}", bytes.len()))?;
    key.verify(&canonical(value), &sig)
        .map_err(|_| "does not verify over the canonical form".to_string())
}

/// A ledger's answer as kept: its JSON body, or `{"raw": <first 500 characters>}` when the
/// body is not a JSON object (a ledger answers objects; anything else is shown as its text, so
/// every face reads one shape).
pub fn kept_answer(body: &[u8]) -> Value {
    match crate::json::bounded::lenient(crate::json::bounded::Input::TaskLedgerAnswer, body) {
        Ok(answer @ Value::Object(_)) => answer,
        _ => raw_answer(body),
    }
}

/// `{"raw": <first 500 characters>}` of an answer (bytes that are not UTF-8 read as U+FFFD).
pub fn raw_answer(body: &[u8]) -> Value {
    let text = String::from_utf8_lossy(body);
    json!({"raw": text.chars().take(RAW_ANSWER_CHARS).collect::<String>()})
}

/// A stranger's text (a task id, a ledger's answer) made safe for a terminal or a log line:
/// control characters, C1 and DEL included, escaped as `\u{..}`; nothing cut.
pub fn for_terminal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// Python's default `json.dumps(value)`: keys in the order given, `", "` and `": "`, and every
/// character outside printable ASCII escaped as `\uXXXX` (`ensure_ascii=True`).
pub fn python_dumps<T: Serialize + ?Sized>(value: &T) -> String {
    crate::json::ascii_text(value, PythonDefault)
}

/// serde_json's compact formatter with Python's default separators and `ensure_ascii` escaping.
struct PythonDefault;

impl serde_json::ser::Formatter for PythonDefault {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }

    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        crate::ledger::text::AsciiFormatter.write_string_fragment(w, fragment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vectors computed independently with CPython 3.11 (`json.dumps`, a base58 written from the
    // alphabet, `cryptography` 48 Ed25519, which is deterministic), keys from seeds [1; 32] (W)
    // and [2; 32] (P), origin https://agent.example, verdict PASS, 2026-12-01T12:00:00Z.
    const W_DID: &str = "did:key:z6Mkon3Necd6NkkyfoGoHxid2znGc59LU3K7mubaRcFbLfLX";
    const P_DID: &str = "did:key:z6Mko9hTggMwjSTEaJaPUfE6tqcy2xvU6BnNq3e3o8qVBiyH";

    fn keys() -> (SigningKey, SigningKey) {
        (
            SigningKey::from_bytes(&[1; 32]),
            SigningKey::from_bytes(&[2; 32]),
        )
    }

    fn inputs(task_id: &str) -> Inputs<'_> {
        Inputs {
            task_id,
            origin: "https://agent.example",
            verdict: "PASS",
            observed_at: "2026-12-01T12:00:00Z",
        }
    }

    #[test]
    fn did_key_is_multicodec_ed25519_in_base58btc_and_reads_back() {
        let (w, p) = keys();
        assert_eq!(did_key(&w.verifying_key()), W_DID);
        assert_eq!(did_key(&p.verifying_key()), P_DID);
        // Every Ed25519 did:key starts z6Mk (the 0xed 0x01 prefix).
        assert!(W_DID.starts_with("did:key:z6Mk"));
        assert_eq!(key_of_did(W_DID).unwrap(), w.verifying_key());
        for bad in [
            "did:key:6Mkon3Necd6NkkyfoGoHxid2znGc59LU3K7mubaRcFbLfLX",
            "did:web:example.org",
            "did:key:z0OIl",
            // base58 of 0x12 0x00 ‖ 32 bytes: another multicodec.
            "did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme",
        ] {
            assert!(key_of_did(bad).is_err(), "{bad}");
        }
        // One byte short of a key.
        let short = format!(
            "did:key:z{}",
            bs58::encode([0xed, 0x01, 7, 7]).into_string()
        );
        assert!(key_of_did(&short).unwrap_err().contains("32 bytes"));
    }

    #[test]
    fn the_observation_matches_python_byte_for_byte() {
        let (w, p) = keys();
        let obs = bind(&inputs("task-1"), &w, &p).unwrap();
        assert_eq!(
            String::from_utf8(canonical(&obs.preimage())).unwrap(),
            r#"{"conduct":{"detail_ref":null,"verdict":"PASS"},"hop":{"from":"did:key:z6Mko9hTggMwjSTEaJaPUfE6tqcy2xvU6BnNq3e3o8qVBiyH","seq":0,"to":"https://agent.example"},"observed_at":"2026-12-01T12:00:00Z","prev_evidence_id":null,"task_id":"task-1","witness_id":"did:key:z6Mkon3Necd6NkkyfoGoHxid2znGc59LU3K7mubaRcFbLfLX"}"#
        );
        assert_eq!(
            obs.evidence_id,
            "55118a9be8fe8c04039074257188857840a01ec18085d50014f67f9a40e688e2"
        );
        assert_eq!(
            obs.witness_sig,
            "wTc2GulAGzgDXUTJkoCkEy7tbdyT3jqTY52W/G92jthH60DmIHJqgHL9F+T30hxPMrx4V2yN+oeZLHhDBG4zAg=="
        );
        assert_eq!(
            obs.edge_sig,
            "6d+ORf+ydQ/h+UwsrGKMVoOOOCZnSaWdWATsYBqI4U3RtnjFfDt/8NqhMTF26JP8yRCQt53Ku+tOaYAJyfsdAg=="
        );
        assert_eq!(
            obs.consent,
            [Consent {
                party: P_DID.into(),
                sig: "pPhV04wFXjmV7/jKMeitMeXsBqZ+ywBrjDF2zPJqu8fwHh2x+K92m3c49tbqOfUVp5De0YcK9lw1ncW9qjxdBA==".into()
            }]
        );
        assert_eq!(
            obs.body(),
            r#"{"task_id": "task-1", "hop": {"seq": 0, "from": "did:key:z6Mko9hTggMwjSTEaJaPUfE6tqcy2xvU6BnNq3e3o8qVBiyH", "to": "https://agent.example"}, "prev_evidence_id": null, "conduct": {"verdict": "PASS", "detail_ref": null}, "witness_id": "did:key:z6Mkon3Necd6NkkyfoGoHxid2znGc59LU3K7mubaRcFbLfLX", "observed_at": "2026-12-01T12:00:00Z", "evidence_id": "55118a9be8fe8c04039074257188857840a01ec18085d50014f67f9a40e688e2", "witness_sig": "wTc2GulAGzgDXUTJkoCkEy7tbdyT3jqTY52W/G92jthH60DmIHJqgHL9F+T30hxPMrx4V2yN+oeZLHhDBG4zAg==", "edge_sig": "6d+ORf+ydQ/h+UwsrGKMVoOOOCZnSaWdWATsYBqI4U3RtnjFfDt/8NqhMTF26JP8yRCQt53Ku+tOaYAJyfsdAg==", "consent": [{"party": "did:key:z6Mko9hTggMwjSTEaJaPUfE6tqcy2xvU6BnNq3e3o8qVBiyH", "sig": "pPhV04wFXjmV7/jKMeitMeXsBqZ+ywBrjDF2zPJqu8fwHh2x+K92m3c49tbqOfUVp5De0YcK9lw1ncW9qjxdBA=="}]}"#
        );
        assert_eq!(check(&obs), Ok(()));
    }

    /// Non-ASCII, quotes, a backslash and an astral character: raw in the signed form, escaped
    /// (astral as a surrogate pair) in the body.
    #[test]
    fn a_task_id_beyond_ascii_is_raw_when_signed_and_escaped_when_sent() {
        let (w, p) = keys();
        let id = "tâche \"é\" 😀 \\n";
        let obs = bind(&inputs(id), &w, &p).unwrap();
        assert!(
            String::from_utf8(canonical(&obs.preimage()))
                .unwrap()
                .contains(r#""task_id":"tâche \"é\" 😀 \\n""#)
        );
        assert_eq!(
            obs.evidence_id,
            "36eb8df9bbea4c399a69c4e4bdd02911fa35975112745784c87f267ea91af375"
        );
        assert_eq!(
            obs.witness_sig,
            "0ZpyIiSMf6MLC+c9viLtp+bQEVVUP7Pq/AJgybmp1GZX1PjBfcnY8AY9Ecc4sTLsH8sizzSod8ena/i1Vv/4Bw=="
        );
        assert_eq!(
            obs.edge_sig,
            "tvQfmJ7IMQTDByEOKBTheshqjwPx9p7393hE1WOsI6w3G+2MKKjbSSIVk5HtUebFnXpran3zNLjiNkcEJfhACw=="
        );
        assert_eq!(
            obs.consent[0].sig,
            "svlnOc3+4Rsa2tEJnp4a+nmtekp8yMgm/yjDnTqZtdy6le7NOOINA6wxafRb3sFax2kIZnSdUQZjMETkTNwyCQ=="
        );
        assert!(
            obs.body()
                .starts_with(r#"{"task_id": "t\u00e2che \"\u00e9\" \ud83d\ude00 \\n", "hop": "#)
        );
        // The body reads back to the same observation.
        let back: Observation = serde_json::from_str(&obs.body()).unwrap();
        assert_eq!(back, obs);
    }

    #[test]
    fn adding_signatures_and_consent_never_changes_the_evidence_id() {
        let (w, p) = keys();
        let obs = bind(&inputs("t"), &w, &p).unwrap();
        let mut stripped = obs.clone();
        stripped.witness_sig.clear();
        stripped.edge_sig.clear();
        stripped.consent.clear();
        assert_eq!(evidence_id(&stripped.preimage()), obs.evidence_id);
    }

    #[test]
    fn r1_the_witness_is_neither_the_requester_nor_the_origin() {
        let (w, _) = keys();
        assert_eq!(
            bind(&inputs("t"), &w, &w.clone()),
            Err(Skip::SameParty("the requester (P)"))
        );
        let (w2, p) = keys();
        let own = did_key(&w2.verifying_key());
        let i = Inputs {
            origin: &own,
            ..inputs("t")
        };
        assert_eq!(
            bind(&i, &w2, &p),
            Err(Skip::SameParty("the walked origin (B)"))
        );
    }

    /// Each thing a ledger relies on, broken once: each is refused with its own code.
    #[test]
    fn check_refuses_each_broken_part() {
        let (w, p) = keys();
        let good = bind(&inputs("task-1"), &w, &p).unwrap();
        let other = SigningKey::from_bytes(&[3; 32]);
        let case = |f: &dyn Fn(&mut Observation)| {
            let mut o = good.clone();
            f(&mut o);
            check(&o).map_err(|r| r.code)
        };
        assert_eq!(case(&|_| {}), Ok(()));
        assert_eq!(
            case(&|o| o.task_id = "task-2".into()),
            Err("evidence_id_mismatch")
        );
        assert_eq!(
            case(&|o| o.observed_at = "2026-12-01T12:00:01Z".into()),
            Err("evidence_id_mismatch")
        );
        assert_eq!(case(&|o| o.witness_id = "did:web:x".into()), Err("bad_did"));
        assert_eq!(
            case(&|o| o.hop.from = o.witness_id.clone()),
            Err("r1_same_party")
        );
        assert_eq!(
            case(&|o| o.hop.to = o.witness_id.clone()),
            Err("r1_same_party")
        );
        assert_eq!(
            case(&|o| o.hop.to = "http://agent.example".into()),
            Err("schema")
        );
        assert_eq!(case(&|o| o.task_id.clear()), Err("schema"));
        // A valid signature by another key.
        let forged = sign_b64(&other, &good.preimage());
        assert_eq!(
            case(&|o| o.witness_sig = forged.clone()),
            Err("witness_sig_invalid")
        );
        assert_eq!(
            case(&|o| o.witness_sig = "not base64!".into()),
            Err("witness_sig_invalid")
        );
        assert_eq!(
            case(&|o| o.edge_sig = o.witness_sig.clone()),
            Err("edge_sig_invalid")
        );
        assert_eq!(case(&|o| o.consent.clear()), Err("consent_missing"));
        assert_eq!(
            case(&|o| o.consent[0].party = W_DID.into()),
            Err("consent_missing")
        );
        assert_eq!(
            case(&|o| o.consent[0].sig = o.edge_sig.clone()),
            Err("consent_invalid")
        );
    }

    fn reply(text: &str) -> crate::json::Doc {
        crate::json::read(text.as_bytes(), crate::json::ReadOptions::LENIENT).unwrap()
    }

    #[test]
    fn the_task_is_found_in_either_wire_shape_and_nowhere_else() {
        let id = |text: &str| task_id(Some(reply(text).root()));
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t-1","status":{}}}}"#),
            Ok("t-1".into())
        );
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t-03"}}"#),
            Ok("t-03".into())
        );
        assert_eq!(
            id(r#"{"result":{"message":{"messageId":"m"}}}"#),
            Err(Skip::NotATask)
        );
        assert_eq!(
            id(r#"{"result":{"kind":"message","id":"m"}}"#),
            Err(Skip::NotATask)
        );
        assert_eq!(id(r#"{"result":{"task":"t-1"}}"#), Err(Skip::NotATask));
        assert_eq!(id(r#"{"error":{"code":-32600}}"#), Err(Skip::NotATask));
        assert_eq!(id(r#"[1]"#), Err(Skip::NotATask));
        assert_eq!(id(r#"{"result":{"task":{"id":""}}}"#), Err(Skip::NoTaskId));
        assert_eq!(id(r#"{"result":{"task":{"id":7}}}"#), Err(Skip::NoTaskId));
        assert_eq!(id(r#"{"result":{"kind":"task"}}"#), Err(Skip::NoTaskId));
        assert_eq!(
            id(r#"{"result":{"task":{"id":"\ud800"}}}"#),
            Err(Skip::TaskIdNotText)
        );
        assert_eq!(task_id(None), Err(Skip::NoReply));
    }

    #[test]
    fn an_answer_is_kept_as_json_or_as_its_first_500_characters() {
        assert_eq!(kept_answer(br#"{"ok": true}"#), json!({"ok": true}));
        let html = "é".repeat(600);
        let kept = kept_answer(html.as_bytes());
        assert_eq!(kept["raw"].as_str().unwrap().chars().count(), 500);
        assert_eq!(kept_answer(b"\xff\xfe"), json!({"raw": "\u{fffd}\u{fffd}"}));
        assert_eq!(kept_answer(b"[1, 2]"), json!({"raw": "[1, 2]"}));
    }
}
