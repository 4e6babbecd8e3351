"""``serve --processes 2``: two real gateway processes on one port and one embedded eSpeak worker; /health reports
both, each with its own slice of --rtc-ports, a WebRTC session gets its media from the process that answered,
/metrics adds both up, and a killed process is restarted and leaves the report."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import httpx

from cbf_tools.peers.local_server import free_port, local_server
from cbf_tools.peers.rtc_listener import Listener
from tests.cli_run import refusal, run_cli
from tests.server import health
from tests.test_turn import speak_over, candidates


def _answering_pids(url: str, attempts: int = 40) -> set[int]:
    """The processes that answer /health on fresh connections (SO_REUSEPORT spreads them by source port)."""
    return {httpx.get(url + "/health").json()["pid"] for _ in range(attempts)}


async def test_two_processes_share_the_port_metrics_and_health() -> None:
    low = random.randrange(42000, 60000, 100)
    with local_server(["--processes", "2", "--engine", "espeak", "--rtc-ports", f"{low}-{low + 39}"],
                      env=dict(os.environ)) as (url, supervisor):
        deadline = time.monotonic() + 30
        while len((body := health(url).json())["processes"]) < 2 or not all(
                p["status"] == "ok" for p in body["processes"]):
            assert time.monotonic() < deadline, body
            time.sleep(0.2)
        pids = {p["pid"] for p in body["processes"]}
        assert len(pids) == 2 and supervisor not in pids
        assert _answering_pids(url) == pids  # both accept on the one port
        slices = sorted(p["rtc_ports"] for p in body["processes"])  # each its own UDP range
        assert slices == [f"{low}-{low + 19}", f"{low + 20}-{low + 39}"]
        listener = Listener.create()  # a WebRTC session: media straight to the process that answered the offer
        try:
            _, answer = await speak_over(listener, url)
        finally:
            await listener.close()
        assert all(low <= port <= low + 39 for _, port, kind in candidates(answer) if kind == "host")

        for n in range(5):
            speech = httpx.post(url + "/v1/tts", json={"text": f"Sentence number {n}."}, timeout=60)
            assert speech.status_code == 200 and len(speech.content) > 4800
        for _ in range(6):  # whichever process answers, it counts every process's utterances
            assert 'cbf_utterances_total{outcome="done",transport="http"} 5.0' in httpx.get(url + "/metrics").text

        victim = min(pids)
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while True:
            try:
                with_health = httpx.get(url + "/health")
            except httpx.TransportError:  # a connection the kernel queued on the killed process's socket: reset
                assert time.monotonic() < deadline
                time.sleep(0.2)
                continue
            now = {p["pid"] for p in with_health.json()["processes"]}
            if victim not in now and len(now) == 2:
                break
            assert time.monotonic() < deadline, with_health.json()
            time.sleep(0.2)
        assert with_health.status_code == 200
        assert httpx.post(url + "/v1/tts", json={"text": "Still here."}, timeout=60).status_code == 200


def test_a_worker_that_cannot_start_stops_every_process_with_its_sentence(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    line = refusal(run_cli("serve", "--processes", "2", "--host", "127.0.0.1", "--port", str(free_port()), "--engine",
                           "chatterbox-turbo", "--model-dir", str(missing), "--voices-dir", str(tmp_path)))
    assert line.startswith("chatterbox-fast serve: refusing to start:") and f"{missing} is not a directory" in line
