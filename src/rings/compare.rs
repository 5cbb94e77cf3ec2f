//! `ring verify`'s comparison (rings.md §6): a claimed ring against the one rebuilt from the
//! same inputs, key by key.

use crate::json::{JsonRef, ReadOptions, read};

/// How much of a value a line shows (the JSON form of `ring verify` shows all of it).
pub const CLIP_CHARS: usize = 300;

/// A value clipped for a line: its first [`CLIP_CHARS`] characters and its length.
pub fn clip(text: &str) -> String {
    let n = text.chars().count();
    if n <= CLIP_CHARS {
        return text.to_string();
    }
    let head: String = text.chars().take(CLIP_CHARS).collect();
    format!("{head}… ({n} characters)")
}

/// One key whose values differ: canonical JSON of each side, None where the key is absent.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KeyDiff {
    pub key: String,
    pub rebuilt: Option<String>,
    pub claimed: Option<String>,
}

/// The keys whose values differ between the rebuilt ring and the claimed one (both parsed).
/// Equal bytes give none; bytes that differ with every key equal give one entry named
/// `(layout)`: the claimed file holds the same values but is not in ring form.
pub fn differing_keys(rebuilt: &[u8], claimed: &[u8]) -> Vec<KeyDiff> {
    if rebuilt == claimed {
        return Vec::new();
    }
    let parse = |b: &[u8]| read(b, ReadOptions::LENIENT).ok();
    let (Some(a), Some(b)) = (parse(rebuilt), parse(claimed)) else {
        return vec![layout()];
    };
    let members = |v: JsonRef<'_>| -> Vec<(String, String)> {
        v.as_object()
            .map(|o| {
                o.entries()
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.canonical_string()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (ours, theirs) = (members(a.root()), members(b.root()));
    let mut keys: Vec<&String> = ours.iter().chain(&theirs).map(|(k, _)| k).collect();
    keys.sort();
    keys.dedup();
    let find = |list: &[(String, String)], k: &str| {
        list.iter()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v.clone())
    };
    let diffs: Vec<KeyDiff> = keys
        .into_iter()
        .filter_map(|k| {
            let (x, y) = (find(&ours, k), find(&theirs, k));
            (x != y).then(|| KeyDiff {
                key: k.clone(),
                rebuilt: x,
                claimed: y,
            })
        })
        .collect();
    if diffs.is_empty() {
        vec![layout()]
    } else {
        diffs
    }
}

fn layout() -> KeyDiff {
    KeyDiff {
        key: "(layout)".into(),
        rebuilt: None,
        claimed: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_differ_with_both_values() {
        let d = differing_keys(br#"{"a":1,"b":[2],"c":3}"#, br#"{"a":1,"b":[3],"d":4}"#);
        let keys: Vec<_> = d.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(keys, ["b", "c", "d"]);
        assert_eq!(d[0].rebuilt.as_deref(), Some("[2]"));
        assert_eq!(d[0].claimed.as_deref(), Some("[3]"));
        assert_eq!(d[2].rebuilt, None);
        assert!(differing_keys(b"{}", b"{}").is_empty());
        assert_eq!(
            differing_keys(b"{\"a\":1}", b"{\"a\": 1}")[0].key,
            "(layout)"
        );
    }

    #[test]
    fn clip_says_how_long() {
        assert_eq!(clip("abc"), "abc");
        assert!(clip(&"x".repeat(1000)).ends_with("(1000 characters)"));
    }
}
