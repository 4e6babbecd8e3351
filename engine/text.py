"""Tag-aware text rules: paralinguistic tags, chunk boundaries, punctuation normalisation. Pure.

Chatterbox-Turbo reads inline tags such as ``[laugh]`` or ``[clear throat]``; nothing here may cut or rewrite one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum

TAG_MAX_LEN = 40  # longest bracketed span still treated as a tag; "[" with no "]" this far on is plain text

_TAG = re.compile(r"\[[^\[\]\n]{1,%d}\]" % (TAG_MAX_LEN - 2))
_SPACE_RUN = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"[.!?]['\"”’)]*$")
_CLAUSE_END = re.compile(r"(?:[,;:…—–]|\s-)['\"”’)]*$")
# Words whose full stop is not the end of a sentence ("Dr. Smith", "e.g. this"), and single initials ("J. Smith").
_ABBREVIATION = re.compile(r"(?:^|\s)(?:mr|mrs|ms|dr|st|prof|jr|sr|vs|etc|e\.g|i\.e|[a-hj-z])\.$", re.IGNORECASE)
_WORD = re.compile(r"\w")

# Chatterbox's punc_norm replacements, plus double quotes removed: Turbo voices `"` as a sigh (chatterbox#433).
_REPLACEMENTS = (
    ("…", ", "),
    (":", ","),
    ("—", "-"),
    ("–", "-"),
    ("“", ""),
    ("”", ""),
    ('"', ""),
    ("‘", "'"),
    ("’", "'"),
)
_SENTENCE_ENDERS = (".", "!", "?", "-", ",")


class BoundaryKind(IntEnum):
    """How natural a place to end a chunk is; higher is better."""

    HARD = 0  # no natural boundary within the length cap: cut between characters (never inside a tag)
    WORD = 1
    CLAUSE = 2
    SENTENCE = 3
    END = 4  # the end of text the client closed (flush or end of input)


@dataclass(frozen=True)
class Boundary:
    end: int  # a chunk ending here is text[:end]; whitespace follows it
    kind: BoundaryKind


def tag_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every tag in ``text``, including a trailing ``[`` still open (text may still be arriving)."""
    spans = [m.span() for m in _TAG.finditer(text)]
    opened = text.rfind("[")
    if opened >= 0 and (not spans or spans[-1][0] < opened) and "]" not in text[opened:]:
        if len(text) - opened < TAG_MAX_LEN and "\n" not in text[opened:]:
            spans.append((opened, len(text)))
    return spans


def _inside(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start < position < end for start, end in spans)


def find_boundaries(text: str) -> list[Boundary]:
    """Every place ``text`` may be cut before whitespace, in order, classified; none inside a tag.

    Only cuts that whitespace confirms are returned: the end of the text is not one (a streamed word may be
    incomplete); the caller decides whether the text is closed.
    """
    spans = tag_spans(text)
    found: list[Boundary] = []
    for space in _SPACE_RUN.finditer(text):
        end = space.start()
        if end == 0 or _inside(end, spans):
            continue
        before = text[:end]
        if "\n" in space.group() or (_SENTENCE_END.search(before) and not _ABBREVIATION.search(before)):
            kind = BoundaryKind.SENTENCE
        elif _CLAUSE_END.search(before):
            kind = BoundaryKind.CLAUSE
        else:
            kind = BoundaryKind.WORD
        found.append(Boundary(end, kind))
    return found


def safe_cut(text: str, limit: int) -> int:
    """The largest cut position <= ``limit`` that is not inside a tag (for text with no natural boundary)."""
    limit = min(limit, len(text))
    for start, end in tag_spans(text):
        if start < limit < end:
            return start if start > 0 else min(end, len(text))
    return limit


def count_words(text: str) -> int:
    """Spoken words: whitespace-separated pieces with a letter or digit, tags not counted."""
    return sum(1 for piece in _TAG.sub(" ", text).split() if _WORD.search(piece))


def punc_norm(text: str) -> str:
    """Chatterbox-Turbo's ``punc_norm`` without harm to tags, and with double quotes removed.

    Tags are held apart as pieces of their own while the rest is rewritten, never as markers inside the text, so no
    input can pass for a held tag. Turbo runs its own ``punc_norm`` again on what it is given; the result here passes
    through it unchanged. Empty (or all-whitespace) text gives "" rather than Turbo's filler sentence.
    """
    tags = [" ".join(match.group().split()) for match in _TAG.finditer(text)]
    plain = [_plain_norm(piece) for piece in _TAG.split(text)]  # one more piece than tags: around and between them
    text = "".join(piece + tag for piece, tag in zip(plain, [*tags, ""])).strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]  # as Turbo does: only a leading letter ("[" of a tag is left as it is)
    if not text.endswith(_SENTENCE_ENDERS):
        text += "."
    return text


def _plain_norm(text: str) -> str:
    """Turbo's replacements and whitespace rules on text outside tags (a whitespace run becomes one space)."""
    for old, new in _REPLACEMENTS:
        text = text.replace(old, new)
    return _SPACE_RUN.sub(" ", text).replace(" ,", ",")


_SPACES = re.compile(r"\s+")


def strip_tags(text: str) -> str:
    """``text`` without its paralinguistic tags such as ``[laugh]``: the words an engine that cannot voice tags speaks."""
    kept, start = [], 0
    for tag_start, tag_end in tag_spans(text):
        kept.append(text[start:tag_start])
        start = tag_end
    kept.append(text[start:])
    return _SPACES.sub(" ", " ".join(kept)).strip()
