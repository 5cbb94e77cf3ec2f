//! The composition root: what a validated [`Config`] (or `walk`'s flags, their counterpart)
//! turns into. The signing identity, the transports, the pipeline and the alert delivery are
//! built here and nowhere else, so every face (`run`, `mcp`, `walk`, `config check`, `alerts
//! test`) signs, fetches and files the same way. `config` stays data plus validation; the
//! capabilities take what they need as arguments.

use crate::clock::Clock;
use crate::config::{Config, ConfigTransportError, KeySource};
use crate::net::Transport;
use crate::pipeline::{Pipeline, PipelineConfig};
use ed25519_dalek::SigningKey;
use std::path::PathBuf;
use std::sync::Arc;

/// Why a configuration could not be turned into a running pipeline.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("config {path}: {msg}")]
    Key { path: PathBuf, msg: String },
    #[error("config {path}: {source}")]
    Transport {
        path: PathBuf,
        source: ConfigTransportError,
    },
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("cannot set up the filing pipeline: {0}")]
    Pipeline(String),
    #[error("config {path}: cannot set up the witness face: {msg}")]
    WitnessFace { path: PathBuf, msg: String },
}

/// The key that signs records, and the `key_url` it signs under.
pub type Signing = Option<(SigningKey, Option<String>)>;

/// The signing key: the file or credential the config names; with neither, the `signing-key`
/// credential when `$CREDENTIALS_DIRECTORY` holds one (what `config check` reports "will be
/// used"); `None`: records are filed unsigned. Every face that takes a config signs with this
/// key.
pub fn signing_key(cfg: &Config) -> Result<Option<SigningKey>, SetupError> {
    Ok(signing_key_file(cfg)?.map(|(key, _)| key))
}

/// [`signing_key`] with the file it was read from.
fn signing_key_file(cfg: &Config) -> Result<Option<(SigningKey, PathBuf)>, SetupError> {
    let key_err = |msg: String| SetupError::Key {
        path: cfg.path.clone(),
        msg,
    };
    let path = match &cfg.key {
        KeySource::None => crate::witness::keys::resolve_key_path(None),
        other => other.path().map_err(key_err)?,
    };
    path.map(|p| match crate::witness::keys::load_signing_key(&p) {
        Ok(key) => Ok((key, p)),
        Err(e) => Err(key_err(e.to_string())),
    })
    .transpose()
}

/// [`signing_key`] with the `key_url` it signs under.
pub fn signing(cfg: &Config) -> Result<Signing, SetupError> {
    crate::witness::keys::signing_pair(signing_key(cfg)?, cfg.witness.key_url.clone()).map_err(
        |e| SetupError::Key {
            path: cfg.path.clone(),
            msg: e.to_string(),
        },
    )
}

/// The transport every walk, consent read and submission of this config uses.
pub fn transport(cfg: &Config) -> Result<Transport, ConfigTransportError> {
    let named = cfg.named_urls();
    let named: Vec<&str> = named.iter().map(String::as_str).collect();
    cfg.network_options().transport(&named)
}

/// The destination rules: private addresses only at the hosts the config names.
pub fn net_policy(cfg: &Config) -> Result<crate::net::NetPolicy, ConfigTransportError> {
    let named = cfg.named_urls();
    let named: Vec<&str> = named.iter().map(String::as_str).collect();
    cfg.network_options().policy(&named)
}

/// The trust roots the config adds to the system's (`network.extra_ca`).
pub fn extra_roots(
    cfg: &Config,
) -> Result<Vec<rustls_pki_types::CertificateDer<'static>>, ConfigTransportError> {
    cfg.network_options().roots()
}

/// The transport for `jku` fetches (card signatures): the config's destination rules and
/// roots, with the JWKS body cap and deadline.
pub fn jwks_transport(cfg: &Config) -> anyhow::Result<Transport> {
    let mut jwks = crate::card_signature::jwks_transport_config(net_policy(cfg)?);
    jwks.extra_roots = extra_roots(cfg)?;
    Ok(Transport::new(jwks)?)
}

/// How records are filed, whoever describes it (a config, or `walk`'s and `reveal`'s flags).
pub struct Filing {
    pub signing: Signing,
    /// File here instead of the card's `params.witness_intake`.
    pub intake_override: Option<String>,
    pub file_extra_walks: bool,
}

/// The pipeline that walks over `transport`, stores at `store_path` and files as `filing`.
pub fn filing_pipeline(
    filing: Filing,
    transport: Transport,
    store_path: PathBuf,
    clock: Arc<dyn Clock>,
) -> Result<Pipeline, crate::pipeline::PipelineError> {
    Pipeline::new(PipelineConfig {
        signing: filing.signing,
        intake_override: filing.intake_override,
        file_extra_walks: filing.file_extra_walks,
        ..PipelineConfig::new(transport, store_path, clock)
    })
}

/// The pipeline a config describes, over `transport` and the store at `store_path` (the daemon
/// shares its transport with the consent gate and opens the store first): its key, its
/// card-signature trust store, its alerts.
pub fn pipeline(
    cfg: &Config,
    transport: Transport,
    store_path: PathBuf,
    clock: Arc<dyn Clock>,
) -> Result<Pipeline, SetupError> {
    let filing = Filing {
        signing: signing(cfg)?,
        intake_override: cfg.intake.clone(),
        file_extra_walks: cfg.file_extra_walks,
    };
    // One trust store for every walk: its jku cache is shared.
    let trust = crate::card_signature::TrustStore::from_config(&cfg.file.card_signature)
        .map_err(|e| SetupError::Pipeline(format!("[card_signature]: {e}")))?;
    let pipeline = filing_pipeline(filing, transport, store_path, clock)
        .map_err(|e| SetupError::Pipeline(e.to_string()))?;
    let pipeline = if cfg.alerts.enabled() {
        pipeline.with_hook(Arc::new(crate::alerts::hook::AlertsHook::new(
            cfg.alerts.clone(),
        )))
    } else {
        pipeline
    };
    Ok(pipeline.with_trust(trust))
}

/// Each alert channel with its secrets read, and the delivery transport (the daemon at start,
/// `config check`, `alerts test`).
pub fn alert_delivery(cfg: &Config) -> Result<crate::alerts::deliver::Delivery, String> {
    let roots = extra_roots(cfg).map_err(|e| e.to_string())?;
    crate::alerts::deliver::delivery(&cfg.alerts, roots)
}

/// What the status pages show of a configuration: the witness (`public_key_b64` from its key,
/// when the face could read it) and the targets with their schedules.
pub fn page_context(cfg: &Config, public_key_b64: Option<String>) -> crate::pages::Context {
    crate::pages::Context {
        witness: Some(crate::pages::WitnessInfo {
            name: cfg.witness.name.clone(),
            vantage: cfg.witness.vantage.clone(),
            key_url: cfg.witness.key_url.clone(),
            public_key_b64,
        }),
        targets: cfg
            .targets
            .iter()
            .map(|t| {
                let schedule = t.schedule.clone();
                crate::pages::TargetInfo {
                    name: t.name.clone(),
                    origin: t.request.origin.clone(),
                    endpoint: t.request.endpoint.clone(),
                    schedule: t.schedule.pattern.clone(),
                    next_fire: crate::pages::NextFire(std::sync::Arc::new(move |now| {
                        schedule.next_after(now)
                    })),
                }
            })
            .collect(),
        limits: Vec::new(),
        rings: None,
    }
}

/// What the witness face (`[witness_face]`, issue 43) answers with and publishes: the responder
/// (the `[witness]` key and `key_url`, the configured vantage, a guarded measurer under
/// `[network]`'s private-network switch and extra CAs) and the two key documents.
pub struct WitnessResponder {
    pub responder: crate::witness_pool::responder::Responder,
    /// `/keys/witness.json`: the active key only (spec §8.4).
    pub key_document: serde_json::Value,
    /// `/.well-known/key-history.json` (spec §8.1): the active key alone until keys rotate.
    pub key_history: serde_json::Value,
}

/// The witness face's [`WitnessResponder`]; `None` when `[witness_face]` is off. The face
/// refuses to start without a key: a pool member that cannot sign cannot answer.
pub fn witness_responder(cfg: &Config) -> Result<Option<WitnessResponder>, SetupError> {
    use crate::witness_pool::{key_history, measure::Measurer, publish, responder::Responder};
    let Some(face) = &cfg.witness_face else {
        return Ok(None);
    };
    let face_err = |msg: String| SetupError::WitnessFace {
        path: cfg.path.clone(),
        msg,
    };
    let (key, key_file) = signing_key_file(cfg)?
        .ok_or_else(|| face_err("no signing key ([witness] key or key_credential)".into()))?;
    let key_url = face.member.key_url();
    let roots = extra_roots(cfg).map_err(|source| SetupError::Transport {
        path: cfg.path.clone(),
        source,
    })?;
    let measurer =
        Measurer::new(cfg.allow_private_network, roots).map_err(|e| face_err(e.to_string()))?;
    let public_b64 = crate::witness::keys::public_key_b64(&key);
    let vantage = Some(cfg.witness.vantage.clone());
    let responder = Responder::new(key, &key_url, vantage, measurer).map_err(face_err)?;
    let key_history = match stored_key_history(cfg)? {
        Some(history) => {
            refuse_a_revoked_key(&history, &public_b64).map_err(face_err)?;
            crate::witness_pool::rotation::document(&history, Some(&public_b64))
        }
        None => {
            let since = crate::witness_pool::rotation::key_since(&key_file);
            let entry = key_history::KeyEntry::active_witness(&public_b64, &key_url, &since);
            key_history::single_witness_key(&face.member.origin, entry)
        }
    };
    Ok(Some(WitnessResponder {
        key_document: publish::key_document(&public_b64, responder.signed_domain()),
        key_history,
        responder,
    }))
}

/// The key history the store keeps (`key rotate`, `key revoke`), as its hashed members; `None`
/// when the store does not exist yet or no change was ever recorded.
pub fn stored_key_history(cfg: &Config) -> Result<Option<serde_json::Value>, SetupError> {
    let Some(db) = cfg.database.as_deref().filter(|p| p.exists()) else {
        return Ok(None);
    };
    let store = crate::store::Store::open_read_only(db)?;
    Ok(crate::store::key_events::latest(store.connection())?.map(|e| e.history))
}

/// A revoked key is never served (spec §8.4): a face configured with one does not start.
fn refuse_a_revoked_key(history: &serde_json::Value, public_b64: &str) -> Result<(), String> {
    use crate::witness_pool::key_history::{KeyEntry, Status, find_witness_key};
    let keys: Vec<KeyEntry> = history["keys"]
        .as_array()
        .map(|keys| keys.iter().filter_map(KeyEntry::from_value).collect())
        .unwrap_or_default();
    match find_witness_key(&keys, public_b64) {
        Some(k) if k.status == Status::Revoked => Err(format!(
            "the configured key ({}) is revoked in the key history: it is never served; point [witness] key at the active key",
            k.kid
        )),
        _ => Ok(()),
    }
}

/// Where `key rotate` and `key revoke` find the key and what its history is about: the key
/// file the config names (`key_file` instead, for a systemd credential's source file), its
/// `key_url`, and the witness's origin (the face's, else `key_url`'s).
pub fn key_place(
    cfg: &Config,
    key_file: Option<&std::path::Path>,
) -> Result<crate::witness_pool::rotation::KeyPlace, SetupError> {
    let key_err = |msg: String| SetupError::Key {
        path: cfg.path.clone(),
        msg,
    };
    let key_file = match (key_file, &cfg.key) {
        (Some(file), _) => file.to_path_buf(),
        (None, KeySource::File(file)) => file.clone(),
        (None, KeySource::Credential(name)) => {
            return Err(key_err(format!(
                "the key is the systemd credential {name:?}, read-only to the service: rotate the file its LoadCredential= names, with --key FILE"
            )));
        }
        (None, KeySource::None) => {
            return Err(key_err(
                "no [witness] key to rotate (`conduct-walker keygen --out FILE` makes a first one)"
                    .into(),
            ));
        }
    };
    let key_url = cfg.witness.key_url.clone().ok_or_else(|| {
        key_err("no [witness] key_url: the key history names where each key was served".into())
    })?;
    let subject = match &cfg.witness_face {
        Some(face) => face.member.origin.clone(),
        None => url::Url::parse(&key_url)
            .map(|u| u.origin().ascii_serialization())
            .map_err(|e| key_err(format!("key_url {key_url:?}: {e}")))?,
    };
    Ok(crate::witness_pool::rotation::KeyPlace {
        key_file,
        key_url,
        subject,
    })
}

/// What reciprocal walks (witness-pool.md §6) are decided and walked with; `None` unless
/// `[witness_face] reciprocal = true`. Shared by the face (which decides) and the daemon's
/// reciprocal walker (which walks).
#[derive(Clone)]
pub struct ReciprocalSetup {
    /// The witness's guarded client: the caller's host vetted (§6.2 step 4), its consent file
    /// read (step 5, and again when the walk starts), its intake vetted (§6.3).
    pub measurer: crate::witness_pool::measure::Measurer,
    /// The walk's own client (the config's deadlines and caps, the witness's address guard)
    /// and where its record is filed.
    pub stranger: crate::pipeline::StrangerWalk,
    /// The face's origin host and the `key_url` host: a caller there is ourselves.
    pub own_hosts: Vec<String>,
    pub per_day: u32,
    pub within: std::time::Duration,
    /// What every reciprocal walk asks, but its origin: a full-mode a2a walk under our name
    /// that never carries `caller_card` (§6.3: no ping-pong).
    pub template: crate::walk::WalkRequest,
}

impl ReciprocalSetup {
    /// The walk of `origin`.
    pub fn request(&self, origin: &str) -> crate::walk::WalkRequest {
        crate::walk::WalkRequest {
            origin: origin.to_string(),
            ..self.template.clone()
        }
    }
}

/// The [`ReciprocalSetup`] of `cfg`.
pub fn reciprocal_setup(cfg: &Config) -> Result<Option<ReciprocalSetup>, SetupError> {
    use crate::witness_pool::{caller, measure::Measurer};
    let Some(face) = cfg.witness_face.as_ref().filter(|f| f.member.reciprocal) else {
        return Ok(None);
    };
    let transport_err = |source| SetupError::Transport {
        path: cfg.path.clone(),
        source,
    };
    let roots = extra_roots(cfg).map_err(transport_err)?;
    let face_err = |msg: String| SetupError::WitnessFace {
        path: cfg.path.clone(),
        msg,
    };
    let measurer =
        Measurer::new(cfg.allow_private_network, roots).map_err(|e| face_err(e.to_string()))?;
    // Nothing named: a stranger's hosts never get the configured targets' private allowance.
    let walk = cfg
        .network_options()
        .transport_config(&[])
        .map_err(transport_err)?;
    let ours = cfg
        .intake
        .clone()
        .unwrap_or_else(|| face.member.witness_intake.clone());
    let stranger =
        caller::stranger_walk(walk, &measurer, &ours).map_err(|e| transport_err(e.into()))?;
    let own_hosts = [
        Some(face.member.origin.as_str()),
        cfg.witness.key_url.as_deref(),
    ]
    .into_iter()
    .flatten()
    .filter_map(crate::reciprocal::host_of)
    .collect();
    let template = crate::walk::WalkRequest {
        origin: String::new(),
        endpoint: None,
        mode: crate::walk::Mode::A2a,
        wire: crate::walk::Wire::V1_0,
        witness: cfg.witness.clone(),
        vantage_limitation: cfg.vantage_limitation.clone(),
        contract_sha256: None,
        privacy: crate::walk::Privacy::Full,
        profile: cfg.file.witness.request_profile.into(),
        // §6.3: a reciprocal walk never asks to be walked back (no ping-pong).
        caller_card: None,
    };
    Ok(Some(ReciprocalSetup {
        measurer,
        stranger,
        own_hosts,
        per_day: face.reciprocal_per_day,
        within: face.reciprocal_within,
        template,
    }))
}

/// The §11.5 notifier; `None` with `[witness] notify = "never"`. Our own hosts (guard 5): the
/// face's origin and its card's intake, `key_url`, the daemon's listener (the status pages) and
/// the face's, and the intake records are filed to (`[witness] intake`; each record's own
/// intake is added per walk).
pub fn notifier(cfg: &Config) -> Result<Option<crate::notify::Notifier>, SetupError> {
    if cfg.notify == crate::notify::Policy::Never {
        return Ok(None);
    }
    let mut settings = crate::notify::Settings {
        policy: cfg.notify,
        allow_private_network: cfg.allow_private_network,
        intake_override: cfg.intake.clone(),
        ..Default::default()
    };
    let mut urls: Vec<&str> = Vec::new();
    urls.extend(cfg.witness.key_url.as_deref());
    urls.extend(cfg.intake.as_deref());
    let mut listeners: Vec<std::net::IpAddr> = cfg.listen.iter().map(|l| l.ip()).collect();
    if let Some(face) = &cfg.witness_face {
        urls.push(&face.member.origin);
        urls.push(&face.member.witness_intake);
        listeners.push(face.listen.ip());
    }
    for url in urls {
        settings.add_own_host(url);
    }
    settings
        .own_hosts
        .extend(listeners.iter().map(|ip| ip.to_string()));
    let roots = extra_roots(cfg).map_err(|source| SetupError::Transport {
        path: cfg.path.clone(),
        source,
    })?;
    let notifier =
        crate::notify::Notifier::new(settings, roots).map_err(|e| SetupError::Transport {
            path: cfg.path.clone(),
            source: e.into(),
        })?;
    Ok(Some(notifier))
}
