"""A loopback SMTP server for the tests (aiosmtpd, PyPI): STARTTLS required or implicit TLS,
LOGIN/PLAIN authentication required; each message is appended to LOG as one JSON line.

usage: smtp_server.py CERT KEY LOG MODE(starttls|implicit) USER PASSWORD PORT
"""
import json
import ssl
import sys
import threading

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

cert, key, log, mode, user, password, port = sys.argv[1:8]


class Handler:
    async def handle_DATA(self, server, session, envelope):
        with open(log, "a") as f:
            f.write(json.dumps({
                "from": envelope.mail_from,
                "to": envelope.rcpt_tos,
                "data": envelope.content.decode("utf-8", "replace"),
                "authenticated": bool(session.authenticated),
            }) + "\n")
        return "250 OK queued"


def authenticator(server, session, envelope, mechanism, auth_data):
    ok = (isinstance(auth_data, LoginPassword)
          and auth_data.login.decode() == user
          and auth_data.password.decode() == password)
    # handled=False: aiosmtpd then answers a failure "535 5.7.8 Authentication credentials
    # invalid" itself. AuthResult's default (handled=True) means "the authenticator already
    # answered", so a failed login would get no answer at all and the client would wait.
    return AuthResult(success=ok, handled=False)


ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
ctx.load_cert_chain(cert, key)
common = dict(hostname="127.0.0.1", port=int(port), authenticator=authenticator,
              auth_required=True)
if mode == "starttls":
    c = Controller(Handler(), tls_context=ctx, require_starttls=True, auth_require_tls=True,
                   **common)
else:
    # The whole connection is TLS (aiosmtpd's own TLS check only knows STARTTLS).
    c = Controller(Handler(), ssl_context=ctx, server_hostname="127.0.0.1",
                   auth_require_tls=False, **common)
c.start()
print("ready", flush=True)
threading.Event().wait()
