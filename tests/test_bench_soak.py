"""``chatterbox-fast bench soak``, short: callers that speak, stream tokens, barge in, stop reading and hang up, on a
server it starts (eSpeak), phone calls among them (their callers' audio listened to, their callers talking over the
gateway), leave no server error, no timeout and no session behind, and the memory figures are read."""

from __future__ import annotations

import json

import pytest

from cbf_tools.bench.soak import growth_per_minute
from gateway.cli import build_parser


def test_growth_is_the_second_half_slope_in_mib_per_minute() -> None:
    warm_up_then_flat = [(t, 100.0 if t < 60 else 150.0) for t in range(0, 600, 5)]
    assert growth_per_minute(warm_up_then_flat) == pytest.approx(0.0)
    leaking = [(t, 100 + t / 30) for t in range(0, 600, 5)]  # 2 MiB a minute
    assert growth_per_minute(leaking) == pytest.approx(2.0)
    assert growth_per_minute([(0, 1.0)]) is None


def test_a_short_soak_leaves_nothing_behind(capsys: pytest.CaptureFixture[str]) -> None:
    # Every caller's choices come from the seed, not the clock: with seed 4 each outcome asserted below is on some
    # caller's first turn (the WebSocket caller cancels, a phone caller listens and talks over the gateway, ...),
    # about 2 s in here; the rest of the 9 s is more turns of the same kinds.
    args = build_parser().parse_args(["bench", "soak", "--minutes", "0.15", "--seed", "4", "--sessions", "6",
                                      "--webrtc", "1", "--sse", "1", "--wyoming", "1", "--phone", "2"])
    status = args.run(args)
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert status == 0, summary
    assert summary["server_errors"] == summary["timeouts"] == summary["leaked_sessions"] == 0
    assert summary["leaked_utterances"] == 0  # the gateway's engine links hold no utterance of a session gone
    assert summary["done"] > 0 and summary["cancelled"] > 0 and summary["hung_up"] > 0
    assert summary["barged_in"] > 0 and summary["listened"] > 0  # phone callers heard, and talking over the gateway
    assert summary["memory"]["gateway"]["peak_mib"] > 0 and summary["memory"]["worker"]["peak_mib"] > 0
