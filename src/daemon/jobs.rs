//! The daemon's periodic jobs: one type, [`Periodic`], for every piece of work the loop starts
//! on a period (filing the outbox, archiving old records, trimming the heap, refreshing the
//! `STATUS=` line). A job runs at most once at a time; the loop fires those that are due, wakes
//! for the next one and, at shutdown, stops them in the reverse of the order they were made.

use super::ingredients::Ingredients;
use super::runner::RunnerStatus;
use super::store::DaemonStore;
use crate::clock::Clock;
use crate::store::Store;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How often `STATUS=` is refreshed when nothing else happens.
const STATUS_EVERY: Duration = Duration::from_secs(30);
/// How often the loop hands freed heap back to the system (issue 27, `crate::mem`).
const TRIM_EVERY: Duration = Duration::from_secs(60);
/// When the daemon first archives after it starts.
const RETENTION_FIRST: Duration = Duration::from_secs(10);

/// What a job does.
enum Work {
    /// Give freed heap back to the system: bursts of walks leave it in the arenas.
    Trim,
    /// Ask the runner for the filing side of the `STATUS=` line.
    Status,
    /// Archive old records on a connection of their own (SQLite's locks keep it apart from the
    /// writer; only each segment's short delete transaction waits for, or holds up, commits).
    Retention {
        /// Opened at the first run, kept for the next ones.
        connection: Arc<Mutex<Option<Store>>>,
        stop: Arc<AtomicBool>,
    },
    /// File what the outbox holds.
    Drain,
}

/// What a finished run hands back to the loop.
pub(super) enum Output {
    Nothing,
    Status(Option<RunnerStatus>),
}

pub(super) struct Periodic {
    work: Work,
    next: Instant,
    running: Option<JoinHandle<Output>>,
}

/// What jobs run with, beside the current configuration's ingredients.
pub(super) struct JobEnv {
    pub store: DaemonStore,
    pub clock: Arc<dyn Clock>,
}

/// The daemon's jobs, in the order they start.
pub(super) fn all(ingredients: &Ingredients) -> Vec<Periodic> {
    let now = Instant::now();
    let job = |work, first: Duration| Periodic {
        work,
        next: now + first,
        running: None,
    };
    vec![
        job(Work::Trim, TRIM_EVERY),
        job(Work::Status, Duration::ZERO),
        // The first run 10 s after start, then every `every_hours`.
        job(
            Work::Retention {
                connection: Arc::default(),
                stop: Arc::default(),
            },
            RETENTION_FIRST,
        ),
        job(Work::Drain, ingredients.config.drain_interval),
    ]
}

impl Periodic {
    fn period(&self, ingredients: &Ingredients) -> Duration {
        match self.work {
            Work::Trim => TRIM_EVERY,
            Work::Status => STATUS_EVERY,
            Work::Retention { .. } => ingredients.config.retention.every,
            Work::Drain => ingredients.config.drain_interval,
        }
    }

    /// Whether this is the `STATUS=` refresh.
    pub fn is_status(&self) -> bool {
        matches!(self.work, Work::Status)
    }

    /// Run again as soon as the loop turns (a walk ended, a reload: `STATUS=` is stale).
    pub fn due_now(&mut self) {
        self.next = Instant::now();
    }

    /// The output of a run that has finished since the last look.
    pub async fn reap(&mut self) -> Option<Output> {
        let done = self.running.take_if(|t| t.is_finished())?;
        done.await.ok()
    }

    /// Start a run if one is due at `tick`. A job still running when its time comes skips
    /// that turn, except the status refresh, which runs as soon as the last one has ended.
    pub fn fire_if_due(&mut self, tick: Instant, ingredients: &Ingredients, env: &JobEnv) {
        if self.take_turn(tick, self.period(ingredients)) {
            self.running = self.start(ingredients, env);
        }
    }

    /// Whether a run starts at `tick`; moves the next turn on by `period` when this one counts.
    fn take_turn(&mut self, tick: Instant, period: Duration) -> bool {
        if tick < self.next {
            return false;
        }
        let busy = self.running.as_ref().is_some_and(|t| !t.is_finished());
        if busy && self.is_status() {
            return false;
        }
        self.next = tick + period;
        !busy
    }

    /// How long the loop may sleep before this job wants it.
    pub fn wake_in(&self, tick: Instant) -> Duration {
        // A status refresh in flight is looked for often, so `STATUS=` follows promptly.
        if self.is_status() && self.running.is_some() {
            return Duration::from_millis(50);
        }
        self.next.saturating_duration_since(tick)
    }

    fn start(&self, ingredients: &Ingredients, env: &JobEnv) -> Option<JoinHandle<Output>> {
        match &self.work {
            Work::Trim => Some(tokio::task::spawn_blocking(|| {
                crate::mem::release_free_heap();
                Output::Nothing
            })),
            Work::Status => {
                let runner = ingredients.runner.clone();
                Some(tokio::task::spawn_blocking(move || {
                    Output::Status(runner.status().ok())
                }))
            }
            Work::Retention { connection, stop } => {
                if ingredients.config.retention.policy.is_off() {
                    return None;
                }
                Some(archive(ingredients, env, connection.clone(), stop.clone()))
            }
            Work::Drain => Some(drain(ingredients)),
        }
    }

    /// Stop: the outbox drain may finish until `deadline`; an archiving run stops between two
    /// segments (a segment in the middle of its delete finishes); the others are left.
    pub async fn stop(self, deadline: Instant) {
        let Some(mut task) = self.running else {
            return;
        };
        match self.work {
            Work::Drain => {
                tokio::select! {
                    _ = &mut task => {}
                    _ = tokio::time::sleep_until(deadline) => task.abort(),
                }
            }
            Work::Retention { stop, .. } => {
                stop.store(true, Ordering::Relaxed);
                let _ = task.await;
            }
            Work::Trim | Work::Status => {}
        }
    }
}

fn drain(ingredients: &Ingredients) -> JoinHandle<Output> {
    let runner = ingredients.runner.clone();
    tokio::spawn(async move {
        match runner.drain().await {
            Ok(d) if d.attempted > 0 || d.looked_up > 0 => tracing::info!(
                attempted = d.attempted,
                looked_up = d.looked_up,
                filed = d.filed,
                deferred = d.deferred,
                refused = d.refused,
                "outbox drained"
            ),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "outbox drain failed"),
        }
        Output::Nothing
    })
}

fn archive(
    ingredients: &Ingredients,
    env: &JobEnv,
    connection: Arc<Mutex<Option<Store>>>,
    stop: Arc<AtomicBool>,
) -> JoinHandle<Output> {
    let policy = ingredients.config.retention.policy;
    let dir = ingredients.archive_dir.clone();
    let now = env.clock.now();
    let store = env.store.clone();
    tokio::task::spawn_blocking(move || {
        let mut connection = connection.lock().unwrap_or_else(|p| p.into_inner());
        let mut run = || -> Result<_, crate::store::StoreError> {
            let store = match connection.as_mut() {
                Some(s) => s,
                None => connection.insert(store.open_another()?),
            };
            let r = store.archive_until(&dir, policy, now, false, &|| stop.load(Ordering::Relaxed));
            // Between runs (hours apart) the connection keeps no page cache.
            let _ = store.connection().execute_batch("PRAGMA shrink_memory");
            r
        };
        match run() {
            Ok(r) if !r.segments.is_empty() || r.held > 0 => tracing::info!(
                archived = r.archived(),
                segments = r.segments.len(),
                held = r.held,
                dir = %dir.display(),
                "old records archived"
            ),
            Ok(_) => {}
            Err(e) => {
                tracing::error!(error = %e, "archiving old records failed; the records stay in the store")
            }
        }
        Output::Nothing
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(work: Work, next: Instant, running: Option<JoinHandle<Output>>) -> Periodic {
        Periodic {
            work,
            next,
            running,
        }
    }

    fn busy() -> JoinHandle<Output> {
        tokio::spawn(std::future::pending())
    }

    #[tokio::test]
    async fn a_due_job_runs_and_its_next_turn_is_one_period_on() {
        let t = Instant::now();
        let mut drain = job(Work::Drain, t, None);
        assert!(drain.take_turn(t, Duration::from_secs(5)));
        assert_eq!(drain.next, t + Duration::from_secs(5));
        assert!(!drain.take_turn(t + Duration::from_secs(4), Duration::from_secs(5)));
        assert_eq!(
            drain.wake_in(t + Duration::from_secs(4)),
            Duration::from_secs(1)
        );
    }

    #[tokio::test]
    async fn a_job_still_running_skips_its_turn_but_status_waits_for_it() {
        let t = Instant::now();
        let mut drain = job(Work::Drain, t, Some(busy()));
        assert!(!drain.take_turn(t, Duration::from_secs(5)));
        // The skipped turn counts: the next is a period on, not at the next look.
        assert_eq!(drain.next, t + Duration::from_secs(5));

        let mut status = job(Work::Status, t, Some(busy()));
        assert!(!status.take_turn(t, STATUS_EVERY));
        assert_eq!(
            status.next, t,
            "still due: it runs once the last refresh has ended"
        );
        assert_eq!(status.wake_in(t), Duration::from_millis(50));
        status.running.take().unwrap().abort();
        assert!(status.take_turn(t, STATUS_EVERY));
    }

    #[tokio::test]
    async fn a_finished_status_run_hands_its_answer_back_once() {
        let mut status = job(
            Work::Status,
            Instant::now(),
            Some(tokio::spawn(async {
                Output::Status(Some(RunnerStatus::default()))
            })),
        );
        while !status.running.as_ref().unwrap().is_finished() {
            tokio::task::yield_now().await;
        }
        assert!(matches!(status.reap().await, Some(Output::Status(Some(_)))));
        assert!(status.reap().await.is_none());
    }

    #[tokio::test]
    async fn stopping_the_drain_cuts_it_off_at_the_deadline() {
        let drain = job(Work::Drain, Instant::now(), Some(busy()));
        let deadline = Instant::now() + Duration::from_millis(20);
        tokio::time::timeout(Duration::from_secs(5), drain.stop(deadline))
            .await
            .expect("stop returns at the deadline");
    }
}
