//! Card claims the listed proposals do not back (seed §4). These are findings, never failures:
//! they change no outcome and no verdict.
//!
//! Price detection is deliberately narrow and matching deliberately lenient. A finding lands in
//! an append-only record about a named agent, so a wrongly reported "unbacked price" costs more
//! than a missed one: only amounts written with a currency symbol or a known ISO 4217 code count
//! as price claims, and a claim is backed when any verified proposal in that currency carries
//! the same amount at any decimal scale (Agent SoW money is integers in the smallest unit, whose
//! size the document does not state).

use super::declaration::TermsDeclaration;
use super::verify::ProposalResult;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::fmt;

/// `kind` of a skill whose id is no listed proposal's `offering`.
pub const FINDING_SKILL_WITHOUT_PROPOSAL: &str = "skill_names_no_proposal_offering";
/// `kind` of card prose stating a price no verified proposal backs.
pub const FINDING_UNBACKED_PRICE: &str = "price_claim_not_backed_by_a_proposal";
/// `kind` of a verified proposal whose `scope.offerings` lacks the card entry's `offering`.
pub const FINDING_OFFERING_NOT_IN_SCOPE: &str = "offering_not_in_proposal_scope";

/// ISO 4217 codes recognised in prose without a proposal naming them. Codes a verified proposal
/// uses (e.g. a mesh currency) are added per card.
const KNOWN_CURRENCY_CODES: [&str; 20] = [
    "USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "CNY", "INR", "SEK", "NOK", "DKK", "NZD",
    "SGD", "HKD", "KRW", "BRL", "MXN", "ZAR", "PLN",
];

/// Largest power of ten tried when matching a stated amount to a minor-unit integer.
const MAX_MINOR_UNIT_EXPONENT: u32 = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    SkillWithoutProposal {
        skill_id: String,
    },
    UnbackedPrice {
        /// Where in the card: `description`, `skills[2].description`, `skills[0].examples[1]`.
        location: String,
        claim: String,
    },
    OfferingNotInScope {
        url: String,
        offering: String,
    },
}

impl Finding {
    pub fn kind(&self) -> &'static str {
        match self {
            Finding::SkillWithoutProposal { .. } => FINDING_SKILL_WITHOUT_PROPOSAL,
            Finding::UnbackedPrice { .. } => FINDING_UNBACKED_PRICE,
            Finding::OfferingNotInScope { .. } => FINDING_OFFERING_NOT_IN_SCOPE,
        }
    }

    pub fn to_json(&self) -> Value {
        let mut v = match self {
            Finding::SkillWithoutProposal { skill_id } => json!({ "skill": skill_id }),
            Finding::UnbackedPrice { location, claim } => {
                json!({ "location": location, "claim": claim })
            }
            Finding::OfferingNotInScope { url, offering } => {
                json!({ "url": url, "offering": offering })
            }
        };
        v["kind"] = json!(self.kind());
        v["detail"] = json!(self.to_string());
        v
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::SkillWithoutProposal { skill_id } => write!(
                f,
                "skill {skill_id:?} is no listed proposal's offering: the card publishes no terms for it"
            ),
            Finding::UnbackedPrice { location, claim } => write!(
                f,
                "card {location} states the price {claim:?}, which no verified proposal backs"
            ),
            Finding::OfferingNotInScope { url, offering } => write!(
                f,
                "the proposal at {url} is listed for offering {offering:?}, which its scope.offerings does not name"
            ),
        }
    }
}

/// All findings for a card whose terms declaration was verified into `results`.
pub fn collect(
    card: &Value,
    declaration: &TermsDeclaration,
    results: &[ProposalResult],
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let offerings: BTreeSet<&str> = declaration
        .entries
        .iter()
        .filter_map(|e| e.offering.as_deref())
        .collect();
    let skills = card.get("skills").and_then(Value::as_array);
    for skill in skills.into_iter().flatten() {
        if let Some(id) = skill.get("id").and_then(Value::as_str)
            && !offerings.contains(id)
        {
            findings.push(Finding::SkillWithoutProposal {
                skill_id: id.to_string(),
            });
        }
    }
    for result in results {
        let (Some(verified), Some(offering)) = (&result.verified, &result.entry.offering) else {
            continue;
        };
        let in_scope = verified
            .document
            .pointer("/scope/offerings")
            .and_then(Value::as_array)
            .is_some_and(|list| list.iter().any(|o| o.as_str() == Some(offering)));
        if !in_scope {
            findings.push(Finding::OfferingNotInScope {
                url: result.entry.url.clone().unwrap_or_default(),
                offering: offering.clone(),
            });
        }
    }
    let prices: Vec<(&str, Vec<u128>)> = results
        .iter()
        .filter_map(|r| r.verified.as_ref())
        .filter_map(|v| {
            let price = v.document.get("price")?;
            let currency = price.get("currency")?.as_str()?;
            let mut amounts = Vec::new();
            collect_integers(price, &mut amounts);
            Some((currency, amounts))
        })
        .collect();
    let mut codes: BTreeSet<&str> = KNOWN_CURRENCY_CODES.into_iter().collect();
    codes.extend(prices.iter().map(|(c, _)| *c));
    for (location, text) in prose(card) {
        for claim in find_price_claims(&text, &codes) {
            let backed = prices.iter().any(|(currency, amounts)| {
                *currency == claim.currency && amounts.iter().any(|&n| claim.matches(n))
            });
            if !backed {
                findings.push(Finding::UnbackedPrice {
                    location: location.clone(),
                    claim: claim.text,
                });
            }
        }
    }
    findings
}

/// The card prose a reader takes as the offer: the card and skill descriptions, skill examples.
fn prose(card: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(d) = card.get("description").and_then(Value::as_str) {
        out.push(("description".to_string(), d.to_string()));
    }
    let skills = card.get("skills").and_then(Value::as_array);
    for (i, skill) in skills.into_iter().flatten().enumerate() {
        if let Some(d) = skill.get("description").and_then(Value::as_str) {
            out.push((format!("skills[{i}].description"), d.to_string()));
        }
        let examples = skill.get("examples").and_then(Value::as_array);
        for (j, ex) in examples.into_iter().flatten().enumerate() {
            if let Some(text) = ex.as_str() {
                out.push((format!("skills[{i}].examples[{j}]"), text.to_string()));
            }
        }
    }
    out
}

fn collect_integers(value: &Value, out: &mut Vec<u128>) {
    match value {
        Value::Number(n) => {
            if let Ok(i) = n.to_string().parse::<u128>() {
                out.push(i);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_integers(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_integers(v, out)),
        _ => {}
    }
}

/// An amount with a currency found in prose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceClaim {
    /// The text as written, e.g. `$25.00` or `2.5 XCR`.
    pub text: String,
    /// ISO 4217 style code.
    pub currency: String,
    /// The amount's digits without separators; the value is `mantissa / 10^scale`.
    pub mantissa: u128,
    pub scale: u32,
}

impl PriceClaim {
    /// Whether a smallest-unit integer equals this amount at some decimal scale.
    fn matches(&self, minor_units: u128) -> bool {
        (self.scale..=MAX_MINOR_UNIT_EXPONENT).any(|k| {
            10u128
                .checked_pow(k - self.scale)
                .and_then(|p| self.mantissa.checked_mul(p))
                == Some(minor_units)
        })
    }
}

fn symbol_currency(c: char) -> Option<&'static str> {
    match c {
        '$' => Some("USD"),
        '€' => Some("EUR"),
        '£' => Some("GBP"),
        '¥' => Some("JPY"),
        _ => None,
    }
}

/// Find `$25`, `25 €`, `USD 1,200.50`, `2.5 XCR` style amounts.
pub fn find_price_claims(text: &str, codes: &BTreeSet<&str>) -> Vec<PriceClaim> {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    let is_code_at = |start: usize| -> Option<String> {
        let end = start + 3;
        if end > n {
            return None;
        }
        let word: String = chars[start..end].iter().collect();
        let bounded = (start == 0 || !chars[start - 1].is_alphanumeric())
            && (end == n || !chars[end].is_alphanumeric());
        (bounded && codes.contains(word.as_str())).then_some(word)
    };
    let mut claims = Vec::new();
    let mut i = 0;
    while i < n {
        let starts_number = chars[i].is_ascii_digit()
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '.'));
        if !starts_number {
            i += 1;
            continue;
        }
        let Some((end, mantissa, scale)) = parse_amount(&chars, i) else {
            i += 1;
            continue;
        };
        // Currency just before (one optional space) or just after.
        let before = if i > 0 && chars[i - 1] == ' ' {
            i - 1
        } else {
            i
        };
        let after = if end < n && chars[end] == ' ' {
            end + 1
        } else {
            end
        };
        let found = if before > 0
            && let Some(code) = symbol_currency(chars[before - 1])
        {
            Some((code.to_string(), before - 1, end))
        } else if before >= 3
            && let Some(code) = is_code_at(before - 3)
        {
            Some((code, before - 3, end))
        } else if after < n
            && let Some(code) = symbol_currency(chars[after])
        {
            Some((code.to_string(), i, after + 1))
        } else {
            is_code_at(after).map(|code| (code, i, after + 3))
        };
        if let Some((currency, start, stop)) = found {
            claims.push(PriceClaim {
                text: chars[start..stop].iter().collect(),
                currency,
                mantissa,
                scale,
            });
        }
        i = end;
    }
    claims
}

/// Digits with `,` thousands groups and an optional `.` fraction. Returns (end, mantissa, scale).
fn parse_amount(chars: &[char], start: usize) -> Option<(usize, u128, u32)> {
    let n = chars.len();
    let mut digits = String::new();
    let mut k = start;
    let mut scale = 0;
    while k < n && chars[k].is_ascii_digit() {
        digits.push(chars[k]);
        k += 1;
    }
    while k + 3 < n
        && chars[k] == ','
        && chars[k + 1..k + 4].iter().all(char::is_ascii_digit)
        && (k + 4 == n || !chars[k + 4].is_ascii_digit())
    {
        digits.extend(&chars[k + 1..k + 4]);
        k += 4;
    }
    if k + 1 < n && chars[k] == '.' && chars[k + 1].is_ascii_digit() {
        k += 1;
        while k < n && chars[k].is_ascii_digit() {
            digits.push(chars[k]);
            scale += 1;
            k += 1;
        }
    }
    // Absurdly long digit runs are not prices; u128 overflow would be the only other outcome.
    let mantissa = digits.parse::<u128>().ok()?;
    Some((k, mantissa, scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(text: &str) -> Vec<(String, String, u128, u32)> {
        let codes: BTreeSet<&str> = KNOWN_CURRENCY_CODES.into_iter().chain(["XCR"]).collect();
        find_price_claims(text, &codes)
            .into_iter()
            .map(|c| (c.text, c.currency, c.mantissa, c.scale))
            .collect()
    }

    #[test]
    fn finds_symbol_and_code_amounts() {
        assert_eq!(
            claims("Only $25 per task, or 1,200.50 EUR a month; XCR 2.5 for members; 30 €."),
            vec![
                ("$25".into(), "USD".into(), 25, 0),
                ("1,200.50 EUR".into(), "EUR".into(), 120050, 2),
                ("XCR 2.5".into(), "XCR".into(), 25, 1),
                ("30 €".into(), "EUR".into(), 30, 0),
            ]
        );
    }

    #[test]
    fn ignores_numbers_without_currency() {
        assert!(claims("Reconciles 200 invoices a day with GPT 4 in 3.5 minutes; v2.0").is_empty());
        assert!(claims("USDT 5 or 5 USDX").is_empty());
    }

    #[test]
    fn matching_is_scale_lenient() {
        let c = |m, s| PriceClaim {
            text: String::new(),
            currency: "XCR".into(),
            mantissa: m,
            scale: s,
        };
        assert!(c(25, 0).matches(2_500_000));
        assert!(c(25, 1).matches(2_500_000));
        assert!(c(25, 0).matches(25));
        assert!(!c(26, 0).matches(2_500_000));
        assert!(!c(25, 2).matches(2));
    }
}
