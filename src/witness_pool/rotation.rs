//! Rotating and revoking the witness key (witness-pool.md §8.5), with its files and its store:
//! a new key where the config takes it from, the old one kept beside it (hard-linked, so with
//! its own mode 0600) under a name that says retired or revoked, and the KEY_HISTORY_v1 list
//! after the change recorded in the store's key events. No private key is ever printed or
//! logged: only public keys and file names leave this module.

use super::key_history::{self, KeyEntry, Retirement, Status};
use crate::store::StoreError;
use crate::store::key_events::{self, EventKind, KeyEvent, NewKeyEvent};
use crate::witness::keys::{KeyError, generate_key_file, load_signing_key, public_key_b64};
use ed25519_dalek::SigningKey;
use rusqlite::Connection;
use std::path::{Path, PathBuf};

/// Where the witness key lives and what its history is about.
#[derive(Debug, Clone)]
pub struct KeyPlace {
    /// The file the config reads the key from (for a systemd credential: the file its
    /// `LoadCredential=` names, which the service reads at its next start).
    pub key_file: PathBuf,
    /// `witness.key_url`: every key is served there in turn, never moved (§8.5 step 2).
    pub key_url: String,
    /// The history's `subject`: the witness's origin.
    pub subject: String,
}

#[derive(Debug, thiserror::Error)]
pub enum RotationError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{path}: {source}")]
    File {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "the key in {file} is {status} in the key history: the history's active key is another one; restore that key's file before rotating"
    )]
    NotActive { file: String, status: String },
    #[error("--compromised-from {0:?} is not an RFC 3339 time (e.g. 2026-12-01T00:00:00Z)")]
    BadTime(String),
}

/// What a rotation did.
#[derive(Debug)]
pub struct Rotated {
    pub new_key: SigningKey,
    pub old_public_b64: String,
    /// Where the old key is kept (mode 0600).
    pub old_kept_at: PathBuf,
    pub event: KeyEvent,
}

/// The stored list of keys, if any change was ever recorded.
pub fn stored_keys(conn: &Connection) -> Result<Option<(Vec<KeyEntry>, KeyEvent)>, StoreError> {
    let Some(event) = key_events::latest(conn)? else {
        return Ok(None);
    };
    Ok(Some((keys_of(&event.history), event)))
}

/// The key history's `since` for the key in `file`: the UTC day the file was last written,
/// never later than today. For a key in use before any history was kept nothing knows the day
/// better; an earlier day only widens what the key may have signed, a later one would disown
/// its own first signatures (§8.3 rule 5).
pub fn key_since(file: &Path) -> String {
    let now = std::time::SystemTime::now();
    let written = std::fs::metadata(file)
        .and_then(|m| m.modified())
        .map_or(now, |t| t.min(now));
    chrono::DateTime::<chrono::Utc>::from(written)
        .format("%Y-%m-%d")
        .to_string()
}

/// The stored list, first recording `key` as the active key when nothing was ever recorded
/// (a witness that ran before histories were kept). A key that the list has as retired or
/// revoked is refused: rotating from it would make a stale key active again.
pub fn current_keys(
    conn: &Connection,
    place: &KeyPlace,
    key: &SigningKey,
    now: &str,
) -> Result<Vec<KeyEntry>, RotationError> {
    let public = public_key_b64(key);
    if let Some((keys, _)) = stored_keys(conn)? {
        return match key_history::find_witness_key(&keys, &public) {
            Some(k) if k.status == Status::Active => Ok(keys),
            found => Err(RotationError::NotActive {
                file: place.key_file.display().to_string(),
                status: found.map_or("not listed", |k| k.status.as_str()).into(),
            }),
        };
    }
    let since = key_since(&place.key_file);
    let recorded = NewKeyEvent {
        at: now.to_string(),
        kind: EventKind::Recorded,
        public_key_b64: public.clone(),
        left_b64: None,
        compromised_from: None,
        reason: None,
    };
    let event = key_events::append(conn, &recorded, |commit| {
        let mut entry = KeyEntry::active_witness(&public, &place.key_url, &since);
        entry.since_commit = Some(commit.to_string());
        key_history::hashed_members(&place.subject, &[entry])
    })?;
    Ok(keys_of(&event.history))
}

/// The entries of a stored history's `keys`.
fn keys_of(history: &serde_json::Value) -> Vec<KeyEntry> {
    history["keys"]
        .as_array()
        .map(|keys| keys.iter().filter_map(KeyEntry::from_value).collect())
        .unwrap_or_default()
}

fn file_err(path: &Path) -> impl FnOnce(std::io::Error) -> RotationError + '_ {
    move |source| RotationError::File {
        path: path.display().to_string(),
        source,
    }
}

/// Rotate (`Retirement::Retired`) or revoke the key in `place.key_file` at `now` (RFC 3339
/// UTC): the new key replaces the file in one rename, the old one stays beside it, and the
/// history after the change is recorded. A failure to record puts the old key back.
pub fn rotate(
    conn: &Connection,
    place: &KeyPlace,
    retirement: &Retirement,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Rotated, RotationError> {
    if let Retirement::Revoked {
        compromised_from, ..
    } = retirement
        && chrono::DateTime::parse_from_rfc3339(compromised_from).is_err()
    {
        return Err(RotationError::BadTime(compromised_from.clone()));
    }
    let now_text = crate::clock::walked_at(now);
    // Refuses a key file others can read, as every reader of it does.
    let old = load_signing_key(&place.key_file)?;
    let old_public = public_key_b64(&old);
    let keys = current_keys(conn, place, &old, &now_text)?;
    let (status, kind) = match retirement {
        Retirement::Retired => ("retired", EventKind::Rotated),
        Retirement::Revoked { .. } => ("revoked", EventKind::Revoked),
    };
    let kid = key_history::witness_kid(&old_public);
    let kept = sibling(&place.key_file, &format!("{status}-{kid}"));
    let staged = sibling(&place.key_file, "new");
    // A staged key left by an interrupted rotation was never used nor recorded.
    let _ = std::fs::remove_file(&staged);
    let new_key = generate_key_file(&staged)?;
    if let Err(e) = keep_old(&place.key_file, &kept) {
        let _ = std::fs::remove_file(&staged);
        return Err(e);
    }
    std::fs::rename(&staged, &place.key_file).map_err(file_err(&place.key_file))?;
    let new_public = public_key_b64(&new_key);
    let change = NewKeyEvent {
        at: now_text.clone(),
        kind,
        public_key_b64: new_public.clone(),
        left_b64: Some(old_public.clone()),
        compromised_from: match retirement {
            Retirement::Revoked {
                compromised_from, ..
            } => Some(compromised_from.clone()),
            Retirement::Retired => None,
        },
        reason: match retirement {
            Retirement::Revoked { reason, .. } => Some(reason.clone()),
            Retirement::Retired => None,
        },
    };
    let today = now.format("%Y-%m-%d").to_string();
    let recorded = key_events::append(conn, &change, |commit| {
        let mut entry = KeyEntry::active_witness(&new_public, &place.key_url, &today);
        entry.since_commit = Some(commit.to_string());
        let after = key_history::rotate(&keys, entry, retirement, &now_text);
        key_history::hashed_members(&place.subject, &after)
    });
    let event = match recorded {
        Ok(event) => event,
        Err(e) => {
            // The history could not say so: the old key goes back, nothing changed.
            let _ = std::fs::rename(&kept, &place.key_file);
            return Err(e.into());
        }
    };
    Ok(Rotated {
        new_key,
        old_public_b64: old_public,
        old_kept_at: kept,
        event,
    })
}

/// Keep the old key at `kept`: a hard link (the same file, so the same mode), or where the
/// file system has none, a copy (which `std::fs::copy` creates with the source's mode).
fn keep_old(file: &Path, kept: &Path) -> Result<(), RotationError> {
    if std::fs::hard_link(file, kept).is_ok() {
        return Ok(());
    }
    if kept.exists() {
        // Never overwrite a kept key (the link failed for that reason).
        return Err(RotationError::File {
            path: kept.display().to_string(),
            source: std::io::ErrorKind::AlreadyExists.into(),
        });
    }
    std::fs::copy(file, kept).map(drop).map_err(file_err(kept))
}

/// `witness.pem` → `witness.pem.<suffix>`, in the same directory (a rename there is atomic).
fn sibling(file: &Path, suffix: &str) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{suffix}"));
    file.with_file_name(name)
}

/// The served document of the stored list: the history's members and hash, with whether the
/// key the server signs with (`configured`) is the list's active key.
pub fn document(history: &serde_json::Value, configured: Option<&str>) -> serde_json::Value {
    let subject = history["subject"].as_str().unwrap_or_default();
    let keys = keys_of(history);
    let env = key_history::EnvConsistency {
        key_use: "witness".into(),
        configured: configured.is_some(),
        matches_active: configured.map(|b64| {
            key_history::find_witness_key(&keys, b64).is_some_and(|k| k.status == Status::Active)
        }),
    };
    key_history::document(subject, &keys, &[env], &[])
}

/// What the key history makes of one signature the store kept (§8.3).
#[derive(Debug, Clone)]
pub struct Attribution {
    pub record_id: i64,
    /// `None` once the row is archived.
    pub sha256: Option<String>,
    pub signature: crate::store::signatures::RecordSignature,
    /// The key's label in the history, `None` when it is not listed.
    pub kid: Option<String>,
    pub status: Option<Status>,
    /// §8.3's answer with no independent proof of time (the store's own clock is the
    /// operator's, which rule 4 does not accept).
    pub attributable: Option<bool>,
    /// Signed by a revoked key at or after its `compromised_from` (by the store's clock): what
    /// a thief could have signed. Reported, never passed.
    pub after_compromise: bool,
    /// Signed by a retired key after its `retired_at` (by the store's clock): a process still
    /// signing with the old key, not reloaded. Said, not a finding: the rule reads no proof.
    pub after_retirement: bool,
}

impl Attribution {
    /// One line: which key signed, when, and what the history says of it.
    pub fn line(&self) -> String {
        let sha = self
            .sha256
            .as_deref()
            .map_or("archived", |s| &s[..12.min(s.len())]);
        let key = self.kid.clone().unwrap_or_else(|| {
            format!(
                "unlisted key {}",
                key_history::witness_kid(&self.signature.public_key_b64)
            )
        });
        let words = match (self.status, self.attributable, self.after_compromise) {
            (_, _, true) => "REVOKED: signed at or after compromised_from; not attributable",
            (Some(Status::Active), Some(true), _) => "attributable (active key)",
            (Some(Status::Retired), Some(true), _) => {
                "attributable (retired key, rotated out without compromise)"
            }
            (Some(Status::Revoked), _, _) => {
                "not attributable without an independent proof of time before compromised_from (revoked key)"
            }
            (None, _, _) => "the key history cannot say (key not listed)",
            _ => "not attributable",
        };
        let note = if self.after_retirement {
            "; signed after the key's retired_at: a process still signs with the retired key (reload it)"
        } else {
            ""
        };
        format!(
            "record {} {sha}: signed by {key} at {} ({}): {words}{note}",
            self.record_id, self.signature.signed_at, self.signature.made_at
        )
    }
}

/// Every kept signature judged by the stored key history; `None` when no history was ever
/// recorded (nothing to judge by).
pub fn attribute(conn: &Connection) -> Result<Option<Vec<Attribution>>, StoreError> {
    let Some((keys, _)) = stored_keys(conn)? else {
        return Ok(None);
    };
    let judged = crate::store::signatures::all(conn)?
        .into_iter()
        .map(|(record_id, sha256, signature)| {
            let entry = key_history::find_witness_key(&keys, &signature.public_key_b64);
            let after_compromise = entry.is_some_and(|k| {
                k.status == Status::Revoked
                    && k.compromised_from
                        .as_deref()
                        .is_none_or(|from| at_or_after(&signature.signed_at, from))
            });
            let after_retirement = entry.is_some_and(|k| {
                k.status == Status::Retired
                    && k.retired_at
                        .as_deref()
                        .is_some_and(|at| !at_or_after(at, &signature.signed_at))
            });
            Attribution {
                record_id,
                sha256,
                after_retirement,
                kid: entry.map(|k| k.kid.clone()),
                status: entry.map(|k| k.status),
                attributable: key_history::attributable(entry.map(key_history::Standing::of), None),
                after_compromise,
                signature,
            }
        })
        .collect();
    Ok(Some(judged))
}

/// Whether RFC 3339 time `t` is at or after `from`; a time that does not parse counts as
/// after (a report too many, never a forged signature passed).
fn at_or_after(t: &str, from: &str) -> bool {
    match (
        chrono::DateTime::parse_from_rfc3339(t),
        chrono::DateTime::parse_from_rfc3339(from),
    ) {
        (Ok(t), Ok(from)) => t >= from,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(status: Status, signed_at: &str) -> Attribution {
        Attribution {
            record_id: 3,
            sha256: Some("ab".repeat(32)),
            signature: crate::store::signatures::RecordSignature {
                public_key_b64: "AA==".into(),
                signature_b64: "AA==".into(),
                signed_at: signed_at.into(),
                made_at: "filing".into(),
            },
            kid: Some("witness-0123abcd".into()),
            status: Some(status),
            attributable: Some(status != Status::Revoked),
            after_compromise: false,
            after_retirement: false,
        }
    }

    #[test]
    fn each_line_names_the_record_the_key_and_the_rule() {
        let retired = Attribution {
            after_retirement: true,
            ..judged(Status::Retired, "2026-12-02T00:00:00Z")
        };
        assert_eq!(
            retired.line(),
            "record 3 abababababab: signed by witness-0123abcd at 2026-12-02T00:00:00Z (filing): \
             attributable (retired key, rotated out without compromise); signed after the key's \
             retired_at: a process still signs with the retired key (reload it)"
        );
        let leaked = Attribution {
            after_compromise: true,
            ..judged(Status::Revoked, "2026-12-02T00:00:00Z")
        };
        assert!(
            leaked
                .line()
                .ends_with("REVOKED: signed at or after compromised_from; not attributable")
        );
        let unlisted = Attribution {
            kid: None,
            status: None,
            attributable: None,
            ..judged(Status::Active, "2026-12-02T00:00:00Z")
        };
        assert!(
            unlisted.line().contains("unlisted key witness-"),
            "{}",
            unlisted.line()
        );
        assert!(
            unlisted
                .line()
                .ends_with("the key history cannot say (key not listed)")
        );
    }

    #[test]
    fn times_compare_as_instants_and_a_garbled_one_counts_as_after() {
        assert!(at_or_after(
            "2026-09-15T08:59:59+09:00",
            "2026-09-14T23:00:00Z"
        ));
        assert!(!at_or_after(
            "2026-09-15T08:59:59+09:00",
            "2026-09-15T00:00:00Z"
        ));
        assert!(at_or_after("yesterday", "2026-09-15T00:00:00Z"));
    }
}
