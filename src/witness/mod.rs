//! The witness side of spec §4.5–§6: keys, signing and the intake client (the filing state
//! machine and lane arithmetic they follow are pure, in `crate::filing`).

pub mod intake;
pub mod keys;
pub mod task_bind;
pub mod task_ledger;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signer, SigningKey};

/// A record's signature as filed: standard padded base64 of the 64-byte signature and of the
/// raw 32-byte public key (§5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    pub signature_b64: String,
    pub public_key_b64: String,
}

/// Sign the exact UTF-8 bytes that will be filed as `record_canonical`.
pub fn sign(canonical: &[u8], key: &SigningKey) -> Signed {
    Signed {
        signature_b64: STANDARD.encode(key.sign(canonical).to_bytes()),
        public_key_b64: keys::public_key_b64(key),
    }
}
