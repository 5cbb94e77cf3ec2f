//! The A2A 1.0 AgentCard proto shape (card-signature-and-terms.md §1.2), as the projection of the
//! canonicalisation profiles needs it: JSON name, proto name, type, cardinality and presence class.
//!
//! Only what the signed payload depends on is described. `signatures` is named so that the
//! projection can skip it (it is never signed) instead of listing it as outside the schema.

/// Presence class (§1.2): REQ = `field_behavior = REQUIRED`, OPT = proto3 `optional` (explicit
/// presence), IMPL = implicit presence (the default value means "not set").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Presence {
    Required,
    Optional,
    Implicit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cardinality {
    Single,
    Repeated,
    /// `map<string, V>`: a JSON object whose values are V.
    Map,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Str,
    Bool,
    Msg(&'static Msg),
    /// `google.protobuf.Struct`: any JSON object, copied as it is.
    Struct,
    /// Present in the schema, never part of a payload (`AgentCard.signatures`).
    Excluded,
}

#[derive(Debug)]
pub(crate) struct Field {
    pub json: &'static str,
    pub proto: &'static str,
    pub kind: Kind,
    pub card: Cardinality,
    pub presence: Presence,
}

/// Most fields any message has (AgentCard: 14); the projection keeps per-field slots on the stack.
pub(crate) const MAX_FIELDS: usize = 16;

#[derive(Debug)]
pub(crate) struct Msg {
    pub name: &'static str,
    pub fields: &'static [Field],
    /// Every field is a member of one `oneof`: at most one may be set.
    pub oneof: bool,
}

const fn f(
    json: &'static str,
    proto: &'static str,
    kind: Kind,
    card: Cardinality,
    presence: Presence,
) -> Field {
    Field {
        json,
        proto,
        kind,
        card,
        presence,
    }
}

use Cardinality::{Map, Repeated, Single};
use Kind::{Bool, Str};
use Presence::{Implicit, Optional, Required};

pub(crate) static AGENT_CARD: Msg = Msg {
    name: "AgentCard",
    oneof: false,
    fields: &[
        f(
            "capabilities",
            "capabilities",
            Kind::Msg(&AGENT_CAPABILITIES),
            Single,
            Required,
        ),
        f(
            "defaultInputModes",
            "default_input_modes",
            Str,
            Repeated,
            Required,
        ),
        f(
            "defaultOutputModes",
            "default_output_modes",
            Str,
            Repeated,
            Required,
        ),
        f("description", "description", Str, Single, Required),
        f(
            "documentationUrl",
            "documentation_url",
            Str,
            Single,
            Optional,
        ),
        f("iconUrl", "icon_url", Str, Single, Optional),
        f("name", "name", Str, Single, Required),
        f(
            "provider",
            "provider",
            Kind::Msg(&AGENT_PROVIDER),
            Single,
            Implicit,
        ),
        f(
            "securityRequirements",
            "security_requirements",
            Kind::Msg(&SECURITY_REQUIREMENT),
            Repeated,
            Implicit,
        ),
        f(
            "securitySchemes",
            "security_schemes",
            Kind::Msg(&SECURITY_SCHEME),
            Map,
            Implicit,
        ),
        f(
            "signatures",
            "signatures",
            Kind::Excluded,
            Repeated,
            Implicit,
        ),
        f(
            "skills",
            "skills",
            Kind::Msg(&AGENT_SKILL),
            Repeated,
            Required,
        ),
        f(
            "supportedInterfaces",
            "supported_interfaces",
            Kind::Msg(&AGENT_INTERFACE),
            Repeated,
            Required,
        ),
        f("version", "version", Str, Single, Required),
    ],
};

static AGENT_INTERFACE: Msg = Msg {
    name: "AgentInterface",
    oneof: false,
    fields: &[
        f("protocolBinding", "protocol_binding", Str, Single, Required),
        f("protocolVersion", "protocol_version", Str, Single, Required),
        f("tenant", "tenant", Str, Single, Implicit),
        f("url", "url", Str, Single, Required),
    ],
};

static AGENT_PROVIDER: Msg = Msg {
    name: "AgentProvider",
    oneof: false,
    fields: &[
        f("organization", "organization", Str, Single, Required),
        f("url", "url", Str, Single, Required),
    ],
};

static AGENT_CAPABILITIES: Msg = Msg {
    name: "AgentCapabilities",
    oneof: false,
    fields: &[
        f(
            "extendedAgentCard",
            "extended_agent_card",
            Bool,
            Single,
            Optional,
        ),
        f(
            "extensions",
            "extensions",
            Kind::Msg(&AGENT_EXTENSION),
            Repeated,
            Implicit,
        ),
        f(
            "pushNotifications",
            "push_notifications",
            Bool,
            Single,
            Optional,
        ),
        f("streaming", "streaming", Bool, Single, Optional),
    ],
};

static AGENT_EXTENSION: Msg = Msg {
    name: "AgentExtension",
    oneof: false,
    fields: &[
        f("description", "description", Str, Single, Implicit),
        f("params", "params", Kind::Struct, Single, Implicit),
        f("required", "required", Bool, Single, Implicit),
        f("uri", "uri", Str, Single, Implicit),
    ],
};

static AGENT_SKILL: Msg = Msg {
    name: "AgentSkill",
    oneof: false,
    fields: &[
        f("description", "description", Str, Single, Required),
        f("examples", "examples", Str, Repeated, Implicit),
        f("id", "id", Str, Single, Required),
        f("inputModes", "input_modes", Str, Repeated, Implicit),
        f("name", "name", Str, Single, Required),
        f("outputModes", "output_modes", Str, Repeated, Implicit),
        f(
            "securityRequirements",
            "security_requirements",
            Kind::Msg(&SECURITY_REQUIREMENT),
            Repeated,
            Implicit,
        ),
        f("tags", "tags", Str, Repeated, Required),
    ],
};

static SECURITY_REQUIREMENT: Msg = Msg {
    name: "SecurityRequirement",
    oneof: false,
    fields: &[f(
        "schemes",
        "schemes",
        Kind::Msg(&STRING_LIST),
        Map,
        Implicit,
    )],
};

static STRING_LIST: Msg = Msg {
    name: "StringList",
    oneof: false,
    fields: &[f("list", "list", Str, Repeated, Implicit)],
};

static SECURITY_SCHEME: Msg = Msg {
    name: "SecurityScheme",
    oneof: true,
    fields: &[
        f(
            "apiKeySecurityScheme",
            "api_key_security_scheme",
            Kind::Msg(&API_KEY_SCHEME),
            Single,
            Implicit,
        ),
        f(
            "httpAuthSecurityScheme",
            "http_auth_security_scheme",
            Kind::Msg(&HTTP_AUTH_SCHEME),
            Single,
            Implicit,
        ),
        f(
            "mtlsSecurityScheme",
            "mtls_security_scheme",
            Kind::Msg(&MTLS_SCHEME),
            Single,
            Implicit,
        ),
        f(
            "oauth2SecurityScheme",
            "oauth2_security_scheme",
            Kind::Msg(&OAUTH2_SCHEME),
            Single,
            Implicit,
        ),
        f(
            "openIdConnectSecurityScheme",
            "open_id_connect_security_scheme",
            Kind::Msg(&OPENID_SCHEME),
            Single,
            Implicit,
        ),
    ],
};

static API_KEY_SCHEME: Msg = Msg {
    name: "APIKeySecurityScheme",
    oneof: false,
    fields: &[
        f("description", "description", Str, Single, Implicit),
        f("location", "location", Str, Single, Required),
        f("name", "name", Str, Single, Required),
    ],
};

static HTTP_AUTH_SCHEME: Msg = Msg {
    name: "HTTPAuthSecurityScheme",
    oneof: false,
    fields: &[
        f("bearerFormat", "bearer_format", Str, Single, Implicit),
        f("description", "description", Str, Single, Implicit),
        f("scheme", "scheme", Str, Single, Required),
    ],
};

static OAUTH2_SCHEME: Msg = Msg {
    name: "OAuth2SecurityScheme",
    oneof: false,
    fields: &[
        f("description", "description", Str, Single, Implicit),
        f("flows", "flows", Kind::Msg(&OAUTH_FLOWS), Single, Required),
        f(
            "oauth2MetadataUrl",
            "oauth2_metadata_url",
            Str,
            Single,
            Implicit,
        ),
    ],
};

static OPENID_SCHEME: Msg = Msg {
    name: "OpenIdConnectSecurityScheme",
    oneof: false,
    fields: &[
        f("description", "description", Str, Single, Implicit),
        f(
            "openIdConnectUrl",
            "open_id_connect_url",
            Str,
            Single,
            Required,
        ),
    ],
};

static MTLS_SCHEME: Msg = Msg {
    name: "MutualTlsSecurityScheme",
    oneof: false,
    fields: &[f("description", "description", Str, Single, Implicit)],
};

static OAUTH_FLOWS: Msg = Msg {
    name: "OAuthFlows",
    oneof: true,
    fields: &[
        f(
            "authorizationCode",
            "authorization_code",
            Kind::Msg(&AUTHORIZATION_CODE_FLOW),
            Single,
            Implicit,
        ),
        f(
            "clientCredentials",
            "client_credentials",
            Kind::Msg(&CLIENT_CREDENTIALS_FLOW),
            Single,
            Implicit,
        ),
        f(
            "deviceCode",
            "device_code",
            Kind::Msg(&DEVICE_CODE_FLOW),
            Single,
            Implicit,
        ),
        f(
            "implicit",
            "implicit",
            Kind::Msg(&IMPLICIT_FLOW),
            Single,
            Implicit,
        ),
        f(
            "password",
            "password",
            Kind::Msg(&PASSWORD_FLOW),
            Single,
            Implicit,
        ),
    ],
};

static AUTHORIZATION_CODE_FLOW: Msg = Msg {
    name: "AuthorizationCodeOAuthFlow",
    oneof: false,
    fields: &[
        f(
            "authorizationUrl",
            "authorization_url",
            Str,
            Single,
            Required,
        ),
        f("pkceRequired", "pkce_required", Bool, Single, Implicit),
        f("refreshUrl", "refresh_url", Str, Single, Implicit),
        f("scopes", "scopes", Str, Map, Required),
        f("tokenUrl", "token_url", Str, Single, Required),
    ],
};

static CLIENT_CREDENTIALS_FLOW: Msg = Msg {
    name: "ClientCredentialsOAuthFlow",
    oneof: false,
    fields: &[
        f("refreshUrl", "refresh_url", Str, Single, Implicit),
        f("scopes", "scopes", Str, Map, Required),
        f("tokenUrl", "token_url", Str, Single, Required),
    ],
};

static IMPLICIT_FLOW: Msg = Msg {
    name: "ImplicitOAuthFlow",
    oneof: false,
    fields: &[
        f(
            "authorizationUrl",
            "authorization_url",
            Str,
            Single,
            Implicit,
        ),
        f("refreshUrl", "refresh_url", Str, Single, Implicit),
        f("scopes", "scopes", Str, Map, Implicit),
    ],
};

static PASSWORD_FLOW: Msg = Msg {
    name: "PasswordOAuthFlow",
    oneof: false,
    fields: &[
        f("refreshUrl", "refresh_url", Str, Single, Implicit),
        f("scopes", "scopes", Str, Map, Implicit),
        f("tokenUrl", "token_url", Str, Single, Implicit),
    ],
};

static DEVICE_CODE_FLOW: Msg = Msg {
    name: "DeviceCodeOAuthFlow",
    oneof: false,
    fields: &[
        f(
            "deviceAuthorizationUrl",
            "device_authorization_url",
            Str,
            Single,
            Required,
        ),
        f("refreshUrl", "refresh_url", Str, Single, Implicit),
        f("scopes", "scopes", Str, Map, Required),
        f("tokenUrl", "token_url", Str, Single, Required),
    ],
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Fields are listed in JSON-name order (the payload writer then rarely sorts) and fit the
    /// projection's slots.
    #[test]
    fn fields_are_in_name_order_and_fit() {
        fn walk(msg: &'static Msg, seen: &mut Vec<&'static str>) {
            if seen.contains(&msg.name) {
                return;
            }
            seen.push(msg.name);
            assert!(msg.fields.len() <= MAX_FIELDS, "{}", msg.name);
            assert!(
                msg.fields.windows(2).all(|w| w[0].json < w[1].json),
                "{} is not in name order",
                msg.name
            );
            for field in msg.fields {
                if let Kind::Msg(inner) = field.kind {
                    walk(inner, seen);
                }
            }
        }
        walk(&AGENT_CARD, &mut Vec::new());
    }

    /// The proto name is the JSON name with each capital turned into `_` + lower case (the
    /// ProtoJSON json_name rule run backwards); a typo in either column would break that.
    #[test]
    fn proto_names_follow_the_json_name_rule() {
        fn walk(msg: &'static Msg, seen: &mut Vec<&'static str>) {
            if seen.contains(&msg.name) {
                return;
            }
            seen.push(msg.name);
            for field in msg.fields {
                let mut snake = String::new();
                for c in field.json.chars() {
                    if c.is_ascii_uppercase() {
                        snake.push('_');
                        snake.push(c.to_ascii_lowercase());
                    } else {
                        snake.push(c);
                    }
                }
                assert_eq!(snake, field.proto, "{}.{}", msg.name, field.json);
                if let Kind::Msg(inner) = field.kind {
                    walk(inner, seen);
                }
            }
        }
        let mut seen = Vec::new();
        walk(&AGENT_CARD, &mut seen);
        assert_eq!(seen.len(), 20);
    }
}
