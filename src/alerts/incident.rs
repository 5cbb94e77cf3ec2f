//! The per-target incident state machine (issue 24), pure.
//!
//! [`step`] takes the stored [`TargetState`], one walk's [`Observation`] and the target's
//! [`Settings`], and returns the next state and the alerts to plan. The state is plain data
//! (serde): the daemon stores it beside the record and reloads it, so a restart or a config
//! reload never re-announces what the operator was already told.
//!
//! Two things are kept apart in the state, per concern: what *is* (the incident open now, the
//! assertions' last results, whether consent is declined) and what was *announced* (what the
//! last alert told the operator). Alerts are the difference between the two, computed when the
//! target may be alerted again (its minimum interval since the last alert has passed). So a
//! flap that opens and resolves inside the interval is never sent at all, and one that is still
//! open when the interval ends is sent once, as it stands; [`flush`] lets a timer send what a
//! quiet target held back without waiting for its next walk.
//!
//! - Conduct and transport are two tracks. A walk the agent answered (its card fetched) counts
//!   toward the conduct track (open after `open_after` consecutive FAIL verdicts, resolve after
//!   `resolve_after` consecutive PASS); a walk that could not reach the agent counts only toward
//!   the unreachable track (`unreachable_after` in a row opens an "unreachable" incident) and
//!   neither extends nor breaks the conduct streaks: an unreachable agent is not a dishonest one.
//! - An assertion flip is announced on its own only while the walk agrees with the announced
//!   incident state (the verdict holds); flips that come with a verdict change ride in the
//!   opened/resolved alert, and flips of a streak that never reached its threshold are not sent.
//! - A new target starts with nothing announced and no baseline: a passing first walk opens
//!   nothing and flips nothing; a failing one counts toward `open_after` like any other.
//! - A trigger that is off still moves the state (and the announced view follows it silently):
//!   turning it on later announces changes from then on, not the incidents already known.

use super::alert_id;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which changes of a target are alerted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Triggers {
    /// A conduct incident opens (FAIL) or resolves (PASS).
    pub verdict: bool,
    /// One assertion's result changes while the verdict holds.
    pub assertion: bool,
    /// The agent cannot be reached for `unreachable_after` walks, and is reached again.
    pub unreachable: bool,
    /// The origin declines consent (`listing: decline`) or allows it again.
    pub consent: bool,
}

impl Default for Triggers {
    fn default() -> Self {
        Triggers {
            verdict: true,
            assertion: true,
            unreachable: true,
            consent: true,
        }
    }
}

/// One target's alert settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// N: consecutive FAIL walks that open a conduct incident.
    pub open_after: u32,
    /// M: consecutive PASS walks that resolve it (also: reachable walks that resolve an
    /// unreachable incident).
    pub resolve_after: u32,
    /// Consecutive walks that could not reach the agent before an unreachable incident opens.
    pub unreachable_after: u32,
    pub triggers: Triggers,
    /// The least time between two alerts of this target, in seconds; changes in between are
    /// held and sent as they stand when it has passed.
    pub min_interval_secs: u64,
    /// K of the windowed rule: a conduct incident also opens on a FAIL walk when at least K of
    /// the last [`Settings::window_walks`] conduct walks failed (an agent that fails every
    /// other walk never fails `open_after` times in a row). 0 turns the rule off.
    pub window_failures: u32,
    /// N of the windowed rule (at most [`MAX_WINDOW`]).
    pub window_walks: u32,
    /// Flap detection: an incident track that opened this many times within the last
    /// [`Settings::flap_window`] walks is flapping: one alert says so, its openings and
    /// resolutions are then followed silently, and one alert says when it is stable again (no
    /// opening or resolution for `flap_window` walks). 0 turns it off.
    pub flap_opens: u32,
    pub flap_window: u32,
}

/// The longest window of the windowed rule, in walks (one bit each).
pub const MAX_WINDOW: u32 = 64;
/// The longest flap window, in walks.
pub const MAX_FLAP_WINDOW: u32 = 10_000;

impl Default for Settings {
    /// Two failing walks open, two passing ones resolve (one bad answer is not an incident),
    /// or three failures in the last six walks open (half its walks failing is an incident);
    /// three unreachable walks in a row; three openings within 20 walks is flapping; at most
    /// one alert per target per 15 minutes.
    fn default() -> Self {
        Settings {
            open_after: 2,
            resolve_after: 2,
            unreachable_after: 3,
            triggers: Triggers::default(),
            min_interval_secs: 15 * 60,
            window_failures: 3,
            window_walks: 6,
            flap_opens: 3,
            flap_window: 20,
        }
    }
}

impl Settings {
    /// Thresholds of 0 mean nothing (but the optional rules' switches); the error names the
    /// setting.
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [
            ("open_after", self.open_after),
            ("resolve_after", self.resolve_after),
            ("unreachable_after", self.unreachable_after),
        ] {
            if v == 0 {
                return Err(format!("alerts: {name} must be at least 1, not 0"));
            }
        }
        if self.window_failures > 0
            && !(self.window_failures..=MAX_WINDOW).contains(&self.window_walks)
        {
            return Err(format!(
                "alerts: window_walks must be from window_failures ({}) to {MAX_WINDOW}, not {}",
                self.window_failures, self.window_walks
            ));
        }
        if self.flap_opens > 0 && !(1..=MAX_FLAP_WINDOW).contains(&self.flap_window) {
            return Err(format!(
                "alerts: flap_window must be from 1 to {MAX_FLAP_WINDOW}, not {}",
                self.flap_window
            ));
        }
        Ok(())
    }
}

/// One assertion as a walk evaluated it (`walk::assertions::Assertion`, without the evidence).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssertionResult {
    pub name: String,
    pub claim: String,
    /// `None`: not applicable.
    pub result: Option<bool>,
    pub note: Option<String>,
}

/// What one fire of a target came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalkResult {
    /// The agent answered (its card was fetched): a conduct verdict.
    Conduct {
        ok: bool,
        n_pass: u32,
        n_total: u32,
        assertions: Vec<AssertionResult>,
    },
    /// The walk could not reach the agent (no HTTP answer for the card).
    Unreachable { why: String },
    /// The origin's consent file declines listing: nothing was walked.
    ConsentDeclined { consent_sha256: String },
}

/// One walk, as the alert core sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub at: DateTime<Utc>,
    /// The record this walk stored, when it stored one.
    pub record_sha256: Option<String>,
    /// The origin walked (the record's `base`), when known.
    pub origin: Option<String>,
    /// The endpoint measured (the record's endpoint, §6.5), when known: what an operator with
    /// two configs, or reading a forwarded alert, needs to tell which agent it is about.
    pub endpoint: Option<String>,
    pub result: WalkResult,
}

impl Observation {
    /// From a finished walk of `origin`: unreachable when node 1 (the card) got no HTTP answer
    /// at all. The endpoint is the record's (§6.5: the n3 target, else the origin), taken from
    /// the walk rather than parsed back from the record's bytes.
    pub fn from_walk(
        outcome: &crate::walk::WalkOutcome,
        origin: &str,
        at: DateTime<Utc>,
    ) -> Observation {
        let unreachable = outcome
            .nodes
            .iter()
            .find(|n| n.n == 1)
            .and_then(|n| n.exchange.transport_error.clone());
        let result = match unreachable {
            Some(why) => WalkResult::Unreachable { why },
            None => WalkResult::Conduct {
                ok: outcome.verdict.ok,
                n_pass: outcome.verdict.n_pass,
                n_total: outcome.verdict.n_total,
                assertions: outcome
                    .assertions
                    .iter()
                    .map(|a| AssertionResult {
                        name: a.name.to_string(),
                        claim: a.claim.clone(),
                        result: a.result,
                        note: a.note.clone(),
                    })
                    .collect(),
            },
        };
        Observation {
            at,
            record_sha256: Some(outcome.sha256.clone()),
            origin: Some(origin.to_string()),
            endpoint: Some(outcome.target.clone().unwrap_or_else(|| origin.to_string())),
            result,
        }
    }
}

/// Which incident track.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IncidentKind {
    /// The verdict is FAIL.
    Conduct,
    /// The agent cannot be reached.
    Unreachable,
}

impl IncidentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            IncidentKind::Conduct => "conduct",
            IncidentKind::Unreachable => "unreachable",
        }
    }
}

/// An open incident.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Incident {
    /// The target's incident number (1, 2, ...), shared by both tracks.
    pub number: u64,
    pub opened_at: DateTime<Utc>,
}

/// One track's counters and incidents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Track {
    pub bad_streak: u32,
    pub good_streak: u32,
    /// The incident open now.
    pub open: Option<Incident>,
    /// The incident the operator was last told is open (differs from `open` while held).
    pub announced: Option<u64>,
    /// When (the target's observation count) this track's incidents opened, within the flap
    /// window.
    pub opened_at_walks: Vec<u64>,
    /// When an incident of this track last opened or resolved (observation count).
    pub last_change: Option<u64>,
    /// Flapping now, and what the operator was last told of it.
    pub flapping: bool,
    pub announced_flapping: bool,
    /// Flapping episodes so far (the latest's number).
    pub flap_episodes: u64,
}

impl Track {
    /// An incident of this track opened or resolved at observation `at`.
    fn changed(&mut self, at: u64, opened: bool) {
        self.last_change = Some(at);
        if opened {
            self.opened_at_walks.push(at);
        }
    }

    /// Flap detection after observation `at`: 1 when flapping began or ended.
    fn flap(&mut self, at: u64, settings: &Settings) -> u32 {
        if settings.flap_opens == 0 {
            self.opened_at_walks.clear();
            // Turned off while flapping: stable from now on.
            return u32::from(std::mem::take(&mut self.flapping));
        }
        let window = u64::from(settings.flap_window);
        self.opened_at_walks.retain(|w| at - w < window);
        if !self.flapping && self.opened_at_walks.len() >= settings.flap_opens as usize {
            self.flapping = true;
            self.flap_episodes += 1;
            return 1;
        }
        if self.flapping && self.last_change.is_none_or(|c| at - c >= window) {
            self.flapping = false;
            return 1;
        }
        0
    }
}

/// Everything stored per target between walks. Members added since the first version default
/// when a stored state lacks them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TargetState {
    /// Observations seen (walks, unreachable walks and declines).
    pub observations: u64,
    /// Incidents ever opened (the next one is `incidents + 1`).
    pub incidents: u64,
    pub conduct: Track,
    pub unreachable: Track,
    /// The last conduct walk's verdict.
    pub last_ok: Option<bool>,
    /// Each assertion's last result (`None`: not applicable).
    pub assertions: BTreeMap<String, Option<bool>>,
    /// The results the operator was last told of: the flip baseline.
    pub announced_assertions: BTreeMap<String, Option<bool>>,
    /// Consent declined now, and the episode (1, 2, ...) of the latest decline.
    pub consent_declined: bool,
    pub consent_episodes: u64,
    pub announced_consent_declined: bool,
    pub last_alert_at: Option<DateTime<Utc>>,
    /// Changes seen since the last alert (incidents opened or resolved, assertion results,
    /// consent), whether or not they were alerted: a flap the thresholds or the minimum interval
    /// absorbed shows here in the next alert.
    pub held_changes: u32,
    /// The last record seen and its assertions' claims and notes, for the alert that says why.
    pub last_record_sha256: Option<String>,
    pub last_assertions: Vec<AssertionResult>,
    pub last_verdict: Option<(u32, u32)>,
    /// The last conduct walks, newest in bit 0 (1: FAIL), and how many of the bits are walks
    /// (up to [`MAX_WINDOW`]): the windowed rule's memory.
    pub recent_fails: u64,
    pub recent_walks: u32,
    /// The origin and endpoint of the latest walk that said (every alert names them).
    pub origin: Option<String>,
    pub endpoint: Option<String>,
}

/// What an alert says happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    Opened {
        kind: IncidentKind,
        incident: Incident,
    },
    Resolved {
        kind: IncidentKind,
        number: u64,
    },
    /// Assertions changed while the verdict held.
    AssertionsFlipped,
    /// The track's incidents keep opening and resolving: they are followed silently until
    /// [`Transition::Stable`].
    Flapping {
        kind: IncidentKind,
        episode: u64,
    },
    /// A flapping track held still for the flap window; `open` is its incident open now.
    Stable {
        kind: IncidentKind,
        episode: u64,
        open: Option<Incident>,
    },
    ConsentDeclined {
        episode: u64,
    },
    ConsentAllowed {
        episode: u64,
    },
}

impl Transition {
    /// The payload's `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Transition::Opened {
                kind: IncidentKind::Conduct,
                ..
            } => "incident.opened",
            Transition::Resolved {
                kind: IncidentKind::Conduct,
                ..
            } => "incident.resolved",
            Transition::Opened {
                kind: IncidentKind::Unreachable,
                ..
            } => "unreachable.opened",
            Transition::Resolved {
                kind: IncidentKind::Unreachable,
                ..
            } => "unreachable.resolved",
            Transition::Flapping {
                kind: IncidentKind::Conduct,
                ..
            } => "incident.flapping",
            Transition::Stable {
                kind: IncidentKind::Conduct,
                ..
            } => "incident.stable",
            Transition::Flapping {
                kind: IncidentKind::Unreachable,
                ..
            } => "unreachable.flapping",
            Transition::Stable {
                kind: IncidentKind::Unreachable,
                ..
            } => "unreachable.stable",
            Transition::AssertionsFlipped => "assertion.flipped",
            Transition::ConsentDeclined { .. } => "consent.declined",
            Transition::ConsentAllowed { .. } => "consent.allowed",
        }
    }
}

/// One assertion whose result changed since the operator was last told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flip {
    pub name: String,
    pub claim: String,
    pub from: Option<bool>,
    pub to: Option<bool>,
    pub note: Option<String>,
}

/// An alert to plan (to put in the outbox).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// What the id is derived from, with the witness's identity ([`Planned::id`]): the target,
    /// its endpoint, the transition and its number, NUL-separated.
    pub key: String,
    pub target: String,
    pub origin: Option<String>,
    pub endpoint: Option<String>,
    pub at: DateTime<Utc>,
    pub transition: Transition,
    pub flips: Vec<Flip>,
    /// The verdict of the latest conduct walk: (ok, n_pass, n_total).
    pub verdict: Option<(bool, u32, u32)>,
    pub record_sha256: Option<String>,
    /// Changes seen since the previous alert, this one's included.
    pub held_changes: u32,
}

impl Planned {
    /// The alert's id as `witness` sends it ([`alert_id`]).
    pub fn id(&self, witness: &str) -> String {
        alert_id(witness, &self.key)
    }
}

/// Apply one observation: the next state and the alerts to plan, in order.
pub fn step(
    target: &str,
    prev: &TargetState,
    obs: &Observation,
    settings: &Settings,
) -> (TargetState, Vec<Planned>) {
    let mut s = prev.clone();
    s.observations += 1;
    let mut changes = 0u32;
    if obs.record_sha256.is_some() {
        s.last_record_sha256 = obs.record_sha256.clone();
    }
    if obs.origin.is_some() {
        s.origin = obs.origin.clone();
    }
    if obs.endpoint.is_some() {
        s.endpoint = obs.endpoint.clone();
    }
    match &obs.result {
        WalkResult::ConsentDeclined { .. } => {
            if !s.consent_declined {
                s.consent_declined = true;
                s.consent_episodes += 1;
                changes += 1;
            }
        }
        WalkResult::Unreachable { .. } => {
            changes += allowed_again(&mut s);
            let t = &mut s.unreachable;
            t.bad_streak += 1;
            t.good_streak = 0;
            if t.open.is_none() && t.bad_streak >= settings.unreachable_after {
                s.incidents += 1;
                t.open = Some(Incident {
                    number: s.incidents,
                    opened_at: obs.at,
                });
                t.changed(s.observations, true);
                changes += 1;
            }
        }
        WalkResult::Conduct {
            ok,
            n_pass,
            n_total,
            assertions,
        } => {
            changes += allowed_again(&mut s);
            let at = s.observations;
            let u = &mut s.unreachable;
            u.good_streak += 1;
            u.bad_streak = 0;
            if u.open.is_some() && u.good_streak >= settings.resolve_after {
                u.open = None;
                u.changed(at, false);
                changes += 1;
            }
            s.recent_fails = (s.recent_fails << 1) | u64::from(!*ok);
            s.recent_walks = (s.recent_walks + 1).min(MAX_WINDOW);
            let c = &mut s.conduct;
            if *ok {
                c.good_streak += 1;
                c.bad_streak = 0;
                if c.open.is_some() && c.good_streak >= settings.resolve_after {
                    c.open = None;
                    c.changed(at, false);
                    changes += 1;
                }
            } else {
                c.bad_streak += 1;
                c.good_streak = 0;
                let in_window = settings.window_failures > 0
                    && window_fails(s.recent_fails, settings.window_walks)
                        >= settings.window_failures;
                if c.open.is_none() && (c.bad_streak >= settings.open_after || in_window) {
                    s.incidents += 1;
                    c.open = Some(Incident {
                        number: s.incidents,
                        opened_at: obs.at,
                    });
                    c.changed(at, true);
                    changes += 1;
                }
            }
            let results: BTreeMap<String, Option<bool>> = assertions
                .iter()
                .map(|a| (a.name.clone(), a.result))
                .collect();
            changes += results
                .iter()
                .filter(|(k, v)| s.assertions.get(*k).is_some_and(|old| old != *v))
                .count() as u32;
            if s.assertions.is_empty() && s.announced_assertions.is_empty() {
                // First conduct walk: the baseline, nothing to compare against.
                s.announced_assertions = results.clone();
            }
            s.assertions = results;
            s.last_ok = Some(*ok);
            s.last_verdict = Some((*n_pass, *n_total));
            s.last_assertions = assertions.clone();
        }
    }
    let at = s.observations;
    changes += s.conduct.flap(at, settings) + s.unreachable.flap(at, settings);
    s.held_changes += changes;
    let planned = flush_into(target, &mut s, settings, obs.at);
    (s, planned)
}

/// FAIL walks among the last `n` conduct walks (bit 0 the newest).
fn window_fails(recent: u64, n: u32) -> u32 {
    let mask = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    (recent & mask).count_ones()
}

/// A walk happened, so the origin no longer declines.
fn allowed_again(s: &mut TargetState) -> u32 {
    if s.consent_declined {
        s.consent_declined = false;
        1
    } else {
        0
    }
}

/// Send what the minimum interval held back, if it has passed by `now` (for a timer: a target
/// walked daily should not wait a day to say its incident resolved).
pub fn flush(
    target: &str,
    prev: &TargetState,
    settings: &Settings,
    now: DateTime<Utc>,
) -> (TargetState, Vec<Planned>) {
    let mut s = prev.clone();
    let planned = flush_into(target, &mut s, settings, now);
    (s, planned)
}

fn flush_into(
    target: &str,
    s: &mut TargetState,
    settings: &Settings,
    now: DateTime<Utc>,
) -> Vec<Planned> {
    let trig = settings.triggers;
    // Silently follow what is not alerted on, so turning a trigger on later announces nothing old.
    if !trig.verdict {
        s.conduct.announced = s.conduct.open.as_ref().map(|i| i.number);
        s.conduct.announced_flapping = s.conduct.flapping;
    }
    if !trig.unreachable {
        s.unreachable.announced = s.unreachable.open.as_ref().map(|i| i.number);
        s.unreachable.announced_flapping = s.unreachable.flapping;
    }
    // While a track flaps (and the operator was told so), its incidents are followed silently.
    for t in [&mut s.conduct, &mut s.unreachable] {
        if t.flapping && t.announced_flapping {
            t.announced = t.open.as_ref().map(|i| i.number);
        }
    }
    if !trig.consent {
        s.announced_consent_declined = s.consent_declined;
    }
    if !trig.assertion && !trig.verdict {
        s.announced_assertions = s.assertions.clone();
    }
    let holds = s.last_ok == Some(s.conduct.open.is_none())
        && s.conduct.announced == s.conduct.open.as_ref().map(|i| i.number);
    // Flips of a flapping agent are noise: followed silently, like its incidents.
    if (!trig.assertion && holds) || (s.conduct.flapping && s.conduct.announced_flapping) {
        // Flips are not alerted alone: the next incident alert reports only its own.
        s.announced_assertions = s.assertions.clone();
    }
    let pending = pending_transitions(s, trig);
    if pending.is_empty() {
        return Vec::new();
    }
    if let Some(last) = s.last_alert_at {
        // An interval too long for the calendar means: never again (not a panic).
        let until = i64::try_from(settings.min_interval_secs)
            .ok()
            .and_then(chrono::TimeDelta::try_seconds)
            .and_then(|wait| last.checked_add_signed(wait));
        if until.is_none_or(|until| now < until) {
            return Vec::new();
        }
    }
    let flips = flips(s);
    let mut out = Vec::new();
    let mut flips_sent = false;
    for t in pending {
        // Flips travel with the first conduct transition, or alone.
        let carries = matches!(
            t,
            Transition::Opened {
                kind: IncidentKind::Conduct,
                ..
            } | Transition::Resolved {
                kind: IncidentKind::Conduct,
                ..
            } | Transition::Stable {
                kind: IncidentKind::Conduct,
                ..
            } | Transition::AssertionsFlipped
        ) && !flips_sent;
        if carries {
            flips_sent = true;
        }
        // The target and the endpoint it measured: one name may be another agent elsewhere.
        let who = format!("{target}\0{}", s.endpoint.as_deref().unwrap_or(""));
        let key = match &t {
            Transition::Opened { kind, incident } => {
                format!("{who}\0{}\0{}\0opened", kind.as_str(), incident.number)
            }
            Transition::Resolved { kind, number } => {
                format!("{who}\0{}\0{number}\0resolved", kind.as_str())
            }
            // A flip has no incident number: the observation count makes it unique per walk.
            Transition::AssertionsFlipped => {
                format!("{who}\0assertion\0{}\0flipped", s.observations)
            }
            Transition::Flapping { kind, episode } => {
                format!("{who}\0{}\0{episode}\0flapping", kind.as_str())
            }
            Transition::Stable { kind, episode, .. } => {
                format!("{who}\0{}\0{episode}\0stable", kind.as_str())
            }
            Transition::ConsentDeclined { episode } => {
                format!("{who}\0consent\0{episode}\0declined")
            }
            Transition::ConsentAllowed { episode } => {
                format!("{who}\0consent\0{episode}\0allowed")
            }
        };
        out.push(Planned {
            key,
            target: target.to_string(),
            origin: s.origin.clone(),
            endpoint: s.endpoint.clone(),
            at: now,
            transition: t,
            flips: if carries { flips.clone() } else { Vec::new() },
            verdict: s.last_ok.zip(s.last_verdict).map(|(ok, (p, n))| (ok, p, n)),
            record_sha256: s.last_record_sha256.clone(),
            held_changes: s.held_changes,
        });
    }
    // Now announced.
    for t in [&mut s.conduct, &mut s.unreachable] {
        t.announced = t.open.as_ref().map(|i| i.number);
        t.announced_flapping = t.flapping;
    }
    s.announced_consent_declined = s.consent_declined;
    if flips_sent {
        s.announced_assertions = s.assertions.clone();
    }
    s.last_alert_at = Some(now);
    s.held_changes = 0;
    out
}

/// Announced vs actual, as transitions, in the order they are sent.
fn pending_transitions(s: &TargetState, trig: Triggers) -> Vec<Transition> {
    let mut out = Vec::new();
    if s.consent_declined && !s.announced_consent_declined {
        out.push(Transition::ConsentDeclined {
            episode: s.consent_episodes,
        });
    }
    if !s.consent_declined && s.announced_consent_declined {
        out.push(Transition::ConsentAllowed {
            episode: s.consent_episodes,
        });
    }
    for (kind, t) in [
        (IncidentKind::Unreachable, &s.unreachable),
        (IncidentKind::Conduct, &s.conduct),
    ] {
        // A flapping track says so once, and once when it is stable again (with the incident
        // open then, if any); in between nothing.
        match (t.flapping, t.announced_flapping) {
            (true, false) => {
                out.push(Transition::Flapping {
                    kind,
                    episode: t.flap_episodes,
                });
                continue;
            }
            (false, true) => {
                out.push(Transition::Stable {
                    kind,
                    episode: t.flap_episodes,
                    open: t.open.clone(),
                });
                continue;
            }
            (true, true) => continue,
            (false, false) => {}
        }
        let now = t.open.as_ref().map(|i| i.number);
        if let Some(old) = t.announced.filter(|old| Some(*old) != now) {
            out.push(Transition::Resolved { kind, number: old });
        }
        if let Some(inc) = t.open.as_ref().filter(|i| Some(i.number) != t.announced) {
            out.push(Transition::Opened {
                kind,
                incident: inc.clone(),
            });
        }
    }
    let conduct_moved = out.iter().any(|t| {
        matches!(
            t,
            Transition::Opened {
                kind: IncidentKind::Conduct,
                ..
            } | Transition::Resolved {
                kind: IncidentKind::Conduct,
                ..
            } | Transition::Flapping {
                kind: IncidentKind::Conduct,
                ..
            } | Transition::Stable {
                kind: IncidentKind::Conduct,
                ..
            }
        )
    });
    // The verdict holds: the last conduct walk agrees with the incident state announced.
    let holds = s.last_ok == Some(s.conduct.open.is_none());
    if trig.assertion && !conduct_moved && holds && has_pending_flips(s) {
        out.push(Transition::AssertionsFlipped);
    }
    out
}

fn has_pending_flips(s: &TargetState) -> bool {
    s.assertions
        .iter()
        .any(|(k, v)| s.announced_assertions.get(k).is_some_and(|old| old != v))
}

fn flips(s: &TargetState) -> Vec<Flip> {
    s.last_assertions
        .iter()
        .filter_map(|a| {
            let from = *s.announced_assertions.get(&a.name)?;
            (from != a.result).then(|| Flip {
                name: a.name.clone(),
                claim: a.claim.clone(),
                from,
                to: a.result,
                note: a.note.clone(),
            })
        })
        .collect()
}
