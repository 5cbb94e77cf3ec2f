//! Which destinations a fetch may reach.
//!
//! Only `https://` (the alert transport alone also takes plain http to a named loopback host:
//! `TransportConfig::plain_http_loopback`). Non-public addresses (private, loopback,
//! link-local, unspecified, shared, multicast, reserved; IPv4 and IPv6, IPv4-mapped and
//! embedded forms included) are refused, unless the operator allowed private networks **and**
//! named that exact host and port. A host that only a card names is never admitted to a private
//! address.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The operator's network rules for one run.
#[derive(Debug, Clone, Default)]
pub struct NetPolicy {
    /// `--allow-private-network`: non-public addresses are admitted at `allowed_hosts` only.
    pub allow_private_network: bool,
    /// `(lower-case host, port)` pairs the operator named (origin, endpoint, intake, allow-host).
    allowed_hosts: HashSet<(String, u16)>,
}

impl NetPolicy {
    pub fn new(allow_private_network: bool) -> Self {
        NetPolicy {
            allow_private_network,
            allowed_hosts: HashSet::new(),
        }
    }

    /// Name a host the operator chose, from a URL (`https://host:port/...`). Invalid URLs are
    /// ignored here: the fetch itself reports them.
    pub fn allow_url(&mut self, raw: &str) {
        if let Ok(u) = url::Url::parse(raw)
            && let (Some(host), Some(port)) = (u.host_str(), u.port_or_known_default())
        {
            self.allowed_hosts.insert((normalize_host(host), port));
        }
    }

    /// Name a host from `HOST:PORT` (`--allow-host`); IPv6 as `[::1]:8443`.
    pub fn allow_host_port(&mut self, spec: &str) -> Result<(), String> {
        let parsed = url::Url::parse(&format!("https://{spec}/"))
            .map_err(|e| format!("--allow-host {spec:?} is not HOST:PORT ({e})"))?;
        let host = parsed
            .host_str()
            .ok_or_else(|| format!("--allow-host {spec:?} has no host"))?;
        let port = parsed
            .port()
            .ok_or_else(|| format!("--allow-host {spec:?} needs an explicit port"))?;
        self.allowed_hosts.insert((normalize_host(host), port));
        Ok(())
    }

    /// Whether a non-public address may be reached at this host and port.
    pub fn private_allowed_at(&self, host: &str, port: u16) -> bool {
        self.allow_private_network && self.allowed_hosts.contains(&(normalize_host(host), port))
    }
}

fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// Why an address is not public, or `None` for a public address.
pub fn non_public_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_kind(v4),
        IpAddr::V6(v6) => v6_kind(v6),
    }
}

fn v4_kind(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if o[0] == 0 {
        Some("unspecified")
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        Some("shared (carrier-grade NAT)")
    } else if o[0] == 192 && o[1] == 0 && o[2] == 0 {
        Some("IETF protocol assignment")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if ip.is_broadcast() || o[0] >= 240 {
        Some("reserved")
    } else if (o[0] == 198 && (o[1] & 0xfe) == 18) || ip.is_documentation() {
        Some("benchmarking or documentation")
    } else {
        None
    }
}

fn v6_kind(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip.is_loopback() {
        return Some("loopback");
    }
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_kind(v4).or(None);
    }
    // IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16) embed an IPv4 address.
    if s[0..6] == [0, 0, 0, 0, 0, 0] || s[0..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        return v4_kind(v4);
    }
    if s[0] == 0x2002 {
        let v4 = Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8);
        if let Some(kind) = v4_kind(v4) {
            return Some(kind);
        }
    }
    match s[0] {
        x if (x & 0xffc0) == 0xfe80 => Some("link-local"),
        x if (x & 0xffc0) == 0xfec0 => Some("site-local"),
        x if (x & 0xfe00) == 0xfc00 => Some("private (unique local)"),
        x if (x & 0xff00) == 0xff00 => Some("multicast"),
        0x2001 if s[1] == 0x0db8 => Some("documentation"),
        0x0100 if s[1..4] == [0, 0, 0] => Some("discard-only"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(s: &str) -> Option<&'static str> {
        non_public_kind(s.parse().unwrap())
    }

    #[test]
    fn classifies_non_public_addresses() {
        for (addr, expected) in [
            ("127.0.0.1", "loopback"),
            ("10.1.2.3", "private"),
            ("172.31.0.1", "private"),
            ("192.168.0.1", "private"),
            ("169.254.169.254", "link-local"),
            ("0.0.0.0", "unspecified"),
            ("100.64.0.1", "shared (carrier-grade NAT)"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fe80::1", "link-local"),
            ("fd00::1", "private (unique local)"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.0.0.1", "private"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
            ("2002:7f00:1::", "loopback"),
        ] {
            assert_eq!(kind(addr), Some(expected), "{addr}");
        }
        assert_eq!(kind("93.184.216.34"), None);
        assert_eq!(kind("2606:4700::1111"), None);
        assert_eq!(kind("::ffff:93.184.216.34"), None);
    }

    #[test]
    fn decimal_and_hex_spellings_parse_to_loopback() {
        // The URL parser turns these spellings into 127.0.0.1 before we classify.
        for raw in ["https://2130706433/", "https://0x7f.1/", "https://127.1/"] {
            let u = url::Url::parse(raw).unwrap();
            match u.host() {
                Some(url::Host::Ipv4(ip)) => assert_eq!(v4_kind(ip), Some("loopback"), "{raw}"),
                other => panic!("{raw} parsed as {other:?}"),
            }
        }
    }

    #[test]
    fn private_admitted_only_at_named_host_and_port() {
        let mut p = NetPolicy::new(true);
        p.allow_url("https://127.0.0.1:8443/x");
        p.allow_host_port("LOCALHOST:9000").unwrap();
        assert!(p.private_allowed_at("127.0.0.1", 8443));
        assert!(!p.private_allowed_at("127.0.0.1", 8444));
        assert!(p.private_allowed_at("localhost", 9000));
        let off = {
            let mut q = NetPolicy::new(false);
            q.allow_url("https://127.0.0.1:8443/");
            q
        };
        assert!(!off.private_allowed_at("127.0.0.1", 8443));
        assert!(p.allow_host_port("nohostport").is_err());
    }
}
