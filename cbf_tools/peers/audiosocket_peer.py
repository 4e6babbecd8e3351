"""Asterisk's side of an AudioSocket call, for benchmarks and tests: a replica written from Asterisk's documentation of
the protocol (the AudioSocket page of the Asterisk docs, res_audiosocket's header: no simulator of it ships).

It connects over TCP as ``AudioSocket(<uuid>,host:port)`` or ``Dial(AudioSocket/host:port/<uuid>/c(slin16))`` does:
the UUID frame (0x01), then 20 ms of the caller's signed-linear audio every 20 ms (0x10 at 8 kHz, 0x12 at 16 kHz),
DTMF (0x03) when asked, and a hang-up (0x00) to end. What the gateway sends is played in order at real time (Asterisk
writes each frame to the channel at once; the phone plays it), as a ``PlayingStack`` records it (``arrived``,
``heard_between``); a hang-up frame from the gateway ends the call (``hung_up``).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import AsyncIterator

from websockets.exceptions import ConnectionClosed

from cbf_tools.peers.phone_callers import Heard, PlayingStack
from gateway.telephony.audiosocket import AUDIO, DTMF, HANGUP, RATES, UUID, FrameReader, frame


class TcpLink:
    """An AudioSocket connection with the face a ``PlayingStack`` expects of its WebSocket: ``send``, iteration over
    the frames received (each whole, header included), ``close``; a send on a closed link raises ConnectionClosed."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.close_code: int | None = None  # (TCP has none: for callers that ask a WebSocket)

    async def send(self, data: bytes) -> None:
        if self.writer.is_closing():
            raise ConnectionClosed(None, None)
        try:
            self.writer.write(data)
            await self.writer.drain()
        except (ConnectionError, RuntimeError):  # (RuntimeError: after our own write_eof, a half-close)
            raise ConnectionClosed(None, None) from None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        frames = FrameReader()
        with contextlib.suppress(ConnectionError):
            while data := await self.reader.read(65536):
                for kind, payload in frames.feed(data):
                    yield frame(kind, payload)

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.writer.wait_closed(), 2.0)


class AudioSocketCall(PlayingStack):
    """One call, at 8 kHz (``kind`` 0x10) or a higher rate's kind (0x12: 16 kHz)."""

    sample_bytes = 2
    has_clear = False

    def __init__(self, link: TcpLink, call_id: str, kind: int = AUDIO) -> None:
        super().__init__(link, call_id)  # type: ignore[arg-type]
        self.kind = kind
        self.bytes_per_second = RATES[kind] * 2
        self.silence = bytes(self.bytes_per_second // 50)
        self.codec = {8000: "slin", 16000: "slin16"}.get(RATES[kind], "")
        self.hung_up = False  # the gateway sent a hang-up frame

    def opening(self, params: dict[str, str]) -> list[bytes]:  # type: ignore[override]
        return [frame(UUID, uuid.UUID(self.call_id).bytes)]

    def caller_frame(self, n: int, audio: bytes) -> bytes:
        return frame(self.kind, audio)

    def heard(self, raw: str | bytes) -> Heard:
        assert isinstance(raw, bytes)
        kind, payload = raw[0], raw[3:]
        if kind == self.kind:
            return "media", payload
        if kind == HANGUP:
            self.hung_up = True
            return None
        raise ValueError(f"asterisk cannot take frame kind 0x{kind:02x} on a call of kind 0x{self.kind:02x}")

    def dtmf_frame(self, digit: str) -> bytes:  # type: ignore[override]
        return frame(DTMF, digit.encode())

    def stop_frame(self) -> bytes:  # type: ignore[override]
        return frame(HANGUP)


async def connect_audiosocket(host: str, port: int, call_id: str, kind: int = AUDIO,
                              source: str | None = None) -> AudioSocketCall:
    """A call to the gateway's AudioSocket port, started (``source``: the local address to connect from)."""
    reader, writer = await asyncio.open_connection(host, port, local_addr=(source, 0) if source else None)
    call = AudioSocketCall(TcpLink(reader, writer), call_id, kind)
    await call.start()
    return call
