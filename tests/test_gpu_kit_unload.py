"""The GPU kit's unload phase (engine/gpu_kit/unload_phase.py) run on this CPU over random Turbo weights: the kit
skips it without CUDA, as its other card phases, so this is where its code is shown to work before a GPU is spent."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("chatterbox.tts_turbo")

from engine.gpu_kit.turbo_bench import speak  # noqa: E402
from engine.gpu_kit.unload_phase import unload_figures  # noqa: E402
from engine.settings import EngineSettings  # noqa: E402
from turbo_checkpoint import write_tiny_checkpoint  # noqa: E402


def test_the_phase_unloads_and_reloads_a_turbo_worker_and_reports_what_it_cost(tmp_path: Path) -> None:
    # stop_bias: random weights that end their speech soon (the warm-up and the cost model speak several times)
    settings = EngineSettings(engine="chatterbox-turbo", model_dir=write_tiny_checkpoint(tmp_path / "tiny", stop_bias=4.0),
                              device="cpu", batch_slots=2)
    assert unload_figures(settings, speak) == {"skipped": "no CUDA device"}  # as the kit runs it here
    figures = unload_figures(dataclasses.replace(settings, voices_dir=tmp_path / "voices"), speak, on_cpu=True)
    assert figures["device"] == "cpu" and figures["unloaded"] and figures["state_at_end"] == "loaded"
    assert figures["error_loaded"] is None and figures["error_after_reload"] is None
    assert figures["first_audio_loaded_s"] > 0 and figures["first_audio_after_reload_s"] > 0
    assert figures["reload_s"] > 0 and figures["unload_s"] > 0  # the utterance after the unload paid a reload
    assert set(figures["memory_returned"]) == {"rss_gib"}  # (whether it fell: tests/test_idle_unload.py's sized one)
