"""``chatterbox-fast doctor`` and ``weights download|verify`` through the real CLI: all ok on the embedded engine and
on a tiny Turbo checkpoint, the missing file named on a damaged one, one sentence when the Hub cannot be reached."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cbf_tools.doctor.warnings import explained
from tests.cli_run import run_cli
from cbf_tools.peers.local_server import free_port


def doctor(*flags: str) -> tuple[int, dict[str, Any]]:
    """Exit code and the checks by name (the JSON is the last line: upstream prints chatter of its own)."""
    result = run_cli("doctor", "--json", *flags)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, {check["name"]: check for check in report["checks"]} | {"ok": report["ok"]}


def test_doctor_passes_on_the_embedded_engine_and_explains_a_warning_it_meets(tmp_path: Path) -> None:
    """Every check passes on the embedded engine; a stored voice the worker cannot read leaves the smoke test passing,
    and the worker's WARNING line becomes a row saying what it means and what to do (one run: a doctor run starts a
    worker and speaks, seconds of CPU)."""
    voices = tmp_path / "voices"
    voices.mkdir()
    (voices / "broken.wav").write_bytes(b"RIFF not a wave at all")
    result = run_cli("doctor", "--json", "--engine", "espeak", "--voices-dir", str(voices))
    assert "Traceback" not in result.stderr, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert result.returncode == 0 and report["ok"] is True, report
    [warned] = [check for check in report["checks"] if check["status"] == "warn"]
    assert warned["detail"].startswith("the worker skipped a stored voice it cannot use: ")
    assert str(voices / "broken.wav") in warned["fix"] and "replace or delete" in warned["fix"]
    checks = {check["name"]: check for check in report["checks"] if check is not warned}
    assert {name: check["status"] for name, check in checks.items()} == {
        "python": "ok", "packages": "ok", "torch/CUDA": "ok", "GPU": "skip", "weights": "skip", "PerTh": "ok",
        "voices dir": "ok", "smoke test": "ok"}
    smoke = checks["smoke test"]["detail"]
    assert "time to first chunk" in smoke and "real-time factor" in smoke


def test_each_warning_is_explained_once_and_an_unknown_one_is_shown_as_said() -> None:
    lines = ["2026-12-06 05:00:00,000 WARNING chatterbox_fast.engine: could not cache conditionals at /v/a.pt: denied",
             "2026-12-06 05:00:01,000 WARNING chatterbox_fast.engine: could not cache conditionals at /v/a.pt: denied",
             "2026-12-06 05:00:02,000 INFO chatterbox_fast.engine: fine", "ERROR something nobody wrote down"]
    rows = explained(lines)
    assert [row.status for row in rows] == ["warn", "warn"]
    assert "computes them again" in rows[0].detail and "writable" in rows[0].fix
    assert rows[1].detail == "something nobody wrote down" and "--log-level debug" in rows[1].fix
    many = explained([f"WARNING x: thing {n}" for n in range(9)])
    assert len(many) == 6 and many[-1].detail == "4 more"


@pytest.mark.slow
def test_doctor_passes_on_a_tiny_turbo_checkpoint(tiny_checkpoint: Path, tmp_path: Path) -> None:
    code, checks = doctor("--engine", "chatterbox-turbo", "--model-dir", str(tiny_checkpoint), "--device", "cpu",
                          "--voices-dir", str(tmp_path))
    assert code == 0 and checks["ok"] is True, checks
    assert checks["weights"]["status"] == "ok" and f"complete in {tiny_checkpoint}" in checks["weights"]["detail"]
    assert "t3_turbo_v1.safetensors 22.9 MB" in checks["weights"]["detail"]
    assert checks["tokenizer"]["status"] == "ok" and "257 tokens" in checks["tokenizer"]["detail"]
    assert checks["smoke test"]["status"] == "ok"


@pytest.mark.slow
def test_doctor_names_the_missing_file_of_a_damaged_checkpoint(damaged_checkpoint: Path, tmp_path: Path) -> None:
    code, checks = doctor("--engine", "chatterbox-turbo", "--model-dir", str(damaged_checkpoint), "--voices-dir",
                          str(tmp_path))
    assert code == 1 and checks["ok"] is False
    assert checks["weights"]["status"] == "fail"
    assert checks["weights"]["detail"].endswith(f"in {damaged_checkpoint}: t3_turbo_v1.safetensors missing")
    assert "chatterbox-fast weights download --to DIR" in checks["weights"]["fix"]
    assert checks["tokenizer"]["status"] == checks["smoke test"]["status"] == "skip"


@pytest.mark.slow
def test_weights_verify(tiny_checkpoint: Path, damaged_checkpoint: Path) -> None:
    whole = run_cli("weights", "verify", str(tiny_checkpoint))
    assert whole.returncode == 0 and whole.stdout.strip().endswith(f"{tiny_checkpoint}: complete")
    damaged = run_cli("weights", "verify", str(damaged_checkpoint))
    assert damaged.returncode == 1
    assert f"{damaged_checkpoint}: incomplete: t3_turbo_v1.safetensors missing" in damaged.stdout


def test_weights_download_without_network_is_one_sentence(tmp_path: Path) -> None:
    result = run_cli("weights", "download", "--to", str(tmp_path / "turbo"),
                     env={"HF_ENDPOINT": f"http://127.0.0.1:{free_port()}", "HF_HOME": str(tmp_path / "hf")})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("chatterbox-fast weights download: cannot download ResembleAI/chatterbox-turbo from "
                           "http://127.0.0.1:") and "Fix:" in line
