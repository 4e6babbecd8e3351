"""Counts the open sessions and streams of every transport, within one limit."""

from __future__ import annotations

from typing import Any

from gateway.metrics import Metrics


class SessionLimitReached(Exception):
    code = "session_limit"


class SessionRegistry:
    """Counts sessions and streams across transports, within one limit."""

    def __init__(self, limit: int, metrics: Metrics) -> None:
        self.limit = limit
        self._metrics = metrics
        self._active: dict[int, tuple[Any, str]] = {}

    def __len__(self) -> int:
        return len(self._active)

    def owners(self) -> list[Any]:
        return [owner for owner, _ in self._active.values()]

    def add(self, owner: Any, transport: str) -> None:
        if len(self._active) >= self.limit:
            raise SessionLimitReached(f"the server is at its limit of {self.limit} sessions; retry shortly")
        self._active[id(owner)] = (owner, transport)
        self._metrics.sessions.labels(transport).inc()

    def remove(self, owner: Any) -> None:
        entry = self._active.pop(id(owner), None)
        if entry is not None:
            self._metrics.sessions.labels(entry[1]).dec()
