"""engine/speech_text/normalize.py is local: text read piece by piece as it streams in (through the real streaming
front end, engine/speech_text/stream.py, as the worker's reader uses it) reads as the whole text does: the same spoken
text, every spoken character pointing at the same characters of the caller's text, over random splits."""

from __future__ import annotations

import random

import pytest

from engine.speech_text.normalize import normalize
from engine.speech_text.reader import Reader
from engine.speech_text.spans import Piece, spoken
from engine.text import WORD_JOINER
from tests.speech_text_cases import CASES, STREAM_TEXTS

SPLITS = 30


def stream(parts: list[str]) -> list[Piece]:
    """The pieces the reader lets go of, fed ``parts`` one by one then ended, in offsets of the whole text; what it
    gave the planner on the way must be their spoken text (a rewritten phrase's spaces joined)."""
    reader = Reader()
    given = "".join(s.text for part in parts for s in reader.feed(part)) + "".join(s.text for s in reader.flush(True))
    assert given.replace(WORD_JOINER, " ") == spoken(reader.pieces)
    return reader.pieces


def _sources(pieces: list[Piece]) -> list[tuple[int, int]]:
    """For each spoken character, the source it speaks for: its own character (verbatim) or its piece's span."""
    return [(p.start + i, p.start + i + 1) if p.verbatim else (p.start, p.end) for p in pieces for i in range(len(p.text))]


def _splits(text: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    parts, at = [], 0
    while at < len(text):
        step = rng.randint(1, 12)
        parts.append(text[at:at + step])
        at += step
    return parts


TEXTS = [source for source, _ in CASES] + STREAM_TEXTS


@pytest.mark.parametrize("index", range(len(TEXTS)))
def test_streamed_reads_as_the_whole(index: int) -> None:
    text = TEXTS[index]
    whole = normalize(text)
    for seed in range(SPLITS):
        streamed = stream(_splits(text, seed))
        assert spoken(streamed) == spoken(whole), (seed, text)
        assert _sources(streamed) == _sources(whole), (seed, text)


def test_whole_text_in_one_part_is_the_whole() -> None:
    text = "Hello **world**, it's $3 million.\n\n- one\n- two"
    assert spoken(stream([text])) == spoken(normalize(text))
