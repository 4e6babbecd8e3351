"""A client waiting for its first audio is not idle: a Wyoming connection and an ElevenLabs socket whose engine takes
longer to start speaking than the idle timeout get their audio, not a close (under load, a CI run's test gateway with
a 3 s idle limit closed a Wyoming connection waiting for its first audio). The engine is the simulated one (it stands
in for a slow GPU engine, not for a GPU we lack): 1.5 s per chunk against an idle limit of 1 s."""

from __future__ import annotations

import asyncio
import json

import pytest
from websockets.asyncio.client import connect
from wyoming.audio import AudioChunk
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize

from cbf_tools.peers.local_server import free_port
from tests.server import running_server

IDLE_S = 1
CHUNK_S = 1.5  # the simulated engine's fixed seconds per chunk: the first audio comes after the idle limit


@pytest.fixture(scope="module")
def server():
    port = free_port()
    with running_server("--engine", "simulated", "--sim-fixed", str(CHUNK_S), "--idle-timeout", str(IDLE_S),
                        "--wyoming-port", str(port), "--wyoming-host", "127.0.0.1") as url:
        yield url, port


async def test_a_wyoming_client_waiting_for_its_first_audio_gets_it(server: tuple[str, int]) -> None:
    async with AsyncTcpClient("127.0.0.1", server[1]) as client:
        await client.write_event(Synthesize("A client that waits for its first audio is not idle.").event())
        async with asyncio.timeout(30):
            while (event := await client.read_event()) is not None and not AudioChunk.is_type(event.type):
                assert event.type == "audio-start", event
        assert event is not None, "the connection was closed before the first audio"


async def test_an_elevenlabs_socket_waiting_for_its_first_audio_gets_it(server: tuple[str, int]) -> None:
    url = server[0].replace("http://", "ws://") + "/v1/text-to-speech/default/stream-input?output_format=pcm_24000"
    async with connect(url) as ws:
        await ws.send(json.dumps({"text": " "}))
        await ws.send(json.dumps({"text": "A socket that waits for its first audio is not idle. ", "flush": True}))
        async with asyncio.timeout(30):
            while not (reply := json.loads(await ws.recv())).get("audio"):
                assert "error" not in reply, reply
