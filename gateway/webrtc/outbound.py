"""A WebRTC stream's outbound speech prepared a chunk at a time (PyAV; no sockets, no event loop).

A chunk is resampled to the codec's rate, cut into exact 20 ms frames and encoded into their RTP payloads (Opus,
PCMU, PCMA) in one call, which the track runs in a thread as the chunk arrives; its 20 ms tick then only hands the
prepared payloads to aiortc (as packets, which aiortc's sender sends without encoding: no executor hop and no codec
work per frame on the event loop). Less than a frame waits for the next chunk, or for the utterance's end, which pads
it.

Opus is stateful: each payload is encoded as the continuation of the previous one, and a listener's decoder follows
what it received. So the encoder sees what the listener hears where that can be known ahead: after an utterance's
last frame it encodes ``SETTLE_FRAMES`` frames of silence, sent before any later audio (the encoder's look-ahead
plays the utterance's last milliseconds in the first of them, and both ends then hold the state silence leads to,
whose payload, ``idle_payload``, every idle tick sends). After a barge-in (the prepared frames dropped, idle silence
sent), the next utterance's first call encodes that silence first, unsent. Where silence goes out mid-utterance (an
underrun, barge-in's hold), the encoder did not see it: the next frames fade in over ~100 ms.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cache

import av
import numpy as np

from gateway.audio import Resampler, g711_encode

FRAME_SECONDS = 0.020
OPUS_BIT_RATE = 96000  # aiortc's own encoder's (it encodes stereo; one channel is what our speech has)
SETTLE_FRAMES = 3  # silence frames after which the Opus encoder's payloads stop changing (measured: 2)
G711 = {"pcmu": "pcm_mulaw", "pcma": "pcm_alaw"}


@dataclass
class Prepared:
    """What one call made: whole frames of PCM at the codec's rate, their payloads (None without a codec), and after
    an utterance's end the payloads of the silence that follows it (``tail``)."""

    generation: int
    pcm: bytes = b""
    payloads: list[bytes] | None = None
    tail: list[bytes] = field(default_factory=list)


class FrameEncoder:
    """One stream's codec: exact 20 ms frames of s16 mono in, one RTP payload per frame out."""

    def __init__(self, codec: str, rate: int) -> None:
        self.codec, self.rate = codec, rate
        self.frame_bytes = round(rate * FRAME_SECONDS) * 2
        self._opus: av.CodecContext | None = None
        self.stateful = codec == "opus"  # each payload continues the last (G.711 codes each sample alone)
        if codec == "opus":
            ctx = av.CodecContext.create("libopus", "w")
            ctx.bit_rate, ctx.format, ctx.layout, ctx.sample_rate = OPUS_BIT_RATE, "s16", "mono", rate
            ctx.options = {"application": "voip"}
            self._opus = ctx
        elif codec not in G711:
            raise ValueError(f"no RTP payload encoder for {codec!r}")

    def encode(self, pcm: bytes) -> list[bytes]:
        """The payloads of ``pcm``'s frames (a whole number of them), in order."""
        if not pcm:
            return []
        if self._opus is None:
            coded = g711_encode(pcm, G711[self.codec])
            step = self.frame_bytes // 2
            return [coded[i:i + step] for i in range(0, len(coded), step)]
        frame = av.AudioFrame.from_ndarray(np.frombuffer(pcm, "<i2").reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = self.rate
        packets = self._opus.encode(frame)  # PyAV hands libopus the codec's frame size: one packet per 20 ms
        return [bytes(p) for p in packets]

    def silence(self, frames: int) -> list[bytes]:
        return self.encode(bytes(self.frame_bytes * frames))


@cache
def idle_payload(codec: str, rate: int) -> bytes:
    """The payload of a 20 ms frame of silence from an encoder that has been silent a while."""
    return FrameEncoder(codec, rate).silence(SETTLE_FRAMES + 1)[-1]


class Outbound:
    """A stream's resampler, partial frame and encoder; ``prepare`` each chunk, ``finish`` each utterance.

    Calls may come from several threads, one at a time (a lock). ``generation``: the track's count of barge-ins; a
    call of a newer one than the last first drops what the older held (the resampler's, the partial frame) and lets the
    encoder settle into silence, as the listener has.
    """

    def __init__(self, rate: int, codec: str | None = None) -> None:
        self.rate = rate
        self.frame_bytes = round(rate * FRAME_SECONDS) * 2
        self.encoder = FrameEncoder(codec, rate) if codec else None
        self._resampler = Resampler(rate)
        self._partial = b""
        self._generation = 0
        self._settled = True  # the encoder's last frames were silence
        self._lock = threading.Lock()

    def prepare(self, pcm24k: bytes, generation: int) -> Prepared:
        """A chunk of engine audio (24 kHz s16le): its whole frames, encoded."""
        with self._lock:
            self._start(generation)
            return self._frames(self._resampler.process(pcm24k), generation)

    def finish(self, generation: int) -> Prepared:
        """The utterance's end: the rest, its last frame padded with silence, and the silence that follows it."""
        with self._lock:
            self._start(generation)
            tail = self._resampler.flush()
            pad = -(len(self._partial) + len(tail)) % self.frame_bytes
            prepared = self._frames(tail + bytes(pad), generation)
            if self.encoder is not None and not self._settled:
                prepared.tail = self.encoder.silence(SETTLE_FRAMES)
                self._settled = True
            return prepared

    def _start(self, generation: int) -> None:
        if generation == self._generation:
            return
        self._generation = generation
        self._resampler.reset()
        self._partial = b""
        if self.encoder is not None and not self._settled:
            self.encoder.silence(SETTLE_FRAMES)  # unsent: the listener heard idle silence since the barge-in
            self._settled = True

    def _frames(self, pcm: bytes, generation: int) -> Prepared:
        data = self._partial + pcm
        whole = len(data) - len(data) % self.frame_bytes
        frames, self._partial = data[:whole], data[whole:]
        payloads = None
        if self.encoder is not None:
            payloads = self.encoder.encode(frames)
            self._settled = self._settled and not (frames and self.encoder.stateful)
        return Prepared(generation, frames, payloads)
