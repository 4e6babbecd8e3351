"""The gateway's side of the traces (engine/traces.py): each utterance's root span, with who asked for it.

The span starts where a transport starts the utterance (before a worker is chosen: the pool carries its traceparent
to the worker) and ends with it (gateway/engine_link/failover.py). Its attributes: the transport, the session, the
voice, the tenant, and, once a worker took it, the engine and the worker. The tenant is the authenticated key's, read
from the ASGI scope's state (``scope["state"]["tenant"]``) of the connection the utterance was asked for on:
``ConnectionScope`` (installed only with --otlp-endpoint) keeps that scope in a context variable, which the tasks of
the connection inherit.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from engine.traces import NO_SPAN, Span, Tracer

UTTERANCE = "utterance"
_connection: ContextVar[Scope | None] = ContextVar("cbf_connection_scope", default=None)


class ConnectionScope:
    """ASGI middleware: the scope of the request or WebSocket being served, for ``tenant``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = _connection.set(scope)
        try:
            await self.app(scope, receive, send)
        finally:
            _connection.reset(token)


def tenant() -> str | None:
    """The tenant of the connection being served (its key's), None where there is none."""
    scope = _connection.get()
    state: Any = (scope or {}).get("state") or {}
    found = state.get("tenant") if isinstance(state, dict) else None
    return found if isinstance(found, str) else None


def utterance_span(tracer: Tracer, transport: str, voice: str, session: str | None = None) -> Span:
    """The root span of an utterance about to start."""
    if not tracer.on:  # not even the tenant is looked up
        return NO_SPAN
    return tracer.span(UTTERANCE, transport=transport, voice=voice, tenant=tenant(), **{"session.id": session})
