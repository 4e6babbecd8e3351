"""GET /health (open, for load balancers and orchestrators) and GET /metrics (Prometheus).

Under ``serve --processes N`` the status code is that of the process that answered (a load balancer's check hits one
process of the port), and ``"processes"`` lists every gateway process's last snapshot (gateway/host/siblings.py)."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.engine_link.workers import REFUSED, WorkersFile, with_pool
from gateway.host.drain import DRAINING
from gateway.shared_state import GatewayState

# what /health repeats of the worker's ready message
ENGINE_FIELDS = ("engine", "device", "dtype", "weights", "notes", "decode", "decode_fallback", "vocode",
                 "vocode_fallback", "backend", "prompt_cache", "state", "placement", "memory",
                 "utilization")


def health_body(state: GatewayState) -> dict[str, Any]:
    """This process's health: ``status`` is ok, starting, down or draining (gateway/host/drain.py: taken out of a
    load balancer's rotation, whatever its engine's state)."""
    ready = state.engine.ready
    engines = state.engine.engines
    workers = worker_health(state, engines) or []  # the embedded ones (this process's, or its supervisor's)
    backend_down = next((e["backend"]["error"] for e in engines if e.get("backend", {}).get("state") == "down"), None)
    # starting: no worker has connected yet. A worker whose connection was lost is down at once, before its
    # supervisor has noticed the exit (restarts still 0): otherwise a killed worker read "starting" for a moment.
    first = bool(workers) and all(w["restarts"] == 0 for w in workers) and not any(e["lost"] for e in engines)
    if ready is not None:
        status = "ok"
    elif backend_down is None and first and all(w["state"] != REFUSED for w in workers):
        status = "starting"
    else:
        status = "down"
    reason = None
    left = state.drain.rules.left(time.monotonic())
    if state.drain.rules.state == DRAINING:
        status = DRAINING
    elif status == "down":  # why: the worker's TTS server is down, or the worker stopped (cannot start, stalled...)
        reason = backend_down or next((w["last_exit_reason"] for w in workers if w["last_exit_reason"]), None)
    body: dict[str, Any] = {
        "status": status,
        **({"reason": reason} if reason else {}),  # why the worker stopped: cannot start, stalled, killed...
        "engine": ready and {k: v for k, v in asdict(ready).items() if k in ENGINE_FIELDS},
        "watermark": bool(ready and ready.watermark),
        "sessions": len(state.sessions),
        **({"connections": connections} if (connections := open_connections(state)) is not None else {}),
        **({"drain_left_s": round(left, 1)} if left is not None else {}),  # of the grace for utterances in flight
        "caller_audio": {outcome: state.metrics.caller_tally[outcome]
                         for outcome in ("heard", "rejected", "flooded", "dropped")},
        "engines": engines,
        "queued_audio": getattr(state.engine, "queued_audio", None),  # received from the workers, not yet taken by the clients
        "failovers": dict(state.engine.failovers),  # utterances whose worker went away: moved on, or given up
        "prompt_cache": state.prompts.health(),  # hits, misses, bytes (gateway/prompt_cache/)
    }
    if (keys := state.tenancy.health()) is not None:  # the keys file: when loaded, how many, a refused reload
        body["keys"] = keys
    if state.settings.rtc_ports is not None:
        body["rtc_ports"] = "%d-%d" % state.settings.rtc_ports
    if workers:
        body["workers"] = workers
    if state.workers is not None and len(workers) == 1:  # the one embedded worker, as before there could be several
        body["worker"] = {key: workers[0][key]
                          for key in ("alive", "pid", "restarts", "last_exit", "last_exit_reason", "backoff_s")}
    return body


def worker_health(state: GatewayState, engines: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The embedded workers (device, state, pid, restarts...): this process's own, or under ``serve --processes N``
    its supervisor's (gateway/engine_link/workers.py); None with --engine-url workers only."""
    if state.workers is not None:
        listed = state.workers.health()
    elif state.settings.shared_dir is not None:
        listed = WorkersFile(state.settings.shared_dir).read()
    else:
        return None
    return with_pool(listed, engines) if listed else None


def open_connections(state: GatewayState) -> int | None:
    """Client connections open in this process (uvicorn's, HTTP and WebSocket, Wyoming's and AudioSocket's), or None
    where no server runs the app (an app under test)."""
    if state.drain.server is None:
        return None
    return (len(state.drain.server.server_state.connections) + len(state.wyoming_clients)
            + len(state.audiosocket_clients))


def snapshot(body: dict[str, Any], listening: bool) -> dict[str, Any]:
    """What one gateway process tells its siblings about itself."""
    return {"status": body["status"], "sessions": body["sessions"], "connections": body.get("connections"),
            "rtc_ports": body.get("rtc_ports"),
            "engines_available": sum(1 for engine in body["engines"] if engine["available"]),
            "listening": listening}  # it takes connections on the port: what a rolling restart waits for


async def health(request: Request) -> Response:
    state: GatewayState = request.app.state.gateway
    body = health_body(state)
    if state.siblings is not None:
        state.siblings.write(snapshot(body, state.drain.listening))
        body["pid"] = state.siblings.pid
        body["processes"] = state.siblings.read_all()
    return JSONResponse(body, status_code=200 if body["status"] == "ok" else 503)


async def metrics(request: Request) -> Response:
    state: GatewayState = request.app.state.gateway
    engines = state.engine.engines
    state.metrics.engines(state.engine.available, engines, worker_health(state, engines))
    return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)
