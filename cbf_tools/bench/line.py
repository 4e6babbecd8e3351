"""A phone line as the caller's side of ``bench barge-in`` hears it (pure numpy): the gateway's own voice coming back
as echo (``gain_db`` down, ``delay_s`` late, band-passed 300-3400 Hz as a line and a codec do, softly clipped as a
handset's amplifier does), and a caller speaking ``caller_db`` below the gateway's speech level, from the start
(double talk) or later.

``MODELS`` are the issue's lines (issue 51): echo at -20, -12 and -6 dB, 50-250 ms late; callers 0, 10, 17 and 20 dB
below the gateway's level. Everything is s16 at 8 kHz.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RATE = 8000
BAND_HZ = (300.0, 3400.0)
TAPS = 101  # the band-pass FIR's length (odd: a whole-sample group delay of 50 samples, taken back out)
CLIP_AT = 0.5  # soft clipping: tanh with its knee at half of full scale


@dataclass(frozen=True)
class LineModel:
    name: str
    echo_db: float  # the gateway's voice back on the line, relative to what it sent
    delay_ms: float  # how late it comes back
    caller_db: float | None  # the caller's speech level below the gateway's (None: nobody speaks)
    double_talk: bool = False  # the caller speaks from the first 200 ms of the gateway's speech

    @property
    def delay_s(self) -> float:
        return self.delay_ms / 1000


MODELS = (
    LineModel("loud caller, echo -20 dB 150 ms", -20, 150, 0),
    LineModel("caller -10 dB, echo -12 dB 150 ms", -12, 150, -10),
    LineModel("caller -17 dB, echo -12 dB 150 ms", -12, 150, -17),
    LineModel("caller -20 dB, echo -12 dB 150 ms", -12, 150, -20),
    LineModel("caller -10 dB, echo -6 dB 250 ms", -6, 250, -10),
    LineModel("double talk: caller -10 dB, echo -12 dB 150 ms", -12, 150, -10, True),
    LineModel("echo alone -20 dB 50 ms", -20, 50, None),
    LineModel("echo alone -12 dB 150 ms", -12, 150, None),
    LineModel("echo alone -6 dB 250 ms", -6, 250, None),
)
TARGET_MODEL = "caller -17 dB, echo -12 dB 150 ms"  # the targets are set on this line
TARGET_ECHO_MODEL = "echo alone -12 dB 150 ms"
DOUBLE_TALK_MODEL = "double talk: caller -10 dB, echo -12 dB 150 ms"


def _band_pass() -> np.ndarray:
    """A windowed-sinc band-pass FIR for ``BAND_HZ`` at ``RATE``."""
    n = np.arange(TAPS) - (TAPS - 1) / 2
    low, high = (2 * f / RATE for f in BAND_HZ)
    taps = high * np.sinc(high * n) - low * np.sinc(low * n)
    return taps * np.hamming(TAPS)


BAND_PASS = _band_pass()


def through_line(pcm: np.ndarray) -> np.ndarray:
    """float samples (full scale 1.0) band-passed and softly clipped, with no delay of their own."""
    filtered = np.convolve(pcm, BAND_PASS)[(TAPS - 1) // 2:][:pcm.size]
    return CLIP_AT * np.tanh(filtered / CLIP_AT)


def echo_of(sent: np.ndarray, model: LineModel) -> np.ndarray:
    """The echo of ``sent`` (s16 as the gateway sent it) on ``model``'s line: float, as long as ``sent``, delayed."""
    loud = sent.astype(np.float64) / 32768 * 10 ** (model.echo_db / 20)
    delay = round(model.delay_s * RATE)
    return np.concatenate([np.zeros(delay), through_line(loud)])[:sent.size]


def active_dbfs(pcm: np.ndarray, frame: int = 160, floor_db: float = -45.0) -> float:
    """The level of s16 ``pcm`` over its 20 ms frames louder than ``floor_db`` (speech, not its pauses)."""
    frames = pcm[: pcm.size // frame * frame].astype(np.float64).reshape(-1, frame) / 32768
    power = np.mean(frames ** 2, axis=1)
    loud = power[power > 10 ** (floor_db / 10)]
    return float(10 * np.log10(np.mean(loud))) if loud.size else float("-inf")


def caller_at(caller: np.ndarray, model: LineModel, gateway_dbfs: float) -> np.ndarray:
    """The caller's s16 speech scaled to ``model.caller_db`` below ``gateway_dbfs`` (the gateway's active level) and
    band-passed as the line does (float)."""
    assert model.caller_db is not None
    gain = 10 ** ((gateway_dbfs + model.caller_db - active_dbfs(caller)) / 20)
    return through_line(caller.astype(np.float64) / 32768 * gain)


def to_s16(pcm: np.ndarray) -> np.ndarray:
    return np.clip(np.round(pcm * 32768), -32768, 32767).astype(np.int16)
