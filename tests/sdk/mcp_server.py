"""An MCP server built with the official MCP Python SDK (mcp 2.x `MCPServer`), over Streamable HTTP.

    python mcp_server.py --cert CHAIN.pem --key KEY.pem --access-log LOG.jsonl \
        [--json-response] [--stateless] [--watch-stdin]

Prints `READY <port>` once it listens on 127.0.0.1:<port> (HTTPS). The endpoint is the SDK's
default `/mcp`. One tool, `add`.

- default: the SDK's defaults, i.e. SSE responses (a POST is answered `text/event-stream`, and
  the SDK answers 406 unless `Accept` lists both `application/json` and `text/event-stream`) and
  stateful sessions (`initialize` hands out `Mcp-Session-Id`; `DELETE` with it ends the session).
- `--json-response`: the SDK's JSON-response mode (one `application/json` body; `Accept` must
  list `application/json`).
- `--stateless`: the SDK's stateless HTTP mode (no session id).

The SDK turns on DNS-rebinding protection by itself when `host` is a loopback name: `Host` must
then be `127.0.0.1:<port>`, `localhost:<port>` or `[::1]:<port>` (421 otherwise) and an `Origin`,
when sent, must be an `http://` loopback origin (403 otherwise). The walker sends
`Host: 127.0.0.1:<port>` and no `Origin`, so the default settings (host "127.0.0.1") are kept.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from wirelog import base_arguments, bind_loopback, serve  # noqa: E402

from mcp.server.mcpserver import MCPServer  # noqa: E402

PATH = "/mcp"


def main() -> None:
    p = base_arguments(__doc__.splitlines()[0])
    p.add_argument("--json-response", action="store_true", help="the SDK's JSON-response mode")
    p.add_argument("--stateless", action="store_true", help="the SDK's stateless HTTP mode")
    args = p.parse_args()

    sock, port = bind_loopback()
    server = MCPServer(name="conduct-interop-mcp", version="1.0.0", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    app = server.streamable_http_app(
        streamable_http_path=PATH,
        json_response=args.json_response,
        stateless_http=args.stateless,
        host="127.0.0.1",
    )
    serve(app, sock, port, args)


if __name__ == "__main__":
    main()
