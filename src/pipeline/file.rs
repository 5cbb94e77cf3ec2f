//! Filing: a stored record's submission planned within the intake's lanes, each attempt
//! (lookup, deferral, send) carried out as `filing` decides, the answer kept. A record is signed
//! here, as it is sent, with the key the pipeline signs with now (witness-pool.md §8.5): a
//! rotation never leaves a stale signature in the outbox. The only caller of the intake client.

use super::*;

impl Pipeline {
    /// Decide the outbox state of a new record before storing it.
    pub(super) async fn plan(
        &self,
        outcome: &WalkOutcome,
        intake_url: &str,
        signed: bool,
        witness_name: &str,
    ) -> Plan {
        let record = RecordView::read(&outcome.canonical).unwrap_or_default();
        let lane = Lane::of(record.key_url(), signed);
        let identity = lane.identity(witness_name);
        let purpose = record.purpose.as_deref().unwrap_or_default();
        let base = record.base.as_deref().unwrap_or_default();
        let endpoint = lanes::endpoint_of(purpose, base);
        let mut plan = Plan {
            intake_url: intake_url.to_string(),
            lane,
            identity,
            endpoint,
            state: SubmissionState::Queued,
            note: None,
        };
        // Before blaming the agent for a transport error, check this host can reach the intake.
        // (This GET also learns the intake's limits, so `limits_for` below does not ask again.)
        if outcome.nodes.iter().any(|n| n.status() == 0)
            && self.ask_intake(intake_url).await.is_none()
        {
            plan.state = SubmissionState::HostOffline;
            plan.note = Some("host offline: the intake was unreachable when this walk saw transport errors; not filed".into());
            return plan;
        }
        let limits = self.limits_for(intake_url).await;
        let text = String::from_utf8_lossy(&outcome.canonical);
        if lanes::js_length(&text) > limits.max_bytes {
            plan.state = SubmissionState::Refused;
            plan.note = Some(format!(
                "not sent: the record is longer than the intake's {} limit",
                limits.max_bytes
            ));
            return plan;
        }
        // Whether an earlier walk today already holds the endpoint's one counted place is
        // decided in the insert's transaction (`Plan::keep_local_if_planned_today`).
        plan
    }

    /// Ask the intake now (`GET`): `None` when nothing answered. Stated limits are kept for
    /// the rest of the run.
    pub(super) async fn ask_intake(&self, intake_url: &str) -> Option<Limits> {
        match intake::probe(&self.inner.transport, intake_url).await {
            IntakeProbe::Unreachable => None,
            IntakeProbe::Answered(None) => Some(Limits::default()),
            IntakeProbe::Answered(Some(stated)) => {
                self.inner
                    .limits
                    .lock()
                    .expect("limits lock")
                    .insert(intake_url.to_string(), stated);
                Some(stated)
            }
        }
    }

    /// The intake's stated limits (asked once per intake and run), spec constants otherwise.
    pub(super) async fn limits_for(&self, intake_url: &str) -> Limits {
        let known = self
            .inner
            .limits
            .lock()
            .expect("limits lock")
            .get(intake_url)
            .copied();
        match known {
            Some(l) => l,
            None => self.ask_intake(intake_url).await.unwrap_or_default(),
        }
    }

    /// One attempt at filing one outbox row; the row as it stands afterwards. The decisions
    /// are [`filing::next_step`] and [`filing::classify`]; this carries them out.
    pub(super) async fn attempt(
        &self,
        submission_id: i64,
    ) -> Result<(Submission, Filing), PipelineError> {
        let (row, filing, _) = self.attempt_and_say(submission_id).await?;
        Ok((row, filing))
    }

    /// [`Pipeline::attempt`], also saying whether the intake was looked up on the way.
    pub(super) async fn attempt_and_say(
        &self,
        submission_id: i64,
    ) -> Result<(Submission, Filing, bool), PipelineError> {
        let Some(_claim) = InFlightClaim::take(&self.inner.in_flight, submission_id) else {
            let row = self
                .with_store(move |s| outbox::get(s.connection(), submission_id))
                .await?;
            return Ok((row, Filing::AlreadyInFlight, false));
        };
        let now_t = self.inner.clock.now();
        let now = rfc3339_seconds(now_t);
        // Re-read under the claim (a drain works from a snapshot of due rows, and the walk
        // that planned a row may have filed it since), with our count of its lane today.
        let day = lanes::utc_day(now_t);
        let (row, usage) = self
            .with_store(move |s| {
                let row = outbox::get(s.connection(), submission_id)?;
                let (global, lane) =
                    outbox::accepted_on(s.connection(), &row.intake_url, &row.lane, &day)?;
                Ok((row, Usage { global, lane }))
            })
            .await?;
        let lane = Lane::from_key(&row.lane);
        let mut view = filing::Row {
            state: row.state,
            next_attempt_at: row.next_attempt_at.as_deref(),
            lane: &lane,
            looked_up: false,
        };
        // Only a due row needs the intake's limits (which may cost a GET the first time).
        let limits = if filing::is_due(&view, now_t) {
            self.limits_for(&row.intake_url).await
        } else {
            Limits::default()
        };
        loop {
            match filing::next_step(&view, now_t, &limits, usage) {
                Step::NotDue => {
                    let looked_up = view.looked_up;
                    return Ok((row, Filing::NotDue, looked_up));
                }
                Step::LookUp => {
                    // The request may have left (a stopped process, a lost answer): ask the
                    // intake before sending again; only its 404 leads on to a send.
                    let record_id = row.record_id;
                    let (sha, canonical, lookups) = self
                        .with_store(move |s| {
                            let rec = s.get_by_id(record_id)?;
                            let lookups = outbox::lookups(s.connection(), submission_id)?;
                            Ok((rec.row.sha256, rec.canonical, lookups))
                        })
                        .await?;
                    let (lookup, ex) =
                        intake::lookup(&self.inner.transport, &row.intake_url, &sha, &canonical)
                            .await;
                    let tries = (row.attempts as u32)
                        .saturating_add(lookups)
                        .saturating_add(1);
                    let said = format!(
                        "GET {}/<sha256>: {}",
                        row.intake_url.trim_end_matches('/'),
                        lookup_words(&lookup)
                    );
                    match filing::after_lookup(&lookup, tries, now_t, rand::random::<f64>()) {
                        AfterLookup::Filed(t) => {
                            let row = self
                                .record_lookup(submission_id, now, t, (ex.heard_status(), said))
                                .await?;
                            return Ok((row, Filing::FoundAtIntake, true));
                        }
                        AfterLookup::AskAgain(t) => {
                            let row = self
                                .record_lookup(submission_id, now, t, (ex.heard_status(), said))
                                .await?;
                            return Ok((row, Filing::LookupFailed, true));
                        }
                        AfterLookup::Send => {
                            let (n1, status) = (now.clone(), ex.heard_status());
                            self.with_store(move |s| {
                                outbox::record_not_found(
                                    s.connection(),
                                    submission_id,
                                    &n1,
                                    status,
                                    &said,
                                )
                            })
                            .await?;
                            view.looked_up = true;
                        }
                    }
                }
                Step::Defer(until) => {
                    let looked_up = view.looked_up;
                    let body = "not sent: our own count says this lane is full today";
                    let t = Transition::deferred(until);
                    let full = self.lane_full(&row, Some((&limits, &lane, usage)), now_t);
                    let row = self
                        .record_attempt(submission_id, now, t, (0, body.into()), full)
                        .await?;
                    return Ok((row, Filing::DeferredLocally, looked_up));
                }
                Step::Send => break,
            }
        }
        let (n1, record_id) = (now.clone(), row.record_id);
        let filing_key = self.inner.signing.as_ref().map(|(key, _)| key.clone());
        let (canonical, signature, public_key) = self
            .with_store(move |s| {
                outbox::mark_sending(s.connection(), submission_id, &n1)?;
                let rec = s.get_by_id(record_id)?;
                let (signature, public_key) = filing_signature(s, &rec, filing_key.as_ref(), &n1)?;
                Ok((rec.canonical, signature, public_key))
            })
            .await?;
        let body = IntakeSubmission {
            record_canonical: String::from_utf8_lossy(&canonical).into_owned(),
            signature_ed25519_b64: signature,
            public_key_ed25519_b64: public_key,
        };
        let sha256 = crate::digest::sha256_hex(&canonical);
        let (answer, ex) =
            intake::submit(&self.inner.transport, &row.intake_url, &body, &sha256).await;
        let attempts = row.attempts as u32 + 1;
        let t = filing::classify(&answer, attempts, now_t, rand::random::<f64>());
        let logged = String::from_utf8_lossy(&ex.body)
            .chars()
            .take(4096)
            .collect();
        // The intake says the lane is full (its count, which may include other witnesses').
        let full = (t.answer == AnswerKind::LaneFull)
            .then(|| self.lane_full(&row, None, now_t))
            .flatten();
        let row = self
            .record_attempt(submission_id, now, t, (ex.heard_status(), logged), full)
            .await?;
        Ok((row, Filing::Sent, view.looked_up))
    }

    /// What the hook writes of `row`'s lane found full: by our own count (`counted`: the
    /// intake's limits, the lane, our use today) or, without one, by the intake's answer.
    pub(super) fn lane_full(
        &self,
        row: &Submission,
        counted: Option<(&Limits, &Lane, Usage)>,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Option<HookWrite> {
        let full = match counted {
            Some((limits, lane, usage)) => LaneFull::Counted {
                intake: &row.intake_url,
                limits,
                lane,
                usage,
            },
            None => LaneFull::Said {
                intake: &row.intake_url,
                lane: &row.lane,
            },
        };
        self.inner.hook.as_ref()?.on_lane_full(&full, at)
    }

    /// Log an attempt's outcome on the submission (its attempt log and state) and read the row
    /// back as it now stands; what the hook makes of a `full` lane is written in the same
    /// transaction.
    pub(super) async fn record_attempt(
        &self,
        submission_id: i64,
        now: String,
        t: Transition,
        answer: (u16, String),
        full: Option<HookWrite>,
    ) -> Result<Submission, PipelineError> {
        let then: HookWrite = full.unwrap_or_else(|| Box::new(|_| Ok(())));
        self.record_answer(submission_id, now, t, answer, then)
            .await
    }

    /// Log a lookup that settled a row (found) or left it waiting (failed), counted on its row
    /// in the same transaction; the row as it now stands.
    pub(super) async fn record_lookup(
        &self,
        submission_id: i64,
        now: String,
        t: Transition,
        answer: (u16, String),
    ) -> Result<Submission, PipelineError> {
        let count: HookWrite = Box::new(move |c| outbox::count_lookup(c, submission_id));
        self.record_answer(submission_id, now, t, answer, count)
            .await
    }

    /// An answer (status and body) logged on the submission with `then` in its transaction;
    /// the row as it now stands.
    pub(super) async fn record_answer(
        &self,
        submission_id: i64,
        now: String,
        t: Transition,
        (status, body): (u16, String),
        then: HookWrite,
    ) -> Result<Submission, PipelineError> {
        self.with_store(move |s| {
            let next_attempt_at = t.retry_at.map(rfc3339_seconds);
            let attempt = attempt_result(&t, status, &body, next_attempt_at.as_deref());
            outbox::record_attempt_then(s.connection(), submission_id, &now, &attempt, then)?;
            outbox::get(s.connection(), submission_id)
        })
        .await
    }

    /// File one outbox row if it is still due when claimed (what a drain does with each row
    /// of its snapshot); the row as it stands afterwards.
    pub async fn file_submission(&self, submission_id: i64) -> Result<Submission, PipelineError> {
        Ok(self.attempt(submission_id).await?.0)
    }

    /// File everything that is due, in order.
    pub async fn drain_outbox(&self) -> Result<DrainReport, PipelineError> {
        let now = self.now();
        let due = self
            .with_store(move |s| outbox::due(s.connection(), &now))
            .await?;
        let mut report = DrainReport::default();
        for row in due {
            let (after, filing, looked_up) = self.attempt_and_say(row.id).await?;
            report.looked_up += u32::from(looked_up);
            match filing {
                Filing::Sent => report.attempted += 1,
                Filing::DeferredLocally | Filing::FoundAtIntake | Filing::LookupFailed => {}
                // The task filing it reports it.
                Filing::AlreadyInFlight | Filing::NotDue => continue,
            }
            match after.state {
                SubmissionState::Filed => report.filed += 1,
                SubmissionState::Refused => report.refused += 1,
                _ => report.deferred += 1,
            }
        }
        Ok(report)
    }
}

/// A lookup's result in a few words, for the attempt log.
/// The signature a submission carries (witness-pool.md §8.5): a record signed at walk time is
/// signed again now with the key this pipeline signs with, the one `key_url` serves after any
/// rotation, and that signature is kept beside the walk-time one (the same key gives the same
/// signature, kept once). An unsigned record stays unsigned: its lane was planned that way. A
/// signed record with no key configured now goes with its walk-time signature.
pub(super) fn filing_signature(
    store: &Store,
    rec: &crate::store::StoredRecord,
    key: Option<&SigningKey>,
    now: &str,
) -> Result<(Option<String>, Option<String>), StoreError> {
    let (Some(key), true) = (key, rec.row.signed) else {
        return Ok((rec.signature_b64.clone(), rec.public_key_b64.clone()));
    };
    let signed = sign(&rec.canonical, key);
    crate::store::signatures::add(
        store.connection(),
        rec.row.id,
        &signed.public_key_b64,
        &signed.signature_b64,
        now,
    )?;
    Ok((Some(signed.signature_b64), Some(signed.public_key_b64)))
}

pub(super) fn lookup_words(lookup: &crate::filing::answer::Lookup) -> String {
    match lookup {
        crate::filing::answer::Lookup::Found { status, .. } => {
            format!("found ({status}, same sha256 and bytes): filed, not sent again")
        }
        crate::filing::answer::Lookup::NotFound => "404, not at the intake: sending".to_string(),
        crate::filing::answer::Lookup::Failed { error, .. } => {
            format!("{error}; still unknown, asked again later (not sent)")
        }
    }
}

/// The pipeline carries out what `filing` decides: these run it over a real store with
/// a transport whose address policy refuses every loopback address, so nothing leaves the
/// process (no network), and check what each decision did to the row.
/// The outbox row's fields for one attempt or lookup, from its transition.
pub(super) fn attempt_result<'a>(
    t: &'a Transition,
    status: u16,
    body: &'a str,
    next_attempt_at: Option<&'a str>,
) -> AttemptResult<'a> {
    AttemptResult {
        state: t.state,
        answer: t.answer,
        status,
        body,
        error: t.error.as_deref(),
        reason_code: t.reason_code.as_deref(),
        counted: t.counted,
        count_reason: t.count_reason.as_deref(),
        filed_day: t.filed_day.as_deref(),
        next_attempt_at,
    }
}
