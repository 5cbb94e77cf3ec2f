//! What a fire runs. The scheduler only sees [`JobRunner`], so it can be tested with a fake that
//! blocks, fails or counts, and the daemon plugs in the real walk → sign → store → file pipeline.

use crate::walk::WalkRequest;
use std::future::Future;
use std::pin::Pin;

pub type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A finished job: the stored record and what became of its submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobDone {
    pub record_id: i64,
    pub sha256: String,
    /// `PASS` or `FAIL` (none for a commitment record).
    pub outcome: Option<String>,
    /// Where its submission stands, when the target submits.
    pub submission: Option<crate::filing::SubmissionState>,
    /// The intake it is filed to, when it is.
    pub intake_url: Option<String>,
}

/// Why a job produced no record. `store_unwritable` says the store refused the write (disk full,
/// I/O error): the daemon reports itself degraded until a record is stored again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFailed {
    pub text: String,
    pub store_unwritable: Option<String>,
}

impl std::fmt::Display for JobFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// One pass over the outbox: the pipeline's own report.
pub type Drained = crate::pipeline::DrainReport;

/// The filing side, for status lines and metrics: the pipeline's own status.
pub type RunnerStatus = crate::pipeline::PipelineStatus;

/// Runs the work of one fire and the periodic outbox drain. Errors are texts for the log and
/// the `daemon_walks` row: the daemon never stops because one job failed.
pub trait JobRunner: Send + Sync + 'static {
    /// Walk, store (and, when `submit`, queue and file) one target; with `bind_task` (a
    /// task-delegation ledger URL) also bind the walk's A2A Task there (spec §5.1).
    fn run_job<'a>(
        &'a self,
        target: &'a str,
        request: &'a WalkRequest,
        submit: bool,
        bind_task: Option<&'a str>,
    ) -> BoxFut<'a, Result<JobDone, JobFailed>>;

    /// Walk `request` for a stranger who asked (a reciprocal walk, §6.3), filing it where
    /// `stranger` decides. Runners that cannot (test fakes) refuse.
    fn run_stranger_job<'a>(
        &'a self,
        request: &'a WalkRequest,
        stranger: &'a crate::pipeline::StrangerWalk,
    ) -> BoxFut<'a, Result<JobDone, JobFailed>> {
        let _ = (request, stranger);
        Box::pin(async {
            Err(JobFailed {
                text: "this runner does not walk for strangers".into(),
                store_unwritable: None,
            })
        })
    }

    /// What is told of the daemon's writes (alerts planned in their transactions; none:
    /// alerts are off).
    fn record_hook(&self) -> Option<std::sync::Arc<dyn crate::pipeline::RecordHook>> {
        None
    }

    /// File what is due in the outbox.
    fn drain(&self) -> BoxFut<'_, Result<Drained, String>>;

    /// Outbox depth, lanes, answers (blocking: reads the store).
    fn status(&self) -> Result<RunnerStatus, String>;

    /// The same, read through `conn` (the listener's read-only connection), so a scrape never
    /// queues behind the walks for the runner's own connection (issue 27).
    fn status_on(&self, conn: &rusqlite::Connection) -> Result<RunnerStatus, String> {
        let _ = conn;
        self.status()
    }

    /// The limits each intake stated so far (for the status pages' lane caps).
    fn stated_limits(&self) -> Vec<(String, crate::filing::lanes::Limits)> {
        Vec::new()
    }
}

/// The real runner: walk → sign → store with its outbox row → file within the lanes.
impl JobRunner for crate::pipeline::Pipeline {
    fn run_job<'a>(
        &'a self,
        target: &'a str,
        request: &'a WalkRequest,
        submit: bool,
        bind_task: Option<&'a str>,
    ) -> BoxFut<'a, Result<JobDone, JobFailed>> {
        Box::pin(async move {
            let job = crate::pipeline::WalkJob {
                request: request.clone(),
                submit,
                bind_task: bind_task.map(str::to_string),
            };
            let report = crate::pipeline::Pipeline::run_target_job(self, &job, target)
                .await
                .map_err(|e| JobFailed {
                    text: e.to_string(),
                    store_unwritable: e.unwritable_reason(),
                })?;
            // The binding is sent beside the next fires, never in this one's way; a stop
            // before it is sent leaves it queued for the next drain.
            if let Some(b) = &report.task_binding {
                spawn_task_binding(self.clone(), b, target);
            }
            Ok(job_done(&report))
        })
    }

    fn run_stranger_job<'a>(
        &'a self,
        request: &'a WalkRequest,
        stranger: &'a crate::pipeline::StrangerWalk,
    ) -> BoxFut<'a, Result<JobDone, JobFailed>> {
        Box::pin(async move {
            let job = crate::pipeline::WalkJob {
                request: request.clone(),
                submit: true,
                bind_task: None,
            };
            let report = crate::pipeline::Pipeline::run_stranger_job(self, &job, stranger)
                .await
                .map_err(|e| JobFailed {
                    text: e.to_string(),
                    store_unwritable: e.unwritable_reason(),
                })?;
            Ok(job_done(&report))
        })
    }

    fn drain(&self) -> BoxFut<'_, Result<Drained, String>> {
        Box::pin(async move {
            let d = self.drain_outbox().await.map_err(|e| e.to_string())?;
            match self.send_due_task_bindings().await {
                Ok(b) if b != Default::default() => tracing::info!(
                    sent = b.sent,
                    settled_unknown = b.settled_unknown,
                    "task bindings drained"
                ),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "cannot drain the task bindings"),
            }
            Ok(d)
        })
    }

    fn status(&self) -> Result<RunnerStatus, String> {
        crate::pipeline::Pipeline::status(self).map_err(|e| e.to_string())
    }

    fn status_on(&self, conn: &rusqlite::Connection) -> Result<RunnerStatus, String> {
        crate::pipeline::Pipeline::status_on(self, conn).map_err(|e| e.to_string())
    }

    fn stated_limits(&self) -> Vec<(String, crate::filing::lanes::Limits)> {
        crate::pipeline::Pipeline::stated_limits(self)
    }

    fn record_hook(&self) -> Option<std::sync::Arc<dyn crate::pipeline::RecordHook>> {
        crate::pipeline::Pipeline::hook(self)
    }
}

fn job_done(report: &crate::pipeline::JobReport) -> JobDone {
    JobDone {
        record_id: report.record_id,
        sha256: report.outcome.sha256.clone(),
        outcome: Some(report.outcome.verdict.outcome().to_string()),
        submission: report.submission.as_ref().map(|s| s.state),
        intake_url: report.submission.as_ref().map(|s| s.intake_url.clone()),
    }
}

/// Send a walk's queued task binding in a task of its own and log what the ledger said; a
/// skipped binding is only logged.
fn spawn_task_binding(
    pipeline: crate::pipeline::Pipeline,
    binding: &crate::store::task_bindings::TaskBinding,
    target: &str,
) {
    use crate::filing::bind::BindState;
    let (id, target) = (binding.id, target.to_string());
    if binding.state != BindState::Queued {
        tracing::info!(target = %target, binding = %binding.describe(), "task binding");
        return;
    }
    tokio::spawn(async move {
        match pipeline.send_task_binding(id).await {
            Ok(b) => tracing::info!(
                target = %target,
                evidence_id = b.evidence_id.as_deref().unwrap_or("-"),
                binding = %b.describe(),
                "task binding"
            ),
            Err(e) => tracing::warn!(target = %target, error = %e, "task binding: cannot send"),
        }
    });
}
