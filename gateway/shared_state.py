"""What every endpoint of one gateway shares: settings, the engine pool, the session registry, the prompt cache, the
keys and their tenants, metrics, live peers and calls, the connections not yet authenticated, the drain."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.traces import NO_TRACES, Tracer
from gateway.sessions.driven import CallDirectory
from gateway.engine_link.pool import EnginePool
from gateway.engine_link.workers import EmbeddedWorkers
from gateway.host.drain import Drain
from gateway.host.draining import Draining
from gateway.metrics import Metrics
from gateway.prompt_cache.cache import PromptCache
from gateway.sessions.registry import SessionRegistry
from gateway.settings import GatewaySettings
from gateway.host.siblings import SiblingHealth
from gateway.guard.silent_sockets import WaitingRoom
from gateway.guard.tenancy import Tenancy


@dataclass
class GatewayState:
    settings: GatewaySettings
    engine: EnginePool
    metrics: Metrics
    sessions: SessionRegistry
    prompts: PromptCache
    workers: EmbeddedWorkers | None = None  # the embedded workers (none: --engine-url's, or --processes' supervisor's)
    siblings: SiblingHealth | None = None  # the other gateway processes of `serve --processes N`
    peers: set[Any] = field(default_factory=set)  # live WebRTC peers (gateway.webrtc.signalling.WebRTCPeer)
    unauthenticated: WaitingRoom = field(default_factory=lambda: WaitingRoom(GatewaySettings.max_unauthenticated))
    calls: CallDirectory = field(default_factory=CallDirectory)  # live phone calls (gateway/telephony/)
    wyoming_clients: set[Any] = field(default_factory=set)  # open Wyoming connections (their stream writers)
    audiosocket_clients: set[Any] = field(default_factory=set)  # open AudioSocket connections (their writers)
    # the keys in force and their tenants (gateway/guard/tenancy.py); by default none
    tenancy: Tenancy = field(default_factory=lambda: Tenancy(None, (), Metrics()))
    drain: Draining = field(default_factory=lambda: Draining(Drain(GatewaySettings.drain_grace_s)))
    traces: Tracer = NO_TRACES  # --otlp-endpoint: each utterance's trace (gateway/traces.py)
