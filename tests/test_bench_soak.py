"""``chatterbox-fast bench soak``, short: callers of every transport that speak, stream tokens, barge in, stop reading
and hang up, on a server it starts (eSpeak), phone calls among them (their callers' audio listened to, their callers
talking over the gateway), leave no server error, no timeout and no session behind, print a line per interval, and
the memory figures are read; under chaos (the embedded worker SIGKILLed, a gateway process of ``--processes 2`` sent
SIGTERM) the server stays up, leaks nothing, and the chaos and its figures are counted per transport."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cbf_tools.bench.chaos import Chaos, Served
from cbf_tools.bench.soak import TRANSPORTS, growth_per_minute, leaked_connections, mix
from gateway.cli import build_parser

CHAOS_FIGURES = {"engine_unavailable", "failovers", "dropped", "reconnects", "refused"}


def soak(capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, dict[str, Any], list[str]]:
    """The exit status, the JSON summary and the lines printed as it ran."""
    args = build_parser().parse_args(["bench", "soak", *flags])
    status = args.run(args)
    out = capsys.readouterr().out.strip().splitlines()
    return status, json.loads(out[-1]), [line for line in out if " min: " in line]


def test_growth_is_the_slope_after_the_warm_up_in_mib_per_minute() -> None:
    warm_up_then_flat = [(t, 100.0 if t < 60 else 150.0) for t in range(0, 600, 5)]
    assert growth_per_minute(warm_up_then_flat) == pytest.approx(0.0)  # no warm-up said: the second half
    assert growth_per_minute(warm_up_then_flat, warm_up_s=120) == pytest.approx(0.0)
    assert growth_per_minute(warm_up_then_flat, warm_up_s=0) > 0  # the warm-up's step counted
    leaking = [(t, 100 + t / 30) for t in range(0, 600, 5)]  # 2 MiB a minute
    assert growth_per_minute(leaking, warm_up_s=60) == pytest.approx(2.0)
    assert growth_per_minute([(0, 1.0)]) is None


def test_connections_left_are_summed_over_the_processes_less_the_benchs_own() -> None:
    assert leaked_connections({"connections": 1}) == 0  # the bench's own, asking
    assert leaked_connections({"connections": 3}) == 2
    assert leaked_connections({"connections": 9, "processes": [{"connections": 1}, {"connections": 2}]}) == 2
    assert leaked_connections({"sessions": 0}) == 0  # a server that does not say


class _Tree(Served):
    """A ``serve --processes 2``'s gateway processes as a script says (the real tree is read in the soaks below)."""

    def __init__(self, *children: list[int]) -> None:
        super().__init__(pid=1)
        self.children = list(children)

    def gateway_children(self) -> list[int]:
        return self.children.pop(0) if len(self.children) > 1 else self.children[0]


def test_the_server_is_whole_again_only_once_a_drained_processs_replacement_is_up() -> None:
    # the CI's failure: the run ended while a drained process's replacement was still to come, and it was counted
    chaos = Chaos(_Tree([10, 11], [11], [11], [11, 12]), kill_worker_every=None, restart_gateway_every=4)
    assert [chaos.whole(), chaos.whole(), chaos.whole()] == [False, False, True]
    assert chaos.figures()["gateways_restarted"] == 1 and chaos.figures()["gateway_processes_now"] == 2
    assert Chaos(_Tree([]), kill_worker_every=3, restart_gateway_every=None).whole()  # no gateway chaos: whole


def test_the_callers_are_shared_among_every_transport() -> None:
    assert mix(50, dict.fromkeys(("webrtc", "phone", "sse", "wyoming", "http", "elevenlabs", "cartesia", "deepgram",
                                  "vapi"))) == {
        "webrtc": 10, "phone": 10, "sse": 5, "wyoming": 5, "http": 5, "elevenlabs": 2, "cartesia": 2, "deepgram": 2,
        "vapi": 2, "websocket": 7}
    # the flags that say how many keep their word; the rest share what is left, the WebSocket last
    assert mix(6, {"webrtc": 1, "sse": 1, "wyoming": 1, "phone": 2, "http": None, "elevenlabs": None,
                   "cartesia": None}) == {
        "webrtc": 1, "sse": 1, "wyoming": 1, "phone": 2, "http": 0, "elevenlabs": 0, "cartesia": 0, "deepgram": 0,
        "vapi": 0, "websocket": 1}
    with pytest.raises(ValueError, match="--webrtc 4, --phone 4: more than the 6 callers"):
        mix(6, {"webrtc": 4, "phone": 4})


def test_every_phone_stack_has_a_caller_and_its_voice() -> None:
    """Each media stream the soak places calls from (all but jambonz's socket, and AudioSocket's TCP calls:
    cbf_tools/peers/audiosocket_peer.py) has a replica of its carrier, and the caller's clip can be said on its wire,
    in its frames."""
    from cbf_tools.bench import caller_voices
    from cbf_tools.bench.soak import PHONE_STACKS, _caller_turn
    from cbf_tools.peers.phone_callers import STACKS

    for stack in set(PHONE_STACKS) - {"jambonz", "audiosocket"}:
        kind = STACKS[stack]
        frames = _caller_turn(kind.codec, kind.frame_s)
        assert frames and {len(f) for f in frames} == {len(kind.silence)}, stack
    assert {"plivo", "vonage", "exotel"} <= set(PHONE_STACKS) and caller_voices.WIRE


def test_a_short_soak_leaves_nothing_behind(capsys: pytest.CaptureFixture[str]) -> None:
    # Every caller's choices come from the seed, not the clock: with seed 4 each outcome asserted below is on some
    # caller's first turn (the WebSocket caller cancels, a phone caller listens and talks over the gateway, ...),
    # about 2 s in here; the rest of the 6 s is more turns of the same kinds (a turn begun before the end finishes).
    status, summary, lines = soak(capsys, "--minutes", "0.1", "--seed", "4", "--callers", "12", "--webrtc", "2",
                                  "--sse", "1", "--wyoming", "1", "--phone", "2", "--http", "1", "--elevenlabs", "1",
                                  "--cartesia", "1", "--deepgram", "1", "--vapi", "1", "--report-every", "2")
    assert status == 0, summary
    assert summary["server_errors"] == summary["timeouts"] == summary["leaked_sessions"] == 0
    assert summary["leaked_connections"] == 0
    assert summary["leaked_utterances"] == 0  # the gateway's engine links hold no utterance of a session gone
    assert summary["engine_unavailable"] == summary["dropped"] == 0 and summary["chaos"] is None
    assert summary["done"] > 0 and summary["cancelled"] > 0 and summary["hung_up"] > 0
    assert summary["barged_in"] > 0 and summary["listened"] > 0  # phone callers heard, and talking over the gateway
    assert summary["memory"]["gateway"]["peak_mib"] > 0 and summary["memory"]["worker"]["peak_mib"] > 0
    every = summary["transports"]
    assert set(every) == set(TRANSPORTS)
    for name in ("websocket", "webrtc-opus", "webrtc-pcmu", "http", "sse", "elevenlabs", "cartesia", "deepgram", "vapi",
                 "wyoming",
                 "twilio"):
        assert every[name]["done"] + every[name]["cancelled"] + every[name]["barged_in"] > 0, name
        assert 0 < every[name]["first_audio_p50_s"] <= every[name]["first_audio_p95_s"] < 5, name
    assert len(lines) == len(summary["intervals"]) >= 2  # a line every 2 s as it ran
    during = [i for i in summary["intervals"] if i["minute"] <= 0.1]  # (the rest: the last turns' tails)
    # (each report counts the turns that ended since the one before: how many end in which 2 s is the machine's
    # load, so only the run's sum is asserted)
    assert len(during) == 3 and all(i["memory_mib"]["gateway"] > 0 for i in during)
    assert sum(i["turns"] for i in during) > 0 and all(i["turns"] >= 0 for i in summary["intervals"])
    assert sum(i["done"] for i in summary["intervals"]) <= summary["done"]


def test_freeswitch_and_audiosocket_calls_soak_and_leave_nothing_behind(capsys: pytest.CaptureFixture[str]) -> None:
    # Stacks without a clear: a barge-in is judged by their audio stopping; AudioSocket's calls come over TCP.
    status, summary, _ = soak(capsys, "--minutes", "0.1", "--seed", "4", "--callers", "2", "--phone", "2",
                              "--phone-stacks", "freeswitch,audiosocket", "--report-every", "3")
    assert status == 0, summary
    assert summary["server_errors"] == summary["timeouts"] == summary["leaked_sessions"] == 0
    assert summary["leaked_connections"] == 0 and summary["dropped"] == 0
    for name in ("freeswitch", "audiosocket"):
        every = summary["transports"][name]
        assert every["done"] + every["cancelled"] + every["barged_in"] + every["hung_up"] > 0, (name, every)
        assert 0 < every["first_audio_p50_s"] < 5, (name, every)


def test_the_embedded_worker_killed_every_3_s_leaves_the_server_up_and_nothing_behind(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Kills at 3, 6 and 9 s: the first of a serving worker, the next of restarted ones (one may be missed while the
    # gateway's back-off runs: two kills are asked for, three tried). Not sooner: on a loaded machine the first turns
    # took over 1.5 s to be done, and a kill at 1.5 s left none done before it.
    status, summary, lines = soak(capsys, "--minutes", "0.15", "--callers", "6", "--webrtc", "1", "--phone", "1",
                                  "--kill-worker-every", "3", "--report-every", "3")
    assert status == 0, summary
    assert summary["chaos"]["workers_killed"] >= 2
    assert summary["status_at_end"] == "ok" and summary["leaked_sessions"] == summary["leaked_utterances"] == 0
    assert summary["server_errors"] == summary["timeouts"] == 0  # the worker's loss is no engine_error, no hang
    assert summary["done"] > 0  # speech between the kills
    assert all(CHAOS_FIGURES <= set(t) for t in summary["transports"].values())
    assert summary["memory"]["worker"]["growth_mib_per_min"] is None  # the restarts', not a leak's
    assert "workers killed" in lines[-1] and "engine_unavailable" in lines[-1]


def test_callers_quiet_together_let_the_model_unload_and_their_next_turns_reload_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Quiet from 3 to 6 s and from 9 s: an HTTP caller's turn (eSpeak) ends well inside each, the model unloads a
    # second later, the watch looks every second, and the turns from 6 s reload it.
    status, summary, _ = soak(capsys, "--minutes", "0.2", "--callers", "1", "--http", "1", "--unload-after", "1",
                              "--gap", "3", "--report-every", "1")
    assert status == 0, summary
    assert summary["unloads_seen"] >= 1 and summary["unload_after"] == 1 and summary["gap"] == 3
    assert summary["server_errors"] == summary["timeouts"] == summary["leaked_utterances"] == 0
    assert sum(i["done"] for i in summary["intervals"] if i["minute"] > 0.1) > 0  # spoken after the reload


@pytest.mark.slow
def test_gateway_processes_sent_sigterm_in_turn_are_restarted_and_callers_carry_on(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Signals at 4 and 8 s of 12: two gateway processes start, each drains once (a drain takes ~1.5 s here)."""
    status, summary, _ = soak(capsys, "--minutes", "0.2", "--callers", "6", "--webrtc", "1", "--phone", "1",
                              "--processes", "2", "--restart-gateway-every", "4", "--report-every", "4")
    chaos = summary["chaos"]
    assert status == 0, summary
    assert chaos["gateways_signalled"] >= 2 and chaos["gateways_restarted"] >= 1
    assert chaos["gateway_processes_now"] == 2
    assert summary["status_at_end"] == "ok" and summary["leaked_sessions"] == 0 and summary["server_errors"] == 0
    assert summary["transports"]["jambonz"]["done"] > 0 and summary["transports"]["twilio"]["done"] == 0
