"""Dates, times, days of the week and their ranges, read as a person says them. Pure.

Dates: ISO (``2024-03-05``), slashed (``3/5/2024``: month first in en-US, day first in en-GB, and day first in either
where the first number cannot be a month), dotted (``01.10.2010``: day first, as it is written where it is written),
written (``June 20, 2014``, ``june 20 2014``, ``JAN 15 2020``, ``26th May``, ``the 5th of June``), said with the day
an ordinal ("June twentieth, twenty fourteen"). Times: 12 and 24 hour (``01:00`` "one o'clock", ``14:00`` "fourteen
hundred", ``00:30`` "twelve thirty AM"), dotted with AM/PM (``1.59 p.m.``), ranges (``2-4pm`` "two to four PM").
"""

from __future__ import annotations

import math
import re

from engine.speech_text import words as w
from engine.speech_text.numbers import CODE_NOUN, UNITS, Rule, ends_sentence_after

MONTHS = "January February March April May June July August September October November December".split()
_MONTH_NUMBER = {m: i + 1 for i, m in enumerate(MONTHS)} | {m[:3]: i + 1 for i, m in enumerate(MONTHS)} | {"Sept": 9}
_MONTH_FORMS = sorted({form for name in _MONTH_NUMBER for form in (name, name.upper(), name.lower())}
                      - {"mar", "jun", "jul", "aug", "dec"}, key=len, reverse=True)  # lower-case short: other words
_MONTH = r"(?:%s)" % "|".join(_MONTH_FORMS)
# Before a day's number, the small short forms that are words elsewhere ("mar 3 2021", "dec. 25"): a month.
_MONTH_DAY = r"(?:%s|(?:mar|jun|jul|aug|dec)(?=\.?,?[ \t](?:[12]\d|3[01]|0?[1-9])(?!\d)))" % "|".join(_MONTH_FORMS)
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?!\d)(?:st|nd|rd|th)?"
_FULL_WEEKDAY = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
_AMPM = r"(?:[aApP](?:\.[mM]\.?|[mM]))"
WEEKDAYS = {"Mon": "Monday", "Tue": "Tuesday", "Tues": "Tuesday", "Wed": "Wednesday", "Thu": "Thursday",
            "Thur": "Thursday", "Thurs": "Thursday", "Fri": "Friday", "Sat": "Saturday", "Sun": "Sunday"}
# after a word that names a day ("on Tues", "RSVP BY FRI"): one look-behind a word and case (each of a fixed width)
_ON_DAY = "(?:%s)" % "|".join(rf"(?<=\b{form}[ \t])" for word in "on by until till next every".split()
                              for form in (word, word.upper()))
_WEEKDAY = r"(?:%s)" % "|".join(sorted({f for d in WEEKDAYS for f in (d, d.upper())}, key=len, reverse=True))


def month_number(name: str) -> int:
    return _MONTH_NUMBER[name.rstrip(".").title()]


def _year_month(match: re.Match[str]) -> str | None:
    """"2020-01" (ISO 8601's year and month) -> "January twenty twenty"; "2010-11", a season, and a code after a
    word that names one ("case 2021-03") are not."""
    year, month = (int(part) for part in match.group().split("-"))
    if month == (year + 1) % 100 or CODE_NOUN.search(match.string, max(0, match.start() - 16), match.start()):
        return None
    return date_words(month, None, year)


def date_words(month: int, day: int | None, year: int | None, day_first: str | None = None) -> str:
    """A date's words; a day-first date says ``day_first`` before its day ("the ", or "" where the text has "of")."""
    name = MONTHS[month - 1]
    if day is None:
        return name + (" " + w.year(year) if year is not None else "")
    said = f"{name} {w.ordinal(str(day))}" if day_first is None else f"{day_first}{w.ordinal(str(day))} of {name}"
    return said + (", " + w.year(year) if year is not None else "")


def _full_year(text: str) -> int:
    return int(text) if len(text) == 4 else 2000 + int(text) if int(text) < 50 else 1900 + int(text)


def _valid(month: int, day: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= 31


def _iso_date(match: re.Match[str]) -> str:
    y, m, d = (int(x) for x in re.split(r"[-/.]", match.group()))
    return date_words(m, d, y)


def _iso_datetime(match: re.Match[str]) -> str:
    """"2025-07-04T15:00" (an ISO 8601 timestamp, as a database gives it): "July fourth, twenty twenty-five at fifteen
    hundred"; "Z" is UTC, an offset is said as one."""
    day, _, time = match.group().partition("T")
    y, m, d = (int(x) for x in day.split("-"))
    zone = re.search(r"(Z|[+-]\d\d:?\d\d)$", time)
    clock_part = time[:zone.start()] if zone else time
    said = f"{date_words(m, d, y)} at {clock(clock_part[:5])}"
    if zone and zone.group() == "Z":
        return said + " U T C"
    if zone:
        hours, minutes = zone.group()[1:3], zone.group()[-2:]
        offset = w.cardinal(str(int(hours))) + ("" if minutes == "00" else " " + w.cardinal(minutes))
        return said + f" U T C {'plus' if zone.group()[0] == '+' else 'minus'} {offset}"
    return said


def _numeric_date(day_first: bool):  # type: ignore[no-untyped-def]
    """A slashed date's reader: month first unless ``day_first`` (en-GB); either way a first number over 12 is the
    day, and a date no calendar has is declined (read as numbers)."""

    def read(match: re.Match[str]) -> str | None:
        a, b, y = (int(x) for x in match.group().split("/"))
        month, day = (b, a) if (day_first and b <= 12) or a > 12 else (a, b)
        return date_words(month, day, _full_year(match.group().rsplit("/", 1)[1])) if _valid(month, day) else None

    return read


def _dotted_date(match: re.Match[str]) -> str | None:
    day, month, year = match.group().split(".")
    if not _valid(int(month), int(day)):
        return None
    return date_words(int(month), int(day), _full_year(year), "the ")  # day first, said so: "the first of April"


_MONTH_DATE_PARTS = re.compile(
    rf"({_MONTH_DAY})\.?,?[ \t](?:(?:the[ \t])?(\d{{1,2}})(?:st|nd|rd|th)?(?:,?[ \t](\d{{4}}))?|(\d{{4}}))")
_DAY_MONTH_PARTS = re.compile(rf"(\d{{1,2}})(?:st|nd|rd|th)?[ \t](of[ \t])?({_MONTH}|mar|jun|jul|aug|dec)\.?(?:,?[ \t](\d{{4}}))?")


def _dashed_date(match: re.Match[str]) -> str:
    """"15-Aug-2025", "Mar-10-2025" -> "March tenth, twenty twenty-five" (forms booking systems print)."""
    first, second, year = re.split(r"[-–]", match.group())
    day, month = (first, second) if first.isdigit() else (second, first)
    return date_words(month_number(month.rstrip(".")), int(day), _full_year(year))


def fiscal_year(match: re.Match[str]) -> str:
    """"FY2025" -> "fiscal year twenty twenty-five", "FY24" -> "fiscal year twenty-four"."""
    year = match.group()[2:].strip()
    return "fiscal year " + (w.year(int(year)) if len(year) == 4 else w.cardinal(year))


_FORETOLD = re.compile(r"(?i:\b(?:could|will|would|may|might|should|expected|projected|forecasts?|forecasted|predicted|"
                       r"predicts?|estimated|likely|warns?|warned|set[ \t]to|is[ \t]to|are[ \t]to|plans?|aims?|goals?|target))"
                       r"\b[^.!?\n]*\Z")


def _future_year(match: re.Match[str]) -> str | None:
    if not _FORETOLD.search(match.string, max(0, match.start() - 100), match.start()) or re.match(
            r"[ \t]+(?!(?:and|or|the|to|if|when|as|unless|but|at|in|from|than|compared|levels?)\b)[a-z]",
            match.string[match.end():match.end() + 16]):  # "by 2100 meters": a count
        return None
    return w.year(int(match.group()))


def _since_year(match: re.Match[str]) -> str:
    """"1990-present" -> "nineteen ninety to present"."""
    year, rest = re.split(r"[ \t]?[-–—][ \t]?", match.group(), maxsplit=1)
    return f"{w.year(int(year))} to {rest}"


def _month_date(match: re.Match[str]) -> str:
    parts = _MONTH_DATE_PARTS.fullmatch(match.group())
    assert parts
    month, day, year, year_only = parts.groups()
    return date_words(month_number(month), int(day) if day else None,
                      int(year or year_only) if (year or year_only) else None)


def _day_month(match: re.Match[str]) -> str | None:
    parts = _DAY_MONTH_PARTS.fullmatch(match.group())
    assert parts
    day, of, month, year = parts.groups()
    if month == "may" and not of and not year:
        return None  # "3 may apply": the verb
    after_the = match.string[max(0, match.start() - 4):match.start()].lower() == "the "
    return date_words(month_number(month), int(day), int(year) if year else None, "" if of or after_the else "the ")


def _month(match: re.Match[str]) -> str:
    """"Jan." -> "January" (and the full stop, where a sentence ends)."""
    return MONTHS[month_number(match.group()) - 1] + ("." if ends_sentence_after(match) else "")


def _month_range(match: re.Match[str]) -> str:
    """"Jan-Mar" -> "January to March"."""
    return " to ".join(MONTHS[month_number(m) - 1] for m in re.findall(r"[A-Za-z]+", match.group()))


def _day_range(match: re.Match[str]) -> str:
    """"Nov 24-27, 2025" -> "November twenty-fourth to twenty-seventh, twenty twenty-five"."""
    parts = re.fullmatch(rf"({_MONTH})\.?[ \t](\d{{1,2}})(?:st|nd|rd|th)?[ \t]?[-–][ \t]?(\d{{1,2}})(?:st|nd|rd|th)?"
                         rf"(?:,?[ \t](\d{{4}}))?", match.group())
    assert parts
    month, first, last, year = parts.groups()
    said = f"{MONTHS[month_number(month) - 1]} {w.ordinal(first)} to {w.ordinal(last)}"
    return said + (", " + w.year(int(year)) if year else "")


def _days_month(match: re.Match[str]) -> str:
    """"12-15 July" -> "the twelfth to the fifteenth of July" ("the" once, where the text has it)."""
    first, last, month, year = re.fullmatch(  # type: ignore[union-attr]
        rf"(\d+)\D*?[-–][ \t]?(\d+)\D*?[ \t](?:of[ \t])?({_MONTH})\.?(?:,?[ \t](\d{{4}}))?", match.group()).groups()
    after_the = match.string[max(0, match.start() - 4):match.start()].lower() == "the "
    said = f"{'' if after_the else 'the '}{w.ordinal(first)} to the {w.ordinal(last)} of {MONTHS[month_number(month) - 1]}"
    return said + (", " + w.year(int(year)) if year else "")


# A shouted weekday's abbreviation that is a word after these ("IN DIRECT SUN.", "SHE SAT."): the sun, sat.
_WORD_DAY_BEFORE = re.compile(r"(?<![\w'’])(?:THE|DIRECT|FULL|HOT|BRIGHT|STRONG|MIDDAY|SUMMER|MORNING|EVENING|"
                              r"AFTERNOON|IN|OF|HE|SHE|IT|THEY|WE|I|WHO|NEWLY|JUST)[ \t]+\Z")


def _weekday_pair(match: re.Match[str]) -> str:
    """"Sat and Sun", "SUN AND MON", "Tue or Wed": two days' abbreviations joined, both days."""
    first, joiner, second = re.fullmatch(r"([A-Za-z]+)\.?[ \t]+(\S+)[ \t]+([A-Za-z]+)\.?", match.group()).groups()  # type: ignore[union-attr]
    said = f"{WEEKDAYS[first.title()]} {'and' if joiner in ('&', 'AND', 'and') else 'or'} {WEEKDAYS[second.title()]}"
    return said + ("." if match.group().endswith(".") and ends_sentence_after(match) else "")


# "Sun, sand and surf": the sun in a list of lower-case words ("Sun, Mar 3", "Sat, Sun", "Sun, sat and mon" are days)
_SUN_AMONG_WORDS = re.compile(r",[ \t]+(?!(?:mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
                              r"[a-z]*\b)[a-z]")


# The college test, not Saturday: after "the", beside the ACT or the PSAT, before a score, a test's word
_SAT_TEST = re.compile(r"(?i:\bthe)[ \t]+SAT\b|\b(?:P?SAT|ACT)(?:[ \t]+(?:and|or|&|/)[ \t]+|/)(?:P?SAT|ACT)\b"
                       r"|\bSAT[ \t]+(?i:scores?|prep|tests?|exam|school|subject|math|reading|essay|registration|"
                       r"practice|tutor\w*|results?|code|requirements?|optional)\b")


def _weekday(match: re.Match[str]) -> str | None:
    if match.group().rstrip(".").isupper() and _WORD_DAY_BEFORE.search(
            match.string, max(0, match.start() - 12), match.start()):
        return None
    if match.group().rstrip(".") == "SAT" and _SAT_TEST.search(
            match.string, max(0, match.start() - 12), min(len(match.string), match.end() + 16)):
        return None  # "the SAT", "SAT and ACT", "SAT score": the test, spelled (abbreviations.py), not Saturday
    if match.group().rstrip(".") == "Sun" and re.search(r"\b[Tt]he[ \t]\Z", match.string[max(0, match.start() - 5):match.start()]):
        return None  # "from the Sun": the star (no day is "the Sun")
    if match.group() == "Sun" and _SUN_AMONG_WORDS.match(match.string, match.end()) and not re.search(
            rf"{_WEEKDAY}\.?,[ \t]\Z", match.string[max(0, match.start() - 8):match.start()]):
        return None
    days = [WEEKDAYS[d.title()] for d in re.findall(r"[A-Za-z]+", match.group())]
    if match.group().islower():
        days = [day.lower() for day in days]
    return " to ".join(days) + ("." if match.group().endswith(".") and ends_sentence_after(match) else "")


def _short_year(match: re.Match[str]) -> str:
    """"'98" -> "ninety-eight", "'05" -> "oh five": a year with its century left out."""
    digits = match.group()[1:]
    return w.cardinal(digits) if digits[0] != "0" else "oh " + w.cardinal(digits[1])


def _decade(match: re.Match[str]) -> str:
    text = match.group().lstrip("'’").rstrip("s")
    if text[-1] in "'’":  # "the 1990's": a decade after "the" (or early, late, mid); "2020's best" is a possessive
        if not re.search(r"(?i:\b(?:the|early|late|mid|mid-))[ \t-]*\Z", match.string[max(0, match.start() - 8):match.start()]):
            return None
        text = text[:-1]
    return w.plural(w.year(int(text)) if len(text) == 4 else w.cardinal(text))


def _slash_date_range(match: re.Match[str]) -> str | None:
    """"1/1–1/15", "12/24-12/31": two months and days, the second not before the first, where one side is no fraction
    anyone writes bare (over one or 13-31 but 16, or improper and reducible): "January first to January fifteenth";
    "1/2-3/4" (halves, quarters) stays fractions."""
    (a, b), (c, d) = ((int(n) for n in side.split("/")) for side in re.split(r"[ \t]?[-–][ \t]?", match.group()))
    if not (1 <= a <= 12 and 1 <= c <= 12 and 1 <= b <= 31 and 1 <= d <= 31) or (c, d) < (a, b):
        return None
    if not any(day == 1 or 13 <= day <= 31 and day != 16 or month > day > 2 and math.gcd(month, day) > 1
               for month, day in ((a, b), (c, d))):
        return None
    return f"{date_words(a, b, None)} to {date_words(c, d, None)}"


# --- times -----------------------------------------------------------------------------------------------------------

_CLOCK = r"(?:[01]?\d|2[0-4])[:.][0-5]\d(?::[0-5]\d)?"
_HOUR = r"(?:1[0-2]|0?[1-9])"
_TIME = rf"(?<![\w:.])(?:[01]?\d|2[0-4]):[0-5]\d(?::[0-5]\d)?(?:[ \t]?(?:{_AMPM}|noon|midnight))?(?![\w:])"
_DOTTED_TIME = rf"(?<![\w:.]){_HOUR}\.[0-5]\d[ \t]?{_AMPM}(?![\w])"
_HOUR_AMPM = rf"(?<![\w:.]){_HOUR}[ \t]?(?:{_AMPM}|noon|midnight)(?![\w])"
# A time written with a full stop ("9.30"), on its own without AM or PM, is a time only on the quarter hour:
# "9.30–11.15" is a morning, "7.35–7.45" two decimals (a pH, a reading)
_QUARTER_CLOCK = r"(?:[01]?\d|2[0-4])(?::[0-5]\d|\.(?:00|15|30|45))(?::[0-5]\d)?"
_ONE_TIME = rf"(?:{_CLOCK}|{_HOUR})(?:[ \t]?{_AMPM})?"
_TIME_RANGE = (rf"(?<![\w:.$])(?:{_ONE_TIME}[ \t]?[-–][ \t]?{_ONE_TIME}[ \t]?{_AMPM}"
               rf"|{_QUARTER_CLOCK}[ \t]?[-–][ \t]?{_QUARTER_CLOCK}"
               # "around 7-7:30": an hour, then a time with its minutes (a colon's), no AM or PM
               rf"|{_HOUR}[ \t]?[-–][ \t]?{_HOUR}:[0-5]\d)(?![\w:])")
# A time and a dash at the end of streamed text, maybe an hour after it: the range it may start ("9 am – 5" before
# "pm": "nine AM to five PM") reaches more words past "am" than a stream looks ahead, so it is held until finished.
_OPEN_TIME_RANGE = re.compile(rf"(?<![\w:.$]){_ONE_TIME}[ \t]?[-–][ \t]?(?:(?:{_CLOCK}|{_HOUR})(?:[ \t]?[aApP]\.?)?)?[ \t]*\Z")


def open_time_range(text: str) -> int | None:
    """Where a time range that later text may finish starts at the end of ``text`` ("9 am – 5 "), or None."""
    tail = _OPEN_TIME_RANGE.search(text, max(0, len(text) - 40))
    return tail.start() if tail else None


_TIME_PARTS = re.compile(rf"(\d{{1,2}})(?:[:.](\d\d))?(?::(\d\d))?[ \t]?(?:({_AMPM})|(noon|midnight))?")


def clock(text: str, sentence_ends: bool = False) -> str:
    """One time of day's words: "9:05 am" -> "nine oh five AM"."""
    parts = _TIME_PARTS.fullmatch(text.strip())
    assert parts
    hour, minutes, seconds, ampm, named = parts.groups()
    h = int(hour)
    if h == 0 and not ampm and not named:
        if minutes in (None, "00") and not seconds:
            return "midnight"
        h, ampm = 12, "am"
    said = w.cardinal(str(h))
    if minutes and minutes != "00":
        said += " " + ("oh " + w.cardinal(minutes[1]) if minutes[0] == "0" else w.cardinal(minutes))
    elif minutes and not ampm and not named:
        said += " hundred" if h > 12 else " o'clock"
    if seconds and int(seconds):
        said += " and " + w.cardinal(str(int(seconds))) + (" second" if int(seconds) == 1 else " seconds")
    if ampm:
        said += " AM" if ampm[0] in "aA" else " PM"
        if "." in ampm and ampm.endswith(".") and sentence_ends:
            said += "."
    elif named:
        said += " " + named
    return said


# Before "3:45:12": a word about how long ("her time was", "finished in", "clocked"), not a time of day ("at").
_DURATION_CUE = re.compile(r"(?i:\b(?:took|takes|lasted|lasts|duration|elapsed|finish(?:ed|es|ing)?|won|ran|completed|"
                           r"run[ \t]?time|time[ \t]of|clocked|record|split|lap|race|marathon|timer|length|"
                           # a place in a video or a stream: "skip to 1:02:45"
                           r"(?:skip|jump|seek|scrub|rewind|fast[- ]?forward)[ \t]+(?:ahead[ \t]+|back[ \t]+)?to|"
                           # "her time was", "winning time": whose time, or a race's, is how long it took
                           r"(?:my|his|her|their|our|your|winning|finishing|best|fastest|total|official|chip|gun)"
                           r"[ \t]+times?)\b"
                           r"[^.!?\n]{0,20}|\bin[ \t]+)(?<!\bat[ \t])$")


# "Clip timestamp: 3:47:10": a video's timestamp with an unpadded hour is a place in it (a log's "14:32:10" is a time)
_VIDEO_STAMP = re.compile(r"(?i:\btime[ \t]?stamps?\b)[^.!?\n]{0,20}\Z")


def _elapsed(match: re.Match[str]) -> bool:
    return _DURATION_CUE.search(match.string[max(0, match.start() - 40):match.start()]) is not None


def _time(match: re.Match[str]) -> str:
    """A time of day; "3:45:12" after a word about how long ("finishing time was"), or "00:15:00", is hours, minutes
    and seconds."""
    parts = re.fullmatch(r"(\d{1,2}):(\d\d):(\d\d)", match.group())
    if parts and (parts[1] == "00" or _elapsed(match) or len(parts[1]) == 1 and _VIDEO_STAMP.search(
            match.string, max(0, match.start() - 40), match.start())):
        return " ".join(f"{w.cardinal(str(int(n)))} {unit if int(n) == 1 else unit + 's'}"
                        for n, unit in zip(parts.groups(), ("hour", "minute", "second")) if int(n)) or "zero seconds"
    zoned = _ZONE_AFTER.match(match.string, match.end())  # "5:30 a.m. EST": the zone goes on, no sentence ends
    # "09h30": the hour's "h" between digits is its colon (not the "h" of "midnight": "12:00 midnight")
    return clock(re.sub(r"(?<=\d)h(?=\d)", ":", match.group()), ends_sentence_after(match) and zoned is None)


def _split_time(match: re.Match[str]) -> str:
    """A time with decimal seconds: "1:23.456" (a lap, a split) "one minute twenty-three point four five six seconds";
    "2:01:09.5" so too after a word about how long (or with no hours), else a time of day to a fraction of a second
    ("14:32:10.123" "fourteen thirty-two and ten point one two three seconds")."""
    *hours, minutes, seconds = match.group().split(":")
    said_seconds = w.number(re.sub(r"\A0(?=\d)", "", seconds)) + " seconds"
    if hours and int(hours[0]) and not _elapsed(match):
        return clock(f"{hours[0]}:{minutes}") + " and " + said_seconds
    said = [f"{w.cardinal(str(int(n)))} {unit if int(n) == 1 else unit + 's'}"
            for n, unit in zip([*hours, minutes], ("hour", "minute")[-1 - len(hours):]) if int(n)]
    return " ".join([*said, said_seconds])


# A value's verb before "at": "came in at 1.25", "closed at 12.50" are a ratio and a price, not times.
_VALUE_AT = re.compile(r"(?i:\b(?:came[ \t]in|comes[ \t]in|c[oa]mes?[ \t]back|closed|closes|opened|priced|valued|rated|trad(?:ed|es|ing)|"
                       r"stands?|stood|peaked|sits?|sat|ended|finished|settled|fell|rose|quoted|capped|pegged|is|was|"
                       r"are|were|be))[ \t]+at[ \t]\Z")


def _dotted_clock(match: re.Match[str]) -> str | None:
    """"at 3.30" -> "three thirty"; "at 1.25 km", "at 2.50%" are measures, "came in at 1.25" a value."""
    after = re.match(r"[ \t]*([^\s\d.,;:!?)]+)", match.string[match.end():match.end() + 12])
    if "." in match.group() and (after and (after[1] in UNITS or after[1][0] in "%$€£¥¢°")
                                 or _VALUE_AT.search(match.string, max(0, match.start() - 24), match.start())):
        return None
    return clock(match.group().replace("h", ":").replace(".", ":"), False)


_ZONE_AFTER = re.compile(r"[ \t]+(?:[ECMP][SD]?T|UTC|GMT|BST|CET|CEST|IST|JST|AEST|AEDT|HST|AKST|AKDT|Z)\b")


def _time_range(match: re.Match[str]) -> str:
    """"2-4pm" "two to four PM"; a range on the 24-hour clock (an end past twelve, no AM or PM), both ends on the
    12-hour one: "08:00–18:00" "eight AM to six PM", not "eight to eighteen hundred"."""
    first, second = re.split(r"[ \t]?[-–][ \t]?", match.group(), maxsplit=1)
    if re.fullmatch(rf"{_CLOCK}[ \t]?[-–][ \t]?{_CLOCK}", match.group()) and max(
            int(first.split(":")[0].split(".")[0]), int(second.split(":")[0].split(".")[0])) > 12:
        first, second = _twelve_hour(first), _twelve_hour(second)
    end = clock(second, ends_sentence_after(match))
    if re.search(r"[:.]\d\d", first):  # "8:30–5:00", "9:00–2:00": "eight thirty to five", an end on the hour said bare
        end = end.removesuffix(" o'clock")
    return clock(first).removesuffix(" o'clock") + " to " + end


def _twelve_hour(text: str) -> str:
    """"18:00" -> "6:00 pm", "08:30" -> "8:30 am", "00:00" -> "12:00 am"."""
    hour, rest = re.split(r"[:.]", text, maxsplit=1)
    h = int(hour) % 24
    return f"{(h - 1) % 12 + 1}:{rest} {'am' if h < 12 else 'pm'}"


def _letter_time_range(match: re.Match[str]) -> str:
    """"10a–9p" -> "ten AM to nine PM": opening hours with a bare "a" or "p"."""
    return " to ".join(f"{w.cardinal(hour)} {half.upper()}M" for hour, half in re.findall(r"(\d+)([ap])", match.group()))


def _ratio(match: re.Match[str]) -> str:
    a, b = match.group().split(":")
    return w.cardinal(re.sub(r"\D", "", a)) + " to " + w.cardinal(re.sub(r"\D", "", b))


_RATIO_CUE = re.compile(r"(?i:\b(?:ratio|odds|scale|proportion)(?:[ \t]+(?:of|is|was))?)[ \t]+\Z")


def _scale_ratio(match: re.Match[str]) -> str | None:
    """"a 1:50,000 scale", "1:100 000", "a ratio of 100:1": a ratio whose number is grouped in thousands (no time's
    is) or that a word names ("scale" after it, "ratio of" before it), "to" between its numbers."""
    grouped = re.search(r"\d[, \u00a0\u202f]\d", match.group())
    named = re.match(r"[ \t]+(?i:scale|ratio)\b", match.string[match.end():match.end() + 8]) \
        or _RATIO_CUE.search(match.string, max(0, match.start() - 20), match.start())
    diluted = _DILUTED.search(match.string, max(0, match.start() - 40), match.start())
    return _ratio(match) if grouped or named or diluted else None


# "Dilute bleach 1:10", "mix the concentrate 1:4 with water": a dilution's or a mix's parts, "one to ten" (not "mix
# it at 1:30", a time)
_DILUTED = re.compile(r"(?i:\b(?:dilut(?:e|ed|es|ing|ion)|mix(?:ed|es|ing)?)\b"
                      r"(?:[ \t]+(?!(?:at|by|until|till|from|before|after|around|about)\b)[\w'’-]+){0,3})[ \t]+\Z")


def _tv_time(match: re.Match[str]) -> str | None:
    """A TV listing's hour in the eastern and the central zone: "8/7c" -> "eight seven central" (the central an hour
    earlier; else not such a time)."""
    eastern, central = match.group()[:-1].split("/")
    if (int(eastern.split(":")[0]) - int(central.split(":")[0])) % 12 != 1:
        return None
    return f"{clock(eastern)} {clock(central)} central"


def rules(day_first: bool = False) -> list[Rule]:
    """The rules for a locale: en-US (``day_first`` False) or en-GB."""
    return [
        ("iso_datetime", r"(?<![\w.-])\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d"
                         r"(?::[0-5]\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?(?![\w:])", _iso_datetime),
        ("year_month", r"(?<![\w.-])(?:19|20)\d\d-(?:0[1-9]|1[0-2])(?![\w-]|\.\d)", _year_month),
        ("iso_date", r"(?<![\w.-])\d{4}(?:-(?:0[1-9]|1[0-2])-|/(?:0[1-9]|1[0-2])/|\.(?:0[1-9]|1[0-2])\.)"
         r"(?:0[1-9]|[12]\d|3[01])(?![\w-]|\.\d)", _iso_date),  # one separator, no back-reference: semiotic.py joins
        #                                                           every rule's pattern into one, renumbering groups
        ("slash_date", r"(?<![\w./])\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})(?![\w/])", _numeric_date(day_first)),
        ("slash_date_range", r"(?<![\w./,])\d{1,2}/\d{1,2}[ \t]?[-–][ \t]?\d{1,2}/\d{1,2}(?![\w/]|[.,]\d)", _slash_date_range),
        ("dotted_date", r"(?<![\w.])(?:\d{1,2}\.\d{1,2}\.\d{4}|\d\d\.\d\d\.\d\d)(?![\w]|\.\d)", _dotted_date),
        ("dashed_date", rf"(?<![\w-])(?:(?:[12]\d|3[01]|0?[1-9])[-–]{_MONTH}\.?|{_MONTH}\.?[-–](?:[12]\d|3[01]|0?[1-9]))"
                        rf"[-–](?:\d{{4}}|\d\d)(?![\w-])", _dashed_date),
        # "could rise ... by 2100": a year past 2099 after by, until, before, in, when the sentence foretells
        ("future_year", r"(?:(?<=\bby[ \t])|(?<=\buntil[ \t])|(?<=\bbefore[ \t])|(?<=\bin[ \t])|(?<=\bthrough[ \t]))"
                        r"2[1-9]\d\d(?![\w%'’-]|[.,:/]\d)", _future_year),
        ("since_year", r"(?<![\w.-])(?:1[89]\d\d|20\d\d)[ \t]?[-–—][ \t]?(?:present|now|today|date)\b", _since_year),
        ("month_date",
         rf"(?<![\w]){_MONTH_DAY}\.?,?[ \t](?:(?:the[ \t])?{_DAY}(?:,?[ \t]\d{{4}})?|\d{{4}})(?![\w])", _month_date),
        ("day_month", rf"(?<![\w.,]){_DAY}[ \t](?:of[ \t])?(?:{_MONTH}\.?(?:,?[ \t]\d{{4}})?|(?:mar|jun|jul|aug|dec)\.?,?[ \t]\d{{4}})"
                      rf"(?![\w])", _day_month),  # "3 mar 2021": a small short month before a year
        ("month_dash_year", rf"(?<![\w-])(?:{_MONTH}|mar|jun|jul|aug|dec)\.?[-–/](?:1[89]|20)\d\d(?![\w-])",  # "Jan-2020"
         lambda match: date_words(month_number(re.match(r"[A-Za-z]+", match.group()).group()), None,  # type: ignore[union-attr]
                                  int(match.group()[-4:]))),
        ("weekday", rf"(?<![\w]){_WEEKDAY}(?:\.?[ \t]?[-–][ \t]?{_WEEKDAY}\.?(?![\w])|\.?(?=,|[ \t]+(?:\d|{_MONTH}))"
                    rf"|\.(?=[ \t]+[a-z]|[ \t]*(?:\n|$)))"
                    rf"|{_ON_DAY}{_WEEKDAY}(?![\w'’.]|[ \t]+(?!(?:AND|OR)\b)[A-Z])"  # "Tue. for", "Sat. hours": a lower-case word goes on
                    rf"|(?<=\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),[ \t]){_WEEKDAY}\.?(?![\w'’])"  # "Closed Sat, Sun": a list of days
                    # "tues 11/12": a small day's name before a slashed month and day (not "sat 3/4 of")
                    r"|(?<![\w])(?:mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\.?(?=,?[ \t]+\d{1,2}/\d{1,2}(?![\w/]|[ \t]+of\b))",
                    # "on Tues and": after a word that names a day ("on", "by", "until"), the day
         _weekday),
        ("weekday_pair", rf"(?<![\w'’]){_WEEKDAY}\.?[ \t]+(?:and|or|AND|OR|&)[ \t]+{_WEEKDAY}\.?(?![\w'’]|[ \t]+[A-Z][a-z])", _weekday_pair),
        ("weekday_range", rf"(?<![\w])(?:{_FULL_WEEKDAY})[ \t]?[-–—][ \t]?(?:{_FULL_WEEKDAY})(?![\w])",
         lambda match: " to ".join(re.findall(r"[A-Za-z]+", match.group()))),
        ("month_range", rf"(?<![\w])(?:{_MONTH})\.?[ \t]?[-–][ \t]?(?:{_MONTH})\.?(?![\w])", _month_range),
        ("day_range", rf"(?<![\w]){_MONTH}\.?[ \t](?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?[ \t]?[-–][ \t]?"
                      rf"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?(?:,?[ \t]\d{{4}})?(?![\w-])", _day_range),
        # "12-15 July", "the 3rd-5th of June": days before their month
        ("days_month", rf"(?<![\w.,-])(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?[ \t]?[-–][ \t]?(?:[12]\d|3[01]|0?[1-9])"
                       rf"(?:st|nd|rd|th)?[ \t](?:of[ \t])?(?!may\b){_MONTH}\.?(?:,?[ \t]\d{{4}})?(?![\w])", _days_month),
        ("month", r"(?<![\w])(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.(?![\w])", _month),
        ("ratio", r"(?<![\w:.,])\d{1,3}(?:,\d{3})*:\d{1,3}(?:(?:,\d{3})+|(?:[ \u00a0\u202f]\d{3})+|\d*)(?![\w:]|[.,]\d)",
         _scale_ratio),  # "a 1:50,000 scale", "the 1:24 scale": before a time
        # "4:30ish", "10:15-ish": about that time, the suffix joined to the time's last word ("four thirtyish")
        ("time_ish", r"(?<![\w:.])(?:[01]?\d|2[0-4]):[0-5]\d-?ish(?![\w])",
         lambda match: re.sub(r" o'clock\Z", "", clock(re.sub(r"-?ish\Z", "", match.group()))) + "ish"),
        ("time", _TIME, _time),
        # "6:30 ET/3:30 PT": a time's zone, a slash, the same time in another zone: the zone spelled, a pause for the
        # slash, the second time ("six thirty E T, three thirty P T")
        ("zone_slash", r"(?<=[\dmM.][ \t])(?:[ECMP][SD]?T|UTC|GMT)/(?:1[0-2]|0?[1-9]):[0-5]\d(?:[ \t]?(?:[AP]M|[ap]m)(?![\w]))?(?![\d:])",
         lambda match: " ".join(match.group().split("/")[0]) + ", " + clock(match.group().split("/")[1])),
        # "10:00 CEST", "9 pm AEDT": a zone of four or five capitals after a time, spelled (not read as a word)
        ("zone_slash", r"(?:(?<=\d[ \t])|(?<=[mM][ \t])|(?<=[mM]\.[ \t]))(?:CEST|EEST|WEST|AEST|AEDT|ACST|ACDT|AWST|"
                       r"NZST|NZDT|AKST|AKDT|HAST|HADT|SAST)(?![\w])", lambda match: " ".join(match.group())),
        ("tv_time", r"(?<![\w:./])(?:1[0-2]|[1-9])(?::[0-5]\d)?/(?:1[0-2]|[1-9])(?::[0-5]\d)?c(?![\w/])", _tv_time),
        ("split_time", r"(?<![\w:.])(?:\d{1,2}:)?\d{1,2}:[0-5]\d\.\d{1,3}(?![\w:]|\.\d)", _split_time),  # "1:23.456"
        # "at 3.30" (a time written with a full stop after "at"), "10h30" (an hour and its minutes, as much of the
        # world writes them)
        ("dotted_clock", rf"(?<=\bat[ \t]){_HOUR}\.[0-5]\d(?![\w]|\.\d)|(?<![\w:.])(?:[01]?\d|2[0-3])h[0-5]\d(?![\w:])",
         _dotted_clock),
        ("dotted_time", _DOTTED_TIME, _time),
        ("hour", _HOUR_AMPM, _time),
        ("time_range", _TIME_RANGE, _time_range),
        ("noon_range", rf"(?<![\w])(?i:noon|midnight)[ \t]?[-–][ \t]?(?:{_ONE_TIME}|(?i:noon|midnight))(?![\w:])",  # "noon-2pm"
         lambda match: " to ".join(part if part.isalpha() else clock(part) for part in re.split(
             r"[ \t]?[-–][ \t]?", match.group(), maxsplit=1))),
        ("letter_time_range", r"(?<![\w:.$])(?:1[0-2]|0?[1-9])[ap][ \t]?[-–][ \t]?(?:1[0-2]|0?[1-9])[ap](?![\w])",
         _letter_time_range),
        ("ratio", r"(?<![\w:.])\d{1,2}:\d(?![\w:])", _ratio),
        # "2.39:1", "1.85:1": an aspect ratio with a decimal, "to" between its numbers (no time has a decimal hour)
        ("ratio", r"(?<![\w:.,])\d{1,2}\.\d{1,3}:\d{1,2}(?![\w:]|[.,]\d)",
         lambda match: " to ".join(w.number(part) for part in match.group().split(":"))),
        ("decade", r"(?<![\w.])(?:['’]?[1-9]0['’]?s|1[1-9]\d0['’]?s|20\d0['’]?s)(?![\w])", _decade),  # "1990's" too
        ("short_year", r"(?<![\w'’])['’]\d\d(?![\w'’%]|[.,:/-]\d)", _short_year),  # "Class of '98"
    ]


RULES = rules()
