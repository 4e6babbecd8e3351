"""A caller's latency preference (issue 24): ``latency`` on ``config`` and ``speak``, the HTTP routes' body field and
the ElevenLabs socket's query parameters, against a real server on 127.0.0.1 (embedded eSpeak); ``done`` says which
applied. On eSpeak the server default is the shortest natural unit first; a large budget buys a whole sentence."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import httpx
import openai
import pytest
from websockets.asyncio.client import ClientConnection, connect

from engine.protocol import ProtocolError, Reading
from gateway import messages
from gateway.elevenlabs import translate
from gateway.sessions.core import SessionCore, StartUtterance

TEXT = ("Hello there, this is a streaming test of the real-time voice gateway. It should start speaking before the "
        "text is complete.")


@pytest.fixture(scope="module")
def server(plain_server: str) -> str:
    return plain_server


async def until(ws: ClientConnection, kind: str) -> list[dict[str, Any]]:
    """JSON events (audio frames skipped) up to and including the first of ``kind``."""
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(30):
        while not events or events[-1]["type"] != kind:
            frame = await ws.recv()
            if isinstance(frame, str):
                events.append(json.loads(frame))
    return events


def first_and_done(events: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The text of the first chunk the engine generated, and ``done``. A chunk longer than the client's lead comes in
    pieces (engine/slices.py): the pieces after its first have no generation time of their own."""
    chunks = [e for e in events if e["type"] == "chunk"]
    pieces = [chunks[0]] + list(itertools.takewhile(lambda e: e["gen_time"] == 0, chunks[1:]))
    return " ".join(e["text"] for e in pieces), events[-1]


def test_config_and_speak_carry_the_preference_to_the_engine() -> None:
    core = SessionCore("s", "websocket", 1000, configurable=True)
    core.receive(json.dumps({"type": "config", "latency": "prosody"}))
    starts = [a for a in core.receive(json.dumps({"type": "speak", "text": "One."})) if isinstance(a, StartUtterance)]
    assert starts == [StartUtterance(0, "default", Reading("prosody"), "One.")]
    starts = [a for a in core.receive(json.dumps({"type": "speak", "text": "Two.", "latency": 0.2}))
              if isinstance(a, StartUtterance)]
    assert starts == [StartUtterance(1, "default", Reading(0.2), "Two.")]  # this utterance only: the session keeps its own
    assert core.reading == Reading("prosody")
    for bad in ("slow", -1, 6, True, [0.1]):
        with pytest.raises(ProtocolError) as info:
            messages.parse_message(json.dumps({"type": "speak", "text": "x", "latency": bad}))
        assert info.value.code == "bad_latency" and "'fastest', 'balanced', 'prosody'" in str(info.value)


def test_elevenlabs_query_parameters_map_onto_the_preference() -> None:
    assert translate.latency_preference({}) is None
    assert [translate.latency_preference({"optimize_streaming_latency": str(n)}) for n in range(5)] == [
        "prosody", "balanced", "balanced", "fastest", "fastest"]
    assert translate.latency_preference({"auto_mode": "true", "optimize_streaming_latency": "0"}) == "fastest"
    assert translate.latency_preference({"auto_mode": "false"}) is None
    for bad in ({"optimize_streaming_latency": "5"}, {"auto_mode": "yes"}):
        with pytest.raises(ProtocolError):
            translate.latency_preference(bad)


async def test_websocket_session_and_request_preferences_apply_and_done_says_which(server: str) -> None:
    async with connect(server.replace("http://", "ws://") + "/v1/stream") as ws:
        await until(ws, "ready")
        await ws.send(json.dumps({"type": "speak", "text": TEXT}))
        first, done = first_and_done(await until(ws, "done"))
        assert first == "Hello there, this is" and done["latency"] == "balanced" and done["first_audio_s"] == 0.0
        await ws.send(json.dumps({"type": "config", "latency": 5}))  # a budget the whole text fits, on any load
        await ws.send(json.dumps({"type": "speak", "text": TEXT}))
        first, done = first_and_done(await until(ws, "done"))
        # the best-ranked unit: the whole text, or its first sentence where the engine starts before the end arrives
        assert first in (TEXT, TEXT[: TEXT.index(".") + 1]) and done["latency"] == 5 and done["first_audio_s"] == 5.0
        await ws.send(json.dumps({"type": "config", "latency": "prosody"}))
        await ws.send(json.dumps({"type": "speak", "text": TEXT}))
        first, done = first_and_done(await until(ws, "done"))
        assert done["latency"] == "prosody" and done["first_audio_s"] == 0.5  # (what fits 0.5 s depends on the load)
        await ws.send(json.dumps({"type": "speak", "text": TEXT, "latency": "fastest"}))
        first, done = first_and_done(await until(ws, "done"))
        assert first == "Hello there, this is" and done["latency"] == "fastest"
        await ws.send(json.dumps({"type": "config", "latency": "instant"}))
        error = (await until(ws, "error"))[-1]
        assert error["code"] == "bad_latency"
        await ws.send(json.dumps({"type": "speak", "text": "Still here.", "latency": 0.05}))
        done = (await until(ws, "done"))[-1]
        assert done["latency"] == 0.05 and done["first_audio_s"] == 0.05


def test_tts_and_openai_routes_take_it_as_a_body_field(server: str) -> None:
    with httpx.stream("POST", server + "/v1/tts", json={"text": TEXT, "format": "ndjson", "latency": "prosody"},
                      timeout=30) as r:
        lines = [json.loads(line) for line in r.iter_lines() if line]
    assert r.status_code == 200 and lines[-1]["type"] == "done" and lines[-1]["latency"] == "prosody"
    refused = httpx.post(server + "/v1/tts", json={"text": TEXT, "latency": "slow"}, timeout=30)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "bad_latency"
    client = openai.OpenAI(base_url=server + "/v1", api_key="unused")
    with client.audio.speech.with_streaming_response.create(model="tts-1", voice="alloy", input=TEXT,
                                                            response_format="pcm",
                                                            extra_body={"latency": "fastest"}) as resp:
        assert len(resp.read()) > 24000
    with pytest.raises(openai.BadRequestError, match="first-audio budget in seconds"):
        client.audio.speech.create(model="tts-1", voice="alloy", input=TEXT, extra_body={"latency": 9})


async def test_elevenlabs_socket_refuses_a_bad_latency_parameter(server: str) -> None:
    base = server.replace("http://", "ws://") + "/v1/text-to-speech/default/stream-input"
    async with connect(base + "?optimize_streaming_latency=7") as ws:
        reply = json.loads(await ws.recv())
        assert reply["error"] == "invalid_latency" and "0, 1, 2, 3 or 4" in reply["message"]
    assert ws.close_code == 1008
    async with connect(base + "?optimize_streaming_latency=3&auto_mode=true") as ws:
        await ws.send(json.dumps({"text": " "}))
        await ws.send(json.dumps({"text": "Yes. "}))
        await ws.send(json.dumps({"text": ""}))
        replies = [json.loads(frame) async for frame in ws]
    assert replies[-1] == {"isFinal": True} and any(r.get("audio") for r in replies) and ws.close_code == 1000
