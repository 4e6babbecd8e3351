"""Word timings of one chunk (pure): where each spoken word starts and ends in the chunk's joined audio.

An engine that knows where its words fall (eSpeak reports each word's position in its output) gives *exact* starts;
otherwise the words are spread over the chunk's speech by syllable count, an *estimate* whose edges are exact: it
starts where the speech starts and ends where it ends, after the joins trimmed the silence and added the pause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.protocol import TAG
from engine.text import strip_tags

_WORD = re.compile(r"\S+")
_VOWELS = re.compile(r"[aeiouy]+")
_DIGIT = re.compile(r"\d")

EXACT, ESTIMATED = "exact", "estimated"


@dataclass(frozen=True)
class Placement:
    """How the joins moved a chunk: raw time ``t`` is at ``t + shift`` in the joined chunk, whose speech runs from
    ``speech_start`` to ``speech_end`` (seconds)."""

    shift: float
    speech_start: float
    speech_end: float


@dataclass(frozen=True)
class Word:
    word: str
    start: float  # seconds
    end: float

    def later(self, seconds: float) -> "Word":
        return Word(self.word, round(self.start + seconds, 3), round(self.end + seconds, 3))

    def as_json(self) -> dict[str, float | str]:
        return {"word": self.word, "start": self.start, "end": self.end}


def spoken_words(text: str) -> list[tuple[str, int]]:
    """The words an engine speaks for ``text`` (tags dropped), each with its character index in ``strip_tags(text)``,
    which is what the engine is given."""
    return [(m.group(), m.start()) for m in _WORD.finditer(strip_tags(text))]


def syllables(word: str) -> int:
    """A rough syllable count: vowel groups, a digit counting as one; at least one."""
    lower = word.lower()
    return max(1, len(_VOWELS.findall(lower)) + len(_DIGIT.findall(lower)))


def chunk_words(text: str, placement: Placement | None, starts: list[tuple[int, float]] | None,
                duration: float) -> tuple[list[Word], str]:
    """The words of a chunk with their times in seconds of the chunk, and ``"exact"`` or ``"estimated"``.

    ``starts``: the engine's ``(character index in the spoken text, raw seconds)`` of each word it placed, or None.
    The chunk is exact when every word was placed; words the engine did not place (eSpeak runs some short words
    together: "in the") are spread by syllables between their placed neighbours, and the chunk is estimated. A word
    ends where the next one starts, the last where the speech ends. ``placement`` None: nothing audible (every word
    then sits at the chunk's end).
    """
    words = spoken_words(text)
    if not words:
        return [], ESTIMATED
    if placement is None:
        return [Word(word, round(duration, 3), round(duration, 3)) for word, _ in words], ESTIMATED
    start, end = max(0.0, placement.speech_start), min(placement.speech_end, duration)
    placed = [_placed(word, index, starts, placement, start, end) for word, index in words] if starts else []
    kind = EXACT if placed and None not in placed else ESTIMATED
    bounds = _filled([w for w, _ in words], placed or [None] * len(words), start, end)
    return [Word(word, round(bounds[i], 3), round(max(bounds[i], bounds[i + 1]), 3))
            for i, (word, _) in enumerate(words)], kind


def _placed(word: str, index: int, starts: list[tuple[int, float]], placement: Placement, start: float,
            end: float) -> float | None:
    """The word's start from the engine's report (the first report inside the word) in the joined chunk."""
    inside = [t for pos, t in starts if index <= pos < index + len(word)]
    return min(max(inside[0] + placement.shift, start), end) if inside else None


def _filled(words: list[str], placed: list[float | None], start: float, end: float) -> list[float]:
    """Word edges (each word's start, then ``end``): the placed ones kept (never backwards), the others spread by
    syllables between the placed edges around them (the first word starts with the speech)."""
    known: list[float | None] = [start if placed[0] is None else placed[0], *placed[1:], end]
    for i in range(1, len(known)):  # never backwards
        if known[i] is not None:
            known[i] = max(known[i], max(k for k in known[:i] if k is not None))
    bounds = [float(k) if k is not None else 0.0 for k in known]
    anchor = 0
    for i in range(1, len(known)):
        if known[i] is None:
            continue
        weights = [syllables(w) for w in words[anchor:i]]
        total, seen = sum(weights), 0
        for j in range(anchor + 1, i):
            seen += weights[j - anchor - 1]
            bounds[j] = bounds[anchor] + (bounds[i] - bounds[anchor]) * seen / total
        anchor = i
    return bounds


def word_offsets(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` in ``text`` of each word ``spoken_words`` finds for it (tags are not words)."""
    blanked = TAG.sub(lambda m: " " * len(m.group()), text)
    return [m.span() for m in _WORD.finditer(blanked)]
