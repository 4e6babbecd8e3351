"""Clean joins between independently generated chunks of one utterance (float32 numpy).

Each chunk is generated cold, so its edges and level are arbitrary. ``Joiner.process`` makes a chunk ready to play
right after the previous one: trim its silent edges, put back a pause that fits the punctuation it follows, fade the
speech edges so nothing clicks, and bring its speech loudness to a common target without jumps or clipping.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np
from scipy.ndimage import minimum_filter1d, uniform_filter1d

from engine.word_timing import Placement


def _default_pauses() -> dict[str | None, float]:
    # "hard" is a cut with no natural boundary; "end" is the end of text the client flushed (a new thought follows).
    return {None: 0.0, "hard": 0.0, "inside": 0.02, "word": 0.03, "phrase": 0.06, "clause": 0.12, "sentence": 0.25,
            "end": 0.25}


@dataclass(frozen=True)
class JoinConfig:
    pauses: dict[str | None, float] = field(default_factory=_default_pauses)  # seconds, by previous boundary
    frame: float = 0.010  # analysis frame for trimming and loudness, seconds
    silence_db: float = 45.0  # frames this far below the loudest frame are silence at the edges
    floor_db: float = -60.0  # frames quieter than this (dBFS) are always silence
    keep_before: float = 0.010  # seconds kept before the first speech frame
    keep_after: float = 0.040  # seconds kept after the last speech frame (the decay of the last sound)
    fade_in: float = 0.004
    fade_out: float = 0.008
    speech_db: float = 30.0  # frames within this many dB of the loudest count as active speech for loudness
    target_rms_db: float = -20.0  # active-speech RMS every chunk is brought to, dBFS
    max_gain_db: float = 24.0  # the most a chunk is ever amplified or attenuated
    max_step_db: float = 12.0  # the most the gain moves from one chunk to the next
    full_confidence_s: float = 1.0  # chunks with less active speech than this move the gain proportionally less
    ceiling: float = 0.89  # peak limiter ceiling (-1 dBFS)
    limiter_window: float = 0.005  # seconds over which the limiter's gain is held and smoothed


class Joiner:
    """One per utterance: it remembers the gain it gave the previous chunk."""

    def __init__(self, config: JoinConfig | None = None) -> None:
        self.config = config or JoinConfig()
        self._gain_db: float | None = None
        self.placement: Placement | None = None  # how ``process`` moved the last chunk (None: nothing audible)

    def process(self, wav: np.ndarray, sample_rate: int, previous_boundary: str | Enum | None,
                pause_s: float | None = None) -> np.ndarray:
        """Return the chunk trimmed, preceded by its pause, faded, levelled and limited (float32).

        ``previous_boundary`` is how the previous chunk's text ended: a name such as "sentence", or an enum member
        whose name is one (``engine.text.BoundaryKind``), or None for the first chunk. ``pause_s``: the pause the
        text asked for before this chunk (an SSML break), instead of the boundary's.
        """
        cfg = self.config
        name = previous_boundary.name.lower() if isinstance(previous_boundary, Enum) else previous_boundary
        if name not in cfg.pauses:
            raise ValueError(f"unknown boundary {previous_boundary!r}; expected one of {sorted(map(str, cfg.pauses))}")
        seconds = cfg.pauses[name] if pause_s is None else pause_s
        pause = np.zeros(int(round(seconds * sample_rate)), dtype=np.float32)
        wav = np.nan_to_num(np.asarray(wav, dtype=np.float32).reshape(-1))
        frame = max(1, int(round(cfg.frame * sample_rate)))
        level_db = _frame_db(wav, frame)
        self.placement = None
        if level_db.size == 0 or level_db.max() < cfg.floor_db:
            return pause  # nothing audible: keep only the rhythm
        loud = level_db > max(level_db.max() - cfg.silence_db, cfg.floor_db)
        first, last = np.flatnonzero(loud)[[0, -1]]
        start = max(0, first * frame - int(cfg.keep_before * sample_rate))
        stop = min(wav.size, (last + 1) * frame + int(cfg.keep_after * sample_rate))
        shift = (pause.size - start) / sample_rate
        self.placement = Placement(shift, first * frame / sample_rate + shift,
                                   min(stop, (last + 1) * frame) / sample_rate + shift)
        speech = wav[start:stop] * self._next_gain(level_db, frame, sample_rate)
        speech = _limit(speech, cfg.ceiling, max(1, int(cfg.limiter_window * sample_rate)))
        _fade(speech, int(cfg.fade_in * sample_rate), int(cfg.fade_out * sample_rate))
        return np.concatenate([pause, speech]).astype(np.float32, copy=False)

    def _next_gain(self, level_db: np.ndarray, frame: int, sample_rate: int) -> float:
        """Linear gain towards the target for this chunk, moved only partly for short or outlying chunks."""
        cfg = self.config
        active = level_db[level_db > level_db.max() - cfg.speech_db]
        active_rms_db = 10 * np.log10(np.mean(10 ** (active / 10)))
        wanted = float(np.clip(cfg.target_rms_db - active_rms_db, -cfg.max_gain_db, cfg.max_gain_db))
        if self._gain_db is None:
            gain = wanted
        else:
            confidence = min(1.0, active.size * frame / sample_rate / cfg.full_confidence_s)
            step = float(np.clip((wanted - self._gain_db) * confidence, -cfg.max_step_db, cfg.max_step_db))
            gain = self._gain_db + step
        self._gain_db = gain
        return 10 ** (gain / 20)


def _frame_db(wav: np.ndarray, frame: int) -> np.ndarray:
    """Mean-square level of consecutive frames in dBFS (the last partial frame included)."""
    n = -(-wav.size // frame)
    padded = np.zeros(n * frame, dtype=np.float64)
    padded[: wav.size] = wav
    return 10 * np.log10(np.mean(padded.reshape(n, frame) ** 2, axis=1) + 1e-20)


def _limit(wav: np.ndarray, ceiling: float, window: int) -> np.ndarray:
    """A look-around peak limiter: the gain at each sample is at most what every sample near it needs, smoothed.

    Holding the minimum over ``2 * window`` and averaging over ``window`` keeps the gain at every sample at or below
    the gain that sample needs, so nothing exceeds ``ceiling``, and the gain moves smoothly (no added clicks).
    """
    peak = np.abs(wav)
    if peak.size == 0 or peak.max() <= ceiling:
        return wav
    needed = np.minimum(1.0, ceiling / np.maximum(peak, 1e-12))
    held = minimum_filter1d(needed, size=2 * window + 1, mode="nearest")
    smooth = uniform_filter1d(held, size=window, mode="nearest")
    return np.clip(wav * smooth, -ceiling, ceiling).astype(np.float32)


def _fade(wav: np.ndarray, fade_in: int, fade_out: int) -> None:
    """Raised-cosine fades at both ends, in place."""
    if (n := min(fade_in, wav.size)) > 0:
        wav[:n] *= _ramp(n)
    if (n := min(fade_out, wav.size)) > 0:
        wav[-n:] *= _ramp(n)[::-1]


def _ramp(n: int) -> np.ndarray:
    return (0.5 - 0.5 * np.cos(np.pi * (np.arange(n) + 0.5) / n)).astype(np.float32)


def to_int16(wav: np.ndarray) -> bytes:
    """float32 in [-1, 1] to little-endian signed 16-bit PCM bytes (clipped, rounded)."""
    scaled = np.clip(np.nan_to_num(np.asarray(wav, dtype=np.float32)), -1.0, 1.0) * 32767.0
    return np.round(scaled).astype("<i2").tobytes()
