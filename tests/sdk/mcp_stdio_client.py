"""An independent MCP client for `conduct-walker mcp`: the official Python SDK (mcp 2.3.0)
spawns the binary as a stdio server, lists its tools, calls `witness_walk`, and checks the
answer's structuredContent against the tool's declared outputSchema with `jsonschema`.

Used by tests/mcp_sdk_client.rs (correctness) and by hand for the latency figure:

    python tests/sdk/mcp_stdio_client.py --binary target/release/conduct-walker \
        --config walker.toml --origin https://127.0.0.1:PORT --repeat 20

Prints one JSON object on stdout: the server's identity, the tool names, the first answer's
structuredContent, and (with --repeat) the wall-clock latency of each call in milliseconds.
Exits non-zero, with the reason on stderr, when anything does not hold.
"""

import argparse
import asyncio
import json
import statistics
import sys
import time

import jsonschema
from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--origin", required=True)
    ap.add_argument("--mode", default="a2a")
    ap.add_argument("--no-submit", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()

    params = StdioServerParameters(command=args.binary, args=["mcp", "--config", args.config])
    async with Client(params) as client:
        info = client.server_info
        listed = await client.list_tools()
        tools = {t.name: t for t in listed.tools}
        walk = tools["witness_walk"]
        if walk.output_schema is None:
            print("witness_walk declares no outputSchema", file=sys.stderr)
            return 1
        first = None
        latencies = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            result = await client.call_tool(
                "witness_walk",
                {"origin": args.origin, "mode": args.mode, "submit": not args.no_submit},
            )
            latencies.append((time.perf_counter() - started) * 1000.0)
            if result.is_error:
                print(f"witness_walk answered an error: {result.content}", file=sys.stderr)
                return 1
            structured = result.structured_content
            # Raises (non-zero exit) when the answer does not match the declared schema.
            jsonschema.validate(instance=structured, schema=walk.output_schema)
            if first is None:
                first = {
                    "structured": structured,
                    "summary": result.content[0].text,
                }
        out = {
            "server_name": info.name if info else None,
            "server_version": info.version if info else None,
            "instructions": client.instructions,
            "tools": sorted(tools),
            "first": first,
            "latencies_ms": latencies,
        }
        if args.repeat > 1:
            out["median_ms"] = statistics.median(latencies)
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
