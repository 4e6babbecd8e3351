"""WebSocket /v1/stream: JSON text in, binary audio and JSON events out (docs/protocol.md)."""

from __future__ import annotations

from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from engine.protocol import SAMPLE_RATE
from gateway.audio import Encoder, make_encoder
from gateway.auth import authorized
from gateway.formats import WEBSOCKET_DEFAULT_FORMAT, output_format
from gateway.session import Session
from gateway.session_registry import SessionLimitReached
from gateway.shared_state import GatewayState
from gateway.sink import AudioSink


class WebSocketSink(AudioSink):
    """Encodes each utterance for the socket's configured format and sends it as binary frames."""

    configurable = True

    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self.format, self.sample_rate = WEBSOCKET_DEFAULT_FORMAT, SAMPLE_RATE
        self._encoder: Encoder | None = None

    def configure(self, fmt: str, sample_rate: int) -> None:
        self.format, self.sample_rate = fmt, sample_rate

    async def begin(self) -> None:
        self._encoder = make_encoder(self.format, self.sample_rate)  # pcm_s16le is its name for pcm

    async def write(self, pcm: bytes) -> None:
        if self._encoder is not None:
            await self._send(self._encoder.encode(pcm))

    async def end(self) -> None:
        if self._encoder is not None:
            await self._send(self._encoder.flush())
        self._encoder = None

    async def _send(self, data: bytes) -> None:
        """In frames of at most 100 ms of audio, so a client can start playing a long chunk at its first frame."""
        step = self.sample_rate // 10 * (output_format(self.format).sample_bytes or 1)  # its formats are all raw
        for start in range(0, len(data), step):
            await self.ws.send_bytes(data[start:start + step])

    async def clear(self) -> None:
        self._encoder = None


async def stream_endpoint(ws: WebSocket) -> None:
    state: GatewayState = ws.app.state.gateway
    await ws.accept()

    async def send_event(event: dict[str, Any]) -> None:
        await ws.send_json(event)

    if not authorized(ws, state.settings.api_keys):
        await send_event({"type": "error", "code": "unauthorized", "message": "a valid API key is required"})
        await ws.close(4401)
        return
    session = Session(state, WebSocketSink(ws), send_event, transport="ws")
    try:
        await session.open()
    except SessionLimitReached as exc:
        await send_event({"type": "error", "code": exc.code, "message": str(exc)})
        await ws.close(1013)
        return
    try:
        while True:
            frame = await ws.receive()
            if frame["type"] == "websocket.disconnect":
                break
            await session.handle_text(frame["text"] if frame.get("text") is not None else frame.get("bytes") or b"")
    except WebSocketDisconnect:
        pass
    finally:
        await session.close()
