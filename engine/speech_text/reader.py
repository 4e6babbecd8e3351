"""How one utterance's text is read: plain text through the streaming front end, SSML as a whole document. Pure.

The worker feeds the caller's text in as it arrives and gets ``Stretch``es back: spoken text for the planner, each
with the speaking rate it is said at and the pause that follows it (SSML's ``<prosody rate>`` and ``<break>``; plain
text has neither). ``source`` maps offsets in everything spoken so far back to the caller's characters.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from engine.protocol import ProtocolError
from engine.speech_text import normalize as rules
from engine.speech_text import ssml
from engine.speech_text.lexicon import Lexicon
from engine.speech_text.spans import Piece, SpanMap, compose, spoken
from engine.speech_text.stream import FrontEnd, Normalizer, joined


@dataclass(frozen=True)
class Stretch:
    text: str  # what the planner is given (a rewritten phrase's words joined: engine/text.py WORD_JOINER)
    rate: float = 1.0  # SSML's <prosody rate>, on top of the utterance's speed
    pause_after: float = 0.0  # seconds of silence after it (an SSML break): the planner is flushed there


def _nothing_open(text: str) -> int | None:
    return None


def _lexicon_then_punctuation(lexicon: Lexicon, text: str) -> list[Piece]:
    """``normalize`` off with a lexicon: its aliases, then Turbo's punctuation rules only."""
    pieces = lexicon.apply(text)
    return compose(pieces, rules.punctuation_only(spoken(pieces)))


_SSML_OPENINGS = ("<speak", "<?xml", "<!DOCTYPE")


def _may_open_ssml(text: str) -> bool:
    """Whether ``text``, the start of an utterance, may still turn out to be SSML once more of it arrives: blank so
    far, part of ``<speak`` (or of a document type declaration), or an XML declaration not yet followed by more."""
    start = text.lstrip()
    if not start or any(opening.startswith(start) for opening in _SSML_OPENINGS):
        return True
    if start.startswith("<?xml") and len(start) < 256:
        _, closed, rest = start.partition("?>")
        rest = rest.lstrip()
        return not closed or any(opening.startswith(rest) for opening in _SSML_OPENINGS)
    return False


class Reader:
    """``normalize`` mode ``off``: the text as sent, Chatterbox-Turbo's punctuation rules only; ``on`` / ``auto``
    (None): as a person would read it aloud, in ``locale``'s conventions (en-US, or en-GB: day-first dates). A
    ``lexicon``'s aliases apply in every mode. A text that starts with
    ``<speak`` is SSML either way (normalised inside unless ``off``); it is read once the caller ends or flushes it
    whole."""

    def __init__(self, mode: str | None = None, lexicon: Lexicon | None = None, locale: str | None = None) -> None:
        if mode != "off":
            self._normalize: Normalizer = functools.partial(rules.normalize, lexicon=lexicon, locale=locale)
        elif lexicon is not None:
            self._normalize = functools.partial(_lexicon_then_punctuation, lexicon)
        else:
            self._normalize = rules.punctuation_only
        self._plain = FrontEnd(self._normalize, _nothing_open if mode == "off" else rules.open_tail)
        self._ssml: str | None = None  # the SSML document so far; None: plain text (or nothing yet)
        self._ssml_map = SpanMap([])
        self._started = False
        self._opening = ""  # the text's first characters, until they say whether it is SSML
        self._text = ""  # the caller's plain text so far

    def feed(self, text: str) -> list[Stretch]:
        if not self._started:  # plain text or SSML: decided once the start of the text says which
            self._opening += text
            if _may_open_ssml(self._opening):
                return []
            self._started, text, self._opening = True, self._opening, ""
            if ssml.is_ssml(text):
                self._ssml = ""
        if self._ssml is not None:
            self._ssml += text
            if len(self._ssml) > ssml.MAX_INPUT_CHARS:
                raise ProtocolError(f"SSML longer than {ssml.MAX_INPUT_CHARS} characters", "bad_ssml")
            return []
        self._text += text
        spoken = self._plain.feed(text)
        return [Stretch(spoken)] if spoken else []

    def flush(self, final: bool = False) -> list[Stretch]:
        """Everything held: at a flush, or at the end (``final``: an unfinished SSML document is an error then)."""
        if not self._started:
            self._started = True
            opening, self._opening = self._opening, ""
            if ssml.is_ssml(opening):
                self._ssml = opening
            else:
                self._text += opening
                self._plain.feed(opening)
        if self._ssml is None:
            spoken = self._plain.flush()
            return [Stretch(spoken)] if spoken else []
        if not final and not self._ssml.rstrip().endswith("</speak>"):
            return []
        document, self._ssml = self._ssml, ""
        if not document.strip():
            return []
        try:
            segments = ssml.parse(document, self._normalize)
        except ssml.SsmlError as exc:
            raise ProtocolError(f"bad SSML: {exc}", "bad_ssml") from None
        out = []
        for segment in segments:
            self._ssml_map.extend(segment.pieces)
            out.append(Stretch("".join(joined(p) for p in segment.pieces), segment.rate, segment.break_after))
        return out

    def source(self, start: int, end: int) -> tuple[int, int]:
        """The caller's span that spoken ``[start, end)`` speaks for."""
        return (self._plain if self._ssml is None else self._ssml_map).source(start, end)

    def word_span(self, start: int, end: int) -> tuple[int, int]:
        """The caller's span of the spoken word at ``[start, end)``: what it speaks for, and in plain text the marks
        around it that speak nothing, to the next space (``**Note:**``, ``docs](https://example.com)``): the word as
        the caller wrote it."""
        lo, hi = self.source(start, end)
        if self._ssml is not None:
            return lo, hi
        text, spans = self._text, self._plain.map
        while lo > 0 and not text[lo - 1].isspace() and spans.silent(lo - 1):
            lo -= 1
        while hi < len(text) and not text[hi].isspace() and spans.silent(hi):
            hi += 1
        return lo, hi

    @property
    def spoken(self) -> str:
        return self._plain.spoken if self._ssml is None else self._ssml_map.text

    @property
    def pieces(self) -> list[Piece]:
        return self._plain.pieces if self._ssml is None else self._ssml_map.pieces
