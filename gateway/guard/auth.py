"""Optional API keys: a bearer header; on a WebSocket, a ``cbf.key.<key>`` subprotocol (a browser cannot set its
headers); ``?api_key=`` still accepted (and redacted from the logs, gateway/guard/operator_safety.py)."""

from __future__ import annotations

import hmac

from starlette.requests import HTTPConnection
from starlette.websockets import WebSocket

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


def key_matches(key: str | None, keys: tuple[str, ...]) -> bool:
    """True when no keys are configured, or ``key`` is one of them (compared in constant time)."""
    if not keys:
        return True
    return key is not None and any(hmac.compare_digest(key.encode(), k.encode()) for k in keys)


def authorized(conn: HTTPConnection, keys: tuple[str, ...]) -> bool:
    """True when no keys are configured, or the connection carries one of them."""
    return key_matches(presented_key(conn), keys)


async def accept_websocket(ws: WebSocket, keys: tuple[str, ...]) -> bool:
    """Accept ``ws`` (with ``cbf.v1`` when offered); without a valid key, send an ``unauthorized`` error event, close
    with code 4401 and return False."""
    await ws.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in offered_subprotocols(ws) else None)
    if authorized(ws, keys):
        return True
    await ws.send_json({"type": "error", "code": "unauthorized", "message": "a valid API key is required"})
    await ws.close(4401)
    return False
