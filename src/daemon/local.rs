//! A runner that walks, signs and stores but files nothing: used until the filing pipeline is
//! wired in, and by tests that exercise the scheduler against real agents without an intake.

use super::runner::{BoxFut, Drained, JobDone, JobRunner, RunnerStatus};
use super::store::DaemonStore;
use crate::net::Transport;
use crate::store::{KeptFull, NewRecord};
use crate::walk::WalkRequest;
use ed25519_dalek::SigningKey;

pub struct StoreOnlyRunner {
    pub transport: Transport,
    pub store: DaemonStore,
    pub signing: Option<SigningKey>,
}

impl JobRunner for StoreOnlyRunner {
    fn run_job<'a>(
        &'a self,
        request: &'a WalkRequest,
        submit: bool,
    ) -> BoxFut<'a, Result<JobDone, String>> {
        Box::pin(async move {
            let outcome = crate::cli::walk::walk_once(&self.transport, request).await;
            let signed = self
                .signing
                .as_ref()
                .map(|k| crate::witness::sign(&outcome.canonical, k));
            let rec = NewRecord {
                canonical: outcome.canonical.clone(),
                signature_b64: signed.as_ref().map(|s| s.signature_b64.clone()),
                public_key_b64: signed.map(|s| s.public_key_b64),
                kept_full: outcome.kept.clone().map(|(canonical, salt_hex)| KeptFull {
                    canonical,
                    salt_hex,
                }),
            };
            let stored = self
                .store
                .with_store(move |s| s.insert_record(&rec))
                .await
                .map_err(|e| format!("cannot store the record: {e}"))?;
            Ok(JobDone {
                record_id: stored.row.id,
                sha256: stored.row.sha256,
                outcome: Some(outcome.verdict.outcome().to_string())
                    .filter(|_| stored.row.meta.verdict.is_some()),
                submission: submit.then(|| "kept_local".to_string()),
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
