"""A client that asks for a long utterance and stops reading, against a real server on 127.0.0.1 (embedded eSpeak):
over the WebSocket, HTTP streams (raw, MP3, server-sent events), the ElevenLabs socket and Wyoming (the ``wyoming``
package's own client), the gateway and the worker
hold no more than ``--client-lead`` (and one piece of a chunk) of its audio, it is closed (4408) or its stream cut
short after ``--stall-timeout``, and a normal client beside it gets its whole utterance (issue 49 item 4)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
from typing import Any, Coroutine

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from wyoming.audio import AudioChunk
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize

from cbf_tools.peers.local_server import free_port
from cbf_tools.peers.stopping_reader import stopping_socket
from tests.server import running_server

SENTENCE = "The quick brown fox jumps over the lazy dog, and then it runs far away across the field. "
TEXT = (SENTENCE * 57)[:5000]  # ~5 min of audio: 14 MB at 24 kHz
STALL_S = 4
LEAD_S = 1.0
BYTES_PER_S = 48000  # 24 kHz s16le, the socket's default format
# what a client that reads nothing may be sent at most: the worker's lead limit (the lead, the safety margin and the
# longest chunk's generation time, at most the lead: < 2.5 s), one piece of a chunk (engine/slices.py: < 3 s), and
# what the client's own buffers took before it stopped (counted as taken: a message of a piece in its queue, < 2.5 s);
# measured ~2.9 s (the ElevenLabs socket ~5.5 s). The utterance is ~300 s, and before the worker sent long chunks in
# pieces a whole chunk came too: ~16 s
MOST_SENT_S = 8.0


WYOMING_PORT = free_port()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    with running_server("--stall-timeout", str(STALL_S), "--client-lead", str(LEAD_S), "--wyoming-port",
                        str(WYOMING_PORT), "--wyoming-host", "127.0.0.1",
                        voices_dir=tmp_path_factory.mktemp("voices")) as url:
        yield url


def _health(url: str) -> dict:
    return httpx.get(url + "/health", timeout=10).json()


async def _whole_utterance(url: str) -> tuple[int, dict]:
    """A client that reads everything: audio bytes received, and its ``done``."""
    received = 0
    async with connect(url.replace("http", "ws") + "/v1/stream", max_size=None) as ws:
        await ws.send(json.dumps({"type": "speak", "text": SENTENCE * 3}))
        async for message in ws:
            if isinstance(message, bytes):
                received += len(message)
            elif (event := json.loads(message))["type"] == "done":
                return received, event
            else:
                assert event["type"] in ("ready", "started", "chunk"), event
    raise AssertionError("no done")


async def test_a_client_that_stops_reading_holds_only_the_lead_and_is_closed(server: str) -> None:
    sock = _stopping_reader(server)
    async with connect(server.replace("http", "ws") + "/v1/stream", sock=sock, max_queue=1, ping_interval=None,
                       max_size=None) as slow:
        await slow.send(json.dumps({"type": "speak", "text": TEXT}))
        await _beside_then_closed(server, _whole_utterance(server))
        slow_audio, announced = 0, 0.0
        with pytest.raises(ConnectionClosed) as closed:
            while True:  # what the gateway sent it before giving up, then the close
                if isinstance(message := await asyncio.wait_for(slow.recv(), 5), bytes):
                    slow_audio += len(message)
                elif (event := json.loads(message))["type"] == "chunk":
                    announced += event["duration"]
    assert closed.value.rcvd is not None
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (4408, f"not reading: no audio taken for {STALL_S} s")
    # what the gateway had from the worker for it (its chunk events) and sent it: the lead and a piece, not the
    # ~300 s asked for
    assert 0 < slow_audio <= MOST_SENT_S * BYTES_PER_S, slow_audio / BYTES_PER_S
    assert announced <= MOST_SENT_S, announced


# HTTP streams: the same measure of what the client has taken (the body's bytes, less what waits in the connection's
# buffers, mapped to seconds piece by piece), the same stall. Each: the route, its body, its body's bytes per second
# of audio (pcm: 48,000; MP3 at 64 kbit/s: 8,000; pcm in server-sent events: base64's 4/3 and the events around it).
HTTP_STREAMS = {
    "tts-pcm": ("/v1/tts", {"text": TEXT, "format": "pcm", "stream": True}, BYTES_PER_S),
    "openai-mp3": ("/v1/audio/speech", {"input": TEXT, "response_format": "mp3", "stream": True}, 8000),
    "openai-sse": ("/v1/audio/speech", {"input": TEXT, "response_format": "pcm", "stream_format": "sse"},
                   BYTES_PER_S * 4 // 3),
}


async def _whole_http_utterance(url: str) -> tuple[int, dict]:
    """A client that reads a whole streamed HTTP utterance (timed lines): audio bytes received, and its ``done``."""
    received, done = 0, None
    async with httpx.AsyncClient(timeout=60) as client:
        async with client.stream("POST", url + "/v1/tts", json={"text": SENTENCE * 3, "format": "ndjson"}) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line:
                    event = json.loads(line)
                    received += len(base64.b64decode(event.get("audio", "")))
                    done = event if event["type"] == "done" else done
    assert done is not None
    return received, done


def _drain(sock: socket.socket) -> bytes:
    """Everything the server sent before it closed the connection."""
    sock.settimeout(10)
    data = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            data += chunk
    return data


def _stopping_reader(url: str) -> socket.socket:
    """A connection to the server whose client will read nothing: the kernel absorbs next to nothing for it."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    return sock


async def _beside_then_closed(url: str, beside: Coroutine[Any, Any, tuple[int, dict]]) -> None:
    """While the stalled client is open, a normal one beside it gets its whole utterance and the gateway holds at
    most the lead and a piece for the stalled one; then the stalled session is closed, holding nothing."""
    whole = asyncio.create_task(beside)
    most_queued = 0
    for _ in range(int(STALL_S / 0.25) - 2):  # while the slow one is still open
        await asyncio.sleep(0.25)
        health = await asyncio.to_thread(_health, url)
        most_queued = max(most_queued, health["queued_audio"]["max_utterance_bytes"])
    received, done = await whole
    assert abs(received - done["audio_seconds"] * BYTES_PER_S) <= 0.01 * BYTES_PER_S, (received, done)  # all
    assert most_queued <= MOST_SENT_S * BYTES_PER_S, most_queued  # held in the gateway for the slow one
    health = await _until_no_sessions(url)
    assert health["queued_audio"]["bytes"] == 0


async def _until_no_sessions(url: str) -> dict:
    for _ in range(120):  # a bound on a hang: the stall timeout, from the last byte taken
        if (health := await asyncio.to_thread(_health, url))["sessions"] == 0:
            return health
        await asyncio.sleep(0.25)
    raise AssertionError("the stalled stream was never closed")


@pytest.mark.parametrize("name", HTTP_STREAMS)
async def test_an_http_stream_whose_client_stops_reading_holds_only_the_lead_and_is_aborted(
        server: str, name: str) -> None:
    path, body, bytes_per_s = HTTP_STREAMS[name]
    sock = _stopping_reader(server)
    payload = json.dumps(body).encode()
    sock.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                 % (path.encode(), server.removeprefix("http://").encode(), len(payload), payload))  # and reads nothing until the end
    try:
        await _beside_then_closed(server, _whole_http_utterance(server))
        data = await asyncio.to_thread(_drain, sock)
    finally:
        sock.close()
    head, _, sent = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    assert not sent.endswith(b"0\r\n\r\n")  # cut short: no clean end of the chunked body
    # what the engine made for it and the gateway sent: the lead and a piece, not the ~300 s asked for
    assert 0 < len(sent) <= MOST_SENT_S * bytes_per_s * 1.05, len(sent) / bytes_per_s


async def test_an_elevenlabs_socket_whose_client_stops_reading_holds_only_the_lead_and_is_closed(server: str) -> None:
    sock = _stopping_reader(server)
    url = server.replace("http://", "ws://") + "/v1/text-to-speech/default/stream-input?output_format=pcm_24000"
    async with connect(url, sock=sock, max_queue=1, ping_interval=None, max_size=None) as slow:
        for text in (" ", TEXT, ""):
            await slow.send(json.dumps({"text": text}))
        await _beside_then_closed(server, _whole_utterance(server))
        slow_audio = 0
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                reply = json.loads(await asyncio.wait_for(slow.recv(), 5))
                slow_audio += len(base64.b64decode(reply.get("audio") or ""))
    assert closed.value.rcvd is not None
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (4408, f"not reading: no audio taken for {STALL_S} s")
    assert 0 < slow_audio <= MOST_SENT_S * BYTES_PER_S, slow_audio / BYTES_PER_S


# The wyoming client's asyncio stream reads up to twice its 64 KiB limit before it stops reading: what that absorbed
# counts as taken (~2.7 s of audio), beyond what the others may be sent
WYOMING_MOST_SENT_S = MOST_SENT_S + 2 * 65536 / BYTES_PER_S


class StoppingWyomingClient(AsyncTcpClient):
    """The ``wyoming`` package's TCP client, on a connection whose client will read nothing (a tiny receive buffer:
    the kernel absorbs next to nothing for it)."""

    async def connect(self) -> None:
        sock = await stopping_socket(f"http://{self.host}:{self.port}")
        self._reader, self._writer = await asyncio.open_connection(sock=sock)


async def test_a_wyoming_client_that_stops_reading_holds_only_the_lead_and_is_closed(server: str) -> None:
    async with StoppingWyomingClient("127.0.0.1", WYOMING_PORT) as slow:
        await slow.write_event(Synthesize(TEXT).event())
        await _beside_then_closed(server, _whole_utterance(server))
        slow_audio = 0
        while (event := await asyncio.wait_for(slow.read_event(), 10)) is not None:  # what it was sent, then the end
            if AudioChunk.is_type(event.type):
                slow_audio += len(AudioChunk.from_event(event).audio)
    # what the engine made for it and the gateway sent: the lead and a piece (before: ~61 s, the kernel's send queue
    # counted as taken), not the ~300 s asked for
    assert 0 < slow_audio <= WYOMING_MOST_SENT_S * BYTES_PER_S, slow_audio / BYTES_PER_S
