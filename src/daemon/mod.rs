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

pub mod consent;
/// The daemon's tables live with the rest of the store; `daemon::db` is their old name.
pub use crate::store::daemon_walks as db;
pub mod http;
pub mod ledger_faces;
pub mod ledger_task;
pub mod metrics;
pub mod runner;
pub mod scheduler;
pub mod store;

use crate::config::{self, Config, ConfigError, ConfigTransportError};
use consent::ConsentGate;
use runner::JobRunner;
use scheduler::{FireContext, Scheduler};
use sd_notify::NotifyState;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use store::DaemonStore;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::Semaphore;

/// The loop wakes at least this often even with nothing due, so a wall-clock jump is noticed
/// within a minute and the heartbeat stays fresh.
const MAX_SLEEP: Duration = Duration::from_secs(60);
/// How often `STATUS=` is refreshed when nothing else happens.
const STATUS_EVERY: Duration = Duration::from_secs(30);
/// How often the loop hands freed heap back to the system (issue 27, `crate::mem`).
const TRIM_EVERY: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("config {path}: {source}")]
    Transport {
        path: PathBuf,
        source: ConfigTransportError,
    },
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Setup(#[from] crate::app::SetupError),
    #[error("cannot install the signal handlers: {0}")]
    Signals(std::io::Error),
}

/// What the status pages show of a configuration: the witness (with its public key, when the
/// key can be read) and the targets' schedules.
fn page_context(cfg: &Config) -> crate::pages::Context {
    use base64::Engine as _;
    let public = crate::app::signing_key(cfg)
        .ok()
        .flatten()
        .map(|k| base64::engine::general_purpose::STANDARD.encode(k.verifying_key().to_bytes()));
    crate::pages::Context::from_config(cfg, public)
}

/// Everything a configuration turns into, built before it replaces the running one.
struct Built {
    config: Config,
    runner: Arc<dyn JobRunner>,
    consent: Arc<ConsentGate>,
}

async fn build(
    cfg: Config,
    store: &DaemonStore,
    previous: Option<&ConsentGate>,
    clock: Arc<dyn crate::clock::Clock>,
) -> Result<Built, DaemonError> {
    let transport = crate::app::transport(&cfg).map_err(|source| DaemonError::Transport {
        path: cfg.path.clone(),
        source,
    })?;
    // The config's own pipeline: it opens its own connection to the same store (WAL).
    let runner: Arc<dyn JobRunner> = Arc::new(crate::app::pipeline(
        &cfg,
        transport.clone(),
        store.path().to_path_buf(),
        clock.clone(),
    )?);
    let consent = match previous {
        Some(gate) => Arc::new(gate.with_transport(transport)),
        None => Arc::new(ConsentGate::new(transport, store.clone(), clock).await?),
    };
    Ok(Built {
        config: cfg,
        runner,
        consent,
    })
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
    clock: Arc<dyn crate::clock::Clock>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), DaemonError> {
    tokio::pin!(stop);
    let cfg = config::load(config_path)?;
    let db_path = cfg.database_path()?;
    let store = DaemonStore::open(&db_path)?;
    let now = db::timestamp(clock.now());
    let leftovers = store.with(move |c| db::abort_leftovers(c, &now)).await?;
    if leftovers > 0 {
        tracing::warn!(
            walks = leftovers,
            "walks the previous run left unfinished are recorded as aborted"
        );
    }
    let built = build(cfg, &store, None, clock.clone()).await?;
    let mut cfg = built.config;
    let mut consent = built.consent;
    let live = Arc::new(http::Live::new(built.runner.clone(), store.health()));
    let page_ctx = Arc::new(std::sync::RwLock::new(page_context(&cfg)));
    let mut sigterm = signal(SignalKind::terminate()).map_err(DaemonError::Signals)?;
    let mut sigint = signal(SignalKind::interrupt()).map_err(DaemonError::Signals)?;
    let mut sighup = signal(SignalKind::hangup()).map_err(DaemonError::Signals)?;

    let (stop_http, http_stopped) = tokio::sync::watch::channel(false);
    let http_task = match cfg.listen {
        None => None,
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|source| DaemonError::Listen { addr, source })?;
            let bound = listener.local_addr().unwrap_or(addr);
            tracing::info!(listen = %bound, "serving /healthz, /metrics, /records and the status pages");
            let (ctx_now, live_now) = (page_ctx.clone(), live.clone());
            let pages = crate::pages::PagesState::new(
                db_path.clone(),
                Arc::new(move || {
                    let mut c = ctx_now.read().unwrap_or_else(|p| p.into_inner()).clone();
                    c.limits = live_now.runner().stated_limits();
                    c
                }),
                "the daemon (conduct-walker run)",
            );
            let app = http::router(http::AppState {
                db_path: db_path.clone(),
                live: live.clone(),
            })
            .merge(crate::pages::router(pages));
            let mut stopped = http_stopped.clone();
            Some(tokio::spawn(async move {
                let r = axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = stopped.wait_for(|s| *s).await;
                    })
                    .await;
                if let Err(e) = r {
                    tracing::error!(error = %e, "the listener failed");
                }
            }))
        }
    };

    // The ledger follower: a thread of its own, reading its settings on every pass.
    let follower_settings = Arc::new(std::sync::RwLock::new(follower_settings(&cfg)));
    let follower = if cfg.ledger.follow {
        match ledger_task::spawn(
            db_path.clone(),
            follower_settings.clone(),
            clock.clone(),
            http_stopped.clone(),
        ) {
            Ok(h) => Some(h),
            Err(e) => {
                tracing::error!(error = %e, "the ledger follower could not start");
                None
            }
        }
    } else {
        None
    };

    // One semaphore for the daemon's life: walks started before a reload still hold their
    // permits after it, so `concurrency` bounds old and new walks together.
    let semaphore = Arc::new(Semaphore::new(cfg.concurrency));
    let ctx = |runner: Arc<dyn JobRunner>, consent: Arc<ConsentGate>| FireContext {
        runner,
        consent,
        store: store.clone(),
        semaphore: semaphore.clone(),
        clock: clock.clone(),
    };
    let mut fire_ctx = ctx(built.runner, consent.clone());
    let mut sched = Scheduler::new(cfg.targets.clone(), fire_ctx.clone(), clock.now());

    let mut watchdog_usec = 0u64;
    let watchdog = sd_notify::watchdog_enabled(false, &mut watchdog_usec)
        .then(|| Duration::from_micros(watchdog_usec / 2));
    tracing::info!(
        config = %cfg.path.display(),
        database = %db_path.display(),
        targets = sched.target_count(),
        concurrency = cfg.concurrency,
        watchdog = ?watchdog,
        "conduct-walker daemon ready"
    );
    warn_if_idle(&cfg);
    let mut status = StatusLine::default();
    notify(&[
        NotifyState::Ready,
        NotifyState::Status(&status.render(&sched)),
    ]);

    // Alert delivery: its own task (own store connection, transport and slots), restarted with
    // each configuration; rows being sent are remembered across the restart.
    let alert_in_flight = Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
    let alert_slots = Arc::new(Semaphore::new(crate::alerts::deliver::CONCURRENCY));
    let start_alerts = |cfg: &Config| -> Option<tokio::sync::watch::Sender<bool>> {
        start_deliverer(
            cfg,
            &db_path,
            clock.clone(),
            &live,
            &alert_in_flight,
            &alert_slots,
        )
    };
    let mut alerts_stop = start_alerts(&cfg);
    let mut next_drain = tokio::time::Instant::now() + cfg.drain_interval;
    let mut next_trim = tokio::time::Instant::now() + TRIM_EVERY;
    let mut drain_task: Option<tokio::task::JoinHandle<()>> = None;
    let mut next_status = tokio::time::Instant::now();
    // Retention (issue 27): the first run 10 s after start, then every `every_hours`.
    let mut next_retention = tokio::time::Instant::now() + RETENTION_FIRST;
    let mut retention_task: Option<tokio::task::JoinHandle<()>> = None;
    let stop_retention = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut status_task: Option<tokio::task::JoinHandle<Option<runner::RunnerStatus>>> = None;
    let reason = loop {
        let now = clock.now();
        sched.fire_due(now);
        live.last_tick.store(now.timestamp(), Ordering::Relaxed);
        live.targets.store(sched.target_count(), Ordering::Relaxed);
        live.in_flight.store(sched.in_flight(), Ordering::Relaxed);
        live.next_fire.store(
            sched
                .next_fire()
                .map(|(t, _)| t.timestamp())
                .unwrap_or(i64::MIN),
            Ordering::Relaxed,
        );
        if watchdog.is_some() {
            notify(&[NotifyState::Watchdog]);
        }
        let tick = tokio::time::Instant::now();
        if tick >= next_drain {
            next_drain = tick + cfg.drain_interval;
            if drain_task.as_ref().is_none_or(|t| t.is_finished()) {
                let runner = fire_ctx.runner.clone();
                drain_task = Some(tokio::spawn(async move {
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
                }));
            }
        }
        if tick >= next_retention {
            next_retention = tick + cfg.retention.every;
            if !cfg.retention.policy.is_off()
                && retention_task.as_ref().is_none_or(|t| t.is_finished())
            {
                retention_task = Some(spawn_retention(
                    &cfg,
                    &db_path,
                    clock.now(),
                    stop_retention.clone(),
                ));
            }
        }
        if tick >= next_trim {
            // Bursts of walks leave freed memory in the arenas (`crate::mem`).
            next_trim = tick + TRIM_EVERY;
            tokio::task::spawn_blocking(crate::mem::release_free_heap);
        }
        if let Some(t) = status_task.take_if(|t| t.is_finished()) {
            if let Ok(Some(r)) = t.await {
                status.runner = Some(r);
            }
            notify(&[NotifyState::Status(&status.render(&sched))]);
        }
        if tick >= next_status && status_task.is_none() {
            next_status = tick + STATUS_EVERY;
            let runner = fire_ctx.runner.clone();
            status_task = Some(tokio::task::spawn_blocking(move || runner.status().ok()));
        }
        let mut wake = MAX_SLEEP;
        if let Some((t, _)) = sched.next_fire() {
            wake = wake.min((t - clock.now()).to_std().unwrap_or(Duration::ZERO));
        }
        if let Some(w) = watchdog {
            wake = wake.min(w);
        }
        wake = wake.min(next_drain.saturating_duration_since(tick));
        wake = wake.min(next_status.saturating_duration_since(tick));
        wake = wake.min(next_retention.saturating_duration_since(tick));
        if status_task.is_some() {
            wake = wake.min(Duration::from_millis(50));
        }
        tokio::select! {
            _ = tokio::time::sleep(wake) => {}
            _ = sched.join_next() => { next_status = tokio::time::Instant::now(); }
            _ = sigterm.recv() => break "SIGTERM",
            _ = sigint.recv() => break "SIGINT",
            _ = &mut stop => break "stop requested",
            _ = sighup.recv() => {
                let monotonic = NotifyState::monotonic_usec_now().ok();
                let mut states = vec![NotifyState::Reloading];
                states.extend(monotonic);
                notify(&states);
                match reload(config_path, &cfg, &store, &consent, clock.clone()).await {
                    Ok(b) => {
                        tracing::info!(targets = b.config.targets.len(), "configuration reloaded");
                        resize_permits(&semaphore, cfg.concurrency, b.config.concurrency);
                        cfg = b.config;
                        *page_ctx.write().unwrap_or_else(|p| p.into_inner()) = page_context(&cfg);
                        consent = b.consent;
                        *live.runner.write().unwrap_or_else(|p| p.into_inner()) = b.runner.clone();
                        fire_ctx = ctx(b.runner, consent.clone());
                        *follower_settings.write().unwrap_or_else(|p| p.into_inner()) =
                            follower_settings_of(&cfg, &follower_settings);
                        sched.replace(cfg.targets.clone(), fire_ctx.clone(), clock.now());
                        if let Some(stop) = alerts_stop.take() {
                            let _ = stop.send(true);
                        }
                        alerts_stop = start_alerts(&cfg);
                        warn_if_idle(&cfg);
                    }
                    Err(e) => tracing::error!(
                        error = %e,
                        "config reload refused: keeping the running configuration"
                    ),
                }
                notify(&[NotifyState::Ready, NotifyState::Status(&status.render(&sched))]);
                next_status = tokio::time::Instant::now();
            }
        }
    };

    tracing::info!(
        signal = reason,
        in_flight = sched.in_flight(),
        grace_secs = cfg.shutdown_grace.as_secs(),
        "stopping: letting walks in flight finish"
    );
    notify(&[
        NotifyState::Stopping,
        NotifyState::Status(&format!(
            "stopping ({reason}): {} walk(s) finishing",
            sched.in_flight()
        )),
    ]);
    let deadline = tokio::time::Instant::now() + cfg.shutdown_grace;
    let report = sched.shutdown(cfg.shutdown_grace).await;
    if let Some(mut t) = drain_task {
        tokio::select! {
            _ = &mut t => {}
            _ = tokio::time::sleep_until(deadline) => t.abort(),
        }
    }
    stop_retention.store(true, Ordering::Relaxed);
    if let Some(t) = retention_task {
        // It stops between two segments; a segment in the middle of its delete finishes.
        let _ = t.await;
    }
    if let Some(stop) = alerts_stop.take() {
        let _ = stop.send(true);
    }
    let _ = stop_http.send(true);
    if let Some(t) = http_task {
        let _ = t.await;
    }
    if let Some(f) = follower {
        // A pass in flight ends within its reads' deadlines; past the grace it is left behind
        // (every store write of a pass is its own transaction).
        let joined = tokio::task::spawn_blocking(move || f.join());
        if tokio::time::timeout_at(
            deadline.max(tokio::time::Instant::now() + Duration::from_secs(5)),
            joined,
        )
        .await
        .is_err()
        {
            tracing::warn!("the ledger follower was still reading at shutdown");
        }
    }
    // The store left behind is whole in walker.db: a copy of that one file holds every record.
    if let Err(e) = store.with_store(|s| s.checkpoint()).await {
        tracing::warn!(error = %e, "could not checkpoint the store's write-ahead log");
    }
    tracing::info!(
        finished = report.finished,
        aborted = report.aborted,
        "stopped"
    );
    Ok(())
}

/// What the ledger follower reads: `[ledger]`, a transport from `[network]` (intakes are
/// reached like any fetch), the endpoints of `pull_ledger` targets.
fn follower_settings(cfg: &Config) -> ledger_task::FollowerSettings {
    let transport = crate::app::transport(cfg).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "ledger follower: network settings refused, using the defaults");
        crate::net::NetworkOptions::default()
            .transport(&[])
            .expect("the default transport builds")
    });
    ledger_task::FollowerSettings {
        ledger: cfg.ledger.clone(),
        transport,
        pull_endpoints: pull_endpoints(cfg),
    }
}

/// After a reload: the new settings, keeping the running transport if the new one is refused.
fn follower_settings_of(
    cfg: &Config,
    running: &std::sync::RwLock<ledger_task::FollowerSettings>,
) -> ledger_task::FollowerSettings {
    let transport = match crate::app::transport(cfg) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(error = %e, "ledger follower: keeping the running network settings");
            running
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .transport
                .clone()
        }
    };
    ledger_task::FollowerSettings {
        ledger: cfg.ledger.clone(),
        transport,
        pull_endpoints: pull_endpoints(cfg),
    }
}

fn pull_endpoints(cfg: &Config) -> Vec<String> {
    cfg.targets
        .iter()
        .filter(|t| t.pull_ledger)
        .filter_map(|t| t.request.endpoint.clone())
        .collect()
}

/// When the daemon first archives after it starts.
const RETENTION_FIRST: Duration = Duration::from_secs(10);

/// One archiving run on its own connection (SQLite's locks keep it apart from the writer; only
/// each segment's short delete transaction waits for, or holds up, record commits).
fn spawn_retention(
    cfg: &Config,
    db_path: &Path,
    now: chrono::DateTime<chrono::Utc>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    let policy = cfg.retention.policy;
    let dir = cfg.retention.dir(db_path);
    let db_path = db_path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let run = || -> Result<_, crate::store::StoreError> {
            let store = crate::store::Store::open(&db_path)?;
            store.archive_until(&dir, policy, now, false, &|| stop.load(Ordering::Relaxed))
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
    })
}

/// Start the alert deliverer of `cfg` (none when `[alerts]` has no channel). A channel whose
/// secret cannot be read is logged and left out: its rows wait for a config that can send them.
fn start_deliverer(
    cfg: &Config,
    db_path: &Path,
    clock: Arc<dyn crate::clock::Clock>,
    live: &Arc<http::Live>,
    in_flight: &Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    slots: &Arc<Semaphore>,
) -> Option<tokio::sync::watch::Sender<bool>> {
    if !cfg.alerts.enabled() {
        return None;
    }
    let crate::alerts::deliver::Delivery { senders, transport } = match crate::app::alert_delivery(
        cfg,
    ) {
        Ok(d) => d,
        Err(e) => {
            tracing::error!(error = %e, "alerts: cannot be set up; no alert is delivered until the config is fixed");
            return None;
        }
    };
    let store = match crate::store::Store::open(db_path) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "alerts: cannot open the store for delivery");
            return None;
        }
    };
    // This connection only marks deliveries: with the WAL, NORMAL keeps every commit across a
    // process kill and can lose the last ones only at power loss, where the alert is resent with
    // its id (which receivers dedupe). No fsync per delivery competes with the records' commits;
    // the alert rows themselves are written with the records, on the FULL connection.
    if let Err(e) = store
        .connection()
        .execute_batch("PRAGMA synchronous = NORMAL")
    {
        tracing::warn!(error = %e, "alerts: cannot relax the delivery connection's syncs");
    }
    let deliverer = Arc::new(crate::alerts::deliver::Deliverer {
        cfg: cfg.alerts.clone(),
        senders: senders
            .into_iter()
            .map(|s| (s.channel.name.clone(), s))
            .collect(),
        transport,
        store: Arc::new(std::sync::Mutex::new(store)),
        clock,
        metrics: live.alerts.clone(),
        in_flight: in_flight.clone(),
        slots: slots.clone(),
        store_health: Some(live.store_health.clone()),
    });
    let (tx, rx) = tokio::sync::watch::channel(false);
    tracing::info!(channels = cfg.alerts.channels.len(), "alerts: delivering");
    tokio::spawn(deliverer.run(rx, ALERT_TICK));
    Some(tx)
}

/// How often the alert outbox is looked at.
const ALERT_TICK: Duration = Duration::from_millis(500);

async fn reload(
    path: &Path,
    running: &Config,
    store: &DaemonStore,
    consent: &ConsentGate,
    clock: Arc<dyn crate::clock::Clock>,
) -> Result<Built, DaemonError> {
    let new = config::load(path)?;
    // The store and the listener are held open for the life of the process.
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
    let mut new = new;
    new.database = running.database.clone();
    new.listen = running.listen;
    build(new, store, Some(consent), clock).await
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
