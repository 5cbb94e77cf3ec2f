//! The HTTP edge: every outbound request of a walk, a key fetch or a submission goes through
//! [`Transport`], which enforces the security rules (https only, no redirects, address policy,
//! deadline, body cap) and turns whatever happens into plain data ([`Exchange`]).

pub mod policy;
mod transport;

pub use policy::{NetPolicy, non_public_kind};
pub use transport::{
    BODY_CAP_BYTES, Exchange, HttpRequest, REQUEST_DEADLINE, Session, Transport, TransportConfig,
    TransportSetupError, load_pem_certs,
};
