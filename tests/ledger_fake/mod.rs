//! A ledger in memory that answers the follower's reads the way ledger.md §2–§6 says, built
//! from the crate's own batch and chain texts, with switches that make it lie. Counting every
//! read, so tests can bound them.
#![allow(dead_code)]

use conduct_walker::digest::sha256_hex;
use conduct_walker::ledger::batch;
use conduct_walker::ledger::chain::{self, ChainFields};
use conduct_walker::ledger::follower::{LedgerReads, ReadError};
use conduct_walker::ledger::wire::{BatchRow, StoredRecord};
use conduct_walker::ledger::wire::{ExportLine, HeadAnswer, LedgerEntry, WireError, WitnessAnswer};
use serde_json::{Value, json};
use std::cell::RefCell;
use std::collections::BTreeMap;

#[derive(Clone)]
pub struct Entry {
    pub claim: String,
    pub created_at: String,
    pub raw: String,
    pub work: String,
}

#[derive(Default)]
pub struct State {
    pub records: BTreeMap<String, StoredRecord>,
    pub anchored: BTreeMap<String, u64>,
    pub entries: Vec<Entry>,
    pub responses: BTreeMap<String, Value>,
    /// Faults.
    pub down: bool,
    pub garbage: bool,
    pub hide: Vec<String>,
    pub rewind_to: Option<u64>,
    pub stored_bytes_override: BTreeMap<String, String>,
    pub raw_override: BTreeMap<u64, String>,
    /// Entries the export lists whose raw route answers 404.
    pub raw_missing: Vec<u64>,
    pub reads: BTreeMap<&'static str, u64>,
}

#[derive(Default)]
pub struct FakeLedger(pub RefCell<State>);

pub fn stored(canonical: &str) -> StoredRecord {
    let v: Value = serde_json::from_str(canonical).unwrap();
    let s = |p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    StoredRecord {
        record_canonical: canonical.into(),
        purpose: s("/purpose"),
        submitted_at: Some("2026-12-01T13:00:00.000Z".into()),
        ..StoredRecord::unsigned(
            &sha256_hex(canonical.as_bytes()),
            &s("/endpoint"),
            &s("/witness/name"),
            &s("/witness/vantage"),
        )
    }
}

impl FakeLedger {
    pub fn file(&self, canonical: &str) -> String {
        let r = stored(canonical);
        let sha = r.sha.clone();
        self.0.borrow_mut().records.insert(sha.clone(), r);
        sha
    }

    pub fn head(&self) -> (u64, String) {
        let st = self.0.borrow();
        Self::head_of(&st.entries, st.entries.len() as u64)
    }

    fn head_of(entries: &[Entry], upto: u64) -> (u64, String) {
        let mut head = chain::ROOT.to_owned();
        for (i, e) in entries.iter().take(upto as usize).enumerate() {
            head = chain::entry_sha256(&Self::fields(i as u64 + 1, e), &head);
        }
        (upto, head)
    }

    fn fields(n: u64, e: &Entry) -> ChainFields {
        ChainFields {
            n,
            claim_sha256: e.claim.clone(),
            schema: Some("v0-plain".into()),
            created_at: Some(e.created_at.clone()),
        }
    }

    /// The batch of every pending record (at most `max`, lowest shas first, §4.2); the number
    /// anchored.
    pub fn anchor(&self, at: &str, max: usize) -> usize {
        let (n, head) = self.head();
        let mut st = self.0.borrow_mut();
        let pending: Vec<String> = st
            .records
            .keys()
            .filter(|s| !st.anchored.contains_key(*s))
            .take(max)
            .cloned()
            .collect();
        if pending.is_empty() {
            return 0;
        }
        let rows: Vec<BatchRow> = pending
            .iter()
            .map(|s| BatchRow::of(&st.records[s]))
            .collect();
        let carried = if n == 0 {
            batch::empty_head()
        } else {
            batch::linked_head(n, &head, false)
        };
        let text = batch::batch_text(at, &carried, &rows);
        st.entries.push(Entry {
            claim: batch::claim_sha256(&text),
            created_at: at.into(),
            raw: text,
            work: batch::batch_work(rows.len()),
        });
        let k = st.entries.len() as u64;
        for s in &pending {
            st.anchored.insert(s.clone(), k);
        }
        pending.len()
    }

    pub fn checkpoint(&self, at: &str) {
        let (n, head) = self.head();
        let text = batch::checkpoint_text(at, n, &head);
        self.0.borrow_mut().entries.push(Entry {
            claim: batch::claim_sha256(&text),
            created_at: at.into(),
            raw: text,
            work: batch::checkpoint_work(n),
        });
    }

    fn count(&self, what: &'static str) {
        *self.0.borrow_mut().reads.entry(what).or_default() += 1;
    }

    pub fn total_reads(&self) -> u64 {
        self.0.borrow().reads.values().sum()
    }

    pub fn reads_of(&self, what: &str) -> u64 {
        self.0.borrow().reads.get(what).copied().unwrap_or(0)
    }

    fn served_n(st: &State) -> u64 {
        st.rewind_to.unwrap_or(st.entries.len() as u64)
    }
}

fn pretty(v: &Value) -> Vec<u8> {
    serde_json::to_vec_pretty(v).unwrap()
}

type Fetched = Result<(u16, Vec<u8>), String>;

fn served<T>(parsed: Result<T, WireError>, body: &[u8]) -> Result<T, ReadError> {
    parsed.map_err(|e| ReadError {
        served: true,
        detail: e.to_string(),
        body: Some(body.to_vec()),
    })
}

impl LedgerReads for FakeLedger {
    async fn witness(&self, sha: &str) -> Result<WitnessAnswer, ReadError> {
        let (status, body) = self.witness_bytes(sha).map_err(ReadError::down)?;
        served(WitnessAnswer::parse(status, &body), &body)
    }

    async fn head(&self) -> Result<HeadAnswer, ReadError> {
        let (status, body) = self.head_bytes().map_err(ReadError::down)?;
        served(HeadAnswer::parse(status, &body), &body)
    }

    async fn entry_raw(&self, n: u64) -> Result<Option<Vec<u8>>, ReadError> {
        match self.entry_raw_bytes(n).map_err(ReadError::down)? {
            (404, _) => Ok(None),
            (_, body) => Ok(Some(body)),
        }
    }

    async fn entry_json(&self, n: u64) -> Result<Option<LedgerEntry>, ReadError> {
        match self.entry_json_bytes(n).map_err(ReadError::down)? {
            (404, _) => Ok(None),
            (_, body) => served(LedgerEntry::parse(&body), &body).map(Some),
        }
    }

    async fn export(
        &self,
        line: &mut dyn FnMut(Result<ExportLine, WireError>) -> bool,
    ) -> Result<(), ReadError> {
        self.export_lines(&mut |l| line(ExportLine::parse(l)))
            .map_err(ReadError::down)
    }
}

impl FakeLedger {
    fn witness_bytes(&self, sha: &str) -> Fetched {
        self.count("witness");
        let st = self.0.borrow();
        if st.down {
            return Err("connection refused".into());
        }
        if st.garbage {
            return Ok((200, b"<html>oops".to_vec()));
        }
        let Some(r) = st
            .records
            .get(sha)
            .filter(|_| !st.hide.iter().any(|h| h == sha))
        else {
            return Ok((404, pretty(&json!({"error": "not found", "sha": sha}))));
        };
        let mut r = r.clone();
        if let Some(b) = st.stored_bytes_override.get(sha) {
            r.record_canonical = b.clone();
        }
        let responses = st.responses.get(sha).cloned().unwrap_or(json!([]));
        let mut record = serde_json::to_value(&r).unwrap();
        match st.anchored.get(sha) {
            Some(n) => Ok((
                200,
                pretty(&json!({"status": "anchored", "sha": sha, "ledger_entry": n,
                "url": format!("https://ledger.example/ledger/{n}"), "record": record,
                "responses": responses})),
            )),
            None => {
                let obj = record.as_object_mut().unwrap();
                let mut out = serde_json::Map::new();
                out.insert("status".into(), json!("pending"));
                out.extend(obj.clone());
                out.insert("responses".into(), responses);
                Ok((200, pretty(&Value::Object(out))))
            }
        }
    }

    fn head_bytes(&self) -> Fetched {
        self.count("head");
        let st = self.0.borrow();
        if st.down {
            return Err("connection refused".into());
        }
        if st.garbage {
            return Ok((200, b"{\"schema\": 5}".to_vec()));
        }
        let (n, head) = Self::head_of(&st.entries, Self::served_n(&st));
        Ok((
            200,
            pretty(
                &json!({"schema": "jidec-head-v1", "n": n, "head": head, "root": chain::ROOT,
            "chain": "jidec-chain-v1", "prev_entry_sha256": head,
            "entry_sha256": chain::marker_sha256(n, &head)}),
            ),
        ))
    }

    fn entry_raw_bytes(&self, n: u64) -> Fetched {
        self.count("entry_raw");
        let st = self.0.borrow();
        if st.down {
            return Err("connection refused".into());
        }
        let listed = st.entries.get((n as usize).wrapping_sub(1));
        match listed.filter(|_| !st.raw_missing.contains(&n)) {
            Some(e) => Ok((
                200,
                st.raw_override
                    .get(&n)
                    .unwrap_or(&e.raw)
                    .clone()
                    .into_bytes(),
            )),
            None => Ok((404, pretty(&json!({"error": "not found"})))),
        }
    }

    fn entry_json_bytes(&self, n: u64) -> Fetched {
        self.count("entry_json");
        let st = self.0.borrow();
        if st.down {
            return Err("connection refused".into());
        }
        match st.entries.get((n as usize).wrapping_sub(1)) {
            Some(e) => Ok((
                200,
                pretty(&json!({"n": n, "work": e.work, "claim_sha256": e.claim,
                "record_canonical": st.raw_override.get(&n).unwrap_or(&e.raw), "schema": "v0-plain",
                "created_at": e.created_at, "ots_status": "unstamped", "bitcoin_block": null,
                "block_time": null, "stamped_at": null, "anchored_by": "operator"})),
            )),
            None => Ok((404, pretty(&json!({"error": "not found"})))),
        }
    }

    fn export_lines(&self, line: &mut dyn FnMut(&[u8]) -> bool) -> Result<(), String> {
        self.count("export");
        let st = self.0.borrow();
        if st.down {
            return Err("connection refused".into());
        }
        let upto = Self::served_n(&st);
        let mut head = chain::ROOT.to_owned();
        for (i, e) in st.entries.iter().take(upto as usize).enumerate() {
            let n = i as u64 + 1;
            let next = chain::entry_sha256(&Self::fields(n, e), &head);
            let l = json!({"n": n, "claim_sha256": e.claim, "prev_entry_sha256": head,
                "schema": "v0-plain", "created_at": e.created_at, "entry_sha256": next});
            if !line(l.to_string().as_bytes()) {
                return Ok(());
            }
            head = next;
        }
        let end = json!({"schema": "jidec-head-v1", "n": upto, "head": head, "root": chain::ROOT,
            "chain": "jidec-chain-v1", "prev_entry_sha256": head,
            "entry_sha256": chain::marker_sha256(upto, &head)});
        line(end.to_string().as_bytes());
        Ok(())
    }
}
