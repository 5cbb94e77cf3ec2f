//! The scheduler with a fake job runner: bounded concurrency, a target's walks never overlap,
//! shutdown cuts off walks past the grace period and records them as aborted, and a clock that
//! steps forward or back neither bursts missed runs nor repeats a fire.

use chrono::Utc;
use conduct_walker::config;
use conduct_walker::daemon::consent::ConsentGate;
use conduct_walker::daemon::db;
use conduct_walker::daemon::runner::{
    BoxFut, Drained, JobDone, JobFailed, JobRunner, RunnerStatus,
};
use conduct_walker::daemon::scheduler::{FireContext, Scheduler};
use conduct_walker::daemon::store::DaemonStore;
use conduct_walker::net::{NetPolicy, Transport, TransportConfig};
use conduct_walker::walk::WalkRequest;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Counts concurrent jobs overall and per origin; each job takes `hold`.
struct FakeRunner {
    hold: Duration,
    now: AtomicUsize,
    max: AtomicUsize,
    per_origin: Mutex<HashMap<String, (usize, usize)>>,
    finished: AtomicUsize,
}

impl FakeRunner {
    fn new(hold: Duration) -> Arc<FakeRunner> {
        Arc::new(FakeRunner {
            hold,
            now: AtomicUsize::new(0),
            max: AtomicUsize::new(0),
            per_origin: Mutex::new(HashMap::new()),
            finished: AtomicUsize::new(0),
        })
    }

    fn max_per_origin(&self) -> usize {
        self.per_origin
            .lock()
            .unwrap()
            .values()
            .map(|(_, m)| *m)
            .max()
            .unwrap_or(0)
    }
}

impl JobRunner for FakeRunner {
    fn run_job<'a>(
        &'a self,
        _target: &'a str,
        request: &'a WalkRequest,
        _submit: bool,
        _bind_task: Option<&'a str>,
    ) -> BoxFut<'a, Result<JobDone, JobFailed>> {
        Box::pin(async move {
            let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.max.fetch_max(n, Ordering::SeqCst);
            {
                let mut m = self.per_origin.lock().unwrap();
                let e = m.entry(request.origin.clone()).or_default();
                e.0 += 1;
                e.1 = e.1.max(e.0);
            }
            tokio::time::sleep(self.hold).await;
            self.per_origin
                .lock()
                .unwrap()
                .get_mut(&request.origin)
                .unwrap()
                .0 -= 1;
            self.now.fetch_sub(1, Ordering::SeqCst);
            let k = self.finished.fetch_add(1, Ordering::SeqCst);
            Ok(JobDone {
                record_id: k as i64,
                sha256: format!("{k:064x}"),
                outcome: Some("PASS".into()),
                submission: None,
                intake_url: None,
            })
        })
    }

    fn drain(&self) -> BoxFut<'_, Result<Drained, String>> {
        Box::pin(async { Ok(Drained::default()) })
    }

    fn status(&self) -> Result<RunnerStatus, String> {
        Ok(RunnerStatus::default())
    }
}

/// Targets at unreachable loopback ports: their consent reads fail (connection refused), which
/// states nothing, so they are walked, by the fake runner.
fn targets(n: usize, schedule: &str) -> Vec<config::Target> {
    let mut text =
        String::from("[witness]\nname = \"w\"\nvantage = \"v\"\n[daemon]\njitter_secs = 0\n");
    for i in 0..n {
        text.push_str(&format!(
            "[[target]]\nname = \"t{i}\"\norigin = \"https://127.0.0.1:{}\"\nschedule = \"{schedule}\"\n",
            1 + i
        ));
    }
    config::parse(Path::new("/tmp/walker.toml"), &text)
        .unwrap()
        .targets
}

async fn setup(
    runner: Arc<FakeRunner>,
    concurrency: usize,
    dir: &Path,
) -> (FireContext, DaemonStore) {
    let store = DaemonStore::open(&dir.join("walker.db")).unwrap();
    // The fake runner stores no records, so its record ids point nowhere: let daemon_walks
    // accept them (the real runner's ids are real rows; the binary tests check those).
    store
        .with(|c| Ok(c.execute_batch("PRAGMA foreign_keys = OFF")?))
        .await
        .unwrap();
    let transport = Transport::new(TransportConfig::new(NetPolicy::new(false))).unwrap();
    let clock: Arc<dyn conduct_walker::clock::Clock> = Arc::new(conduct_walker::clock::SystemClock);
    let consent = Arc::new(
        ConsentGate::new(transport, store.clone(), clock.clone())
            .await
            .unwrap(),
    );
    (
        FireContext {
            runner,
            consent,
            store: store.clone(),
            semaphore: Arc::new(Semaphore::new(concurrency)),
            clock,
            notifier: None,
        },
        store,
    )
}

/// Drive the scheduler as the daemon's loop does, for `run_for`.
async fn drive(s: &mut Scheduler, run_for: Duration) {
    let end = tokio::time::Instant::now() + run_for;
    while tokio::time::Instant::now() < end {
        s.fire_due(Utc::now());
        let wake = s
            .next_fire()
            .map(|(t, _)| (t - Utc::now()).to_std().unwrap_or_default())
            .unwrap_or(Duration::from_secs(1))
            .min(end.saturating_duration_since(tokio::time::Instant::now()));
        tokio::select! {
            _ = tokio::time::sleep(wake) => {}
            _ = s.join_next() => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let runner = FakeRunner::new(Duration::from_millis(600));
    let (ctx, _store) = setup(runner.clone(), 2, dir.path()).await;
    let mut s = Scheduler::new(targets(6, "* * * * * *"), ctx, Utc::now());
    drive(&mut s, Duration::from_millis(2500)).await;
    s.shutdown(Duration::from_secs(5)).await;
    assert_eq!(runner.max.load(Ordering::SeqCst), 2);
    assert!(runner.finished.load(Ordering::SeqCst) >= 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_targets_walks_never_overlap() {
    let dir = tempfile::tempdir().unwrap();
    // Each walk takes 2.5 s while the target fires every second.
    let runner = FakeRunner::new(Duration::from_millis(2500));
    let (ctx, store) = setup(runner.clone(), 4, dir.path()).await;
    let mut s = Scheduler::new(targets(1, "* * * * * *"), ctx, Utc::now());
    drive(&mut s, Duration::from_millis(4200)).await;
    let report = s.shutdown(Duration::from_secs(5)).await;
    assert_eq!(report.aborted, 0);
    assert_eq!(runner.max_per_origin(), 1);
    let walks = store.with(db::walks).await.unwrap();
    let skipped = walks
        .iter()
        .filter(|w| w.state == "skipped_overlap")
        .count();
    let done = walks.iter().filter(|w| w.state == "done").count();
    assert!(skipped >= 2, "{walks:?}");
    assert_eq!(done, runner.finished.load(Ordering::SeqCst), "{walks:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_past_grace_records_aborted_and_frees_waiting_fires() {
    let dir = tempfile::tempdir().unwrap();
    let runner = FakeRunner::new(Duration::from_secs(3600));
    // One slot for three targets: one walks, two wait for the slot.
    let (ctx, store) = setup(runner.clone(), 1, dir.path()).await;
    let mut s = Scheduler::new(targets(3, "* * * * * *"), ctx, Utc::now());
    let start = tokio::time::Instant::now();
    while runner.now.load(Ordering::SeqCst) == 0 {
        assert!(start.elapsed() < Duration::from_secs(10), "no walk started");
        s.fire_due(Utc::now());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let report = s.shutdown(Duration::from_millis(200)).await;
    // The waiting fires gave up when the slot pool closed; the walking one was cut off.
    assert_eq!(report.aborted, 1, "{report:?}");
    assert_eq!(runner.finished.load(Ordering::SeqCst), 0);
    let walks = store.with(db::walks).await.unwrap();
    let aborted: Vec<_> = walks.iter().filter(|w| w.state == "aborted").collect();
    assert_eq!(aborted.len(), 1, "{walks:?}");
    assert!(
        aborted[0]
            .detail
            .as_deref()
            .unwrap()
            .contains("cut off by shutdown")
    );
    assert!(walks.iter().all(|w| w.state != "running"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fire_left_running_by_a_crash_is_aborted_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let store = DaemonStore::open(&dir.path().join("walker.db")).unwrap();
    store
        .with(|c| {
            db::begin_walk(
                c,
                &db::WalkStart {
                    target: "t",
                    origin: "https://a.example",
                    endpoint: None,
                    scheduled_for: "2026-01-01T00:00:00.000Z",
                    now: "2026-01-01T00:00:00.000Z",
                },
            )
        })
        .await
        .unwrap();
    let n = store
        .with(|c| db::abort_leftovers(c, "2026-01-01T00:01:00.000Z"))
        .await
        .unwrap();
    assert_eq!(n, 1);
    let walks = store.with(db::walks).await.unwrap();
    assert_eq!(walks[0].state, "aborted");
    assert!(
        walks[0]
            .detail
            .as_deref()
            .unwrap()
            .contains("found running")
    );
}

/// Fire at `at` (a clock reading, not the real time) and wait until every started fire has
/// ended (its walk and its `daemon_walks` row), as the daemon's loop joins them.
async fn fire_at(s: &mut Scheduler, at: chrono::DateTime<Utc>) -> usize {
    let started = s.fire_due(at);
    tokio::time::timeout(Duration::from_secs(20), async {
        while s.in_flight() > 0 {
            s.join_next().await;
        }
    })
    .await
    .expect("fires did not end");
    started
}

// The clock steps (issue 14, section 4). The scheduler reads the clock only through the `now`
// it is given, so these drive it with readings a host whose clock jumps would give.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_stepped_forward_across_midnight_fires_each_target_once_not_every_missed_run() {
    let dir = tempfile::tempdir().unwrap();
    let runner = FakeRunner::new(Duration::from_millis(1));
    let (ctx, store) = setup(runner.clone(), 8, dir.path()).await;
    let t0: chrono::DateTime<Utc> = "2026-11-30T23:58:00Z".parse().unwrap();
    // Every minute at second 0: 2,160 runs are missed in the 36 hours the clock jumps.
    let mut s = Scheduler::new(targets(3, "0 * * * * *"), ctx, t0);
    let stepped = t0 + chrono::Duration::hours(36);
    assert_eq!(fire_at(&mut s, stepped).await, 3);
    assert_eq!(fire_at(&mut s, stepped).await, 0);
    let (next, _) = s.next_fire().unwrap();
    assert!(
        next > stepped && next <= stepped + chrono::Duration::minutes(1),
        "{next}"
    );
    assert_eq!(fire_at(&mut s, next).await, 3);
    s.shutdown(Duration::from_secs(5)).await;
    let walks = store.with(db::walks).await.unwrap();
    assert_eq!(walks.len(), 6, "{walks:?}");
    assert!(walks.iter().all(|w| w.state == "done"), "{walks:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_stepped_back_across_midnight_does_not_run_a_fire_again() {
    let dir = tempfile::tempdir().unwrap();
    let runner = FakeRunner::new(Duration::from_millis(1));
    let (ctx, store) = setup(runner.clone(), 8, dir.path()).await;
    let midnight: chrono::DateTime<Utc> = "2026-12-01T00:00:00Z".parse().unwrap();
    let mut s = Scheduler::new(
        targets(2, "0 * * * * *"),
        ctx,
        midnight - chrono::Duration::seconds(1),
    );
    assert_eq!(fire_at(&mut s, midnight).await, 2);
    // NTP steps the clock back ten minutes, into the previous UTC day: the fires of
    // 23:51 ... 00:00 are not run a second time; the next is the one after the last fire.
    let back = midnight - chrono::Duration::minutes(10);
    for t in [back, back + chrono::Duration::minutes(9), midnight] {
        assert_eq!(fire_at(&mut s, t).await, 0, "at {t}");
    }
    assert_eq!(
        s.next_fire().map(|(t, _)| t),
        Some(midnight + chrono::Duration::minutes(1))
    );
    assert_eq!(
        fire_at(&mut s, midnight + chrono::Duration::minutes(1)).await,
        2
    );
    s.shutdown(Duration::from_secs(5)).await;
    assert_eq!(store.with(db::walks).await.unwrap().len(), 4);
}
