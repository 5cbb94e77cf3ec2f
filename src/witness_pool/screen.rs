//! The first two of the witness's three guards (§4.2, §4.3), pure: the name screen of a
//! target, and the table of blocked addresses. The third, resolving every address and
//! connecting only to a vetted one, is [`super::measure`]'s.
//!
//! A stranger names the target, so the screen and the table decide what a pool member may be
//! made to fetch: nothing inside a network, whatever the name resolves to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The third guard as the transport applies it (§4.4): every address of a host vetted by
/// [`is_blocked`], port 443 only. Every fetch a stranger names goes through it: measurements,
/// a reciprocal caller's host, consent file, walk and intake, a notify URL.
pub const GUARD: crate::net::AddressGuard = crate::net::AddressGuard {
    blocked: is_blocked,
    only_port: 443,
};

/// Suffixes of names that are not public DNS names (§4.2), compared in ASCII form.
const PRIVATE_SUFFIXES: [&str; 11] = [
    ".local",
    ".localhost",
    ".internal",
    ".intranet",
    ".lan",
    ".home",
    ".corp",
    ".test",
    ".example",
    ".invalid",
    ".onion",
];

/// §4.2: whether a target endpoint may be measured at all, judged by its name alone (what it
/// resolves to is judged later, §4.4). Ok, or the why a requester is told, in the spec's order.
pub fn name_screen(endpoint: &str) -> Result<(), String> {
    let url = url::Url::parse(endpoint).map_err(|_| "not a URL".to_string())?;
    if url.scheme() != "https" {
        return Err("only https origins are measured".into());
    }
    // WHATWG drops the default port while parsing: `:443` is not explicit.
    if url.port().is_some() {
        return Err("an explicit port is not measured (public origins answer on 443)".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("credentials in the origin are refused".into());
    }
    match url.host() {
        Some(url::Host::Domain(name)) => public_dns_name(name),
        // `0x7f.1` and `2130706433` are IPv4 literals once WHATWG has read them.
        Some(url::Host::Ipv4(_) | url::Host::Ipv6(_)) => Err("IP literals are not measured".into()),
        None => Err("not a URL".into()),
    }
}

/// A host name (ASCII form, as WHATWG gives it) that could be a public DNS name. Only the
/// name: `localhost.` passes here and is refused when it resolves to loopback (ref).
fn public_dns_name(name: &str) -> Result<(), String> {
    let local = name == "localhost"
        || !name.contains('.')
        || PRIVATE_SUFFIXES.iter().any(|s| name.ends_with(s));
    if local {
        return Err(format!("not a public DNS name: {name}"));
    }
    Ok(())
}

/// §4.3: whether a witness may connect to this address. IPv4-mapped (`::ffff:a.b.c.d`) and
/// NAT64 (`64:ff9b::/96`) addresses are judged by the IPv4 address in their last 32 bits.
///
/// Beyond the reference's table (which the spec calls the minimum), forms that can reach an
/// inside network through a relay are refused too: 6to4 (`2002::/16`) judged by the IPv4 it
/// embeds, Teredo (`2001::/32`), the local-use NAT64 prefix (`64:ff9b:1::/48`) and discard-only
/// (`100::/64`). Two gaps stay as the reference leaves them, because the table's listed cases
/// judge their neighbours public (`::2`, `feff::1`) and no system routes them today: the
/// deprecated IPv4-compatible form (`::a.b.c.d`) and site-local (`fec0::/10`).
pub fn is_blocked(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => blocked_v6(v6),
    }
}

/// [`is_blocked`] for address text: a `%zone` suffix dropped, then strict parsing (four
/// decimal parts without leading zeros; RFC 4291 text). Anything that is not an address is
/// blocked: fail closed.
pub fn is_blocked_text(text: &str) -> bool {
    let bare = text
        .split_once('%')
        .map_or(text, |(address, _zone)| address);
    match bare.parse::<IpAddr>() {
        Ok(ip) => is_blocked(ip),
        Err(_) => true,
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn blocked_v4(ip: Ipv4Addr) -> bool {
    const BLOCKED: [([u8; 4], u32); 14] = [
        ([0, 0, 0, 0], 8),
        ([10, 0, 0, 0], 8),
        ([100, 64, 0, 0], 10),
        ([127, 0, 0, 0], 8),
        ([169, 254, 0, 0], 16),
        ([172, 16, 0, 0], 12),
        ([192, 0, 0, 0], 24),
        ([192, 0, 2, 0], 24),
        ([192, 168, 0, 0], 16),
        ([198, 18, 0, 0], 15),
        ([198, 51, 100, 0], 24),
        ([203, 0, 113, 0], 24),
        ([224, 0, 0, 0], 4),
        ([240, 0, 0, 0], 4),
    ];
    BLOCKED.iter().any(|&(net, prefix)| in_v4(ip, net, prefix))
}

fn in_v6(ip: Ipv6Addr, net: u128, prefix: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
    u128::from(ip) & mask == net & mask
}

/// The IPv4 address in the last 32 bits.
fn last_32(ip: Ipv6Addr) -> Ipv4Addr {
    Ipv4Addr::from((u128::from(ip) & 0xffff_ffff) as u32)
}

fn blocked_v6(ip: Ipv6Addr) -> bool {
    let bits = u128::from(ip);
    if in_v6(ip, 0xffff_0000_0000, 96) || in_v6(ip, 0x0064_ff9b << 96, 96) {
        return blocked_v4(last_32(ip));
    }
    if in_v6(ip, 0x2002 << 112, 16) {
        // 6to4: the IPv4 address sits in bits 16..48.
        return blocked_v4(Ipv4Addr::from((bits >> 80) as u32));
    }
    const BLOCKED: [(u128, u32); 9] = [
        (0, 128),                     // ::
        (1, 128),                     // ::1
        (0xfe80 << 112, 10),          // link-local
        (0xfc00 << 112, 7),           // unique local
        (0xff00 << 112, 8),           // multicast
        (0x2001_0db8 << 96, 32),      // documentation
        (0x2001_0000 << 96, 32),      // Teredo (ours)
        (0x0064_ff9b_0001 << 80, 48), // local-use NAT64 (ours)
        (0x0100 << 112, 64),          // discard-only (ours)
    ];
    BLOCKED.iter().any(|&(net, prefix)| in_v6(ip, net, prefix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn vectors(name: &str) -> Value {
        let path = crate::sandbox::test_vectors(&format!("witness-pool/{name}"));
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn every_listed_address_is_judged_as_the_table_says() {
        let table = vectors("ssrf-table.json");
        let gaps: Vec<&str> = table["reference_gaps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["address"].as_str().unwrap())
            .collect();
        let mut judged = 0;
        for case in table["cases"].as_array().unwrap() {
            let address = case["address"].as_str().unwrap();
            // The spec lets an implementation refuse these too; no assertion either way.
            if gaps.contains(&address) {
                continue;
            }
            let want = case["blocked"].as_bool().unwrap();
            assert_eq!(
                is_blocked_text(address),
                want,
                "{address:?}: {}",
                case["why"]
            );
            judged += 1;
        }
        assert!(judged >= 110, "{judged} cases judged");
    }

    #[test]
    fn the_forms_that_reach_inside_through_a_relay_are_refused_too() {
        for address in [
            "2002:a00:1::1",
            "2002:7f00:1::1",
            "2001::a9fe:a9fe",
            "64:ff9b:1::a00:1",
            "100::1",
        ] {
            assert!(is_blocked_text(address), "{address}");
        }
        // 6to4 of a public address stays public, as does its neighbour prefix.
        assert!(!is_blocked_text("2002:808:808::1"));
        assert!(!is_blocked_text("2003::1"));
    }

    #[test]
    fn the_name_screen_judges_every_listed_target() {
        let requests = vectors("requests.json");
        let cases = requests["target_screen"].as_array().unwrap();
        assert_eq!(cases.len(), 28);
        for case in cases {
            let endpoint = case["endpoint"].as_str().unwrap();
            let got = name_screen(endpoint);
            match case["why"].as_str() {
                None => assert_eq!(got, Ok(()), "{endpoint}"),
                Some(why) => assert_eq!(got, Err(why.to_string()), "{endpoint}"),
            }
            assert_eq!(
                got.is_ok(),
                case["allowed"].as_bool().unwrap(),
                "{endpoint}"
            );
        }
    }
}
