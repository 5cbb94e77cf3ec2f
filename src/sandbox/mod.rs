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

/// Where the witness's domain lives: a loopback address of its own. A loopback machine has one
/// name (`localhost`) and one usual address (`127.0.0.1`), and three parties need a host each:
/// the agents are at `127.0.0.1`, the asking origin is told at `localhost` (a notify URL may be
/// neither an IP literal nor one of our own hosts), and the witness's domain (key_url, face
/// origin) may be neither of those (the intake refuses a record signed by its endpoint's host,
/// `self_witness`). Linux routes all of 127.0.0.0/8 to the loopback interface.
pub const WITNESS_ADDRESS: &str = "127.0.0.2";

/// A path under the test vectors (`tests/vectors/` in the repository; where each file came
/// from: `tests/vectors/PROVENANCE.md`).
pub fn test_vectors(rel: &str) -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors");
    root.join(rel)
}
