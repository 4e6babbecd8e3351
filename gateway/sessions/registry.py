"""Counts the open sessions and streams of every transport, within one limit; refuses new ones while draining."""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.guard.tenants import TenantRefused, Tenants
from gateway.guard.tokens import Grant, TokenRefused, current_grant
from gateway.host.drain import RESTART_CLOSE_CODE, Drain
from gateway.metrics import Metrics


class SessionLimitReached(Exception):
    code = "session_limit"
    close_code = 1013  # WebSocket "try again later"
    status = 503  # HTTP
    retry_after: float | None = 2.0


class TenantSessionLimit(SessionLimitReached):
    """The key's own limit (``max_sessions`` of the keys file, gateway/guard/tenants.py), or a key revoked."""

    def __init__(self, refused: TenantRefused | TokenRefused) -> None:
        super().__init__(str(refused))
        self.code, self.close_code, self.status = refused.code, refused.close_code, refused.status
        self.retry_after = refused.retry_after


class ServerDraining(SessionLimitReached):
    """The process is draining (gateway/host/drain.py): a new session should reconnect, to another process."""

    code = "draining"
    close_code = RESTART_CLOSE_CODE


class SessionRegistry:
    """Counts sessions and streams across transports, within one limit, each tenant's within its own, and each
    token's (opened by a connection admitted with one: ``tokens.current_grant``) within its ``sessions``."""

    def __init__(self, limit: int, metrics: Metrics, drain: Drain | None = None,
                 tenants: Tenants | None = None, tokens: Any = None) -> None:
        """``tokens``: the token ledger (gateway/guard/token_ledger.py), where every process counts a token's
        sessions."""
        self.limit = limit
        self._tenants = tenants
        self._tokens = tokens
        self._metrics = metrics
        self._drain = drain
        self._active: dict[int, tuple[Any, str, str | None]] = {}
        self._grants: dict[int, Grant] = {}
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
        grant = current_grant() if self._tokens is not None else None
        if grant is not None and grant.sessions is not None:
            if not self._tokens.open_session(grant):
                raise TenantSessionLimit(TokenRefused("token_session_limit", f"this token is at its limit of "
                                                      f"{grant.sessions} sessions; retry when one ends"))
            self._grants[id(owner)] = grant
        if self._tenants is not None and tenant is not None:
            try:
                self._tenants.open_session(tenant)
            except TenantRefused as exc:
                if (held := self._grants.pop(id(owner), None)) is not None:
                    self._tokens.close_session(held)
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
            if (grant := self._grants.pop(id(owner), None)) is not None:
                self._tokens.close_session(grant)
        if not self._active:
            self._empty.set()

    async def until_empty(self) -> None:
        """Returns once no session or stream is open."""
        await self._empty.wait()
