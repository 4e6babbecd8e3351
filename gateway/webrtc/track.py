"""The paced outbound aiortc audio track, and the session sink that feeds it.

aiortc's RTCRtpSender does no pacing: it sends each frame as soon as ``recv()`` returns one. So ``recv()`` is the
clock. It returns exact 20 ms s16 mono frames at the negotiated codec's own rate (48 kHz for Opus, 8 kHz for G.711,
so aiortc's encoder holds nothing back), on the wall clock from the first ``recv()``; silence when idle; after a stall
it catches up with a burst instead of re-anchoring (a receiver's jitter buffer recovers from the burst, while a
re-anchored clock leaves Chrome's NetEq with a long delay, as measured in the project's WebRTC research).
"""

from __future__ import annotations

import asyncio
import fractions
import time
from collections.abc import Awaitable, Callable

import av
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

import numpy as np

from gateway.audio import Resampler
from gateway.listen.echo import EchoReference, rms
from gateway.formats import codec_rate
from gateway.sink import AudioSink
from gateway.webrtc.jitter import JitterBuffer

FRAME_SECONDS = 0.020
LATE_TICK_SECONDS = 0.005  # a recv() this far behind its schedule counts as late


class PacedAudioTrack(MediaStreamTrack):
    """Outbound speech: ``feed`` 24 kHz s16le, ``end_of_utterance``, ``clear`` (barge-in); aiortc pulls ``recv``."""

    kind = "audio"

    def __init__(self, sample_rate: int = codec_rate("opus"), clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        super().__init__()
        self._clock = clock
        self._sleep = sleep
        self._start: float | None = None  # monotonic time of the first recv()
        self._pts = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self.late_ticks = 0
        self.max_late = 0.0
        self.held = False  # barge-in's pause: silence goes out, the queued audio waits
        self.echo: EchoReference | None = None  # told what plays, where the peer's audio is heard
        self._configure(sample_rate)

    def _configure(self, sample_rate: int) -> None:
        self.sample_rate = sample_rate
        self.frame_samples = round(sample_rate * FRAME_SECONDS)
        self.time_base = fractions.Fraction(1, sample_rate)
        self.jitter = JitterBuffer(sample_rate, self.frame_samples)
        self.resampler = Resampler(sample_rate)
        self._silence = bytes(self.frame_samples * 2)

    def set_sample_rate(self, sample_rate: int) -> None:
        """Switch to the negotiated codec's rate; only before the first ``recv()`` and before any audio."""
        if sample_rate == self.sample_rate:
            return
        if self._start is not None or self.jitter.samples_in:
            raise RuntimeError("the track's sample rate can only change before it starts")
        self._configure(sample_rate)

    @property
    def frames_sent(self) -> int:
        """Frames handed to aiortc so far, audio and silence."""
        return self._pts // self.frame_samples

    def feed(self, pcm24k: bytes) -> None:
        """Queue engine audio (24 kHz mono s16le) for playout."""
        self.jitter.push(self.resampler.process(pcm24k))

    def end_of_utterance(self) -> None:
        """The utterance is complete: flush the resampler and pad the last frame."""
        self.jitter.push(self.resampler.flush())
        self.jitter.mark_end()

    def clear(self) -> None:
        """Barge-in: drop all queued audio now; the next frame is silence."""
        self.resampler.reset()
        self.jitter.clear()
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

    async def recv(self) -> av.AudioFrame:
        if self.readyState != "live":
            raise MediaStreamError
        now = self._clock()
        if self._start is None:
            self._start = now
        wait = self._start + self._pts / self.sample_rate - now
        if wait > 0:
            await self._sleep(wait)
        elif -wait > LATE_TICK_SECONDS:  # behind schedule: return at once until caught up, never re-anchor
            self.late_ticks += 1
            self.max_late = max(self.max_late, -wait)
        data = (None if self.held else self.jitter.pop()) or self._silence
        if self.echo is not None and data is not self._silence:
            self.echo.played(now, FRAME_SECONDS, rms(np.frombuffer(data, "<i2") / 32768))
        frame = av.AudioFrame(format="s16", layout="mono", samples=self.frame_samples)
        frame.planes[0].update(data)
        frame.sample_rate = self.sample_rate
        frame.time_base = self.time_base
        frame.pts = self._pts
        self._pts += self.frame_samples
        if self._waiters:
            self._wake()
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

    async def begin(self) -> None:
        self._begin_at = self.track.jitter.write_position
        self._end_at = None

    async def write(self, pcm: bytes) -> None:
        self.track.feed(pcm)

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
