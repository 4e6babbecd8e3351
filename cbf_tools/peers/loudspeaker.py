"""A WebRTC peer on a loudspeaker: what it receives from the gateway plays, and its microphone sends it back as echo
(cbf_tools/bench/line.py's ``LineModel``: ``echo_db`` down, ``delay_ms`` late, band-passed 300-3400 Hz, softly
clipped), with, on ``talk``, a caller's recorded voice over it. A browser with its own echo cancelling off, next to
its speaker, as the gateway hears it. Used by the WebRTC echo tests and ``bench barge-in --webrtc-line``.

The echo follows the peer's own playout clock, as a browser's does: the received stream (decoded, at ``RATE``)
plays from the first frame's arrival on, sample after sample (a frame that comes after its time plays as silence,
an underrun), and the microphone's frame k, captured at the k-th 20 ms of its own clock, holds what played
``delay_ms`` before. So ``delay_ms`` is the peer's whole share of the round trip (its jitter buffer, its device,
the air); the network and the gateway's own receive buffer come on top.
"""

from __future__ import annotations

import asyncio
import contextlib
import fractions
import time

import av
import numpy as np
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

from cbf_tools.bench import line
from cbf_tools.peers.polling import within

RATE = line.RATE  # the line's rate: what plays is taken to 8 kHz, the microphone sends 8 kHz (Opus resamples it)
FRAME = RATE // 50  # 20 ms


class Loudspeaker(MediaStreamTrack):
    """The peer's microphone (an outbound audio track): the echo of what ``hear`` was given, and a caller's voice
    from ``talk`` on. ``heard``: what played so far (s16 at ``RATE``); ``onset``: when the voice began going out
    (time.monotonic())."""

    kind = "audio"

    def __init__(self, model: line.LineModel) -> None:
        super().__init__()
        self.model = model
        self._gain = 10 ** (model.echo_db / 20)
        self._heard: list[np.ndarray] = []
        self._heard_size = 0
        self._played_from: float | None = None  # monotonic s of the first sample received: the playout clock
        self._start: float | None = None  # the microphone's clock
        self._frames = 0
        self._speech: np.ndarray | None = None
        self._said = 0
        self.onset: float | None = None
        self._reader: asyncio.Task[None] | None = None

    # What plays.

    def hear(self, track: MediaStreamTrack) -> None:
        """Play ``track`` (the gateway's): read and keep it from now on."""
        self._reader = asyncio.ensure_future(self._read(track))

    async def _read(self, track: MediaStreamTrack) -> None:
        resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)
        with contextlib.suppress(MediaStreamError):
            while True:
                frame = await track.recv()
                if self._played_from is None:
                    self._played_from = time.monotonic()
                for out in resampler.resample(frame):
                    pcm = out.to_ndarray().reshape(-1).astype(np.int16)
                    self._heard.append(pcm)
                    self._heard_size += pcm.size

    @property
    def heard(self) -> np.ndarray:
        if len(self._heard) > 1:
            self._heard = [np.concatenate(self._heard)]
        return self._heard[0] if self._heard else np.zeros(0, np.int16)

    def heard_dbfs(self) -> float:
        """The gateway's speech level as played here (over its voiced 20 ms frames)."""
        return line.active_dbfs(self.heard)

    def loud_seconds(self, floor_dbfs: float = -45.0) -> float:
        """Seconds of what played that were speech (20 ms frames louder than ``floor_dbfs``)."""
        pcm = self.heard
        frames = pcm[:pcm.size // FRAME * FRAME].astype(np.float64).reshape(-1, FRAME) / 32768
        return float(np.sum(np.mean(frames ** 2, axis=1) > 10 ** (floor_dbfs / 10))) * FRAME / RATE

    # What the microphone sends.

    def talk(self, speech: np.ndarray, below_db: float) -> None:
        """From the next frame, a caller's voice (s16 at ``RATE``) ``below_db`` under the gateway's speech level as it
        played here so far, band-passed as the line does, over the echo."""
        gain = 10 ** ((self.heard_dbfs() - below_db - line.active_dbfs(speech)) / 20)
        self._speech, self._said, self.onset = line.through_line(speech.astype(np.float64) / 32768 * gain), 0, None

    @property
    def said(self) -> bool:
        return self._speech is not None and self._said >= self._speech.size

    def _echo(self, captured: float) -> np.ndarray:
        """The echo in the 20 ms that ends at ``captured`` (monotonic s): what played ``delay`` before, through the
        line."""
        out = np.zeros(FRAME)
        if self._played_from is None:
            return out
        half = (line.TAPS - 1) // 2
        end = round((captured - self.model.delay_s - self._played_from) * RATE) + half
        first = end - FRAME - 2 * half
        heard = self.heard
        lo, hi = max(0, first), min(end, heard.size)
        if hi <= lo:
            return out
        piece = np.zeros(end - first)
        piece[lo - first:hi - first] = heard[lo:hi] / 32768 * self._gain
        return line.CLIP_AT * np.tanh(np.convolve(piece, line.BAND_PASS, "valid")[-FRAME:] / line.CLIP_AT)

    async def recv(self) -> av.AudioFrame:
        if self.readyState != "live":
            raise MediaStreamError
        if self._start is None:
            self._start = time.monotonic()
        self._frames += 1
        captured = self._start + self._frames * FRAME / RATE
        wait = captured - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        mic = self._echo(captured)
        if self._speech is not None and self._said < self._speech.size:
            if self.onset is None:
                self.onset = time.monotonic()
            piece = self._speech[self._said:self._said + FRAME]
            mic[:piece.size] += piece
            self._said += FRAME
        frame = av.AudioFrame(format="s16", layout="mono", samples=FRAME)
        frame.planes[0].update(line.to_s16(mic).tobytes())
        frame.sample_rate, frame.time_base = RATE, fractions.Fraction(1, RATE)
        frame.pts = (self._frames - 1) * FRAME
        return frame

    def stop(self) -> None:
        super().stop()
        if self._reader is not None:
            self._reader.cancel()


class SpeakerPeer:
    """A peer connection whose microphone is ``speaker``: it plays what the gateway sends (``speaker.hear``) and
    talks back; the session's events from its data channel in ``events`` (with when each came, time.monotonic())."""

    def __init__(self, speaker: Loudspeaker) -> None:
        from aiortc import RTCConfiguration, RTCPeerConnection

        self.speaker = speaker
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.pc.addTransceiver(speaker, direction="sendrecv")
        self.pc.on("track", lambda track: speaker.hear(track) if track.kind == "audio" else None)
        self.events: list[dict] = []
        self.event_times: list[float] = []
        self.channel = self.pc.createDataChannel("control")
        self.channel.on("message", self._on_message)
        self.session: str | None = None

    def _on_message(self, message: str) -> None:
        import json

        self.events.append(json.loads(message))
        self.event_times.append(time.monotonic())

    async def connect(self, url: str, key: str | None = None, **body) -> dict:
        """Offer to ``url``'s gateway; returns the answer's JSON once the data channel is open and ``ready`` came."""
        import httpx
        from aiortc import RTCSessionDescription

        await self.pc.setLocalDescription(await self.pc.createOffer())
        async with httpx.AsyncClient() as http:
            reply = await http.post(url + "/v1/webrtc/offer", json={"sdp": self.pc.localDescription.sdp,
                                                                    "type": "offer", **body},
                                    headers={"Authorization": f"Bearer {key}"} if key else None, timeout=30)
        reply.raise_for_status()
        answer = reply.json()
        await self.pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type="answer"))
        if not await self.wait_for(lambda: self.channel.readyState == "open" and bool(self.events), 30):
            raise TimeoutError("the data channel did not open, or no ready came, within 30 s")
        self.session = answer["session"]
        return answer

    def send(self, message: dict) -> None:
        import json

        self.channel.send(json.dumps(message))

    def of(self, kind: str) -> list[dict]:
        return [e for e in self.events if e["type"] == kind]

    def times_of(self, kind: str) -> list[float]:
        """When each event of ``kind`` came (time.monotonic())."""
        return [at for e, at in zip(self.events, self.event_times) if e["type"] == kind]

    async def wait_for(self, predicate, timeout: float) -> bool:
        """Until ``predicate()`` holds (True) or ``timeout`` seconds have passed (False)."""
        return await within(predicate, timeout)

    async def close(self) -> None:
        self.speaker.stop()
        await self.pc.close()
