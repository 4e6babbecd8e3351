"""WebSocket /v1/stream: JSON text in, binary audio and JSON events out (docs/protocol.md)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, AsyncIterator, Awaitable, Iterator

from starlette.websockets import WebSocket, WebSocketDisconnect

from engine.protocol import SAMPLE_RATE
from gateway.audio import Encoder, make_encoder
from gateway.guard.auth import accept_websocket, presented_key, tenant_of
from gateway.formats import WEBSOCKET_DEFAULT_FORMAT, output_format
from gateway.host.drain import CLOSING, RESTART_CLOSE_CODE
from gateway.playout import Outbound, SentAudio
from gateway.sessions.session import Session
from gateway.sessions.registry import SessionLimitReached
from gateway.shared_state import GatewayState
from gateway.sink import AudioSink

log = logging.getLogger("chatterbox_fast.gateway")
STALLED_CLOSE_CODE = 4408
STALL_CHECK_S = 0.5


def close_reason(text: str) -> str:
    """``text`` cut to fit a close frame's reason (123 bytes of UTF-8), on a character boundary."""
    return text.encode()[:120].decode(errors="ignore")


class SendWatch:
    """When the send under way began: one the client has not taken within ``timeout`` seconds is a stall."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._since: float | None = None

    @contextlib.contextmanager
    def sending(self) -> Iterator[None]:
        self._since = time.monotonic()
        try:
            yield
        finally:
            self._since = None

    def stalled(self, now: float) -> bool:
        return self._since is not None and now - self._since > self.timeout


class WebSocketSink(AudioSink):
    """Encodes each utterance for the socket's configured format and sends it as binary frames.

    A client that takes nothing of what was sent to it for ``stall_timeout`` seconds (a send waiting that long, or
    audio waiting in the connection's buffers: ``Outbound``) makes it ``stalled``: the endpoint then ends the session
    (its engine work stops) and closes the socket with code 4408 and the reason. What it has taken is what the engine
    is told (``played_seconds``), so a client that stops reading holds no more than serve --client-lead ahead of it.
    """

    configurable = True

    def __init__(self, ws: WebSocket, stall_timeout: float) -> None:
        self.ws = ws
        self.stall_timeout = stall_timeout
        self.format, self.sample_rate = WEBSOCKET_DEFAULT_FORMAT, SAMPLE_RATE
        self._encoder: Encoder | None = None
        self._sent = SentAudio()
        self._watch = SendWatch(stall_timeout)
        self.outbound = Outbound(ws.scope)

    def configure(self, fmt: str, sample_rate: int) -> None:
        self.format, self.sample_rate = fmt, sample_rate

    async def begin(self) -> None:
        self._encoder = make_encoder(self.format, self.sample_rate)  # pcm_s16le is its name for pcm
        self._sent.reset()

    async def write(self, pcm: bytes) -> None:
        if self._encoder is not None:
            await self._send(self._encoder.encode(pcm))

    async def end(self) -> None:
        if self._encoder is not None:
            await self._send(self._encoder.flush())
        self._encoder = None

    async def _send(self, data: bytes) -> None:
        """In frames of at most 100 ms of audio, so a client can start playing a long chunk at its first frame."""
        sample_bytes = output_format(self.format).sample_bytes or 1  # its formats are all raw
        step = self.sample_rate // 10 * sample_bytes
        for start in range(0, len(data), step):
            frame = data[start:start + step]
            with self._watch.sending():
                await self.ws.send_bytes(frame)
            self.outbound.wrote(len(frame))
            self._sent.sent(len(frame) / sample_bytes / self.sample_rate)

    def stalled(self, now: float) -> bool:
        """Whether a send has waited for the client longer than the stall timeout, or what was sent has."""
        return self._watch.stalled(now) or self.outbound.stalled(now, self.stall_timeout)

    @property
    def stall_reason(self) -> str:
        return f"not reading: no audio taken for {self.stall_timeout:g} s"

    async def clear(self) -> None:
        self._encoder = None

    def played_seconds(self) -> float:
        """At most what has been sent, and no more than real time since the first of it."""
        return self._sent.taken()

    def taken_seconds(self) -> float:
        """What the client has taken: what was sent, less what still waits in the connection's buffers."""
        sample_bytes = output_format(self.format).sample_bytes or 1
        waiting = self.outbound.unsent() / sample_bytes / self.sample_rate
        return max(0.0, self._sent.taken() - waiting)


async def stream_endpoint(ws: WebSocket) -> None:
    state: GatewayState = ws.app.state.gateway
    if not await accept_websocket(ws, state.tenancy):
        return

    async def send_event(event: dict[str, Any]) -> None:
        await ws.send_json(event)

    sink = WebSocketSink(ws, state.settings.stall_timeout_s)
    session = Session(state, sink, send_event, transport="ws", api_key=presented_key(ws), tenant=tenant_of(ws))
    try:
        await session.open()
    except SessionLimitReached as exc:
        await send_event({"type": "error", "code": exc.code, "message": str(exc)})
        await ws.close(exc.close_code)
        return
    await serve_session(ws, session, sink, _receive_all(ws, session))


async def serve_session(ws: WebSocket, session: Session, sink: WebSocketSink, receive: Awaitable[None]) -> None:
    """Run ``receive`` (the client's frames into ``session``) until the client goes or stops reading, or a drain lets
    the session go; then close the session, and on a stall the socket too (code 4408), on a drain with a ``closing``
    event and code 1012."""
    receiving = asyncio.create_task(receive)
    watching = asyncio.create_task(until_stalled(sink))
    releasing = asyncio.create_task(session.released())
    try:
        await asyncio.wait({receiving, watching, releasing}, return_when=asyncio.FIRST_COMPLETED)
        if releasing.done() and not releasing.cancelled():
            await session.notify_shutdown(CLOSING)  # before the session leaves the registry (that may end the drain)
    finally:
        for task in (receiving, watching, releasing):
            task.cancel()
        await session.close()
    if watching.done() and not watching.cancelled():
        log.info("%s session %s closed: %s", session.transport, session.id, sink.stall_reason)
        with contextlib.suppress(Exception):  # the close frame may never get through to a client that reads nothing
            await asyncio.wait_for(ws.close(STALLED_CLOSE_CODE, sink.stall_reason), 1.0)
    elif releasing.done() and not releasing.cancelled():
        log.info("%s session %s closed: draining", session.transport, session.id)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(ws.close(RESTART_CLOSE_CODE, close_reason(CLOSING)), 1.0)


async def until_stalled(sink: WebSocketSink | Any) -> None:
    """Returns once ``sink.stalled(now)``: a send has waited for the client past the stall timeout."""
    while not sink.stalled(time.monotonic()):
        await asyncio.sleep(STALL_CHECK_S)


async def client_frames(ws: WebSocket) -> AsyncIterator[str | bytes]:
    """Each frame the client sends (text as str, binary as bytes), until it disconnects."""
    with contextlib.suppress(WebSocketDisconnect):
        while True:
            frame = await ws.receive()
            if frame["type"] == "websocket.disconnect":
                return
            yield frame["text"] if frame.get("text") is not None else frame.get("bytes") or b""


async def _receive_all(ws: WebSocket, session: Session) -> None:
    """The client's frames into the session until it disconnects."""
    async for data in client_frames(ws):
        await session.handle_text(data)
