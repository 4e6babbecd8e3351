"""The embedded engine workers of one server: one per ``serve --engine-devices`` entry, else the one of the engine
flags. Each is an ``EngineProcess`` (supervised: restarted when it dies, refused for good when it cannot start); all
are reached with one secret and sit in the gateway's one engine pool (gateway/engine_link/pool.py: least busy first,
failover among them). Under ``serve --processes N`` the supervisor owns them and writes what /health says of them to
the processes' shared directory each second (``WorkersFile``), for every gateway process to read.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from pathlib import Path
from typing import Any, Callable

from gateway.engine_link.process import EngineProcess

# a worker's state in /health's "workers": its process's, then whether the gateway's pool has it ready
READY, STARTING, RESTARTING, REFUSED, STOPPED = "ready", "starting", "restarting", "refused", "stopped"


class EmbeddedWorkers:
    def __init__(self, engine_args: list[str], devices: tuple[str, ...] = (),
                 on_refusal_at_start: Callable[[str], None] | None = None) -> None:
        """``devices``: one worker each (its ``--device``); none: one worker on the engine flags' own device.
        ``on_refusal_at_start``: told why when a worker cannot start at all at its first start (the server then
        stops with that sentence, which names the worker's device where there are several)."""
        self.secret = secrets.token_urlsafe(32)
        several = len(devices) > 1
        self.processes = [EngineProcess(engine_args, _naming(device, on_refusal_at_start) if several
                                        else on_refusal_at_start, secret=self.secret, device=device)
                          for device in (devices or (None,))]

    @property
    def urls(self) -> list[str]:
        return [process.url for process in self.processes]

    def start(self) -> None:
        for process in self.processes:
            process.start()

    async def stop(self) -> None:
        await asyncio.gather(*(process.stop() for process in self.processes))

    def health(self) -> list[dict[str, Any]]:
        return [process_health(process) for process in self.processes]


def _naming(device: str | None, told: Callable[[str], None] | None) -> Callable[[str], None] | None:
    if told is None:
        return None
    return lambda reason: told(f"the engine worker on {device} cannot start: {reason}")


def process_health(process: EngineProcess) -> dict[str, Any]:
    """What the supervisor knows of one worker: its device, pid, process state, restarts and why it last stopped."""
    if process.refusal is not None:
        state = REFUSED
    elif process.backoff_s is not None:
        state = RESTARTING
    else:
        state = STARTING if process.alive or process.proc is None else STOPPED
    return {"device": process.device or "", "url": process.url, "pid": process.proc and process.proc.pid,
            "alive": process.alive, "state": state, "restarts": process.restarts, "last_exit": process.last_exit,
            "last_exit_reason": process.last_exit_reason,
            "backoff_s": None if process.backoff_s is None else round(process.backoff_s, 2)}


def with_pool(workers: list[dict[str, Any]], engines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``workers`` (``process_health``'s) with the pool's view of each (by URL): a live worker the pool has available
    is ``ready``; ``model`` is its model's state (loaded, unloading, unloaded, loading), ``in_flight`` its utterances
    in this gateway process."""
    by_url = {engine["url"]: engine for engine in engines}
    out = []
    for worker in workers:
        engine = by_url.get(worker["url"], {})
        ready = worker["state"] == STARTING and worker["alive"] and engine.get("available")
        out.append({**worker, "state": READY if ready else worker["state"], "model": engine.get("state"),
                    "in_flight": engine.get("in_flight", 0)})
    return out


class WorkersFile:
    """``serve --processes N``: the supervisor's ``process_health`` of each worker, in the shared directory."""

    NAME = "engine-workers.json"

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / self.NAME

    def write(self, workers: list[dict[str, Any]]) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(workers))
        os.replace(tmp, self.path)  # a reader never sees half of it

    def read(self) -> list[dict[str, Any]]:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):  # none (the workers are --engine-url ones), or not written yet
            return []
