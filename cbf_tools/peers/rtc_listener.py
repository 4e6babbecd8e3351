"""A listening aiortc peer (the client side): offers to receive audio (and a data channel), decodes what arrives
and records each decoded frame's arrival time and energy; it may talk back on a ``Microphone``. Used by ``bench
gateway`` and the WebRTC tests."""

from __future__ import annotations

import asyncio
import contextlib
import fractions
import json
import time
from dataclasses import dataclass, field

import av
import numpy as np
from aiortc import RTCConfiguration, RTCPeerConnection, RTCRtpSender, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

from cbf_tools.peers.polling import until

SPEECH_RMS = 300.0  # a decoded 20 ms frame louder than this carries audio


@dataclass
class Frame:
    at: float  # time.time() when the decoded frame came out of the receiver
    rms: float
    samples: int
    rate: int


class PacedSource(MediaStreamTrack):
    """20 ms s16 mono frames at ``rate`` on the wall clock from the first ``recv()``, as a microphone sends them:
    silence, or what ``play`` queued (a caller's voice; ``bench edge``'s tone). ``started_at``: when the latest
    ``play`` began going out (time.time())."""

    kind = "audio"

    def __init__(self, rate: int = 48000) -> None:
        super().__init__()
        self.rate, self.samples = rate, round(rate * 0.02)
        self._start: float | None = None
        self._pts = 0
        self._pending = b""
        self._played: asyncio.Event | None = None
        self._starting = False
        self.started_at: float | None = None

    def play(self, pcm: bytes) -> asyncio.Event:
        """Send ``pcm`` (s16le at ``rate``) from the next frame; the event is set once its last frame has gone out."""
        self._pending, self._played, self._starting = bytes(pcm), asyncio.Event(), True
        return self._played

    async def recv(self) -> av.AudioFrame:
        if self._start is None:
            self._start = time.monotonic()
        wait = self._start + self._pts / self.rate - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        size = self.samples * 2
        data, self._pending = self._pending[:size].ljust(size, b"\0"), self._pending[size:]
        if self._starting:
            self._starting, self.started_at = False, time.time()
        if not self._pending and self._played is not None and not self._played.is_set():
            self._played.set()
        frame = av.AudioFrame(format="s16", layout="mono", samples=self.samples)
        frame.planes[0].update(data)
        frame.sample_rate, frame.pts, frame.time_base = self.rate, self._pts, fractions.Fraction(1, self.rate)
        self._pts += self.samples
        return frame


@dataclass
class Listener:
    """The client side: a peer connection that receives audio and records every decoded frame's energy."""

    pc: RTCPeerConnection
    channel: object | None = None
    frames: list[Frame] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    keep_audio: bool = False  # keep every decoded frame's samples (first channel), for ``audio()``
    _pcm: list[np.ndarray] = field(default_factory=list)
    _reader: asyncio.Task | None = None

    @classmethod
    def create(cls, codecs: list[str] | None = None, datachannel: bool = True, prefetch: int | None = 0,
               keep_audio: bool = False, config: RTCConfiguration | None = None,
               microphone: PacedSource | None = None) -> "Listener":
        """``codecs``: offer only these (e.g. ["pcmu"]); ``prefetch``: the receiver jitter buffer's hold-back in
        frames (aiortc's default 4 adds 80 ms; 0 measures the server); ``keep_audio``: keep what was heard;
        ``config``: ICE servers and policy (default: none, every candidate); ``microphone``: talk back on it
        (the offer is then sendrecv)."""
        pc = RTCPeerConnection(config or RTCConfiguration(iceServers=[]))
        listener = cls(pc, keep_audio=keep_audio)
        transceiver = pc.addTransceiver(microphone or "audio", direction="sendrecv" if microphone else "recvonly")
        if codecs:
            caps = RTCRtpSender.getCapabilities("audio").codecs
            transceiver.setCodecPreferences(
                [c for name in codecs for c in caps if c.mimeType.lower() == f"audio/{name}"])
        if prefetch is not None:
            transceiver.receiver._RTCRtpReceiver__jitter_buffer._prefetch = prefetch

        @pc.on("track")
        def on_track(track) -> None:
            listener._reader = asyncio.ensure_future(listener._read(track))

        if datachannel:
            listener.channel = pc.createDataChannel("control")
            listener.channel.on("message", lambda m: listener.events.append(json.loads(m)))
        return listener

    async def offer(self) -> str:
        await self.pc.setLocalDescription(await self.pc.createOffer())
        return self.pc.localDescription.sdp

    async def accept(self, answer_sdp: str) -> None:
        await self.pc.setRemoteDescription(RTCSessionDescription(sdp=answer_sdp, type="answer"))

    async def _read(self, track) -> None:
        with contextlib.suppress(MediaStreamError):
            while True:
                frame = await track.recv()
                pcm = frame.to_ndarray().astype(np.float64)
                self.frames.append(Frame(time.time(), float(np.sqrt(np.mean(pcm ** 2))), frame.samples,
                                         frame.sample_rate))
                if self.keep_audio:  # packed s16: samples interleaved by channel; the first channel is enough
                    self._pcm.append(pcm.reshape(-1, len(frame.layout.channels))[:, 0].astype(np.float32) / 32768)

    def audio(self) -> tuple[np.ndarray, int]:
        """Everything heard so far (``keep_audio``), float32 mono, and its sample rate."""
        rate = self.frames[-1].rate if self.frames else 48000
        return (np.concatenate(self._pcm) if self._pcm else np.zeros(0, np.float32)), rate

    async def wait_for(self, predicate, timeout: float = 10.0) -> None:
        await until(predicate, timeout)

    def loud(self, since: float = 0.0) -> list[Frame]:
        return [f for f in self.frames if f.rms > SPEECH_RMS and f.at >= since]

    def gaps_in_speech(self, since: float = 0.0) -> int:
        """Silent frames between the first and the last loud frame since ``since``: stutter during speech."""
        frames = [f for f in self.frames if f.at >= since]
        loud = [i for i, f in enumerate(frames) if f.rms > SPEECH_RMS]
        if not loud:
            return 0
        return sum(1 for f in frames[loud[0]:loud[-1] + 1] if f.rms <= SPEECH_RMS)

    async def close(self) -> None:
        await self.pc.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
