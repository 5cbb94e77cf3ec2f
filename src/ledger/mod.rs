//! The ledger monitor's core (ledger.md; issue 23): pure (no I/O, no clock) except [`client`],
//! [`follower`] and [`pull`].
//!
//! - [`wire`]: the read side's answers as typed values (`/witness/<sha>`, `/ledger/head`, an
//!   entry's JSON view, an export line, the batch / checkpoint text inside an entry).
//! - [`text`]: the two byte forms the ledger hashes, neither of which is the record's canonical
//!   form: `JSON.stringify` for entry texts, Python `ensure_ascii` for the chain.
//! - [`chain`]: `jidec-chain-v1` (entry hash, extension from a held head, end marker).
//! - [`batch`]: a batch's or checkpoint's text and `claim_sha256` from their parts.
//! - [`check`]: the monitor's checks of ledger.md §7 (inclusion; append-only consistency
//!   against a held head), each returning typed findings that carry their evidence.
//!
//! - [`audit`]: one audit of an export, the fold `ledger verify` and the follower both run
//!   (`on_line` → what to fetch, `finish` → findings, the head to hold, the heads).
//! - [`follow`]: the follower's poll planner (pure: when to read, what silence means).
//! - [`client`]: bounded reads of the routes over the crate's transport (I/O).
//! - [`follower`], [`pull`]: a follower's pass and `ledger pull` over [`follower::LedgerReads`]
//!   (I/O through the store and the reads they are given).
//!
//! The commands and the faces are the edges' business (ARCHITECTURE.md, "The ledger monitor's
//! core", "Following filed records").

pub mod audit;
pub mod batch;
pub mod chain;
pub mod check;
pub mod client;
/// The follower's poll planner and held state (pure; below the store, see `ledger_plan`).
pub use crate::ledger_plan as follow;
pub mod follower;
pub mod pull;
pub mod text;
pub mod wire;

/// The chain's name, as carried in every `ledger_head` and served head.
pub const CHAIN: &str = "jidec-chain-v1";
/// `schema` of the served head, the export's end line and the end marker's object.
pub const HEAD_SCHEMA: &str = "jidec-head-v1";
/// `schema` inside a witness batch's bytes.
pub const BATCH_SCHEMA: &str = "nenrin-witness-batch-v1";
/// `schema` inside a head checkpoint's bytes.
pub const CHECKPOINT_SCHEMA: &str = "nenrin-head-checkpoint-v1";
/// The entry's own `schema` (its kind, not the batch schema).
pub const ENTRY_SCHEMA: &str = "v0-plain";
