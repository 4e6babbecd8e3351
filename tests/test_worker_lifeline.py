"""The embedded worker's life tied to its use, against real `serve` processes on 127.0.0.1: it dies with its gateway
(even a SIGKILLed one), and a worker whose device stops making progress is restarted, with /health saying why."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import httpx

from cbf_tools.peers.local_server import local_server


def gone(pid: int) -> bool:
    """The process has exited (a zombie nobody reaped counts: it holds no device and runs nothing)."""
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] == "Z"
    except (FileNotFoundError, IndexError):
        return True


def test_a_sigkilled_gateway_takes_its_worker_along() -> None:
    with local_server(["--engine", "espeak"], env=dict(os.environ), quiet=True) as (url, gateway_pid):
        worker_pid = httpx.get(url + "/health").json()["worker"]["pid"]
        assert not gone(worker_pid)
        os.kill(gateway_pid, signal.SIGKILL)  # no shutdown code of the gateway runs
        deadline = time.monotonic() + 5
        while not gone(worker_pid):
            assert time.monotonic() < deadline, "the worker outlived its gateway"
            time.sleep(0.1)


def test_a_stalled_device_restarts_the_worker_and_health_says_why() -> None:
    # Every chunk takes 0.5 s on this simulated device: past a 0.2 s stall limit, a generation counts as hung.
    flags = ["--engine", "simulated", "--sim-fixed", "0.5", "--device-stall-seconds", "0.2"]
    with local_server(flags, env=dict(os.environ), quiet=True) as (url, _):
        first_pid = httpx.get(url + "/health").json()["worker"]["pid"]
        reply = httpx.post(url + "/v1/tts", json={"text": "This generation will hang."}, timeout=30)
        assert reply.status_code != 200 or len(reply.content) == 0, "a hung generation was answered as complete"
        deadline = time.monotonic() + 10
        while (health := httpx.get(url + "/health")).json()["worker"]["restarts"] == 0:
            assert time.monotonic() < deadline, "the stalled worker was not restarted"
            time.sleep(0.05)
        body = health.json()
        assert body["worker"]["last_exit"] == 4 and "no progress for 0.2 s" in body["worker"]["last_exit_reason"]
        if body["status"] == "down":  # while the back-off runs, /health says why
            assert "no progress" in body["reason"] and health.status_code == 503
        deadline = time.monotonic() + 120  # a worker's start-up (warm-up, calibration) on a busy 2-core box
        while (health := httpx.get(url + "/health")).status_code != 200:
            assert time.monotonic() < deadline, "the restarted worker did not come back"
            time.sleep(0.1)
        body = health.json()
        assert body["worker"]["pid"] != first_pid and body["engines"][0]["lost"] >= 1
        assert sys.platform != "linux" or gone(first_pid)
