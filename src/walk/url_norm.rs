//! URL normal form for endpoint_bound (§3.8, spec §14.4): a Python-`urlsplit`-style reading, not
//! WHATWG's, because the path must stay exactly as written (no percent-decoding, no dot-segment
//! removal) and only `:443` and host case are folded.

/// `https://` + lower-case host (IPv6 in brackets) + `:port` unless absent or 443 + the path as
/// written (empty → `/`). Query, fragment and user info are dropped. None unless the scheme is
/// https (any case), the host is non-empty and the port is valid.
pub fn url_norm(raw: &str) -> Option<String> {
    // urlsplit strips surrounding C0/space and removes tab/CR/LF anywhere.
    let cleaned: String = raw
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\r' | '\n'))
        .collect();
    let (scheme, rest) = cleaned.split_once(':')?;
    if !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    let rest = rest.strip_prefix("//")?;
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let path_end = tail.find(['?', '#']).unwrap_or(tail.len());
    let path = &tail[..path_end];
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let (host, port) = if let Some(bracketed) = hostport.strip_prefix('[') {
        let (inside, after) = bracketed.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return None,
        };
        (format!("[{}]", inside.to_lowercase()), port)
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_lowercase(), Some(p)),
            None => (hostport.to_lowercase(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return None;
    }
    let port: Option<u16> = match port {
        None | Some("") => None,
        Some(p) if p.bytes().all(|b| b.is_ascii_digit()) => Some(p.parse().ok()?),
        Some(_) => return None,
    };
    let mut out = format!("https://{host}");
    if let Some(p) = port.filter(|p| *p != 443) {
        out.push_str(&format!(":{p}"));
    }
    out.push_str(if path.is_empty() { "/" } else { path });
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::url_norm;

    #[test]
    fn folds_default_port_and_host_case_only() {
        let n = |s| url_norm(s);
        assert_eq!(
            n("https://AGENT.Selftest.invalid:443/mcp").as_deref(),
            Some("https://agent.selftest.invalid/mcp")
        );
        assert_eq!(
            n("HTTPS://a.example/mcp?x=1#f").as_deref(),
            Some("https://a.example/mcp")
        );
        assert_eq!(
            n("https://user:pw@a.example:8443").as_deref(),
            Some("https://a.example:8443/")
        );
        assert_eq!(
            n("https://a.example:80/x/../y").as_deref(),
            Some("https://a.example:80/x/../y")
        );
        assert_eq!(
            n("https://[::1]:8443/p%2F").as_deref(),
            Some("https://[::1]:8443/p%2F")
        );
        assert_ne!(n("https://a.example/mcp/"), n("https://a.example/mcp"));
        assert_eq!(n("http://a.example/mcp"), None);
        assert_eq!(n("https:///mcp"), None);
        assert_eq!(n("https://a.example:99999/"), None);
        assert_eq!(n("https://a.example:x/"), None);
        assert_eq!(n("mailto:x"), None);
    }
}
