"""The client's own spelling on the engine's timed words (gateway/word_match.py), pure."""

from __future__ import annotations

from engine.text import count_words
from gateway.word_match import ClientWords, heard_text


def timed(*words: str) -> list[dict]:
    return [{"word": w, "start": i * 0.3, "end": i * 0.3 + 0.25} for i, w in enumerate(words)]


def test_timed_words_take_the_clients_spelling() -> None:
    words = ClientWords()
    words.add('he said "hello": ')
    words.add("[laugh] then left")
    renamed = words.rename(timed("He", "said", "hello,", "then", "left."))
    assert [w["word"] for w in renamed] == ["he", "said", '"hello":', "then", "left"]
    assert heard_text(renamed, 0.6) == "he said"


def test_a_bracket_too_long_for_a_tag_is_words_to_the_gateway_as_to_the_engine() -> None:
    """The gateway once had its own tag pattern, 2 characters longer than the engine's: a bracket the engine speaks
    as words was dropped from the client's words, and its timed word kept the engine's spelling."""
    long = "[" + "a" * 39 + "]"  # plain text to the engine (count_words: 3 words, not 2)
    assert count_words(f"Say {long}: now") == 3
    words = ClientWords()
    words.add(f"Say {long}: now")
    assert [w["word"] for w in words.rename(timed("Say", f"{long},", "now."))] == ["Say", f"{long}:", "now"]
