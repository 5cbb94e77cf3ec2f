//! KEY_HISTORY_v1 (spec §8.1, §8.2), pure: the document a pool member serves at
//! `/.well-known/key-history.json`. It lists every public key the domain has signed with and
//! the rule under which a signature by each counts; `history_sha256` is the sha256 of the NENRIN
//! canonical form of `{schema, subject, keys, rule}`, and nothing else enters it (anchors are
//! made after the list they anchor). [`attributable`] is the rule of §8.3 as code, and
//! [`rotate`] the change of the list a rotation or a revocation makes (§8.5).

use serde_json::{Map, Value, json};

pub const SCHEMA: &str = "key-history-v1";

/// The attribution rule (§8.1), exactly.
pub const RULE: [&str; 5] = [
    "A key not listed here is not this domain's key.",
    "active: signatures by this key are attributable to the operator.",
    "retired: rotated out without compromise; signatures made while it was active stay attributable.",
    "revoked: a signature by this key is attributable only when the signed bytes are shown, by a clock the operator does not control (for example a Bitcoin-anchored timestamp), to have existed before compromised_from. Without that proof it is not attributable.",
    "Any key: signed bytes shown to have existed before since are not attributable (the key did not exist yet).",
];

pub const COVERS: &str = "canonical JSON (sorted keys, UTF-8) of {schema, subject, keys, rule}";

pub const SPEC: &str = "https://github.com/ogasurfproject-jpg/horizon-shield/blob/main/workers/hs-verify-gate/ext/KEY_HISTORY_v1.md";

pub const DOES_NOT_ESTABLISH: [&str; 3] = [
    "that no key has been stolen; only what the operator has declared",
    "that a signature by an active key was made by the operator and not by someone who took the key without the operator knowing",
    "anything about a record's content; it says only whose key signed it and under which rule that counts",
];

pub const ANCHORS_ESTABLISH: &str = "the served list of public keys existed, byte for byte, no later than the Bitcoin block named in the anchor";
pub const ANCHORS_DO_NOT_ESTABLISH: &str =
    "that the keys were not stolen before or after that time; only when this list was fixed";

/// How a reader checks one of our anchors (ours: OpenTimestamps over the canonical bytes, §8.1).
pub const HOW_TO_VERIFY: [&str; 2] = [
    "Take the canonical bytes at canonical_bytes_url and check that their SHA-256 equals history_sha256.",
    "Run ots verify on those bytes with the proof at ots_url; it names the Bitcoin block that fixes them.",
];

/// What a conduct-walker witness key signs: its walk records and its observations alike.
pub const WITNESS_SIGNS: &str = "conduct walk records (jidec-path-v1) and nenrin-witness-observation-v1 replies of this witness";

/// A listed key: an Ed25519 key in B64, or a JWK (the gate's ES256 card key). Exactly one of
/// the two members is written, as the served lists do.
#[derive(Debug, Clone, PartialEq)]
pub enum PublicKey {
    Ed25519(String),
    Jwk(Value),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Active,
    Retired,
    Revoked,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Retired => "retired",
            Status::Revoked => "revoked",
        }
    }

    pub fn parse(text: &str) -> Option<Status> {
        [Status::Active, Status::Retired, Status::Revoked]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// One `keys[]` entry (§8.1). Every member is written; an unused one is `null`.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyEntry {
    /// `use`: `agent-card`, `agreement`, `witness` or `operator`.
    pub key_use: String,
    pub kid: String,
    /// `Ed25519`, or `ES256` for card keys.
    pub alg: String,
    pub key: PublicKey,
    pub served_at: Vec<String>,
    pub signs: String,
    /// `YYYY-MM-DD`: the day the key was first published.
    pub since: String,
    pub since_commit: Option<String>,
    pub status: Status,
    pub retired_at: Option<String>,
    pub revoked_at: Option<String>,
    pub compromised_from: Option<String>,
    pub reason: Option<String>,
}

impl KeyEntry {
    /// The witness key a face signs with now: active, served at `key_url`, no chain entry yet
    /// (`since_commit` comes with the rotation issue, which records the key's creation).
    pub fn active_witness(public_key_b64: &str, key_url: &str, since: &str) -> KeyEntry {
        KeyEntry {
            key_use: "witness".into(),
            kid: witness_kid(public_key_b64),
            alg: "Ed25519".into(),
            key: PublicKey::Ed25519(public_key_b64.into()),
            served_at: vec![key_url.into()],
            signs: WITNESS_SIGNS.into(),
            since: since.into(),
            since_commit: None,
            status: Status::Active,
            retired_at: None,
            revoked_at: None,
            compromised_from: None,
            reason: None,
        }
    }

    pub fn to_value(&self) -> Value {
        let mut entry = Map::new();
        entry.insert("use".into(), json!(self.key_use));
        entry.insert("kid".into(), json!(self.kid));
        entry.insert("alg".into(), json!(self.alg));
        match &self.key {
            PublicKey::Ed25519(b64) => entry.insert("public_key_ed25519_b64".into(), json!(b64)),
            PublicKey::Jwk(jwk) => entry.insert("public_jwk".into(), jwk.clone()),
        };
        entry.insert("served_at".into(), json!(self.served_at));
        entry.insert("signs".into(), json!(self.signs));
        entry.insert("since".into(), json!(self.since));
        entry.insert("since_commit".into(), json!(self.since_commit));
        entry.insert("status".into(), json!(self.status.as_str()));
        entry.insert("retired_at".into(), json!(self.retired_at));
        entry.insert("revoked_at".into(), json!(self.revoked_at));
        entry.insert("compromised_from".into(), json!(self.compromised_from));
        entry.insert("reason".into(), json!(self.reason));
        Value::Object(entry)
    }

    /// An entry as a served list writes it; None when a member is missing or mistyped.
    pub fn from_value(entry: &Value) -> Option<KeyEntry> {
        let text = |name: &str| entry.get(name)?.as_str().map(str::to_owned);
        let nullable = |name: &str| match entry.get(name)? {
            Value::Null => Some(None),
            Value::String(s) => Some(Some(s.clone())),
            _ => None,
        };
        let key = match (entry.get("public_key_ed25519_b64"), entry.get("public_jwk")) {
            (Some(Value::String(b64)), None) => PublicKey::Ed25519(b64.clone()),
            (None, Some(jwk)) if jwk.is_object() => PublicKey::Jwk(jwk.clone()),
            _ => return None,
        };
        let served_at = entry.get("served_at")?.as_array()?;
        Some(KeyEntry {
            key_use: text("use")?,
            kid: text("kid")?,
            alg: text("alg")?,
            key,
            served_at: served_at
                .iter()
                .map(|u| u.as_str().map(str::to_owned))
                .collect::<Option<_>>()?,
            signs: text("signs")?,
            since: text("since")?,
            since_commit: nullable("since_commit")?,
            status: Status::parse(&text("status")?)?,
            retired_at: nullable("retired_at")?,
            revoked_at: nullable("revoked_at")?,
            compromised_from: nullable("compromised_from")?,
            reason: nullable("reason")?,
        })
    }
}

/// A witness key's label: `witness-` and the first 8 hex of the sha256 of the raw key (of the
/// text, should it not be B64), so a rotated key never takes an old key's label.
pub fn witness_kid(public_key_b64: &str) -> String {
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(public_key_b64)
        .unwrap_or_else(|_| public_key_b64.as_bytes().to_vec());
    format!("witness-{}", &crate::digest::sha256_hex(raw)[..8])
}

/// One `env_consistency` row: whether the key the running server signs with for `key_use` is
/// the active key of that use (`matches_active` null when no key is configured).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvConsistency {
    pub key_use: String,
    pub configured: bool,
    pub matches_active: Option<bool>,
}

impl EnvConsistency {
    fn to_value(&self) -> Value {
        json!({"use": self.key_use, "configured": self.configured, "matches_active": self.matches_active})
    }
}

/// What `history_sha256` covers (§8.2).
pub fn hashed_members(subject: &str, keys: &[KeyEntry]) -> Value {
    json!({
        "schema": SCHEMA,
        "subject": subject,
        "keys": keys.iter().map(KeyEntry::to_value).collect::<Vec<_>>(),
        "rule": RULE,
    })
}

pub fn history_sha256(subject: &str, keys: &[KeyEntry]) -> String {
    crate::digest::sha256_hex(crate::canonical::to_bytes(&hashed_members(subject, keys)))
}

/// The served document: the hashed members, the hash, `env`, and `anchors` split into those of
/// this list (`current`, by their `history_sha256`) and those of earlier lists (`previous`).
pub fn document(
    subject: &str,
    keys: &[KeyEntry],
    env: &[EnvConsistency],
    anchors: &[Value],
) -> Value {
    let sha = history_sha256(subject, keys);
    let (current, previous): (Vec<&Value>, Vec<&Value>) = anchors
        .iter()
        .partition(|a| a.get("history_sha256").and_then(Value::as_str) == Some(sha.as_str()));
    let mut doc = hashed_members(subject, keys);
    let extra = json!({
        "history_sha256": sha,
        "history_sha256_covers": COVERS,
        "env_consistency": env.iter().map(EnvConsistency::to_value).collect::<Vec<_>>(),
        "anchors": {
            "covers_served_list": !current.is_empty(),
            "current": current,
            "previous": previous,
            "not_covered_by_history_sha256": true,
            "how_to_verify": HOW_TO_VERIFY,
            "establishes": ANCHORS_ESTABLISH,
            "does_not_establish": ANCHORS_DO_NOT_ESTABLISH,
        },
        "spec": SPEC,
        "does_not_establish": DOES_NOT_ESTABLISH,
    });
    if let (Some(doc), Value::Object(extra)) = (doc.as_object_mut(), extra) {
        doc.extend(extra);
    }
    doc
}

/// The history of a witness that has only ever signed with its active key: that key, the
/// server signing with it, no anchor yet.
pub fn single_witness_key(subject: &str, key: KeyEntry) -> Value {
    let env = EnvConsistency {
        key_use: "witness".into(),
        configured: true,
        matches_active: Some(true),
    };
    document(subject, &[key], &[env], &[])
}

/// What §8.3 reads of a listed key: its status (as written: an unknown one is still read, and
/// answers null), the day it was first published and its two end times.
#[derive(Debug, Clone, Copy)]
pub struct Standing<'a> {
    pub status: &'a str,
    pub since: &'a str,
    pub retired_at: Option<&'a str>,
    pub compromised_from: Option<&'a str>,
}

impl<'a> Standing<'a> {
    pub fn of(entry: &'a KeyEntry) -> Standing<'a> {
        Standing {
            status: entry.status.as_str(),
            since: &entry.since,
            retired_at: entry.retired_at.as_deref(),
            compromised_from: entry.compromised_from.as_deref(),
        }
    }
}

fn instant(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// `attributable(key, existed_before)` of §8.3, in its order: `Some(true)`, `Some(false)`, or
/// `None` ("this history cannot say"). `key` is `None` when the signing key is not listed;
/// `existed_before` is the earliest independently proven time the signed bytes existed.
pub fn attributable(key: Option<Standing<'_>>, existed_before: Option<&str>) -> Option<bool> {
    let key = key?;
    let proof = match existed_before {
        None => None,
        Some(text) => match instant(text) {
            Some(t) => Some(t),
            // Refused, not read as "no proof": a garbled proof must not pass as none.
            None => return Some(false),
        },
    };
    let since = chrono::NaiveDate::parse_from_str(key.since, "%Y-%m-%d")
        .ok()?
        .and_hms_opt(0, 0, 0)?
        .and_utc();
    if proof.is_some_and(|p| p < since) {
        return Some(false);
    }
    match (key.status, proof) {
        ("active", _) => Some(true),
        ("retired", None) => Some(true),
        ("retired", Some(p)) => Some(key.retired_at.and_then(instant).is_none_or(|r| p <= r)),
        ("revoked", None) => Some(false),
        ("revoked", Some(p)) => Some(
            key.compromised_from
                .and_then(instant)
                .is_some_and(|c| p < c),
        ),
        _ => None,
    }
}

/// The listed witness key with this Ed25519 key (§8.3 step 1 looks within the use asked for).
pub fn find_witness_key<'a>(keys: &'a [KeyEntry], public_key_b64: &str) -> Option<&'a KeyEntry> {
    keys.iter()
        .find(|k| k.key_use == "witness" && k.key == PublicKey::Ed25519(public_key_b64.to_string()))
}

/// How the active witness key leaves the list (§8.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retirement {
    /// Rotated out without compromise: what it signed stays attributable.
    Retired,
    /// A leak: from `compromised_from` on nothing it signed counts without a proof of time.
    Revoked {
        compromised_from: String,
        reason: String,
    },
}

/// The list after a rotation at `now` (RFC 3339 UTC): the active witness key leaves it as
/// `retirement` says, and `new` (an active entry) is appended. Other entries are left as they
/// were: what a key signed while it was the witness's is judged by its own entry.
pub fn rotate(
    keys: &[KeyEntry],
    new: KeyEntry,
    retirement: &Retirement,
    now: &str,
) -> Vec<KeyEntry> {
    let mut out: Vec<KeyEntry> = keys.to_vec();
    let active = out
        .iter_mut()
        .filter(|k| k.key_use == "witness" && k.status == Status::Active);
    for key in active {
        match retirement {
            Retirement::Retired => {
                key.status = Status::Retired;
                key.retired_at = Some(now.to_string());
            }
            Retirement::Revoked {
                compromised_from,
                reason,
            } => {
                key.status = Status::Revoked;
                key.revoked_at = Some(now.to_string());
                key.compromised_from = Some(compromised_from.clone());
                key.reason = Some(reason.clone());
            }
        }
    }
    out.push(new);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(name: &str) -> Value {
        let path = crate::sandbox::test_vectors(&format!("witness-pool/{name}"));
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    fn entries(keys: &Value) -> Vec<KeyEntry> {
        keys.as_array()
            .unwrap()
            .iter()
            .map(|k| KeyEntry::from_value(k).unwrap())
            .collect()
    }

    fn canonical_len(value: &Value) -> usize {
        crate::canonical::to_bytes(value).len()
    }

    #[test]
    fn the_example_document_is_rebuilt_whole_from_its_members() {
        let example = vector("key-history-example.json");
        let subject = example["subject"].as_str().unwrap();
        let keys = entries(&example["keys"]);
        assert_eq!(
            history_sha256(subject, &keys),
            "bb7097299ca3da45d7944472bfa593753df92b2dfbd2f692b430c998e98d2f72"
        );
        assert_eq!(canonical_len(&hashed_members(subject, &keys)), 1552);
        let env = [EnvConsistency {
            key_use: "witness".into(),
            configured: true,
            matches_active: Some(true),
        }];
        let anchors = example["anchors"]["previous"].as_array().unwrap().clone();
        assert_eq!(document(subject, &keys, &env, &anchors), example);
    }

    #[test]
    fn the_list_before_the_rotation_gives_the_anchored_hash_and_its_anchor_is_current() {
        let example = vector("key-history-example.json");
        let subject = example["subject"].as_str().unwrap();
        let mut first = entries(&example["keys"]).remove(0);
        first.status = Status::Active;
        first.retired_at = None;
        let sha = history_sha256(subject, std::slice::from_ref(&first));
        assert_eq!(
            sha,
            "3fd8e92d71b808d281727b3386e7887ce98c306a26eb8d8c55483852df984d9b"
        );
        assert_eq!(
            canonical_len(&hashed_members(subject, &[first.clone()])),
            1098
        );
        let anchor = example["anchors"]["previous"][0].clone();
        let doc = document(subject, &[first], &[], std::slice::from_ref(&anchor));
        assert_eq!(doc["anchors"]["covers_served_list"], true);
        assert_eq!(doc["anchors"]["current"], json!([anchor]));
        assert_eq!(doc["anchors"]["previous"], json!([]));
    }

    #[test]
    fn the_gates_anchored_list_recomputes() {
        let gate = vector("gate-key-history-20260928.json");
        let body = &gate["body"];
        let subject = body["subject"].as_str().unwrap();
        let keys = entries(&body["keys"]);
        assert_eq!(body["schema"], SCHEMA);
        assert_eq!(body["rule"], json!(RULE));
        assert_eq!(hashed_members(subject, &keys), *body);
        assert_eq!(canonical_len(body), 2600);
        assert_eq!(
            history_sha256(subject, &keys),
            "d479e3e036625b87e40cc1d0882e7f569843939d34f193e9e4da9b033559b7a9"
        );
        assert_eq!(gate["history_sha256"], history_sha256(subject, &keys));
        assert!(matches!(keys[0].key, PublicKey::Jwk(_)));
    }

    #[test]
    fn a_single_witness_key_is_listed_with_every_member_and_no_anchor() {
        let b64 = "6LMrzbSozOSfxzRPuIynK2bwFnluEdT4Eq9s9PCKgdk=";
        let key_url = "https://witness.example/keys/witness.json";
        let doc = single_witness_key(
            "https://witness.example",
            KeyEntry::active_witness(b64, key_url, "2026-12-05"),
        );
        let entry = &doc["keys"][0];
        let members: Vec<&str> = entry
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(members.len(), 13, "{members:?}");
        assert_eq!(entry["kid"], witness_kid(b64));
        assert!(entry["kid"].as_str().unwrap().starts_with("witness-"));
        assert_eq!(entry["kid"].as_str().unwrap().len(), "witness-".len() + 8);
        assert_eq!(entry["served_at"], json!([key_url]));
        assert_eq!(
            (entry["status"].as_str(), &entry["since_commit"]),
            (Some("active"), &Value::Null)
        );
        assert_eq!(
            doc["env_consistency"],
            json!([{"use": "witness", "configured": true, "matches_active": true}])
        );
        assert_eq!(doc["anchors"]["covers_served_list"], false);
        assert_eq!(doc["anchors"]["current"], json!([]));
        let sha = doc["history_sha256"].as_str().unwrap();
        assert_eq!(
            crate::digest::sha256_hex(crate::canonical::to_bytes(&hashed_members(
                "https://witness.example",
                &[KeyEntry::from_value(entry).unwrap()]
            ))),
            sha
        );
    }

    #[test]
    fn an_entry_with_both_key_forms_or_an_unknown_status_is_not_read() {
        let example = vector("key-history-example.json");
        let mut both = example["keys"][0].clone();
        both["public_jwk"] = json!({"kty": "OKP"});
        assert_eq!(KeyEntry::from_value(&both), None);
        let mut odd = example["keys"][0].clone();
        odd["status"] = json!("paused");
        assert_eq!(KeyEntry::from_value(&odd), None);
    }

    #[test]
    fn the_attribution_rule_gives_every_case_of_the_vectors() {
        let cases = vector("key-history-cases.json");
        let cases = cases["cases"].as_array().unwrap();
        assert_eq!(cases.len(), 22);
        for case in cases {
            let text = |name: &str| case[name].as_str();
            let standing = case["in_history"].as_bool().unwrap().then(|| Standing {
                status: text("status").unwrap(),
                since: text("since").unwrap(),
                retired_at: text("retired_at"),
                compromised_from: text("compromised_from"),
            });
            let got = attributable(standing, text("existed_before"));
            assert_eq!(
                json!(got),
                case["expected"],
                "{}: {}",
                case["id"],
                case["why"]
            );
        }
    }

    fn witness(n: u8, status: Status) -> KeyEntry {
        let b64 = format!("{n:0>43}=");
        KeyEntry {
            status,
            ..KeyEntry::active_witness(&b64, "https://w.example/keys/witness.json", "2026-01-01")
        }
    }

    #[test]
    fn a_rotation_retires_the_active_key_and_a_revocation_revokes_it_only() {
        let now = "2026-12-06T10:00:00Z";
        let keys = [witness(1, Status::Retired), witness(2, Status::Active)];
        let rotated = rotate(&keys, witness(3, Status::Active), &Retirement::Retired, now);
        let statuses: Vec<_> = rotated.iter().map(|k| k.status).collect();
        assert_eq!(statuses, [Status::Retired, Status::Retired, Status::Active]);
        assert_eq!(rotated[1].retired_at.as_deref(), Some(now));
        assert_eq!(
            rotated[0].retired_at, None,
            "an earlier entry is left as it was"
        );

        let leak = Retirement::Revoked {
            compromised_from: "2026-12-01T00:00:00Z".into(),
            reason: "the key file was copied off a backup".into(),
        };
        let revoked = rotate(&keys, witness(3, Status::Active), &leak, now);
        let statuses: Vec<_> = revoked.iter().map(|k| k.status).collect();
        assert_eq!(statuses, [Status::Retired, Status::Revoked, Status::Active]);
        assert_eq!(
            (
                revoked[1].revoked_at.as_deref(),
                revoked[1].compromised_from.as_deref()
            ),
            (Some(now), Some("2026-12-01T00:00:00Z"))
        );
        let b64 = match &revoked[1].key {
            PublicKey::Ed25519(b) => b.clone(),
            PublicKey::Jwk(_) => unreachable!(),
        };
        let found = find_witness_key(&revoked, &b64).map(Standing::of);
        assert_eq!(attributable(found, None), Some(false));
        assert_eq!(
            attributable(found, Some("2026-11-30T00:00:00Z")),
            Some(true)
        );
    }
}
