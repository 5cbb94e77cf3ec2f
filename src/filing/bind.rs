//! Where a task binding stands (conduct-walk.md §5.1, `--bind-task`): the states of the
//! `task_bindings` rows and how every face words them. Pure: the binding itself is built and
//! sent by `witness::task_bind` and the pipeline; the store keeps these states.

/// Where a binding stands (the `task_bindings.state` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BindState {
    /// A precondition failed: nothing was built or sent (settled).
    Skipped,
    /// Built, signed and committed with its record; not sent yet.
    Queued,
    /// Its POST may have left (committed before the request is sent).
    Sending,
    /// The ledger answered (any HTTP status; the answer is kept). Settled.
    Answered,
    /// No answer: a transport error or a refusal before sending. Settled, never resent (a
    /// request cut after it left may have reached the ledger).
    Failed,
    /// Left `sending` by a process that stopped: it may or may not have reached the ledger,
    /// which is not known to dedupe by evidence_id, so it is never sent again. Settled.
    Unknown,
}

impl BindState {
    pub const ALL: [BindState; 6] = [
        BindState::Skipped,
        BindState::Queued,
        BindState::Sending,
        BindState::Answered,
        BindState::Failed,
        BindState::Unknown,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            BindState::Skipped => "skipped",
            BindState::Queued => "queued",
            BindState::Sending => "sending",
            BindState::Answered => "answered",
            BindState::Failed => "failed",
            BindState::Unknown => "unknown",
        }
    }

    /// Whether anything may still happen to the row.
    pub const fn is_settled(self) -> bool {
        !matches!(self, BindState::Queued | BindState::Sending)
    }
}

impl std::fmt::Display for BindState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for BindState {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BindState::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| format!("{s:?} is not a task binding state"))
    }
}

/// The note a row left `sending` by a stopped process is settled with.
pub const UNKNOWN_NOTE: &str = "unknown: the process stopped while sending, so the ledger may or may not have it; not resent (the ledger is not known to dedupe by evidence_id)";

/// A row `sending` for longer than this was left by a stopped process: no send takes that long
/// (the transport's deadline covers the whole exchange and is at most 300 s). Judging a live
/// send interrupted costs nothing lasting: its answer, when it comes, replaces `unknown`.
pub const INTERRUPTED_AFTER: std::time::Duration = std::time::Duration::from_secs(310);

/// One line saying where a binding stands, as every face shows it.
pub fn describe(state: BindState, http_status: Option<i64>, note: Option<&str>) -> String {
    match (state, http_status, note) {
        (BindState::Skipped, _, Some(why)) => format!("skipped: {why}"),
        (BindState::Queued, ..) => "queued, not sent yet".into(),
        (BindState::Sending, ..) => "being sent".into(),
        (BindState::Answered, Some(s), _) => format!("sent once, the ledger answered http {s}"),
        (BindState::Failed, _, Some(why)) => format!("no answer, not resent: {why}"),
        (BindState::Unknown, _, Some(why)) => why.to_string(),
        (state, ..) => state.to_string(),
    }
}
