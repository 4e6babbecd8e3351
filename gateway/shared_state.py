"""What every endpoint of one gateway shares: settings, the engine pool, the session registry, metrics, live peers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.engine_link.pool import EnginePool
from gateway.engine_link.process import EngineProcess
from gateway.metrics import Metrics
from gateway.session_registry import SessionRegistry
from gateway.settings import GatewaySettings


@dataclass
class GatewayState:
    settings: GatewaySettings
    engine: EnginePool
    metrics: Metrics
    sessions: SessionRegistry
    process: EngineProcess | None = None
    peers: set[Any] = field(default_factory=set)  # live WebRTC peers (gateway.webrtc.signalling.WebRTCPeer)
