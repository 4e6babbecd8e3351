"""A WebSocket client's ``playout`` reports as the played position the engine paces on: gateway/playout.py's
PlayoutReports (the bounds: what was sent, no going back, a flood), the session core and its adapter directly."""

from __future__ import annotations

import asyncio
import itertools
import json
import random

import pytest

from cbf_tools.bench.hostile_inputs import playout_lies
from cbf_tools.peers.ws_player import Playback
from engine.protocol import ProtocolError
from gateway.messages import Playout, parse_message
from gateway.sessions.playout_reports import EXTRAPOLATE_S, REPORTS_BURST, REPORTS_PER_S, PlayoutReports
from tests.test_session import Client, FakeSink, frame, header, new_core


def test_a_report_is_the_position_played_on_in_real_time_for_a_while_never_past_what_was_sent() -> None:
    reports = PlayoutReports()
    assert reports.position(sent=5.0, now=10.0) is None  # no report: the sink's own position stands
    assert reports.report(1.0, sent=2.0, now=10.0)
    assert reports.position(sent=2.0, now=10.0) == 1.0
    assert reports.position(sent=2.0, now=10.25) == 1.25  # the report is that old by the time the engine hears it
    assert reports.position(sent=2.0, now=12.0) == 2.0  # never past what was sent
    assert reports.position(sent=9.0, now=30.0) == 1.0 + EXTRAPOLATE_S  # a client gone quiet has stopped playing


def test_lying_reports_are_held_to_what_is_possible() -> None:
    reports = PlayoutReports()
    assert reports.report(50.0, sent=1.5, now=0.0)  # ahead of what was sent: what was sent
    assert reports.played == 1.5
    assert not reports.report(1.0, sent=3.0, now=0.1)  # going backwards: ignored
    assert reports.played == 1.5
    assert reports.report(1.5, sent=3.0, now=0.2)  # standing still is no lie (a player that paused)
    assert reports.report(2.5, sent=3.0, now=0.3) and reports.played == 2.5


def test_a_flood_of_reports_is_cut_to_a_burst_then_a_steady_rate() -> None:
    reports = PlayoutReports()
    taken = [reports.report(0.001 * k, sent=10.0, now=0.0) for k in range(1000)]
    assert sum(taken) == REPORTS_BURST
    assert reports.played == pytest.approx(0.001 * (REPORTS_BURST - 1))
    second = [reports.report(1.0 + 0.001 * k, sent=10.0, now=1.0) for k in range(1000)]
    assert sum(second) == REPORTS_BURST  # a second later: as many again (REPORTS_PER_S refills it in 0.5 s)
    assert REPORTS_PER_S * 1.0 >= REPORTS_BURST
    steady = [reports.report(5.0 + k, sent=1e6, now=2.0 + k / 20) for k in range(100)]  # 20 a second: all taken
    assert all(steady)


def test_the_core_takes_reports_of_the_utterance_playing_and_names_its_position() -> None:
    session = new_core()
    session.receive(frame("speak", text="one two"))
    session.started(0, "u0")
    assert session.receive(frame("playout", played=0.2), sent=0.0, now=1.0) == []  # nothing plays yet: ignored
    assert session.played(0, sent=1.0, now=1.0) is None
    session.chunk(0, header(0), b"")
    session.receive(frame("playout", played=0.4, utterance="u9"), sent=1.0, now=1.0)  # another utterance's: ignored
    assert session.played(0, sent=1.0, now=1.0) is None
    session.receive(frame("playout", played=0.4, utterance="u0"), sent=1.0, now=1.0)
    session.receive(frame("playout", played=7.0), sent=1.0, now=1.1)  # ahead of what was sent
    assert session.played(0, sent=1.0, now=1.1) == 1.0
    session.receive(frame("playout", played=0.5), sent=1.0, now=1.2)  # backwards
    assert session.played(0, sent=2.0, now=1.2) == pytest.approx(1.1)
    [done] = session.audio_ended(0, {"audio_seconds": 2.0}, sent=2.0)
    assert (done.event["heard_s"], done.event["heard_from"]) == (1.0, "playout")  # type: ignore[union-attr]
    assert session.played(0, sent=2.0, now=1.2) is None  # the turn is over


class SentSink(FakeSink):
    """A WebSocket-like sink: its position is what it has sent, all of it at once."""

    def played_seconds(self) -> float | None:
        return 3.0


async def test_the_engine_is_told_the_reported_position_and_without_reports_what_was_sent() -> None:
    client = Client(SentSink())
    await client.session.handle_text(frame("speak", text="Hello."))
    await client.session.handle_text(frame("speak", text="Again."))
    first, second = client.engine.utterances
    first.speak(1, done=False)
    await client.until("chunk")
    while len(first.playouts) < 2:
        await asyncio.sleep(0.01)
    assert first.playouts[-1] == 3.0  # no reports: what was sent (the planner's clock estimate stands)
    await client.session.handle_text(frame("playout", played=0.5, utterance="u0"))
    await client.session.handle_text(frame("playout", played=40.0))  # a lie: held to what was sent
    await client.session.handle_text(frame("playout", played=0.1))  # backwards: ignored
    told = len(first.playouts)
    while len(first.playouts) < told + 2:
        await asyncio.sleep(0.01)
    assert first.playouts[-1] == 3.0  # the lie held to what was sent, not the 40 s it claimed
    first.done(1)
    second.speak(1, done=False)
    await client.until("chunk", 2)
    await client.session.handle_text(frame("playout", played=0.5))
    told = len(second.playouts)
    while len(second.playouts) < told + 2:
        await asyncio.sleep(0.01)
    assert 0.5 <= second.playouts[-1] <= 0.5 + EXTRAPOLATE_S  # the report, played on for at most a second
    await client.session.close()


def test_a_playout_report_may_name_its_utterance_as_a_string() -> None:
    assert parse_message('{"type": "playout", "played": 1.5, "utterance": "u0"}') == Playout(1.5, "u0")
    assert parse_message('{"type": "playout", "played": 2}') == Playout(2.0)
    with pytest.raises(ProtocolError):
        parse_message('{"type": "playout", "played": 1, "utterance": 7}')


def test_the_test_listener_plays_at_its_rate_and_counts_its_buffer_running_dry() -> None:
    player = Playback(rate=0.5)
    player.receive(1.0, now=10.0)
    player.advance(11.0)
    assert player.position == 0.5 and player.underruns == 0
    player.advance(13.5)  # dry at 12.0: one underrun, 1.5 s starved so far
    assert (player.position, player.underruns, player.starved_s) == (1.0, 1, 1.5)
    player.receive(1.0, now=14.0)  # still dry until now: 2 s starved, one underrun
    assert (player.underruns, player.starved_s) == (1, 2.0)
    player.end(now=14.0)
    player.advance(20.0)  # the end played out: no underrun
    assert (player.position, player.underruns, player.starved_s, player.remaining_s()) == (2.0, 1, 2.0, 0.0)


def test_bench_faults_lying_reports_follow_a_speak_and_lie_every_way() -> None:
    lies = [json.loads(m) for m in playout_lies(random.Random(3), 2000)]
    assert len(lies) == 2000 and lies[0]["type"] == "speak"
    played = [m.get("played") for m in lies if m["type"] == "playout"]
    assert any(isinstance(p, float) and p >= 1e5 for p in played)  # ahead
    assert any(p == -1 for p in played) and any(isinstance(p, str) for p in played)  # refused
    runs = [len(list(group)) for message, group in itertools.groupby(json.dumps(m) for m in lies)
            if message.startswith('{"type": "playout"')]
    assert max(runs) >= 30  # a flood of one report
    assert any(m.get("utterance") is not None for m in lies)  # of another utterance, or not an id
