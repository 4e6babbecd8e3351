"""WebSocket /v1/stream: JSON text in, binary audio and JSON events out (docs/protocol.md)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from engine.protocol import SAMPLE_RATE
from gateway.audio import Encoder, make_encoder
from gateway.auth import SUBPROTOCOL, authorized, offered_subprotocols
from gateway.formats import WEBSOCKET_DEFAULT_FORMAT, output_format
from gateway.playout import SentClock
from gateway.session import Session
from gateway.session_registry import SessionLimitReached
from gateway.shared_state import GatewayState
from gateway.sink import AudioSink

log = logging.getLogger("chatterbox_fast.gateway")
STALLED_CLOSE_CODE = 4408


class ClientStalled(Exception):
    """The client took none of the audio sent to it for the stall timeout."""


class WebSocketSink(AudioSink):
    """Encodes each utterance for the socket's configured format and sends it as binary frames.

    A send that the client does not take within ``stall_timeout`` seconds sets ``stalled``: the endpoint then ends
    the session (its engine work stops) and closes the socket with code 4408 and the reason.
    """

    configurable = True

    def __init__(self, ws: WebSocket, stall_timeout: float) -> None:
        self.ws = ws
        self.stall_timeout = stall_timeout
        self.format, self.sample_rate = WEBSOCKET_DEFAULT_FORMAT, SAMPLE_RATE
        self._encoder: Encoder | None = None
        self._sent = SentClock()
        self.stalled = asyncio.Event()

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
            try:
                await asyncio.wait_for(self.ws.send_bytes(frame), self.stall_timeout)
            except TimeoutError:
                self.stalled.set()
                raise ClientStalled(self.stall_reason) from None
            self._sent.sent(len(frame) / sample_bytes / self.sample_rate)

    @property
    def stall_reason(self) -> str:
        return f"not reading: no audio taken for {self.stall_timeout:g} s"

    async def clear(self) -> None:
        self._encoder = None

    def played_seconds(self) -> float:
        """At most what has been sent, and no more than real time since the first of it."""
        return self._sent.heard()


async def stream_endpoint(ws: WebSocket) -> None:
    state: GatewayState = ws.app.state.gateway
    await ws.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in offered_subprotocols(ws) else None)

    async def send_event(event: dict[str, Any]) -> None:
        await ws.send_json(event)

    if not authorized(ws, state.settings.api_keys):
        await send_event({"type": "error", "code": "unauthorized", "message": "a valid API key is required"})
        await ws.close(4401)
        return
    sink = WebSocketSink(ws, state.settings.stall_timeout_s)
    session = Session(state, sink, send_event, transport="ws")
    try:
        await session.open()
    except SessionLimitReached as exc:
        await send_event({"type": "error", "code": exc.code, "message": str(exc)})
        await ws.close(1013)
        return
    receiving = asyncio.create_task(_receive_all(ws, session))
    stalled = asyncio.create_task(sink.stalled.wait())
    try:
        await asyncio.wait({receiving, stalled}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        receiving.cancel()
        stalled.cancel()
        await session.close()
    if sink.stalled.is_set():
        log.info("websocket session %s closed: %s", session.id, sink.stall_reason)
        with contextlib.suppress(Exception):  # the close frame may never get through to a client that reads nothing
            await asyncio.wait_for(ws.close(STALLED_CLOSE_CODE, sink.stall_reason), 1.0)


async def _receive_all(ws: WebSocket, session: Session) -> None:
    """The client's frames into the session until it disconnects."""
    with contextlib.suppress(WebSocketDisconnect):
        while True:
            frame = await ws.receive()
            if frame["type"] == "websocket.disconnect":
                return
            await session.handle_text(frame["text"] if frame.get("text") is not None else frame.get("bytes") or b"")
