"""``chatterbox-fast bench edge``'s yardstick and loop: the bare peer (cbf_tools/peers/edge.py, a benchmark fixture)
answers ``bench gateway``'s own WebSocket and aiortc clients with its tone, and the alternating rounds and their
summary run with the peer on both sides (the product's start-up is what makes the full command slow; its figures
are in the README). No latency thresholds: those depend on the machine."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from cbf_tools.bench.edge import CHROME, MEASURES, measure, onsets, peer_server, render
from cbf_tools.bench.gateway import WebRTCClient, WebSocketClient
from cbf_tools.peers.edge import TONE_S, tone
from gateway.cli import build_parser


@pytest.fixture(scope="module")
def peer():
    with peer_server() as (url, _):
        yield url


@pytest.fixture(scope="module")
def summary(peer: str) -> dict:
    """One round of every measure, the peer on both sides (what the two tests below read)."""
    return asyncio.run(measure({"product": peer, "peer": peer}, 1, "Anything."))


async def test_the_peer_answers_the_bench_clients_with_its_tone_at_once(peer: str) -> None:
    ws = WebSocketClient(peer, None, "default")
    await ws.connect()
    try:
        heard = await ws.speak("Anything.")
    finally:
        await ws.close()
    assert heard.ttfa_s is not None and heard.audio_s == pytest.approx(TONE_S) and heard.client_underruns == 0
    rtc = WebRTCClient(peer, None, "default", "pcmu")
    await rtc.connect()
    try:
        heard = await rtc.speak("Anything.")
    finally:
        await rtc.close()
    assert heard.ttfa_s is not None and heard.client_underruns == 0  # decoded, with energy, no gap


def test_rounds_alternate_and_the_summary_has_medians_and_ratios(summary: dict) -> None:
    assert summary["samples"] == {t: {**{m: 1 for m in MEASURES}, **{m: 0 for m in CHROME}} for t in ("product", "peer")}
    assert all(summary["ratio"][m] > 0 for m in MEASURES) and summary["targets"]["ws"] == 1.3
    assert "WebSocket first audio" in render(summary) and json.dumps(summary)


def test_bad_rounds_exit_2() -> None:
    args = build_parser().parse_args(["bench", "edge", "--rounds", "0"])
    assert args.run(args) == 2


def test_the_onset_is_where_speech_first_crosses_each_detectors_level() -> None:
    rate = 24000
    quiet = np.full(rate // 100, 50, "<i2")  # 10 ms under both levels
    loud = np.full(rate // 50, 400, "<i2")  # a 20 ms frame over both levels
    silence = np.zeros(rate // 50 - quiet.size, "<i2")
    pcm = np.concatenate([quiet, silence, np.full(rate // 50, 200, "<i2"), loud]).tobytes()
    # frame 0: quiet and silence; frame 1: RMS 200 (under 300), its samples under 328; frame 2: 400 (over both)
    assert onsets(pcm) == (0.04, 0.04)
    ramp = np.concatenate([np.zeros(rate // 50, "<i2"), np.full(rate // 50, 330, "<i2"),
                           np.full(rate // 50, 1000, "<i2")]).tobytes()
    assert onsets(ramp) == (0.02, 0.02)
    assert onsets(bytes(4800)) == (None, None)
    assert onsets(tone(24000))[0] == 0.0  # the peer's tone starts at once


def test_first_audible_minus_onset_is_reported_per_transport(summary: dict) -> None:
    assert summary["onset_ms"]["peer"] == {"frame": 0.0, "sample": 0.0}  # the tone: no onset to take away
    assert summary["from_onset_median_ms"]["peer"]["opus"] == summary["median_ms"]["peer"]["opus"]
    assert all(summary["from_onset_ratio"][m] > 0 for m in MEASURES)
    assert "first audible minus onset" in render(summary)
