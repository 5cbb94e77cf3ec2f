//! Walking: a job's walk, its task binding planned and signed, the record stored with its
//! outbox row in one transaction, and the first filing attempt when it is due. What happens to
//! a record after it is stored is `file`'s.

use super::*;

impl Pipeline {
    /// Walk, sign, store, and (when asked) file.
    pub async fn run_job(&self, job: &WalkJob) -> Result<JobReport, PipelineError> {
        self.run_job_with_stages(job, &|_| {}).await
    }

    /// [`Pipeline::run_job`] for a configured target: its alerts (when `[alerts]` has channels)
    /// are planned in the record's transaction.
    pub async fn run_target_job(
        &self,
        job: &WalkJob,
        target: &str,
    ) -> Result<JobReport, PipelineError> {
        self.run_job_inner(job, &|_| {}, Some(target.to_string()), None)
            .await
    }

    /// [`Pipeline::run_job`] for a walk a stranger asked for ([`StrangerWalk`]).
    pub async fn run_stranger_job(
        &self,
        job: &WalkJob,
        stranger: &StrangerWalk,
    ) -> Result<JobReport, PipelineError> {
        self.run_job_inner(job, &|_| {}, None, Some(stranger)).await
    }

    /// [`Pipeline::run_job`], telling `on_stage` as each stage begins.
    pub async fn run_job_with_stages(
        &self,
        job: &WalkJob,
        on_stage: OnStage<'_>,
    ) -> Result<JobReport, PipelineError> {
        self.run_job_inner(job, on_stage, None, None).await
    }

    pub(super) async fn run_job_inner(
        &self,
        job: &WalkJob,
        on_stage: OnStage<'_>,
        alert_target: Option<String>,
        stranger: Option<&StrangerWalk>,
    ) -> Result<JobReport, PipelineError> {
        let mut request = job.request.clone();
        let transport = stranger.map_or(&self.inner.transport, |s| &s.transport);
        if let Some((_, key_url)) = &self.inner.signing {
            // key_url is part of the signed bytes (§5): set before canonicalising.
            request.witness.key_url = key_url.clone();
        }
        let outcome = crate::findings::walk_with_steps(
            transport,
            &self.inner.trust,
            &request,
            self.inner.clock.as_ref(),
            rand::random(),
            &|n| on_stage(Stage::Node(n)),
        )
        .await;
        let binding = job
            .bind_task
            .as_deref()
            .map(|ledger| self.plan_binding(&request, &outcome, ledger));
        let intake_url = match (job.submit, stranger) {
            (false, _) => None,
            (true, Some(s)) => Some((s.intake)(outcome.witness_intake.clone()).await),
            (true, None) => self
                .inner
                .intake_override
                .clone()
                .or_else(|| outcome.witness_intake.clone()),
        };
        self.store_and_file_with_stages(
            outcome,
            intake_url,
            job.submit,
            &request.witness.name,
            on_stage,
            WithRecord {
                // The origin walked rides along: every alert names it.
                alert_target: alert_target.map(|name| (name, request.base())),
                binding,
            },
        )
        .await
    }

    /// The walk's task binding (spec §5.1), built and signed now so that it is committed with
    /// the record: the preconditions in the reference's order (a2a mode, a signing key, a task
    /// in n3's answer), then the observation with a fresh requester key P.
    pub(super) fn plan_binding(
        &self,
        request: &WalkRequest,
        outcome: &WalkOutcome,
        ledger_url: &str,
    ) -> NewBinding {
        use crate::witness::task_bind::{self, Skip};
        let skipped = |skip: Skip| NewBinding::Skipped {
            ledger_url: ledger_url.to_string(),
            reason: skip.reason(),
        };
        if request.mode != crate::walk::Mode::A2a {
            return skipped(Skip::NotA2a);
        }
        let Some((witness_key, _)) = &self.inner.signing else {
            return skipped(Skip::NoSigningKey);
        };
        let reply = outcome.nodes.iter().find(|n| n.n == 3).and_then(|n3| {
            crate::walk::assertions::n3_reply_message(request.mode, request.profile, n3)
        });
        let task_id = match task_bind::task_id(reply.as_ref().map(|d| d.root())) {
            Ok(id) => id,
            Err(skip) => return skipped(skip),
        };
        // P stands for the requester: a key of its own, made for this binding and dropped
        // after signing, never the record's.
        let requester = SigningKey::from_bytes(&rand::random::<[u8; 32]>());
        let observed_at = self.now();
        let inputs = task_bind::Inputs {
            task_id: &task_id,
            origin: &request.origin,
            verdict: outcome.verdict.outcome(),
            observed_at: &observed_at,
        };
        match task_bind::bind(&inputs, witness_key, &requester) {
            Ok(obs) => NewBinding::Queued {
                ledger_url: ledger_url.to_string(),
                body: obs.body(),
                task_id: obs.task_id,
                evidence_id: obs.evidence_id,
                witness_id: obs.witness_id,
                requester_id: obs.hop.from,
            },
            Err(skip) => skipped(skip),
        }
    }

    /// Store a finished walk (and plan its submission), then file it if it is due.
    pub async fn store_and_file(
        &self,
        outcome: WalkOutcome,
        intake_url: Option<String>,
        submit: bool,
        witness_name: &str,
    ) -> Result<JobReport, PipelineError> {
        self.store_and_file_with_stages(
            outcome,
            intake_url,
            submit,
            witness_name,
            &|_| {},
            WithRecord::default(),
        )
        .await
    }

    pub(super) async fn store_and_file_with_stages(
        &self,
        outcome: WalkOutcome,
        intake_url: Option<String>,
        submit: bool,
        witness_name: &str,
        on_stage: OnStage<'_>,
        with_record: WithRecord,
    ) -> Result<JobReport, PipelineError> {
        let WithRecord {
            alert_target,
            binding,
        } = with_record;
        on_stage(Stage::Signing);
        let signed = self
            .inner
            .signing
            .as_ref()
            .map(|(key, _)| sign(&outcome.canonical, key));
        let new_record = NewRecord {
            canonical: outcome.canonical.clone(),
            signature_b64: signed.as_ref().map(|s| s.signature_b64.clone()),
            public_key_b64: signed.as_ref().map(|s| s.public_key_b64.clone()),
            kept_full: outcome.kept.as_ref().map(|(canonical, salt)| KeptFull {
                canonical: canonical.clone(),
                salt_hex: salt.clone(),
            }),
        };
        let plan = match (&intake_url, submit) {
            (Some(url), true) => Some(
                self.plan(&outcome, url, signed.is_some(), witness_name)
                    .await,
            ),
            _ => None,
        };
        let now = self.now();
        let (today, file_extra_walks) = (self.today(), self.inner.file_extra_walks);
        on_stage(Stage::Storing);
        // The record's checks (signature included) run here, in parallel with other walks;
        // the writer then commits every record that arrived meanwhile in one transaction.
        let prepared = tokio::task::spawn_blocking(move || new_record.prepare())
            .await
            .map_err(|e| PipelineError::Join(e.to_string()))??;
        // What the hook makes of this walk, written in the record's transaction.
        let hooked = match (&self.inner.hook, alert_target) {
            (Some(hook), Some((target, origin))) => {
                hook.on_record(&target, &origin, &outcome, self.inner.clock.now())
            }
            _ => None,
        };
        let beside = crate::store::beside::Beside {
            card_verification: outcome.card_verification.clone(),
            terms: outcome.terms.clone(),
            reciprocal: outcome.reciprocal.clone(),
        };
        let then: Then<(Option<Submission>, Option<TaskBinding>)> =
            Box::new(move |conn, id, new| {
                crate::store::beside::put(conn, id, &beside)?;
                if let Some(write) = hooked
                    && new
                {
                    write(conn)?;
                }
                // A record has at most one binding: a walk whose record was already stored (the
                // same bytes) reports the binding that record has, if any.
                let binding = match &binding {
                    Some(b) if new => Some(task_bindings::insert(conn, id, b, &now)?),
                    Some(_) => task_bindings::for_record(conn, id)?,
                    None => None,
                };
                let Some(mut plan) = plan else {
                    return Ok((None, binding));
                };
                if !file_extra_walks {
                    plan.keep_local_if_planned_today(conn, &today)?;
                }
                let row = outbox::insert(
                    conn,
                    &NewSubmission {
                        record_id: id,
                        intake_url: &plan.intake_url,
                        lane: &plan.lane.key(),
                        identity: &plan.identity,
                        endpoint: &plan.endpoint,
                        state: plan.state,
                        next_attempt_at: (plan.state == SubmissionState::Queued)
                            .then_some(now.as_str()),
                        last_error: plan.note.as_deref(),
                        now: &now,
                    },
                )?;
                Ok((Some(row), binding))
            });
        let committed = self.inner.writer.commit(prepared, then).await?;
        let (record_id, (submission, task_binding)) = (committed.id, committed.extra);
        let submission = match submission {
            Some(row) if row.state == SubmissionState::Queued => {
                on_stage(Stage::Filing);
                Some(self.attempt(row.id).await?.0)
            }
            other => other,
        };
        Ok(JobReport {
            outcome,
            record_id,
            signed,
            submission: submission.as_ref().map(SubmissionReport::from),
            task_binding,
        })
    }
}
