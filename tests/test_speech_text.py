"""engine/speech_text/normalize.py: the test set's score, each category's rules, spans, bounded inputs."""

from __future__ import annotations

import re

import pytest

from engine.speech_text.normalize import normalize, open_tail, punctuation_only, words
from engine.speech_text.spans import Piece, SpanMap, compose, spoken, verbatim
from engine.speech_text.tags import TURBO_TAG, TURBO_TAGS
from tests.speech_text_cases import CASES, CATEGORIES, STREAM_TEXTS

PASS_RATE = 0.97


def said(text: str) -> str:
    return spoken(normalize(text)).strip()


def test_the_test_set_covers_every_category() -> None:
    assert len(CASES) >= 200
    assert all(len(cases) >= 10 for cases in CATEGORIES.values()), {k: len(v) for k, v in CATEGORIES.items()}


def test_the_test_set_scores_at_least_97_percent() -> None:
    misses = [(text, expected, said(text)) for text, expected in CASES if said(text) != expected]
    score = 1 - len(misses) / len(CASES)
    assert score >= PASS_RATE, "\n".join(f"{t!r}: expected {e!r}, got {g!r}" for t, e, g in misses)


def _covers(text: str, pieces: list[Piece]) -> None:
    at = 0
    for piece in pieces:
        assert piece.start == at and piece.end >= piece.start, (text, pieces)
        if piece.verbatim:
            assert piece.text == text[piece.start:piece.end]
        at = piece.end
    assert at == len(text), (text, pieces)


@pytest.mark.parametrize("text", [t for t, _ in CASES] + STREAM_TEXTS)
def test_pieces_cover_the_input_in_order(text: str) -> None:
    _covers(text, normalize(text))


# Focused rules, one per category.

@pytest.mark.parametrize(
    "text, expected",
    [
        ("**bold** and __strong__", "bold and strong"),
        ("a snake_case word", "a snake underscore case word"),  # not emphasis: an identifier, said
        ("### Header\nbody", "Header\nbody"),
        ("* one\n+ two\n- three", "one\ntwo\nthree"),
        ("> > nested quote", "nested quote"),
        ("[link text](http://a.b/c(d)) after", "link text after"),
        ("```\nunclosed code", ""),
        ("a\n===\nb", "a\nb"),
        ("<div>hi</div>", "hi"),
        ("Tom &amp; Jerry", "Tom and Jerry"),
    ],
)
def test_markdown(text: str, expected: str) -> None:
    assert said(text) == expected


def test_the_turbo_tags_are_kept_and_nothing_else_in_brackets() -> None:
    for tag in TURBO_TAGS:
        assert said(f"so [{tag}] then") == f"so [{tag}] then"
        assert TURBO_TAG.fullmatch(f"[{tag.upper()}]")
    assert said("so [whatever] then") == "so whatever then"
    assert said("so [12] then") == "so then"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1,234", "one thousand two hundred thirty-four"),
        ("3.14", "three point one four"),
        ("22nd", "twenty-second"),
        ("-5", "minus five"),
        ("1999", "nineteen ninety-nine"),
        ("2007", "two thousand seven"),
        ("3/4", "three quarters"),
        ("3-5", "three to five"),
        ("$3 million", "three million dollars"),
        ("$2bn", "two billion dollars"),
        ("€5", "five euros"),
        ("12.5%", "twelve point five percent"),
        ("73°F", "seventy-three degrees Fahrenheit"),
        ("15:45", "fifteen forty-five"),
        ("9am", "nine AM"),
        ("2024-03-05", "March fifth, twenty twenty-four"),
        ("555-123-4567", "five five five, one two three, four five six seven"),
    ],
)
def test_numbers(text: str, expected: str) -> None:
    assert said(f"x {text} y") == f"x {expected} y"


@pytest.mark.parametrize(
    "text, expected",
    [("FBI", "F B I"), ("NASA", "Nasa"), ("VERY", "very"), ("IMPORTANT", "important"), ("HTTPS", "H T T P S"),
     ("GPUs", "G P U's"), ("OK", "okay"), ("US", "U S")],
)
def test_caps(text: str, expected: str) -> None:
    assert said(f"the {text} here") == f"the {expected} here"


def test_punctuation_only_is_turbos_replacements_and_nothing_else() -> None:
    text = 'He said "hi" — wait… **3:30** $5 “ok” ‘x’'
    assert spoken(punctuation_only(text)) == "He said hi - wait,  **3,30** $5 ok 'x'"
    _covers(text, punctuation_only(text))


def test_a_rewritten_number_maps_back_whole() -> None:
    text = "Pay $4.99 now."
    pieces = normalize(text)
    out = spoken(pieces)
    spans = SpanMap(pieces)
    for word in re.finditer(r"\S+", out[out.index("four"):out.index(" now")]):
        start = out.index("four") + word.start()
        assert spans.source(start, start + len(word.group())) == (4, 9)
    now = out.index("now")
    assert spans.source(now, now + 3) == (text.index("now"), text.index("now") + 3)


def test_a_pass_after_one_that_changed_nothing_keeps_its_pieces_and_classes() -> None:
    text = "Call 555-1234 at 3:30 pm, **not** after 5."
    second = words(text)
    chained = compose(verbatim(text), second)
    assert chained == second and [p.kind for p in chained] == [p.kind for p in second]
    assert {"telephone", "time", "cardinal"} <= {p.kind for p in chained}
    marked = [Piece(0, 4, "Call", True, "plain"), Piece(4, 4, "", True), Piece(4, len(text), text[4:], True)]
    assert [(p.start, p.end, p.kind) for p in compose(verbatim(text), marked)] == [(0, 4, ""), (4, len(text), "")]


def test_nothing_left_to_speak_is_empty_or_whitespace() -> None:
    for text in ["🎉", "***", "---\n***", "```\nx\n```", "**", "[^1]", "🙂 🙂\n\n🙂"]:
        assert not said(text), text


# Bounded inputs: each finishes with a sane, bounded reading.

def test_a_thousand_digit_number_is_read_digit_by_digit() -> None:
    out = said("1" * 1000)
    assert out.split() == ["one"] * 1000


def test_a_long_number_over_15_digits_is_digits() -> None:
    assert said("1234567890123456") == "one two three four five six seven eight nine zero one two three four five six"


def test_ten_thousand_stars_are_silent() -> None:
    assert said("*" * 10_000) == ""
    assert said("a " + "*" * 10_000 + " b") == "a b"


def test_a_100kb_line_of_emoji_is_silent() -> None:
    assert said("😀" * 100_000) == ""
    assert said("hi " + "🎉👍🏽" * 30_000 + " there") == "hi there"


def test_control_characters_are_removed() -> None:
    assert said("he\x00l\x07lo\x1b there\x7f") == "hello there"


@pytest.mark.parametrize(
    "text", ["[" * 50_000, "](" * 30_000, "<" * 50_000, "a_" * 50_000, "1," * 50_000, "$" * 50_000, "x@" * 30_000,
             "12:" * 30_000, "." * 50_000, "1.1." * 20_000, "http://" + "a" * 100_000]
)
def test_pathological_inputs_finish(text: str) -> None:
    pieces = normalize(text)
    _covers(text, pieces)
    assert len(spoken(pieces)) < 20 * len(text) + 100


# open_tail

@pytest.mark.parametrize(
    "text, expected",
    [
        ("Intro\n```python\nx = 1\n", 6),
        ("See [the doc", 4),
        ("See [the doc](https://exa", 4),
        ("See [the doc]", 4),
        ("A table\n| a | b", 8),
        ("bold **", 5),
        ("Done. [clear thr", 6),
        ("all closed [laugh] here", None),
        ("code ```x``` done", None),
        ("```\nx\n```\nafter", None),
        ("a tag <b class=", 6), ("a link <https://ex", 7), ("a comment <!-- x", 10), ("at the end <", 11),
        ("if the cost is < the limit, go", None), ("so a < b, then", None),  # a comparison opens nothing
    ],
)
def test_open_tail(text: str, expected: int | None) -> None:
    assert open_tail(text) == expected
