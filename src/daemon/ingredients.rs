//! Everything one configuration turns into, built in one place before it replaces the running
//! one. The config itself stays plain data: [`ingredients`] is where the daemon asks the
//! composition root (`crate::app`: transport, pipeline, key, alert delivery) to build from it,
//! once per load or reload, and every service takes what it needs from the result.

use super::DaemonError;
use super::ledger_task::FollowerSettings;
use super::runner::JobRunner;
use crate::alerts::deliver::Delivery;
use crate::clock::Clock;
use crate::config::Config;
use crate::net::Transport;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(super) struct Ingredients {
    pub config: Config,
    /// One transport for the walks, the consent reads and the ledger follower.
    pub transport: Transport,
    /// The config's own pipeline (it opens its own connection to the same store: WAL).
    pub runner: Arc<dyn JobRunner>,
    /// What the status pages show of this configuration.
    pub pages: crate::pages::Context,
    /// The alert channels with their secrets read; `None` when `[alerts]` has no channel or
    /// cannot be set up (said in the log). Taken by the alert service when it starts them.
    pub alert_delivery: Option<Delivery>,
    pub follower: FollowerSettings,
    /// Where archived segments go.
    pub archive_dir: PathBuf,
    /// What `[witness_face]` answers with and publishes; `None` when the face is off. Taken by
    /// the face when it starts or reloads.
    pub witness_face: Option<crate::app::WitnessResponder>,
    /// How reciprocal walks are decided and walked; `None` unless `[witness_face] reciprocal`.
    pub reciprocal: Option<crate::app::ReciprocalSetup>,
    /// Sends §11.5 notifications after scheduled walks; `None` with `[witness] notify = "never"`.
    pub notifier: Option<Arc<crate::notify::Notifier>>,
}

/// Build what `config` describes for a daemon whose store is at `db_path`. A transport or a
/// pipeline that cannot be built refuses the configuration; alerts that cannot be set up are
/// logged and left off (their rows wait for a config that can send them).
pub(super) fn ingredients(
    config: Config,
    db_path: &Path,
    clock: Arc<dyn Clock>,
) -> Result<Ingredients, DaemonError> {
    let transport =
        crate::app::transport(&config).map_err(|source| crate::app::SetupError::Transport {
            path: config.path.clone(),
            source,
        })?;
    let runner: Arc<dyn JobRunner> = Arc::new(crate::app::pipeline(
        &config,
        transport.clone(),
        db_path.to_path_buf(),
        clock,
    )?);
    let pages = page_context(&config);
    let alert_delivery = alert_delivery(&config);
    let follower = FollowerSettings {
        ledger: config.ledger.clone(),
        transport: transport.clone(),
        pull_endpoints: pull_endpoints(&config),
    };
    let archive_dir = config.retention.dir(db_path);
    // A face that cannot sign or measure refuses the configuration, like a pipeline that
    // cannot be built: at start the daemon does not run, at a reload the running one is kept.
    let witness_face = crate::app::witness_responder(&config)?;
    let reciprocal = crate::app::reciprocal_setup(&config)?;
    let notifier = crate::app::notifier(&config)?.map(Arc::new);
    Ok(Ingredients {
        config,
        transport,
        runner,
        pages,
        alert_delivery,
        follower,
        archive_dir,
        witness_face,
        reciprocal,
        notifier,
    })
}

/// What the status pages show of a configuration: the witness (with its public key, when the
/// key can be read) and the targets' schedules.
fn page_context(cfg: &Config) -> crate::pages::Context {
    use base64::Engine as _;
    let public = crate::app::signing_key(cfg)
        .ok()
        .flatten()
        .map(|k| base64::engine::general_purpose::STANDARD.encode(k.verifying_key().to_bytes()));
    crate::app::page_context(cfg, public)
}

fn alert_delivery(cfg: &Config) -> Option<Delivery> {
    if !cfg.alerts.enabled() {
        return None;
    }
    match crate::app::alert_delivery(cfg) {
        Ok(d) => Some(d),
        Err(e) => {
            tracing::error!(error = %e, "alerts: cannot be set up; no alert is delivered until the config is fixed");
            None
        }
    }
}

/// The endpoints of `pull_ledger` targets, whose other witnesses' records the follower pulls.
fn pull_endpoints(cfg: &Config) -> Vec<String> {
    cfg.targets
        .iter()
        .filter(|t| t.pull_ledger)
        .filter_map(|t| t.request.endpoint.clone())
        .collect()
}
