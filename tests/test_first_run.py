"""An operator's first hour: every misconfiguration a restart cannot fix costs one sentence and exit code 3, through
the real CLI; and a worker that stops being able to start is given up, with /health saying why."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.cli_run import ROOT, hide_pkg_resources, refusal, run_cli, shadowing
from tests.server import assert_goes_down, health_when
from cbf_tools.peers.local_server import free_port


def test_serve_without_weights_says_where_it_looked(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    line = refusal(run_cli("serve", "--host", "127.0.0.1", "--port", str(free_port()), "--engine",
                           "chatterbox-turbo", "--model-dir", str(missing), "--voices-dir", str(tmp_path)))
    assert line.startswith("chatterbox-fast serve: refusing to start:") and f"{missing} is not a directory" in line
    assert "weights download" in line


def test_no_weights_anywhere_and_no_network(tmp_path: Path) -> None:
    """No --model-dir, an empty Hugging Face cache, and the Hub unreachable: the issue's first hour, in one line."""
    env = {"HF_HOME": str(tmp_path / "hf"), "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"}
    line = refusal(run_cli("engine", "--engine", "chatterbox-turbo", "--listen", f"unix:{tmp_path}/e.sock", env=env))
    assert str(tmp_path / "hf") in line and "cannot download ResembleAI/chatterbox-turbo" in line


@pytest.mark.slow
def test_a_damaged_checkpoint_names_the_missing_file(damaged_checkpoint: Path, tmp_path: Path) -> None:
    line = refusal(run_cli("engine", "--engine", "chatterbox-turbo", "--model-dir", str(damaged_checkpoint),
                           "--listen", f"unix:{tmp_path}/e.sock"))
    assert f"in {damaged_checkpoint}: t3_turbo_v1.safetensors missing." in line


def test_cuda_asked_for_on_a_host_without_one(tmp_path: Path) -> None:
    line = refusal(run_cli("engine", "--engine", "chatterbox-turbo", "--device", "cuda", "--listen",
                           f"unix:{tmp_path}/e.sock", env={"CUDA_VISIBLE_DEVICES": ""}))
    assert "--device cuda asks for a CUDA device" in line and "sees none (CUDA_VISIBLE_DEVICES is '')" in line


def test_cuda_graphs_asked_for_on_the_cpu(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """Refused before the model loads (the weights are fine), in one sentence naming the flag to change."""
    line = refusal(run_cli("engine", "--engine", "chatterbox-turbo", "--model-dir", str(tiny_checkpoint), "--device",
                           "cpu", "--decode", "graph", "--listen", f"unix:{tmp_path}/e.sock"))
    assert "--decode graph replays CUDA graphs, but --device is cpu" in line and "--decode auto or eager" in line


@pytest.mark.parametrize("command", ["serve", "engine"])
def test_a_port_in_use(command: str, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        where = ["--host", "127.0.0.1", "--port", str(port)] if command == "serve" else ["--listen",
                                                                                          f"127.0.0.1:{port}"]
        line = refusal(run_cli(command, *where, "--engine", "espeak", "--voices-dir", str(tmp_path)))
    assert f"port {port} on 127.0.0.1 is already in use" in line


def test_no_watermark_no_serve(tmp_path: Path) -> None:
    env = shadowing(tmp_path / "shadow")
    hide_pkg_resources(tmp_path / "shadow")
    line = refusal(run_cli("serve", "--host", "127.0.0.1", "--port", str(free_port()), "--engine", "espeak",
                           "--voices-dir", str(tmp_path), env=env))
    assert "PerthImplicitWatermarker is None" in line and "setuptools<81" in line


def test_the_traceback_only_at_debug_level(tmp_path: Path) -> None:
    result = run_cli("engine", "--engine", "chatterbox-turbo", "--model-dir", str(tmp_path / "none"), "--listen",
                     f"unix:{tmp_path}/e.sock", "--log-level", "debug")
    assert result.returncode == 3 and "Traceback" in result.stderr and "Misconfigured" in result.stderr


@pytest.mark.slow
def test_out_of_memory_while_loading_is_one_sentence(tiny_checkpoint: Path) -> None:
    import torch

    from engine.settings import EngineSettings
    from engine.startup_checks import Misconfigured, loading

    with pytest.raises(Misconfigured) as refused:
        with loading(EngineSettings(engine="chatterbox-turbo", model_dir=tiny_checkpoint, device="cpu"), False):
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    sentence = str(refused.value)
    assert sentence.startswith("out of GPU memory while loading the engine") and "its weights alone are 0.1 GiB" in sentence and "GiB were free before loading" in sentence


def test_a_worker_that_can_no_longer_start_is_given_up(tmp_path: Path) -> None:
    """The worker dies; its restart finds the watermark gone (setuptools upgraded under a running server): no more
    restarts, /health down with the reason, said once in the log, and the gateway itself stays up."""
    shadow, log = tmp_path / "shadow", tmp_path / "serve.log"
    env = {**os.environ, **shadowing(shadow)}
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--host", "127.0.0.1", "--port",
                                 str(port), "--engine", "espeak", "--voices-dir", str(tmp_path),
                                 "--failover-wait", "1"],  # speech asked for while it is down: refused after 1 s
                                cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
        try:
            health = health_when(url, lambda h: h["status"] == "ok", "the engine was not ready")
            hide_pkg_resources(shadow)
            os.kill(health["worker"]["pid"], signal.SIGKILL)
            assert health_when(url, lambda h: "reason" in h, "the kill was not reported")["status"] == "down"
            health = health_when(url, lambda h: "Perth" in h.get("reason", ""), "the refused restart was not reported")
            assert health["status"] == "down" and "PerthImplicitWatermarker is None" in health["reason"]
            assert_goes_down(url, 5, "the refused restart")
            # No further restart, not even one waiting: /health shows a pending one's back-off (set before its wait)
            worker = httpx.get(url + "/health").json()["worker"]
            assert (worker["restarts"], worker["alive"], worker["backoff_s"]) == (1, False, None), worker
            assert proc.poll() is None
        finally:
            proc.terminate()
            proc.wait(30)
    text = log.read_text()
    assert text.count("not restarting it") == 1 and "Traceback" not in text

