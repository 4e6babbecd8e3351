"""Classify, then verbalise: the word pass of the text front end. Pure.

Every rule of the rule modules (web.py, addresses.py, codes.py, dates.py, money.py, numbers.py, abbreviations.py,
symbols.py) is a recogniser of one construct with its verbaliser. ``classify`` finds where the next construct may
start (one pattern of them all), asks every recogniser what it reads there, and resolves them as a tokenizer does:
leftmost first, then the longest reading ("1-2=5" is maths before "1-2" is a
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
LOCALES = ("en-US", "en-GB")  # en-GB reads slashed dates day first


Rules = list[tuple[str, re.Pattern[str], Callable[[re.Match[str]], "str | None"]]]


def _compiled(day_first: bool) -> tuple[re.Pattern[str], Rules]:
    """A locale's rules, and one pattern of them all that finds where the next construct may start."""
    rules = [_TAG, *web.RULES, *addresses.RULES, *codes.RULES, *dates.rules(day_first), *money.RULES,
             *numbers.RULES, *abbreviations.RULES, *symbols.RULES, *codes.LAST_RESORT]
    anywhere = re.compile("|".join(f"(?:{pattern})" for _, pattern, _ in rules))
    return anywhere, [(name, re.compile(pattern), handler) for name, pattern, handler in rules]


_RULES = {"en-US": _compiled(False), "en-GB": _compiled(True)}


# Each rule's semiotic class (the names of Sparrowhawk's and NeMo's English grammars, where one fits).
CLASSES = {
    "tag": "tag", "email": "electronic", "url": "electronic", "ip": "electronic",
    "address": "address", "unit": "address", "zip": "address",
    "serial": "serial", "grouped_digits": "telephone", "local_phone": "telephone", "vanity": "telephone", "extension": "telephone",
    "roman": "roman", "regnal": "roman", "math": "math", "leftover": "serial",
    "phone": "telephone", "iso_date": "date", "slash_date": "date", "dotted_date": "date", "month_date": "date",
    "day_month": "date", "time": "time", "hour": "time", "time_range": "range", "dotted_time": "time",
    "ratio": "math", "money": "money", "coded_money": "money", "version": "electronic", "mixed_fraction": "fraction",
    "fraction": "fraction", "decade": "date", "number_sign": "cardinal", "percent_range": "range", "feet": "measure", "feet_inches": "measure", "month_range": "range", "day_range": "range", "month_day": "date", "vulgar_fraction": "fraction", "dimensions": "measure",
    "inches": "measure", "military": "time", "handle": "electronic", "hashtag": "electronic", "hex": "serial",
    "short_code": "telephone", "service_code": "telephone", "spaced_phone": "telephone",
    "decimal": "decimal", "weekday": "date", "month": "date", "local_phone": "telephone", "percent_range": "range", "feet": "measure", "feet_inches": "measure", "month_range": "range", "day_range": "range", "month_day": "date", "vulgar_fraction": "fraction", "dimensions": "measure",
    "inches": "measure", "military": "time", "handle": "electronic", "hashtag": "electronic", "hex": "serial",
    "short_code": "telephone", "service_code": "telephone", "spaced_phone": "telephone", "weekday": "date", "month": "date", "dotted_date": "date", "quantity": "cardinal", "measure": "measure",
    "title": "abbreviation", "abbreviation": "abbreviation", "dotted": "abbreviation", "caps": "abbreviation",
    "sharp": "plain", "words": "math", "compare": "math", "about": "plain", "power": "math", "squared": "math", "cubed": "math", "slash": "plain",
    "dash": "plain", "emoji": "plain", "stray": "plain", "bar": "plain",
}


@dataclass(frozen=True)
class Reading:
    start: int
    end: int
    kind: str  # the semiotic class (CLASSES)
    said: str


def classify(text: str, locale: str | None = None) -> list[Reading]:
    """Every construct in ``text`` that is said otherwise than written, in order, not overlapping."""
    anywhere, rules = _RULES[locale or "en-US"]
    readings: list[Reading] = []
    at = 0
    while (next_one := anywhere.search(text, at)) is not None:
        start = next_one.start()
        found = [(match, order) for order, (_, pattern, _) in enumerate(rules)
                 if (match := pattern.match(text, start)) is not None and match.end() > start]
        found.sort(key=lambda f: (-f[0].end(), f[1]))
        for match, order in found:
            try:
                said = rules[order][2](match)
            except (KeyError, ValueError, IndexError, OverflowError):  # a reading the rule cannot make: the next one's
                said = None
            if said is not None:
                name = rules[order][0]
                kind = numbers.quantity_kind(match.group()) if name == "quantity" else CLASSES[name]
                readings.append(Reading(start, match.end(), kind, said))
                at = match.end()
                break
        else:
            at = start + 1
    return readings


def words(text: str, locale: str | None = None) -> list[Piece]:
    """``text`` with every construct classified and verbalised, as pieces of it."""
    readings = classify(text, locale)
    kinds = {(r.start, r.end): r.kind for r in readings}
    return [Piece(p.start, p.end, p.text, p.verbatim, "" if p.verbatim else kinds.get((p.start, p.end), ""))
            for p in rewrite(text, ((r.start, r.end, r.said) for r in readings))]
