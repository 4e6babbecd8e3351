"""ElevenLabs-compatible input streaming: WebSocket ``/v1/text-to-speech/{voice_id}/stream-input`` (one context) and
``/v1/text-to-speech/{voice_id}/multi-stream-input`` (contexts by ``context_id``).

A thin adapter: ``translate.Contexts`` decides, each context is one of our sessions (gateway/sessions/session.py) whose sink
sends their audio replies with alignment. docs/protocol.md describes what is honoured and what is ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from starlette.websockets import WebSocket

from engine.protocol import ProtocolError, Reading
from gateway import messages
from gateway.audio import Encoder, make_encoder
from gateway.guard.auth import admit, authorized, refusal_of, tenant_of
from gateway.elevenlabs import translate
from gateway.formats import ELEVENLABS_DEFAULT_FORMAT, ELEVENLABS_FORMATS
from gateway.host.drain import CLOSING, RESTART_CLOSE_CODE
from gateway.playout import Outbound, SentAudio, WrittenAudio
from gateway.sessions.session import Session
from gateway.sessions.registry import ServerDraining, SessionLimitReached
from gateway.shared_state import GatewayState
from gateway.guard.silent_sockets import Admission, IdleClock, until_idle
from gateway.sink import AudioSink
from gateway.websocket import STALLED_CLOSE_CODE, SendWatch, client_frames, close_reason, until_stalled

log = logging.getLogger("chatterbox_fast.gateway")
POLICY_VIOLATION = 1008  # their close code for a refused request (and for a socket idle past its timeout)
TRY_AGAIN_LATER = 1013
UNAUTHORIZED = "a valid API key is required"
MAX_INACTIVITY_S = 180  # theirs: ``inactivity_timeout`` up to 180 s


class ElevenLabsSink(AudioSink):
    """One context's audio: each chunk cut between words into replies of base64 audio with its alignment;
    ``spelling``: the context's text as its session took it, every character of it given back in the alignment."""

    def __init__(self, socket: "_Socket", context: str | None, fmt: str, rate: int) -> None:
        self.socket, self.context, self.format, self.sample_rate = socket, context, fmt, rate
        self._encoder: Encoder | None = None
        self._chunk: dict[str, Any] | None = None  # the chunk event of the audio that follows
        self._sent = SentAudio()
        self._taken = WrittenAudio(socket.outbound)  # of the socket's bytes, what its client has taken of this one's
        self.spelling = translate.Spelling()

    def expect(self, chunk_event: dict[str, Any]) -> None:
        self._chunk = chunk_event

    async def begin(self) -> None:
        self._encoder = make_encoder(self.format, self.sample_rate)
        self._sent.reset()
        self._taken.reset()

    async def write(self, pcm: bytes) -> None:
        chunk, self._chunk = self._chunk, None
        if self._encoder is None or chunk is None:
            return
        for piece in translate.audio_pieces(chunk["words"], chunk["offset"], chunk["duration"], self.spelling):
            audio = self._encoder.encode(translate.pcm_slice(pcm, piece.start, piece.end))
            await self.socket.send(translate.audio_message(audio, piece.alignment, self.context, piece.normalized))
            self._sent.sent(piece.end - piece.start)
            self._taken.wrote(piece.end - piece.start)

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

    def played_seconds(self) -> float:
        return self._sent.taken()

    def taken_seconds(self) -> float:
        """What the client has taken: what was sent, less what still waits in the connection's buffers."""
        return self._taken.taken()


@dataclass(eq=False)
class _Context:
    """One context: its id and session. An id may be used again once closed: a new context, not this one."""

    id: str | None
    sink: ElevenLabsSink
    session: Session | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)


class _Socket:
    """One client socket: its contexts and the order of what is sent on it."""

    def __init__(self, ws: WebSocket, state: GatewayState, voice: str, fmt: str, rate: int, multi: bool,
                 idle: IdleClock, reading: Reading = Reading()) -> None:
        self.ws, self.state, self.voice, self.format, self.rate, self.multi = ws, state, voice, fmt, rate, multi
        self.idle = idle  # touched by every message in and out
        self.reading = reading  # from the URL: every context's
        self.rules = translate.Contexts(multi)
        self.contexts: dict[str | None, _Context] = {}  # by id: the context now taking that id's messages
        self.live: set[_Context] = set()  # every context not yet final (an id used again may leave one finishing)
        self.closing: list[asyncio.Event] = []  # contexts finishing before a close_socket
        self.done = asyncio.Event()  # one context: its isFinal went out; the socket closes
        # one context whose speech failed: the socket closes with a policy violation and this reason
        self.refused: str | None = None
        self._watch = SendWatch(state.settings.stall_timeout_s)
        self.outbound = Outbound(ws.scope)  # what its client has taken of the bytes sent to it
        self._ending: set[asyncio.Task[None]] = set()  # sessions being closed after their isFinal

    async def send(self, reply: dict[str, Any]) -> None:
        text = json.dumps(reply, separators=(",", ":"), ensure_ascii=False)  # as send_json, its size known
        with self._watch.sending():
            await self.ws.send_text(text)
        self.outbound.wrote(len(text.encode()))
        self.idle.touch()

    def stalled(self, now: float) -> bool:
        """Whether a send has waited for the client longer than the stall timeout, or what was sent has (bytes wait
        in the connection's buffers and the client has taken none of them for that long: ``Outbound``)."""
        return self._watch.stalled(now) or self.outbound.stalled(now, self.state.settings.stall_timeout_s)

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
        sink = ElevenLabsSink(self, ctx, self.format, self.rate)
        entry = _Context(ctx, sink)

        async def on_event(event: dict[str, Any]) -> None:
            await self._event(entry, event)

        entry.session = Session(self.state, sink, on_event, transport="elevenlabs", voice=self.voice,
                                tenant=tenant_of(self.ws))
        try:
            await entry.session.open()
        except SessionLimitReached as exc:  # this context is refused; the socket's others go on
            await self.send(translate.error_message(exc.code, str(exc), ctx))
            self.refused = None if self.multi else refusal_reason(exc.code, str(exc))
            await self.send(translate.final_message(ctx))
            self._ended()
            return
        self.contexts[ctx] = entry
        self.live.add(entry)
        if self.reading != Reading():
            await entry.session.handle(messages.Config(reading=self.reading))

    async def _event(self, entry: _Context, event: dict[str, Any]) -> None:
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

    async def _final(self, entry: _Context) -> None:
        """``isFinal`` for ``entry``; its session ends."""
        if self.contexts.get(entry.id) is entry:
            del self.contexts[entry.id]
            self.rules.ended(entry.id)
        if entry.finished.is_set():
            return
        entry.finished.set()
        self.live.discard(entry)
        await self.send(translate.final_message(entry.id))
        task = asyncio.get_running_loop().create_task(entry.session.close())  # (not from its own player's task)
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)
        self._ended()

    def _ended(self) -> None:
        if not self.multi:
            self.done.set()

    async def released(self) -> None:
        """Returns once a drain lets this socket go: each of its contexts has nothing left to say (or the grace is
        over)."""
        await self.state.drain.begun.wait()
        while pending := list(self.live):
            await asyncio.gather(*(entry.session.released() for entry in pending if entry.session is not None))
            if self.live <= set(pending):  # none opened meanwhile
                return

    async def close(self) -> None:
        for entry in list(self.live):
            entry.finished.set()
            await entry.session.close()
        self.live.clear()
        self.contexts.clear()
        await asyncio.gather(*self._ending, return_exceptions=True)


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
    receiving = asyncio.create_task(_receive_all(ws, socket, waiting))
    finishing = asyncio.create_task(socket.done.wait())
    watching = asyncio.create_task(until_stalled(socket))
    idling = asyncio.create_task(until_idle(idle))
    releasing = asyncio.create_task(socket.released())
    try:
        await asyncio.wait({receiving, finishing, watching, idling, releasing}, return_when=asyncio.FIRST_COMPLETED)
        if receiving.done() and not receiving.cancelled() and (exc := receiving.exception()) is not None:
            raise exc
    except _Refused as refused:
        with contextlib.suppress(Exception):
            await ws.close(POLICY_VIOLATION, refused.reason)
    finally:
        if waiting is not None:
            waiting.leave()
        for task in (receiving, finishing, watching, idling, releasing):
            task.cancel()
        await socket.close()
    if idling.done() and not idling.cancelled():
        log.info("elevenlabs socket closed: %s", idle.reason)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(ws.close(POLICY_VIOLATION, idle.reason), 1.0)
    elif watching.done() and not watching.cancelled():
        reason = f"not reading: no audio taken for {state.settings.stall_timeout_s:g} s"
        log.info("elevenlabs socket closed: %s", reason)
        with contextlib.suppress(Exception):  # the close frame may never get through to a client that reads nothing
            await asyncio.wait_for(ws.close(STALLED_CLOSE_CODE, reason), 1.0)
    elif finishing.done() and not finishing.cancelled():
        with contextlib.suppress(Exception):
            await (ws.close(POLICY_VIOLATION, socket.refused) if socket.refused else ws.close(1000))
    elif releasing.done() and not releasing.cancelled():
        log.info("elevenlabs socket closed: draining")
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
