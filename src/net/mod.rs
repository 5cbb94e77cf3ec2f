//! The HTTP edge: every outbound request of a walk, a key fetch or a submission goes through
//! [`Transport`], which enforces the security rules (https only, no redirects, address policy,
//! deadline, body cap) and turns whatever happens into plain data ([`Exchange`]).

pub mod options;
pub mod policy;
pub(crate) mod roots;
mod transport;

pub use options::{NetworkOptions, NetworkOptionsError};
pub use policy::{NetPolicy, non_public_kind};
pub use transport::{
    AddressGuard, AnswerHead, BODY_CAP_BYTES, BodyRead, BodyStream, Exchange, HttpRequest,
    REQUEST_DEADLINE, Reached, Session, Transport, TransportConfig, TransportSetupError,
    load_pem_certs,
};

/// An operator-given URL (a config value, a CLI flag) that must be https with a host: the
/// parsed URL, or why not.
pub fn https_url(raw: &str) -> Result<url::Url, String> {
    let u = url::Url::parse(raw).map_err(|e| format!("not a URL ({e})"))?;
    if u.scheme() != "https" {
        return Err(format!(
            "only https:// URLs are used, not {}://",
            u.scheme()
        ));
    }
    if u.host_str().is_none() {
        return Err("the URL has no host".into());
    }
    if let Some(why) = userinfo_refusal(&u) {
        return Err(why);
    }
    Ok(u)
}

/// Whether a URL's host is a loopback name or address: `localhost`, 127.0.0.0/8 or `[::1]`.
pub fn loopback_host(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// A URL with a user name or password (`https://user:pw@host`) is refused wherever one is
/// taken or fetched: the HTTP client would send it as `Authorization: Basic` to whoever answers,
/// and a walk would write it into a signed record that filing publishes.
pub fn userinfo_refusal(url: &url::Url) -> Option<String> {
    (!url.username().is_empty() || url.password().is_some()).then(|| {
        "refused: the URL carries a user name or password (user:password@host); credentials \
         are never sent to an agent nor written into a record"
            .to_string()
    })
}

/// Read a local file that stands in for a fetched body (`card verify --file`, `--jwks`,
/// `terms verify --file`) under the same cap as the network path: a 16 MB file must not cost
/// gigabytes to parse.
pub fn read_file_capped(path: &std::path::Path, cap: usize) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(cap as u64 + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() > cap {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("more than {cap} bytes, the cap for what the network path would read"),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_with_a_user_name_or_password_is_refused_wherever_it_is_given() {
        for raw in [
            "https://user:pw@agent.example",
            "https://user@agent.example/a2a",
            "https://:pw@agent.example/",
        ] {
            let why = https_url(raw).unwrap_err();
            assert!(why.contains("user name or password"), "{raw}: {why}");
        }
        assert!(https_url("https://agent.example/path?u=a@b").is_ok());
    }
}
