"""Counts the open sessions and streams of every transport, within one limit; refuses new ones while draining."""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.host.drain import RESTART_CLOSE_CODE, Drain
from gateway.metrics import Metrics


class SessionLimitReached(Exception):
    code = "session_limit"
    close_code = 1013  # WebSocket "try again later"


class ServerDraining(SessionLimitReached):
    """The process is draining (gateway/host/drain.py): a new session should reconnect, to another process."""

    code = "draining"
    close_code = RESTART_CLOSE_CODE


class SessionRegistry:
    """Counts sessions and streams across transports, within one limit."""

    def __init__(self, limit: int, metrics: Metrics, drain: Drain | None = None) -> None:
        self.limit = limit
        self._metrics = metrics
        self._drain = drain
        self._active: dict[int, tuple[Any, str]] = {}
        self._empty = asyncio.Event()
        self._empty.set()

    def __len__(self) -> int:
        return len(self._active)

    def owners(self) -> list[Any]:
        return [owner for owner, _ in self._active.values()]

    def add(self, owner: Any, transport: str) -> None:
        if self._drain is not None and (refusal := self._drain.refusal()) is not None:
            raise ServerDraining(refusal)
        if len(self._active) >= self.limit:
            raise SessionLimitReached(f"the server is at its limit of {self.limit} sessions; retry shortly")
        self._active[id(owner)] = (owner, transport)
        self._empty.clear()
        self._metrics.sessions.labels(transport).inc()

    def remove(self, owner: Any) -> None:
        entry = self._active.pop(id(owner), None)
        if entry is not None:
            self._metrics.sessions.labels(entry[1]).dec()
        if not self._active:
            self._empty.set()

    async def until_empty(self) -> None:
        """Returns once no session or stream is open."""
        await self._empty.wait()
