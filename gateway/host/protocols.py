"""uvicorn's HTTP and WebSocket protocols, with two bounds uvicorn does not set: how long a connection closed on a
client that has stopped reading stays open (``reset`` is the Wyoming server's too), and how long a client may take to
send a whole request.

When the gateway gives up on such a client (a stalled HTTP stream cut short, a WebSocket closed with 4408), uvicorn
closes the transport, and asyncio's close waits for the write buffer to drain first: a client that never reads again
would hold the connection, the audio buffered for it and megabytes of kernel buffer for as long as it stayed
connected, and ASGI gives the app no way to cut it. Here a connection that is closing and still cannot write is
reset ``STUCK_CLOSE_S`` after the close: SO_LINGER 0, then abort (a plain abort leaves the kernel holding the unsent
audio, probing the client's closed window for minutes). A client that reads again in time still gets everything,
the WebSocket close frame with its reason included.

uvicorn also waits for ever for a request's head or body: a client that connects and sends nothing, or half a
request, holds a connection (and a file descriptor) for as long as it likes, and enough of them exhaust the process.
Here a request must arrive whole, head and body, within ``request_timeout_s`` of its first byte (of the connection,
for the first): else the client gets a 408 with the JSON error body every route uses, and the connection is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import socket
import struct
import termios
import time
from typing import Any, Mapping

from uvicorn.protocols.http.auto import AutoHTTPProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

STUCK_CLOSE_S = 10.0  # as uvicorn's own wait for a client's answer to a WebSocket close frame
CHECK_S = 1.0  # how often a connection that cannot write is looked at
REQUEST_TIMEOUT_S = 60.0  # serve --request-timeout's default


TRANSPORT_KEY = "cbf.transport"  # the scope's extensions entry with the connection's asyncio transport


def transport_of(scope: Mapping[str, Any]) -> asyncio.WriteTransport | None:
    """The asyncio transport under a connection's ASGI ``scope`` (put there by this module's protocols); None when
    served otherwise (a test client)."""
    return (scope.get("extensions") or {}).get(TRANSPORT_KEY)


def unsent_bytes(transport: asyncio.WriteTransport) -> int:
    """Bytes written to ``transport`` that its client has not yet taken: those in the transport's write buffer and
    those in the kernel's send queue (sent or not, not yet acknowledged by the client's end: TIOCOUTQ)."""
    unsent = transport.get_write_buffer_size()
    sock = transport.get_extra_info("socket")
    with contextlib.suppress(OSError, AttributeError, ValueError, TypeError):
        unsent += struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0]
    return unsent


async def close_stream(writer: asyncio.StreamWriter) -> None:
    """Close an asyncio stream's connection (a Wyoming or AudioSocket client's); one whose peer reads nothing is reset
    after ``STUCK_CLOSE_S``: what is unsent would hold the connection for ever, in asyncio's buffer or, where the
    server wrote only what its client took (Wyoming's pacing), in the kernel's send queue (``outlive_close``)."""
    writer.close()
    if not writer.transport.get_write_buffer_size():  # closed at the loop's next turn: its socket still open now
        outlive_close(writer.transport, asyncio.get_running_loop())
    try:
        await asyncio.wait_for(writer.wait_closed(), STUCK_CLOSE_S)
    except TimeoutError:
        reset(writer.transport)
    except Exception:  # noqa: BLE001 (closed with an error: closed)
        pass


def reset(transport: asyncio.BaseTransport) -> None:
    """Drop the connection with a TCP reset, whatever is still unsent."""
    sock = transport.get_extra_info("socket")
    with contextlib.suppress(OSError, AttributeError):  # no socket, or one without the option
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()  # type: ignore[attr-defined]


def _kernel_unsent(sock: socket.socket) -> int:
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0]


def outlive_close(transport: asyncio.BaseTransport, loop: asyncio.AbstractEventLoop) -> None:
    """A connection closed with bytes still in the kernel's send queue (a client that stopped reading, where the
    gateway holds no more than the kernel took: gateway/playout.py): its socket kept open past asyncio's close (a
    duplicate descriptor, the FIN queued behind the data), looked at every ``CHECK_S``: closed once the client has
    taken everything, reset once it has taken nothing for ``STUCK_CLOSE_S``."""
    sock = transport.get_extra_info("socket")
    try:
        if sock is None or (unsent := _kernel_unsent(sock)) <= 0:
            return
        kept = socket.socket(fileno=os.dup(sock.fileno()))
        kept.shutdown(socket.SHUT_WR)
    except (OSError, AttributeError, ValueError, TypeError):
        return
    since = time.monotonic()

    def look() -> None:
        nonlocal unsent, since
        try:
            now_unsent = _kernel_unsent(kept)
        except OSError:
            now_unsent = 0
        now = time.monotonic()
        if now_unsent <= 0:
            kept.close()
            return
        if now_unsent < unsent:
            unsent, since = now_unsent, now
        if now - since >= STUCK_CLOSE_S:
            with contextlib.suppress(OSError):
                kept.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            kept.close()
            return
        loop.call_later(CHECK_S, look)

    loop.call_later(CHECK_S, look)


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
        if exc is None:
            outlive_close(self.transport, self.loop)
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


def timed_out_response(seconds: float) -> bytes:
    """The 408 a client gets whose request did not arrive whole in time."""
    body = json.dumps({"error": {"code": "request_timeout",
                                 "message": f"the request did not arrive whole within {seconds:g} s"}}).encode()
    return (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (len(body), body))


class ClosesSlowRequests:
    """For uvicorn's HTTP protocol: a deadline of ``request_timeout_s`` from a request's first byte (the connection's
    start, for its first request) until its head and body are in; a client past it gets a 408 and the connection
    closes. A WebSocket upgrade ends the deadline: the connection is the WebSocket protocol's from then on."""

    request_timeout_s = REQUEST_TIMEOUT_S
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    cycle: Any  # uvicorn's RequestResponseCycle of the request under way, or of the last one
    _deadline: asyncio.TimerHandle | None = None
    _before: Any = None  # the cycle before the request the deadline is for

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._start_deadline()

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and (self.cycle is None or self.cycle.response_complete):
            self._start_deadline()  # the next request's first bytes
        super().data_received(data)  # type: ignore[misc]
        upgraded = self.transport.get_protocol() is not self  # to a WebSocket
        if upgraded or self.cycle not in (None, self._before) and not self.cycle.more_body:  # or in whole
            self._end_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._end_deadline()
        super().connection_lost(exc)  # type: ignore[misc]

    def _start_deadline(self) -> None:
        self._before = self.cycle
        self._deadline = self.loop.call_later(self.request_timeout_s, self._too_slow)

    def _end_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if self.transport.is_closing():  # closed already (a bad request's 400, say), its last bytes going out
            return
        if self.cycle is self._before or not self.cycle.response_started:  # nothing said yet: say why
            self.transport.write(timed_out_response(self.request_timeout_s))
        self.transport.close()


class BoundedWebSocketProtocol(ResetsStuckCloses, WebSocketsSansIOProtocol):
    """uvicorn's default WebSocket protocol (websockets' sans-I/O); the app finds the transport in the scope (what
    its client has taken: gateway/playout.py's ``Outbound``)."""

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        if (scope := getattr(self, "scope", None)) is not None:  # the app's task is created, not yet run
            scope.setdefault("extensions", {})[TRANSPORT_KEY] = self.transport

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
            # An upgrade refused with an HTTP answer (a 403 for a foreign Origin) is done with: uvicorn would log an
            # ERROR, "ASGI callable returned without completing handshake", for each one (a page could fill the log)
            self.handshake_complete = True

    def data_received(self, data: bytes) -> None:
        """An upgrade request websockets cannot parse (a header line over 8 KiB, a request line too long, too many
        headers, not HTTP): websockets writes its 431 or 414 answer (or nothing) for sending and fails the
        handshake, but uvicorn never sends it nor closes, and the connection was held for as long as the client
        liked. Here it is sent (a 400 where websockets has none: a header value with a control byte) and the
        connection closed."""
        super().data_received(data)
        if (self.conn.handshake_exc is not None and getattr(self, "scope", None) is None
                and not self.transport.is_closing()):
            answer = b"".join(self.conn.data_to_send())
            self.transport.write(answer or b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n"
                                           b"Content-Length: 0\r\n\r\n")
            self.transport.close()


class PutsTransportInScope:
    """For uvicorn's HTTP protocol: each request's scope carries the connection's transport (``transport_of``), so
    that a streamed response knows what its client has taken (gateway/playout.py's ``Outbound``)."""

    transport: asyncio.Transport
    scope: Any
    cycle: Any

    def on_message_begin(self) -> None:  # httptools: each request's scope is made here, before its task
        super().on_message_begin()  # type: ignore[misc]
        self.scope.setdefault("extensions", {})[TRANSPORT_KEY] = self.transport

    def handle_events(self) -> None:  # h11: each request's scope is made here and its task created, not yet run
        super().handle_events()  # type: ignore[misc]
        if (cycle := getattr(self, "cycle", None)) is not None:
            cycle.scope.setdefault("extensions", {})[TRANSPORT_KEY] = self.transport


class BoundedHTTPProtocol(ResetsStuckCloses, ClosesSlowRequests, PutsTransportInScope,  # type: ignore[misc,valid-type]
                          AutoHTTPProtocol):
    """uvicorn's default HTTP protocol (httptools where installed, else h11); its WebSocket upgrades hand the
    connection to ``BoundedWebSocketProtocol`` (``serve`` passes both)."""


def http_protocol(request_timeout_s: float) -> type[BoundedHTTPProtocol]:
    """``BoundedHTTPProtocol`` with ``serve --request-timeout``."""
    return type("BoundedHTTPProtocol", (BoundedHTTPProtocol,), {"request_timeout_s": request_timeout_s})
