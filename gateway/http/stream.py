"""The streamed body of an HTTP speech response: encoded off the event loop, closed with its caller, never cut short
cleanly.

A body that cannot be finished (the utterance failed mid-way, the client took nothing for the stall timeout) is
aborted: the server closes the connection without the end of the chunked body, so no client can take a truncated
stream for a complete one.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import Any, AsyncIterator, Awaitable, Callable

from starlette.responses import StreamingResponse
from starlette.types import Message, Receive, Scope, Send

from gateway.audio import ContainerEncoder, Encoder

log = logging.getLogger("chatterbox_fast.gateway")


class StreamAborted(Exception):
    """The body cannot be finished; the response ends without its clean end."""


async def encoded(encoder: Encoder, pcm: bytes | None) -> bytes:
    """``pcm`` encoded (None: the encoder flushed). Compressed formats cost milliseconds per second of audio (MP3,
    Opus, AAC, FLAC), so they run in a thread rather than stall every other stream on the event loop."""
    work = encoder.flush if pcm is None else partial(encoder.encode, pcm)
    return await asyncio.to_thread(work) if isinstance(encoder, ContainerEncoder) else work()


class SpeechStream(StreamingResponse):
    """A streaming response that runs ``on_close`` however it ends (a client gone mid-way stops the engine at once),
    and is aborted when the client takes nothing for ``stall_timeout`` seconds."""

    def __init__(self, body: AsyncIterator[bytes], on_close: Callable[[], Awaitable[None]], stall_timeout: float,
                 **kwargs: Any) -> None:
        super().__init__(body, **kwargs)
        self.on_close = on_close
        self.stall_timeout = stall_timeout

    async def stream_response(self, send: Send) -> None:
        async def send_in_time(message: Message) -> None:
            try:
                await asyncio.wait_for(send(message), self.stall_timeout)
            except TimeoutError:
                raise StreamAborted(f"the client read nothing for {self.stall_timeout:g} s") from None

        try:
            await super().stream_response(send_in_time)
        finally:
            await asyncio.shield(self.on_close())  # run to its end even when the response is cancelled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except StreamAborted as exc:
            log.warning("http stream aborted: %s", exc)  # returning unfinished: the server drops the connection
