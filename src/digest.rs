//! SHA-256 helpers: every hash in a record is lower-case hex SHA-256.

use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: impl AsRef<[u8]>) -> String {
    hex::encode(Sha256::digest(bytes.as_ref()))
}

/// Raw SHA-256 of some bytes.
pub fn sha256(bytes: impl AsRef<[u8]>) -> [u8; 32] {
    Sha256::digest(bytes.as_ref()).into()
}

/// §4.6 commitment: lower-case hex sha256(full record's canonical bytes || 32-byte salt).
/// One definition for the walker that makes it and the store that opens it.
pub fn commitment_hex(full_canonical: &[u8], salt: &[u8; 32]) -> String {
    let mut h = Sha256::new();
    h.update(full_canonical);
    h.update(salt);
    hex::encode(h.finalize())
}

/// SHA-256 of the empty string: the body hash of a node with no body.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// `headers_sha256` recipe (§2.7): `lowercase(name) + ": " + value` per header, lines sorted by
/// code point, joined by `\n` with no trailing newline.
pub fn headers_sha256<'a, I>(headers: I) -> String
where
    I: IntoIterator<Item = (&'a str, &'a str)>,
{
    let mut lines: Vec<String> = headers
        .into_iter()
        .map(|(name, value)| format!("{}: {}", name.to_lowercase(), value))
        .collect();
    lines.sort_unstable();
    sha256_hex(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_hash_constant_matches() {
        assert_eq!(sha256_hex(b""), EMPTY_SHA256);
        assert_eq!(headers_sha256(std::iter::empty()), EMPTY_SHA256);
    }

    #[test]
    fn accept_header_example() {
        assert_eq!(
            headers_sha256([("Accept", "application/json")]),
            "6ef25204daf0747948b5d550c49e655279e7bf3cded1c74ce45c7958f97d4d47"
        );
    }
}
