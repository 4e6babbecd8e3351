"""Markdown (and the stray HTML of LLM output) to speakable text: the first pass of ``normalize``. Pure.

Block rules look only at their own line: fenced code blocks are dropped whole (spoken as nothing), horizontal rules,
setext underlines and table separator rows are silent, a table row is read cell by cell ("a, b, c"), and a line's
markers (block quote ``>``, header ``#``, list ``-``/``*``/``+``/``1.``/``1)``, task box ``[ ]``) are dropped.
A line starts at the start of the text (unless the text starts with whitespace: a streamed remainder, cut mid-line)
or after a newline. Inline rules are local to a token: emphasis markers, backticks and brackets are dropped one by
one (never paired, so a piece of the text reads the same as the whole), ``](url)`` is dropped, so a link reads as its
text and an image as its alt text; Turbo's tags are kept as one unit; citations (``[1]``, ``[^2]``) are dropped.
"""

from __future__ import annotations

import re

from engine.speech_text.first_chars import required_chars
from engine.speech_text.spans import Piece, verbatim
from engine.speech_text.tags import TURBO_TAG
from engine.speech_text.symbols import keypad_key

_FENCE = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})")
_RULE = re.compile(r"[ \t]*([-*_=~])(?:[ \t]*\1){2,}[ \t\r]*")  # ---, ***, ___, ===, ~~~ (and spaced: - - -)
_TABLE_SEPARATOR = re.compile(r"[ \t]*\|[ \t:|-]*-[ \t:|-]*\r?")
# (not "|x| = 5": an absolute value, a short term between bars before an operator)
_TABLE_ROW = re.compile(r"[ \t]*\|(?![-−]?\w[^|\s]{0,15}\|[ \t]*[-−+*/=<>≤≥≠])")
_QUOTE = re.compile(r"[ \t]*>[ \t]?")
_HEADER = re.compile(r"[ \t]*#{1,6}(?:[ \t]+|(?=\r?$))")
_LIST = re.compile(r"[ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]+")
_TASK_BOX = re.compile(r"\[[ xX]\][ \t]+")

_BREAKING_HTML = frozenset("br p div li tr td th hr h1 h2 h3 h4 h5 h6 ul ol table blockquote".split())
_ENTITIES = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'", "#39": "'", "nbsp": " "}

_INLINE = re.compile(
    "|".join(
        (
            r"(?P<control>[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]+)",
            r"(?P<tag>%s)" % TURBO_TAG.pattern,
            r"(?P<citation>\[\^?\d{1,4}(?:[ \t]*[,–-][ \t]*\d{1,4}){0,10}\]|\[\^[^\[\]\s]{1,40}\])",
            r"(?P<link_target>\]\((?:[^\s()]|\([^\s()]{0,500}\)){0,2000}(?:[ \t]+\"[^\"\n]{0,200}\")?\))",
            r"(?P<image>!\[)",
            r"(?P<bracket>[\[\]])",
            r"(?P<autolink><(?:(?:https?|ftp)://[^\s<>]{1,2000}|mailto:[^\s<>@]{1,100}@[^\s<>]{1,200}"
            r"|[\w.+-]{1,100}@[\w-]{1,100}(?:\.[\w-]{1,60}){1,10})>)",
            r"(?P<comment><!--[^\n]{0,2000}?-->)",
            r"(?P<html></?([A-Za-z][A-Za-z0-9]{0,20})(?:\s[^<>\n]{0,300})?/?>)",
            r"(?P<entity>&(?:amp|lt|gt|quot|apos|nbsp|#39);)",
            r"(?P<times>(?<=\d)[ \t]?\*[ \t]?(?=\d))",
            r"(?P<strong>(?!(?<![\w*])\*\d{2,4}#?(?![\w*]))"  # not a phone's star code: "dial *611"
            r"(?:\*+|~~+|`+|(?<!\w)_+|_+(?!\w)|(?<!\w)#+(?![\w#]|[ \t][A-Z\d]|:[ \t]*[A-Z\d])))",  # "part # 74-2210B", "Claim # CLM-1", "Part #: 45" keep their number sign
        )
    ),
    re.IGNORECASE,
)
_MARKS = required_chars(_INLINE) or re.compile(r"(?s:.)")  # one of them is in every inline match: most lines have none


class _Pieces:
    """Pieces of ``text`` built left to right; what no rule rewrote is verbatim."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pieces: list[Piece] = []
        self.at = 0

    def say(self, start: int, end: int, spoken: str, unit: bool = False) -> None:
        """``text[start:end]`` spoken as ``spoken``; a unit (a tag) is never verbatim, so no cut falls inside it."""
        self.pieces += verbatim(self.text, self.at, start)
        self.pieces.append(Piece(start, end, spoken, spoken == self.text[start:end] and not unit))
        self.at = end

    def done(self) -> list[Piece]:
        return self.pieces + verbatim(self.text, self.at)


def markdown(text: str) -> list[Piece]:
    """``text`` with its markdown read as speech (see the module docstring)."""
    out = _Pieces(text)
    fence: tuple[int, str] | None = None  # (where the open block starts, its fence)
    start = 0
    while start <= len(text):
        newline = text.find("\n", start)
        end = len(text) if newline < 0 else newline
        line_start = start > 0 or not text[:1].isspace()
        if fence is not None:
            closing = _FENCE.match(text, start, end)
            if closing and closing.group(1)[0] == fence[1][0] and len(closing.group(1)) >= len(fence[1]):
                if not text[closing.end():end].strip():
                    out.say(fence[0], end, "")
                    fence = None
        elif line_start and (opening := _FENCE.match(text, start, end)):
            fence = (start, opening.group(1))
        else:
            _line(out, start, end, line_start)
        if newline < 0:
            break
        start = newline + 1
    if fence is not None:  # never closed: dropped to the end
        out.say(fence[0], len(text), "")
    return out.done()


def _line(out: _Pieces, start: int, end: int, line_start: bool) -> None:
    text = out.text
    if line_start:
        if _RULE.fullmatch(text, start, end) or _TABLE_SEPARATOR.fullmatch(text, start, end):
            out.say(start, end, "")
            return
        if _TABLE_ROW.match(text, start, end):
            out.say(start, end, _row(text[start:end]), unit=True)
            return
        start = _markers(out, start, end)
    _inline(out, start, end)


def _markers(out: _Pieces, start: int, end: int) -> int:
    """Drop the line's block quote, header, list and task markers; where its text starts."""
    at = start
    while match := _QUOTE.match(out.text, at, end):
        at = match.end()
    for marker in (_HEADER, _LIST, _TASK_BOX):
        if match := marker.match(out.text, at, end):
            at = match.end()
    if at > start:
        out.say(start, at, "")
    return at


def _row(line: str) -> str:
    """A table row's cells, read in order: "| a | **b** |" -> "a, b"."""
    cells = line.strip().strip("|").split("|")
    said = [" ".join("".join(p.text for p in inline(cell.strip())).split()) for cell in cells]
    return ", ".join(cell for cell in said if cell)


def inline(text: str) -> list[Piece]:
    """The inline rules alone, on ``text``."""
    out = _Pieces(text)
    _inline(out, 0, len(text))
    return out.done()


def _inline(out: _Pieces, start: int, end: int) -> None:
    if _MARKS.search(out.text, start, end) is None:
        return
    for match in _INLINE.finditer(out.text, start, end):
        kind, (lo, hi) = match.lastgroup, match.span()
        if kind == "tag":
            out.say(lo, hi, match.group(), unit=" " in match.group() or "\t" in match.group())
        elif kind == "autolink":
            inner = match.group()[1:-1]
            out.say(lo, lo + 1 + (7 if inner.lower().startswith("mailto:") else 0), "")
            out.say(hi - 1, hi, "")
        elif kind == "html":
            out.say(lo, hi, " " if match.group(match.lastindex + 1).lower() in _BREAKING_HTML else "")
        elif kind == "entity":
            out.say(lo, hi, _ENTITIES[match.group()[1:-1].lower()])
        elif kind == "times":
            out.say(lo, hi, " times ")
        elif kind == "strong" and keypad_key(match.string, lo, hi):
            pass  # "Press #": the key, said by symbols.py
        else:  # control characters, citations, link targets, "![", brackets, emphasis, code ticks, stray #s
            out.say(lo, hi, "")


_OPEN_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})", re.MULTILINE)
_TRAILING_MARKS = re.compile(r"[*_`#~]+$")
_OPEN_BRACKET_REACH = 300  # an unclosed "[" further back than this is text, not a link still arriving
_OPEN_HTML_REACH = 300


def open_tail(text: str) -> int | None:
    """Where an unfinished construct at the end of ``text`` starts, or None (see normalize.open_tail)."""
    found: list[int] = []
    fence = _unclosed_fence(text)
    if fence is not None:
        return fence
    line = text.rfind("\n") + 1
    if _TABLE_ROW.match(text, line) and (line > 0 or not text[:1].isspace()):
        found.append(line)
    if match := _TRAILING_MARKS.search(text):
        found.append(match.start())
    found += _open_bracket(text)
    lt = text.rfind("<", max(0, len(text) - _OPEN_HTML_REACH))
    after = text[lt + 1:lt + 2]
    # a tag, comment or autolink opens with a letter, "/", "!" or "?" after its "<"; "x < 5" opens nothing (held, it
    # made its chunk's rest wait for the flush and be read twice: the costliest chunks of the cases)
    if lt >= 0 and (not after or after.isalpha() or after in "/!?") and ">" not in text[lt:] and "\n" not in text[lt:]:
        found.append(lt)
    return min(found) if found else None


def _unclosed_fence(text: str) -> int | None:
    """Where a code block that is not closed yet starts (reusing ``markdown``'s own reading of the fences)."""
    opened: int | None = None
    fence = ""
    for match in _OPEN_FENCE.finditer(text):
        if match.start() == 0 and text[:1].isspace():
            continue
        line_end = text.find("\n", match.end())
        rest = text[match.end(): len(text) if line_end < 0 else line_end]
        if opened is None:
            opened, fence = match.start(), match.group(1)
        elif match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) and not rest.strip():
            opened = None
    if opened is None and text.endswith(("`", "~")):  # a fence may be arriving: "``" at a line start
        line = text.rfind("\n") + 1
        if text[line:].strip(" \t") and set(text[line:].strip(" \t")) <= {"`", "~"}:
            return line
    return opened


def _open_bracket(text: str) -> list[int]:
    """An unclosed ``[`` (a link or tag still arriving), ``[text]`` that a ``(url)`` may follow, or ``](url``."""
    reach = max(0, len(text) - _OPEN_BRACKET_REACH)
    opened = text.rfind("[", reach)
    found = []
    if opened >= 0:
        after = text[opened:]
        closed = after.find("]")
        if closed < 0 or closed == len(after) - 1:
            found.append(opened)
    target = text.rfind("](", reach)
    if target >= 0 and ")" not in text[target:] and not any(c.isspace() for c in text[target:]):
        link = text.rfind("[", reach, target)
        found.append(link if link >= 0 and "\n" not in text[link:target] else target)
    return found
