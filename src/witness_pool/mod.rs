//! The witness pool (issue 43; the pool's rules, in our words: the implementer's reference
//! "witness-pool.md"): an agent asks a pool member for an independent observation of an
//! endpoint (`nenrin-witness-request-v1`, an A2A `message/send` to the member's `/a2a`); the
//! member measures up to nine public surfaces of it and answers with a signed
//! `nenrin-witness-observation-v1` that any reader verifies byte for byte.
//!
//! A pure core (no I/O, no clock): [`request`] (finding the request in a message, its checks,
//! its hash, the decisions in order), [`surfaces`] and [`js`] (what each surface's answer is
//! observed as, with the JavaScript semantics the pool's hashes follow), [`observation`] (the
//! record, its canonical bytes, hash and signature, the reply messages), [`validate`] (the
//! readers' checks and refusal codes) and [`screen`] (the name screen and the blocked-address
//! table). The I/O: [`measure`] (the guarded fetches of one measurement).

pub mod ask;
pub mod caller;
pub mod js;
pub mod key_history;
pub mod measure;
pub mod observation;
pub mod publish;
pub mod request;
pub mod responder;
pub mod rotation;
pub mod screen;
pub mod selfcheck;
pub mod surfaces;
pub mod validate;

/// The conduct extension's canonical identifier (EXT); metadata keys are `EXT/<name>`.
pub const EXT: &str = "https://gate.horizonshield.dev/ext/conduct/v1";
/// The extension's permanent identifier (PERMA), accepted wherever EXT is.
pub const PERMA: &str = "https://w3id.org/horizonshield/conduct/v1";
pub const REQUEST_SCHEMA: &str = "nenrin-witness-request-v1";
pub const OBSERVATION_SCHEMA: &str = "nenrin-witness-observation-v1";
