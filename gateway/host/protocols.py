"""uvicorn's HTTP and WebSocket protocols, with a bound on how long a connection closed on a client that has stopped
reading stays open (``reset`` is the Wyoming server's too).

When the gateway gives up on such a client (a stalled HTTP stream cut short, a WebSocket closed with 4408), uvicorn
closes the transport, and asyncio's close waits for the write buffer to drain first: a client that never reads again
would hold the connection, the audio buffered for it and megabytes of kernel buffer for as long as it stayed
connected, and ASGI gives the app no way to cut it. Here a connection that is closing and still cannot write is
reset ``STUCK_CLOSE_S`` after the close: SO_LINGER 0, then abort (a plain abort leaves the kernel holding the unsent
audio, probing the client's closed window for minutes). A client that reads again in time still gets everything,
the WebSocket close frame with its reason included.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time

from uvicorn.protocols.http.auto import AutoHTTPProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

STUCK_CLOSE_S = 10.0  # as uvicorn's own wait for a client's answer to a WebSocket close frame
CHECK_S = 1.0  # how often a connection that cannot write is looked at


def reset(transport: asyncio.BaseTransport) -> None:
    """Drop the connection with a TCP reset, whatever is still unsent."""
    sock = transport.get_extra_info("socket")
    with contextlib.suppress(OSError, AttributeError):  # no socket, or one without the option
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()  # type: ignore[attr-defined]


class ResetsStuckCloses:
    """For a uvicorn protocol: while writing is paused, look every ``CHECK_S`` whether the transport is closing, and
    reset it once it has been closing for ``STUCK_CLOSE_S``."""

    transport: asyncio.BaseTransport
    loop: asyncio.AbstractEventLoop
    _check: asyncio.TimerHandle | None = None
    _closing_since: float | None = None

    def pause_writing(self) -> None:
        super().pause_writing()  # type: ignore[misc]
        if self._check is None:
            self._look_later()

    def resume_writing(self) -> None:
        self._stop_looking()
        super().resume_writing()  # type: ignore[misc]

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_looking()
        super().connection_lost(exc)  # type: ignore[misc]

    def _look_later(self) -> None:
        self._check = self.loop.call_later(CHECK_S, self._look)

    def _stop_looking(self) -> None:
        if self._check is not None:
            self._check.cancel()
        self._check = self._closing_since = None

    def _look(self) -> None:
        if self.transport.is_closing():
            now = time.monotonic()
            self._closing_since = self._closing_since or now
            if now - self._closing_since >= STUCK_CLOSE_S:
                self._check = None
                reset(self.transport)
                return
        self._look_later()


class BoundedWebSocketProtocol(ResetsStuckCloses, WebSocketsSansIOProtocol):
    """uvicorn's default WebSocket protocol (websockets' sans-I/O)."""


class BoundedHTTPProtocol(ResetsStuckCloses, AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """uvicorn's default HTTP protocol (httptools where installed, else h11); its WebSocket upgrades hand the
    connection to ``BoundedWebSocketProtocol`` (``serve`` passes both)."""
