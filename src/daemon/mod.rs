//! `conduct-walker run`: the daemon. Walks every configured target on its schedule, asks each
//! origin's consent file first, stores (and files) through a [`runner::JobRunner`], and serves
//! health, metrics and the records on a loopback listener.
//!
//! Lifecycle (systemd `Type=notify`): `READY=1` only once the config, the key, the store and the
//! listener are all ready; `WATCHDOG=1` from the scheduling loop itself, so a stuck loop gets the
//! service restarted; `STATUS=` says when the next walk is, what is in flight and the outbox.
//! SIGTERM/SIGINT let walks in flight finish up to `daemon.shutdown_grace_secs`, record the rest as
//! aborted, and exit 0. SIGHUP re-reads the config; an invalid one is refused and the running
//! configuration kept.
//!
//! Shape: the config is loaded as plain data and turned into `ingredients::Ingredients` in one
//! place (again at each reload). Long-lived services (`services`: the listener, the ledger
//! follower, alert delivery; `witness_face`, the pool's face) start from them, take each
//! reload's, and stop in the reverse of their start; periodic jobs (`jobs`: heap trim,
//! `STATUS=`, retention, outbox drain) are one type the loop fires when due. The loop itself
//! drives the scheduled walks and the signals.

pub mod consent;
/// The daemon's tables live with the rest of the store; `daemon::db` is their old name.
pub use crate::store::daemon_walks as db;
pub mod http;
mod ingredients;
mod jobs;
pub mod ledger_faces;
pub mod ledger_task;
pub mod metrics;
mod reciprocal;
pub mod runner;
pub mod scheduler;
mod services;
pub mod store;
mod witness_face;
mod witness_log;

use crate::clock::Clock;
use crate::config::{self, Config, ConfigError};
use ingredients::{Ingredients, ingredients};
use jobs::{JobEnv, Periodic};
use scheduler::Scheduler;
use sd_notify::NotifyState;
use services::{Alerts, Follower, Listener, Service, Walks};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use store::DaemonStore;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::Semaphore;

/// The loop wakes at least this often even with nothing due, so a wall-clock jump is noticed
/// within a minute and the heartbeat stays fresh.
const MAX_SLEEP: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    /// The key, the transport (`config PATH: …`) or the pipeline could not be set up.
    #[error(transparent)]
    Setup(#[from] crate::app::SetupError),
    #[error("cannot install the signal handlers: {0}")]
    Signals(std::io::Error),
    #[error("the witness face cannot start: {0}")]
    WitnessFace(String),
}

fn notify(states: &[NotifyState]) {
    // Outside systemd there is no socket and this is a no-op; a failure to reach systemd must
    // not stop the daemon (the watchdog will say so if it matters).
    if let Err(e) = sd_notify::notify(false, states) {
        tracing::debug!(error = %e, "sd_notify failed");
    }
}

/// Run the daemon until SIGTERM/SIGINT.
pub async fn run(config_path: &Path) -> Result<(), DaemonError> {
    run_with(
        config_path,
        Arc::new(crate::clock::SystemClock),
        std::future::pending(),
    )
    .await
}

/// [`run`] with the clock that schedules walks and decides the pipeline's UTC day injected, and
/// one more way to stop (as SIGTERM does): what lets a test cross a UTC midnight in seconds.
pub async fn run_with(
    config_path: &Path,
    clock: Arc<dyn Clock>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), DaemonError> {
    let config = config::load(config_path)?;
    let db_path = config.database_path()?;
    // The walks' connection, for the process's life; the services that need one of their own
    // open it from this handle.
    let store = DaemonStore::open(&db_path)?;
    close_leftovers(&store, clock.as_ref()).await?;
    let ingredients = ingredients(config, &db_path, clock.clone())?;
    let mut signals = Signals::install()?;
    let mut daemon = Daemon::start(ingredients, store, clock).await?;
    let reason = daemon
        .run_until_stopped(config_path, &mut signals, stop)
        .await;
    daemon.shutdown(reason).await;
    Ok(())
}

/// Walks the previous run left `running` are recorded as aborted; notifications it left in
/// flight are settled as interrupted (never sent again: the receiver may have it).
async fn close_leftovers(store: &DaemonStore, clock: &dyn Clock) -> Result<(), DaemonError> {
    let now = db::timestamp(clock.now());
    let leftovers = store.with(move |c| db::abort_leftovers(c, &now)).await?;
    if leftovers > 0 {
        tracing::warn!(
            walks = leftovers,
            "walks the previous run left unfinished are recorded as aborted"
        );
    }
    let interrupted = store
        .with(crate::store::notifications::settle_interrupted)
        .await?;
    if interrupted > 0 {
        tracing::warn!(
            notifications = interrupted,
            "notifications the previous run left in flight are recorded as interrupted, not sent again"
        );
    }
    Ok(())
}

struct Signals {
    term: Signal,
    int: Signal,
    hup: Signal,
}

impl Signals {
    fn install() -> Result<Signals, DaemonError> {
        let install = |kind| signal(kind).map_err(DaemonError::Signals);
        Ok(Signals {
            term: install(SignalKind::terminate())?,
            int: install(SignalKind::interrupt())?,
            hup: install(SignalKind::hangup())?,
        })
    }
}

/// What wakes the loop.
enum Event {
    Tick,
    WalkEnded,
    Reload,
    Stop(&'static str),
}

/// The running daemon: the current configuration's ingredients, the services and jobs started
/// from them, the walks, and what the loop publishes.
struct Daemon {
    current: Ingredients,
    store: DaemonStore,
    clock: Arc<dyn Clock>,
    live: Arc<http::Live>,
    /// In the order they started; stopped in the reverse.
    services: Vec<Box<dyn Service>>,
    jobs: Vec<Periodic>,
    walks: Walks,
    status: StatusLine,
    watchdog: Option<Duration>,
}

impl Daemon {
    /// Start everything; `READY=1` once the listener is bound and the walks are scheduled.
    async fn start(
        mut current: Ingredients,
        store: DaemonStore,
        clock: Arc<dyn Clock>,
    ) -> Result<Daemon, DaemonError> {
        let live = Arc::new(http::Live::new(current.runner.clone(), store.health()));
        let mut services: Vec<Box<dyn Service>> = Vec::new();
        if let Some(addr) = current.config.listen {
            services.push(Box::new(
                Listener::start(addr, &current, &store, &live).await?,
            ));
        }
        if let Some(follower) = Follower::start(&current, &store, clock.clone()) {
            services.push(Box::new(follower));
        }
        services.push(Box::new(Alerts::start(
            &mut current,
            &store,
            clock.clone(),
            &live,
        )));
        let queued = Arc::new(reciprocal::QueueSignal::default());
        services.push(Box::new(witness_face::Face::start(
            &mut current,
            &store,
            live.witness.clone(),
            clock.clone(),
            queued.clone(),
        )?));
        services.push(Box::new(reciprocal::Walker::start(
            current.runner.clone(),
            current.reciprocal.clone(),
            &store,
            clock.clone(),
            queued,
            live.witness.clone(),
        )));
        let jobs = jobs::all(&current);
        let walks = Walks::start(&current, &store, clock.clone()).await?;
        let mut watchdog_usec = 0u64;
        let watchdog = sd_notify::watchdog_enabled(false, &mut watchdog_usec)
            .then(|| Duration::from_micros(watchdog_usec / 2));
        tracing::info!(
            config = %current.config.path.display(),
            database = %store.path().display(),
            targets = walks.sched.target_count(),
            concurrency = current.config.concurrency,
            watchdog = ?watchdog,
            "conduct-walker daemon ready"
        );
        warn_if_idle(&current.config);
        let status = StatusLine::default();
        notify(&[
            NotifyState::Ready,
            NotifyState::Status(&status.render(&walks.sched)),
        ]);
        Ok(Daemon {
            current,
            store,
            clock,
            live,
            services,
            jobs,
            walks,
            status,
            watchdog,
        })
    }

    /// Fire what is due and react to signals until told to stop; says what stopped it.
    async fn run_until_stopped(
        &mut self,
        config_path: &Path,
        signals: &mut Signals,
        stop: impl std::future::Future<Output = ()>,
    ) -> &'static str {
        tokio::pin!(stop);
        loop {
            let wake = self.turn().await;
            let event = tokio::select! {
                _ = tokio::time::sleep(wake) => Event::Tick,
                _ = self.walks.sched.join_next() => Event::WalkEnded,
                _ = signals.term.recv() => Event::Stop("SIGTERM"),
                _ = signals.int.recv() => Event::Stop("SIGINT"),
                _ = &mut stop => Event::Stop("stop requested"),
                _ = signals.hup.recv() => Event::Reload,
            };
            match event {
                Event::Tick => {}
                Event::WalkEnded => self.refresh_status(),
                Event::Reload => self.reload(config_path).await,
                Event::Stop(reason) => return reason,
            }
        }
    }

    /// One turn of the loop: fire the walks and jobs that are due, publish, feed the watchdog.
    /// Returns how long the loop may sleep.
    async fn turn(&mut self) -> Duration {
        let now = self.clock.now();
        let sched = &mut self.walks.sched;
        sched.fire_due(now);
        let live = &self.live;
        live.last_tick.store(now.timestamp(), Ordering::Relaxed);
        live.targets.store(sched.target_count(), Ordering::Relaxed);
        live.in_flight.store(sched.in_flight(), Ordering::Relaxed);
        let next_fire = sched.next_fire().map(|(t, _)| t.timestamp());
        live.next_fire
            .store(next_fire.unwrap_or(i64::MIN), Ordering::Relaxed);
        if self.watchdog.is_some() {
            notify(&[NotifyState::Watchdog]);
        }
        let tick = tokio::time::Instant::now();
        let env = JobEnv {
            store: self.store.clone(),
            clock: self.clock.clone(),
        };
        for job in &mut self.jobs {
            if let Some(jobs::Output::Status(runner)) = job.reap().await {
                if runner.is_some() {
                    self.status.runner = runner;
                }
                notify(&[NotifyState::Status(&self.status.render(&self.walks.sched))]);
            }
            job.fire_if_due(tick, &self.current, &env);
        }
        let mut wake = MAX_SLEEP;
        if let Some((t, _)) = self.walks.sched.next_fire() {
            wake = wake.min((t - self.clock.now()).to_std().unwrap_or(Duration::ZERO));
        }
        if let Some(w) = self.watchdog {
            wake = wake.min(w);
        }
        self.jobs
            .iter()
            .map(|j| j.wake_in(tick))
            .fold(wake, Duration::min)
    }

    /// `STATUS=` is stale: refresh it at the next turn.
    fn refresh_status(&mut self) {
        self.jobs
            .iter_mut()
            .filter(|j| j.is_status())
            .for_each(Periodic::due_now);
    }

    /// SIGHUP: re-read the config; an invalid one is refused and the running one kept.
    async fn reload(&mut self, config_path: &Path) {
        let monotonic = NotifyState::monotonic_usec_now().ok();
        let mut states = vec![NotifyState::Reloading];
        states.extend(monotonic);
        notify(&states);
        match reload(
            config_path,
            &self.current.config,
            &self.store,
            self.clock.clone(),
        ) {
            Ok(mut next) => {
                tracing::info!(
                    targets = next.config.targets.len(),
                    "configuration reloaded"
                );
                self.walks.reload(&next);
                *self.live.runner.write().unwrap_or_else(|p| p.into_inner()) = next.runner.clone();
                for service in &mut self.services {
                    service.reload(&mut next);
                }
                warn_if_idle(&next.config);
                self.current = next;
            }
            Err(e) => tracing::error!(
                error = %e,
                "config reload refused: keeping the running configuration"
            ),
        }
        notify(&[
            NotifyState::Ready,
            NotifyState::Status(&self.status.render(&self.walks.sched)),
        ]);
        self.refresh_status();
    }

    /// Let walks in flight finish up to `daemon.shutdown_grace_secs` (the rest are recorded as
    /// aborted), stop the jobs and services in the reverse of their start, checkpoint the store.
    async fn shutdown(mut self, reason: &'static str) {
        let grace = self.current.config.shutdown_grace;
        let in_flight = self.walks.sched.in_flight();
        tracing::info!(
            signal = reason,
            in_flight,
            grace_secs = grace.as_secs(),
            "stopping: letting walks in flight finish"
        );
        notify(&[
            NotifyState::Stopping,
            NotifyState::Status(&format!(
                "stopping ({reason}): {in_flight} walk(s) finishing"
            )),
        ]);
        let deadline = tokio::time::Instant::now() + grace;
        let report = self.walks.stop(grace).await;
        while let Some(job) = self.jobs.pop() {
            job.stop(deadline).await;
        }
        while let Some(service) = self.services.pop() {
            service.stop(deadline).await;
        }
        // The store left behind is whole in walker.db: a copy of that one file holds every record.
        if let Err(e) = self.store.with_store(|s| s.checkpoint()).await {
            tracing::warn!(error = %e, "could not checkpoint the store's write-ahead log");
        }
        tracing::info!(
            finished = report.finished,
            aborted = report.aborted,
            "stopped"
        );
    }
}

/// Load the config at `path` again and build it, keeping what is held open for the life of the
/// process (the store and the listener).
fn reload(
    path: &Path,
    running: &Config,
    store: &DaemonStore,
    clock: Arc<dyn Clock>,
) -> Result<Ingredients, DaemonError> {
    let mut new = config::load(path)?;
    if new.database != running.database {
        tracing::warn!(
            running = ?running.database,
            "daemon.database changed: the new path takes effect at the next restart"
        );
    }
    if new.listen != running.listen {
        tracing::warn!(
            running = ?running.listen,
            "daemon.listen changed: the new address takes effect at the next restart"
        );
    }
    new.database = running.database.clone();
    new.listen = running.listen;
    ingredients(new, store.path(), clock)
}

/// The `STATUS=` line: next walk, walks in flight, lanes used and the outbox.
#[derive(Default)]
struct StatusLine {
    runner: Option<runner::RunnerStatus>,
}

impl StatusLine {
    fn render(&self, sched: &Scheduler) -> String {
        let next = match sched.next_fire() {
            Some((t, name)) => format!("next walk {} at {}", name, crate::clock::walked_at(t)),
            None => "no walk scheduled".to_string(),
        };
        let mut s = format!(
            "{next}; {} target(s), {} walking",
            sched.target_count(),
            sched.in_flight()
        );
        if let Some(r) = &self.runner {
            s.push_str(&format!("; outbox {}", r.outbox_depth));
            let lanes: Vec<String> = r
                .lanes_used_today
                .iter()
                .map(|(intake, lane, n)| {
                    let host = url::Url::parse(intake)
                        .ok()
                        .and_then(|u| u.host_str().map(str::to_string))
                        .unwrap_or_else(|| intake.clone());
                    format!("{host} {lane} {n}")
                })
                .collect();
            if !lanes.is_empty() {
                s.push_str(&format!("; lanes used today: {}", lanes.join(", ")));
            }
        }
        s
    }
}

/// Change how many walks `semaphore` admits at once from `from` to `to`. Growing adds permits
/// now; shrinking takes the surplus out as walks running now give theirs back.
fn resize_permits(semaphore: &Arc<Semaphore>, from: usize, to: usize) {
    if to > from {
        semaphore.add_permits(to - from);
    } else if to < from {
        let semaphore = semaphore.clone();
        let surplus = u32::try_from(from - to).unwrap_or(u32::MAX);
        tokio::spawn(async move {
            // Closed at shutdown: nothing left to bound.
            if let Ok(taken) = semaphore.acquire_many_owned(surplus).await {
                taken.forget();
            }
        });
    }
}

/// A config with no `[[target]]` (the packaged example, as installed) is valid: the daemon runs
/// and idles, and says why it walks nothing.
fn warn_if_idle(cfg: &Config) {
    if cfg.targets.is_empty() {
        tracing::warn!(
            config = %cfg.path.display(),
            "no [[target]] configured: walking nothing until targets are added and the config is reloaded"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn resizing_keeps_running_walks_counted() {
        let sem = Arc::new(Semaphore::new(3));
        let held: Vec<_> = (0..3)
            .map(|_| sem.clone().try_acquire_owned().unwrap())
            .collect();
        // Shrink 3 -> 1 while all three walks run: nothing new may start until two finish.
        resize_permits(&sem, 3, 1);
        drop(held);
        tokio::task::yield_now().await;
        for _ in 0..10 {
            if sem.available_permits() == 1 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(sem.available_permits(), 1);
        // Grow 1 -> 4.
        resize_permits(&sem, 1, 4);
        assert_eq!(sem.available_permits(), 4);
    }
}
