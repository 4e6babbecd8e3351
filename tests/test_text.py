"""engine/text.py: tags, boundaries, punctuation normalisation."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Callable

from hypothesis import given
from hypothesis import strategies as st

from engine.text import (
    BoundaryKind,
    count_words,
    find_boundaries,
    punc_norm,
    safe_cut,
    tag_spans,
)

TAGS = ["[laugh]", "[sigh]", "[clear throat]", "[chuckle]"]
pieces = st.sampled_from(
    ["hello", "world", "Dr.", "it's", "ok", "yes", "42", "“quoted”", '"plain"', "—", "…", ",", ".", "!", "?", ":", *TAGS]
)
spaces = st.sampled_from([" ", "  ", "\n", " \t "])
texts = st.lists(st.tuples(pieces, spaces), max_size=30).map(lambda parts: "".join(p + s for p, s in parts))


def _turbo_punc_norm() -> Callable[[str], str]:
    """The real ``punc_norm`` from the installed chatterbox, lifted from its source without importing torch."""
    spec = importlib.util.find_spec("chatterbox")  # finds the package without running its heavy __init__
    assert spec is not None and spec.submodule_search_locations, "chatterbox-tts (engine extra) is not installed"
    source = Path(next(iter(spec.submodule_search_locations)), "tts_turbo.py").read_text()
    func = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "punc_norm")
    namespace: dict = {}
    exec(compile(ast.Module([func], type_ignores=[]), "tts_turbo.py", "exec"), namespace)
    return namespace["punc_norm"]


def kinds(text: str) -> list[tuple[str, str]]:
    return [(text[: b.end].split()[-1], b.kind.name) for b in find_boundaries(text)]


def test_boundaries_are_classified() -> None:
    text = "Hi there, Dr. Smith: it works. Really?  Yes; so - fine\nNext"
    assert kinds(text) == [
        ("Hi", "WORD"),
        ("there,", "CLAUSE"),
        ("Dr.", "INSIDE"),  # an abbreviation, not a sentence end; a title binds to the name after it
        ("Smith:", "CLAUSE"),
        ("it", "WORD"),
        ("works.", "SENTENCE"),
        ("Really?", "SENTENCE"),
        ("Yes;", "CLAUSE"),
        ("so", "INSIDE"),  # a conjunction belongs with what follows it
        ("-", "CLAUSE"),
        ("fine", "SENTENCE"),  # a line break
    ]


def test_closing_quote_after_a_full_stop_still_ends_the_sentence() -> None:
    assert kinds('He said "go." Then') == [("He", "WORD"), ("said", "WORD"), ('"go."', "SENTENCE")]


def test_end_of_text_is_never_a_boundary_since_the_last_word_may_be_incomplete() -> None:
    assert [b.end for b in find_boundaries("one two")] == [3]
    assert [b.end for b in find_boundaries("one two ")] == [3, 7]


def test_no_cut_inside_tags_including_one_still_arriving() -> None:
    text = "I [clear throat] think [clear thr"
    assert [text[: b.end] for b in find_boundaries(text)] == ["I", "I [clear throat]", "I [clear throat] think"]
    assert tag_spans(text) == [(2, 16), (23, len(text))]


def test_a_long_or_multiline_bracket_is_not_a_tag() -> None:
    long_open = "[" + "x " * 30
    assert tag_spans(long_open) == []
    assert tag_spans("[a\nb] c") == []


@given(texts)
def test_no_boundary_falls_inside_a_tag(text: str) -> None:
    spans = tag_spans(text)
    ends = [b.end for b in find_boundaries(text)]
    assert all(not start < end < stop for end in ends for start, stop in spans)
    assert ends == sorted(set(ends))
    assert all(text[end].isspace() and not text[end - 1].isspace() for end in ends)


def test_safe_cut_backs_off_to_the_start_of_a_tag() -> None:
    assert safe_cut("aaaa[laugh]bbb", 7) == 4
    assert safe_cut("aaaa[laugh]bbb", 11) == 11
    assert safe_cut("[laugh]bbb", 3) == 7  # a tag at the very start is kept whole
    assert safe_cut("abc", 10) == 3


def test_count_words_ignores_tags_and_bare_punctuation() -> None:
    assert count_words("[laugh] Hello, world - 42 ! [clear throat]") == 3


def test_punc_norm_keeps_tags_and_drops_double_quotes() -> None:
    assert punc_norm('“hello,” she said … [clear   throat] ok:') == "Hello, she said, [clear throat] ok,"
    assert punc_norm("[laugh] hi") == "[laugh] hi."
    assert punc_norm('say "hi" — now') == "Say hi - now."
    assert punc_norm("it’s fine!") == "It's fine!"
    assert punc_norm("  \n ") == ""


@given(texts)
def test_punc_norm_is_a_fixed_point_of_turbos_own_punc_norm(text: str) -> None:
    ours = punc_norm(text)
    if ours:
        assert _TURBO(ours) == ours
        assert punc_norm(ours) == ours
        assert '"' not in ours and "“" not in ours and "”" not in ours


@given(texts)
def test_punc_norm_keeps_every_tag_and_word(text: str) -> None:
    ours = punc_norm(text)
    assert sorted(ours[a:b] for a, b in tag_spans(ours)) == sorted(
        " ".join(text[a:b].split()) for a, b in tag_spans(text)
    )
    assert count_words(ours) == count_words(text)


def test_boundary_kinds_rank_natural_places_higher() -> None:
    assert (BoundaryKind.HARD < BoundaryKind.INSIDE < BoundaryKind.WORD < BoundaryKind.PHRASE < BoundaryKind.CLAUSE
            < BoundaryKind.SENTENCE < BoundaryKind.END)
    assert [k.name for k in BoundaryKind if k.ends_sentence] == ["SENTENCE", "END"]


def test_phrase_boundaries_fall_before_function_words_and_never_inside_a_noun_phrase() -> None:
    text = "The quick brown fox jumps over the lazy dog, and then it runs far away into the quiet green hills. End"
    assert kinds(text) == [
        ("The", "INSIDE"),  # after a determiner
        ("quick", "INSIDE"),  # an adjective and its noun
        ("brown", "INSIDE"),
        ("fox", "WORD"),
        ("jumps", "PHRASE"),  # before a preposition
        ("over", "INSIDE"),  # after one
        ("the", "INSIDE"),
        ("lazy", "INSIDE"),
        ("dog,", "CLAUSE"),
        ("and", "INSIDE"),  # after a conjunction
        ("then", "WORD"),
        ("it", "WORD"),
        ("runs", "WORD"),
        ("far", "WORD"),
        ("away", "PHRASE"),
        ("into", "INSIDE"),
        ("the", "INSIDE"),
        ("quiet", "INSIDE"),
        ("green", "INSIDE"),
        ("hills.", "SENTENCE"),
    ]
    assert kinds("a man who sings (and dances) of the top") == [
        ("a", "INSIDE"), ("man", "PHRASE"), ("who", "INSIDE"), ("sings", "PHRASE"), ("(and", "INSIDE"),
        ("dances)", "WORD"), ("of", "INSIDE"), ("the", "INSIDE"),
    ]


def test_a_determiner_before_a_verb_is_a_pronoun_and_opens_no_noun_phrase() -> None:
    """Issue 24: "this is a streaming test" ranked every cut inside a phrase ("this" read as opening a noun phrase
    "this is a"): a pronoun keeps its verb, and the noun phrase starts at "a"."""
    assert kinds("Hello there, this is a streaming test of the voice gateway.") == [
        ("Hello", "WORD"), ("there,", "CLAUSE"), ("this", "INSIDE"), ("is", "WORD"), ("a", "INSIDE"),
        ("streaming", "INSIDE"), ("test", "INSIDE"), ("of", "INSIDE"), ("the", "INSIDE"), ("voice", "INSIDE"),
    ]
    assert kinds("that was the end of it") == [("that", "INSIDE"), ("was", "WORD"), ("the", "INSIDE"),
                                               ("end", "INSIDE"), ("of", "INSIDE")]


def test_a_fragment_is_not_normalised_as_a_sentence() -> None:
    assert punc_norm("The quick brown", ends_sentence=False) == "The quick brown"
    assert punc_norm("fox jumps: over", starts_sentence=False) == "fox jumps, over."
    assert punc_norm("it goes;", starts_sentence=False, ends_sentence=False) == "it goes;"
    assert punc_norm("[laugh] and “so” on", starts_sentence=False, ends_sentence=False) == "[laugh] and so on"


@given(texts, st.booleans(), st.booleans())
def test_fragments_get_no_sentence_end_and_no_capital(text: str, starts: bool, ends: bool) -> None:
    """A fragment is the whole-sentence normalisation less the capital it did not start with and the full stop it did
    not end with, nothing else."""
    ours = punc_norm(text, starts_sentence=starts, ends_sentence=ends)
    whole = punc_norm(text)
    assert bool(ours) == bool(whole) and count_words(ours) == count_words(text)
    if not ours:
        return
    rebuilt = ours if ends or ours.endswith((".", "!", "?", "-", ",")) else ours + "."
    rebuilt = rebuilt if starts else rebuilt[0].upper() + rebuilt[1:]
    assert rebuilt == whole
    if not starts:
        assert ours[0] in text or ours[0] in ",-'"  # its own first character, never a capital made up for it
    if not ends and ours.endswith("."):
        assert text.rstrip().endswith(".")  # a full stop the text had, never one added


_TURBO = _turbo_punc_norm()


def test_punc_norm_holds_tags_apart_so_none_can_be_forged() -> None:
    # The text once held tags as "\x00<n>\x00" markers: that input raised IndexError or spoke an invented tag.
    assert punc_norm("hi \x000\x00 there") == "Hi \x000\x00 there."
    assert punc_norm("hello \x000\x00 there [laugh]") == "Hello \x000\x00 there [laugh]."
    assert punc_norm("  [laugh] , ok…  “wow”:  [clear   throat]") == "[laugh], ok, wow, [clear throat]."
    assert punc_norm("[a: “b”] x") == "[a, b] x."  # only Turbo's own tags are tags: other brackets are text
