//! §6.2 step 5: Ed25519 over the UTF-8 bytes of `record_canonical`, with both values decoded
//! the way the intake's `atob` does (WHATWG forgiving-base64).

use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use ed25519_dalek::{Signature, Verifier, VerifyingKey};

/// Standard alphabet, no padding expected (it is stripped first), and leftover bits ignored:
/// `atob` never checks that the unused low bits of the last character are zero.
const FORGIVING: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);

/// WHATWG forgiving-base64 decode: ASCII whitespace removed, one or two `=` allowed only as
/// padding to a multiple of four, standard alphabet only (`-` and `_` refused).
pub fn forgiving_base64_decode(input: &str) -> Option<Vec<u8>> {
    let mut data: String = input
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\u{c}' | '\r' | ' '))
        .collect();
    if data.len().is_multiple_of(4) {
        if data.ends_with("==") {
            data.truncate(data.len() - 2);
        } else if data.ends_with('=') {
            data.truncate(data.len() - 1);
        }
    }
    if data.len() % 4 == 1 {
        return None;
    }
    if !data
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
    {
        return None;
    }
    FORGIVING.decode(data).ok()
}

/// Whether `signature_b64` is a valid Ed25519 signature by `public_key_b64` over `message`.
/// Undecodable base64, a key that is not 32 bytes or a signature that is not 64 bytes all count
/// as "does not verify", as at the intake.
pub fn verifies(message: &[u8], signature_b64: &str, public_key_b64: &str) -> bool {
    let Some(signature) = forgiving_base64_decode(signature_b64)
        .and_then(|b| <[u8; 64]>::try_from(b).ok())
        .map(|b| Signature::from_bytes(&b))
    else {
        return false;
    };
    let Some(key) = forgiving_base64_decode(public_key_b64)
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .and_then(|b| VerifyingKey::from_bytes(&b).ok())
    else {
        return false;
    };
    // Plain RFC 8032 verification (not `verify_strict`): WebCrypto Ed25519 does not refuse
    // small-order keys either.
    key.verify(message, &signature).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    #[test]
    fn forgiving_decode_rules() {
        assert_eq!(forgiving_base64_decode("aGk=").unwrap(), b"hi");
        assert_eq!(forgiving_base64_decode("aGk").unwrap(), b"hi");
        assert_eq!(forgiving_base64_decode(" a G\nk = ").unwrap(), b"hi");
        assert_eq!(
            forgiving_base64_decode("aGl=").unwrap(),
            b"hi",
            "trailing bits ignored"
        );
        assert_eq!(forgiving_base64_decode("").unwrap(), b"");
        assert!(forgiving_base64_decode("aGk==").is_none());
        assert!(forgiving_base64_decode("a").is_none());
        assert!(forgiving_base64_decode("a-_b").is_none());
        assert!(forgiving_base64_decode("aG=k").is_none());
    }

    #[test]
    fn verifies_padded_and_unpadded_standard_base64() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let msg = b"{\"a\":1}";
        let sig = base64::engine::general_purpose::STANDARD.encode(key.sign(msg).to_bytes());
        let pk = base64::engine::general_purpose::STANDARD.encode(key.verifying_key().to_bytes());
        assert!(verifies(msg, &sig, &pk));
        assert!(verifies(
            msg,
            sig.trim_end_matches('='),
            pk.trim_end_matches('=')
        ));
        assert!(!verifies(b"{\"a\":2}", &sig, &pk));
        assert!(!verifies(msg, &sig, &pk[..40]));
        let url_safe = sig.replace('+', "-").replace('/', "_");
        if url_safe != sig {
            assert!(!verifies(msg, &url_safe, &pk));
        }
    }
}
