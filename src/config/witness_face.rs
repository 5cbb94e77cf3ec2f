//! `[witness_face]` (issue 43): the daemon's face to the witness pool, and its checks. A face
//! the pool's readers would reject, or whose key URL is not the one it serves, is refused here
//! with the line that says so, never discovered by a requester.

use super::{Found, KeySource, WitnessSection};
use crate::witness_pool::publish::{DEFAULT_INTAKE, Member};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::time::Duration;
use toml::Spanned;

/// Measurements at once when `max_in_flight` is not set.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 2;
/// The longest `max_in_flight`: each measurement holds up to nine connections.
pub const MAX_IN_FLIGHT: usize = 64;
/// §11.6: a caller is walked back within a day.
pub const DEFAULT_RECIPROCAL_WITHIN: &str = "24h";

/// `[witness_face]`: answer the witness pool's requests (`POST /a2a`) and serve what a pool
/// member publishes (card, consent file, key, key history). Off when the section is absent.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WitnessFaceSection {
    /// IP:PORT the face listens on, plain HTTP (e.g. 127.0.0.1:9466): the operator's TLS
    /// reverse proxy serves it as `origin`. Never the status pages' listener.
    #[schemars(with = "String")]
    pub listen: Spanned<String>,
    /// The https origin the proxy serves the face at (e.g. https://witness.example.org): the
    /// card's `url` is `<origin>/a2a` and `[witness] key_url` must be
    /// `<origin>/keys/witness.json`.
    #[schemars(with = "String")]
    pub origin: Spanned<String>,
    /// Declare `witness_policy.reciprocal` (card and consent file) and walk callers back
    /// (§11.6).
    #[serde(default)]
    pub reciprocal: bool,
    /// How soon a caller is walked back (e.g. "24h", "90s").
    #[serde(default = "default_reciprocal_within")]
    #[schemars(with = "String")]
    pub reciprocal_within: Spanned<String>,
    /// Reciprocal walks queued per UTC day at most (default 20, at most 40): the intake stores
    /// 50 records a day for our domain, shared with every scheduled walk.
    #[serde(default = "default_reciprocal_per_day")]
    #[schemars(with = "u32")]
    pub reciprocal_per_day: Spanned<u32>,
    /// Measurements at once; a request past it is answered 429 with `retry-after: 60`.
    #[serde(default = "default_max_in_flight")]
    #[schemars(with = "usize")]
    pub max_in_flight: Spanned<usize>,
    /// The card's `name`; default "conduct-walker witness (<host>)".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The card's compensation claim, `paid_by` (one of the conduct extension's values).
    #[serde(default = "default_paid_by")]
    pub paid_by: String,
}

fn default_reciprocal_within() -> Spanned<String> {
    Spanned::new(0..0, DEFAULT_RECIPROCAL_WITHIN.to_string())
}

fn default_reciprocal_per_day() -> Spanned<u32> {
    Spanned::new(0..0, crate::reciprocal::DEFAULT_DAILY_BUDGET)
}

fn default_max_in_flight() -> Spanned<usize> {
    Spanned::new(0..0, DEFAULT_MAX_IN_FLIGHT)
}

fn default_paid_by() -> String {
    "public".into()
}

/// `[witness_face]`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessFace {
    pub listen: SocketAddr,
    /// The documents' inputs (origin without a trailing `/`).
    pub member: Member,
    pub reciprocal_within: Duration,
    pub reciprocal_per_day: u32,
    pub max_in_flight: usize,
}

/// Check the section against `[witness]` (the key that signs, the key URL it serves) and the
/// daemon's own listener.
pub(super) fn validate(
    face: &WitnessFaceSection,
    witness: &WitnessSection,
    key: &KeySource,
    daemon_listen: Option<SocketAddr>,
    found: &mut Found,
) -> Option<WitnessFace> {
    let listen = listen_of(face, daemon_listen, found);
    let origin = origin_of(face, found);
    let reciprocal_within = within_of(face, found);
    let reciprocal_per_day = *face.reciprocal_per_day.get_ref();
    let most = crate::reciprocal::MAX_DAILY_BUDGET;
    if !(1..=most).contains(&reciprocal_per_day) {
        found.at(
            face.reciprocal_per_day.span(),
            format!(
                "must be 1 to {most}: the intake stores 50 records a day for our domain, and the scheduled walks need their share"
            ),
        );
    }
    let max_in_flight = *face.max_in_flight.get_ref();
    if !(1..=MAX_IN_FLIGHT).contains(&max_in_flight) {
        found.at(
            face.max_in_flight.span(),
            format!("must be 1 to {MAX_IN_FLIGHT}"),
        );
    }
    let origin = origin?;
    let host = url::Url::parse(&origin)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    let member = Member {
        reciprocal: face.reciprocal,
        witness_intake: witness
            .intake
            .as_ref()
            .map_or(DEFAULT_INTAKE.to_string(), |i| i.get_ref().clone()),
        name: face
            .name
            .clone()
            .unwrap_or_else(|| format!("conduct-walker witness ({host})")),
        paid_by: face.paid_by.clone(),
        origin,
    };
    check_key(face, witness, key, &member, found);
    for problem in crate::witness_pool::publish::card_problems(&member, &member.card()) {
        found.at(
            face.origin.span(),
            format!("the face's card would be rejected: {problem}"),
        );
    }
    Some(WitnessFace {
        listen: listen?,
        member,
        reciprocal_within: reciprocal_within?,
        reciprocal_per_day,
        max_in_flight,
    })
}

fn listen_of(
    face: &WitnessFaceSection,
    daemon_listen: Option<SocketAddr>,
    found: &mut Found,
) -> Option<SocketAddr> {
    match face.listen.get_ref().parse::<SocketAddr>() {
        Ok(a) if Some(a) == daemon_listen => {
            found.at(
                face.listen.span(),
                format!("{a} is the status pages' listener; the face needs one of its own"),
            );
            None
        }
        Ok(a) => Some(a),
        Err(_) => {
            found.at(
                face.listen.span(),
                format!(
                    "{:?} is not IP:PORT (e.g. 127.0.0.1:9466)",
                    face.listen.get_ref()
                ),
            );
            None
        }
    }
}

/// An https origin: scheme, host and port only (a trailing `/` is dropped).
fn origin_of(face: &WitnessFaceSection, found: &mut Found) -> Option<String> {
    let raw = face.origin.get_ref().trim_end_matches('/');
    match crate::net::https_url(raw) {
        Err(why) => {
            found.at(face.origin.span(), why);
            None
        }
        Ok(u) if u.path() != "/" || u.query().is_some() || u.fragment().is_some() => {
            found.at(
                face.origin.span(),
                "an origin is scheme, host and port only (no path, query or fragment)".into(),
            );
            None
        }
        Ok(_) => Some(raw.to_string()),
    }
}

fn within_of(face: &WitnessFaceSection, found: &mut Found) -> Option<Duration> {
    match humantime::parse_duration(face.reciprocal_within.get_ref()) {
        Ok(d) if d >= Duration::from_secs(1) && d <= Duration::from_secs(7 * 86_400) => Some(d),
        Ok(_) => {
            found.at(
                face.reciprocal_within.span(),
                "must be from 1s to 7d".into(),
            );
            None
        }
        Err(e) => {
            found.at(
                face.reciprocal_within.span(),
                format!("is not a duration like \"24h\" or \"90s\" ({e})"),
            );
            None
        }
    }
}

/// The face signs with `[witness]`'s key and serves it at `<origin>/keys/witness.json`, the
/// `key_url` every signed observation and walk record names.
fn check_key(
    face: &WitnessFaceSection,
    witness: &WitnessSection,
    key: &KeySource,
    member: &Member,
    found: &mut Found,
) {
    if *key == KeySource::None {
        found.at(
            face.origin.span(),
            "the witness face signs every observation: set witness.key or witness.key_credential"
                .into(),
        );
    }
    let want = member.key_url();
    match &witness.key_url {
        Some(u) if u.get_ref() == &want => {}
        Some(u) => found.at(
            u.span(),
            format!(
                "with [witness_face], key_url must be {want} (the face serves the key there, and every reader looks for it there)"
            ),
        ),
        None => found.at(
            face.origin.span(),
            format!("with [witness_face], set [witness] key_url = \"{want}\""),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    const WITNESS: &str = r#"[witness]
name = "w"
vantage = "v"
key = "/etc/conduct-walker/signing-key.pem"
key_url = "https://witness.example.org/keys/witness.json"
"#;

    fn parse(face: &str) -> Result<crate::config::Config, String> {
        let text = format!("{WITNESS}\n[witness_face]\n{face}");
        crate::config::parse(Path::new("/etc/conduct-walker/walker.toml"), &text)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_face_at_its_origin_with_its_key_url_is_taken_with_its_defaults() {
        let cfg = parse("listen = \"127.0.0.1:9466\"\norigin = \"https://witness.example.org/\"\n")
            .unwrap();
        let face = cfg.witness_face.unwrap();
        assert_eq!(face.member.origin, "https://witness.example.org");
        assert_eq!(
            face.reciprocal_within,
            std::time::Duration::from_secs(86_400)
        );
        assert_eq!(face.max_in_flight, 2);
        assert!(!face.member.reciprocal);
        assert_eq!(
            face.member.name,
            "conduct-walker witness (witness.example.org)"
        );
        let cfg = parse(
            "listen = \"127.0.0.1:9466\"\norigin = \"https://witness.example.org\"\nreciprocal = true\nreciprocal_within = \"90s\"\nmax_in_flight = 4\n",
        )
        .unwrap();
        let face = cfg.witness_face.unwrap();
        assert_eq!(face.reciprocal_within, std::time::Duration::from_secs(90));
        assert!(face.member.reciprocal && face.max_in_flight == 4);
    }

    #[test]
    fn each_mistake_is_named_on_its_line() {
        for (face, says) in [
            (
                "listen = \"127.0.0.1:9466\"\norigin = \"https://other.example.org\"\n",
                "key_url must be https://other.example.org/keys/witness.json",
            ),
            (
                "listen = \"127.0.0.1:9464\"\norigin = \"https://witness.example.org\"\n",
                "the status pages' listener",
            ),
            (
                "listen = \"nine\"\norigin = \"https://witness.example.org\"\n",
                "is not IP:PORT",
            ),
            (
                "listen = \"127.0.0.1:9466\"\norigin = \"https://witness.example.org/a2a\"\n",
                "scheme, host and port only",
            ),
            (
                "listen = \"127.0.0.1:9466\"\norigin = \"http://witness.example.org\"\n",
                "only https",
            ),
            (
                "listen = \"127.0.0.1:9466\"\norigin = \"https://witness.example.org\"\nreciprocal_within = \"soon\"\n",
                "is not a duration",
            ),
            (
                "listen = \"127.0.0.1:9466\"\norigin = \"https://witness.example.org\"\nmax_in_flight = 0\n",
                "must be 1 to 64",
            ),
            (
                "listen = \"127.0.0.1:9466\"\norigin = \"https://witness.example.org\"\npaid_by = \"nobody\"\n",
                "the face's card would be rejected",
            ),
        ] {
            let err = parse(face).unwrap_err();
            assert!(err.contains(says), "{face}\n{err}");
        }
    }

    #[test]
    fn a_face_without_a_key_is_refused() {
        let text = "[witness]\nname = \"w\"\nvantage = \"v\"\n\n[witness_face]\nlisten = \"127.0.0.1:9466\"\norigin = \"https://witness.example.org\"\n";
        let err = crate::config::parse(Path::new("/tmp/walker.toml"), text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("signs every observation"), "{err}");
        assert!(err.contains("set [witness] key_url"), "{err}");
    }
}
