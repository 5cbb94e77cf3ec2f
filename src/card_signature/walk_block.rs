//! The `card_signature` block of a walk record and its attribution lines, exactly as the
//! reference walker 1.5.0 writes them (conduct-walk.md §4.3, §4.4). Pure: the walk fetches the
//! JWKS (at [`jwks_url`], between n2 and n3) and hands its answer in.
//!
//! Only ES256, only the two forms the reference tries (`served-rfc8785`, `a2a-sdk-proto`), only
//! the first key with the row's kid: two witnesses of the same card must write the same bytes.
//! conduct-walker's own, richer verification ([`super::verify_card`]) is for `card verify`, the
//! pages and the store, never for the record.

use super::es256::Es256Check;
use super::header::{HeaderSummary, python_json_object, python_lenient_b64url_decode};
use super::profile::{LONE_SURROGATE_MARK, Profile, canonicalize_card};
use super::served_form::served_rfc8785_without_signatures;
use crate::canonical::{python_float_str, python_int_repr, python_repr_str};
use crate::digest::sha256_hex;
use crate::json::JsonRef;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};

/// The form names, in the order they are tried and listed.
pub const FORM_SERVED: &str = "served-rfc8785";
pub const FORM_SDK: &str = "a2a-sdk-proto";

/// `verified_reason` of a signed card whose header names no https `jku` (§4.3 B).
pub const REASON_NO_HTTPS_JKU: &str =
    "not checked: the signature header names no https jku, so no key was fetched";
/// `verified_reason` when every row was tried in both forms and none verifies (§4.3 C.5).
pub const REASON_NONE_VERIFIES: &str =
    "every signature was checked in both forms with the key at jku and none verifies";
/// Head of the `verified: null` reason of C.5; the gaps follow, joined by `"; "`.
pub const REASON_NOT_ESTABLISHED_HEAD: &str =
    "not established: no signature verified in the forms this client could check; ";
/// The gap when the SDK form is absent, whatever the cause (ref).
pub const GAP_SDK_FORM: &str =
    "a2a-sdk-proto not checked: install a2a-sdk to compute the official form";

pub const NOTE_HEADER_UNREADABLE: &str = "protected header unreadable";
pub const NOTE_NO_KEY_WITH_KID: &str = "no key with this kid in the JWKS at jku";
pub const NOTE_JWKS_NOT_FETCHED: &str = "the JWKS at jku was not fetched";

/// §4.3 D: the lines a verified card adds to `does_not_establish`.
pub const ATTRIBUTION_FOREIGN_KEY_HOST: &str =
    "that the walked operator signed this card: the verifying key is served on another host";
pub const ATTRIBUTION_SDK_FORM_ONLY: &str = "that the compensation declaration as served is covered by a signature: the only verifying signature is over the official SDK form, which leaves members outside the AgentCard schema out";
/// §4.3 D: `verified` false.
pub const ATTRIBUTION_NONE_VERIFIES: &str = "that the walked operator published this card: it carries signatures and none verifies in either form with the key at its jku, so these bytes are attributable to this walk alone";

/// What the JWKS request observed: the HTTP status (0 when there was no HTTP answer) and the
/// body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwksAnswer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// The block and the lines it adds to the record's two arrays.
#[derive(Debug, Clone, PartialEq)]
pub struct WalkBlock {
    pub block: Value,
    /// The `establishes` line of a verified card.
    pub establishes: Option<String>,
    pub does_not_establish: Vec<String>,
}

/// The card's non-empty `signatures` array, as values (small: a card is capped).
fn signatures(card: Option<JsonRef<'_>>) -> Option<Vec<Value>> {
    let signatures = card?.as_object()?.get("signatures")?.as_array()?;
    (!signatures.is_empty()).then(|| signatures.iter().map(|s| s.to_value()).collect())
}

/// Where the walk fetches the JWKS (§4.3 C): the first entry's `jku` when it is a non-empty
/// string starting with `https://`; else nothing is fetched.
pub fn jwks_url(card: Option<JsonRef<'_>>) -> Option<String> {
    let signatures = signatures(card)?;
    let summary = HeaderSummary::read(&signatures, "");
    summary.jku.filter(|jku| jku.starts_with("https://"))
}

/// Whether the reference's HTTP client (CPython 3.11's urllib) can send a request to `jku`,
/// and to what: the URL to fetch, or why the reference sends nothing, in which case its record
/// says "not fetched" with `jwks_status` 0 and ours must too (issue 42; the oracle judges it,
/// and `tests/jku_request_rule.rs` holds the rule against CPython itself).
///
/// urllib strips whitespace from both ends (Python's `str.strip`: Unicode whitespace and
/// U+001C–U+001F), drops the fragment after the last `#`, percent-decodes the host and reads
/// the port after its last `:` as a Python integer. It then refuses a request with a space or
/// control character (U+0000–U+0020, U+007F) in the host or in the path and query, or a
/// non-ASCII character in the path and query (the request line is ASCII). A WHATWG URL parser
/// would instead percent-encode them, or remove tabs and line breaks, and send.
///
/// What urllib sends raw that a WHATWG parser reads otherwise is percent-encoded here: a `#`
/// left before the last one (urllib sends it in the target; WHATWG would cut the fragment
/// there) and a `\` (WHATWG reads it as `/`). The parser percent-encodes a few more characters
/// urllib sends raw (`"`, `<`, `>`, `{`, `}`, `` ` ``); a server that decodes its target sees
/// the same path either way (docs/reference/differences.md).
pub fn jwks_request_url(jku: &str) -> Result<String, &'static str> {
    let stripped = jku.trim_matches(python_space);
    let url = stripped.rsplit_once('#').map_or(stripped, |(url, _)| url);
    let (scheme, rest) = url.split_once("//").unwrap_or((url, ""));
    let target_at = rest.find(['/', '?']).unwrap_or(rest.len());
    let (host, target) = rest.split_at(target_at);
    let host = percent_encoding::percent_decode_str(host).decode_utf8_lossy();
    let (name, port) = python_host_port(&host)?;
    if format!("{name}{target}")
        .chars()
        .any(|c| c <= ' ' || c == '\u{7f}')
    {
        return Err("a space or control character in the URL");
    }
    if !target.is_ascii() {
        return Err("a non-ASCII character in the path or query");
    }
    let port = port.map(|p| format!(":{p}")).unwrap_or_default();
    let target = target.replace('#', "%23").replace('\\', "%5C");
    Ok(format!("{scheme}//{name}{port}{target}"))
}

/// Python's `str.isspace`: Unicode whitespace and the four separators U+001C–U+001F.
fn python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// http.client's split of a (percent-decoded) host into a name and a port: the port after the
/// last `:` outside `[…]`, read as Python's `int` reads it (whitespace around it, a sign,
/// `_` between digits), none when empty. A name no connection can reach, or a port outside
/// 0–65535, fails there before a request is written.
fn python_host_port(host: &str) -> Result<(&str, Option<u16>), &'static str> {
    let (name, port) = match host.rfind(':') {
        Some(i) if host.rfind(']').is_none_or(|j| i > j) => (&host[..i], Some(&host[i + 1..])),
        _ => (host, None),
    };
    let bracketed = name.starts_with('[') && name.ends_with(']');
    if !bracketed && name.contains(['/', '?', '#', '@', '\\', '%', '[', ']', ':']) {
        return Err("a host no connection can reach");
    }
    let Some(port) = port.filter(|p| !p.is_empty()) else {
        return Ok((name, None));
    };
    let digits = port.trim_matches(python_space);
    let digits = digits.strip_prefix('+').unwrap_or(digits);
    let well_formed = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    if !well_formed {
        return Err("a port that is not a number");
    }
    digits
        .replace('_', "")
        .parse::<u16>()
        .map(|p| (name, Some(p)))
        .map_err(|_| "a port outside 0-65535")
}

/// A decoded protected header, read as the reference reads it (§4.3 B).
fn header_of(entry: &Value) -> Option<Map<String, Value>> {
    let protected = entry.as_object()?.get("protected")?.as_str()?;
    python_json_object(&python_lenient_b64url_decode(protected)?)
}

/// Python's `str()` of a parsed JSON value (the alg of a note).
fn python_text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        other => python_repr(other.unwrap_or(&Value::Null)),
    }
}

fn python_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(b) => crate::canonical::python_bool(*b).into(),
        Value::Number(n) => {
            let text = n.to_string();
            if crate::canonical::number_is_float(&text) || text == crate::json::NAN_MARKER {
                python_float_str(crate::json::number_f64(n))
            } else {
                python_int_repr(&text)
            }
        }
        Value::String(s) => python_repr_str(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(python_repr).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let members: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", python_repr_str(k), python_repr(v)))
                .collect();
            format!("{{{}}}", members.join(", "))
        }
    }
}

/// One payload form that exists for this card.
struct Form {
    name: &'static str,
    text: String,
}

/// The forms of §4.3 C.2 over `bare`, and why the served one is missing when it is.
fn forms(card: JsonRef<'_>) -> (Vec<Form>, Option<&'static str>) {
    let mut forms = Vec::with_capacity(2);
    let mut served_gap = None;
    match served_rfc8785_without_signatures(card) {
        Ok(text) => forms.push(Form {
            name: FORM_SERVED,
            text,
        }),
        Err(why) => served_gap = Some(why.reason()),
    }
    if let Some(text) = sdk_form(card) {
        forms.push(Form {
            name: FORM_SDK,
            text,
        });
    }
    (forms, served_gap)
}

/// The `a2a-sdk-proto` form (a2a-sdk 1.3.0's canonical form of `bare`), absent when the SDK
/// would refuse to parse `bare` into an AgentCard (§4.3 C.2). The reference oracle's
/// differential holds it against the SDK itself.
pub fn sdk_form(card: JsonRef<'_>) -> Option<String> {
    let mut bare = sdk_input(card);
    bare.as_object_mut()?.remove("signatures");
    let canonical = canonicalize_card(&bare, Profile::Sdk).ok()?;
    // A lone surrogate is refused wherever the parser meets it: a string or name the AgentCard
    // keeps (protobuf cannot hold it), or a member name it looks up, even one it then ignores
    // or drops (the last step of an uncovered member's pointer). Inside the value of a member
    // the parser ignores, it does no harm.
    let met_by_parser = canonical.uncovered.iter().any(|u| {
        u.pointer
            .rsplit('/')
            .next()
            .is_some_and(|last| last.contains(LONE_SURROGATE_MARK))
    });
    let text = String::from_utf8(canonical.bytes).ok()?;
    if met_by_parser || text.contains(LONE_SURROGATE_MARK) {
        return None;
    }
    // The SDK's form of an AgentCard with nothing set is JSON null.
    Some(if text == "{}" {
        "null".to_string()
    } else {
        text
    })
}

/// The card as the SDK's parser meets it: Python's dict, in document order (duplicates: first
/// position, last value). Where a member is written in both spellings (`default_input_modes`
/// and `defaultInputModes`), protobuf's parser sets the field twice and the later one wins; the
/// projector reads the camelCase spelling, so it is given the later value.
fn sdk_input(value: JsonRef<'_>) -> Value {
    if value.holds_lone_surrogate() && value.is_string() {
        return Value::String(LONE_SURROGATE_MARK.to_string());
    }
    if let Some(items) = value.as_array() {
        return Value::Array(items.iter().map(sdk_input).collect());
    }
    let Some(object) = value.as_object() else {
        return value.to_value();
    };
    // One pass over the members as written: first position, last value. Names holding a lone
    // surrogate are told apart by their position.
    let mut order: Vec<(String, JsonRef<'_>)> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, (name, member)) in object.members_with_names().enumerate() {
        let name = if name.holds_lone_surrogate() {
            format!("{LONE_SURROGATE_MARK}{i}")
        } else {
            name.as_str().unwrap_or_default().to_string()
        };
        match at.get(&name) {
            Some(&j) => order[j].1 = member,
            None => {
                at.insert(name.clone(), order.len());
                order.push((name, member));
            }
        }
    }
    let mut map = Map::new();
    for (name, member) in &order {
        map.insert(name.clone(), sdk_input(*member));
    }
    for (i, (name, _)) in order.iter().enumerate() {
        let camel = snake_to_camel(name);
        if camel == *name {
            continue;
        }
        if let Some(&camel_at) = at.get(&camel)
            && camel_at < i
        {
            let later = map.get(name).cloned();
            let earlier = map.get(&camel).cloned();
            if let (Some(later), Some(earlier)) = (later, earlier) {
                map.insert(camel.clone(), later);
                map.insert(name.clone(), earlier);
            }
        }
    }
    Value::Object(map)
}

/// protobuf's JSON name of a field name (`default_input_modes` → `defaultInputModes`).
pub(super) fn snake_to_camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// One row of §4.3 C.4.
struct Row {
    index: usize,
    kid: Option<String>,
    forms_tried: Vec<&'static str>,
    verified_in: Vec<&'static str>,
    note: Option<String>,
}

impl Row {
    fn to_value(&self) -> Value {
        let mut row = json!({
            "index": self.index,
            "kid": self.kid,
            "forms_tried": self.forms_tried,
            "verified_in": self.verified_in,
        });
        if let Some(note) = &self.note {
            row["note"] = Value::String(note.clone());
        }
        row
    }
}

fn check_entry(
    index: usize,
    entry: &Value,
    keys: &[Value],
    jwks_parsed: bool,
    forms: &[Form],
) -> Row {
    let mut row = Row {
        index,
        kid: None,
        forms_tried: Vec::new(),
        verified_in: Vec::new(),
        note: None,
    };
    let Some(header) = header_of(entry) else {
        row.note = Some(NOTE_HEADER_UNREADABLE.into());
        return row;
    };
    row.kid = header.get("kid").and_then(Value::as_str).map(str::to_owned);
    let alg = header.get("alg");
    if alg.and_then(Value::as_str) != Some("ES256") {
        row.note = Some(format!(
            "alg {} is not checked by this client",
            python_text(alg)
        ));
        return row;
    }
    // A null row kid matches a key without a kid (ref: dict.get compares None with None).
    let key =
        keys.iter()
            .filter(|k| k.is_object())
            .find(|k| match (k.get("kid"), row.kid.as_deref()) {
                (None | Some(Value::Null), None) => true,
                (Some(Value::String(a)), Some(b)) => a == b,
                _ => false,
            });
    let Some(key) = key else {
        row.note = Some(
            if jwks_parsed {
                NOTE_NO_KEY_WITH_KID
            } else {
                NOTE_JWKS_NOT_FETCHED
            }
            .into(),
        );
        return row;
    };
    let protected = entry
        .get("protected")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let signature = entry.get("signature").and_then(Value::as_str);
    let Some(check) = Es256Check::new(key, signature) else {
        return row;
    };
    for form in forms {
        let input = format!("{protected}.{}", URL_SAFE_NO_PAD.encode(&form.text));
        row.forms_tried.push(form.name);
        if check.verifies(input.as_bytes()) {
            row.verified_in.push(form.name);
        }
    }
    row
}

/// The block (§4.3 A–C) and its attribution lines (§4.3 D). `card` is n1's parsed body;
/// `origin` the walk's base; `jwks` what the request to [`jwks_url`] observed (None when
/// nothing was fetched). The privacy modes null `jku` later, when the record is built.
pub fn build(card: Option<JsonRef<'_>>, origin: &str, jwks: Option<&JwksAnswer>) -> WalkBlock {
    let Some(signatures) = signatures(card) else {
        return WalkBlock {
            block: super::absent_block(),
            establishes: None,
            does_not_establish: vec![super::ATTRIBUTION_UNSIGNED.to_string()],
        };
    };
    let card = card.expect("signatures come from a card");
    let summary = HeaderSummary::read(&signatures, origin);
    let mut block = Map::new();
    summary.write_into(&mut block, false);
    let https_jku = summary
        .jku
        .as_deref()
        .is_some_and(|j| j.starts_with("https://"));
    if !https_jku {
        block.insert("verified".into(), Value::Null);
        block.insert("verified_reason".into(), REASON_NO_HTTPS_JKU.into());
        return finish(block, &summary);
    }

    let answer = jwks.cloned().unwrap_or(JwksAnswer {
        status: 0,
        body: Vec::new(),
    });
    let ok = answer.status == 200;
    let jwks_doc = ok
        .then(|| crate::json::read(&answer.body, crate::json::ReadOptions::LENIENT).ok())
        .flatten();
    let keys: Vec<Value> = jwks_doc
        .as_ref()
        .and_then(|d| d.root().as_object()?.get("keys")?.as_array())
        .map(|keys| keys.iter().map(|k| k.to_value()).collect())
        .unwrap_or_default();
    let (forms, served_gap) = forms(card);
    let rows: Vec<Row> = signatures
        .iter()
        .enumerate()
        .map(|(i, entry)| check_entry(i, entry, &keys, jwks_doc.is_some(), &forms))
        .collect();

    block.insert("jwks_status".into(), answer.status.into());
    block.insert(
        "jwks_sha256".into(),
        ok.then(|| sha256_hex(&answer.body)).into(),
    );
    block.insert(
        "signatures".into(),
        Value::Array(rows.iter().map(Row::to_value).collect()),
    );
    block.insert(
        "forms_reproduced".into(),
        forms.iter().map(|f| f.name).collect::<Vec<_>>().into(),
    );
    block.insert(
        "form_payload_sha256".into(),
        Value::Object(
            forms
                .iter()
                .map(|f| (f.name.to_string(), sha256_hex(f.text.as_bytes()).into()))
                .collect(),
        ),
    );

    let verifying: Vec<&Row> = rows.iter().filter(|r| !r.verified_in.is_empty()).collect();
    if !verifying.is_empty() {
        let reason: Vec<String> = verifying
            .iter()
            .map(|r| {
                format!(
                    "signature[{}] verifies in {}",
                    r.index,
                    r.verified_in.join(", ")
                )
            })
            .collect();
        block.insert("verified".into(), true.into());
        block.insert("verified_reason".into(), reason.join("; ").into());
        let covers = verifying
            .iter()
            .any(|r| r.verified_in.contains(&FORM_SERVED));
        block.insert("covers_compensation".into(), covers.into());
    } else if rows
        .iter()
        .all(|r| r.forms_tried == [FORM_SERVED, FORM_SDK])
    {
        block.insert("verified".into(), false.into());
        block.insert("verified_reason".into(), REASON_NONE_VERIFIES.into());
    } else {
        let mut gaps = Vec::new();
        if let Some(why) = served_gap {
            gaps.push(format!("{FORM_SERVED} not reproduced: {why}"));
        }
        if !forms.iter().any(|f| f.name == FORM_SDK) {
            gaps.push(GAP_SDK_FORM.to_string());
        }
        if jwks_doc.is_none() {
            gaps.push(format!(
                "the JWKS at jku was not fetched (status {})",
                answer.status
            ));
        }
        gaps.extend(rows.iter().filter_map(|r| r.note.clone()));
        block.insert("verified".into(), Value::Null);
        block.insert(
            "verified_reason".into(),
            format!("{REASON_NOT_ESTABLISHED_HEAD}{}", gaps.join("; ")).into(),
        );
    }
    finish(block, &summary)
}

/// The attribution lines of §4.3 D from the final block.
fn finish(block: Map<String, Value>, summary: &HeaderSummary) -> WalkBlock {
    let mut establishes = None;
    let mut does_not_establish = Vec::new();
    match block.get("verified") {
        Some(Value::Bool(true)) => {
            let same_host = summary.jku_same_host == Some(true);
            let host = if same_host {
                "the walked host"
            } else {
                "a host other than the walked one"
            };
            let kid = summary.kid.as_deref().unwrap_or("None");
            let reason = block["verified_reason"].as_str().unwrap_or_default();
            establishes = Some(format!(
                "that the card bytes were signed by the key served at its jku on {host} (kid {kid}): {reason}"
            ));
            if !same_host {
                does_not_establish.push(ATTRIBUTION_FOREIGN_KEY_HOST.to_string());
            }
            if block.get("covers_compensation") == Some(&Value::Bool(false)) {
                does_not_establish.push(ATTRIBUTION_SDK_FORM_ONLY.to_string());
            }
        }
        Some(Value::Bool(false)) => {
            does_not_establish.push(ATTRIBUTION_NONE_VERIFIES.to_string());
        }
        _ => {
            let reason = block
                .get("verified_reason")
                .and_then(Value::as_str)
                .unwrap_or_default();
            does_not_establish.push(format!("that the walked operator published this card: a signature is present but this walk could not verify it ({reason}), so these bytes are attributable to this walk alone"));
        }
    }
    WalkBlock {
        block: Value::Object(block),
        establishes,
        does_not_establish,
    }
}
