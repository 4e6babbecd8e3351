"""Counts the open sessions and streams of every transport, within one limit; refuses new ones while draining."""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.guard.tenants import TenantRefused, Tenants
from gateway.host.drain import RESTART_CLOSE_CODE, Drain
from gateway.metrics import Metrics


class SessionLimitReached(Exception):
    code = "session_limit"
    close_code = 1013  # WebSocket "try again later"
    status = 503  # HTTP
    retry_after: float | None = 2.0


class TenantSessionLimit(SessionLimitReached):
    """The key's own limit (``max_sessions`` of the keys file, gateway/guard/tenants.py), or a key revoked."""

    def __init__(self, refused: TenantRefused) -> None:
        super().__init__(str(refused))
        self.code, self.close_code, self.status = refused.code, refused.close_code, refused.status
        self.retry_after = refused.retry_after


class ServerDraining(SessionLimitReached):
    """The process is draining (gateway/host/drain.py): a new session should reconnect, to another process."""

    code = "draining"
    close_code = RESTART_CLOSE_CODE


class SessionRegistry:
    """Counts sessions and streams across transports, within one limit, and each tenant's within its own."""

    def __init__(self, limit: int, metrics: Metrics, drain: Drain | None = None,
                 tenants: Tenants | None = None) -> None:
        self.limit = limit
        self._tenants = tenants
        self._metrics = metrics
        self._drain = drain
        self._active: dict[int, tuple[Any, str, str | None]] = {}
        self._empty = asyncio.Event()
        self._empty.set()

    def __len__(self) -> int:
        return len(self._active)

    def owners(self) -> list[Any]:
        return [owner for owner, _, _ in self._active.values()]

    def add(self, owner: Any, transport: str, tenant: str | None = None) -> None:
        """Raises ``ServerDraining``, ``SessionLimitReached`` or ``TenantSessionLimit``."""
        if self._drain is not None and (refusal := self._drain.refusal()) is not None:
            raise ServerDraining(refusal)
        if len(self._active) >= self.limit:
            raise SessionLimitReached(f"the server is at its limit of {self.limit} sessions; retry shortly")
        if self._tenants is not None and tenant is not None:
            try:
                self._tenants.open_session(tenant)
            except TenantRefused as exc:
                raise TenantSessionLimit(exc) from None
        self._active[id(owner)] = (owner, transport, tenant)
        self._empty.clear()
        self._metrics.sessions.labels(transport).inc()

    def remove(self, owner: Any) -> None:
        entry = self._active.pop(id(owner), None)
        if entry is not None:
            self._metrics.sessions.labels(entry[1]).dec()
            if self._tenants is not None:
                self._tenants.close_session(entry[2])
        if not self._active:
            self._empty.set()

    async def until_empty(self) -> None:
        """Returns once no session or stream is open."""
        await self._empty.wait()
