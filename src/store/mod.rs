//! The SQLite record store (issue: record store and auditor tooling).
