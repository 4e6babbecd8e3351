"""The planner against a simulated engine (fixed cost + real-time factor R, speaking rates that vary per text) and a
real-time listener (simulated clock), and against a fixed per-sentence splitter on the same texts. Seeded corpora, so
CI is stable. Run with ``-s`` to see the figures."""

from __future__ import annotations

import random

import pytest
from engine.cost import CostModel
from engine.planner import PlannerConfig
from engine.text import BoundaryKind, count_words, find_boundaries
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


def corpus(seed: int, speakers: str, count: int = 60) -> list[tuple[str, float, CostModel]]:
    """``count`` texts, each with the speaking rate (audio seconds per character) and the cost model it meets.

    ``cold``: every text is a new voice's first utterance, at 0.05-0.08 s/char, its cost model fresh (the prior).
    ``voices``: four voices at 0.05-0.08 s/char, each text by one of them at its rate +-5%, each voice's cost model
    learning across its utterances as the worker's does (``Worker.cost_model``).
    """
    rng = random.Random(seed)
    voices = [(rng.uniform(0.05, 0.08), CostModel()) for _ in range(4)]
    cases = []
    for _ in range(count):
        text = make_text(rng)
        if speakers == "cold":
            cases.append((text, rng.uniform(0.05, 0.08), CostModel()))
        else:
            rate, cost = rng.choice(voices)
            cases.append((text, rate * rng.uniform(0.95, 1.05), cost))
    return cases


RATES = [1.5, 2.0, 3.0, 4.2]  # Chatterbox-Turbo measured 4.2x real time with a ~0.12 s decode on an A6000


@pytest.mark.parametrize("rtf", RATES)
@pytest.mark.parametrize("speakers", ["cold", "voices"])
def test_no_underruns_after_first_audio_for_text_streamed_by_an_llm(rtf: float, speakers: str) -> None:
    """The same texts streamed in by an LLM at 20-200 pieces a second."""
    rng = random.Random(4242)
    for text, rate, cost in corpus(4242, speakers, 40):
        arrivals = tokens_of(text, rng, rng.uniform(20.0, 200.0))
        run = run_planner(SimEngine(0.15, rtf, rate), arrivals, cost_model=cost)
        assert " ".join(c.source for c in run.chunks) == " ".join(text.split())  # all of it spoken, in order
        assert run.playback.underruns() == 0, (text, rate, run.playback.stalls())


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


@pytest.mark.parametrize("rtf", RATES)
@pytest.mark.parametrize("fixed", [0.05, 0.15])
@pytest.mark.parametrize("speakers", ["cold", "voices"])
def test_zero_underruns_where_a_fixed_per_sentence_splitter_stalls(rtf: float, fixed: float, speakers: str) -> None:
    """Whole texts. The ratchet never makes the listener wait after first audio; one chunk per sentence does,
    on the same texts, rates and engine, and it is slower to first audio."""
    planner_underruns = sentence_underruns = 0
    planner_stall = sentence_stall = 0.0
    planner_chars: list[int] = []
    sentence_chars: list[int] = []
    planner_first: list[float] = []
    sentence_first: list[float] = []
    for text, rate, cost in corpus(20260602, speakers):
        engine = SimEngine(fixed, rtf, rate)
        run = run_planner(engine, [(0.0, text)], cost_model=cost)
        fixed_run = run_fixed_chunks(engine, sentences_of(text))
        assert run.playback.underruns() == 0, (text, rate, [c.source for c in run.chunks], run.playback.stalls())
        planner_underruns += run.playback.underruns()
        sentence_underruns += fixed_run.underruns()
        planner_stall += stall_seconds(run.playback)
        sentence_stall += stall_seconds(fixed_run)
        planner_chars += [len(c.source) for c in run.chunks]
        sentence_chars += [len(s) for s in sentences_of(text)]
        planner_first.append(run.playback.first_audio)
        sentence_first.append(fixed_run.first_audio)
    planner_mean = sum(planner_chars) / len(planner_chars)
    sentence_mean = sum(sentence_chars) / len(sentence_chars)
    print(
        f"\nR={rtf} fixed={fixed}s {speakers}, 60 texts: ratchet {planner_underruns} underruns / "
        f"{planner_stall:.2f} s stalled, first audio p50 {median(planner_first):.2f} s, mean chunk "
        f"{planner_mean:.0f} chars | per-sentence {sentence_underruns} underruns / {sentence_stall:.2f} s stalled, "
        f"first audio p50 {median(sentence_first):.2f} s, mean chunk {sentence_mean:.0f} chars"
    )
    assert planner_underruns == 0 < sentence_underruns
    assert planner_stall < sentence_stall
    assert median(planner_first) < median(sentence_first)
    if rtf >= 3.0:
        assert planner_mean > sentence_mean  # more context per chunk once the buffer has grown


@pytest.mark.parametrize("rtf", [3.0, 4.2])
def test_a_voice_the_cost_model_knows_starts_with_the_minimum_words(rtf: float) -> None:
    """The first chunk grows only as far as covering the next chunk's generation needs: on a fast engine the cost
    model has learnt, that is the minimum three words (at 0.065 s/char: about 1 s of audio)."""
    cost, rng = CostModel(), random.Random(7)
    for _ in range(20):  # the voice's earlier utterances
        run_planner(SimEngine(0.12, rtf), [(0.0, make_text(rng))], cost_model=cost)
    firsts = [
        run_planner(SimEngine(0.12, rtf), [(0.0, make_text(rng))], cost_model=cost).chunks[0] for _ in range(40)
    ]
    assert median([count_words(c.source) for c in firsts]) <= PlannerConfig().first_chunk_max_words


@pytest.mark.parametrize("rtf", [4.2, 10.0, 20.0, 40.0])
def test_a_first_audio_budget_starts_a_fast_engine_with_more_words_and_no_underruns(rtf: float) -> None:
    """With ``first_audio_target_s`` the first chunk of a fast engine (voices whose cost it has learnt) is the best
    unit generated within the budget: on an engine fast enough, more words than the minimum unit; on a slower one,
    the same as without a budget; never an underrun. Cuts inside a phrase are counted: they fall only where nothing
    better fitted."""
    figures = {}
    for target in (0.0, 0.25):
        config = PlannerConfig(first_audio_target_s=target)
        first_words, firsts, kinds, sizes = [], [], [], []
        for text, rate, cost in corpus(20260602, "voices"):
            run = run_planner(SimEngine(0.05, rtf, rate), [(0.0, text)], config, cost_model=cost)
            assert run.playback.underruns() == 0, (text, rate, [c.source for c in run.chunks])
            first_words.append(count_words(run.chunks[0].source))
            firsts.append(run.playback.first_audio)
            kinds += [c.boundary for c in run.chunks[:-1]]
            sizes += [len(c.source) for c in run.chunks]
        inside = sum(k <= BoundaryKind.INSIDE for k in kinds) / max(1, len(kinds))
        figures[target] = (median(first_words), median(firsts))
        print(f"\nR={rtf} fixed=0.05s voices, first-audio target {target} s: first chunk p50 {median(first_words)} "
              f"words, first audio p50 {median(firsts):.2f} s, mean chunk {sum(sizes) / len(sizes):.0f} chars, "
              f"cuts inside a phrase {100 * inside:.0f}%")
    assert figures[0.25][0] >= figures[0.0][0]
    if rtf >= 20:  # fast enough for a budget of 0.25 s to hold more than the minimum unit
        assert figures[0.25][0] > figures[0.0][0] and figures[0.25][1] <= 0.25


def learnt(engine: SimEngine) -> CostModel:
    """A cost model after the worker's start-up calibration of ``engine`` (three texts, as engine/worker.py)."""
    model = CostModel()
    for chars in (12, 45, 95):
        text = "x" * chars
        model.observe(chars, engine.gen_time(text))
        model.observe_audio(chars, engine.audio_seconds(text))
    return model


@pytest.mark.parametrize(("rtf", "calibrated_at"), [(0.8, 0.8), (0.5, 0.5), (0.8, 4.0), (0.95, 0.95)])
def test_an_engine_slower_than_real_time_holds_first_audio_back_then_never_stalls(rtf: float,
                                                                                   calibrated_at: float) -> None:
    """Held back by what the whole text needs, at once or once the first chunk showed the engine is slow (a cost
    model calibrated faster): then no stall, and first audio well before the whole text could have been made."""
    config = PlannerConfig(hold_slow_start=True)
    rng = random.Random(7)
    for _ in range(20):
        text = make_text(rng)
        engine = SimEngine(0.1, rtf)
        run = run_planner(engine, [(0.0, text)], config, learnt(SimEngine(0.1, calibrated_at)))
        if len(run.chunks) < 3:
            continue
        assert stall_seconds(run.playback) < 1e-6, text
        whole = sum(engine.gen_time(c.text) for c in run.chunks)
        assert run.playback.first_audio < whole


@pytest.mark.parametrize("rtf", [1.6, 3.0])
def test_an_engine_faster_than_real_time_is_never_held(rtf: float) -> None:
    config = PlannerConfig(hold_slow_start=True)
    rng = random.Random(3)
    for _ in range(20):
        engine = SimEngine(0.1, rtf)
        run = run_planner(engine, [(0.0, make_text(rng))], config, learnt(engine))
        assert run.playback.first_audio == pytest.approx(engine.gen_time(run.chunks[0].text))
