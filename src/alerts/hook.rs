//! The alert planner as the pipeline's [`RecordHook`]: what a walk, a full lane or a declined
//! fire says is decided here from data, and planned into the outbox in the transaction of the
//! write that caused it. The composition root hands it to the pipeline when `[alerts]` has
//! channels; the pipeline knows nothing of alerts.

use super::config::AlertsConfig;
use super::health::{lane_exhausted_by_limits, lane_full};
use super::incident::{Observation, WalkResult};
use super::outbox;
use crate::pipeline::{HookWrite, LaneFull, RecordHook};
use crate::walk::WalkOutcome;
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// Plans alerts with these settings and channels.
pub struct AlertsHook {
    cfg: Arc<AlertsConfig>,
}

impl AlertsHook {
    pub fn new(cfg: Arc<AlertsConfig>) -> AlertsHook {
        AlertsHook { cfg }
    }

    /// Step `target`'s incident state with `obs` in the transaction.
    fn observe(&self, target: &str, obs: Observation) -> HookWrite {
        let (cfg, target) = (self.cfg.clone(), target.to_string());
        Box::new(move |conn| outbox::observe(conn, &cfg, &target, &obs).map(drop))
    }
}

impl RecordHook for AlertsHook {
    fn on_record(
        &self,
        target: &str,
        origin: &str,
        outcome: &WalkOutcome,
        at: DateTime<Utc>,
    ) -> Option<HookWrite> {
        Some(self.observe(target, Observation::from_walk(outcome, origin, at)))
    }

    fn on_lane_full(&self, full: &LaneFull<'_>, at: DateTime<Utc>) -> Option<HookWrite> {
        let planned = match *full {
            LaneFull::Counted {
                intake,
                limits,
                lane,
                usage,
            } => lane_exhausted_by_limits(intake, limits, lane, usage, at)?,
            LaneFull::Said { intake, lane } => lane_full(intake, lane, at),
        };
        let cfg = self.cfg.clone();
        Some(Box::new(move |conn| {
            outbox::plan_health(conn, &cfg, &planned).map(drop)
        }))
    }

    fn on_declined(
        &self,
        target: &str,
        origin: &str,
        endpoint: Option<&str>,
        consent_sha256: &str,
        at: DateTime<Utc>,
    ) -> Option<HookWrite> {
        let obs = Observation {
            at,
            record_sha256: None,
            origin: Some(origin.to_string()),
            endpoint: endpoint.map(str::to_string),
            result: WalkResult::ConsentDeclined {
                consent_sha256: consent_sha256.to_string(),
            },
        };
        Some(self.observe(target, obs))
    }
}
