"""The planner against a simulated engine and a real-time listener (simulated clock), and against a fixed
per-sentence splitter on the same texts. Run with ``-s`` to see the figures."""

from __future__ import annotations

import random

import pytest
from engine.text import BoundaryKind, find_boundaries
from planner_sim import Playback, SimEngine, run_fixed_chunks, run_planner

VOCABULARY = (
    "the quick brown fox jumps over a lazy dog while seven old fishermen sing about rivers mountains and "
    "distant cities under an extraordinarily bright moon"
).split()


def make_text(rng: random.Random) -> str:
    """1-12 sentences of 2-30 words, with a comma now and then and the odd tag."""
    sentences = []
    for _ in range(rng.randint(1, 12)):
        words = [rng.choice(VOCABULARY) for _ in range(rng.randint(2, 30))]
        for k in range(1, len(words) - 1):
            roll = rng.random()
            words[k] += "," if roll < 0.08 else " [laugh]" if roll < 0.1 else ""
        sentences.append(" ".join(words).capitalize() + rng.choice(".!?"))
    return " ".join(sentences)


def sentences_of(text: str) -> list[str]:
    """What a fixed per-sentence splitter sends: one chunk per sentence."""
    ends = [b.end for b in find_boundaries(text) if b.kind == BoundaryKind.SENTENCE]
    return [piece for a, b in zip([0, *ends], [*ends, len(text)]) if (piece := text[a:b].strip())]


def tokens_of(text: str, rng: random.Random, rate: float) -> list[tuple[float, str]]:
    """``text`` as an LLM streams it: pieces of 1-6 characters, ``rate`` pieces a second."""
    pieces, start = [], 0
    while start < len(text):
        size = rng.randint(1, 6)
        pieces.append(text[start : start + size])
        start += size
    return [(n / rate, piece) for n, piece in enumerate(pieces)]


def stall_seconds(playback: Playback) -> float:
    return sum(playback.stalls())


@pytest.mark.parametrize("fixed", [0.0, 0.05, 0.15])
@pytest.mark.parametrize("streamed", [False, True])
def test_no_underruns_after_first_audio_at_turbos_speed(fixed: float, streamed: bool) -> None:
    """Chatterbox-Turbo measured 4.2x real time with a ~0.12 s decode on an A6000. Whole texts, and the same texts
    streamed in by an LLM at 20-200 pieces a second. (No planner can promise this for every text: three tiny first
    words followed by three long ones beat any engine that has a fixed cost; hence seeded corpora, not a search.)"""
    engine, rng = SimEngine(fixed, 4.2), random.Random(4242)
    for _ in range(40):
        text = make_text(rng)
        arrivals = tokens_of(text, rng, rng.uniform(20.0, 200.0)) if streamed else [(0.0, text)]
        run = run_planner(engine, arrivals)
        assert run.playback.underruns() == 0, (text, run.playback.stalls())


@pytest.mark.parametrize("rtf", [1.5, 2.0, 3.0, 4.2])
@pytest.mark.parametrize("fixed", [0.05, 0.15])
def test_the_ratchet_beats_a_fixed_per_sentence_splitter(rtf: float, fixed: float) -> None:
    engine, rng = SimEngine(fixed, rtf), random.Random(20260602)
    planner_underruns = sentence_underruns = 0
    planner_stall = sentence_stall = 0.0
    planner_chars: list[int] = []
    sentence_chars: list[int] = []
    first_audio = []
    for _ in range(60):
        text = make_text(rng)
        run = run_planner(engine, [(0.0, text)])
        fixed_run = run_fixed_chunks(engine, sentences_of(text))
        planner_underruns += run.playback.underruns()
        sentence_underruns += fixed_run.underruns()
        planner_stall += stall_seconds(run.playback)
        sentence_stall += stall_seconds(fixed_run)
        planner_chars += [len(c.source) for c in run.chunks]
        sentence_chars += [len(s) for s in sentences_of(text)]
        first_audio.append((run.playback.first_audio, fixed_run.first_audio))
    planner_mean = sum(planner_chars) / len(planner_chars)
    sentence_mean = sum(sentence_chars) / len(sentence_chars)
    print(
        f"\nR={rtf} fixed={fixed}s, 60 texts: ratchet {planner_underruns} underruns / {planner_stall:.2f} s stalled, "
        f"mean chunk {planner_mean:.0f} chars, median first audio {sorted(a for a, _ in first_audio)[30]:.2f} s | "
        f"per-sentence {sentence_underruns} underruns / {sentence_stall:.2f} s stalled, mean chunk "
        f"{sentence_mean:.0f} chars, median first audio {sorted(b for _, b in first_audio)[30]:.2f} s"
    )
    assert planner_underruns <= sentence_underruns
    assert planner_stall <= sentence_stall
    # Sooner to first audio as a rule (a sentence shorter than the minimum words can still come first on its own).
    assert sorted(a for a, _ in first_audio)[30] <= sorted(b for _, b in first_audio)[30]
    if rtf >= 3.0:
        assert planner_mean > sentence_mean  # more context per chunk once the buffer has grown
    if rtf >= 4.2:
        assert planner_underruns == 0
