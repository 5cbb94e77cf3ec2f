//! Reciprocal walks in the daemon (issue 44; witness-pool.md §6): the face's [`Desk`] decides
//! a `caller_card` while answering and commits the decision (and the queued walk) before the
//! answer leaves; the [`Walker`] service walks the queue, one walk at a time, beside the
//! scheduled walks and never in their way (no scheduler slot, no scheduler semaphore).
//!
//! A killed daemon loses nothing: the queue is the store's `reciprocal_walks` table, and a
//! walk left `running` is queued again at the next start.

use super::metrics::WitnessMetrics;
use super::runner::JobRunner;
use super::services::Service;
use super::store::DaemonStore;
use super::witness_log::clip;
use crate::app::ReciprocalSetup;
use crate::clock::Clock;
use crate::consent::Consent;
use crate::reciprocal::{Decline, Queue, state};
use crate::store::reciprocal_walks::{self as queue, Ended, ReciprocalWalk, Requested};
use crate::witness_pool::caller;
use crate::witness_pool::observation::Reciprocal;
use futures_util::future::BoxFuture;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

/// How much of a caller card a row keeps.
const CARD_CHARS: usize = 300;
/// The walker looks at the queue at least this often, even unwoken.
const LOOK_EVERY: Duration = Duration::from_secs(60);
/// The decline reason of a walk that could not be committed: nothing is promised that is not
/// stored (ours; the text of a message-only answer says it).
pub const NOT_STORED: &str = "not_stored";

/// What the face and the walker share: the signal that a walk was queued.
#[derive(Default)]
pub(super) struct QueueSignal {
    queued: Notify,
}

/// The face's side: decide a `caller_card` (§6.2) and commit the decision.
pub(super) struct Desk {
    pub setup: ReciprocalSetup,
    pub store: DaemonStore,
    pub clock: Arc<dyn Clock>,
    pub signal: Arc<QueueSignal>,
    pub metrics: Arc<WitnessMetrics>,
}

impl Desk {
    /// The answer's `EXT/reciprocal` for `value` (the raw metadata value), stored first.
    pub async fn decide(&self, value: &Value) -> Reciprocal<'static> {
        let now = self.clock.now();
        let requested_at = crate::clock::utc_millis(now);
        let raw = match value {
            Value::String(s) => clip(s, CARD_CHARS),
            other => clip(&other.to_string(), CARD_CHARS),
        };
        let walk_by = crate::clock::utc_millis(
            now + chrono::Duration::from_std(self.setup.within).unwrap_or(chrono::Duration::MAX),
        );
        let checked = caller::check(&self.setup.measurer, value, &self.setup.own_hosts).await;
        let (origin, decided) = match checked {
            Ok(caller) => (Some(caller.origin), Ok(())),
            Err((reason, why, origin)) => (origin, Err((reason, why))),
        };
        let budget = self.setup.per_day;
        let stored = self
            .store
            .with(move |c| {
                let asked = Requested {
                    requested_at: &requested_at,
                    caller_card: &raw,
                    origin: origin.as_deref(),
                };
                match decided {
                    Err((reason, why)) => {
                        queue::insert_declined(c, &asked, reason, why.as_deref())?;
                        Ok(Queue::Declined(reason))
                    }
                    Ok(()) => queue::queue(c, &asked, &walk_by, budget),
                }
            })
            .await;
        match stored {
            Ok(Queue::New) => {
                self.signal.queued.notify_one();
                self.metrics.count_reciprocal(None);
                Reciprocal::Scheduled
            }
            Ok(Queue::Join(_)) => {
                self.metrics.count_reciprocal(None);
                Reciprocal::Scheduled
            }
            Ok(Queue::Declined(reason)) => {
                self.metrics.count_reciprocal(Some(reason));
                tracing::info!(
                    reason = reason.as_str(),
                    "witness face: reciprocal walk declined"
                );
                Reciprocal::Declined {
                    reason: reason.as_str(),
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "witness face: cannot store a reciprocal request; declined");
                Reciprocal::Declined { reason: NOT_STORED }
            }
        }
    }
}

/// What one configuration walks with; `None` while reciprocal walks are off (queued rows wait).
#[derive(Clone)]
struct Walking {
    runner: Arc<dyn JobRunner>,
    setup: ReciprocalSetup,
}

/// The walker as a daemon service: one task that walks the queue.
pub(super) struct Walker {
    settings: watch::Sender<Option<Walking>>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Walker {
    pub fn start(
        runner: Arc<dyn JobRunner>,
        setup: Option<ReciprocalSetup>,
        store: &DaemonStore,
        clock: Arc<dyn Clock>,
        signal: Arc<QueueSignal>,
        metrics: Arc<WitnessMetrics>,
    ) -> Walker {
        let (settings, settings_rx) = watch::channel(setup.map(|setup| Walking { runner, setup }));
        let (stop, stop_rx) = watch::channel(false);
        let walk_loop = WalkLoop {
            store: store.clone(),
            clock,
            signal,
            metrics,
            settings: settings_rx,
            stop: stop_rx,
        };
        Walker {
            settings,
            stop,
            task: tokio::spawn(walk_loop.run()),
        }
    }
}

impl Service for Walker {
    fn reload(&mut self, ingredients: &mut super::ingredients::Ingredients) {
        let walking = ingredients.reciprocal.clone().map(|setup| Walking {
            runner: ingredients.runner.clone(),
            setup,
        });
        self.settings.send_replace(walking);
    }

    /// A walk still running at `deadline` is cut off; its row stays `running` and is queued
    /// again at the next start.
    fn stop(self: Box<Self>, deadline: Instant) -> BoxFuture<'static, ()> {
        let Walker { stop, mut task, .. } = *self;
        Box::pin(async move {
            let _ = stop.send(true);
            if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
                tracing::warn!(
                    "reciprocal walk cut off by shutdown; it is walked again at the next start"
                );
                task.abort();
            }
        })
    }
}

struct WalkLoop {
    store: DaemonStore,
    clock: Arc<dyn Clock>,
    signal: Arc<QueueSignal>,
    metrics: Arc<WitnessMetrics>,
    settings: watch::Receiver<Option<Walking>>,
    stop: watch::Receiver<bool>,
}

impl WalkLoop {
    async fn run(mut self) {
        match self.store.with(queue::requeue_interrupted).await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(
                walks = n,
                "reciprocal walks a stopped daemon left running are queued again"
            ),
            Err(e) => tracing::error!(error = %e, "cannot requeue interrupted reciprocal walks"),
        }
        while !*self.stop.borrow() {
            let walking = self.settings.borrow().clone();
            let next = match &walking {
                Some(_) => self.store.with(queue::next_queued).await,
                None => Ok(None),
            };
            match (walking, next) {
                // A stop lets the walk in flight finish until the shutdown's deadline.
                (Some(walking), Ok(Some(row))) => self.walk(&walking, row).await,
                (_, next) => {
                    if let Err(e) = next {
                        tracing::error!(error = %e, "cannot read the reciprocal queue");
                    }
                    tokio::select! {
                        _ = self.signal.queued.notified() => {}
                        _ = self.settings.changed() => {}
                        _ = self.stop.wait_for(|s| *s) => return,
                        _ = tokio::time::sleep(LOOK_EVERY) => {}
                    }
                }
            }
        }
    }

    /// §6.3: take the row, re-read the consent file, walk, record how it ended.
    async fn walk(&self, walking: &Walking, row: ReciprocalWalk) {
        let id = row.id;
        let now = crate::clock::utc_millis(self.clock.now());
        match self.store.with(move |c| queue::start(c, id, &now)).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::error!(error = %e, "cannot take a reciprocal walk");
                tokio::time::sleep(Duration::from_secs(1)).await;
                return;
            }
        }
        let origin = row.origin.clone().unwrap_or_default();
        let span = tracing::info_span!("reciprocal", origin = %origin, id);
        let ended = tracing::Instrument::instrument(self.walk_taken(walking, &origin), span).await;
        self.metrics.count_reciprocal_end(ended.state);
        let now = crate::clock::utc_millis(self.clock.now());
        let r = self
            .store
            .with(move |c| {
                queue::finish(
                    c,
                    id,
                    &Ended {
                        state: ended.state,
                        reason: ended.reason,
                        detail: ended.detail.as_deref(),
                        record_id: ended.record_id,
                        record_sha256: ended.record_sha256.as_deref(),
                        intake_url: ended.intake_url.as_deref(),
                    },
                    &now,
                )
            })
            .await;
        if let Err(e) = r {
            tracing::error!(error = %e, "cannot record how a reciprocal walk ended");
        }
    }

    async fn walk_taken(&self, walking: &Walking, origin: &str) -> Owned {
        let setup = &walking.setup;
        if let Consent::Declined { sha256 } = caller::listing(&setup.measurer, origin).await {
            tracing::info!("reciprocal walk cancelled: the consent file now declines listing");
            return Owned {
                state: state::CANCELLED,
                reason: Some(Decline::ListingDecline.as_str()),
                detail: Some(format!(
                    "the consent file declined listing when the walk was to start (sha256 {sha256})"
                )),
                ..Owned::default()
            };
        }
        let request = setup.request(origin);
        match walking
            .runner
            .run_stranger_job(&request, &setup.stranger)
            .await
        {
            Ok(done) => {
                tracing::info!(sha = %done.sha256, outcome = done.outcome.as_deref().unwrap_or("-"),
                    intake = done.intake_url.as_deref().unwrap_or("-"), "reciprocal walk stored");
                Owned {
                    state: state::WALKED,
                    record_id: Some(done.record_id),
                    record_sha256: Some(done.sha256),
                    intake_url: done.intake_url,
                    detail: done
                        .submission
                        .map(|s| format!("submission {}", s.as_str())),
                    ..Owned::default()
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "reciprocal walk failed in the daemon");
                Owned {
                    state: state::FAILED,
                    detail: Some(e.text),
                    ..Owned::default()
                }
            }
        }
    }
}

/// [`Ended`], owned, while it crosses into the store's thread.
#[derive(Default)]
struct Owned {
    state: &'static str,
    reason: Option<&'static str>,
    detail: Option<String>,
    record_id: Option<i64>,
    record_sha256: Option<String>,
    intake_url: Option<String>,
}
