"""``--cors-origins``: the browser origins the gateway answers. With none set (the default) it behaves as before:
CORS allows every origin (``*``) and a WebSocket upgrade may come from any page. With a list, CORS answers those
origins exactly (never ``*``; nothing for another origin, nor for ``null``), and a WebSocket upgrade that carries an
``Origin`` not in the list is refused with HTTP 403 before the upgrade. An upgrade with no ``Origin`` (a server, a
phone stack) is not a browser's and is not affected.

``parse_origins`` (the flag's type) and ``allowed`` are pure; ``OriginGate`` is the ASGI middleware.
"""

from __future__ import annotations

import argparse
import json
import re

from typing import Any, Awaitable, Callable

ASGIApp = Callable[..., Awaitable[None]]  # (no Starlette import: cli.py takes parse_origins from here)
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_ORIGIN = re.compile(r"^(https?)://([a-z0-9.\-]+|\[[0-9a-f:.]+\])(:[0-9]{1,5})?$")
_DEFAULT_PORTS = {"http": ":80", "https": ":443"}


def normalize(origin: str) -> str | None:
    """``origin`` as a browser sends it (scheme://host[:port], lower case, no default port), or None when it is not
    one (``null``, a path, another scheme)."""
    found = _ORIGIN.match(origin.strip().rstrip("/").lower())
    if found is None:
        return None
    scheme, host, port = found.groups()
    if port == _DEFAULT_PORTS[scheme]:
        port = None
    return f"{scheme}://{host}{port or ''}"


def parse_origins(value: str) -> tuple[str, ...]:
    """The flag's value: origins, comma-separated (``https://app.example,http://localhost:3000``)."""
    origins: list[str] = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        origin = normalize(item)
        if origin is None:
            raise argparse.ArgumentTypeError(f"expected origins like https://app.example or http://localhost:3000, "
                                             f"comma-separated (no path, no *, no null), got {item!r}")
        origins.append(origin)
    return tuple(dict.fromkeys(origins))


def allowed(origins: tuple[str, ...], origin: str | None) -> bool:
    """Whether a request with ``Origin: origin`` (None: no such header) may go on; every one with no list."""
    if not origins or origin is None:
        return True
    return normalize(origin) in origins


class OriginGate:
    """Refuses, with a 403 and a JSON error before any upgrade, a WebSocket whose ``Origin`` is not allowed."""

    def __init__(self, app: ASGIApp, origins: tuple[str, ...]) -> None:
        self.app, self.origins = app, origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and self.origins:
            origin = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"origin"), None)
            if not allowed(self.origins, origin):
                await receive()  # websocket.connect
                if "websocket.http.response" in scope.get("extensions", {}):
                    body = json.dumps({"error": {"code": "origin_forbidden",
                                                 "message": "this origin may not open WebSockets here"}}).encode()
                    await send({"type": "websocket.http.response.start", "status": 403,
                                "headers": [(b"content-type", b"application/json"),
                                            (b"content-length", str(len(body)).encode())]})
                    await send({"type": "websocket.http.response.body", "body": body})
                else:
                    await send({"type": "websocket.close", "code": 1008})  # the server answers 403
                return
        await self.app(scope, receive, send)
