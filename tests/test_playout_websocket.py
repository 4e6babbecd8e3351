"""``playout`` reports from a real websockets client against a real server (eSpeak engine, far faster than real time):
the engine paces the utterance on the reported position, lying reports are held to what is possible, and a client
that never reports is paced as before (on what was sent)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from websockets.asyncio.client import ClientConnection, connect

from gateway.settings import GatewaySettings

BYTES_PER_S = 48000  # pcm_s16le at 24 kHz, the default
SENTENCE = "The quick brown fox jumps over the lazy dog, and then it runs back home across the field again. "
LONG_TEXT = SENTENCE * 24  # about two minutes of eSpeak's speech: far past the planner's lead limit (~10-20 s)
# about a minute (eSpeak: 0.057 s of audio a character, ~68 s): still twice LEAD_BOUND_S and more than the 50 s the
# never-reporting client must get, for the clients that take it all (the one that reports catches up report by
# report, so its time is the text's length: 2 min took ~16-20 s under load; the one after it finds it in the server's
# prompt cache, as it found the 2 min text before)
HALF_TEXT = SENTENCE * 12
LEAD_BOUND_S = 30.0  # what may be generated ahead of a position: the lead limit, a chunk in flight, a second played on


@pytest.fixture(scope="module")
def server(plain_server: str) -> str:
    """The shared default server (tests/conftest.py): its text limit (5,000 characters) holds LONG_TEXT."""
    return plain_server.replace("http://", "ws://") + "/v1/stream"


class Reporter:
    """A client that reads every frame at once and sends ``playout`` reports of its choosing every 100 ms."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.received = 0.0
        self.events: list[dict] = []
        self.utterance: str | None = None

    async def read_for(self, seconds: float, played: float | None = None) -> None:
        """Take frames for ``seconds``, reporting ``played`` (None: no reports) every 100 ms."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if played is not None and self.utterance is not None:
                await self.ws.send(json.dumps({"type": "playout", "played": played, "utterance": self.utterance}))
            try:
                frame = await asyncio.wait_for(self.ws.recv(), min(0.1, left))
            except TimeoutError:
                continue
            if isinstance(frame, bytes):
                self.received += len(frame) / BYTES_PER_S
                continue
            event = json.loads(frame)
            self.events.append(event)
            self.utterance = self.utterance or event.get("utterance")

    async def until_still(self, played: float | None, quiet: float = 3.0, timeout: float = 40.0) -> None:
        """Read, reporting ``played``, until no audio came for ``quiet`` seconds (generation waits) or it is done."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.ended():
            before = self.received
            await self.read_for(quiet, played)
            if self.received == before:
                return

    def ended(self) -> dict | None:
        return next((e for e in self.events if e["type"] in ("done", "cancelled", "error")), None)


async def test_the_engine_waits_for_a_client_that_reports_it_has_not_played_and_holds_lies_to_what_was_sent(
        server: str) -> None:
    async with connect(server, max_size=None) as ws:
        await ws.recv()  # ready
        client = Reporter(ws)
        await ws.send(json.dumps({"type": "speak", "text": LONG_TEXT}))
        await client.until_still(played=0.0)  # a player paused at the start: the engine is told 0, and waits
        assert client.ended() is None, client.ended()
        held = client.received
        # the lead past the reported 0 (the worker sends a long chunk in pieces as they fall within it: engine/
        # slices.py), not the two minutes eSpeak makes at once
        assert GatewaySettings.client_lead_s <= held < LEAD_BOUND_S
        await ws.send(json.dumps({"type": "playout", "played": 1e5}))  # a lie ahead of what was sent: what had been
        await client.until_still(played=0.0)  # then going backwards: ignored, so the lie's position stands
        assert client.ended() is None
        assert held < client.received < held + LEAD_BOUND_S  # generation went on from what had been sent, then waited
        await ws.send('{"type": "cancel"}')
        await client.read_for(1.0)
    cancelled = client.ended()
    assert cancelled is not None and cancelled["type"] == "cancelled", client.events[-3:]
    assert cancelled["heard_from"] == "playout"
    assert held - 0.2 <= cancelled["heard_s"] <= held + 0.2  # the lie, held to what had been sent when it came


async def test_a_client_that_reports_as_it_plays_gets_the_whole_utterance(server: str) -> None:
    async with connect(server, max_size=None) as ws:
        await ws.recv()
        client = Reporter(ws)
        await ws.send(json.dumps({"type": "speak", "text": HALF_TEXT}))
        await client.until_still(played=0.0)
        held = client.received
        deadline = time.monotonic() + 60
        while client.ended() is None and time.monotonic() < deadline:  # it catches up: each report frees more
            await client.read_for(0.3, played=client.received)
    done = client.ended()
    assert done is not None and done["type"] == "done", done
    assert client.received > held + 10.0 and done["audio_seconds"] == pytest.approx(client.received, abs=0.05)
    assert done["heard_from"] == "playout" and done["heard_s"] <= done["audio_seconds"]


async def test_a_client_that_never_reports_is_paced_on_what_was_sent_as_before(server: str) -> None:
    async with connect(server, max_size=None) as ws:
        await ws.recv()
        client = Reporter(ws)
        await ws.send(json.dumps({"type": "speak", "text": HALF_TEXT}))
        deadline = time.monotonic() + 60
        while client.ended() is None and time.monotonic() < deadline:
            await client.read_for(0.5)
    done = client.ended()
    assert done is not None and done["type"] == "done", done  # read at once, all of it generated: nothing waits
    assert done["heard_from"] == "sent" and client.received > LEAD_BOUND_S + 20
