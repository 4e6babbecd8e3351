"""Bind a listening TCP port before anything slow starts, so a port already taken is one sentence, not a traceback
after the model has loaded. The bound socket is handed to the server (uvicorn, or the engine worker's websockets)."""

from __future__ import annotations

import errno
import socket


class CannotListen(RuntimeError):
    """The port cannot be bound; the message says why and what to do."""


def bind_tcp(host: str, port: int, flag: str, reuse_port: bool = False) -> socket.socket:
    """A socket bound to ``host:port`` (not yet listening); ``flag`` is the option that sets the port, for the fix.
    ``reuse_port``: share the port with other processes that set it too (SO_REUSEPORT: the kernel spreads new
    connections over them)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio sets TCP_NODELAY only on connections whose socket says TCP, and accepted
    # sockets take the listener's proto. With 0, Nagle held each small frame after the first (a chunk event, then its
    # audio) until the client's delayed ACK, ~40 ms later: first audio went from ~30 ms to ~70 ms.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn and asyncio do: TIME_WAIT is no conflict
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise CannotListen(f"port {port} on {host} is already in use (another chatterbox-fast?). Fix: stop what "
                               f"holds it (`ss -ltnp 'sport = :{port}'` names it) or choose another port with "
                               f"{flag}.") from exc
        raise CannotListen(f"cannot listen on {host}:{port}: {exc.strerror}. Fix: choose an address of this host "
                           f"and a port above 1023 with {flag}.") from exc
    return sock
