//! The reference walker's unverified `card_signature` block (conduct-walk.md §4.3).
//!
//! Everything here reproduces the reference byte for byte, quirks included: the first entry's
//! `protected` is decoded the way Python's lenient `urlsafe_b64decode` does it (characters outside
//! the alphabet are dropped), and `jku_same_host` compares the URL authority exactly as written
//! (case-sensitive), the way `urllib.parse.urlsplit(..).netloc` does. These rules are not the ones
//! verification uses ([`super::jws`] decodes strictly); they exist so that a record written before
//! verification is wired stays byte-identical to the reference's.

use serde_json::{Map, Value, json};

/// `verified_reason` of the absent form (§4.3), exactly.
pub const REASON_ABSENT: &str = "the card carries no signatures field; this extension does not require one, so this is not a finding";

/// `verified_reason` of the reference's present-but-unverified form (§4.3), exactly.
pub const REASON_READ_NOT_VERIFIED: &str = "read, not verified: checking an A2A card signature means reproducing the card's canonical form (RFC 8785 over the proto shape with signatures removed), which this client does not implement. A canonicalizer that is one rule wrong would accuse an honest agent in an append only ledger, so this client reports what the header says and verifies nothing.";

/// The absent form: exactly these four keys (§4.3).
pub fn absent_block() -> Value {
    json!({
        "present": false,
        "count": 0,
        "verified": null,
        "verified_reason": REASON_ABSENT,
    })
}

/// The card's `signatures` array when it is a non-empty array (the only case §4.3 calls present).
pub(crate) fn signatures_of(card: Option<&Value>) -> Option<&Vec<Value>> {
    match card?.get("signatures")? {
        Value::Array(items) if !items.is_empty() => Some(items),
        _ => None,
    }
}

/// What the reference reads from the first entry's header, before any verification.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HeaderSummary {
    pub count: usize,
    pub alg: Option<String>,
    pub kid: Option<String>,
    pub jku: Option<String>,
    pub jku_same_host: Option<bool>,
    pub protected_readable: bool,
}

impl HeaderSummary {
    pub(crate) fn read(signatures: &[Value], origin: &str) -> Self {
        let header = signatures
            .first()
            .and_then(|entry| entry.get("protected"))
            .and_then(Value::as_str)
            .and_then(python_lenient_b64url_decode)
            .and_then(|bytes| python_json_object(&bytes))
            .unwrap_or_default();
        let text = |name: &str| header.get(name).and_then(Value::as_str).map(str::to_owned);
        let jku = text("jku");
        // Only a non-empty string is compared (ref); an unparsable URL on either side gives null.
        let jku_same_host = match jku.as_deref() {
            Some(j) if !j.is_empty() => match (python_netloc(j), python_netloc(origin)) {
                (Some(a), Some(b)) => Some(a == b),
                _ => None,
            },
            _ => None,
        };
        HeaderSummary {
            count: signatures.len(),
            alg: text("alg"),
            kid: text("kid"),
            jku,
            jku_same_host,
            protected_readable: !header.is_empty(),
        }
    }

    /// The §4.3 keys shared by the unverified and the verified block.
    pub(crate) fn write_into(&self, block: &mut Map<String, Value>, drop_jku: bool) {
        block.insert("present".into(), Value::Bool(true));
        block.insert("count".into(), Value::from(self.count));
        block.insert("alg".into(), opt_text(&self.alg));
        block.insert("kid".into(), opt_text(&self.kid));
        let jku = if drop_jku { None } else { self.jku.clone() };
        block.insert("jku".into(), opt_text(&jku));
        block.insert(
            "jku_same_host".into(),
            self.jku_same_host.map_or(Value::Null, Value::Bool),
        );
        block.insert(
            "protected_readable".into(),
            Value::Bool(self.protected_readable),
        );
    }
}

fn opt_text(v: &Option<String>) -> Value {
    v.as_ref().map_or(Value::Null, |s| Value::String(s.clone()))
}

/// The reference's unverified block (§4.3): `verified` null and the long reference reason, or the
/// four-key absent form. `origin` is the walk's base URL.
pub fn read_header(card: Option<&Value>, origin: &str) -> Value {
    let Some(signatures) = signatures_of(card) else {
        return absent_block();
    };
    let mut block = Map::new();
    HeaderSummary::read(signatures, origin).write_into(&mut block, false);
    block.insert("verified".into(), Value::Null);
    block.insert(
        "verified_reason".into(),
        Value::String(REASON_READ_NOT_VERIFIED.into()),
    );
    Value::Object(block)
}

/// Python's `base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))` with its non-strict decoder:
/// characters outside the alphabet are skipped, a completed pad sequence ends the input, and a
/// dangling partial quantum is an error (`None`). A non-ASCII string is an error, as in Python.
pub(crate) fn python_lenient_b64url_decode(s: &str) -> Option<Vec<u8>> {
    if !s.is_ascii() {
        return None;
    }
    let pad = (4 - s.len() % 4) % 4;
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut quad_pos, mut pads, mut left) = (0u8, 0u8, 0u32);
    for c in s.bytes().chain(std::iter::repeat_n(b'=', pad)) {
        if c == b'=' {
            // CPython counts a pad only once two data characters of the quantum are in.
            if quad_pos >= 2 {
                pads += 1;
                if quad_pos + pads >= 4 {
                    return Some(out);
                }
            }
            continue;
        }
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            // urlsafe_b64decode maps `-` and `_` to `+` and `/` first; those are data too.
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => continue,
        } as u32;
        pads = 0;
        match quad_pos {
            0 => {
                left = v;
                quad_pos = 1;
            }
            1 => {
                out.push(((left << 2) | (v >> 4)) as u8);
                left = v & 0x0f;
                quad_pos = 2;
            }
            2 => {
                out.push(((left << 4) | (v >> 2)) as u8);
                left = v & 0x03;
                quad_pos = 3;
            }
            _ => {
                out.push(((left << 6) | v) as u8);
                quad_pos = 0;
            }
        }
    }
    (quad_pos == 0).then_some(out)
}

/// `json.loads(bytes)` when the result is an object; anything else is the empty header. A UTF-8
/// byte-order mark is skipped as Python's encoding detection does.
pub(crate) fn python_json_object(bytes: &[u8]) -> Option<Map<String, Value>> {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    match crate::json::parse_lenient(bytes).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// `urllib.parse.urlsplit(url).netloc`, or `None` where urlsplit raises (unbalanced IPv6
/// brackets). Leading C0 controls and spaces are stripped and tab/CR/LF removed first, as
/// urlsplit does.
pub(crate) fn python_netloc(url: &str) -> Option<String> {
    let cleaned: String = url
        .trim_start_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\r' | '\n'))
        .collect();
    let mut rest = cleaned.as_str();
    if let Some(i) = rest.find(':')
        && i > 0
        && rest.as_bytes()[0].is_ascii_alphabetic()
        && rest[..i]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
    {
        rest = &rest[i + 1..];
    }
    let Some(after) = rest.strip_prefix("//") else {
        return Some(String::new());
    };
    let end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let netloc = &after[..end];
    if netloc.contains('[') != netloc.contains(']') {
        return None;
    }
    Some(netloc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_decoder_drops_junk_and_needs_no_padding() {
        assert_eq!(
            python_lenient_b64url_decode("eyJhIjoxfQ").unwrap(),
            br#"{"a":1}"#
        );
        // Junk is skipped, but the padding is computed from the length with the junk (as
        // Python does), so junk decodes only when the counts happen to line up.
        assert_eq!(
            python_lenient_b64url_decode("eyJhIjo!!!!xfQ").unwrap(),
            br#"{"a":1}"#
        );
        assert_eq!(python_lenient_b64url_decode("eyJhIjo!xfQ"), None);
        // One data character more than a multiple of four cannot be decoded.
        assert_eq!(python_lenient_b64url_decode("eyJhI"), None);
        assert_eq!(python_lenient_b64url_decode("é"), None);
        assert_eq!(
            python_lenient_b64url_decode("-_8").unwrap(),
            vec![0xfb, 0xff]
        );
    }

    #[test]
    fn netloc_is_the_authority_as_written() {
        assert_eq!(
            python_netloc("https://Agent.example:8443/x?y").as_deref(),
            Some("Agent.example:8443")
        );
        assert_eq!(python_netloc("agent.example/x").as_deref(), Some(""));
        assert_eq!(python_netloc("https://[::1/x"), None);
    }
}
