"""Stopping: SIGTERM (``docker stop``, ``docker compose stop``, Kubernetes) ends ``serve`` and ``engine`` cleanly, exit
code 0. Here, as under a container's init (compose's ``init: true``), the command is not PID 1: a signal it leaves to
the default action kills it (exit 143), where PID 1 would have ignored it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from websockets.sync.client import connect

from cbf_tools.local_server import free_port, local_workers
from engine.protocol import ENGINE_PATH
from tests.cli_run import ROOT


def test_serve_stops_on_sigterm_with_exit_code_0_and_its_worker_goes_too(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
                             "--engine", "espeak", "--voices-dir", str(tmp_path)], cwd=ROOT)
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not become ready"
            try:
                health = httpx.get(url + "/health", timeout=2).json()
                if health["status"] == "ok":
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        # connected: what kept the gateway from reaching its worker while that started is no longer its last error
        assert health["engines"][0]["last_error"] is None and health["engines"][0]["available"]
        worker = health["worker"]["pid"]
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
        assert time.monotonic() - started < 10  # compose.cpu.yaml's stop_grace_period
        try:
            os.kill(worker, 0)
            raise AssertionError("the engine worker outlived the gateway")
        except ProcessLookupError:
            pass
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_engine_stops_on_sigterm_with_exit_code_0() -> None:
    listen = f"127.0.0.1:{free_port()}"
    with local_workers([listen]) as (proc,):
        with connect(f"ws://{listen}{ENGINE_PATH}") as ws:  # with a gateway connected, as in compose.split.yaml
            ws.recv(5)  # its ready greeting
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(15) == 0
