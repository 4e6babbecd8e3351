"""Assembles the Starlette application: routes, auth, CORS, the page, and the engine's lifecycle."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import socket
from pathlib import Path
from typing import AsyncIterator, Callable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket

from engine import heap
from engine.traces import NO_TRACES, start_tracing
from gateway.guard.auth import ApiKeyMiddleware
from gateway.guard.origins import OriginGate
from gateway.guard.tenancy import REVOKED_REASON, Tenancy
from gateway.elevenlabs import endpoint as elevenlabs
from gateway.vendors.cartesia import endpoint as cartesia
from gateway.engine_link.failover import FailoverPolicy
from gateway.engine_link.pool import EnginePool
from gateway.engine_link.workers import EmbeddedWorkers
from gateway.host.drain import Drain
from gateway.host.draining import Draining
from gateway.host.start_lines import listening_line, ready_line
from gateway.http import admin, health, lexicons, speech, tokens, voices
from gateway.http.errors import ApiError, api_error_response
from gateway.http.stream import Revocation
from gateway.listen import silero
from gateway.metrics import Metrics
from gateway.prompt_cache.cache import PromptCache
from gateway.traces import ConnectionScope
from gateway.vendors import vapi
from gateway.vendors.deepgram import endpoint as deepgram
from gateway.guard.operator_safety import exposure_warning, wyoming_exposure_warning
from gateway.sessions.session import Session
from gateway.sessions.registry import SessionRegistry
from gateway.settings import GatewaySettings
from gateway.shared_state import GatewayState
from gateway.host.siblings import SiblingHealth
from gateway.guard.silent_sockets import WaitingRoom
from gateway.telephony import endpoint as telephony
from gateway.telephony.audiosocket_server import AudioSocketServer, Policy
from gateway.webrtc import control, udp_ports, whep
from gateway.webrtc.signalling import close_all_peers, webrtc_offer
from gateway.websocket import stream_endpoint
from gateway.wyoming import announce
from gateway.wyoming import server as wyoming

log = logging.getLogger("chatterbox_fast.gateway")
WEB_DIR = Path(__file__).resolve().parent.parent / "web"
GATEWAY_SERVICE = "chatterbox-fast-gateway"  # its traces' service.name (the worker's: engine/worker.py)


async def stream(ws: WebSocket) -> None:
    """``/v1/stream``: a session of its own, or, with ``?session={id}``, the controller of a live WebRTC session."""
    if "session" in ws.query_params:
        await control.control_socket(ws)
    else:
        await stream_endpoint(ws)


async def _report_to_siblings(state: GatewayState) -> None:
    """Every second: this process's /health snapshot for its siblings, and its engine link for the summed metrics."""
    assert state.siblings is not None
    while True:
        engines = state.engine.engines
        state.metrics.engines(state.engine.available, engines, health.worker_health(state, engines))
        state.siblings.write(health.snapshot(health.health_body(state), state.drain.listening))
        await asyncio.sleep(1.0)


async def _say_when_ready(settings: GatewaySettings, engine: EnginePool, tenancy: Tenancy) -> None:
    """The start's one INFO line of where to open the page, what speaks and whether keys are on: once a worker is."""
    await engine.wait_ready(math.inf)
    assert engine.ready is not None
    keys = ("on (keys file)" if tenancy.named else "on") if tenancy.tenants.guarded else "off"
    log.info(ready_line(settings.host, settings.port, engine.ready.engine, engine.ready.device, keys, settings.tls))


def embedded(settings: GatewaySettings) -> str:
    """The start line's name for the embedded workers."""
    devices = settings.engine_devices
    return f"{len(devices)} embedded workers ({', '.join(devices)})" if len(devices) > 1 else "embedded worker"


def create_app(settings: GatewaySettings, on_engine_refusal: Callable[[str], None] | None = None,
               wyoming_socket: socket.socket | None = None,
               audiosocket_socket: socket.socket | None = None) -> Starlette:
    """``on_engine_refusal``: told why, when an embedded worker cannot start at all (see EngineProcess);
    ``wyoming_socket``: bound for the Wyoming TTS server (--wyoming-port), served while the app runs;
    ``audiosocket_socket``: bound for Asterisk's AudioSocket calls (--audiosocket-port), likewise."""
    metrics = Metrics(settings.shared_dir)
    workers = (None if settings.engine_urls else
               EmbeddedWorkers(list(settings.engine_args), settings.engine_devices, on_engine_refusal))
    failover = {"failover": FailoverPolicy(settings.failover_wait_s, settings.max_failovers),
                "lead": settings.client_lead_s,
                "on_failover": lambda moved: metrics.failovers.labels("moved" if moved else "given_up").inc()}
    engine = (EnginePool(list(settings.engine_urls), settings.engine_secret,
                         resolve_interval=settings.engine_resolve_interval_s, **failover) if workers is None
              else EnginePool(workers.urls, workers.secret, **failover))
    siblings = SiblingHealth(settings.shared_dir) if settings.shared_dir else None
    drain = Drain(settings.drain_grace_s)
    traces = (start_tracing(settings.otlp_endpoint, GATEWAY_SERVICE, settings.trace_text) if settings.otlp_endpoint
              else NO_TRACES)
    tenancy = Tenancy(settings.keys_file, settings.api_keys, metrics, token_secret=settings.token_secret,
                      shared_dir=settings.shared_dir)  # raises KeysFileError: refused at start
    prompts = PromptCache(settings.cache, engine, lambda: tenancy.tenants.guarded, metrics, settings.shared_dir)
    state = GatewayState(settings, engine, metrics,
                         SessionRegistry(settings.max_sessions, metrics, drain, tenancy.tenants, tenancy.ledger),
                         prompts, workers,
                         siblings, unauthenticated=WaitingRoom(settings.max_unauthenticated), drain=Draining(drain),
                         tenancy=tenancy, traces=traces)

    async def close_revoked(removed: set[str]) -> None:
        """A removed key's WebRTC peers told and hung up, its HTTP speech streams ended (gateway/http/stream.py)."""
        for stream in [s for s in state.sessions.owners() if isinstance(s, Revocation) and s.tenant in removed]:
            tenancy.count_revoked(stream.tenant)
            stream.revoke()
        for peer in [p for p in state.peers if p.session.tenant in removed]:
            tenancy.count_revoked(peer.session.tenant)
            await peer.session.notify_shutdown(REVOKED_REASON)
            await peer.close(REVOKED_REASON)

    tenancy.on_revoked.append(close_revoked)

    async def close_calls(reason: str) -> None:
        """The WebRTC peers and phone calls (they cannot move to another process): told why, then closed."""
        for peer in list(state.peers):
            await peer.session.notify_shutdown(reason)
        await close_all_peers(state, reason)
        for call in list(state.calls):
            await call.close(reason)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if settings.rtc_ports is not None:
            udp_ports.install(asyncio.get_running_loop(), udp_ports.PortRange(*settings.rtc_ports))
        if workers is not None:
            workers.start()
        engine.start_background()
        await asyncio.to_thread(silero.load)  # the caller VAD's model, once: no call waits for it
        log.info(listening_line(settings.host, settings.port, ", ".join(settings.engine_urls) or embedded(settings),
                                settings.tls))
        announcing = asyncio.create_task(_say_when_ready(settings, engine, tenancy))
        if warning := exposure_warning(settings.host, tenancy.tenants.guarded):
            log.warning(warning)
        reporting = asyncio.create_task(_report_to_siblings(state)) if siblings is not None else None
        warming = asyncio.create_task(prompts.warm(settings.cache.prompts))  # --prompts, once an engine is ready
        watching = asyncio.create_task(tenancy.watch()) if tenancy.named else None
        trimming = asyncio.create_task(heap.trim_forever())
        state.drain.reload_keys = tenancy.reload if tenancy.named else None  # SIGHUP (gateway/host/draining.py)
        wyoming_server = await wyoming.start(state, wyoming_socket) if wyoming_socket is not None else None
        if wyoming_server is not None and (warning := wyoming_exposure_warning(wyoming_socket.getsockname()[0])):
            log.warning(warning)
        announcer = (announce.announcer_for(settings.wyoming_zeroconf, wyoming_socket)
                     if wyoming_socket is not None and settings.wyoming_zeroconf else None)
        if announcer is not None:
            announcer.start()
        if wyoming_server is not None:
            state.drain.listeners.append(wyoming_server)
        audiosocket = (AudioSocketServer(state, Policy.of(settings.audiosocket_key, settings.audiosocket_allow))
                       if audiosocket_socket is not None else None)
        if audiosocket is not None:
            state.drain.listeners.append(await audiosocket.start(audiosocket_socket))
        state.drain.attach(state.sessions, close_calls)
        yield
        state.drain.detach()
        for task in (announcing, warming, reporting, watching, trimming):
            if task is not None:
                task.cancel()
        if announcer is not None:
            await announcer.stop()  # goodbye before the port closes
        if wyoming_server is not None:
            wyoming_server.close()
        log.info("shutting down: closing %d sessions", len(state.sessions))
        for owner in state.sessions.owners():
            if isinstance(owner, Session):
                await owner.notify_shutdown()
        await close_calls("the server is shutting down")
        if audiosocket is not None:
            await audiosocket.close()
        await engine.close()
        if workers is not None:
            await workers.stop()
        await asyncio.to_thread(traces.shutdown)  # the spans still queued

    routes = [
        Route("/health", health.health),
        Route("/metrics", health.metrics),
        Route("/v1/tts", speech.tts, methods=["POST"]),
        Route("/v1/audio/speech", speech.openai_speech, methods=["POST"]),
        Route("/v1/voices", voices.list_voices, methods=["GET"]),
        Route("/v1/voices", voices.add_voice, methods=["POST"]),
        Route("/v1/voices/{name}", voices.delete_voice, methods=["DELETE"]),
        Route("/v1/lexicons", lexicons.list_lexicons, methods=["GET"]),
        Route("/v1/lexicons/{name}", lexicons.put_lexicon, methods=["PUT"]),
        Route("/v1/lexicons/{name}", lexicons.delete_lexicon, methods=["DELETE"]),
        Route("/v1/webrtc/offer", webrtc_offer, methods=["POST"]),
        Route("/v1/whep", whep.offer, methods=["POST"]),
        Route("/v1/whep", whep.endpoint_options, methods=["OPTIONS"]),
        Route("/v1/whep/sessions/{session}", whep.end_session, methods=["DELETE"]),
        Route("/v1/whep/sessions/{session}", whep.session_patch, methods=["PATCH"]),
        Route("/v1/whep/sessions/{session}", whep.session_options, methods=["OPTIONS"]),
        Route("/v1/whep/{voice}", whep.offer, methods=["POST"]),
        Route("/v1/whep/{voice}", whep.endpoint_options, methods=["OPTIONS"]),
        Route("/v1/sessions/{session}/speak", control.speak, methods=["POST"]),
        Route("/v1/sessions/{session}/cancel", control.cancel, methods=["POST"]),
        Route("/v1/admin/drain", admin.drain, methods=["POST"]),
        Route("/v1/admin/unload", admin.unload, methods=["POST"]),
        Route("/v1/admin/load", admin.load, methods=["POST"]),
        Route("/v1/usage", admin.usage, methods=["GET"]),
        Route("/v1/tokens", tokens.mint, methods=["POST"]),
        WebSocketRoute("/v1/stream", stream),
        WebSocketRoute("/v1/twilio", telephony.twilio_stream),
        WebSocketRoute("/v1/telnyx", telephony.telnyx_stream),
        WebSocketRoute("/v1/asterisk", telephony.asterisk_stream),
        WebSocketRoute("/v1/plivo", telephony.plivo_stream),
        WebSocketRoute("/v1/vonage", telephony.vonage_stream),
        WebSocketRoute("/v1/exotel", telephony.exotel_stream),
        WebSocketRoute("/v1/freeswitch", telephony.freeswitch_stream),
        WebSocketRoute("/v1/jambonz/tts", telephony.jambonz_tts),
        WebSocketRoute("/v1/text-to-speech/{voice_id}/stream-input", elevenlabs.stream_input),
        WebSocketRoute("/v1/text-to-speech/{voice_id}/multi-stream-input", elevenlabs.multi_stream_input),
        WebSocketRoute("/cartesia/tts/websocket", cartesia.websocket),
        Route("/cartesia/tts/bytes", cartesia.tts_bytes, methods=["POST"]),
        Route("/cartesia/tts/sse", cartesia.tts_sse, methods=["POST"]),
        Route("/cartesia/voices", cartesia.voices, methods=["GET"]),
        Route("/v1/vapi", vapi.webhook, methods=["POST"]),
        Route("/deepgram/v1/speak", deepgram.speak_rest, methods=["POST"]),
        WebSocketRoute("/deepgram/v1/speak", deepgram.speak_socket),
        Mount("/", StaticFiles(directory=WEB_DIR, html=True), name="web"),
    ]
    middleware = [
        # --cors-origins: those origins exactly, their WebSockets only (gateway/guard/origins.py); none: every one
        Middleware(CORSMiddleware, allow_origins=list(settings.cors_origins) or ["*"],
                   allow_methods=["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"],
                   allow_headers=["authorization", "content-type", "x-api-key", "cartesia-version"],
                   expose_headers=["location"]),
        *([Middleware(OriginGate, origins=settings.cors_origins)] if settings.cors_origins else []),
        Middleware(ApiKeyMiddleware, tenancy=tenancy),
        *([Middleware(ConnectionScope)] if traces.on else []),
    ]
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan,
                    exception_handlers={ApiError: api_error_response})
    app.state.gateway = state
    return app
