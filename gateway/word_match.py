"""The client's own words on the engine's word timings, and which of them were heard (pure).

The engine speaks normalised text (engine/text.py ``punc_norm``: a capital first letter, a full stop added, quotes
dropped, ``:`` as ``,``), so the words it times are not always spelt as the client sent them. An agent that cuts its
transcript back to what was heard needs its own words: each timed word is matched, in order, to the client's next
word with the same letters and digits, and takes the client's spelling; one without a match keeps the engine's.
"""

from __future__ import annotations

import re
from typing import Any

from engine.protocol import TAG

_NOT_LETTERS = re.compile(r"[\W_]+")
LOOK_AHEAD = 4  # client words the engine may have dropped (a lone quote, a dash) before the next match


def _key(word: str) -> str:
    return _NOT_LETTERS.sub("", word).lower()


class ClientWords:
    """One utterance's text as the client sent it, piece by piece, and how far its words have been timed."""

    def __init__(self) -> None:
        self._text = ""
        self._next = 0  # the first client word not yet matched

    def add(self, text: str) -> None:
        self._text += text

    def rename(self, words: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``words`` (the engine's ``{word, start, end}``, in order) with the client's spelling where it matches."""
        tokens = TAG.sub(" ", self._text).split()
        out = []
        for word in words:
            key = _key(word["word"])
            ahead = range(self._next, min(len(tokens), self._next + LOOK_AHEAD))
            match = next((i for i in ahead if key and _key(tokens[i]) == key), None)
            if match is not None:
                self._next = match + 1
                word = {**word, "word": tokens[match]}
            out.append(word)
        return out


def heard_text(words: list[dict[str, Any]], seconds: float) -> str:
    """The words whose end was played by ``seconds`` of the utterance."""
    return " ".join(w["word"] for w in words if w["end"] <= seconds + 1e-3)
