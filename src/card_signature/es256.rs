//! ES256 as the walk record checks it (conduct-walk.md §4.3 C.4): a JWK with P-256 `x`/`y` and a
//! 64-byte `r||s` signature. Distinguishes a check that could not be made (the form is skipped
//! without a note) from one that was made and failed.

use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use serde_json::Value;

/// Field size of P-256 in bytes.
const COORDINATE_BYTES: usize = 32;

/// A key and signature that can be checked: the JWK is an on-curve P-256 point and the signature
/// is exactly 64 bytes. `None` from [`Es256Check::new`] means "skipped silently".
pub struct Es256Check {
    key: VerifyingKey,
    signature: [u8; 64],
}

impl Es256Check {
    /// `jwk` is the JWKS entry; `signature_b64url` the entry's `signature` member.
    pub fn new(jwk: &Value, signature_b64url: Option<&str>) -> Option<Self> {
        if jwk.get("kty").and_then(Value::as_str) != Some("EC")
            || jwk.get("crv").and_then(Value::as_str) != Some("P-256")
        {
            return None;
        }
        let coordinate = |name: &str| {
            let bytes = super::header::python_lenient_b64url_decode(jwk.get(name)?.as_str()?)?;
            // Read as a big-endian integer (leading zero bytes allowed); out of range is refused.
            let significant = &bytes[bytes.iter().take_while(|b| **b == 0).count()..];
            (significant.len() <= COORDINATE_BYTES).then(|| {
                let mut fixed = [0u8; COORDINATE_BYTES];
                fixed[COORDINATE_BYTES - significant.len()..].copy_from_slice(significant);
                fixed
            })
        };
        let (x, y) = (coordinate("x")?, coordinate("y")?);
        let mut sec1 = Vec::with_capacity(65);
        sec1.push(0x04);
        sec1.extend_from_slice(&x);
        sec1.extend_from_slice(&y);
        // Refuses a coordinate ≥ p and a point off the curve.
        let key = VerifyingKey::from_sec1_bytes(&sec1).ok()?;
        let signature = super::header::python_lenient_b64url_decode(signature_b64url?)?;
        Some(Es256Check {
            key,
            signature: signature.try_into().ok()?,
        })
    }

    /// Whether the signature holds over `signing_input` (r or s outside [1, n) fails).
    pub fn verifies(&self, signing_input: &[u8]) -> bool {
        match Signature::from_slice(&self.signature) {
            Ok(signature) => self.key.verify(signing_input, &signature).is_ok(),
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
    use p256::ecdsa::SigningKey;
    use p256::ecdsa::signature::Signer;
    use serde_json::json;

    fn key() -> (SigningKey, Value) {
        let sk = SigningKey::from_slice(&[7u8; 32]).unwrap();
        let point = sk.verifying_key().to_sec1_point(false);
        let jwk = json!({"kty":"EC","crv":"P-256","kid":"k",
            "x": B64.encode(point.x().unwrap()), "y": B64.encode(point.y().unwrap())});
        (sk, jwk)
    }

    #[test]
    fn verifies_and_fails() {
        let (sk, jwk) = key();
        let sig: Signature = sk.sign(b"a.b");
        let sig = B64.encode(sig.to_bytes());
        let check = Es256Check::new(&jwk, Some(&sig)).expect("checkable");
        assert!(check.verifies(b"a.b"));
        assert!(!check.verifies(b"a.c"));
    }

    #[test]
    fn unusable_keys_and_short_signatures_are_skipped() {
        let (sk, jwk) = key();
        let sig = B64.encode(Signature::to_bytes(&sk.sign(b"x")));
        let mut wrong_curve = jwk.clone();
        wrong_curve["crv"] = json!("P-384");
        assert!(Es256Check::new(&wrong_curve, Some(&sig)).is_none());
        let mut no_y = jwk.clone();
        no_y.as_object_mut().unwrap().remove("y");
        assert!(Es256Check::new(&no_y, Some(&sig)).is_none());
        let mut off_curve = jwk.clone();
        off_curve["y"] = json!(B64.encode([1u8; 32]));
        assert!(Es256Check::new(&off_curve, Some(&sig)).is_none());
        assert!(Es256Check::new(&jwk, Some(&B64.encode([1u8; 63]))).is_none());
        assert!(Es256Check::new(&jwk, None).is_none());
    }

    #[test]
    fn zero_r_is_tried_and_fails() {
        let (_, jwk) = key();
        let sig = B64.encode([0u8; 64]);
        let check = Es256Check::new(&jwk, Some(&sig)).expect("64 bytes: tried");
        assert!(!check.verifies(b"anything"));
    }
}
