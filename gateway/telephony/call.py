"""A phone call over a media-stream WebSocket: a session driven by a controller (gateway/sessions/driven.py), whose sink
sends the dialect's media and marks, paced by the outbox (gateway/telephony/outbox.py).

The dialect (Twilio, Telnyx, Asterisk, Plivo, Vonage, Exotel) only says how a frame, a mark and a clear look on its
wire; everything else, pacing, what was heard, barge-in, the end of a call, is here once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Awaitable, Callable, Protocol

import numpy as np

from gateway.audio import Encoder, g711_decode, make_encoder
from gateway.sessions.driven import DrivenSession
from gateway.listen.caller import G711, CallerSide
from gateway.sessions.session import Session
from gateway.sessions.registry import SessionLimitReached
from gateway.shared_state import GatewayState
from gateway.sink import AudioSink
from gateway.telephony.outbox import LEAD_S, Mark, Media, Outbox
from gateway.websocket import SendWatch

log = logging.getLogger("chatterbox_fast.gateway")
MARK_GRACE_S = 2.0  # how long past its estimated playout an utterance's last mark may take to come back
Wire = str | bytes
Send = Callable[[Wire], Awaitable[None]]
SILENCE = {"mulaw": b"\xff", "alaw": b"\xd5", "pcm": b"\0\0"}  # one sample of it, per wire format


class Dialect(Protocol):
    """How one phone stack's frames look. None from ``mark``: this stack has no marks (the sink counts a mark heard
    once the outbox's estimate says its audio has played: ``heard_from`` ``clock``); None from ``clear``: it has no
    clear (what was sent plays); a list from ``media``: the stack takes the outbox's frame as several messages
    (Vonage's 20 ms ones)."""

    def media(self, payload: bytes) -> Wire | list[Wire]: ...

    def mark(self, name: str) -> Wire | None: ...

    def clear(self) -> Wire | None: ...


class PhoneSink(AudioSink):
    """Engine audio encoded for the call (``fmt`` at ``rate``) into the outbox, and a task sending what is due.

    ``end`` returns once the utterance's last mark has come back (so ``done`` reports what the marks say was heard),
    or ``MARK_GRACE_S`` after its estimated playout when the stack does not echo it, or as soon as it is cleared.
    """

    heard_from = "marks"

    def __init__(self, dialect: Dialect, send: Send, fmt: str, rate: int, stall_timeout: float,
                 frame_bytes: int | None = None) -> None:
        self.dialect = dialect
        self.heard_from = getattr(dialect, "heard_from", "marks")  # a stack without marks: "clock"
        self._send_wire = send
        self.format, self.rate = fmt, rate
        # A stack that plays what it gets at once (no buffer to clear) is sent less ahead: its ``lead_s``.
        self.outbox = Outbox(rate * len(SILENCE[fmt]), frame_bytes, SILENCE[fmt], getattr(dialect, "lead_s", LEAD_S))
        self._clock_marks: list[asyncio.TimerHandle] = []  # a stack without marks: each echoed when it has played
        self._encoder: Encoder | None = None
        self._wake = asyncio.Event()
        self._progress = asyncio.Event()  # a mark came back, or the audio was cleared
        self._paused = False  # the stack asked us to stop sending (Asterisk's XOFF)
        self._held = False  # barge-in's pause
        self.echo: CallerSide | None = None  # told what plays: the echo canceller's far end, the echo guard's level
        self._watch = SendWatch(stall_timeout)
        self._sender: asyncio.Task[None] | None = None
        self._stopped = False

    def start(self) -> None:
        self._sender = asyncio.create_task(self._send_due())

    async def stop(self) -> None:
        """The call is over: nothing more is sent (a stack that has gone may never take it)."""
        self._stopped = True
        self._wake.set()
        self._progress.set()
        for handle in self._clock_marks:
            handle.cancel()
        if self._sender is not None:
            self._sender.cancel()
            await asyncio.wait({self._sender}, timeout=1.0)

    async def begin(self) -> None:
        self._encoder = make_encoder(self.format, self.rate)
        self.outbox.begin()

    async def write(self, pcm: bytes) -> None:
        if self._encoder is not None:
            self.outbox.push(self._encoder.encode(pcm))
            self._wake.set()

    async def end(self) -> None:
        if self._encoder is not None:
            self.outbox.push(self._encoder.flush())
        self._encoder = None
        self.outbox.end()
        self._wake.set()
        while not self.outbox.final_heard and not self._stopped:
            plays_until = self.outbox.plays_until or time.monotonic()
            wait = plays_until + MARK_GRACE_S - time.monotonic()
            if not self.outbox.idle:
                wait = max(wait, MARK_GRACE_S)  # still sending: its playout end is not known yet
            if wait <= 0:
                log.debug("the stack did not echo the last mark of an utterance; taking it as played")
                return
            self._progress.clear()
            await _wait(self._progress, wait)

    async def clear(self) -> None:
        """Barge-in: nothing more goes out, and the stack drops what it holds, at once."""
        self._encoder = None
        self._held = False
        now = time.monotonic()
        self.outbox.clear(now)
        self._progress.set()
        await self._drop_unplayed(now)

    async def hold(self, held: bool) -> None:
        """Barge-in's pause: the stack drops what it holds unplayed, which waits here to go again on release."""
        self._held = held
        if held:
            now = time.monotonic()
            self.outbox.rewind(now)
            await self._drop_unplayed(now)
        self._wake.set()

    async def _drop_unplayed(self, now: float) -> None:
        """The stack drops what it has not played (its clear); the echo canceller and guard forget it too. A stack
        without a clear plays what it was sent: they keep it."""
        if (frame := self.dialect.clear()) is None:
            return
        if self.echo is not None:
            self.echo.cleared(now)
        if not self._stopped:
            with contextlib.suppress(Exception):  # the call may be going: its end is handled by the endpoint
                await self._send(frame)

    def played_seconds(self) -> float:
        """What the echoed marks say the caller heard of the current utterance."""
        return self.outbox.heard_s

    def echoed(self, name: str) -> None:
        """The stack echoed mark ``name``."""
        self.outbox.echoed(name)
        self._progress.set()

    def pause(self, paused: bool) -> None:
        """Stop sending (``True``) or go on (``False``), as the stack asks."""
        self._paused = paused
        self._wake.set()

    def _heard_echo(self, item: Media) -> None:
        """Tell the caller's side what will play when (the far end of its echo canceller)."""
        if self.echo is None:
            return
        payload = item.payload
        pcm = np.frombuffer(payload, "<i2") if self.format == "pcm" else g711_decode(payload, G711[self.format])
        self.echo.played(item.plays_at, pcm, self.rate)

    def stalled(self, now: float) -> bool:
        return self._watch.stalled(now)

    async def _send(self, frame: Wire) -> None:
        with self._watch.sending():
            await self._send_wire(frame)

    async def _send_due(self) -> None:
        """Until the socket goes (the endpoint sees that from its side and ends the call)."""
        with contextlib.suppress(Exception):
            await self._send_loop()

    async def _send_loop(self) -> None:
        while not self._stopped:
            self._wake.clear()  # before looking: a write while this sends wakes the next round
            wait: float | None = None
            if not self._paused and not self._held:
                out, wait = self.outbox.due(time.monotonic())
                plays_until = self.outbox.plays_until or time.monotonic()  # a batch of only the final mark
                for item in out:
                    if isinstance(item, Media):
                        self._heard_echo(item)
                        plays_until = item.plays_at + len(item.payload) / self.outbox.bytes_per_second
                    frame = self.dialect.media(item.payload) if isinstance(item, Media) else self.dialect.mark(
                        item.name)
                    if frame is None:
                        if isinstance(item, Mark):
                            self._echo_by_clock(item.name, plays_until)
                        continue
                    for message in frame if isinstance(frame, list) else [frame]:
                        await self._send(message)
            await _wait(self._wake, wait)

    def _echo_by_clock(self, name: str, plays_until: float) -> None:
        """A stack without marks: mark ``name`` counts as echoed once its audio has played, by the estimate."""
        loop = asyncio.get_running_loop()
        self._clock_marks = [handle for handle in self._clock_marks if handle.when() > loop.time()]  # (not run yet)
        self._clock_marks.append(loop.call_later(max(0.0, plays_until - time.monotonic()), self._clock_echo, name))

    def _clock_echo(self, name: str) -> None:
        if not self._stopped:
            self.echoed(name)


async def _wait(event: asyncio.Event, timeout: float | None) -> None:
    """Until ``event`` is set or ``timeout`` seconds pass. Not ``asyncio.wait_for``: on Python 3.11 it can swallow a
    cancel that meets its timeout, and a sink that swallows the player's cancel leaves the session's player running
    for good (bench faults under load found calls that never closed)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await event.wait()


DUPLICATE_CLOSE_CODE = 4409  # a live call has this id


class PhoneCall(DrivenSession):
    """One call: its session (id: the stack's call id), driven by the controller that attaches by that id."""

    def __init__(self, state: GatewayState, call_id: str, transport: str, sink: PhoneSink, voice: str,
                 codec: str, greeting: str = "", tenant: str | None = None) -> None:
        super().__init__()
        self.state = state
        self.sink = sink
        self.codec = codec
        self.greeting = greeting  # spoken at once, before any controller attaches
        self.session = Session(state, sink, self.send_event, transport=transport, voice=voice, session_id=call_id,
                               tenant=tenant)
        self._closed = False

    def dtmf(self, digit: str) -> None:
        """A key the caller pressed, for the controller."""
        self.to_controller({"type": "dtmf", "digit": digit})

    async def open(self) -> tuple[int, str] | None:
        """Register the session and list the call; (the close code, why) when it cannot be (a live call with this
        id, a full server, its key at its limit): then nothing is left open."""
        try:
            await self.session.open()
        except SessionLimitReached as exc:
            self._closed = True
            return exc.close_code, str(exc)
        if not await self.state.calls.add(self):
            self._closed = True
            self.state.sessions.remove(self.session)
            return DUPLICATE_CLOSE_CODE, "a call with this id is live already"
        self.sink.start()
        return None

    async def close(self, reason: str) -> None:
        """The call is over: the controller hears ``ended``; the engine's work on it stops."""
        if self._closed:
            return
        self._closed = True
        self.state.calls.remove(self)
        if self.caller is not None and self.caller.aec is not None:
            aec = self.caller.aec
            log.info("call %s: echo canceller: line delay %s ms, echo free %s, %s", self.id, aec.delay_ms,
                     aec.echo_free, aec.counts)
        try:
            await self.sink.stop()  # first: a stack that has gone, or stopped reading, is sent nothing more
            await self.release(reason)
        finally:
            await self.session.close()
