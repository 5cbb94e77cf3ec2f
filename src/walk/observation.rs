//! What the transport observed, with the per-node digests the record and assertions use (§2.7).

use crate::digest::{headers_sha256, sha256_hex};
use crate::net::Exchange;

/// `mcp` (default) or `a2a` (§2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Mcp,
    A2a,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Mcp => "mcp",
            Mode::A2a => "a2a",
        }
    }

    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "mcp" => Some(Mode::Mcp),
            "a2a" => Some(Mode::A2a),
            _ => None,
        }
    }
}

/// `1.0` (default) or `0.3`; any other value is treated as `1.0` (§2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wire {
    #[default]
    V1_0,
    V0_3,
}

impl Wire {
    pub fn as_str(self) -> &'static str {
        match self {
            Wire::V1_0 => "1.0",
            Wire::V0_3 => "0.3",
        }
    }

    pub fn parse(s: &str) -> Wire {
        if s == "0.3" { Wire::V0_3 } else { Wire::V1_0 }
    }
}

/// How n3 is asked and read in mcp mode (§2.6.1). a2a mode is the same under both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequestProfile {
    /// MCP Streamable HTTP as the protocol says: `Accept: application/json, text/event-stream`,
    /// and an SSE answer read up to the JSON-RPC response with id 1.
    #[default]
    Spec,
    /// The reference walker's request and reading, byte for byte (`Accept: application/json`;
    /// an SSE answer is not JSON, so not answered).
    Reference,
}

impl RequestProfile {
    pub const NAMES: [&'static str; 2] = ["spec", "reference"];

    pub fn as_str(self) -> &'static str {
        match self {
            RequestProfile::Spec => "spec",
            RequestProfile::Reference => "reference",
        }
    }

    pub fn parse(s: &str) -> Option<RequestProfile> {
        match s {
            "spec" => Some(RequestProfile::Spec),
            "reference" => Some(RequestProfile::Reference),
            _ => None,
        }
    }

    /// Whether n3 in this mode is read as MCP Streamable HTTP (SSE answers understood).
    pub fn reads_sse(self, mode: Mode) -> bool {
        self == RequestProfile::Spec && mode == Mode::Mcp
    }
}

/// One fetch node as observed, with its digests computed once.
#[derive(Debug, Clone)]
pub struct ObservedFetch {
    pub n: u8,
    pub exchange: Exchange,
    pub request_headers_sha256: String,
    /// None when there was no body or it was empty.
    pub request_body_sha256: Option<String>,
    pub response_headers_sha256: String,
    pub body_sha256: String,
    /// Echo capture (§2.7): the values of `a2a-extensions` and `x-a2a-extensions`.
    pub a2a_extensions: Option<String>,
    pub x_a2a_extensions: Option<String>,
}

impl ObservedFetch {
    pub fn new(n: u8, exchange: Exchange) -> Self {
        let request_headers_sha256 = headers_sha256(
            exchange
                .request
                .headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        let request_body_sha256 = exchange
            .request
            .body
            .as_ref()
            .filter(|b| !b.is_empty())
            .map(sha256_hex);
        let response_headers_sha256 = headers_sha256(
            exchange
                .response_headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        let body_sha256 = sha256_hex(&exchange.body);
        let a2a_extensions = exchange.header("a2a-extensions").map(str::to_string);
        let x_a2a_extensions = exchange.header("x-a2a-extensions").map(str::to_string);
        ObservedFetch {
            n,
            exchange,
            request_headers_sha256,
            request_body_sha256,
            response_headers_sha256,
            body_sha256,
            a2a_extensions,
            x_a2a_extensions,
        }
    }

    pub fn status(&self) -> u16 {
        self.exchange.status
    }
}
