"""engine/cost.py: the online generation-cost model."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cost import CostModel


def test_before_any_measurement_the_prior_is_the_estimate() -> None:
    model = CostModel(fixed_s=0.2, per_char_s=0.01)
    assert model.estimate(0) == pytest.approx(0.2)
    assert model.estimate(100) == pytest.approx(1.2)
    assert model.observations == 0


@given(
    fixed=st.floats(0.0, 1.0),
    per_char=st.floats(0.0, 0.1),
    sizes=st.lists(st.integers(5, 300), min_size=4, max_size=12).filter(lambda s: max(s) - min(s) >= 40),
)
def test_noise_free_measurements_are_learned_within_a_few_chunks(fixed: float, per_char: float, sizes: list[int]) -> None:
    model = CostModel()
    for _ in range(3):
        for n in sizes:
            model.observe(n, fixed + per_char * n)
    for n in (min(sizes), (min(sizes) + max(sizes)) // 2, max(sizes)):  # within the measured range
        assert model.estimate(n) == pytest.approx(fixed + per_char * n, abs=0.02 + 0.02 * (fixed + per_char * n))


def test_one_measurement_moves_the_estimate_most_of_the_way_to_it() -> None:
    model = CostModel(fixed_s=0.3, per_char_s=0.02)
    model.observe(20, 1.0)  # the prior said 0.7 s
    assert abs(model.estimate(20) - 1.0) < 0.05


def test_forgetting_follows_an_engine_that_slows_down() -> None:
    model = CostModel()
    for _ in range(50):
        model.observe(100, 1.0)
        model.observe(200, 2.0)
    for _ in range(30):  # another session now shares the GPU: twice as slow
        model.observe(100, 2.0)
        model.observe(200, 4.0)
    assert model.estimate(150) == pytest.approx(3.0, rel=0.05)


def test_repeated_identical_measurements_do_not_wind_up_the_other_direction() -> None:
    model = CostModel(fixed_s=0.3, per_char_s=0.02)
    for _ in range(2000):
        model.observe(100, 1.0)
    assert model.estimate(100) == pytest.approx(1.0, abs=1e-3)
    assert math.isfinite(model.estimate(300)) and 0 < model.estimate(300) < 10


def test_estimates_are_never_negative_even_when_the_fit_is() -> None:
    model = CostModel(fixed_s=0.0, per_char_s=0.01)
    for _ in range(20):
        model.observe(100, 0.5)
        model.observe(200, 2.0)  # a line through these crosses zero at 70 chars
    assert model.fixed_s < 0
    assert model.estimate(10) == 0.0 and model.estimate(200) == pytest.approx(2.0, abs=0.01)


@pytest.mark.parametrize("chars,seconds", [(10, -1.0), (10, math.nan), (10, math.inf), (-1, 1.0)])
def test_bad_measurements_are_rejected(chars: int, seconds: float) -> None:
    with pytest.raises(ValueError):
        CostModel().observe(chars, seconds)


@pytest.mark.parametrize("kwargs", [{"fixed_s": -1}, {"noise_sd": 0}, {"forgetting": 0}, {"per_char_s": math.nan}])
def test_bad_priors_are_rejected(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        CostModel(**kwargs)


def test_the_speaking_rate_starts_at_the_prior_and_learns_with_a_cautious_lower_bound() -> None:
    model = CostModel()
    assert model.audio_per_char_s == pytest.approx(0.065)
    assert 0.045 < model.audio_lower(100) / 100 < 0.065  # wide while nothing is known
    for _ in range(20):
        model.observe_audio(40, 40 * 0.08)
    assert model.audio_per_char_s == pytest.approx(0.08, rel=0.02)
    assert 0.07 < model.audio_lower(100) / 100 < 0.08  # narrow once consistent measurements came
    assert model.audio_lower(100, rate=0.05) < 5.0  # the planner may substitute its utterance's own rate
    assert model.observations == 0 and model.audio_observations == 20


def test_a_surprising_measurement_gives_up_confidence_so_the_fit_follows_at_once() -> None:
    model = CostModel()
    for _ in range(40):  # a confident fit of 0.1 s + 0.01 s/char
        model.observe(30, 0.4)
        model.observe(120, 1.3)
    model.observe(30, 0.7)  # the voice now speaks slower: generation costs more per character
    model.observe(60, 1.3)
    assert model.estimate(120) > 2.0  # two measurements moved the fit most of the way to 0.1 + 0.02/char
