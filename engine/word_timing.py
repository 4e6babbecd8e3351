"""Word timings of one chunk (pure): where each spoken word starts and ends in the chunk's joined audio.

An engine that knows where its words fall (eSpeak reports each word's position in its output) gives *exact* starts;
otherwise the words are spread over the chunk's speech by syllable count, an *estimate* whose edges are exact: it
starts where the speech starts and ends where it ends, after the joins trimmed the silence and added the pause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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

    ``starts``: the engine's ``(character index in the spoken text, raw seconds)`` of each word it spoke, or None.
    They are exact only when every word has one; otherwise the chunk is estimated. ``placement`` None: nothing
    audible (every word then sits at the chunk's end).
    """
    words = spoken_words(text)
    if not words:
        return [], ESTIMATED
    if placement is None:
        return [Word(word, round(duration, 3), round(duration, 3)) for word, _ in words], ESTIMATED
    end = min(placement.speech_end, duration)
    exact = _exact_starts(words, starts, placement, end) if starts else None
    if exact is not None:
        bounds, kind = exact + [end], EXACT
    else:
        bounds, kind = _estimated_bounds([w for w, _ in words], max(0.0, placement.speech_start), end), ESTIMATED
    return [Word(word, round(bounds[i], 3), round(max(bounds[i], bounds[i + 1]), 3))
            for i, (word, _) in enumerate(words)], kind


def _exact_starts(words: list[tuple[str, int]], starts: list[tuple[int, float]], placement: Placement,
                  end: float) -> list[float] | None:
    """Each word's start from the engine's report (the first report inside the word), or None if one has none."""
    out = []
    for word, index in words:
        inside = [t for pos, t in starts if index <= pos < index + len(word)]
        if not inside:
            return None
        out.append(min(max(inside[0] + placement.shift, placement.speech_start, 0.0), end))
    return [max(out[: i + 1]) for i in range(len(out))]  # never backwards


def _estimated_bounds(words: list[str], start: float, end: float) -> list[float]:
    """Word edges spreading ``start..end`` over the words in proportion to their syllables."""
    weights = [syllables(word) for word in words]
    total, seen, bounds = sum(weights), 0, [start]
    for weight in weights:
        seen += weight
        bounds.append(start + (end - start) * seen / total)
    return bounds
