//! The witness face (issue 43; spec "witness-pool.md" §1.3, §4.6, §10): a listener of its own,
//! plain HTTP behind the operator's TLS proxy, never the status pages'. It serves what a pool
//! member publishes (card, consent file, key, key history) and answers `POST /a2a` with the
//! spec's limits and JSON-RPC errors, in the spec's order.
//!
//! A request never changes what the scheduled walks do: a measurement takes one of the face's
//! own slots (`max_in_flight`) and fetches through the responder's guarded transport, and the
//! face's rows go to a writer thread with a connection of its own ([`super::witness_log`]).

use super::DaemonError;
use super::ingredients::Ingredients;
use super::metrics::{FaceOutcome, WitnessMetrics};
use super::reciprocal::{Desk, QueueSignal};
use super::services::Service;
use super::store::DaemonStore;
use super::witness_log::{MIN_STOP_WAIT, RequestLog, RowSender, clip};
use crate::app::WitnessResponder;
use crate::clock::Clock;
use crate::config::WitnessFace;
use crate::store::witness_requests::WitnessRequest;
use crate::witness_pool::observation;
use crate::witness_pool::publish::{A2A_PATH, CARD_PATH, CONSENT_PATH, KEY_HISTORY_PATH, KEY_PATH};
use crate::witness_pool::request::{self as rpc, RpcError};
use crate::witness_pool::responder::{Answer, NotAnswered, Responder, Slots};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use futures_util::future::BoxFuture;
use http_body_util::BodyExt as _;
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// The whole body must arrive within this (the production member's header timeout; ours for
/// the body): a requester that trickles its body does not hold a connection longer.
pub const BODY_DEADLINE: Duration = Duration::from_secs(10);
/// The answer when it does not: 408 (ours; the spec names no answer).
pub const BODY_TIMEOUT_STATUS: u16 = 408;
pub const BODY_TIMEOUT_BODY: &str = r#"{"error":"request body not received within 10 s"}"#;
const BODY_BROKEN_BODY: &str = r#"{"error":"request body not read"}"#;
const NOT_FOUND_BODY: &str = r#"{"error":"not found"}"#;
const ONLY_GET_BODY: &str = r#"{"error":"only GET is served here"}"#;
/// What a body's declared length reserves at most before its bytes arrive.
const RESERVE_BYTES: usize = 16 * 1024;
/// How much of a request's endpoint and of a decline's why a stored row keeps.
const ENDPOINT_CHARS: usize = 300;
const DETAIL_CHARS: usize = 300;

/// What one configuration of the face serves; replaced whole at a reload.
struct Served {
    responder: Responder,
    /// Shared with the configuration before when `max_in_flight` did not change, so the
    /// measurements still running count against the same limit.
    slots: Arc<Slots>,
    max_in_flight: usize,
    card: Bytes,
    consent: Bytes,
    key_document: Bytes,
    key_history: Bytes,
    /// Decides `caller_card`s; `None` unless `reciprocal = true` (a card is then ignored).
    desk: Option<Desk>,
}

impl Served {
    fn new(
        settings: &WitnessFace,
        setup: WitnessResponder,
        desk: Option<Desk>,
        before: Option<&Served>,
    ) -> Served {
        let max = settings.max_in_flight;
        let slots = match before {
            Some(b) if b.max_in_flight == max => b.slots.clone(),
            _ => Arc::new(Slots::new(max)),
        };
        let bytes = |v: &Value| Bytes::from(serde_json::to_vec(v).expect("a Value serialises"));
        Served {
            card: bytes(&settings.member.card()),
            consent: bytes(&settings.member.consent()),
            key_document: bytes(&setup.key_document),
            key_history: bytes(&setup.key_history),
            responder: setup.responder,
            slots,
            max_in_flight: max,
            desk,
        }
    }
}

/// What every request handler reaches.
struct FaceState {
    served: RwLock<Arc<Served>>,
    log: RowSender,
    metrics: Arc<WitnessMetrics>,
    clock: Arc<dyn Clock>,
}

impl FaceState {
    fn current(&self) -> Arc<Served> {
        self.served
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn replace(&self, served: Served) {
        *self.served.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(served);
    }
}

/// One bound listener and its server task.
struct Running {
    listen: SocketAddr,
    state: Arc<FaceState>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stop accepting and wait for the requests in flight, at most until `until`; a measurement
    /// still running then ends on its own deadline (25 s), unwaited for.
    async fn stop(self, until: Instant) {
        let _ = self.stop.send(true);
        let mut task = self.task;
        if tokio::time::timeout_at(until, &mut task).await.is_err() {
            tracing::warn!(listen = %self.listen, "witness face: stopped with requests still in flight");
            task.abort();
        }
    }
}

/// The face as a daemon service: off while `[witness_face]` is absent; a reload turns it on or
/// off, moves it to a new `listen`, or swaps what it serves in place.
pub(super) struct Face {
    store: DaemonStore,
    metrics: Arc<WitnessMetrics>,
    clock: Arc<dyn Clock>,
    signal: Arc<QueueSignal>,
    log: Option<RequestLog>,
    running: Option<Running>,
}

impl Face {
    /// Start serving when `[witness_face]` is set; a listen address that cannot be bound
    /// refuses to start the daemon, as the status pages' listener does.
    pub fn start(
        ingredients: &mut Ingredients,
        store: &DaemonStore,
        metrics: Arc<WitnessMetrics>,
        clock: Arc<dyn Clock>,
        signal: Arc<QueueSignal>,
    ) -> Result<Face, DaemonError> {
        let mut face = Face {
            store: store.clone(),
            metrics,
            clock,
            signal,
            log: None,
            running: None,
        };
        if let (Some(settings), Some(setup)) = (
            ingredients.config.witness_face.clone(),
            ingredients.witness_face.take(),
        ) {
            let desk = face.desk(ingredients);
            face.running = Some(face.serve(&settings, Served::new(&settings, setup, desk, None))?);
        }
        Ok(face)
    }

    /// The reciprocal desk of this configuration, when `reciprocal = true`.
    fn desk(&self, ingredients: &Ingredients) -> Option<Desk> {
        let setup = ingredients.reciprocal.clone();
        self.metrics
            .reciprocal_on
            .store(setup.is_some(), Ordering::Relaxed);
        setup.map(|setup| Desk {
            setup,
            store: self.store.clone(),
            clock: self.clock.clone(),
            signal: self.signal.clone(),
            metrics: self.metrics.clone(),
        })
    }

    /// Bind `settings.listen` and serve `served` there.
    fn serve(&mut self, settings: &WitnessFace, served: Served) -> Result<Running, DaemonError> {
        let addr = settings.listen;
        let listener = bind(addr).map_err(|source| DaemonError::Listen { addr, source })?;
        let state = Arc::new(FaceState {
            served: RwLock::new(Arc::new(served)),
            log: self.log()?,
            metrics: self.metrics.clone(),
            clock: self.clock.clone(),
        });
        let bound = listener.local_addr().unwrap_or(addr);
        tracing::info!(listen = %bound, origin = %settings.member.origin, max_in_flight = settings.max_in_flight,
            "witness face: serving the card, the consent file, the key, the key history and POST /a2a");
        let (stop, mut stopped) = watch::channel(false);
        let app = router(state.clone());
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = stopped.wait_for(|s| *s).await;
            });
            if let Err(e) = served.await {
                tracing::error!(error = %e, "the witness face failed");
            }
        });
        self.metrics.serving.store(true, Ordering::Relaxed);
        Ok(Running {
            listen: addr,
            state,
            stop,
            task,
        })
    }

    /// The request log's sender, starting the writer with the first face.
    fn log(&mut self) -> Result<RowSender, DaemonError> {
        if self.log.is_none() {
            let store = self.store.open_another()?;
            self.log = Some(RequestLog::start(store).map_err(DaemonError::WitnessFace)?);
        }
        Ok(self.log.as_ref().expect("started above").sender())
    }

    /// Turn the face off (a reload without `[witness_face]`).
    fn halt(&mut self) {
        if let Some(running) = self.running.take() {
            tracing::info!(listen = %running.listen, "witness face: off ([witness_face] removed)");
            self.metrics.serving.store(false, Ordering::Relaxed);
            self.metrics.reciprocal_on.store(false, Ordering::Relaxed);
            tokio::spawn(running.stop(Instant::now() + BODY_DEADLINE));
        }
    }
}

impl Service for Face {
    fn reload(&mut self, ingredients: &mut Ingredients) {
        let (Some(settings), Some(setup)) = (
            ingredients.config.witness_face.clone(),
            ingredients.witness_face.take(),
        ) else {
            self.halt();
            return;
        };
        let before = self.running.as_ref().map(|r| r.state.current());
        let desk = self.desk(ingredients);
        let served = Served::new(&settings, setup, desk, before.as_deref());
        if let Some(running) = self
            .running
            .as_ref()
            .filter(|r| r.listen == settings.listen)
        {
            running.state.replace(served);
            tracing::info!(listen = %running.listen, "witness face: configuration reloaded");
            return;
        }
        match self.serve(&settings, served) {
            Ok(new) => {
                if let Some(old) = self.running.replace(new) {
                    tokio::spawn(old.stop(Instant::now() + BODY_DEADLINE));
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "witness face: the reloaded face cannot start; keeping what was served")
            }
        }
    }

    fn stop(mut self: Box<Self>, deadline: Instant) -> BoxFuture<'static, ()> {
        let running = self.running.take();
        let log = self.log.take();
        Box::pin(async move {
            let until = deadline.max(Instant::now() + MIN_STOP_WAIT);
            if let Some(running) = running {
                running.stop(until).await;
            }
            if let Some(log) = log {
                log.stop(until.max(Instant::now() + MIN_STOP_WAIT)).await;
            }
        })
    }
}

/// Bind now, without awaiting: a reload (a plain function) binds too.
fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    tokio::net::TcpListener::from_std(listener)
}

fn router(state: Arc<FaceState>) -> Router {
    Router::new()
        .route(CARD_PATH, document(|s| &s.card))
        .route(CONSENT_PATH, document(|s| &s.consent))
        .route(KEY_PATH, document(|s| &s.key_document))
        .route(KEY_HISTORY_PATH, document(|s| &s.key_history))
        .route(
            A2A_PATH,
            post(a2a).fallback(|| async {
                json_answer(rpc::METHOD_NOT_ALLOWED_STATUS, rpc::METHOD_NOT_ALLOWED_BODY)
            }),
        )
        .fallback(|| async { json_answer(404, NOT_FOUND_BODY) })
        .with_state(state)
}

/// `GET` of one published document, as the current configuration has it.
fn document(which: fn(&Served) -> &Bytes) -> MethodRouter<Arc<FaceState>> {
    get(move |State(face): State<Arc<FaceState>>| async move {
        json_answer(200, which(&face.current()).clone())
    })
    .fallback(|| async { json_answer(405, ONLY_GET_BODY) })
}

/// Every answer of the face: JSON, never cached (a reload may change any of them).
fn json_answer(status: u16, body: impl Into<Body>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = [
        (header::CONTENT_TYPE, "application/json"),
        (header::CACHE_CONTROL, "no-store"),
    ];
    (status, headers, body.into()).into_response()
}

/// `POST /a2a`, §4.6 in order: the size cap (and our body deadline), the JSON-RPC checks, a
/// request part, then the responder (whose declines need no slot; a measurement takes one).
async fn a2a(State(face): State<Arc<FaceState>>, request: Request) -> Response {
    let declared = content_length(request.headers());
    let body = match read_body(request.into_body(), declared, BODY_DEADLINE).await {
        BodyRead::Whole(body) => body,
        BodyRead::TooLarge => {
            face.metrics.count(FaceOutcome::TooLarge);
            return json_answer(rpc::TOO_LARGE_STATUS, rpc::TOO_LARGE_BODY);
        }
        BodyRead::TimedOut => {
            face.metrics.count(FaceOutcome::BodyTimeout);
            return json_answer(BODY_TIMEOUT_STATUS, BODY_TIMEOUT_BODY);
        }
        BodyRead::Broken => return json_answer(400, BODY_BROKEN_BODY),
    };
    let incoming = match rpc::read_a2a_body(&body) {
        Ok(incoming) => incoming,
        Err(error) => return face.rpc_error(&error),
    };
    drop(body);
    let served = face.current();
    // §6.2: a `caller_card` is decided (and a walk queued) only when `reciprocal = true`.
    let caller_card = incoming
        .caller_card
        .as_ref()
        .and_then(|card| Some((served.desk.as_ref()?, card)));
    // Step 4: a message without a request part gets the reciprocal answer alone, or -32602.
    let Some(request) = &incoming.request else {
        let Some((desk, card)) = caller_card else {
            return face.rpc_error(&incoming.no_request_part());
        };
        let reciprocal = desk.decide(card).await;
        face.metrics.count(FaceOutcome::ReciprocalOnly);
        let now_ms = face.clock.now().timestamp_millis().max(0) as u64;
        let message = observation::reciprocal_message(reciprocal, now_ms);
        return json_answer(200, rpc::result_body(&incoming.id, &message));
    };
    face.answer(&served, incoming.id.clone(), request, caller_card)
        .await
}

impl FaceState {
    /// A witness request, measured (or declined) while a `caller_card` beside it is decided:
    /// the two run at once, so the reciprocal checks never eat into the measurement's 25 s.
    async fn answer(
        &self,
        served: &Served,
        id: Value,
        request: &Value,
        caller_card: Option<(&Desk, &Value)>,
    ) -> Response {
        let received_at = crate::clock::utc_millis(self.clock.now());
        let measured = served.responder.answer(
            request,
            Some(&served.slots),
            self.clock.as_ref(),
            None,
            None,
        );
        let decided = async {
            match caller_card {
                Some((desk, card)) => Some(desk.decide(card).await),
                None => None,
            }
        };
        let (answered, reciprocal) = tokio::join!(measured, decided);
        match answered {
            Ok(mut answer) => {
                if let Some(reciprocal) = reciprocal {
                    observation::add_reciprocal(answer.message_mut(), reciprocal);
                }
                let (outcome, row) = row_of(&answer, request, received_at);
                tracing::debug!(outcome = %row.outcome, reason = ?row.reason, endpoint = ?row.endpoint, "witness face: request");
                self.metrics.count(outcome);
                self.log.record(row);
                json_answer(200, rpc::result_body(&id, answer.message()))
            }
            Err(not) => {
                if let NotAnswered::Internal(why) = &not {
                    tracing::error!(%why, "witness face: our own observation failed a reader's check; answered 500");
                }
                self.rpc_error(&not.rpc_error(id))
            }
        }
    }

    /// A JSON-RPC error answer, counted by what it says; busy adds `retry-after`.
    fn rpc_error(&self, error: &RpcError) -> Response {
        let outcome = match error.code {
            -32700 => FaceOutcome::ParseError,
            -32601 => FaceOutcome::MethodNotServed,
            -32602 => FaceOutcome::NoRequestPart,
            -32000 => FaceOutcome::Busy,
            _ => FaceOutcome::Internal,
        };
        self.metrics.count(outcome);
        let mut response = json_answer(error.http_status, error.body());
        if outcome == FaceOutcome::Busy {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(rpc::RETRY_AFTER_SECONDS),
            );
        }
        response
    }
}

/// The stored row of an answered or declined request, and how `/metrics` counts it.
fn row_of(answer: &Answer, request: &Value, received_at: String) -> (FaceOutcome, WitnessRequest) {
    let mut row = WitnessRequest {
        received_at,
        outcome: "answered".into(),
        reason: None,
        endpoint: request
            .get("endpoint")
            .and_then(Value::as_str)
            .map(|e| clip(e, ENDPOINT_CHARS)),
        request_sha256: Some(rpc::request_sha256(request)),
        record_sha256: None,
        detail: None,
    };
    match answer {
        Answer::Answered { observation, .. } => {
            row.record_sha256 = Some(observation.record_sha256.clone());
            let observed = observation.record["observed"].as_object();
            let names: Vec<&str> = observed
                .into_iter()
                .flat_map(|o| o.keys())
                .map(String::as_str)
                .collect();
            row.detail = Some(clip(
                &format!("observed {}", names.join(", ")),
                DETAIL_CHARS,
            ));
            (FaceOutcome::Answered, row)
        }
        Answer::Declined { decline, .. } => {
            row.outcome = "declined".into();
            row.reason = Some(decline.reason.as_str().into());
            row.detail = Some(clip(&decline.why, DETAIL_CHARS));
            (FaceOutcome::Declined(decline.reason), row)
        }
    }
}

fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// How reading a request body ended.
#[derive(Debug, PartialEq, Eq)]
enum BodyRead {
    Whole(Vec<u8>),
    /// Over [`rpc::MAX_BODY_BYTES`]: declared so, or found so; nothing past the cap is read.
    TooLarge,
    TimedOut,
    /// The connection failed mid-body.
    Broken,
}

/// The body, refused as soon as it is known to be over the cap and cut off at `deadline`.
async fn read_body(mut body: Body, declared: Option<u64>, deadline: Duration) -> BodyRead {
    let cap = rpc::MAX_BODY_BYTES;
    if declared.is_some_and(|n| n > cap as u64) {
        return BodyRead::TooLarge;
    }
    let read = async move {
        // Grown as bytes arrive: a declared length alone reserves little, so connections that
        // announce a megabyte and send nothing cost nothing.
        let mut bytes = Vec::with_capacity(declared.map_or(0, |n| n as usize).min(RESERVE_BYTES));
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else {
                return BodyRead::Broken;
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if bytes.len() + data.len() > cap {
                return BodyRead::TooLarge;
            }
            bytes.extend_from_slice(&data);
        }
        BodyRead::Whole(bytes)
    };
    tokio::time::timeout(deadline, read)
        .await
        .unwrap_or(BodyRead::TimedOut)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(parts: Vec<Vec<u8>>) -> Body {
        let stream = futures_util::stream::iter(
            parts
                .into_iter()
                .map(|p| Ok::<_, std::io::Error>(Bytes::from(p))),
        );
        Body::from_stream(stream)
    }

    #[tokio::test]
    async fn a_body_is_read_whole_up_to_the_cap_and_refused_one_byte_past_it() {
        let cap = rpc::MAX_BODY_BYTES;
        let at_cap = chunks(vec![vec![b' '; cap - 1], vec![b'{']]);
        match read_body(at_cap, None, BODY_DEADLINE).await {
            BodyRead::Whole(b) => assert_eq!(b.len(), cap),
            other => panic!("{other:?}"),
        }
        let past = chunks(vec![vec![b' '; cap], vec![b'x']]);
        assert_eq!(
            read_body(past, None, BODY_DEADLINE).await,
            BodyRead::TooLarge
        );
        // A declared length over the cap is refused before a byte is read.
        let declared = chunks(vec![b"{}".to_vec()]);
        assert_eq!(
            read_body(declared, Some(cap as u64 + 1), BODY_DEADLINE).await,
            BodyRead::TooLarge
        );
    }

    #[tokio::test]
    async fn a_body_that_never_ends_is_cut_off_at_the_deadline() {
        let never = futures_util::stream::pending::<Result<Bytes, std::io::Error>>();
        let deadline = Duration::from_millis(50);
        let started = Instant::now();
        let read = read_body(Body::from_stream(never), Some(10), deadline).await;
        assert_eq!(read, BodyRead::TimedOut);
        assert!(started.elapsed() >= deadline);
    }

    #[test]
    fn stored_texts_are_clipped_by_characters() {
        assert_eq!(clip("ab", 2), "ab");
        assert_eq!(clip("äbc", 2), "äb…");
    }
}
