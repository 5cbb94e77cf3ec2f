//! Answering one witness request (§4.1 steps 1–6): the decisions, a measurement slot, the
//! resolution, the measurement, and the signed observation checked as a reader checks it
//! before it leaves. Shared by `witness answer` and the daemon's witness face.

use super::measure::{self, Measurer};
use super::observation::{self, Reciprocal, SignedObservation};
use super::request::{self, Decline, Resolution};
use super::validate;
use crate::clock::Clock;
use ed25519_dalek::SigningKey;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Who answers: the domain key that signs, the `key_url` serving it, the vantage written into
/// every observation, and the guarded client that measures.
pub struct Responder {
    key: SigningKey,
    key_url: String,
    /// The host of `key_url`, lower-case (a non-default port kept): `source.signed_domain`.
    signed_domain: String,
    vantage: String,
    measurer: Measurer,
}

/// How one request was answered.
#[derive(Debug, Clone)]
pub enum Answer {
    Answered {
        observation: SignedObservation,
        /// The JSON-RPC `result` (§5.4).
        message: Value,
    },
    Declined {
        decline: Decline,
        message: Value,
    },
}

impl Answer {
    pub fn message(&self) -> &Value {
        match self {
            Answer::Answered { message, .. } | Answer::Declined { message, .. } => message,
        }
    }

    pub fn message_mut(&mut self) -> &mut Value {
        match self {
            Answer::Answered { message, .. } | Answer::Declined { message, .. } => message,
        }
    }
}

/// Why a request got no answer message at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotAnswered {
    /// `max_in_flight` measurements were running (§4.6 step 5): try again later.
    Busy { in_flight: usize },
    /// Our own observation failed a reader's check: a bug, never sent (§4.1 step 6).
    Internal(String),
}

impl NotAnswered {
    /// The JSON-RPC error a face answers with (§4.6): busy is 429 (the face adds
    /// `retry-after`), an internal failure 500.
    pub fn rpc_error(&self, id: Value) -> super::request::RpcError {
        match self {
            NotAnswered::Busy { in_flight } => super::request::RpcError::busy(id, *in_flight),
            NotAnswered::Internal(_) => super::request::RpcError::internal(id),
        }
    }
}

/// A slot for one measurement: none when answering without a limit (`witness answer`).
pub struct Slots {
    semaphore: Arc<Semaphore>,
    max: usize,
}

impl Slots {
    pub fn new(max: usize) -> Slots {
        Slots {
            semaphore: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    fn take(&self) -> Result<OwnedSemaphorePermit, NotAnswered> {
        self.semaphore
            .clone()
            .try_acquire_owned()
            .map_err(|_| NotAnswered::Busy {
                in_flight: self.max - self.semaphore.available_permits(),
            })
    }
}

impl Responder {
    /// `vantage` None: the host name of this machine, as §5.1 writes it by default.
    pub fn new(
        key: SigningKey,
        key_url: &str,
        vantage: Option<String>,
        measurer: Measurer,
    ) -> Result<Responder, String> {
        let signed_domain = validate::url_host(key_url)
            .filter(|_| key_url.starts_with("https://"))
            .ok_or_else(|| format!("the key URL {key_url:?} is not an https URL with a host"))?;
        let vantage = vantage
            .unwrap_or_else(|| observation::default_vantage(&machine_host_name(), &signed_domain));
        Ok(Responder {
            key,
            key_url: key_url.to_string(),
            signed_domain,
            vantage,
            measurer,
        })
    }

    pub fn signed_domain(&self) -> &str {
        &self.signed_domain
    }

    /// Answer `request` (the object R found in the message): a decline needs no slot and no
    /// network; a measurement takes one of `slots` (when given) for its whole length.
    /// `recorded_at` overrides the clock's time (`--recorded-at`); `reciprocal` is what the
    /// face decided of a `caller_card` (§6.2), added to the answer's metadata.
    pub async fn answer(
        &self,
        request: &Value,
        slots: Option<&Slots>,
        clock: &dyn Clock,
        recorded_at: Option<&str>,
        reciprocal: Option<Reciprocal<'_>>,
    ) -> Result<Answer, NotAnswered> {
        let allow_private = self.measurer.allows_private();
        let declined = |decline: Decline| {
            let now_ms = clock.now().timestamp_millis().max(0) as u64;
            let message = observation::declined_message(
                decline.reason.as_str(),
                &decline.why,
                now_ms,
                reciprocal,
            );
            Ok(Answer::Declined { decline, message })
        };
        let plan = match request::decide(request, &self.signed_domain, allow_private) {
            Ok(plan) => plan,
            Err(decline) => return declined(decline),
        };
        let _slot = slots.map(Slots::take).transpose()?;
        if !allow_private {
            let host = plan.host_name.clone().unwrap_or_default();
            let resolution = match measure::resolve(&host).await {
                Ok(addresses) => Resolution::Addresses(addresses),
                Err(code) => Resolution::Failed { code },
            };
            if let Err(decline) = request::judge_resolution(&host, &resolution, false) {
                return declined(decline);
            }
        }
        let observed = self.measurer.measure(&plan.target, &plan.surfaces).await;
        let recorded_at =
            recorded_at.map_or_else(|| crate::clock::walked_at(clock.now()), str::to_owned);
        let request_sha256 = request::request_sha256(request);
        let signed = observation::build(
            &observation::Inputs {
                target: &plan.target,
                observed: &observed,
                request_sha256: &request_sha256,
                signed_domain: &self.signed_domain,
                key_url: &self.key_url,
                vantage: &self.vantage,
                recorded_at: &recorded_at,
                unknown_surfaces: &plan.unknown_surfaces,
            },
            &self.key,
        );
        let refused = validate::validate(&signed.record, &validate::Options::default());
        if !refused.is_empty() {
            let codes: Vec<&str> = refused.iter().map(|r| r.as_str()).collect();
            return Err(NotAnswered::Internal(format!(
                "our own observation fails {codes:?}"
            )));
        }
        let message = observation::answered_message(&signed, reciprocal);
        Ok(Answer::Answered {
            observation: signed,
            message,
        })
    }
}

/// This machine's host name (`gethostname`), for the default vantage.
fn machine_host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most that many bytes.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..end]) {
        Ok(name) if ok && !name.is_empty() => name.to_string(),
        _ => "localhost".to_string(),
    }
}
