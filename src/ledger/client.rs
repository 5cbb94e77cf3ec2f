//! The monitor's I/O edge (the rest of `ledger` does no I/O): bounded reads of a ledger's public
//! routes (ledger.md §2–§5) over the crate's [`Transport`], each answer typed by
//! [`super::wire`].
//!
//! Every request goes through the operator's transport: https only, no redirects, the
//! transport's deadline and body cap for single answers, and private or loopback addresses
//! only where the operator allowed them (`--allow-private-network` with the intake named), as
//! a walk's requests do. The export is the one answer that is not held: [`LedgerClient::export`]
//! hands it over line by line, with its own deadline and caps ([`ExportLimits`]), so a
//! 10,000-entry export costs one line of memory.
//!
//! ```no_run
//! # async fn f(transport: conduct_walker::net::Transport) -> anyhow::Result<()> {
//! use conduct_walker::ledger::client::LedgerClient;
//! let client = LedgerClient::new("https://ledger.horizonshield.dev/witness", transport)?;
//! let head = client.head().await?;
//! let mut export = client.export().await?;
//! while let Some((line_no, line)) = export.next().await? {
//!     let _line = line?; // a wire error: the ledger served a line that does not read
//! #   let _ = line_no;
//! }
//! # let _ = head; Ok(()) }
//! ```

use super::wire::{ExportLine, HeadAnswer, LedgerEntry, PendingPool, WireError, WitnessAnswer};
use crate::net::{BodyStream, HttpRequest, Transport};
use std::time::Duration;

/// Limits of the one streamed answer, the export (§5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportLimits {
    /// Longest line (an entry row is ~300 bytes; the end line ~450).
    pub line_cap: usize,
    /// Most bytes of the whole export (10,000 entries are ~3 MB).
    pub total_cap: u64,
    /// Deadline of the whole export, connect to last byte (a verifier also fetches each
    /// entry's bytes while it reads).
    pub deadline: Duration,
}

impl Default for ExportLimits {
    fn default() -> Self {
        ExportLimits {
            line_cap: 64 * 1024,
            total_cap: 1024 * 1024 * 1024,
            deadline: Duration::from_secs(30 * 60),
        }
    }
}

/// Why a read gave no typed answer. The caller decides whether that is a finding about the
/// ledger (it served something unreadable) or a failure to check (it could not be reached).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    #[error("{url} is not a ledger URL: {why}")]
    BadUrl { url: String, why: String },
    /// Nothing came back: refused, unreachable, timed out, over the cap.
    #[error("GET {url}: {why}")]
    Fetch { url: String, why: String },
    /// An HTTP status the route does not answer with.
    #[error("GET {url}: HTTP {status}: {excerpt}")]
    Status {
        url: String,
        status: u16,
        excerpt: String,
    },
    /// The body does not read as the route's answer.
    #[error("GET {url}: {source}")]
    Wire {
        url: String,
        #[source]
        source: WireError,
    },
    #[error("GET {url}: line {line} is longer than the {cap}-byte line cap")]
    LineTooLong { url: String, line: u64, cap: usize },
    #[error("GET {url}: the export ends inside line {line} (no final newline)")]
    PartialLine { url: String, line: u64 },
}

impl ClientError {
    /// True when the ledger answered but with something that is not the route's answer (as
    /// opposed to not answering at all).
    pub fn is_served(&self) -> bool {
        !matches!(self, ClientError::Fetch { .. } | ClientError::BadUrl { .. })
    }
}

/// The read side of one ledger.
#[derive(Clone)]
pub struct LedgerClient {
    origin: String,
    transport: Transport,
    export_limits: ExportLimits,
}

impl LedgerClient {
    /// `intake` is the ledger's origin or any URL on it (the intake URL a walker files with,
    /// `https://host/witness`, is fine): only `https://host[:port]` is kept.
    pub fn new(intake: &str, transport: Transport) -> Result<Self, ClientError> {
        let bad = |why: &str| ClientError::BadUrl {
            url: intake.into(),
            why: why.into(),
        };
        let url = url::Url::parse(intake).map_err(|e| bad(&e.to_string()))?;
        if url.scheme() != "https" {
            return Err(bad("only https:// ledgers are read"));
        }
        if url.host_str().is_none() {
            return Err(bad("no host"));
        }
        Ok(LedgerClient {
            origin: url.origin().ascii_serialization(),
            transport,
            export_limits: ExportLimits::default(),
        })
    }

    pub fn with_export_limits(mut self, limits: ExportLimits) -> Self {
        self.export_limits = limits;
        self
    }

    /// `https://host[:port]`, as every URL here is built from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    async fn get(
        &self,
        path: &str,
        accept: Option<&str>,
    ) -> Result<(String, u16, Vec<u8>), ClientError> {
        let url = format!("{}{path}", self.origin);
        let headers: Vec<(&str, &str)> = accept.map(|a| ("Accept", a)).into_iter().collect();
        let ex = self
            .transport
            .fetch(&HttpRequest::get(&url, &headers))
            .await;
        if let Some(why) = ex.transport_error {
            return Err(ClientError::Fetch { url, why });
        }
        Ok((url, ex.status, ex.body))
    }

    fn status_error(url: String, status: u16, body: &[u8]) -> ClientError {
        let excerpt: String = String::from_utf8_lossy(body).chars().take(200).collect();
        ClientError::Status {
            url,
            status,
            excerpt,
        }
    }

    /// `GET /witness/<sha>` (§2): 404, pending or anchored.
    pub async fn witness(&self, sha: &str) -> Result<WitnessAnswer, ClientError> {
        let (url, status, body) = self.get(&format!("/witness/{sha}"), None).await?;
        if status != 200 && status != 404 {
            return Err(Self::status_error(url, status, &body));
        }
        WitnessAnswer::parse(status, &body).map_err(|source| ClientError::Wire { url, source })
    }

    /// `GET /witness/pending` (§3).
    pub async fn pending(&self) -> Result<PendingPool, ClientError> {
        let (url, status, body) = self.get("/witness/pending", None).await?;
        if status != 200 {
            return Err(Self::status_error(url, status, &body));
        }
        PendingPool::parse(&body).map_err(|source| ClientError::Wire { url, source })
    }

    /// `GET /ledger/head` (§5.2): the head, or the 409 broken form.
    pub async fn head(&self) -> Result<HeadAnswer, ClientError> {
        let (url, status, body) = self.get("/ledger/head", None).await?;
        if status != 200 && status != 409 {
            return Err(Self::status_error(url, status, &body));
        }
        HeadAnswer::parse(status, &body).map_err(|source| ClientError::Wire { url, source })
    }

    /// `GET /ledger/<n>?format=raw` (§5.1): the entry's bytes verbatim; `None` on 404.
    pub async fn entry_raw(&self, n: u64) -> Result<Option<Vec<u8>>, ClientError> {
        let (url, status, body) = self.get(&format!("/ledger/{n}?format=raw"), None).await?;
        match status {
            200 => Ok(Some(body)),
            404 => Ok(None),
            _ => Err(Self::status_error(url, status, &body)),
        }
    }

    /// `GET /ledger/<n>?format=json` (§5.1): the stored entry with `pending_*`; `None` on 404.
    pub async fn entry_json(&self, n: u64) -> Result<Option<LedgerEntry>, ClientError> {
        let (url, status, body) = self
            .get(
                &format!("/ledger/{n}?format=json"),
                Some("application/json"),
            )
            .await?;
        match status {
            200 => LedgerEntry::parse(&body)
                .map(Some)
                .map_err(|source| ClientError::Wire { url, source }),
            404 => Ok(None),
            _ => Err(Self::status_error(url, status, &body)),
        }
    }

    /// `GET /ledger/export.jsonl` (§5.3), opened: read it with [`ExportReader::next`].
    pub async fn export(&self) -> Result<ExportReader, ClientError> {
        let url = format!("{}/ledger/export.jsonl", self.origin);
        let limits = self.export_limits;
        let stream = self
            .transport
            .session()
            .open_stream(
                &HttpRequest::get(&url, &[]),
                limits.deadline,
                limits.total_cap,
            )
            .await
            .map_err(|why| ClientError::Fetch {
                url: url.clone(),
                why,
            })?;
        if stream.status != 200 {
            let mut stream = stream;
            let mut excerpt = Vec::new();
            while excerpt.len() < 200 {
                match stream.chunk().await {
                    Ok(Some(c)) => excerpt.extend_from_slice(&c),
                    _ => break,
                }
            }
            return Err(Self::status_error(url, stream.status, &excerpt));
        }
        Ok(ExportReader {
            url,
            stream,
            buf: Vec::new(),
            line_cap: limits.line_cap,
            line_no: 0,
            ended: false,
        })
    }
}

/// The export, line by line: at most one line (plus one network chunk) is held.
pub struct ExportReader {
    url: String,
    stream: BodyStream,
    buf: Vec<u8>,
    line_cap: usize,
    line_no: u64,
    ended: bool,
}

impl ExportReader {
    /// The next line (1-based number, and the line read or why it does not read); `None`
    /// after the last line. A line that does not read is handed over, not an error, so the
    /// caller can name it; a fetch that fails, a line over the cap or a body that stops
    /// inside a line is an error.
    pub async fn next(
        &mut self,
    ) -> Result<Option<(u64, Result<ExportLine, WireError>)>, ClientError> {
        loop {
            if let Some(end) = self.buf.iter().position(|b| *b == b'\n') {
                self.line_no += 1;
                let parsed = ExportLine::parse(&self.buf[..end]);
                self.buf.drain(..=end);
                return Ok(Some((self.line_no, parsed)));
            }
            if self.buf.len() > self.line_cap {
                return Err(ClientError::LineTooLong {
                    url: self.url.clone(),
                    line: self.line_no + 1,
                    cap: self.line_cap,
                });
            }
            if self.ended {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                return Err(ClientError::PartialLine {
                    url: self.url.clone(),
                    line: self.line_no + 1,
                });
            }
            match self.stream.chunk().await {
                Ok(Some(chunk)) => self.buf.extend_from_slice(&chunk),
                Ok(None) => self.ended = true,
                Err(why) => {
                    return Err(ClientError::Fetch {
                        url: self.url.clone(),
                        why,
                    });
                }
            }
        }
    }

    /// Lines read so far.
    pub fn lines_read(&self) -> u64 {
        self.line_no
    }
}
