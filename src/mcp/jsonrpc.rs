//! JSON-RPC answers rmcp does not give the way JSON-RPC 2.0 says, given before a message
//! reaches it, on stdio and Streamable HTTP alike: a line or body that is not JSON (-32700), JSON
//! that is no JSON-RPC message (-32600), and a known method whose params rmcp cannot read (it
//! takes such a request for an unknown method, -32601, where JSON-RPC says -32602).

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use serde_json::{Value, json};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const INVALID_PARAMS: i64 = -32602;

/// The request methods of MCP a client may send a server: params rmcp cannot read under one of
/// these are invalid params, not an unknown method.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
];

/// A JSON-RPC error answer.
pub fn error(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// What to answer instead of passing `bytes` on to rmcp, if anything.
pub fn check(bytes: &[u8]) -> Option<Value> {
    // A leading byte order mark is allowed (RFC 8259 §8.1), and rmcp skips it too.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Some(error(
            Value::Null,
            PARSE_ERROR,
            "Parse error: the message is not UTF-8",
        ));
    };
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return Some(error(
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: the message is not JSON ({e})"),
            ));
        }
    };
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    let known = value
        .get("method")
        .and_then(Value::as_str)
        .filter(|m| KNOWN_METHODS.contains(m))
        .map(str::to_string);
    let params = value.get("params").cloned();
    let message: ClientJsonRpcMessage = match serde_json::from_value(value) {
        Ok(m) => m,
        // A request of a known method whose params are no object at all.
        Err(_) if known.is_some() && !id.is_null() => {
            let method = known.unwrap_or_default();
            let why = params_problem(&method, params.as_ref());
            return Some(error(
                id,
                INVALID_PARAMS,
                &format!("Invalid params for {method}: {why}"),
            ));
        }
        Err(e) => {
            return Some(error(
                id,
                INVALID_REQUEST,
                &format!("Invalid Request: not a JSON-RPC 2.0 message an MCP client sends ({e})"),
            ));
        }
    };
    if let JsonRpcMessage::Request(r) = &message
        && let ClientRequest::CustomRequest(c) = &r.request
        && KNOWN_METHODS.contains(&c.method.as_str())
    {
        let why = params_problem(&c.method, c.params.as_ref());
        return Some(error(
            id,
            INVALID_PARAMS,
            &format!("Invalid params for {}: {why}", c.method),
        ));
    }
    None
}

/// Why params of a known method could not be read, as precisely as cheaply possible.
fn params_problem(method: &str, params: Option<&Value>) -> String {
    match (method, params) {
        ("tools/call", None | Some(Value::Null)) => {
            "params are required: {\"name\": TOOL, \"arguments\": {...}}".into()
        }
        ("tools/call", Some(Value::Object(p))) => match (p.get("name"), p.get("arguments")) {
            (Some(Value::String(_)), Some(a)) if !a.is_object() => {
                "arguments must be an object of named arguments".into()
            }
            (Some(Value::String(_)), _) => "params do not have the form of tools/call".into(),
            _ => "params.name must be the tool's name, a string".into(),
        },
        (_, Some(p)) if !p.is_object() => "params must be an object".into(),
        _ => "params do not have the form this method takes".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(v: Option<Value>) -> Option<i64> {
        v.map(|v| v["error"]["code"].as_i64().unwrap())
    }

    #[test]
    fn answers_what_rmcp_would_misanswer() {
        assert_eq!(code(check(b"not json")), Some(PARSE_ERROR));
        assert_eq!(code(check(b"{\"a\":\xff}")), Some(PARSE_ERROR));
        assert_eq!(code(check(b"[1, 2]")), Some(INVALID_REQUEST));
        let bad = [
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"records_list","arguments":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":[]}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":7}}"#,
        ];
        for b in bad {
            let answer = check(b.as_bytes()).unwrap_or_else(|| panic!("{b}"));
            assert_eq!(answer["error"]["code"], INVALID_PARAMS, "{b}");
            assert_eq!(answer["id"], 3, "{b}");
        }
        for good in [
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"records_list","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"records_list"}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"no/such/method"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
        ] {
            assert_eq!(check(good.as_bytes()), None, "{good}");
        }
    }
}
