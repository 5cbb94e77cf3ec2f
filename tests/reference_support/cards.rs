//! A seeded generator of Agent Card texts for the SDK canonical-form differential: mostly cards
//! shaped like the A2A 1.0 `AgentCard` message (camelCase or snake_case member names), with
//! unknown members, `params` structs of any JSON, and the values that stress a canonical form
//! (non-integer and huge numbers, escapes, characters above U+FFFF, empty values); now and then
//! a wrong type, a duplicate name, a `NaN` or a lone surrogate escape. The text is written
//! directly, so it can hold what a JSON library would not write.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A member kind of the generated schema.
#[derive(Clone, Copy)]
enum K {
    Str,
    Bool,
    Msg(&'static [F]),
    /// `google.protobuf.Struct`: any JSON object.
    Struct,
    /// `map<string, string>`.
    StrMap,
    /// `map<string, Msg>`.
    MsgMap(&'static [F]),
}

/// One member: JSON name, proto name, kind, repeated.
#[derive(Clone, Copy)]
struct F(&'static str, &'static str, K, bool);

const STRING_LIST: &[F] = &[F("list", "list", K::Str, true)];
const SECURITY_REQUIREMENT: &[F] = &[F("schemes", "schemes", K::MsgMap(STRING_LIST), false)];
const API_KEY: &[F] = &[
    F("description", "description", K::Str, false),
    F("location", "location", K::Str, false),
    F("name", "name", K::Str, false),
];
const HTTP_AUTH: &[F] = &[
    F("bearerFormat", "bearer_format", K::Str, false),
    F("description", "description", K::Str, false),
    F("scheme", "scheme", K::Str, false),
];
const FLOW: &[F] = &[
    F("authorizationUrl", "authorization_url", K::Str, false),
    F("refreshUrl", "refresh_url", K::Str, false),
    F("scopes", "scopes", K::StrMap, false),
    F("tokenUrl", "token_url", K::Str, false),
    F("pkceRequired", "pkce_required", K::Bool, false),
];
const FLOWS: &[F] = &[
    F(
        "authorizationCode",
        "authorization_code",
        K::Msg(FLOW),
        false,
    ),
    F(
        "clientCredentials",
        "client_credentials",
        K::Msg(FLOW),
        false,
    ),
    F("deviceCode", "device_code", K::Msg(FLOW), false),
    F("implicit", "implicit", K::Msg(FLOW), false),
    F("password", "password", K::Msg(FLOW), false),
];
const OAUTH2: &[F] = &[
    F("description", "description", K::Str, false),
    F("flows", "flows", K::Msg(FLOWS), false),
    F("oauth2MetadataUrl", "oauth2_metadata_url", K::Str, false),
];
const OPENID: &[F] = &[
    F("description", "description", K::Str, false),
    F("openIdConnectUrl", "open_id_connect_url", K::Str, false),
];
const MTLS: &[F] = &[F("description", "description", K::Str, false)];
/// A oneof: the generator sets one member, now and then two.
const SECURITY_SCHEME: &[F] = &[
    F(
        "apiKeySecurityScheme",
        "api_key_security_scheme",
        K::Msg(API_KEY),
        false,
    ),
    F(
        "httpAuthSecurityScheme",
        "http_auth_security_scheme",
        K::Msg(HTTP_AUTH),
        false,
    ),
    F(
        "mtlsSecurityScheme",
        "mtls_security_scheme",
        K::Msg(MTLS),
        false,
    ),
    F(
        "oauth2SecurityScheme",
        "oauth2_security_scheme",
        K::Msg(OAUTH2),
        false,
    ),
    F(
        "openIdConnectSecurityScheme",
        "open_id_connect_security_scheme",
        K::Msg(OPENID),
        false,
    ),
];
const INTERFACE: &[F] = &[
    F("protocolBinding", "protocol_binding", K::Str, false),
    F("protocolVersion", "protocol_version", K::Str, false),
    F("tenant", "tenant", K::Str, false),
    F("url", "url", K::Str, false),
];
const PROVIDER: &[F] = &[
    F("organization", "organization", K::Str, false),
    F("url", "url", K::Str, false),
];
const EXTENSION: &[F] = &[
    F("description", "description", K::Str, false),
    F("params", "params", K::Struct, false),
    F("required", "required", K::Bool, false),
    F("uri", "uri", K::Str, false),
];
const CAPABILITIES: &[F] = &[
    F("extendedAgentCard", "extended_agent_card", K::Bool, false),
    F("extensions", "extensions", K::Msg(EXTENSION), true),
    F("pushNotifications", "push_notifications", K::Bool, false),
    F("streaming", "streaming", K::Bool, false),
];
const SKILL: &[F] = &[
    F("description", "description", K::Str, false),
    F("examples", "examples", K::Str, true),
    F("id", "id", K::Str, false),
    F("inputModes", "input_modes", K::Str, true),
    F("name", "name", K::Str, false),
    F("outputModes", "output_modes", K::Str, true),
    F(
        "securityRequirements",
        "security_requirements",
        K::Msg(SECURITY_REQUIREMENT),
        true,
    ),
    F("tags", "tags", K::Str, true),
];
const AGENT_CARD: &[F] = &[
    F("capabilities", "capabilities", K::Msg(CAPABILITIES), false),
    F("defaultInputModes", "default_input_modes", K::Str, true),
    F("defaultOutputModes", "default_output_modes", K::Str, true),
    F("description", "description", K::Str, false),
    F("documentationUrl", "documentation_url", K::Str, false),
    F("iconUrl", "icon_url", K::Str, false),
    F("name", "name", K::Str, false),
    F("provider", "provider", K::Msg(PROVIDER), false),
    F(
        "securityRequirements",
        "security_requirements",
        K::Msg(SECURITY_REQUIREMENT),
        true,
    ),
    F(
        "securitySchemes",
        "security_schemes",
        K::MsgMap(SECURITY_SCHEME),
        false,
    ),
    F("skills", "skills", K::Msg(SKILL), true),
    F(
        "supportedInterfaces",
        "supported_interfaces",
        K::Msg(INTERFACE),
        true,
    ),
    F("version", "version", K::Str, false),
];

/// String contents (already JSON-escaped text) that stress a canonical form.
const STRINGS: &[&str] = &[
    "",
    "a",
    "Sandbox agent ✓ — démo 🤖",
    "https://agent.example/a2a",
    "text/plain",
    "é",
    "😀",
    "\u{FFFF}",
    "\u{E000}",
    "\u{10FFFF}",
    "\\u0001",
    "\\u001f",
    "\u{7f}",
    "\\\"quoted\\\"",
    "back\\\\slash",
    "a\\/b",
    "\\n\\r\\t\\b\\f",
    "\u{2028}\u{2029}",
    "\\u00e9\\u20ac",
    "\\ud83d\\ude00",
    "JSONRPC",
    "1.0",
    "  spaced  ",
];

/// Number texts that stress a canonical form (Python reads each; RFC 8785 and the SDK write them).
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "-0",
    "1.5",
    "100.0",
    "-0.0",
    "0.1",
    "1e21",
    "1e22",
    "1E+2",
    "1e-7",
    "1e-6",
    "0.000001",
    "2.5e-5",
    "123e-20",
    "3.141592653589793",
    "9007199254740991",
    "9007199254740993",
    "-9007199254740993",
    "12345678901234567890",
    "123456789012345678901234567890",
    "1.7976931348623157e308",
    "5e-324",
    "4.35",
    "0.30000000000000004",
    "1e400",
    "-1e400",
];

/// Keys for unknown members and `params` (escaped text), including ones whose RFC 8785 order
/// (UTF-16 units) differs from code-point order.
const KEYS: &[&str] = &[
    "a",
    "b",
    "z",
    "A",
    "x-note",
    "compensation",
    "paid_by",
    "\u{FFFF}",
    "😀",
    "\u{E000}",
    "é",
    "",
    "with space",
    "\\u0000",
    "signatures",
    "name",
    "1",
    "10",
    "2",
];

/// Cards that each showed a kind of difference between our SDK form and the SDK's (the
/// million-card runs, BENCHMARKS.md), compared in every run before the generated ones.
pub const NAMED_EDGES: &[&str] = &[
    r#"{"name":"n","capabilities":"abc"}"#,
    r#"{"name":"n","capabilities":[]}"#,
    r#"{"name":"n","capabilities":["streaming"]}"#,
    r#"{"name":"n","skills":["x",{"id":"s"}]}"#,
    r#"{"name":"n","skills":[[]]}"#,
    r#"{"name":"n","provider":"org"}"#,
    r#"{}"#,
    r#"{"x":1}"#,
    r#"{"name":""}"#,
    r#"{"signatures":[]}"#,
    r#"{"securitySchemes":{"a":{"api_key_security_scheme":{"name":"1"},"apiKeySecurityScheme":{"name":"2"}}}}"#,
    r#"{"securitySchemes":{"a":{"oauth2SecurityScheme":{"flows":{"password":{"tokenUrl":"t"},"implicit":{}}}}}}"#,
    r#"{"securitySchemes":{"a":{"oauth2SecurityScheme":{"flows":{"password":{"scopes":"s"}}}}}}"#,
    r#"{"name":"a","default_input_modes":["a"],"defaultInputModes":["b"]}"#,
    r#"{"name":"a","defaultInputModes":["b"],"default_input_modes":["a"]}"#,
    r#"{"name":"a","x":"\ud800"}"#,
    r#"{"name":"\ud800"}"#,
    r#"{"name":"a","capabilities":{"extensions":[{"params":{"k":"\ud800"}}]}}"#,
    r#"{"name":"a","capabilities":{"extensions":[{"params":{"\udc00":1}}]}}"#,
    r#"{"name":"a","securitySchemes":{"a":{"apiKeySecurityScheme":"\ud800"}}}"#,
    r#"{"name":"a","skills":["\ud800",{"id":"s"}]}"#,
    r#"{"name":"a","securitySchemes":{"a":{"mtlsSecurityScheme":["\ud800","no"]}}}"#,
    r#"{"name":"a","n":NaN,"capabilities":{"extensions":[{"params":{"f":1e21,"g":-0.0,"h":12345678901234567890}}]}}"#,
];

/// How often the rare stressors appear (per 1000 chances; a card has dozens of chances).
const RARE: u32 = 2;

pub struct CardGen {
    rng: StdRng,
}

impl CardGen {
    pub fn new(seed: u64) -> CardGen {
        CardGen {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    fn chance(&mut self, per_mille: u32) -> bool {
        self.rng.random_range(0..1000) < per_mille
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.rng.random_range(0..items.len())]
    }

    /// One card text.
    pub fn card(&mut self) -> String {
        let mut out = String::with_capacity(1024);
        if self.chance(RARE) {
            // Not an object at all.
            self.any(&mut out, 1);
            return out;
        }
        self.message(&mut out, AGENT_CARD, 0);
        out
    }

    fn string(&mut self, out: &mut String) {
        out.push('"');
        if self.chance(RARE) {
            out.push_str(if self.rng.random() {
                "\\ud800"
            } else {
                "x\\udfff"
            });
        } else if self.chance(300) {
            // A random ASCII word.
            let n = self.rng.random_range(1..12);
            for _ in 0..n {
                out.push(self.rng.random_range(b'a'..=b'z') as char);
            }
        } else {
            out.push_str(self.pick(STRINGS));
        }
        out.push('"');
    }

    fn number(&mut self, out: &mut String) {
        match self.rng.random_range(0..10) {
            0..=4 => out.push_str(self.pick(NUMBERS)),
            5..=6 => out.push_str(&self.rng.random_range(-1_000_000i64..1_000_000).to_string()),
            7..=8 => {
                let mantissa: f64 = self.rng.random_range(-1000.0..1000.0);
                let exp = self.rng.random_range(-30..30);
                out.push_str(&format!("{:?}", mantissa * 10f64.powi(exp)));
            }
            _ => out.push_str(&format!(
                "{}e{}",
                self.rng.random_range(1..99),
                self.rng.random_range(-30..30)
            )),
        }
    }

    fn key(&mut self, out: &mut String) {
        out.push('"');
        if self.chance(RARE / 2) {
            out.push_str("\\ud800k");
        } else if self.chance(200) {
            let n = self.rng.random_range(1..6);
            for _ in 0..n {
                out.push(self.rng.random_range(b'a'..=b'z') as char);
            }
        } else {
            out.push_str(self.pick(KEYS));
        }
        out.push('"');
    }

    /// Any JSON value (for `params`, unknown members and wrong types).
    fn any(&mut self, out: &mut String, depth: u32) {
        let leaf = depth > 4 || self.chance(600);
        let choice = if leaf {
            self.rng.random_range(0..5)
        } else {
            self.rng.random_range(5..7)
        };
        match choice {
            0 => out.push_str("null"),
            1 => out.push_str(if self.rng.random() { "true" } else { "false" }),
            2 => {
                if self.chance(RARE) {
                    out.push_str(self.pick(&["NaN", "Infinity", "-Infinity"]));
                } else {
                    self.number(out);
                }
            }
            3 | 4 => self.string(out),
            5 => {
                out.push('[');
                let n = self.rng.random_range(0..4);
                for i in 0..n {
                    if i > 0 {
                        out.push(',');
                    }
                    self.any(out, depth + 1);
                }
                out.push(']');
            }
            _ => self.object(out, depth + 1),
        }
    }

    fn object(&mut self, out: &mut String, depth: u32) {
        out.push('{');
        let n = self.rng.random_range(0..5);
        for i in 0..n {
            if i > 0 {
                out.push(',');
            }
            self.key(out);
            out.push(':');
            self.any(out, depth + 1);
        }
        out.push('}');
    }

    fn value_of(&mut self, out: &mut String, kind: K, depth: u32) {
        if self.chance(RARE) {
            // The wrong type.
            self.any(out, depth + 3);
            return;
        }
        match kind {
            K::Str => self.string(out),
            K::Bool => out.push_str(if self.rng.random() { "true" } else { "false" }),
            K::Msg(fields) => self.message(out, fields, depth + 1),
            K::Struct => self.object(out, depth + 1),
            K::StrMap => {
                out.push('{');
                let n = self.rng.random_range(0..3);
                for i in 0..n {
                    if i > 0 {
                        out.push(',');
                    }
                    self.key(out);
                    out.push(':');
                    self.string(out);
                }
                out.push('}');
            }
            K::MsgMap(fields) => {
                out.push('{');
                let n = self.rng.random_range(0..3);
                for i in 0..n {
                    if i > 0 {
                        out.push(',');
                    }
                    self.key(out);
                    out.push(':');
                    self.message(out, fields, depth + 1);
                }
                out.push('}');
            }
        }
    }

    fn message(&mut self, out: &mut String, fields: &'static [F], depth: u32) {
        let oneof = std::ptr::eq(fields, SECURITY_SCHEME) || std::ptr::eq(fields, FLOWS);
        let mut members: Vec<(String, String)> = Vec::new();
        let chosen: Vec<usize> = if oneof {
            let mut c = vec![self.rng.random_range(0..fields.len())];
            if self.chance(30) {
                c.push(self.rng.random_range(0..fields.len()));
            }
            c
        } else {
            (0..fields.len())
                .filter(|_| self.rng.random_range(0..10) < if depth == 0 { 8 } else { 6 })
                .collect()
        };
        for i in chosen {
            let F(camel, snake, kind, repeated) = fields[i];
            let name = if self.chance(150) { snake } else { camel };
            let mut v = String::new();
            if repeated && !self.chance(RARE) {
                v.push('[');
                let n = self.rng.random_range(0..if depth > 2 { 2 } else { 4 });
                for j in 0..n {
                    if j > 0 {
                        v.push(',');
                    }
                    self.value_of(&mut v, kind, depth);
                }
                v.push(']');
            } else {
                self.value_of(&mut v, kind, depth);
            }
            members.push((format!("\"{name}\""), v));
        }
        // Unknown members, `signatures` among them at the top (it is never part of a form).
        let unknown = self.rng.random_range(0..if depth == 0 { 3 } else { 2 });
        for _ in 0..unknown {
            let mut k = String::new();
            self.key(&mut k);
            let mut v = String::new();
            self.any(&mut v, depth + 1);
            members.push((k, v));
        }
        if self.chance(RARE * 2) && !members.is_empty() {
            // A duplicate name: Python keeps the last.
            let (k, _) = members[self.rng.random_range(0..members.len())].clone();
            let mut v = String::new();
            self.any(&mut v, depth + 2);
            members.push((k, v));
        }
        // Shuffle: served order must not matter to the form.
        for i in (1..members.len()).rev() {
            let j = self.rng.random_range(0..=i);
            members.swap(i, j);
        }
        out.push('{');
        for (i, (k, v)) in members.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(k);
            out.push(':');
            out.push_str(v);
        }
        out.push('}');
    }
}
