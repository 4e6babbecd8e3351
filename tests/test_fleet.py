"""The short version of ``chatterbox-fast bench fleet``: two real gateways and two real eSpeak workers behind Debian's
nginx (with deploy/nginx/proxy.conf), WebSocket and WebRTC sessions through it, then one gateway and one worker
SIGKILLed: the killed gateway's clients reconnect through nginx and are served again, the others keep their
connection. Underruns are the benchmark's figure (README), not asserted here: they depend on this machine's load."""

from __future__ import annotations

import argparse
import asyncio

from cbf_tools.bench.fleet import fleet, measure


def test_two_gateways_two_workers_behind_nginx_survive_losing_one_of_each() -> None:
    args = argparse.Namespace(ws_sessions=4, webrtc_sessions=2, steady=8.0, after=16.0, pause=0.3,
                              stagger=1.0)
    with fleet(max_sessions=16) as f:
        s = asyncio.run(measure(args, f))
    steady, faults = s["steady"], s["faults"]
    assert steady["errors"] == 0 and steady["utterances"] >= 6, s
    assert sum(steady["sessions_per_gateway"]) == 6 and min(steady["sessions_per_gateway"]) >= 1, s
    assert min(steady["utterances_per_worker"]) >= 1, s
    # every session of the killed gateway reconnected through nginx and was served; no other session reconnected
    assert faults["sessions_on_killed_gateway"] >= 1, s
    assert faults["sessions_reconnected"] == faults["reconnected_and_served"] == faults["sessions_on_killed_gateway"], s
    assert faults["other_sessions_errors"] == 0, s  # utterances on the dead worker moved to the other
