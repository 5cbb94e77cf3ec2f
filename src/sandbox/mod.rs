//! Loopback HTTPS agents that play named scenarios, for tests, benchmarks and the demo.

pub mod agent;
pub mod https;
pub mod notify;
pub mod pool;

pub use agent::{
    Behaviour, CardBytes, CardSigning, McpServing, SANDBOX_CARD_KID, SANDBOX_JWKS_PATH,
    SandboxAgent, Scenario, sandbox_jwks, scenario, scenarios,
};
pub use https::{Body, Handler, HttpsServer, Req, Resp, SandboxCa, WireLog, handler};

/// A path under the test vectors (`tests/vectors/` in the repository; where each file came
/// from: `tests/vectors/PROVENANCE.md`).
pub fn test_vectors(rel: &str) -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors");
    root.join(rel)
}
