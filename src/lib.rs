//! conduct-walker: witnesses how A2A agents behave in public.
//!
//! A pure core (no I/O: [`canonical`], [`json`], [`ledger`], [`alerts`], [`walk::declaration`],
//! [`walk::assertions`], [`walk::record`]) beside the edges that do I/O ([`net`], [`store`],
//! [`sandbox`], the CLI).
//! `ARCHITECTURE.md` at the repository root draws the map.

pub mod alerts;
pub mod app;
pub mod audit;
pub mod background;
pub mod canonical;
pub mod card_signature;
pub mod cli;
pub mod clock;
pub mod config;
pub mod consent;
pub mod credentials;
pub mod daemon;
pub mod digest;
pub mod filing;
pub mod findings;
pub mod intake_emulator;
pub mod jcs;
pub mod json;
pub mod ledger;
pub mod ledger_plan;
pub mod mcp;
pub mod mem;
pub mod net;
pub mod notify;
pub mod output;
pub mod pages;
pub mod pipeline;
pub mod prometheus_text;
pub mod readers;
pub mod reciprocal;
pub mod ring_files;
pub mod rings;
pub mod sandbox;
pub mod sse;
pub mod store;
pub mod terms;
#[cfg(test)]
mod test_docs;
pub mod walk;
pub mod wire;
pub mod witness;
pub mod witness_pool;
