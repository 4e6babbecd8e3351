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
from tests.cli_run import serve_until, stop
from tests.server import running_server

LONG = " ".join(["The quick brown fox jumps over the lazy dog, and then it runs far away across the field."] * 20)
STALL_S = 1
REQUEST_S = 3  # the server's --request-timeout
# The sockets take ~3 MB before a send to a client that reads nothing blocks (~30 s of audio at 96 kB/s): a bound on
# a hang, generous for a loaded box (seen: ~10 s).
SOCKET_FILLED_S = 120


@pytest.fixture(scope="module")
def wyoming_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, wyoming_port: int):
    # --failover-wait 0: an utterance whose worker dies fails, as it does with failover on once no worker takes the
    # rest in time (tests/test_failover.py has the moves): these tests are how each transport ends such an utterance
    with running_server("--stall-timeout", str(STALL_S), "--wyoming-port", str(wyoming_port), "--failover-wait", "0",
                        "--request-timeout", str(REQUEST_S), voices_dir=tmp_path_factory.mktemp("voices")) as url:
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


def _tiny_buffer_socket(url: str, port: int | None = None) -> socket.socket:
    """A connected TCP socket to ``url``'s server (on ``port`` if given) that holds almost nothing unread."""
    host, url_port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, port or int(url_port)))
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


def _long_tts_request(server: str) -> socket.socket:
    """A tiny-buffer socket that has asked ``/v1/tts`` for a long text at 48 kHz (and read nothing)."""
    sock = _tiny_buffer_socket(server)
    body = json.dumps({"text": LONG, "format": "pcm", "sample_rate": 48000}).encode()
    sock.sendall(b"POST /v1/tts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    return sock


def _tcp_state(sock: socket.socket) -> int:
    """The kernel's state of ``sock``'s connection (struct tcp_info's first byte: 1 established, 7 closed)."""
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0]


def _assert_cut_off(server: str, sock: socket.socket, counted: bool = True) -> None:
    """Once the session of ``sock``'s client (which reads nothing) is gone, its connection is still open, with audio
    on its way, and then the server resets it (gateway/host/protocols.py: 10 s after the close), and no longer counts
    it in /health's ``connections``. ``counted=False``: the server closed its side at once (all it had sent was in
    the kernel's send queue, none in its own buffer: gateway/playout.py), the kernel's socket kept until the reset,
    no longer counted from the close. (Counted against the one asking alone, waited for: each /health before it asked
    on a connection of its own, which the server may not yet have seen closed; one left counted failed a CI run.)"""
    wait_for(lambda: health(server)["sessions"] == 0, "a client that reads nothing kept its session",
             SOCKET_FILLED_S + STALL_S)
    assert _tcp_state(sock) == 1
    if counted:
        assert health(server)["connections"] >= 2  # that one, and the one asking
    else:
        wait_for(lambda: health(server)["connections"] == 1, "a connection the server closed is still counted", 5)
        assert _tcp_state(sock) == 1  # not yet reset: the kernel holds it, the server no longer counts it
    wait_for(lambda: _tcp_state(sock) == 7, "the never-reading client's connection was not cut off", 30)
    wait_for(lambda: health(server)["connections"] == 1, "the cut-off connection is still counted", 5)


async def test_a_websocket_client_that_never_reads_again_is_cut_off(server: str) -> None:
    """The 4408 close cannot get through to a client that reads nothing: its connection is reset, not held open with
    its buffered audio for as long as the client stays connected."""
    sock = _tiny_buffer_socket(server)
    async with connect(server.replace("http", "ws") + "/v1/stream", sock=sock, max_queue=1, ping_interval=None) as ws:
        await ws.send(json.dumps({"type": "config", "sample_rate": 48000}))
        await ws.send(json.dumps({"type": "speak", "text": LONG}))
        await asyncio.to_thread(_assert_cut_off, server, sock)


def test_an_http_client_that_never_reads_again_is_cut_off(server: str) -> None:
    sock = _long_tts_request(server)
    _assert_cut_off(server, sock, counted=False)  # the engine held to what it has taken: nothing in the transport
    sock.close()


def test_a_wyoming_client_that_never_reads_again_is_cut_off(server: str, wyoming_port: int) -> None:
    """Its synthesis ends at ``--idle-timeout`` (nothing could be written), and its connection is reset. Paced on
    what its client has taken (gateway/wyoming/), the server holds nothing of its own for it: closed at once."""
    from gateway.wyoming.wire import Event, encode

    sock = _tiny_buffer_socket(server, wyoming_port)
    sock.sendall(encode(Event("synthesize", {"text": LONG})))
    _assert_cut_off(server, sock, counted=False)
    sock.close()


def _reply(sock: socket.socket) -> bytes:
    """Everything the server sends on ``sock`` until it closes the connection."""
    sock.settimeout(REQUEST_S + 30)  # a bound on a hang
    reply = bytearray()
    while piece := sock.recv(65536):
        reply += piece
    return bytes(reply)


def test_a_request_that_does_not_arrive_whole_in_time_gets_a_408_and_is_closed(server: str) -> None:
    """Slow clients (slowloris): one that sends nothing, half a head, a head and half its body, or half its second
    request on a kept-alive connection, each gets a 408 with the JSON error within ``--request-timeout`` and its
    connection closed; a request whose body comes a second after its head is answered, and the server goes on."""
    host, port = server.removeprefix("http://").split(":")
    silent, half_head, half_body, second, slow = (socket.create_connection((host, int(port))) for _ in range(5))
    half_head.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    body = json.dumps({"text": "Hello there.", "format": "pcm"}).encode()
    head = b"POST /v1/tts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    half_body.sendall(head % len(body) + body[:5])
    slow.sendall(head % len(body) + body[:5])
    second.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    first = second.makefile("rb")
    assert first.readline().startswith(b"HTTP/1.1 200 ")
    headers = list(iter(first.readline, b"\r\n"))
    length = next(int(line.split(b":")[1]) for line in headers if line.lower().startswith(b"content-length:"))
    assert json.loads(first.read(length))["status"] == "ok"
    second.sendall(b"GET /health HTTP/1.1\r\n")
    time.sleep(1)
    slow.sendall(body[5:])
    for sock in (silent, half_head, half_body, second):
        reply = _reply(sock)
        sock.close()
        assert reply.startswith(b"HTTP/1.1 408 "), reply[:100]
        error = json.loads(reply.partition(b"\r\n\r\n")[2])["error"]
        assert error == {"code": "request_timeout", "message": f"the request did not arrive whole within {REQUEST_S} s"}
    answered = _reply(slow)  # the connection closes at uvicorn's keep-alive timeout once the speech is done
    slow.close()
    assert answered.startswith(b"HTTP/1.1 200 ") and len(answered) > 10_000
    assert health(server)["sessions"] == 0 and health(server)["status"] == "ok"


async def test_a_websocket_outlives_the_request_timeout(server: str) -> None:
    """The deadline is for the request that opens it: a socket open longer still speaks."""
    async with connect(server.replace("http", "ws") + "/v1/stream") as ws:
        assert json.loads(await ws.recv())["type"] == "ready"
        await asyncio.sleep(REQUEST_S + 1)
        await ws.send(json.dumps({"type": "speak", "text": "Still here."}))
        while not isinstance(message := await ws.recv(), str) or json.loads(message)["type"] != "done":
            pass


def test_an_http_client_that_stops_reading_is_dropped(server: str) -> None:
    sock = _long_tts_request(server)
    wait_for(lambda: health(server)["sessions"] == 0 and in_flight(server) == 0,
             "an HTTP client that reads nothing kept its stream", SOCKET_FILLED_S + STALL_S)
    received = bytearray()
    while piece := sock.recv(65536):
        received += piece
    sock.close()
    assert received.startswith(b"HTTP/1.1 200")
    assert not received.endswith(b"0\r\n\r\n"), "a stream cut short ended like a complete one"


def _kill_worker(url: str) -> None:
    os.kill(health(url)["worker"]["pid"], signal.SIGKILL)


async def test_one_worker_death_cuts_every_stream_short_and_the_sessions_go_on(server: str,
                                                                               wyoming_port: int) -> None:
    """Six callers, one of each kind, each mid-way through a long utterance (each has had its first audio) when the
    worker is killed: no stream looks complete. HTTP bodies (our /v1/tts, OpenAI's raw /v1/audio/speech) are
    aborted; OpenAI's SSE stream ends with an error event, never its "done"; a Wyoming synthesis gets an error event
    and a closed connection, never an audio-stop; a WebSocket and a WebRTC session get an error event (never a
    "done"), outlive their worker and, once a new one is up, speak again on the same session."""
    ws_url = server.replace("http", "ws")
    listener = Listener.create()
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(listener.close)
        http = await stack.enter_async_context(httpx.AsyncClient(timeout=30))
        ws = await stack.enter_async_context(connect(ws_url + "/v1/stream"))
        assert json.loads(await ws.recv())["type"] == "ready"
        reply = await http.post(server + "/v1/webrtc/offer", json={"sdp": await listener.offer(), "type": "offer"})
        await listener.accept(reply.json()["sdp"])
        await listener.wait_for(lambda: listener.channel.readyState == "open" and listener.events, 15)

        heard = {name: asyncio.Event() for name in ("tts", "openai", "sse", "wyoming", "websocket", "webrtc")}
        killed = asyncio.Event()

        async def http_body(name: str, path: str, body: dict) -> None:  # read to the end: an abort, not an end
            async with http.stream("POST", server + path, json=body) as r:
                assert r.status_code == 200
                with pytest.raises(httpx.RemoteProtocolError):
                    async for _ in r.aiter_raw():
                        heard[name].set()
                assert killed.is_set()

        async def sse() -> list[dict]:
            body = {"model": "gpt-4o-mini-tts", "input": LONG, "response_format": "pcm", "stream_format": "sse"}
            events = []
            async with http.stream("POST", server + "/v1/audio/speech", json=body) as r:
                async for line in r.aiter_lines():
                    if line.startswith("data: "):
                        events.append(json.loads(line[6:]))
                        heard["sse"].set()
            return events

        async def wyoming() -> list[str]:
            """The events until the server closes (runs of audio-chunk as one)."""
            from gateway.wyoming.wire import Event, EventReader, encode

            reader, writer = await asyncio.open_connection("127.0.0.1", wyoming_port)
            writer.write(encode(Event("synthesize", {"text": LONG})))
            kinds, events = [], EventReader()
            while data := await reader.read(65536):
                for event in events.feed(data):
                    if event.type == "audio-chunk":
                        heard["wyoming"].set()
                    if not kinds or kinds[-1] != event.type:
                        kinds.append(event.type)
            writer.close()
            return kinds

        async def websocket() -> dict:
            await ws.send(json.dumps({"type": "speak", "text": LONG}))
            while isinstance(frame := await ws.recv(), bytes) or json.loads(frame)["type"] == "chunk":
                if isinstance(frame, bytes):
                    heard["websocket"].set()
            return json.loads(frame)

        async def webrtc() -> None:
            listener.channel.send(json.dumps({"type": "speak", "text": LONG}))
            await listener.wait_for(lambda: listener.loud(), 30)
            heard["webrtc"].set()
            await listener.wait_for(lambda: any(e["type"] == "error" for e in listener.events), 30)

        async with asyncio.timeout(60):  # a bound on a hang, not a speed
            callers = [asyncio.create_task(c) for c in (
                http_body("tts", "/v1/tts", {"text": LONG}),
                http_body("openai", "/v1/audio/speech", {"model": "tts-1", "input": LONG}),
                sse(), wyoming(), websocket(), webrtc())]
            waiting = asyncio.gather(*(event.wait() for event in heard.values()))
            done, _ = await asyncio.wait([waiting, *callers], return_when=asyncio.FIRST_COMPLETED)
            assert waiting in done, [c.result() for c in callers if c.done()]  # none ended before the kill
            killed.set()
            await asyncio.to_thread(_kill_worker, server)
            _, _, sse_events, wyoming_kinds, ws_error, _ = await asyncio.gather(*callers)

        assert sse_events[-1]["type"] == "error" and sse_events[-1]["error"]["code"] == "engine_unavailable"
        assert {e["type"] for e in sse_events[:-1]} == {"speech.audio.delta"}
        assert [kind for kind in wyoming_kinds if kind != "audio-chunk"] == ["audio-start", "error"]
        assert ws_error["type"] == "error" and ws_error["code"] == "engine_unavailable" and ws_error["utterance"]
        rtc_error = next(e for e in listener.events if e["type"] == "error")
        assert rtc_error["code"] == "engine_unavailable" and rtc_error["utterance"]
        assert not any(e["type"] == "done" for e in listener.events)  # a cut turn never looks complete

        # Both sockets outlive their worker: once a new one is up, the same sessions speak again.
        await asyncio.to_thread(wait_for, lambda: health(server)["status"] == "ok", "no new worker", 60)
        await ws.send(json.dumps({"type": "speak", "text": "Back again."}))
        while not isinstance(frame := await asyncio.wait_for(ws.recv(), 30), bytes):
            assert json.loads(frame)["type"] != "error", frame
        listener.channel.send(json.dumps({"type": "speak", "text": "Back again."}))
        await listener.wait_for(lambda: any(e["type"] == "done" for e in listener.events), 30)
        assert listener.channel.readyState == "open"
        await ws.close()
        await asyncio.to_thread(wait_for, lambda: health(server)["sessions"] == 1, "the WebRTC session was dropped")


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


def test_an_open_server_says_so_loudly(tmp_path) -> None:
    """Every address, no key: the warning is logged while the gateway starts, before it says it has (uvicorn's
    "Application startup complete", after the app's start-up), whether or not its engine is ready yet."""
    proc, logged = serve_until(["--host", "0.0.0.0", "--port", str(free_port()), "--engine", "espeak",
                                "--voices-dir", str(tmp_path)], "Application startup complete", bound_s=90)
    stop(proc)
    assert any("SERVING ON 0.0.0.0 WITH NO API KEY" in line for line in logged), "".join(logged)


def test_keys_never_reach_the_logs_and_a_keyed_server_gives_no_warning(capfd: pytest.CaptureFixture[str]) -> None:
    with running_server("--host", "0.0.0.0", "--api-key", "s3cret-key") as url:
        assert httpx.get(url + "/v1/voices?api_key=s3cret-key").status_code == 200

        async def websocket() -> None:
            async with connect(url.replace("http", "ws") + "/v1/stream?api_key=s3cret-key") as ws:
                assert json.loads(await ws.recv())["type"] == "ready"

        asyncio.run(websocket())
    logged = capfd.readouterr()
    assert "/v1/voices?api_key=[redacted]" in logged.out + logged.err
    assert "Application startup complete" in logged.err  # (the warning would have come before it)
    assert "espeak on cpu speaks; API keys on" in logged.err  # the start's ready line
    assert "s3cret-key" not in logged.out + logged.err and "WITH NO API KEY" not in logged.err
