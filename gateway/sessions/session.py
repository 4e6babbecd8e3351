"""One interactive client (a WebSocket or a WebRTC peer): the asyncio adapter around ``gateway/sessions/core.py``.

The core decides; this module carries its actions out (engine calls, sink calls, events) and reports back what
happened. Transports know nothing about the engine; the engine knows nothing about transports.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from typing import Any, Awaitable, Callable

from gateway import messages
from gateway.sessions import core
from gateway.engine_link.client import EngineRequestError, EngineUnavailable
from gateway.guard.tenants import TenantRefused
from gateway.playout import report_playout
from gateway.prompt_cache.utterances import Spoken
from gateway.shared_state import GatewayState
from gateway.sink import AudioSink
from gateway.traces import utterance_span
from gateway.utterance_stream import MetricsLabel, UtteranceStats, chunks

log = logging.getLogger("chatterbox_fast.gateway")
SendEvent = Callable[[dict[str, Any]], Awaitable[None]]


class Session:
    def __init__(self, state: GatewayState, sink: AudioSink, send_event: SendEvent, *, transport: str,
                 voice: str = "default", session_id: str | None = None, api_key: str | None = None,
                 tenant: str | None = None) -> None:
        """``api_key``: the key the client presented, which scopes its prompt cache entries (None: not known here,
        so its speaks are not cached while keys are on); ``tenant``: whose key opened it (gateway/guard/auth.py's
        ``tenant_of``), held to that tenant's limits, its entries in the prompt cache its own."""
        self.state = state
        self.api_key, self.tenant = api_key, tenant
        self.sink = sink
        self.send_event = send_event
        self.transport = transport
        self.core = core.SessionCore(session_id or uuid.uuid4().hex, transport, state.settings.max_text_chars,
                                     sink.configurable, voice, heard_from=sink.heard_from)
        self._utterances: dict[int, tuple[Spoken, UtteranceStats]] = {}  # turn -> engine side, until sent
        self._playing: asyncio.Queue[int] = asyncio.Queue()  # turns to send, in order
        self._player: asyncio.Task[None] | None = None
        self._audible: int | None = None  # the turn whose audio the sink is taking
        self._feedback: dict[int, asyncio.Task[None]] = {}  # turn -> its playout reports to the engine
        self._label = MetricsLabel(state.metrics, transport)
        self._idle = asyncio.Event()  # no turn queued or playing (what a drain waits for)
        self._idle.set()
        self._told_closing = False

    @property
    def id(self) -> str:
        return self.core.session_id

    @property
    def speaking(self) -> bool:
        """Whether a turn is queued or playing."""
        return not self._idle.is_set()

    async def open(self) -> None:
        """Register (raises ``SessionLimitReached``) and greet the client."""
        self.state.sessions.add(self, self.transport, self.tenant)
        await self._run(self.core.greeting(self.state.engine.ready))

    async def notify_shutdown(self, reason: str = "the server is shutting down") -> None:
        """The server is stopping: say so (once) while the client can still hear it."""
        if self._told_closing:
            return
        self._told_closing = True
        with contextlib.suppress(Exception):
            await self.send_event({"type": "closing", "reason": reason})

    async def released(self) -> None:
        """Returns once a drain lets this session go: when it has nothing left to say, or at the end of the grace."""
        await self.state.drain.until_released(self._idle)

    async def close(self) -> None:
        """The client went away: cancel all its engine work, queued turns included, and forget it. Forgotten last: a
        drain waits until its sessions are gone, and then the server stops, closing every socket left with a bare
        1012; a session forgotten first was still cancelling its engine work, its socket's own close (the reason
        with it) not yet sent."""
        if self.core.closed:
            return
        try:
            await self._run(self.core.disconnect())
            await self._stop_player()
        finally:
            self.state.sessions.remove(self)

    async def handle_text(self, raw: str | bytes) -> None:
        """One client frame, carried out to its end even when the caller is cancelled (a client gone mid-frame): an
        engine utterance it starts is then always known to the session, and cancelled with it."""
        await asyncio.shield(self._run(self.core.receive(raw, self._position(), time.monotonic())))

    async def handle(self, msg: messages.Message) -> None:
        """One message another protocol's adapter parsed (gateway/elevenlabs/), carried out as ``handle_text``."""
        await asyncio.shield(self._run(self.core.apply(msg, self._position(), time.monotonic())))

    def _position(self) -> float | None:
        """The sink's position in the turn it is playing; None when none is."""
        return self.sink.played_seconds() if self._audible is not None else None

    async def _run(self, actions: list[core.Action]) -> None:
        """Carry ``actions`` out in order; an engine call that fails ends the batch with an ``error`` event."""
        try:
            for action in actions:
                try:
                    await self._do(action)
                except (EngineUnavailable, EngineRequestError, TenantRefused) as exc:
                    if isinstance(action, core.StartUtterance):
                        await self._run(self.core.start_failed(action.turn, exc.code, str(exc)))
                    else:
                        await self._run(self.core.engine_failed(exc.code, str(exc)))
                    return
        finally:
            if self.core.queued:
                self._idle.clear()
            else:
                self._idle.set()

    async def _do(self, action: core.Action) -> None:
        match action:
            case core.Emit(event=event):
                self._count(event)
                await self.send_event(event)
            case core.StartUtterance(turn=turn, voice=voice, reading=reading, whole=whole, cache=cache):
                span = utterance_span(self.state.traces, self.transport, voice, self.id)

                def start() -> Awaitable[Spoken]:
                    if whole is None:
                        return self.state.engine.start(voice, reading, span)
                    return self.state.prompts.start(voice, reading, whole, api_key=self.api_key, tenant=self.tenant,
                                                    use=cache, span=span)

                utterance = await self.state.tenancy.start(self.tenant, voice, start)
                if turn not in self.core.queued:  # cancelled, or the client went away, while it started
                    await asyncio.shield(utterance.cancel())
                    return
                self._utterances[turn] = utterance, UtteranceStats(time.monotonic())
                self._feedback[turn] = asyncio.create_task(report_playout(utterance, lambda: self._taken(turn)))
                self.core.started(turn, utterance.id)
                self._playing.put_nowait(turn)
                if self._player is None:
                    self._player = asyncio.create_task(self._play_all())
            case core.SendText(turn=turn, text=text):
                if utterance := self._engine_side(turn):
                    self.state.tenancy.charge(self.tenant, len(text))
                    await utterance.text(text)
            case core.FlushText(turn=turn):
                if utterance := self._engine_side(turn):
                    await utterance.flush()
            case core.EndText(turn=turn):
                if utterance := self._engine_side(turn):
                    await utterance.end()
            case core.CancelUtterance(turn=turn):
                await self._stop(turn)
            case core.ConfigureSink(format=fmt, sample_rate=rate):
                self.sink.configure(fmt, rate)
            case core.BeginAudio():
                await self.sink.begin()
            case core.WriteAudio(pcm=pcm):
                await self.sink.write(pcm)
            case core.EndAudio():
                await self.sink.end()
            case core.ClearAudio():
                await self.sink.clear()

    def trace_event(self, name: str, **attributes: str) -> None:
        """Something that happened to the utterances under way (a barge-in), in their traces."""
        for utterance, _ in self._utterances.values():
            utterance.span.event(name, **attributes)

    def _engine_side(self, turn: int) -> Spoken | None:
        """``turn``'s engine utterance; None once it was stopped (a cancel or a disconnect came first)."""
        entry = self._utterances.get(turn)
        return entry[0] if entry is not None else None

    def _count(self, event: dict[str, Any]) -> None:
        """Every error a client is sent, and every utterance that ends without ``done``, in the metrics."""
        metrics = self.state.metrics
        if event["type"] == "error":
            metrics.errors.labels(event["code"]).inc()
            if "utterance" in event:
                metrics.utterances.labels(self.transport, "error").inc()
        elif event["type"] == "cancelled" and event["utterance"] is not None:
            metrics.utterances.labels(self.transport, "cancelled").inc()

    async def _stop(self, turn: int) -> None:
        """Cancel ``turn`` in the engine and stop sending. (The core cancels every turn at once, on ``cancel`` and on
        a disconnect, so the player stops altogether and starts afresh with the next turn.)"""
        self._stop_feedback(turn)
        entry = self._utterances.pop(turn, None)
        try:
            await self._stop_player()  # first: nothing more goes out once a cancel is taken (so "heard" holds)
        finally:
            if entry is not None:
                await asyncio.shield(entry[0].cancel())  # sent even when the caller is being cancelled

    def _stop_feedback(self, turn: int) -> None:
        if (task := self._feedback.pop(turn, None)) is not None:
            task.cancel()

    def _taken(self, turn: int) -> float | None:
        """What ``turn``'s client has taken: nothing while it waits behind another turn (so the engine generates
        no more of it than its planner buffers), then where the client's ``playout`` reports put it (never past the
        sink's position), else what the sink knows."""
        if self._audible != turn:
            return 0.0
        position = self.sink.taken_seconds()
        if position is None:
            return None
        reported = self.core.played(turn, position, time.monotonic())
        return position if reported is None else reported

    async def _stop_player(self) -> None:
        player, self._player = self._player, None
        if player is not None:
            player.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await player
        self._playing = asyncio.Queue()

    async def _play_all(self) -> None:
        """Send the session's turns one after another, each once the one before has been sent."""
        while True:
            turn = await self._playing.get()
            if turn in self._utterances:
                await self._play(turn, *self._utterances[turn])
                self._utterances.pop(turn, None)

    async def _play(self, turn: int, utterance: Spoken, stats: UtteranceStats) -> None:
        underruns_before, in_gateway_before = self.sink.underruns(), self.sink.underruns_in_gateway()
        try:
            async for chunk in chunks(utterance, stats, to=self._label):
                await self._run(self.core.chunk(turn, chunk.header, chunk.pcm))
                self._audible = turn
            await self._run(self.core.engine_done(turn))
            summary = stats.summary()
            if underruns_before is not None:
                summary["underruns"] = (self.sink.underruns() or 0) - underruns_before
            await self._run(self.core.audio_ended(turn, summary, self.sink.played_seconds()))
        except EngineRequestError as exc:
            await self._run(self.core.failed(turn, exc.code, str(exc)))
        except Exception as exc:  # the client went away mid-send, for instance
            log.debug("session %s: utterance %s stopped: %s", self.id, utterance.id, exc)
            self.core.abandoned(turn)
        finally:
            self._stop_feedback(turn)
            self._audible = None
            if underruns_before is not None:
                metrics = self._label.metrics
                metrics.underruns.labels(self.transport).inc((self.sink.underruns() or 0) - underruns_before)
                metrics.underruns_in_gateway.labels(self.transport).inc(self.sink.underruns_in_gateway()
                                                                        - in_gateway_before)
            await asyncio.shield(utterance.cancel())  # a no-op once finished; else no engine work outlives the turn
