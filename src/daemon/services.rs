//! The daemon's long-lived services. Each starts itself from the [`Ingredients`] of the first
//! configuration, takes the ingredients of every reloaded one, and stops when the daemon does:
//! in the reverse of the order they started in.
//!
//! The scheduled walks ([`Walks`]) have the same shape but are driven by the daemon's loop
//! itself (it fires what is due and waits for walks to end), so the loop holds them by name.

use super::consent::ConsentGate;
use super::http;
use super::ingredients::Ingredients;
use super::ledger_task::{self, FollowerSettings};
use super::scheduler::{FireContext, Scheduler, ShutdownReport};
use super::store::DaemonStore;
use super::{DaemonError, resize_permits};
use crate::clock::Clock;
use crate::store::Store;
use futures_util::future::BoxFuture;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;

pub(super) trait Service: Send {
    /// Take a new configuration; what is in flight finishes with the old one.
    fn reload(&mut self, ingredients: &mut Ingredients);
    /// Stop, waiting for what is in flight at most until `deadline` (where that is safe).
    fn stop(self: Box<Self>, deadline: Instant) -> BoxFuture<'static, ()>;
}

/// The loopback listener: `/healthz`, `/metrics`, `/records` and the status pages.
pub(super) struct Listener {
    pages: Arc<RwLock<crate::pages::Context>>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    /// The pages' verification timer: ends with the listener.
    verifier: tokio::task::JoinHandle<()>,
}

impl Listener {
    /// Bind `addr` (refusing to start the daemon if it cannot) and serve.
    pub async fn start(
        addr: std::net::SocketAddr,
        ingredients: &Ingredients,
        store: &DaemonStore,
        live: &Arc<http::Live>,
    ) -> Result<Listener, DaemonError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| DaemonError::Listen { addr, source })?;
        let bound = listener.local_addr().unwrap_or(addr);
        tracing::info!(listen = %bound, "serving /healthz, /metrics, /records and the status pages");
        let pages = Arc::new(RwLock::new(ingredients.pages.clone()));
        let (ctx_now, live_now) = (pages.clone(), live.clone());
        let db_path = store.path().to_path_buf();
        let pages_state = crate::pages::PagesState::new(
            db_path.clone(),
            Arc::new(move || {
                let mut c = ctx_now.read().unwrap_or_else(|p| p.into_inner()).clone();
                c.limits = live_now.runner().stated_limits();
                c
            }),
            "the daemon (conduct-walker run)",
        );
        let (stop, mut stopped) = watch::channel(false);
        let verifier = verify_on_a_timer(&pages_state, stop.subscribe(), VERIFY_EVERY);
        let app = http::router(http::AppState {
            db_path,
            live: live.clone(),
        })
        .merge(crate::pages::router(pages_state));
        let task = tokio::spawn(async move {
            let r = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.wait_for(|s| *s).await;
                })
                .await;
            if let Err(e) = r {
                tracing::error!(error = %e, "the listener failed");
            }
        });
        Ok(Listener {
            pages,
            stop,
            task,
            verifier,
        })
    }
}

/// The pages' verification job on a timer, so the overview's verified count stays current
/// without a visit: each tick runs what [`crate::pages::verify_tick`] finds due (the rows added
/// since its last run, at most once a minute; every row once a day), on a low-priority thread.
fn verify_on_a_timer(
    pages: &crate::pages::PagesState,
    mut stopped: watch::Receiver<bool>,
    period: Duration,
) -> tokio::task::JoinHandle<()> {
    let (verify, db) = (pages.verify.clone(), pages.db_path.clone());
    tokio::spawn(async move {
        let mut every = tokio::time::interval(period);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = every.tick() => crate::pages::verify_tick(&verify, db.clone()),
                _ = stopped.wait_for(|s| *s) => return,
            }
        }
    })
}

/// How often the listener looks whether the pages' verification is due.
const VERIFY_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

impl Service for Listener {
    fn reload(&mut self, ingredients: &mut Ingredients) {
        *self.pages.write().unwrap_or_else(|p| p.into_inner()) = ingredients.pages.clone();
    }

    fn stop(self: Box<Self>, _deadline: Instant) -> BoxFuture<'static, ()> {
        let _ = self.stop.send(true);
        Box::pin(async move {
            let _ = self.task.await;
            let _ = self.verifier.await;
        })
    }
}

/// The ledger follower: a thread of its own, reading its settings on every pass.
pub(super) struct Follower {
    settings: Arc<RwLock<FollowerSettings>>,
    stop: watch::Sender<bool>,
    thread: std::thread::JoinHandle<()>,
}

impl Follower {
    /// Start it when `[ledger] follow` is on; a follower that cannot start is logged and the
    /// daemon runs without it.
    pub fn start(
        ingredients: &Ingredients,
        store: &DaemonStore,
        clock: Arc<dyn Clock>,
    ) -> Option<Follower> {
        if !ingredients.config.ledger.follow {
            return None;
        }
        let connection = match store.open_another() {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "the ledger follower cannot open the store");
                return None;
            }
        };
        let settings = Arc::new(RwLock::new(ingredients.follower.clone()));
        let (stop, stopped) = watch::channel(false);
        match ledger_task::spawn(connection, settings.clone(), clock, stopped) {
            Ok(thread) => Some(Follower {
                settings,
                stop,
                thread,
            }),
            Err(e) => {
                tracing::error!(error = %e, "the ledger follower could not start");
                None
            }
        }
    }
}

impl Service for Follower {
    fn reload(&mut self, ingredients: &mut Ingredients) {
        *self.settings.write().unwrap_or_else(|p| p.into_inner()) = ingredients.follower.clone();
    }

    fn stop(self: Box<Self>, deadline: Instant) -> BoxFuture<'static, ()> {
        let _ = self.stop.send(true);
        Box::pin(async move {
            // A pass in flight ends within its reads' deadlines; past the grace it is left
            // behind (every store write of a pass is its own transaction).
            let thread = self.thread;
            let joined = tokio::task::spawn_blocking(move || thread.join());
            let until = deadline.max(Instant::now() + Duration::from_secs(5));
            if tokio::time::timeout_at(until, joined).await.is_err() {
                tracing::warn!("the ledger follower was still reading at shutdown");
            }
        })
    }
}

/// How often the alert outbox is looked at.
const ALERT_TICK: Duration = Duration::from_millis(500);

/// Alert delivery: a task restarted with each configuration (its own transport and slots);
/// rows being sent are remembered across the restart.
pub(super) struct Alerts {
    store: DaemonStore,
    /// Its connection, opened when alerts are first delivered and kept across restarts.
    connection: Option<Arc<Mutex<Store>>>,
    clock: Arc<dyn Clock>,
    live: Arc<http::Live>,
    in_flight: Arc<Mutex<HashSet<String>>>,
    slots: Arc<Semaphore>,
    running: Option<watch::Sender<bool>>,
}

impl Alerts {
    pub fn start(
        ingredients: &mut Ingredients,
        store: &DaemonStore,
        clock: Arc<dyn Clock>,
        live: &Arc<http::Live>,
    ) -> Alerts {
        let mut alerts = Alerts {
            store: store.clone(),
            connection: None,
            clock,
            live: live.clone(),
            in_flight: Arc::default(),
            slots: Arc::new(Semaphore::new(crate::alerts::deliver::CONCURRENCY)),
            running: None,
        };
        alerts.running = alerts.deliver(ingredients);
        alerts
    }

    /// This connection only marks deliveries: with the WAL, NORMAL keeps every commit across a
    /// process kill and can lose the last ones only at power loss, where the alert is resent
    /// with its id (which receivers dedupe). No fsync per delivery competes with the records'
    /// commits; the alert rows themselves are written with the records, on the FULL connection.
    fn connection(&mut self) -> Option<Arc<Mutex<Store>>> {
        if self.connection.is_none() {
            let store = match self.store.open_another() {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(error = %e, "alerts: cannot open the store for delivery");
                    return None;
                }
            };
            if let Err(e) = store
                .connection()
                .execute_batch("PRAGMA synchronous = NORMAL")
            {
                tracing::warn!(error = %e, "alerts: cannot relax the delivery connection's syncs");
            }
            self.connection = Some(Arc::new(Mutex::new(store)));
        }
        self.connection.clone()
    }

    /// Start delivering with the channels of `ingredients` (none when it has no delivery).
    fn deliver(&mut self, ingredients: &mut Ingredients) -> Option<watch::Sender<bool>> {
        let crate::alerts::deliver::Delivery { senders, transport } =
            ingredients.alert_delivery.take()?;
        let store = self.connection()?;
        let cfg = &ingredients.config;
        let deliverer = Arc::new(crate::alerts::deliver::Deliverer {
            cfg: cfg.alerts.clone(),
            senders: senders
                .into_iter()
                .map(|s| (s.channel.name.clone(), s))
                .collect(),
            transport,
            store,
            clock: self.clock.clone(),
            metrics: self.live.alerts.clone(),
            in_flight: self.in_flight.clone(),
            slots: self.slots.clone(),
            store_health: Some(self.live.store_health.clone()),
        });
        let (tx, rx) = watch::channel(false);
        tracing::info!(channels = cfg.alerts.channels.len(), "alerts: delivering");
        tokio::spawn(deliverer.run(rx, ALERT_TICK));
        Some(tx)
    }
}

impl Service for Alerts {
    fn reload(&mut self, ingredients: &mut Ingredients) {
        if let Some(stop) = self.running.take() {
            let _ = stop.send(true);
        }
        self.running = self.deliver(ingredients);
    }

    fn stop(mut self: Box<Self>, _deadline: Instant) -> BoxFuture<'static, ()> {
        if let Some(stop) = self.running.take() {
            let _ = stop.send(true);
        }
        Box::pin(async {})
    }
}

/// The scheduled walks: the scheduler, the one semaphore that bounds them and the consent gate.
pub(super) struct Walks {
    pub sched: Scheduler,
    /// One for the daemon's life: walks started before a reload still hold their permits after
    /// it, so `concurrency` bounds old and new walks together.
    semaphore: Arc<Semaphore>,
    concurrency: usize,
    consent: Arc<ConsentGate>,
    store: DaemonStore,
    clock: Arc<dyn Clock>,
}

impl Walks {
    pub async fn start(
        ingredients: &Ingredients,
        store: &DaemonStore,
        clock: Arc<dyn Clock>,
    ) -> Result<Walks, DaemonError> {
        let consent = Arc::new(
            ConsentGate::new(ingredients.transport.clone(), store.clone(), clock.clone()).await?,
        );
        let concurrency = ingredients.config.concurrency;
        let semaphore = Arc::new(Semaphore::new(concurrency));
        let ctx = FireContext {
            runner: ingredients.runner.clone(),
            consent: consent.clone(),
            store: store.clone(),
            semaphore: semaphore.clone(),
            clock: clock.clone(),
            notifier: ingredients.notifier.clone(),
        };
        let sched = Scheduler::new(ingredients.config.targets.clone(), ctx, clock.now());
        Ok(Walks {
            sched,
            semaphore,
            concurrency,
            consent,
            store: store.clone(),
            clock,
        })
    }

    /// The new targets, runner, transport and concurrency; walks in flight keep theirs.
    pub fn reload(&mut self, ingredients: &Ingredients) {
        let concurrency = ingredients.config.concurrency;
        resize_permits(&self.semaphore, self.concurrency, concurrency);
        self.concurrency = concurrency;
        self.consent = Arc::new(self.consent.with_transport(ingredients.transport.clone()));
        let ctx = FireContext {
            runner: ingredients.runner.clone(),
            consent: self.consent.clone(),
            store: self.store.clone(),
            semaphore: self.semaphore.clone(),
            clock: self.clock.clone(),
            notifier: ingredients.notifier.clone(),
        };
        self.sched
            .replace(ingredients.config.targets.clone(), ctx, self.clock.now());
    }

    /// Let walks in flight finish up to `grace`; the rest are recorded as aborted.
    pub async fn stop(&mut self, grace: Duration) -> ShutdownReport {
        self.sched.shutdown(grace).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timer's first tick comes at once: the store is verified although no page was asked
    /// for (each overview visit ticks too, which is what once hid a timer that never ran), and
    /// the task ends when the listener stops.
    #[tokio::test]
    async fn the_verify_timer_verifies_without_a_visit_and_ends_when_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("walker.db");
        drop(crate::store::Store::open(&db).unwrap());
        let pages =
            crate::pages::PagesState::new(db, Arc::new(crate::pages::Context::default), "a test");
        let (stop, stopped) = watch::channel(false);
        let timer = verify_on_a_timer(&pages, stopped, Duration::from_secs(3600));
        let deadline = Instant::now() + Duration::from_secs(30);
        let summary = loop {
            if let Some(s) = pages.verify.last() {
                break s;
            }
            assert!(Instant::now() < deadline, "no verification ran within 30 s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(
            (summary.rows, summary.problems.len()),
            (0, 0),
            "{summary:?}"
        );
        assert!(
            !timer.is_finished(),
            "the timer runs until the listener stops"
        );
        stop.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), timer)
            .await
            .expect("the timer ends when told")
            .unwrap();
    }
}
