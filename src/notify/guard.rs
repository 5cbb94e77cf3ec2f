//! Guards 1–7 of §7.4, pure: from what is known before any network (the consent file's
//! `notify`, the policy, the walk, our own hosts, the store's counts), either the final
//! `notify_status` or "go on": resolve and POST (guards 8 and 9, [`super::send`]).
//!
//! The reason strings are the spec's, exactly: an operator greps them.

use crate::walk::Privacy;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

/// At most one attempt per endpoint in this long (guard 6).
pub const RATE_LIMIT_WINDOW: chrono::Duration = chrono::Duration::hours(1);
/// At most this many attempts per wave (guard 7).
pub const PER_WAVE: u32 = 3;

pub const NOT_HTTPS: &str = "refused: notify URL is not https";
pub const IP_LITERAL: &str = "refused: notify URL is an IP literal";
pub const OWN_HOST: &str = "refused: notify URL is one of our own hosts";
pub const RATE_LIMITED: &str = "rate limited: one notification per endpoint per hour";
pub const DEFERRED: &str = "deferred: at most 3 notifications per wave";

/// `[witness] notify`: whether a consent file's `notify` is honoured at all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Policy {
    /// Honour the field (the default): declaring it is consent to receive the POST.
    #[default]
    Consent,
    /// Never notify.
    Never,
}

/// What caused a walk. Only a scheduled one notifies (§7.2): anyone can cause the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkKind {
    Scheduled,
    OnDemand,
    Reciprocal,
    Requested,
}

/// Everything guards 1–7 look at.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub policy: Policy,
    pub kind: WalkKind,
    pub privacy: Privacy,
    /// The consent file's string `notify`, as read for this walk.
    pub notify: Option<&'a str>,
    /// Our own host names, lower case (the face's origin, `key_url`, listeners, intakes).
    pub own_hosts: &'a [String],
    /// The last attempt (guards 8–9 reached) for this endpoint.
    pub last_attempt: Option<DateTime<Utc>>,
    /// Attempts already made in this walk's wave.
    pub attempts_in_wave: u32,
    pub now: DateTime<Utc>,
    /// Tests only (§4.5): the name screen (guard 4) is skipped so a loopback receiver on its
    /// own port can be reached; the IP-literal guard still holds.
    pub allow_private_network: bool,
}

/// What guards 1–7 decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Final: `None` is `notify_status: null` (guard 1, nothing stored), `Some` a refusal.
    Settled(Option<Value>),
    /// Go on to the address guard (guard 8) and the POST (step 9) for this URL's host.
    Attempt { host: String },
}

/// `{"sent": false, "reason": reason}`.
pub fn not_sent(reason: &str) -> Value {
    json!({"sent": false, "reason": reason})
}

fn refused(reason: &str) -> Decision {
    Decision::Settled(Some(not_sent(reason)))
}

/// Guards 1–7 in order; the first that applies decides.
pub fn decide(f: &Facts<'_>) -> Decision {
    // 1: not asked, turned off, or not a walk that may notify (§7.2).
    let Some(notify) = f.notify else {
        return Decision::Settled(None);
    };
    if f.policy == Policy::Never || f.kind != WalkKind::Scheduled || f.privacy != Privacy::Full {
        return Decision::Settled(None);
    }
    // 2
    let url = match url::Url::parse(notify) {
        Ok(url) if url.scheme() == "https" => url,
        _ => return refused(NOT_HTTPS),
    };
    // 3: WHATWG has already read `0x7f.1` and `2130706433` as IPv4.
    let host = match url.host() {
        Some(url::Host::Domain(name)) => name.trim_end_matches('.').to_ascii_lowercase(),
        Some(url::Host::Ipv4(_) | url::Host::Ipv6(_)) => return refused(IP_LITERAL),
        None => return refused(NOT_HTTPS),
    };
    // 4
    if !f.allow_private_network
        && let Err(why) = crate::witness_pool::screen::name_screen(notify)
    {
        return refused(&format!("refused: {why}"));
    }
    // 5
    if f.own_hosts.contains(&host) {
        return refused(OWN_HOST);
    }
    // 6
    if f.last_attempt
        .is_some_and(|at| f.now - at < RATE_LIMIT_WINDOW)
    {
        return refused(RATE_LIMITED);
    }
    // 7
    if f.attempts_in_wave >= PER_WAVE {
        return refused(DEFERRED);
    }
    Decision::Attempt { host }
}

/// The host of a URL as guard 5 compares it (lower case, no trailing dot); None when `url`
/// has none.
pub fn host_of(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let host = parsed.host_str()?;
    Some(
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-12-06T03:40:00Z".parse().unwrap()
    }

    /// A scheduled full walk asking `https://hooks.a.org/conduct`, nothing attempted yet:
    /// every guard passes. Each case changes one fact.
    fn facts<'a>(own: &'a [String]) -> Facts<'a> {
        Facts {
            policy: Policy::Consent,
            kind: WalkKind::Scheduled,
            privacy: Privacy::Full,
            notify: Some("https://hooks.a.org/conduct"),
            own_hosts: own,
            last_attempt: None,
            attempts_in_wave: 0,
            now: now(),
            allow_private_network: false,
        }
    }

    fn reason(d: &Decision) -> Option<String> {
        match d {
            Decision::Settled(Some(v)) => {
                assert_eq!(v["sent"], false, "{v}");
                Some(v["reason"].as_str().unwrap().to_string())
            }
            _ => None,
        }
    }

    #[test]
    fn every_guard_in_order_with_the_specs_reason() {
        let own = vec!["witness.b.org".to_string(), "ledger.c.org".into()];
        let base = facts(&own);
        let with_url = |url: &'static str| Facts {
            notify: Some(url),
            ..base.clone()
        };
        let cases: Vec<(&str, Facts<'_>, &str)> = vec![
            ("not https", with_url("http://hooks.a.org/x"), NOT_HTTPS),
            ("not a URL", with_url("hooks.a.org/x"), NOT_HTTPS),
            ("IPv4 literal", with_url("https://192.0.2.7/x"), IP_LITERAL),
            ("hex IPv4", with_url("https://0x7f.1/x"), IP_LITERAL),
            (
                "IPv6 literal",
                with_url("https://[2001:db8::1]/x"),
                IP_LITERAL,
            ),
            (
                "a local name",
                with_url("https://hooks.lan/x"),
                "refused: not a public DNS name: hooks.lan",
            ),
            (
                "an explicit port",
                with_url("https://hooks.a.org:8443/x"),
                "refused: an explicit port is not measured (public origins answer on 443)",
            ),
            (
                "our own host",
                with_url("https://Witness.B.org./hook"),
                OWN_HOST,
            ),
            (
                "attempted 59 minutes ago",
                Facts {
                    last_attempt: Some(now() - chrono::Duration::minutes(59)),
                    ..base.clone()
                },
                RATE_LIMITED,
            ),
            (
                "three in this wave",
                Facts {
                    attempts_in_wave: 3,
                    ..base.clone()
                },
                DEFERRED,
            ),
            (
                // Rate limit comes before the wave count.
                "both limits",
                Facts {
                    attempts_in_wave: 5,
                    last_attempt: Some(now()),
                    ..base.clone()
                },
                RATE_LIMITED,
            ),
        ];
        for (name, f, want) in cases {
            assert_eq!(reason(&decide(&f)).as_deref(), Some(want), "{name}");
        }
    }

    #[test]
    fn guard_one_is_null_for_what_may_not_notify() {
        let own = Vec::new();
        let base = facts(&own);
        let nulls = [
            Facts {
                notify: None,
                ..base.clone()
            },
            Facts {
                policy: Policy::Never,
                ..base.clone()
            },
            Facts {
                kind: WalkKind::OnDemand,
                ..base.clone()
            },
            Facts {
                kind: WalkKind::Reciprocal,
                ..base.clone()
            },
            Facts {
                kind: WalkKind::Requested,
                ..base.clone()
            },
            Facts {
                privacy: Privacy::HashOnly,
                ..base.clone()
            },
            Facts {
                privacy: Privacy::Commitment,
                // Null comes first, even for a URL guard 2 would refuse.
                notify: Some("http://hooks.a.org"),
                ..base.clone()
            },
        ];
        for f in nulls {
            assert_eq!(decide(&f), Decision::Settled(None), "{f:?}");
        }
    }

    #[test]
    fn a_clean_case_goes_on_to_the_address_guard() {
        let own = vec!["witness.b.org".to_string()];
        let hour_ago = Facts {
            last_attempt: Some(now() - chrono::Duration::hours(1)),
            attempts_in_wave: 2,
            ..facts(&own)
        };
        assert_eq!(
            decide(&hour_ago),
            Decision::Attempt {
                host: "hooks.a.org".into()
            }
        );
        // Tests' loopback receivers: the name screen is lifted, the literal guard is not.
        let loopback = Facts {
            notify: Some("https://localhost:8443/hook"),
            allow_private_network: true,
            ..facts(&own)
        };
        assert_eq!(
            decide(&loopback),
            Decision::Attempt {
                host: "localhost".into()
            }
        );
        let literal = Facts {
            notify: Some("https://127.0.0.1:8443/hook"),
            allow_private_network: true,
            ..facts(&own)
        };
        assert_eq!(reason(&decide(&literal)).as_deref(), Some(IP_LITERAL));
    }

    #[test]
    fn hosts_compare_in_one_form() {
        assert_eq!(
            host_of("https://Witness.B.org./x").as_deref(),
            Some("witness.b.org")
        );
        assert_eq!(host_of("https://[::1]:9/").as_deref(), Some("::1"));
        assert_eq!(host_of("not a url"), None);
    }
}
