//! Signed Agent Cards (A2A §8.4): reading the first signature's protected header the way the
//! reference walker does (conduct-walk.md §4.3).

use base64::Engine;
use serde_json::{Map, Value, json};

/// §4.3 `verified_reason` when the card carries no signatures.
pub const REASON_ABSENT: &str = "the card carries no signatures field; this extension does not require one, so this is not a finding";
/// §4.3 `verified_reason` of the reference, which reads the header and verifies nothing.
pub const REASON_NOT_VERIFIED: &str = "read, not verified: checking an A2A card signature means reproducing the card's canonical form (RFC 8785 over the proto shape with signatures removed), which this client does not implement. A canonicalizer that is one rule wrong would accuse an honest agent in an append only ledger, so this client reports what the header says and verifies nothing.";

/// The reference's `card_signature` block: header read, nothing verified.
pub fn read_header(card: Option<&Value>, origin: &str) -> Value {
    let signatures = card
        .and_then(|c| c.get("signatures"))
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty());
    let Some(signatures) = signatures else {
        return json!({
            "present": false,
            "count": 0,
            "verified": null,
            "verified_reason": REASON_ABSENT,
        });
    };
    let header = signatures[0]
        .get("protected")
        .and_then(Value::as_str)
        .and_then(decode_protected_lenient)
        .unwrap_or_default();
    let field = |k: &str| header.get(k).and_then(Value::as_str).map(str::to_string);
    let jku = field("jku");
    let jku_same_host = jku
        .as_deref()
        .filter(|j| !j.is_empty())
        .map(|j| netloc(j) == netloc(origin));
    json!({
        "present": true,
        "count": signatures.len(),
        "alg": field("alg"),
        "kid": field("kid"),
        "jku": jku,
        "jku_same_host": jku_same_host,
        "protected_readable": !header.is_empty(),
        "verified": null,
        "verified_reason": REASON_NOT_VERIFIED,
    })
}

/// Python `urlsafe_b64decode` after padding: characters outside the alphabet are dropped.
fn decode_protected_lenient(text: &str) -> Option<Map<String, Value>> {
    let filtered: String = text
        .chars()
        .filter_map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '+' | '/' => Some(c),
            '-' => Some('+'),
            '_' => Some('/'),
            _ => None,
        })
        .collect();
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    let bytes = engine.decode(filtered).ok()?;
    crate::json::parse_lenient(&bytes)
        .ok()?
        .as_object()
        .cloned()
}

/// The authority of a URL as written (`urlsplit(...).netloc`).
fn netloc(url: &str) -> &str {
    let Some((_, rest)) = url.split_once("//") else {
        return "";
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    &rest[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    #[test]
    fn absent_form_has_four_keys() {
        let v = read_header(Some(&json!({"signatures": []})), "https://a");
        assert_eq!(v.as_object().unwrap().len(), 4);
        assert_eq!(v["present"], json!(false));
        assert_eq!(read_header(None, "https://a"), v);
    }

    #[test]
    fn header_fields_and_jku_host() {
        let header = URL_SAFE_NO_PAD
            .encode(br#"{"alg":"EdDSA","kid":"k1","jku":"https://a.example/jwks.json"}"#);
        let card = json!({"signatures": [{"protected": header, "signature": "x"}, {}]});
        let v = read_header(Some(&card), "https://a.example");
        assert_eq!(v["count"], json!(2));
        assert_eq!(v["alg"], json!("EdDSA"));
        assert_eq!(v["jku_same_host"], json!(true));
        assert_eq!(v["protected_readable"], json!(true));
        let other = read_header(Some(&card), "https://A.example");
        assert_eq!(
            other["jku_same_host"],
            json!(false),
            "case-sensitive authority"
        );
        let garbled = read_header(
            Some(&json!({"signatures": [{"protected": "!!"}]})),
            "https://a",
        );
        assert_eq!(garbled["protected_readable"], json!(false));
        assert_eq!(garbled["jku_same_host"], Value::Null);
    }
}
