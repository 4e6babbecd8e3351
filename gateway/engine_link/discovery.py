"""Engine discovery: ``dns+ws://NAME:PORT`` stands for one worker at every address NAME resolves to (a Kubernetes
headless Service, a Compose service with replicas), resolved again every few seconds.

``Membership`` is the pure part: given the workers a name had and the addresses it resolves to now, it says which
workers to add, which to drain (no new utterances; closed once their utterances are done) and which drained ones came
back. A failed resolution changes nothing: a DNS hiccup must not drain a healthy fleet.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Iterable
from urllib.parse import urlsplit

PREFIX = "dns+"
Resolver = Callable[[str, int], Awaitable[list[str]]]  # (name, port) -> IP addresses


@dataclass(frozen=True)
class DnsTarget:
    scheme: str  # ws or wss
    name: str
    port: int

    def url(self, address: str) -> str:
        """The worker URL of one resolved address."""
        host = f"[{address}]" if ipaddress.ip_address(address).version == 6 else address
        return f"{self.scheme}://{host}:{self.port}"


def parse_dns_url(url: str) -> DnsTarget:
    """``dns+ws://NAME:PORT`` (or ``dns+wss://``); a ValueError says what is wrong."""
    parts = urlsplit(url[len(PREFIX):])
    if parts.scheme not in ("ws", "wss") or not parts.hostname or parts.path not in ("", "/"):
        raise ValueError(f"{url!r}: expected dns+ws://NAME:PORT")
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        raise ValueError(f"{url!r}: expected dns+ws://NAME:PORT (the port is required)")
    return DnsTarget(parts.scheme, parts.hostname, port)


async def resolve(name: str, port: int) -> list[str]:
    """Every address ``name`` resolves to now (the system resolver: /etc/hosts, then DNS), without repeats."""
    infos = await asyncio.get_running_loop().getaddrinfo(name, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class Changes:
    add: tuple[str, ...] = ()  # new workers
    drain: tuple[str, ...] = ()  # workers whose address vanished: no new utterances
    revive: tuple[str, ...] = ()  # drained workers whose address is back


@dataclass
class Membership:
    """The workers of one name: active ones and draining ones, as URLs."""

    target: DnsTarget
    active: set[str] = field(default_factory=set)
    draining: set[str] = field(default_factory=set)

    def resolved(self, addresses: Iterable[str]) -> Changes:
        """The name resolves to ``addresses`` now: update and say what changed."""
        now = {self.target.url(address) for address in addresses}
        changes = Changes(add=tuple(sorted(now - self.active - self.draining)),
                          drain=tuple(sorted(self.active - now)),
                          revive=tuple(sorted(self.draining & now)))
        self.draining = (self.draining - now) | set(changes.drain)
        self.active = now
        return changes

    def drained(self, url: str) -> None:
        """A draining worker has no utterance left and is closed: forget it."""
        self.draining.discard(url)
