//! The endpoints page: the list, or one endpoint across every witness in the store (who saw
//! what, the days they disagree, other witnesses' records from the ledger).

use crate::pages::ledger;
use crate::store::StoreError;
use crate::store::status::{self, Fire};
use rusqlite::Connection;
use std::collections::BTreeMap;

/// Records of one endpoint read by the endpoints page.
const ENDPOINT_RECORDS: usize = 500;
/// Endpoints listed at most.
const ENDPOINTS_LISTED: usize = 5000;

/// The endpoints page.
#[derive(Debug, Clone)]
pub enum EndpointView {
    /// Every endpoint with stored records.
    List(Vec<String>),
    One(OneEndpoint),
}

/// One endpoint across every witness.
#[derive(Debug, Clone)]
pub struct OneEndpoint {
    pub url: String,
    /// Its latest records, newest walk first.
    pub records: Vec<Fire>,
    /// Per witness: its records, newest first (indexes into `records`).
    pub witnesses: BTreeMap<WitnessKey, Vec<usize>>,
    pub foreign: ledger::Foreign,
}

/// Who saw one endpoint: a witness as name, vantage and key (its fingerprint, or `unsigned`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct WitnessKey {
    pub name: String,
    pub vantage: String,
    pub key: String,
}

impl WitnessKey {
    pub fn of(f: &Fire) -> WitnessKey {
        let r = f.record.as_ref();
        WitnessKey {
            name: r
                .and_then(|r| r.facts.witness_name.clone())
                .unwrap_or_default(),
            vantage: r.and_then(|r| r.facts.vantage.clone()).unwrap_or_default(),
            key: f
                .public_key_b64
                .as_deref()
                .map(super::key_fingerprint)
                .unwrap_or_else(|| "unsigned".into()),
        }
    }
}

pub fn endpoint(conn: &Connection, url: Option<&str>) -> Result<EndpointView, StoreError> {
    let Some(url) = url else {
        return Ok(EndpointView::List(status::endpoints(
            conn,
            ENDPOINTS_LISTED,
        )?));
    };
    let records = status::endpoint_records(conn, url, ENDPOINT_RECORDS)?;
    let mut witnesses: BTreeMap<WitnessKey, Vec<usize>> = BTreeMap::new();
    for (i, f) in records.iter().enumerate() {
        witnesses.entry(WitnessKey::of(f)).or_default().push(i);
    }
    Ok(EndpointView::One(OneEndpoint {
        url: url.to_string(),
        foreign: ledger::foreign(conn, url)?,
        records,
        witnesses,
    }))
}
