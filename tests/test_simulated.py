"""The simulated engine: the inner engine's speech, delayed like a slower model, cancellable while it waits."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from engine.engines.base import Cancelled
from engine.engines.espeak import EspeakEngine
from engine.engines.simulated import SimulatedEngine

TEXT = "Give me a moment while I look that up."


class RecordingEvent(threading.Event):
    """A cancel event that records how long it was asked to wait and returns at once (optionally cancelling)."""

    def __init__(self, cancel_while_waiting: bool = False) -> None:
        super().__init__()
        self.cancel_while_waiting = cancel_while_waiting
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout)
        if self.cancel_while_waiting:
            self.set()
        return self.is_set()


def test_info_says_it_is_simulated(espeak_engine: EspeakEngine) -> None:
    sim = SimulatedEngine(espeak_engine, fixed_s=0.2, rtf=2.5)
    assert sim.info.name == "simulated"
    assert sim.info.notes == "simulated: fixed=0.2s rtf=2.5x around espeak"
    assert (sim.sample_rate, sim.conditionals_suffix) == (espeak_engine.sample_rate, espeak_engine.conditionals_suffix)


def test_waits_for_fixed_cost_plus_audio_over_rtf(espeak_engine: EspeakEngine) -> None:
    sim = SimulatedEngine(espeak_engine, fixed_s=0.3, rtf=2.0)
    cancel = RecordingEvent()
    wav = sim.synthesize(TEXT, sim.default_voice(), cancel)
    assert wav.size > 0.5 * sim.sample_rate and wav.dtype == np.float32
    expected = 0.3 + wav.size / sim.sample_rate / 2.0
    assert sim.generation_time(wav.size / sim.sample_rate) == pytest.approx(expected)
    (waited,) = cancel.waits
    assert expected - 0.5 < waited <= expected  # the inner engine's own time counts towards the total


def test_cancel_while_waiting_raises(espeak_engine: EspeakEngine) -> None:
    sim = SimulatedEngine(espeak_engine, fixed_s=0.3, rtf=2.0)
    with pytest.raises(Cancelled):
        sim.synthesize(TEXT, sim.default_voice(), RecordingEvent(cancel_while_waiting=True))


class SignallingEvent(threading.Event):
    """A real cancel event that also says when someone starts waiting on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        return super().wait(timeout)


def test_cancel_from_another_thread_ends_a_long_wait(espeak_engine: EspeakEngine) -> None:
    sim = SimulatedEngine(espeak_engine, fixed_s=3600.0, rtf=1.0)  # would wait an hour
    cancel, outcome = SignallingEvent(), []

    def run() -> None:
        try:
            sim.synthesize(TEXT, sim.default_voice(), cancel)
        except Cancelled:
            outcome.append("cancelled")

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    assert cancel.waiting.wait(timeout=30)  # the speech is made and the simulated delay has begun
    cancel.set()
    worker.join(timeout=30)
    assert not worker.is_alive() and outcome == ["cancelled"]


def test_voices_are_the_inner_engines(espeak_engine: EspeakEngine, tmp_path) -> None:
    sim = SimulatedEngine(espeak_engine)
    assert sim.default_voice() == espeak_engine.default_voice()
    reference = espeak_engine.synthesize(TEXT * 3, espeak_engine.default_voice(), threading.Event())
    voice = sim.prepare_voice(reference, espeak_engine.sample_rate)
    assert voice == espeak_engine.prepare_voice(reference, espeak_engine.sample_rate)
    path = tmp_path / f"v{sim.conditionals_suffix}"
    sim.save_conditionals(voice, path)
    assert espeak_engine.load_conditionals(path) == voice


@pytest.mark.parametrize("fixed_s, rtf", [(-0.1, 3.0), (0.1, 0.0), (0.1, -2.0)])
def test_rejects_impossible_settings(espeak_engine: EspeakEngine, fixed_s: float, rtf: float) -> None:
    with pytest.raises(ValueError):
        SimulatedEngine(espeak_engine, fixed_s=fixed_s, rtf=rtf)
