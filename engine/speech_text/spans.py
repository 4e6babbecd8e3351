"""Spoken text that knows where each of its characters came from in the caller's text. Pure.

Every pass of the text front end (markdown, symbols, numbers, a lexicon, SSML) turns its input into ``Piece``s: each
covers a span of its input (``start``..``end``) and says what is spoken for it (``text``). The pieces of one pass
cover the input in order, without gaps or overlaps; a piece may speak nothing (``**``, an emoji) or speak for no
input (``end == start``: a word a rule adds). A piece whose text equals its input is *verbatim*: its characters map
one to one, so a word inside it maps back to exactly that word; any other piece maps back whole ("one hundred" is
"100", both of its words).

``compose`` chains passes: the pieces of a pass that read a previous pass's output are mapped back onto the original
input, so the chain's pieces point into the caller's text however many passes ran.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Iterable


@dataclass(frozen=True)
class Piece:
    start: int  # the span of the input this piece speaks for
    end: int
    text: str  # what is spoken for it
    verbatim: bool = False  # text is input[start:end], character for character
    kind: str = field(default="", compare=False)  # what the word pass classed it as (semiotic.py), if it did

    def shifted(self, by: int) -> "Piece":
        return self if by == 0 else Piece(self.start + by, self.end + by, self.text, self.verbatim, self.kind)


def verbatim(text: str, start: int = 0, end: int | None = None) -> list[Piece]:
    """``text[start:end]`` spoken as it is (no piece for an empty span)."""
    end = len(text) if end is None else end
    return [Piece(start, end, text[start:end], True)] if end > start else []


def rewrite(text: str, replacements: Iterable[tuple[int, int, str, str]]) -> list[Piece]:
    """Pieces for ``text`` with each ``(start, end, spoken, kind)`` replacement (in order, not overlapping; ``kind``
    the class of a piece it rewrites) and the text between them verbatim."""
    pieces: list[Piece] = []
    at = 0
    for start, end, spoken, kind in replacements:
        if start < at or end < start:
            raise ValueError(f"replacements out of order or overlapping at {start}..{end}")
        pieces += verbatim(text, at, start)
        same = spoken == text[start:end]
        pieces.append(Piece(start, end, spoken, same, "" if same else kind))
        at = end
    return pieces + verbatim(text, at)


def substitute(pattern: re.Pattern[str], text: str, spoken) -> list[Piece]:  # type: ignore[no-untyped-def]
    """``rewrite`` with every match of ``pattern`` replaced by ``spoken(match)`` (a string; None: left as it is)."""
    found = []
    for match in pattern.finditer(text):
        said = spoken(match)
        if said is not None:
            found.append((match.start(), match.end(), said, ""))
    return rewrite(text, found)


def spoken(pieces: list[Piece]) -> str:
    return "".join(p.text for p in pieces)


class SpanMap:
    """Spoken offsets back to input offsets, for one pass's (or a chain's) pieces."""

    def __init__(self, pieces: list[Piece]) -> None:
        self.pieces: list[Piece] = []
        self._starts: list[int] = []  # where each piece's text starts in the spoken text
        self._inputs: list[int] = []  # where each piece starts in the input
        self.length = 0
        self.extend(pieces)

    def extend(self, pieces: list[Piece]) -> None:
        """More pieces, after the ones held (a stream's next stretch)."""
        for piece in pieces:
            self.pieces.append(piece)
            self._starts.append(self.length)
            self._inputs.append(piece.start)
            self.length += len(piece.text)

    def silent(self, at: int) -> bool:
        """Whether input character ``at`` is spoken as nothing (a markdown mark, a dropped quote, a link's URL)."""
        i = bisect.bisect_right(self._inputs, at) - 1
        while i >= 0 and not self.pieces[i].start <= at < self.pieces[i].end:  # past pieces that cover no input
            if self.pieces[i].end < at:
                return False
            i -= 1
        return i >= 0 and not self.pieces[i].text.strip()

    @property
    def text(self) -> str:
        return spoken(self.pieces)

    def source(self, start: int, end: int) -> tuple[int, int]:
        """The input span that spoken ``[start, end)`` speaks for: exact inside verbatim pieces, whole pieces
        elsewhere. An empty or out-of-range span maps to the nearest input position."""
        hit = [i for i in self._covering(start, end)]
        if not hit:
            at = self._position(start)
            return at, at
        first, last = self.pieces[hit[0]], self.pieces[hit[-1]]
        lo = first.start + (start - self._starts[hit[0]]) if first.verbatim else first.start
        hi = last.start + (end - self._starts[hit[-1]]) if last.verbatim else last.end
        return max(first.start, lo), min(last.end, max(hi, lo))

    def _covering(self, start: int, end: int) -> range:
        """Indexes of the pieces whose spoken text overlaps ``[start, end)`` (pieces that speak nothing: none)."""
        if end <= start:
            return range(0)
        lo = max(0, bisect.bisect_right(self._starts, start) - 1)
        hi = bisect.bisect_left(self._starts, end)
        return range(lo, hi) if any(len(self.pieces[i].text) for i in range(lo, hi)) else range(0)

    def _position(self, spoken_at: int) -> int:
        """An input position for a spoken position between pieces."""
        i = bisect.bisect_right(self._starts, spoken_at) - 1
        if i < 0:
            return self.pieces[0].start if self.pieces else 0
        piece = self.pieces[i]
        if piece.verbatim:
            return piece.start + min(spoken_at - self._starts[i], piece.end - piece.start)
        return piece.end if spoken_at > self._starts[i] else piece.start


def compose(first: list[Piece], second: list[Piece]) -> list[Piece]:
    """``second`` (pieces of ``spoken(first)``) as pieces of ``first``'s input: verbatim only where both were."""
    if len(second) == 1 and second[0].verbatim and second[0].start == 0 and second[0].end == len(spoken(first)):
        # the second pass left the text as it was (as most passes leave most chunks): each of the first pass's
        # speaking pieces stands for itself, as the cut below would make it
        return _merged(_with_silent(first, [p for p in first if p.text]))
    if len(first) == 1 and first[0].verbatim and first[0].start == 0:
        # the first pass left its input as it was (markdown, on most text): the second's pieces point into it already,
        # as the cut below would make them (a verbatim piece is the chain's without a class; an empty one is dropped)
        return _merged([Piece(piece.start, piece.end, piece.text, True) if piece.verbatim and piece.kind else piece
                        for piece in second if piece.end > piece.start or not piece.verbatim])
    back = SpanMap(first)
    out: list[Piece] = []
    for piece in second:
        if piece.verbatim:  # split at the first pass's pieces, so verbatim runs stay exact
            out += _verbatim_through(first, back, piece)
            continue
        start, end = back.source(piece.start, piece.end) if piece.end > piece.start else _point(back, piece.start)
        out.append(Piece(start, end, piece.text, False, piece.kind))
    return _merged(_with_silent(first, out))


def _with_silent(first: list[Piece], out: list[Piece]) -> list[Piece]:
    """``out`` with the first pass's pieces that speak nothing (``**``, a code block) put back in their places: no
    piece of the second pass reads them, yet the chain's pieces must still cover the input (and a caller must still
    see a dropped block as one rewritten span, never to be cut inside)."""
    silent = [p for p in first if not p.text and p.end > p.start]
    if not silent:
        return out
    merged: list[Piece] = []
    i = 0
    for piece in out:
        while i < len(silent) and silent[i].end <= piece.start:
            merged.append(silent[i])
            i += 1
        while i < len(silent) and piece.start <= silent[i].start and silent[i].end <= piece.end:
            i += 1  # inside a piece of the second pass that spans it
        merged.append(piece)
    return merged + silent[i:]


def _point(back: SpanMap, at: int) -> tuple[int, int]:
    position = back._position(at)
    return position, position


def _verbatim_through(first: list[Piece], back: SpanMap, piece: Piece) -> list[Piece]:
    """A verbatim piece of the second pass, cut where the first pass's pieces are, each part mapped back."""
    out = []
    for i in back._covering(piece.start, piece.end):
        lo = max(piece.start, back._starts[i])
        hi = min(piece.end, back._starts[i] + len(first[i].text))
        if hi <= lo:
            continue
        under = first[i]
        if under.verbatim:
            offset = under.start - back._starts[i]
            out.append(Piece(lo + offset, hi + offset, piece.text[lo - piece.start:hi - piece.start], True))
        else:
            out.append(Piece(under.start, under.end, piece.text[lo - piece.start:hi - piece.start], False, under.kind))
    return out


def _merged(pieces: list[Piece]) -> list[Piece]:
    """Neighbouring parts of one non-verbatim span joined (a rewritten span split by a later pass's cuts), and so are
    pieces whose spans overlap (a later rule that read part of an earlier rewrite: "  and " -> " and "), so the
    chain's pieces never overlap."""
    out: list[Piece] = []
    last: Piece | None = None
    for piece in pieces:
        if last is not None and not (last.verbatim and piece.verbatim) and (
                piece.start < last.end or (piece.start == last.start and piece.end == last.end)):
            last = out[-1] = Piece(last.start, max(last.end, piece.end), last.text + piece.text, False,
                                   last.kind or piece.kind)
        else:
            out.append(piece)
            last = piece
    return out
