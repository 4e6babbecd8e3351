"""The gateway's end of the engine protocol: one WebSocket to a worker, many utterances multiplexed on it.

If the connection drops (the worker died or restarts), every utterance in flight ends with an
``engine_unavailable`` error and the client reconnects in the background.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
import uuid
from dataclasses import astuple
from typing import Any, AsyncIterator, Awaitable, Callable, TypeVar

from websockets.asyncio.client import ClientConnection, connect, unix_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from engine import protocol
from engine.protocol import (AddLexicon, AddVoice, Cancel, Chunk, DeleteLexicon, DeleteVoice, Done, End, EngineReady,
                             Error, Flush, GetLexicon, GetVoice, ListLexicons, ListVoices, Playout, Reading, Request,
                             Result, SetLoaded, Start, Stored, StoreRequest, Text)
from gateway.engine_link.backoff import Backoff
from gateway.engine_link.link_failures import LinkFailures

log = logging.getLogger("chatterbox_fast.gateway")
RETRY_FIRST_S = 0.1  # a restarted worker is found again this fast
RETRY_MAX_S = 2.0  # a restarted worker is used within this long of listening again
STABLE_S = 10.0  # a connection that lasted this long was a success: the back-off starts again from RETRY_FIRST_S
SOCKET_POLL_S = 0.02  # how often a Unix socket not yet there is looked for while the back-off runs
_LINK_FAILURES = (OSError, TimeoutError, InvalidHandshake, ConnectionClosed, protocol.ProtocolError)
_NOT_LISTENING = (OSError, TimeoutError)  # refused, no socket file yet, unreachable: a worker still starting, perhaps
Answer = TypeVar("Answer", Result, Stored)  # what a store request is answered with


class EngineUnavailable(Exception):
    code = "engine_unavailable"


class EngineRequestError(Exception):
    """The worker refused a request; ``code`` is the worker's stable error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class RemoteUtterance:
    """A gateway-side handle on one utterance in the worker."""

    def __init__(self, client: "EngineClient", uid: str) -> None:
        self.id = uid
        self._client = client
        self._events: asyncio.Queue[Chunk | Done | EngineRequestError] = asyncio.Queue()
        self.finished = False
        self.queued_bytes = 0  # audio received from the worker not yet taken by the consumer (the engine's lead)

    @property
    def worker(self) -> str:
        """The URL of the worker saying it."""
        return self._client.url

    @property
    def engine_kind(self) -> tuple[str, str] | None:
        return self._client.engine_kind

    async def text(self, text: str) -> None:
        await self._client._send(Text(self.id, text))

    async def flush(self) -> None:
        await self._client._send(Flush(self.id))

    async def end(self) -> None:
        await self._client._send(End(self.id))

    async def playout(self, played: float) -> None:
        await self._client._send(Playout(self.id, played))

    async def cancel(self) -> None:
        if not self.finished:
            self.finished = True
            self._client._utterances.pop(self.id, None)
            try:
                await self._client._send(Cancel(self.id))
            except EngineUnavailable:
                pass

    async def events(self) -> AsyncIterator[Chunk | Done]:
        """Chunks in order, then one ``Done``; raises ``EngineRequestError`` on failure."""
        while True:
            event = await self._events.get()
            if isinstance(event, Chunk):
                self.queued_bytes -= len(event.pcm)
            if isinstance(event, EngineRequestError):
                raise event
            yield event
            if isinstance(event, Done):
                return

    def _deliver(self, event: Chunk | Done | EngineRequestError) -> None:
        if isinstance(event, (Done, EngineRequestError)):
            self.finished = True
        elif isinstance(event, Chunk):
            self.queued_bytes += len(event.pcm)
        self._events.put_nowait(event)


class EngineClient:
    """Connects to one engine worker at ``ws://host:port`` or ``unix:/path`` and keeps the connection up."""

    def __init__(self, url: str, secret: str | None = None) -> None:
        """``secret``: the worker's engine secret, presented on every connection (a worker that has one refuses
        connections without it)."""
        self.url = url
        self.lead: float | None = None  # each utterance's lead over what its client has taken (Start.lead)
        self._headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        self.ready: EngineReady | None = None
        self._ws: ClientConnection | None = None
        self._utterances: dict[str, RemoteUtterance] = {}
        self._requests: dict[str, asyncio.Future[Result | Stored | Error]] = {}
        self._ids = itertools.count()
        self._connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.last_error: str | None = None  # while not connected: why the last attempt failed or connection ended
        self._failures = LinkFailures()  # how loud each failed try is logged
        self.retry_in: float | None = None  # the delay before the next try, while not connected
        self.lost = 0  # ready connections that ended
        self.started = 0  # utterances started on this worker
        # Run on every connection's greeting; until it returns the worker takes no new utterances (``joining``), voice
        # requests it does take: the pool copies the voices and lexicons it lacks (EnginePool._join).
        self.on_ready: Callable[[EngineClient], Awaitable[None]] | None = None
        self.joining = False
        self._join: asyncio.Task[None] | None = None

    @property
    def reachable(self) -> bool:
        """Connected, and (for an engine in another server) that server is not down: it takes voice requests."""
        return self._ws is not None and self.ready is not None and (self.ready.backend or {}).get("state") != "down"

    @property
    def available(self) -> bool:
        """Reachable and done joining: it takes new utterances."""
        return self.reachable and not self.joining

    @property
    def engine_kind(self) -> tuple[str, str] | None:
        """Its engine and weights while connected: an utterance moves only between workers of the same kind (the same
        voice)."""
        return (self.ready.engine, self.ready.weights) if self.ready is not None else None

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

    def _open(self) -> connect:
        kwargs: dict[str, Any] = {"max_size": 64 * 1024 * 1024, "ping_interval": 20, "ping_timeout": 60,
                                  "additional_headers": self._headers}
        if self.url.startswith("unix:"):
            return unix_connect(self.url[5:], uri="ws://localhost" + protocol.ENGINE_PATH, **kwargs)
        return connect(self.url.rstrip("/") + protocol.ENGINE_PATH, **kwargs)

    async def _run(self) -> None:
        """Connect and serve; after every failure (refused, a protocol error, a dropped connection) the socket is
        closed and the next try waits a growing, jittered delay, back to the shortest once a connection lasted
        STABLE_S: a worker answering nonsense is retried a few times a minute, never in a tight loop."""
        retry = Backoff(RETRY_FIRST_S, RETRY_MAX_S)
        while True:
            opened = time.monotonic()
            try:
                async with self._open() as ws:
                    await self._serve(ws)
            except Exception as exc:  # refused, unreachable, closed, or a frame this gateway cannot understand
                error = f"{type(exc).__name__}: {exc}"
                now = time.monotonic()
                level = self._failures.level(error, now, lost=self.ready is not None,
                                             listening=not isinstance(exc, _NOT_LISTENING))
                if level is not None:  # a worker still starting: debug; a lost link, a bug, a long outage: warning
                    down = self._failures.failing_for(now)
                    log.log(level, "engine %s: %s%s; retrying with back-off", self.url, error,
                            f" (not connected for {down:.0f} s)" if down >= 1 else "",
                            exc_info=not isinstance(exc, _LINK_FAILURES))  # a bug here: its traceback
                self.last_error = error
            finally:
                if self.ready is not None:
                    self.lost += 1
                self._ws, self.ready = None, None
                self._connected.clear()
                if self._join is not None:
                    self._join.cancel()
                self.joining = False
                self._fail_all()
            if time.monotonic() - opened > STABLE_S:
                retry.reset()
            self.retry_in = retry.next()
            await self._wait(self.retry_in)

    async def _wait(self, delay: float) -> None:
        """The back-off's delay; a Unix socket that is not there yet (the embedded worker still loading) is tried
        the moment its file appears, which costs a stat per SOCKET_POLL_S, not a connection."""
        if not self.url.startswith("unix:") or os.path.exists(self.url[5:]):
            await asyncio.sleep(delay)
            return
        deadline = time.monotonic() + delay
        while not os.path.exists(self.url[5:]) and (left := deadline - time.monotonic()) > 0:
            await asyncio.sleep(min(SOCKET_POLL_S, left))

    async def _serve(self, ws: ClientConnection) -> None:
        ready = protocol.decode_event(await ws.recv())
        if not isinstance(ready, EngineReady):
            raise protocol.ProtocolError(f"unexpected greeting from engine: {ready}")
        self._ws, self.ready, self.retry_in = ws, ready, None
        self.last_error = None  # what kept it from connecting is over (the log keeps it)
        self._failures.connected()
        self._connected.set()
        log.info("connected to engine %s at %s (%s, %s, weights: %s)", ready.engine, self.url,
                 ready.device, ready.dtype, ready.weights)
        if self.on_ready is not None:
            self.joining = True
            self._join = asyncio.create_task(self._joined(self.on_ready))
        async for frame in ws:
            self._route(frame)
        raise ConnectionError("the worker closed the connection")

    async def _joined(self, on_ready: Callable[[EngineClient], Awaitable[None]]) -> None:
        try:
            await on_ready(self)
        finally:
            if self._join is asyncio.current_task():  # not a join cancelled when its connection ended
                self.joining = False

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
        event = protocol.decode_event(frame)
        if isinstance(event, (Result, Stored, Error)) and event.req is not None:
            if (fut := self._requests.pop(event.req, None)) is not None and not fut.done():
                fut.set_result(event)
        elif isinstance(event, Chunk):
            if (utt := self._utterances.get(event.header.id)) is not None:
                utt._deliver(event)  # else a late chunk of a cancelled utterance
        elif isinstance(event, (Done, Error)) and (utt := self._utterances.pop(event.id or "", None)) is not None:
            utt._deliver(event if isinstance(event, Done) else EngineRequestError(event.code, event.message))
        elif isinstance(event, Error):
            log.warning("engine error: %s", event)
        elif isinstance(event, EngineReady):  # its TTS server's state or its prompt cache's figures changed
            state = (event.backend or {}).get("state")
            if self.ready is not None and state != (self.ready.backend or {}).get("state"):
                log.info("engine %s: its TTS server is %s", self.url, state)
            self.ready = event

    async def _send(self, message: Request) -> None:
        ws = self._ws
        if ws is None:
            raise EngineUnavailable("the engine worker is not connected")
        frame = protocol.encode(message)
        text = isinstance(frame, str)
        if isinstance(frame, str):  # encoded here: a string websockets cannot encode would close the connection
            try:
                frame = frame.encode()
            except UnicodeEncodeError:
                raise EngineRequestError("bad_message", "text must be valid Unicode (no lone surrogates)") from None
        try:
            await ws.send(frame, text=text)
        except ConnectionClosed as exc:
            raise EngineUnavailable("the engine worker went away") from exc

    def queued_bytes(self) -> list[int]:
        """Per utterance in flight, the audio received from the worker that its consumer has not taken yet."""
        return [utterance.queued_bytes for utterance in self._utterances.values()]

    async def start(self, voice: str, reading: Reading = Reading(), traceparent: str | None = None) -> RemoteUtterance:
        """A new utterance, read as ``reading`` says (engine/protocol.py ``Reading``: latency, normalisation), in the
        trace of ``traceparent`` when given."""
        uid = uuid.uuid4().hex[:12]
        utt = RemoteUtterance(self, uid)
        self._utterances[uid] = utt
        try:
            await self._send(Start(uid, voice, *astuple(reading), traceparent=traceparent, lead=self.lead))
        except EngineUnavailable:
            self._utterances.pop(uid, None)
            raise
        self.started += 1
        return utt

    async def _request(self, make: Callable[[str], StoreRequest], answer: type[Answer],
                       timeout: float = 120) -> Answer:
        """Send the voice request ``make(req)`` and wait for its ``answer``; a refusal raises ``EngineRequestError``."""
        req = str(next(self._ids))
        fut: asyncio.Future[Result | Stored | Error] = asyncio.get_running_loop().create_future()
        self._requests[req] = fut
        try:
            await self._send(make(req))
            reply = await asyncio.wait_for(fut, timeout)
        finally:
            self._requests.pop(req, None)
        if isinstance(reply, Error):
            raise EngineRequestError(reply.code, reply.message)
        if not isinstance(reply, answer):
            raise EngineRequestError("engine_error", f"the worker answered {reply.type!r}, not {answer.type!r}")
        return reply

    async def list_voices(self) -> list[dict[str, Any]]:
        return (await self._request(ListVoices, Result)).voices or []

    async def add_voice(self, name: str, data: bytes) -> dict[str, Any]:
        voice = (await self._request(lambda req: AddVoice(name, req, data), Result)).voice
        if voice is None:
            raise EngineRequestError("engine_error", "the worker's answer to add_voice carried no voice")
        return voice

    async def delete_voice(self, name: str) -> None:
        await self._request(lambda req: DeleteVoice(name, req), Result)

    async def set_loaded(self, loaded: bool) -> dict[str, Any]:
        """Load (or free) the worker's model now: its ``state`` after it, and ``reload_s`` where it loaded."""
        reply = await self._request(lambda req: SetLoaded(loaded, req), Result, timeout=600)
        return {"state": reply.state, **({"reload_s": reply.reload_s} if reply.reload_s is not None else {})}

    async def get_voice(self, name: str) -> bytes:
        """A stored voice's audio file, as ``add_voice`` takes it."""
        return (await self._request(lambda req: GetVoice(name, req), Stored)).data

    async def list_lexicons(self) -> list[dict[str, Any]]:
        return (await self._request(ListLexicons, Result)).lexicons or []

    async def add_lexicon(self, name: str, data: bytes) -> dict[str, Any]:
        lexicon = (await self._request(lambda req: AddLexicon(name, req, data), Result)).lexicon
        if lexicon is None:
            raise EngineRequestError("engine_error", "the worker's answer to add_lexicon carried no lexicon")
        return lexicon

    async def delete_lexicon(self, name: str) -> None:
        await self._request(lambda req: DeleteLexicon(name, req), Result)

    async def get_lexicon(self, name: str) -> bytes:
        """A stored lexicon's file, as ``add_lexicon`` takes it."""
        return (await self._request(lambda req: GetLexicon(name, req), Stored)).data
