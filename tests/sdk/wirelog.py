"""Shared plumbing for the SDK interop servers: a wire-level access log and the uvicorn runner.

Every server here is a real ASGI app built with an official SDK, served by uvicorn over HTTPS
with the `h11` HTTP implementation. The access log is taken from the bytes on the wire, not
from ASGI: `WireLoggingH11Protocol` wraps the connection's transport so that every `write()` the
server makes is seen, and every `data_received()` too; both byte streams are parsed with a small
HTTP/1.1 framing parser. For each request/response pair one JSON line is written (and flushed)
the moment the response head has been written, so the line exists before the client can have
read the response.

A log line:

    {"conn": 3, "seq": 0, "method": "POST", "path": "/a2a", "http_version": "1.1",
     "request_headers": [["host", "127.0.0.1:4242"], ...],          # lower-case names, as received
     "request_body_len": 217,
     "status": 200, "reason": "OK",
     "response_headers": [["date", "..."], ["server", "uvicorn"], ...]}   # as written, in order

Header values are decoded as ISO-8859-1, like Python's http.client (conduct-walk.md §2.2).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import socket
import sys
import threading
from collections import deque
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

_CONN_IDS = itertools.count(1)


class _Head:
    """A parsed HTTP/1.x message head."""

    def __init__(self, start_line: str, headers: list[tuple[str, str]]):
        self.start_line = start_line
        self.headers = headers

    def get(self, name: str) -> str | None:
        value = None
        for k, v in self.headers:
            if k.lower() == name:
                value = v
        return value

    def is_chunked(self) -> bool:
        te = ",".join(v for k, v in self.headers if k.lower() == "transfer-encoding")
        return "chunked" in [t.strip().lower() for t in te.split(",")]


class _StreamParser:
    """Incremental HTTP/1.1 framing parser for one direction of one connection.

    `feed(data)` returns the heads completed by this data, as `("head", head)`, and the ends of
    bodies as `("end", nbytes)`. The body framing of a message is decided by `body_mode(head)`,
    which returns ("length", n), ("chunked", None), ("none", None) or ("close", None).
    """

    def __init__(self, body_mode):
        self.buf = bytearray()
        self.body_mode = body_mode
        self.state = "head"
        self.remaining = 0
        self.body_len = 0
        self.chunk_state = "size"

    def feed(self, data: bytes) -> list[tuple[str, Any]]:
        self.buf += data
        out: list[tuple[str, Any]] = []
        progress = True
        while progress:
            progress = False
            if self.state == "head":
                # Tolerate stray CRLF between messages (RFC 9112 §2.2).
                while self.buf[:2] == b"\r\n":
                    del self.buf[:2]
                end = self.buf.find(b"\r\n\r\n")
                if end < 0:
                    break
                raw = bytes(self.buf[:end]).decode("iso-8859-1")
                del self.buf[: end + 4]
                lines = raw.split("\r\n")
                headers = []
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers.append((name, value.strip(" \t")))
                head = _Head(lines[0], headers)
                out.append(("head", head))
                mode, n = self.body_mode(head)
                self.body_len = 0
                if mode == "length" and n > 0:
                    self.state, self.remaining = "length", n
                elif mode == "chunked":
                    self.state, self.chunk_state = "chunked", "size"
                elif mode == "close":
                    self.state = "close"
                else:
                    out.append(("end", 0))
                progress = True
            elif self.state == "length":
                if not self.buf:
                    break
                take = min(self.remaining, len(self.buf))
                del self.buf[:take]
                self.remaining -= take
                self.body_len += take
                if self.remaining == 0:
                    self.state = "head"
                    out.append(("end", self.body_len))
                progress = True
            elif self.state == "chunked":
                if self.chunk_state == "size":
                    end = self.buf.find(b"\r\n")
                    if end < 0:
                        break
                    size = int(bytes(self.buf[:end]).split(b";")[0].strip() or b"0", 16)
                    del self.buf[: end + 2]
                    if size == 0:
                        self.chunk_state = "trailers"
                    else:
                        self.chunk_state, self.remaining = "data", size + 2
                    progress = True
                elif self.chunk_state == "data":
                    if not self.buf:
                        break
                    take = min(self.remaining, len(self.buf))
                    del self.buf[:take]
                    self.remaining -= take
                    self.body_len += take
                    if self.remaining == 0:
                        self.body_len -= 2
                        self.chunk_state = "size"
                    progress = True
                else:  # trailers: lines until an empty one
                    end = self.buf.find(b"\r\n")
                    if end < 0:
                        break
                    line = bytes(self.buf[:end])
                    del self.buf[: end + 2]
                    if line == b"":
                        self.state = "head"
                        out.append(("end", self.body_len))
                    progress = True
            else:  # "close": body runs to the end of the connection
                self.body_len += len(self.buf)
                self.buf.clear()
        return out


class AccessLog:
    """One JSON line per request, flushed at once."""

    def __init__(self, path: str):
        self._file = open(path, "a", encoding="utf-8", buffering=1)
        self._lock = threading.Lock()

    def write(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()


class _Conn:
    """The wire state of one connection: requests waiting for their response, both parsers."""

    def __init__(self, log: AccessLog):
        self.id = next(_CONN_IDS)
        self.log = log
        self.seq = 0
        self.requests: deque[dict[str, Any]] = deque()
        self.inflight: deque[dict[str, Any]] = deque()  # requests whose body is still arriving
        self.responding: dict[str, Any] | None = None
        self.req_parser = _StreamParser(self._request_body_mode)
        self.resp_parser = _StreamParser(self._response_body_mode)

    @staticmethod
    def _request_body_mode(head: _Head):
        if head.is_chunked():
            return ("chunked", None)
        length = head.get("content-length")
        if length is not None and length.strip().isdigit():
            return ("length", int(length))
        return ("none", None)

    def _response_body_mode(self, head: _Head):
        try:
            status = int(head.start_line.split(" ")[1])
        except (IndexError, ValueError):
            status = 0
        method = self.responding["method"] if self.responding else ""
        if 100 <= status < 200 or status in (204, 304) or method == "HEAD":
            return ("none", None)
        if head.is_chunked():
            return ("chunked", None)
        length = head.get("content-length")
        if length is not None and length.strip().isdigit():
            return ("length", int(length))
        return ("close", None)

    def received(self, data: bytes) -> None:
        for kind, value in self.req_parser.feed(data):
            if kind == "head":
                parts = value.start_line.split(" ")
                req = {
                    "method": parts[0] if parts else "",
                    "path": parts[1] if len(parts) > 1 else "",
                    "http_version": parts[2].removeprefix("HTTP/") if len(parts) > 2 else "",
                    "request_headers": [[k.lower(), v] for k, v in value.headers],
                    "request_body_len": None,
                }
                self.inflight.append(req)
                self.requests.append(req)
            else:
                if self.inflight:
                    self.inflight.popleft()["request_body_len"] = value

    def written(self, data: bytes) -> None:
        for kind, value in self.resp_parser.feed(data):
            if kind != "head":
                continue
            parts = value.start_line.split(" ", 2)
            status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
            if 100 <= status < 200:
                req: dict[str, Any] = {"method": None, "path": None, "interim": True}
            else:
                req = self.requests.popleft() if self.requests else {"method": None, "path": None}
                self.responding = req
            entry = {"conn": self.id, "seq": self.seq}
            entry.update(req)
            entry.update(
                {
                    "status": status,
                    "reason": parts[2] if len(parts) > 2 else "",
                    "response_headers": [[k, v] for k, v in value.headers],
                }
            )
            self.seq += 1
            self.log.write(entry)


class _WireTransport:
    """Delegates everything to the real transport; sees every write."""

    def __init__(self, inner: asyncio.Transport, conn: _Conn):
        self._inner = inner
        self._conn = conn

    def write(self, data: bytes) -> None:
        if data:
            self._conn.written(bytes(data))
        self._inner.write(data)

    def writelines(self, list_of_data) -> None:
        for data in list_of_data:
            self.write(data)

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


def wire_logging_protocol(log: AccessLog) -> type[H11Protocol]:
    """An `H11Protocol` subclass whose connections are logged from the wire."""

    class WireLoggingH11Protocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            self._wire = _Conn(log)
            super().connection_made(_WireTransport(transport, self._wire))  # type: ignore[arg-type]

        def data_received(self, data: bytes) -> None:
            self._wire.received(data)
            super().data_received(data)

    return WireLoggingH11Protocol


def base_arguments(description: str) -> argparse.ArgumentParser:
    """The options every server takes."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--cert", required=True, help="PEM certificate chain (leaf first)")
    p.add_argument("--key", required=True, help="PEM private key of the leaf")
    p.add_argument("--access-log", required=True, help="JSON-lines access log, one line per request")
    p.add_argument(
        "--watch-stdin",
        action="store_true",
        help="exit when standard input reaches end of file (the parent went away)",
    )
    return p


def bind_loopback() -> tuple[socket.socket, int]:
    """A listening socket on 127.0.0.1 with a port the kernel chose."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock, sock.getsockname()[1]


def _watch_stdin() -> None:
    def run() -> None:
        try:
            while sys.stdin.buffer.read(4096):
                pass
        finally:
            os._exit(0)

    threading.Thread(target=run, daemon=True, name="stdin-watch").start()


def serve(app: Any, sock: socket.socket, port: int, args: argparse.Namespace) -> None:
    """Serve `app` over HTTPS on `sock` with the wire-logging h11 protocol; print `READY <port>`."""
    if args.watch_stdin:
        _watch_stdin()
    log = AccessLog(args.access_log)
    config = uvicorn.Config(
        app,
        http=wire_logging_protocol(log),
        ssl_certfile=args.cert,
        ssl_keyfile=args.key,
        log_level="warning",
        access_log=False,
        lifespan="auto",
    )
    server = uvicorn.Server(config)

    async def main() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            if task.done():
                task.result()
                raise SystemExit("server stopped before it started")
            await asyncio.sleep(0.01)
        sys.stdout.write(f"READY {port}\n")
        sys.stdout.flush()
        await task

    asyncio.run(main())
