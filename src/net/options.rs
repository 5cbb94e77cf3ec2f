//! One set of network options for every command and for the daemon (issue 14, section 5). The
//! command-line flags (`cli::net::NetArgs`) and the config's `[network]` section both map onto
//! [`NetworkOptions`], and only it turns them into a transport, so `--ca-cert`,
//! `--allow-private-network`, `--allow-host`, the deadline and the body cap mean the same
//! wherever they are given.

use super::{BODY_CAP_BYTES, NetPolicy, REQUEST_DEADLINE, Transport, TransportConfig};
use super::{TransportSetupError, load_pem_certs};
use rustls_pki_types::CertificateDer;
use std::path::PathBuf;
use std::time::Duration;

/// The request deadline's range in seconds, for the flag and the config key alike.
pub const DEADLINE_SECS_RANGE: (u64, u64) = (1, 300);
/// The body cap's range in bytes, for the flag and the config key alike.
pub const BODY_CAP_RANGE: (u64, u64) = (1024, 64 << 20);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkOptions {
    /// Admit private, loopback and link-local addresses, but only at the hosts the operator
    /// named (the URLs given to [`NetworkOptions::policy`] and `allow_hosts`).
    pub allow_private_network: bool,
    /// More `HOST:PORT`s where private addresses are admitted.
    pub allow_hosts: Vec<String>,
    /// PEM files whose certificates are trusted beside the system's roots.
    pub extra_ca: Vec<PathBuf>,
    pub deadline: Duration,
    pub body_cap: usize,
}

impl Default for NetworkOptions {
    fn default() -> Self {
        NetworkOptions {
            allow_private_network: false,
            allow_hosts: Vec::new(),
            extra_ca: Vec::new(),
            deadline: REQUEST_DEADLINE,
            body_cap: BODY_CAP_BYTES,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum NetworkOptionsError {
    #[error("{0}")]
    AllowHost(String),
    #[error(transparent)]
    Setup(#[from] TransportSetupError),
}

impl NetworkOptions {
    /// The destination rules: private addresses only at `named` URLs and `allow_hosts`.
    pub fn policy(&self, named: &[&str]) -> Result<NetPolicy, NetworkOptionsError> {
        let mut policy = NetPolicy::new(self.allow_private_network);
        for url in named {
            policy.allow_url(url);
        }
        for spec in &self.allow_hosts {
            policy
                .allow_host_port(spec)
                .map_err(NetworkOptionsError::AllowHost)?;
        }
        Ok(policy)
    }

    /// The extra trust roots, read from `extra_ca`.
    pub fn roots(&self) -> Result<Vec<CertificateDer<'static>>, NetworkOptionsError> {
        let mut roots = Vec::new();
        for path in &self.extra_ca {
            roots.extend(load_pem_certs(path)?);
        }
        Ok(roots)
    }

    /// The transport settings for requests to `named` URLs (and wherever else the policy lets).
    pub fn transport_config(&self, named: &[&str]) -> Result<TransportConfig, NetworkOptionsError> {
        let mut config = TransportConfig::new(self.policy(named)?);
        config.extra_roots = self.roots()?;
        config.deadline = self.deadline;
        config.body_cap = self.body_cap;
        Ok(config)
    }

    pub fn transport(&self, named: &[&str]) -> Result<Transport, NetworkOptionsError> {
        Ok(Transport::new(self.transport_config(named)?)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_map_onto_the_transport_settings() {
        let opts = NetworkOptions {
            allow_private_network: true,
            allow_hosts: vec!["127.0.0.1:9".into()],
            deadline: Duration::from_secs(7),
            body_cap: 4096,
            ..NetworkOptions::default()
        };
        let config = opts.transport_config(&["https://127.0.0.1:8443"]).unwrap();
        assert_eq!(config.deadline, Duration::from_secs(7));
        assert_eq!(config.body_cap, 4096);
        assert!(config.extra_roots.is_empty());
        let bad = NetworkOptions {
            allow_hosts: vec!["no port".into()],
            ..NetworkOptions::default()
        };
        assert!(matches!(
            bad.policy(&[]),
            Err(NetworkOptionsError::AllowHost(_))
        ));
        let missing = NetworkOptions {
            extra_ca: vec!["/nonexistent/ca.pem".into()],
            ..NetworkOptions::default()
        };
        let err = missing.roots().unwrap_err().to_string();
        assert!(err.contains("/nonexistent/ca.pem"), "{err}");
    }
}
