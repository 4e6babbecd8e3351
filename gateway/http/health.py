"""GET /health (open, for load balancers and orchestrators) and GET /metrics (Prometheus)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.shared_state import GatewayState


async def health(request: Request) -> Response:
    state: GatewayState = request.app.state.gateway
    ready = state.engine.ready
    refusal = state.process.refusal if state.process is not None else None
    if ready is not None:
        status = "ok"
    elif state.process is not None and state.process.restarts == 0 and refusal is None:
        status = "starting"
    else:
        status = "down"
    body: dict[str, Any] = {
        "status": status,
        **({"reason": refusal} if refusal and status == "down" else {}),  # the worker cannot start, and says why
        "engine": ready and {k: v for k, v in asdict(ready).items() if k in ("engine", "device", "dtype", "weights",
                                                                              "notes", "decode")},
        "watermark": bool(ready and ready.watermark),
        "sessions": len(state.sessions),
        "engines": state.engine.engines,
    }
    if state.process is not None:
        body["worker"] = {"alive": state.process.alive, "pid": state.process.proc and state.process.proc.pid,
                          "restarts": state.process.restarts,
                          "last_exit": state.process.last_exit}
    return JSONResponse(body, status_code=200 if status == "ok" else 503)


async def metrics(request: Request) -> Response:
    state: GatewayState = request.app.state.gateway
    state.metrics.engine_up.set(1 if state.engine.available else 0)
    return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)
