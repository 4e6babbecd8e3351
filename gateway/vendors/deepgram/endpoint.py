"""Deepgram Aura's speak API at base ``/deepgram``: the socket ``WS /deepgram/v1/speak`` and
``POST /deepgram/v1/speak``.

Thin adapters: ``translate`` decides. The socket is one session (gateway/sessions/session.py) whose sink is the
/v1/stream socket's (binary audio frames, gateway/websocket.py); the REST route is the HTTP speech stream
(gateway/http/speech.py). docs/protocols/deepgram.md says what is honoured.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.websockets import WebSocket

from engine.protocol import ChunkHeader, ProtocolError
from gateway.engine_link.client import EngineRequestError, EngineUnavailable
from gateway.guard.auth import authorized, presented_key, refusal_of, tenant_of
from gateway.http.body import body_field, json_body
from gateway.http.errors import ApiError
from gateway.http.speech import checked_text, speech_stream
from gateway.http.stream import AudioBytes
from gateway.sessions.registry import ServerDraining, SessionLimitReached
from gateway.sessions.session import Session
from gateway.shared_state import GatewayState
from gateway.utterance_stream import UtteranceStats
from gateway.vendors.deepgram import translate
from gateway.websocket import WebSocketSink, client_frames, serve_session

log = logging.getLogger("chatterbox_fast.gateway")
TRANSPORT = "deepgram"  # the metrics' and the session registry's label for both routes


async def _voices(state: GatewayState) -> set[str]:
    """The gateway's voice names (none while no engine answers: every model then speaks with the default voice)."""
    try:
        return {voice["name"] for voice in await state.engine.list_voices()}
    except (EngineUnavailable, EngineRequestError):
        return set()


def _refusal(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse(translate.error_body(code, message), status_code=status)


async def speak_socket(ws: WebSocket) -> None:
    """``WS /deepgram/v1/speak``: a refused key, query or server is an HTTP refusal before the socket opens (their
    SDK raises its status); then ``Metadata``, and the client's messages into one session."""
    state: GatewayState = ws.app.state.gateway
    if not authorized(ws, state.tenancy):  # said as the HTTP routes say it: 401, or 403 for a route not its tenant's
        refusal = ws.scope.get("state", {}).get("refusal") or refusal_of(ws)
        await ws.send_denial_response(_refusal(refusal.status, refusal.code.upper(), refusal.message))
        return
    if (draining := state.drain.rules.refusal()) is not None:
        await ws.send_denial_response(_refusal(503, ServerDraining.code.upper(), draining))
        return
    try:
        opts = translate.options(ws.query_params, await _voices(state), rest=False)
    except ProtocolError as exc:
        await ws.send_denial_response(_refusal(400, exc.code, str(exc)))
        return
    await ws.accept()
    await ws.send_json(translate.metadata(opts.model))
    rules = translate.SpeakSocket()
    sent_all = asyncio.Event()  # nothing queued is left unsent (what a Close waits for)

    async def send_event(event: dict[str, Any]) -> None:
        if event["type"] in ("error", "closing"):
            await ws.send_json(translate.warning(event.get("code", "CLOSING"), event.get("message")
                                                 or event.get("reason", "")))
        if event["type"] in ("done", "error"):
            for reply in rules.settled(session.core.queued):
                await ws.send_json(reply)
        if not session.core.queued:
            sent_all.set()

    sink = WebSocketSink(ws, state.settings.stall_timeout_s)
    sink.configure(opts.format, opts.sample_rate)
    session = Session(state, sink, send_event, transport=TRANSPORT, voice=opts.voice, api_key=presented_key(ws),
                      tenant=tenant_of(ws))
    try:
        await session.open()
    except SessionLimitReached as exc:
        await ws.send_json(translate.warning(exc.code.upper(), str(exc)))
        await ws.close(exc.close_code)
        return

    async def receive_all() -> None:
        async for raw in client_frames(ws):
            try:
                commands = rules.receive(raw)
            except ProtocolError as exc:
                await ws.send_json(translate.warning(exc.code.upper(), str(exc)))
                continue
            for command in commands:
                match command:
                    case translate.Say(message=message):
                        sent_all.clear()
                        await session.handle(message)
                    case translate.Mark(sequence_id=seq):
                        for reply in rules.mark(seq, session.core.queued):
                            await ws.send_json(reply)
                    case translate.Reply(message=message):
                        await ws.send_json(message)
                    case translate.Close():
                        if session.core.queued:
                            await sent_all.wait()
                        await ws.close(1000)
                        return

    await serve_session(ws, session, sink, receive_all())


class G711Wav(AudioBytes):
    """The audio behind a G.711 WAV header (``translate.g711_wav_header``), sent with the first of it."""

    media_type = "audio/wav"

    def __init__(self, header: bytes) -> None:
        self._header = header

    def chunk(self, audio: bytes, header: ChunkHeader) -> bytes:
        return self._first(audio)

    def tail(self, audio: bytes) -> bytes:
        return self._first(audio)

    def done(self, stats: UtteranceStats) -> bytes:
        return self._first(b"")

    def _first(self, audio: bytes) -> bytes:
        out, self._header = self._header + audio, b""
        return out


async def speak_rest(request: Request) -> Response:
    """``POST /deepgram/v1/speak``: ``{"text"}`` streamed back in the query's encoding; a refusal in their error
    body."""
    state: GatewayState = request.app.state.gateway
    try:
        body = await json_body(request)
        text = checked_text(state, body_field(body, "text", str, required=True))
        opts = translate.options(request.query_params, await _voices(state), rest=True)
        framing = G711Wav(opts.wav_header) if opts.wav_header else AudioBytes()
        return await speech_stream(state, request, {}, text, opts.voice, opts.format, opts.sample_rate, framing,
                                   transport=TRANSPORT)
    except ProtocolError as exc:
        state.metrics.errors.labels(exc.code.lower()).inc()
        return _refusal(400, exc.code, str(exc))
    except ApiError as exc:
        state.metrics.errors.labels(exc.code).inc()
        headers = {"Retry-After": str(max(1, round(exc.retry_after or 2)))} if exc.status in (429, 503) else None
        response = _refusal(exc.status, exc.code.upper(), str(exc))
        response.headers.update(headers or {})
        return response
