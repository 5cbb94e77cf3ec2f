//! The scheduling core: which target fires when, bounded concurrency, no overlapping walks of a
//! target, and a shutdown that lets walks finish up to a deadline.
//!
//! Our own loop over [`croner`] rather than tokio-cron-scheduler: that crate polls every job
//! twice a second (a measurable idle cost with a thousand targets), has no jitter, and hides the
//! loop the watchdog must be fed from. Here the daemon sleeps until the earliest fire time and
//! owns the loop.

use super::consent::{ConsentGate, Decision};
use super::db::{self, WalkEnd, WalkStart, state};
use super::runner::JobRunner;
use super::store::DaemonStore;
use crate::config::Target;
use chrono::{DateTime, Utc};
use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tracing::Instrument;

/// What a fire needs; replaced as a whole on reload (fires in flight keep theirs).
#[derive(Clone)]
pub struct FireContext {
    pub runner: Arc<dyn JobRunner>,
    pub consent: Arc<ConsentGate>,
    pub store: DaemonStore,
    pub semaphore: Arc<Semaphore>,
    /// The time every `daemon_walks` row is stamped with (the pipeline's clock).
    pub clock: Arc<dyn crate::clock::Clock>,
    /// Tells an origin that asked (§11.5 `notify`) after its scheduled walks; `None` when
    /// `[witness] notify = "never"`.
    pub notifier: Option<Arc<crate::notify::Notifier>>,
}

/// Targets in flight, by name. A fire of a target already in flight is skipped, not queued:
/// a walk that takes longer than its period must not pile up behind itself.
type InFlight = Arc<Mutex<HashSet<String>>>;

/// Removes a target from the in-flight set when its task ends, however it ends (an aborted
/// task drops its future, and with it this guard).
struct InFlightGuard {
    set: InFlight,
    name: String,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.set
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.name);
    }
}

/// How a shutdown went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Walks that finished within the grace period.
    pub finished: usize,
    /// Walks cut off at the deadline (recorded as `aborted`).
    pub aborted: usize,
}

pub struct Scheduler {
    targets: Vec<Arc<Target>>,
    /// Every target's next fire as (time, index into `targets`), earliest first: the loop turns
    /// once per finished walk, and with 10,000 targets a scan of every target per turn cost
    /// about 1.5 % of the daemon's CPU during a wave.
    due: BTreeSet<(DateTime<Utc>, usize)>,
    ctx: FireContext,
    in_flight: InFlight,
    tasks: JoinSet<()>,
}

impl Scheduler {
    pub fn new(targets: Vec<Target>, ctx: FireContext, now: DateTime<Utc>) -> Scheduler {
        let mut s = Scheduler {
            targets: Vec::new(),
            due: BTreeSet::new(),
            ctx,
            in_flight: Arc::new(Mutex::new(HashSet::new())),
            tasks: JoinSet::new(),
        };
        s.set_targets(targets, now);
        s
    }

    /// Take a new target list (reload). Walks in flight continue; a target that keeps its name
    /// keeps its no-overlap guard.
    pub fn replace(&mut self, targets: Vec<Target>, ctx: FireContext, now: DateTime<Utc>) {
        self.ctx = ctx;
        self.set_targets(targets, now);
    }

    fn set_targets(&mut self, targets: Vec<Target>, now: DateTime<Utc>) {
        self.targets = targets.into_iter().map(Arc::new).collect();
        self.due = (self.targets.iter().enumerate())
            .filter_map(|(i, t)| t.schedule.next_after(now).map(|next| (next, i)))
            .collect();
    }

    pub fn target_count(&self) -> usize {
        self.targets.len()
    }

    /// The earliest upcoming fire: (time, target name).
    pub fn next_fire(&self) -> Option<(DateTime<Utc>, &str)> {
        let &(t, i) = self.due.first()?;
        Some((t, self.targets[i].name.as_str()))
    }

    /// Walks running or waiting for a slot.
    pub fn in_flight(&self) -> usize {
        self.tasks.len()
    }

    /// Start every target due at `now`; returns how many fires were started.
    pub fn fire_due(&mut self, now: DateTime<Utc>) -> usize {
        let mut started = 0;
        while let Some(&(due, i)) = self.due.first() {
            if due > now {
                break;
            }
            self.due.pop_first();
            // Missed occurrences (the host slept) are not caught up: the next is after now.
            let target = self.targets[i].clone();
            if let Some(next) = target.schedule.next_after(now) {
                self.due.insert((next, i));
            }
            let fresh = self
                .in_flight
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(target.name.clone());
            if !fresh {
                tracing::warn!(target = %target.name, "previous walk of this target still running: this fire is skipped");
                let store = self.ctx.store.clone();
                let now = db::timestamp(self.ctx.clock.now());
                self.tasks.spawn(async move {
                    let scheduled = db::timestamp(due);
                    let name = target.name.clone();
                    let origin = target.request.origin.clone();
                    let endpoint = target.request.endpoint.clone();
                    let r = store
                        .with(move |c| {
                            db::note_fire(
                                c,
                                &WalkStart {
                                    target: &name,
                                    origin: &origin,
                                    endpoint: endpoint.as_deref(),
                                    scheduled_for: &scheduled,
                                    now: &now,
                                },
                                &WalkEnd {
                                    state: state::SKIPPED_OVERLAP,
                                    detail: Some(
                                        "the previous walk of this target was still running",
                                    ),
                                    ..WalkEnd::default()
                                },
                            )
                        })
                        .await;
                    if let Err(e) = r {
                        tracing::error!(error = %e, "cannot record a skipped fire");
                    }
                });
                continue;
            }
            let guard = InFlightGuard {
                set: self.in_flight.clone(),
                name: target.name.clone(),
            };
            let ctx = self.ctx.clone();
            self.tasks.spawn(fire(target, due, ctx, guard));
            started += 1;
        }
        started
    }

    /// Wait for the next task to end (pending forever when none runs).
    pub async fn join_next(&mut self) {
        if self.tasks.is_empty() {
            std::future::pending::<()>().await;
        }
        if let Some(Err(e)) = self.tasks.join_next().await
            && e.is_panic()
        {
            tracing::error!(error = %e, "a walk task panicked");
        }
    }

    /// Stop starting walks, let those in flight finish until `grace` has passed, cut off the
    /// rest and record them as aborted.
    pub async fn shutdown(&mut self, grace: Duration) -> ShutdownReport {
        // Fires still waiting for a slot have not begun: they give up instead of starting now.
        self.ctx.semaphore.close();
        let mut report = ShutdownReport::default();
        let deadline = tokio::time::Instant::now() + grace;
        while !self.tasks.is_empty() {
            tokio::select! {
                r = self.tasks.join_next() => if r.is_some() { report.finished += 1 },
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        report.aborted = self.tasks.len();
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        let detail = format!(
            "cut off by shutdown: still running {} s after SIGTERM (daemon.shutdown_grace_secs)",
            grace.as_secs()
        );
        let now = db::timestamp(self.ctx.clock.now());
        // Every `running` row now belongs to a task of this run that was just cut off (the
        // previous run's leftovers were closed at start).
        let r = self
            .ctx
            .store
            .with(move |c| db::abort_running(c, &now, &detail))
            .await;
        if let Err(e) = r {
            tracing::error!(error = %e, "cannot record the walks cut off by shutdown");
        }
        report
    }
}

/// One fire: wait for a slot, then ask the consent file, walk, record how it went.
///
/// Thousands of fires can wait for a slot at once (every target due in the same second). The
/// walk's future is several KB (the consent fetch is inline), so it is boxed only once the slot
/// is granted: a waiting fire holds a few hundred bytes (10,000 waiting fires measured 212 MiB
/// peak RSS before this; BENCHMARKS.md, note 9).
async fn fire(target: Arc<Target>, due: DateTime<Utc>, ctx: FireContext, guard: InFlightGuard) {
    let Ok(permit) = ctx.semaphore.clone().acquire_owned().await else {
        tracing::info!(target = %target.name, "shutting down: this fire did not start");
        return;
    };
    Box::pin(fire_in_slot(target, due, ctx, guard, permit)).await
}

async fn fire_in_slot(
    target: Arc<Target>,
    due: DateTime<Utc>,
    ctx: FireContext,
    guard: InFlightGuard,
    permit: tokio::sync::OwnedSemaphorePermit,
) {
    let endpoint = target
        .request
        .endpoint
        .clone()
        .unwrap_or_else(|| target.request.origin.clone());
    let span = tracing::info_span!("walk", target = %target.name, endpoint = %endpoint, sha = tracing::field::Empty);
    async move {
        let scheduled = db::timestamp(due);
        match ctx.consent.decide(&target.request.origin).await {
            Ok(Decision::Walk { notify }) => {
                let stored = walk(&target, scheduled.clone(), &ctx).await;
                // Most origins declare no `notify` (guard 1): nothing more to do, not even a
                // trip to the store (the daemon's 10,000-target wave runs through here).
                if let (Some(stored), Some(notifier), true) =
                    (stored, ctx.notifier.clone(), notify.is_some())
                {
                    // The walk's row is finished: its slot and its no-overlap guard go back
                    // now, so a notification (up to 10 s) never holds up the next fires.
                    drop(permit);
                    drop(guard);
                    let after = crate::notify::AfterWalk {
                        walk_id: stored.walk_id,
                        record_id: stored.record_id,
                        kind: crate::notify::WalkKind::Scheduled,
                        privacy: target.request.privacy,
                        origin: target.request.origin.clone(),
                        notify,
                        wave: scheduled,
                        submits: target.submit,
                    };
                    notify_after(after, &notifier, &ctx).await;
                }
            }
            Ok(Decision::Declined { sha256, checked_at }) => {
                record_declined(&target, scheduled, &ctx, sha256, checked_at).await
            }
            Err(e) => {
                // Without a stored consent read we cannot show why we walked: skip this fire.
                tracing::error!(error = %e, "cannot store the consent read: this fire is skipped");
            }
        }
    }
    .instrument(span)
    .await
}

/// §11.5: guards 1–7 decided and stored (an attempt before its POST), then guard 8 and the
/// POST, and the attempt settled with what came of it.
async fn notify_after(
    after: crate::notify::AfterWalk,
    notifier: &crate::notify::Notifier,
    ctx: &FireContext,
) {
    use crate::notify::Step;
    let settings = notifier.settings.clone();
    let now = ctx.clock.now();
    let decided = ctx
        .store
        .with_store(move |s| crate::notify::decide(&settings, s, &after, now))
        .await;
    match decided {
        Ok(Step::Null) => {}
        Ok(Step::Settled(status)) => {
            tracing::info!(notify_status = %status, "notification not sent")
        }
        Ok(Step::Send {
            id,
            url,
            host,
            body,
        }) => {
            let status = notifier.send(&host, &url, body).await;
            tracing::info!(notify_host = %host, notify_status = %status, "notification");
            let r = ctx
                .store
                .with(move |c| crate::store::notifications::settle(c, id, &status))
                .await;
            if let Err(e) = r {
                tracing::error!(error = %e, "cannot store a notification's result (it reads as interrupted at the next start)");
            }
        }
        Err(e) => tracing::error!(error = %e, "cannot decide a notification: none sent"),
    }
}

/// The `daemon_walks` row a fire of `target` opens, stamped `now`.
fn begin_walk(
    target: &Arc<Target>,
    scheduled: String,
    now: String,
) -> impl FnOnce(&rusqlite::Connection) -> Result<i64, crate::store::StoreError> + Send + 'static {
    let target = target.clone();
    move |c: &rusqlite::Connection| {
        db::begin_walk(
            c,
            &WalkStart {
                target: &target.name,
                origin: &target.request.origin,
                endpoint: target.request.endpoint.as_deref(),
                scheduled_for: &scheduled,
                now: &now,
            },
        )
    }
}

/// The origin declines listing: the fire is recorded as declined (and its alert planned) in
/// one transaction, and nothing is walked.
async fn record_declined(
    target: &Arc<Target>,
    scheduled: String,
    ctx: &FireContext,
    sha256: String,
    checked_at: String,
) {
    let detail =
        format!("the origin's consent file declines listing (sha256 {sha256}, read {checked_at})");
    let begin = begin_walk(target, scheduled, db::timestamp(ctx.clock.now()));
    let at = ctx.clock.now();
    let finished = db::timestamp(at);
    // The decline's alert is planned in the fire's own transaction.
    let hooked = ctx.runner.record_hook().and_then(|hook| {
        hook.on_declined(
            &target.name,
            &target.request.base(),
            target.request.endpoint.as_deref(),
            &sha256,
            at,
        )
    });
    let r = ctx
        .store
        .with(move |c| {
            let tx = crate::store::write_transaction(c)?;
            let c = &*tx;
            if let Some(write) = hooked {
                write(c)?;
            }
            let id = begin(c)?;
            db::finish_walk(
                c,
                id,
                &WalkEnd {
                    state: state::DECLINED,
                    detail: Some(&detail),
                    ..WalkEnd::default()
                },
                &finished,
            )?;
            tx.commit()?;
            Ok(())
        })
        .await;
    if let Err(e) = r {
        tracing::error!(error = %e, "cannot record a declined fire");
    }
}

/// How a walk ended, as its `daemon_walks` row keeps it.
struct Ended {
    state: &'static str,
    sha256: Option<String>,
    record_id: Option<i64>,
    submission: Option<crate::filing::SubmissionState>,
    detail: Option<String>,
}

/// A walk that stored a record, its `daemon_walks` row finished.
struct Stored {
    walk_id: i64,
    record_id: i64,
}

/// Consent given: open the fire's row, walk (and store, and file), close the row.
async fn walk(target: &Arc<Target>, scheduled: String, ctx: &FireContext) -> Option<Stored> {
    let begin = begin_walk(target, scheduled, db::timestamp(ctx.clock.now()));
    let id = match ctx.store.with_relaxed(begin).await {
        Ok(id) => id,
        Err(e) => {
            tracing::error!(error = %e, "cannot record the walk's start: this fire is skipped");
            return None;
        }
    };
    let ended = run_job(target, ctx).await;
    let stored = ended.record_id.map(|record_id| Stored {
        walk_id: id,
        record_id,
    });
    let finished = db::timestamp(ctx.clock.now());
    let r = ctx
        .store
        .with_relaxed(move |c| {
            db::finish_walk(
                c,
                id,
                &WalkEnd {
                    state: ended.state,
                    record_id: ended.record_id,
                    record_sha256: ended.sha256.as_deref(),
                    submission: ended.submission,
                    detail: ended.detail.as_deref(),
                },
                &finished,
            )
        })
        .await;
    if let Err(e) = r {
        tracing::error!(error = %e, "cannot record the walk's end");
        return None;
    }
    stored
}

/// Run the walk through the runner; log it and note the store's health.
async fn run_job(target: &Target, ctx: &FireContext) -> Ended {
    let result = ctx
        .runner
        .run_job(
            &target.name,
            &target.request,
            target.submit,
            target.bind_task.as_deref(),
        )
        .await;
    match result {
        Ok(done) => {
            ctx.store.health().wrote();
            tracing::Span::current().record("sha", done.sha256.as_str());
            tracing::info!(
                outcome = done.outcome.as_deref().unwrap_or("-"),
                submission = done.submission.map_or("-", |s| s.as_str()),
                record_id = done.record_id,
                "walk stored"
            );
            Ended {
                state: state::DONE,
                sha256: Some(done.sha256),
                record_id: Some(done.record_id),
                submission: done.submission,
                detail: None,
            }
        }
        Err(e) => {
            tracing::error!(error = %e, "walk failed in the daemon (not the agent's failure)");
            if let Some(why) = e.store_unwritable {
                ctx.store.health().refused(why);
            }
            Ended {
                state: state::ERROR,
                sha256: None,
                record_id: None,
                submission: None,
                detail: Some(e.text),
            }
        }
    }
}
