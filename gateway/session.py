"""One interactive client (a WebSocket or a WebRTC peer): its utterances, in order, into one audio sink.

Transports know nothing about the engine; the engine knows nothing about transports. A session turns client messages
into engine requests and engine chunks into sink writes and events.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol

from engine.protocol import ProtocolError
from gateway import messages
from gateway.engine_link.client import Chunk, Done, EngineRequestError, EngineUnavailable, RemoteUtterance
from gateway.metrics import Metrics
from gateway.session_registry import SessionLimitReached
from gateway.shared_state import GatewayState

log = logging.getLogger("chatterbox_fast.gateway")
SendEvent = Callable[[dict[str, Any]], Awaitable[None]]
PLAYOUT_REPORT_S = 0.2
MAX_QUEUED_UTTERANCES = 8  # per session: utterances started but not yet fully sent

__all__ = ["AudioSink", "Session", "SessionLimitReached", "UtteranceStats"]


class AudioSink(Protocol):
    """Where a session's audio goes. ``pcm`` is always 24 kHz mono s16le; the sink converts for its wire."""

    async def begin(self) -> None: ...

    async def write(self, pcm: bytes) -> None: ...

    async def end(self) -> None: ...

    async def clear(self) -> None: ...


@dataclass
class UtteranceStats:
    """Timing of one utterance as the gateway saw it, shared by every transport."""

    transport: str
    started: float = field(default_factory=time.monotonic)
    ttfa: float | None = None

    def first_audio(self, metrics: Metrics) -> None:
        if self.ttfa is None:
            self.ttfa = time.monotonic() - self.started
            metrics.ttfa.labels(self.transport).observe(self.ttfa)

    def on_chunk(self, chunk: Chunk, metrics: Metrics) -> None:
        self.first_audio(metrics)
        metrics.chunk_gen.observe(chunk.header.gen_time)

    def summary(self, done: Done, metrics: Metrics) -> dict[str, Any]:
        audio, gen = float(done.message.get("audio", 0.0)), float(done.message.get("gen_time", 0.0))
        rtf = audio / gen if gen > 0 else None
        if rtf is not None:
            metrics.rtf.observe(rtf)
        metrics.utterances.labels(self.transport, "done").inc()
        return {
            "ttfa": round(self.ttfa, 4) if self.ttfa is not None else None,
            "audio_seconds": round(audio, 3),
            "chunks": done.message.get("chunks", 0),
            "gen_time": round(gen, 4),
            "rtf": round(rtf, 2) if rtf else None,
        }


@dataclass
class _Turn:
    utterance: RemoteUtterance
    stats: UtteranceStats
    chars: int = 0
    pump: asyncio.Task[None] | None = None


class Session:
    def __init__(self, state: GatewayState, sink: AudioSink, send_event: SendEvent, *, transport: str,
                 voice: str = "default") -> None:
        self.id = uuid.uuid4().hex[:12]
        self.state = state
        self.sink = sink
        self.send_event = send_event
        self.transport = transport
        self.voice = voice
        self._current: _Turn | None = None  # the utterance taking text
        self._turns: list[_Turn] = []  # every utterance not yet fully sent, in order
        self._closed = False

    async def open(self) -> None:
        """Register (raises ``SessionLimitReached``) and greet the client."""
        self.state.sessions.add(self, self.transport)
        ready = self.state.engine.ready or {}
        await self.send_event({
            "type": "ready", "session": self.id,
            "engine": {k: ready.get(k) for k in ("engine", "device", "dtype", "weights", "watermark")},
            "limits": {"max_text_chars": self.state.settings.max_text_chars,
                       "max_message_bytes": messages.MAX_MESSAGE_BYTES},
        })

    async def notify_shutdown(self) -> None:
        """The server is stopping: say so while the client can still hear it."""
        with contextlib.suppress(Exception):
            await self.send_event({"type": "closing", "reason": "the server is shutting down"})

    async def close(self) -> None:
        """The client went away: cancel its engine work and forget it."""
        if self._closed:
            return
        self._closed = True
        self.state.sessions.remove(self)
        for turn in self._turns:
            await self._stop_turn(turn)
        self._turns.clear()
        self._current = None

    async def handle_text(self, raw: str | bytes) -> None:
        """One client frame. Errors go back as ``error`` events; nothing a client sends ends the session."""
        try:
            await self._apply(messages.parse_message(raw))
        except ProtocolError as exc:
            await self.error(exc.code, str(exc))
        except (EngineUnavailable, EngineRequestError) as exc:
            await self.error(exc.code, str(exc))

    async def error(self, code: str, message: str, **extra: Any) -> None:
        self.state.metrics.errors.labels(code).inc()
        await self.send_event({"type": "error", "code": code, "message": message, **extra})

    async def _apply(self, msg: messages.Message) -> None:
        match msg:
            case messages.Config():
                await self._configure(msg)
            case messages.Text(text=text):
                await self._append(text)
            case messages.Speak(text=text, voice=voice):
                if voice is not None:
                    self.voice = voice
                await self._append(text)
                await self._end()
            case messages.Flush():
                if self._current:
                    await self._current.utterance.flush()
            case messages.End():
                await self._end()
            case messages.Cancel():
                await self._cancel()

    async def _configure(self, config: messages.Config) -> None:
        if config.format is not None or config.sample_rate is not None:
            configure = getattr(self.sink, "configure", None)
            if configure is None:
                raise ProtocolError(f"the {self.transport} transport negotiates its own audio format", "bad_config")
            configure(config.format or "pcm_s16le", config.sample_rate or 24000)
        if config.voice is not None:
            self.voice = config.voice

    async def _append(self, text: str) -> None:
        limit = self.state.settings.max_text_chars
        turn = self._current
        used = turn.chars if turn else 0
        if used + len(text) > limit:
            raise ProtocolError(f"an utterance may have at most {limit} characters of text", "text_too_long")
        if not text:
            return
        if turn is None:
            turn = await self._start_turn()
        turn.chars += len(text)
        await turn.utterance.text(text)

    async def _start_turn(self) -> _Turn:
        if len(self._turns) >= MAX_QUEUED_UTTERANCES:
            raise ProtocolError(f"{MAX_QUEUED_UTTERANCES} utterances are already waiting to be spoken; wait for a "
                                "'done' or send 'cancel'", "too_many_utterances")
        utterance = await self.state.engine.start(self.voice)
        turn = _Turn(utterance, UtteranceStats(self.transport))
        previous = self._turns[-1].pump if self._turns else None
        turn.pump = asyncio.create_task(self._pump(turn, previous))
        self._turns.append(turn)
        self._current = turn
        return turn

    async def _end(self) -> None:
        if self._current is not None:
            turn, self._current = self._current, None
            await turn.utterance.end()

    async def _cancel(self) -> None:
        turns, self._turns, self._current = self._turns, [], None
        for turn in turns:
            await self._stop_turn(turn)
        await self.sink.clear()
        for turn in turns:
            self.state.metrics.utterances.labels(self.transport, "cancelled").inc()
            await self.send_event({"type": "cancelled", "utterance": turn.utterance.id})
        if not turns:  # everything had been sent already (the client may still be playing it): acknowledge anyway
            await self.send_event({"type": "cancelled", "utterance": None})

    async def _stop_turn(self, turn: _Turn) -> None:
        await turn.utterance.cancel()
        if turn.pump is not None:
            turn.pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await turn.pump

    async def _report_playout(self, utterance: RemoteUtterance) -> None:
        """Tell the engine how much the listener has really heard, where the sink knows (the paced WebRTC track), so
        the planner sizes chunks on the true buffer rather than on the wall clock."""
        played_seconds = getattr(self.sink, "played_seconds", None)
        if played_seconds is None:
            return
        with contextlib.suppress(EngineUnavailable):
            while not utterance.finished:
                await utterance.playout(round(played_seconds(), 3))
                await asyncio.sleep(PLAYOUT_REPORT_S)

    async def _pump(self, turn: _Turn, previous: asyncio.Task[None] | None) -> None:
        """Forward one utterance's chunks to the sink, after the utterance before it has been sent."""
        if previous is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(previous)
        metrics, uid = self.state.metrics, turn.utterance.id
        underruns_before = getattr(self.sink, "underruns", None)
        feedback: asyncio.Task[None] | None = None
        try:
            async for event in turn.utterance.events():
                if isinstance(event, Chunk):
                    if feedback is None:
                        await self.sink.begin()
                        feedback = asyncio.create_task(self._report_playout(turn.utterance))
                    turn.stats.on_chunk(event, metrics)
                    h = event.header
                    await self.send_event({"type": "chunk", "utterance": uid, "seq": h.seq, "text": h.text,
                                           "offset": h.offset, "duration": h.duration, "gen_time": h.gen_time})
                    await self.sink.write(event.pcm)
                else:
                    await self.sink.end()
                    summary = turn.stats.summary(event, metrics)
                    if underruns_before is not None:
                        summary["underruns"] = getattr(self.sink, "underruns") - underruns_before
                    await self.send_event({"type": "done", "utterance": uid, **summary})
        except EngineRequestError as exc:
            metrics.utterances.labels(self.transport, "error").inc()
            await self.error(exc.code, str(exc), utterance=uid)
        except Exception as exc:  # the client went away mid-send, for instance
            log.debug("session %s: utterance %s stopped: %s", self.id, uid, exc)
        finally:
            if feedback is not None:
                feedback.cancel()
            if turn in self._turns:
                self._turns.remove(turn)
            if self._current is turn:
                self._current = None
