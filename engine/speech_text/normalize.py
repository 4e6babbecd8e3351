"""The text front end's rules: caller text (mostly LLM output) to the text Chatterbox-Turbo should read. Pure.

Four passes, chained with ``compose`` so every piece points into the caller's text: markdown (markdown.py), then
words (semiotic.py: every construct, from URLs and numbers in context to abbreviations, ALL-CAPS, symbols and emoji,
classified by its context and read by its class's verbaliser), then Turbo's own punctuation
replacements (engine/text.py ``TURBO_PUNCTUATION``), then whitespace: a run of it is one space, or one newline where it
held one; none before ``, . ; ! ?``. Every rule is local (see numbers.py), so text normalised piece by piece as it
streams in (engine/speech_text/stream.py, with markdown.py's ``open_tail``) reads the same as the whole.
"""

from __future__ import annotations

import functools
import re

from engine.speech_text import semiotic
from engine.speech_text.lexicon import Lexicon
from engine.speech_text import markdown as marks
from engine.speech_text.abbreviations import open_caps, open_counted
from engine.speech_text.addresses import open_address
from engine.speech_text.codes import open_math, open_service, open_tracking
from engine.speech_text.dates import open_time_range
from engine.speech_text.money import open_range
from engine.speech_text.numbers import open_duration, open_phone
from engine.speech_text.markdown import markdown
from engine.speech_text.spans import Piece, compose, spoken, substitute
from engine.text import TURBO_PUNCTUATION

__all__ = ["normalize", "open_tail", "punctuation_only", "words"]


def open_tail(text: str) -> int | None:
    """Where an unfinished construct at the end of ``text`` starts (a code fence, a link, an address, an expression,
    a phone number in spaced groups, an ALL-CAPS word whose next words are not there yet, a tracking number's groups,
    a range of amounts whose scale may follow, a time range not yet ended, a service number whose next words may
    name an emergency, a duration's hours before its minutes), or None: the streaming front end holds it until it
    is finished."""
    starts = [at for at in (marks.open_tail(text), open_address(text), open_math(text), open_phone(text),
                            open_caps(text), open_counted(text), open_tracking(text), open_range(text),
                            open_time_range(text), open_service(text), open_duration(text))
              if at is not None]
    return min(starts) if starts else None

_PUNCTUATION = re.compile("|".join(re.escape(old) for old, _ in TURBO_PUNCTUATION))
_PUNCTUATION_WORDS = dict(TURBO_PUNCTUATION)

_WHITESPACE = re.compile(r"(?=[\s,])(?:(?P<line>[^\S\n]*\n\s*)|(?P<before>[^\S\n]+(?=[,.;!?]))|(?P<commas>,(?:[^\S\n]*,)+)|(?P<run>[^\S\n]{2,}|[^\S \n]))")  # a place at neither a space nor a comma refused at once


# A no-break, narrow no-break or thin space is a space to the word rules ("2.5\u00a0kg", "9\u00a0am", "$\u00a0100"),
# except where it groups a number's thousands ("1\u202f000", "12\u00a0345\u00a0678"; a decimal's tail too): between
# digits grouped otherwise it is a space ("020\u00a07946\u00a00321": a phone number's groups). A typographic hyphen
# (non-breaking, figure dash, small or full-width hyphen-minus) is a hyphen to them ("508\u2011555\u20110199"); a
# fraction slash between digits a slash ("1\u20442"), en dashes between a phone number's groups hyphens ("555–010–4477",
# as typography sets them); an ordinal's suffix in superscript letters plain ("2ⁿᵈ": "2nd").
_HARD = "\u00a0\u202f\u2009"
# (each match starts with one of the characters of the look-ahead first: a place at any other is refused at once,
# not after each alternative's look-behind: ~0.03 ms less in a chunk of 300 characters, a quarter of this stop's cost)
_TYPOGRAPHIC = re.compile(rf"(?=[\d{_HARD}\u2010\u2011\u2012\ufe63\uff0d\u2044ˢⁿʳᵗ])(?:(?<![\w.,–-])(?:1–)?\d{{3}}–\d{{3}}–\d{{4}}(?![\w–-]|\.\d)|(?<![\d.,])\d+(?:[{_HARD}]\d+)+|[{_HARD}](?!\d)|(?<!\d)[{_HARD}]|[\u2010\u2011\u2012\ufe63\uff0d]|(?<=\d)\u2044(?=\d)|(?<=\d)(?:ˢᵗ|ⁿᵈ|ʳᵈ|ᵗʰ))")
_SUPERSCRIPT_SUFFIX = str.maketrans("ˢᵗⁿᵈʳʰ", "stndrh")
_THOUSANDS = re.compile(rf"[1-9]\d{{0,2}}(?:[{_HARD}]\d{{3}})+")


def _typographic(text: str) -> list[Piece]:
    return substitute(_TYPOGRAPHIC, text, _plain)


# A code's word right before digits: there a hard space only groups the code's digits ("verification code is
# 482\u00a0913": "four eight two nine one three"), no thousands
_CODE_BEFORE = re.compile(r"(?i:\bcodes?(?:[ \t]+(?:is|was))?[ \t]*:?[ \t]*)\Z")


def _plain(match: re.Match[str]) -> str | None:
    text = match.group()
    if "–" in text:
        return text.replace("–", "-")
    if text[0].isdigit():
        if _CODE_BEFORE.search(match.string, max(0, match.start() - 16), match.start()):
            return re.sub(f"[{_HARD}]", "", text)
        return None if _THOUSANDS.fullmatch(text) else re.sub(f"[{_HARD}]", " ", text)
    if text[0] in "ˢⁿʳᵗ":
        return text.translate(_SUPERSCRIPT_SUFFIX)
    return " " if text in _HARD else "/" if text == "\u2044" else "-"


def _space(match: re.Match[str]) -> str:
    return {"line": "\n", "before": "", "commas": ",", "run": " "}[match.lastgroup or "run"]


def words(text: str, locale: str | None = None) -> list[Piece]:
    """The word rules alone (no markdown), on ``text``: classified, then verbalised (semiotic.py)."""
    return semiotic.words(text, locale)


def normalize(text: str, lexicon: Lexicon | None = None, locale: str | None = None) -> list[Piece]:
    """The spoken form of ``text`` as pieces of it (covering it in order); ``lexicon``'s aliases replace its
    graphemes first, before the word rules (its "SQL" is "sequel", never spelled). ``locale``: semiotic.LOCALES."""
    pieces = markdown(text)
    read = functools.partial(words, locale=locale)
    passes = (_typographic, read, punctuation_only, _whitespace) if lexicon is None else (
        lexicon.apply, _typographic, read, punctuation_only, _whitespace)
    for rules in passes:
        pieces = compose(pieces, rules(spoken(pieces)))
    return pieces


def _whitespace(text: str) -> list[Piece]:
    return substitute(_WHITESPACE, text, _space)


def punctuation_only(text: str) -> list[Piece]:
    """The ``normalize = off`` form: only Chatterbox-Turbo's own punctuation rules, nothing else."""
    return substitute(_PUNCTUATION, text, lambda match: _PUNCTUATION_WORDS[match.group()])
