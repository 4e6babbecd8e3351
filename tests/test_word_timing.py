"""Word timings of a chunk: the pure placement rules, and eSpeak's exact word starts through the real joins."""

from __future__ import annotations

import base64
import json
import threading

import numpy as np
import pytest

from engine.engines.espeak import EspeakEngine
from engine.joins import Joiner
from engine.word_timing import Placement, Word, chunk_words, spoken_words, syllables


def test_spoken_words_skip_tags_and_index_the_stripped_text() -> None:
    assert spoken_words("[laugh] Oh  really, now?") == [("Oh", 0), ("really,", 3), ("now?", 11)]


def test_syllables_are_vowel_groups_and_digits() -> None:
    assert [syllables(w) for w in ("a", "hello", "strength", "42", "queue", "Hmm")] == [1, 2, 1, 2, 1, 1]


def test_estimate_spreads_the_speech_by_syllables_inside_exact_edges() -> None:
    words, timing = chunk_words("I understand.", Placement(0.1, 0.3, 1.3), None, 1.4)
    assert timing == "estimated"
    assert words == [Word("I", 0.3, 0.55), Word("understand.", 0.55, 1.3)]  # 1 : 3 syllables over 0.3..1.3


def test_exact_starts_are_moved_by_the_joins_and_end_at_the_next_word() -> None:
    starts = [(0, 0.05), (6, 0.5), (7, 0.52), (13, 0.9)]  # two reports inside "world,": the first counts
    words, timing = chunk_words("Hello world, bye", Placement(-0.02, 0.01, 1.2), starts, 1.25)
    assert timing == "exact"
    assert words == [Word("Hello", 0.03, 0.48), Word("world,", 0.48, 0.88), Word("bye", 0.88, 1.2)]


def test_a_word_the_engine_did_not_place_is_spread_between_its_placed_neighbours() -> None:
    words, timing = chunk_words("Hello world", Placement(0.0, 0.0, 1.0), [(0, 0.0)], 1.0)
    assert timing == "estimated" and words == [Word("Hello", 0.0, 0.667), Word("world", 0.667, 1.0)]  # 2 : 1
    # eSpeak runs "in the" together: "the" gets no position of its own
    words, timing = chunk_words("in the afternoon", Placement(0.0, 0.05, 1.5), [(0, 0.1), (7, 0.5)], 1.6)
    assert timing == "estimated"
    assert words == [Word("in", 0.1, 0.3), Word("the", 0.3, 0.5), Word("afternoon", 0.5, 1.5)]


def test_nothing_audible_puts_every_word_at_the_end() -> None:
    assert chunk_words("Hi there", None, None, 0.25) == ([Word("Hi", 0.25, 0.25), Word("there", 0.25, 0.25)],
                                                         "estimated")
    assert chunk_words("[laugh]", Placement(0, 0, 1), None, 1.0) == ([], "estimated")


def test_espeak_word_starts_land_where_the_words_are_spoken() -> None:
    """A comma makes eSpeak pause: the second word's exact start is where the sound comes back after the pause."""
    engine = EspeakEngine()
    text = "Seven, elephants"
    wav, starts = engine.synthesize_timed(text, engine.default_voice(), threading.Event())
    joiner = Joiner()
    joined = joiner.process(wav, engine.sample_rate, "sentence")
    duration = joined.size / engine.sample_rate
    words, timing = chunk_words(text, joiner.placement, starts, duration)
    assert timing == "exact" and [w.word for w in words] == ["Seven,", "elephants"]
    assert words[0].start == round(joiner.placement.speech_start, 3) >= 0.25  # after the joins' pause
    assert words[1].end == round(joiner.placement.speech_end, 3) <= duration
    frame = engine.sample_rate // 100  # 10 ms
    level = 10 * np.log10(np.mean(joined[: joined.size // frame * frame].reshape(-1, frame) ** 2, axis=1) + 1e-12)
    loud = level > level.max() - 35
    gap = [i for i in range(int(words[0].start * 100) + 10, int(words[1].start * 100) + 10) if not loud[i]]
    assert gap, "eSpeak pauses after the comma"
    back = next(i for i in range(gap[-1], loud.size) if loud[i]) / 100  # where the sound comes back
    assert abs(words[1].start - back) < 0.06


def test_an_engine_without_word_positions_gets_estimates_through_the_real_worker() -> None:
    """The simulated engine (a stand-in for Turbo, which does not know where its words fall) through a real gateway:
    every chunk says ``estimated``, its words share its speech in order, starting and ending inside the chunk."""
    import httpx

    from tests.server import running_server

    text = "An estimate is honest about itself. Its edges are exact, the inside is spread by syllables."
    with running_server("--engine", "simulated", "--sim-fixed", "0.02", "--sim-rtf", "20") as url:
        reply = httpx.post(url + "/v1/tts", json={"text": text, "format": "ndjson"}, timeout=60)
    lines = [json.loads(line) for line in reply.text.splitlines()]
    chunks = [line for line in lines if line["type"] == "chunk"]
    assert chunks and all(c["timing"] == "estimated" for c in chunks)
    assert " ".join(w["word"] for c in chunks for w in c["words"]) == text
    for chunk in chunks:
        words = chunk["words"]
        assert chunk["offset"] <= words[0]["start"] and words[-1]["end"] <= chunk["offset"] + chunk["duration"] + 1e-3
        assert all(a["end"] == b["start"] for a, b in zip(words, words[1:]))  # contiguous: spread, not placed
        audio = np.frombuffer(base64.b64decode(chunk["audio"]), dtype="<i2").astype(np.float32) / 32768
        first = int((words[0]["start"] - chunk["offset"]) * 24000)  # the speech starts at the first word's start
        assert np.abs(audio[first:first + 480]).max() > 0.01 and np.abs(audio[:max(0, first - 480)]).max(
            initial=0.0) < 0.01


MEASURED = ["The quick brown fox jumps over the lazy dog.",
            "I can help you book a table for tonight, or tomorrow if you prefer.",
            "Please hold while I transfer your call to the billing department.",
            "Wow, that is absolutely extraordinary news for everyone involved.",
            "Turn left at the second light, then continue straight for about two miles.",
            "Thanks for calling. Is there anything else I can do for you today?"]


def test_how_far_the_syllable_estimate_is_from_espeaks_exact_starts(capsys: pytest.CaptureFixture[str]) -> None:
    """The estimate Turbo's chunks get, measured where the truth is known (eSpeak is deterministic: so is this)."""
    engine = EspeakEngine()
    errors = []
    for text in MEASURED:
        wav, starts = engine.synthesize_timed(text, engine.default_voice(), threading.Event())
        joiner = Joiner()
        duration = joiner.process(wav, engine.sample_rate, None).size / engine.sample_rate
        exact, kind = chunk_words(text, joiner.placement, starts, duration)
        estimate, _ = chunk_words(text, joiner.placement, None, duration)
        assert kind == "exact"
        errors += [abs(a.start - b.start) for a, b in zip(exact, estimate)]
    ms = np.array(errors) * 1000
    with capsys.disabled():
        print(f"\nsyllable estimate vs eSpeak's word starts, {ms.size} words: median {np.median(ms):.0f} ms, "
              f"p90 {np.percentile(ms, 90):.0f} ms, max {ms.max():.0f} ms")
    assert np.median(ms) < 150  # within a syllable or so: a chunk's words are not misplaced wholesale
