"""The join check of ``bench engine``: at every seam between two chunks of an utterance, the pause against the
punctuation it follows, and whether the join clicks. Pure numpy, on the audio as the worker delivered it.

A pause is the silent stretch spanning the seam: 5 ms frames counted outwards from the seam itself on both sides
(so a pause wholly inside either chunk counts, wherever the seam falls), each more than ``SILENCE_DB`` below the
utterance's loudest frame, or below ``FLOOR_DBFS``. A click is a sample-to-sample step at the seam that stands out from the signal around it:
above ``CLICK_STEP`` of full scale and ``CLICK_RATIO`` times the largest step (99th percentile) within 10 ms of it.
Independently generated chunks cut without fades, or with a DC offset, click; faded joins do not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FRAME_S = 0.005
SILENCE_DB = 40.0
FLOOR_DBFS = -55.0
SEARCH_S = 2.0  # the farthest from the seam a pause is followed
CLICK_STEP = 0.02
CLICK_RATIO = 3.0
CLICK_WINDOW_S = 0.010
# What a listener expects after each kind of ending, seconds: a sentence end pauses, a comma less, a cut inside a
# sentence hardly at all.
EXPECTED_PAUSE_S = {"sentence": (0.15, 1.2), "clause": (0.06, 0.8), "none": (0.0, 0.3)}


@dataclass(frozen=True)
class Seam:
    word: str  # the last word before it
    after: str  # the punctuation the chunk before it ends with: "sentence", "clause" or "none"
    pause_s: float
    step: float  # the jump at the seam, full scale 1
    ratio: float  # that jump over the largest step near it (99th percentile)

    @property
    def click(self) -> bool:
        return self.step > CLICK_STEP and self.ratio > CLICK_RATIO

    @property
    def pause_fits(self) -> bool:
        low, high = EXPECTED_PAUSE_S[self.after]
        return low <= self.pause_s <= high


def ending(text: str) -> str:
    """The punctuation a chunk's (normalised) text ends with, as a kind of pause."""
    tail = text.rstrip().rstrip("'\")]”’")
    if tail.endswith((".", "!", "?")):
        return "sentence"
    if tail.endswith((",", ";", ":", "-", "…")):
        return "clause"
    return "none"


def seams(audio: np.ndarray, rate: int, chunk_samples: list[int], chunk_texts: list[str]) -> list[Seam]:
    """Every join of an utterance: ``audio`` float mono, the chunks' lengths in samples and their texts in order."""
    audio = np.asarray(audio, dtype=np.float64).reshape(-1)
    frame = max(1, round(FRAME_S * rate))
    level = _frame_db(audio, frame)
    quiet_db = max(level.max() - SILENCE_DB, FLOOR_DBFS) if level.size else 0.0
    found = []
    for position, text in zip(np.cumsum(chunk_samples)[:-1], chunk_texts):
        step, ratio = _step(audio, int(position), rate)
        pause = _pause(audio, int(position), frame, quiet_db, round(SEARCH_S * rate / frame))
        found.append(Seam((text.split() or [""])[-1], ending(text), pause * frame / rate, step, ratio))
    return found


def summary(found: list[Seam]) -> str:
    """One line for an utterance's joins."""
    if not found:
        return "joins: none (one chunk)"
    parts = [f"{s.word!r} ({s.after}) {s.pause_s * 1000:.0f} ms{'' if s.pause_fits else ' (off)'}"
             f"{' CLICK' if s.click else ''}" for s in found]
    clicks = sum(s.click for s in found)
    return f"joins: {len(found)}, clicks {clicks}, pause after: " + ", ".join(parts)


def _frame_db(audio: np.ndarray, frame: int) -> np.ndarray:
    n = audio.size // frame
    if n == 0:
        return np.zeros(0)
    return 10 * np.log10(np.mean(audio[: n * frame].reshape(n, frame) ** 2, axis=1) + 1e-20)


def _pause(audio: np.ndarray, position: int, frame: int, quiet_db: float, reach: int) -> int:
    """Frames of silence spanning the seam at sample ``position``: quiet frames ending at it plus those starting at
    it, each side at most ``reach``."""
    def quiet(start: int) -> bool:
        piece = audio[start:start + frame]
        return piece.size == frame and 10 * np.log10(np.mean(piece ** 2) + 1e-20) < quiet_db

    left = 0
    while left < reach and position - (left + 1) * frame >= 0 and quiet(position - (left + 1) * frame):
        left += 1
    right = 0
    while right < reach and quiet(position + right * frame):
        right += 1
    return left + right


def _step(audio: np.ndarray, position: int, rate: int) -> tuple[float, float]:
    if not 0 < position < audio.size:
        return 0.0, 0.0
    step = abs(audio[position] - audio[position - 1])
    span = round(CLICK_WINDOW_S * rate)
    around = np.abs(np.diff(audio[max(0, position - span): position + span]))
    seam_at = position - max(0, position - span) - 1  # the seam's own step within ``around``
    near = np.delete(around, seam_at) if 0 <= seam_at < around.size else around
    typical = float(np.percentile(near, 99)) if near.size else 0.0
    return float(step), float(step / max(typical, 1e-4))
