//! One typed reader of our own stored record (`jidec-path-v1`, conduct-walk.md §4.2): a
//! borrowed view with the few facts the store, the pipeline, the metrics and the pages read
//! back, deserialised straight from the canonical bytes. Strings borrow from the bytes when they
//! hold no escape; everything else in the record (node bodies, card signature, replay...) is
//! skipped without being built.
//!
//! Two kinds of field. The ones the store indexes (`schema`, `base`, `walked_at`, `purpose`,
//! `mode`, `conduct_ext.mode`, `verdict`, `witness.key_url`) are strict: a wrong type makes the
//! view fail, and [`super::meta`] names the field. The ones only shown (`witness.name`,
//! `witness.vantage`, `commitment`, the assertions and the nodes) are lenient: a value of
//! another type reads as absent, so one odd field never hides the others.

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// The facts read back from a stored record.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct RecordView<'a> {
    #[serde(borrow, default, deserialize_with = "strict_text")]
    pub schema: Option<Cow<'a, str>>,
    /// The origin walked.
    #[serde(borrow, default, deserialize_with = "strict_text")]
    pub base: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "strict_text")]
    pub walked_at: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "strict_text")]
    pub purpose: Option<Cow<'a, str>>,
    /// Top-level privacy mode: `full`, `hash-only` or `commitment`; absent means `full`.
    #[serde(borrow, default, deserialize_with = "strict_text")]
    pub mode: Option<Cow<'a, str>>,
    /// The commitment a commitment-mode record files (§4.6).
    #[serde(borrow, default, deserialize_with = "lenient_text")]
    pub commitment: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub conduct_ext: Option<ConductExtView<'a>>,
    #[serde(borrow)]
    pub verdict: Option<VerdictView<'a>>,
    #[serde(borrow)]
    pub witness: Option<WitnessView<'a>>,
    #[serde(borrow, default, deserialize_with = "lenient_list")]
    pub assertions: Vec<AssertionView<'a>>,
    #[serde(borrow, default, deserialize_with = "lenient_list")]
    pub nodes: Vec<NodeView<'a>>,
}

/// `conduct_ext`: only the walker's mode is read.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct ConductExtView<'a> {
    /// `mcp` or `a2a`.
    #[serde(borrow, default, deserialize_with = "strict_text")]
    pub mode: Option<Cow<'a, str>>,
}

/// `verdict`: every member required.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct VerdictView<'a> {
    pub ok: bool,
    #[serde(borrow)]
    pub outcome: Cow<'a, str>,
    pub n_pass: i64,
    pub n_total: i64,
}

/// `witness`: `key_url` strict (the store indexes it), the rest shown only.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct WitnessView<'a> {
    #[serde(borrow, default, deserialize_with = "strict_text")]
    pub key_url: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "lenient_text")]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "lenient_text")]
    pub vantage: Option<Cow<'a, str>>,
}

/// One assertion: its claim and its result.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct AssertionView<'a> {
    #[serde(borrow, default, deserialize_with = "lenient_text")]
    pub claim: Option<Cow<'a, str>>,
    #[serde(default)]
    pub result: Outcome,
}

/// An assertion's `result`: `true`, `false`, or `null` (not applicable, §3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Outcome {
    Held,
    Failed,
    /// `null` or absent.
    #[default]
    NotApplicable,
    /// Some other value (a record not written by a walker).
    Other,
}

/// One node: its kind and, for a fetch, the status answered (0: a transport error).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct NodeView<'a> {
    #[serde(borrow, default, deserialize_with = "lenient_text")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "lenient_object")]
    pub response: Option<ResponseView>,
}

/// A fetch node's `response`: only the status is read.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct ResponseView {
    /// A scalar, read as a number where it is one.
    #[serde(default)]
    status: Option<serde_json::Value>,
}

impl ResponseView {
    pub fn status(&self) -> Option<u64> {
        self.status.as_ref().and_then(serde_json::Value::as_u64)
    }
}

/// Why bytes give no view: the JSON error of the strict read and of the lenient one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ViewError(pub String);

impl<'a> RecordView<'a> {
    /// Read the view from a record's bytes. Strict JSON first (borrowing); bytes only the
    /// project's lenient parser reads (deeper nesting than serde_json's limit) are parsed whole
    /// and read from that, owning their strings.
    pub fn read(bytes: &'a [u8]) -> Result<RecordView<'a>, ViewError> {
        // A struct also deserialises from a JSON array; only an object is a record.
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(ViewError("the record is not a JSON object".into()));
        }
        match serde_json::from_slice::<RecordView>(bytes) {
            Ok(view) => Ok(view),
            Err(strict) => {
                let value = crate::json::parse_lenient(bytes)
                    .map_err(|_| ViewError(format!("the bytes are not JSON: {strict}")))?;
                RecordView::from_value(&value)
                    .map(RecordView::into_owned)
                    .map_err(|e| ViewError(e.to_string()))
            }
        }
    }

    /// Read the view from a parsed record (borrowing its strings).
    pub fn from_value(value: &'a serde_json::Value) -> Result<RecordView<'a>, ViewError> {
        if !value.is_object() {
            return Err(ViewError("the record is not a JSON object".into()));
        }
        RecordView::deserialize(value).map_err(|e| ViewError(e.to_string()))
    }

    /// The same view owning its strings.
    pub fn into_owned(self) -> RecordView<'static> {
        fn own(c: Option<Cow<'_, str>>) -> Option<Cow<'static, str>> {
            c.map(|c| Cow::Owned(c.into_owned()))
        }
        RecordView {
            schema: own(self.schema),
            base: own(self.base),
            walked_at: own(self.walked_at),
            purpose: own(self.purpose),
            mode: own(self.mode),
            commitment: own(self.commitment),
            conduct_ext: self
                .conduct_ext
                .map(|c| ConductExtView { mode: own(c.mode) }),
            verdict: self.verdict.map(|v| VerdictView {
                ok: v.ok,
                outcome: Cow::Owned(v.outcome.into_owned()),
                n_pass: v.n_pass,
                n_total: v.n_total,
            }),
            witness: self.witness.map(|w| WitnessView {
                key_url: own(w.key_url),
                name: own(w.name),
                vantage: own(w.vantage),
            }),
            assertions: self
                .assertions
                .into_iter()
                .map(|a| AssertionView {
                    claim: own(a.claim),
                    result: a.result,
                })
                .collect(),
            nodes: self
                .nodes
                .into_iter()
                .map(|n| NodeView {
                    kind: own(n.kind),
                    response: n.response,
                })
                .collect(),
        }
    }

    /// `witness.name`, `witness.vantage`, `witness.key_url`.
    pub fn witness_name(&self) -> Option<&str> {
        self.witness.as_ref()?.name.as_deref()
    }

    pub fn witness_vantage(&self) -> Option<&str> {
        self.witness.as_ref()?.vantage.as_deref()
    }

    pub fn key_url(&self) -> Option<&str> {
        self.witness.as_ref()?.key_url.as_deref()
    }

    /// The walked endpoint (§6.5): what `purpose` names, else `base`.
    pub fn endpoint(&self) -> Option<&str> {
        self.purpose
            .as_deref()
            .and_then(crate::wire::endpoint_from_purpose)
            .or(self.base.as_deref())
    }

    /// The commitment a commitment-mode record files; `None` for any other record.
    pub fn filed_commitment(&self) -> Option<&str> {
        (self.mode.as_deref() == Some("commitment"))
            .then_some(self.commitment.as_deref())
            .flatten()
    }

    /// Names of the assertions whose result is `result` (the claim's text before `:`), in
    /// record order.
    pub fn assertion_names(&self, result: Outcome) -> Vec<String> {
        self.assertions
            .iter()
            .filter(|a| a.result == result)
            .filter_map(|a| a.claim.as_deref())
            .map(|c| c.split(':').next().unwrap_or(c).trim().to_string())
            .collect()
    }

    /// Some fetch ended in a transport error (status 0).
    pub fn transport_error(&self) -> bool {
        self.nodes.iter().any(|n| {
            n.kind.as_deref() == Some("fetch")
                && n.response.as_ref().and_then(ResponseView::status) == Some(0)
        })
    }
}

/// Every scalar visit a lenient visitor answers with the same value.
macro_rules! other_scalars {
    ($value:expr) => {
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
}

impl<'de> Deserialize<'de> for Outcome {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Outcome;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, b: bool) -> Result<Outcome, E> {
                Ok(if b { Outcome::Held } else { Outcome::Failed })
            }
            fn visit_unit<E>(self) -> Result<Outcome, E> {
                Ok(Outcome::NotApplicable)
            }
            fn visit_none<E>(self) -> Result<Outcome, E> {
                Ok(Outcome::NotApplicable)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Outcome, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Outcome, A::Error> {
                drain_map(map).map(|_| Outcome::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Outcome, A::Error> {
                drain_seq(seq).map(|_| Outcome::Other)
            }
            other_scalars!(Outcome::Other);
        }
        d.deserialize_any(V)
    }
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// A string, borrowed when it can be, or null; any other value is an error (the field is
/// indexed, and [`super::meta`] names it).
fn strict_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string or null")
        }
        fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(s)))
        }
        fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(s.to_string())))
        }
        fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(s)))
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
    }
    d.deserialize_any(V)
}

/// A string, borrowed when it can be; any other value reads as `None`.
fn lenient_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(s)))
        }
        fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(s.to_string())))
        }
        fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(s)))
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            drain_map(map).map(|_| None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            drain_seq(seq).map(|_| None)
        }
    }
    d.deserialize_any(V)
}

/// An object read as `T` (whose fields are lenient); any other value reads as `None`.
fn lenient_object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    struct V<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            drain_seq(seq).map(|_| None)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
        other_scalars!(None);
    }
    d.deserialize_any(V(std::marker::PhantomData))
}

/// An array of objects read as `T`; elements that are not objects are left out, and a value
/// that is not an array reads as empty.
fn lenient_list<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    struct Element<T>(Option<T>);
    impl<'de, T: Deserialize<'de>> Deserialize<'de> for Element<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            lenient_object(d).map(Element)
        }
    }
    struct V<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(Element(e)) = seq.next_element::<Element<T>>()? {
                out.extend(e);
            }
            Ok(out)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            drain_map(map).map(|_| Vec::new())
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
        other_scalars!(Vec::new());
    }
    d.deserialize_any(V(std::marker::PhantomData))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record() -> serde_json::Value {
        json!({
            "schema": "jidec-path-v1",
            "purpose": "a2a-conduct-walk-v1: https://a.example/a2a",
            "base": "https://a.example",
            "walked_at": "2026-09-06T10:00:00Z",
            "nodes": [
                {"n": 0, "kind": "fetch", "response": {"status": 200, "body_preview": "{\"x\":1}"}},
                {"n": 2, "kind": "compute"},
                {"n": 3, "kind": "fetch", "response": {"status": 0}}
            ],
            "assertions": [
                {"claim": "card_bytes_stable: same", "result": true},
                {"claim": "endpoint_bound: é", "result": false},
                {"claim": "payment_required_as_declared: n/a", "result": null}
            ],
            "verdict": {"ok": false, "outcome": "FAIL", "n_pass": 1, "n_total": 2},
            "conduct_ext": {"mode": "a2a", "target": null},
            "witness": {"name": "w \"quoted\"", "vantage": "eu", "key_url": "https://w.example/k"}
        })
    }

    #[test]
    fn reads_the_facts_borrowing_unescaped_strings() {
        let bytes = crate::canonical::to_bytes(&record());
        let v = RecordView::read(&bytes).unwrap();
        assert!(matches!(v.base, Some(Cow::Borrowed("https://a.example"))));
        // An escaped string cannot be borrowed: it is owned, same text.
        assert!(matches!(v.witness_name(), Some("w \"quoted\"")));
        assert_eq!(v.endpoint(), Some("https://a.example/a2a"));
        assert_eq!(v.key_url(), Some("https://w.example/k"));
        assert_eq!(v.witness_vantage(), Some("eu"));
        assert_eq!(v.verdict.as_ref().unwrap().n_pass, 1);
        assert_eq!(v.assertion_names(Outcome::Failed), ["endpoint_bound"]);
        assert_eq!(
            v.assertion_names(Outcome::NotApplicable),
            ["payment_required_as_declared"]
        );
        assert!(v.transport_error());
        assert_eq!(v.filed_commitment(), None);
        assert_eq!(RecordView::from_value(&record()).unwrap(), v);
    }

    #[test]
    fn shown_fields_of_another_type_read_as_absent_without_hiding_the_rest() {
        let mut r = record();
        r["witness"]["name"] = json!(5);
        r["assertions"] = json!([7, {"claim": ["x"], "result": false}, {"claim": "a: b", "result": "no"}, {"claim": "c: d", "result": false}]);
        r["nodes"] = json!({"not": "a list"});
        let bytes = crate::canonical::to_bytes(&r);
        let v = RecordView::read(&bytes).unwrap();
        assert_eq!(v.witness_name(), None);
        assert_eq!(v.witness_vantage(), Some("eu"));
        assert_eq!(v.assertion_names(Outcome::Failed), ["c"]);
        assert_eq!(v.assertion_names(Outcome::Other), ["a"]);
        assert!(!v.transport_error());
    }

    #[test]
    fn indexed_fields_of_another_type_fail_the_view() {
        let mut r = record();
        r["verdict"]["n_pass"] = json!("1");
        assert!(RecordView::read(&crate::canonical::to_bytes(&r)).is_err());
        assert!(RecordView::read(b"[1]").is_err());
        assert!(RecordView::read(b"{").is_err());
    }

    #[test]
    fn text_strict_json_refuses_is_read_through_the_lenient_parser() {
        // A lone surrogate escape: serde_json refuses it, the project's parser reads it.
        let odd = br#"{"schema":"jidec-path-v1","base":"b","witness":{"name":"\ud800"}}"#;
        assert!(serde_json::from_slice::<RecordView>(odd).is_err());
        let v = RecordView::read(odd).unwrap();
        assert_eq!(v.base.as_deref(), Some("b"));
        assert!(v.witness_name().is_some());
    }

    #[test]
    fn a_commitment_is_read_only_from_a_commitment_record() {
        let bytes = br#"{"commitment":"ab","mode":"commitment","schema":"jidec-path-v1"}"#;
        assert_eq!(
            RecordView::read(bytes).unwrap().filed_commitment(),
            Some("ab")
        );
        let bytes = br#"{"commitment":"ab","mode":"full"}"#;
        assert_eq!(RecordView::read(bytes).unwrap().filed_commitment(), None);
    }
}
