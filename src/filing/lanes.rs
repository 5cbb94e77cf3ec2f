//! Lane arithmetic of the witness intake (spec §6.1, §6.4, §6.5). Pure: time comes in as a value.

use chrono::{DateTime, Duration, NaiveTime, Utc};
use serde_json::Value;

/// The intake's stated limits; spec constants unless `GET /witness` says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum `record_canonical` length in UTF-16 code units (JavaScript string length).
    pub max_bytes: usize,
    pub daily_global: u32,
    /// The address lane (unsigned and address-signed records).
    pub daily_per_ip: u32,
    /// The domain lane, per signed domain.
    pub daily_per_domain: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 65_536,
            daily_global: 500,
            daily_per_ip: 5,
            daily_per_domain: 50,
        }
    }
}

/// The largest daily cap an intake's self-description is believed to state.
pub const MAX_SANE_DAILY_CAP: u64 = 1_000_000;
/// The largest record size an intake's self-description is believed to state.
pub const MAX_SANE_RECORD_BYTES: u64 = 16 * 1024 * 1024;

impl Limits {
    /// Read `limits_stated_not_hidden` from a `GET /witness` answer. The intake is named by a
    /// stranger's card, so each stated value is sanity-checked: a whole number within
    /// [`MAX_SANE_DAILY_CAP`] (or [`MAX_SANE_RECORD_BYTES`]) is believed, lower or higher than
    /// the spec's 65,536 / 500 / 5 / 50 (an intake may set its own caps, and its 429 still
    /// bounds a cap stated too high); a missing, negative, fractional or absurd value keeps the
    /// spec's constant (2^32 was once read as zero).
    pub fn from_self_description(doc: &Value) -> Option<Limits> {
        let l = doc.get("limits_stated_not_hidden")?.as_object()?;
        let d = Limits::default();
        let n = |k: &str, spec: u64, sane: u64| {
            l.get(k)
                .and_then(Value::as_u64)
                .filter(|&v| v <= sane)
                .unwrap_or(spec)
        };
        let daily = |k: &str, spec: u32| n(k, spec as u64, MAX_SANE_DAILY_CAP) as u32;
        Some(Limits {
            max_bytes: n("max_bytes", d.max_bytes as u64, MAX_SANE_RECORD_BYTES) as usize,
            daily_global: daily("daily_global", d.daily_global),
            daily_per_ip: daily("daily_per_ip", d.daily_per_ip),
            daily_per_domain: daily("daily_per_domain", d.daily_per_domain),
        })
    }

    pub fn lane_cap(&self, lane: &Lane) -> u32 {
        match lane {
            Lane::Address => self.daily_per_ip,
            Lane::Domain(_) => self.daily_per_domain,
        }
    }
}

/// Which lane a submission uses (§6.4).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Lane {
    /// Unsigned and address-signed records.
    Address,
    /// Domain-signed records: the lower-cased host of `witness.key_url`.
    Domain(String),
}

impl Lane {
    /// The lane of a record, from its `witness.key_url` when signed.
    pub fn of(key_url: Option<&str>, signed: bool) -> Lane {
        match (key_url, signed) {
            (Some(url), true) => match url::Url::parse(url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
            {
                Some(host) => Lane::Domain(host),
                None => Lane::Address,
            },
            _ => Lane::Address,
        }
    }

    /// Stored form (`address` or `domain:<host>`).
    pub fn key(&self) -> String {
        match self {
            Lane::Address => "address".to_string(),
            Lane::Domain(host) => format!("domain:{host}"),
        }
    }

    /// Read back a stored [`Lane::key`]; anything not `domain:<host>` is the address lane.
    pub fn from_key(key: &str) -> Lane {
        match key.strip_prefix("domain:") {
            Some(host) if !host.is_empty() => Lane::Domain(host.to_string()),
            _ => Lane::Address,
        }
    }

    /// The counting identity (§6.2 step 9).
    pub fn identity(&self, witness_name: &str) -> String {
        match self {
            Lane::Address => format!("name:{witness_name}"),
            Lane::Domain(host) => format!("domain:{host}"),
        }
    }
}

/// Our own usage of one intake today, as recorded by the outbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Records this walker had stored at the intake today (all lanes).
    pub global: u32,
    /// Records stored today in the lane in question.
    pub lane: u32,
}

/// Whether a lane can take one more record today (the client never sends what cannot fit).
pub fn has_room(limits: &Limits, lane: &Lane, usage: Usage) -> bool {
    usage.lane < limits.lane_cap(lane) && usage.global < limits.daily_global
}

/// JavaScript string length (UTF-16 code units): the unit of the size limit (§8.3 item 16).
pub fn js_length(text: &str) -> usize {
    text.encode_utf16().count()
}

/// The UTC day of an instant, `YYYY-MM-DD` (the intake's day, not `walked_at`).
pub fn utc_day(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d").to_string()
}

/// The next UTC midnight after `t`: when a full lane opens again.
pub fn next_utc_midnight(t: DateTime<Utc>) -> DateTime<Utc> {
    (t.date_naive() + Duration::days(1))
        .and_time(NaiveTime::MIN)
        .and_utc()
}

/// §6.5: the walked endpoint is the first non-space run after `a2a-conduct-walk-v1:` at the
/// start of `purpose` ([`crate::wire::endpoint_from_purpose`], the rule the store's
/// metadata uses too), else `base`.
pub fn endpoint_of(purpose: &str, base: &str) -> String {
    crate::wire::endpoint_from_purpose(purpose)
        .unwrap_or(base)
        .to_string()
}

/// Retry delay: exponential from 30 s, capped at 6 h, with ±20% jitter (`jitter` in [0, 1)),
/// never sooner than the intake's `Retry-After`.
pub fn backoff(
    attempt: u32,
    retry_after: Option<std::time::Duration>,
    jitter: f64,
) -> std::time::Duration {
    let base = 30f64 * 2f64.powi(attempt.saturating_sub(1).min(20) as i32);
    let capped = base.min(6.0 * 3600.0);
    let jittered = capped * (0.8 + 0.4 * jitter.clamp(0.0, 1.0));
    let delay = std::time::Duration::from_secs_f64(jittered);
    match retry_after {
        Some(ra) if ra > delay => ra,
        _ => delay,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The stored key reads back as the same lane, and a domain lane gets the domain cap
    /// (50), not the address cap (5): mixing them up would file past a cap or hold back early.
    #[test]
    fn lane_keys_round_trip_and_pick_their_cap() {
        let domain = Lane::of(Some("https://Witness.Example/key.json"), true);
        assert_eq!(domain, Lane::Domain("witness.example".into()));
        assert_eq!(domain.key(), "domain:witness.example");
        for lane in [Lane::Address, domain.clone()] {
            assert_eq!(Lane::from_key(&lane.key()), lane);
        }
        let limits = Limits::default();
        let usage = |lane| Usage { global: 0, lane };
        assert!(has_room(
            &limits,
            &Lane::from_key("domain:witness.example"),
            usage(5)
        ));
        assert!(!has_room(&limits, &Lane::from_key("address"), usage(5)));
        assert!(!has_room(&limits, &domain, usage(50)));
    }

    #[test]
    fn lanes_and_identities() {
        assert_eq!(
            Lane::of(Some("https://Witness.Example:8443/k.json"), true),
            Lane::Domain("witness.example".into())
        );
        assert_eq!(Lane::of(Some("https://w.example/k"), false), Lane::Address);
        assert_eq!(Lane::of(None, true), Lane::Address);
        assert_eq!(Lane::Address.identity("ann"), "name:ann");
        assert_eq!(
            Lane::Domain("w.example".into()).identity("ann"),
            "domain:w.example"
        );
    }

    #[test]
    fn room_respects_lane_and_global_caps() {
        let l = Limits::default();
        assert!(has_room(&l, &Lane::Address, Usage { global: 0, lane: 4 }));
        assert!(!has_room(&l, &Lane::Address, Usage { global: 0, lane: 5 }));
        assert!(has_room(
            &l,
            &Lane::Domain("d".into()),
            Usage {
                global: 10,
                lane: 49
            }
        ));
        assert!(!has_room(
            &l,
            &Lane::Domain("d".into()),
            Usage {
                global: 500,
                lane: 0
            }
        ));
    }

    #[test]
    fn limits_read_from_the_self_description() {
        let doc = json!({"limits_stated_not_hidden": {"max_bytes": 100, "daily_global": 7, "daily_per_ip": 2, "daily_per_domain": 3, "note": "x"}});
        assert_eq!(
            Limits::from_self_description(&doc),
            Some(Limits {
                max_bytes: 100,
                daily_global: 7,
                daily_per_ip: 2,
                daily_per_domain: 3
            })
        );
        assert_eq!(Limits::from_self_description(&json!({})), None);
    }

    #[test]
    fn day_arithmetic_across_midnight() {
        let t: DateTime<Utc> = "2026-11-30T23:59:59Z".parse().unwrap();
        assert_eq!(utc_day(t), "2026-11-30");
        assert_eq!(
            next_utc_midnight(t).to_rfc3339(),
            "2026-12-01T00:00:00+00:00"
        );
    }

    #[test]
    fn endpoint_attribution() {
        assert_eq!(
            endpoint_of("a2a-conduct-walk-v1: https://a/mcp", "https://a"),
            "https://a/mcp"
        );
        assert_eq!(
            endpoint_of("a2a-conduct-walk-v1:https://a/x y", "https://a"),
            "https://a/x"
        );
        assert_eq!(
            endpoint_of("other: https://a/mcp", "https://a"),
            "https://a"
        );
    }

    #[test]
    fn backoff_grows_caps_and_honours_retry_after() {
        let s =
            |a, ra: Option<u64>, j| backoff(a, ra.map(std::time::Duration::from_secs), j).as_secs();
        assert_eq!(s(1, None, 0.5), 30);
        assert_eq!(s(3, None, 0.5), 120);
        assert_eq!(s(30, None, 0.5), 6 * 3600);
        assert_eq!(s(1, Some(600), 0.5), 600);
        assert!(s(1, None, 0.0) == 24 && s(1, None, 0.999) <= 36);
    }

    #[test]
    fn size_is_counted_in_utf16_units() {
        assert_eq!(js_length("é🤖"), 3);
    }

    #[test]
    fn absurd_stated_limits_keep_the_spec_constants() {
        let doc = json!({"limits_stated_not_hidden": {"max_bytes": 4294967296u64,
            "daily_global": -1, "daily_per_ip": 2.5, "daily_per_domain": 18446744073709551615u64}});
        assert_eq!(
            Limits::from_self_description(&doc),
            Some(Limits::default()),
            "2^32 is not read as zero, and nothing absurd is believed"
        );
        let own = json!({"limits_stated_not_hidden": {"daily_per_ip": 0, "daily_per_domain": 100}});
        let l = Limits::from_self_description(&own).unwrap();
        assert_eq!((l.daily_per_ip, l.daily_per_domain), (0, 100));
    }
}
