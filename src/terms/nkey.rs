//! NATS NKey public keys, the key encoding the Agent SoW reference SDKs sign with (spec §5.4).
//!
//! A public NKey string is RFC 4648 base32 (upper case, no padding) of
//! `[prefix byte] || [32-byte Ed25519 public key] || [CRC-16/XMODEM of the preceding bytes, LE]`.
//! The encoding is small and fully specified, so it is written here rather than pulled in as a
//! crate: the checksum and prefix checks are exactly the ones the spec names, no more.

/// RFC 4648 base32 alphabet (upper case only: NKeys are never written in lower case).
const BASE32_ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// Prefix bytes of the Ed25519 public-key kinds NKeys define (`type << 3`): user `U`, account
/// `A`, server `N`, operator `O`, cluster `C`. Owners sign with user keys in the SDKs, but every
/// kind here is an Ed25519 key, so a signature by any of them is checked the same way.
const PUBLIC_PREFIXES: [u8; 5] = [20 << 3, 0, 13 << 3, 14 << 3, 2 << 3];

/// 1 prefix byte + 32 key bytes + 2 checksum bytes.
const PUBLIC_RAW_LEN: usize = 35;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NkeyError {
    #[error("NKey {key:?} is not RFC 4648 base32: character {ch:?} is outside A-Z2-7")]
    NotBase32 { key: String, ch: char },
    #[error("NKey {key:?} decodes to {len} bytes; a public NKey is {PUBLIC_RAW_LEN}")]
    WrongLength { key: String, len: usize },
    #[error(
        "NKey {key:?} has a bad checksum: CRC-16/XMODEM is {computed:04x}, the key carries {carried:04x}"
    )]
    BadChecksum {
        key: String,
        computed: u16,
        carried: u16,
    },
    #[error("NKey {key:?} has prefix byte {prefix:#04x}, which is not an Ed25519 public-key kind")]
    NotPublicKey { key: String, prefix: u8 },
}

/// CRC-16/XMODEM: polynomial 0x1021, initial value 0, no reflection, no final XOR.
pub fn crc16_xmodem(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

fn base32_decode(key: &str) -> Result<Vec<u8>, NkeyError> {
    let mut out = Vec::with_capacity(key.len() * 5 / 8);
    let mut acc: u32 = 0;
    let mut bits = 0u32;
    for ch in key.chars() {
        let value = BASE32_ALPHABET
            .iter()
            .position(|&a| a as char == ch)
            .ok_or_else(|| NkeyError::NotBase32 {
                key: key.to_string(),
                ch,
            })? as u32;
        acc = (acc << 5) | value;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Leftover bits (fewer than 8) are padding of an unpadded encoding; a 56-character public
    // key has none, and any other length is refused below by the length check.
    Ok(out)
}

fn base32_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let mut acc: u32 = 0;
    let mut bits = 0u32;
    for &b in bytes {
        acc = (acc << 8) | b as u32;
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(BASE32_ALPHABET[((acc >> bits) & 31) as usize] as char);
        }
        acc &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(BASE32_ALPHABET[((acc << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// Decode a public NKey string to its raw 32-byte Ed25519 public key, checking the base32
/// alphabet, the length, the CRC-16 and the prefix.
pub fn decode_public(key: &str) -> Result<[u8; 32], NkeyError> {
    let raw = base32_decode(key)?;
    if raw.len() != PUBLIC_RAW_LEN || key.len() != 56 {
        return Err(NkeyError::WrongLength {
            key: key.to_string(),
            len: raw.len(),
        });
    }
    let (body, crc) = raw.split_at(PUBLIC_RAW_LEN - 2);
    let carried = u16::from_le_bytes([crc[0], crc[1]]);
    let computed = crc16_xmodem(body);
    if carried != computed {
        return Err(NkeyError::BadChecksum {
            key: key.to_string(),
            computed,
            carried,
        });
    }
    if !PUBLIC_PREFIXES.contains(&body[0]) {
        return Err(NkeyError::NotPublicKey {
            key: key.to_string(),
            prefix: body[0],
        });
    }
    let mut out = [0u8; 32];
    out.copy_from_slice(&body[1..]);
    Ok(out)
}

/// Encode a raw Ed25519 public key as a user (`U…`) NKey, as the SDKs mint owner keys. Used to
/// build fixtures and sandbox documents.
pub fn encode_user_public(raw: &[u8; 32]) -> String {
    let mut bytes = Vec::with_capacity(PUBLIC_RAW_LEN);
    bytes.push(20 << 3);
    bytes.extend_from_slice(raw);
    let crc = crc16_xmodem(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    base32_encode(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "UBMBH4BK6EIHQFVMHLSABFSQXB3JXUFZOXVZQTIERO33AD4HHAI3D7QP";
    const RAW: &str = "5813f02af1107816ac3ae4009650b8769bd0b975eb984d048bb7b00f873811b1";

    #[test]
    fn decodes_and_reencodes_the_fixture_key() {
        let raw = decode_public(KEY).unwrap();
        assert_eq!(hex::encode(raw), RAW);
        assert_eq!(encode_user_public(&raw), KEY);
    }

    #[test]
    fn checksum_bytes_match_the_vector() {
        let mut body = vec![0xa0];
        body.extend(hex::decode(RAW).unwrap());
        assert_eq!(hex::encode(crc16_xmodem(&body).to_le_bytes()), "fe0f");
    }

    #[test]
    fn crc16_xmodem_check_value() {
        // The catalogue check value of CRC-16/XMODEM.
        assert_eq!(crc16_xmodem(b"123456789"), 0x31c3);
    }

    #[test]
    fn refuses_malformed_keys() {
        let bad_crc = format!("{}A", &KEY[..55]);
        assert!(matches!(
            decode_public(&bad_crc),
            Err(NkeyError::BadChecksum { .. })
        ));
        assert!(matches!(
            decode_public(&KEY.to_lowercase()),
            Err(NkeyError::NotBase32 { .. })
        ));
        assert!(matches!(
            decode_public(&KEY[..54]),
            Err(NkeyError::WrongLength { .. })
        ));
        // A seed ("S…", 58 characters) is refused on its length before anything else.
        let seed = "SUAEGDPNTWXACIF45CA23BUY36RIMWZXW5LEHSEOK2ONS5JWJ7PBC2EWBA";
        assert!(matches!(
            decode_public(seed),
            Err(NkeyError::WrongLength { .. })
        ));
        // A 56-character key with a valid checksum but a prefix no public kind has ('S' << 3,
        // the seed prefix byte) is not a public key.
        let mut bytes = vec![18 << 3];
        bytes.extend_from_slice(&[7u8; 32]);
        let crc = crc16_xmodem(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        let private_kind = base32_encode(&bytes);
        assert_eq!(private_kind.len(), 56);
        assert!(matches!(
            decode_public(&private_kind),
            Err(NkeyError::NotPublicKey { prefix, .. }) if prefix == 18 << 3
        ));
    }
}
