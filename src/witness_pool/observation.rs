//! §5: the observation a pool member answers with (fields, canonical bytes, `record_sha256`,
//! signature) and the reply messages around it (§5.4, §6.2). Pure: the measured objects, the
//! time, the vantage and the key are arguments.

use super::{EXT, OBSERVATION_SCHEMA};
use crate::witness::keys::public_key_b64;
use ed25519_dalek::SigningKey;
use serde_json::{Map, Value, json};

/// The two `establishes` lines, in order.
pub const ESTABLISHES: [&str; 2] = [
    "at recorded_at this witness, from its own vantage, saw the observed state of the listed surfaces of endpoint",
    "the observation answers the request whose canonical sha256 is request_sha256",
];

/// The `does_not_establish` lines every observation carries, in order.
pub const DOES_NOT_ESTABLISH: [&str; 2] = [
    "that the observed state is the expected one: this witness was not told what to expect",
    "anything about surfaces not listed in observed",
];

/// The third `does_not_establish` line, followed by the unknown surface names.
pub const NOT_MEASURED_PREFIX: &str =
    "anything about the requested surfaces this witness does not measure: ";

/// The only `source.kind` an observation has.
pub const EXTERNAL_WITNESS: &str = "external_witness";

/// The members the hash and the signature do not cover (§5.2).
pub const UNHASHED_MEMBERS: [&str; 3] = [
    "record_sha256",
    "signature_ed25519_b64",
    "public_key_ed25519_b64",
];

/// Metadata member names, written `EXT/<name>` (see [`ext_key`]).
pub const WITNESS_REQUEST: &str = "witness_request";
pub const WITNESS_REPLY: &str = "witness_reply";
pub const WITNESS_REPLY_REASON: &str = "witness_reply_reason";
pub const RECIPROCAL: &str = "reciprocal";
pub const CALLER_CARD: &str = "caller_card";

/// `EXT/<name>`, a metadata key of the conduct extension.
pub fn ext_key(name: &str) -> String {
    format!("{EXT}/{name}")
}

/// What one observation is built from (§5.1).
#[derive(Debug, Clone)]
pub struct Inputs<'a> {
    /// T: the request's endpoint with every trailing `/` removed (§3.1).
    pub target: &'a str,
    /// One member per distinct known surface measured: name → observed object (§3.3, §3.4).
    pub observed: &'a Map<String, Value>,
    pub request_sha256: &'a str,
    pub signed_domain: &'a str,
    pub key_url: &'a str,
    pub vantage: &'a str,
    /// `YYYY-MM-DDTHH:MM:SSZ`, written as given.
    pub recorded_at: &'a str,
    /// The requested names this witness does not measure, in request order, repeats kept.
    pub unknown_surfaces: &'a [String],
}

/// A signed observation: the whole record, and the bytes its hash and signature cover.
#[derive(Debug, Clone, PartialEq)]
pub struct SignedObservation {
    pub record: Value,
    pub canonical: Vec<u8>,
    pub record_sha256: String,
}

/// The default vantage: `<machine host name> (witness network, <signed_domain>)`.
pub fn default_vantage(machine_host_name: &str, signed_domain: &str) -> String {
    format!("{machine_host_name} (witness network, {signed_domain})")
}

/// The `does_not_establish` lines: the two fixed ones, and a third naming the unknown
/// surfaces when the request named any.
pub fn does_not_establish(unknown_surfaces: &[String]) -> Vec<String> {
    let mut lines: Vec<String> = DOES_NOT_ESTABLISH.iter().map(|l| l.to_string()).collect();
    if !unknown_surfaces.is_empty() {
        lines.push(format!(
            "{NOT_MEASURED_PREFIX}{}",
            unknown_surfaces.join(", ")
        ));
    }
    lines
}

/// The record without the three members of [`UNHASHED_MEMBERS`]: what is hashed and signed.
pub fn hashed_body(inputs: &Inputs) -> Value {
    json!({
        "schema": OBSERVATION_SCHEMA,
        "recorded_at": inputs.recorded_at,
        "witness": { "name": inputs.signed_domain, "vantage": inputs.vantage },
        "prev": null,
        "endpoint": inputs.target,
        "observed": inputs.observed,
        "request_sha256": inputs.request_sha256,
        "source": {
            "kind": EXTERNAL_WITNESS,
            "signed_domain": inputs.signed_domain,
            "key_url": inputs.key_url,
        },
        "establishes": ESTABLISHES,
        "does_not_establish": does_not_establish(inputs.unknown_surfaces),
    })
}

/// The bytes `record_sha256` hashes and the signature covers: the NENRIN canonical form
/// (`crate::canonical`, the exact form of §5.2) of `record` without [`UNHASHED_MEMBERS`].
/// A non-object is written as it is (the validator refuses it before asking).
pub fn canonical_bytes(record: &Value) -> Vec<u8> {
    match record.as_object() {
        Some(fields) => {
            let mut body = fields.clone();
            for name in UNHASHED_MEMBERS {
                body.remove(name);
            }
            crate::canonical::to_bytes(&Value::Object(body))
        }
        None => crate::canonical::to_bytes(record),
    }
}

/// sha of [`canonical_bytes`].
pub fn record_sha256(record: &Value) -> String {
    crate::digest::sha256_hex(canonical_bytes(record))
}

/// Hash and sign a body (the record without the three members), adding them.
pub fn sign(body: Value, key: &SigningKey) -> SignedObservation {
    let canonical = canonical_bytes(&body);
    let record_sha256 = crate::digest::sha256_hex(&canonical);
    let signed = crate::witness::sign(&canonical, key);
    let mut record = body;
    if let Some(fields) = record.as_object_mut() {
        fields.insert("record_sha256".into(), record_sha256.clone().into());
        fields.insert("signature_ed25519_b64".into(), signed.signature_b64.into());
        fields.insert("public_key_ed25519_b64".into(), public_key_b64(key).into());
    }
    SignedObservation {
        record,
        canonical,
        record_sha256,
    }
}

/// The whole observation of §5.1, signed.
pub fn build(inputs: &Inputs, key: &SigningKey) -> SignedObservation {
    sign(hashed_body(inputs), key)
}

/// What a reciprocal check decided (§6.2), for the `EXT/reciprocal` metadata value and the
/// message-only answer's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reciprocal<'a> {
    Scheduled,
    Declined { reason: &'a str },
}

impl Reciprocal<'_> {
    /// The `EXT/reciprocal` value: `scheduled` or `declined` (the reason is not sent there).
    pub fn metadata_value(&self) -> &'static str {
        match self {
            Reciprocal::Scheduled => "scheduled",
            Reciprocal::Declined { .. } => "declined",
        }
    }

    /// The message-only answer's text.
    pub fn text(&self) -> String {
        match self {
            Reciprocal::Scheduled => "reciprocal walk: scheduled".to_string(),
            Reciprocal::Declined { reason } => format!("reciprocal walk: declined: {reason}"),
        }
    }
}

/// The answered `result` message (§5.4); `messageId` `obs-<record_sha256[0:16]>`.
pub fn answered_message(signed: &SignedObservation, reciprocal: Option<Reciprocal>) -> Value {
    let mut metadata = Map::new();
    metadata.insert(ext_key(WITNESS_REPLY), "answered".into());
    agent_message(
        format!("obs-{}", &signed.record_sha256[..16]),
        json!({ "kind": "data", "data": signed.record }),
        with_reciprocal(metadata, reciprocal),
    )
}

/// The declined `result` message (§5.4); `messageId` `declined-<now_ms>`.
pub fn declined_message(
    reason: &str,
    why: &str,
    now_ms: u64,
    reciprocal: Option<Reciprocal>,
) -> Value {
    let mut metadata = Map::new();
    metadata.insert(ext_key(WITNESS_REPLY), "declined".into());
    metadata.insert(ext_key(WITNESS_REPLY_REASON), reason.into());
    agent_message(
        format!("declined-{now_ms}"),
        json!({ "kind": "text", "text": format!("declined: {reason}: {why}") }),
        with_reciprocal(metadata, reciprocal),
    )
}

/// The answer to a message that carries `caller_card` but no witness request (§6.2);
/// `messageId` `reciprocal-<now_ms>`.
pub fn reciprocal_message(reciprocal: Reciprocal, now_ms: u64) -> Value {
    agent_message(
        format!("reciprocal-{now_ms}"),
        json!({ "kind": "text", "text": reciprocal.text() }),
        with_reciprocal(Map::new(), Some(reciprocal)),
    )
}

/// Add a reciprocal decision taken beside the answer (§6.2) to an answer message's metadata.
pub fn add_reciprocal(message: &mut Value, reciprocal: Reciprocal) {
    if let Some(metadata) = message.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.insert(ext_key(RECIPROCAL), reciprocal.metadata_value().into());
    }
}

fn with_reciprocal(mut metadata: Map<String, Value>, reciprocal: Option<Reciprocal>) -> Value {
    if let Some(reciprocal) = reciprocal {
        metadata.insert(ext_key(RECIPROCAL), reciprocal.metadata_value().into());
    }
    Value::Object(metadata)
}

fn agent_message(message_id: String, part: Value, metadata: Value) -> Value {
    json!({
        "kind": "message",
        "role": "agent",
        "messageId": message_id,
        "parts": [part],
        "metadata": metadata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::witness_pool::request;
    use crate::witness_pool::validate::{self, Options};

    fn answer_example() -> Value {
        let path = crate::sandbox::test_vectors("witness-pool/answer-example.json");
        crate::json::parse_lenient(&std::fs::read(path).unwrap()).unwrap()
    }

    fn example_key(inputs: &Value) -> SigningKey {
        let seed = hex::decode(inputs["private_seed_hex"].as_str().unwrap()).unwrap();
        let key = SigningKey::from_bytes(&seed.try_into().unwrap());
        assert_eq!(
            seed_of("witness-pool example key witness.example.org"),
            key.to_bytes()
        );
        key
    }

    fn seed_of(text: &str) -> [u8; 32] {
        crate::digest::sha256(text)
    }

    /// The example's request taken through the decisions, measured from `inputs.measured`.
    fn example_observation(example: &Value) -> SignedObservation {
        let inputs = &example["inputs"];
        let signed_domain = inputs["signed_domain"].as_str().unwrap();
        let plan = request::decide(&inputs["request"], signed_domain, false).unwrap();
        let measured = inputs["measured"].as_object().unwrap();
        let observed: Map<String, Value> = plan
            .surfaces
            .iter()
            .map(|s| (s.name.to_string(), measured[s.name].clone()))
            .collect();
        let request_sha256 = request::request_sha256(&inputs["request"]);
        build(
            &Inputs {
                target: &plan.target,
                observed: &observed,
                request_sha256: &request_sha256,
                signed_domain,
                key_url: inputs["key_url"].as_str().unwrap(),
                vantage: inputs["vantage"].as_str().unwrap(),
                recorded_at: inputs["recorded_at"].as_str().unwrap(),
                unknown_surfaces: &plan.unknown_surfaces,
            },
            &example_key(inputs),
        )
    }

    #[test]
    fn answer_example_end_to_end() {
        let example = answer_example();
        let expected = &example["expected"];
        assert_eq!(
            request::request_sha256(&example["inputs"]["request"]),
            expected["request_sha256"]
        );
        let signed = example_observation(&example);
        assert_eq!(
            std::str::from_utf8(&signed.canonical).unwrap(),
            expected["canonical_text"]
        );
        assert_eq!(signed.canonical.len(), 2209);
        assert_eq!(expected["canonical_byte_length"], 2209);
        assert_eq!(signed.record_sha256, expected["record_sha256"]);
        assert_eq!(
            signed.record["signature_ed25519_b64"],
            expected["signature_ed25519_b64"]
        );
        assert_eq!(
            signed.record["public_key_ed25519_b64"],
            example["inputs"]["public_key_ed25519_b64"]
        );
        assert_eq!(signed.record, expected["observation"]);
        let result = answered_message(&signed, None);
        assert_eq!(result, expected["result"]);
        let reply = request::result_body(&expected["reply"]["id"], &result);
        assert_eq!(
            crate::json::parse_lenient(reply.as_bytes()).unwrap(),
            expected["reply"]
        );
        // A responder checks its own record as a reader would before sending it (§4.1 step 6).
        assert!(validate::validate(&signed.record, &Options::default()).is_empty());
    }

    #[test]
    fn declined_example_form() {
        let example = answer_example();
        let expected = &example["declined_example"]["result"];
        let message = declined_message(
            "self_witness",
            "an agent cannot witness itself under a key it serves (11.4)",
            1_796_464_800_000,
            None,
        );
        assert_eq!(&message, expected);
    }

    #[test]
    fn reciprocal_rides_in_the_same_metadata() {
        let example = answer_example();
        let signed = example_observation(&example);
        let answered = answered_message(&signed, Some(Reciprocal::Scheduled));
        let metadata = answered["metadata"].as_object().unwrap();
        assert_eq!(metadata.len(), 2);
        assert_eq!(metadata[&ext_key(RECIPROCAL)], "scheduled");
        assert_eq!(metadata[&ext_key(WITNESS_REPLY)], "answered");
        let declined = declined_message(
            "bad_request",
            "x",
            1,
            Some(Reciprocal::Declined { reason: "budget" }),
        );
        assert_eq!(declined["metadata"][ext_key(RECIPROCAL)], "declined");
        assert_eq!(declined["parts"][0]["text"], "declined: bad_request: x");
    }

    #[test]
    fn message_only_reciprocal_answers() {
        let scheduled = reciprocal_message(Reciprocal::Scheduled, 42);
        assert_eq!(
            scheduled,
            json!({
                "kind": "message", "role": "agent", "messageId": "reciprocal-42",
                "parts": [{ "kind": "text", "text": "reciprocal walk: scheduled" }],
                "metadata": { "https://gate.horizonshield.dev/ext/conduct/v1/reciprocal": "scheduled" },
            })
        );
        let declined = reciprocal_message(Reciprocal::Declined { reason: "own_host" }, 7);
        assert_eq!(
            declined["parts"][0]["text"],
            "reciprocal walk: declined: own_host"
        );
        assert_eq!(declined["metadata"][ext_key(RECIPROCAL)], "declined");
        assert_eq!(declined["messageId"], "reciprocal-7");
    }

    #[test]
    fn vantage_and_disclosure_texts() {
        assert_eq!(
            default_vantage("host-1", "witness.example.org"),
            "host-1 (witness network, witness.example.org)"
        );
        assert_eq!(does_not_establish(&[]).len(), 2);
        let lines = does_not_establish(&["dns.caa".into(), "x".into(), "dns.caa".into()]);
        assert_eq!(
            lines[2],
            "anything about the requested surfaces this witness does not measure: dns.caa, x, dns.caa"
        );
    }

    #[test]
    fn canonical_bytes_leave_out_exactly_the_three_members() {
        let record = json!({
            "b": "\u{7f}\u{2028}/é\u{1f}\n", "a": [null, true],
            "record_sha256": "x", "signature_ed25519_b64": "y", "public_key_ed25519_b64": "z",
        });
        assert_eq!(
            String::from_utf8(canonical_bytes(&record)).unwrap(),
            "{\"a\":[null,true],\"b\":\"\u{7f}\u{2028}/é\\u001f\\n\"}"
        );
    }
}
