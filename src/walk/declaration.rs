//! Locating and validating the conduct declaration (§1.2–§1.5) and choosing the target (§2.5).
//! Pure: takes the parsed card, returns values.

use super::spec::*;
use crate::json::{Doc, JsonRef, ObjectRef};
use std::sync::Arc;

/// A parsed card: the compact document of n1's body (`crate::json::Doc`), shared by the
/// declaration, the assertions and the card findings without copying it into a tree.
pub type Card = Arc<Doc>;

/// The conduct extension's entry in a card: where it sits in the card's document.
#[derive(Clone)]
pub struct Extension {
    card: Card,
    at: u32,
}

impl Extension {
    /// An entry read from its own JSON text (for tests and vectors that build a declaration).
    pub fn parse(text: &str) -> Result<Extension, crate::json::ReadError> {
        let doc = crate::json::read(text.as_bytes(), crate::json::ReadOptions::LENIENT)?;
        Ok(Extension {
            card: Arc::new(doc),
            at: 0,
        })
    }

    /// The entry, as the card wrote it.
    pub fn value(&self) -> JsonRef<'_> {
        self.card.at(self.at)
    }
}

impl PartialEq for Extension {
    fn eq(&self, other: &Self) -> bool {
        self.value() == other.value()
    }
}

impl std::fmt::Debug for Extension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Extension({:?})", self.value())
    }
}

/// The result of reading node n1's card.
#[derive(Debug, Clone, PartialEq)]
pub struct Declaration {
    /// The first `capabilities.extensions[]` element whose `uri` is accepted (§1.2).
    pub extension: Option<Extension>,
    /// §1.4 problems in order.
    pub problems: Vec<String>,
}

impl Declaration {
    pub fn declared(&self) -> bool {
        self.extension.is_some()
    }

    /// The string the card used (`conduct_ext.declared_uri`).
    pub fn declared_uri(&self) -> Option<&str> {
        self.extension.as_ref()?.value().get("uri")?.as_str()
    }

    /// The extension's `params` when it is an object.
    pub fn params(&self) -> Option<ObjectRef<'_>> {
        self.extension.as_ref()?.value().get("params")?.as_object()
    }

    /// A string-valued param (`conduct_record`, `witness_intake`), else None.
    pub fn param_str(&self, key: &str) -> Option<&str> {
        self.params()?.get(key)?.as_str()
    }
}

/// §1.2 + §1.4: locate the declaration in the card (None = no card or unparseable) and collect
/// every problem in order.
pub fn locate_and_validate(card: Option<&Card>) -> Declaration {
    let mut problems = Vec::new();
    let Some((doc, card_obj)) = card.and_then(|c| Some((c, c.root().as_object()?))) else {
        problems.push(PROBLEM_CARD_NOT_OBJECT.to_string());
        return Declaration {
            extension: None,
            problems,
        };
    };
    let Some(extensions) = card_obj
        .get("capabilities")
        .and_then(|caps| caps.get("extensions"))
        .and_then(|e| e.as_array())
    else {
        problems.push(PROBLEM_EXTENSIONS_NOT_ARRAY.to_string());
        return Declaration {
            extension: None,
            problems,
        };
    };
    // First match wins; later listings are ignored (ref).
    let Some(extension) = extensions.iter().find(|ext| {
        ext.get("uri")
            .and_then(|u| u.as_str())
            .is_some_and(|uri| ACCEPTED_URIS.contains(&uri))
    }) else {
        problems.push(PROBLEM_NOT_DECLARED.to_string());
        return Declaration {
            extension: None,
            problems,
        };
    };
    let found = Extension {
        card: Arc::clone(doc),
        at: extension.index(),
    };
    let Some(params) = extension.get("params").and_then(|p| p.as_object()) else {
        problems.push(PROBLEM_PARAMS_NOT_OBJECT.to_string());
        return Declaration {
            extension: Some(found),
            problems,
        };
    };
    let compensation = params.get("compensation");
    problems.extend(
        compensation_problems(compensation)
            .into_iter()
            .map(String::from),
    );
    if !is_https_string_array(params.get("measured_endpoints")) {
        problems.push(PROBLEM_MEASURED_ENDPOINTS.to_string());
    }
    if !is_https_string(params.get("conduct_record")) {
        problems.push(PROBLEM_CONDUCT_RECORD.to_string());
    }
    if !is_https_string(params.get("witness_intake")) {
        problems.push(PROBLEM_WITNESS_INTAKE.to_string());
    }
    if extension.get("required").and_then(|r| r.as_bool()) == Some(true) {
        problems.push(PROBLEM_REQUIRED_TRUE.to_string());
    }
    if let (Some(top), Some(inner)) = (
        card_obj.get("compensation").and_then(|c| c.as_object()),
        compensation.and_then(|c| c.as_object()),
    ) && !five_keys_agree(top, inner)
    {
        problems.push(PROBLEM_TOP_LEVEL_DISAGREES.to_string());
    }
    Declaration {
        extension: Some(found),
        problems,
    }
}

/// §1.4 step 5: the compensation shape checks, in order (`None`: the key is absent).
pub fn compensation_problems(compensation: Option<JsonRef<'_>>) -> Vec<&'static str> {
    let Some(c) = compensation.and_then(|c| c.as_object()) else {
        return vec![PROBLEM_COMPENSATION_NOT_OBJECT];
    };
    let mut problems = Vec::new();
    let paid_by_ok = c
        .get("paid_by")
        .and_then(|p| p.as_str())
        .is_some_and(|p| PAID_BY_VALUES.contains(&p));
    if !paid_by_ok {
        problems.push(PROBLEM_PAID_BY);
    }
    if !c.get("referral_fee").is_some_and(|v| v.is_boolean()) {
        problems.push(PROBLEM_REFERRAL_FEE);
    }
    if !c.get("listing_fee").is_some_and(|v| v.is_boolean()) {
        problems.push(PROBLEM_LISTING_FEE);
    }
    if let Some(pct) = c.get("success_fee_pct") {
        // NaN fails the range check (§1.4 step 5 lists it as a problem); so does a boolean.
        let in_range = pct.as_f64().is_some_and(|n| (0.0..=100.0).contains(&n));
        if !in_range {
            problems.push(PROBLEM_SUCCESS_FEE);
        }
    }
    if let Some(url) = c.get("disclosure_url")
        && !(url.is_null() || url.is_string())
    {
        problems.push(PROBLEM_DISCLOSURE_URL);
    }
    problems
}

/// §1.4 step 10: canonical text equality of each of the five keys, missing counting as null.
fn five_keys_agree(a: ObjectRef<'_>, b: ObjectRef<'_>) -> bool {
    let canonical = |o: ObjectRef<'_>, key: &str| {
        o.get(key)
            .map_or_else(|| "null".to_string(), |v| v.canonical_string())
    };
    AGREEMENT_KEYS
        .iter()
        .all(|key| canonical(a, key) == canonical(b, key))
}

fn is_https_string(v: Option<JsonRef<'_>>) -> bool {
    v.and_then(|v| v.as_str())
        .is_some_and(|s| s.starts_with("https://"))
}

fn is_https_string_array(v: Option<JsonRef<'_>>) -> bool {
    v.and_then(|v| v.as_array())
        .is_some_and(|items| !items.is_empty() && items.iter().all(|i| is_https_string(Some(i))))
}

/// §2.5 the n3 target: the explicit endpoint, else `measured_endpoints[0]` when it is an
/// https string, else none.
pub fn choose_target(explicit: Option<&str>, declaration: &Declaration) -> Option<String> {
    if let Some(endpoint) = explicit {
        return Some(endpoint.to_string());
    }
    let first = declaration
        .params()?
        .get("measured_endpoints")?
        .as_array()?
        .first()?;
    first
        .as_str()
        .filter(|s| s.starts_with("https://"))
        .map(str::to_string)
}

/// §1.5 paid-model signals from the card's top level, sorted by code point.
pub fn paid_model_signals(card: Option<&Card>) -> Vec<String> {
    let Some(card) = card.and_then(|c| c.root().as_object()) else {
        return Vec::new();
    };
    let mut signals = Vec::new();
    if card
        .get("compensation")
        .and_then(|c| c.get("paid_by"))
        .and_then(|p| p.as_str())
        == Some("buyer")
    {
        signals.push("compensation.paid_by=buyer".to_string());
    }
    if card.get("x402").and_then(|v| v.as_bool()) == Some(true) {
        signals.push("x402=true".to_string());
    }
    if let Some(methods) = card.get("paymentMethods").and_then(|m| m.as_array())
        && !methods.is_empty()
        && methods.iter().all(|m| m.is_string())
    {
        let mut items: Vec<&str> = methods.iter().filter_map(|m| m.as_str()).collect();
        items.sort_unstable();
        signals.push(format!("paymentMethods={}", items.join(",")));
    }
    if card
        .get("pricing")
        .and_then(|p| p.get("model"))
        .and_then(|m| m.as_str())
        == Some("pay-per-use")
    {
        signals.push("pricing.model=pay-per-use".to_string());
    }
    signals.sort_unstable();
    signals
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A card document from a `Value` (written out and read back as the walk reads n1).
    fn doc(v: &Value) -> Card {
        Arc::new(
            crate::json::read(v.to_string().as_bytes(), crate::json::ReadOptions::LENIENT).unwrap(),
        )
    }

    fn doc_text(text: &str) -> Card {
        Arc::new(crate::json::read(text.as_bytes(), crate::json::ReadOptions::LENIENT).unwrap())
    }

    fn card_with_params(params: Value) -> Value {
        json!({"capabilities": {"extensions": [{"uri": EXT, "params": params}]}})
    }

    fn good_params() -> Value {
        json!({
            "compensation": {"paid_by": "public", "referral_fee": false, "listing_fee": false},
            "measured_endpoints": ["https://a.example/mcp"],
            "conduct_record": "https://gate.example/r",
            "witness_intake": "https://ledger.example/witness"
        })
    }

    #[test]
    fn well_formed_declaration_has_no_problems_and_a_target() {
        let card = card_with_params(good_params());
        let d = locate_and_validate(Some(&doc(&card)));
        assert!(d.declared());
        assert!(d.problems.is_empty(), "{:?}", d.problems);
        assert_eq!(
            choose_target(None, &d).as_deref(),
            Some("https://a.example/mcp")
        );
        assert_eq!(
            choose_target(Some("https://x/"), &d).as_deref(),
            Some("https://x/")
        );
    }

    #[test]
    fn structural_problems_stop_early() {
        assert_eq!(
            locate_and_validate(None).problems,
            [PROBLEM_CARD_NOT_OBJECT]
        );
        assert_eq!(
            locate_and_validate(Some(&doc(&json!([])))).problems,
            [PROBLEM_CARD_NOT_OBJECT]
        );
        assert_eq!(
            locate_and_validate(Some(&doc(&json!({"capabilities": {"extensions": {}}})))).problems,
            [PROBLEM_EXTENSIONS_NOT_ARRAY]
        );
        let other = json!({"capabilities": {"extensions": [
            {"uri": "https://w3id.org/horizonshield/conduct/v2"},
            {"uri": "https://gate.horizonshield.dev/ext/conduct/v1/"}
        ]}});
        assert_eq!(
            locate_and_validate(Some(&doc(&other))).problems,
            [PROBLEM_NOT_DECLARED]
        );
        let d = locate_and_validate(Some(&doc(&card_with_params(json!("x")))));
        assert!(d.declared());
        assert_eq!(d.problems, [PROBLEM_PARAMS_NOT_OBJECT]);
    }

    #[test]
    fn every_param_problem_in_order() {
        let mut card = card_with_params(json!({
            "compensation": {"paid_by": "Buyer", "referral_fee": "no", "listing_fee": 0,
                             "success_fee_pct": 101, "disclosure_url": 5},
            "measured_endpoints": ["http://a/"],
            "conduct_record": 7,
        }));
        card["capabilities"]["extensions"][0]["required"] = json!(true);
        card["compensation"] = json!({"paid_by": "Buyer", "referral_fee": "no", "listing_fee": 0,
                                      "success_fee_pct": 101.0, "disclosure_url": 5});
        let d = locate_and_validate(Some(&doc(&card)));
        assert_eq!(
            d.problems,
            [
                PROBLEM_PAID_BY,
                PROBLEM_REFERRAL_FEE,
                PROBLEM_LISTING_FEE,
                PROBLEM_SUCCESS_FEE,
                PROBLEM_DISCLOSURE_URL,
                PROBLEM_MEASURED_ENDPOINTS,
                PROBLEM_CONDUCT_RECORD,
                PROBLEM_WITNESS_INTAKE,
                PROBLEM_REQUIRED_TRUE,
                // 101 vs 101.0: canonical texts differ.
                PROBLEM_TOP_LEVEL_DISAGREES,
            ]
        );
    }

    #[test]
    fn success_fee_bounds_and_null_disclosure() {
        for (pct, ok) in [
            ("0", true),
            ("100", true),
            ("true", false),
            ("-0.5", false),
            (r#""5""#, false),
            ("NaN", false),
            ("Infinity", false),
            ("-Infinity", false),
            ("100.0", true),
            ("1E+2", true),
            ("1e400", false),
        ] {
            let c = doc_text(&format!(
                r#"{{"paid_by": "other", "referral_fee": true, "listing_fee": true, "success_fee_pct": {pct}, "disclosure_url": null}}"#
            ));
            assert_eq!(
                compensation_problems(Some(c.root())).is_empty(),
                ok,
                "{pct}"
            );
        }
    }

    #[test]
    fn compensation_that_is_not_an_object_is_a_problem() {
        let mut params = good_params();
        params["compensation"] = json!("public");
        let d = locate_and_validate(Some(&doc(&card_with_params(params))));
        assert_eq!(
            d.problems,
            vec![PROBLEM_COMPENSATION_NOT_OBJECT.to_string()]
        );
    }

    #[test]
    fn the_first_measured_endpoint_is_walked_only_when_it_is_https() {
        let d = locate_and_validate(Some(&doc(&card_with_params(good_params()))));
        assert_eq!(
            choose_target(None, &d).as_deref(),
            Some("https://a.example/mcp")
        );
        assert_eq!(
            choose_target(Some("https://op.example/x"), &d).as_deref(),
            Some("https://op.example/x")
        );
        let mut params = good_params();
        params["measured_endpoints"] = json!(["http://a.example/mcp", "https://a.example/mcp"]);
        let d = locate_and_validate(Some(&doc(&card_with_params(params))));
        assert_eq!(choose_target(None, &d), None);
    }

    #[test]
    fn missing_equals_null_in_the_agreement() {
        let mut card = card_with_params(good_params());
        card["compensation"] = json!({"paid_by": "public", "referral_fee": false, "listing_fee": false, "disclosure_url": null, "extra": 1});
        assert!(locate_and_validate(Some(&doc(&card))).problems.is_empty());
    }

    #[test]
    fn perma_declared_and_first_listing_wins() {
        let card = json!({"capabilities": {"extensions": [
            {"uri": PERMA, "params": good_params()},
            {"uri": EXT, "params": "ignored"}
        ]}});
        let d = locate_and_validate(Some(&doc(&card)));
        assert_eq!(d.declared_uri(), Some(PERMA));
        assert!(d.problems.is_empty());
    }

    #[test]
    fn paid_signals_are_top_level_and_sorted() {
        let card = json!({
            "x402": true,
            "pricing": {"model": "pay-per-use"},
            "paymentMethods": ["usdc", "card", "usdc"],
            "compensation": {"paid_by": "buyer"}
        });
        assert_eq!(
            paid_model_signals(Some(&doc(&card))),
            [
                "compensation.paid_by=buyer",
                "paymentMethods=card,usdc,usdc",
                "pricing.model=pay-per-use",
                "x402=true"
            ]
        );
        assert!(
            paid_model_signals(Some(&doc(&json!({"x402": "true", "paymentMethods": []}))))
                .is_empty()
        );
        assert!(
            paid_model_signals(Some(&doc(&card_with_params(
                json!({"compensation": {"paid_by": "buyer"}})
            ))))
            .is_empty()
        );
    }
}
