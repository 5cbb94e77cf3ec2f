//! The witness pool on loopback, for the demo and tests: a pool member (a throw-away key, its
//! card, consent file and key document, and `POST /a2a` answered by the real
//! [`crate::witness_pool::responder::Responder`]), and a requester agent that asks it to measure
//! an endpoint and judges the answer as any requester would.

use super::https::{Handler, HttpsServer, Req, Resp, SandboxCa};
use crate::clock::SystemClock;
use crate::net::{NetPolicy, Transport, TransportConfig};
use crate::witness_pool::publish::{self, Member};
use crate::witness_pool::request::{self as rpc, Acceptance, ReplyReading};
use crate::witness_pool::responder::Responder;
use crate::witness_pool::{ask, measure::Measurer};
use serde_json::Value;
use std::sync::Arc;

/// A pool member on loopback: `https://127.0.0.1:<port>`, measuring loopback targets (private
/// networks open, as in tests).
pub struct PoolMember {
    pub server: HttpsServer,
    pub origin: String,
}

impl PoolMember {
    pub async fn start(ca: &SandboxCa) -> std::io::Result<PoolMember> {
        PoolMember::start_declaring(ca, false).await
    }

    /// A member whose card and consent file declare `witness_policy.reciprocal` as given.
    pub async fn start_declaring(ca: &SandboxCa, reciprocal: bool) -> std::io::Result<PoolMember> {
        // The origin is known only once bound: the handler reads it from each request.
        let key = ed25519_dalek::SigningKey::from_bytes(&rand::random::<[u8; 32]>());
        let measurer = Measurer::new(true, vec![ca.cert_der()])
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let member: Arc<std::sync::OnceLock<(Member, Arc<Responder>)>> = Arc::default();
        let for_handler = member.clone();
        let serving: Handler = Arc::new(move |req: Req| {
            let (member, responder) = for_handler.get_or_init(|| {
                let m = Member {
                    origin: req.base.clone(),
                    reciprocal,
                    witness_intake: publish::DEFAULT_INTAKE.into(),
                    name: "sandbox pool member".into(),
                    paid_by: "public".into(),
                };
                let r = Responder::new(
                    key.clone(),
                    &m.key_url(),
                    Some("loopback sandbox".into()),
                    measurer.clone(),
                )
                .expect("an https key URL");
                (m, Arc::new(r))
            });
            let (member, responder, key) = (member.clone(), responder.clone(), key.clone());
            Box::pin(async move { serve(&member, responder, &key, req).await })
        });
        let server = HttpsServer::start(ca, serving).await?;
        let origin = server.base();
        Ok(PoolMember { server, origin })
    }

    pub fn a2a_url(&self) -> String {
        format!("{}{}", self.origin, publish::A2A_PATH)
    }
}

/// Unbounded here (one requester); the daemon's face holds `max_in_flight`.
async fn serve(
    member: &Member,
    responder: Arc<Responder>,
    key: &ed25519_dalek::SigningKey,
    req: Req,
) -> Resp {
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", publish::CARD_PATH) => Resp::json(200, &member.card()),
        ("GET", publish::CONSENT_PATH) => Resp::json(200, &member.consent()),
        ("GET", publish::KEY_PATH) => Resp::json(
            200,
            &publish::key_document(
                &crate::witness::keys::public_key_b64(key),
                responder.signed_domain(),
            ),
        ),
        ("POST", publish::A2A_PATH) => answer(&responder, &req.body).await,
        _ => Resp::empty(404),
    }
}

/// `POST /a2a` (§4.6 steps 2–6).
async fn answer(responder: &Responder, body: &[u8]) -> Resp {
    let incoming = match rpc::read_a2a_body(body) {
        Ok(incoming) => incoming,
        Err(e) => return Resp::bytes(e.http_status, "application/json", e.body()),
    };
    let Some(request) = &incoming.request else {
        let e = incoming.no_request_part();
        return Resp::bytes(e.http_status, "application/json", e.body());
    };
    let answered = responder
        .answer(request, None, &SystemClock, None, None)
        .await;
    match answered {
        Ok(a) => Resp::bytes(
            200,
            "application/json",
            rpc::result_body(&incoming.id, a.message()),
        ),
        Err(not) => {
            let e = not.rpc_error(incoming.id);
            Resp::bytes(e.http_status, "application/json", e.body())
        }
    }
}

/// What the requester agent saw.
#[derive(Debug, Clone)]
pub struct Observed {
    /// The signed observation, when one came back.
    pub observation: Option<Value>,
    /// Accepted, or what refused it (a decline, a failure, a refusal code).
    pub verdict: Result<(), String>,
}

/// The requester agent: ask the member at `a2a_url` to measure `endpoint` (a fresh ad hoc
/// request), then judge the observation with the key document at its `key_url`.
pub async fn request_observation(ca: &SandboxCa, a2a_url: &str, endpoint: &str) -> Observed {
    let mut policy = NetPolicy::new(true);
    policy.allow_url(a2a_url);
    let mut config = TransportConfig::new(policy);
    config.extra_roots = vec![ca.cert_der()];
    config.user_agent = rpc::REQUESTER_USER_AGENT.into();
    let transport = match Transport::new(config) {
        Ok(t) => t,
        Err(e) => {
            return Observed {
                observation: None,
                verdict: Err(e.to_string()),
            };
        }
    };
    let now = crate::clock::walked_at(chrono::Utc::now());
    let sent = rpc::build_request(
        endpoint,
        &rpc::default_surfaces(),
        &now,
        &rpc::Drawn::ad_hoc(rand::random()),
    );
    let asked = ask::ask(&transport, a2a_url, sent, None, None).await;
    let verdict = match (&asked.reading, &asked.acceptance) {
        (_, Some(Acceptance::Accepted)) => Ok(()),
        (_, Some(Acceptance::Refused(codes))) => Err(format!("refused: {}", codes.join(", "))),
        (_, Some(Acceptance::CannotJudge(code))) => Err((*code).to_string()),
        (ReplyReading::Declined { reason, text }, None) => Err(format!("{reason}: {text}")),
        (ReplyReading::Failed(why), None) => Err(why.clone()),
        (ReplyReading::Observation(_), None) => Err("not judged".into()),
    };
    let observation = match asked.reading {
        ReplyReading::Observation(o) => Some(o),
        _ => None,
    };
    Observed {
        observation,
        verdict,
    }
}
