"""Optional API keys: an ``Authorization`` header (``Bearer KEY``, or Deepgram's ``Token KEY``) or a vendor's own key
header (``KEY_HEADERS``: Cartesia's and pipecat's ``X-API-Key``, Vapi's ``X-VAPI-SECRET``); on a WebSocket, a
``cbf.key.<key>`` subprotocol (a browser cannot set its headers); ``?api_key=`` still accepted (and redacted from the
logs, gateway/guard/operator_safety.py). A token from ``POST /v1/tokens`` (gateway/guard/tokens.py) is taken in each
of those places too, and as ``?token=``: admitted as its minting key's tenant, within its scope; its grant goes in the
scope (``scope["state"]["grant"]``) and in ``tokens.GRANT`` for the rest of the connection's work.

Whose key it is (gateway/guard/tenants.py) goes in the connection's ASGI scope: ``scope["state"]["tenant"]``, the
tenant's name (Starlette's ``request.state.tenant``), or None for an --api-key key or when no key is set.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from gateway.guard.tenancy import LiveSocket, Tenancy
from gateway.guard.tenants import TenantRefused
from gateway.guard.tokens import GRANT, TokenRefused, looks_like_token
from gateway.http.errors import error_response

OPEN_PATHS = ("/health",)
GUARDED_PREFIXES = ("/v1/", "/cartesia/", "/deepgram/")  # every HTTP request below these needs a key when keys are set
AUTH_SCHEMES = ("bearer", "token")  # ``Authorization: <scheme> KEY``, any case (Deepgram's clients send both)
KEY_HEADERS = ("x-api-key", "x-vapi-secret")  # vendors' own headers for the key (Cartesia and pipecat's, Vapi's)
SUBPROTOCOL = "cbf.v1"  # what the server picks when a WebSocket offers its key as a subprotocol
KEY_SUBPROTOCOL = "cbf.key."


def offered_subprotocols(conn: HTTPConnection) -> list[str]:
    return [p.strip() for p in conn.headers.get("sec-websocket-protocol", "").split(",") if p.strip()]


def presented_key(conn: HTTPConnection) -> str | None:
    scheme, _, value = conn.headers.get("authorization", "").partition(" ")
    if scheme.lower() in AUTH_SCHEMES and value.strip():
        return value.strip()
    for name in KEY_HEADERS:
        if key := conn.headers.get(name):
            return key.strip()
    offered = [p[len(KEY_SUBPROTOCOL):] for p in offered_subprotocols(conn) if p.startswith(KEY_SUBPROTOCOL)]
    if offered:
        return offered[0]
    return conn.query_params.get("api_key") or conn.query_params.get("token")


def tenant_of(conn: HTTPConnection) -> str | None:
    """The tenant a connection was admitted as (None: no keys file)."""
    return conn.scope.get("state", {}).get("tenant")


@dataclass(frozen=True)
class Refusal:
    """Why a connection was not admitted: its HTTP status, its code (the WebSocket close code is 4000 + status)."""

    status: int
    code: str
    message: str
    token: bool = False  # a token's refusal (a key's, on a WebSocket, is said as ``unauthorized``)

    @property
    def close_code(self) -> int:
        return 4000 + self.status


UNAUTHORIZED = Refusal(401, "unauthorized", "a valid API key is required")


def check(scope: dict, tenancy: Tenancy, key: str | None) -> Refusal | None:
    """None when ``key`` (an API key or a token) opens the scope's path, its tenant (and a token's grant) then put in
    the scope; else why not."""
    path, method = scope.get("path", ""), scope.get("method") if scope["type"] == "http" else None
    grant = None
    if key is not None and tenancy.tenants.guarded and looks_like_token(key):
        try:
            identity, grant = tenancy.admit_token(key, method, path, time.time())
        except (TokenRefused, TenantRefused) as exc:
            if exc.code != "unauthorized" or (identity := tenancy.identify(key)) is None:  # (a key shaped so)
                return Refusal(exc.status, exc.code, str(exc), token=True)
    else:
        identity = tenancy.identify(key)
    if identity is None:
        return UNAUTHORIZED
    if grant is None and identity.client is not None and not identity.client.may_reach(path):
        exc = tenancy.tenants.refuse_route(identity.client.name, path)
        return Refusal(exc.status, exc.code, str(exc))
    state = scope.setdefault("state", {})
    state["tenant"], state["grant"] = identity.name, grant
    GRANT.set(grant)
    return None


def refusal_of(conn: HTTPConnection) -> Refusal:
    """Why ``conn``'s last admission with a token failed (``unauthorized`` for a key, or when none was tried)."""
    refusal = conn.scope.get("state", {}).get("refusal")
    return refusal if refusal is not None and refusal.token else UNAUTHORIZED


def admit(conn: HTTPConnection, tenancy: Tenancy, key: str | None) -> bool:
    """Whether ``key`` opens ``conn``'s path; if so its tenant goes in the scope, else why not (``refusal_of``)."""
    refusal = check(conn.scope, tenancy, key)
    state = conn.scope.setdefault("state", {})
    if refusal is not None and (refusal.token or state.get("refusal") is None):  # a token's refusal is kept
        state["refusal"] = refusal
    return refusal is None


def authorized(conn: HTTPConnection, tenancy: Tenancy) -> bool:
    """Whether the connection carries a key that opens its path (always, when no key is set)."""
    return admit(conn, tenancy, presented_key(conn))


async def accept_websocket(ws: WebSocket, tenancy: Tenancy) -> bool:
    """Accept ``ws`` (with ``cbf.v1`` when offered); without a valid key, send an ``unauthorized`` error event, close
    with code 4401 and return False (a token's refusal: its own code, 4401 or 4403)."""
    await ws.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in offered_subprotocols(ws) else None)
    if authorized(ws, tenancy):
        return True
    refusal = refusal_of(ws)
    await ws.send_json({"type": "error", "code": refusal.code, "message": refusal.message})
    await ws.close(refusal.close_code)
    return False


class ApiKeyMiddleware:
    """Every HTTP request under /v1 (and the vendors' dialects: ``GUARDED_PREFIXES``) and /metrics needs a key when keys
    are set (401; 403 for a route its tenant may not reach). WebSockets check for themselves, so they can answer in
    their protocol's shape; with keys set each is known to the tenancy while open, to be closed should its key be
    removed."""

    def __init__(self, app: ASGIApp, tenancy: Tenancy) -> None:
        self.app, self.tenancy = app, tenancy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and self.tenancy.tenants.guarded:
            live = LiveSocket(scope, send)
            self.tenancy.live.add(live)
            try:
                await self.app(scope, receive, live.send)
            finally:
                self.tenancy.live.discard(live)
            return
        path = scope.get("path", "")
        guarded = scope["type"] == "http" and scope.get("method") != "OPTIONS" and (
            path.startswith(GUARDED_PREFIXES) or path == "/metrics") and path not in OPEN_PATHS
        if guarded:
            refusal = check(scope, self.tenancy, presented_key(HTTPConnection(scope)))
            if refusal is not None:
                headers = {"WWW-Authenticate": "Bearer"} if refusal.status == 401 else None
                await error_response(refusal.status, refusal.code, refusal.message, headers)(scope, receive, send)
                return
        await self.app(scope, receive, send)
