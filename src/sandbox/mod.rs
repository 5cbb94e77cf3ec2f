//! Loopback HTTPS agents that play named scenarios, for tests, benchmarks and the demo.

pub mod https;

pub use https::{Body, Handler, HttpsServer, Req, Resp, SandboxCa, handler};
