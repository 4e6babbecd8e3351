"""SSML read into spoken segments whose pieces point into the caller's SSML. Pure.

Phone stacks (jambonz, Asterisk, Twilio) send SSML: a text that starts with ``<speak`` (after whitespace and an
optional XML declaration). ``parse`` returns its spoken ``Segment``s in order: a new one starts where the speaking
rate changes or a pause is due. Every segment but the first speaks something; the first may be a leading silence
(blank pieces, a ``break_after``). A document that neither speaks nor pauses gives no segment.

Elements: ``<speak>`` (the root; its attributes ignored); ``<break time|strength>``; ``<say-as>`` (``say_as.py``:
an interpret-as it does not know, or text that does not read as that kind, is spoken as ordinary text, as engines
do); ``<sub alias>`` (the alias spoken, through the normaliser, mapped to the whole element); ``<p>``, ``<s>``
(their text ended with a full stop where no punctuation ends it, so the planner cuts there; a paragraph's start or
end pauses PARAGRAPH_PAUSE_S, a sentence adds no silence to the model's own); ``<prosody rate>`` (pitch, volume
ignored); ``<audio>`` (its fallback content spoken, its src never fetched); ``<desc>``, ``<meta>``, ``<metadata>``,
``<lexicon>`` (not spoken); ``<mark>`` (ignored: nothing reports marks yet); ``<emphasis>``, ``<lang>``,
``<voice>`` (the session's voice speaks) and any unknown element: ignored, their text spoken. Names are matched as
written (no namespace check: Polly's ``<amazon:effect>`` comes undeclared); ``<say-as>`` and ``<sub>`` hold only
text; words either side of a sentence, paragraph or break are kept apart by a space. Text outside
``<say-as>``/``<sub>`` goes through the caller's normaliser, whole stretches at a time (across ignored tags, so
"$<emphasis>5</emphasis>" still reads as money), composed so offsets stay in the SSML.

A break's pause: its time ("500ms", "1.5s"), else its strength (none 0, x-weak 0.1, weak 0.2, medium 0.4 -- also a
bare ``<break/>`` --, strong 0.7, x-strong 1.0 s: on top of the pause the model leaves at punctuation, medium is
about a sentence's, x-strong a paragraph's). Breaks in a row add up; an explicit break replaces a paragraph's
natural pause; a pause at the very end is kept only if a break asked for it.

Well-formedness is checked by this module's own linear scanner (xml.etree keeps no offsets; the tests compare its
verdicts with expat's). No entity is ever expanded: the five XML entities and character references are decoded, and
a DOCTYPE, an ENTITY declaration, any other entity or a processing instruction but a leading XML declaration is
refused (the "billion laughs" defence). Limits (SsmlError past any): MAX_INPUT_CHARS, MAX_DEPTH, MAX_ELEMENTS,
MAX_TOTAL_BREAK_S; one pause is capped at MAX_BREAK_S instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, cast

from engine.speech_text import say_as
from engine.speech_text.spans import Piece, compose, spoken, verbatim

MAX_INPUT_CHARS = 100_000
MAX_DEPTH = 32  # elements within one another, <speak> included
MAX_ELEMENTS = 2_000
MAX_BREAK_S = 10.0  # one pause (a break, or breaks in a row) is capped here, not refused
MAX_TOTAL_BREAK_S = 60.0  # the breaks of one document together (each capped first)
PARAGRAPH_PAUSE_S = 0.4  # at a <p>'s start or end, between spoken text: a medium break
BREAK_STRENGTHS = {"none": 0.0, "x-weak": 0.1, "weak": 0.2, "medium": 0.4, "strong": 0.7, "x-strong": 1.0}
# Words set the rate; percentages and numbers scale the enclosing one. Clamped to 0.5..2.0 (Azure's range): past
# it speech turns to mush or drags, and a caller's "10%" is more likely a slip than a wish.
RATE_WORDS = {"x-slow": 0.5, "slow": 0.75, "medium": 1.0, "default": 1.0, "fast": 1.25, "x-fast": 1.5}
MIN_RATE, MAX_RATE = 0.5, 2.0

_SILENT = frozenset({"desc", "meta", "metadata", "lexicon"})
_EMPTY = frozenset({"break", "mark"})  # elements that take no content
_TEXT_ONLY = frozenset({"say-as", "sub"})  # elements that hold only text, spoken at their end
_NO_CHILDREN = _EMPTY | _TEXT_ONLY
_ENTITIES = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_CLOSERS = "'\"”’)]»"
_SENTENCE_PUNCTUATION = frozenset(".!?…,;:")

_MAX_PROBLEM = 240  # characters of an error's description

# A document type declaration first is taken for SSML too, so that parse refuses it (an entity bomb is never read
# aloud as text).
_SSML_START = re.compile(r"\s*(?:<\?xml[^<>]{0,200}\?>\s*)?(?:<speak(?:[ \t\r\n/>]|$)|<!DOCTYPE)")
_NOT_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_NAME = re.compile(r"[^\W\d][\w.:-]*")
_SPACE = re.compile(r"[ \t\r\n]*")
_EQUALS = re.compile(r"[ \t\r\n]*=[ \t\r\n]*")
_REF = re.compile(r"&(?:#([0-9]{1,7})|#x([0-9a-fA-F]{1,6})|([^\W\d][\w.:-]{0,63}));")
_TIME = re.compile(r"(\d{1,9}(?:\.\d*)?|\.\d+)[ \t]*(ms|s)")
_PERCENT = re.compile(r"([+-]?)(\d{1,6}(?:\.\d{0,6})?)%")
_NUMBER = re.compile(r"\d{1,6}(?:\.\d{0,6})?")


class SsmlError(ValueError):
    """Malformed or refused SSML; the message names the problem and where (line, column and character offset)."""


@dataclass(frozen=True)
class Break:
    at: int  # input offset of the <break> element
    seconds: float  # its pause, capped at MAX_BREAK_S


@dataclass(frozen=True)
class Segment:
    pieces: list[Piece]  # spoken text of this stretch, as pieces of the SSML input
    rate: float = 1.0  # <prosody rate> in force, MIN_RATE..MAX_RATE
    break_after: float = 0.0  # seconds of silence after it, at most MAX_BREAK_S


def is_ssml(text: str) -> bool:
    """Whether ``text`` is an SSML document: ``<speak`` (or a ``<!DOCTYPE``, which ``parse`` refuses) first, after
    whitespace and an optional XML declaration."""
    return _SSML_START.match(text) is not None


def parse(text: str, normalize: Callable[[str], list[Piece]]) -> list[Segment]:
    """The SSML document's spoken segments in order; SsmlError if it is malformed, refused or past a limit."""
    if len(text) > MAX_INPUT_CHARS:
        raise SsmlError(f"SSML of {len(text)} characters is over the limit of {MAX_INPUT_CHARS}")
    if (bad := _NOT_XML_CHAR.search(text)) is not None:
        raise _error(text, f"character U+{ord(bad.group()):04X} is not allowed in XML", bad.start())
    return _Reader(text, normalize).read()


def _error(text: str, problem: str, at: int) -> SsmlError:
    """The problem (cut short: it may quote a name of any length) and where it is."""
    shown = problem if len(problem) <= _MAX_PROBLEM else problem[:_MAX_PROBLEM] + "..."
    return SsmlError(f"{shown} ({_where(text, at)})")


def _skip_space(text: str, at: int) -> int:
    """Where the XML whitespace from ``at`` ends."""
    return cast(re.Match[str], _SPACE.match(text, at)).end()  # "*": it always matches


def _shown(value: str) -> str:
    """An attribute's value as an error quotes it."""
    return value if len(value) <= 40 else value[:40] + "..."


def _where(text: str, at: int) -> str:
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    return f"line {line}, column {column}, character {at}"


@dataclass
class _Open:
    """An element being read."""
    name: str
    start: int  # its start tag's "<"
    end: int  # ...and the end of that tag
    attrs: dict[str, str]
    content: list[Piece] = field(default_factory=list)  # a <say-as>'s or <sub>'s text, decoded


class _Reader:
    """One pass over the document: tokens checked as they come, spoken pieces handed to the segmenter."""

    def __init__(self, text: str, normalize: Callable[[str], list[Piece]]) -> None:
        self.text, self.normalize = text, normalize
        self.stack: list[_Open] = []
        self.rates = [1.0]
        self.run: list[Piece] = []  # text not yet normalised: it runs on across ignored tags
        self.out = _Segments()
        self.elements = 0
        self.total_break = 0.0
        self.silent = 0  # depth inside elements that are not spoken
        self.seen_root = False

    def read(self) -> list[Segment]:
        text, at = self.text, 0
        while at < len(text):
            lt = text.find("<", at)
            lt = len(text) if lt < 0 else lt
            if lt > at:
                self._text(at, lt)
            at = self._markup(lt) if lt < len(text) else lt
        if self.stack:
            top = self.stack[-1]
            raise self._error(f"<{top.name}> is never closed", top.start)
        if not self.seen_root:
            raise self._error("no <speak> element", len(text))
        self._flush()
        return self.out.result()

    def _error(self, problem: str, at: int) -> SsmlError:
        return _error(self.text, problem, at)

    # -- tokens

    def _markup(self, lt: int) -> int:
        """Reads the markup at ``lt`` (a "<"); returns where it ends."""
        text = self.text
        if text.startswith("<!--", lt):
            end = text.find("-->", lt + 4)
            if end < 0:
                raise self._error("a comment is never closed (no -->)", lt)
            if text.find("--", lt + 4, end) >= 0 or text[end - 1] == "-" and end > lt + 4:
                raise self._error("'--' inside a comment", lt)
            self._emit(Piece(lt, end + 3, ""))
            return end + 3
        if text.startswith("<![CDATA[", lt):
            end = text.find("]]>", lt + 9)
            if end < 0:
                raise self._error("a CDATA section is never closed (no ]]>)", lt)
            if not self.stack:
                raise self._error("a CDATA section outside <speak>", lt)
            self._emit(Piece(lt, lt + 9, ""), *verbatim(text, lt + 9, end), Piece(end, end + 3, ""))
            return end + 3
        if text.startswith("<!", lt):
            what = "a DOCTYPE" if text.startswith("<!DOCTYPE", lt) else \
                "an ENTITY declaration" if text.startswith("<!ENTITY", lt) else "a markup declaration"
            raise self._error(f"{what} is refused: SSML here declares nothing, so no entity is ever expanded", lt)
        if text.startswith("<?", lt):
            return self._instruction(lt)
        if text.startswith("</", lt):
            return self._end_tag(lt)
        return self._start_tag(lt)

    def _instruction(self, lt: int) -> int:
        end = self.text.find("?>", lt + 2)
        if end < 0:
            raise self._error("a processing instruction is never closed (no ?>)", lt)
        target = _NAME.match(self.text, lt + 2)
        if target is None or target.group().lower() != "xml":
            raise self._error("a processing instruction is refused (only a leading <?xml ...?> is read)", lt)
        if self.seen_root or _skip_space(self.text, 0) < lt:
            raise self._error("the XML declaration must come first", lt)
        self._emit(Piece(lt, end + 2, ""))
        return end + 2

    def _start_tag(self, lt: int) -> int:
        text = self.text
        name_match = _NAME.match(text, lt + 1)
        if name_match is None:
            raise self._error("a '<' that starts no tag (write &lt;)", lt)
        name, at = name_match.group(), name_match.end()
        attrs: dict[str, str] = {}
        while True:
            gap = _skip_space(text, at)
            if gap >= len(text):
                raise self._error(f"the tag <{name} is never closed (no >)", lt)
            if text[gap] == ">" or text.startswith("/>", gap):
                end = gap + (1 if text[gap] == ">" else 2)
                self._open(_Open(name, lt, end, attrs), empty=text[gap] == "/")
                return end
            attr = _NAME.match(text, gap)
            if attr is None or gap == at:
                raise self._error(f"unexpected {text[gap]!r} in the tag <{name}>", gap)
            key, at = attr.group(), attr.end()
            equals = _EQUALS.match(text, at)
            if equals is None:
                raise self._error(f"attribute {key} of <{name}> has no value (write {key}=\"...\")", at)
            at = equals.end()
            if at >= len(text) or text[at] not in "\"'":
                raise self._error(f"the value of attribute {key} of <{name}> is not in quotes", at)
            close = text.find(text[at], at + 1)
            if close < 0:
                raise self._error(f"the value of attribute {key} of <{name}> is never closed", at)
            if (inner := text.find("<", at + 1, close)) >= 0:
                raise self._error(f"'<' in the value of attribute {key} of <{name}> (a missing quote?)", inner)
            if key in attrs:
                raise self._error(f"attribute {key} given twice in <{name}>", gap)
            attrs[key] = spoken(self._decode(at + 1, close)).translate({9: 32, 10: 32, 13: 32})
            at = close + 1

    def _end_tag(self, lt: int) -> int:
        name_match = _NAME.match(self.text, lt + 2)
        end = _skip_space(self.text, name_match.end()) if name_match else lt + 2
        if name_match is None or self.text[end:end + 1] != ">":
            raise self._error("a malformed end tag (write </name>)", lt)
        name = name_match.group()
        if not self.stack:
            raise self._error(f"</{name}> closes nothing", lt)
        top = self.stack[-1]
        if top.name != name:
            raise self._error(f"</{name}> where </{top.name}> was due (<{top.name}> opened at "
                              f"{_where(self.text, top.start)})", lt)
        self.stack.pop()
        self._close(top, lt, end + 1)
        return end + 1

    def _text(self, start: int, end: int) -> None:
        if not self.stack:
            if not self.text[start:end].isspace():
                where = "after </speak>" if self.seen_root else "before <speak>"
                raise self._error(f"text {where}", _skip_space(self.text, start))
            self._emit(Piece(start, end, ""))
            return
        if (bad := self.text.find("]]>", start, end)) >= 0:
            raise self._error("']]>' in text (write ]]&gt;)", bad)
        pieces = self._decode(start, end)
        if self.stack[-1].name in _EMPTY and spoken(pieces).strip():
            raise self._error(f"<{self.stack[-1].name}> takes no content", start)
        self._emit(*pieces)

    def _decode(self, start: int, end: int) -> list[Piece]:
        """``text[start:end]`` with its entity and character references decoded, as pieces of the input."""
        pieces, at = [], start
        while (amp := self.text.find("&", at, end)) >= 0:
            if amp > at:
                pieces.append(Piece(at, amp, self.text[at:amp], True))
            ref = _REF.match(self.text, amp, end)
            if ref is None:
                raise self._error("an '&' that starts no entity or character reference (write &amp;)", amp)
            decimal, hexadecimal, name = ref.groups()
            if name is not None:
                if name not in _ENTITIES:
                    raise self._error(f"the entity &{name}; is refused: only &amp; &lt; &gt; &quot; &apos; and "
                                      "character references are read, no other entity is ever expanded", amp)
                char = _ENTITIES[name]
            else:
                code = int(decimal) if decimal is not None else int(hexadecimal, 16)
                char = chr(code) if code <= 0x10FFFF else "\0"
                if _NOT_XML_CHAR.match(char):
                    raise self._error(f"the character reference {ref.group()} is not a character XML allows", amp)
            pieces.append(Piece(amp, ref.end(), char))
            at = ref.end()
        if end > at:
            pieces.append(Piece(at, end, self.text[at:end], True))
        return pieces

    # -- elements

    def _open(self, element: _Open, empty: bool) -> None:
        name, start, end = element.name, element.start, element.end
        if not self.stack:
            if self.seen_root:
                raise self._error(f"<{name}> after </speak>: one root element only", start)
            if name != "speak":
                raise self._error(f"the root element must be <speak>, not <{name}>", start)
            self.seen_root = True
        elif name == "speak":
            raise self._error("<speak> inside <speak>", start)
        self.elements += 1
        if self.elements > MAX_ELEMENTS:
            raise self._error(f"more than {MAX_ELEMENTS} elements (the limit)", start)
        if len(self.stack) >= MAX_DEPTH:
            raise self._error(f"elements nested deeper than {MAX_DEPTH} (the limit)", start)
        if self.stack and (parent := self.stack[-1]).name in _NO_CHILDREN:
            what = "takes no content" if parent.name in _EMPTY else "may hold only text"
            raise self._error(f"<{parent.name}> {what}, not <{name}>", start)
        self.stack.append(element)
        if self.silent or name in _SILENT:
            self.silent += 1
        elif name == "break":
            self._break(element)
        elif name in ("p", "s"):
            self._boundary(name, start, end)
        elif name == "prosody":
            self._flush()
            self.rates.append(self._rate(element))
            self.out.set_rate(self.rates[-1])
            self._emit(Piece(start, end, ""))
        elif name not in _TEXT_ONLY:  # their pieces come at their end
            self._emit(Piece(start, end, ""))
        if empty:
            self.stack.pop()
            self._close(element, end, end)

    def _close(self, element: _Open, start: int, end: int) -> None:
        """``element`` ends with the end tag at ``start``..``end`` (an empty span for an empty-element tag)."""
        name = element.name
        tag = [Piece(start, end, "")] if end > start else []
        if self.silent:
            self.silent -= 1
            if not self.silent:
                self._emit(Piece(element.start, end, ""))
        elif name == "say-as":
            words = say_as.interpret(element.attrs.get("interpret-as", ""), element.attrs.get("format"),
                                     spoken(element.content))
            if words is None:  # spoken as ordinary text, normalised with what surrounds it
                self._emit(Piece(element.start, element.end, ""), *element.content, *tag)
            else:
                self._flush()
                self.out.piece(Piece(element.start, end, words))
        elif name == "sub":
            if "alias" not in element.attrs:
                raise self._error("<sub> without its alias attribute", element.start)
            self._flush()
            self.out.piece(Piece(element.start, end, spoken(self.normalize(element.attrs["alias"]))))
        elif name in ("p", "s"):
            self._boundary(name, start, end)
        elif name == "prosody":
            self._flush()
            self.rates.pop()
            self.out.set_rate(self.rates[-1])
            self._emit(*tag)
        else:
            self._emit(*tag)
        if name == "speak":
            self._flush()

    def _emit(self, *pieces: Piece) -> None:
        """Pieces read in document order: a <say-as>'s or <sub>'s content, nothing when silent, else the run."""
        if self.silent:
            return
        if self.stack and self.stack[-1].name in _TEXT_ONLY:
            self.stack[-1].content.extend(pieces)
        else:
            self.run.extend(pieces)

    def _flush(self) -> None:
        """The run of text so far normalised (when it speaks anything) and handed on, its tags' spans filled in."""
        if not self.run:
            return
        run, self.run = self.run, []
        said = spoken(run)
        pieces = compose(run, self.normalize(said)) if said.strip() else run
        at = run[0].start
        for piece in pieces:
            if piece.start > at:
                self.out.piece(Piece(at, piece.start, ""))
            self.out.piece(piece)
            at = max(at, piece.end)
        if run[-1].end > at:
            self.out.piece(Piece(at, run[-1].end, ""))

    def _break(self, element: _Open) -> None:
        time, strength = element.attrs.get("time"), element.attrs.get("strength")
        if time is not None:
            match = _TIME.fullmatch(time.strip().lower())
            if match is None:
                raise self._error(f"<break time=\"{_shown(time)}\">: not a time (like 500ms or 1.5s)", element.start)
            seconds = float(match.group(1)) / (1000 if match.group(2) == "ms" else 1)
        elif strength is not None:
            if strength.strip().lower() not in BREAK_STRENGTHS:
                raise self._error(f"<break strength=\"{_shown(strength)}\">: not one of {', '.join(BREAK_STRENGTHS)}",
                                  element.start)
            seconds = BREAK_STRENGTHS[strength.strip().lower()]
        else:
            seconds = BREAK_STRENGTHS["medium"]
        seconds = min(seconds, MAX_BREAK_S)
        self.total_break += seconds
        if self.total_break > MAX_TOTAL_BREAK_S:
            raise self._error(f"breaks over {MAX_TOTAL_BREAK_S:g} s in all (the limit)", element.start)
        self._flush()
        self.out.piece(Piece(element.start, element.end, ""))
        self.out.pause(Break(element.start, seconds))

    def _boundary(self, name: str, start: int, end: int) -> None:
        self._flush()
        self.out.boundary(PARAGRAPH_PAUSE_S if name == "p" else 0.0)
        self.out.piece(Piece(start, end, ""))

    def _rate(self, element: _Open) -> float:
        inherited, value = self.rates[-1], element.attrs.get("rate")
        if value is None:
            return inherited
        word = value.strip().lower()
        if word in RATE_WORDS:
            rate = RATE_WORDS[word]
        elif (percent := _PERCENT.fullmatch(word)) is not None:
            sign, number = percent.group(1), float(percent.group(2)) / 100
            rate = inherited * (1 + number if sign == "+" else 1 - number if sign == "-" else number)
        elif _NUMBER.fullmatch(word):
            rate = inherited * float(word)
        else:
            raise self._error(f"<prosody rate=\"{_shown(value)}\">: not a rate (x-slow, slow, medium, fast, x-fast, "
                              "default, a percentage like 80% or +20%, or a factor like 1.2)", element.start)
        return min(MAX_RATE, max(MIN_RATE, rate))


class _Segments:
    """Spoken pieces, pauses and rate changes, cut into segments: at a pause due before more speech, or a new rate."""

    def __init__(self) -> None:
        self.done: list[Segment] = []
        self.rate_now = 1.0
        self._start()

    def _start(self) -> None:
        self.pieces: list[Piece] = []
        self.rate = self.rate_now
        self.speaks = False  # any piece that is not blank
        self.last = -1  # index of the last piece that is not blank
        self.ends_in_space = True
        self.explicit: float | None = None  # seconds of the breaks since the last speech, if any
        self.natural = 0.0  # a paragraph's pause since then
        self.separate = False  # a boundary since then: the next word must not join the last

    def piece(self, piece: Piece) -> None:
        if piece.text.strip():
            if self._pause() > 0 or self.speaks and self.rate_now != self.rate:
                self._close()
            if self.separate and self.speaks and not self.ends_in_space and not piece.text[0].isspace():
                self.pieces.append(Piece(piece.start, piece.start, " "))
            if not self.speaks:
                self.rate, self.speaks = self.rate_now, True
            self.explicit, self.natural, self.separate = None, 0.0, False  # pauses count between speech only
            self.last = len(self.pieces)
        self.pieces.append(piece)
        if piece.text:
            self.ends_in_space = piece.text[-1].isspace()

    def pause(self, brk: Break) -> None:
        self.explicit = (self.explicit or 0.0) + brk.seconds
        self.separate = True

    def boundary(self, natural: float) -> None:
        """A sentence or paragraph starts or ends here."""
        if self.speaks:
            self._end_sentence()
            self.natural = max(self.natural, natural)
        self.separate = True

    def set_rate(self, rate: float) -> None:
        self.rate_now = rate

    def result(self) -> list[Segment]:
        """The segments; at the very end only a break's pause is kept, not a paragraph's."""
        if self.explicit is not None and self.explicit > 0 or self.speaks:
            self.done.append(Segment(self.pieces, self.rate, min(MAX_BREAK_S, self.explicit or 0.0)))
        return self.done

    def _pause(self) -> float:
        return min(MAX_BREAK_S, self.explicit if self.explicit is not None else self.natural)

    def _close(self) -> None:
        self.done.append(Segment(self.pieces, self.rate, self._pause()))
        self._start()

    def _end_sentence(self) -> None:
        """A full stop after the last spoken word, unless punctuation ends it already."""
        last = self.pieces[self.last]
        body = last.text.rstrip()
        if body.rstrip(_CLOSERS)[-1:] in _SENTENCE_PUNCTUATION:
            return
        trail = last.text[len(body):]
        if last.verbatim:
            cut = last.start + len(body)
            ended = [Piece(last.start, cut, body, True), Piece(cut, cut, ".")]
            ended += [Piece(cut, last.end, trail, True)] if trail else []
        else:
            ended = [Piece(last.start, last.end, body + "." + trail)]
        self.pieces[self.last:self.last + 1] = ended
        self.last += 1 if last.verbatim else 0
