"""engine/planner.py: the buffer-ratchet chunk planner, driven directly with a simulated clock."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cost import CostModel
from engine.planner import ChunkPlanner, PlannerConfig, PlannerError
from engine.text import BoundaryKind, count_words, punc_norm
from planner_sim import SimEngine, run_planner

TAGS = ["[laugh]", "[sigh]", "[clear throat]"]
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "Dr.", "it's", "42", "“quoted”"]
ENDINGS = ["", "", "", "", ",", ";", ".", "!", "?", "..."]
LONG = (
    "Once upon a time, in a quiet village by the sea, there lived an old fisherman. Every morning he rowed out "
    "before dawn; every evening he came back with his nets full. [sigh] The villagers loved him, and the children "
    "followed him along the shore, asking for stories about storms and whales and distant islands. He never tired "
    "of telling them. One winter, a great storm came. "
) * 3

words = st.builds(lambda w, e: w + e, st.sampled_from(WORDS + TAGS), st.sampled_from(ENDINGS))
texts = st.lists(words, min_size=1, max_size=120).map(" ".join)


def pieces_of(text: str, cuts: list[int]) -> list[str]:
    """``text`` split at the given positions (as an LLM might deliver it, mid-word included)."""
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


def tag_count(text: str) -> int:
    return len(re.findall(r"\[[a-z ]+\]", text))


def known_cost() -> CostModel:
    """A cost model that has measured ``0.1 + 0.01 * chars`` seconds over the whole range of chunk sizes, and audio
    at 0.065 s per character."""
    cost = CostModel(fixed_s=0.1, per_char_s=0.01)
    for _ in range(5):
        for chars in range(10, 310, 30):
            cost.observe(chars, 0.1 + 0.01 * chars)
            cost.observe_audio(chars, 0.065 * chars)
    return cost


def planner_with_buffer(text: str, buffered_s: float) -> ChunkPlanner:
    """A planner that has delivered a first chunk of ``buffered_s`` seconds of audio at time 0."""
    planner = ChunkPlanner(PlannerConfig(), known_cost())
    planner.append(text)
    first = planner.next_chunk(0.0)
    assert first is not None
    planner.on_generated(first, gen_time=0.1 + 0.01 * len(first.text), audio_seconds=buffered_s, now=0.0)
    return planner


def ratchet_at(text: str, buffered_s: float) -> ChunkPlanner:
    """A planner with ``buffered_s`` seconds of audio in hand at time 0 and ``text`` (ended) still to plan.

    The audio came from a first chunk long enough to speak it at a plausible rate (one unbroken word cut off by a
    flush), so the utterance's learnt speaking rate stays realistic.
    """
    planner = ChunkPlanner(PlannerConfig(), known_cost())
    filler = "x" * max(1, min(300, round(buffered_s / 0.065)))
    planner.append(filler)
    planner.flush()
    planner.append(" " + text)
    planner.end()
    first = planner.next_chunk(0.0)
    assert first is not None and first.source == filler
    planner.on_generated(first, gen_time=0.1 + 0.01 * len(first.text), audio_seconds=buffered_s, now=0.0)
    return planner


# Properties over random texts, streamed in random pieces ----------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(texts, st.lists(st.integers(0, 10_000), max_size=40), st.floats(1.2, 6.0), st.floats(0.0, 0.3))
def test_chunks_cover_the_input_in_order_without_splitting_tags_or_exceeding_the_cap(
    text: str, cuts: list[int], rtf: float, fixed: float
) -> None:
    config = PlannerConfig(max_chars=120)
    arrivals = [(0.05 * n, piece) for n, piece in enumerate(pieces_of(text, cuts))]
    chunks = run_planner(SimEngine(fixed, rtf), arrivals, config).chunks
    assert " ".join(c.source for c in chunks) == " ".join(text.split())
    assert sum(tag_count(c.source) for c in chunks) == tag_count(text)
    assert all(len(c.source) <= config.max_chars for c in chunks)
    starts = [True] + [c.boundary.ends_sentence for c in chunks[:-1]]  # a capital only after a sentence ends
    assert all(c.text == punc_norm(c.source, starts_sentence=s, ends_sentence=c.boundary.ends_sentence)
               for c, s in zip(chunks, starts))
    assert [c.seq for c in chunks] == list(range(len(chunks)))
    assert all(text[c.start:c.end] == c.source for c in chunks)  # where each chunk is in all the text appended


def test_at_speed_two_the_buffer_counts_what_plays_and_the_cost_model_what_the_model_made() -> None:
    """A chunk stretched to twice the speed plays half as long: the planner's buffer holds what plays, while the
    voice's cost model learns the model's own audio per character (the same at any speed)."""
    models = {speed: CostModel() for speed in (1.0, 2.0)}
    buffered = {}
    for speed, model in models.items():
        planner = ChunkPlanner(PlannerConfig(speed=speed), model)
        planner.append("Hello there, how are you today? ")
        planner.end()
        planned = planner.next_chunk(0.0)
        assert planned is not None
        planner.on_generated(planned, gen_time=0.2, audio_seconds=2.0 / speed, now=0.2)
        buffered[speed] = planner.buffered(0.2)
    assert models[1.0].audio_per_char_s == pytest.approx(models[2.0].audio_per_char_s)
    assert buffered[2.0] == pytest.approx(buffered[1.0] / 2)
    with pytest.raises(PlannerError):
        PlannerConfig(speed=0)


def settled_words(sent: str) -> int:
    """Words of text still streaming in that have surely ended: those before its last whitespace outside a tag (the
    text after it, or an unfinished tag, may still grow)."""
    depth, settled = 0, 0
    for i, ch in enumerate(sent):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif ch.isspace() and depth == 0:
            settled = i
    return count_words(sent[:settled])


@settings(max_examples=60, deadline=None)
@given(texts, st.lists(st.integers(0, 10_000), max_size=40))
def test_open_input_is_cut_only_at_complete_boundaries_and_is_cut_once_it_can_be(text: str, cuts: list[int]) -> None:
    """Driven like the worker (asked again at ``wake_at``), with the input open: every cut follows whitespace that
    has arrived, and the planner goes idle only with fewer settled words than a chunk needs; once the input ends,
    the chunks cover the text."""
    planner = ChunkPlanner(PlannerConfig(), CostModel())
    sent, now, spoken = "", 0.0, []
    for piece in pieces_of(text, cuts):
        planner.append(piece)
        sent += piece
        while (planned := planner.next_chunk(now)) is not None or planner.wake_at is not None:
            if planned is None:
                assert planner.wake_at > now, "a wake-up that is not in the future: the worker would spin"
                now = planner.wake_at
                continue
            end = sent.index(planned.source) + len(planned.source)
            assert end < len(sent) and sent[end].isspace(), "cut where the last word might still be incomplete"
            sent = sent[end:].lstrip()
            spoken.append(planned.source)
            now += 0.5
            planner.on_generated(planned, gen_time=0.5, audio_seconds=2.0, now=now)
        assert settled_words(sent) < planner.config.first_chunk_min_words, f"idle with {sent!r} to speak"
    planner.end()
    while (planned := planner.next_chunk(now)) is not None:
        spoken.append(planned.source)
        now += 0.5
        planner.on_generated(planned, gen_time=0.5, audio_seconds=2.0, now=now)
    assert planner.finished and " ".join(spoken) == " ".join(text.split())


def test_asked_again_at_its_wake_up_time_the_planner_cuts() -> None:
    """Found by the test above: asked at exactly ``wake_at``, the spare time was a rounding error above zero, so the
    planner set the same ``wake_at`` again, forever (a simulated clock never moves past it)."""
    planner = ChunkPlanner(PlannerConfig(), CostModel())
    planner.append("[clear throat]. [sigh]? quick Dr.; [clear throat] it's “quoted”. 42 [sigh]")
    first = planner.next_chunk(0.0)
    assert first is not None
    planner.on_generated(first, gen_time=0.5, audio_seconds=2.0, now=0.5)
    planner.append("; Dr. [clear throat]... quick l")
    assert planner.next_chunk(0.5) is None and planner.wake_at is not None and planner.wake_at > 0.5
    planned = planner.next_chunk(planner.wake_at)
    assert planned is not None and planned.source == "42 [sigh]; Dr. [clear throat]... quick"


@settings(max_examples=60, deadline=None)
@given(texts)
def test_first_chunk_is_the_shortest_natural_unit_that_covers_the_next(text: str) -> None:
    """On a fast engine the cost model knows, the first chunk is the snapped minimum words unless its audio would not
    cover making the next chunk (tiny words, long words or tags next): then it grows, but only that far."""
    config = PlannerConfig()
    planner = ChunkPlanner(config, known_cost())
    planner.append(text)
    planner.end()
    first = planner.next_chunk(0.0)
    assert first is not None
    words = count_words(first.source)
    if count_words(text) >= config.first_chunk_min_words:
        assert config.first_chunk_min_words <= words
        # longer only for tiny words or tags (little audio each), or a short text taken whole
        assert words <= config.first_chunk_max_words or len(first.source) <= 60 or (
            first.source == " ".join(text.split()) and len(first.source) <= 100)
    else:
        assert first.source == text.strip()


def test_the_first_chunk_grows_until_its_audio_covers_making_the_next() -> None:
    """Changed rule: the first chunk used to be the minimum words whatever came next. Now its estimated audio must
    outlast the cautious estimate of generating the shortest chunk after it, so the listener never waits for chunk 2."""
    text = "A a the extraordinarily unbelievable extraordinarily overwhelming seaside fishermen. And then some more."
    fast = ChunkPlanner(PlannerConfig(), known_cost())  # 0.1 s + 0.01 s/char: "A a the" makes too little audio
    fast.append(text)
    fast.end()
    planned = fast.next_chunk(0.0)
    assert planned is not None and count_words(planned.source) > 3
    cost = known_cost()
    audio = cost.audio_lower(len(planned.source))
    assert audio >= cost.upper(len("extraordinarily overwhelming seaside")) + PlannerConfig().safety_margin_s
    easy = ChunkPlanner(PlannerConfig(), known_cost())
    easy.append("Fishermen always sing. And then some more words follow.")
    easy.end()
    planned = easy.next_chunk(0.0)
    assert planned is not None and planned.source == "Fishermen always sing."
    cold = ChunkPlanner(PlannerConfig(), CostModel())  # the prior knows little: a cautious, longer first chunk
    cold.append("Fishermen always sing. And then some more words follow here, many more of them. ")
    planned = cold.next_chunk(0.0)
    assert planned is not None and count_words(planned.source) > 3


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.01, 13.0), min_size=2, max_size=8))  # at 0 nothing plays: a first chunk again
def test_chunks_grow_with_the_buffer(buffers: list[float]) -> None:  # (within the lead limit, 13.4 s here)
    fitting = []  # lengths of the chunks that fit their budget, in order of growing buffer
    for buffered in sorted(buffers):
        planner = ratchet_at(LONG, buffered)
        planned = planner.next_chunk(0.0)
        assert planned is not None
        budget = buffered - planner.config.safety_margin_s
        if planned.estimate_s <= budget:
            fitting.append(len(planned.source))
        else:  # nothing fits: a short chunk, the one with the least predicted waiting for it and the two after it
            assert count_words(planned.source) <= planner.config.first_chunk_max_words
    assert fitting == sorted(fitting)


# Rules, one at a time ----------------------------------------------------------------------------------------------
def test_a_client_far_behind_what_was_made_pauses_generation_until_it_takes_more() -> None:
    planner = ratchet_at(LONG, 30.0)
    limit = planner.lead_limit()
    assert known_cost().upper(300) + 0.3 + PlannerConfig().max_lead_s <= limit < 30.0  # (upper: at its slow rate)
    assert planner.next_chunk(0.0) is not None  # a consumer that reports nothing is never held back
    planner.on_generated(planner._outstanding, gen_time=0.1, audio_seconds=5.0, now=0.0)
    planner.on_playout(0.0, 1.0)  # it took nothing (a client that stopped reading, a queued turn)
    limit = planner.lead_limit()  # (this utterance's speaking rate changed it)
    assert planner.next_chunk(1.0) is None and planner.wake_at == pytest.approx(1.0 + 35.0 - limit)
    planner.on_playout(35.0 - limit, 2.0)  # it read on: within the limit again
    assert planner.next_chunk(2.0) is not None


def test_a_client_that_takes_audio_fast_is_not_held_back_nor_heard_ahead_of_real_time() -> None:
    planner = ratchet_at(LONG, 30.0)
    planner.on_playout(30.0, 1.0)  # everything sent at once: heard no further than real time allows
    assert planner.buffered(1.0) == pytest.approx(29.0)
    assert planner.next_chunk(1.0) is not None


def test_first_chunk_snaps_to_the_earliest_sentence_end_nearby() -> None:
    planner = ChunkPlanner(PlannerConfig(), known_cost())
    planner.append("Well, I think so. But the rest of this sentence goes on for a long while yet.")
    planned = planner.next_chunk(0.0)
    assert planned is not None and (planned.source, planned.boundary) == ("Well, I think so.", BoundaryKind.SENTENCE)


def test_a_later_chunk_takes_the_longest_prefix_that_fits_and_snaps_to_a_sentence() -> None:
    planner = ratchet_at(LONG, buffered_s=3.0)  # budget 2.7 s: up to (2.7 - 0.1) / 0.01 = 260 chars
    planned = planner.next_chunk(0.0)
    assert planned is not None and planned.boundary == BoundaryKind.SENTENCE
    assert 130 <= len(planned.source) <= 260 and planned.estimate_s <= 2.7


def test_with_no_buffer_to_spare_the_chunk_is_the_minimum_unit_to_stall_least() -> None:
    planner = ratchet_at(LONG, buffered_s=0.35)  # 0.05 s of budget: nothing fits
    planned = planner.next_chunk(0.0)
    assert planned is not None and count_words(planned.source) == planner.config.first_chunk_min_words


def test_after_the_buffer_drains_the_next_chunk_is_short_again() -> None:
    planner = ratchet_at(LONG, buffered_s=20.0)
    assert planner.buffered(25.0) == 0.0  # the listener heard everything; now idle
    planned = planner.next_chunk(25.0)
    assert planned is not None and count_words(planned.source) <= planner.config.first_chunk_max_words


def test_client_playout_feedback_corrects_the_wall_clock_estimate() -> None:
    planner = planner_with_buffer(LONG, buffered_s=4.0)
    assert planner.buffered(3.0) == pytest.approx(1.0)
    planner.on_playout(0.5, now=3.0)  # the client started late: it has only heard half a second
    assert planner.buffered(3.0) == pytest.approx(3.5)
    planned = planner.next_chunk(3.0)
    assert planned is not None and planned.estimate_s <= 3.5 - planner.config.safety_margin_s


def test_open_input_waits_for_more_text_while_the_buffer_allows() -> None:
    planner = planner_with_buffer("One two three. Four five six ", buffered_s=5.0)
    assert planner.next_chunk(0.0) is None  # "Four five six" fits with time to spare: wait for a longer chunk
    assert planner.wake_at is not None and 0.0 < planner.wake_at < 5.0
    first_wake = planner.wake_at
    planner.append("seven. Eight")  # arrives during the wait; the worker asks again at once
    assert planner.next_chunk(0.1) is None  # still time to spare: keep waiting, now for a later deadline
    assert planner.wake_at is not None and 0.1 < planner.wake_at < first_wake
    planned = planner.next_chunk(planner.wake_at)  # no more text came: at the deadline, the best chunk so far
    assert planned is not None and planned.source == "Four five six seven."


def test_open_input_never_cuts_fewer_than_the_minimum_words() -> None:
    planner = planner_with_buffer("One two three. Four five ", buffered_s=5.0)
    assert planner.next_chunk(0.0) is None and planner.wake_at is None  # nothing to do until more text comes
    planner.end()
    planned = planner.next_chunk(0.0)
    assert planned is not None and (planned.source, planned.boundary) == ("Four five", BoundaryKind.END)


def test_flush_speaks_what_was_sent_and_no_chunk_crosses_it() -> None:
    planner = planner_with_buffer("Hello there my friend. ", buffered_s=10.0)
    planner.append("Yes")
    planner.flush()  # fewer words than a first chunk needs, but the client wants it spoken now
    planner.append(" and more words follow here")
    planned = planner.next_chunk(0.0)
    assert planned is not None and (planned.source, planned.boundary) == ("Yes", BoundaryKind.END)
    planner.on_generated(planned, gen_time=0.1, audio_seconds=0.3, now=0.1)
    assert planner.next_chunk(0.1) is None  # "and more ..." is still open and there is time to wait for more


def test_a_client_may_raise_the_first_chunk_minimum_past_the_snap_window() -> None:
    planner = ChunkPlanner(PlannerConfig(first_chunk_min_words=8), known_cost())
    planner.append("One two three four five six seven eight. Nine ten eleven twelve. ")
    planned = planner.next_chunk(0.0)
    assert planned is not None and planned.source == "One two three four five six seven eight."


def test_text_without_spaces_is_cut_hard_at_the_cap_but_never_inside_a_tag() -> None:
    config = PlannerConfig(max_chars=50)
    planner = ChunkPlanner(config, CostModel())
    planner.append("x" * 45 + "[clear throat]" + "y" * 100)
    planned = planner.next_chunk(0.0)
    assert planned is not None and planned.boundary == BoundaryKind.HARD and planned.source == "x" * 45


def test_long_words_within_the_cap_do_not_stall_the_planner() -> None:
    planner = ChunkPlanner(PlannerConfig(max_chars=50), CostModel())
    planner.append("a" * 30 + " " + "b" * 30 + " " + "c" * 5)  # fewer than 3 words fit in 50 characters
    planner.end()
    planned = planner.next_chunk(0.0)
    assert planned is not None and planned.source == "a" * 30


def test_unspeakable_pieces_are_skipped() -> None:
    planner = ChunkPlanner(PlannerConfig(), CostModel())
    planner.append('" ')
    planner.flush()
    planner.append("Hello there, how are you")
    planner.end()
    planned = planner.next_chunk(0.0)
    assert planned is not None and planned.source == "Hello there, how are you"
    assert planner.finished


def test_schedule_state_is_per_utterance_even_with_a_shared_cost_model() -> None:
    cost = CostModel()
    first = run_planner(SimEngine(0.1, 4.0), [(0.0, LONG)], cost_model=cost)
    assert max(len(c.source) for c in first.chunks) > 150  # the first utterance ratcheted up to long chunks
    second = run_planner(SimEngine(0.1, 4.0), [(0.0, LONG)], cost_model=cost)
    # ...and the second starts small again, from scratch (smaller still: the cost model now knows the engine is fast)
    assert count_words(second.chunks[0].source) <= min(count_words(first.chunks[0].source), 6)
    assert cost.observations == len(first.chunks) + len(second.chunks)


def test_on_generated_teaches_the_cost_model() -> None:
    cost = CostModel(fixed_s=0.3, per_char_s=0.02)
    planner = ChunkPlanner(PlannerConfig(), cost)
    planner.append("Hello there, how are you today? ")
    planner.end()
    planned = planner.next_chunk(0.0)
    assert planned is not None
    planner.on_generated(planned, gen_time=2.0, audio_seconds=2.0, now=2.0)
    assert cost.observations == 1 and cost.estimate(len(planned.text)) > 1.5


def test_finished_once_ended_and_everything_planned() -> None:
    planner = ChunkPlanner(PlannerConfig(), CostModel())
    planner.append("Just a few words here.")
    assert not planner.finished
    planner.end()
    planned = planner.next_chunk(0.0)
    assert planned is not None and planner.finished
    planner.on_generated(planned, gen_time=0.1, audio_seconds=1.0, now=0.1)
    assert planner.next_chunk(0.2) is None


# Misuse has stable error codes -------------------------------------------------------------------------------------
def test_misuse_is_reported_with_stable_codes() -> None:
    planner = ChunkPlanner(PlannerConfig(), known_cost())
    planner.append("One two three four five six. ")
    planned = planner.next_chunk(0.0)
    assert planned is not None
    with pytest.raises(PlannerError) as outstanding:
        planner.next_chunk(0.0)
    assert outstanding.value.code == "chunk_outstanding"
    with pytest.raises(PlannerError) as bad:
        planner.on_generated(planned, gen_time=float("nan"), audio_seconds=1.0, now=1.0)
    assert bad.value.code == "bad_value"
    planner.on_generated(planned, gen_time=0.1, audio_seconds=1.0, now=1.0)
    with pytest.raises(PlannerError) as unknown:
        planner.on_generated(planned, gen_time=0.1, audio_seconds=1.0, now=1.0)
    assert unknown.value.code == "unknown_chunk"
    with pytest.raises(PlannerError) as negative:
        planner.on_playout(-1.0, now=1.0)
    assert negative.value.code == "bad_value"
    planner.end()
    with pytest.raises(PlannerError) as ended:
        planner.append("more")
    assert ended.value.code == "ended"


@pytest.mark.parametrize(
    "kwargs",
    [{"first_chunk_min_words": 0}, {"first_chunk_max_words": 0}, {"max_chars": 0}, {"safety_margin_s": -1.0},
     {"snap_fraction": 1.5}],
)
def test_bad_config_is_rejected(kwargs: dict) -> None:
    with pytest.raises(PlannerError) as error:
        PlannerConfig(**kwargs)
    assert error.value.code == "bad_value"


def test_a_shared_device_caps_a_later_chunks_generation_time() -> None:
    """With seconds of audio in hand the ratchet would take a long chunk; while other utterances wait for the device,
    the worker caps its estimated generation time, and the chunk still ends at a natural boundary."""
    free = ratchet_at(LONG, buffered_s=3.0).next_chunk(0.0)
    shared = ratchet_at(LONG, buffered_s=3.0).next_chunk(0.0, max_gen_s=0.8)
    assert free is not None and shared is not None
    assert shared.estimate_s <= 0.8 < free.estimate_s
    assert len(shared.source) < len(free.source) and shared.boundary >= BoundaryKind.WORD
