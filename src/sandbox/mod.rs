//! Loopback HTTPS agents that play named scenarios, for tests, benchmarks and the demo.

pub mod agent;
pub mod https;

pub use agent::{
    Behaviour, CardBytes, CardSigning, McpServing, SANDBOX_CARD_KID, SANDBOX_JWKS_PATH,
    SandboxAgent, Scenario, sandbox_jwks, scenario, scenarios,
};
pub use https::{Body, Handler, HttpsServer, Req, Resp, SandboxCa, WireLog, handler};

/// A path under the shared test vectors (`../shared/vectors` beside the repository). Panics
/// naming the folder it looked for when the shared folder is not there, so a test run on a
/// clone without it says why instead of "No such file or directory".
pub fn shared_vectors(rel: &str) -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/vectors");
    assert!(
        root.is_dir(),
        "the test vectors are read from {}, which is not there: put the shared folder beside the repository (../shared)",
        root.display()
    );
    root.join(rel)
}
