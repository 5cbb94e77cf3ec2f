"""An independent MCP client for `conduct-walker mcp --listen`: the official Python SDK (mcp 2.3.0)
over Streamable HTTP with the operator's bearer token. It lists the tools (checking each
outputSchema is a valid JSON Schema), walks an agent and lists the records (each answer's
structuredContent validated against its tool's outputSchema), and closes the session, which
the SDK does with a DELETE. Every warning the SDK logs (e.g. "Session termination failed: 202")
is reported.

Used by tests/mcp_sdk_client.rs. Prints one JSON object on stdout; exits non-zero, with the
reason on stderr, when anything does not hold.
"""

import argparse
import asyncio
import json
import logging
import sys

import jsonschema
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--origin", required=True)
    args = ap.parse_args()

    warnings = Collect()
    logging.getLogger().addHandler(warnings)
    logging.getLogger().setLevel(logging.WARNING)

    token = open(args.token_file).read().strip()
    answers = {}
    # "legacy" is the session-based protocol (initialize, Mcp-Session-Id, DELETE at the end);
    # "auto" negotiates what the server offers.
    for mode in ["legacy", "auto"]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http:
            transport = streamable_http_client(args.url, http_client=http)
            async with Client(transport, mode=mode) as client:
                listed = await client.list_tools()
                tools = {t.name: t for t in listed.tools}
                for t in listed.tools:
                    jsonschema.Draft202012Validator.check_schema(t.output_schema)
                for name, arguments in [
                    ("witness_walk", {"origin": args.origin, "submit": False}),
                    ("records_list", {"limit": 5}),
                ]:
                    if mode != "legacy" and name == "witness_walk":
                        continue
                    result = await client.call_tool(name, arguments)
                    if result.is_error:
                        print(f"{mode}: {name} answered an error: {result.content}", file=sys.stderr)
                        return 1
                    jsonschema.validate(instance=result.structured_content, schema=tools[name].output_schema)
                    answers[f"{mode} {name}"] = {
                        "structured": result.structured_content,
                        "text": "\n".join(c.text for c in result.content if c.type == "text"),
                    }
    print(json.dumps({"tools": sorted(tools), "answers": answers, "warnings": warnings.messages}))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
