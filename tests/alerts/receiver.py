"""A loopback HTTPS alert receiver for the tests: /hook verifies each delivery with the official
`standardwebhooks` library (PyPI), /slack and /ntfy check their request shapes. Every request is
appended to LOG as one JSON line (path, webhook-id, verified or why not, the parsed body). The
answer is 204, or what MODE says (500 forever; "plain": plain HTTP, no TLS; "hang_first": the
first /hook delivery is logged and never answered, as if the sender were killed mid-request).

usage: receiver.py CERT KEY SECRET LOG MODE   (prints the port on stdout)
"""
import json
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook

cert, key, secret, log_path, mode = sys.argv[1:6]
hook = Webhook(secret)
lock = threading.Lock()
hooks_seen = [0]


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(n)
        entry = {"path": self.path, "id": self.headers.get("webhook-id")}
        try:
            if self.path == "/hook":
                hook.verify(body, {k.lower(): v for k, v in self.headers.items()})
                payload = json.loads(body)
                entry.update(ok=True, type=payload["type"], payload=payload)
                assert payload["id"] == entry["id"], "payload id is the webhook-id"
            elif self.path == "/slack":
                msg = json.loads(body)
                assert isinstance(msg["text"], str) and msg["text"], "text"
                assert any(b["type"] == "section" for b in msg["blocks"]), "blocks"
                entry.update(ok=True, text=msg["text"])
            elif self.path == "/ntfy":
                for h in ("title", "tags", "priority"):
                    assert self.headers.get(h), h
                assert 1 <= int(self.headers["priority"]) <= 5
                entry.update(ok=True, title=self.headers["title"], tags=self.headers["tags"],
                             priority=self.headers["priority"], body=body.decode())
            else:
                entry.update(ok=False, why="unknown path")
        except Exception as e:  # noqa: BLE001 - the test reads why
            entry.update(ok=False, why=repr(e))
        with lock:
            with open(log_path, "a") as f:
                f.write(json.dumps(entry) + "\n")
            if self.path == "/hook":
                hooks_seen[0] += 1
            hang = mode == "hang_first" and self.path == "/hook" and hooks_seen[0] == 1
        if hang:
            threading.Event().wait()
        status = 500 if mode == "fail" else 204
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
if mode != "plain":
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(srv.server_address[1], flush=True)
srv.serve_forever()
