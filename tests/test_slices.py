"""engine/slices.py: a generated chunk cut into pieces at word starts, each a chunk of the protocol of its own."""

from __future__ import annotations

import numpy as np

from engine.protocol import Chunk, ChunkHeader
from engine.slices import cut

RATE = 24000


def _chunk(words: list[tuple[str, float, list[int]]], text: str, seconds: float, offset: float = 10.0,
           span: list[int] | None = None) -> tuple[ChunkHeader, bytes]:
    """A chunk ``offset`` seconds into its utterance: its words (word, start in the chunk, caller's span)."""
    timed = [{"word": w, "start": round(offset + at, 3), "end": round(offset + (words[i + 1][1] if i + 1 < len(words)
                                                                              else seconds), 3), "span": where}
             for i, (w, at, where) in enumerate(words)]
    pcm = (np.arange(int(seconds * RATE)) % 30000).astype("<i2").tobytes()  # every sample told apart
    return ChunkHeader("u1", 3, text, offset, seconds, 0.25, words=timed, span=span or [100, 128],
                       timing="exact"), pcm


SIX = [("One", 0.0, [100, 103]), ("two", 0.5, [104, 107]), ("three", 1.0, [108, 113]), ("four", 1.5, [114, 118]),
       ("five", 2.0, [119, 123]), ("six.", 2.5, [124, 128])]


def test_a_long_chunk_is_cut_at_word_starts_into_pieces_that_add_up_to_it() -> None:
    header, pcm = _chunk(SIX, "One two three four five six.", 3.0)
    pieces = cut(header, pcm, piece_s=1.0)
    assert [p.header.text for p in pieces] == ["One two", "three four", "five six."]
    assert [p.header.seq for p in pieces] == [3, 4, 5]
    assert [p.header.offset for p in pieces] == [10.0, 11.0, 12.0]
    assert [p.header.duration for p in pieces] == [1.0, 1.0, 1.0]
    assert [p.header.gen_time for p in pieces] == [0.25, 0.0, 0.0]  # the chunk's generation, counted once
    assert [p.header.span for p in pieces] == [[100, 108], [108, 119], [119, 128]]  # the caller's text, no gap
    assert [[w["word"] for w in p.header.words or []] for p in pieces] == [["One", "two"], ["three", "four"],
                                                                           ["five", "six."]]
    assert pieces[1].header.words[0]["start"] == 11.0  # word times stay in seconds of the utterance
    assert b"".join(p.pcm for p in pieces) == pcm
    assert all(p.header.timing == "exact" and p.header.id == "u1" for p in pieces)


def test_no_piece_is_shorter_than_the_least_and_the_tail_stays_with_the_last() -> None:
    header, pcm = _chunk(SIX, "One two three four five six.", 3.0)
    pieces = cut(header, pcm, piece_s=1.2)  # word starts at 1.5: one cut, and 1.5 s left after it
    assert [p.header.text for p in pieces] == ["One two three", "four five six."]
    assert [p.header.duration for p in pieces] == [1.5, 1.5]


def test_the_words_of_one_reading_stay_together() -> None:
    words = [("It", 0.0, [0, 2]), ("costs", 0.5, [3, 8]), ("one", 1.0, [9, 12]), ("hundred", 1.5, [9, 12]),
             ("dollars", 2.0, [13, 20]), ("now.", 2.5, [21, 25])]
    header, pcm = _chunk(words, "It costs one hundred dollars now.", 3.0, span=[0, 25])
    pieces = cut(header, pcm, piece_s=0.4)
    assert [p.header.text for p in pieces] == ["It", "costs", "one hundred", "dollars", "now."]  # never at "hundred"
    assert [p.header.span for p in pieces] == [[0, 3], [3, 9], [9, 13], [13, 21], [21, 25]]


def test_a_chunk_too_short_or_that_cannot_be_matched_stays_whole() -> None:
    header, pcm = _chunk(SIX, "One two three four five six.", 3.0)
    assert cut(header, pcm, piece_s=2.0) == [Chunk(header, pcm)]  # shorter than two pieces
    mismatched = ChunkHeader(**{**vars(header), "text": "One two three four five"})
    assert cut(mismatched, pcm, piece_s=1.0) == [Chunk(mismatched, pcm)]  # a word more timed than in its text
    unspanned = ChunkHeader(**{**vars(header), "span": None})
    assert cut(unspanned, pcm, piece_s=1.0) == [Chunk(unspanned, pcm)]
