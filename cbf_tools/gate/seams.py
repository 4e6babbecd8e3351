"""The gate's seam criterion, on what the listener receives: the candidate's ``/v1/tts`` stream as timed lines
(ndjson, each chunk's audio with its text and offset), every join between two chunks checked (pure numpy).

Per join:
- **click**: the join check's sample-to-sample step (cbf_tools/join_check.py), or a spectral-flux spike: the flux of
  the frames spanning the join above ``FLUX_RATIO`` times the level of ordinary speech, the 99th percentile of the
  flux over the utterance's own audio away from its joins and, when a baseline spoke the same text, over the
  baseline's whole-utterance audio (the higher of the two: a join may be as abrupt as the speech around it, never
  much more);
- **pause**: the silence spanning the join against the punctuation before it (``join_check.EXPECTED_PAUSE_S``);
- **offset**: each chunk's ``offset`` against the audio that arrived before it.
"""

from __future__ import annotations

import base64
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from cbf_tools import join_check

FLUX_HOP_S = 0.005
FLUX_WINDOW_S = 0.020
FLUX_GUARD_S = 0.030  # frames this close to a join are left out of the utterance's own level
FLUX_RATIO = 1.0
FLUX_COMPRESSION = 100.0  # log(1 + C * magnitude): onset detection's usual compression, so quiet bins count too
OFFSET_TOLERANCE_S = 0.002


class BadStream(ValueError):
    """The timed lines do not make a whole utterance."""


@dataclass(frozen=True)
class Received:
    """One utterance as the listener got it."""

    audio: np.ndarray  # float mono, full scale 1
    chunk_samples: list[int]
    chunk_texts: list[str]
    offset_error_s: float  # the largest gap between a chunk's offset and the audio received before it


@dataclass(frozen=True)
class Join:
    word: str  # the last word before the join
    after: str  # "sentence", "clause" or "none"
    pause_s: float
    pause_fits: bool
    step: float  # the sample-to-sample jump at the join, full scale 1
    step_ratio: float  # that jump over the largest step near it (99th percentile)
    step_click: bool
    flux: float  # the spectral flux of the frames spanning the join
    flux_level: float  # ordinary speech's flux (see the module's docstring)
    flux_click: bool

    @property
    def click(self) -> bool:
        return self.step_click or self.flux_click

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "click": self.click}


def received(lines: list[dict[str, Any]], rate: int) -> Received:
    """The utterance in ``POST /v1/tts`` ndjson lines (PCM s16le at ``rate``); raises ``BadStream``."""
    try:
        return _received(lines, rate)
    except (KeyError, TypeError, ValueError) as exc:  # binascii.Error is a ValueError
        raise BadStream(f"a line is not what /v1/tts sends: {type(exc).__name__}: {exc}") from None


def _received(lines: list[dict[str, Any]], rate: int) -> Received:
    pieces: list[bytes] = []
    texts: list[str] = []
    offset_error, heard = 0.0, 0
    for line in lines:
        kind = line.get("type")
        if kind == "chunk":
            offset_error = max(offset_error, abs(float(line["offset"]) - heard / rate))
            pieces.append(base64.b64decode(line["audio"]))
            texts.append(str(line["text"]))
        elif kind == "audio" and pieces:  # what the encoder held back belongs to the last chunk
            pieces[-1] += base64.b64decode(line["audio"])
        elif kind == "done":
            break
        heard = sum(len(p) for p in pieces) // 2
    else:
        raise BadStream("the stream ended without its done line")
    if not pieces:
        raise BadStream("the stream carried no chunk")
    samples = [len(p) // 2 for p in pieces]
    audio = np.frombuffer(b"".join(p[: n * 2] for p, n in zip(pieces, samples)), dtype="<i2") / 32768.0
    return Received(audio, samples, texts, offset_error)


def spectral_flux(audio: np.ndarray, rate: int) -> np.ndarray:
    """Positive log-spectral flux per hop: element ``t`` is the rise from frame ``t - 1`` to frame ``t`` (0 for the
    first), averaged over frequency bins; frame ``t`` covers samples ``[t * hop, t * hop + window)``."""
    hop, window = round(FLUX_HOP_S * rate), round(FLUX_WINDOW_S * rate)
    audio = np.asarray(audio, dtype=np.float64)
    if audio.size < window:
        return np.zeros(0)
    frames = np.lib.stride_tricks.sliding_window_view(audio, window)[::hop]
    spectra = np.log1p(FLUX_COMPRESSION * np.abs(np.fft.rfft(frames * np.hanning(window), axis=1)))
    rise = np.maximum(np.diff(spectra, axis=0), 0.0).mean(axis=1)
    return np.concatenate([[0.0], rise])


def speech_level(flux: np.ndarray, away_from: list[int], rate: int) -> float:
    """The 99th percentile of ``flux`` over frames farther than ``FLUX_GUARD_S`` from every sample in ``away_from``."""
    if flux.size == 0:
        return 0.0
    hop = round(FLUX_HOP_S * rate)
    starts = np.arange(flux.size) * hop
    keep = np.ones(flux.size, dtype=bool)
    guard = round(FLUX_GUARD_S * rate) + round(FLUX_WINDOW_S * rate)
    for position in away_from:
        keep &= np.abs(starts - position) > guard
    return float(np.percentile(flux[keep] if keep.any() else flux, 99))


def _flux_at(flux: np.ndarray, position: int, rate: int) -> float:
    """The highest flux of the frames whose window holds ``position`` (and the one after, whose rise it causes)."""
    hop, window = round(FLUX_HOP_S * rate), round(FLUX_WINDOW_S * rate)
    first = max(0, (position - window) // hop + 1)
    last = min(flux.size - 1, position // hop + 1)
    return float(flux[first:last + 1].max()) if first <= last else 0.0


def joins(utterance: Received, rate: int, baseline_audio: np.ndarray | None = None) -> list[Join]:
    """Every join of ``utterance``; ``baseline_audio``: the baseline's whole-utterance audio of the same text."""
    found = join_check.seams(utterance.audio, rate, utterance.chunk_samples, utterance.chunk_texts)
    positions = [int(p) for p in np.cumsum(utterance.chunk_samples)[:-1]]
    flux = spectral_flux(utterance.audio, rate)
    level = speech_level(flux, positions, rate)
    if baseline_audio is not None and baseline_audio.size:
        level = max(level, speech_level(spectral_flux(baseline_audio, rate), [], rate))
    result = []
    for seam, position in zip(found, positions):
        at = _flux_at(flux, position, rate)
        result.append(Join(seam.word, seam.after, seam.pause_s, seam.pause_fits, seam.step, seam.ratio, seam.click,
                           at, level, at > FLUX_RATIO * level))
    return result
