"""``--rtc-ports LOW-HIGH``: WebRTC media of this gateway process on a fixed UDP port range, for host networking
behind a firewall that opens just that range (``serve --processes N`` gives each process its own slice).

aiortc (through aioice) binds each host candidate's socket to port 0, taking whatever the kernel picks. The gateway's
event loop gets a ``create_datagram_endpoint`` that binds such sockets to the next free port of the range instead;
every other datagram endpoint (a TURN client's socket, which names no local port) is left as it is.
"""

from __future__ import annotations

import asyncio
import errno
from typing import Any, Iterator


def parse_port_range(value: str) -> tuple[int, int]:
    """``"40000-40099"`` -> (40000, 40099); a ValueError says what is wrong."""
    low, sep, high = value.partition("-")
    try:
        lo, hi = int(low), int(high)
    except ValueError:
        raise ValueError(f"--rtc-ports {value!r}: expected LOW-HIGH, e.g. 40000-40099") from None
    if not sep or not 1024 <= lo <= hi <= 65535:
        raise ValueError(f"--rtc-ports {value!r}: expected LOW-HIGH with 1024 <= LOW <= HIGH <= 65535")
    return lo, hi


def split_range(low: int, high: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` disjoint slices of LOW-HIGH covering it, as even as can be; a ValueError when too few ports."""
    size = high - low + 1
    if size < parts:
        raise ValueError(f"--rtc-ports {low}-{high} has {size} ports, fewer than the {parts} processes")
    bounds = [low + size * i // parts for i in range(parts + 1)]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(parts)]


class PortRange:
    """Hands out the ports of LOW-HIGH round-robin: one whole lap per bind, starting after the last port given."""

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high
        self._next = low

    def lap(self) -> Iterator[int]:
        size = self.high - self.low + 1
        start = self._next
        for i in range(size):
            port = self.low + (start - self.low + i) % size
            self._next = self.low + (port - self.low + 1) % size
            yield port


def install(loop: asyncio.AbstractEventLoop, ports: PortRange) -> None:
    """Bind ``loop``'s port-0 datagram endpoints within ``ports``; OSError(EADDRINUSE) when the range is full."""
    original = loop.create_datagram_endpoint

    async def create_datagram_endpoint(protocol_factory: Any, local_addr: Any = None, **kwargs: Any) -> Any:
        if local_addr is None or local_addr[1] != 0:
            return await original(protocol_factory, local_addr=local_addr, **kwargs)
        for port in ports.lap():
            try:
                return await original(protocol_factory, local_addr=(local_addr[0], port), **kwargs)
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
        raise OSError(errno.EADDRINUSE, f"no free UDP port in {ports.low}-{ports.high} (--rtc-ports)")

    loop.create_datagram_endpoint = create_datagram_endpoint  # type: ignore[method-assign]
