//! The HTTP edge: every outbound request of a walk, a key fetch or a submission goes through
//! [`Transport`], which enforces the security rules (https only, no redirects, address policy,
//! deadline, body cap) and turns whatever happens into plain data ([`Exchange`]).

pub mod policy;
mod roots;
mod transport;

pub use policy::{NetPolicy, non_public_kind};
pub use transport::{
    BODY_CAP_BYTES, BodyRead, Exchange, HttpRequest, REQUEST_DEADLINE, Session, Transport,
    TransportConfig, TransportSetupError, load_pem_certs,
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
    Ok(u)
}
