//! The network flags every command that fetches takes, with one meaning everywhere: they map
//! onto [`crate::net::NetworkOptions`], as the config's `[network]` section does.

use crate::net::options::{BODY_CAP_RANGE, DEADLINE_SECS_RANGE};
use crate::net::{NetworkOptions, Transport, TransportConfig};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Args)]
pub struct NetArgs {
    /// Extra trust roots (PEM, may hold several certificates), added to the system roots.
    /// Repeatable.
    #[arg(long = "ca-cert", value_name = "FILE")]
    pub ca_cert: Vec<PathBuf>,
    /// Admit private, loopback and link-local addresses, but only at hosts named on the command
    /// line (never at a private host that only a card names).
    #[arg(long)]
    pub allow_private_network: bool,
    /// Name one more HOST:PORT at which private addresses are admitted (with
    /// --allow-private-network). Repeatable.
    #[arg(long = "allow-host", value_name = "HOST:PORT")]
    pub allow_host: Vec<String>,
    /// Deadline of each request, connect to last body byte (config: network.request_deadline_secs).
    #[arg(long, value_name = "SECS", default_value_t = crate::net::REQUEST_DEADLINE.as_secs(),
          value_parser = clap::value_parser!(u64).range(DEADLINE_SECS_RANGE.0..=DEADLINE_SECS_RANGE.1))]
    pub request_deadline_secs: u64,
    /// Most bytes of a response body read (config: network.body_cap_bytes).
    #[arg(long, value_name = "BYTES", default_value_t = crate::net::BODY_CAP_BYTES as u64,
          value_parser = clap::value_parser!(u64).range(BODY_CAP_RANGE.0..=BODY_CAP_RANGE.1))]
    pub body_cap_bytes: u64,
}

impl NetArgs {
    pub fn options(&self) -> NetworkOptions {
        NetworkOptions {
            allow_private_network: self.allow_private_network,
            allow_hosts: self.allow_host.clone(),
            extra_ca: self.ca_cert.clone(),
            deadline: Duration::from_secs(self.request_deadline_secs),
            // In range: the parser bounds it far below usize::MAX.
            body_cap: self.body_cap_bytes as usize,
        }
    }

    /// The settings for requests to `named` URLs (origin, endpoint, intake: what the operator
    /// gave).
    pub fn transport_config(&self, named: &[&str]) -> anyhow::Result<TransportConfig> {
        Ok(self.options().transport_config(named)?)
    }

    /// The transport for requests to `named` URLs.
    pub fn transport(&self, named: &[&str]) -> anyhow::Result<Transport> {
        Ok(self.options().transport(named)?)
    }
}
