"""Classify, then verbalise: the word pass of the text front end. Pure.

Every rule of the rule modules (web.py, numbers.py, codes.py, addresses.py, abbreviations.py, symbols.py) is a
recogniser of one construct with its verbaliser. ``classify`` finds every place each recogniser matches, then
resolves them as a tokenizer does: leftmost first, then the longest reading ("1-2=5" is maths before "1-2" is a
range; "+1 415 555 0100" one telephone number before four numbers), and among readings of one extent the one its
context accepts: a verbaliser that returns None declines in that context ("IV" is a numeral after "Chapter", a word
elsewhere; "4B" is a unit after "Apt.", four billion elsewhere), and the next reading is tried. Rule order breaks the
remaining ties only. Each reading carries its semiotic class (``CLASSES``), which ``say --dry-run`` prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from engine.speech_text import abbreviations, addresses, codes, dates, money, numbers, symbols, web
from engine.speech_text.spans import Piece, rewrite

_TAG = ("tag", r"\[[^\[\]\n]{1,38}\]", lambda match: match.group())  # only Turbo's tags are left by markdown()
RULES = [_TAG, *web.RULES, *addresses.RULES, *codes.RULES, *dates.RULES, *money.RULES, *numbers.RULES, *abbreviations.RULES, *symbols.RULES]
_PATTERNS = [(name, re.compile(pattern), handler) for name, pattern, handler in RULES]

# Each rule's semiotic class (the names of Sparrowhawk's and NeMo's English grammars, where one fits).
CLASSES = {
    "tag": "tag", "email": "electronic", "url": "electronic", "ip": "electronic",
    "address": "address", "unit": "address", "zip": "address",
    "serial": "serial", "grouped_digits": "telephone", "local_phone": "telephone", "vanity": "telephone", "extension": "telephone",
    "roman": "roman", "regnal": "roman", "math": "math",
    "phone": "telephone", "iso_date": "date", "slash_date": "date", "dotted_date": "date", "month_date": "date",
    "day_month": "date", "time": "time", "hour": "time", "time_range": "range", "dotted_time": "time",
    "ratio": "math", "money": "money", "coded_money": "money", "version": "electronic", "mixed_fraction": "fraction",
    "fraction": "fraction", "decade": "date", "number_sign": "cardinal", "percent_range": "range", "feet": "measure",
    "decimal": "decimal", "weekday": "date", "dotted_date": "date", "quantity": "cardinal", "measure": "measure",
    "title": "abbreviation", "abbreviation": "abbreviation", "dotted": "abbreviation", "caps": "abbreviation",
    "sharp": "plain", "words": "math", "compare": "math", "about": "plain", "power": "math", "slash": "plain",
    "dash": "plain", "emoji": "plain", "stray": "plain", "bar": "plain",
}


@dataclass(frozen=True)
class Reading:
    start: int
    end: int
    kind: str  # the semiotic class (CLASSES)
    said: str


def classify(text: str) -> list[Reading]:
    """Every construct in ``text`` that is said otherwise than written, in order, not overlapping."""
    found: list[tuple[int, int, int, re.Match[str], Callable[[re.Match[str]], str | None]]] = []
    for order, (name, pattern, handler) in enumerate(_PATTERNS):
        found += [(m.start(), -m.end(), order, m, handler) for m in pattern.finditer(text) if m.end() > m.start()]
    found.sort(key=lambda f: f[:3])
    readings: list[Reading] = []
    at = 0
    for start, _, order, match, handler in found:
        if start < at:
            continue
        said = handler(match)
        if said is not None:
            readings.append(Reading(start, match.end(), CLASSES[_PATTERNS[order][0]], said))
            at = match.end()
    return readings


def words(text: str) -> list[Piece]:
    """``text`` with every construct classified and verbalised, as pieces of it."""
    return rewrite(text, ((r.start, r.end, r.said) for r in classify(text)))
