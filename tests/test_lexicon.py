"""Pronunciation lexicons (engine/speech_text/lexicon.py): PLS and ElevenLabs JSON read, applied as pieces, limits
refused, and the store on disk."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine.speech_text.lexicon import (MAX_ALIAS_CHARS, MAX_GRAPHEME_CHARS, MAX_LEXICON_BYTES, MAX_RULES,
                                        MAX_STORED, Lexicon, LexiconError, LexiconNotFound, LexiconStore, Rule)
from engine.speech_text.spans import Piece, SpanMap, spoken

NS = 'xmlns="http://www.w3.org/2005/01/pronunciation-lexicon"'


def pls(*lexemes: str, namespace: str = NS) -> bytes:
    body = "\n".join(f"<lexeme>{lexeme}</lexeme>" for lexeme in lexemes)
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<lexicon version="1.0" {namespace} alphabet="ipa" '
            f'xml:lang="en-US">\n{body}\n</lexicon>\n').encode()


def eleven(*rules: dict[str, object]) -> bytes:
    return json.dumps({"rules": list(rules)}).encode()


def alias(grapheme: str, said: str, **flags: object) -> dict[str, object]:
    return {"type": "alias", "string_to_replace": grapheme, "alias": said, **flags}


def said(lexicon: Lexicon, text: str) -> str:
    pieces = lexicon.apply(text)
    assert pieces[0].start == 0 and pieces[-1].end == len(text)  # the pieces cover the text, in order
    assert all(a.end == b.start for a, b in zip(pieces, pieces[1:]))
    return spoken(pieces)


def test_pls_aliases_several_graphemes_and_a_skipped_phoneme_only_lexeme() -> None:
    lexicon = Lexicon.parse(pls("<grapheme>SQL</grapheme><alias>sequel</alias>",
                                "<grapheme>W3C</grapheme><grapheme>W3 C</grapheme>"
                                "<alias>World Wide Web Consortium</alias>",
                                '<grapheme>tomato</grapheme><phoneme>təˈmeɪtoʊ</phoneme>'))
    assert lexicon.skipped == 1
    assert lexicon.rules == (Rule("SQL", "sequel"), Rule("W3C", "World Wide Web Consortium"),
                             Rule("W3 C", "World Wide Web Consortium"))
    assert said(lexicon, "SQL and W3C, W3 C; sql, tomato.") == \
        "sequel and World Wide Web Consortium, World Wide Web Consortium; sql, tomato."  # case-sensitive


def test_pls_without_a_namespace_with_metadata_and_a_lexeme_with_both_alias_and_phoneme() -> None:
    lexicon = Lexicon.parse(pls("<grapheme> GIF </grapheme><phoneme>dʒɪf</phoneme><alias>jif</alias>",
                                namespace="").replace(b"<lexeme>", b"<meta name='x'/><lexeme>", 1))
    assert lexicon.rules == (Rule("GIF", "jif"),) and lexicon.skipped == 0
    assert said(lexicon, "a GIF") == "a jif"


def test_elevenlabs_json_case_and_word_boundaries() -> None:
    lexicon = Lexicon.parse(eleven(alias("tomato", "tuh-MAH-toe", case_sensitive=False, word_boundaries=False),
                                   alias("UN", "United Nations"),
                                   {"type": "phoneme", "string_to_replace": "potato", "phoneme": "pəˈteɪtoʊ",
                                    "alphabet": "ipa"}))
    assert lexicon.skipped == 1
    assert said(lexicon, "Tomatoes, TOMATO; the UN is not UNcut or un.") == \
        "tuh-MAH-toees, tuh-MAH-toe; the United Nations is not UNcut or un."


def test_word_boundaries_hold_at_the_text_edges_and_around_punctuation() -> None:
    lexicon = Lexicon([Rule("C++", "C plus plus"), Rule("Dr.", "Doctor")])
    assert said(lexicon, "C++ by Dr. No, not xC++ or Dr.x") == "C plus plus by Doctor No, not xC++ or Dr.x"


def test_the_longest_grapheme_wins_and_matches_do_not_overlap() -> None:
    lexicon = Lexicon([Rule("New", "Noo"), Rule("New York", "the Big Apple"), Rule("York City", "YC"),
                       Rule("aa", "b", word_boundaries=False)])
    assert said(lexicon, "New York City is New.") == "the Big Apple City is Noo."
    assert said(lexicon, "aaa") == "ba"  # left to right, not overlapping


def test_an_equally_long_match_goes_to_the_earlier_rule() -> None:
    lexicon = Lexicon([Rule("sql", "first", case_sensitive=False), Rule("SQL", "second")])
    assert said(lexicon, "SQL") == "first"


def test_pieces_map_an_alias_back_to_its_grapheme() -> None:
    text = "I like tomato soup"
    pieces = Lexicon([Rule("tomato", "tuh-MAH-toe")]).apply(text)
    assert [p.verbatim for p in pieces] == [True, False, True]
    back = SpanMap(pieces)
    at = back.text.index("MAH")
    assert back.source(at, at + 3) == (7, 13) and text[7:13] == "tomato"
    assert back.source(0, 6) == (0, 6)  # "I like", exactly
    assert Lexicon([]).apply(text) == [Piece(0, len(text), text, True)]
    assert Lexicon([]).apply("") == []


def test_then_keeps_the_first_definition_of_a_grapheme() -> None:
    first = Lexicon([Rule("SQL", "sequel")])
    second = Lexicon.parse(eleven(alias("SQL", "S Q L"), alias("GIF", "jif"),
                                  {"type": "phoneme", "string_to_replace": "x", "phoneme": "y"}))
    both = first.then(second)
    assert [rule.alias for rule in both.rules] == ["sequel", "jif"] and both.skipped == 1
    assert said(both, "SQL GIF") == "sequel jif"
    assert said(second.then(first), "SQL GIF") == "S Q L jif"


def test_two_thousand_rules_compile_and_apply() -> None:
    lexicon = Lexicon([Rule(f"w{i}", f"word {i}", case_sensitive=i % 2 == 0, word_boundaries=i % 3 > 0)
                       for i in range(MAX_RULES)])
    assert said(lexicon, "W11 w1999 xw3y W1998") == "word 11 word 1999 xword 3y W1998"


def errors(data: bytes) -> str:
    with pytest.raises(LexiconError) as caught:
        Lexicon.parse(data, "mine.pls")
    return str(caught.value)


@pytest.mark.parametrize(("data", "message"), [
    (b"<lexicon><lexeme><grapheme>a</grapheme>", "line 1: not well-formed XML"),
    (b'<lexicon>\n<lexeme><grapheme>a</alias></lexeme></lexicon>', "line 2: not well-formed XML (mismatched tag)"),
    (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>'
     b"<lexicon><lexeme><grapheme>&lol2;</grapheme><alias>x</alias></lexeme></lexicon>", "DOCTYPE or ENTITY"),
    # in UTF-16 the bytes hold no "<!DOCTYPE": expat's handler refuses it (and names the line)
    ('<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE x><lexicon/>'.encode("utf-16-le"), "line 1: a DOCTYPE"),
    (b"<lexicon><lexeme><grapheme>&nbsp;</grapheme><alias>x</alias></lexeme></lexicon>", "undefined entity"),
    (b"<speak>hello</speak>", "a <speak>, not a PLS <lexicon>"),
    (pls("<alias>x</alias>"), "line 3: a <lexeme> with no <grapheme>"),
    (pls("<grapheme>a</grapheme><alias>x</alias>", "<grapheme>b</grapheme>"), "line 4: a <lexeme> with neither"),
    (pls("<grapheme>a<b>c</b></grapheme><alias>x</alias>"), "<b> inside <grapheme>"),
    (pls("<grapheme> </grapheme><alias>x</alias>"), "empty grapheme"),
    (pls("<grapheme>a</grapheme><alias></alias>"), "the alias for 'a' is empty"),
    (pls(f"<grapheme>{'a' * (MAX_GRAPHEME_CHARS + 1)}</grapheme><alias>x</alias>"), "at most 100"),
    (pls(f"<grapheme>a</grapheme><alias>{'x' * (MAX_ALIAS_CHARS + 1)}</alias>"), "at most 200"),
    (b"[]", 'an object with a "rules" list'),
    (b'{"rules": {}}', 'an object with a "rules" list'),
    (b'{\n"rules": [\n{"type": "alias",}]}', "line 3, column 18: not valid JSON"),
    (b"\xff\xfe\x00{", "not valid JSON"),
    (b"[" * 20000, "nested far too deeply"),  # past the stack: once a 500 (found by bench faults)
    (eleven(alias("a", "b"), {"type": "alias", "string_to_replace": "tomato"}),
     "rule 2: \"alias\" for 'tomato' is missing"),
    (eleven({"type": "sound", "string_to_replace": "a", "alias": "b"}), 'rule 1: "type" must be'),
    (eleven({"type": "alias", "alias": "b"}), 'rule 1: "string_to_replace" is missing'),
    (eleven(alias("a", "b", case_sensitive="no")), 'rule 1: "case_sensitive" must be true or false'),
    (eleven("a"), "rule 1: not an object"),
    (eleven(*(alias(f"w{i}", "x") for i in range(MAX_RULES + 1))), "2001 rules; a lexicon holds at most 2000"),
    (eleven(alias("a", "b")) + b" " * 300_000, f"at most {MAX_LEXICON_BYTES}"),
])
def test_malformed_lexicons_and_limits_are_refused_with_the_reason(data: bytes, message: str) -> None:
    assert message in errors(data)
    assert errors(data).startswith("mine.pls: ")


def test_a_pls_of_more_than_the_rules_limit_is_refused() -> None:
    data = pls(*(f"<grapheme>w{i}</grapheme><alias>x</alias>" for i in range(MAX_RULES + 1)))
    assert len(data) < MAX_LEXICON_BYTES and "2001 rules" in errors(data)


def test_a_rule_is_checked_when_made() -> None:
    with pytest.raises(LexiconError, match="empty grapheme"):
        Rule("", "x")
    with pytest.raises(LexiconError, match="2001 rules"):
        Lexicon([Rule("a", "b")] * (MAX_RULES + 1))


# The store


def test_the_store_adds_gets_lists_and_deletes(tmp_path: Path) -> None:
    store = LexiconStore(tmp_path / "lexicons")
    assert store.list() == []
    assert store.add("tech", pls("<grapheme>SQL</grapheme><alias>sequel</alias>",
                                 "<grapheme>x</grapheme><phoneme>x</phoneme>")) == \
        {"name": "tech", "rules": 1, "skipped": 1}
    assert store.add("food_2", eleven(alias("tomato", "tuh-MAH-toe"))) == {"name": "food_2", "rules": 1, "skipped": 0}
    assert sorted(p.name for p in (tmp_path / "lexicons").iterdir()) == ["food_2.json", "tech.pls"]
    assert said(store.get("tech"), "SQL") == "sequel"
    assert store.get("tech") is store.get("tech")  # cached
    assert [entry["name"] for entry in store.list()] == ["food_2", "tech"]
    store.delete("tech")
    assert [entry["name"] for entry in store.list()] == ["food_2"]
    with pytest.raises(LexiconNotFound, match="no lexicon 'tech'") as caught:
        store.get("tech")
    assert isinstance(caught.value, KeyError) and str(caught.value) == "no lexicon 'tech'"
    with pytest.raises(LexiconNotFound, match="no lexicon 'tech'"):
        store.delete("tech")


def test_re_adding_a_name_replaces_its_lexicon_even_in_the_other_format(tmp_path: Path) -> None:
    store = LexiconStore(tmp_path)
    store.add("mine", pls("<grapheme>SQL</grapheme><alias>sequel</alias>"))
    assert said(store.get("mine"), "SQL") == "sequel"
    store.add("mine", pls("<grapheme>SQL</grapheme><alias>S Q L</alias>"))
    assert said(store.get("mine"), "SQL") == "S Q L"  # the cache saw the new file
    assert store.add("mine", eleven(alias("SQL", "squeal"), alias("GIF", "jif")))["rules"] == 2
    assert said(store.get("mine"), "SQL") == "squeal"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.json"]  # no temp file left, no stale .pls


def test_a_file_changed_by_hand_is_read_again(tmp_path: Path) -> None:
    store = LexiconStore(tmp_path)
    store.add("mine", eleven(alias("SQL", "sequel")))
    assert said(store.get("mine"), "SQL") == "sequel"
    (tmp_path / "mine.json").write_bytes(eleven(alias("SQL", "S Q L")))
    assert said(store.get("mine"), "SQL") == "S Q L"
    (tmp_path / "mine.json").unlink()
    with pytest.raises(LexiconNotFound):
        store.get("mine")


def test_a_bad_lexicon_is_not_stored_and_leaves_the_old_one(tmp_path: Path) -> None:
    store = LexiconStore(tmp_path)
    store.add("mine", eleven(alias("SQL", "sequel")))
    with pytest.raises(LexiconError, match="mine: .*not valid JSON"):
        store.add("mine", b"{oops")
    assert said(store.get("mine"), "SQL") == "sequel" and sorted(os.listdir(tmp_path)) == ["mine.json"]


@pytest.mark.parametrize("name", ["", "A", "a.b", "../x", "a b", "x" * 65, "é"])
def test_bad_names_are_refused(tmp_path: Path, name: str) -> None:
    store = LexiconStore(tmp_path)
    for call in (lambda: store.add(name, eleven(alias("a", "b"))), lambda: store.get(name),
                 lambda: store.delete(name)):
        with pytest.raises(LexiconError, match="is not 1-64 of a-z"):
            call()
    assert os.listdir(tmp_path) == []


def test_a_hand_broken_file_is_left_out_of_the_list(tmp_path: Path) -> None:
    store = LexiconStore(tmp_path)
    store.add("good", eleven(alias("a", "b")))
    (tmp_path / "bad.json").write_bytes(b"[]")
    (tmp_path / "notes.txt").write_bytes(b"not a lexicon")
    assert [entry["name"] for entry in store.list()] == ["good"]
    with pytest.raises(LexiconError, match="bad.json: a JSON lexicon must be an object"):
        store.get("bad")


def test_the_store_holds_at_most_its_limit(tmp_path: Path) -> None:
    store = LexiconStore(tmp_path)
    data = eleven(alias("a", "b"))
    for i in range(MAX_STORED):
        (tmp_path / f"l{i}.json").write_bytes(data)
    with pytest.raises(LexiconError, match=f"{MAX_STORED} lexicons are stored already"):
        store.add("one-more", data)
    assert store.add("l0", eleven(alias("a", "c")))["rules"] == 1  # replacing one is still allowed
