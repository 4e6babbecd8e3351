"""uvicorn's WebSocket protocol, with a bound on how long a connection the app has finished with may stay open.

When an endpoint is done with a socket (it closed it, or gave up on a client that stopped reading: code 4408),
uvicorn closes the transport, and asyncio's close waits for the write buffer to drain first. A client that never
reads again would hold the connection, and the audio buffered for it, for as long as it stayed connected; ASGI gives
the app no way to cut it. Here the transport is aborted if it is still open ``close_timeout`` seconds (uvicorn's
own wait for a client's answer to a close frame, 10 s) after the app returned, with a reset: a plain close would
leave the kernel holding the unsent audio, retrying into the client's closed window for minutes.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol


class BoundedWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's default WebSocket protocol (websockets' sans-I/O), whose finished connections are cut in time."""

    _cut: asyncio.TimerHandle | None = None

    async def run_asgi(self) -> None:
        await super().run_asgi()
        if self.transport.is_closing() and not self.transport.get_write_buffer_size():
            return  # closed already, or closing with nothing left to send
        self._cut = self.loop.call_later(self.close_timeout, self._reset)

    def _reset(self) -> None:
        """Drop the connection with a TCP reset (SO_LINGER 0), whatever is still unsent."""
        sock = self.transport.get_extra_info("socket")
        with contextlib.suppress(OSError, AttributeError):  # no socket, or one that has no such option
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._cut is not None:
            self._cut.cancel()
        super().connection_lost(exc)
