"""A client connection that will stop reading (benchmarks, tests): a connected socket whose receive buffer is tiny,
so once its client stops reading the kernel soon stops taking for it too, and what the server sends waits in the
server's buffers, where a slow reader's cost shows."""

from __future__ import annotations

import asyncio
import socket
from urllib.parse import urlsplit

RCVBUF = 4096  # the receive buffer asked for (the kernel doubles it, and keeps a floor of its own)


async def stopping_socket(url: str) -> socket.socket:
    """A non-blocking socket connected to the server at ``url`` (http or https) with a ``RCVBUF`` receive buffer."""
    parts, loop = urlsplit(url), asyncio.get_running_loop()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    family, kind, proto, _, address = (await loop.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM))[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
    sock.setblocking(False)
    await loop.sock_connect(sock, address)
    return sock
