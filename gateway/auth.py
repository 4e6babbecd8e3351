"""Optional API keys: a bearer header, or ``?api_key=`` where a browser cannot set headers."""

from __future__ import annotations

import hmac

from starlette.requests import HTTPConnection

OPEN_PATHS = ("/health",)


def presented_key(conn: HTTPConnection) -> str | None:
    header = conn.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return conn.query_params.get("api_key")


def authorized(conn: HTTPConnection, keys: tuple[str, ...]) -> bool:
    """True when no keys are configured, or the connection carries one of them (compared in constant time)."""
    if not keys:
        return True
    key = presented_key(conn)
    return key is not None and any(hmac.compare_digest(key.encode(), k.encode()) for k in keys)
