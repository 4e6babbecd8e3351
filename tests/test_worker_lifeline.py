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


def test_a_stalled_device_restarts_the_worker_and_health_says_why_and_a_sigkilled_gateway_takes_it_along() -> None:
    # Every chunk takes 0.3 s on this simulated device (its audio adds next to nothing: a fast start-up's warm-up and
    # calibration): past a 0.1 s stall limit, a generation counts as hung.
    # --failover-wait 0: the hung utterance fails with its worker rather than moving to each restarted one and hanging
    # it too (with the default wait, up to two moves, three hangs and four worker starts before the reply, as many as
    # came up within the wait: a count that followed the machine's speed). Failover itself is tests/test_failover.py's.
    flags = ["--engine", "simulated", "--sim-fixed", "0.3", "--sim-rtf", "1000", "--device-stall-seconds", "0.1",
             "--failover-wait", "0"]
    # One client for the polls: each httpx.get builds an SSL context (~35 ms of CPU, 20 polls a second here).
    with (local_server(flags, env=dict(os.environ), quiet=True) as (url, gateway_pid),
          httpx.Client(base_url=url) as http):
        first_pid = http.get("/health").json()["worker"]["pid"]
        reply = http.post("/v1/tts", json={"text": "This generation will hang."}, timeout=30)
        assert reply.status_code != 200 or len(reply.content) == 0, "a hung generation was answered as complete"
        deadline = time.monotonic() + 10
        while (health := http.get("/health")).json()["worker"]["restarts"] == 0:
            assert time.monotonic() < deadline, "the stalled worker was not restarted"
            time.sleep(0.05)
        body = health.json()
        assert body["worker"]["last_exit"] == 4 and "no progress for 0.1 s" in body["worker"]["last_exit_reason"]
        if body["status"] == "down":  # while the back-off runs, /health says why
            assert "no progress" in body["reason"] and health.status_code == 503
        deadline = time.monotonic() + 120  # a worker's start-up (warm-up, calibration) on a busy 2-core box
        while (health := http.get("/health")).status_code != 200:
            assert time.monotonic() < deadline, "the restarted worker did not come back"
            time.sleep(0.05)
        body = health.json()
        assert body["worker"]["pid"] != first_pid and body["engines"][0]["lost"] >= 1
        assert sys.platform != "linux" or gone(first_pid)

        # The gateway SIGKILLed (no shutdown code of it runs): its worker, the restarted one, goes along.
        worker_pid = body["worker"]["pid"]
        assert not gone(worker_pid)
        os.kill(gateway_pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while not gone(worker_pid):
            assert time.monotonic() < deadline, "the worker outlived its gateway"
            time.sleep(0.05)
