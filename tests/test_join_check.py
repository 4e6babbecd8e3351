"""cbf_tools/join_check.py: pauses and clicks at the seams of an utterance, on synthetic signals with known answers
and on real eSpeak chunks joined by the worker's Joiner."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from cbf_tools.join_check import Seam, ending, seams, summary
from engine.joins import Joiner

SR = 24000


def voiced(seconds: float, f0: float = 140.0, fade_s: float = 0.008) -> np.ndarray:
    """A harmonic tone with raised-cosine fades at both ends (a faded chunk of speech)."""
    t = np.arange(int(seconds * SR)) / SR
    wav = 0.3 * sum(np.sin(2 * np.pi * k * f0 * t) / k for k in range(1, 6))
    n = int(fade_s * SR)
    ramp = 0.5 - 0.5 * np.cos(np.pi * (np.arange(n) + 0.5) / n)
    wav[:n] *= ramp
    wav[-n:] *= ramp[::-1]
    return wav.astype(np.float32)


def test_ending_reads_the_punctuation_a_chunk_ends_with() -> None:
    assert [ending(t) for t in ["Hi there.", 'He said "go!"', "well,", "so -", "the quick brown", "wait;"]] == [
        "sentence", "sentence", "clause", "clause", "none", "clause"]


@pytest.mark.parametrize("gap", [0.0, 0.03, 0.12, 0.25])
def test_the_pause_at_a_seam_is_the_silence_spanning_it(gap: float) -> None:
    first, second = voiced(0.6), np.concatenate([np.zeros(int(gap * SR), np.float32), voiced(0.6)])
    [seam] = seams(np.concatenate([first, second]), SR, [first.size, second.size], ["one two,", "three."])
    assert seam.after == "clause" and seam.word == "two,"
    assert seam.pause_s == pytest.approx(gap, abs=0.015)  # (the fades count as silence once 40 dB down)
    assert not seam.click


def test_a_join_cut_mid_wave_clicks_and_a_faded_or_continuous_one_does_not() -> None:
    tone = 0.3 * np.sin(2 * np.pi * 220 * np.arange(SR) / SR).astype(np.float32)
    cut = np.concatenate([tone[: SR // 2 + 27], tone[: SR // 2]])  # a jump from mid-wave back to zero phase
    [clicked] = seams(cut, SR, [SR // 2 + 27, SR // 2], ["a b", "c."])
    assert clicked.click and clicked.step > 0.02 and clicked.ratio > 3
    [smooth] = seams(tone, SR, [SR // 2, SR // 2], ["a b", "c."])  # the same wave, split: nothing to hear
    assert not smooth.click and smooth.pause_s == 0.0
    faded = np.concatenate([voiced(0.5), voiced(0.5)])
    assert not seams(faded, SR, [SR // 2, SR // 2], ["a b", "c."])[0].click


def test_pause_fit_follows_the_punctuation_and_the_summary_says_so() -> None:
    assert Seam("end.", "sentence", 0.3, 0, 0).pause_fits and not Seam("end.", "sentence", 0.02, 0, 0).pause_fits
    assert Seam("brown", "none", 0.05, 0, 0).pause_fits and not Seam("brown", "none", 0.5, 0, 0).pause_fits
    line = summary([Seam("dog,", "clause", 0.12, 0.0, 0.0), Seam("x", "none", 0.6, 0.5, 9.0)])
    assert line == "joins: 2, clicks 1, pause after: 'dog,' (clause) 120 ms, 'x' (none) 600 ms (off) CLICK"


def test_espeak_chunks_joined_by_the_worker_have_fitting_pauses_and_no_clicks(espeak_engine) -> None:
    """The real path: eSpeak chunks (mid-sentence fragments included) through the worker's Joiner."""
    pieces = [("Sure, let me check", None), ("that for you, it will only take a moment.", "word"),
              ("Your booking is confirmed,", "sentence"), ("and we will see you on Friday", "clause"),
              ("at noon.", "phrase")]
    joiner, voice = Joiner(), espeak_engine.default_voice()
    chunks = [joiner.process(espeak_engine.synthesize(text, voice, threading.Event()), SR, boundary)
              for text, boundary in pieces]
    found = seams(np.concatenate(chunks), SR, [c.size for c in chunks], [t for t, _ in pieces])
    print("\n" + summary(found))
    assert [s.after for s in found] == ["none", "sentence", "clause", "none"]
    assert not any(s.click for s in found)
    assert all(s.pause_fits for s in found), summary(found)


def test_a_pause_wholly_inside_the_next_chunk_counts_wherever_the_seam_falls() -> None:
    """Speech right up to a seam that is not on a 5 ms frame boundary, then the pause at the start of the next chunk
    (what the worker's Joiner sends when it puts a pause before a chunk): the frame straddling the seam is part
    speech, part silence, and the pause is still found."""
    tone = (0.3 * np.sin(2 * np.pi * 140 * np.arange(14407) / SR)).astype(np.float32)  # 14407: 7 past a frame
    second = np.concatenate([np.zeros(int(0.12 * SR), np.float32), voiced(0.6)])
    [seam] = seams(np.concatenate([tone, second]), SR, [tone.size, second.size], ["so,", "and then."])
    assert seam.pause_s == pytest.approx(0.12, abs=0.006) and seam.pause_fits
