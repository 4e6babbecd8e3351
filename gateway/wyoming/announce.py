"""Zeroconf discovery of the Wyoming port (``--wyoming-zeroconf NAME``): ``NAME._wyoming._tcp.local.``, the service
Home Assistant's Wyoming integration browses for, as wyoming-piper's ``--zeroconf`` announces it. Home Assistant reads
the service's name, address and port, then asks the port itself (``describe``) what it serves: no TXT properties.

``announcement`` is the pure content; ``Announcer`` registers it with python-zeroconf (imported only here, only when
the flag is given) and says goodbye on shutdown. An announcement that fails is one warning: the port goes on serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("chatterbox_fast.gateway")
SERVICE_TYPE = "_wyoming._tcp.local."
MAX_NAME_BYTES = 63  # one DNS label
ANY = ("0.0.0.0", "::", "")
CANNOT = "wyoming zeroconf: cannot announce %s (%s); the Wyoming port serves on without it"
# How long to ask whether another responder answers for the name before claiming it. python-zeroconf's own probing
# hears answers only between its three probes (~350 ms, none after the last), too short for a busy host or Wi-Fi
# (RFC 6762 allows 750 ms). A held name is one answered with its SRV record (the port): a holder's address record
# may stay away longer (a responder multicasts a record at most once a second).
CLAIM_QUERY_MS = 1500


def instance_name(raw: str) -> str:
    """The service's instance name from the flag's value; ``ValueError`` with the fix for one that cannot be."""
    name = raw.strip()
    if not name or len(name.encode()) > MAX_NAME_BYTES:
        raise ValueError(f"expected a name for --wyoming-zeroconf of 1 to {MAX_NAME_BYTES} bytes (one DNS label), "
                         f"e.g. chatterbox-fast, got {raw!r}")
    return name


@dataclass(frozen=True)
class Announcement:
    name: str  # the full service name, NAME._wyoming._tcp.local.
    port: int
    addresses: tuple[str, ...]  # advertised to browsers: where the Wyoming port can be reached
    interfaces: tuple[str, ...] | None  # where to answer mDNS; None: every interface


def announcement(name: str, host: str, port: int, host_addresses: list[str]) -> Announcement:
    """What to announce for a Wyoming socket listening on ``host``:``port``. On a specific address: that address, on
    that interface alone. On 0.0.0.0 (or ::): ``host_addresses``, the host's own, but for loopback (a client on
    another machine cannot use them) and, for 0.0.0.0, but for IPv6 (the socket does not accept it)."""
    if host not in ANY:
        return Announcement(f"{name}.{SERVICE_TYPE}", port, (host,), (host,))
    usable = [ipaddress.ip_address(a) for a in host_addresses]
    addresses = tuple(str(a) for a in usable if not a.is_loopback and (host == "::" or a.version == 4))
    return Announcement(f"{name}.{SERVICE_TYPE}", port, addresses, None)


def host_addresses() -> list[str]:
    """Every address of this host's interfaces (ifaddr, python-zeroconf's own dependency)."""
    import ifaddr

    return [ip.ip if isinstance(ip.ip, str) else ip.ip[0] for adapter in ifaddr.get_adapters() for ip in adapter.ips]


def announcer_for(name: str, sock: socket.socket) -> Announcer:
    """The announcer of the Wyoming port bound to ``sock`` (the host's addresses read only when it listens on all)."""
    host, port = sock.getsockname()[:2]
    return Announcer(announcement(name, host, port, host_addresses() if host in ANY else []))


class Announcer:
    """Registers an ``Announcement`` in the background (probing the name takes about a second) and withdraws it."""

    def __init__(self, content: Announcement) -> None:
        self.content = content
        self._zeroconf: Any = None  # zeroconf.asyncio.AsyncZeroconf, once started
        self._registering: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._registering = asyncio.create_task(self._register())

    async def _register(self) -> None:
        from zeroconf import Error, IPVersion, NonUniqueNameException
        from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

        content = self.content
        if not content.addresses:
            log.warning(CANNOT, content.name, "this host has no address but loopback to advertise")
            return
        try:
            versions = {ipaddress.ip_address(a).version for a in content.addresses}
            version = IPVersion.All if len(versions) > 1 else IPVersion.V4Only if 4 in versions else IPVersion.V6Only
            where = {"interfaces": list(content.interfaces)} if content.interfaces else {}
            self._zeroconf = AsyncZeroconf(ip_version=version, **where)
            held = AsyncServiceInfo(SERVICE_TYPE, content.name)
            await held.async_request(self._zeroconf.zeroconf, CLAIM_QUERY_MS)
            if held.port is not None:
                raise NonUniqueNameException("another responder answers for this name")
            info = AsyncServiceInfo(SERVICE_TYPE, content.name, port=content.port, properties={},
                                    parsed_addresses=list(content.addresses))
            broadcasts = await self._zeroconf.async_register_service(info)
            # Said once the name is held, before the first packet: a browser that sees the service has seen the line.
            log.info("wyoming zeroconf: announced %s at %s port %d", content.name, ", ".join(content.addresses),
                     content.port)
            await broadcasts
        except (OSError, Error) as exc:  # no multicast on these interfaces, the name taken by another host...
            log.warning(CANNOT, content.name, f"{type(exc).__name__}: {exc}".rstrip(": "))
            await self.stop()

    async def stop(self) -> None:
        """Goodbye to browsers (python-zeroconf unregisters every service it announced when closed)."""
        if self._registering is not None and self._registering is not asyncio.current_task():
            self._registering.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._registering
        if self._zeroconf is not None:
            zeroconf, self._zeroconf = self._zeroconf, None
            await zeroconf.async_close()
