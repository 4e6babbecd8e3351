"""A listening aiortc peer (the client side): offers to receive audio (and a data channel), decodes what arrives
and records each decoded frame's arrival time and energy; it may talk back on a ``Microphone``. Used by ``bench
gateway`` and the WebRTC tests."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field

import av
import numpy as np
from aiortc import RTCConfiguration, RTCPeerConnection, RTCRtpSender, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

SPEECH_RMS = 300.0  # a decoded 20 ms frame louder than this carries audio


@dataclass
class Frame:
    at: float  # time.time() when the decoded frame came out of the receiver
    rms: float
    samples: int
    rate: int


class Microphone(MediaStreamTrack):
    """The peer's own voice: silence until ``say(samples)`` (s16 mono at 48 kHz), paced on the wall clock in 20 ms
    frames as a browser's microphone is. ``said_at``: when the last ``say`` began going out."""

    kind = "audio"
    RATE, FRAME = 48000, 960

    def __init__(self) -> None:
        super().__init__()
        self._queued = np.zeros(0, dtype=np.int16)
        self._pts = 0
        self._start: float | None = None
        self.said_at: float | None = None
        self._pending_say = False

    def say(self, samples: np.ndarray) -> None:
        self._queued = np.concatenate([self._queued, samples.astype(np.int16)])
        self._pending_say = True

    async def recv(self) -> av.AudioFrame:
        if self._start is None:
            self._start = time.monotonic()
        wait = self._start + self._pts / self.RATE - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        chunk, self._queued = self._queued[:self.FRAME], self._queued[self.FRAME:]
        if self._pending_say and chunk.size:
            self._pending_say, self.said_at = False, time.time()
        frame = av.AudioFrame.from_ndarray(np.pad(chunk, (0, self.FRAME - chunk.size)).reshape(1, -1),
                                           format="s16", layout="mono")
        frame.sample_rate, frame.pts = self.RATE, self._pts
        self._pts += self.FRAME
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
               microphone: Microphone | None = None) -> "Listener":
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
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError("condition not met in time")
            await asyncio.sleep(0.01)

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
