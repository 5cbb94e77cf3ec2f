//! `witness selfcheck` (§10): the pool's four conditions against any origin, each checked the
//! way every reader of §1.2 needs it, under the reference's check names. Passing says the
//! conditions hold, not that anyone trusts the origin.

use super::publish::{CARD_PATH, CONSENT_PATH, KEY_PATH};
use super::request::{self, Acceptance, Drawn, ReplyReading};
use super::validate;
use crate::net::Transport;
use base64::Engine as _;
use serde_json::{Value, json};

/// The probe's target unless `--probe-target` says otherwise.
pub const DEFAULT_PROBE_TARGET: &str = "https://gate.horizonshield.dev";

/// One condition: its name, whether it holds, and what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub holds: bool,
    pub detail: String,
}

fn check(name: &'static str, result: Result<String, String>) -> Check {
    let (holds, detail) = match result {
        Ok(detail) => (true, detail),
        Err(detail) => (false, detail),
    };
    Check {
        name,
        holds,
        detail,
    }
}

/// What the origin serves, fetched once each.
struct Served {
    card: Result<Value, String>,
    consent: Result<Value, String>,
}

/// A JSON object served directly (what each of the pool's readers fetches).
async fn fetch_object(transport: &Transport, url: &str) -> Result<Value, String> {
    let value = super::ask::fetch_json(transport, url).await?;
    match value.is_object() {
        true => Ok(value),
        false => Err(format!("{url} is not a JSON object")),
    }
}

/// The conduct extension's params, when the card declares EXT or PERMA with an object.
fn conduct_params(card: &Value) -> Option<&Value> {
    card["capabilities"]["extensions"]
        .as_array()?
        .iter()
        .find(|e| matches!(e["uri"].as_str(), Some(super::EXT | super::PERMA)))
        .map(|e| &e["params"])
        .filter(|p| p.is_object())
}

/// The four conditions of `origin` (no trailing `/`), the probe measuring `probe_target`.
pub async fn selfcheck(transport: &Transport, origin: &str, probe_target: &str) -> Vec<Check> {
    let served = Served {
        card: fetch_object(transport, &format!("{origin}{CARD_PATH}")).await,
        consent: fetch_object(transport, &format!("{origin}{CONSENT_PATH}")).await,
    };
    let declared = check("conduct_v1_declared", conduct_v1_declared(&served));
    let reciprocal = check(
        "witness_policy_reciprocal",
        witness_policy_reciprocal(&served),
    );
    let (key_url, served_key) = match domain_bound_key(transport, origin, &served).await {
        Ok((url, key)) => (Some(url), Some(key)),
        Err(why) => {
            let key_check = check("domain_bound_key", Err(why));
            let answers = check(
                "answers_witness_request",
                Err("not probed: the key it would be checked against is not served".into()),
            );
            return vec![declared, reciprocal, key_check, answers];
        }
    };
    let key_url = key_url.expect("set with the key");
    let key_check = check(
        "domain_bound_key",
        Ok(format!(
            "{key_url} serves {}",
            served_key.as_deref().unwrap_or_default()
        )),
    );
    let answers = check(
        "answers_witness_request",
        answers_witness_request(
            transport,
            origin,
            &served,
            &key_url,
            served_key.as_deref().unwrap_or_default(),
            probe_target,
        )
        .await,
    );
    vec![declared, reciprocal, key_check, answers]
}

fn conduct_v1_declared(served: &Served) -> Result<String, String> {
    let card = served.card.as_ref().map_err(Clone::clone)?;
    conduct_params(card)
        .map(|_| "the card declares the conduct extension with params".to_string())
        .ok_or_else(|| {
            format!(
                "the card declares no capabilities.extensions[] entry with uri {} (or {}) and object params",
                super::EXT,
                super::PERMA
            )
        })
}

fn witness_policy_reciprocal(served: &Served) -> Result<String, String> {
    let card = served.card.as_ref().map_err(Clone::clone)?;
    let in_card = conduct_params(card).map(|p| &p["witness_policy"]["reciprocal"]);
    if in_card != Some(&Value::Bool(true)) {
        return Err("the card's params.witness_policy.reciprocal is not true".into());
    }
    let consent = served.consent.as_ref().map_err(|why| {
        format!("the consent file must say it too (the pool builder reads it there): {why}")
    })?;
    if consent["witness_policy"]["reciprocal"] != true {
        return Err("the consent file's witness_policy.reciprocal is not true".into());
    }
    Ok("true in the card and in the consent file".into())
}

/// The key URL (the card's `witness_reply.key_url`, else `<origin>/keys/witness.json`) and the
/// key it serves, or why this condition fails.
async fn domain_bound_key(
    transport: &Transport,
    origin: &str,
    served: &Served,
) -> Result<(String, String), String> {
    let params = served.card.as_ref().ok().and_then(conduct_params);
    let key_url = params
        .and_then(|p| p["witness_reply"]["key_url"].as_str())
        .map_or_else(|| format!("{origin}{KEY_PATH}"), str::to_owned);
    if !key_url.starts_with("https://")
        || validate::url_host(&key_url) != validate::url_host(origin)
    {
        return Err(format!(
            "the key URL {key_url} is not https on the origin's host"
        ));
    }
    if let Ok(consent) = &served.consent
        && let Some(named) = consent["witness_key_url"].as_str()
        && named != key_url
    {
        return Err(format!(
            "the consent file names {named} as the key URL, the card {key_url}"
        ));
    }
    let document = fetch_object(transport, &key_url).await?;
    let key = document["public_key_ed25519_b64"]
        .as_str()
        .ok_or_else(|| format!("{key_url} has no string public_key_ed25519_b64"))?;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(key)
        .map_err(|_| format!("{key_url}'s key is not standard padded base64"))?;
    if raw.len() != 32 {
        return Err(format!("{key_url}'s key is {} bytes, not 32", raw.len()));
    }
    Ok((key_url, key.to_string()))
}

/// The probe of §10: a request for `probe_target` sent to `<origin>/a2a` must come back
/// answered and valid, signed for the origin's host with the served key at the key URL.
async fn answers_witness_request(
    transport: &Transport,
    origin: &str,
    served: &Served,
    key_url: &str,
    served_key: &str,
    probe_target: &str,
) -> Result<String, String> {
    let a2a = format!("{origin}/a2a");
    let card = served.card.as_ref().map_err(Clone::clone)?;
    if card["url"].as_str() != Some(a2a.as_str()) {
        return Err(format!(
            "the card's url is {}, not {a2a} (the pool builder's a2a_url)",
            card["url"]
        ));
    }
    let zeros = "0".repeat(64);
    let drawn = Drawn {
        subject_sha256: zeros.clone(),
        pool_sha256: zeros.clone(),
        beacon: json!({"kind": "selfcheck", "height": "0", "hash": zeros}),
    };
    let now = crate::clock::walked_at(chrono::Utc::now());
    let probe = request::build_request(probe_target, &request::default_surfaces(), &now, &drawn);
    let asked = super::ask::ask(transport, &a2a, probe, None, Some(key_url)).await;
    let observation = match &asked.reading {
        ReplyReading::Observation(o) => o,
        ReplyReading::Declined { reason, text } => {
            return Err(format!("the probe was declined: {reason}: {text}"));
        }
        ReplyReading::Failed(why) => return Err(format!("the probe got no observation: {why}")),
    };
    match &asked.acceptance {
        Some(Acceptance::Accepted) => {}
        Some(Acceptance::Refused(codes)) => {
            return Err(format!(
                "the probe's observation is refused: {}",
                codes.join(", ")
            ));
        }
        Some(Acceptance::CannotJudge(code)) => return Err((*code).to_string()),
        None => return Err("no verdict on the probe's observation".into()),
    }
    let source = &observation["source"];
    let expect = [
        (
            source["signed_domain"].as_str().map(str::to_lowercase),
            validate::url_host(origin),
            "source.signed_domain is not the origin's host",
        ),
        (
            source["key_url"].as_str().map(str::to_owned),
            Some(key_url.to_string()),
            "source.key_url is not the key URL",
        ),
        (
            observation["public_key_ed25519_b64"]
                .as_str()
                .map(str::to_owned),
            Some(served_key.to_string()),
            "the embedded key is not the served key",
        ),
        (
            observation["endpoint"]
                .as_str()
                .and_then(validate::url_host),
            validate::url_host(probe_target),
            "the observation's endpoint is not the probe target's host",
        ),
    ];
    for (got, want, why) in expect {
        if got != want {
            return Err(format!(
                "{why} ({} / {})",
                got.unwrap_or_default(),
                want.unwrap_or_default()
            ));
        }
    }
    Ok(format!(
        "answered and valid: record_sha256 {}",
        observation["record_sha256"].as_str().unwrap_or_default()
    ))
}
