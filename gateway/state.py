"""What the whole gateway shares: settings, the engine pool, the session registry, metrics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.engine_pool import EnginePool
from gateway.engine_process import EngineProcess
from gateway.metrics import Metrics


@dataclass
class GatewaySettings:
    host: str = "0.0.0.0"
    port: int = 8197
    api_keys: tuple[str, ...] = ()
    max_sessions: int = 32
    max_text_chars: int = 5000
    max_upload_bytes: int = 10 * 1024 * 1024
    ice_servers: tuple[str, ...] = ()
    engine_urls: tuple[str, ...] = ()  # running engine workers; none starts the embedded worker
    engine_args: tuple[str, ...] = ()  # flags for the embedded worker


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


@dataclass
class GatewayState:
    settings: GatewaySettings
    engine: EnginePool
    metrics: Metrics
    sessions: SessionRegistry
    process: EngineProcess | None = None
    peers: set[Any] = field(default_factory=set)  # live WebRTC peers (gateway.webrtc.WebRTCPeer), closed on shutdown
