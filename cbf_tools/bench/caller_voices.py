"""What a simulated phone caller sends, for ``bench barge-in`` and ``bench soak``: a recorded clip from its speech
onset, synthetic room noise, the gateway's own voice coming back as echo, or both through a phone line's model
(``LineVoice``). Each is a ``Voice`` (cbf_tools/peers/phone_callers.py): the 20 ms frame the caller sends at a given
moment, on its stack's wire (``WIRE``; the echo and the line: mu-law, Twilio's).

The clip is the deploy gate's synthetic speech (cbf_tools/gate/references/high.ogg). The room noise is synthesised
(pink and brown noise with a mains hum), not recorded: a stand-in for an office or a car at rest.
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np

from cbf_tools.bench import line
from cbf_tools.peers.phone_callers import FRAME_S, PlayingStack, Voice
from gateway.audio import g711_decode, g711_encode

CLIP = Path(__file__).resolve().parent.parent / "gate" / "references" / "high.ogg"
RATE = 8000
FRAME = round(RATE * FRAME_S)  # samples per caller frame at RATE
WIRE = {"pcmu": (8000, "pcm_mulaw"), "pcma": (8000, "pcm_alaw"), "slin": (8000, None), "slin16": (16000, None),
        "l16-8000": (8000, None), "l16-16000": (16000, None)}  # codec: (rate, G.711)
ONSET_DBFS = -35.0  # the clip's speech starts at its first 20 ms frame louder than this
NOISE_LOOP_S = 10.0  # room noise is made circular (FFT-shaped) and this long, then looped
HUM_DB = -12.0  # the mains hum's level beside the noise's


def dbfs(pcm: np.ndarray) -> float:
    """RMS level of s16 samples in dB below full scale (-inf for digital silence)."""
    rms = float(np.sqrt(np.mean(np.square(pcm / 32768.0)))) if pcm.size else 0.0
    return 20 * np.log10(rms) if rms > 0 else float("-inf")


def voiced_span_s(frames: list[bytes], rate: int, floor_dbfs: float = -40) -> float:
    """Seconds of s16 audio from the first frame louder than ``floor_dbfs`` to the end of the last: how much of an
    utterance a caller was sent, counted in audio rather than in arrival times (which a busy machine stretches)."""
    voiced = [n for n, frame in enumerate(frames) if dbfs(np.frombuffer(frame, "<i2")) > floor_dbfs]
    return sum(len(frame) for frame in frames[voiced[0]:voiced[-1] + 1]) / (2 * rate) if voiced else 0.0


def mulaw_level(frame: bytes) -> float:
    """dBFS of a mu-law frame."""
    return dbfs(g711_decode(frame, "pcm_mulaw"))


def clip_pcm(rate: int = RATE, path: Path = CLIP) -> np.ndarray:
    """The clip as s16 mono at ``rate``, from its speech onset: its leading silence trimmed, so its first sample is
    t0."""
    resampler = av.AudioResampler(format="s16", layout="mono", rate=rate)
    with av.open(str(path)) as container:
        pcm = np.concatenate([out.to_ndarray().reshape(-1) for frame in container.decode(audio=0)
                              for out in resampler.resample(frame)])
    size = round(rate * FRAME_S)
    onset = next((i for i in range(0, pcm.size - size, size) if dbfs(pcm[i:i + size]) > ONSET_DBFS), 0)
    return pcm[onset:]


def wire_frames(pcm: np.ndarray, codec: str = "pcmu", frame_s: float = FRAME_S) -> list[bytes]:
    """s16 samples at ``codec``'s rate (``WIRE``) as its frames of ``frame_s`` (the last one padded with silence)."""
    rate, g711 = WIRE[codec]
    size = round(rate * frame_s)
    data = np.concatenate([pcm, np.zeros(-pcm.size % size, dtype=pcm.dtype)]).astype("<i2").tobytes()
    if g711 is not None:
        data = g711_encode(data, g711)
    step = size if g711 is not None else 2 * size
    return [data[i:i + step] for i in range(0, len(data), step)]


def room_noise(level_dbfs: float, hum_hz: float, rng: np.random.Generator) -> np.ndarray:
    """``NOISE_LOOP_S`` of synthetic room noise at ``level_dbfs`` RMS: pink and brown noise (shaped in the frequency
    domain, so it loops without a seam) and a hum at ``hum_hz`` with two harmonics, as 8 kHz s16."""
    n = round(NOISE_LOOP_S * RATE)
    freqs = np.fft.rfftfreq(n, 1 / RATE)
    freqs[0] = freqs[1]

    def shaped(power: float) -> np.ndarray:
        white = rng.normal(size=freqs.size) + 1j * rng.normal(size=freqs.size)
        noise = np.fft.irfft(white / freqs ** power, n)
        return noise / np.sqrt(np.mean(noise ** 2))

    t = np.arange(n) / RATE
    hum = sum(a * np.sin(2 * np.pi * k * hum_hz * t) for k, a in ((1, 1.0), (2, 0.5), (3, 0.3)))
    hum *= 10 ** (HUM_DB / 20) / np.sqrt(np.mean(hum ** 2))
    mix = shaped(0.5) + 0.5 * shaped(1.0) + hum
    mix *= 10 ** (level_dbfs / 20) * 32768 / np.sqrt(np.mean(mix ** 2))
    return np.clip(mix, -32768, 32767).astype(np.int16)


class Speech:
    """The clip's frames, from the first frame sent at or after ``starts_at``; ``onset`` is when that one went."""

    def __init__(self, frames: list[bytes], starts_at: float) -> None:
        self.frames, self.starts_at = frames, starts_at
        self.onset: float | None = None
        self._next = 0

    def __call__(self, at: float) -> bytes | None:
        if at < self.starts_at or self._next >= len(self.frames):
            return None
        if self.onset is None:
            self.onset = at
        self._next += 1
        return self.frames[self._next - 1]

    @property
    def said(self) -> bool:
        """Every frame has gone."""
        return self._next >= len(self.frames)


class Looped:
    """Frames over and over, from the call's start (room noise)."""

    def __init__(self, frames: list[bytes]) -> None:
        self.frames, self._next = frames, 0

    def __call__(self, at: float) -> bytes:
        self._next += 1
        return self.frames[(self._next - 1) % len(self.frames)]


class Metered:
    """A mu-law voice, and how loud what it said was over its frames that were not digital silence."""

    def __init__(self, voice: Voice) -> None:
        self.voice = voice
        self._energy, self._samples = 0.0, 0

    def __call__(self, at: float) -> bytes | None:
        frame = self.voice(at)
        if frame:
            pcm = g711_decode(frame, "pcm_mulaw").astype(np.float64) / 32768
            if pcm.any():
                self._energy += float(np.sum(pcm * pcm))
                self._samples += pcm.size
        return frame

    @property
    def dbfs(self) -> float | None:
        return 10 * np.log10(self._energy / self._samples) if self._energy else None


class Echo:
    """The gateway's own voice as ``stack`` played it, ``delay_s`` later and ``gain_db`` quieter: a speakerphone, or a
    line that cancels no echo."""

    def __init__(self, stack: PlayingStack, delay_s: float, gain_db: float) -> None:
        self.stack, self.delay_s, self.gain = stack, delay_s, 10 ** (gain_db / 20)

    def __call__(self, at: float) -> bytes:
        heard = self.stack.heard_between(at - self.delay_s - FRAME_S, at - self.delay_s)
        quieter = (g711_decode(heard, "pcm_mulaw") * self.gain).round().astype("<i2")
        return g711_encode(quieter.tobytes(), "pcm_mulaw")


class LineVoice:
    """What a caller on a line (cbf_tools/bench/line.py's ``LineModel``) sends: the gateway's own voice as ``stack``
    played it, back through the line (late, quieter, band-passed, softly clipped), and over it, from the first frame
    sent at or after ``starts_at``, the caller's ``speech`` (s16 at ``RATE``, already at the level it is to have).

    The echo follows the handset's own clock: frame k holds what played ``delay_s`` before the k-th 20 ms after the
    first frame, however late the simulated stack gets round to sending it (a loaded machine's event loop), as a real
    line's echo is continuous audio; taken at each send's own time it would skip and repeat pieces."""

    def __init__(self, stack: PlayingStack, model: line.LineModel, speech: np.ndarray | None = None,
                 starts_at: float = float("inf")) -> None:
        self.stack, self.model, self.speech, self.starts_at = stack, model, speech, starts_at
        self.onset: float | None = None
        self._said = 0
        self._gain = 10 ** (model.echo_db / 20)
        self._first: float | None = None  # when the first frame went: the handset's clock starts there
        self._frames = 0

    def __call__(self, at: float) -> bytes:
        if self._first is None:
            self._first = at
        self._frames += 1
        captured = self._first + self._frames * FRAME_S  # this frame's end on the handset's clock
        half = (line.TAPS - 1) // 2
        end = captured - self.model.delay_s + half / RATE
        heard = g711_decode(self.stack.heard_between(end - FRAME_S - 2 * half / RATE, end), "pcm_mulaw")
        echo = line.CLIP_AT * np.tanh(np.convolve(heard / 32768 * self._gain, line.BAND_PASS, "valid")[-FRAME:]
                                      / line.CLIP_AT)
        if self.speech is not None and at >= self.starts_at and self._said < self.speech.size:
            if self.onset is None:
                self.onset = at
            piece = self.speech[self._said:self._said + FRAME] / 32768
            echo[:piece.size] += piece
            self._said += FRAME
        return g711_encode(line.to_s16(echo).tobytes(), "pcm_mulaw")
