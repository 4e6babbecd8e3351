"""ElevenLabs-compatible input streaming: WebSocket ``/v1/text-to-speech/{voice_id}/stream-input`` (one context) and
``/v1/text-to-speech/{voice_id}/multi-stream-input`` (contexts by ``context_id``).

A thin adapter: ``translate.Contexts`` decides, each context is one of our sessions (gateway/vendors/contexts.py) whose
sink sends their audio replies with alignment. docs/protocol.md describes what is honoured and what is ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from starlette.websockets import WebSocket

from engine.protocol import ProtocolError, Reading
from gateway import messages
from gateway.audio import Encoder, make_encoder
from gateway.guard.auth import admit, authorized, refusal_of
from gateway.elevenlabs import translate
from gateway.formats import ELEVENLABS_DEFAULT_FORMAT, ELEVENLABS_FORMATS
from gateway.host.drain import CLOSING, RESTART_CLOSE_CODE
from gateway.sessions.registry import ServerDraining, SessionLimitReached
from gateway.shared_state import GatewayState
from gateway.guard.silent_sockets import Admission, IdleClock
from gateway.vendors.contexts import POLICY_VIOLATION, Context, ContextSink, ContextSocket, Ended, serve
from gateway.websocket import client_frames, close_reason

log = logging.getLogger("chatterbox_fast.gateway")
TRY_AGAIN_LATER = 1013
UNAUTHORIZED = "a valid API key is required"
MAX_INACTIVITY_S = 180  # theirs: ``inactivity_timeout`` up to 180 s


class ElevenLabsSink(ContextSink):
    """One context's audio: each chunk cut between words into replies of base64 audio with its alignment;
    ``spelling``: the context's text as its session took it, every character of it given back in the alignment."""

    def __init__(self, socket: "_Socket", context: str | None, fmt: str, rate: int) -> None:
        super().__init__(socket)
        self.context, self.format, self.sample_rate = context, fmt, rate
        self._encoder: Encoder | None = None
        self._chunk: dict[str, Any] | None = None  # the chunk event of the audio that follows
        self.spelling = translate.Spelling()

    def expect(self, chunk_event: dict[str, Any]) -> None:
        self._chunk = chunk_event

    async def begin(self) -> None:
        self._encoder = make_encoder(self.format, self.sample_rate)
        self.restart()

    async def write(self, pcm: bytes) -> None:
        chunk, self._chunk = self._chunk, None
        if self._encoder is None or chunk is None:
            return
        for piece in translate.audio_pieces(chunk["words"], chunk["offset"], chunk["duration"], self.spelling):
            audio = self._encoder.encode(translate.pcm_slice(pcm, piece.start, piece.end))
            await self.socket.send(translate.audio_message(audio, piece.alignment, self.context, piece.normalized))
            self.counted(piece.end - piece.start)

    async def end(self) -> None:
        """The encoder's last audio, and the characters after the last word (their alignment: no time)."""
        if self._encoder is None:
            return
        rest, tail = self._encoder.flush(), translate.tail_alignment(self.spelling)
        if rest or tail:
            await self.socket.send(translate.audio_message(rest, tail, self.context, translate.EMPTY if tail else None))
        self._encoder = None

    async def clear(self) -> None:
        self._encoder = None


class _Socket(ContextSocket):
    """One client socket: its contexts (``contexts.ContextSocket``) as ``translate.Contexts`` commands them."""

    def __init__(self, ws: WebSocket, state: GatewayState, voice: str, fmt: str, rate: int, multi: bool,
                 idle: IdleClock, reading: Reading = Reading()) -> None:
        super().__init__(ws, state, idle, "elevenlabs")
        self.voice, self.format, self.rate, self.multi = voice, fmt, rate, multi
        self.reading = reading  # from the URL: every context's
        self.rules = translate.Contexts(multi)
        self.closing: list[asyncio.Event] = []  # contexts finishing before a close_socket
        self.done = asyncio.Event()  # one context: its isFinal went out; the socket closes
        # one context whose speech failed: the socket closes with a policy violation and this reason
        self.refused: str | None = None

    async def run(self, command: translate.Command) -> None:
        match command:
            case translate.Open(context=ctx):
                await self._open(ctx)
            case translate.Say(context=ctx, message=msg):
                if (entry := self.contexts.get(ctx)) is not None:
                    await entry.session.handle(msg)
                    if isinstance(msg, messages.Text) and entry.session.core.text:
                        entry.sink.spelling.text = entry.session.core.text
            case translate.Close(context=ctx, finish=True):
                if (entry := self.contexts.get(ctx)) is not None:
                    self.closing.append(entry.finished)
                    await entry.session.handle(messages.End())
            case translate.Close(context=ctx, finish=False):
                if (entry := self.contexts.get(ctx)) is not None:
                    await entry.session.handle(messages.Cancel())
                    await self._final(entry)
            case translate.Final(context=ctx):
                await self.send(translate.final_message(ctx))
                self._ended()
            case translate.CloseSocket():
                await asyncio.gather(*(event.wait() for event in self.closing))
                await self.ws.close(1000)

    async def _open(self, ctx: str | None) -> None:
        entry = Context(ctx, ElevenLabsSink(self, ctx, self.format, self.rate))
        try:
            await self.open(entry, self.voice, self._event)
        except SessionLimitReached as exc:  # this context is refused; the socket's others go on
            await self.send(translate.error_message(exc.code, str(exc), ctx))
            self.refused = None if self.multi else refusal_reason(exc.code, str(exc))
            await self.send(translate.final_message(ctx))
            self._ended()
            return
        if self.reading != Reading():
            await entry.session.handle(messages.Config(reading=self.reading))

    async def _event(self, entry: Context, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "chunk":
            entry.sink.expect(event)
        elif kind == "done":
            await self._final(entry)
        elif kind == "error":
            await self.send(translate.error_message(event["code"], event["message"], entry.id))
            if not entry.session.core.queued:  # nothing left to speak: the context is over
                self.refused = None if self.multi else refusal_reason(event["code"], event["message"])
                await self._final(entry)

    async def _final(self, entry: Context) -> None:
        """``isFinal`` for ``entry``; its session ends."""
        if self.contexts.get(entry.id) is entry:
            self.rules.ended(entry.id)
        if self.end(entry):
            await self.send(translate.final_message(entry.id))
            self._ended()

    def _ended(self) -> None:
        if not self.multi:
            self.done.set()


async def stream_input(ws: WebSocket) -> None:
    await _serve(ws, multi=False)


async def multi_stream_input(ws: WebSocket) -> None:
    await _serve(ws, multi=True)


def _inactivity_timeout(ws: WebSocket, default: float) -> float:
    """Their ``inactivity_timeout`` query parameter (seconds, 1 to 180); ``default`` without one."""
    raw = ws.query_params.get("inactivity_timeout")
    if raw is None:
        return default
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if not 1 <= seconds <= MAX_INACTIVITY_S:
        raise ProtocolError(f"inactivity_timeout must be seconds from 1 to {MAX_INACTIVITY_S}")
    return seconds


def refusal_reason(code: str, message: str) -> str:
    """A refusal's close-frame reason: the error message's code and text. ElevenLabs' SDK raises the error message or
    the close reason, whichever it reads first."""
    return close_reason(f"{code}: {message}")


async def _refuse(ws: WebSocket, code: str, message: str, close_code: int = POLICY_VIOLATION) -> None:
    await ws.send_json(translate.error_message(code, message))
    await ws.close(close_code, refusal_reason(code, message))


async def _serve(ws: WebSocket, *, multi: bool) -> None:
    state: GatewayState = ws.app.state.gateway
    await ws.accept()
    name = ws.query_params.get("output_format", ELEVENLABS_DEFAULT_FORMAT)
    if name not in ELEVENLABS_FORMATS:
        await _refuse(ws, "invalid_output_format", f"output_format must be one of {', '.join(ELEVENLABS_FORMATS)}")
        return
    try:
        idle = IdleClock(_inactivity_timeout(ws, state.settings.idle_timeout_s))
    except ProtocolError as exc:
        await _refuse(ws, "invalid_inactivity_timeout", str(exc))
        return
    fmt, rate = ELEVENLABS_FORMATS[name]
    try:
        reading = translate.query_reading(ws.query_params)
    except ProtocolError as exc:
        await _refuse(ws, exc.code, str(exc))
        return
    if (refusal := state.drain.rules.refusal()) is not None:
        await _refuse(ws, ServerDraining.code, refusal, RESTART_CLOSE_CODE)
        return
    waiting = None
    if not (authorized(ws, state.tenancy) or admit(ws, state.tenancy, ws.headers.get("xi-api-key"))):
        if (refusal := refusal_of(ws)).token:  # a token refused (expired, used, out of scope): said at once
            await _refuse(ws, refusal.code, refusal.message, refusal.close_code)
            return
        if (waiting := state.unauthenticated.enter()) is None:  # its key may come in its first message
            await _refuse(ws, "too_many_unauthenticated", state.unauthenticated.full_message, TRY_AGAIN_LATER)
            return
    socket = _Socket(ws, state, ws.path_params["voice_id"], fmt, rate, multi, idle, reading)
    try:
        ended = await serve(socket, _receive_all(ws, socket, waiting), socket.done)
    except _Refused as refused:
        with contextlib.suppress(Exception):
            await ws.close(POLICY_VIOLATION, refused.reason)
        return
    finally:
        if waiting is not None:
            waiting.leave()
    if ended is Ended.FINISHED:
        with contextlib.suppress(Exception):
            await (ws.close(POLICY_VIOLATION, socket.refused) if socket.refused else ws.close(1000))
    elif ended is Ended.DRAINING:
        with contextlib.suppress(Exception):
            await _refuse(ws, ServerDraining.code, CLOSING, RESTART_CLOSE_CODE)


class _Refused(Exception):
    """The socket is closed with a policy violation (their clients raise its message; the close repeats it)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.reason = refusal_reason(code, message)


async def _receive_all(ws: WebSocket, socket: _Socket, waiting: Admission | None) -> None:
    """``waiting``: the socket's place among those not yet authenticated (None: its handshake had a key)."""
    async for raw in client_frames(ws):
        socket.idle.touch()
        try:
            msg = translate.parse(raw)
            if waiting is not None:
                if not admit(ws, socket.state.tenancy, msg.api_key):
                    await socket.send(translate.error_message("unauthorized", UNAUTHORIZED))
                    raise _Refused("unauthorized", UNAUTHORIZED)
                waiting.leave()
                waiting = None
            commands = socket.rules.receive(msg)
        except ProtocolError as exc:
            await socket.send(translate.error_message(exc.code, str(exc)))
            if not socket.multi:
                raise _Refused(exc.code, str(exc)) from None
            continue
        for command in commands:
            await socket.run(command)
