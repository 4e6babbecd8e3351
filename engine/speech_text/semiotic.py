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

import functools
import re
import string
from dataclasses import dataclass
from typing import Callable

from engine.speech_text import abbreviations, addresses, codes, dates, money, numbers, symbols, web
from engine.speech_text.first_chars import after_word, first_chars, token_chars
from engine.speech_text.joined import hole, joined
from engine.speech_text.spans import Piece, rewrite

_TAG = ("tag", r"\[[^\[\]\n]{1,38}\]", lambda match: match.group())  # only Turbo's tags are left by markdown()
LOCALES = ("en-US", "en-GB")  # en-GB reads slashed dates day first


Rules = list[tuple[str, re.Pattern[str], Callable[[re.Match[str]], "str | None"]]]


class _Locale:
    """A locale's rules, one pattern of them all that finds where the next construct may start, and which rules can
    start at a place: those whose first characters (first_chars) hold its character, and after a letter or digit
    only those not behind a look-behind that refuses one (most rules; most places in a text are inside a word)."""

    def __init__(self, day_first: bool) -> None:
        rules = [_TAG, *web.RULES, *addresses.RULES, *codes.RULES, *dates.rules(day_first), *money.RULES,
                 *numbers.RULES, *abbreviations.RULES, *symbols.RULES, *codes.SIZES, *codes.LAST_RESORT]
        self.rules: Rules = [(name, re.compile(pattern), handler) for name, pattern, handler in rules]
        for name, pattern, _ in self.rules:  # joined into one pattern below, a back-reference would name another group
            if pattern.groups or pattern.groupindex:
                raise ValueError(f"rule {name!r}: a capturing group; its match is read whole (use (?:...))")
        self._firsts, self._after_word, self._tokens = _starts(tuple(pattern for _, pattern, _ in self.rules))
        self._at: dict[tuple[str, bool], tuple[int, ...]] = {}
        self._asked: dict[tuple[str, bool, int, frozenset[str] | None], tuple[int, ...]] = {}
        self._marks = frozenset().union(*filter(_marks_only, self._tokens))
        # a place whose first run of non-space characters (a plain word) holds none of the marks that some rules' runs
        # must hold (_marks_only) asks none of those rules
        marks = re.escape("".join(sorted(self._marks)))
        self._holds_mark = rf"(?![^\s{marks}]{{0,{_LONG_RUN - 1}}}+(?!\S))"
        self._alternatives = {(kind, after_word): self._asked_in_order(kind, after_word)
                              for after_word in (False, True) for kind in (*_KINDS, None)}
        # Where a rule may start, found in one search: at a character some rule starts with (after a word character,
        # one of the few rules that may start inside a word), where one of the rules that can start with a character
        # of its kind (a small letter, a capital, a digit, a space; any rule at any other character) matches. A rule
        # that starts with only some characters of the kind is tried only at those (a one-character look-ahead costs
        # less than a rule's failure: "no." after "serial", "(?i:suite|apt|...)").
        # (compiled from each rule's own parse, joined.py: each rule stands in it up to ten times)
        self._next = _search(rf"(?<!\w){self._asking_at(False)}|(?<=\w){self._asking_at(True)}",
                             rf"(?<!\w){self._asking_at(False, True)}|(?<=\w){self._asking_at(True, True)}",
                             tuple(pattern for _, pattern, _ in self.rules))
        self._from_group = self._untried()

    def _asking_at(self, after_word: bool, frame: bool = False) -> str:
        """One pattern of the rules that can start at a place (after a word character, if ``after_word``); with
        ``frame``, joined.hole(i) where rule i stands."""
        firsts = [first for first, may in zip(self._firsts, self._after_word) if may or not after_word]
        # one set of the first characters written plainly ("A|[\d]|..." a set to the parser, one test at each place),
        # then those written with a flag ("(?i:a)"), which would keep the parser from making the whole one set
        plain = "|".join(first.pattern for first in firsts if first and "(?" not in first.pattern)
        flagged = "|".join(first.pattern for first in firsts if first and "(?" in first.pattern)
        starts = "(?s:.)" if None in firsts else "|".join(
            ([f"(?:{plain})"] if plain else []) + ([flagged] if flagged else [])) or "(?!)"
        of_kind = [f"(?=[{re.escape(kind)}])(?:{self._asking(kind, after_word, frame)})" for kind in _KINDS]
        other = f"(?![{re.escape(''.join(_KINDS))}])(?:{self._asking(None, after_word, frame)})"
        return f"(?=(?:{starts}))(?:{'|'.join([*of_kind, other])})"

    def _asked_in_order(self, kind: str | None, after_word: bool) -> list[tuple[int, str]]:
        """The rules that can start with a character of ``kind`` (None: any), after a word character if
        ``after_word``, in the order the search asks them, each with the look-ahead that narrows it to the characters
        of the kind it starts with (``_guard``); the last resort's first: it matches at once at any digit, where most
        constructs start, so such a place is found without first trying every other rule (which rules match is asked
        later); those whose run must hold a mark last (``_asking``)."""
        asked = []
        rules = [*enumerate(zip(self._firsts, self._after_word, self._tokens))]
        last_resort = len(rules) - len(codes.LAST_RESORT)
        for order, (first, may, token) in rules[last_resort:] + rules[:last_resort]:
            starts = kind if kind is None or first is None else "".join(char for char in kind if first.match(char))
            if (may or not after_word) and starts != "":
                asked.append((order, _guard(kind, starts, token)))
        return sorted(asked, key=lambda rule: _marks_only(self._tokens[rule[0]]))

    def _asking(self, kind: str | None, after_word: bool, frame: bool = False) -> str:
        """One pattern of ``_asked_in_order``, each rule followed by an empty group: the group that closes names the
        first rule asked that matched (``_untried``); the rules whose run must hold a mark behind one look-ahead that
        it holds one (at a plain word's start, one look-ahead instead of one for each rule, ~30 at each)."""
        anywhere, marked = [], []
        for order, guard in self._alternatives[kind, after_word]:
            (marked if _marks_only(self._tokens[order]) else anywhere).append(
                f"{guard}{hole(order) if frame else f'(?:{self.rules[order][1].pattern})'}()")
        if marked:
            anywhere.append(f"{self._holds_mark}(?:{'|'.join(marked)})")
        return "|".join(anywhere) or "(?!)"

    def _untried(self) -> list[frozenset[int]]:
        """For each group of the search (by its number, less one), the rules asked from its rule on: where the search
        stops, it asked the ones before it, and none of them matched there."""
        untried = []
        for asked in self._alternatives.values():  # in the order _asking_at writes them into the search
            orders = [order for order, _ in asked]
            untried += [frozenset(orders[i:]) for i in range(len(orders))]
        if len(untried) != self._next.groups:
            raise RuntimeError("the search's groups are not its rules'")
        return untried

    def next_start(self, text: str, at: int) -> tuple[int, tuple[int, ...]] | None:
        """The first place from ``at`` where some rule matches ``text`` and the rules (by order) to ask there: those
        that can start with its character (``rules_at``), less those the search found not matching and those whose
        first run of non-space characters must hold a mark its run lacks (``_may_hold``: at a plain number ~40 of a
        digit's ~100 rules need a ".", ":", "/"...), or None."""
        found = self._next.search(text, at)
        if found is None:
            return None
        start = found.start()
        run = _RUN.match(text, start).group()  # type: ignore[union-attr]
        key = (text[start:start + 1], start > 0 and _WORD.match(text, start - 1) is not None, found.lastindex,
               None if len(run) == _LONG_RUN else self._marks.intersection(run))
        if (orders := self._asked.get(key)) is None:
            untried = self._from_group[found.lastindex - 1]
            orders = tuple(order for order in self.rules_at(key[0], key[1])
                           if order in untried and _may_hold(self._tokens[order], key[3]))
            if len(self._asked) < 16384:  # bounded as _at is
                self._asked[key] = orders
        return start, orders

    def rules_at(self, char: str, after_word: bool) -> tuple[int, ...]:
        """The rules (by order) whose match can start with ``char`` (after a word character, if ``after_word``)."""
        if (orders := self._at.get((char, after_word))) is None:
            orders = tuple(order for order, first in enumerate(self._firsts)
                           if (first is None or first.match(char)) and (self._after_word[order] or not after_word))
            if len(self._at) < 4096:  # bounded: a text of every Unicode character cannot grow it without end
                self._at[(char, after_word)] = orders
        return orders


def _guard(kind: str | None, starts: str | None, token: frozenset[str] | None) -> str:
    """The look-aheads a rule stands behind in the search: for the characters of ``kind`` it starts with, when not
    all of them, and for one of the characters its first run of non-space characters holds (``token``), where it may
    start with another character (a plain word is no "url": it holds no "." or ":"); a run of ``_LONG_RUN`` or more
    is not looked through (the look-ahead's cost stays bounded at every place of a 100 KB run)."""
    guard = "" if starts == kind else f"(?=[{re.escape(starts)}])"  # type: ignore[arg-type]
    if token and (starts is None or not set(starts) <= token):
        guard += rf"(?=\S{{0,{_LONG_RUN - 1}}}?[{re.escape(''.join(sorted(token)))}]|\S{{{_LONG_RUN}}})"
    return guard


_LONG_RUN = 32


def _may_hold(token: frozenset[str] | None, marks: frozenset[str] | None) -> bool:
    """Whether a first run of non-space characters that holds the marks ``marks`` (None: a run of ``_LONG_RUN`` or
    more, not looked through) may be a rule's whose run holds one of ``token``'s: the search's look-ahead
    (``_guard``), for a rule whose run must hold a mark (``_marks_only``)."""
    return marks is None or not _marks_only(token) or not token.isdisjoint(marks)  # type: ignore[union-attr]


def _marks_only(token: frozenset[str] | None) -> bool:
    """Whether a rule's first run of non-space characters must hold one of ``token``'s, none a letter or digit
    ("." for a host, "/" for a path, "@" for an e-mail): a plain word holds none."""
    return bool(token) and not any(char.isalnum() for char in token)  # type: ignore[union-attr]


@functools.cache
def _starts(patterns: tuple[re.Pattern[str], ...]) -> tuple[list[re.Pattern[str] | None], list[bool],
                                                            list[frozenset[str] | None]]:
    """Each pattern's first characters, whether it may start after a word character, and what its first run of
    non-space characters holds (first_chars.py): worked out once for the locales' patterns (they differ in their
    readers only; each pattern parsed again per locale was ~0.07 s of CPU in every process that imports this module,
    engine workers included)."""
    return ([first_chars(pattern) for pattern in patterns], [after_word(pattern) for pattern in patterns],
            [token_chars(pattern) for pattern in patterns])


@functools.cache
def _search(source: str, frame: str, patterns: tuple[re.Pattern[str], ...]) -> re.Pattern[str]:
    """The locales' search for the next place a rule may start (the same for both: their readers differ only)."""
    return joined(source, frame, patterns)


_WORD = re.compile(r"\w")
_RUN = re.compile(rf"\S{{0,{_LONG_RUN}}}")
_KINDS = (string.ascii_lowercase, string.ascii_uppercase, string.digits, " \t")
_LOCALES = {"en-US": _Locale(day_first=False), "en-GB": _Locale(day_first=True)}


# Each rule's semiotic class (the names of Sparrowhawk's and NeMo's English grammars, where one fits); a quantity's
# (cardinal, decimal or measure) is decided by numbers.quantity_kind.
_RULES_OF_CLASS = {
    "tag": "tag",
    "electronic": "key_chord http_status mac network_name ipv6 port doi email url file_name windows_path unc_path unix_path web_route identifier dot_file handle subreddit hashtag host_name hash_in_word flag version",
    "address": "rural_route county ap_state state_list state address street_direction block unit zip postal route postcode floor ordinal_street street_type compass",
    "telephone": "vanity extension local_phone local_digits service_code short_code star_code keypad bare_phone grouped_digits phone",
    "serial": "lottery court_case secret tracking video_lines lower_code uuid round_the_clock dotted_serial dotted_code airliner standard model hex flight number_code cued_digits tax_form serial slashed_code small_code leftover",
    "roman": "roman roman_page roman_century roman_year roman_item regnal name_numeral",
    "math": "formula_unit formula yields approaches subscript trig math factorial absolute applied ratio words compare minus power squared cubed product",
    "date": "future_year year_month quarter month_dash_year short_year month_year iso_date slash_date dotted_date dashed_date fiscal_year month_date day_month weekday_pair weekday month decade month_day",
    "ordinal": "d_ordinal",
    "time": "time time_ish tv_time zone_slash split_time dotted_clock dotted_time hour military duration iso_datetime",
    "range": "cell_range suffix_range slash_date_range since_year weekday_range month_range day_range days_month noon_range time_range letter_time_range percent_range grades sizes times_range letter_range",
    "money": "pence money coded_money currency_pair money_plural scaled_range unit_price",
    "fraction": "mixed_fraction fraction signed_fraction vulgar_fraction",
    "measure": "molar viscosity per_degree scaled_unit spaced_hour newtons per_unit per_slash aperture pressure rooms feet_inches feet dimensions inches inches_tall hyphen_unit unit_alone fraction_unit fraction_inches power_unit",
    "cardinal": "batting_average counted_by time_signature number_ers number_sign quantity grouped_thousands scientific superscript_power",
    "abbreviation": "party_state letters_word initials_and title abbreviation before_number label copied sig dose_form dotted caps",
    "plain": "sharp about slash dash emoji number_word stray bar",
}
CLASSES = {rule: kind for kind, rules in _RULES_OF_CLASS.items() for rule in rules.split()}


@dataclass(frozen=True)
class Reading:
    start: int
    end: int
    kind: str  # the semiotic class (CLASSES)
    said: str


def classify(text: str, locale: str | None = None) -> list[Reading]:
    """Every construct in ``text`` that is said otherwise than written, in order, not overlapping."""
    rules_of = _LOCALES[locale or "en-US"]
    rules = rules_of.rules
    readings: list[Reading] = []
    at = 0
    while (next_start := rules_of.next_start(text, at)) is not None:
        start, orders = next_start
        found = [(match, order) for order in orders
                 if (match := rules[order][1].match(text, start)) is not None and match.end() > start]
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
    return _records(text, _between(text, _ranges(text, readings)))


_BETWEEN_WORD = re.compile(r"\b[Bb]etween[ \t]+\Z")
# A team's or a pitcher's won-lost record, "42-20", is "forty-two and twenty": after a verb that moves a record
# ("improved to 42-20", "fell to 3-5"), before "record", or in a pitcher's line ("(12-4, 2.45 ERA)")
_RECORD = re.compile(r"\d{1,3}-\d{1,3}")
_RECORD_BEFORE = re.compile(r"\b(?:improv|fall|fell|drop|slip|mov|climb|even)\w*[ \t]+to[ \t]+\Z")
_NOUN_AFTER = re.compile(r"[ \t]+(?!(?:with|in|on|after|and|at|for|since|this|overall|against|under|to|but|while|as|"
                         r"heading|entering|going|before|when|following|thanks|despite|behind|by)\b)[A-Za-z%]")
_RECORD_AFTER = re.compile(r"[ \t]+record\b|,[ \t]*\d?\.\d\d[ \t]+ERA\b")


def _records(text: str, readings: list[Reading]) -> list[Reading]:
    """"improved to 42-20", "a 12-4 record", "(12-4, 2.45 ERA)": wins and losses, "twelve and four"."""
    for i, reading in enumerate(readings):
        if (reading.said.count(" to ") == 1 and _RECORD.fullmatch(text, reading.start, reading.end)
                and ((_RECORD_BEFORE.search(text, max(0, reading.start - 16), reading.start)
                      and not _NOUN_AFTER.match(text, reading.end))  # "fell to 3-5 degrees" is a range
                     or _RECORD_AFTER.match(text, reading.end))):
            readings[i] = Reading(reading.start, reading.end, reading.kind, reading.said.replace(" to ", " and "))
    return readings


def _between(text: str, readings: list[Reading]) -> list[Reading]:
    """"between 8:00-11:30 AM", "between 2-4 pm": a range after "between" is "X and Y", not "X to Y"."""
    for i, reading in enumerate(readings):
        if " to " in reading.said and _BETWEEN_WORD.search(text, max(0, reading.start - 12), reading.start):
            readings[i] = Reading(reading.start, reading.end, reading.kind, reading.said.replace(" to ", " and ", 1))
        elif reading.kind == "range" and reading.said == " to " and i > 0 and _BETWEEN_WORD.search(
                text, max(0, readings[i - 1].start - 12), readings[i - 1].start):
            readings[i] = Reading(reading.start, reading.end, reading.kind, " and ")
    return readings


_RANGE_ENDS = frozenset({"date", "time", "money", "measure", "cardinal", "ordinal"})
_BETWEEN = re.compile(r"[ \t]*[-–—][ \t]*")


def _ranges(text: str, readings: list[Reading]) -> list[Reading]:
    """A hyphen or dash between two dates (times, prices, measures, numbers) is "to": "Mar 3 - Mar 9", "5k-10k"."""
    joined: list[Reading] = []
    for i, reading in enumerate(readings):
        after = readings[i + 1] if i + 1 < len(readings) else None
        left = joined[-1] if joined else None
        if (left and after and reading.kind == "plain" and left.end == reading.start and reading.end == after.start
                and _BETWEEN.fullmatch(text, reading.start, reading.end) and left.kind == after.kind in _RANGE_ENDS):
            joined.append(Reading(reading.start, reading.end, "range", " to "))
            continue
        if (left and left.kind == reading.kind in _RANGE_ENDS and left.end < reading.start
                and _BETWEEN.fullmatch(text, left.end, reading.start)):
            joined.append(Reading(left.end, reading.start, "range", " to "))
        joined.append(reading)
    return joined


def words(text: str, locale: str | None = None) -> list[Piece]:
    """``text`` with every construct classified and verbalised, as pieces of it."""
    return rewrite(text, ((r.start, r.end, r.said, r.kind) for r in classify(text, locale)))
