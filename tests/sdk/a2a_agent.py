"""An A2A 1.0 agent built with a2a-sdk's own server classes, declaring the A2A Conduct Extension.

    python a2a_agent.py --cert CHAIN.pem --key KEY.pem --access-log LOG.jsonl \
        [--variant honest|bare] [--compat03] [--sign] [--watch-stdin]

Prints `READY <port>` once it listens on 127.0.0.1:<port> (HTTPS). What is served:

- `GET /.well-known/agent-card.json`: the Agent Card, from `create_agent_card_routes`. Its
  `capabilities.extensions` lists the conduct extension (conduct-walk.md §1) with its params.
- `POST /a2a`: the JSON-RPC endpoint, from `create_jsonrpc_routes` over the SDK's
  `DefaultRequestHandler` and an `AgentExecutor` that answers every message with one Message.
  `--compat03` passes `enable_v0_3_compat=True`: the same endpoint then also answers the 0.3
  methods (`message/send`, ...) with 0.3-shaped results and reads `X-A2A-Extensions`.
- `GET /.well-known/jwks.json` (with `--sign`): the JWK Set holding the card's signing key.

`--variant honest` does what §1.6 asks of an agent when a request activates the extension: the
reply Message carries the conduct keys in `metadata` and lists the extension in `extensions`,
and the response echoes the activated URI in `A2A-Extensions` (plus `X-A2A-Extensions` when
the request used that spelling). a2a-sdk 1.3.0 has no way to echo activated extensions in a
response header (its ServerCallContext knows `requested_extensions` only), so a small ASGI
middleware does it. `--variant bare` does none of that.

`--sign` signs the card with a2a-sdk's `create_agent_card_signer` (ES256, a P-256 key made at
start), protected header `{alg, typ: JOSE, kid, jku}` with `jku` this server's JWK Set.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from wirelog import base_arguments, bind_loopback, serve  # noqa: E402

from a2a.helpers import new_text_message  # noqa: E402
from a2a.server.agent_execution import AgentExecutor, RequestContext  # noqa: E402
from a2a.server.events import EventQueue  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import (  # noqa: E402
    DefaultServerCallContextBuilder,
    create_agent_card_routes,
    create_jsonrpc_routes,
)
from a2a.server.tasks import InMemoryTaskStore  # noqa: E402
from a2a.types import (  # noqa: E402
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentSkill,
)
from starlette.applications import Starlette  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

EXT = "https://gate.horizonshield.dev/ext/conduct/v1"
PERMA = "https://w3id.org/horizonshield/conduct/v1"
ACCEPTED = (EXT, PERMA)
RPC_PATH = "/a2a"
JWKS_PATH = "/.well-known/jwks.json"
KID = "conduct-interop-p256-1"


def activated(values: list[str]) -> list[str]:
    """The conduct URIs (as the caller spelled them) in a list of extension header values."""
    items = [item.strip() for v in values for item in v.split(",")]
    return [item for item in items if item in ACCEPTED]


class ServedByContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's default context, plus the URL the request arrived at (§1.6 `served_by`)."""

    def build(self, request):  # type: ignore[override]
        context = super().build(request)
        url = request.url
        host = (url.hostname or "").lower()
        if ":" in host:
            host = f"[{host}]"
        port = f":{url.port}" if url.port not in (None, 443) else ""
        context.state["served_by"] = f"https://{host}{port}{url.path}"
        return context


class ConductExecutor(AgentExecutor):
    """Answers every message with one Message; the honest variant adds the §3 metadata."""

    def __init__(self, honest: bool, params: dict):
        self.honest = honest
        self.params = params

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        reply = new_text_message(
            "conduct interop agent: message received",
            context_id=context.context_id,
        )
        if self.honest and context.requested_extensions & set(ACCEPTED):
            reply.metadata.update(
                {
                    f"{EXT}/endpoint": self.params["measured_endpoints"][0],
                    f"{EXT}/served_by": context.call_context.state.get("served_by", ""),
                    f"{EXT}/conduct_record": self.params["conduct_record"],
                    f"{EXT}/witness_intake": self.params["witness_intake"],
                }
            )
            reply.extensions.append(EXT)
        await event_queue.enqueue_event(reply)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError("nothing to cancel: every reply is immediate")


class EchoExtensionsMiddleware:
    """Echo the activated conduct URI in the response headers (A2A 1.0 §, conduct §1.6).

    a2a-sdk 1.3.0 reads `A2A-Extensions` into `ServerCallContext.requested_extensions` but has
    no notion of "activated" extensions and writes no response header for them.
    """

    def __init__(self, app, path: str):
        self.app = app
        self.path = path

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        new, old = [], []
        for name, value in scope["headers"]:
            if name == b"a2a-extensions":
                new.append(value.decode("latin-1"))
            elif name == b"x-a2a-extensions":
                old.append(value.decode("latin-1"))
        echo = activated(new + old)
        echo_old = activated(old)

        async def send_with_echo(message):
            if message["type"] == "http.response.start" and echo:
                headers = list(message.get("headers", []))
                headers.append((b"a2a-extensions", ", ".join(dict.fromkeys(echo)).encode("latin-1")))
                if echo_old:
                    headers.append(
                        (b"x-a2a-extensions", ", ".join(dict.fromkeys(echo_old)).encode("latin-1"))
                    )
                message = dict(message, headers=headers)
            await send(message)

        await self.app(scope, receive, send_with_echo)


def build_card(origin: str, compat03: bool) -> tuple[AgentCard, dict]:
    endpoint = f"{origin}{RPC_PATH}"
    params = {
        "compensation": {
            "paid_by": "public",
            "referral_fee": False,
            "listing_fee": False,
            "success_fee_pct": 0,
            "disclosure_url": f"{origin}/conduct",
        },
        "measured_endpoints": [endpoint],
        "conduct_record": f"{origin}/conduct/record.json",
        "witness_intake": f"{origin}/conduct/witness",
    }
    interfaces = [AgentInterface(url=endpoint, protocol_binding="JSONRPC", protocol_version="1.0")]
    if compat03:
        interfaces.append(
            AgentInterface(url=endpoint, protocol_binding="JSONRPC", protocol_version="0.3")
        )
    card = AgentCard(
        name="conduct interop agent",
        description="An a2a-sdk agent that declares the A2A Conduct Extension (interop test).",
        version="1.0.0",
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(
            streaming=False,
            push_notifications=False,
            extensions=[
                AgentExtension(
                    uri=EXT,
                    description="A2A Conduct Extension v1: how this agent is paid, and where witnesses file.",
                    required=False,
                    params=params,
                )
            ],
        ),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="echo",
                name="acknowledge",
                description="Acknowledges any message.",
                tags=["interop"],
            )
        ],
    )
    return card, params


def sign_card(card: AgentCard, origin: str) -> tuple[AgentCard, dict]:
    """Sign with a2a-sdk's helper; return the signed card and the JWK Set that verifies it."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from jwt.algorithms import ECAlgorithm

    from a2a.utils.signing import create_agent_card_signer

    private = ec.generate_private_key(ec.SECP256R1())
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    signer = create_agent_card_signer(
        signing_key=pem,
        protected_header={
            "alg": "ES256",
            "typ": "JOSE",
            "kid": KID,
            "jku": f"{origin}{JWKS_PATH}",
        },
    )
    signed = signer(card)
    jwk = ECAlgorithm.to_jwk(private.public_key(), as_dict=True)
    jwk.update({"kid": KID, "alg": "ES256", "use": "sig"})
    return signed, {"keys": [jwk]}


def main() -> None:
    p = base_arguments(__doc__.splitlines()[0])
    p.add_argument("--variant", choices=["honest", "bare"], default="honest")
    p.add_argument("--compat03", action="store_true", help="enable a2a-sdk's A2A 0.3 compatibility")
    p.add_argument("--sign", action="store_true", help="sign the card (ES256) and serve the JWK Set")
    args = p.parse_args()

    sock, port = bind_loopback()
    origin = f"https://127.0.0.1:{port}"
    card, params = build_card(origin, args.compat03)
    jwks = None
    if args.sign:
        card, jwks = sign_card(card, origin)

    handler = DefaultRequestHandler(
        agent_executor=ConductExecutor(args.variant == "honest", params),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    routes = create_agent_card_routes(card)
    routes += create_jsonrpc_routes(
        handler,
        rpc_url=RPC_PATH,
        context_builder=ServedByContextBuilder(),
        enable_v0_3_compat=args.compat03,
    )
    if jwks is not None:

        async def serve_jwks(_request):
            return JSONResponse(jwks, media_type="application/jwk-set+json")

        routes.append(Route(JWKS_PATH, serve_jwks, methods=["GET"]))

    app = Starlette(routes=routes)
    if args.variant == "honest":
        app = EchoExtensionsMiddleware(app, RPC_PATH)
    serve(app, sock, port, args)


if __name__ == "__main__":
    main()
