"""The streamed body of an HTTP speech response: encoded off the event loop, closed with its caller, never cut short
cleanly.

A body that cannot be finished (the utterance failed mid-way, its key was revoked, the client took nothing for the
stall timeout) ends with its framing's error (ndjson's error line, SSE's error event) or, raw audio, is aborted: the
server closes the connection without the end of the chunked body, so no client can take a truncated stream for a
complete one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from functools import partial
from typing import Any, AsyncIterator, Awaitable, Callable, Protocol, TypeVar

from starlette.responses import StreamingResponse
from starlette.types import Message, Receive, Scope, Send

from engine.protocol import ChunkHeader
from gateway.audio import ContainerEncoder, Encoder
from gateway.playout import Outbound
from gateway.utterance_stream import UtteranceStats

log = logging.getLogger("chatterbox_fast.gateway")
T = TypeVar("T")
REVOKED_GRACE_S = 0.5  # how long a revoked stream's client has to take what is being sent before it is aborted
STALL_CHECK_S = 0.25  # how often a stream's client is looked at for having stopped taking what waits for it


class StreamAborted(Exception):
    """The body cannot be finished; the response ends without its clean end."""


class Revoked(Exception):
    """The stream's key was removed from the keys file mid-way."""


class Revocation:
    """One HTTP speech stream's entry in the session registry: its tenant, and whether its key was removed mid-way
    (set by gateway/app.py's ``tenancy.on_revoked`` hook; the body ends at once, ``until_revoked``)."""

    def __init__(self, tenant: str | None) -> None:
        self.tenant = tenant
        self.revoked = asyncio.Event()

    def revoke(self) -> None:
        self.revoked.set()


_END = object()


async def until_revoked(source: AsyncIterator[T], revocation: Revocation) -> AsyncIterator[T]:
    """``source``'s items until ``revocation`` is set; then raises ``Revoked`` (an item still awaited is dropped:
    its generator is cancelled)."""
    stopped = asyncio.ensure_future(revocation.revoked.wait())
    step: asyncio.Future[Any] | None = None
    try:
        while True:
            step = asyncio.ensure_future(anext(source, _END))
            await asyncio.wait({step, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if stopped.done():
                raise Revoked
            if (item := step.result()) is _END:
                return
            yield item
    finally:
        stopped.cancel()
        if step is not None:
            if not step.done():
                step.cancel()
                await asyncio.wait({step})
            if not step.cancelled():
                step.exception()  # a failure that lost the race to the revocation is not "never retrieved"


class Framing(Protocol):
    """How a speech body carries its encoded audio: as it is (``AudioBytes``), in lines of JSON with timings
    (gateway/http/ndjson.py), or as OpenAI's server-sent events (gateway/http/sse.py)."""

    media_type: str | None  # None: the encoder's own

    def chunk(self, audio: bytes, header: ChunkHeader) -> bytes: ...

    def tail(self, audio: bytes) -> bytes:
        """What the encoder held back, at the end."""

    def done(self, stats: UtteranceStats) -> bytes: ...

    def failed(self, code: str, message: str) -> bytes | None:
        """The last of a body whose utterance failed mid-way or whose key was revoked; None: the body is aborted (no
        clean end)."""


class AudioBytes:
    """The encoded audio as the body, nothing around it; a failure mid-way aborts it."""

    media_type = None

    def chunk(self, audio: bytes, header: ChunkHeader) -> bytes:
        return audio

    def tail(self, audio: bytes) -> bytes:
        return audio

    def done(self, stats: UtteranceStats) -> bytes:
        return b""

    def failed(self, code: str, message: str) -> bytes | None:
        return None


WRITE_BYTES = 64 * 1024  # a body piece at most: a file sent whole at the end (WAV) goes out in these


def in_pieces(data: bytes | bytearray) -> Iterator[bytes]:
    """``data`` in pieces of at most ``WRITE_BYTES``, each a copy of that much only: a whole file is never copied
    whole on its way out (and the connection's buffer takes a piece at a time)."""
    view = memoryview(data)
    for start in range(0, len(view), WRITE_BYTES):
        yield bytes(view[start:start + WRITE_BYTES])


async def encoded(encoder: Encoder, pcm: bytes | None) -> bytes:
    """``pcm`` encoded (None: the encoder flushed). Compressed formats cost milliseconds per second of audio (MP3,
    Opus, AAC, FLAC), so they run in a thread rather than stall every other stream on the event loop."""
    work = encoder.flush if pcm is None else partial(encoder.encode, pcm)
    return await asyncio.to_thread(work) if isinstance(encoder, ContainerEncoder) else work()


class SpeechStream(StreamingResponse):
    """A streaming response that runs ``on_close`` however it ends (a client gone mid-way stops the engine at once),
    and is aborted when the client takes nothing for ``stall_timeout`` seconds, or for ``REVOKED_GRACE_S`` once
    ``revocation`` is set (the body ends at once then; a client that is not reading would hold it to the stall).

    "Takes nothing": a send waits that long, or, with ``outbound`` (told of every body byte sent), bytes wait in the
    connection's buffers and the client has taken none of them for that long (the engine, held to serve
    --client-lead past what it has taken, has stopped: no send waits)."""

    def __init__(self, body: AsyncIterator[bytes], on_close: Callable[[], Awaitable[None]], stall_timeout: float,
                 revocation: Revocation | None = None, outbound: Outbound | None = None, **kwargs: Any) -> None:
        super().__init__(body, **kwargs)
        self.on_close = on_close
        self.stall_timeout = stall_timeout
        self.revocation = revocation or Revocation(None)
        self.outbound = outbound

    async def _until_stalled(self) -> None:
        """Returns once the client has taken nothing of what waits for it for ``stall_timeout``; never without
        ``outbound``."""
        if self.outbound is None:
            await asyncio.Event().wait()
        while not self.outbound.stalled(time.monotonic(), self.stall_timeout):  # type: ignore[union-attr]
            await asyncio.sleep(min(STALL_CHECK_S, self.stall_timeout / 4))

    async def _sent(self, sending: Awaitable[None]) -> None:
        task, stopped = asyncio.ensure_future(sending), asyncio.ensure_future(self.revocation.revoked.wait())
        try:
            limit = self.stall_timeout
            await asyncio.wait({task, stopped}, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
            if not task.done() and stopped.done():
                limit = REVOKED_GRACE_S
                await asyncio.wait({task}, timeout=limit)
            if not task.done():
                raise StreamAborted(f"the client read nothing for {limit:g} s")
            task.result()
        finally:
            stopped.cancel()
            if not task.done():
                task.cancel()

    async def stream_response(self, send: Send) -> None:
        async def send_in_time(message: Message) -> None:
            await self._sent(send(message))
            if self.outbound is not None and message["type"] == "http.response.body":
                self.outbound.wrote(len(message.get("body", b"")))

        streaming = asyncio.ensure_future(super().stream_response(send_in_time))
        watching = asyncio.ensure_future(self._until_stalled())
        try:
            await asyncio.wait({streaming, watching}, return_when=asyncio.FIRST_COMPLETED)
            if not streaming.done():
                streaming.cancel()
                await asyncio.wait({streaming})
                raise StreamAborted(f"the client took nothing for {self.stall_timeout:g} s")
            streaming.result()
        finally:
            watching.cancel()
            try:
                if not streaming.done():  # this response cancelled (the client went away)
                    streaming.cancel()
                    await asyncio.wait({streaming})
            finally:
                await asyncio.shield(self.on_close())  # run to its end even when the response is cancelled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except StreamAborted as exc:
            log.warning("http stream aborted: %s", exc)  # returning unfinished: the server drops the connection
