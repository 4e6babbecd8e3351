"""Optional API keys: a bearer header; on a WebSocket, a ``cbf.key.<key>`` subprotocol (a browser cannot set its
headers); ``?api_key=`` still accepted (and redacted from the logs, gateway/guard/operator_safety.py).

Whose key it is (gateway/guard/tenants.py) goes in the connection's ASGI scope: ``scope["state"]["tenant"]``, the
tenant's name (Starlette's ``request.state.tenant``), or None for an --api-key key or when no key is set.
"""

from __future__ import annotations

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from gateway.guard.tenancy import LiveSocket, Tenancy
from gateway.http.errors import error_response

OPEN_PATHS = ("/health",)
SUBPROTOCOL = "cbf.v1"  # what the server picks when a WebSocket offers its key as a subprotocol
KEY_SUBPROTOCOL = "cbf.key."


def offered_subprotocols(conn: HTTPConnection) -> list[str]:
    return [p.strip() for p in conn.headers.get("sec-websocket-protocol", "").split(",") if p.strip()]


def presented_key(conn: HTTPConnection) -> str | None:
    header = conn.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    offered = [p[len(KEY_SUBPROTOCOL):] for p in offered_subprotocols(conn) if p.startswith(KEY_SUBPROTOCOL)]
    return offered[0] if offered else conn.query_params.get("api_key")


def tenant_of(conn: HTTPConnection) -> str | None:
    """The tenant a connection was admitted as (None: no keys file)."""
    return conn.scope.get("state", {}).get("tenant")


def admit(conn: HTTPConnection, tenancy: Tenancy, key: str | None) -> bool:
    """Whether ``key`` opens ``conn``'s path; if so its tenant goes in the scope."""
    identity = tenancy.identify(key)
    if identity is None:
        return False
    if identity.client is not None and not identity.client.may_reach(conn.scope.get("path", "")):
        tenancy.tenants.refuse_route(identity.client.name, conn.scope.get("path", ""))
        return False
    conn.scope.setdefault("state", {})["tenant"] = identity.name
    return True


def authorized(conn: HTTPConnection, tenancy: Tenancy) -> bool:
    """Whether the connection carries a key that opens its path (always, when no key is set)."""
    return admit(conn, tenancy, presented_key(conn))


async def accept_websocket(ws: WebSocket, tenancy: Tenancy) -> bool:
    """Accept ``ws`` (with ``cbf.v1`` when offered); without a valid key, send an ``unauthorized`` error event, close
    with code 4401 and return False."""
    await ws.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in offered_subprotocols(ws) else None)
    if authorized(ws, tenancy):
        return True
    await ws.send_json({"type": "error", "code": "unauthorized", "message": "a valid API key is required"})
    await ws.close(4401)
    return False


class ApiKeyMiddleware:
    """Every HTTP request under /v1 and /metrics needs a key when keys are set (401; 403 for a route its tenant may
    not reach). WebSockets check for themselves, so they can answer in their protocol's shape; with keys set each is
    known to the tenancy while open, to be closed should its key be removed."""

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
            path.startswith("/v1/") or path == "/metrics") and path not in OPEN_PATHS
        if guarded:
            conn = HTTPConnection(scope)
            identity = self.tenancy.identify(presented_key(conn))
            if identity is None:
                await error_response(401, "unauthorized", "a valid API key is required",
                                     {"WWW-Authenticate": "Bearer"})(scope, receive, send)
                return
            if identity.client is not None and not identity.client.may_reach(path):
                exc = self.tenancy.tenants.refuse_route(identity.client.name, path)
                await error_response(exc.status, exc.code, str(exc))(scope, receive, send)
                return
            scope.setdefault("state", {})["tenant"] = identity.name
        await self.app(scope, receive, send)
