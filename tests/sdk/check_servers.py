"""Check the SDK servers by hand, from Python (no walker involved).

    target/sdk-venv/bin/python tests/sdk/check_servers.py

Makes a throw-away CA and leaf, starts each server variant, and checks what conduct-walk.md
§2.6/§2.8 and §2.6.1 say about them: an A2A 1.0 `SendMessage` and a 0.3 `message/send`
answered with the shapes §2.8 calls "answered", the echo header, the §3 metadata; the MCP
SDK's 406 to `Accept: application/json` in its default (SSE) mode, its 200 `text/event-stream`
to `Accept: application/json, text/event-stream`, and 200 `application/json` in JSON-response
mode. Also reports whether the Agent Card's bytes are the same in two processes. Exits 1 on
the first failed check.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import ssl
import subprocess
import sys
import tempfile

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

HERE = os.path.dirname(os.path.abspath(__file__))
EXT = "https://gate.horizonshield.dev/ext/conduct/v1"
TEXT = "a2a-conduct-walk-v1: reading the conduct pointers of this agent"
BODY_10 = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "SendMessage",
    "params": {"message": {"messageId": "conduct-walk-1", "role": "ROLE_USER", "parts": [{"text": TEXT}]}},
}
BODY_03 = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "message/send",
    "params": {
        "message": {
            "messageId": "conduct-walk-1",
            "role": "user",
            "kind": "message",
            "parts": [{"kind": "text", "text": TEXT}],
        }
    },
}
BODY_MCP = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "a2a_conduct_walk", "version": "1"},
    },
}


def make_tls(directory: str) -> tuple[str, str, str]:
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "check_servers CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.IPAddress(ipaddress.ip_address("::1")),
                ]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    paths = [os.path.join(directory, n) for n in ("ca.pem", "chain.pem", "key.pem")]
    with open(paths[0], "wb") as f:
        f.write(ca.public_bytes(pem))
    with open(paths[1], "wb") as f:
        f.write(leaf.public_bytes(pem) + ca.public_bytes(pem))
    with open(paths[2], "wb") as f:
        f.write(
            key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        )
    return paths[0], paths[1], paths[2]


class Server:
    def __init__(self, tls: tuple[str, str, str], directory: str, script: str, *args: str):
        self.log = os.path.join(directory, f"{script}-{'-'.join(a.strip('-') for a in args)}.jsonl")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, script), "--cert", tls[1], "--key", tls[2],
             "--access-log", self.log, "--watch-stdin", *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        line = self.proc.stdout.readline()
        if not line.startswith("READY "):
            raise SystemExit(f"{script} {args} did not start: {line!r}")
        self.origin = f"https://127.0.0.1:{int(line.split()[1])}"

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def check(what: str, ok: bool, detail: object = "") -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + str(detail) if detail != '' else ''}")
    if not ok:
        raise SystemExit(1)


def post(client: httpx.Client, url: str, body: dict, headers: dict) -> httpx.Response:
    headers = {"Connection": "close", "Content-Type": "application/json", **headers}
    return client.post(url, content=json.dumps(body).encode(), headers=headers)


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tls = make_tls(d)
        client = httpx.Client(verify=ssl.create_default_context(cafile=tls[0]), timeout=10)
        h10 = {"Accept": "application/json", "A2A-Extensions": EXT, "A2A-Version": "1.0"}
        h03 = {"Accept": "application/json", "X-A2A-Extensions": EXT, "A2A-Version": "0.3"}

        servers = []
        try:
            honest = Server(tls, d, "a2a_agent.py", "--compat03")
            servers.append(honest)
            card = client.get(f"{honest.origin}/.well-known/agent-card.json").json()
            ext = card["capabilities"]["extensions"][0]
            check("card declares the extension", ext["uri"] == EXT, ext["params"]["measured_endpoints"])
            endpoint = ext["params"]["measured_endpoints"][0]

            r = post(client, endpoint, BODY_10, h10)
            result = r.json().get("result") or {}
            check("1.0 SendMessage answered (result.message, no kind)", "message" in result and "kind" not in result)
            meta = result["message"].get("metadata", {})
            check("1.0 metadata carries the §3 keys", f"{EXT}/served_by" in meta, sorted(meta))
            check("1.0 echo header", r.headers.get("a2a-extensions") == EXT)
            check("Connection: close answered with Connection: close", r.headers.get("connection") == "close")

            r = post(client, endpoint, BODY_03, h03)
            result = r.json().get("result") or {}
            check("0.3 message/send answered (result.kind == message)", result.get("kind") == "message")
            check("0.3 echo under X-A2A-Extensions", r.headers.get("x-a2a-extensions") == EXT)

            plain = Server(tls, d, "a2a_agent.py", "--variant", "bare")
            servers.append(plain)
            r = post(client, f"{plain.origin}/a2a", BODY_03, h03)
            check("0.3 request without --compat03 is not answered", "result" not in r.json(), r.json().get("error"))
            r = post(client, f"{plain.origin}/a2a", BODY_10, {k: v for k, v in h10.items() if k != "A2A-Version"})
            check("1.0 request without A2A-Version is refused (read as 0.3)", "result" not in r.json(), r.json().get("error", {}).get("code"))
            r = post(client, f"{plain.origin}/a2a", BODY_10, h10)
            check("bare: answered, no echo, no metadata", "message" in r.json()["result"] and "a2a-extensions" not in r.headers and "metadata" not in r.json()["result"]["message"])

            def card_shape(origin: str) -> list:
                c = client.get(f"{origin}/.well-known/agent-card.json").json()
                p = c["capabilities"]["extensions"][0]["params"]
                return [list(p), list(p["compensation"])]

            second = Server(tls, d, "a2a_agent.py", "--variant", "bare")
            servers.append(second)
            a, b = card_shape(plain.origin), card_shape(second.origin)
            print(f"info params key order, process 1: {a}")
            print(f"info params key order, process 2: {b}")
            print(f"info same card key order in two processes: {a == b}")
            check("same card bytes twice in one process",
                  client.get(f"{plain.origin}/.well-known/agent-card.json").content
                  == client.get(f"{plain.origin}/.well-known/agent-card.json").content)

            sse = Server(tls, d, "mcp_server.py")
            servers.append(sse)
            r = post(client, f"{sse.origin}/mcp", BODY_MCP, {"Accept": "application/json"})
            check("mcp default: Accept application/json only -> 406", r.status_code == 406, r.text)
            r = post(client, f"{sse.origin}/mcp", BODY_MCP, {"Accept": "application/json, text/event-stream"})
            check("mcp default: both -> 200 text/event-stream",
                  r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream"),
                  r.headers.get("mcp-session-id"))
            js = Server(tls, d, "mcp_server.py", "--json-response")
            servers.append(js)
            r = post(client, f"{js.origin}/mcp", BODY_MCP, {"Accept": "application/json"})
            check("mcp json-response: Accept application/json -> 200 application/json",
                  r.status_code == 200 and r.headers["content-type"].startswith("application/json"))
            r = post(client, f"{js.origin}/mcp", BODY_MCP, {"Accept": "application/json"} | {"Host": "localhost"})
            check("mcp: Host without a port -> 421 (DNS-rebinding protection)", r.status_code == 421)

            with open(honest.log, encoding="utf-8") as f:
                entries = [json.loads(line) for line in f]
            check("access log has every request", len(entries) == 3, [e["status"] for e in entries])
        finally:
            for s in servers:
                s.close()


if __name__ == "__main__":
    main()
