"""Stopping: SIGTERM (``docker stop``, ``docker compose stop``, Kubernetes) ends ``serve`` and ``engine`` cleanly, exit
code 0. Here, as under a container's init (compose's ``init: true``), neither is PID 1: a signal left to its default
action kills the process (exit 143), where PID 1 would have ignored it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cbf_tools.peers.local_server import free_port
from tests.cli_run import ROOT
from tests.server import health_when


def _running_with(marker: str) -> list[str]:
    """Command lines of the live processes that mention ``marker``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (cmdline.parent / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # gone meanwhile
        if marker in args and state != "Z":
            found.append(args)
    return found


def test_sigterm_stops_the_worker_and_the_gateway_with_exit_code_0(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
                             "--engine", "espeak", "--voices-dir", str(tmp_path)], cwd=ROOT)
    try:
        health = health_when(url, lambda h: h["status"] == "ok", "the server did not become ready")
        # connected: what kept the gateway from reaching its worker while that started is no longer its last error
        assert health["engines"][0]["last_error"] is None and health["engines"][0]["available"]

        os.kill(health["worker"]["pid"], signal.SIGTERM)  # `engine` alone, as compose.split.yaml stops it
        worker = health_when(url, lambda h: h["worker"]["last_exit"] is not None, "the exit went unseen")
        assert worker["worker"]["last_exit"] == 0, worker["worker"]  # not -15 (killed by SIGTERM)

        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
        assert time.monotonic() - started < 10  # nothing to drain: it stops at once
        assert not _running_with(str(tmp_path)), "a worker outlived the gateway"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
