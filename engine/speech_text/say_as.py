"""What SSML's ``<say-as interpret-as=...>`` speaks for its text. Pure.

``interpret`` returns the words, or None where the kind is not one it knows or the text does not read as that kind
("abc" as a cardinal): the caller then speaks the text as ordinary text, as speech engines do. Numbers, dates and
times are said by the same readers as in plain text (words.py, dates.py), so a number reads alike either way. Numbers
are bounded (``MAX_DIGITS``) so no interpretation costs more than its text's length.
"""

from __future__ import annotations

import calendar
import re

from engine.speech_text import words as w
from engine.speech_text.dates import clock, date_words

MAX_DIGITS = w.MAX_DIGITS  # digits of a number said as words; a longer one is spoken as ordinary text
_SYMBOL_WORDS = {"-": "dash", ".": "dot", "@": "at", "_": "underscore", "/": "slash", "#": "hash", "+": "plus",
                 "&": "and", "*": "star", "%": "percent", ":": "colon", ",": "comma"}
_MONTHS = ("january february march april may june july august september october november december").split()
_MONTH_NUMBER = {name[:n]: i + 1 for i, name in enumerate(_MONTHS) for n in (3, len(name))} | {"sept": 9}
_DATE_FORMATS = frozenset("mdy dmy ymd md dm ym my y".split())

_CARDINAL = re.compile(r"([+-]?)(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?")
_ORDINAL = re.compile(r"(\d{1,3}(?:,\d{3})+|\d+)(?:st|nd|rd|th)?\.?", re.IGNORECASE)
_TELEPHONE = re.compile(r"\+?[\d\s().\-/]+")
_DATE_FIELD = re.compile(r"\d+|[^\W\d_]+")
_TIME = re.compile(r"(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s*(?:([ap])\.?\s*m\.?)?", re.IGNORECASE)


def interpret(kind: str, fmt: str | None, text: str) -> str | None:
    """The words ``<say-as interpret-as=kind format=fmt>text</say-as>`` speaks, or None: speak ``text`` as it is."""
    reader = _READERS.get(kind.strip().lower())
    return reader(text.strip(), (fmt or "").strip().lower()) if reader else None


def _characters(text: str, fmt: str) -> str | None:
    """Letter by letter ("FBI" -> "F B I"); digits and common symbols by name; whitespace dropped."""
    said = [_char_word(c) for c in text if not c.isspace()]
    return " ".join(said) or None


def _char_word(c: str) -> str:
    if c.isdigit() and c.isascii():
        return w.DIGIT_WORDS[int(c)]
    return c.upper() if c.isalpha() else _SYMBOL_WORDS.get(c, c)


def _cardinal(text: str, fmt: str) -> str | None:
    """"1,234" -> "one thousand two hundred thirty-four"; "-3.05" -> "minus three point zero five"."""
    match = _CARDINAL.fullmatch(text)
    if not match:
        return None
    sign, whole, fraction = match.groups()
    whole = whole.replace(",", "")
    if len(whole) > MAX_DIGITS or len(fraction or "") > MAX_DIGITS:
        return None
    said = ("minus " if sign == "-" else "") + w.cardinal(str(int(whole)))
    return said + (" point " + w.digits(fraction) if fraction else "")


def _ordinal(text: str, fmt: str) -> str | None:
    match = _ORDINAL.fullmatch(text)
    if not match or len(number := match.group(1).replace(",", "")) > MAX_DIGITS:
        return None
    return w.ordinal(str(int(number)))


def _digits(text: str, fmt: str) -> str | None:
    """Digit by digit ("1234" -> "one two three four"); letters spelt; any other character a pause between groups."""
    groups = re.findall(r"[^\W_]+", text)
    if not any(c.isdigit() for c in text):
        return None
    return ", ".join(" ".join(_char_word(c) for c in group) for group in groups)


def _telephone(text: str, fmt: str) -> str | None:
    """Digits in their written groups ("(555) 123-4567" -> "five five five, one two three, four five six seven"); one
    run of digits grouped as a North American number is said (last four, the rest in threes from the right)."""
    if not _TELEPHONE.fullmatch(text) or not (groups := re.findall(r"\d+", text)):
        return None
    if len(groups) == 1 and len(groups[0]) > 4:
        head, first = groups[0][:-4], (len(groups[0]) - 4) % 3 or 3
        groups = [head[:first]] + [head[i:i + 3] for i in range(first, len(head), 3)] + [groups[0][-4:]]
    said = ", ".join(w.digits(group) for group in groups)
    return "plus " + said if text.startswith("+") else said


def _date(text: str, fmt: str) -> str | None:
    """``fmt`` one of mdy dmy ymd md dm ym my y; without one, "2024-03-05" (year first) reads ymd, anything else mdy.
    Month and day first: "March fifth, twenty twenty-four"; day first: "the fifth of March twenty twenty-four"."""
    fields = _DATE_FIELD.findall(text)
    if not fmt:
        fmt = ("ymd" if fields and len(fields[0]) == 4 and fields[0].isdigit() else "mdy")[:len(fields)]
    if fmt not in _DATE_FORMATS or len(fields) != len(fmt):
        return None
    value = dict(zip(fmt, fields))
    month = _month(value["m"]) if "m" in value else None
    year = int(value["y"]) if value.get("y", "").isdigit() and len(value["y"]) <= 4 else None
    day = int(value["d"]) if value.get("d", "").isdigit() and len(value["d"]) <= 2 else None
    if month is None and "m" in fmt or year is None and "y" in fmt or day is None and "d" in fmt:
        return None
    if day is not None and not 1 <= day <= calendar.monthrange(year or 2000, month or 1)[1]:
        return None
    if month is None:
        return w.year(year) if year is not None else None
    return date_words(month, day, year, "the " if day is not None and fmt.index("d") < fmt.index("m") else None)


def _month(field: str) -> int | None:
    if field.isdigit():
        return int(field) if len(field) <= 2 and 1 <= int(field) <= 12 else None
    return _MONTH_NUMBER.get(field.lower())


def _time(text: str, fmt: str) -> str | None:
    """"3:30pm" -> "three thirty PM", "3:05" -> "three oh five", "15:00" -> "fifteen hundred", "3:00" -> "three
    o'clock"; seconds as "and ten seconds". A bare hour needs its am/pm ("3pm")."""
    match = _TIME.fullmatch(text)
    if not match:
        return None
    hour, minute, second, half = int(match.group(1)), match.group(2), match.group(3), match.group(4)
    if half is None and minute is None or not (1 <= hour <= 12 if half else hour <= 23):
        return None
    minutes, seconds = int(minute or 0), int(second or 0)
    if minutes > 59 or seconds > 59:
        return None
    return clock(str(hour) + "".join(f":{part}" for part in (minute, second) if part) + (f" {half}m" if half else ""))


_READERS = {
    "characters": _characters, "spell-out": _characters,
    "cardinal": _cardinal, "number": _cardinal,
    "ordinal": _ordinal,
    "digits": _digits,
    "telephone": _telephone,
    "date": _date,
    "time": _time,
}
