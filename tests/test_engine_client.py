"""gateway/engine_link/client.py against a scripted engine worker: a real WebSocket server on 127.0.0.1 (and on a
Unix socket) that greets, records every frame the client sends and answers what each test tells it to.

tests/test_worker.py drives the client against the real worker; this file covers what a real worker rarely does:
another protocol version, a dropped connection, a malformed frame, late chunks, requests answered out of order.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from pathlib import Path
from typing import AsyncIterator

import pytest
from websockets.asyncio.server import Server, ServerConnection, serve, unix_serve

from engine import protocol
from engine.protocol import (AddVoice, Cancel, Chunk, ChunkHeader, DeleteVoice, Done, End, EngineReady, Error, Event,
                             Flush, ListVoices, Playout, Request, Result, Start, Text)
from gateway.engine_link.client import EngineClient, EngineRequestError, EngineUnavailable

READY = EngineReady(engine="scripted", device="cpu", dtype="float32", weights="none", watermark=True)


class ScriptedWorker:
    """One scripted worker: ``frames`` holds what the client sent, read as the real worker reads it."""

    def __init__(self, greeting: EngineReady) -> None:
        self.greeting = greeting
        self.frames: asyncio.Queue[Request] = asyncio.Queue()
        self.connections: list[ServerConnection] = []

    async def handle(self, ws: ServerConnection) -> None:
        assert ws.request is not None and ws.request.path == protocol.ENGINE_PATH
        self.connections.append(ws)
        await ws.send(protocol.encode(self.greeting))
        async for frame in ws:
            self.frames.put_nowait(protocol.decode_request(frame))

    async def next(self) -> Request:
        return await asyncio.wait_for(self.frames.get(), 5)

    async def send(self, message: Event) -> None:
        await self.connections[-1].send(protocol.encode(message))

    async def chunk(self, uid: str, seq: int, pcm: bytes) -> None:
        header = ChunkHeader(id=uid, seq=seq, text=f"chunk {seq}", offset=seq * 0.5, duration=len(pcm) / 2 / 24000,
                             gen_time=0.05)
        await self.send(Chunk(header, pcm))


@contextlib.asynccontextmanager
async def worker(greeting: EngineReady = READY, unix: Path | None = None) -> AsyncIterator[tuple[ScriptedWorker,
                                                                                                     EngineClient]]:
    """A scripted worker and a client started against it; the test has 10 s."""
    scripted = ScriptedWorker(greeting)
    server: Server
    if unix is not None:
        server = await unix_serve(scripted.handle, str(unix))
        url = f"unix:{unix}"
    else:
        server = await serve(scripted.handle, "127.0.0.1", 0)
        url = "ws://127.0.0.1:%d" % server.sockets[0].getsockname()[1]
    client = EngineClient(url)
    client.start_background()
    try:
        async with asyncio.timeout(10):
            yield scripted, client
    finally:
        await client.close()
        server.close()
        await server.wait_closed()


async def test_an_utterance_goes_out_as_requests_and_comes_back_as_chunks_then_done() -> None:
    async with worker() as (scripted, client):
        assert await client.wait_ready(5) and client.available and client.ready == READY
        utterance = await client.start("amy")
        await utterance.text("Hello there.")
        await utterance.flush()
        await utterance.playout(0.25)
        await utterance.end()
        uid = utterance.id
        assert [await scripted.next() for _ in range(5)] == [
            Start(uid, "amy"), Text(uid, "Hello there."), Flush(uid), Playout(uid, 0.25), End(uid)]
        assert client.in_flight == 1
        await scripted.chunk(uid, 0, b"\x01\x00" * 240)
        await scripted.chunk(uid, 1, b"\x02\x00" * 480)
        await scripted.send(Done(uid, chunks=2, audio=0.03, gen_time=0.1))
        events = [event async for event in utterance.events()]
    first, second, done = events
    assert isinstance(first, Chunk) and first.header.seq == 0 and first.pcm == b"\x01\x00" * 240
    assert isinstance(second, Chunk) and second.header.text == "chunk 1" and len(second.pcm) == 960
    assert done == Done(uid, chunks=2, audio=0.03, gen_time=0.1)
    assert utterance.finished and client.in_flight == 0


async def test_a_greeting_of_another_protocol_version_is_not_a_connection() -> None:
    async with worker(dataclasses.replace(READY, protocol=protocol.PROTOCOL_VERSION + 1)) as (scripted, client):
        assert not await client.wait_ready(0.5)
        assert not client.available and client.ready is None and scripted.connections  # it did answer
        with pytest.raises(EngineUnavailable):
            await client.start("default")


async def test_a_dropped_connection_fails_what_is_in_flight_and_the_client_comes_back() -> None:
    async with worker() as (scripted, client):
        assert await client.wait_ready(5)
        utterance = await client.start("default")
        await scripted.next()
        voices = asyncio.create_task(client.list_voices())
        assert isinstance(await scripted.next(), ListVoices)
        await scripted.connections[-1].close()
        with pytest.raises(EngineRequestError) as failed:
            [event async for event in utterance.events()]
        assert failed.value.code == "engine_unavailable" and utterance.finished
        with pytest.raises(EngineUnavailable):
            await voices
        assert client.in_flight == 0
        assert await client.wait_ready(5) and len(scripted.connections) == 2  # reconnected in the background
        again = await client.start("default")
        assert await scripted.next() == Start(again.id, "default")


async def test_a_malformed_frame_restarts_the_connection() -> None:
    async with worker() as (scripted, client):
        assert await client.wait_ready(5)
        utterance = await client.start("default")
        await scripted.next()
        await scripted.connections[-1].send(b"\x00\x00\x00\x09{}")  # a header length beyond the frame
        with pytest.raises(EngineRequestError) as failed:
            [event async for event in utterance.events()]
        assert failed.value.code == "engine_unavailable"
        async with asyncio.timeout(5):
            while len(scripted.connections) < 2 or not client.available:
                await asyncio.sleep(0.01)


async def test_requests_are_matched_by_req_whatever_order_the_answers_come_in() -> None:
    async with worker() as (scripted, client):
        assert await client.wait_ready(5)
        listing = asyncio.create_task(client.list_voices())
        adding = asyncio.create_task(client.add_voice("amy", b"RIFF...."))
        deleting = asyncio.create_task(client.delete_voice("bob"))
        by_type = {type(request): request for request in [await scripted.next() for _ in range(3)]}
        add = by_type[AddVoice]
        assert isinstance(add, AddVoice) and add.name == "amy" and add.audio == b"RIFF...."
        delete = by_type[DeleteVoice]
        assert isinstance(delete, DeleteVoice) and delete.name == "bob"
        await scripted.send(Error(req=delete.req, code="unknown_voice", message="no voice 'bob'"))
        await scripted.send(Result(add.req, voice={"name": "amy"}))
        await scripted.send(Result(by_type[ListVoices].req, voices=[{"name": "x"}]))
        assert await listing == [{"name": "x"}] and await adding == {"name": "amy"}
        with pytest.raises(EngineRequestError) as refused:
            await deleting
        assert refused.value.code == "unknown_voice" and str(refused.value) == "no voice 'bob'"


async def test_an_error_ends_only_its_own_utterance() -> None:
    async with worker() as (scripted, client):
        assert await client.wait_ready(5)
        failing, going_on = await client.start("nobody"), await client.start("default")
        await scripted.send(Error(id=failing.id, code="unknown_voice", message="no such voice"))
        await scripted.chunk(going_on.id, 0, b"\x00\x00" * 10)
        await scripted.send(Done(going_on.id, chunks=1, audio=0.0004, gen_time=0.05))
        with pytest.raises(EngineRequestError) as failed:
            [event async for event in failing.events()]
        assert failed.value.code == "unknown_voice"
        assert [type(event) for event in [e async for e in going_on.events()]] == [Chunk, Done]


async def test_cancel_tells_the_worker_and_late_chunks_are_dropped() -> None:
    async with worker() as (scripted, client):
        assert await client.wait_ready(5)
        utterance = await client.start("default")
        await utterance.cancel()
        await utterance.cancel()  # once is enough
        assert [await scripted.next() for _ in range(2)] == [Start(utterance.id, "default"), Cancel(utterance.id)]
        assert scripted.frames.empty() and utterance.finished and client.in_flight == 0
        await scripted.chunk(utterance.id, 0, b"\x00\x00" * 10)  # already in flight when the cancel arrived
        await scripted.send(Error(id="unknown", code="engine_error", message="whatever"))
        other = await client.start("default")  # the connection is still good
        assert await scripted.next() == Start(other.id, "default") and client.available


async def test_nothing_listening_is_engine_unavailable(tmp_path: Path) -> None:
    client = EngineClient(f"unix:{tmp_path / 'nobody.sock'}")
    client.start_background()
    try:
        assert not await client.wait_ready(0.3)
        with pytest.raises(EngineUnavailable):
            await client.start("default")
        with pytest.raises(EngineUnavailable):
            await client.list_voices()
    finally:
        await client.close()


async def test_a_worker_on_a_unix_socket(tmp_path: Path) -> None:
    async with worker(unix=tmp_path / "engine.sock") as (scripted, client):
        assert await client.wait_ready(5)
        utterance = await client.start("default")
        assert await scripted.next() == Start(utterance.id, "default")


async def test_text_it_cannot_encode_is_refused_and_the_connection_stays() -> None:
    async with worker() as (scripted, client):
        assert await client.wait_ready(5)
        utterance = await client.start("default")
        assert await scripted.next() == Start(utterance.id, "default")
        with pytest.raises(EngineRequestError) as refused:
            await utterance.text("hi \ud800")  # once: websockets failed to encode it and closed the connection
        assert refused.value.code == "bad_message"
        await utterance.text("hi")
        assert await scripted.next() == Text(utterance.id, "hi") and len(scripted.connections) == 1


@pytest.mark.parametrize("greeting", [
    protocol.encode(dataclasses.replace(READY, protocol=protocol.PROTOCOL_VERSION + 1)),  # another version
    b"\x00\x00\x00\x09{}",  # a malformed frame
])
async def test_a_misbehaving_worker_is_retried_with_back_off_and_every_socket_is_closed(greeting: str | bytes) -> None:
    opened, open_now = 0, 0

    async def misbehave(ws: ServerConnection) -> None:
        nonlocal opened, open_now
        opened, open_now = opened + 1, open_now + 1
        try:
            await ws.send(greeting)
            await ws.wait_closed()
        finally:
            open_now -= 1

    server = await serve(misbehave, "127.0.0.1", 0)
    client = EngineClient("ws://127.0.0.1:%d" % server.sockets[0].getsockname()[1])
    client.start_background()
    try:
        started = time.monotonic()
        while opened < 5:  # once ~1,200 connections a second, none of them closed
            assert time.monotonic() < started + 30, opened
            await asyncio.sleep(0.01)
        # backed off: 4 waits of at least 0.05 + 0.1 + 0.2 + 0.4 s between the 1st and the 5th (RETRY_FIRST_S 0.1,
        # doubling, each drawn from its upper half); a busy machine only makes them longer
        assert time.monotonic() - started >= 0.75 and open_now <= 1, (time.monotonic() - started, opened, open_now)
        assert not client.available and client.retry_in is not None and client.retry_in > 0.2
        assert "ProtocolError" in (client.last_error or "") and client.lost == 0
    finally:
        await client.close()
        server.close()
        await server.wait_closed()


async def test_why_it_could_not_connect_is_forgotten_once_it_connects(tmp_path: Path) -> None:
    """The embedded worker is not listening yet when the gateway first tries (FileNotFoundError): once connected,
    /health's ``last_error`` no longer shows it."""
    path = tmp_path / "later.sock"
    client = EngineClient(f"unix:{path}")
    client.start_background()
    scripted = ScriptedWorker(READY)
    try:
        async with asyncio.timeout(10):
            while client.last_error is None:
                await asyncio.sleep(0.01)
            assert "FileNotFoundError" in client.last_error and not client.available
            server = await unix_serve(scripted.handle, str(path))
            assert await client.wait_ready(5) and client.last_error is None
            server.close()  # and a connection that ends says so again
            await server.wait_closed()
            while client.last_error is None:
                await asyncio.sleep(0.01)
            assert not client.available and client.lost == 1
    finally:
        await client.close()
