//! Loopback HTTPS agents that play named scenarios, for tests, benchmarks and the demo.

pub mod agent;
pub mod https;

pub use agent::{Behaviour, McpServing, SandboxAgent, Scenario, scenario, scenarios};
pub use https::{Body, Handler, HttpsServer, Req, Resp, SandboxCa, WireLog, handler};
