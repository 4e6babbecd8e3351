"""The gateway's end of the engine protocol: one WebSocket to a worker, many utterances multiplexed on it.

If the connection drops (the worker died or restarts), every utterance in flight ends with an
``engine_unavailable`` error and the client reconnects in the background.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from dataclasses import dataclass
from typing import Any, AsyncIterator

from websockets.asyncio.client import ClientConnection, connect, unix_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from engine import protocol
from engine.protocol import ChunkHeader

log = logging.getLogger("chatterbox_fast.gateway")


class EngineUnavailable(Exception):
    code = "engine_unavailable"


class EngineRequestError(Exception):
    """The worker refused a request; ``code`` is the worker's stable error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Chunk:
    header: ChunkHeader
    pcm: bytes  # 24 kHz mono s16le


@dataclass(frozen=True)
class Done:
    message: dict[str, Any]


class RemoteUtterance:
    """A gateway-side handle on one utterance in the worker."""

    def __init__(self, client: "EngineClient", uid: str) -> None:
        self.id = uid
        self._client = client
        self._events: asyncio.Queue[Chunk | Done | EngineRequestError] = asyncio.Queue()
        self.finished = False

    async def text(self, text: str) -> None:
        await self._client._send({"type": "text", "id": self.id, "text": text})

    async def flush(self) -> None:
        await self._client._send({"type": "flush", "id": self.id})

    async def end(self) -> None:
        await self._client._send({"type": "end", "id": self.id})

    async def playout(self, played: float) -> None:
        await self._client._send({"type": "playout", "id": self.id, "played": played})

    async def cancel(self) -> None:
        if not self.finished:
            self.finished = True
            self._client._utterances.pop(self.id, None)
            try:
                await self._client._send({"type": "cancel", "id": self.id})
            except EngineUnavailable:
                pass

    async def events(self) -> AsyncIterator[Chunk | Done]:
        """Chunks in order, then one ``Done``; raises ``EngineRequestError`` on failure."""
        while True:
            event = await self._events.get()
            if isinstance(event, EngineRequestError):
                raise event
            yield event
            if isinstance(event, Done):
                return

    def _deliver(self, event: Chunk | Done | EngineRequestError) -> None:
        if isinstance(event, (Done, EngineRequestError)):
            self.finished = True
        self._events.put_nowait(event)


class EngineClient:
    """Connects to one engine worker at ``ws://host:port`` or ``unix:/path`` and keeps the connection up."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.ready: dict[str, Any] | None = None
        self._ws: ClientConnection | None = None
        self._utterances: dict[str, RemoteUtterance] = {}
        self._requests: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count()
        self._connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def available(self) -> bool:
        return self._ws is not None and self.ready is not None

    @property
    def in_flight(self) -> int:
        """Utterances started on this worker and not yet done, failed or cancelled."""
        return len(self._utterances)

    def start_background(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def wait_ready(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._connected.wait(), timeout)
            return True
        except TimeoutError:
            return False

    async def close(self) -> None:
        if self._task:
            self._task.cancel()
        if self._ws:
            await self._ws.close()

    async def _open(self) -> ClientConnection:
        kwargs: dict[str, Any] = {"max_size": 64 * 1024 * 1024, "ping_interval": 20, "ping_timeout": 60}
        if self.url.startswith("unix:"):
            return await unix_connect(self.url[5:], uri="ws://localhost" + protocol.ENGINE_PATH, **kwargs)
        return await connect(self.url.rstrip("/") + protocol.ENGINE_PATH, **kwargs)

    async def _run(self) -> None:
        delay = 0.1
        while True:
            try:
                ws = await self._open()
            except (OSError, InvalidHandshake, TimeoutError):
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            try:
                ready = protocol.decode_json(await ws.recv())
                if ready.get("type") != "ready" or ready.get("protocol") != protocol.PROTOCOL_VERSION:
                    raise protocol.ProtocolError(f"unexpected greeting from engine: {ready}")
                self._ws, self.ready, delay = ws, ready, 0.1
                self._connected.set()
                log.info("connected to engine %s at %s (%s, %s, weights: %s)", ready["engine"], self.url,
                         ready["device"], ready["dtype"], ready["weights"])
                async for frame in ws:
                    self._route(frame)
            except (ConnectionClosed, OSError, protocol.ProtocolError) as exc:
                log.warning("engine connection to %s lost: %s", self.url, exc)
            except Exception:  # a frame this gateway cannot understand: start the connection afresh
                log.exception("unexpected message from engine %s; reconnecting", self.url)
                await ws.close()
            finally:
                self._ws, self.ready = None, None
                self._connected.clear()
                self._fail_all()

    def _fail_all(self) -> None:
        error = EngineRequestError("engine_unavailable", "the engine worker went away")
        for utt in list(self._utterances.values()):
            utt._deliver(error)
        self._utterances.clear()
        for fut in self._requests.values():
            if not fut.done():
                fut.set_exception(EngineUnavailable("the engine worker went away"))
        self._requests.clear()

    def _route(self, frame: str | bytes) -> None:
        if isinstance(frame, bytes):
            header, pcm = protocol.decode_binary(frame)
            fields = {k: v for k, v in header.items() if k != "type"}
            if (utt := self._utterances.get(fields["id"])) is not None:
                utt._deliver(Chunk(ChunkHeader(**fields), pcm))
            return
        message = protocol.decode_json(frame)
        if "req" in message and (fut := self._requests.pop(message["req"], None)) is not None:
            if not fut.done():
                fut.set_result(message)
            return
        utt = self._utterances.get(message.get("id", ""))
        if utt is None:
            if message["type"] == "error":
                log.warning("engine error: %s", message)
            return
        if message["type"] == "done":
            self._utterances.pop(utt.id, None)
            utt._deliver(Done(message))
        elif message["type"] == "error":
            self._utterances.pop(utt.id, None)
            utt._deliver(EngineRequestError(message.get("code", "engine_error"), message.get("message", "")))

    async def _send(self, message: dict[str, Any] | bytes) -> None:
        ws = self._ws
        if ws is None:
            raise EngineUnavailable("the engine worker is not connected")
        try:
            await ws.send(message if isinstance(message, bytes) else protocol.encode_json(message))
        except ConnectionClosed as exc:
            raise EngineUnavailable("the engine worker went away") from exc

    async def start(self, voice: str) -> RemoteUtterance:
        uid = uuid.uuid4().hex[:12]
        utt = RemoteUtterance(self, uid)
        self._utterances[uid] = utt
        try:
            await self._send({"type": "start", "id": uid, "voice": voice})
        except EngineUnavailable:
            self._utterances.pop(uid, None)
            raise
        return utt

    async def _request(self, message: dict[str, Any], payload: bytes | None = None, timeout: float = 120) -> dict:
        req = str(next(self._ids))
        message = {**message, "req": req}
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._requests[req] = fut
        try:
            await self._send(message if payload is None else protocol.encode_binary(message, payload))
            reply = await asyncio.wait_for(fut, timeout)
        finally:
            self._requests.pop(req, None)
        if reply["type"] == "error":
            raise EngineRequestError(reply.get("code", "engine_error"), reply.get("message", ""))
        return reply

    async def list_voices(self) -> list[dict[str, Any]]:
        return (await self._request({"type": "list_voices"}))["voices"]

    async def add_voice(self, name: str, data: bytes) -> dict[str, Any]:
        return (await self._request({"type": "add_voice", "name": name}, data))["voice"]

    async def delete_voice(self, name: str) -> None:
        await self._request({"type": "delete_voice", "name": name})
