//! What a pool member publishes (§1.3), as documents: the agent card, the consent file and the
//! key document its witness face serves. Pure: the face serves these bytes; `config check` and
//! `witness selfcheck` judge the same documents the way the pool's three readers do (§1.2).

use serde_json::{Value, json};

/// The paths the face serves (§10, fixed).
pub const CARD_PATH: &str = "/.well-known/agent-card.json";
pub const CONSENT_PATH: &str = "/.well-known/mcp-conduct.json";
pub const KEY_PATH: &str = "/keys/witness.json";
pub const KEY_HISTORY_PATH: &str = "/.well-known/key-history.json";
pub const A2A_PATH: &str = "/a2a";

/// The register's history of an endpoint, as the admission guide's example names it.
const CONDUCT_RECORD_BASE: &str = "https://gate.horizonshield.dev/history?endpoint=";
/// The public witness intake (spec §5).
pub const DEFAULT_INTAKE: &str = "https://ledger.horizonshield.dev/witness";

/// What the operator decides about the face's documents (`[witness_face]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// `https://host`, no path: what the operator's TLS proxy serves the face as.
    pub origin: String,
    /// `witness_policy.reciprocal`, in the card and the consent file alike (§1.2: all three
    /// readers must see it).
    pub reciprocal: bool,
    /// Where the member's own walks are filed (the card's `witness_intake`).
    pub witness_intake: String,
    /// The card's `name`.
    pub name: String,
    /// `compensation.paid_by` (the declaration's required compensation claim).
    pub paid_by: String,
}

impl Member {
    pub fn a2a_url(&self) -> String {
        format!("{}{A2A_PATH}", self.origin)
    }

    /// The one key URL named everywhere (§1.2, §10): `<origin>/keys/witness.json`.
    pub fn key_url(&self) -> String {
        format!("{}{KEY_PATH}", self.origin)
    }

    pub fn consent_url(&self) -> String {
        format!("{}{CONSENT_PATH}", self.origin)
    }

    /// The conduct extension's params (§1.3): what the walker's own declaration check needs,
    /// and the pool's `witness_policy` and `witness_reply`.
    pub fn extension_params(&self) -> Value {
        let a2a = self.a2a_url();
        json!({
            "compensation": {"paid_by": self.paid_by, "referral_fee": false, "listing_fee": false},
            "measured_endpoints": [a2a],
            "conduct_record": format!("{CONDUCT_RECORD_BASE}{}", encode(&a2a)),
            "witness_intake": self.witness_intake,
            "witness_policy": {"reciprocal": self.reciprocal},
            "witness_reply": {
                "transport": "a2a",
                "answers": a2a,
                "request_schema": super::REQUEST_SCHEMA,
                "reply_schema": super::OBSERVATION_SCHEMA,
                "key_url": self.key_url(),
            },
            "consent": self.consent_url(),
        })
    }

    /// The agent card (§1.3): top-level `url` = `<origin>/a2a` (the pool builder's `a2a_url`),
    /// the A2A 0.3 JSON-RPC binding the face speaks, the conduct extension declared once.
    pub fn card(&self) -> Value {
        json!({
            "protocolVersion": "0.3.0",
            "name": self.name,
            "description": "A witness of the HORIZON SHIELD witness pool: answers a nenrin-witness-request-v1 with one signed nenrin-witness-observation-v1 of the endpoint's public surfaces, measured from this vantage.",
            "url": self.a2a_url(),
            "preferredTransport": "JSONRPC",
            "version": env!("CARGO_PKG_VERSION"),
            "capabilities": {
                "streaming": false,
                "extensions": [
                    {"uri": super::EXT, "required": false, "params": self.extension_params()}
                ],
            },
            "defaultInputModes": ["application/json"],
            "defaultOutputModes": ["application/json"],
            "skills": [{
                "id": "witness-observation",
                "name": "Witness observation",
                "description": "Measures the public surfaces a nenrin-witness-request-v1 lists and answers with a signed nenrin-witness-observation-v1.",
                "tags": ["witness", "conduct", "nenrin"],
            }],
        })
    }

    /// The consent file (§1.3): `witness_policy`, the key URL the pool builder reads first.
    pub fn consent(&self) -> Value {
        json!({
            "witness_policy": {"reciprocal": self.reciprocal},
            "witness_key_url": self.key_url(),
        })
    }
}

/// The key document at `key_url` (§1.3, ref): only the active key, ever.
pub fn key_document(public_key_b64: &str, signed_domain: &str) -> Value {
    json!({
        "public_key_ed25519_b64": public_key_b64,
        "alg": "ed25519",
        "domain": signed_domain,
        "what_this_is": format!(
            "the domain-bound witness key of {signed_domain} (conduct-v1.1 11.4). Observations signed with it are attributable to this domain."
        ),
    })
}

/// A query value percent-encoded: everything but RFC 3986's unreserved characters.
pub fn encode(value: &str) -> String {
    const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    percent_encoding::utf8_percent_encode(value, UNRESERVED).to_string()
}

/// Why a card would be rejected by one of the pool's readers, or by a walker (§1.2, §1.3):
/// the walker's declaration check finds a problem, or the top-level `url` is not the face's.
pub fn card_problems(member: &Member, card: &Value) -> Vec<String> {
    let text = serde_json::to_vec(card).expect("a card serialises");
    let doc = crate::json::read(&text, crate::json::ReadOptions::LENIENT).ok();
    let declaration =
        crate::walk::declaration::locate_and_validate(doc.map(std::sync::Arc::new).as_ref());
    let declared = declaration.declared();
    let mut problems = declaration.problems;
    if !declared {
        problems.push("the card declares no conduct extension".into());
    }
    if card.get("url").and_then(Value::as_str) != Some(member.a2a_url().as_str()) {
        problems.push(format!(
            "the card's url is not {} (the pool builder reads it as the a2a_url)",
            member.a2a_url()
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member() -> Member {
        Member {
            origin: "https://witness.example.org".into(),
            reciprocal: true,
            witness_intake: DEFAULT_INTAKE.into(),
            name: "conduct-walker witness".into(),
            paid_by: "public".into(),
        }
    }

    #[test]
    fn the_card_passes_the_walkers_declaration_check_and_names_the_face_everywhere() {
        let m = member();
        let card = m.card();
        assert_eq!(card_problems(&m, &card), Vec::<String>::new());
        assert_eq!(card["url"], "https://witness.example.org/a2a");
        let params = &card["capabilities"]["extensions"][0]["params"];
        assert_eq!(
            card["capabilities"]["extensions"][0]["uri"],
            super::super::EXT
        );
        assert_eq!(params["witness_policy"]["reciprocal"], true);
        assert_eq!(
            params["witness_reply"]["key_url"],
            "https://witness.example.org/keys/witness.json"
        );
        assert_eq!(params["witness_reply"]["answers"], card["url"]);
        assert_eq!(
            params["conduct_record"],
            "https://gate.horizonshield.dev/history?endpoint=https%3A%2F%2Fwitness.example.org%2Fa2a"
        );
        // The consent file says the same, in the place the pool builder and §11.6.1 read.
        let consent = m.consent();
        assert_eq!(consent["witness_policy"]["reciprocal"], true);
        assert_eq!(
            consent["witness_key_url"],
            params["witness_reply"]["key_url"]
        );
    }

    #[test]
    fn a_card_a_reader_would_reject_is_named() {
        let m = member();
        let mut card = m.card();
        card["url"] = json!("https://witness.example.org/");
        card["capabilities"]["extensions"][0]["params"]["measured_endpoints"] = json!([]);
        let problems = card_problems(&m, &card);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[1].contains("a2a_url"));
    }

    #[test]
    fn the_key_document_names_the_domain_and_only_one_key() {
        let doc = key_document(
            "dpUASrdBhojNzqiVw+FDTmGhHI61yzsDqsZKAMIyo04=",
            "witness.example.org",
        );
        assert_eq!(doc.as_object().unwrap().len(), 4);
        assert_eq!(doc["alg"], "ed25519");
        assert!(doc["what_this_is"].as_str().unwrap().starts_with(
            "the domain-bound witness key of witness.example.org (conduct-v1.1 11.4)."
        ));
    }
}
