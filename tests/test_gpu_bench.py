"""The GPU measurement kit's dry run on this CPU (tiny checkpoint, random weights): the one-call script cannot rot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("chatterbox.tts_turbo")

from test_host_imports import BLOCKED_ENV  # noqa: E402
from turbo_checkpoint import write_tiny_checkpoint  # noqa: E402

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent


def test_gpu_bench_runs_every_phase_and_writes_its_figures(tmp_path: Path) -> None:
    checkpoint = write_tiny_checkpoint(tmp_path / "tiny")
    env = {**os.environ, **BLOCKED_ENV, "OUT": str(tmp_path / "out"), "CBF_DEVICE": "cpu",  # no PyAV, no eSpeak
           "CBF_MODEL_DIR": str(checkpoint), "CBF_PYTHON": sys.executable}
    small = ["--batches", "1,2", "--steps", "3", "--concurrent", "2", "--s3gen-tokens", "10", "--repeat", "1",
             "--single-runs", "1", "--streams", "2", "--paragraph", "One short line. And another."]
    subprocess.run([str(ROOT / "scripts" / "gpu-bench"), *small], env=env, check=True, timeout=300, capture_output=True)
    figures = json.loads((tmp_path / "out" / "gpu-bench.json").read_text())
    environment = figures["environment"]
    assert environment["transformers"] and environment["numpy"] and environment["torch"] and "gpus" not in environment
    assert figures["engine"]["engine"]["decode"] == "eager" and figures["engine"]["slots"] == 2
    steps = figures["t3_step"]
    assert steps["eager_b1_ms"] > 0 and steps["eager_b2_ms"] > 0 and "graph_b1_ms" not in steps  # no CUDA here
    assert figures["t3_step_graph"] == {"skipped": "no CUDA device"}
    assert figures["self_check"]["decode"] == "eager" and figures["self_check"]["warmup_s"] > 0
    assert "upstream_inference_turbo_b1_ms" in steps
    assert figures["t3_concurrent"]["2"]["tokens"] > 2 and figures["t3_concurrent"]["2"]["most_live_slots"] == 2
    prefill = figures["prefill"]
    assert prefill["tokens_prefilled_full"] - prefill["tokens_prefilled_reused"] == prefill["prompt_positions"] == 376
    assert figures["s3gen"]["tokens_10"]["ms_per_audio_s"] > 0
    assert figures["worker_1_stream"]["first_chunk_p50_ms"] > 0 and figures["worker_1_stream"]["errors"] == 0
    sweep = figures["worker_streams"]
    assert sweep["2"]["streams"] == 2 and sweep["2"]["errors"] == 0 and sweep["2"]["most_live_slots"] >= 1
    assert "most_streams_without_underrun" in sweep and figures["total_s"] > 0 and figures["failed_phases"] == []
    assert list(figures)[:2] == ["environment", "load_s"]  # the versions first, whatever fails later
    assert (tmp_path / "out" / "gpu-bench.log").read_text().count("== ") >= 12


def test_gpu_bench_refuses_missing_weights_in_one_sentence(tmp_path: Path) -> None:
    """The kit runs the server's start-up checks: no weights is one sentence with the fix and exit code 3."""
    missing = tmp_path / "no-weights"
    result = subprocess.run([sys.executable, "-m", "engine.turbo_bench", "--out", str(tmp_path / "out"), "--weights",
                             "pretrained", "--model-dir", str(missing), "--device", "cpu"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 3 and "Traceback" not in result.stderr, result.stderr
    assert f"refusing to start: no Chatterbox-Turbo weights: --model-dir {missing} is not a directory" in result.stderr
    assert "Fix: fetch them with `chatterbox-fast weights download" in result.stderr


def test_a_failing_phase_is_recorded_and_the_others_go_on(tmp_path: Path) -> None:
    from engine.turbo_bench import Figures

    figures = Figures(tmp_path / "gpu-bench.json")
    figures.phase("first", lambda: {"ms": 1.0})
    figures.phase("broken", lambda: 1 / 0)
    figures.phase("after", lambda: {"ms": 2.0})
    written = json.loads((tmp_path / "gpu-bench.json").read_text())
    assert written == {"first": {"ms": 1.0}, "broken": {"error": "ZeroDivisionError: division by zero"},
                       "after": {"ms": 2.0}}
    assert figures.failed == ["broken"]
