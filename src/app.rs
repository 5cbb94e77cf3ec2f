//! The composition root (issue 36): what a `Config` turns into for the capabilities, which never
//! read the configuration themselves.

use crate::config::Config;

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
