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
FIRST_AUDIO_TEXT = "Hello there, this is a test. It speaks."  # two sentences: the first chunk can end before the text


@pytest.mark.long  # scripts/gpu-host-dryrun runs every phase of the kit too, in the GPU host's own packages
def test_gpu_bench_runs_every_phase_and_writes_its_figures(tmp_path: Path) -> None:
    checkpoint = write_tiny_checkpoint(tmp_path / "tiny")
    env = {**os.environ, **BLOCKED_ENV, "OUT": str(tmp_path / "out"), "CBF_DEVICE": "cpu",  # no PyAV, no eSpeak
           "CBF_MODEL_DIR": str(checkpoint), "CBF_PYTHON": sys.executable,
           "OMP_NUM_THREADS": "1"}  # on a shared 2-core machine two torch threads spin against each other
    # Every phase once, at the smallest sizes that reach each branch: S3Gen batched at 2 only (two chunks in one
    # call; --compile traces at min and max of --s3gen-batches, so one shape: each is ~12 s of tracing here).
    small = ["--batches", "1,2", "--steps", "3", "--concurrent", "2", "--s3gen-tokens", "10", "--repeat", "1",
             "--s3gen-batches", "2", "--s3gen-batch-tokens", "10",
             # dynamo's own backend: the whole-graph capture (a graph break raises) without AOTAutograd's tracing,
             # ~20 s here against aot_eager's 50-80 s; scripts/gpu-host-dryrun, run before a GPU is spent, takes the
             # kit through aot_eager (inductor's code generation: minutes here)
             "--compile", "default", "--compile-backend", "eager",
             "--single-runs", "1", "--streams", "2", "--paragraph", "One short line. And another.",
             "--first-audio-text", FIRST_AUDIO_TEXT]
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
    counts = figures["dispatch"]
    assert counts["t3_b2"]["per_audio_s"] < counts["t3_b1"]["per_audio_s"]  # one step's operations serve 2 rows
    assert counts["t3_b2"]["prefill_together"] < counts["t3_b2"]["prefills_one_by_one"]
    s3gen_ops = counts["s3gen_tokens_10"]
    assert s3gen_ops["batched_b2"] < 2 * s3gen_ops["upstream_b1"]  # two chunks in one call: far fewer than two calls
    assert 3 < s3gen_ops["graphed_b2"] < s3gen_ops["batched_b2"] / 5  # replayed: the per-row work and 2 launches
    assert figures["s3gen_graphed"] == {"skipped": "S3Gen's graphs are off (no CUDA, or --vocode eager)"}
    assert figures["placement"] == {"skipped": "no CUDA device"}  # (its cards: tests/test_placement.py's inventory)
    assert figures["unload"] == {"skipped": "no CUDA device"}  # (run here: tests/test_gpu_kit_unload.py)
    # both stages traced whole (fullgraph: a graph break raises), the same audio as eager (the suite's compile test)
    compiled = figures["s3gen_compiled"]
    assert (compiled["backend"], compiled["mode"], compiled["tokens"]) == ("eager", "default", 10)
    assert set(compiled) == {"backend", "mode", "tokens", "b2"}  # one shape: min and max of --s3gen-batches
    assert compiled["b2"]["max_abs_vs_eager"] < 1e-5 and compiled["b2"]["compiled_ms_per_chunk"] > 0
    assert compiled["b2"]["eager_ms_per_chunk"] > 0 and compiled["b2"]["first_call_s"] >= 0
    assert figures["self_check"]["vocode"] == "eager" and figures["self_check"]["vocode_check"] is None
    batched = figures["s3gen_batched"]
    assert batched["rows_check"]["max_abs_vs_alone"] < 1e-5 and batched["rows_check"]["max_abs_vs_upstream"] < 1e-5
    assert batched["tokens_10"]["batched_b2_ms_per_chunk"] > 0 and batched["tokens_10"]["upstream_ms_per_chunk"] > 0
    assert figures["worker_1_stream"]["first_chunk_p50_ms"] > 0 and figures["worker_1_stream"]["errors"] == 0
    budgets = figures["first_audio_budgets"]  # the default budget (off on a CPU) and larger ones, per utterance
    assert [budgets[k]["budget_s"] for k in ("balanced", "0.25", "prosody")] == [0.0, 0.25, 0.5]
    assert all(b["first_chunk_words"] >= 1 and b["first_chunk_p50_ms"] > 0 and not b["errors"] for b in budgets.values())
    assert all(FIRST_AUDIO_TEXT.startswith(b["first_chunk_text"]) for b in budgets.values())  # --first-audio-text
    sweep = figures["worker_streams"]
    assert sweep["2"]["streams"] == 2 and sweep["2"]["errors"] == 0 and sweep["2"]["most_live_slots"] >= 1
    assert "most_streams_without_underrun" in sweep and figures["total_s"] > 0 and figures["failed_phases"] == []
    assert list(figures)[:2] == ["environment", "load_s"]  # the versions first, whatever fails later
    assert (tmp_path / "out" / "gpu-bench.log").read_text().count("== ") >= 14


def test_gpu_bench_refuses_missing_weights_in_one_sentence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The kit runs the server's start-up checks: no weights is one sentence with the fix and exit code 3. In this
    process (its ``main``, what ``python -m`` runs; the test above runs it that way): a second interpreter would
    spend ~8 s importing torch and chatterbox for one sentence."""
    from engine.gpu_kit.turbo_bench import main

    missing = tmp_path / "no-weights"
    with pytest.raises(SystemExit) as exited:
        main(["--out", str(tmp_path / "out"), "--weights", "pretrained", "--model-dir", str(missing),
              "--device", "cpu"])
    stderr = capsys.readouterr().err
    assert exited.value.code == 3 and "Traceback" not in stderr, stderr
    assert f"refusing to start: no Chatterbox-Turbo weights: --model-dir {missing} is not a directory" in stderr
    assert "Fix: fetch them with `chatterbox-fast weights download" in stderr


def test_a_failing_phase_is_recorded_and_the_others_go_on(tmp_path: Path) -> None:
    from engine.gpu_kit.turbo_bench import Figures

    figures = Figures(tmp_path / "gpu-bench.json")
    figures.phase("first", lambda: {"ms": 1.0})
    figures.phase("broken", lambda: 1 / 0)
    figures.phase("after", lambda: {"ms": 2.0})
    written = json.loads((tmp_path / "gpu-bench.json").read_text())
    assert written == {"first": {"ms": 1.0}, "broken": {"error": "ZeroDivisionError: division by zero"},
                       "after": {"ms": 2.0}}
    assert figures.failed == ["broken"]
