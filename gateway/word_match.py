"""The client's own words on the engine's word timings, and which of them were heard (pure).

The engine reads the client's text through its front end (engine/speech_text/: "100" is spoken "one hundred",
markdown's marks are not spoken, and punc_norm adds a capital or a full stop), and it times the words it speaks.
Each timed word carries ``span``: the client's characters it speaks for. Words whose spans overlap are one client
word here ("one" and "hundred," are "100,", from the first's start to the last's end), spelt as the client sent it,
with ``spoken`` saying what was said where it differs. A worker that sends no spans (an older one) has each timed
word matched, in order, to the client's next word with the same letters and digits instead.
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

    @property
    def text(self) -> str:
        return self._text

    def spanned(self, span: list[int] | None) -> dict[str, Any]:
        """A chunk's ``span`` and the client's text it covers, for its event (nothing for a chunk without one)."""
        if not _is_span(span, len(self._text)):
            return {}
        assert span is not None
        return {"span": span, "source": self._text[span[0]:span[1]]}

    def rename(self, words: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``words`` (the engine's ``{word, start, end, span}``, in order) as the client's words."""
        if words and all(_is_span(w.get("span"), len(self._text)) for w in words):
            return self._by_span(words)
        return self._by_letters(words)

    def _by_span(self, words: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        said: list[str] = []  # the spoken words of out[-1]
        for word in words:
            start, end = word["span"]
            if out and (end <= start or start < out[-1]["span"][1]):  # more of the same client word
                last = out[-1]
                last["span"][1] = max(last["span"][1], end)
                last["word"] = self._text[last["span"][0]:last["span"][1]]
                last["end"] = word["end"]
                said.append(word["word"])
                last["spoken"] = " ".join(said)
                continue
            said = [word["word"]]
            out.append({**word, "word": self._text[start:end] if end > start else word["word"],
                        "span": [start, end], "spoken": word["word"]})
        for word in out:
            if word["spoken"] == word["word"]:
                del word["spoken"]
        return out

    def _by_letters(self, words: list[dict[str, Any]]) -> list[dict[str, Any]]:
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


def _is_span(value: Any, length: int) -> bool:
    return (isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value)
            and 0 <= value[0] <= value[1] <= length)


def heard_text(words: list[dict[str, Any]], seconds: float) -> str:
    """The words whose end was played by ``seconds`` of the utterance."""
    return " ".join(w["word"] for w in heard_words(words, seconds))


def heard_words(words: list[dict[str, Any]], seconds: float) -> list[dict[str, Any]]:
    return [w for w in words if w["end"] <= seconds + 1e-3]


def heard_chars(words: list[dict[str, Any]], seconds: float) -> int | None:
    """How many of the client's characters were heard by ``seconds``: the end of the last heard word's span (None: no
    words, or words without spans)."""
    if not words or not all("span" in w for w in words):
        return None
    return max((w["span"][1] for w in heard_words(words, seconds)), default=0)
