//! The daemon's ledger follower (issue 23): a thread of its own with a current-thread runtime
//! (a pass holds its store connection across reads, `ledger::follower`), making one pass per
//! intake every `[ledger] poll_interval_secs`, within each intake's read rate.

use crate::clock::Clock;
use crate::config::LedgerSettings;
use crate::ledger::client::LedgerClient;
use crate::ledger::follower;
use crate::net::Transport;
use crate::store::Store;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// What the follower thread reads on every pass (a reload replaces it).
#[derive(Clone)]
pub struct FollowerSettings {
    pub ledger: LedgerSettings,
    pub transport: Transport,
    /// Endpoints whose other witnesses' records are pulled (`pull_ledger` targets).
    pub pull_endpoints: Vec<String>,
}

/// Starts the follower on its own connection to the store; it stops when `stop` turns true
/// (checked at least every second).
pub fn spawn(
    store: Store,
    settings: Arc<RwLock<FollowerSettings>>,
    clock: Arc<dyn Clock>,
    stop: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("ledger-follower".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!(error = %e, "the ledger follower could not start");
                    return;
                }
            };
            rt.block_on(run(store, settings, clock, stop));
        })
}

async fn run(
    mut store: Store,
    settings: Arc<RwLock<FollowerSettings>>,
    clock: Arc<dyn Clock>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        let (ledger, transport, pulls) = {
            let s = settings.read().unwrap_or_else(|p| p.into_inner());
            (
                s.ledger.clone(),
                s.transport.clone(),
                s.pull_endpoints.clone(),
            )
        };
        if ledger.follow {
            pass_all(&mut store, &ledger, &transport, clock.as_ref()).await;
            for endpoint in &pulls {
                pull(&mut store, &transport, endpoint, clock.as_ref()).await;
            }
        }
        let wait = ledger.poll_interval.max(Duration::from_secs(1));
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        if *stop.borrow() {
            return;
        }
    }
}

/// One pass over every intake we filed with.
pub async fn pass_all(
    store: &mut Store,
    ledger: &LedgerSettings,
    transport: &Transport,
    clock: &dyn Clock,
) {
    let intakes = match crate::store::ledger::intakes(store.connection()) {
        Ok(i) => i,
        Err(e) => {
            tracing::error!(error = %e, "ledger follower: store not readable");
            return;
        }
    };
    for intake in intakes {
        let client = match LedgerClient::new(&intake, transport.clone()) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(intake, error = %e, "not followed");
                continue;
            }
        };
        let policy = ledger.policy_for(&intake);
        match follower::pass(&client, store, &intake, &policy, clock.now()).await {
            Ok(r) if r.findings_opened > 0 => tracing::warn!(
                intake,
                findings = r.findings_opened,
                "ledger follower opened findings (see `conduct-walker ledger status`)"
            ),
            Ok(r) if r.anchored > 0 || r.new_entries > 0 => tracing::info!(
                intake,
                reads = r.reads,
                new_entries = r.new_entries,
                anchored = r.anchored,
                verified = r.verified,
                "ledger followed"
            ),
            Ok(_) => {}
            Err(e) => tracing::error!(intake, error = %e, "ledger follower: store error"),
        }
    }
}

async fn pull(store: &mut Store, transport: &Transport, endpoint: &str, clock: &dyn Clock) {
    let intakes = crate::store::ledger::intakes(store.connection()).unwrap_or_default();
    for intake in intakes {
        let Ok(client) = LedgerClient::new(&intake, transport.clone()) else {
            continue;
        };
        // pass_all has just made this poll's follower pass over the intake.
        match crate::ledger::pull::pull_held(&client, store, &intake, endpoint, clock.now()).await {
            Ok(r) if r.kept > 0 => {
                tracing::info!(
                    intake,
                    endpoint,
                    kept = r.kept,
                    "other witnesses' records kept"
                )
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(intake, endpoint, error = %e, "ledger pull failed"),
        }
    }
}
