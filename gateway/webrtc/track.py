"""The paced outbound aiortc audio track, and the session sink that feeds it.

aiortc's RTCRtpSender does no pacing: it sends each frame as soon as ``recv()`` returns one. So ``recv()`` is the
clock. It returns exact 20 ms frames at the negotiated codec's own rate (48 kHz for Opus, 8 kHz for G.711), on the
wall clock from the first ``recv()``, whose tick is put on a 20 ms grid of the monotonic clock that every track of the
process shares: their frames fall due together and the event loop wakes once a tick for all of them rather than once
per track (a wake-up costs more CPU than the packet it sends: 28 against 9 us a tick for 40 tasks here); silence when
idle; after a stall it catches up with a burst instead of
re-anchoring (a receiver's jitter buffer recovers from the burst, while a re-anchored clock leaves Chrome's NetEq with
a long delay, as measured in the project's WebRTC research).

Once the codec is known (``set_sample_rate(rate, codec)``), each frame is an ``av.Packet`` holding its RTP payload,
prepared with its chunk (gateway/webrtc/outbound.py: resampled and encoded in a thread as the chunk arrives), which
aiortc's sender sends as it is; before that (and in tests), s16 mono ``av.AudioFrame``s that aiortc encodes.
"""

from __future__ import annotations

import asyncio
import fractions
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import av
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

import numpy as np

from gateway.formats import codec_rate
from gateway.sink import AudioSink
from gateway.webrtc.jitter import JitterBuffer
from gateway.webrtc.outbound import FRAME_SECONDS, Outbound, Prepared, idle_payload

if TYPE_CHECKING:
    from gateway.listen.caller import CallerSide

LATE_TICK_SECONDS = 0.005  # a recv() this far behind its schedule counts as late
HEAD_BYTES = 19200  # 400 ms of 24 kHz s16: what a chunk reaching an empty track has prepared at once


class PacedAudioTrack(MediaStreamTrack):
    """Outbound speech: ``feed`` 24 kHz s16le, ``end_of_utterance``, ``clear`` (barge-in); aiortc pulls ``recv``."""

    kind = "audio"

    def __init__(self, sample_rate: int = codec_rate("opus"), clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        super().__init__()
        self._clock = clock
        self._sleep = sleep
        self._start: float | None = None  # monotonic time of the first frame (the grid's tick after the first recv())
        self._pts = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self.late_ticks = 0
        self.max_late = 0.0
        self.held = False  # barge-in's pause: silence goes out, the queued audio waits
        self.echo: CallerSide | None = None  # told what plays, where the peer's audio is heard (its echo canceller)
        self._generation = 0  # barge-ins so far: what a thread prepared for an older one is dropped
        self._preparing = 0  # chunks being prepared in a thread now (an underrun meanwhile is the gateway's)
        self._configure(sample_rate, None)

    def _configure(self, sample_rate: int, codec: str | None) -> None:
        self.sample_rate = sample_rate
        self.codec = codec
        self.frame_samples = round(sample_rate * FRAME_SECONDS)
        self.time_base = fractions.Fraction(1, sample_rate)
        self.jitter = JitterBuffer(sample_rate, self.frame_samples)
        self.outbound = Outbound(sample_rate, codec)
        self._payloads: deque[bytes] = deque()  # one per whole frame in the jitter buffer (with a codec)
        self._tail: deque[bytes] = deque()  # the silence after the last utterance, due at _tail_at
        self._tail_at = 0
        self._idle = idle_payload(codec, sample_rate) if codec else b""
        self._silence = bytes(self.frame_samples * 2)

    def set_sample_rate(self, sample_rate: int, codec: str | None = None) -> None:
        """Switch to the negotiated codec's rate, and with ``codec`` prepare its payloads here; only before the first
        ``recv()`` and before any audio."""
        if sample_rate == self.sample_rate and codec == self.codec:
            return
        if self._start is not None or self.jitter.samples_in:
            raise RuntimeError("the track's sample rate can only change before it starts")
        self._configure(sample_rate, codec)

    @property
    def frames_sent(self) -> int:
        """Frames handed to aiortc so far, audio and silence."""
        return self._pts // self.frame_samples

    def feed(self, pcm24k: bytes) -> None:
        """Queue engine audio (24 kHz mono s16le) for playout, prepared here and now."""
        self._queue(self.outbound.prepare(pcm24k, self._generation))

    async def prepare(self, pcm24k: bytes) -> None:
        """``feed``, prepared in a thread (the event loop goes on meanwhile). A chunk that reaches a track with nothing
        queued (an utterance's first, or one after an underrun) has its first 400 ms prepared here and now (~2 ms),
        so that neither first audio nor the frames due next wait for a thread, only the rest does."""
        generation = self._generation
        if not self.jitter.buffered_seconds:
            self._queue(self.outbound.prepare(pcm24k[:HEAD_BYTES], generation))
            pcm24k = pcm24k[HEAD_BYTES:]
        if pcm24k:
            self._preparing += 1
            try:
                prepared = await asyncio.to_thread(self.outbound.prepare, pcm24k, generation)
            finally:
                self._preparing -= 1
            self._queue(prepared)

    def end_of_utterance(self) -> None:
        """The utterance is complete: flush the resampler and pad the last frame (prepared here: at most one frame of
        audio and the encoder's tail of silence)."""
        if self._queue(self.outbound.finish(self._generation)):
            self.jitter.mark_end()

    def _queue(self, prepared: Prepared) -> bool:
        """Queue what was prepared, unless a barge-in came since (then it is dropped: False)."""
        if prepared.generation != self._generation:
            return False
        self.jitter.push(prepared.pcm)
        if prepared.payloads is not None:
            self._payloads.extend(prepared.payloads)
        if prepared.tail:
            self._tail, self._tail_at = deque(prepared.tail), self.jitter.write_position
        return True

    def clear(self) -> None:
        """Barge-in: drop all queued audio now (prepared frames too); the next frame is silence."""
        self._generation += 1
        self.jitter.clear()
        self._payloads.clear()
        self._tail.clear()
        self._wake(everyone=True)

    async def played(self, position: int) -> None:
        """Wait until playout has reached ``position`` (in samples), or the audio was cleared or the track stopped."""
        if self.jitter.read_position >= position or self.readyState != "live":
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((position, future))
        await future

    def _wake(self, everyone: bool = False) -> None:
        read, waiting = self.jitter.read_position, []
        for position, future in self._waiters:
            if everyone or position <= read:
                if not future.done():
                    future.set_result(None)
            else:
                waiting.append((position, future))
        self._waiters = waiting

    def stop(self) -> None:
        super().stop()
        self._wake(everyone=True)

    async def recv(self) -> av.AudioFrame | av.Packet:
        """The next frame, at its time (aiortc's own sender's pull; gateway/webrtc/sender.py's pacer calls
        ``due_in`` and ``take`` instead)."""
        if self.readyState != "live":
            raise MediaStreamError
        now = self._clock()
        wait = self.due_in(now)
        if wait > 0:
            await self._sleep(wait)
        return self.take(now)

    def due_in(self, now: float) -> float:
        """Seconds from ``now`` until the next frame is due (0 or less: due, or late)."""
        if self._start is None:  # the next tick of the shared grid (a float's error short of one is on it)
            self._start = math.ceil(now / FRAME_SECONDS - 1e-6) * FRAME_SECONDS
        return self._start + self._pts / self.sample_rate - now

    def take(self, now: float) -> av.AudioFrame | av.Packet:
        """The next frame, now: behind schedule, frames go out at once until caught up (never re-anchored)."""
        late = -self.due_in(now)
        if late > LATE_TICK_SECONDS:
            self.late_ticks += 1
            self.max_late = max(self.max_late, late)
        frame = self._next(now)
        frame.time_base = self.time_base
        frame.pts = self._pts
        self._pts += self.frame_samples
        if self._waiters:
            self._wake()
        return frame

    def _next(self, now: float) -> av.AudioFrame | av.Packet:
        """The frame due now: the last utterance's encoder tail once it has played, else queued audio, else silence."""
        if self._tail and self.jitter.read_position >= self._tail_at:
            return av.Packet(self._tail.popleft())
        data = None if self.held else self.jitter.pop(preparing=self._preparing > 0)
        if data is not None and self.echo is not None:  # the echo canceller's far end, at the frame's time on the
            # grid (the peer plays it by its RTP timestamp, which counts on from there; frames sent in a burst as a
            # late track catches up keep theirs, one after the other)
            assert self._start is not None
            self.echo.played(self._start + self._pts / self.sample_rate, np.frombuffer(data, "<i2"),
                             self.sample_rate)
        if self.codec is not None:
            return av.Packet(self._payloads.popleft() if data is not None else self._idle)
        frame = av.AudioFrame(format="s16", layout="mono", samples=self.frame_samples)
        frame.planes[0].update(data or self._silence)
        frame.sample_rate = self.sample_rate
        return frame


class TrackSink(AudioSink):
    """The session's audio sink for WebRTC: engine audio into the paced track.

    ``end()`` returns once the utterance has been played out to the listener (so ``done`` and the underrun count
    cover the whole utterance), or as soon as it is cleared or the track stops.
    """

    def __init__(self, track: PacedAudioTrack) -> None:
        self.track = track
        self._begin_at = 0
        self._end_at: int | None = None

    def underruns(self) -> int:
        return self.track.jitter.underruns

    def underruns_in_gateway(self) -> int:
        return self.track.jitter.underruns_preparing

    async def begin(self) -> None:
        self._begin_at = self.track.jitter.write_position
        self._end_at = None

    async def write(self, pcm: bytes) -> None:
        await self.track.prepare(pcm)

    async def end(self) -> None:
        self.track.end_of_utterance()
        self._end_at = self.track.jitter.write_position
        await self.track.played(self._end_at)

    async def hold(self, held: bool) -> None:
        self.track.held = held

    async def clear(self) -> None:
        self.track.clear()
        self.track.held = False
        self._begin_at = self.track.jitter.write_position
        self._end_at = None

    def played_seconds(self) -> float:
        """Seconds of the current utterance handed to the listener so far (playout feedback)."""
        jitter = self.track.jitter
        last = self._end_at if self._end_at is not None else jitter.write_position
        played = min(jitter.read_position, last) - self._begin_at
        return max(0, played) / self.track.sample_rate
