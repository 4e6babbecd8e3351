"""Cartesia-compatible TTS at ``/cartesia``: ``WS /cartesia/tts/websocket`` (contexts by ``context_id``),
``POST /cartesia/tts/bytes``, ``POST /cartesia/tts/sse`` and ``GET /cartesia/voices``.

A thin adapter: ``translate`` decides; on the socket each context is one of our sessions (gateway/vendors/contexts.py)
whose sink sends their ``chunk`` / ``timestamps`` / ``flush_done`` replies; bytes and SSE are one utterance each
(gateway/http/speech.py). Keys as on /v1 (gateway/guard/auth.py): ``Authorization: Bearer`` (their SDK),
``X-API-Key`` (pipecat) or ``?api_key=`` (browsers); a socket without a valid one is refused at its handshake.
docs/protocols/cartesia.md says what is honoured and what is not.
"""

from __future__ import annotations

import contextlib
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.websockets import WebSocket

from engine.protocol import SAMPLE_RATE, ProtocolError, Reading
from gateway import messages
from gateway.audio import Encoder, make_encoder
from gateway.guard.auth import Refusal, authorized, refusal_of
from gateway.guard.silent_sockets import IdleClock
from gateway.host.drain import CLOSING, RESTART_CLOSE_CODE
from gateway.http.body import json_body
from gateway.http.errors import ApiError
from gateway.http.speech import stream_speech
from gateway.http.stream import AudioBytes, Framing
from gateway.http.voices import usable_voices
from gateway.sessions.registry import ServerDraining, SessionLimitReached
from gateway.shared_state import GatewayState
from gateway.vendors.cartesia import translate
from gateway.vendors.contexts import POLICY_VIOLATION, Context, ContextSink, ContextSocket, Ended, serve
from gateway.websocket import client_frames, close_reason

TRANSPORT = "cartesia"  # the sessions' and streams' label in /metrics
IDLE_S = 300.0  # theirs: a socket that sends and receives nothing for 5 minutes is closed


def encoder_for(fmt: translate.AudioFormat) -> Encoder:
    return make_encoder(fmt.format, fmt.sample_rate, in_wav=fmt.container == "wav")


class CartesiaSink(ContextSink):
    """One context's audio: each chunk as ``chunk`` replies of at most ``translate.MAX_PIECE_S``, then its words'
    ``timestamps`` (when asked for) and the ``flush_done`` of each flush whose text it finished. A stopped context
    (cancelled) sends nothing more, not even the rest of a chunk under way."""

    def __init__(self, socket: "_Socket", context: str, fmt: translate.AudioFormat, timestamps: bool) -> None:
        super().__init__(socket)
        self.context, self.format, self.timestamps = context, fmt, timestamps
        self.flushes = translate.FlushMarks()
        self.stopped = False
        self._encoder: Encoder | None = None
        self._chunk: dict[str, Any] | None = None  # the chunk event of the audio that follows

    def expect(self, chunk_event: dict[str, Any]) -> None:
        self._chunk = chunk_event

    async def begin(self) -> None:
        self._encoder = encoder_for(self.format)
        self.restart()

    async def write(self, pcm: bytes) -> None:
        chunk, self._chunk = self._chunk, None
        if self._encoder is None or chunk is None:
            return
        pieces = translate.pieces(self._encoder.encode(pcm), self.format)
        share = len(pcm) / 2 / SAMPLE_RATE / max(1, len(pieces))  # seconds of audio in each
        for piece in pieces:
            if self.stopped:
                return
            await self.socket.send(translate.chunk_message(self.context, piece, chunk.get("gen_time", 0.0) * 1000))
            self.counted(share)
        if self.stopped:
            return
        if self.timestamps and chunk.get("words"):
            await self.socket.send(translate.timestamps_message(self.context, chunk["words"]))
        for flush_id in self.flushes.reached(chunk.get("span")):
            await self.socket.send(translate.flush_done_message(self.context, flush_id))

    async def end(self) -> None:
        """The encoder's last audio, and the flushes not yet done."""
        if self._encoder is None or self.stopped:
            return
        if rest := self._encoder.flush():
            await self.socket.send(translate.chunk_message(self.context, rest))
        self._encoder = None
        for flush_id in self.flushes.rest():
            await self.socket.send(translate.flush_done_message(self.context, flush_id))

    async def clear(self) -> None:
        self._encoder = None


class _Socket(ContextSocket):
    """One client socket: its contexts (``contexts.ContextSocket``) as ``translate.Contexts`` commands them."""

    def __init__(self, ws: WebSocket, state: GatewayState, idle: IdleClock) -> None:
        super().__init__(ws, state, idle, TRANSPORT)
        self.rules = translate.Contexts()

    async def run(self, command: translate.Command) -> None:
        entry = self.contexts.get(command.context)
        match command:
            case translate.Open(context=ctx, voice=voice, format=fmt, timestamps=timestamps):
                await self._open(ctx, voice, fmt, timestamps)
            case translate.Say(message=msg) if entry is not None:
                await entry.session.handle(msg)
            case translate.MarkFlush(flush_id=flush_id) if entry is not None:
                entry.sink.flushes.add(flush_id, len(entry.session.core.text.rstrip()))
            case translate.Finish() if entry is not None:
                await entry.session.handle(messages.End())
            case translate.Stop() if entry is not None:
                entry.sink.stopped = True
                await entry.session.handle(messages.Cancel())
                self._over(entry)
            case translate.Done(context=ctx):
                await self.send(translate.done_message(ctx))

    async def _open(self, ctx: str, voice: str, fmt: translate.AudioFormat, timestamps: bool) -> None:
        entry = Context(ctx, CartesiaSink(self, ctx, fmt, timestamps))
        try:
            await self.open(entry, voice, self._event)
        except SessionLimitReached as exc:  # this context is refused; the socket's others go on
            self.rules.ended(ctx)
            await self.send(translate.error_message(exc.code, str(exc), ctx, 429))

    async def _event(self, entry: Context, event: dict[str, Any]) -> None:
        if entry.finished.is_set():  # stopped: nothing more of it
            return
        kind = event["type"]
        if kind == "chunk":
            entry.sink.expect(event)
        elif kind == "done":
            if self._over(entry):
                await self.send(translate.done_message(entry.id))
        elif kind == "error":
            await self.send(translate.error_message(event["code"], event["message"], entry.id))
            if not entry.session.core.queued:  # nothing left to speak: the context is over (their SDK stops here)
                self._over(entry)

    def _over(self, entry: Context) -> bool:
        """``entry`` is over: its id free for a new context; False when it was over already."""
        if self.contexts.get(entry.id) is entry:
            self.rules.ended(entry.id)
        return self.end(entry)


async def _refuse_handshake(ws: WebSocket, refusal: Refusal) -> None:
    """A socket without a valid key (or a key refused this route, a token its scope): their HTTP answer to the upgrade
    (401, 403 or 429, with the reason), where the server can send one; else closed before it is accepted (a 403)."""
    if "websocket.http.response" in ws.scope.get("extensions", {}):
        await ws.send_denial_response(JSONResponse(translate.error_message(refusal.code, refusal.message,
                                                                           status=refusal.status),
                                                   status_code=refusal.status))
    else:
        await ws.close(POLICY_VIOLATION, close_reason(refusal.message))


async def websocket(ws: WebSocket) -> None:
    """``WS /cartesia/tts/websocket``."""
    state: GatewayState = ws.app.state.gateway
    if not authorized(ws, state.tenancy):
        await _refuse_handshake(ws, ws.scope.get("state", {}).get("refusal") or refusal_of(ws))
        return
    await ws.accept()
    if (refusal := state.drain.rules.refusal()) is not None:
        await ws.send_json(translate.error_message(ServerDraining.code, refusal, status=503))
        await ws.close(RESTART_CLOSE_CODE, close_reason(refusal))
        return
    socket = _Socket(ws, state, IdleClock(IDLE_S))
    if await serve(socket, _receive_all(ws, socket)) is Ended.DRAINING:
        with contextlib.suppress(Exception):
            await socket.send(translate.error_message(ServerDraining.code, CLOSING, status=503))
            await ws.close(RESTART_CLOSE_CODE, close_reason(CLOSING))


async def _receive_all(ws: WebSocket, socket: _Socket) -> None:
    """Their requests, each answered in order; a bad one is an ``error`` reply and the socket goes on."""
    async for raw in client_frames(ws):
        socket.idle.touch()
        try:
            commands = socket.rules.receive(translate.parse(raw))
        except translate.BadRequest as exc:
            await socket.send(translate.error_message(exc.code, str(exc), exc.context))
            continue
        for command in commands:
            await socket.run(command)


async def _generation(request: Request) -> translate.Generation:
    """The body of ``/tts/bytes`` or ``/tts/sse``: one whole transcript with its voice; 400 naming what is wrong."""
    state: GatewayState = request.app.state.gateway
    body = await json_body(request)
    try:
        generation = translate.parse_body(body)
    except ProtocolError as exc:
        raise ApiError(400, exc.code, str(exc)) from None
    if len(generation.transcript) > state.settings.max_text_chars:
        raise ApiError(413, "text_too_long", f"transcript over {state.settings.max_text_chars} characters")
    return generation


async def _speak(request: Request, generation: translate.Generation, framing: Framing) -> Response:
    state: GatewayState = request.app.state.gateway
    assert generation.voice is not None and generation.format is not None
    return await stream_speech(state, request, generation.transcript, generation.voice,
                               encoder_for(generation.format), Reading(speed=generation.speed), framing=framing,
                               transport=TRANSPORT)


async def tts_bytes(request: Request) -> Response:
    """``POST /cartesia/tts/bytes``: the audio as it is made, raw or in a (streamed) WAV as ``output_format`` says."""
    generation = await _generation(request)
    return await _speak(request, generation, AudioBytes())


async def tts_sse(request: Request) -> Response:
    """``POST /cartesia/tts/sse``: their server-sent events (``chunk``, ``timestamps``, ``done``)."""
    generation = await _generation(request)
    assert generation.format is not None
    framing = translate.SpeechEvents(generation.transcript, generation.format, generation.context,
                                     generation.timestamps)
    return await _speak(request, generation, framing)


async def voices(request: Request) -> Response:
    """``GET /cartesia/voices``: the gateway's voices (as /v1/voices), each also as their voice object (``id``,
    ``name``) so their clients can list them."""
    listed = await usable_voices(request)
    return JSONResponse({"data": [translate.voice_object(v) for v in listed], "has_more": False, "voices": listed})
