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

/// What [`walk_back`] did.
#[derive(Debug)]
pub struct WalkedBack {
    /// The `EXT/reciprocal` answer the caller would get (`scheduled`, or `declined: <reason>`).
    pub answer: String,
    /// The walk's record and where it is filed, when it was walked.
    pub record: Option<crate::pipeline::JobReport>,
}

/// The receiving side of a reciprocal walk (witness-pool.md §6.2–6.3) in one process, for the
/// demo: the same checks, queue row and guarded walk as the daemon's face and walker, without
/// the HTTP face. `ours` is where the record goes when the caller's card names no usable intake.
pub async fn walk_back(
    ca: &SandboxCa,
    pipeline: &crate::pipeline::Pipeline,
    store_path: &std::path::Path,
    caller_card: &str,
    template: crate::walk::WalkRequest,
    ours: &str,
) -> Result<WalkedBack, String> {
    use crate::reciprocal::{Queue, state};
    use crate::store::reciprocal_walks::{self as queue, Ended, Requested};
    use crate::witness_pool::caller;
    let measurer = Measurer::new(true, vec![ca.cert_der()]).map_err(|e| e.to_string())?;
    let store = crate::store::Store::open(store_path).map_err(|e| e.to_string())?;
    let now = crate::clock::utc_millis(chrono::Utc::now());
    let value = Value::String(caller_card.to_string());
    let checked = caller::check(&measurer, &value, &[]).await;
    let asked = |origin| Requested {
        requested_at: &now,
        caller_card,
        origin,
    };
    let caller = match checked {
        Ok(caller) => caller,
        Err((reason, why, origin)) => {
            queue::insert_declined(
                store.connection(),
                &asked(origin.as_deref()),
                reason,
                why.as_deref(),
            )
            .map_err(|e| e.to_string())?;
            return Ok(WalkedBack {
                answer: format!("declined: {}", reason.as_str()),
                record: None,
            });
        }
    };
    let decided = queue::queue(
        store.connection(),
        &asked(Some(&caller.origin)),
        &now,
        crate::reciprocal::DEFAULT_DAILY_BUDGET,
    )
    .map_err(|e| e.to_string())?;
    let Queue::New = decided else {
        let answer = match decided {
            Queue::Declined(reason) => format!("declined: {}", reason.as_str()),
            _ => "scheduled".into(),
        };
        return Ok(WalkedBack {
            answer,
            record: None,
        });
    };
    let row = queue::next_queued(store.connection())
        .map_err(|e| e.to_string())?
        .ok_or("the queued walk is not in the store")?;
    queue::start(store.connection(), row.id, &now).map_err(|e| e.to_string())?;
    let mut walk = TransportConfig::new(NetPolicy::new(true));
    walk.extra_roots = vec![ca.cert_der()];
    let stranger = caller::stranger_walk(walk, &measurer, ours).map_err(|e| e.to_string())?;
    let job = crate::pipeline::WalkJob {
        request: crate::walk::WalkRequest {
            origin: caller.origin.clone(),
            ..template
        },
        submit: true,
        bind_task: None,
    };
    let report = pipeline
        .run_stranger_job(&job, &stranger)
        .await
        .map_err(|e| e.to_string())?;
    let finished = crate::clock::utc_millis(chrono::Utc::now());
    let intake = report.submission.as_ref().map(|s| s.intake_url.as_str());
    queue::finish(
        store.connection(),
        row.id,
        &Ended {
            state: state::WALKED,
            record_id: Some(report.record_id),
            record_sha256: Some(&report.outcome.sha256),
            intake_url: intake,
            ..Ended::default()
        },
        &finished,
    )
    .map_err(|e| e.to_string())?;
    Ok(WalkedBack {
        answer: "scheduled".into(),
        record: Some(report),
    })
}
