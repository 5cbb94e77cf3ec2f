//! Each page as one call from a read-only connection (and what the face knows) to HTML text:
//! the model reads ([`super::model`]), the renderer writes ([`super::view`]). Handlers, tests and
//! the benchmarks call these.

use super::model;
use super::strips::StripCache;
use super::view;
use super::{Context, VerifySummary};
use crate::store::{Store, StoreError};
use chrono::{DateTime, NaiveDate, Utc};
use maud::Markup;

pub use super::model::key_fingerprint;
pub use super::model::overview::{STRIP, TARGETS_PER_PAGE};
pub use super::view::{filing, kind_of};

/// The overview page. `strips` keeps each target's strip between calls (the served pages keep
/// one for the process; `&StripCache::default()` reads every strip afresh).
pub fn overview(
    conn: &rusqlite::Connection,
    ctx: &Context,
    verify: &(Option<VerifySummary>, bool),
    page: usize,
    now: DateTime<Utc>,
    served_by: &str,
    strips: &StripCache,
) -> Result<String, StoreError> {
    let v = model::overview(conn, ctx, verify, page, now, strips)?;
    Ok(view::overview(&v, served_by))
}

/// A target's page; `None` when no such target is configured or has fired.
pub fn target(
    conn: &rusqlite::Connection,
    ctx: &Context,
    name: &str,
    day: Option<NaiveDate>,
    now: DateTime<Utc>,
    served_by: &str,
) -> Result<Option<String>, StoreError> {
    Ok(model::target(conn, ctx, name, day, now)?.map(|v| view::target(&v, served_by)))
}

/// A record's page.
pub fn record(store: &Store, prefix: &str, served_by: &str) -> Result<String, StoreError> {
    Ok(view::record(&model::record(store, prefix)?, served_by))
}

/// The endpoints page: the list, or one endpoint across every witness in the store.
pub fn endpoints(
    conn: &rusqlite::Connection,
    url: Option<&str>,
    served_by: &str,
) -> Result<String, StoreError> {
    endpoints_with(conn, url, served_by, Markup::default())
}

/// [`endpoints`] with a section the face adds after the ledger's (the rings).
pub fn endpoints_with(
    conn: &rusqlite::Connection,
    url: Option<&str>,
    served_by: &str,
    extra: Markup,
) -> Result<String, StoreError> {
    Ok(view::endpoint(
        &model::endpoint(conn, url)?,
        served_by,
        extra,
    ))
}
