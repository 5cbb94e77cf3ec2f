//! Which uncovered members matter: the ones a client acts on (issue 46).
//!
//! A signature covers only its profile's payload (card-signature-and-terms.md §7.4). Most of
//! what a payload leaves out is harmless: an empty string, an empty list or a `false` that a
//! client reads as "not set" anyway. But a value that is outside the payload and that a client
//! *uses* — where it sends messages, how it authenticates, which snake_case twin it reads — can
//! be changed after signing without breaking the signature. A verdict a script can trust says
//! "verified" only when no such member is uncovered. The spec has no list of those members, so
//! [`ACTED_ON_MEMBERS`] is it, with why each one matters.

use super::profile::{Uncovered, UncoveredWhy};
use serde_json::Value;

/// Top-level card members a client acts on (A2A 1.0 names and the 0.3 ones clients still read),
/// each with why. A member under one of these (`/securitySchemes/x/...`) counts as the member.
pub const ACTED_ON_MEMBERS: &[(&str, &str)] = &[
    (
        "url",
        "the 0.3 endpoint: where a 0.3 client sends its messages",
    ),
    (
        "preferredTransport",
        "the 0.3 binding a client speaks at url",
    ),
    (
        "additionalInterfaces",
        "other 0.3 endpoints and bindings a client may send to",
    ),
    (
        "supportedInterfaces",
        "the 1.0 endpoints, bindings and protocol versions a client sends to",
    ),
    (
        "protocolVersion",
        "the protocol version a 0.3 client speaks",
    ),
    (
        "securitySchemes",
        "how and where a client sends credentials (token URLs, header names, OpenID discovery)",
    ),
    ("security", "which 0.3 schemes a client must satisfy"),
    (
        "securityRequirements",
        "which schemes a client must satisfy",
    ),
    (
        "capabilities",
        "streaming, push notifications (a client hands over a webhook) and extensions a client turns on",
    ),
    (
        "supportsAuthenticatedExtendedCard",
        "whether a 0.3 client fetches a second card with its credentials",
    ),
    ("defaultInputModes", "the media types a client sends"),
    ("defaultOutputModes", "the media types a client accepts"),
    (
        "skills",
        "what a client asks the agent to do, and each skill's own security",
    ),
];

/// An uncovered member a client acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActedOnGap {
    pub pointer: String,
    pub why: UncoveredWhy,
    /// Why a client's behaviour depends on it.
    pub matters: String,
}

/// The members of `uncovered` (from the profile that verified) that a client acts on. A
/// snake_case twin counts whatever its place in the card, but only when its value differs
/// from the camelCase member the payload covers (some SDKs read the twin). A 0.3 `url` equal
/// to a covered `supportedInterfaces` url sends the client to a signed endpoint, so it does
/// not count.
pub fn acted_on_gaps(card: &Value, uncovered: &[Uncovered]) -> Vec<ActedOnGap> {
    let mut gaps = Vec::new();
    for u in uncovered {
        match u.why {
            UncoveredWhy::NameShadowed => {
                if let Some(camel) = twin_differs(card, &u.pointer) {
                    gaps.push(ActedOnGap {
                        pointer: u.pointer.clone(),
                        why: u.why,
                        matters: format!(
                            "a snake_case twin of the covered {camel} with another value: a client that reads snake_case names acts on the uncovered one"
                        ),
                    });
                }
            }
            UncoveredWhy::OutsideSchema => {
                let Some(matters) = acted_on_member(&u.pointer) else {
                    continue;
                };
                if u.pointer == "/url" && url_mirrors_covered_interface(card, uncovered) {
                    continue;
                }
                gaps.push(ActedOnGap {
                    pointer: u.pointer.clone(),
                    why: u.why,
                    matters: matters.to_string(),
                });
            }
            // Empty, null and implicit defaults read as "not set" to every client.
            UncoveredWhy::Empty | UncoveredWhy::Null | UncoveredWhy::ImplicitDefault => {}
        }
    }
    gaps
}

/// Why the top-level member of `pointer` matters, when a client acts on it.
fn acted_on_member(pointer: &str) -> Option<&'static str> {
    let first = pointer.strip_prefix('/')?.split('/').next()?;
    let first = unescape(first);
    let camel = super::walk_block::snake_to_camel(&first);
    ACTED_ON_MEMBERS
        .iter()
        .find(|(name, _)| *name == first || *name == camel)
        .map(|(_, why)| *why)
}

/// For a shadowed snake_case member: the camelCase twin's pointer when the values differ.
fn twin_differs(card: &Value, pointer: &str) -> Option<String> {
    let (parent, last) = pointer.rsplit_once('/')?;
    let camel = super::walk_block::snake_to_camel(&unescape(last));
    let twin = format!("{parent}/{}", escape(&camel));
    let differs = card.pointer(pointer) != card.pointer(&twin);
    differs.then_some(twin)
}

/// Whether the top-level `url` equals the url of a `supportedInterfaces` entry the payload covers.
fn url_mirrors_covered_interface(card: &Value, uncovered: &[Uncovered]) -> bool {
    let Some(url) = card.get("url").and_then(Value::as_str) else {
        return false;
    };
    let Some(interfaces) = card.get("supportedInterfaces").and_then(Value::as_array) else {
        return false;
    };
    interfaces.iter().enumerate().any(|(i, entry)| {
        let at = format!("/supportedInterfaces/{i}/url");
        let covered = !uncovered
            .iter()
            .any(|u| at == u.pointer || at.starts_with(&format!("{}/", u.pointer)));
        covered && entry.get("url").and_then(Value::as_str) == Some(url)
    })
}

/// RFC 6901 reference token decoding.
fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gap(pointer: &str, why: UncoveredWhy) -> Uncovered {
        Uncovered {
            pointer: pointer.into(),
            why,
        }
    }

    #[test]
    fn a_twin_with_another_value_counts_and_an_equal_twin_does_not() {
        let card = json!({"defaultInputModes": ["text/plain"], "default_input_modes": ["image/png"],
            "defaultOutputModes": ["a"], "default_output_modes": ["a"]});
        let gaps = acted_on_gaps(
            &card,
            &[
                gap("/default_input_modes", UncoveredWhy::NameShadowed),
                gap("/default_output_modes", UncoveredWhy::NameShadowed),
            ],
        );
        assert_eq!(gaps.len(), 1, "{gaps:?}");
        assert_eq!(gaps[0].pointer, "/default_input_modes");
        assert!(gaps[0].matters.contains("/defaultInputModes"));
    }

    #[test]
    fn an_outside_url_counts_unless_it_is_a_covered_interface_url() {
        let card = json!({"url": "https://evil.example/a2a",
            "supportedInterfaces": [{"url": "https://s.example/a2a"}]});
        let uncovered = [gap("/url", UncoveredWhy::OutsideSchema)];
        assert_eq!(acted_on_gaps(&card, &uncovered).len(), 1);
        let card = json!({"url": "https://s.example/a2a",
            "supportedInterfaces": [{"url": "https://s.example/a2a"}]});
        assert!(acted_on_gaps(&card, &uncovered).is_empty());
    }

    #[test]
    fn empties_and_members_nobody_acts_on_do_not_count() {
        let card = json!({"securitySchemes": {}, "iconColour": "red"});
        let uncovered = [
            gap("/securitySchemes", UncoveredWhy::Empty),
            gap("/iconColour", UncoveredWhy::OutsideSchema),
            gap(
                "/supportedInterfaces/0/tenant",
                UncoveredWhy::ImplicitDefault,
            ),
        ];
        assert!(acted_on_gaps(&card, &uncovered).is_empty());
        let nested = [gap("/securitySchemes/k/type", UncoveredWhy::OutsideSchema)];
        assert_eq!(acted_on_gaps(&card, &nested).len(), 1);
    }
}
