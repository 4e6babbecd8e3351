"""One utterance's text front end: the caller's text in, piece by piece; spoken text out; every spoken character's
place in the caller's text kept. Pure.

Text arrives token by token from an LLM, and a number, a URL or a markdown link can straddle two pieces. So the
front end normalises what it holds and lets go only of what no later text can change: up to a space that has at least
``LOOKAHEAD_TOKENS`` complete words after it (a rule looks at most that far past its own match: "$3" + "million"),
that is not inside a rewritten construct, and that comes before an unfinished one (``open_tail``: an unclosed code
fence or link). The rest waits for more text, a flush or the end. Streamed or whole, the spoken text is the same.
"""

from __future__ import annotations

import re
from typing import Callable

from engine.speech_text.spans import Piece, SpanMap
from engine.text import WORD_JOINER

LOOKAHEAD_TOKENS = 2
WHOLE_PHRASE_CHARS = 80  # a rewritten phrase up to this long is kept in one chunk (its words joined)
# A word with a space after it; matched only from a word's start, so a run without spaces costs its length once (not
# its square: "-" * 5000).
_COMPLETE_TOKEN = re.compile(r"(?<!\S)\S+(?=\s)")

Normalizer = Callable[[str], list[Piece]]
OpenTail = Callable[[str], "int | None"]


class FrontEnd:
    """Caller text to spoken text for one utterance; ``source`` maps spoken offsets back to the caller's."""

    def __init__(self, normalize: Normalizer, open_tail: OpenTail) -> None:
        self._normalize = normalize
        self._open_tail = open_tail
        self._held = ""  # caller text not let go of yet
        self._held_at = 0  # where it starts in the caller's text
        self._map = SpanMap([])  # what was let go of, in caller offsets

    @property
    def spoken(self) -> str:
        """Everything let go of so far."""
        return self._map.text

    @property
    def map(self) -> SpanMap:
        """What was let go of, spoken offsets to the caller's."""
        return self._map

    @property
    def pieces(self) -> list[Piece]:
        """What was let go of, as pieces of the caller's text."""
        return self._map.pieces

    def feed(self, text: str) -> str:
        """Take more caller text; the spoken text that can be let go of now (maybe "")."""
        self._held += text
        # Nothing can be let go of (so nothing is normalised again: a long unfinished thing streamed in small pieces
        # must not cost its square) while no word was completed, or while all that is held is an unfinished
        # construct (an open code fence or table row).
        if not any(c.isspace() for c in text):
            return ""
        tail = self._open_tail(self._held)
        if tail is not None and not self._held[:tail].strip():
            return ""
        pieces = self._normalize(self._held)
        cut = self._safe_cut(pieces, tail)
        return self._let_go(pieces, cut) if cut else ""

    def flush(self) -> str:
        """Let go of everything held (a flush or the end of the text: nothing more joins it)."""
        if not self._held:
            return ""
        return self._let_go(self._normalize(self._held), len(self._held))

    def source(self, start: int, end: int) -> tuple[int, int]:
        """The caller's span that spoken ``[start, end)`` (offsets in ``spoken``) speaks for."""
        return self._map.source(start, end)

    def _safe_cut(self, pieces: list[Piece], tail: int | None) -> int:
        """The last place in the held text that no later text can change the reading of (0: none); ``tail``: where
        an unfinished construct starts in it."""
        held = self._held
        limit = len(held) if tail is None else tail
        rewritten = [(p.start, p.end) for p in pieces if not p.verbatim]
        tokens = list(_COMPLETE_TOKEN.finditer(held))
        for k in range(len(tokens) - LOOKAHEAD_TOKENS, 0, -1):  # a cut after token k-1 leaves k, k+1... complete
            cut = tokens[k - 1].end()
            if cut <= limit and not any(start < cut < end for start, end in rewritten):
                return cut
        return 0

    def _let_go(self, pieces: list[Piece], cut: int) -> str:
        """The pieces before ``cut`` (a verbatim one across it split) become spoken text; the rest is held."""
        out: list[Piece] = []
        for piece in pieces:
            if piece.end <= cut and not (piece.start == piece.end == cut and cut < len(self._held)):
                out.append(piece)
            elif piece.start < cut and piece.verbatim:
                out.append(Piece(piece.start, cut, piece.text[: cut - piece.start], True))
        self._held, self._held_at = self._held[cut:], self._held_at + cut
        shifted = [p.shifted(self._held_at - cut) for p in out]
        self._map.extend(shifted)
        return "".join(joined(p) for p in shifted)


def joined(piece: Piece) -> str:
    """A rewritten phrase's words held together for the planner (engine/text.py WORD_JOINER); same length."""
    if piece.verbatim or len(piece.text) > WHOLE_PHRASE_CHARS:
        return piece.text
    inner = piece.text.strip()
    if not inner:
        return piece.text
    lead = piece.text.index(inner[0])
    return piece.text[:lead] + inner.replace(" ", WORD_JOINER) + piece.text[lead + len(inner):]
