"""HTTP speech streams of a key removed from the keys file mid-way, on a real gateway (the simulated engine at 3x real
time: a long utterance takes ~30 s to make) with real httpx streaming clients: the key removed by an atomic rename,
each of its streams ends in its framing's way (ndjson: an error line; OpenAI's SSE: its error event; raw audio: the
body aborted), its utterances are cancelled in the engine and counted as ``revoked`` refusals, and another tenant's
stream goes on to its end.

The waits here wait on what must happen (a stream's end, the server's count going to 0), each under a guard that
fails the test where the revocation did nothing: ``CUT_OFF_GUARD_S``, well under both the time a long utterance
takes to make and the server's stall timeout, the two ways such a stream would end without it. (They once asserted
2 s from the rename: the watcher's 0.5 s poll, the reload and the 0.5 s grace on a quiet machine, a bound on the
machine's speed that a loaded one can miss.)"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit

import h11
import httpx
import pytest

from cbf_tools.peers.local_server import free_port, stop, wait_healthy
from gateway.http.stream import Revocation, Revoked, until_revoked

ROOT = Path(__file__).resolve().parent.parent
KEYS = {"doomed": "doomed-secret-key-0123456789", "other": "other-secret-key-0123456789"}
LONG = " ".join(["The quick brown fox jumps over the lazy dog, and then it runs far away across the field."] * 20)
SHORT = "The quick brown fox jumps over the lazy dog, and then it runs far away across the field."
STALL_TIMEOUT_S = 60  # the server's --stall-timeout: a client that reads nothing is aborted then, revoked or not
CUT_OFF_GUARD_S = 15  # a revoked stream not ended by then was not cut off by its revocation (see the docstring)


def keys_toml(names: list[str]) -> str:
    return "".join(f'[keys.{name}]\nkey = "{KEYS[name]}"\n\n' for name in names)


class Server:
    def __init__(self, url: str, keys_file: Path) -> None:
        self.url, self.keys_file = url, keys_file

    def replace_keys(self, names: list[str]) -> None:
        """The file written whole beside it, then renamed into place (as docs/keys-and-tenants.md says)."""
        new = self.keys_file.with_suffix(".new")
        new.write_text(keys_toml(names))
        os.replace(new, self.keys_file)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("revoked")
    keys_file, log = folder / "keys.toml", folder / "server.log"
    keys_file.write_text(keys_toml(["doomed", "other"]))
    port = free_port()
    argv = [sys.executable, "-m", "gateway.cli", "serve", "--host", "127.0.0.1", "--port", str(port), "--engine",
            "simulated", "--sim-rtf", "3", "--stall-timeout", str(STALL_TIMEOUT_S), "--keys-file", str(keys_file),
            "--voices-dir", str(folder / "voices")]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(proc, url, 90, "the server")
            yield Server(url, keys_file)
        finally:
            stop(proc)


def bearer(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[name]}"}


class Read:
    """One stream as its client read it: its lines (or raw bytes), how it ended and when."""

    def __init__(self) -> None:
        self.heard = asyncio.Event()
        self.lines: list[dict[str, Any]] = []
        self.audio_bytes = 0
        self.error: Exception | None = None
        self.ended_at = 0.0


async def read_lines(http: httpx.AsyncClient, path: str, body: dict, name: str, read: Read, prefix: str = "") -> None:
    async with http.stream("POST", path, json=body, headers=bearer(name)) as reply:
        assert reply.status_code == 200
        async for line in reply.aiter_lines():
            if line.startswith(prefix) and line[len(prefix):].strip():
                read.lines.append(json.loads(line[len(prefix):]))
                read.heard.set()
    read.ended_at = time.monotonic()


async def read_raw(http: httpx.AsyncClient, body: dict, name: str, read: Read) -> None:
    try:
        async with http.stream("POST", "/v1/tts", json=body, headers=bearer(name)) as reply:
            assert reply.status_code == 200
            async for piece in reply.aiter_raw():
                read.audio_bytes += len(piece)
                read.heard.set()
    except httpx.RemoteProtocolError as exc:
        read.error = exc
    read.ended_at = time.monotonic()


async def test_until_revoked_passes_items_then_stops_a_source_that_waits_and_keeps_its_failures() -> None:
    closed = asyncio.Event()

    async def source():
        try:
            yield 1
            yield 2
            await asyncio.Event().wait()  # the engine's next chunk, never coming
        finally:
            closed.set()

    revocation, got = Revocation("acme"), []
    with pytest.raises(Revoked):
        async for item in until_revoked(source(), revocation):
            got.append(item)
            if item == 2:
                asyncio.get_running_loop().call_later(0.05, revocation.revoke)
    assert got == [1, 2] and closed.is_set()

    async def failing():
        yield 1
        raise ValueError("failed mid-way")

    with pytest.raises(ValueError):
        async for _ in until_revoked(failing(), Revocation(None)):
            pass
    assert [item async for item in until_revoked(source_of([3, 4]), Revocation(None))] == [3, 4]


async def source_of(items: list[int]):
    for item in items:
        yield item


async def health(http: httpx.AsyncClient) -> dict:
    return (await http.get("/health")).json()


async def health_until(http: httpx.AsyncClient, done: Any, guard: float, what: str) -> dict:
    """The first /health body for which ``done(body)``, asked every 0.1 s; fails with ``what`` (and the last body)
    where none is within ``guard`` seconds: a bound on a behaviour missing, not on the machine's speed."""
    deadline = time.monotonic() + guard
    while not done(body := await health(http)):
        assert time.monotonic() < deadline, f"{what}: {body}"
        await asyncio.sleep(0.1)
    return body


async def test_a_removed_keys_http_streams_end_with_their_reason_and_another_tenants_goes_on(
        server: Server) -> None:
    timed, sse, raw, other = Read(), Read(), Read(), Read()
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        tasks = [
            asyncio.create_task(read_lines(http, "/v1/tts", {"text": LONG, "format": "ndjson"}, "doomed", timed)),
            asyncio.create_task(read_lines(http, "/v1/audio/speech", {"input": LONG, "response_format": "pcm",
                                                                      "stream_format": "sse"}, "doomed", sse,
                                           prefix="data: ")),
            asyncio.create_task(read_raw(http, {"text": LONG, "format": "pcm"}, "doomed", raw)),
        ]
        for read in (timed, sse, raw):
            await asyncio.wait_for(read.heard.wait(), 30)
        assert (await health(http))["engines"][0]["in_flight"] == 3
        others = asyncio.create_task(read_raw(http, {"text": SHORT * 2, "format": "pcm"}, "other", other))
        await asyncio.wait_for(other.heard.wait(), 30)
        server.replace_keys(["other"])
        # each stream ends once the server sees the file changed: waited for, the guard only against their going on
        await asyncio.wait_for(asyncio.gather(*tasks), CUT_OFF_GUARD_S)
        assert timed.lines[-1] == {"type": "error", "code": "unauthorized", "message": "the API key was revoked"}
        assert all(line["type"] == "chunk" for line in timed.lines[:-1])
        assert sse.lines[-1] == {"type": "error", "error": {"code": "unauthorized",
                                                            "message": "the API key was revoked"}}
        assert all(line["type"] == "speech.audio.delta" for line in sse.lines[:-1])
        assert isinstance(raw.error, httpx.RemoteProtocolError)  # aborted: never a clean end

        heard_at_removal = other.audio_bytes
        await asyncio.wait_for(others, 60)
        assert other.error is None and other.audio_bytes > heard_at_removal  # went on, and ended cleanly
        # the revoked utterances were cancelled in the engine (left running, they would be for many seconds more)
        await health_until(http, lambda now: not (now["engines"][0]["in_flight"] or now["sessions"]), CUT_OFF_GUARD_S,
                           "the revoked utterances still run")
        assert (await http.post("/v1/tts", json={"text": "Hi."}, headers=bearer("doomed"))).status_code == 401
        metrics = (await http.get("/metrics", headers=bearer("other"))).text
    assert 'cbf_tenant_refusals_total{reason="revoked",tenant="doomed"} 3.0' in metrics


async def next_event(client: h11.Connection, sock: socket.socket) -> Any:
    """The client's next HTTP event, reading the socket as it needs."""
    while (event := client.next_event()) is h11.NEED_DATA:
        client.receive_data(await asyncio.get_running_loop().sock_recv(sock, 4096))
    return event


async def test_a_removed_keys_stream_whose_client_reads_nothing_is_aborted_before_the_stall_timeout(
        server: Server) -> None:
    """Its client (h11, httpx's HTTP/1.1, on a socket given a 4 KiB receive buffer and 536-byte segments before it
    connects, as a phone on a poor link has) takes the first audio, then nothing: within a few seconds the sockets
    are full (the server's ~170 KB send buffer and its transport's 64 KiB: under a second of 48 kHz audio made at 3x
    real time) and the server's send waits on the client; the stream is still aborted once the server sees
    the removal (after ``REVOKED_GRACE_S``), not at the stall timeout (``STALL_TIMEOUT_S``): waited for, under a
    guard well short of it."""
    server.replace_keys(["doomed", "other"])
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        await health_until(http, lambda now: now["keys"]["tenants"] == 2, CUT_OFF_GUARD_S, "the key was not restored")
        address = urlsplit(server.url)
        body = json.dumps({"text": LONG, "format": "pcm", "sample_rate": 48000}).encode()
        request = h11.Request(method="POST", target="/v1/tts", headers=[
            ("Host", address.netloc), ("Content-Type", "application/json"), ("Content-Length", str(len(body))),
            *bearer("doomed").items()])
        client, loop = h11.Connection(h11.CLIENT), asyncio.get_running_loop()
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)  # small segments: the server's send buffer
            # grows with them (Linux sizes it from the segment size), so ~170 KB, not megabytes
            sock.setblocking(False)
            await loop.sock_connect(sock, (address.hostname, address.port))
            await loop.sock_sendall(sock, client.send(request) + client.send(h11.Data(data=body))
                                    + client.send(h11.EndOfMessage()))
            reply = await asyncio.wait_for(next_event(client, sock), 30)
            assert isinstance(reply, h11.Response) and reply.status_code == 200
            assert isinstance(await asyncio.wait_for(next_event(client, sock), 30), h11.Data)
            await asyncio.sleep(5)
            assert (await health(http))["sessions"] == 1
            server.replace_keys(["other"])
            removed_at = time.monotonic()
            await health_until(http, lambda now: not now["sessions"], CUT_OFF_GUARD_S, "the stream was not aborted")

            async def read_to_the_end() -> None:
                while not isinstance(await next_event(client, sock), h11.EndOfMessage):
                    pass

            with pytest.raises(h11.RemoteProtocolError):  # what the sockets held, then no clean end: the connection
                # dropped with the stream, not at the stall timeout
                await asyncio.wait_for(read_to_the_end(), removed_at + CUT_OFF_GUARD_S - time.monotonic())
