"""``bench soak``'s chaos, and its view of the server it started: which processes are gateways and which engine
workers (the ``serve`` process and its descendants, read with psutil, and the workers the soak started itself), an
engine worker SIGKILLed every so often, and one gateway process of ``serve --processes N`` at a time sent SIGTERM
(it drains; its parent starts another in its slot)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from cbf_tools.bench.procs import command, descendants
from cbf_tools.peers.local_server import Workers

ROLES = {"serve": "gateway", "engine": "worker"}  # a process's role by its ``gateway.cli`` command


def role(pid: int) -> str | None:
    """gateway, worker, or None (not a ``gateway.cli`` process, or gone)."""
    argv = command(pid)
    if "gateway.cli" in argv[:-1]:
        return ROLES.get(argv[argv.index("gateway.cli") + 1])
    return None


@dataclass
class Served:
    """The processes of a server the soak started: ``pid`` (``serve``) and its descendants, and ``workers``, the
    engine workers it started itself (``--engine-url``) on ``listens``."""

    pid: int
    workers: Workers | None = None
    listens: tuple[str, ...] = ()

    def pids(self) -> dict[str, list[int]]:
        """The live processes by role: ``gateway`` (``serve``: the one, or the supervisor and its N), ``worker``."""
        by_role: dict[str, list[int]] = {"gateway": [self.pid], "worker": []}
        for pid in descendants(self.pid):
            if (kind := role(pid)) is not None:
                by_role[kind].append(pid)
        if self.workers is not None:
            by_role["worker"] += [proc.pid for proc in self.workers.procs.values() if proc.poll() is None]
        return by_role

    def gateway_children(self) -> list[int]:
        """``serve --processes N``'s gateway processes (none for one process)."""
        return self.pids()["gateway"][1:]


@dataclass
class Chaos:
    """Every ``kill_worker_every`` s an engine worker SIGKILLed: the embedded one (the gateway starts it again), or
    the soak's own in turn (started again at once, the other one meanwhile up); every ``restart_gateway_every`` s one
    gateway process of ``serve --processes N`` sent SIGTERM, never while the last one sent it still drains."""

    served: Served
    kill_worker_every: float | None
    restart_gateway_every: float | None
    workers_killed: int = 0
    kills_missed: int = 0  # no worker process was alive then (the embedded one waiting out its restart back-off)
    gateways_signalled: int = 0
    signals_held: int = 0  # the gateway process signalled before was still draining
    _first_children: set[int] = field(default_factory=set)
    _children_seen: set[int] = field(default_factory=set)
    _signalled: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._first_children = set(self.served.gateway_children())
        self._children_seen = set(self._first_children)

    def observe(self) -> list[int]:
        """The gateway processes now, remembered (the new ones are the restarts)."""
        children = self.served.gateway_children()
        self._children_seen |= set(children)
        return children

    async def run(self, deadline: float) -> None:
        loops = []
        if self.kill_worker_every:
            loops.append(self._every(self.kill_worker_every, deadline, self._kill_worker))
        if self.restart_gateway_every:
            loops.append(self._every(self.restart_gateway_every, deadline, self._restart_gateway))
        await asyncio.gather(*loops)

    @staticmethod
    async def _every(seconds: float, deadline: float, act: Callable[[], Awaitable[None]]) -> None:
        while time.monotonic() + seconds < deadline:
            await asyncio.sleep(seconds)
            await act()

    async def _kill_worker(self) -> None:
        workers = self.served.workers
        if workers is not None:  # the soak's own: one at a time, in turn, started again at once
            listen = self.served.listens[self.workers_killed % len(self.served.listens)]
            await asyncio.to_thread(workers.kill, listen)
            workers.start(listen)
            self.workers_killed += 1
            return
        pids = self.served.pids()["worker"]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.workers_killed += len(pids)
        self.kills_missed += not pids

    async def _restart_gateway(self) -> None:
        children = self.observe()
        if self._signalled & set(children):
            self.signals_held += 1
            return
        if children:
            victim = min(children)
            os.kill(victim, signal.SIGTERM)
            self._signalled.add(victim)
            self.gateways_signalled += 1

    def whole(self) -> bool:
        """As many gateway processes as at the start (a drained one's replacement may come after the run ends)."""
        return not self.restart_gateway_every or len(self.observe()) >= len(self._first_children)

    def figures(self) -> dict[str, int]:
        self.observe()
        figures = {}
        if self.kill_worker_every:
            figures |= {"workers_killed": self.workers_killed, "kills_missed": self.kills_missed}
        if self.restart_gateway_every:
            figures |= {"gateways_signalled": self.gateways_signalled, "signals_held": self.signals_held,
                        "gateways_restarted": len(self._children_seen - self._first_children),
                        "gateway_processes_now": len(self.served.gateway_children())}
        return figures
