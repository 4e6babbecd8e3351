"""The operator's endpoints. ``POST /v1/admin/drain``: drain this server as SIGTERM does (gateway/host/drain.py), then
it exits. ``GET /v1/usage``: each tenant's usage (gateway/metrics.py), summed over ``serve --processes N``.
``POST /v1/admin/unload`` and ``/v1/admin/load``: every connected worker frees its model now, or loads it again
(engine/residency.py; ``--unload-after`` does the first when idle, the next utterance the second).

With API keys set they need an operator's: an --api-key key, or a keys-file client with ``admin = true``; with none,
only a client on this host that did not come through a proxy may ask (an open server must not be stopped by whoever
reaches it). Under ``serve --processes N`` the process that answers a drain asks its supervisor, which drains every
process."""

from __future__ import annotations

import os
import signal

from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.guard.auth import tenant_of
from gateway.http.errors import ApiError
from gateway.shared_state import GatewayState

LOOPBACK = ("127.0.0.1", "::1")


def from_this_host(request: Request) -> bool:
    """A loopback client, not a proxy's forwarding (uvicorn puts a trusted proxy's X-Forwarded-For client in
    ``request.client``; a forwarding header left in place counts against it too)."""
    proxied = "x-forwarded-for" in request.headers or "forwarded" in request.headers
    return request.client is not None and request.client.host in LOOPBACK and not proxied


def _operator_only(request: Request) -> None:
    """Raises 403 unless the request comes from an operator (see above)."""
    state: GatewayState = request.app.state.gateway
    tenants = state.tenancy.tenants
    if not tenants.guarded:
        if not from_this_host(request):
            raise ApiError(403, "forbidden", f"with no API keys set, {request.url.path} is accepted only from this "
                                             "host (127.0.0.1 or ::1, not through a proxy)")
        return
    name = tenant_of(request)
    if name is not None and not getattr(tenants.client(name), "admin", False):
        raise ApiError(403, "forbidden", f"{request.url.path} needs an operator's key (admin = true)")


async def usage(request: Request) -> JSONResponse:
    state: GatewayState = request.app.state.gateway
    _operator_only(request)
    return JSONResponse({"tenants": state.metrics.usage()})


async def drain(request: Request) -> JSONResponse:
    state: GatewayState = request.app.state.gateway
    _operator_only(request)
    supervisor = state.settings.supervisor_pid
    if supervisor is not None and os.getppid() == supervisor:
        os.kill(supervisor, signal.SIGTERM)
    else:
        state.drain.request()
    return JSONResponse({"status": "draining", "grace_s": state.settings.drain_grace_s,
                         "sessions": len(state.sessions)}, status_code=202)


async def unload(request: Request) -> JSONResponse:
    return await _set_loaded(request, False)


async def load(request: Request) -> JSONResponse:
    return await _set_loaded(request, True)


async def _set_loaded(request: Request, loaded: bool) -> JSONResponse:
    """Each worker's state after it (or its error: ``busy`` while utterances use its model); 200 when every worker
    did it, 409 when one was busy, 503 when none is connected or one failed otherwise."""
    state: GatewayState = request.app.state.gateway
    _operator_only(request)
    if not state.engine.available:
        raise ApiError(503, "engine_unavailable", "no engine worker is connected")
    engines = await state.engine.set_loaded(loaded)
    codes = {e["error"]["code"] for e in engines if "error" in e}
    status = 200 if not codes else 409 if codes == {"busy"} else 503
    return JSONResponse({"engines": engines}, status_code=status)
