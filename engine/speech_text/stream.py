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
# A rule looks this far back, too, for its context ("Text HELP to 72345", "starts 11/29", "Elm St."): the held text
# is read after this much of what was let go of (on its line, past any markup that opens a construct), whose pieces
# are then dropped.
CONTEXT_CHARS = 64
_CONTEXT_START = re.compile(r"(?s:.*)[\n`|<\[\]]")
WHOLE_PHRASE_CHARS = 80  # a rewritten phrase up to this long is kept in one chunk (its words joined)
# A word with a space after it; matched only from a word's start, so a run without spaces costs its length once (not
# its square: "-" * 5000).
_COMPLETE_TOKEN = re.compile(r"(?<!\S)\S+(?=\s)")
# What markdown reads otherwise at a line's start (a list item, a heading, a quote): never the start of held text,
# unless a line starts there.
_LINE_OPENER = re.compile(r"(?:[-*+>]|#{1,6})(?=\s)|>|[-*_]{3}|\d+[.)]\s")

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
        self._context = ""  # the end of what was let go of, that the held text is read after
        # The held text's pieces as the last feed read them, when nothing came since: a flush lets them go as they
        # are rather than reading the same text again (a whole text sent at once is fed, then flushed)
        self._rest: list[Piece] | None = None

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
        self._rest = None
        # Nothing can be let go of (so nothing is normalised again: a long unfinished thing streamed in small pieces
        # must not cost its square) while no word was completed, or while all that is held is an unfinished
        # construct (an open code fence or table row).
        if not any(c.isspace() for c in text):
            return ""
        tail = self._open_tail(self._held)
        if tail is not None and not self._held[:tail].strip():
            return ""
        pieces = self._read_held()
        cut = self._safe_cut(pieces, tail)
        rest = _after_cut(pieces, cut, len(self._held))
        spoken = self._let_go(pieces, cut) if cut else ""
        self._rest = rest
        return spoken

    def flush(self) -> str:
        """Let go of everything held (a flush or the end of the text: nothing more joins it)."""
        if not self._held:
            return ""
        pieces, self._rest = self._read_held() if self._rest is None else self._rest, None
        return self._let_go(pieces, len(self._held))

    def source(self, start: int, end: int) -> tuple[int, int]:
        """The caller's span that spoken ``[start, end)`` (offsets in ``spoken``) speaks for."""
        return self._map.source(start, end)

    def _read_held(self) -> list[Piece]:
        """The held text's pieces, read after its context (whose own pieces are dropped); alone where a piece would
        straddle the two."""
        context = self._context
        if context:
            pieces = self._normalize(context + self._held)
            at = len(context)
            if not any(p.start < at < p.end and not p.verbatim for p in pieces):
                return [Piece(at, p.end, p.text[at - p.start:], True).shifted(-at) if p.start < at else p.shifted(-at)
                        for p in pieces if p.end > at or (p.start == at and p.text)]
        return self._normalize(self._held)

    def _safe_cut(self, pieces: list[Piece], tail: int | None) -> int:
        """The last place in the held text that no later text can change the reading of (0: none); ``tail``: where
        an unfinished construct starts in it."""
        held = self._held
        limit = len(held) if tail is None else tail
        rewritten = [(p.start, p.end) for p in pieces if not p.verbatim]
        tokens = list(_COMPLETE_TOKEN.finditer(held))
        for k in range(len(tokens) - LOOKAHEAD_TOKENS, 0, -1):  # a cut after token k-1 leaves k, k+1... complete
            cut = tokens[k - 1].end()
            if cut <= limit and not any(start < cut < end for start, end in rewritten) and (
                    "\n" in held[tokens[k - 1].end():tokens[k].start()] or not _LINE_OPENER.match(held, tokens[k].start())):
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
        before = self._context + self._held[:cut]
        window = before[-CONTEXT_CHARS:]
        if len(before) > CONTEXT_CHARS:  # from the first whole word
            window = window[len(window.split(None, 1)[0]):] if not window[:1].isspace() else window
        opens = _CONTEXT_START.match(window)
        self._context = window[opens.end():] if opens else window
        self._held, self._held_at = self._held[cut:], self._held_at + cut
        shifted = [p.shifted(self._held_at - cut) for p in out]
        self._map.extend(shifted)
        return "".join(joined(p) for p in shifted)


def _after_cut(pieces: list[Piece], cut: int, held: int) -> list[Piece]:
    """The pieces that a cut at ``cut`` leaves held (as _let_go keeps them), in offsets from the cut."""
    rest = []
    for piece in pieces:
        if piece.end > cut and piece.start < cut:  # only a verbatim piece straddles a cut
            rest.append(Piece(0, piece.end - cut, piece.text[cut - piece.start:], True))
        elif piece.end > cut or piece.start == piece.end == cut < held:
            rest.append(piece.shifted(-cut))
    return rest


def joined(piece: Piece) -> str:
    """A rewritten phrase's words held together for the planner (engine/text.py WORD_JOINER); same length."""
    if piece.verbatim or len(piece.text) > WHOLE_PHRASE_CHARS:
        return piece.text
    inner = piece.text.strip()
    if not inner:
        return piece.text
    lead = piece.text.index(inner[0])
    return piece.text[:lead] + inner.replace(" ", WORD_JOINER) + piece.text[lead + len(inner):]
