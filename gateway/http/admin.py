"""``POST /v1/admin/drain``: drain this server as SIGTERM does (gateway/host/drain.py), then it exits.

With API keys set it needs one (the API key middleware); with none, only a client on this host that did not come
through a proxy may ask (an open server must not be stopped by whoever reaches it). Under ``serve --processes N`` the
process that answers asks its supervisor, which drains every process."""

from __future__ import annotations

import os
import signal

from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.http.errors import ApiError
from gateway.shared_state import GatewayState

LOOPBACK = ("127.0.0.1", "::1")


def from_this_host(request: Request) -> bool:
    """A loopback client, not a proxy's forwarding (uvicorn puts a trusted proxy's X-Forwarded-For client in
    ``request.client``; a forwarding header left in place counts against it too)."""
    proxied = "x-forwarded-for" in request.headers or "forwarded" in request.headers
    return request.client is not None and request.client.host in LOOPBACK and not proxied


async def drain(request: Request) -> JSONResponse:
    state: GatewayState = request.app.state.gateway
    if not state.settings.api_keys and not from_this_host(request):
        raise ApiError(403, "forbidden", "with no API keys set, /v1/admin/drain is accepted only from this host "
                                         "(127.0.0.1 or ::1, not through a proxy)")
    supervisor = state.settings.supervisor_pid
    if supervisor is not None and os.getppid() == supervisor:
        os.kill(supervisor, signal.SIGTERM)
    else:
        state.drain.request()
    return JSONResponse({"status": "draining", "grace_s": state.settings.drain_grace_s,
                         "sessions": len(state.sessions)}, status_code=202)
