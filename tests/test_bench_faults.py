"""``chatterbox-fast bench faults``, short: generated hostile inputs on every JSON surface of a real server (eSpeak
engine) cause no server error, drop no engine connection, restart no worker and leak no session."""

from __future__ import annotations

import json

import pytest

from gateway.cli import build_parser
from tests.server import running_server
from cbf_tools import hostile_inputs


def test_hostile_inputs_are_reproducible_and_hostile() -> None:
    import random

    first, again = (hostile_inputs.websocket_messages(random.Random(7), 300) for _ in range(2))
    assert first == again
    assert any("\\ud800" in m for m in first) and any("\\u0000" in m for m in first)
    assert any(m.startswith("[" * 40) for m in first)


def test_a_short_run_leaves_every_figure_at_zero(capsys: pytest.CaptureFixture[str]) -> None:
    with running_server() as url:
        args = build_parser().parse_args(["bench", "faults", "--count", "150", "--url", url])
        status = args.run(args)
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert status == 0, summary
    assert set(summary["surfaces"]) == {"websocket", "elevenlabs", "/v1/tts", "/v1/audio/speech"}
    assert summary["server_errors"] == summary["dropped_engine_connections"] == summary["leaked_sessions"] == 0
    assert summary["worker_restarts"] == 0 and summary["health"] == "ok"
    assert all(s["refused"] > 0 for s in summary["surfaces"].values())  # the inputs were hostile
