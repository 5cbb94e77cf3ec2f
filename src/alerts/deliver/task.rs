//! The deliverer: the task that drains the alert outbox (one send at a time per channel, at
//! most [`super::CONCURRENCY`] at once) and runs the alert timers, with the counters it keeps.

use super::Sender;
use super::message::{Answer, attempt_of};
use crate::alerts::config::AlertsConfig;
use crate::alerts::outbox::{self, AlertRow};
use crate::alerts::payload::AlertPayload;
use crate::clock::Clock;
use crate::net::Transport;
use crate::store::{Store, StoreError};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the deliverer looks for records queued for filing too long.
const QUEUED_EVERY: Duration = Duration::from_secs(60);
/// Consecutive failed attempts of one channel after which `/healthz` says alerting is degraded.
pub const DEGRADED_AFTER: u64 = 3;
/// The most rows one channel's task sends before it lets go of the channel.
const DRAIN_BATCH: usize = 64;

/// Counters kept as the task works (for `/metrics` and `/healthz`; no history is read).
#[derive(Debug, Default)]
pub struct AlertMetrics {
    pub delivered: AtomicU64,
    pub failed_attempts: AtomicU64,
    pub refused: AtomicU64,
    pub in_flight: AtomicU64,
    pub planned_by_timer: AtomicU64,
    /// Per channel: consecutive failed attempts (0 after a delivery).
    pub failing: Mutex<HashMap<String, u64>>,
}

impl AlertMetrics {
    /// Channels failing now (at least [`DEGRADED_AFTER`] attempts in a row).
    pub fn degraded_channels(&self) -> Vec<String> {
        let f = self.failing.lock().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<String> = f
            .iter()
            .filter(|(_, n)| **n >= DEGRADED_AFTER)
            .map(|(k, _)| k.clone())
            .collect();
        v.sort();
        v
    }

    fn note(&self, channel: &str, ok: bool) {
        let mut f = self.failing.lock().unwrap_or_else(|p| p.into_inner());
        let n = f.entry(channel.to_string()).or_default();
        *n = if ok { 0 } else { *n + 1 };
    }

    /// Prometheus text lines.
    pub fn render(&self, out: &mut String) {
        use crate::prometheus_text::{Kind, TextWriter};
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut w = TextWriter::new(out);
        w.single(
            "conduct_walker_alerts_delivered_total",
            Kind::Counter,
            "Alert deliveries a receiver answered 2xx.",
            g(&self.delivered),
        )
        .single(
            "conduct_walker_alerts_failed_attempts_total",
            Kind::Counter,
            "Alert delivery attempts that failed (retried with backoff).",
            g(&self.failed_attempts),
        )
        .single(
            "conduct_walker_alerts_refused_total",
            Kind::Counter,
            "Alerts a receiver refused (4xx; not retried).",
            g(&self.refused),
        )
        .single(
            "conduct_walker_alerts_in_flight",
            Kind::Gauge,
            "Alert deliveries in progress.",
            g(&self.in_flight),
        );
        let f = self.failing.lock().unwrap_or_else(|p| p.into_inner());
        let mut names: Vec<_> = f.iter().collect();
        names.sort();
        w.labelled(
            (
                "conduct_walker_alerts_channel_failing",
                Kind::Gauge,
                "Consecutive failed attempts per alert channel.",
            ),
            ["channel"],
            names.into_iter().map(|(channel, n)| ([channel], n)),
        );
    }
}

/// The outbox's drainer. One per daemon; a reload swaps its configuration.
pub struct Deliverer {
    pub cfg: Arc<AlertsConfig>,
    pub senders: HashMap<String, Arc<Sender>>,
    pub transport: Transport,
    pub store: Arc<Mutex<Store>>,
    pub clock: Arc<dyn Clock>,
    pub metrics: Arc<AlertMetrics>,
    /// Channels some task of this process is sending to now (shared across reloads): one
    /// send at a time per channel, so its alerts arrive in the order they were planned.
    pub in_flight: Arc<Mutex<HashSet<String>>>,
    pub slots: Arc<tokio::sync::Semaphore>,
    /// The daemon's store health: its changes are alerted (degraded, recovered).
    pub store_health: Option<Arc<crate::store::write_health::WriteHealth>>,
}

impl Deliverer {
    async fn with_store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        crate::store::shared::blocking(&self.store, f).await
    }

    /// The timers (held changes, digests, records queued too long) in one transaction.
    pub async fn plan_timers(&self, with_queued: bool) -> Result<u32, StoreError> {
        let cfg = self.cfg.clone();
        let now = self.clock.now();
        let fault = self
            .store_health
            .as_ref()
            .map(|h| h.fault().map(|f| f.reason));
        let n = self
            .with_store(move |s| {
                // Most ticks find nothing to write: no write lock is taken for those.
                crate::store::mostly_read_transaction(s.connection(), |tx| {
                    let mut n = outbox::flush_due(tx, &cfg, now)?;
                    // While the store cannot write this fails too, and is tried again next
                    // time: the degraded alert is planned once writes work (with the recovery
                    // after it).
                    if let Some(fault) = &fault {
                        n += outbox::store_health(tx, &cfg, fault.as_deref(), now)?;
                    }
                    n += outbox::digests_due(tx, &cfg, now)?;
                    n += outbox::refusals(tx, &cfg, now)?;
                    n += outbox::ledger_findings(tx, &cfg, now)?;
                    if with_queued {
                        n += outbox::queued_too_long(tx, &cfg, now)?;
                    }
                    Ok(n)
                })
            })
            .await?;
        self.metrics
            .planned_by_timer
            .fetch_add(n.into(), Ordering::Relaxed);
        Ok(n)
    }

    /// Start sending what is due: one task per channel with rows due and none in flight,
    /// within the slots; returns how many were started. Does not wait for them.
    pub async fn pass(self: &Arc<Self>) -> Result<usize, StoreError> {
        let now = self.clock.now();
        let rows = self
            .with_store(move |s| outbox::due(s.connection(), now, 256))
            .await?;
        let mut started = 0;
        for row in rows {
            if !self.claim(&row.channel) {
                continue;
            }
            let Ok(permit) = self.slots.clone().try_acquire_owned() else {
                self.unclaim(&row.channel);
                break;
            };
            started += 1;
            let me = self.clone();
            tokio::spawn(async move {
                let channel = row.channel.clone();
                me.drain(row).await;
                me.unclaim(&channel);
                drop(permit);
            });
        }
        Ok(started)
    }

    fn claim(&self, channel: &str) -> bool {
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(channel.to_string())
    }

    fn unclaim(&self, channel: &str) {
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(channel);
    }

    /// Send `first`, then the channel's next due rows in the order they were planned, while
    /// its receiver answers (at most [`DRAIN_BATCH`] per claim: a reload's new senders take
    /// over at the next pass).
    async fn drain(&self, first: AlertRow) {
        let channel = first.channel.clone();
        let mut row = first;
        for _ in 0..DRAIN_BATCH {
            if !self.deliver(row).await {
                return;
            }
            let now = self.clock.now();
            let ch = channel.clone();
            match self
                .with_store(move |s| outbox::next_due_on(s.connection(), &ch, now))
                .await
            {
                Ok(Some(next)) => row = next,
                Ok(None) => return,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the alert outbox");
                    return;
                }
            }
        }
    }

    /// Send one row and store the answer; true when the receiver answered (delivered or
    /// refused), which also releases the channel's rows waiting out a backoff.
    async fn deliver(&self, row: AlertRow) -> bool {
        let Some(sender) = self.senders.get(&row.channel).cloned() else {
            // A channel no longer configured: its rows wait (a reload may bring it back).
            return false;
        };
        let payload: AlertPayload = match serde_json::from_str(&row.payload) {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(alert = %row.alert_id, error = %e, "an alert's stored payload is unreadable");
                return false;
            }
        };
        self.metrics.in_flight.fetch_add(1, Ordering::Relaxed);
        let answer = sender.send(&self.transport, &payload).await;
        self.metrics.in_flight.fetch_sub(1, Ordering::Relaxed);
        let answered = !matches!(answer, Answer::Retry { .. });
        self.metrics
            .note(&row.channel, matches!(answer, Answer::Delivered { .. }));
        match &answer {
            Answer::Delivered { .. } => self.metrics.delivered.fetch_add(1, Ordering::Relaxed),
            Answer::Refused { .. } => self.metrics.refused.fetch_add(1, Ordering::Relaxed),
            Answer::Retry { .. } => self.metrics.failed_attempts.fetch_add(1, Ordering::Relaxed),
        };
        let now = self.clock.now();
        let attempts = u32::try_from(row.attempts + 1).unwrap_or(u32::MAX);
        let attempt = attempt_of(&answer, attempts, now, rand::random());
        tracing::info!(
            alert = %row.alert_id,
            channel = %row.channel,
            kind = %row.kind,
            answer = %answer.describe(),
            "alert delivery attempt"
        );
        let (id, channel) = (row.id, row.channel.clone());
        let stored = self
            .with_store(move |s| {
                let tx = crate::store::write_transaction(s.connection())?;
                outbox::record_attempt(&tx, id, &attempt, now)?;
                let released = if answered {
                    outbox::release(&tx, &channel, now)?
                } else {
                    0
                };
                tx.commit()?;
                Ok(released)
            })
            .await;
        match stored {
            Ok(released) => {
                if released > 0 {
                    tracing::info!(channel = %row.channel, released, "alerts: the receiver answers again; its queued alerts go out now");
                }
                answered
            }
            Err(e) => {
                tracing::error!(alert = %row.alert_id, error = %e, "cannot store an alert delivery's answer");
                false
            }
        }
    }

    /// Run until `stop` says so: the timers at most once a `tick`, a pass every `tick` (sooner
    /// while a backlog drains).
    pub async fn run(
        self: Arc<Self>,
        mut stop: tokio::sync::watch::Receiver<bool>,
        tick: Duration,
    ) {
        let mut timers_at: Option<std::time::Instant> = None;
        let mut queued_at: Option<std::time::Instant> = None;
        loop {
            if *stop.borrow() {
                return;
            }
            // The timers once a tick, not on every quick pass of a draining backlog: each is a
            // write transaction beside the records' writer. Records queued too long are looked
            // for once a minute (an indexed read), by the clock rather than by passes.
            if timers_at.is_none_or(|t| t.elapsed() >= tick) {
                let with_queued = queued_at.is_none_or(|t| t.elapsed() >= QUEUED_EVERY);
                if with_queued {
                    queued_at = Some(std::time::Instant::now());
                }
                timers_at = Some(std::time::Instant::now());
                if let Err(e) = self.plan_timers(with_queued).await {
                    tracing::error!(error = %e, "cannot plan the alert timers");
                }
            }
            // A pass that found work looks again soon (a backlog drains at the slots' pace,
            // not one batch per tick).
            let wait = match self.pass().await {
                Ok(0) => tick,
                Ok(_) => tick.min(Duration::from_millis(50)),
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the alert outbox");
                    tick
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.changed() => {}
            }
        }
    }
}
