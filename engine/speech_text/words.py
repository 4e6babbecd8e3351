"""Numbers as English words (num2words, in the US style: no "and", no commas). Pure.

Cached (the same numbers come back: times, prices, years). Bounded: a number of more than ``MAX_DIGITS`` digits (``MAX_GROUPED_DIGITS`` grouped by commas; or with a leading zero) is read digit by digit, so no reading
costs more than its text's length.
"""

from __future__ import annotations

import functools
import re

from num2words import num2words

MAX_DIGITS = 15
# A number grouped by commas in threes is a quantity however long, up to the scales words know (sextillions):
# "43,252,003,274,489,856,000" "forty-three quintillion ..."
MAX_GROUPED_DIGITS = 24

DIGIT_WORDS = "zero one two three four five six seven eight nine".split()


def _us(words: str) -> str:
    return words.replace(",", "").replace(" and ", " ").replace("oh-", "oh ")


def digits(text: str) -> str:
    """"4567" -> "four five six seven" (anything but a digit skipped)."""
    return " ".join(DIGIT_WORDS[int(c)] for c in text if c.isdigit())


@functools.lru_cache(maxsize=4096)
def cardinal(text: str) -> str:
    """"1,234" -> "one thousand two hundred thirty-four"; "007" and very long numbers digit by digit."""
    plain = text.replace(",", "")
    limit = MAX_GROUPED_DIGITS if re.fullmatch(r"[1-9]\d{0,2}(?:,\d{3})+", text) else MAX_DIGITS
    if len(plain) > limit or (len(plain) > 1 and plain[0] == "0"):
        return digits(plain)
    return _us(num2words(int(plain)))


def number(text: str) -> str:
    """A cardinal or a decimal: "3.14" -> "three point one four"."""
    whole, dot, fraction = text.partition(".")
    said = cardinal(whole) if whole else ""
    if dot:
        said = (said + " point " + digits(fraction)).strip()
    return said


def paired(text: str) -> str:
    """A number as people say a flight, a room or an order number: "4521" -> "forty-five twenty-one", "287" -> "two
    eighty-seven", "1204" -> "twelve oh four"; one of more than four digits, or with a leading zero, digit by digit."""
    if len(text) > 4 or text[0] == "0":
        return digits(text)
    if len(text) <= 2 or text.endswith("000"):
        return cardinal(text)
    head, tail = text[:-2], text[-2:]
    return cardinal(head) + " " + ("hundred" if tail == "00" else "oh " + DIGIT_WORDS[int(tail[1])] if tail[0] == "0"
                                   else cardinal(tail))


@functools.lru_cache(maxsize=1024)
def ordinal(text: str) -> str:
    """"22" -> "twenty-second"."""
    plain = text.replace(",", "")
    if len(plain) > MAX_DIGITS:
        return digits(plain) + "th"
    return _us(num2words(int(plain), to="ordinal"))


@functools.lru_cache(maxsize=1024)
def year(value: int) -> str:
    """1999 -> "nineteen ninety-nine", 2007 -> "two thousand seven", 2024 -> "twenty twenty-four"."""
    return _us(num2words(value, to="year"))


def is_year(text: str) -> bool:
    """A plain four-digit number read as a year (1001-2099: "ten sixty-six"; 1000 is "one thousand")."""
    return len(text) == 4 and text.isdigit() and 1000 < int(text) <= 2099


def plural(word: str) -> str:
    """"twenty" -> "twenties", "five" -> "fives", "sixty" -> "sixties" (a decade's name)."""
    return word[:-1] + "ies" if word.endswith("y") else word + "es" if word.endswith("x") else word + "s"
