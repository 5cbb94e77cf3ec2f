//! What each page shows, read from the store into plain view structs: every query goes through
//! `crate::store`, every check (sha, signature, chain link) is made here, and the renderer
//! ([`super::view`]) only turns these structs into markup.

pub mod endpoint;
pub mod overview;
pub mod record;
pub mod target;

pub use endpoint::{EndpointView, WitnessKey, endpoint};
pub use overview::{OverviewView, TargetRow, overview};
pub use record::{RecordView, record};
pub use target::{TargetView, target};

use super::Context;
use super::TargetInfo;

/// The configured target of this name.
fn configured<'a>(ctx: &'a Context, name: &str) -> Option<&'a TargetInfo> {
    ctx.targets.iter().find(|t| t.name == name)
}

/// A short fingerprint of a base64 public key: the first 16 hex of its sha256.
pub fn key_fingerprint(public_key_b64: &str) -> String {
    use base64::Engine as _;
    match base64::engine::general_purpose::STANDARD.decode(public_key_b64) {
        Ok(raw) => {
            let hex = crate::digest::sha256_hex(&raw);
            format!("sha256:{}", &hex[..16])
        }
        Err(_) => "(not base64)".into(),
    }
}
