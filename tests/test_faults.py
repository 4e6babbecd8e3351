"""Faults and hostile clients against a real server on 127.0.0.1 (embedded eSpeak engine): no work outlives its
caller, a client that stops reading is bounded and then closed, a truncated stream never looks complete."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import threading
import time

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from cbf_tools.peers.local_server import free_port
from cbf_tools.peers.rtc_listener import Listener
from tests.server import running_server

LONG = " ".join(["The quick brown fox jumps over the lazy dog, and then it runs far away across the field."] * 20)
STALL_S = 2
# The sockets take ~3 MB before a send to a client that reads nothing blocks (~30 s of audio at 96 kB/s): a bound on
# a hang, generous for a loaded box (seen: ~10 s).
SOCKET_FILLED_S = 120


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    with running_server("--stall-timeout", str(STALL_S), voices_dir=tmp_path_factory.mktemp("voices")) as url:
        yield url


def health(url: str) -> dict:
    return httpx.get(url + "/health").json()


def in_flight(url: str) -> int:
    return sum(engine["in_flight"] for engine in health(url)["engines"])


def wait_for(condition, what: str, within: float = 10) -> None:
    """Poll ``condition`` until true; fail with ``what`` after ``within`` seconds (a bound on a hang, not a speed)."""
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


async def test_a_websocket_that_disconnects_with_8_queued_utterances_leaves_no_engine_work(server: str) -> None:
    async with connect(server.replace("http", "ws") + "/v1/stream") as ws:
        assert json.loads(await ws.recv())["type"] == "ready"
        for _ in range(8):
            await ws.send(json.dumps({"type": "speak", "text": LONG}))
        while not isinstance(await ws.recv(), bytes):
            pass  # the first utterance's first audio
        assert await asyncio.to_thread(in_flight, server) == 8
    await asyncio.to_thread(wait_for, lambda: in_flight(server) == 0 and health(server)["sessions"] == 0,
                            "engine utterances outlived their WebSocket")


def test_an_http_client_that_drops_the_stream_leaves_no_engine_work(server: str) -> None:
    with httpx.stream("POST", server + "/v1/tts", json={"text": LONG}, timeout=30) as r:
        pieces = r.iter_raw()  # (held: a dropped iterator closes the response)
        next(pieces)
        assert in_flight(server) == 1
        assert in_flight(server) == 1
    wait_for(lambda: in_flight(server) == 0 and health(server)["sessions"] == 0,
             "the engine utterance outlived its HTTP client")


def _tiny_buffer_socket(url: str) -> socket.socket:
    """A connected TCP socket to ``url``'s server that holds almost nothing unread."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    return sock


@pytest.mark.parametrize(("path", "messages"), [
    ("/v1/stream", [{"type": "config", "sample_rate": 48000}, {"type": "speak", "text": LONG}]),  # 48 kHz: fills sooner
    ("/v1/text-to-speech/default/multi-stream-input?output_format=pcm_48000",
     [{"text": LONG, "context_id": "c", "flush": True}]),  # the ElevenLabs-compatible socket
])
async def test_a_websocket_client_that_stops_reading_is_closed_with_the_reason(server: str, path: str,
                                                                               messages: list[dict]) -> None:
    sock = _tiny_buffer_socket(server)
    async with connect(server.replace("http", "ws") + path, sock=sock, max_queue=1) as ws:
        for message in messages:
            await ws.send(json.dumps(message))
        await asyncio.to_thread(wait_for, lambda: health(server)["sessions"] == 0 and in_flight(server) == 0,
                                "a WebSocket that reads nothing kept its session", SOCKET_FILLED_S + STALL_S)
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                await ws.recv()  # what was buffered, then the close
    assert closed.value.rcvd is not None
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (4408, f"not reading: no audio taken for {STALL_S} s")


def test_an_http_client_that_stops_reading_is_dropped(server: str) -> None:
    sock = _tiny_buffer_socket(server)
    body = json.dumps({"text": LONG, "format": "pcm", "sample_rate": 48000}).encode()
    sock.sendall(b"POST /v1/tts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    wait_for(lambda: health(server)["sessions"] == 0 and in_flight(server) == 0,
             "an HTTP client that reads nothing kept its stream", SOCKET_FILLED_S + STALL_S)
    received = bytearray()
    while piece := sock.recv(65536):
        received += piece
    sock.close()
    assert received.startswith(b"HTTP/1.1 200")
    assert not received.endswith(b"0\r\n\r\n"), "a stream cut short ended like a complete one"


def _killed_mid_utterance(url: str) -> None:
    """Kill the engine worker once the utterance under way has sent audio."""
    os.kill(health(url)["worker"]["pid"], signal.SIGKILL)


def test_an_http_stream_whose_worker_dies_mid_way_is_aborted(tmp_path) -> None:
    wyoming_port = free_port()
    with running_server("--wyoming-port", str(wyoming_port), voices_dir=tmp_path) as url:
        for path, body in (("/v1/tts", {"text": LONG}), ("/v1/audio/speech", {"model": "tts-1", "input": LONG})):
            wait_for(lambda: httpx.get(url + "/health").status_code == 200, "the worker did not come back", 60)
            with httpx.stream("POST", url + path, json=body, timeout=30) as r:
                assert r.status_code == 200
                stream = r.iter_raw()
                next(stream)
                _killed_mid_utterance(url)
                with pytest.raises(httpx.RemoteProtocolError):
                    for _ in stream:
                        pass
        # OpenAI's SSE stream ends with an error event instead, never with its "done"
        wait_for(lambda: httpx.get(url + "/health").status_code == 200, "the worker did not come back", 60)
        body = {"model": "gpt-4o-mini-tts", "input": LONG, "response_format": "pcm", "stream_format": "sse"}
        with httpx.stream("POST", url + "/v1/audio/speech", json=body, timeout=30) as r:
            lines = r.iter_lines()
            assert json.loads(next(line for line in lines if line)[6:])["type"] == "speech.audio.delta"
            _killed_mid_utterance(url)
            events = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
        assert events[-1]["type"] == "error" and events[-1]["error"]["code"] == "engine_unavailable"
        assert {e["type"] for e in events[:-1]} <= {"speech.audio.delta"}
        # a Wyoming synthesis: an error event, then the connection closes, never an audio-stop
        wait_for(lambda: httpx.get(url + "/health").status_code == 200, "the worker did not come back", 60)
        assert asyncio.run(_wyoming_cut_short(url, wyoming_port)) == ["audio-start", "error"]


async def _wyoming_cut_short(url: str, port: int) -> list[str]:
    """The events of a long Wyoming synthesis whose worker is killed at its first audio, until the server closes."""
    from gateway.wyoming.wire import Event, EventReader, encode

    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(encode(Event("synthesize", {"text": LONG})))
    kinds, events = [], EventReader()
    async with asyncio.timeout(30):  # a bound on a hang, not a speed
        while data := await reader.read(65536):
            for event in events.feed(data):
                if event.type == "audio-chunk" and "audio-chunk" not in kinds:
                    await asyncio.to_thread(_killed_mid_utterance, url)
                if not kinds or kinds[-1] != event.type:
                    kinds.append(event.type)
    writer.close()
    return [kind for kind in kinds if kind != "audio-chunk"]


async def test_a_websocket_whose_worker_dies_mid_way_gets_an_error_event(tmp_path) -> None:
    with running_server(voices_dir=tmp_path) as url:
        async with connect(url.replace("http", "ws") + "/v1/stream") as ws:
            assert json.loads(await ws.recv())["type"] == "ready"
            await ws.send(json.dumps({"type": "speak", "text": LONG}))
            while not isinstance(await ws.recv(), bytes):
                pass
            await asyncio.to_thread(_killed_mid_utterance, url)
            while isinstance(frame := await asyncio.wait_for(ws.recv(), 30), bytes) or \
                    json.loads(frame)["type"] == "chunk":
                pass
            event = json.loads(frame)
            assert event["type"] == "error" and event["code"] == "engine_unavailable" and event["utterance"]
            # The socket outlives its worker: once a new one is up, the same session speaks again.
            await asyncio.to_thread(wait_for, lambda: health(url)["status"] == "ok", "no new worker", 60)
            await ws.send(json.dumps({"type": "speak", "text": "Back again."}))
            while not isinstance(frame := await asyncio.wait_for(ws.recv(), 30), bytes):
                assert json.loads(frame)["type"] != "error", frame


async def test_a_webrtc_session_whose_worker_dies_mid_way_gets_an_error_event_and_goes_on(tmp_path) -> None:
    with running_server(voices_dir=tmp_path) as url:
        listener = Listener.create()
        try:
            async with httpx.AsyncClient() as http:
                reply = await http.post(url + "/v1/webrtc/offer", json={"sdp": await listener.offer(), "type": "offer"})
            await listener.accept(reply.json()["sdp"])
            await listener.wait_for(lambda: listener.channel.readyState == "open" and listener.events, 15)
            listener.channel.send(json.dumps({"type": "speak", "text": LONG}))
            await listener.wait_for(lambda: listener.loud(), 30)
            await asyncio.to_thread(_killed_mid_utterance, url)
            await listener.wait_for(lambda: any(e["type"] == "error" for e in listener.events), 30)
            error = next(e for e in listener.events if e["type"] == "error")
            assert error["code"] == "engine_unavailable" and error["utterance"]
            assert not any(e["type"] == "done" for e in listener.events)  # a cut turn never looks complete
            await asyncio.to_thread(wait_for, lambda: health(url)["status"] == "ok", "no new worker", 60)
            listener.channel.send(json.dumps({"type": "speak", "text": "Back again."}))
            await listener.wait_for(lambda: any(e["type"] == "done" for e in listener.events), 30)
            assert listener.channel.readyState == "open" and health(url)["sessions"] == 1
        finally:
            await listener.close()


def test_a_chunked_upload_over_the_limit_is_refused_while_it_streams(server: str) -> None:
    host, port = server.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.sendall(b"POST /v1/voices HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                 b"Content-Type: multipart/form-data; boundary=b\r\n\r\n")
    piece = b"x" * 256 * 1024
    sent = 0

    def send_forever() -> None:  # 200 MB, unless the server stops taking it
        nonlocal sent
        with contextlib.suppress(OSError):
            while sent < 200 * 1024 * 1024:
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                sent += len(piece)

    sender = threading.Thread(target=send_forever, daemon=True)
    sender.start()
    reply = bytearray()
    while b'"too_large"' not in reply and (more := sock.recv(65536)):
        reply += more
    assert reply.startswith(b"HTTP/1.1 413") and b'"too_large"' in reply
    sock.close()
    sender.join(30)
    assert sent < 50 * 1024 * 1024  # the server stopped reading at the 10 MB limit (sockets hold a few MB)


def test_keys_never_reach_the_logs_and_an_open_server_says_so_loudly(capfd: pytest.CaptureFixture[str]) -> None:
    with running_server("--host", "0.0.0.0") as url:  # every address, no key
        pass
    assert "SERVING ON 0.0.0.0 WITH NO API KEY" in capfd.readouterr().err
    with running_server("--host", "0.0.0.0", "--api-key", "s3cret-key") as url:
        assert httpx.get(url + "/v1/voices?api_key=s3cret-key").status_code == 200

        async def websocket() -> None:
            async with connect(url.replace("http", "ws") + "/v1/stream?api_key=s3cret-key") as ws:
                assert json.loads(await ws.recv())["type"] == "ready"

        asyncio.run(websocket())
    logged = capfd.readouterr()
    assert "/v1/voices?api_key=[redacted]" in logged.out + logged.err
    assert "s3cret-key" not in logged.out + logged.err and "WITH NO API KEY" not in logged.err
