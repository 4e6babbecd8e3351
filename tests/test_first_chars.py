"""engine/speech_text/first_chars.py: what a pattern's match can start with, never leaving out a character that
starts a match (which would drop a reading), checked on every rule over every case text the project holds; and what
characters every match holds (markdown's inline pass skips a line with none)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cbf_tools.bench import text_cases
from engine.speech_text import markdown, semiotic
from engine.speech_text.first_chars import after_word, first_chars, required_chars, token_chars

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize(
    "pattern, starts, never",
    [
        (r"(?<![\w.])\d+", "07", "a.-"),
        (r"(?i:jan|feb)\.?", "jJfF", "aA1"),
        (r"(?:Dr|St)\.|\$\d", "DS$", "ds1"),
        (r"x?y*z", "xyz", "w"),
        (r"[^a-z]", "A1-", "az"),  # a negated class is kept whole
        (r"[^x]y", "ay", "x"),
        (r"(?=\d)\w+", "5a_", "-"),  # a lookahead does not narrow the set: the set stays a superset
        (r"\bfoo\b|(?:-|\u2212)\d", "f-\u2212", "o1"),
    ],
)
def test_the_first_characters_of_a_pattern(pattern: str, starts: str, never: str) -> None:
    first = first_chars(re.compile(pattern))
    assert first is not None
    assert all(first.match(char) for char in starts), first.pattern
    assert not any(first.match(char) for char in never), first.pattern


def test_a_construct_the_walk_does_not_know_makes_every_character_a_start() -> None:
    assert first_chars(re.compile(r".x")) is None  # any character
    assert first_chars(re.compile(r"(a)?\1b")) is None  # a back reference


def _texts() -> list[str]:
    files = [DATA / "text_cases" / "dev.tsv", DATA / "text_cases" / "heldout.tsv", DATA / "third_party_tn" / "cases.tsv"]
    return [case.written for path in files for case in text_cases.load(path)]


@pytest.mark.parametrize("locale", semiotic.LOCALES)
def test_every_place_a_rule_matches_is_found_and_the_rule_asked_there(locale: str) -> None:
    rules = semiotic._LOCALES[locale]
    missed, unfound = [], []
    for text in _texts():
        for at in range(len(text)):
            found = rules.next_start(text, at)
            asked = set(found[1]) if found and found[0] == at else set()
            for order, (name, pattern, _) in enumerate(rules.rules):
                match = pattern.match(text, at)
                if match and match.end() > at:
                    if order not in asked:
                        missed.append((name, text, at))
                    if not found or found[0] != at:
                        unfound.append((name, text, at))
    assert not missed, missed[:5]
    assert not unfound, unfound[:5]


@pytest.mark.parametrize(
    "pattern, after",
    [(r"(?<![\w.])\d+", False), (r"(?<!\w)a|(?<![\w-])b", False), (r"(?<!\w)a|b", True), (r"x\d", True),
     (r"(?<![^\w])a", True), (r"(?<!\d)a", True), (r"\b(?<![\w$])a", False), (r"(?<=\d[ \t])a", False),
     (r"(?<=\bon )a|(?<=by\t)b", False), (r"(?<=\d)a", True), (r"(?<=[ a])a", True)],
)
def test_whether_a_pattern_may_start_inside_a_word(pattern: str, after: bool) -> None:
    assert after_word(re.compile(pattern)) is after


def test_every_rule_has_a_known_first_character_set() -> None:
    unknown = [name for name, pattern, _ in semiotic._LOCALES["en-US"].rules if first_chars(pattern) is None]
    assert not unknown  # each rule is asked only where it can start; a new construct the walk misses shows here


@pytest.mark.parametrize(
    "pattern, held, never",
    [
        (r"(?<=\d)[ \t]?\*[ \t]?(?=\d)", "*", " \t1"),  # optional spaces and look-arounds hold nothing
        (r"\*+|~~+|`+|(?<!\w)_+", "*~`_", " a"),  # a branch: one of each alternative's
        (r"[ \t]*<\w+>", "<", " \ta>"),  # a literal is preferred to a class
        (r"(?i:ab)c", "aA", "bB "),
        (r"(?:x|y)+z", "z", "xy"),
    ],
)
def test_the_characters_every_match_of_a_pattern_holds(pattern: str, held: str, never: str) -> None:
    required = required_chars(re.compile(pattern))
    assert required is not None
    assert all(required.match(char) for char in held), required.pattern
    assert not any(required.match(char) for char in never), required.pattern


@pytest.mark.parametrize(
    "pattern, held",
    [
        (r"\w+@x", "@"),  # the rarest of the characters the first word holds
        (r"(?:a|ab)\.c|x:", ".:"),  # a branch: one of each alternative's
        (r"(?<![\w.])[\w.]+:", ":"),  # look-arounds hold nothing
        (r"(?i:ab\.)", "."),  # a letter read in either case is not one character
        (r"ab[-/]", "-/"),
    ],
)
def test_the_characters_every_match_holds_in_its_first_word(pattern: str, held: str) -> None:
    assert token_chars(re.compile(pattern)) == frozenset(held)


@pytest.mark.parametrize("pattern", [r"ab? \.", r"x y\.", r"\d+", r"[^x]@", r".\.", r"(?i:ab)", r"\.?a"])
def test_what_may_stand_after_white_space_or_be_left_out_is_not_held(pattern: str) -> None:
    held = token_chars(re.compile(pattern))
    assert held is None or not held & set(" .@"), held


@pytest.mark.parametrize("pattern", [r"a?", r"a|b?", r".", r"(?=x)", r"\bx*"])
def test_a_pattern_that_may_match_without_a_known_character_holds_none(pattern: str) -> None:
    assert required_chars(re.compile(pattern)) is None


def test_every_inline_markdown_match_holds_one_of_the_marks_its_pass_looks_for() -> None:
    assert markdown._MARKS.pattern != r"(?s:.)"  # the walk bounds every inline construct
    texts = _texts() + ["**bold** `code` [link](https://x.io) <br/> &amp; 3 * 4 ~~gone~~ _it_ ## ![alt](i.png) [^1]"]
    found = [match.group() for text in texts for match in markdown._INLINE.finditer(text)]
    assert found and all(markdown._MARKS.search(match) for match in found)


@pytest.mark.parametrize("locale", semiotic.LOCALES)
def test_the_search_for_the_next_construct_is_the_program_re_compiles_from_its_source(locale: str) -> None:
    """joined.py builds it from each rule's own parse: the same program as ``re.compile`` of the whole source (a
    pattern's equality compares its flags, compiled code and source), and not by compiling the source after all."""
    search = semiotic._LOCALES[locale]._next
    whole = re.compile(search.pattern)
    assert search == whole and search is not whole


def test_a_joined_pattern_is_its_source_compiled() -> None:
    from engine.speech_text.joined import hole, joined

    parts = [re.compile(r"(?<![\w.])\d+(?:st|nd)"), re.compile(r"a|ab"), re.compile(r"(?i:x)[yz]")]
    frames = [(f"(?=[0-9]){hole(0)}|{hole(1)}", r"(?=[0-9])(?:(?<![\w.])\d+(?:st|nd))|(?:a|ab)"),
              (f"(?<!\\w)(?:{hole(2)}|{hole(1)})|(?<=\\w){hole(0)}",
               r"(?<!\w)(?:(?:(?i:x)[yz])|(?:a|ab))|(?<=\w)(?:(?<![\w.])\d+(?:st|nd))")]
    for frame, source in frames:
        made = joined(source, frame, parts)
        assert made == re.compile(source) and made is not re.compile(source)
        assert [m.group() for m in made.finditer("1st ab Xz 22nd")] == re.findall(source, "1st ab Xz 22nd")
    repeated = "(?:(?:a|ab))*b"  # a part repeated in the frame: its width is not worked out again, re.compile makes it
    assert joined(repeated, f"(?:{hole(1)})*b", parts) is re.compile(repeated)
    beside = r"(?=\S*?x)(?:a|ab)"  # a repeat beside the parts is the frame's own
    made = joined(beside, rf"(?=\S*?x){hole(1)}", parts)
    assert made == re.compile(beside) and made is not re.compile(beside)
