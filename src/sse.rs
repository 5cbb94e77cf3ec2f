//! Server-Sent Events, as far as a walk reads them (conduct-walk.md §2.6.1): an MCP server on
//! Streamable HTTP may answer a POST with a `text/event-stream` whose events carry JSON-RPC
//! messages. Pure: the transport feeds the bytes it has read so far, the assertions read the
//! same bytes afterwards, and both find the same event.
//!
//! Parsing follows the WHATWG HTML "event stream interpretation": lines end in CRLF, LF or CR;
//! a blank line dispatches the event; `data` lines join with `\n`; a line starting with `:` is a
//! comment; the event type defaults to `message`; an event left unterminated when the stream
//! ends is discarded.

use crate::json::{Doc, JsonRef, ReadOptions};

/// The media type of an event stream.
pub const MEDIA_TYPE: &str = "text/event-stream";

/// Whether a `Content-Type` value names an event stream (parameters and case ignored).
pub fn is_event_stream(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|media| media.trim().eq_ignore_ascii_case(MEDIA_TYPE))
}

/// The JSON-RPC response found in a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseEvent {
    /// Offset just past the blank line that completed the event: the bytes a reader needs.
    pub end: usize,
    /// The event's data, read as a card is read (any shape, compact): a JSON-RPC response
    /// (`result` or `error`) with the id sought.
    pub message: Doc,
}

/// The first `message` event whose data is a JSON-RPC response with `id` (a server may send
/// notifications and requests of its own first; those are skipped). None until such an event
/// is complete.
pub fn find_response(stream: &[u8], id: i64) -> Option<ResponseEvent> {
    let mut event = PendingEvent::default();
    let mut pos = if stream.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    while let Some((line, next)) = next_line(stream, pos) {
        pos = next;
        if line.is_empty() {
            if let Some(message) = event.dispatch().filter(|m| is_response_to(m.root(), id)) {
                return Some(ResponseEvent { end: pos, message });
            }
            continue;
        }
        event.field(line);
    }
    None
}

#[derive(Default)]
struct PendingEvent {
    event_type: Option<String>,
    data: Option<String>,
}

impl PendingEvent {
    fn field(&mut self, line: &[u8]) {
        if line[0] == b':' {
            return;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match name {
            b"event" => self.event_type = Some(value.into_owned()),
            b"data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(&value);
                }
                None => self.data = Some(value.into_owned()),
            },
            // `id`, `retry` and unknown fields do not change what the event carries.
            _ => {}
        }
    }

    /// The blank line: the event's JSON when it is a `message` event with data; resets.
    fn dispatch(&mut self) -> Option<Doc> {
        let PendingEvent { event_type, data } = std::mem::take(self);
        let is_message = event_type.as_deref().is_none_or(|t| t == "message");
        let data = data.filter(|_| is_message)?;
        crate::json::read(data.as_bytes(), ReadOptions::LENIENT).ok()
    }
}

fn is_response_to(message: JsonRef<'_>, id: i64) -> bool {
    let Some(object) = message.as_object() else {
        return false;
    };
    let id_matches = object
        .get("id")
        .filter(|v| !v.is_float())
        .and_then(|v| v.number_text()?.parse::<i64>().ok())
        .is_some_and(|got| got == id);
    let is_response = (object.contains_key("result") || object.contains_key("error"))
        && !object.contains_key("method");
    id_matches && is_response
}

/// The line starting at `pos` (without its terminator) and where the next one starts; None
/// when no complete line remains (a line is complete only once its terminator arrived; a CR
/// at the very end may still be the first half of a CRLF, so it waits for the next byte).
fn next_line(stream: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let rest = stream.get(pos..)?;
    let at = rest.iter().position(|&b| b == b'\n' || b == b'\r')?;
    let line = &rest[..at];
    let next = match rest[at] {
        b'\r' => match rest.get(at + 1) {
            Some(b'\n') => at + 2,
            Some(_) => at + 1,
            None => return None,
        },
        _ => at + 1,
    };
    Some((line, pos + next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const RESPONSE: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}"#;

    #[test]
    fn finds_the_response_and_where_it_ends() {
        let stream = format!("event: message\ndata: {RESPONSE}\n\nevent: message\ndata: later\n\n");
        let found = find_response(stream.as_bytes(), 1).unwrap();
        assert_eq!(
            found.message.root().to_value()["result"]["protocolVersion"],
            "2025-06-18"
        );
        assert_eq!(
            &stream[..found.end],
            format!("event: message\ndata: {RESPONSE}\n\n")
        );
    }

    #[test]
    fn incomplete_event_is_not_found_until_its_blank_line_arrives() {
        let full = format!("data: {RESPONSE}\r\n\r\n");
        for cut in 0..full.len() {
            assert_eq!(
                find_response(&full.as_bytes()[..cut], 1),
                None,
                "cut at {cut}"
            );
        }
        assert_eq!(find_response(full.as_bytes(), 1).unwrap().end, full.len());
    }

    #[test]
    fn skips_notifications_requests_other_ids_and_other_event_types() {
        let stream = [
            ": keep-alive comment\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sampling/createMessage\"}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n",
            "event: ping\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"wrong\":true}}\n\n",
            "data: not json\n\n",
            "id: 7\nretry: 100\ndata: {\"jsonrpc\":\"2.0\",\n",
            "data: \"id\":1,\"error\":{\"code\":-1}}\n\n",
        ]
        .concat();
        let found = find_response(stream.as_bytes(), 1).unwrap();
        assert_eq!(
            found.message.root().to_value()["error"],
            json!({"code": -1})
        );
        assert_eq!(found.end, stream.len());
    }

    #[test]
    fn cr_only_lines_and_a_leading_bom_are_read() {
        // A CR is a line end once the next byte shows it is not half of a CRLF.
        let stream = format!("\u{FEFF}data:{RESPONSE}\r\r");
        assert_eq!(find_response(stream.as_bytes(), 1), None);
        let more = format!("{stream}:");
        let found = find_response(more.as_bytes(), 1).unwrap();
        assert_eq!(found.end, stream.len());
    }

    #[test]
    fn stream_that_ends_without_the_response_finds_nothing() {
        let stream = format!("data: {{\"jsonrpc\":\"2.0\",\"id\":1}}\n\ndata: {RESPONSE}");
        assert_eq!(find_response(stream.as_bytes(), 1), None);
    }

    #[test]
    fn content_type_match_ignores_case_and_parameters() {
        assert!(is_event_stream("text/event-stream"));
        assert!(is_event_stream("Text/Event-Stream; charset=utf-8"));
        assert!(!is_event_stream("application/json"));
        assert!(!is_event_stream("text/event-streamx"));
    }
}
